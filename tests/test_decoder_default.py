"""A config's target tokenizer follows its one decoder source by default (as ``tokenizer.like: <source>``);
sources of several families need ``tokenizer.like``; a target's own ``like`` pairs it with that source
only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from vocab_transfer.workflow import paths
from vocab_transfer.workflow.config import ConfigError, check_config, fill_defaults
from vocab_transfer.workflow.plan import Plan
from vocab_transfer.workflow.views import followed_source

REPO = Path(__file__).resolve().parents[1]
DECODERS = REPO / "tests" / "data" / "tiny_decoder_config.yaml"
SNAKEMAKE = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile")]


@pytest.fixture(scope="module")
def decoders(tmp_path_factory):
    """The tiny Llama (byte-fallback BPE) and Qwen2 (byte-level BPE, ChatML template) sources."""
    from conftest import write_tiny_decoders

    return write_tiny_decoders(tmp_path_factory.mktemp("decoders"))


def decoder_config(workdir: Path, *sources: str, **tokenizer) -> dict:
    """The tiny decoder config with ``sources`` (absolute folders), no ``like`` and no benchmarks."""
    config = yaml.safe_load(DECODERS.read_text())
    config["sources"] = {s: {"model": str(workdir / s), "languages": ["en"]} for s in sources}
    config["tokenizer"] = {"vocab_size": 400, "threads": 1, **tokenizer}
    del config["eval"]["benchmarks"]
    return config


def plan_of(config: dict) -> Plan:
    check_config(config)
    return Plan(fill_defaults(config))


def test_default_follows_the_one_decoder_source(decoders):
    plan = plan_of(decoder_config(decoders, "llama-tiny"))
    target = SimpleNamespace(target="sw")
    spec = json.loads(plan.tokenizer_spec(target))
    assert spec["follow"] == {"sources": ["llama-tiny"], "of": ["llama-tiny"], "target": "sw"}
    assert plan.follow_tokenizer_dirs(target) == [str(decoders / "llama-tiny")]
    assert followed_source(spec["follow"], plan.follow_tokenizer_dirs(target)) == str(decoders / "llama-tiny")
    assert plan.pairs == [("llama-tiny", "sw")]


def test_hub_decoder_is_decided_by_the_job_and_masked_configs_keep_unigram(tmp_path):
    """A hub id never downloaded: the plan wires its folder and the job reads its config.json (the same plan
    before and after the download); the demo's pretrained masked LM: no follow, Unigram, params as before."""
    config = decoder_config(tmp_path, "llama-tiny")
    config["sources"] = {"hub": {"model": "meta-llama/Llama-2-7b-hf"}}
    plan = plan_of(config)
    assert plan.follow_tokenizer_dirs(SimpleNamespace(target="sw")) == [paths.downloaded_model("hub")]
    folder = tmp_path / "hub"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "xlm-roberta",
                                                    "architectures": ["XLMRobertaForMaskedLM"]}))
    assert followed_source({"sources": ["hub"], "of": ["hub"]}, [str(folder)]) is None  # a masked LM: Unigram
    demo = plan_of(yaml.safe_load((REPO / "config.yaml").read_text()))
    for t in demo.targets:
        assert "follow" not in json.loads(demo.tokenizer_spec(SimpleNamespace(target=t)))
        assert demo.follow_tokenizer_dirs(SimpleNamespace(target=t)) == []


@pytest.mark.parametrize("second", ["qwen2-tiny", "demo-xlmr"])
def test_sources_of_several_families_without_like_are_refused(decoders, second):
    """A Llama and a Qwen2, or a decoder and a masked LM pretrained here: the message names tokenizer.like,
    the per-target key and the sources."""
    config = decoder_config(decoders, "llama-tiny")
    if second == "demo-xlmr":
        config["sources"][second] = yaml.safe_load((REPO / "config.yaml").read_text())["sources"][second]
        config["sources"][second]["pretrain"]["languages"] = ["en"]
    else:
        config["sources"][second] = {"model": str(decoders / second), "languages": ["en"]}
    with pytest.raises(ConfigError) as err:
        check_config(config)
    message = str(err.value)
    assert message.startswith("tokenizer.like:") and "targets[i].tokenizer.like" in message
    assert "llama-tiny (causal)" in message and second in message
    config["tokenizer"]["like"] = "llama-tiny"  # naming one is enough
    check_config(config)


def test_a_targets_like_plans_only_that_sources_pairs(decoders):
    config = decoder_config(decoders, "llama-tiny", "qwen2-tiny")
    config["targets"] = [{"name": "sw-llama", "corpus": "sw", "tokenizer": {"like": "llama-tiny"}},
                         {"name": "sw-qwen", "corpus": "sw", "tokenizer": {"like": "qwen2-tiny"}}]
    config["lapt"]["targets"] = ["sw-qwen"]
    config["tables"]["table2"]["languages"] = ["sw-qwen"]
    plan = plan_of(config)
    assert plan.pairs == [("llama-tiny", "sw-llama"), ("qwen2-tiny", "sw-qwen")]
    assert len(plan.init_eval_results()) == 2
    assert all(p.split("/")[2:4] in (["llama-tiny", "sw-llama"], ["qwen2-tiny", "sw-qwen"])
               for p in plan.export_outputs())
    assert plan.lapt_outputs() and all("/qwen2-tiny/" in p for p in plan.lapt_outputs())
    config["targets"][0]["sources"] = ["llama-tiny", "qwen2-tiny"]  # asks for the cross-family pair too
    plan = plan_of(config)
    assert plan.pairs == [("llama-tiny", "sw-llama"), ("qwen2-tiny", "sw-llama"), ("qwen2-tiny", "sw-qwen")]


def test_target_sources_are_checked(decoders):
    config = decoder_config(decoders, "llama-tiny", "qwen2-tiny", like="qwen2-tiny")
    config["targets"] = [{"name": "sw", "sources": ["mistral"]}]
    with pytest.raises(ConfigError, match=r"targets\[0\].sources: \['mistral'\]"):
        check_config(config)
    config["targets"] = [{"name": "sw", "tokenizer": {"like": "qwen2-tiny"}}]
    with pytest.raises(ConfigError, match=r"\['llama-tiny'\] are transferred to no target"):
        check_config(config)


def test_job_refuses_a_decoder_among_several_sources(decoders):
    """What parse time cannot tell (hub ids not yet downloaded), the tokenizer job names the same way."""
    follow = {"sources": ["llama-tiny", "qwen2-tiny"], "of": ["llama-tiny", "qwen2-tiny"], "target": "sw"}
    with pytest.raises(ConfigError, match=r"tokenizer\.like: .*\{name: sw, tokenizer: \{like: <source>\}\}"):
        followed_source(follow, [str(decoders / "llama-tiny"), str(decoders / "qwen2-tiny")])


def run(workdir: Path, config: dict, *targets: str):
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    cmd = [*SNAKEMAKE, *targets, "--cores", "2", "--configfile", "config.yaml"]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=workdir,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]


@pytest.mark.slow
def test_qwen2_source_without_like_exports_its_layout(decoders):
    """Through the DAG to the export of one init: the target tokenizer is byte-level BPE in Qwen2's layout
    (its ChatML template, its special tokens first, nothing appended to a prompt), and the model's eos is its
    eos."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    config = decoder_config(Path("."), "qwen2-tiny")
    config["sources"]["qwen2-tiny"]["model"] = "qwen2-tiny"
    config["methods"] = {"random": {"kind": "random", "label": "Random"}}
    for key in ("lapt", "tables"):
        del config[key]
    export = paths.export_init("qwen2-tiny", "sw", "random")
    run(decoders, config, export)
    info = json.loads((decoders / paths.tokenizer("sw") / "training.json").read_text())
    assert info["kind"] == "byte_level" and info["like"] == "qwen2-tiny"
    tok, source = (AutoTokenizer.from_pretrained(decoders / export),
                   AutoTokenizer.from_pretrained(decoders / "qwen2-tiny"))
    assert tok.chat_template == source.chat_template and tok.chat_template
    assert tok.bos_token is None and tok.eos_token == source.eos_token and tok.pad_token == source.pad_token
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    assert tok.convert_tokens_to_ids(specials) == source.convert_tokens_to_ids(specials)
    ids = tok("Hallo Welt")["input_ids"]
    assert ids[-1] != tok.eos_token_id and tok.decode(ids) == "Hallo Welt"
    prompt = tok.apply_chat_template([{"role": "user", "content": "Habari"}], add_generation_prompt=True,
                                     tokenize=False)
    assert prompt == "<|im_start|>user\nHabari<|im_end|>\n<|im_start|>assistant\n"
    assert tok(prompt)["input_ids"][0] == tok.convert_tokens_to_ids("<|im_start|>")
    model = AutoModelForCausalLM.from_pretrained(decoders / export)
    assert model.config.eos_token_id == tok.eos_token_id and model.config.vocab_size == len(tok)


@pytest.mark.slow
def test_llama_source_without_like_trains_its_layout(decoders, tmp_path):
    """Through the DAG to the export of one init: byte-fallback BPE in Llama's layout (``<unk> <s> </s>``, a
    prompt is ``<s> A``, no ``</s>`` appended), the source's chat template, and the model's eos is its eos."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    (tmp_path / "llama-tiny").symlink_to(decoders / "llama-tiny")
    config = decoder_config(tmp_path, "llama-tiny")
    config["methods"] = {"random": {"kind": "random", "label": "Random"}}
    for key in ("lapt", "tables"):
        config.pop(key, None)
    export = paths.export_init("llama-tiny", "sw", "random")
    run(tmp_path, config, export)
    info = json.loads((tmp_path / paths.tokenizer("sw") / "training.json").read_text())
    assert info["kind"] == "bpe" and info["like"] == str(tmp_path / "llama-tiny")
    model = AutoModelForCausalLM.from_pretrained(tmp_path / export)
    tok = AutoTokenizer.from_pretrained(tmp_path / export)
    assert model.config.eos_token_id == tok.eos_token_id and model.config.vocab_size == len(tok)
    source = AutoTokenizer.from_pretrained(decoders / "llama-tiny")
    assert [tok.unk_token_id, tok.bos_token_id, tok.eos_token_id] == [0, 1, 2]
    assert ([tok.unk_token, tok.bos_token, tok.eos_token]
            == [source.unk_token, source.bos_token, source.eos_token])
    assert tok.chat_template == source.chat_template
    ids = tok("Hallo Welt")["input_ids"]
    assert ids[0] == tok.bos_token_id and tok.eos_token_id not in ids and "<0x48>" in tok.get_vocab()

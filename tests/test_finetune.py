"""Fine-tuning: learns a token task, reproducible per seed, resumes bit-identically, names bad input."""

import json
import subprocess
import sys

import pandas as pd
import pytest
import torch

from vocab_transfer.finetune import (
    FinetuneConfig,
    encode_qa,
    finetune,
    load_task_model,
    read_task_data,
    span_f1,
    squad_scores,
    task_labels,
)
from vocab_transfer.source_model import build_xlmr_mlm

TINY = dict(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64, max_position_embeddings=80)


def capital_tags(words: list[str]) -> list[str]:
    """A learnable NER-like task: runs of capitalized words (not sentence-initial) are CAP entities."""
    tags = []
    for i, w in enumerate(words):
        cap = i > 0 and w[:1].isupper()
        tags.append(("I-CAP" if tags and tags[-1] != "O" else "B-CAP") if cap else "O")
    return tags


@pytest.fixture(scope="module")
def ner_data(swahili_verses):
    rows = [{"id": str(i), "tokens": v.split()[:30], "tags": capital_tags(v.split()[:30])}
            for i, v in enumerate(swahili_verses[:520])]
    df = pd.DataFrame(rows)
    return {"train": df[:400].reset_index(drop=True), "dev": df[400:460].reset_index(drop=True),
            "test": df[460:].reset_index(drop=True)}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, sw_tokenizer):
    path = tmp_path_factory.mktemp("ft") / "model"
    build_xlmr_mlm(sw_tokenizer, seed=0, dropout=0.1, **TINY).save_pretrained(path)
    sw_tokenizer.save_pretrained(path)
    return path


def cfg(**kw):
    return FinetuneConfig.from_dict({"epochs": 3, "lr": 2e-3, "batch_size": 16, "seq_len": 64, "eval_fraction": 0.2,
                                     "threads": 1, **kw})


def run(model_dir, tokenizer, data, tmp, seed=1, stop_after=None, **kw):
    labels = task_labels("ner", data)
    torch.manual_seed(seed)
    model = load_task_model("ner", str(model_dir), labels)
    out = finetune(model, tokenizer, "ner", data, labels, cfg(**kw), seed=seed, checkpoint_dir=tmp,
                   stop_after=stop_after)
    return out, model


def test_token_classification_learns_and_is_reproducible(tmp_path, model_dir, sw_tokenizer, ner_data):
    (scores, history), model = run(model_dir, sw_tokenizer, ner_data, tmp_path / "a")
    assert task_labels("ner", ner_data) == ["O", "B-CAP", "I-CAP"]
    # the majority class (all O) has span F1 0; a model that learned nothing stays near 0
    assert scores["test_f1"] > 0.5 and scores["dev_f1"] == history["dev_f1"].max()
    assert scores["selected_step"] in history["step"].tolist() and len(history) == 5  # every 20% of 75 steps
    (again, _), model2 = run(model_dir, sw_tokenizer, ner_data, tmp_path / "b")
    assert again == scores
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), model2.state_dict().values(), strict=True))
    (other, _), _ = run(model_dir, sw_tokenizer, ner_data, tmp_path / "c", seed=2)
    assert other != scores


def test_resume_after_interruption_is_bit_identical(tmp_path, model_dir, sw_tokenizer, ner_data):
    (ref, ref_hist), _ = run(model_dir, sw_tokenizer, ner_data, tmp_path / "ref", epochs=1)
    run(model_dir, sw_tokenizer, ner_data, tmp_path / "cut", stop_after=12, epochs=1)  # mid-way, between evals
    torch.randn(10)
    (resumed, hist), _ = run(model_dir, sw_tokenizer, ner_data, tmp_path / "cut", seed=1, epochs=1)
    assert resumed == ref
    pd.testing.assert_frame_equal(hist, ref_hist)


def test_label_set_mismatch_and_missing_columns_are_named(tmp_path, ner_data):
    bad = {**ner_data, "test": ner_data["test"].assign(tags=[["B-XYZ"] * len(t) for t in ner_data["test"].tokens])}
    with pytest.raises(ValueError, match=r"label set mismatch: test has label\(s\) \['B-XYZ'\]"):
        task_labels("ner", bad)
    with pytest.raises(ValueError, match="label set mismatch"):
        task_labels("ner", ner_data, labels=["O", "B-PER", "I-PER"])
    for split, df in ner_data.items():
        (df.drop(columns="tags") if split == "dev" else df).to_parquet(tmp_path / f"{split}.parquet")
    with pytest.raises(ValueError, match="tags"):
        read_task_data(tmp_path, "ner")
    with pytest.raises(FileNotFoundError, match="prepare_task"):
        read_task_data(tmp_path / "nowhere", "ner")
    with pytest.raises(ValueError, match="unknown key.*'epoch'"):
        FinetuneConfig.from_dict({"epoch": 3})


def test_metrics_known_answers():
    gold = [["B-PER", "I-PER", "O", "B-LOC"], ["O", "B-ORG"]]
    pred = [["B-PER", "I-PER", "O", "O"], ["O", "B-LOC"]]
    s = span_f1(gold, pred)  # 1 of 2 predicted spans right, 1 of 3 gold spans found
    assert s["precision"] == pytest.approx(0.5) and s["recall"] == pytest.approx(1 / 3)
    assert s["f1"] == pytest.approx(0.4)
    q = squad_scores([["the Nairobi city"], ["in 1963", "1963"]], ["Nairobi City!", "1963 year"])
    assert q["exact_match"] == pytest.approx(50.0)  # articles, case and punctuation ignored
    assert q["f1"] == pytest.approx(100 * (1.0 + 2 / 3) / 2)


def test_qa_windows_label_the_answer_span(sw_tokenizer, swahili_verses):
    context = " ".join(swahili_verses[:12])
    answer = swahili_verses[9].split()[2]
    start = context.index(" " + answer + " ", len(" ".join(swahili_verses[:9]))) + 1
    df = pd.DataFrame([{"id": "q", "question": "Nani?", "context": context,
                        "answers": {"text": [answer], "answer_start": [start]}}])
    items = encode_qa(df, sw_tokenizer, 48, 16, train=True)
    assert len(items) > 3  # the context is cut into overlapping windows
    hits = [it for it in items if it["start_positions"] > 0]
    assert hits
    for it in hits:
        s, e = it["start_positions"], it["end_positions"]
        assert context[it["offsets"][s][0]:it["offsets"][e][1]].strip() == answer


@pytest.mark.slow
def test_cli_writes_one_row(tmp_path, model_dir, ner_data):
    data = tmp_path / "data"
    data.mkdir()
    for split, df in ner_data.items():
        df.to_parquet(data / f"{split}.parquet")
    out = tmp_path / "seed3.parquet"
    cmd = [sys.executable, "-m", "vocab_transfer.finetune", "--model", str(model_dir), "--task", "ner",
           "--data", str(data), "--seed", "3", "--output", str(out), "--meta", json.dumps({"model": "tiny"}),
           "--config", json.dumps({**cfg(epochs=1).__dict__})]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    row = pd.read_parquet(out)
    assert len(row) == 1 and row.loc[0, "model"] == "tiny" and row.loc[0, "seed"] == 3
    assert {"dev_f1", "test_f1", "test_precision", "selected_step", "n_train"} <= set(row.columns)
    assert (tmp_path / "seed3.history.parquet").is_file() and not (tmp_path / "seed3.parquet.checkpoints").exists()


def test_nli_and_qa_run_end_to_end(tmp_path, model_dir, sw_tokenizer, swahili_verses):
    """Both heads train, select on dev and score test with metrics in range (learning is not asserted:
    a 1-layer model on 60 examples)."""
    verses = [v for v in swahili_verses[:400] if len(v.split()) > 6]
    nli = pd.DataFrame([{"id": str(i), "premise": v, "hypothesis": " ".join(v.split()[:4]),
                         "label": ("entailment", "neutral", "contradiction")[i % 3]} for i, v in enumerate(verses)])
    qa = pd.DataFrame([{"id": str(i), "question": "Nani? " + v.split()[0], "context": v,
                        "answers": {"text": [v.split()[2]], "answer_start": [v.index(" " + v.split()[2]) + 1]}}
                       for i, v in enumerate(verses)])
    for task, df, metric in (("nli", nli, "accuracy"), ("qa", qa, "f1")):
        data = {"train": df[:60].reset_index(drop=True), "dev": df[60:80].reset_index(drop=True),
                "test": df[80:100].reset_index(drop=True)}
        labels = task_labels(task, data)
        torch.manual_seed(1)
        model = load_task_model(task, str(model_dir), labels)
        scores, history = finetune(model, sw_tokenizer, task, data, labels, cfg(epochs=1, batch_size=8),
                                   seed=1, checkpoint_dir=tmp_path / task)
        top = 1.0 if task == "nli" else 100.0
        assert 0 <= scores[f"test_{metric}"] <= top and scores["metric"] == metric and len(history) >= 4
        if task == "qa":
            assert 0 <= scores["test_exact_match"] <= scores["test_f1"]
    assert labels == [] and task_labels("nli", {"train": nli, "dev": nli, "test": nli}) == [
        "contradiction", "entailment", "neutral"]

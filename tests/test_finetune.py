"""Fine-tuning: learns a token task and a parsing task, reproducible per seed, resumes bit-identically, names
bad input."""

import functools
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch

from vocab_transfer.io import write_tensors
from vocab_transfer.source_model import build_xlmr_mlm
from vocab_transfer.training.adapters import (
    adapter_parameter_names,
    add_language_adapter,
    save_language_adapter,
    strip_language_adapter,
)
from vocab_transfer.training.finetune import (
    BiaffineParser,
    FinetuneConfig,
    ParserOutput,
    attachment_scores,
    binary_f1,
    collate,
    correlations,
    encode_dep,
    encode_qa,
    evaluate,
    finetune,
    load_task_model,
    main,
    read_task_data,
    selection_metric,
    span_f1,
    squad_scores,
    task_labels,
)

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
    return FinetuneConfig.parse({"epochs": 3, "lr": 2e-3, "batch_size": 16, "seq_len": 64,
                                 "eval_fraction": 0.2, "threads": 1, **kw})


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
    assert all(torch.equal(a, b)
               for a, b in zip(model.state_dict().values(), model2.state_dict().values(), strict=True))
    (other, _), _ = run(model_dir, sw_tokenizer, ner_data, tmp_path / "c", seed=2)
    assert other != scores


def test_resume_after_interruption_is_bit_identical(tmp_path, model_dir, sw_tokenizer, ner_data):
    (ref, ref_hist), _ = run(model_dir, sw_tokenizer, ner_data, tmp_path / "ref", epochs=1)
    # mid-way, between evals
    run(model_dir, sw_tokenizer, ner_data, tmp_path / "cut", stop_after=12, epochs=1)
    torch.randn(10)
    (resumed, hist), _ = run(model_dir, sw_tokenizer, ner_data, tmp_path / "cut", seed=1, epochs=1)
    assert resumed == ref
    pd.testing.assert_frame_equal(hist, ref_hist)


def test_resume_refuses_checkpoints_of_other_settings(tmp_path, model_dir, sw_tokenizer, ner_data):
    run(model_dir, sw_tokenizer, ner_data, tmp_path / "cut", stop_after=12, epochs=1)
    with pytest.raises(ValueError,
                       match=r"fine-tuning checkpoint .*step-00000012 was written with other settings "
                             r"\(lr: \[0.002\] then, \[0.001\] now\); delete .*cut"):
        run(model_dir, sw_tokenizer, ner_data, tmp_path / "cut", epochs=1, lr=1e-3)
    # the thread count may change on a rerun (RESUME_FREE): it resumes, and ends as the uninterrupted run
    (resumed, _), _ = run(model_dir, sw_tokenizer, ner_data, tmp_path / "cut", epochs=1, threads=2)
    (ref, _), _ = run(model_dir, sw_tokenizer, ner_data, tmp_path / "ref", epochs=1)
    assert resumed == ref


def test_label_set_mismatch_and_missing_columns_are_named(tmp_path, ner_data):
    bad = {**ner_data,
           "test": ner_data["test"].assign(tags=[["B-XYZ"] * len(t) for t in ner_data["test"].tokens])}
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
        FinetuneConfig.parse({"epoch": 3})


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
    cmd = [sys.executable, "-m", "vocab_transfer.training.finetune", "--model", str(model_dir), "--task",
           "ner", "--data", str(data), "--seed", "3", "--output", str(out), "--meta",
           json.dumps({"model": "tiny"}), "--config", json.dumps({**cfg(epochs=1).__dict__})]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    row = pd.read_parquet(out)
    assert len(row) == 1 and row.loc[0, "model"] == "tiny" and row.loc[0, "seed"] == 3
    assert {"dev_f1", "test_f1", "test_precision", "selected_step", "n_train"} <= set(row.columns)
    assert ((tmp_path / "seed3.history.parquet").is_file()
            and not (tmp_path / "seed3.parquet.checkpoints").exists())


def test_nli_and_qa_run_end_to_end(tmp_path, model_dir, sw_tokenizer, swahili_verses):
    """Both heads train, select on dev and score test with metrics in range (learning is not asserted:
    a 1-layer model on 60 examples)."""
    verses = [v for v in swahili_verses[:400] if len(v.split()) > 6]
    nli = pd.DataFrame([{"id": str(i), "premise": v, "hypothesis": " ".join(v.split()[:4]),
                         "label": ("entailment", "neutral", "contradiction")[i % 3]}
                        for i, v in enumerate(verses)])
    qa = pd.DataFrame([{"id": str(i), "question": "Nani? " + v.split()[0], "context": v,
                        "answers": {"text": [v.split()[2]],
                                    "answer_start": [v.index(" " + v.split()[2]) + 1]}}
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


# ------------------------------------------------------------------------------------------ GLUE: STS-B, MRPC
def test_pair_metrics_known_answers():
    """MRPC's F1 of the positive class and STS-B's Pearson / Spearman, by hand and against scipy."""
    from scipy.stats import pearsonr, spearmanr

    f = binary_f1(["eq", "eq", "no", "no", "eq"], ["eq", "no", "eq", "no", "eq"], "eq")  # TP 2, FP 1, FN 1
    assert f == {"f1": pytest.approx(2 / 3), "precision": pytest.approx(2 / 3),
                 "recall": pytest.approx(2 / 3)}
    assert binary_f1(["no", "eq"], ["no", "no"], "eq") == {"f1": 0.0, "precision": 0.0, "recall": 0.0}
    assert binary_f1(["no", "eq"], ["no", "no"], "no")["f1"] == pytest.approx(2 / 3)  # P 1/2, R 1
    assert correlations([1, 2, 3, 4, 5], [1, 3, 2, 5, 4]) == {"pearson": pytest.approx(0.8),
                                                              "spearman": pytest.approx(0.8)}
    tied = correlations([1, 2, 2, 3], [1, 2, 3, 4])  # gold ranks 1, 2.5, 2.5, 4
    assert (tied["spearman"] == pytest.approx(3 / 10 ** 0.5)
            and tied["pearson"] == pytest.approx(3 / 10 ** 0.5))
    gold, pred = [0.0, 1.2, 2.5, 3.8, 5.0, 4.1], [0.3, 0.2, 3.0, 3.3, 4.9, 5.5]
    assert correlations(gold, pred)["pearson"] == pytest.approx(pearsonr(gold, pred)[0])
    assert correlations(gold, pred)["spearman"] == pytest.approx(spearmanr(gold, pred)[0])
    assert correlations([1.0, 2.0, 3.0], [0.5, 0.5, 0.5]) == {"pearson": 0.0, "spearman": 0.0}  # constant: 0


def test_selection_metric_choices_are_named():
    assert selection_metric("sts", FinetuneConfig()) == "pearson"
    assert selection_metric("nli", FinetuneConfig(metric="f1"), ["not_equivalent", "equivalent"]) == "f1"
    with pytest.raises(ValueError, match=r"metric 'pearson' is not reported for task 'nli'; choose one of "
                                         r"\['accuracy', 'f1'\]"):
        selection_metric("nli", FinetuneConfig(metric="pearson"))
    with pytest.raises(ValueError, match=r"binary F1 needs a positive_label for the labels "
                                         r"\['entailment', 'neutral', 'contradiction'\]"):
        selection_metric("nli", FinetuneConfig(metric="f1"), ["entailment", "neutral", "contradiction"])
    with pytest.raises(ValueError, match="positive_label 'yes' is not one of the labels"):
        selection_metric("nli", FinetuneConfig(metric="f1", positive_label="yes"), ["no", "ok"])
    with pytest.raises(ValueError, match="positive_label applies to task nli"):
        selection_metric("sts", FinetuneConfig(positive_label="yes"))


@pytest.fixture
def one_thread():
    """One torch thread, as the config's ``threads: 1`` gives the CLI (on a busy 2-core machine two threads
    take 20x longer here); restored afterwards, since main() sets it process-wide."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def capital_pairs(verses: list[str], n: int) -> pd.DataFrame:
    """Learnable sentence pairs: sentence2 is words 2-6 of sentence1; the similarity counts its capitalized
    words (2.5 each, at most 5), and a pair is a paraphrase ("equivalent") if there is one."""
    rows = []
    for i, v in enumerate(verses[:n]):
        w = v.split()
        caps = sum(x[:1].isupper() for x in w[1:6])
        rows.append({"id": str(i), "sentence1": " ".join(w[:12]), "sentence2": " ".join(w[1:6]),
                     "score": min(5.0, 2.5 * caps), "label": ("not_equivalent", "equivalent")[caps > 0]})
    return pd.DataFrame(rows).assign(premise=lambda d: d.sentence1, hypothesis=lambda d: d.sentence2)


def test_sts_regression_learns_and_is_reproducible(tmp_path, model_dir, sw_tokenizer, swahili_verses,
                                                   one_thread):
    """STS-B-shaped data: a one-output regression head (MSE), selected on dev Pearson; the signal is learned
    (a constant or unrelated prediction has Pearson ~0), and the same seed gives the same scores."""
    df = capital_pairs(swahili_verses, 520)[["id", "sentence1", "sentence2", "score"]]
    data = {"train": df[:400].reset_index(drop=True), "dev": df[400:460].reset_index(drop=True),
            "test": df[460:].reset_index(drop=True)}
    assert task_labels("sts", data) == []
    out = []
    for run in ("a", "b"):
        torch.manual_seed(1)
        model = load_task_model("sts", str(model_dir), [])
        assert model.config.num_labels == 1 and model.config.problem_type == "regression"
        out.append(finetune(model, sw_tokenizer, "sts", data, [], cfg(epochs=6, lr=3e-3), seed=1,
                            checkpoint_dir=tmp_path / run))
    (scores, history), (again, _) = out
    assert scores["metric"] == "pearson" and scores["dev_pearson"] == history["dev_pearson"].max()
    assert scores["selected_step"] == history["step"][history["dev_pearson"].idxmax()]
    assert scores["test_pearson"] > 0.4 and -1 <= scores["test_spearman"] <= 1
    assert again == scores


def test_mrpc_f1_selection_and_mismatched_test_set_through_the_cli(tmp_path, model_dir, swahili_verses,
                                                                   one_thread):
    """MRPC-shaped pairs through the CLI with `metric: f1`: dev selection by the positive class's F1, accuracy
    also reported, and an extra evaluation set (test_mismatched.parquet, MNLI's "mm") scored as well."""
    df = capital_pairs(swahili_verses, 560)[["id", "premise", "hypothesis", "label"]]
    data = tmp_path / "data"
    data.mkdir()
    for name, part in {"train": df[:400], "dev": df[400:460], "test": df[460:510],
                       "test_mismatched": df[510:]}.items():
        part.reset_index(drop=True).to_parquet(data / f"{name}.parquet")
    (data / "labels.json").write_text(json.dumps(["not_equivalent", "equivalent"]))
    out = tmp_path / "seed1.parquet"
    main(["--model", str(model_dir), "--task", "nli", "--data", str(data), "--seed", "1",
          "--output", str(out),
          "--config", json.dumps({**cfg(epochs=6, lr=3e-3, eval_fraction=0.1).__dict__, "metric": "f1"})])
    row = pd.read_parquet(out).iloc[0]
    history = pd.read_parquet(tmp_path / "seed1.history.parquet")
    assert row["metric"] == "f1" and row["dev_f1"] == history["dev_f1"].max()
    assert row["selected_step"] == history["step"][history["dev_f1"].idxmax()]
    test = df[460:510]
    always_yes = binary_f1(list(test.label), ["equivalent"] * len(test), "equivalent")["f1"]
    assert row["test_f1"] > always_yes and row["test_accuracy"] > 0.7  # learned, not the majority answer
    assert row["extra_test_sets"] == "mismatched" and 0 <= row["test_mismatched_accuracy"] <= 1
    assert 0 <= row["test_mismatched_f1"] <= 1 and row["n_test"] == 50


def test_sentence_pair_segment_ids_are_padded():
    """BERT-style models get the pair's segment ids (HF run_glue), padded with 0; models without them do
    not."""
    items = [{"input_ids": [5, 6, 7, 8], "token_type_ids": [0, 0, 1, 1], "labels": 1},
             {"input_ids": [5, 9], "token_type_ids": [0, 1], "labels": 0}]
    batch = collate(items, pad_id=1)
    assert batch["token_type_ids"].tolist() == [[0, 0, 1, 1], [0, 1, 0, 0]]
    assert "token_type_ids" not in collate([{k: v for k, v in it.items() if k != "token_type_ids"}
                                            for it in items], 1)


# ----------------------------------------------------------------------------------------- dependency parsing
def chain_tree(words: list[str]) -> dict:
    """A learnable synthetic language: every word attaches to the previous one (the first to the root); the
    relation is "cap" for a capitalized word, "low" otherwise ("root" for the first)."""
    return {"tokens": words, "heads": list(range(len(words))),
            "deprels": ["root"] + ["cap" if w[:1].isupper() else "low" for w in words[1:]]}


@pytest.fixture(scope="module")
def dep_data(swahili_verses):
    df = pd.DataFrame([{"id": str(i), **chain_tree(v.split()[:20])}
                       for i, v in enumerate(swahili_verses[:520])])
    return {"train": df[:400].reset_index(drop=True), "dev": df[400:460].reset_index(drop=True),
            "test": df[460:].reset_index(drop=True)}


SMALL_PARSER = {"arc_mlp_size": 64, "label_mlp_size": 16}


def run_dep(model_dir, tokenizer, data, tmp, seed=1, stop_after=None, **kw):
    labels = task_labels("dep", data)
    c = cfg(**kw)
    torch.manual_seed(seed)
    model = load_task_model("dep", str(model_dir), labels, arc_mlp_size=c.arc_mlp_size,
                            label_mlp_size=c.label_mlp_size, mlp_dropout=c.mlp_dropout)
    out = finetune(model, tokenizer, "dep", data, labels, c, seed=seed, checkpoint_dir=tmp,
                   stop_after=stop_after)
    return out, model


def test_attachment_scores_known_answer():
    gold_h, gold_r = [[2, 0, 2], [0, 1]], [["nsubj", "root", "obj"], ["root", "punct"]]
    pred_h, pred_r = [[2, 0, 1], [0, -1]], [["nsubj", "root", "obj"], ["nmod", None]]  # -1: a word cut off
    s = attachment_scores(gold_h, gold_r, pred_h, pred_r)  # heads right: 3 of 5; heads and labels: 2 of 5
    assert s == {"uas": pytest.approx(0.6), "las": pytest.approx(0.4)}


def test_parser_learns_a_chain_language(tmp_path, model_dir, sw_tokenizer, dep_data):
    (scores, history), model = run_dep(model_dir, sw_tokenizer, dep_data, tmp_path / "a", arc_mlp_size=256,
                                       label_mlp_size=32)  # half the defaults' time, as good here
    assert isinstance(model, BiaffineParser) and task_labels("dep", dep_data) == ["cap", "low", "root"]
    assert model.sizes == {"arc_mlp_size": 256, "label_mlp_size": 32, "mlp_dropout": 0.33}
    default = FinetuneConfig()  # Dozat & Manning (2017), Table 2
    assert (default.arc_mlp_size, default.label_mlp_size, default.mlp_dropout) == (500, 100, 0.33)
    # trivial parsers: all words on the root (UAS = 1/n) or on the first word; the majority label is "low"
    test = dep_data["test"]
    n = sum(len(h) for h in test.heads)
    on_root, on_first = len(test) / n, sum(list(h).count(1) for h in test.heads) / n
    assert max(on_root, on_first) < 0.1
    assert scores["test_uas"] > 0.8 and scores["test_las"] > 0.7 and scores["test_las"] <= scores["test_uas"]
    assert scores["metric"] == "las" and scores["dev_las"] == history["dev_las"].max()
    assert {"dev_uas", "dev_las", "test_uas", "test_las"} <= set(scores) and history["dev_uas"].iloc[-1] > 0.8


def test_parser_is_reproducible_and_resumes_bit_identically(tmp_path, model_dir, sw_tokenizer, dep_data):
    (ref, ref_hist), model = run_dep(model_dir, sw_tokenizer, dep_data, tmp_path / "ref", epochs=1,
                                     **SMALL_PARSER)
    torch.randn(10)
    (again, _), model2 = run_dep(model_dir, sw_tokenizer, dep_data, tmp_path / "again", epochs=1,
                                 **SMALL_PARSER)
    assert again == ref and 0 < ref["test_las"] <= ref["test_uas"] <= 1
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), model2.state_dict().values(),
                                                  strict=True))
    (other, _), _ = run_dep(model_dir, sw_tokenizer, dep_data, tmp_path / "other", seed=2, epochs=1,
                            **SMALL_PARSER)
    assert other != ref
    run_dep(model_dir, sw_tokenizer, dep_data, tmp_path / "cut", stop_after=12, epochs=1, **SMALL_PARSER)
    torch.randn(10)
    (resumed, hist), model3 = run_dep(model_dir, sw_tokenizer, dep_data, tmp_path / "cut", epochs=1,
                                      **SMALL_PARSER)
    assert resumed == ref
    pd.testing.assert_frame_equal(hist, ref_hist)
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), model3.state_dict().values(),
                                                  strict=True))


class OracleParser(torch.nn.Module):
    """Scores the gold head (from ``encode_dep``'s items, in evaluation order) highest, and relation 0 for
    every word: evaluate() must map positions back to words and score cut words as wrong."""

    def __init__(self, items):
        super().__init__()
        self.items, self.seen = items, 0

    def forward(self, input_ids, attention_mask, word_mask):
        b, n = input_ids.shape
        arc = torch.zeros(b, n, n)
        for i, it in enumerate(self.items[self.seen:self.seen + b]):
            for pos, head in enumerate(it["heads"]):
                if head >= 0:
                    arc[i, pos, head] = 1.0
        self.seen += b
        return ParserOutput(None, arc, torch.zeros(b, n, 2))


def test_evaluate_dep_maps_positions_and_counts_cut_words(sw_tokenizer):
    words = "Kwa maana Mungu aliupenda ulimwengu hivi hata akamtoa Mwanawe pekee".split()
    n = len(words)
    head_final = {"tokens": words, "heads": [n] * (n - 1) + [0], "deprels": ["low"] * (n - 1) + ["root"]}
    df = pd.DataFrame([{"id": "a", **chain_tree(words)}, {"id": "b", **chain_tree(words[:3])},
                       {"id": "c", **head_final}])
    labels = ["cap", "low", "root"]
    items = encode_dep(df, sw_tokenizer, labels, 12)
    kept = [w for w, p in enumerate(items[0]["words"]) if p >= 0]
    assert 3 < len(kept) < n and items[1]["words"][0] == 1 and items[2]["words"][-1] == -1  # a and c are cut
    assert all(items[0]["heads"][p] == (0 if w == 0 else items[0]["words"][w - 1])
               for w, p in enumerate(items[0]["words"]) if p >= 0)  # the root is position 0
    # c: every kept word's head (the last word) is cut: no training signal
    assert set(items[2]["heads"]) == {-100}
    batch = collate(items, sw_tokenizer.pad_token_id)
    assert batch["word_mask"].sum() == 2 * len(kept) + 3 and not batch["word_mask"][:, 0].any()
    no_autocast = functools.partial(torch.autocast, "cpu", enabled=False)
    scores = evaluate(OracleParser(items), "dep", items, df, labels, cfg(eval_batch_size=2),
                      sw_tokenizer.pad_token_id, "cpu", no_autocast)
    # right heads: the kept words of a (their heads precede them, so are kept too) and all 3 of b; none of c
    # (its root word is cut, so is wrong even though its gold head is the root); right relations (label 0 =
    # "cap"): the capitalized non-initial words among those
    right = [(w, words[w]) for w in kept] + [(w, words[w]) for w in range(3)]
    assert scores["uas"] == pytest.approx(len(right) / (2 * n + 3))
    assert scores["las"] == pytest.approx(sum(w > 0 and t[:1].isupper() for w, t in right) / (2 * n + 3))


def test_dep_input_errors(tmp_path, sw_tokenizer, dep_data):
    for split, df in dep_data.items():
        (df.drop(columns="heads") if split == "train" else df).to_parquet(tmp_path / f"{split}.parquet")
    with pytest.raises(ValueError, match=r"dep dataset lacks column\(s\) \['heads'\]"):
        read_task_data(tmp_path, "dep")
    bad = dep_data["dev"][:2].assign(heads=[[0, 1, 2], [0, 5]], tokens=[["a", "b", "c"], ["d", "e"]],
                                     deprels=[["root", "low", "low"], ["root", "low"]])
    with pytest.raises(ValueError,
                       match=r"dep sentence 401: head\(s\) outside 0..2 \(word, head\): \[\(2, 5\)\]"):
        encode_dep(bad, sw_tokenizer, ["low", "root"], 32)
    no_root = functools.partial(sw_tokenizer, add_special_tokens=False)
    with pytest.raises(ValueError, match="must start every sequence with a special token"):
        encode_dep(dep_data["dev"][:1], no_root, ["cap", "low", "root"], 32)
    with pytest.raises(ValueError, match=r"label set mismatch: test has label\(s\) \['nmod'\]"):
        task_labels("dep", {**dep_data, "test": dep_data["test"].assign(
            deprels=[["root"] + ["nmod"] * (len(r) - 1) for r in dep_data["test"].deprels])})


def test_parser_on_adapter_and_swapped_embeddings_saves_and_reloads(tmp_path, sw_tokenizer, dep_data):
    """The MAD-X path (a LAPT folder with a language adapter: attached to the encoder, frozen), the vocabulary
    swap path (``embeddings``), and ``save_pretrained`` -> ``load_task_model`` giving the same parser back."""
    lapt = tmp_path / "lapt"
    mlm = build_xlmr_mlm(sw_tokenizer, seed=0, dropout=0.1, **TINY)
    add_language_adapter(mlm, seed=1)
    with torch.no_grad():
        for name, p in mlm.named_parameters():
            if name in adapter_parameter_names(mlm):
                p.normal_(0, 0.05)  # a trained adapter: not the identity
    save_language_adapter(mlm, lapt)
    strip_language_adapter(mlm)
    mlm.save_pretrained(lapt)
    labels = task_labels("dep", dep_data)
    torch.manual_seed(1)
    parser = load_task_model("dep", str(lapt), labels, **SMALL_PARSER)
    adapter = adapter_parameter_names(parser.encoder)
    assert adapter and parser.encoder.pooler is None
    frozen = {n for n, p in parser.named_parameters() if not p.requires_grad}
    assert frozen == {f"encoder.{n}" for n in adapter}
    before = {n: p.detach().clone() for n, p in parser.named_parameters()}
    small = {s: d[:40].reset_index(drop=True) for s, d in dep_data.items()}
    finetune(parser, sw_tokenizer, "dep", small, labels, cfg(epochs=1, batch_size=8, **SMALL_PARSER), seed=1,
             checkpoint_dir=tmp_path / "ck")
    after = dict(parser.named_parameters())
    # adapter fixed, rest trained
    assert all(torch.equal(before[n], after[n]) == (n in frozen) for n in before)
    parser.save_pretrained(tmp_path / "saved")
    again = load_task_model("dep", str(tmp_path / "saved"), labels)  # sizes from parser_head.json
    assert again.sizes == parser.sizes and adapter_parameter_names(again.encoder) == adapter
    batch = collate(encode_dep(small["test"], sw_tokenizer, labels, 64), sw_tokenizer.pad_token_id)
    del batch["heads"], batch["labels"]
    parser.eval(), again.eval()
    with torch.no_grad():
        assert torch.equal(parser(**batch).arc_logits, again(**batch).arc_logits)
        assert torch.equal(parser(**batch).label_logits, again(**batch).label_logits)
    with pytest.raises(ValueError, match="saved parser's labels"):
        load_task_model("dep", str(tmp_path / "saved"), ["low", "root"])
    rows = torch.randn(len(sw_tokenizer) + 7, TINY["hidden_size"])
    write_tensors({"embeddings": rows}, tmp_path / "init.safetensors")
    swapped = load_task_model("dep", str(lapt), labels, embeddings=str(tmp_path / "init.safetensors"))
    assert (torch.equal(swapped.get_input_embeddings().weight, rows)
            and not adapter_parameter_names(swapped.encoder))


def test_binary_f1_positive_class_does_not_depend_on_label_order():
    from vocab_transfer.training.finetune import positive_class

    assert positive_class(["not_equivalent", "equivalent"], None) == "equivalent"
    # sorted labels (no labels.json)
    assert positive_class(["equivalent", "not_equivalent"], None) == "equivalent"
    assert positive_class(["paraphrase", "not_paraphrase"], None) == "paraphrase"
    assert positive_class(["no", "yes"], "yes") == "yes"
    with pytest.raises(ValueError, match="needs a positive_label"):
        positive_class(["no", "yes"], None)


def save_tiny_flaubert(path, texts: list[str]) -> None:
    """A FlauBERT-shaped reference model folder, as a hub snapshot of flaubert/flaubert_base_cased holds it
    (vocab.json + merges.txt for the Python BPE tokenizer, FlaubertWithLMHeadModel): character-level BPE (no
    merges) over the characters of ``texts``, 1 layer of width 32, seeded."""
    from transformers import FlaubertConfig, FlaubertTokenizer, FlaubertWithLMHeadModel

    path.mkdir(parents=True, exist_ok=True)
    chars = sorted({c for v in texts for c in v if not c.isspace()})
    specials = ["<s>", "</s>", "<pad>", "<unk>"] + [f"<special{i}>" for i in range(10)]
    vocab = {t: i for i, t in enumerate(specials + chars + [c + "</w>" for c in chars])}
    (path / "vocab.json").write_text(json.dumps(vocab))
    (path / "merges.txt").write_text("")
    FlaubertTokenizer(str(path / "vocab.json"), str(path / "merges.txt")).save_pretrained(path)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        FlaubertWithLMHeadModel(FlaubertConfig(vocab_size=len(vocab), emb_dim=32, n_layers=1, n_heads=2,
                                               max_position_embeddings=128, pad_index=2)
                                ).save_pretrained(path)


def test_reference_model_with_a_slow_tokenizer_flaubert(tmp_path, swahili_verses, one_thread):
    """vocab-swap Tables 12/13's FlauBERT row: a reference model whose tokenizer has no fast implementation
    (FlaubertTokenizer: Python BPE + sacremoses) fine-tunes on sentence pairs through the CLI."""
    from transformers import AutoTokenizer

    ref = tmp_path / "flaubert"
    save_tiny_flaubert(ref, swahili_verses[:600])
    assert not AutoTokenizer.from_pretrained(ref).is_fast
    df = capital_pairs(swahili_verses, 560)[["id", "premise", "hypothesis", "label"]]
    data = tmp_path / "data"
    data.mkdir()
    for name, part in {"train": df[:400], "dev": df[400:460], "test": df[460:]}.items():
        part.reset_index(drop=True).to_parquet(data / f"{name}.parquet")
    (data / "labels.json").write_text(json.dumps(["not_equivalent", "equivalent"]))
    out = tmp_path / "seed1.parquet"
    main(["--model", str(ref), "--task", "nli", "--data", str(data), "--seed", "1", "--output", str(out),
          "--config", json.dumps(cfg(epochs=6, lr=3e-3, seq_len=96).__dict__)])
    row = pd.read_parquet(out).iloc[0]
    majority = df[460:].label.value_counts(normalize=True).max()
    # learned through the slow tokenizer
    assert row["n_test"] == 100 and row["test_accuracy"] > majority + 0.1


def test_seeds_share_a_job_per_cell_or_split_by_seeds_per_job():
    """The plan's fine-tuning files: by default one job per cell for all its seeds (``seed1+2+3``);
    ``seeds_per_job`` splits them in config order, a task's own value wins, ``1`` is a job per seed; the job's
    --seed is its seeds."""
    import copy
    from types import SimpleNamespace

    import yaml

    from vocab_transfer.workflow import paths
    from vocab_transfer.workflow.config import check_config, fill_defaults
    from vocab_transfer.workflow.plan import Plan

    root = Path(__file__).resolve().parents[1]
    base = yaml.safe_load((root / "tests/data/tiny_config.yaml").read_text())
    base["finetune"]["seeds"] = [5, 1, 3, 2, 4]

    def plan(edit=lambda c: None):
        config = copy.deepcopy(base)
        edit(config)
        config = fill_defaults(config)
        check_config(config)
        return Plan(config)

    def groups(p, task="he-ner"):
        stem = paths.finetune_scores("tiny", task, "source", "").removesuffix(".parquet")
        return [f.removeprefix(stem).removesuffix(".parquet")
                for f in p.cell_scores("tiny", task, "source")]

    assert groups(plan()) == ["5+1+3+2+4"]
    by_two = plan(lambda c: c["finetune"].update(seeds_per_job=2))
    assert groups(by_two) == ["5+1", "3+2", "4"]
    assert by_two.finetune_seeds(SimpleNamespace(seeds="5+1")) == "5 1"
    own = plan(lambda c: c["finetune"].update(seeds_per_job=2) or c["finetune"]["tasks"]["he-dep"].update(
        seeds_per_job=1))
    assert groups(own, "he-ner") == ["5+1", "3+2", "4"] and groups(own, "he-dep") == ["5", "1", "3", "2", "4"]
    files = own.finetune_scores()
    assert len(files) == len(set(files)) and paths.finetune_scores("tiny", "he-dep", "source", 3) in files


def test_live_curves_hold_the_dev_history(tmp_path, model_dir, sw_tokenizer, ner_data):
    """finetune.training.report_to: [tensorboard]: the event files (TensorBoard's own reader) hold the
    history's training loss and dev scores at its steps, with the learning rate and gradient norm."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    labels = task_labels("ner", ner_data)
    torch.manual_seed(1)
    model = load_task_model("ner", str(model_dir), labels)
    _, history = finetune(model, sw_tokenizer, "ner", ner_data, labels, cfg(epochs=1), seed=1,
                          checkpoint_dir=tmp_path / "ckpt", track_dir=tmp_path / "live" / "seed1")
    events = EventAccumulator(str(tmp_path / "live" / "seed1" / "tensorboard"))
    events.Reload()
    for tag, column in (("train/loss", "train_loss"), ("dev/f1", "dev_f1")):
        assert [(e.step, e.value) for e in events.Scalars(tag)] == [
            (s, pytest.approx(v, rel=1e-6)) for s, v in zip(history["step"], history[column], strict=True)]
    assert {"train/lr", "train/grad_norm", "train/steps_per_s"} <= set(events.Tags()["scalars"])

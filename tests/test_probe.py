"""Linear probes at init (vocab_transfer.eval.probe; WECHSEL Tables 7-8's NLI and POS columns)."""

import copy
import random

import pandas as pd
import pytest
import torch

from vocab_transfer.eval.probe import fit_probe, predict, probe_accuracy, word_means
from vocab_transfer.report.tables import init_table
from vocab_transfer.source_model import build_xlmr_mlm

TINY = dict(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64, max_position_embeddings=64)


@pytest.fixture(scope="module")
def tokenizer(sw_tokenizer):
    """A copy of the session's tokenizer: calls with truncation=True leave it set on the tokenizer (and in a
    later save_pretrained's tokenizer.json), which other test modules must not inherit."""
    return copy.deepcopy(sw_tokenizer)


@pytest.fixture(scope="module")
def model(tokenizer):
    return build_xlmr_mlm(tokenizer, seed=0, dropout=0.0, **TINY).eval()


def test_fit_probe_separates_separable_classes_and_is_deterministic():
    g = torch.Generator().manual_seed(0)
    centres = torch.randn(3, 8, generator=g) * 4
    y = torch.randint(0, 3, (300,), generator=g)
    x = centres[y] + torch.randn(300, 8, generator=g)
    a, b = (fit_probe(x[:200], y[:200], 3, l2=1e-3, max_iter=100),
            fit_probe(x[:200], y[:200], 3, l2=1e-3, max_iter=100))
    assert all(torch.equal(p, q) for p, q in zip(a, b, strict=True))  # no random start: bit-identical refits
    assert (predict(a, x[200:]) == y[200:]).float().mean() > 0.95


def test_word_features_are_the_mean_of_each_words_tokens_whatever_the_batching(model, tokenizer,
                                                                               swahili_verses):
    sentences = [v.split() for v in swahili_verses[:6]]
    f1, where1 = word_means(model, tokenizer, sentences, seq_len=64, batch_size=1)
    f4, where4 = word_means(model, tokenizer, sentences, seq_len=64, batch_size=4)
    assert where1 == where4 and torch.allclose(f1, f4, atol=1e-5)
    enc = tokenizer([sentences[2]], is_split_into_words=True, truncation=True, max_length=64)
    hidden = model.base_model(input_ids=torch.tensor(enc["input_ids"])).last_hidden_state[0]
    words = enc.word_ids(0)
    for w in (0, 3):
        expected = hidden[[i for i, x in enumerate(words) if x == w]].mean(0)
        assert torch.allclose(f1[where1.index((2, w))], expected, atol=1e-5)
    assert sum(1 for s, _ in where1 if s == 2) == len(sentences[2])


def nli_frame(verses, n, seed, shuffle=False):
    """Pairs whose label is told by a word that ends the hypothesis (a linear probe of the concatenated means
    can read it; with shuffled labels nothing can)."""
    rng, markers = random.Random(seed), {"entailment": "mungu", "neutral": "watu", "contradiction": "nchi"}
    rows = []
    for i in range(n):
        label = ("entailment", "neutral", "contradiction")[i % 3]
        rows.append({"id": str(i), "premise": verses[i], "label": label,
                     "hypothesis": " ".join(verses[rng.randrange(len(verses))].split()[:4]
                                            + [markers[label]])})
    df = pd.DataFrame(rows)
    if shuffle:
        df["label"] = df["label"].sample(frac=1, random_state=seed).to_numpy()
    return df


def test_nli_probe_reads_what_the_features_carry_and_not_shuffled_labels(model, tokenizer, swahili_verses):
    verses = swahili_verses[:600]
    labels = ["entailment", "neutral", "contradiction"]
    kw = dict(labels=labels, seq_len=64, batch_size=32, l2=1e-3, max_iter=100)
    train, test = nli_frame(verses[:400], 300, 0), nli_frame(verses[400:], 150, 1)
    real = probe_accuracy(model, tokenizer, train, test, "nli", **kw)
    assert real["features"] == 64 and real["train_items"] == 300 and real["test_items"] == 150
    noise = probe_accuracy(model, tokenizer, nli_frame(verses[:400], 300, 0, shuffle=True),
                           nli_frame(verses[400:], 150, 1, shuffle=True), "nli", **kw)
    assert real["accuracy"] > 0.6 > 0.45 > noise["accuracy"]  # chance: 1/3


def test_pos_probe_counts_words_and_refuses_unknown_labels(model, tokenizer, swahili_verses):
    def frame(verses):  # tag = whether the word is one of four function words (about 19% of the words)
        return pd.DataFrame([{"id": str(i), "tokens": v.split(),
                              "tags": ["FN" if w.lower() in ("na", "ya", "wa", "kwa") else "X"
                                       for w in v.split()]}
                             for i, v in enumerate(verses)])
    kw = dict(seq_len=64, batch_size=16, l2=1e-3, max_iter=100)
    result = probe_accuracy(model, tokenizer, frame(swahili_verses[:200]), frame(swahili_verses[200:300]),
                            "pos", labels=["FN", "X"], **kw)
    majority = pd.Series([t for tags in frame(swahili_verses[200:300])["tags"] for t in tags]).value_counts(
        normalize=True).max()
    assert result["accuracy"] > majority + 0.1  # 0.94 against 0.81
    # the commonest training label (X); truncated words unscored
    assert abs(result["majority"] - majority) < 0.01
    assert result["train_items"] + result["test_items"] + result["words_left_out"] == sum(
        len(v.split()) for v in swahili_verses[:300])
    with pytest.raises(ValueError, match="not in the task's label list"):
        probe_accuracy(model, tokenizer, frame(swahili_verses[:50]), frame(swahili_verses[50:60]), "pos",
                       labels=["X"], **kw)


def test_init_table_with_probes_has_wechsel_table7s_layout():
    evals = pd.DataFrame([{"source": "s", "target": "de", "method": m, "mlm_loss": loss}
                          for m, loss in (("a", 5.0), ("b", 4.0))])
    probes = pd.DataFrame([{"source": "s", "task": "xnli-de", "method": m, "accuracy": acc, "probe": "NLI",
                            "language": "de", "majority": 0.334} for m, acc in (("a", 0.584), ("b", 0.41))])
    spec = {"title": "T7", "rows": ["a", "b"], "languages": ["de"], "value": "loss",
            "probes": {"NLI": ["xnli-de"]}}
    table, md = init_table(pd.concat([evals, probes], ignore_index=True), spec,
                           labels={"a": "k=1", "b": "k=10"})
    lines = md.splitlines()
    assert lines[2] == "| Language | Initialization | NLI | loss |"
    assert lines[4] == "| de | k=1 | **58.4** | 5.000 |" and lines[5] == "|  | k=10 | 41.0 | **4.000** |"
    assert lines[6] == "|  | *(majority label)* | *33.4* | — |"
    assert table[["method", "NLI", "loss"]].values.tolist() == [["a", 0.584, 5.0], ["b", 0.41, 4.0]]

"""Known-answer tests of the vocab-swap initializations, Procrustes and the embedding correlation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from tokenizers import Tokenizer, models, pre_tokenizers

from vocab_transfer.data.token_fasttext import TokenVectors
from vocab_transfer.data.tokenizer import canonicalize_vocab
from vocab_transfer.eval.correlation import embedding_correlation, row_correlations
from vocab_transfer.methods.align import mutual_nearest_neighbours, procrustes
from vocab_transfer.methods.base import TransferInputs
from vocab_transfer.methods.overlap import compute_overlap
from vocab_transfer.methods.vocab_swap import (
    align_match_init,
    dictionary_token_pairs,
    freq_match_pairs,
    init_align_match,
    init_dict_match,
    init_freq_match,
    init_keep,
    init_permute,
    init_reinit_embed,
    keep_init,
    permute_init,
    window_groups,
)


def rotation(d: int, seed: int) -> torch.Tensor:
    q, _ = torch.linalg.qr(torch.randn(d, d, generator=torch.Generator().manual_seed(seed),
                                       dtype=torch.float64))
    return q


def overlap_frame(rows):
    df = pd.DataFrame(rows, columns=["target_id", "source_id", "match"])
    return df.assign(symbolic=df["match"] == "special")


# ------------------------------------------------------------------------------------ align / correlation

def test_underdetermined_procrustes_is_one_map_whatever_the_pair_order():
    """62 pairs for 100 dimensions (the demo's Chichewa dictionary): every rotation that agrees on the pairs'
    span fits them equally well, and an SVD picks one by rounding noise (reordering the pairs moved the old
    map by 0.37 in its entries). The map is the one closest to the identity outside that span: orthogonal, as
    good a fit as any minimiser, and the same for the pairs in any order; a full-rank problem keeps the
    textbook U Vᵀ."""
    g = torch.Generator().manual_seed(0)
    X = torch.randn(62, 100, generator=g, dtype=torch.float64)
    Q = torch.linalg.qr(torch.randn(100, 100, generator=g, dtype=torch.float64))[0]
    Y = X @ Q + 0.01 * torch.randn(62, 100, generator=g, dtype=torch.float64)
    W = procrustes(X, Y)
    torch.testing.assert_close(W.T @ W, torch.eye(100, dtype=torch.float64))
    u, _, vh = torch.linalg.svd(X.T @ Y, full_matrices=False)
    assert float((X @ W - Y).norm()) == pytest.approx(float((X @ (u @ vh) - Y).norm()), rel=1e-10)
    perm = torch.randperm(62, generator=g)
    torch.testing.assert_close(procrustes(X[perm], Y[perm]), W, rtol=0, atol=1e-12)
    # of the minimisers, it is the one nearest the identity (largest trace): above the arbitrary one of the
    # SVD
    assert float(torch.trace(W)) > float(torch.trace(u @ vh)) + 1.0
    full = torch.randn(300, 100, generator=g, dtype=torch.float64)
    target = full @ Q
    u, _, vh = torch.linalg.svd(full.T @ target, full_matrices=False)
    assert torch.equal(procrustes(full, target), u @ vh)


def test_procrustes_recovers_rotation():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(50, 6, generator=g, dtype=torch.float64)
    Q = rotation(6, 1)
    torch.testing.assert_close(procrustes(X, X @ Q), Q)
    # noisy pairs still give the rotation approximately; the result is always orthogonal
    W = procrustes(X, X @ Q + 0.01 * torch.randn(50, 6, generator=g, dtype=torch.float64))
    torch.testing.assert_close(W, Q, atol=0.02, rtol=0)
    torch.testing.assert_close(W.T @ W, torch.eye(6, dtype=torch.float64))
    # rectangular: a [4, 6] map with orthonormal rows
    Q46 = rotation(6, 2)[:4]
    torch.testing.assert_close(procrustes(X[:, :4], X[:, :4] @ Q46), Q46)


def test_mutual_nearest_neighbours():
    A = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.9, 0.1]])
    B = torch.tensor([[0.0, 1.0], [1.0, 0.0]])
    ia, ib = mutual_nearest_neighbours(torch.nn.functional.normalize(A, dim=1), B)
    assert ia.tolist() == [0, 1] and ib.tolist() == [1, 0]  # A[2] -> B[1], but B[1] -> A[0]


def test_embedding_correlation_known_answers():
    g = torch.Generator().manual_seed(0)
    W = torch.randn(200, 16, generator=g)
    assert embedding_correlation(W, W) == pytest.approx(1.0)
    assert embedding_correlation(W, -W) == pytest.approx(-1.0)
    # Pearson: invariant to a per-row positive scale and shift
    assert embedding_correlation(W, 3 * W + 5) == pytest.approx(1.0)
    shuffled = W[torch.randperm(200, generator=g)]
    assert abs(embedding_correlation(W, shuffled)) < 0.2
    rho = row_correlations(W, shuffled)
    assert rho.shape == (200,) and rho.dtype == torch.float64
    # the mean over a subset of rows; constant rows are NaN and left out of the mean
    W2 = W.clone()
    W2[:100] = shuffled[:100]
    assert embedding_correlation(W, W2, rows=torch.arange(100, 200)) == pytest.approx(1.0)
    assert embedding_correlation(W, W2) == pytest.approx(0.5 + rho[:100].mean().item() / 2)
    W3 = W.clone()
    W3[0] = 0.0
    assert torch.isnan(row_correlations(W, W3)[0])
    assert embedding_correlation(W, W3) == pytest.approx(1.0)
    assert np.isnan(embedding_correlation(W[:1], W3[:1]))


# --------------------------------------------------------------------------------------- Reinit Embed

def test_reinit_embed_model_init_and_specials():
    source = torch.randn(20, 8, generator=torch.Generator().manual_seed(0)) + 3.0
    ov = overlap_frame([(0, 5, "special"), (1, 1, "exact")])
    res = init_reinit_embed(TransferInputs(source, 3000, ov), seed=0)
    assert res.matrix.shape == (3000, 8)
    torch.testing.assert_close(res.matrix[0], source[5])
    assert res.provenance[0] == "special" and res.provenance[1] == "random"  # exact overlap is not copied
    assert (abs(res.matrix[1:].mean().item()) < 0.002
            and res.matrix[1:].std().item() == pytest.approx(0.02, rel=0.05))
    plain = init_reinit_embed(TransferInputs(source, 3000, ov), seed=0, copy_special=False)
    assert plain.provenance[0] == "random"
    assert torch.equal(plain.matrix[1:], res.matrix[1:])


# ----------------------------------------------------------------------------------------- Freq Match

def test_freq_match_rank_to_rank():
    # target: special 0; counts 5, 9, 9, 1, 0 for ids 1..5 -> ranks 2, 3, 1, 4, 5 (ties by id)
    # source: special 0; counts 3, 10, 7, 7 for ids 1..4 -> ranks 2, 3, 4, 1
    target_counts = torch.tensor([100, 5, 9, 9, 1, 0])
    source_counts = torch.tensor([100, 3, 10, 7, 7])
    t, s = freq_match_pairs(target_counts, source_counts, torch.tensor([0]), torch.tensor([0]))
    assert t.tolist() == [2, 3, 1, 4] and s.tolist() == [2, 3, 4, 1]

    source = torch.arange(10, dtype=torch.float32).view(5, 2)
    aux = TokenVectors(torch.zeros(6, 3), torch.zeros(6, dtype=torch.bool), target_counts)
    source_aux = TokenVectors(torch.zeros(5, 3), torch.zeros(5, dtype=torch.bool), source_counts)
    res = init_freq_match(TransferInputs(source, 6, overlap_frame([(0, 0, "special")]), aux=aux,
                                         source_aux=source_aux), seed=0)
    for ti, si in [(0, 0), (2, 2), (3, 3), (1, 4), (4, 1)]:
        torch.testing.assert_close(res.matrix[ti], source[si])
    assert res.provenance.tolist() == ["special", "mapped", "mapped", "mapped", "mapped", "random"]
    assert res.n_sources.tolist() == [1, 1, 1, 1, 1, 0]


# ----------------------------------------------------------------------------------------- Dict Match

def wordpiece(tokens: list[str]) -> Tokenizer:
    tok = Tokenizer(models.WordPiece({t: i for i, t in enumerate(tokens)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.add_special_tokens(["[UNK]", "[MASK]"])
    return tok


SRC_TOKENS = ["[UNK]", "[MASK]", "house", "dog", "cat", "##s", "zebra", "the"]
TGT_TOKENS = ["[MASK]", "[UNK]", "haus", "hund", "katze", "##s", "zebra", "maus"]
DICTIONARY = pd.DataFrame(
    [("home", "Haus"), ("house", "Haus"), ("hound", "Hund"), ("dog", "Hund"), ("cat", "Katze"),
     ("the", "Katze"), ("house mouse", "Maus")],
    columns=["source_word", "target_word"])


@pytest.fixture(scope="module")
def dict_inputs():
    src, tgt = wordpiece(SRC_TOKENS), wordpiece(TGT_TOKENS)
    source = torch.arange(16, dtype=torch.float32).view(8, 2)
    return TransferInputs(source, 8, compute_overlap(src, tgt), dictionary=DICTIONARY, source_tokenizer=src,
                          target_tokenizer=tgt)


def test_dictionary_pairs_single_word_translations():
    src, tgt = canonicalize_vocab(wordpiece(SRC_TOKENS)), canonicalize_vocab(wordpiece(TGT_TOKENS))
    pairs = dictionary_token_pairs(src, tgt, DICTIONARY)
    # "home" and "hound" are not source tokens; "house mouse" is not a single token; "katze": first wins
    assert list(zip(pairs["target_id"], pairs["source_id"], strict=True)) == [(2, 2), (3, 3), (4, 4)]
    frequent = dictionary_token_pairs(src, tgt, DICTIONARY, choose="frequent",
                                      source_counts=np.array([0, 0, 1, 1, 1, 0, 0, 9]))
    assert frequent.set_index("target_id").loc[4, "source_id"] == 7  # "the" is more frequent than "cat"
    assert dictionary_token_pairs(src, tgt, DICTIONARY, lowercase=False).empty  # "haus" != "Haus"


def test_dict_match_known_answer(dict_inputs):
    res = init_dict_match(dict_inputs, seed=0)
    source = dict_inputs.source_matrix
    for ti, si in [(0, 1), (1, 0), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6)]:
        torch.testing.assert_close(res.matrix[ti], source[si])
    assert res.provenance.tolist() == ["special", "special", "mapped", "mapped", "mapped", "copied", "copied",
                                       "random"]
    no_copy = init_dict_match(dict_inputs, seed=0, copy_overlap=False)
    assert no_copy.provenance.tolist()[5:] == ["random", "random", "random"]
    assert not torch.equal(no_copy.matrix[5], source[5])


# ---------------------------------------------------------------------------------------- Align Match

def synthetic_alignment(n: int = 40, d: int = 8, seed: int = 0):
    """Target vectors = source vectors of a permuted vocabulary, rotated; source rows one-hot."""
    g = torch.Generator().manual_seed(seed)
    xs = torch.randn(n, d, generator=g)
    pi = torch.randperm(n, generator=g)  # target token i is source token pi[i]
    xt = xs[pi] @ rotation(d, seed + 1).float()
    return xs, xt, pi, torch.eye(n)


@pytest.mark.parametrize("refine_iters", [0, 2])
def test_align_match_finds_rotated_neighbour(refine_iters):
    xs, xt, pi, source = synthetic_alignment()
    has = torch.ones(40, dtype=torch.bool)
    anchors = torch.arange(20)
    out, kind, n_src, _ = align_match_init(source, xt, has, xs, has, anchors, pi[anchors], seed=0,
                                           weighting="softmax", topk=1, refine_iters=refine_iters)
    torch.testing.assert_close(out, source[pi])  # top-1: exactly the right source row
    assert kind.tolist() == [1] * 40 and n_src.tolist() == [1] * 40
    # sparsemax (default): a convex combination whose largest weight is on the right source token
    out, *_ = align_match_init(source, xt, has, xs, has, anchors, pi[anchors], seed=0,
                               refine_iters=refine_iters)
    torch.testing.assert_close(out.sum(1), torch.ones(40))
    assert (out >= 0).all() and torch.equal(out.argmax(1), pi)


def test_align_match_adapter_specials_and_missing_vectors():
    xs, xt, pi, _ = synthetic_alignment()
    source = torch.arange(80, dtype=torch.float32).view(40, 2)
    t_has = torch.ones(40, dtype=torch.bool)
    t_has[39] = False  # no fastText vector: random
    ov = overlap_frame([(0, int(pi[0]), "special")] + [(i, int(pi[i]), "exact") for i in range(1, 21)])
    counts = torch.ones(40, dtype=torch.long)
    inputs = TransferInputs(source, 40, ov, aux=TokenVectors(xt, t_has, counts),
                            source_aux=TokenVectors(xs, torch.ones(40, dtype=torch.bool), counts))
    # without centring, the vector sets with a special / a token left out are still exact rotations
    res = init_align_match(inputs, seed=0, weighting="softmax", topk=1, center=False)
    torch.testing.assert_close(res.matrix[0], source[pi[0]])
    torch.testing.assert_close(res.matrix[1:39], source[pi[1:39]])
    assert res.provenance[0] == "special" and res.provenance[39] == "random"
    assert set(res.provenance[1:39]) == {"combined"}
    copied = init_align_match(inputs, seed=0, copy_overlap=True, center=False)
    assert set(copied.provenance[1:21]) == {"copied"} and set(copied.provenance[21:39]) == {"combined"}
    torch.testing.assert_close(copied.matrix[1:21], source[pi[1:21]])


# ------------------------------------------------------------------------------ Permute and Keep-x%

def recovery_inputs(n: int = 251, **kw) -> TransferInputs:
    """Identical tokenizers: token 0 special, tokens 1..n-1 exact matches of themselves."""
    ov = overlap_frame([(0, 0, "special")] + [(i, i, "exact") for i in range(1, n)])
    return TransferInputs(torch.arange(n, dtype=torch.float32)[:, None].repeat(1, 3), n, ov, **kw)


def test_permute_is_a_permutation_of_copied_rows():
    inputs = recovery_inputs()
    res = init_permute(inputs, seed=0)
    rows = res.matrix[:, 0]
    assert rows[0] == 0 and res.provenance[0] == "special"
    assert sorted(rows[1:].tolist()) == list(range(1, 251))  # same multiset
    assert (rows[1:] != torch.arange(1, 251)).float().mean() > 0.9
    assert (res.matrix == rows[:, None]).all()  # whole rows move together
    assert set(res.provenance[1:]) == {"mapped"}


def test_window_permutation_stays_in_window():
    res = init_permute(recovery_inputs(), seed=0, window=100)
    rows, ids = res.matrix[1:, 0].long(), torch.arange(1, 251)
    assert torch.equal(rows // 100, ids // 100)  # windows: ids 1-99 (0 is special), 100-199, 200-250
    assert sorted(rows.tolist()) == list(range(1, 251)) and not torch.equal(rows, ids)
    # frequency order: reversed counts -> windows counted from the highest id down
    counts = torch.arange(251)
    aux = TokenVectors(torch.zeros(251, 2), torch.zeros(251, dtype=torch.bool), counts)
    res = init_permute(recovery_inputs(aux=aux), seed=0, window=100, order="frequency")
    rows = res.matrix[1:, 0].long()
    rank = 250 - torch.arange(1, 251)  # frequency rank of target id 1..250
    assert torch.equal((250 - rows) // 100, rank // 100)


def test_permute_init_groups_and_window_groups():
    source = torch.arange(10, dtype=torch.float32)[:, None]
    t = torch.arange(10)
    groups = window_groups(t % 2, 5)  # even ids rank first -> window 0, odd ids -> window 1
    assert torch.equal(groups, t % 2)
    out, src_row = permute_init(source, 10, t, t, seed=3, groups=groups)
    assert torch.equal(src_row % 2, t % 2) and sorted(src_row.tolist()) == t.tolist()
    torch.testing.assert_close(out, source[src_row])


def test_keep_exact_fraction():
    inputs = recovery_inputs(n=201)
    for percent, expected in [(50, 100), (25, 50), (75, 150), (0, 0), (100, 200)]:
        res = init_keep(inputs, seed=0, percent=percent)
        kept = res.provenance == "copied"
        assert kept.sum() == expected and res.provenance[0] == "special"
        torch.testing.assert_close(res.matrix[kept], inputs.source_matrix[kept])
        assert set(res.provenance[1:][~kept[1:]]) <= {"random"}
    _, src_row = keep_init(torch.zeros(8, 2), 8, torch.arange(7), torch.arange(7), seed=0, percent=50)
    assert (src_row >= 0).sum() == 4  # round(3.5) half up


# ------------------------------------------------------------------------------------------ seeds

def all_inputs(dict_inputs) -> TransferInputs:
    g = torch.Generator().manual_seed(0)
    xs, xt, pi, _ = synthetic_alignment(8, 4)
    counts_t, counts_s = torch.randint(0, 50, (8,), generator=g), torch.randint(0, 50, (8,), generator=g)
    has = torch.ones(8, dtype=torch.bool)
    has[7] = False
    ov = dict_inputs.overlap
    return TransferInputs(torch.randn(8, 5, generator=g), 8, ov, aux=TokenVectors(xt, has, counts_t),
                          source_aux=TokenVectors(xs, torch.ones(8, dtype=torch.bool), counts_s),
                          dictionary=DICTIONARY, source_tokenizer=dict_inputs.source_tokenizer,
                          target_tokenizer=dict_inputs.target_tokenizer)


@pytest.mark.parametrize("fn,params", [
    (init_reinit_embed, {}), (init_freq_match, {}), (init_dict_match, {}),
    (init_align_match, {"dictionary_anchors": True}), (init_permute, {}), (init_permute, {"window": 2}),
    (init_keep, {"percent": 50}),
])
def test_same_seed_bit_identical_different_seed_differs(dict_inputs, fn, params):
    inputs = all_inputs(dict_inputs)
    a = fn(inputs, seed=7, **params)
    torch.randn(100)  # disturb the global RNG
    b = fn(inputs, seed=7, **params)
    c = fn(inputs, seed=8, **params)
    assert a.matrix.shape == (8, 5) and len(a.provenance) == 8
    assert torch.equal(a.matrix, b.matrix) and (a.provenance == b.provenance).all()
    if (a.provenance == "random").any() or fn is init_permute:
        assert not torch.equal(a.matrix, c.matrix)
    else:  # nothing random (Freq Match with |V_t| = |V_s|): the seed does not matter
        assert torch.equal(a.matrix, c.matrix)


def test_correlation_matrix_and_top_fraction():
    from vocab_transfer.eval.correlation import correlation_matrix, top_fraction_rows

    g = torch.Generator().manual_seed(0)
    W = torch.randn(50, 16, generator=g)
    m = correlation_matrix({"a": W, "b": 2 * W + 1, "c": -W})
    assert m.loc["a", "b"] == pytest.approx(1.0) and m.loc["a", "c"] == pytest.approx(-1.0)
    assert (m.to_numpy() == m.to_numpy().T).all() and list(m.index) == ["a", "b", "c"]
    assert top_fraction_rows(np.array([5, 9, 0, 9, 1, 7]), 0.5).tolist() == [1, 3, 5]  # ties: lower id first
    W2 = W.clone()
    W2[25:] = torch.randn(25, 16, generator=g)
    assert correlation_matrix({"a": W, "b": W2}, rows=np.arange(25)).loc["a", "b"] == pytest.approx(1.0)

"""CLP-Transfer, OMP over anchor tokens, mean-resized extension rows, and which tokens an extension adds."""

import math

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from test_config_model import BASE, REPO

from vocab_transfer.data.token_fasttext import TokenVectors
from vocab_transfer.methods import TransferInputs, run_method
from vocab_transfer.methods.clp import clp_weights
from vocab_transfer.methods.extension import (
    PAPER_TOP_TOKENS,
    mean_resize_rows,
    new_token_ids,
    select_new_tokens,
)
from vocab_transfer.methods.omp import batch_omp


def overlap_frame(target_ids, source_ids, special=()):
    return pd.DataFrame({"target_id": target_ids, "source_id": source_ids,
                         "match": ["special" if t in special else "exact" for t in target_ids],
                         "symbolic": [False] * len(target_ids)})


def aux_of(vectors, has=None, counts=None):
    vectors = torch.as_tensor(vectors, dtype=torch.float32)
    n = len(vectors)
    has = torch.ones(n, dtype=torch.bool) if has is None else torch.as_tensor(has)
    counts = torch.ones(n, dtype=torch.long) if counts is None else torch.as_tensor(counts)
    return TokenVectors(vectors, has, counts)


# --- CLP ----------------------------------------------------------------------------------------------------


def test_clp_known_answer():
    # targets 0, 1 copy source rows 2, 3 (the anchors, helper vectors e1 and e2); target 2's helper vector
    # (2, 1) has cosines 2/√5 and 1/√5 to them: CLP weights 2/3, 1/3. Target 3 (0, 1) equals anchor 1:
    # weights 0, 1. Target 4 (-1, -1): cosine sum < 0, drawn from N(mean, std). Target 5: no helper vector,
    # random too.
    source = torch.arange(12, dtype=torch.float32).view(4, 3)
    aux = aux_of([[1, 0], [0, 1], [2, 1], [0, 1], [-1, -1], [0, 0]], has=[True] * 5 + [False])
    res = run_method("clp", TransferInputs(source, 6, overlap_frame([0, 1], [2, 3]), aux=aux), seed=0)
    torch.testing.assert_close(res.matrix[:2], source[2:4])
    torch.testing.assert_close(res.matrix[2], 2 / 3 * source[2] + 1 / 3 * source[3])
    torch.testing.assert_close(res.matrix[3], source[3])
    assert res.provenance.tolist() == ["copied", "copied", "combined", "combined", "random", "random"]
    assert res.n_sources.tolist() == [1, 1, 2, 2, 0, 0]


def test_clp_weights_are_signed_cosines_over_their_sum():
    g = torch.Generator().manual_seed(0)
    x, anchors = torch.randn(5, 4, generator=g), torch.randn(7, 4, generator=g)
    w, ok = clp_weights(x, anchors)
    cos = torch.nn.functional.cosine_similarity(x.double().unsqueeze(1), anchors.double().unsqueeze(0), dim=2)
    assert ok.tolist() == (cos.sum(1) > 0).tolist() and 0 < ok.sum() < 5
    # negative cosines keep their sign, as in CLP's reference code
    assert (cos[ok] < 0).any() and (w[ok] < 0).any()
    torch.testing.assert_close(w[ok], cos[ok] / cos[ok].sum(1, keepdim=True))
    torch.testing.assert_close(w[ok].sum(1), torch.ones(int(ok.sum()), dtype=torch.float64))
    assert (w[~ok] == 0).all()


def test_clp_bit_identical_for_same_seed():
    g = torch.Generator().manual_seed(1)
    source, vectors = torch.randn(30, 5, generator=g), torch.randn(40, 6, generator=g)
    has = torch.rand(40, generator=g) > 0.3
    inputs = TransferInputs(source, 40, overlap_frame(list(range(10)), list(range(10, 20))),
                            aux=aux_of(vectors, has))
    a = run_method("clp", inputs, seed=3, batch_size=7).matrix
    torch.randn(100)  # disturb the global RNG
    b = run_method("clp", inputs, seed=3).matrix
    c = run_method("clp", inputs, seed=4).matrix
    assert torch.equal(a, b) and not torch.equal(a, c)



def test_clp_identical_overlap_leaves_out_fuzzy_anchors():
    """``overlap: identical`` keeps the pairs with the identical token string (langsfer's overlap): the fuzzy
    pair "▁-" -> "-" is neither copied nor an anchor. The helper vectors are all parallel: with it, target 2
    is the mean of both anchors' rows; without it, targets 1 and 2 are anchor 0's row."""
    source = torch.arange(12, dtype=torch.float32).view(4, 3)
    overlap = pd.DataFrame({"target_id": [0, 1], "source_id": [2, 3], "target_token": ["▁a", "▁-"],
                            "source_token": ["▁a", "-"], "match": ["exact", "fuzzy"],
                            "symbolic": [False, True]})
    aux = aux_of([[1, 0], [1, 0], [2, 0]])
    full = run_method("clp", TransferInputs(source, 3, overlap, aux=aux), seed=0)
    ident = run_method("clp", TransferInputs(source, 3, overlap, aux=aux), seed=0, overlap="identical")
    torch.testing.assert_close(full.matrix[2], (source[2] + source[3]) / 2)
    assert full.provenance.tolist() == ["copied", "copied", "combined"]
    torch.testing.assert_close(ident.matrix[1:], source[2].expand(2, 3))
    assert (ident.provenance.tolist() == ["copied", "combined", "combined"]
            and ident.n_sources.tolist() == [1, 1, 1])


# --- OMP ----------------------------------------------------------------------------------------------------


def test_omp_recovers_an_exact_sparse_combination():
    g = torch.Generator().manual_seed(0)
    n_anchor, dim = 40, 16
    h_anchor = torch.randn(n_anchor, dim, generator=g)
    source = torch.randn(n_anchor, 6, generator=g)
    coef = {3: 1.5, 7: -2.0, 11: 0.5}
    h_new = sum(c * h_anchor[i] for i, c in coef.items())
    vectors = torch.cat([h_anchor, h_new.unsqueeze(0), torch.zeros(1, dim)])
    has = torch.tensor([True] * (n_anchor + 1) + [False])
    inputs = TransferInputs(source, n_anchor + 2, overlap_frame(list(range(n_anchor)), list(range(n_anchor))),
                            aux=aux_of(vectors, has))
    res = run_method("omp", inputs, seed=0, k=8)
    expected = sum(c * source[i] for i, c in coef.items())
    torch.testing.assert_close(res.matrix[n_anchor], expected, atol=1e-5, rtol=1e-5)
    assert res.provenance[n_anchor] == "combined" and res.provenance[-1] == "random"
    assert res.n_sources[n_anchor] <= 8


def test_batch_omp_picks_the_atoms_and_least_squares_coefficients():
    g = torch.Generator().manual_seed(2)
    atoms = torch.randn(50, 20, generator=g, dtype=torch.float64)
    y = torch.randn(6, 20, generator=g, dtype=torch.float64)
    idx, coef = batch_omp(y, atoms, 5)
    for b in range(6):
        # the coefficients are the least-squares fit on the picked atoms (OMP's orthogonal projection)
        lstsq = torch.linalg.lstsq(atoms[idx[b]].T, y[b]).solution
        torch.testing.assert_close(coef[b], lstsq)
        # the first atom has the largest |<y, atom>| (tokensurgeon: raw, not normalized atoms)
        assert idx[b, 0] == (atoms @ y[b]).abs().argmax()
        assert len(set(idx[b].tolist())) == 5
    # more atoms than dimensions: an exact fit, with no coefficient blown up by a dependent atom
    idx, coef = batch_omp(y, atoms, 30)
    fit = torch.bmm(coef.unsqueeze(1), atoms[idx]).squeeze(1)
    torch.testing.assert_close(fit, y)
    assert ((coef != 0).sum(1) <= 20).all() and coef.abs().max() < 1e3


def test_omp_batches_do_not_change_rows():
    g = torch.Generator().manual_seed(3)
    source, vectors = torch.randn(30, 5, generator=g), torch.randn(60, 8, generator=g)
    inputs = TransferInputs(source, 60, overlap_frame(list(range(20)), list(range(20))), aux=aux_of(vectors))
    a = run_method("omp", inputs, seed=0, k=6, batch_size=1).matrix
    b = run_method("omp", inputs, seed=0, k=6, batch_size=64).matrix
    torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-6)


def test_omp_exact_overlap_and_float32_fit():
    """``overlap: exact`` (tokensurgeon's anchor rule) neither copies a fuzzily matched token nor uses it as
    an anchor; ``fit_dtype: embedding`` fits in the vectors' float32: the same rows to float32 rounding
    here."""
    g = torch.Generator().manual_seed(4)
    source, vectors = torch.randn(30, 5, generator=g, dtype=torch.float64), torch.randn(60, 12, generator=g)
    ov = overlap_frame(list(range(20)), list(range(20)))
    ov.loc[19, "match"] = "fuzzy"
    inputs = TransferInputs(source, 60, ov, aux=aux_of(vectors))
    full = run_method("omp", inputs, seed=0, k=6)
    exact = run_method("omp", inputs, seed=0, k=6, overlap="exact")
    assert full.provenance[19] == "copied" and exact.provenance[19] == "combined"
    assert torch.equal(full.matrix[:19], exact.matrix[:19])
    assert not torch.equal(full.matrix[20:], exact.matrix[20:])  # rows that had the fuzzy token as an atom
    f32 = run_method("omp", inputs, seed=0, k=6, fit_dtype="embedding")
    torch.testing.assert_close(f32.matrix, full.matrix, atol=1e-5, rtol=1e-5)
    assert batch_omp(vectors[20:], vectors[:20], 6, dtype=torch.float32)[1].dtype == torch.float32


def test_omp_new_bias_zero_is_tokensurgeons_auxiliary_remap():
    """``new_bias: zero``: every token that is not copied gets an output bias of 0 (tokensurgeon's
    ``remap_auxiliary_vocabulary``), copied tokens keep theirs, and the embedding columns are those of the
    default; ``combined`` combines the bias as the rows; a source without a bias column is unchanged."""
    g = torch.Generator().manual_seed(5)
    source, vectors = torch.randn(30, 6, generator=g, dtype=torch.float64), torch.randn(60, 12, generator=g)
    aux = aux_of(vectors, has=torch.arange(60) < 55)  # tokens 55-59 without a vector: drawn at random
    inputs = TransferInputs(source, 60, overlap_frame(list(range(20)), list(range(20))), aux=aux,
                            bias_columns=1)
    combined = run_method("omp", inputs, seed=0, k=6)
    zero = run_method("omp", inputs, seed=0, k=6, new_bias="zero")
    assert torch.equal(zero.matrix[:, :-1], combined.matrix[:, :-1])
    assert torch.equal(zero.matrix[:20, -1], source[:20, -1])  # copied: the source's own bias
    assert (zero.matrix[20:, -1] == 0).all() and (combined.matrix[20:55, -1] != 0).all()
    assert set(zero.provenance[20:]) == {"combined", "random"}
    no_bias = TransferInputs(source, 60, overlap_frame(list(range(20)), list(range(20))), aux=aux)
    assert torch.equal(run_method("omp", no_bias, seed=0, k=6, new_bias="zero").matrix, combined.matrix)


# --- mean-resizing ------------------------------------------------------------------------------------------


def correlated_source(n=4000, d=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    mix = torch.tensor([[1.0, 0.5, 0, 0], [0, 2.0, -1.0, 0], [0, 0, 0.5, 0.3], [0.2, 0, 0, 1.0]])
    return torch.randn(n, d, generator=g) @ mix + torch.tensor([5.0, -1.0, 0.0, 2.0])


def test_mean_resize_rows_have_the_source_mean_and_covariance():
    source = correlated_source()
    mean = source.double().mean(0)
    cov = torch.cov(source.double().T, correction=0)
    rows = mean_resize_rows(source, 40000, seed=0, covariance_scale=1.0).double()
    torch.testing.assert_close(rows.mean(0), mean, atol=0.05, rtol=0)
    torch.testing.assert_close(torch.cov(rows.T, correction=0), cov, atol=0.08, rtol=0.03)
    # transformers' default: covariance × 1e-9, i.e. the mean up to ~3e-5 standard deviations
    rows = mean_resize_rows(source, 1000, seed=0).double()
    assert (rows - mean).abs().max() < 1e-3 and (rows - mean).abs().max() > 0
    torch.testing.assert_close(torch.cov(rows.T, correction=0) * 1e9, cov, atol=0.1, rtol=0.2)


def test_mean_resize_rows_agree_with_transformers():
    """The reference: transformers' own mean-resizing of an embedding (it reads nothing of the model but the
    two embedding modules), drawn from torch's global RNG; at its 1e-9 covariance scale both are the mean."""
    from transformers import PreTrainedModel

    reference = getattr(PreTrainedModel, "_init_added_embeddings_weights_with_mean", None)
    if reference is None:
        pytest.skip("transformers without mean_resizing (< 4.46)")
    source = correlated_source()
    old, new = torch.nn.Embedding(4000, 4), torch.nn.Embedding(4050, 4)
    old.weight.data.copy_(source)
    torch.manual_seed(0)
    reference(None, old, new, 4000, 50)
    ours = mean_resize_rows(source, 50, seed=0)
    torch.testing.assert_close(ours, new.weight.data[4000:], atol=1e-3, rtol=0)
    # a draw, too
    assert not torch.equal(new.weight.data[4000:], new.weight.data[4000:].mean(0).expand(50, -1))


def test_mean_resize_rows_seeded_and_bit_identical():
    source = correlated_source()
    a = mean_resize_rows(source, 50, seed=7, covariance_scale=1.0)
    torch.randn(100)  # disturb the global RNG
    b = mean_resize_rows(source, 50, seed=7, covariance_scale=1.0)
    c = mean_resize_rows(source, 50, seed=8, covariance_scale=1.0)
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_mean_resize_falls_back_to_the_mean_without_a_positive_definite_covariance():
    source = correlated_source()
    source[:, 2] = 3.0  # a constant column: singular covariance (transformers then uses the mean)
    rows = mean_resize_rows(source, 5, seed=0, covariance_scale=1.0)
    torch.testing.assert_close(rows, source.double().mean(0).float().expand(5, -1))


def test_extension_with_mean_resized_rows():
    source = correlated_source(200, 4)
    counts = torch.tensor([0, 9, 8, 7, 6, 5, 0, 3])
    aux = aux_of(torch.zeros(8, 2), torch.zeros(8, dtype=torch.bool), counts)
    inputs = TransferInputs(source, 8, overlap_frame([0, 1], [0, 5], special=[0]), aux=aux)
    res = run_method("extend", inputs, seed=1, top_tokens=5, new_rows="mean_resize", covariance_scale=1.0)
    # top 5 by count: 1, 2, 3, 4, 5; token 1 is in the overlap: 4 added
    assert res.matrix.shape == (204, 4) and torch.equal(res.matrix[:200], source)
    torch.testing.assert_close(res.matrix[200:], mean_resize_rows(source, 4, seed=1, covariance_scale=1.0))
    assert res.provenance[0] == "special" and set(res.provenance[200:]) == {"random"}


# --- which tokens an extension adds -------------------------------------------------------------------------


def test_top_tokens_takes_the_top_n_then_drops_the_overlap():
    overlap = overlap_frame([0, 2, 5], [0, 1, 2], special=[0])
    counts = np.array([100, 5, 50, 5, 0, 7, 40, 1])
    # ranking: 0 (100), 2 (50), 6 (40), 5 (7), 1 (5), 3 (5, tie by id), 7 (1); token 4 never seen
    assert new_token_ids(overlap, counts, top_tokens=4).tolist() == [6]  # of 0, 2, 6, 5 only 6 is new
    assert new_token_ids(overlap, counts, top_tokens=6).tolist() == [6, 1, 3]
    assert new_token_ids(overlap, counts, new_tokens=4).tolist() == [6, 1, 3, 7]  # 4 new whatever the overlap
    assert new_token_ids(overlap, counts, top_tokens=100).tolist() == [6, 1, 3, 7]
    assert new_token_ids(overlap, counts, top_tokens=0).tolist() == []
    assert select_new_tokens(overlap, counts, [0], 2, top=True).tolist() == []


def test_extension_default_is_focus_top_30k():
    rng = np.random.default_rng(0)
    counts = rng.integers(1, 1000, size=50000)
    overlap = overlap_frame(list(range(0, 50000, 3)), list(range(0, 50000, 3)))
    top = np.lexsort((np.arange(50000), -counts))[:PAPER_TOP_TOKENS]
    expected = sorted(set(top.tolist()) - set(overlap["target_id"]))
    got = new_token_ids(overlap, counts)
    assert PAPER_TOP_TOKENS == 30000 and sorted(got.tolist()) == expected
    assert len(got) < PAPER_TOP_TOKENS


# --- parameters checked at parse time -----------------------------------------------------------------------


@pytest.mark.parametrize("entry, message", [
    ({"kind": "extend", "top_tokens": 100, "new_tokens": 100},
     "methods.x: give one of ['top_tokens', 'new_tokens']"),
    ({"kind": "extend", "top_tokens": -1}, "methods.x.top_tokens: must be >= 0, got -1"),
    ({"kind": "extend", "new_tokens": 1.5}, "methods.x.new_tokens:"),
    ({"kind": "extend", "new_rows": "mean"},
     "methods.x.new_rows: 'mean' is not one of 'focus', 'random' or 'mean_resize'"),
    ({"kind": "extend", "covariance_scale": -1.0}, "methods.x.covariance_scale: must be >= 0, got -1.0"),
    ({"kind": "omp", "k": 0}, "methods.x.k: must be >= 1, got 0"),
    ({"kind": "omp", "topk": 3}, "methods.x: unknown parameter(s) ['topk']"),
    ({"kind": "omp", "fit_dtype": "float32"}, "methods.x.fit_dtype: 'float32' is not one of 'float64' or "
                                              "'embedding'"),
    ({"kind": "omp", "new_bias": "mean"}, "methods.x.new_bias: 'mean' is not one of 'combined' or 'zero'"),
    ({"kind": "omp", "overlap": "fuzzy"}, "methods.x.overlap: 'fuzzy' is not one of 'full', 'symbolic', "
                                          "'symbolic_with_symbols', 'none', 'exact' or 'identical'"),
    ({"kind": "clp", "batch_size": 0}, "methods.x.batch_size: must be >= 1, got 0"),
    ({"kind": "clp", "overlap": "exact_match"}, "methods.x.overlap: 'exact_match' is not one of 'full', "
                                                 "'symbolic', 'symbolic_with_symbols', 'none', 'exact' or "
                                                 "'identical'"),
    # the choices of every registered method are checked by the one engine, at parse time
    ({"kind": "focus", "screen_dtype": "fp16"}, "methods.x.screen_dtype: 'fp16' is not one of 'float32' or "
                                                "'bfloat16'"),
    ({"kind": "align_match", "weighting": "max"}, "methods.x.weighting: 'max' is not one of 'sparsemax' or "
                                                  "'softmax'"),
    ({"kind": "reinit_embed", "init": "nromal"}, "methods.x.init: 'nromal' is not one of 'normal' or "
                                                 "'source'"),
    ({"kind": "permute", "order": "rank"}, "methods.x.order: 'rank' is not one of 'id' or 'frequency'"),
    ({"kind": "dict_match", "choose": "best"}, "methods.x.choose: 'best' is not one of 'first' or "
                                               "'frequent'"),
])
def test_bad_parameters_fail_at_parse_time(entry, message):
    from vocab_transfer.workflow.config import ConfigError, check_config

    config = yaml.safe_load(yaml.safe_dump(BASE))
    config["methods"]["x"] = entry
    with pytest.raises(ConfigError) as e:
        check_config(config)
    assert message in str(e.value)


def test_configs_use_the_new_rows():
    """The demo and FOCUS configs have the CLP, OMP and mean-resize rows, and extend by FOCUS's top-N
    reading."""
    for path in (REPO / "config.yaml", REPO / "configs" / "focus.yaml"):
        methods = yaml.safe_load(path.read_text())["methods"]
        kinds = {m["kind"] for m in methods.values()}
        assert {"clp", "omp"} <= kinds, path
        extend = [m for m in methods.values() if m["kind"] == "extend"]
        assert any(m.get("new_rows") == "mean_resize" for m in extend), path
        assert all("top_tokens" in m for m in extend if m.get("new_tokens", 1) != 0), path
    focus = yaml.safe_load((REPO / "configs" / "focus.yaml").read_text())
    demo = yaml.safe_load((REPO / "config.yaml").read_text())
    assert (focus["methods"]["extend_focus"]["top_tokens"] == focus["methods"]["extend_random"]["top_tokens"]
            == 30000)
    # the demo keeps the paper's share of the target vocabulary (30k of 50k)
    share = demo["methods"]["extend"]["top_tokens"] / demo["tokenizer"]["vocab_size"]
    assert math.isclose(share, 30000 / focus["tokenizer"]["vocab_size"])

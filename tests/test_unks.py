import numpy as np
import pandas as pd
import pytest
import torch
from safetensors.torch import load_file, save_file

from vocab_transfer.methods.base import TransferInputs
from vocab_transfer.methods.factorized import (
    FactorizedEmbedding,
    fit_neural,
    gumbel_softmax_st,
    straight_through_mix,
)
from vocab_transfer.methods.semi_nmf import kmeans, semi_nmf
from vocab_transfer.methods.unks import el_init, factorize_source, init_el, init_mf


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny tensors: intra-op threads only add synchronization, which on a loaded machine costs seconds."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def randn(*shape, seed=0, dtype=torch.float32):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


# --- Semi-NMF ---------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["gram", "direct"])
def test_semi_nmf_error_never_increases_and_sign_constraint(mode):
    X = randn(200, 16, dtype=torch.float64)
    F, G, hist = semi_nmf(X, 4, seed=0, max_iter=300, tol=0.0, mode=mode)
    err = torch.tensor(hist.error)
    assert hist.iterations == 300 and len(hist.seconds) == 300
    assert (err.diff() <= 1e-12).all()
    assert (G >= 0).all() and (F < 0).any() and (F > 0).any()  # G non-negative, F of free sign
    direct = float(torch.linalg.norm(X - F @ G) / torch.linalg.norm(X))
    assert direct == pytest.approx(hist.final_error, rel=1e-9) and hist.final_error <= hist.error[-1] + 1e-12
    # no rank-4 factorization beats the truncated SVD
    s = torch.linalg.svdvals(X)
    assert hist.final_error >= float(s[4:].norm() / s.norm()) - 1e-12


def test_semi_nmf_modes_agree():
    X = randn(100, 12, seed=1, dtype=torch.float64)
    a, b = (semi_nmf(X, 3, seed=2, max_iter=50, tol=0.0, mode=m) for m in ("gram", "direct"))
    torch.testing.assert_close(torch.tensor(a[2].error), torch.tensor(b[2].error), rtol=1e-9, atol=0)
    torch.testing.assert_close(a[1], b[1], rtol=1e-7, atol=1e-9)


def test_semi_nmf_recovers_exact_factorization():
    F0 = randn(60, 4, seed=3, dtype=torch.float64)
    G0 = torch.rand(4, 12, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    X = F0 @ G0
    F, G, hist = semi_nmf(X, 4, seed=0, max_iter=2000, tol=1e-9)
    assert float(torch.linalg.norm(X - F @ G) / torch.linalg.norm(X)) < 1e-6
    assert hist.error[0] > 0.1  # it did have to work for it


def test_semi_nmf_stops_on_convergence_and_is_deterministic():
    X = randn(300, 20, seed=5)
    F, G, hist = semi_nmf(X, 5, seed=7, max_iter=3000, tol=1e-3)
    assert hist.converged and hist.iterations < 3000
    assert F.dtype == G.dtype == torch.float32 and F.shape == (300, 5) and G.shape == (5, 20)
    torch.randn(10)  # disturb the global RNG
    F2, G2, _ = semi_nmf(X, 5, seed=7, max_iter=3000, tol=1e-3)
    _, G3, _ = semi_nmf(X, 5, seed=8, max_iter=3000, tol=1e-3)
    assert torch.equal(F, F2) and torch.equal(G, G2) and not torch.equal(G, G3)


# --- k-means ------------------------------------------------------------------------------------

def test_kmeans_separated_blobs():
    centers = torch.tensor([[10.0, 0, 0], [0, 10.0, 0], [0, 0, 10.0]])
    truth = torch.arange(90) % 3
    X = centers[truth] + 0.1 * randn(90, 3, seed=1)
    labels, found, inertia = kmeans(X, 3, seed=0)
    # same partition up to relabeling
    mapping = {int(t): int(lab) for t, lab in zip(truth, labels, strict=True)}
    assert len(set(mapping.values())) == 3
    assert torch.equal(labels, torch.tensor([mapping[int(t)] for t in truth]))
    torch.testing.assert_close(found[labels], centers[truth], atol=0.1, rtol=0)
    assert inertia < 90 * 3 * 0.1
    torch.randn(3)
    assert torch.equal(kmeans(X, 3, seed=0)[0], labels)


# --- factorized embedding -----------------------------------------------------------------------

def test_gumbel_straight_through():
    logits = randn(50, 4).requires_grad_()
    w = gumbel_softmax_st(logits, 0.5, generator=torch.Generator().manual_seed(0))
    assert ((w == 0) | (w == 1)).all() and torch.equal(w.sum(1), torch.ones(50))
    (w * randn(50, 4, seed=1)).sum().backward()
    assert logits.grad.abs().sum() > 0


def tiny_module(C=3, seed=0):
    return FactorizedEmbedding(randn(20, 4, seed=seed), torch.rand(C, 4, 6), randn(20, C, seed=seed + 1),
                               tau=0.7)


def test_factorized_forward_flatten_and_roundtrip(tmp_path):
    m = tiny_module()
    flat = m.flatten()
    c = m.assignment()
    torch.testing.assert_close(flat, torch.stack([m.F[v] @ m.G[c[v]] for v in range(20)]).detach())
    m.eval()
    ids = torch.tensor([[3, 1, 4], [1, 5, 9]])
    torch.testing.assert_close(m(ids), flat[ids])
    m.train()  # a training forward is F[v] @ G[sampled cluster]
    out = m(ids)
    assert any(torch.allclose(out[0, 0], m.F[3] @ m.G[k]) for k in range(3))

    save_file(m.state(), tmp_path / "f.safetensors")
    tensors = load_file(tmp_path / "f.safetensors")
    assert set(tensors) == {"mf_F", "mf_G", "mf_Z", "mf_tau"}
    back = FactorizedEmbedding.from_tensors(tensors)
    assert float(back.tau) == pytest.approx(0.7) and back.clusters == 3
    assert torch.equal(back.flatten(), flat)
    one = FactorizedEmbedding(randn(5, 2), torch.rand(2, 3))
    assert "mf_Z" not in one.state() and torch.equal(FactorizedEmbedding.from_tensors(one.state()).flatten(),
                                                     one.flatten())


@pytest.mark.parametrize("C", [1, 3])
def test_factorized_is_trainable(C):
    m = tiny_module(C)
    F0, G0 = m.F.detach().clone(), m.G.detach().clone()
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    m.train()
    m(torch.arange(20)).pow(2).sum().backward()
    if C > 1:
        assert m.Z.grad.abs().sum() > 0
    opt.step()
    assert not torch.equal(m.F, F0) and not torch.equal(m.G, G0)


@pytest.mark.parametrize("shape", [(40,), (3, 7)])
def test_straight_through_mix_equals_the_dense_form(shape):
    """Per-cluster computation: the dense form's values and gradients (F, G and the logits), same noise."""
    C, rank, dim = 4, 5, 6
    logits, low = randn(*shape, C, seed=3).requires_grad_(), randn(*shape, rank, seed=4).requires_grad_()
    G, g = randn(C, rank, dim, seed=5).requires_grad_(), randn(*shape, dim, seed=6)
    out = straight_through_mix(logits, low, G, 0.7, generator=torch.Generator().manual_seed(1))
    (out * g).sum().backward()
    fast = [out.detach()] + [t.grad.clone() for t in (logits, low, G)]
    for t in (logits, low, G):
        t.grad = None
    w = gumbel_softmax_st(logits, 0.7, generator=torch.Generator().manual_seed(1))
    dense = (w[..., :, None] * low[..., None, :]).flatten(-2) @ G.reshape(-1, dim)
    (dense * g).sum().backward()
    for a, b in zip(fast, [dense.detach()] + [t.grad for t in (logits, low, G)], strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_fit_neural_reduces_error_and_is_deterministic():
    X = randn(120, 8, seed=2)
    F0, G0, _ = semi_nmf(X, 3, seed=0, max_iter=200)
    m, hist = fit_neural(X, F0, G0, 3, seed=0, max_steps=100, lr=1e-2, check_every=20)
    assert hist.error[-1] < hist.error[0] and not m.training
    torch.testing.assert_close(hist.error[-1],
                               float(torch.linalg.norm(X - m.flatten()) / torch.linalg.norm(X)))
    torch.randn(5)
    m2, _ = fit_neural(X, F0, G0, 3, seed=0, max_steps=100, lr=1e-2, check_every=20)
    m3, _ = fit_neural(X, F0, G0, 3, seed=1, max_steps=100, lr=1e-2, check_every=20)
    assert torch.equal(m.flatten(), m2.flatten()) and not torch.equal(m.flatten(), m3.flatten())


# --- config adapters ----------------------------------------------------------------------------

def tiny_inputs():
    ov = pd.DataFrame([(0, 0, "special"), (1, 5, "exact"), (2, 6, "fuzzy"), (4, 9, "exact")],
                      columns=["target_id", "source_id", "match"])
    ov["symbolic"] = [True, False, True, False]
    return TransferInputs(randn(30, 7, seed=9), 12, ov)


@pytest.mark.parametrize("lexical,fuzzy,copied", [(False, False, {0}), (True, False, {0, 1, 4}),
                                                  (True, True, {0, 1, 2, 4})])
def test_el_copies_exactly_the_overlap(lexical, fuzzy, copied):
    inputs = tiny_inputs()
    res = init_el(inputs, seed=0, lexical=lexical, fuzzy=fuzzy)
    src = dict(zip(inputs.overlap["target_id"], inputs.overlap["source_id"], strict=True))
    for t in range(12):
        equal_any = any(torch.equal(res.matrix[t], row) for row in inputs.source_matrix)
        assert equal_any == (t in copied)
        if t in copied:
            assert torch.equal(res.matrix[t], inputs.source_matrix[src[t]])
    assert res.provenance[0] == "special"
    assert {t for t in range(12) if res.provenance[t] == "copied"} == copied - {0}
    assert set(np.flatnonzero(res.n_sources == 1)) == copied and res.extra == {}


def test_el_random_distributions_and_shared_rows():
    inputs = tiny_inputs()
    rand = init_el(inputs, seed=3, random="std0.02")
    lex = init_el(inputs, seed=3, lexical=True, random="std0.02")
    assert torch.equal(rand.matrix[5:], lex.matrix[5:])  # same random rows for non-overlapping tokens
    assert float(rand.matrix[5:].abs().max()) < 0.02 * 6
    with pytest.raises(ValueError, match="unknown random init"):
        init_el(inputs, seed=0, random="uniform")


def test_random_rows_default_is_a_new_embeddings_initializer():
    """The paper's "randomly initialized" rows: N(0, 0.02²), mBERT's initializer_range (``random:
    std0.02``)."""
    g = torch.Generator().manual_seed(0)
    source = 3.0 + torch.randn(50, 8, generator=g)
    rows = el_init(source, 20000, torch.tensor([0]), torch.tensor([0]), seed=0)[1:]
    assert abs(float(rows.mean())) < 1e-3 and abs(float(rows.std()) - 0.02) < 1e-3
    like = el_init(source, 20000, torch.tensor([0]), torch.tensor([0]), seed=0, random="normal_like")[1:]
    assert abs(float(like.mean()) - 3.0) < 0.1  # the option: the source's per-column mean and std


MF_VARIANTS = [dict(clusters=1), dict(clusters=3, assignment="kmeans"),
               dict(clusters=3, assignment="neural", neural_steps=60, neural_lr=1e-2)]


@pytest.mark.parametrize("params", MF_VARIANTS)
def test_mf_matrix_is_flattened_factors_and_seeded(params):
    inputs = tiny_inputs()
    res = init_mf(inputs, seed=0, dim=3, max_iter=200, lexical=True, **params)
    assert res.matrix.shape == (12, 7)
    keys = {"mf_F", "mf_G", "mf_tau"} | ({"mf_Z"} if params["clusters"] > 1 else set())
    assert set(res.extra) == keys and res.extra["mf_G"].shape == (params["clusters"], 3, 7)
    assert torch.equal(FactorizedEmbedding.from_tensors(res.extra).flatten(), res.matrix)
    assert list(res.provenance[:5]) == ["special", "copied", "random", "random", "copied"]
    assert res.n_sources.tolist() == [1, 1, 0, 0, 1] + [0] * 7
    torch.randn(7)  # disturb the global RNG
    again = init_mf(inputs, seed=0, dim=3, max_iter=200, lexical=True, **params)
    other = init_mf(inputs, seed=1, dim=3, max_iter=200, lexical=True, **params)
    assert torch.equal(res.matrix, again.matrix) and not torch.equal(res.matrix, other.matrix)
    for k in keys:
        assert torch.equal(res.extra[k], again.extra[k])


def test_mf1_lex_copied_rows_are_source_factor_rows():
    inputs = tiny_inputs()
    F_src, G, Z = factorize_source(inputs.source_matrix, seed=0, dim=3, max_iter=200)
    assert Z is None and (G >= 0).all()
    lex = init_mf(inputs, seed=0, dim=3, max_iter=200, lexical=True)
    rand = init_mf(inputs, seed=0, dim=3, max_iter=200, lexical=False)
    for t, s in [(0, 0), (1, 5), (4, 9)]:
        assert torch.equal(lex.extra["mf_F"][t], F_src[s])
        torch.testing.assert_close(lex.matrix[t], F_src[s] @ G[0])
    assert torch.equal(rand.extra["mf_F"][0], F_src[0])  # specials also for RAND
    assert not torch.equal(rand.extra["mf_F"][1], F_src[5])
    assert torch.equal(rand.extra["mf_F"][5:], lex.extra["mf_F"][5:])  # shared random rows
    torch.testing.assert_close(lex.extra["mf_G"], G)


def test_mf_kmeans_lex_keeps_source_cluster():
    inputs = tiny_inputs()
    F_src, G, Z_src = factorize_source(inputs.source_matrix, seed=0, clusters=3, dim=3, max_iter=200)
    res = init_mf(inputs, seed=0, clusters=3, dim=3, max_iter=200, lexical=True)
    module = FactorizedEmbedding.from_tensors(res.extra)
    assignment = module.assignment()
    for t, s in [(0, 0), (1, 5), (4, 9)]:
        c = int(Z_src[s].argmax())
        assert assignment[t] == c
        torch.testing.assert_close(res.matrix[t], F_src[s] @ G[c])


@pytest.mark.parametrize("params", [dict(clusters=1, dim=4), dict(clusters=3, dim=4, assignment="kmeans"),
                                    dict(clusters=3, dim=4, assignment="neural", neural_steps=30)])
def test_mf_with_precomputed_factors_is_bit_identical(params):
    from vocab_transfer.methods import method_params
    from vocab_transfer.methods.unks import factorization_spec, factorize

    inputs = tiny_inputs()
    direct = init_mf(inputs, seed=3, lexical=True, **params)
    spec = factorization_spec(method_params("mf", params))
    inputs.source_factors = factorize(inputs.source_matrix, seed=3, **spec)
    cached = init_mf(inputs, seed=3, lexical=True, **params)
    assert torch.equal(direct.matrix, cached.matrix)
    assert all(torch.equal(direct.extra[k], cached.extra[k]) for k in direct.extra)

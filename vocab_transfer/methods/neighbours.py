"""Mixtures of nearest source rows, the kernel FOCUS (sparsemax over all anchors, focus.md eqs. 2-6),
WECHSEL (softmax(sim/τ) over the top k, wechsel.md eq. 3) and Align Match (either; Tran 2020) share:
similarities of unit query vectors to unit key vectors in batches, weights over the nearest keys, and
the weighted sum of the keys' embedding rows.

With ``screen=torch.bfloat16`` the similarity matrix is computed once in bf16 (3x float32's matmul
throughput on AVX512-BF16 CPUs and on GPUs) to shortlist candidates whose cosines are then recomputed in
float32: a shortlist of ``screen_k`` keys (sparsemax) or ``4k`` (softmax) per row.

The shortlist is *certified*: every key left out has a bf16 score ≤ the last shortlisted one's, so a true
cosine ≤ that + δ (δ = 3.2·2⁻⁸ bounds the bf16 rounding of unit vectors and of the result). A row is
accepted if that bound is ≤ the k-th exact cosine (softmax) or ≤ the sparsemax threshold τ on the
shortlist (keys below τ get weight 0, so adding them changes nothing). The rows that fail are retried on a
shortlist ``SHORTLIST_GROWTH`` times wider, read off the same bf16 scores, until the shortlist is every key,
where the row is computed in float32 outright. So the selection equals float32's (up to exact ties); the
cosines differ only by float32 rounding (summed in another order).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import torch

from ..sparsemax import sparsemax, topk_sparsemax

WEIGHTINGS = ("sparsemax", "softmax")
BF16_DOT_ERROR = 3.2 * 2.0**-8  # |bf16 dot − exact| for unit vectors: inputs and result rounded (u = 2⁻⁸ each)
SHORTLIST_GROWTH = 8  # a row whose shortlist is not certified is retried on one this many times wider

# (exact cosines of a row's shortlisted keys [n, K]) -> (weights [n, K'], columns of z [n, K'], threshold [n]):
# the row is certified when no key left out can have a cosine above its threshold.
Select = Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor, torch.Tensor]]


def neighbour_weights(queries: torch.Tensor, keys: torch.Tensor, keys_t: torch.Tensor, *, weighting: str, k: int,
                      temperature: float = 0.1, screen: torch.Tensor | None = None, screen_k: int = 16
                      ) -> tuple[torch.Tensor, torch.Tensor]:
    """Weights ``w [n, k']`` over key indices ``idx [n, k']`` for unit ``queries [n, D]`` against unit
    ``keys [m, D]`` (``keys_t`` = its contiguous transpose, ``screen`` = that in bf16 or None).
    ``sparsemax``: exact sparsemax of the cosines over all keys (``k`` sizes the first top-k pass of
    :func:`~vocab_transfer.sparsemax.topk_sparsemax`; weights past a row's support are 0);
    ``softmax``: softmax(cos/temperature) over the ``k`` most similar keys."""
    if weighting not in WEIGHTINGS:
        raise ValueError(f"unknown weighting {weighting!r}; known: {', '.join(WEIGHTINGS)}")
    m = keys_t.shape[1]
    if weighting == "sparsemax":
        if screen is None or screen_k >= m:
            return topk_sparsemax(queries @ keys_t, k)
        return _certified(queries, keys, keys_t, screen, screen_k, _sparsemax_select,
                          lambda z: topk_sparsemax(z, k), trim=True)
    k = min(k, m)

    def exact(z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        sim, idx = z.topk(k, dim=1)
        return torch.softmax(sim / temperature, dim=1), idx

    def select(z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        sim, j = z.topk(k, dim=1)
        return torch.softmax(sim / temperature, dim=1), j, sim[:, -1]

    if screen is None or 4 * k >= m:
        return exact(queries @ keys_t)
    return _certified(queries, keys, keys_t, screen, 4 * k, select, exact, trim=False)


def _sparsemax_select(z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    w = sparsemax(z, dim=1)
    top = w.argmax(1, keepdim=True)
    tau = (z.gather(1, top) - w.gather(1, top)).squeeze(1)  # w_i = z_i − τ on the support
    return w, torch.arange(z.shape[1]).expand_as(z), tau


def _certified(queries: torch.Tensor, keys: torch.Tensor, keys_t: torch.Tensor, screen: torch.Tensor, width: int,
               select: Select, exact: Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]], *, trim: bool
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """The certified bf16 shortlist of the module docstring: ``select`` on ever wider shortlists, ``exact`` on the
    float32 similarities of the rows no shortlist certifies."""
    m = keys.shape[0]
    scores = queries.to(screen.dtype) @ screen  # [n, m], once per batch
    rows = torch.arange(len(queries))
    parts: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []  # (rows, weights, key indices)
    while len(rows):
        if width >= m:
            w, idx = exact(queries[rows] @ keys_t)
            parts.append((rows, w, idx))
            break
        short = (scores if len(rows) == len(scores) else scores[rows]).topk(width, dim=1)
        z = torch.einsum("nd,nkd->nk", queries[rows], keys[short.indices])
        w, j, threshold = select(z)
        ok = short.values[:, -1].float() + BF16_DOT_ERROR <= threshold
        parts.append((rows[ok], w[ok], short.indices[ok].gather(1, j[ok])))
        rows, width = rows[~ok], width * SHORTLIST_GROWTH
    return _assemble(len(queries), parts, trim)


def _assemble(n: int, parts: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]], trim: bool
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """One ``[n, width]`` pair of (weights, indices) from row subsets with their own widths: each row keeps its
    largest weights, as many columns as the widest support (``trim``: sparsemax) or all of them (softmax)."""
    width = max((int((w > 0).sum(1).max()) if trim else w.shape[1]) if len(w) else 0 for _, w, _ in parts)
    w_out = torch.zeros(n, width, dtype=parts[0][1].dtype)
    i_out = torch.zeros(n, width, dtype=torch.long)
    for rows, w, idx in parts:
        if len(rows) == 0:
            continue
        kk = min(width, w.shape[1])
        top_w, j = w.topk(kk, dim=1)
        w_out[rows, :kk], i_out[rows, :kk] = top_w, idx.gather(1, j)
    return w_out, i_out


def mix_rows(w: torch.Tensor, idx: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """``Σ_k w[n, k] · rows[idx[n, k]]`` over the non-zero weights only: a sparse ``[n, |rows|]`` CSR matrix
    times ``rows`` (sparsemax leaves most weights at zero; gathering the rows would copy ``nnz × d`` floats)."""
    nz = w > 0
    n = torch.arange(w.shape[0]).unsqueeze(1).expand_as(idx)[nz]
    dtype = rows.dtype if rows.dtype in (torch.float32, torch.float64) else torch.float32
    coo = torch.sparse_coo_tensor(torch.stack([n, idx[nz]]), w[nz].to(dtype), (w.shape[0], rows.shape[0]),
                                  check_invariants=False)  # in range by construction
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        return (coo.coalesce().to_sparse_csr() @ rows.to(dtype)).to(rows.dtype)

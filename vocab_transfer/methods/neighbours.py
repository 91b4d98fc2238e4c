"""Mixtures of nearest source rows, the kernel FOCUS (sparsemax over all anchors, focus.md eqs. 2-6),
WECHSEL (softmax(sim/τ) over the top k, wechsel.md eq. 3) and Align Match (either; Tran 2020) share:
similarities of unit query vectors to unit key vectors in batches, weights over the nearest keys, and
the weighted sum of the keys' embedding rows.

With ``screen=torch.bfloat16`` the similarity matrix is computed in bf16 to shortlist candidates whose
cosines are then recomputed in float32:

- softmax: the top ``k`` of a ``4k`` shortlist;
- sparsemax: a shortlist of ``screen_k``.

Both are *certified*: every key left out has a bf16 score ≤ the last shortlisted one's, so a true cosine
≤ that + δ (δ = 3.2·2⁻⁸ bounds the bf16 rounding of unit vectors and of the result). A row is kept if
that bound is ≤ the k-th exact cosine (softmax) or ≤ the sparsemax threshold τ on the shortlist (keys
below τ get weight 0); otherwise it is redone in float32. So the selection equals float32's (up to exact
ties); the cosines differ only by float32 rounding (summed in another order).
"""

from __future__ import annotations

import torch

from ..sparsemax import sparsemax, topk_sparsemax

WEIGHTINGS = ("sparsemax", "softmax")
BF16_DOT_ERROR = 3.2 * 2.0**-8  # |bf16 dot − exact| for unit vectors: inputs and result rounded (u = 2⁻⁸ each)


def neighbour_weights(queries: torch.Tensor, keys: torch.Tensor, keys_t: torch.Tensor, *, weighting: str, k: int,
                      temperature: float = 0.1, screen: torch.Tensor | None = None, screen_k: int = 16
                      ) -> tuple[torch.Tensor, torch.Tensor]:
    """Weights ``w [n, k']`` over key indices ``idx [n, k']`` for unit ``queries [n, D]`` against unit
    ``keys [m, D]`` (``keys_t`` = its contiguous transpose, ``screen`` = that in bf16 or None).
    ``sparsemax``: exact sparsemax of the cosines over all keys (``k`` sizes the first top-k pass,
    :func:`~vocab_transfer.sparsemax.topk_sparsemax`); ``softmax``: softmax(cos/temperature) over the
    ``k`` most similar keys."""
    if weighting not in WEIGHTINGS:
        raise ValueError(f"unknown weighting {weighting!r}; known: {', '.join(WEIGHTINGS)}")
    m = keys_t.shape[1]
    if weighting == "sparsemax":
        if screen is None or screen_k >= m:
            return topk_sparsemax(queries @ keys_t, k)
        return _certified_sparsemax(queries, keys, keys_t, screen, screen_k, k)
    k = min(k, m)
    if screen is None:
        sim, idx = (queries @ keys_t).topk(k, dim=1)
    else:
        short = (queries.to(screen.dtype) @ screen).topk(min(4 * k, m), dim=1)
        sim, j = torch.einsum("nd,nkd->nk", queries, keys[short.indices]).topk(k, dim=1)
        idx = short.indices.gather(1, j)
        if short.indices.shape[1] < m:  # certify: no key left out can beat the k-th exact cosine
            redo = (short.values[:, -1].float() + BF16_DOT_ERROR > sim[:, -1]).nonzero(as_tuple=True)[0]
            if len(redo):
                sim[redo], idx[redo] = (queries[redo] @ keys_t).topk(k, dim=1)
    return torch.softmax(sim / temperature, dim=1), idx


def _certified_sparsemax(queries: torch.Tensor, keys: torch.Tensor, keys_t: torch.Tensor, screen: torch.Tensor,
                         k: int, topk: int) -> tuple[torch.Tensor, torch.Tensor]:
    short = (queries.to(screen.dtype) @ screen).topk(k, dim=1)
    idx = short.indices
    z = torch.einsum("nd,nkd->nk", queries, keys[idx])
    w = sparsemax(z, dim=1)
    top = w.argmax(1, keepdim=True)
    tau = (z.gather(1, top) - w.gather(1, top)).squeeze(1)  # w_i = z_i − τ on the support
    redo = (short.values[:, -1].float() + BF16_DOT_ERROR > tau).nonzero(as_tuple=True)[0]
    if len(redo):
        wide_w, wide_i = topk_sparsemax(queries[redo] @ keys_t, topk)
        width = max(wide_w.shape[1], k)
        w, idx = _pad(w, width), _pad(idx, width)
        w[redo], idx[redo] = _pad(wide_w, width), _pad(wide_i, width)
    return w, idx


def _pad(x: torch.Tensor, width: int) -> torch.Tensor:
    return torch.nn.functional.pad(x, (0, width - x.shape[1])) if x.shape[1] < width else x


def mix_rows(w: torch.Tensor, idx: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """``Σ_k w[n, k] · rows[idx[n, k]]`` over the non-zero weights only (sparsemax leaves most of the
    weights at zero; gathering all of them would copy ``n × k × d`` floats)."""
    nz = w > 0
    n = torch.arange(w.shape[0]).unsqueeze(1).expand_as(idx)[nz]
    out = torch.zeros(w.shape[0], rows.shape[1], dtype=rows.dtype)
    return out.index_add_(0, n, w[nz].to(rows.dtype).unsqueeze(1) * rows[idx[nz]])

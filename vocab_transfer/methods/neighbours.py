"""Mixtures of nearest source rows, the kernel FOCUS (sparsemax over all anchors, FOCUS eqs. 2-6),
WECHSEL (softmax(sim/τ) over the top k, WECHSEL eq. 3) and Align Match (either; Tran 2020) share:
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

import math
import warnings
from collections.abc import Callable
from typing import Literal

from .. import lazy
from .sparsemax import sparsemax, topk_sparsemax

torch = lazy.module("torch")

WEIGHTINGS = ("sparsemax", "softmax")
Weighting = Literal[WEIGHTINGS]  # type: ignore[valid-type]
ScreenDtype = Literal["float32", "bfloat16"]  # a method's ``screen_dtype`` (:func:`screen_dtype_of`)
BF16_DOT_ERROR = 3.2 * 2.0**-8  # |bf16 dot − exact| for unit vectors: inputs, result rounded (u = 2⁻⁸ each)
SHORTLIST_GROWTH = 8  # a row whose shortlist is not certified is retried on one this many times wider
GATHER_KEYS = 1 << 16  # key rows gathered at a time to rescore a shortlist in float32 (78 MB at 300-d)


class Workspace:
    """Buffers reused by every batch of one kernel call. A fresh tensor of many MB costs a page fault per 4
    KiB (glibc maps such blocks anew and unmaps them when freed): at paper scale the bf16 score matrix and the
    gathered shortlist keys spent ~40% of FOCUS's time faulting. A caller keeps one across its batches."""

    def __init__(self) -> None:
        self._buffers: dict[str, torch.Tensor] = {}

    def get(self, name: str, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        n = math.prod(shape)
        buf = self._buffers.get(name)
        if buf is None or buf.dtype != dtype or buf.numel() < n:
            buf = self._buffers[name] = torch.empty(n, dtype=dtype)
        return buf[:n].view(shape)

# (exact cosines of a row's shortlisted keys [n, K]) -> (weights [n, K'], z's columns [n, K'], threshold [n]):
# the row is certified when no key left out can have a cosine above its threshold.
Select = Callable[["torch.Tensor"], tuple["torch.Tensor", "torch.Tensor", "torch.Tensor"]]


def screen_dtype_of(name: str) -> torch.dtype | None:
    """``float32`` (exact, default) -> None; ``bfloat16`` -> the bf16 shortlist. bf16 kernels differ
    between CPUs with and without native bf16 units, so results are bit-identical per machine only."""
    if name not in ("float32", "bfloat16"):
        raise ValueError(f"screen_dtype must be float32 or bfloat16, not {name!r}")
    return None if name == "float32" else torch.bfloat16


def neighbour_weights(queries: torch.Tensor, keys: torch.Tensor, keys_t: torch.Tensor, *, weighting: str,
                      k: int, temperature: float = 0.1,
                      screen: torch.Tensor | None = None, screen_k: int = 16,
                      workspace: Workspace | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Weights ``w [n, k']`` over key indices ``idx [n, k']`` for unit ``queries [n, D]`` against unit
    ``keys [m, D]`` (``keys_t`` = its contiguous transpose, ``screen`` = that in bf16 or None).
    ``sparsemax``: exact sparsemax of the cosines over all keys (``k`` sizes the first top-k pass of
    :func:`~vocab_transfer.methods.sparsemax.topk_sparsemax`; weights past a row's support are 0);
    ``softmax``: softmax(cos/temperature) over the ``k`` most similar keys. ``workspace``: buffers to reuse
    across the caller's batches (:class:`Workspace`)."""
    if weighting not in WEIGHTINGS:
        raise ValueError(f"unknown weighting {weighting!r}; known: {', '.join(WEIGHTINGS)}")
    m = keys_t.shape[1]
    if weighting == "sparsemax":
        if screen is None or screen_k >= m:
            return topk_sparsemax(queries @ keys_t, k)
        return _certified(queries, keys, keys_t, screen, screen_k, _sparsemax_select,
                          lambda z: topk_sparsemax(z, k), trim=True, workspace=workspace or Workspace())
    k = min(k, m)

    def select(z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        sim, j = z.topk(k, dim=1)
        return torch.softmax(sim / temperature, dim=1), j, sim[:, -1]

    if screen is None or 4 * k >= m:
        return select(queries @ keys_t)[:2]
    return _certified(queries, keys, keys_t, screen, 4 * k, select, lambda z: select(z)[:2], trim=False,
                      workspace=workspace or Workspace())


def _sparsemax_select(z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    w = sparsemax(z, dim=1)
    top = w.argmax(1, keepdim=True)
    tau = (z.gather(1, top) - w.gather(1, top)).squeeze(1)  # w_i = z_i − τ on the support
    return w, torch.arange(z.shape[1]).expand_as(z), tau


def _certified(queries: torch.Tensor, keys: torch.Tensor, keys_t: torch.Tensor, screen: torch.Tensor,
               width: int, select: Select,
               exact: Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]], *,
               trim: bool, workspace: Workspace) -> tuple[torch.Tensor, torch.Tensor]:
    """The certified bf16 shortlist of the module docstring: ``select`` on ever wider shortlists, ``exact`` on
    the float32 similarities of the rows no shortlist certifies."""
    m = keys.shape[0]
    scores = torch.matmul(queries.to(screen.dtype), screen, out=workspace.get("scores", (len(queries), m),
                                                                             screen.dtype))  # once per batch
    rows = torch.arange(len(queries))
    parts: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []  # (rows, weights, key indices)
    while len(rows):
        if width >= m:
            w, idx = exact(queries[rows] @ keys_t)
            parts.append((rows, w, idx))
            break
        sub = scores if len(rows) == len(scores) else torch.index_select(
            scores, 0, rows, out=workspace.get("retry", (len(rows), m), scores.dtype))
        short = sub.topk(width, dim=1)
        w, j, threshold = select(_rescore(queries[rows], keys, short.indices, workspace))
        ok = short.values[:, -1].float() + BF16_DOT_ERROR <= threshold
        parts.append((rows[ok], w[ok], short.indices[ok].gather(1, j[ok])))
        rows, width = rows[~ok], width * SHORTLIST_GROWTH
    return _assemble(len(queries), parts, trim)


def _rescore(queries: torch.Tensor, keys: torch.Tensor,
             idx: torch.Tensor, workspace: Workspace) -> torch.Tensor:
    """Exact float32 cosines ``z[r, k] = queries[r] · keys[idx[r, k]]``, the keys gathered into a reused
    buffer, at most ``GATHER_KEYS`` of them at a time."""
    (n, k), d = idx.shape, keys.shape[1]
    z = torch.empty(n, k, 1, dtype=keys.dtype)
    step = max(1, GATHER_KEYS // k)
    for s in range(0, n, step):
        e = min(n, s + step)
        gathered = torch.index_select(keys, 0, idx[s:e].flatten(),
                                      out=workspace.get("keys", ((e - s) * k, d), keys.dtype))
        torch.bmm(gathered.view(e - s, k, d), queries[s:e].unsqueeze(2), out=z[s:e])
    return z.squeeze(2)


def _assemble(n: int, parts: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]], trim: bool
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """One ``[n, width]`` pair of (weights, indices) from row subsets with their own widths: each row keeps
    its largest weights, as many columns as the widest support (``trim``: sparsemax) or all (softmax)."""
    width = max((int((w > 0).sum(1).max()) if trim else w.shape[1]) if len(w) else 0 for _, w, _ in parts)
    w_out, i_out = torch.zeros(n, width, dtype=parts[0][1].dtype), torch.zeros(n, width, dtype=torch.long)
    for rows, w, idx in (p for p in parts if len(p[0])):
        kk = min(width, w.shape[1])
        top_w, j = w.topk(kk, dim=1)
        w_out[rows, :kk], i_out[rows, :kk] = top_w, idx.gather(1, j)
    return w_out, i_out


def mix_rows(w: torch.Tensor, idx: torch.Tensor, rows: torch.Tensor, chunk: int = 1024) -> torch.Tensor:
    """``Σ_k w[n, k] · rows[idx[n, k]]`` over the non-zero weights only: a sparse ``[n, |rows|]`` CSR matrix
    times ``rows`` (sparsemax leaves most weights at zero; gathering the rows would copy ``nnz × d`` floats).
    Low-precision rows (bf16, as a decoder LLM's) are summed in float32, ``chunk`` columns at a time, so the
    float32 copy is a slice of ``rows``, not all of it; each sum is the same whatever the chunk."""
    nz = w > 0
    n = torch.arange(w.shape[0]).unsqueeze(1).expand_as(idx)[nz]
    dtype = rows.dtype if rows.dtype in (torch.float32, torch.float64) else torch.float32
    coo = torch.sparse_coo_tensor(torch.stack([n, idx[nz]]), w[nz].to(dtype), (w.shape[0], rows.shape[0]),
                                  check_invariants=False)  # in range by construction
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        csr = coo.coalesce().to_sparse_csr()
        if dtype == rows.dtype:
            return csr @ rows
        out = torch.empty(w.shape[0], rows.shape[1], dtype=rows.dtype)
        for c in range(0, rows.shape[1], chunk):
            out[:, c:c + chunk] = csr @ rows[:, c:c + chunk].to(dtype)
        return out

"""Sparsemax (Martins & Astudillo 2016), batched over rows; used by FOCUS eq. 4."""

from __future__ import annotations

from .. import lazy

torch = lazy.module("torch")


def sparsemax(z: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Euclidean projection of each slice of ``z`` along ``dim`` onto the probability simplex.

    ``sparsemax(z) = argmin_{p in Δ} ||p - z||²``: sort ``z`` descending, find the support size
    ``k(z) = max{k : 1 + k z_(k) > Σ_{j≤k} z_(j)}``, threshold ``τ = (Σ_{j≤k} z_(j) - 1) / k``,
    and return ``max(z - τ, 0)``.
    """
    z = z.transpose(dim, -1)
    zs, _ = torch.sort(z, dim=-1, descending=True)
    k = torch.arange(1, z.shape[-1] + 1, device=z.device, dtype=z.dtype)
    cumsum = zs.cumsum(-1)
    support = (1 + k * zs) > cumsum
    k_z = support.sum(-1, keepdim=True)
    tau = (cumsum.gather(-1, k_z - 1) - 1) / k_z.to(z.dtype)
    return torch.clamp(z - tau, min=0).transpose(dim, -1)


def topk_sparsemax(z: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Row-wise sparsemax of a 2-D ``z`` computed on its top-``k`` entries only.

    Returns ``(weights [n, k'], indices [n, k'])`` with ``k' = min(k, z.shape[1])`` such that
    scattering ``weights`` at ``indices`` gives exactly ``sparsemax(z)``. Exact whenever the support
    is smaller than ``k'``; rows whose support may reach ``k'`` are recomputed with the full sort,
    so the result is always exact, and the common case never sorts a whole row.
    """
    k = min(k, z.shape[1])
    vals, idx = torch.topk(z, k, dim=1)
    w = sparsemax(vals, dim=1)
    # If the k-th value is still in the support, the support may continue beyond the top k.
    spill = w[:, -1] > 0
    if k < z.shape[1] and bool(spill.any()):
        rows = spill.nonzero(as_tuple=True)[0]
        full = sparsemax(z[rows], dim=1)
        kk = int((full > 0).sum(1).max())
        wide_w, wide_i = torch.topk(full, kk, dim=1)
        pad = max(kk - k, 0)
        if pad:
            w = torch.nn.functional.pad(w, (0, pad))
            idx = torch.nn.functional.pad(idx, (0, pad))
        w[rows, :kk], idx[rows, :kk] = wide_w, wide_i
        w[rows, kk:] = 0
    return w, idx

"""Embedding correlation ρ̄ (vocab-swap §2.3 "Embedding Correlation"; Figures 2, 3, 5, 7)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

__all__ = ["correlation_matrix", "embedding_correlation", "row_correlations", "top_fraction_rows"]


def row_correlations(W1: torch.Tensor, W2: torch.Tensor) -> torch.Tensor:
    """Per-token Pearson correlation ``ρ_i = cov(x_i, y_i) / (σ_{x_i} σ_{y_i})`` of corresponding rows of
    ``W1``, ``W2`` [V, d] (one vocabulary), across the ``d`` dimensions (the distribution of vocab-swap Figure
    3), as float64 [V]. A row constant in either matrix (σ = 0, e.g. an all-zero padding row) gets NaN. Slice
    off an output-bias column first if it should not count as a dimension."""
    if W1.shape != W2.shape or W1.ndim != 2:
        raise ValueError(f"need two [V, d] matrices of the same shape, got {tuple(W1.shape)} "
                         f"and {tuple(W2.shape)}")
    x = W1.double() - W1.double().mean(1, keepdim=True)
    y = W2.double() - W2.double().mean(1, keepdim=True)
    den = torch.sqrt((x * x).sum(1) * (y * y).sum(1))
    rho = (x * y).sum(1) / den
    rho[den == 0] = torch.nan
    return rho.clamp(-1.0, 1.0)  # NaN passes through clamp


def embedding_correlation(W1: torch.Tensor, W2: torch.Tensor, *,
                          rows: torch.Tensor | np.ndarray | list[int] | None = None) -> float:
    """ρ̄(W1, W2) = (1/|V|) Σ_i ρ_i, the mean per-token Pearson correlation (vocab-swap §2.3), over the tokens
    ``rows`` (indices or a boolean mask; e.g. Figure 5's 50 % most frequent) if given. Tokens whose ρ_i is
    undefined (NaN) are left out; NaN if none is defined. ``ρ̄(W, W) = 1``, ``ρ̄(W, −W) = −1``."""
    rho = row_correlations(W1, W2)
    if rows is not None:
        rho = rho[torch.as_tensor(rows)]
    rho = rho[~torch.isnan(rho)]
    return float(rho.mean()) if len(rho) else float("nan")


def correlation_matrix(embeddings: dict[str, torch.Tensor], *,
                       rows: torch.Tensor | np.ndarray | list[int] | None = None) -> pd.DataFrame:
    """ρ̄ between every pair of embedding matrices of one vocabulary (vocab-swap Figure 5): a square DataFrame
    indexed and labelled by the keys of ``embeddings``; ``rows`` as in :func:`embedding_correlation`."""
    names = list(embeddings)
    out = pd.DataFrame(np.eye(len(names)), index=names, columns=names)
    for a, x in enumerate(names):
        for y in names[a + 1:]:
            out.loc[x, y] = out.loc[y, x] = embedding_correlation(embeddings[x].float(),
                                                                  embeddings[y].float(), rows=rows)
    return out


def top_fraction_rows(counts: np.ndarray, fraction: float = 0.5) -> np.ndarray:
    """Ids of the ``fraction`` most frequent tokens of a vocabulary given per-id counts (ties: lower id
    first), e.g. Figure 5's "50% most frequent tokens"."""
    order = np.lexsort((np.arange(len(counts)), -np.asarray(counts)))
    return np.sort(order[: int(round(len(counts) * fraction))])

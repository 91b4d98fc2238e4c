"""Linear alignment of two embedding spaces: orthogonal Procrustes and mutual nearest neighbours.

Used by Align Match (Tran 2020; vocab-swap §2.1) and WECHSEL (which aligns word vectors the same way).
"""

from __future__ import annotations

import logging

from .. import lazy

torch = lazy.module("torch")

log = logging.getLogger(__name__)


def procrustes(X: torch.Tensor, Y: torch.Tensor, rtol: float = 1e-9) -> torch.Tensor:
    """Orthogonal Procrustes: ``W = argmin_{WᵀW = I} ||X W − Y||_F`` for paired rows of ``X`` and ``Y``.

    ``X`` [n, d1], ``Y`` [n, d2]: row i of X is paired with row i of Y (e.g. an anchor word in two languages).
    With ``U Σ Vᵀ = svd(Xᵀ Y)`` the solution is ``W = U Vᵀ`` (Schönemann 1966); for ``d1 ≠ d2`` the same
    formula gives the semi-orthogonal [d1, d2] map with orthonormal rows or columns (whichever are fewer).
    Computed in float64, returned in ``X``'s dtype. Map a new point with ``x @ W``. Needs ``n ≥ 1``.

    When ``XᵀY`` has rank ``r`` below ``min(d1, d2)`` (fewer pairs than dimensions, singular values under
    ``rtol`` times the largest), every minimiser agrees on the pairs' span, ``U_r V_rᵀ``, and the rest of the
    map is not determined by the data: an SVD picks it arbitrarily, and differently on other machines. Here it
    is the one closest to the identity: the polar factor of ``(I − U_r U_rᵀ)(I − V_r V_rᵀ)`` between the two
    complements (:func:`_closest_to_identity`), the same on every machine for the same pairs. Square maps
    (``d1 = d2``) only.
    """
    if X.ndim != 2 or Y.ndim != 2 or X.shape[0] != Y.shape[0]:
        raise ValueError(f"need paired 2-D inputs with the same number of rows, got {tuple(X.shape)} "
                         f"and {tuple(Y.shape)}")
    if X.shape[0] == 0:
        raise ValueError("procrustes needs at least one pair")
    u, sigma, vh = torch.linalg.svd(X.double().T @ Y.double(), full_matrices=False)
    rank = int((sigma > rtol * sigma[0]).sum()) if sigma[0] > 0 else 0
    if rank == len(sigma) or X.shape[1] != Y.shape[1]:
        return (u @ vh).to(X.dtype)
    log.info("Procrustes: X^T Y has rank %d of %d; the map outside the pairs' span is the rotation closest "
             "to the identity", rank, len(sigma))
    w = u[:, :rank] @ vh[:rank] + _closest_to_identity(u[:, :rank], vh[:rank].T, len(sigma) - rank)
    return w.to(X.dtype)


def _closest_to_identity(u_r: torch.Tensor, v_r: torch.Tensor, k: int) -> torch.Tensor:
    """The partial isometry from the orthogonal complement of ``u_r``'s columns to that of ``v_r``'s (both of
    dimension ``k``) nearest the identity (largest trace): the polar factor of ``(I − U Uᵀ)(I − V Vᵀ)``."""
    eye = torch.eye(u_r.shape[0], dtype=u_r.dtype)
    a, _, bh = torch.linalg.svd((eye - u_r @ u_r.T) @ (eye - v_r @ v_r.T))
    return a[:, :k] @ bh[:k]


def normalize_embeddings(x: torch.Tensor, *, center: bool = True) -> torch.Tensor:
    """Unit-length rows, then (if ``center``) mean-centred and unit-length again: the "renorm,center,renorm"
    of MUSE / fastText's alignment scripts (Conneau et al. 2018; Joulin et al. 2018). All-zero rows stay
    zero."""
    x = torch.nn.functional.normalize(x.float(), dim=1)
    if center and len(x):
        x = torch.nn.functional.normalize(x - x.mean(0), dim=1)
    return x


def _nearest(a: torch.Tensor, b: torch.Tensor, batch_size: int) -> torch.Tensor:
    """Index of each row of (non-empty) ``a``'s most similar row of ``b`` (dot product), in row batches."""
    bt = b.T.contiguous()
    return torch.cat([(a[i:i + batch_size] @ bt).argmax(1) for i in range(0, len(a), batch_size)])


def mutual_nearest_neighbours(A: torch.Tensor, B: torch.Tensor, *, batch_size: int = 4096,
                              ) -> tuple[torch.Tensor, torch.Tensor]:
    """Pairs ``(i, j)`` such that row ``B[j]`` is the nearest neighbour of ``A[i]`` and vice versa, by dot
    product (cosine for unit-length rows; ties: the lowest index), as ``(ia, ib)`` sorted by ``ia``. Memory:
    ``batch_size × max(|A|, |B|)`` similarities."""
    if len(A) == 0 or len(B) == 0:
        return torch.zeros(0, dtype=torch.long), torch.zeros(0, dtype=torch.long)
    a2b = _nearest(A, B, batch_size)
    b2a = _nearest(B, A, batch_size)
    ia = (b2a[a2b] == torch.arange(len(A))).nonzero(as_tuple=True)[0]
    return ia, a2b[ia]

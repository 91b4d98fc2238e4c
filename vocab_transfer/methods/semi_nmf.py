"""Semi-NMF (Ding, Li & Jordan 2008) and k-means, as used by UNKs Everywhere (UNKs Everywhere §3.3).

Notation follows the UNKs paper, not Ding et al.: the embedding matrix ``X`` [|V|, D] (rows are
tokens) is factorized as ``X ≈ F·G`` with low-dimensional token embeddings ``F`` [|V|, D'] of
*unrestricted* sign and an up-projection ``G`` [D', D] restricted to be *non-negative* (§3.3,
"MF¹-*": "G is restricted to be non-negative while no restrictions are placed on the signs of F").
In Ding et al.'s notation ``X ≈ F Gᵀ`` this is their ``F`` = our ``F`` and their ``G`` = our ``Gᵀ``
(their data points are the D columns of our X); it is also what the paper's implementation, pymf's
``SNMF(data=X)`` (``data ≈ W·H``, ``H ≥ 0``), computes with ``W = F``, ``H = G``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from .. import lazy

torch = lazy.module("torch")
tqdm = lazy.module("tqdm")


@dataclass
class SemiNMFHistory:
    """Per-iteration trace of :func:`semi_nmf` (for convergence plots and the benchmark)."""

    error: list[float] = field(default_factory=list)  # ||X - F·G||_F / ||X||_F after each iteration
    seconds: list[float] = field(default_factory=list)  # wall clock from the call's start, per iteration
    setup_seconds: float = 0.0  # before the first iteration (Gram matrix in mode "gram")
    final_error: float = float("nan")  # after the closing least-squares F update (<= error[-1])
    converged: bool = False  # relative decrease fell below ``tol`` before ``max_iter``

    @property
    def iterations(self) -> int:
        return len(self.error)


def _pos(m: torch.Tensor) -> torch.Tensor:
    return (m.abs() + m) / 2


def _neg(m: torch.Tensor) -> torch.Tensor:
    return (m.abs() - m) / 2


def semi_nmf(X: torch.Tensor, rank: int, *, seed: int, max_iter: int = 3000, tol: float = 1e-4,
             mode: str = "gram", dtype: torch.dtype | None = None, chunk_rows: int = 65536,
             progress: bool = False) -> tuple[torch.Tensor, torch.Tensor, SemiNMFHistory]:
    """Semi-NMF ``X ≈ F·G`` with ``G ≥ 0`` (Ding et al. 2008, §3; UNKs §3.3 eq. 2 with C = 1), by alternating
    updates that minimize ``||X - F·G||_F`` (Ding et al. eqs. 9-10 in the UNKs notation of the module
    docstring):

    - ``F ← X Gᵀ (G Gᵀ)⁺`` -- the exact least-squares optimum for fixed ``G``;
    - ``G ← G ⊙ sqrt(((FᵀX)⁺ + (FᵀF)⁻ G) / ((FᵀX)⁻ + (FᵀF)⁺ G))`` with ``A⁺ = (|A|+A)/2``, ``A⁻ = (|A|-A)/2``
      -- the multiplicative update, which keeps ``G ≥ 0`` and never increases the error for fixed ``F`` (Ding
      et al., Theorem 1), so the recorded error is non-increasing.

    Choices the papers leave open:

    - init: ``G ~ U(0, 1) + 1e-4``, seeded (pymf's random init, the implementation the UNKs paper used; Ding
      et al. suggest k-means); ``F`` is computed from ``G``, so the scale does not matter;
    - stopping: when ``(e_{t-1} - e_t) / e_{t-1} < tol`` with ``e = ||X - F·G||_F / ||X||_F``, or after
      ``max_iter`` iterations (the paper runs a fixed 3,000);
    - mode ``"gram"`` (default): ``F`` is never formed inside the loop. As ``F`` is the least-squares
      solution, ``FᵀX = M⁺ G K`` and ``FᵀF = M⁺ G K Gᵀ M⁺`` with ``K = XᵀX`` [D, D] and ``M = G Gᵀ``: one pass
      over X computes ``K`` and an iteration costs O(D²·D') instead of O(|V|·D·D'), ``M⁻¹`` applied by
      Cholesky solves (a pseudo-inverse only where ``M`` is singular). The iterates equal mode ``"direct"``'s
      (which forms ``F``, for checking and the benchmark) up to rounding; the error is ``||X||² - 2⟨FᵀX, G⟩ +
      ⟨FᵀF, G Gᵀ⟩``;
    - precision: ``dtype`` (None: float64, since the Gram trick squares the condition number and the error
      formula subtracts numbers of the size of ``||X||²``); ``X`` may be float32, cast in chunks of
      ``chunk_rows`` rows.

    Runs on ``X.device``. Returns ``(F [|V|, rank], G [rank, D], history)`` in ``X.dtype``; ``F`` is the
    least-squares optimum for the final ``G`` (``history.final_error``).
    """
    if mode not in ("gram", "direct"):
        raise ValueError(f"unknown Semi-NMF mode {mode!r}; known: gram, direct")
    if X.dim() != 2 or rank < 1:
        raise ValueError("X must be a matrix and rank >= 1")
    start, device, (n, d) = time.perf_counter(), X.device, X.shape
    dtype = torch.float64 if dtype is None else dtype
    G = (torch.rand(rank, d, generator=torch.Generator().manual_seed(seed), dtype=dtype) + 1e-4).to(device)
    tiny, hist = torch.finfo(dtype).tiny, SemiNMFHistory()

    if mode == "gram":
        K, Xd = torch.zeros(d, d, dtype=dtype, device=device), None
        for xc in X.split(chunk_rows):
            xc = xc.to(dtype)
            K.addmm_(xc.T, xc)
        norm2 = K.diagonal().sum()
    else:
        Xd = X.to(dtype)
        norm2 = (Xd * Xd).sum()
    norm = float(norm2.sqrt())
    if norm == 0.0:
        raise ValueError("X is all zeros")
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    hist.setup_seconds = time.perf_counter() - start

    prev = float("inf")
    bar = tqdm.tqdm(range(max_iter), desc=f"Semi-NMF {n}x{d} -> {rank}", disable=not progress, mininterval=5)
    for _ in bar:
        if Xd is None:
            M = G @ G.T
            chol, info = torch.linalg.cholesky_ex(M)
            if int(info) == 0:  # M = GGᵀ is positive definite while G has full row rank: 2 triangular solves
                A = torch.cholesky_solve(G @ K, chol)  # FᵀX = M⁻¹ G K [rank, d]
                FtF = torch.cholesky_solve((A @ G.T).T, chol)  # M⁻¹ G K Gᵀ M⁻¹ (symmetric)
            else:  # a row of G died: the pseudo-inverse
                m_pinv = torch.linalg.pinv(M, hermitian=True)
                A = m_pinv @ (G @ K)
                FtF = A @ G.T @ m_pinv
        else:
            F = Xd @ (G.T @ torch.linalg.pinv(G @ G.T, hermitian=True))
            A, FtF = F.T @ Xd, F.T @ F
        FtF = (FtF + FtF.T) / 2
        G = G * torch.sqrt((_pos(A) + _neg(FtF) @ G) / (_neg(A) + _pos(FtF) @ G).clamp_min(tiny))
        err2 = norm2 - 2 * (A * G).sum() + (FtF * (G @ G.T)).sum()
        err = float(err2.clamp_min(0).sqrt()) / norm  # .item() synchronizes
        hist.error.append(err)
        hist.seconds.append(time.perf_counter() - start)
        if progress:
            bar.set_postfix(error=f"{err:.5f}", refresh=False)
        if err == 0.0 or (prev - err) / prev < tol:
            hist.converged = True
            break
        prev = err
    bar.close()

    W = G.T @ torch.linalg.pinv(G @ G.T, hermitian=True)  # F = X W
    F = torch.cat([xc.to(dtype) @ W for xc in X.split(chunk_rows)])
    # gram: ||X||² - tr(G K W) for the least-squares F
    final2 = norm2 - ((W.T @ K) * G).sum() if Xd is None else ((Xd - F @ G) ** 2).sum()
    hist.final_error = float(final2.clamp_min(0).sqrt()) / norm
    return F.to(X.dtype), G.to(X.dtype), hist


def _sq_dists(X: torch.Tensor, x2: torch.Tensor, centers: torch.Tensor) -> torch.Tensor:
    return (x2[:, None] - 2 * X @ centers.T + (centers * centers).sum(1)[None]).clamp_min_(0)


def kmeans(X: torch.Tensor, k: int, *, seed: int, max_iter: int = 300,
           tol: float = 1e-4) -> tuple[torch.Tensor, torch.Tensor, float]:
    """Lloyd's k-means with k-means++ seeding (Arthur & Vassilvitskii 2007), fully vectorized.

    Used for MF^C_KMEANS (UNKs §3.3: "we first cluster X into C clusters using KMeans"; the paper does not
    give the k-means settings). Choices: plain k-means++ (one candidate per step), stop when the summed
    squared centre shift is at most ``tol × mean per-feature variance of X`` (scikit-learn's criterion) or the
    assignment no longer changes; an emptied cluster is re-seeded with the point farthest from its centre.
    Deterministic for a fixed ``seed`` (local generator; sampling runs on the CPU, distances on ``X.device``;
    ties go to the lowest cluster index). Computes in ``X.dtype``.

    Returns ``(labels [n] int64, centers [k, D], inertia)`` where inertia is the sum of squared distances of
    the points to their centres.
    """
    n = X.shape[0]
    if not 1 <= k <= n:
        raise ValueError(f"k must be in [1, {n}], got {k}")
    gen = torch.Generator().manual_seed(seed)
    x2 = (X * X).sum(1)
    shift_tol = tol * float(X.var(0, correction=0).mean()) if n > 1 else 0.0
    idx = [int(torch.randint(n, (1,), generator=gen))]  # k-means++ seeding
    closest = _sq_dists(X, x2, X[idx]).squeeze(1)
    for _ in range(1, k):
        w = closest.double().cpu()
        nxt = int(torch.multinomial(w, 1, generator=gen)) if float(w.sum()) > 0 else \
            int(torch.randint(n, (1,), generator=gen))
        idx.append(nxt)
        closest = torch.minimum(closest, _sq_dists(X, x2, X[nxt:nxt + 1]).squeeze(1))
    centers, labels = X[idx].clone(), None
    for _ in range(max_iter):
        dist = _sq_dists(X, x2, centers)
        new_labels = dist.argmin(1)
        counts = torch.bincount(new_labels, minlength=k)
        sums = torch.zeros_like(centers).index_add_(0, new_labels, X)
        new_centers = sums / counts.clamp_min(1)[:, None].to(X.dtype)
        empty = (counts == 0).nonzero(as_tuple=True)[0]
        if len(empty):
            far = dist.gather(1, new_labels[:, None]).squeeze(1).argsort(descending=True, stable=True)
            new_centers[empty] = X[far[: len(empty)]]
        shift = float(((new_centers - centers) ** 2).sum())
        unchanged = labels is not None and torch.equal(labels, new_labels)
        centers, labels = new_centers, new_labels
        if unchanged or shift <= shift_tol:
            break
    inertia, labels = _sq_dists(X, x2, centers).min(1)
    return labels, centers, float(inertia.sum())

"""OMP over anchor tokens, as mergekit's tokensurgeon does it (``mergekit/tokensurgeon/omp.py: batch_omp``;
"Training-Free Tokenizer Transplantation via Orthogonal Matching Pursuit", arXiv:2506.06607).

Overlapping tokens keep their source row. Every other target token's vector in an auxiliary space is
approximated by orthogonal matching pursuit with at most ``k`` atoms among the overlapping ("anchor") tokens'
vectors; the same coefficients on the anchors' source rows give its row: ``e_a = Σ_j c_aj · e_{o_j}^s`` with
``h_a ≈ Σ_j c_aj · h_{o_j}`` (raw atoms, signed least-squares coefficients, ``k`` = 64, as tokensurgeon).
Deviations: the auxiliary space is the target's token-level fastText, not a donor model's embeddings; a row
stops adding atoms once its residual is below ``1e-6`` of its norm and skips linearly dependent atoms
(coefficient 0); the fit is float64 (``fit_dtype: embedding``: float32, as tokensurgeon). Tokens without a
vector are drawn from N(mean, std) of the source matrix per dimension, seeded. Details: docs/methods.md, "OMP
over anchor tokens".
"""

from __future__ import annotations

import warnings
from typing import Annotated, Literal

from .. import lazy
from ..typed import Range
from .base import COMBINED, RANDOM, EmbeddingInit, TransferInputs, anchored_start, batched, fill_random
from .overlap import Overlap, restrict_overlap
from .registry import Need, register

np = lazy.module("numpy")
torch = lazy.module("torch")


def batch_omp(targets: torch.Tensor, atoms: torch.Tensor, k: int, *, tol: float = 1e-6,
              dtype: torch.dtype | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Orthogonal matching pursuit of each row of ``targets`` [B, h] with at most ``k`` rows of ``atoms`` [N,
    h]: the atoms' scores against the residual in float32, the fit in ``dtype`` (float64 by default, or
    float32 as tokensurgeon fits float32 embeddings). Returns ``(idx [B, k'] long, coef [B, k'] dtype)``, ``k'
    = min(k, N)``, with ``targets ≈ Σ_j coef[:, j] · atoms[idx[:, j]]``; an unused slot has coefficient 0 (its
    index is arbitrary). Ties pick the lowest atom index.

    The basis is kept as rows (``q`` [B, k, h]) so that the prefix ``q[:, :t]`` is contiguous for ``bmm``;
    ``Qᵀy`` gains one entry per step and the residual loses that direction (``r ← r - q_t (q_t·y)``),
    instead of both being recomputed from the whole basis; the picked atoms are masked by index."""
    dtype = torch.float64 if dtype is None else dtype  # not a default value: the planner imports this module
    y, a = targets.to(dtype), atoms.to(dtype)
    a_score = atoms.float()  # the selection's inner products in float32: half float64's time (they dominate)
    b, h = y.shape
    k = min(k, a.shape[0])
    tiny = torch.finfo(dtype).tiny
    q, r = torch.zeros(b, k, h, dtype=dtype), torch.zeros(b, k, k, dtype=dtype)
    qty, idx = torch.zeros(b, k, dtype=dtype), torch.zeros(b, k, dtype=torch.long)
    residual, y_norm, a_norm = y.clone(), y.norm(dim=1), a.norm(dim=1)
    score = torch.empty(b, a.shape[0], dtype=torch.float32)
    for t in range(k):
        active = residual.norm(dim=1) > tol * y_norm
        torch.mm(residual.to(torch.float32), a_score.T, out=score).abs_()
        score.scatter_(1, idx[:, :t], -1.0)  # picked atoms, skipped (dependent) ones too, are not tried again
        new = score.argmax(1)  # first maximum: the lowest index on ties
        atom = a[new]
        proj = torch.bmm(q[:, :t], atom.unsqueeze(2)).squeeze(2)  # [B, t]
        ortho = atom - torch.bmm(proj.unsqueeze(1), q[:, :t]).squeeze(1)
        norm = ortho.norm(dim=1)
        active &= norm > tol * a_norm[new].clamp(min=tiny)
        # an inactive slot: a zero row of Q and a unit diagonal of R, so its coefficient solves to 0
        idx[:, t] = new
        r[:, :t, t] = torch.where(active.unsqueeze(1), proj, 0.0)
        r[:, t, t] = torch.where(active, norm, 1.0)
        q_t = torch.where(active.unsqueeze(1), ortho / norm.clamp(min=tiny).unsqueeze(1), 0.0)
        q[:, t] = q_t
        qty[:, t] = c = (q_t * y).sum(1)
        residual -= c.unsqueeze(1) * q_t
    coef = torch.linalg.solve_triangular(r, qty.unsqueeze(2), upper=True).squeeze(2)
    return idx, coef


#: ``fit_dtype`` of OMP: the fit in float64, or in the auxiliary vectors' dtype as tokensurgeon does (float32)
FIT_DTYPES = ("float64", "embedding")
#: ``new_bias`` of OMP: a new token's output bias combined as its embedding is, or zero as in tokensurgeon
NEW_BIAS = ("combined", "zero")


def combine(idx: torch.Tensor, coef: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """``Σ_j coef[:, j] · rows[idx[:, j]]`` as a sparse ``[B, |rows|]`` CSR matrix (each row's atoms are
    distinct, sorted by index) times ``rows``: gathering ``rows[idx]`` would copy ``B × k × d`` floats."""
    order = idx.argsort(1)
    b, k = idx.shape
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        w = torch.sparse_csr_tensor(torch.arange(0, b * k + 1, k), idx.gather(1, order).flatten(),
                                    coef.gather(1, order).flatten(), (b, rows.shape[0]),
                                    check_invariants=False)  # in range and distinct by construction
        return w @ rows


@register("omp", frozenset({Need.TOKEN_VECTORS}))
def init_omp(inputs: TransferInputs, *, seed: int, k: Annotated[int, Range(ge=1)] = 64,
             batch_size: Annotated[int, Range(ge=1)] = 512, overlap: Overlap = "full",
             fit_dtype: Literal[FIT_DTYPES] = "float64",  # type: ignore[valid-type]
             new_bias: Literal[NEW_BIAS] = "combined") -> EmbeddingInit:  # type: ignore[valid-type]
    """Config adapter: ``kind: omp`` (the module docstring; at most ``k`` anchors a token, :func:`batch_omp`).

    ``overlap``, one of :data:`~.overlap.OVERLAP_KINDS`: which overlap is copied and gives the anchors
    (:func:`~.overlap.restrict_overlap`; ``exact`` is tokensurgeon's rule, without the fuzzy symbol matches);
    ``fit_dtype: float64`` (default) fits and combines in float64, ``embedding`` in the auxiliary vectors'
    dtype (float32 unless they are float64), as tokensurgeon does with its embeddings; ``new_bias: combined``
    (default) gives a fitted token the same combination of the anchors' output biases as of their rows (a
    token without a vector: a draw), ``zero`` sets every token that is not copied to an output bias of 0, as
    tokensurgeon's ``remap_auxiliary_vocabulary`` does (a source with an MLM output bias only)."""
    if inputs.aux is None:
        raise ValueError("OMP needs the target's token-level fastText vectors (the fastText stage)")
    for key, value, allowed in (("fit_dtype", fit_dtype, FIT_DTYPES), ("new_bias", new_bias, NEW_BIAS)):
        if value not in allowed:  # a config is checked when it is parsed; a direct call here
            raise ValueError(f"{key} must be one of {list(allowed)}, not {value!r}")
    source, vectors = inputs.source_matrix, inputs.aux.vectors
    matrix, provenance, n_sources, anchor_t, anchor_s, rows = anchored_start(
        inputs, restrict_overlap(inputs.overlap, overlap))
    dtype = torch.float64
    if fit_dtype == "embedding":
        dtype = vectors.dtype if vectors.dtype in (torch.float32, torch.float64) else torch.float32
    e_anchor, h_anchor = source[anchor_s].to(dtype), vectors[anchor_t]
    for batch in batched(rows, batch_size, "OMP"):
        idx, coef = batch_omp(vectors[batch], h_anchor, k, dtype=dtype)
        matrix[batch] = combine(idx, coef, e_anchor).to(source.dtype)
        provenance[batch.numpy()] = COMBINED
        n_sources[batch.numpy()] = (coef != 0).sum(1).numpy()
    fill_random(matrix, provenance == RANDOM, source, seed)
    if new_bias == "zero" and inputs.bias_columns:
        new = torch.from_numpy(np.flatnonzero(np.isin(provenance, [COMBINED, RANDOM])))
        matrix[new, -inputs.bias_columns:] = 0
    return EmbeddingInit(matrix, provenance, n_sources)

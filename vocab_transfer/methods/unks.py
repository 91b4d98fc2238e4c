"""UNKs Everywhere (Pfeiffer et al. 2021, §3, §4.2, Appendix "Semi-NMF").

Two config kinds cover the paper's eight embedding rows (Table 3):

- ``el``: a full-size embedding matrix X' (§3.1 EL-RAND, §3.2 EL-LEX);
- ``mf``: a factorized embedding ``F'·G^c`` (§3.3 MF¹-*, MF^C_KMEANS-*, MF^C_NEURAL-*), saved both as
  the dense matrix and as the factors ``mf_F``, ``mf_G``, ``mf_Z``, ``mf_tau`` (``EmbeddingInit.extra``,
  rebuilt by :meth:`vocab_transfer.methods.factorized.FactorizedEmbedding.from_tensors`).

``inputs.source_matrix`` may carry the MLM output bias as its last column; it is factorized together
with the embedding dimensions (``G`` is [D', d + 1]), so every target row keeps a bias entry.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated, Literal

from .. import lazy
from ..typed import Range
from .base import EmbeddingInit, TransferInputs, copy_rows, labels, normal_like, overlap_ids
from .registry import Need, register
from .semi_nmf import kmeans, semi_nmf

if TYPE_CHECKING:
    from .factorized import FactorizedEmbedding

pd = lazy.module("pandas")
torch = lazy.module("torch")

#: distributions for rows without a source counterpart (config ``random``)
RANDOM_KINDS = ("std0.02", "normal_like", "xavier")
#: the default: the paper's new embeddings are "randomly initialized" (§3.1, §3.3) in its mBERT, i.e. drawn by
#: the model's own initializer, N(0, initializer_range²) with mBERT's (and XLM-R's) initializer_range 0.02
PAPER_RANDOM = "std0.02"


def random_rows(reference: torch.Tensor, n: int, kind: str, generator: torch.Generator) -> torch.Tensor:
    """``n`` random rows with ``reference.shape[1]`` columns (the paper names no distribution):

    - ``std0.02`` (default): N(0, 0.02²), Hugging Face's ``_init_weights`` for a new BERT/XLM-R embedding,
      the initializer of EL-RAND's new embedding matrix (Artetxe et al. 2020) in the paper's mBERT;
    - ``normal_like``: N(mean, std) per column of ``reference`` (the source matrix for EL, the source
      low-dimensional ``F`` for MF) -- the random rows of FOCUS/WECHSEL in this package, so random rows
      match across methods in scale;
    - ``xavier``: Glorot-normal for an [n, dim] embedding weight, std = sqrt(2 / (n + dim)).
    """
    if kind not in RANDOM_KINDS:
        raise ValueError(f"unknown random init {kind!r}; known: {', '.join(RANDOM_KINDS)}")
    if kind == "normal_like":
        return normal_like(reference, n, generator)
    dim = reference.shape[1]
    std = 0.02 if kind == "std0.02" else math.sqrt(2.0 / (n + dim))
    return std * torch.randn(n, dim, generator=generator, dtype=reference.dtype)


def lexical_overlap(overlap: pd.DataFrame, lexical: bool, fuzzy: bool = False) -> pd.DataFrame:
    """Rows of the overlap table whose source row is reused: special tokens always (Table 2: every method
    shares them); with ``lexical`` also the lexically overlapping tokens V'_lex (§3.2): ``match == "exact"``,
    plus ``"fuzzy"`` (symbolic tokens matched case-insensitively) when ``fuzzy``, off by default since the
    paper's "present in both vocabularies" is the exact match."""
    keep = {"special"}
    if lexical:
        keep |= {"exact", "fuzzy"} if fuzzy else {"exact"}
    return overlap[overlap["match"].isin(keep).to_numpy()].reset_index(drop=True)


def el_init(source: torch.Tensor, target_vocab_size: int, copy_target_ids: torch.Tensor,
            copy_source_ids: torch.Tensor, *, seed: int, random: str = PAPER_RANDOM) -> torch.Tensor:
    """EL-RAND / EL-LEX (§3.1, §3.2): target row t copies source row s for each pair (t, s), the rest
    is random (:func:`random_rows` of kind ``random``, drawn for all rows first so that EL-RAND and
    EL-LEX with the same seed share the random rows of non-overlapping tokens). Returns [V_t, d]."""
    g = torch.Generator().manual_seed(seed)
    out = random_rows(source, target_vocab_size, random, g)
    out[copy_target_ids] = source[copy_source_ids]
    return out


@register("el")
def init_el(inputs: TransferInputs, *, seed: int, lexical: bool = False, fuzzy: bool = False,
            random: Literal[RANDOM_KINDS] = PAPER_RANDOM) -> EmbeddingInit:  # type: ignore[valid-type]
    """Config adapter: ``kind: el``; ``lexical: false`` is EL-RAND (§3.1, Artetxe et al. 2020: only
    special tokens copied), ``lexical: true`` is EL-LEX (§3.2: lexically overlapping tokens copied
    too); ``fuzzy``/``random`` see :func:`lexical_overlap` / :func:`random_rows`."""
    ov = lexical_overlap(inputs.overlap, lexical, fuzzy)
    t, s = overlap_ids(ov)
    matrix = el_init(inputs.source_matrix, inputs.target_vocab_size, t, s, seed=seed, random=random)
    provenance, n_sources = labels(inputs.target_vocab_size)
    copy_rows(matrix, provenance, n_sources, inputs.source_matrix, ov)
    return EmbeddingInit(matrix, provenance, n_sources)


def factorize_source(X: torch.Tensor, *, seed: int, clusters: int = 1, dim: int = 100,
                     assignment: str = "kmeans", max_iter: int = 3000, tol: float = 1e-5,
                     kmeans_iter: int = 300, neural_steps: int = 3000, neural_lr: float = 1e-3,
                     neural_tol: float = 1e-4, tau: float = 1.0, z_std: float = 1.0, lex_logit: float = 5.0,
                     progress: bool = False) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """Factorize the source matrix X [V, D] (§3.3, eq. 2). Returns ``(F [V, dim], G [C, dim, D], Z [V, C] or
    None for C = 1)``, on ``X.device`` in ``X.dtype``.

    - C = 1 (MF¹): Semi-NMF ``X ≈ F·G``, ``G ≥ 0`` (:func:`vocab_transfer.methods.semi_nmf.semi_nmf`, stopping
      on a relative error decrease below ``tol`` or after ``max_iter`` = the paper's 3,000 steps);
    - ``assignment: kmeans`` (MF^C_KMEANS): k-means of the rows of X into C clusters (``kmeans_iter`` Lloyd
      iterations at most), then a separate Semi-NMF of each cluster's rows X^c giving its rows of F and G^c.
      k-means yields no logits; the source logits are ``lex_logit`` on the token's cluster and 0 elsewhere,
      which is what LEX target tokens inherit (the paper leaves open how their Z rows are set; with τ = 1 a
      margin of 5 keeps the cluster in ~94 % of Gumbel samples at C = 10 and still lets training move it);
    - ``assignment: neural`` (MF^C_NEURAL): Semi-NMF as for MF¹, then F, G¹..G^C and Z trained jointly on eq.
      4 (:func:`vocab_transfer.methods.factorized.fit_neural`; ``neural_steps``, ``neural_lr``,
      ``neural_tol``, ``tau``, ``z_std``); the learned logits are returned.
    """
    if clusters < 1:
        raise ValueError("clusters must be >= 1")
    if clusters == 1:
        F, G, _ = semi_nmf(X, dim, seed=seed, max_iter=max_iter, tol=tol, progress=progress)
        return F, G[None], None
    if assignment == "kmeans":
        labels, _, _ = kmeans(X, clusters, seed=seed, max_iter=kmeans_iter)
        F = X.new_empty(X.shape[0], dim)
        G = X.new_empty(clusters, dim, X.shape[1])
        for c in range(clusters):
            rows = (labels == c).nonzero(as_tuple=True)[0]
            if len(rows) == 0:
                raise ValueError(f"k-means left cluster {c} empty; use fewer clusters")
            F[rows], G[c], _ = semi_nmf(X[rows], dim, seed=seed + 1 + c, max_iter=max_iter, tol=tol,
                                        progress=progress)
        Z = lex_logit * torch.nn.functional.one_hot(labels, clusters).to(X.dtype)
        return F, G, Z
    if assignment == "neural":
        from .factorized import fit_neural  # torch.nn modules, defined when the module is imported

        F0, G0, _ = semi_nmf(X, dim, seed=seed, max_iter=max_iter, tol=tol, progress=progress)
        module, _ = fit_neural(X, F0, G0, clusters, seed=seed, max_steps=neural_steps, tol=neural_tol,
                               lr=neural_lr, tau=tau, z_std=z_std, progress=progress)
        return module.F.detach(), module.G.detach(), module.Z.detach()
    raise ValueError(f"unknown assignment {assignment!r}; known: kmeans, neural")


def mf_init(F_src: torch.Tensor, G: torch.Tensor, Z_src: torch.Tensor | None, target_vocab_size: int,
            copy_target_ids: torch.Tensor, copy_source_ids: torch.Tensor, *, seed: int,
            random: str = PAPER_RANDOM, tau: float = 1.0, z_std: float = 1.0) -> FactorizedEmbedding:
    """Target factorized embedding for MF-RAND / MF-LEX (§3.3 "MF-RAND and MF-LEX"), on the CPU.

    ``G`` is reused as is. For each pair (t, s) (special tokens, plus V'_lex for LEX) ``F'[t] = F_src[s]`` and
    ``Z'[t] = Z_src[s]`` (the token keeps its source cluster); other rows are random: ``F'`` from
    :func:`random_rows` with ``F_src`` as reference (``normal_like``: ``F'·G`` has the scale of real
    embeddings), ``Z' ~ N(0, z_std²)`` ("a randomly initialized matrix Z"), drawn for every token first, so
    RAND and LEX share them for a given seed.
    """
    g = torch.Generator().manual_seed(seed)
    F_src = F_src.cpu()
    F = random_rows(F_src, target_vocab_size, random, g)
    F[copy_target_ids] = F_src[copy_source_ids]
    Z = None
    if G.shape[0] > 1:
        if Z_src is None:
            raise ValueError("C > 1 needs source cluster logits")
        Z = z_std * torch.randn(target_vocab_size, G.shape[0], generator=g, dtype=F.dtype)
        Z[copy_target_ids] = Z_src.cpu().to(F.dtype)[copy_source_ids]
    from .factorized import FactorizedEmbedding  # torch.nn modules, defined when the module is imported

    return FactorizedEmbedding(F, G.cpu().to(F.dtype), Z, tau=tau)


@register("mf", frozenset({Need.FACTORS}))
def init_mf(inputs: TransferInputs, *, seed: int, clusters: Annotated[int, Range(ge=1)] = 1,
            dim: Annotated[int, Range(ge=1)] = 100,
            assignment: str = "kmeans", lexical: bool = False, fuzzy: bool = False,
            random: Literal[RANDOM_KINDS] = PAPER_RANDOM, max_iter: int = 3000,  # type: ignore[valid-type]
            tol: float = 1e-5, kmeans_iter: int = 300,
            neural_steps: int = 3000, neural_lr: float = 1e-3, neural_tol: float = 1e-4, tau: float = 1.0,
            z_std: float = 1.0, lex_logit: float = 5.0, device: str = "cpu") -> EmbeddingInit:
    """Config adapter: ``kind: mf`` -- MF¹-RAND/LEX (``clusters: 1``), MF^C_KMEANS-RAND/LEX (``assignment:
    kmeans``), MF^C_NEURAL-RAND/LEX (``assignment: neural``); paper: C = 10, D' = 100 (§4.2, Appendix
    "Semi-NMF"). The source matrix is factorized in float32 on ``device`` (``cpu``, ``cuda`` or ``auto``) by
    :func:`factorize_source` (unless the factors are given), the target embedding built by :func:`mf_init`.
    ``matrix`` is the module's dense ``flatten()``, so even copied and special rows are the source row's
    reconstruction ``F[s]·G^{c(s)}``; ``extra`` holds the factors for training them later."""
    factors = inputs.source_factors  # computed once per source by rule factorize_source
    if factors is None:
        factors = factorize(inputs.source_matrix, seed=seed, device=device, clusters=clusters, dim=dim,
                            assignment=assignment, max_iter=max_iter, tol=tol, kmeans_iter=kmeans_iter,
                            neural_steps=neural_steps, neural_lr=neural_lr, neural_tol=neural_tol, tau=tau,
                            z_std=z_std, lex_logit=lex_logit)
    ov = lexical_overlap(inputs.overlap, lexical, fuzzy)
    module = mf_init(factors["F"], factors["G"], factors.get("Z"), inputs.target_vocab_size, *overlap_ids(ov),
                     seed=seed, random=random, tau=tau, z_std=z_std)
    provenance, n_sources = labels(inputs.target_vocab_size)
    copy_rows(None, provenance, n_sources, inputs.source_matrix, ov)
    return EmbeddingInit(module.flatten().to(inputs.source_matrix.dtype), provenance, n_sources,
                         extra=module.state())


#: Parameters of :func:`init_mf` that the source factorization depends on (the rest: target side only).
FACTORIZATION_PARAMS = ("clusters", "dim", "assignment", "max_iter", "tol", "kmeans_iter", "neural_steps",
                        "neural_lr", "neural_tol", "tau", "z_std", "lex_logit", "device")


def factorization_spec(params: dict) -> dict:
    """The factorization-relevant subset of a (defaulted) ``kind: mf`` config; methods with equal specs
    (e.g. MF¹⁰-KMEANS-RAND and -LEX, on every target) share one ``factorize_source`` artifact."""
    clustering = ("assignment", "kmeans_iter", "neural_steps", "neural_lr", "neural_tol", "tau", "z_std",
                  "lex_logit")  # MF¹: one Semi-NMF, no assignment
    return {k: params[k] for k in FACTORIZATION_PARAMS if params["clusters"] != 1 or k not in clustering}


def factorize(source: torch.Tensor, *, seed: int, device: str = "cpu", **spec) -> dict[str, torch.Tensor]:
    """:func:`factorize_source` as named tensors ``F``, ``G`` (and ``Z`` for C > 1) for the artifact."""
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    F, G, Z = factorize_source(source.to(device, torch.float32), seed=seed, progress=True, **spec)
    out = {"F": F.cpu(), "G": G.cpu()}
    if Z is not None:
        out["Z"] = Z.cpu()
    return out

"""Factorized embeddings of UNKs Everywhere (UNKs Everywhere §3.3, eqs. 2-4).

A token v's embedding is ``F'[v] · G^{c(v)}``: a low-dimensional row ``F'[v]`` [D'] up-projected by one of C
matrices ``G^c`` [D', D], the cluster ``c(v)`` chosen by logits ``Z[v]`` [C] through a straight-through
Gumbel-softmax while training (eq. 3) and by ``argmax`` otherwise. With C = 1 this is MF¹ (``X ≈ F·G``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import torch
from torch import nn
from tqdm import tqdm

from ..io import read_tensors

#: the trained factors beside a LAPT model trained in factorized form (``mf_*`` keys)
FACTORS_FILE = "factorized_embeddings.safetensors"


def gumbel_softmax_st(logits: torch.Tensor, tau: float | torch.Tensor, *,
                      generator: torch.Generator | None = None) -> torch.Tensor:
    """Straight-through Gumbel-softmax (Jang et al. 2017; UNKs eq. 3) over the last dimension: the forward
    value is the one-hot ``argmax`` of ``(logits + g) / τ``, ``g ~ Gumbel(0, 1)``, the gradient that of the
    softmax. ``logits`` play eq. 3's ``log z`` (unnormalized, as in ``torch.nn.functional.gumbel_softmax``).
    The noise comes from ``generator`` when given (on ``logits.device``), else from the global RNG."""
    soft = gumbel_softmax(logits, tau, generator=generator)
    hard = torch.zeros_like(soft).scatter_(-1, soft.argmax(-1, keepdim=True), 1.0)
    return hard - soft.detach() + soft


def gumbel_softmax(logits: torch.Tensor, tau: float | torch.Tensor, *,
                   generator: torch.Generator | None = None) -> torch.Tensor:
    """Softmax of ``(logits + g) / τ``, ``g ~ Gumbel(0, 1)`` (:func:`gumbel_softmax_st` before one-hot)."""
    gumbels = -torch.empty_like(logits).exponential_(generator=generator).log()
    return ((logits + gumbels) / tau).softmax(-1)


def _unsort(rows: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(rows)
    out[order] = rows
    return out


class _StraightThroughMix(torch.autograd.Function):
    """``Σ_c w_c · low G^c`` for a straight-through Gumbel sample ``w``: one-hot at ``clusters`` forward, the
    gradient of the softmax ``soft`` backward (eq. 3). Rows are sorted by cluster once; the forward and the
    gradients of ``low`` and ``G`` multiply each row by its own cluster's ``G^c`` only (n·D'·D each), and the
    gradient of ``soft``, ``<g, low G^c>`` for every c, is an [n, D] x [D, C·D'] product taken in blocks of
    rows that stay in cache. The dense form, ``(w ⊗ low) @ G``, costs three products of n·C·D'·D."""

    BLOCK = 2048

    @staticmethod
    def forward(ctx, soft: torch.Tensor, clusters: torch.Tensor,
                low: torch.Tensor, G: torch.Tensor) -> torch.Tensor:
        order = torch.argsort(clusters, stable=True)
        counts = torch.bincount(clusters, minlength=G.shape[0]).tolist()
        low_sorted = low[order]
        out = torch.cat([part @ G[c] for c, part in enumerate(low_sorted.split(counts))])
        ctx.counts = counts
        ctx.save_for_backward(order, low_sorted, G)
        return _unsort(out, order)

    @staticmethod
    def backward(ctx, g: torch.Tensor):
        order, low_sorted, G = ctx.saved_tensors
        C, rank, dim = G.shape
        g_sorted = g[order]
        grad_soft = grad_low = grad_G = None
        if ctx.needs_input_grad[0]:
            Gt, block = G.reshape(C * rank, dim).T, _StraightThroughMix.BLOCK
            grad_soft = _unsort(torch.cat([
                (g_sorted[i:i + block] @ Gt).view(-1, C, rank).mul_(low_sorted[i:i + block, None, :]).sum(-1)
                for i in range(0, len(g_sorted), block)]), order)
        g_parts, low_parts = g_sorted.split(ctx.counts), low_sorted.split(ctx.counts)
        if ctx.needs_input_grad[2]:
            grad_low = _unsort(torch.cat([part @ G[c].T for c, part in enumerate(g_parts)]), order)
        if ctx.needs_input_grad[3]:
            grad_G = torch.stack([lp.T @ gp for lp, gp in zip(low_parts, g_parts, strict=True)])
        return grad_soft, None, grad_low, grad_G


def straight_through_mix(logits: torch.Tensor, low: torch.Tensor, G: torch.Tensor, tau: float | torch.Tensor,
                         *, generator: torch.Generator | None = None) -> torch.Tensor:
    """``Σ_c w_c · low G^c`` with ``w = gumbel_softmax_st(logits, tau)`` (the same values and gradients, and
    the same draws from ``generator``), computed per row's sampled cluster: ``logits`` [..., C], ``low`` [...,
    D'], ``G`` [C, D', D] -> [..., D]."""
    soft = gumbel_softmax(logits, tau, generator=generator).reshape(-1, logits.shape[-1])
    out = _StraightThroughMix.apply(soft, soft.detach().argmax(-1), low.reshape(-1, low.shape[-1]), G)
    return out.view(*low.shape[:-1], G.shape[2])


class FactorizedEmbedding(nn.Module):
    """Trainable factorized embedding ``E[v] = F[v] · G[c(v)]`` (UNKs §3.3, eq. 2 for one token): ``F`` [V,
    D'], ``G`` [C, D', D] and, for C > 1, the cluster logits ``Z`` [V, C]; the Gumbel temperature ``tau`` is a
    fixed buffer (the paper does not anneal or learn it).

    - training mode, C > 1: the cluster weights are a straight-through Gumbel-softmax sample of ``Z[ids]``
      (eq. 3), so gradients reach ``Z``; the output ``Σ_c i_c · F[v] G^c`` is computed per sampled cluster
      (:func:`straight_through_mix`);
    - eval mode (or C = 1): ``c(v) = argmax Z[v]``, no noise.

    ``generator`` (attribute) optionally fixes the Gumbel noise (:func:`fit_neural`); None draws from the
    global RNG. ``G`` (and every row) has the output-bias column if the source matrix had it (D = d + 1)."""

    def __init__(self, F: torch.Tensor, G: torch.Tensor, Z: torch.Tensor | None = None, *,
                 tau: float = 1.0) -> None:
        super().__init__()
        if G.dim() == 2:
            G = G[None]
        if F.dim() != 2 or G.dim() != 3 or G.shape[1] != F.shape[1]:
            raise ValueError(f"shapes do not fit: F {tuple(F.shape)}, G {tuple(G.shape)}")
        C = G.shape[0]
        if C > 1 and (Z is None or tuple(Z.shape) != (F.shape[0], C)):
            raise ValueError(f"C = {C} clusters need logits Z of shape {(F.shape[0], C)}")
        self.F = nn.Parameter(F.detach().clone())
        self.G = nn.Parameter(G.detach().to(F.dtype).clone().contiguous())
        self.Z = nn.Parameter(Z.detach().clone().to(F.dtype)) if C > 1 else None
        self.register_buffer("tau", torch.tensor(float(tau), dtype=torch.float32))
        self.generator: torch.Generator | None = None

    @property
    def num_embeddings(self) -> int:
        return self.F.shape[0]

    @property
    def embedding_dim(self) -> int:
        return self.G.shape[2]

    @property
    def clusters(self) -> int:
        return self.G.shape[0]

    def assignment(self) -> torch.Tensor:
        """Eval-mode cluster of every token: ``argmax Z[v]`` [V] int64 (zeros for C = 1)."""
        if self.Z is None:
            return torch.zeros(self.num_embeddings, dtype=torch.long, device=self.F.device)
        return self.Z.detach().argmax(1)

    def _hard(self, low: torch.Tensor, clusters: torch.Tensor) -> torch.Tensor:
        out = low.new_empty(*low.shape[:-1], self.embedding_dim)
        for c in range(self.clusters):
            mask = clusters == c
            out[mask] = low[mask] @ self.G[c]
        return out

    def _embed(self, low: torch.Tensor, logits: torch.Tensor | None, training: bool) -> torch.Tensor:
        """``low`` [..., D'] up-projected by the clusters of ``logits`` [..., C] (sampled in training)."""
        if self.clusters == 1:
            return low @ self.G[0]
        if not training:
            return self._hard(low, logits.argmax(-1))
        return straight_through_mix(logits, low, self.G, self.tau, generator=self.generator)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self._embed(self.F[input_ids], None if self.Z is None else self.Z[input_ids], self.training)

    @torch.no_grad()
    def flatten(self) -> torch.Tensor:
        """Dense embedding matrix [V, D] with the eval-mode assignment (``F[v] · G[argmax Z[v]]``)."""
        return self._hard(self.F, self.assignment()).detach()

    def state(self) -> dict[str, torch.Tensor]:
        """Named tensors for safetensors: ``mf_F``, ``mf_G``, ``mf_Z`` (only for C > 1), ``mf_tau`` [1]."""
        out = {f"mf_{name}": t.detach().cpu().contiguous()
               for name, t in (("F", self.F), ("G", self.G), ("Z", self.Z)) if t is not None}
        return out | {"mf_tau": self.tau.detach().cpu().reshape(1).clone()}

    @classmethod
    def from_tensors(cls, tensors: Mapping[str, torch.Tensor]) -> FactorizedEmbedding:
        """Rebuild from :meth:`state` (e.g. the ``mf_*`` tensors of an init artifact)."""
        tau = float(tensors["mf_tau"].reshape(-1)[0]) if "mf_tau" in tensors else 1.0
        return cls(tensors["mf_F"], tensors["mf_G"], tensors.get("mf_Z"), tau=tau)


class FactorizedVocabulary(nn.Module):
    """A masked LM's input embeddings drawn from a :class:`FactorizedEmbedding` for LAPT in factorized form
    (UNKs §3.3: "we simply learn new low-dimensional embeddings F' with the pretraining task, which are
    up-projected with G"): the trainable parameters are ``F'``, ``G`` (unless ``freeze_up_projection``: "G
    only needs to be pretrained once") and, for C > 1, ``Z``. Each forward computes the whole table ``[V, D]``
    once, in training mode with one Gumbel-softmax sample per token *type* (a token's occurrences share their
    cluster in a step); its first ``d`` columns are the input rows, and :class:`FactorizedDecoder`, the tied
    output projection, reads the same table. ``weight`` is the eval-mode table (detached), for code that reads
    ``get_input_embeddings().weight``. Padding rows get gradients like any other (packed LAPT blocks have no
    padding)."""

    def __init__(self, factors: FactorizedEmbedding, d: int, *, freeze_up_projection: bool = False) -> None:
        super().__init__()
        if factors.embedding_dim not in (d, d + 1):
            raise ValueError(f"the factors' rows have {factors.embedding_dim} columns; the model's "
                             f"embeddings {d} (or {d + 1} with the output-bias column)")
        self.factors, self.embedding_dim = factors, d
        if freeze_up_projection:
            G = factors.G.detach()
            del factors.G
            factors.register_buffer("G", G)
        self._table: torch.Tensor | None = None

    @property
    def num_embeddings(self) -> int:
        return self.factors.num_embeddings

    def table(self) -> torch.Tensor:
        return self.factors._embed(self.factors.F, self.factors.Z, self.training)  # one sample per token type

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        self._table = self.table()
        return nn.functional.embedding(input_ids, self._table[:, : self.embedding_dim])

    @property
    def weight(self) -> torch.Tensor:
        return self.factors.flatten()[:, : self.embedding_dim]


class FactorizedDecoder(nn.Module):
    """The output projection tied to a :class:`FactorizedVocabulary`: ``h · E^T + b`` with ``E`` the table of
    the same forward pass. ``b`` is the LM head's own output-bias parameter (one scalar per token, trained
    freely; it starts as the bias column of ``F'G`` when the factorization carried one)."""

    def __init__(self, vocabulary: FactorizedVocabulary, bias: nn.Parameter | None) -> None:
        super().__init__()
        self.__dict__["vocabulary"] = vocabulary  # a reference, not a second registration of its parameters
        self.bias = bias

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        v = self.vocabulary
        table = v._table if v._table is not None else v.table()
        return nn.functional.linear(hidden, table[:, : v.embedding_dim].to(hidden.dtype), self.bias)


def read_factors(path: str | None) -> FactorizedEmbedding:
    """The factors (``mf_*`` tensors) of an init artifact of ``kind: mf``; a clear error for any other."""
    tensors = read_tensors(path) if path else {}
    if "mf_F" not in tensors or "mf_G" not in tensors:
        raise ValueError("factorized LAPT needs the init artifact of a factorized method (kind: mf, tensors "
                         f"mf_F and mf_G); {path or 'no --embeddings'} has {sorted(tensors) or 'none'}")
    return FactorizedEmbedding.from_tensors(tensors)


def attach_factorized(model, factors: FactorizedEmbedding, *, freeze_up_projection: bool = False) -> None:
    """Replace a masked LM's word embeddings and tied output projection by ``factors`` (in place). The model's
    vocabulary must already be the factors' (``init.swap_embeddings`` with the same artifact), so its outputs
    in eval mode are unchanged. :func:`flat_state_dict` gives the plain model's weights (what LAPT saves)."""
    emb, out = model.get_input_embeddings(), model.get_output_embeddings()
    if out is None or not isinstance(emb, nn.Embedding):
        raise ValueError(f"factorized LAPT needs a masked LM with tied input/output embeddings; "
                         f"{type(model).__name__} has input {type(emb).__name__}, output "
                         f"{type(out).__name__}")
    if factors.num_embeddings != emb.num_embeddings:
        raise ValueError(f"the factors have {factors.num_embeddings} rows, the model's vocabulary "
                         f"{emb.num_embeddings}: attach after swapping in the same init artifact")
    vocabulary = FactorizedVocabulary(factors.to(emb.weight.device), emb.embedding_dim,
                                      freeze_up_projection=freeze_up_projection)
    model.set_input_embeddings(vocabulary)
    model.set_output_embeddings(FactorizedDecoder(vocabulary, out.bias))


@torch.no_grad()
def flat_state_dict(model, state: dict[str, torch.Tensor] | None = None) -> dict[str, torch.Tensor]:
    """``state`` (default: the model's state dict) as the plain model would have it: the factors' keys
    replaced by the eval-mode table as the word embeddings and tied decoder weight (the model unchanged)."""
    vocabulary, names = model.get_input_embeddings(), {m: n for n, m in model.named_modules()}
    emb, dec = names[vocabulary], names[model.get_output_embeddings()]
    state = {k: v for k, v in (model.state_dict() if state is None else state).items()
             if not k.startswith(f"{emb}.")}
    weight = vocabulary.weight.contiguous()
    return {**state, f"{emb}.weight": weight, f"{dec}.weight": weight}


@dataclass
class NeuralFitHistory:
    """Trace of :func:`fit_neural`: eval-mode relative error every ``check_every`` steps."""

    steps: list[int] = field(default_factory=list)
    error: list[float] = field(default_factory=list)  # ||X - flatten()||_F / ||X||_F
    seconds: list[float] = field(default_factory=list)
    converged: bool = False
    best_error: float = float("nan")  # the returned state's error


def fit_neural(X: torch.Tensor, F_init: torch.Tensor, G_init: torch.Tensor, clusters: int, *, seed: int,
               max_steps: int = 3000, tol: float = 1e-4, lr: float = 1e-3, tau: float = 1.0,
               z_std: float = 1.0, check_every: int = 50, patience: int = 5, progress: bool = False,
               ) -> tuple[FactorizedEmbedding, NeuralFitHistory]:
    """MF^C_NEURAL on the source matrix: learn F, G¹..G^C and the assignment logits Z jointly (§3.3),
    minimizing eq. 4, ``||X - Σ_c diag(i_c) F G^c||``, with Adam over full-batch steps; the indicator ``I`` is
    the straight-through Gumbel-softmax of ``Z`` (eq. 3), so the loss sees a sampled hard assignment and the
    gradient reaches Z through the softmax. Choices the paper leaves open:

    - init (warm start): ``F = F_init``, every ``G^c = G_init`` (the MF¹ Semi-NMF solution), ``Z ~ N(0,
      z_std²)``; the clusters separate because tokens sampled into different clusters send different gradients
      to their ``G^c``. ``G`` is not constrained to be non-negative (the paper "parameterize[s] G using a
      neural net");
    - loss: squared Frobenius error divided by ``||X||_F²`` (same minimizer as eq. 4); Adam (``lr``), fixed
      ``tau``;
    - stopping: every ``check_every`` steps the eval-mode (argmax) error is measured; stop after ``patience``
      checks in a row without a relative improvement of ``tol`` over the best error so far (the sampled
      assignments first make the error rise), or after ``max_steps``; the best state is returned (never worse
      than the MF¹ warm start).

    Deterministic for a fixed ``seed`` on a given device; runs on ``X.device`` in ``X.dtype`` (each step costs
    O(|V|·C·D'·D): the paper-scale matrix wants a GPU). Returns the fitted module (eval mode) and history."""
    if clusters < 2:
        raise ValueError("fit_neural needs clusters >= 2 (C = 1 is plain Semi-NMF)")
    start = time.perf_counter()
    device, dtype = X.device, X.dtype
    gen = torch.Generator().manual_seed(seed)
    Z = (z_std * torch.randn(X.shape[0], clusters, generator=gen, dtype=dtype)).to(device)
    G = G_init.to(device, dtype).expand(clusters, *G_init.shape[-2:])
    module = FactorizedEmbedding(F_init.to(device, dtype), G, Z, tau=tau).to(device)
    module.generator = torch.Generator(device=device).manual_seed(seed)
    opt = torch.optim.Adam(module.parameters(), lr=lr)
    ids = torch.arange(X.shape[0], device=device)
    norm2 = (X * X).sum()
    hist = NeuralFitHistory()

    def check(step: int) -> float:
        err = float(((module.flatten() - X) ** 2).sum().div(norm2).sqrt())  # flatten: no_grad, detached
        hist.steps.append(step)
        hist.error.append(err)
        hist.seconds.append(time.perf_counter() - start)
        return err

    best_err, best_state, stale = check(0), _state(module), 0
    bar = tqdm(range(1, max_steps + 1), desc=f"MF-NEURAL C={clusters}", disable=not progress, mininterval=5)
    for step in bar:
        module.train()
        opt.zero_grad(set_to_none=True)
        (((module(ids) - X) ** 2).sum() / norm2).backward()
        opt.step()
        if step % check_every == 0 or step == max_steps:
            module.eval()
            err = check(step)
            if progress:
                bar.set_postfix(error=f"{err:.5f}", best=f"{best_err:.5f}", refresh=False)
            stale = 0 if err < best_err * (1 - tol) else stale + 1  # reset by a real improvement only
            if err < best_err:
                best_err, best_state = err, _state(module)
            if stale >= patience:
                hist.converged = True
                break
    bar.close()
    with torch.no_grad():
        for name, value in best_state.items():
            getattr(module, name).copy_(value)
    hist.best_error = best_err
    module.eval()
    module.generator = None
    return module, hist


def _state(module: FactorizedEmbedding) -> dict[str, torch.Tensor]:
    return {name: getattr(module, name).detach().clone() for name in ("F", "G", "Z")}

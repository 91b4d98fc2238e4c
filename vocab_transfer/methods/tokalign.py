"""TokAlign (Li et al., ACL 2025, "TokAlign: Efficient Vocabulary Adaptation via Token Alignment"): each
target token gets the row of one source token, found by comparing two tokenizations of a corpus via pivots.

Both vocabularies' vectors come from the target's corpus tokenized by each tokenizer (the token-level fastText
stage, instead of the authors' GloVe). A token is represented by its cosines to ``pivots`` overlapping tokens
of its own space (the "relative representation"); each target token outside the overlap takes the source
token whose representation is most similar (:data:`RELATIVE_MODES`; the default centres them, since the
authors' raw dot product maps nearly every token onto a few hub tokens). Overlapping tokens keep their own
row; a token without a vector gets a random source row, seeded, as in the authors' code. A row is copied
whole: input embedding, an untied head's row and the output bias. Details: docs/methods.md, "TokAlign".
"""

from __future__ import annotations

import logging
import random
from typing import Annotated, Literal

from .. import lazy
from ..typed import Range
from .base import MAPPED, RANDOM, EmbeddingInit, TransferInputs, copied_start, specials
from .registry import Need, register

np = lazy.module("numpy")
torch = lazy.module("torch")

log = logging.getLogger(__name__)

#: How the relative representations are compared (``relative`` of ``kind: tokalign``): ``raw`` is the authors'
#: procedure (cosines to the pivots, dot product, no renormalization); ``centred`` subtracts each space's mean
#: representation, ``normalized`` scales each to unit length (the dot product becomes a cosine), and
#: ``centred_normalized`` (the default) does both (docs/methods.md, "TokAlign").
RELATIVE_MODES: tuple[str, ...] = ("centred_normalized", "centred", "normalized", "raw")


def relative(vectors: torch.Tensor, pivot_ids: torch.Tensor, rows: torch.Tensor | None = None
             ) -> torch.Tensor:
    """Each row's cosine similarity to each pivot row of the same space: ``[n, len(pivot_ids)]``
    (only ``rows``, in their order, when given)."""
    pivots = torch.nn.functional.normalize(vectors[pivot_ids].double(), dim=1)
    unit = torch.nn.functional.normalize((vectors if rows is None else vectors[rows]).double(), dim=1)
    return unit @ pivots.T


def adjust(rel: torch.Tensor, mean: torch.Tensor | None, mode: str) -> torch.Tensor:
    """``rel`` as ``mode`` compares it (:data:`RELATIVE_MODES`); ``mean``: its space's mean representation."""
    if mode not in RELATIVE_MODES:
        raise ValueError(f"unknown relative mode {mode!r}; known: {', '.join(RELATIVE_MODES)}")
    if mode.startswith("centred"):
        rel = rel - mean
    if mode.endswith("normalized"):
        rel = torch.nn.functional.normalize(rel, dim=1)
    return rel


def choose_pivots(overlap, target_has: torch.Tensor, source_has: torch.Tensor, n: int, seed: int
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` overlapping (target, source) pairs with a vector on both sides, special tokens left out, in a
    seeded random order of the overlap sorted by target id (as the authors shuffle their dictionary)."""
    plain = overlap[overlap["match"] != "special"]  # special tokens by role are no co-occurrence anchors
    pairs = sorted(zip(plain["target_id"].tolist(), plain["source_id"].tolist(), strict=True))
    random.Random(seed).shuffle(pairs)
    chosen = [(t, s) for t, s in pairs if target_has[t] and source_has[s]][:n]
    if not chosen:
        raise ValueError("tokalign: no overlapping token has a vector in both vocabularies, so there is "
                         "no pivot; the target corpus is too small for the fastText min_count, or the "
                         "vocabularies share no token")
    t, s = zip(*chosen, strict=True)
    return torch.tensor(t), torch.tensor(s)


def align(target_vectors: torch.Tensor, source_vectors: torch.Tensor, target_pivots: torch.Tensor,
          source_pivots: torch.Tensor, candidates: torch.Tensor, queries: torch.Tensor,
          batch_size: int = 4096, *, relative_mode: str = "centred_normalized",
          target_known: torch.Tensor | None = None) -> torch.Tensor:
    """The source token (one of ``candidates``) of each target token in ``queries``: the largest dot
    product of relative representations compared as ``relative_mode`` says (``RELATIVE_MODES``),
    computed in blocks of ``batch_size`` queries (no dense |V_t| x |V_s| matrix). Centring subtracts
    the mean representation of the ``candidates`` on the source side and of ``target_known``
    (default: ``queries``), the target tokens with a vector, on the target side."""
    rel_s = relative(source_vectors, source_pivots, candidates)  # [C, p]
    rel_s = adjust(rel_s, rel_s.mean(0) if len(rel_s) else None, relative_mode).T  # [p, C], a view
    mean_t = None
    if relative_mode.startswith("centred"):
        known = queries if target_known is None else target_known
        mean_t = torch.zeros(len(target_pivots), dtype=torch.float64)
        for i in range(0, len(known), batch_size):  # summed in blocks: no [|V_t|, p] copy
            mean_t += relative(target_vectors, target_pivots, known[i:i + batch_size]).sum(0)
        mean_t /= max(len(known), 1)
    out = []
    for i in range(0, len(queries), batch_size):
        rel_t = adjust(relative(target_vectors, target_pivots, queries[i:i + batch_size]), mean_t,
                       relative_mode)
        out.append(candidates[(rel_t @ rel_s).argmax(1)])
    return torch.cat(out) if out else torch.zeros(0, dtype=torch.long)


@register("tokalign", frozenset({Need.TOKEN_VECTORS, Need.SOURCE_TOKEN_VECTORS_TARGET}))
def init_tokalign(inputs: TransferInputs, *, seed: int, pivots: Annotated[int, Range(ge=1)] = 300,
                  batch_size: Annotated[int, Range(ge=1)] = 1024,
                  relative: Literal[RELATIVE_MODES] = "centred_normalized",  # type: ignore[valid-type]
                  ) -> EmbeddingInit:
    """Config adapter: ``kind: tokalign``. ``pivots``: the number of anchor pairs (the authors' default, 300);
    ``batch_size`` target tokens are compared at a time (a float64 block of ``batch_size`` x |V_s|: 1 GB for a
    128k source vocabulary); ``relative``: :data:`RELATIVE_MODES`."""
    if pivots < 1:
        raise ValueError(f"pivots must be at least 1, not {pivots}")
    source, n = inputs.source_matrix, inputs.target_vocab_size
    matrix, provenance, n_sources = copied_start(source, n, inputs.overlap)
    tv, sv = inputs.aux, inputs.source_aux
    t_piv, s_piv = choose_pivots(inputs.overlap, tv.has_vector,
                                 sv.has_vector[: source.shape[0]], pivots, seed)
    todo = torch.from_numpy(np.flatnonzero(provenance == RANDOM))
    queries = todo[tv.has_vector[todo]]
    candidates = torch.from_numpy(np.flatnonzero(sv.has_vector[: source.shape[0]].numpy()))
    nearest = np.full(n, -1, dtype=np.int64)
    if len(queries):
        known = torch.from_numpy(np.flatnonzero(tv.has_vector.numpy()))
        picks = align(tv.vectors, sv.vectors[: source.shape[0]], t_piv, s_piv, candidates, queries,
                      batch_size, relative_mode=relative, target_known=known)
        matrix[queries] = source[picks]
        q = queries.numpy()
        provenance[q], n_sources[q], nearest[q] = MAPPED, 1, picks.numpy()
        distinct = len(np.unique(picks.numpy()))
        log.info("tokalign (%s): %d target tokens mapped onto %d distinct source rows (%.1f%%), %d pivots",
                 relative, len(queries), distinct, 100 * distinct / len(queries), len(t_piv))
    rest = todo[~tv.has_vector[todo]]
    if len(rest):  # no vector: a random source row (not a special token's)
        pool = torch.from_numpy(np.setdiff1d(np.arange(source.shape[0]),
                                             specials(inputs.overlap)["source_id"].to_numpy()))
        g = torch.Generator().manual_seed(seed)
        matrix[rest] = source[pool[torch.randint(len(pool), (len(rest),), generator=g)]]
    return EmbeddingInit(matrix, provenance, n_sources, nearest=nearest)

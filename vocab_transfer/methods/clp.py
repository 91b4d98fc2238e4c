"""CLP-Transfer (Ostendorff & Rehm 2023, "Efficient Language Model Training through Cross-Lingual and
Progressive Transfer Learning"; FOCUS §5 discusses it as concurrent work).

A target token that the source vocabulary also has keeps its source row (the overlap, specials by role); every
other target token ``a`` gets ``Σ_o w_ao · e_o^s`` over the overlapping tokens ``o``, with

    w_ao = cos(h_a, h_o) / Σ_o' cos(h_a, h_o'),

``h`` a helper embedding of the target vocabulary. The weights are the reference code's (``clp.py:
apply_clp``: ``sims / sims.sum()``, then ``np.average``): every overlapping token contributes, with its raw
cosine, negative ones included; there is no sparsemax or top-k as in FOCUS. Tokens that get no combination are
drawn from N(mean, std) of the source matrix per dimension, as CLP initializes the whole matrix before it
copies and combines.

Deviation: CLP's helper space is the input embedding matrix of a small pretrained model of the target language
with the target tokenizer. Offline no such model exists for the pipeline's own target tokenizers, so the
helper space here is the target's token-level fastText (FOCUS's auxiliary space, App. B), and the anchors are
the overlapping tokens that have a fastText vector (as FOCUS's). Tokens below fastText's ``min_count`` have no
helper vector and are drawn from N(mean, std) (CLP's helper model has a row for every token). Rows whose
similarity sum is not positive (the weights would not be a normalized average) are drawn from N(mean, std) as
well; the reference code would divide by it anyway.

Overlap: ``overlap`` restricts the project's overlap table (:func:`~.overlap.restrict_overlap`). The default
``full`` has the fuzzy symbol matches, which langsfer's ``clp_transfer`` does not; ``identical`` keeps the
pairs with the identical token string, langsfer's overlap, and then the rows equal langsfer's bit for bit on
the same inputs (``tests/test_reference_parity.py``).
"""

from __future__ import annotations

from typing import Annotated

from .. import lazy
from ..typed import Range
from .base import COMBINED, RANDOM, EmbeddingInit, TransferInputs, copied_start, normal_like, overlap_ids
from .overlap import OVERLAP_KINDS, restrict_overlap
from .registry import Need, one_of, register

np = lazy.module("numpy")
torch = lazy.module("torch")
tqdm = lazy.module("tqdm")


def clp_weights(helper: torch.Tensor, anchor_helper: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """CLP's weights of each row of ``helper`` [B, h] over the anchors ``anchor_helper`` [O, h]: cosine
    similarities divided by their sum (float64). Returns ``(weights [B, O], ok [B])``, ``ok`` False where the
    sum is not positive (those rows' weights are zero)."""
    x = torch.nn.functional.normalize(helper.double(), dim=1)
    y = torch.nn.functional.normalize(anchor_helper.double(), dim=1)
    sims = x @ y.T
    total = sims.sum(1, keepdim=True)
    ok = total.squeeze(1) > 0
    w = torch.where(ok.unsqueeze(1),
                    sims / total.clamp(min=torch.finfo(torch.float64).tiny), torch.zeros_like(sims))
    return w, ok


def clp_init(source: torch.Tensor, target_vocab_size: int, overlap_target_ids: torch.Tensor,
             overlap_source_ids: torch.Tensor, helper: torch.Tensor,
             has_helper: torch.Tensor, todo: torch.Tensor, *, seed: int,
             batch_size: int = 1024, progress: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """CLP rows for the target ids ``todo`` (the tokens outside the overlap); the rest of the returned matrix
    is zero. Anchors: the overlapping tokens with a helper vector. A token of ``todo`` with a helper vector
    and a positive similarity sum is combined (:func:`clp_weights`); the others are drawn from N(mean, std) of
    ``source``, seeded. Returns ``(rows [V_t, d], combined [V_t] bool)``."""
    out = torch.zeros(target_vocab_size, source.shape[1], dtype=source.dtype)
    combined = torch.zeros(target_vocab_size, dtype=torch.bool)
    anchor = has_helper[overlap_target_ids]
    anchor_t, anchor_s = overlap_target_ids[anchor], overlap_source_ids[anchor]
    rows = todo[has_helper[todo]] if len(anchor_t) else todo[:0]
    e_anchor = source[anchor_s].double()
    for start in tqdm.tqdm(range(0, len(rows), batch_size), desc="CLP", disable=not progress, mininterval=5):
        batch = rows[start:start + batch_size]
        w, ok = clp_weights(helper[batch], helper[anchor_t])
        out[batch[ok]] = (w[ok] @ e_anchor).to(source.dtype)
        combined[batch[ok]] = True
    rand = todo[~combined[todo]]
    out[rand] = normal_like(source, len(rand), torch.Generator().manual_seed(seed))
    return out, combined


def clp_needs(p: dict) -> frozenset[Need]:
    """CLP reads the target's token-level fastText; ``overlap`` must be one of ``OVERLAP_KINDS``."""
    one_of(p, "overlap", OVERLAP_KINDS)
    return frozenset({Need.TOKEN_VECTORS})


@register("clp", clp_needs)
def init_clp(inputs: TransferInputs, *, seed: int, overlap: str = "full",
             batch_size: Annotated[int, Range(ge=1)] = 1024) -> EmbeddingInit:
    """Config adapter: ``kind: clp``. Overlapping tokens are copied; every other target token is the
    cosine-weighted average of the overlapping tokens' source rows, cosines taken in the target's token-level
    fastText space (CLP's helper space; see the module docstring for the deviation).

    ``overlap`` restricts the overlap table (:func:`~.overlap.restrict_overlap`): ``full`` (default) keeps the
    project's matches, fuzzy symbol matches included; ``identical`` keeps the pairs with the identical token
    string, langsfer's ``ExactMatchTokenOverlap`` (``langsfer.high_level.clp_transfer``)."""
    if inputs.aux is None:
        raise ValueError("CLP needs the target's token-level fastText vectors (the fastText stage)")
    n, source = inputs.target_vocab_size, inputs.source_matrix
    ov = restrict_overlap(inputs.overlap, overlap)
    matrix, provenance, n_sources = copied_start(source, n, ov)
    todo = torch.from_numpy(np.flatnonzero(provenance == RANDOM))
    ov_t, ov_s = overlap_ids(ov)
    rows, combined = clp_init(source, n, ov_t, ov_s, inputs.aux.vectors, inputs.aux.has_vector, todo,
                              seed=seed, batch_size=batch_size, progress=True)
    matrix[todo] = rows[todo]
    done = combined.numpy()
    provenance[done] = COMBINED
    n_sources[done] = int(inputs.aux.has_vector[ov_t].sum())  # every anchor has a (possibly negative) weight
    return EmbeddingInit(matrix, provenance, n_sources)

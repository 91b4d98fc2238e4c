"""CLP-Transfer (Ostendorff & Rehm 2023, "Efficient Language Model Training through Cross-Lingual and
Progressive Transfer Learning"; FOCUS §5 discusses it as concurrent work).

A target token that the source vocabulary also has keeps its source row; every other target token ``a`` gets
``Σ_o w_ao · e_o^s`` over the overlapping tokens ``o``, ``w_ao = cos(h_a, h_o) / Σ_o' cos(h_a, h_o')``, as the
reference code (``clp.py: apply_clp``) weights them: raw cosines, negative ones included, no sparsemax or
top-k. Deviation: the helper space ``h`` is the target's token-level fastText (FOCUS's auxiliary space, App.
B), not a small pretrained model of the target language; anchors are the overlapping tokens with a vector.
Tokens without a helper vector or with a similarity sum that is not positive are drawn from N(mean, std) of
the source matrix per dimension. With ``overlap: identical`` (langsfer's overlap) the rows equal langsfer's
bit for bit (``tests/test_reference_parity.py``). Details: docs/methods.md, "CLP-Transfer".
"""

from __future__ import annotations

from typing import Annotated

from .. import lazy
from ..typed import Range
from .base import COMBINED, RANDOM, EmbeddingInit, TransferInputs, anchored_start, batched, fill_random
from .overlap import Overlap, restrict_overlap
from .registry import Need, register

torch = lazy.module("torch")


def clp_weights(helper: torch.Tensor, anchor_helper: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """CLP's weights of each row of ``helper`` [B, h] over the anchors ``anchor_helper`` [O, h]: cosine
    similarities divided by their sum (float64). Returns ``(weights [B, O], ok [B])``, ``ok`` False where the
    sum is not positive (those rows' weights are zero)."""
    x, y = (torch.nn.functional.normalize(t.double(), dim=1) for t in (helper, anchor_helper))
    sims = x @ y.T
    total = sims.sum(1, keepdim=True)
    ok = total.squeeze(1) > 0
    return torch.where(ok.unsqueeze(1), sims / total.clamp(min=torch.finfo(torch.float64).tiny),
                       torch.zeros_like(sims)), ok


@register("clp", frozenset({Need.TOKEN_VECTORS}))
def init_clp(inputs: TransferInputs, *, seed: int, overlap: Overlap = "full",
             batch_size: Annotated[int, Range(ge=1)] = 1024) -> EmbeddingInit:
    """Config adapter: ``kind: clp`` (the module docstring; weights: :func:`clp_weights`). ``overlap``:
    :func:`~.overlap.restrict_overlap` (``identical``: langsfer's ``ExactMatchTokenOverlap``)."""
    if inputs.aux is None:
        raise ValueError("CLP needs the target's token-level fastText vectors (the fastText stage)")
    source, helper = inputs.source_matrix, inputs.aux.vectors
    matrix, provenance, n_sources, anchor_t, anchor_s, rows = anchored_start(
        inputs, restrict_overlap(inputs.overlap, overlap))
    e_anchor = source[anchor_s].double()
    for batch in batched(rows, batch_size, "CLP"):
        w, ok = clp_weights(helper[batch], helper[anchor_t])
        matrix[batch[ok]] = (w[ok] @ e_anchor).to(source.dtype)
        provenance[batch[ok].numpy()] = COMBINED
        n_sources[batch[ok].numpy()] = len(anchor_t)  # every anchor has a (possibly negative) weight
    fill_random(matrix, provenance == RANDOM, source, seed)
    return EmbeddingInit(matrix, provenance, n_sources)

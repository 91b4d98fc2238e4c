"""Random normal: every row from N(mean, std) of the source matrix per dimension (FOCUS fn. 9)."""

from __future__ import annotations

from .. import lazy
from .base import EmbeddingInit, TransferInputs, copy_rows, labels, normal_like, specials
from .registry import register

torch = lazy.module("torch")


@register("random_normal")
def init_random_normal(inputs: TransferInputs, *, seed: int, copy_special: bool = True) -> EmbeddingInit:
    """Config adapter: ``kind: random_normal``: the per-dimension normal that FOCUS (App. B) and WECHSEL
    (§3.2) use for tokens without an auxiliary vector, here for every token (the "initialization from a normal
    distribution" that FOCUS footnote 9 found slightly worse than random mapping). Special tokens are copied
    by role unless ``copy_special: false``."""
    matrix = normal_like(inputs.source_matrix, inputs.target_vocab_size, torch.Generator().manual_seed(seed))
    provenance, n_sources = labels(inputs.target_vocab_size)
    if copy_special:
        copy_rows(matrix, provenance, n_sources, inputs.source_matrix, specials(inputs.overlap))
    return EmbeddingInit(matrix, provenance, n_sources)

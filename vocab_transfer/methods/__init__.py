"""Embedding-initialization methods, one module per method, registered by config ``kind``.

==================  ===================================  ==========================================
config ``kind``     function                             paper
==================  ===================================  ==========================================
``random``          :func:`random_mapping.init_random`   FOCUS §3.1 "Random" (Zoph et al. 2016)
``focus``           :func:`focus.init_focus`             FOCUS §2, eqs. 1-6; ``overlap: symbolic``
                                                         gives Table 4's "Symbolic Overlap" row
==================  ===================================  ==========================================
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .base import EmbeddingInit, TransferInputs
from .focus import init_focus
from .random_mapping import init_random


@dataclass(frozen=True)
class Method:
    fn: Callable[..., EmbeddingInit]
    needs: frozenset[str] = frozenset()  # extra artifacts beyond source model + overlap: {"fasttext"}


METHODS: dict[str, Method] = {
    "random": Method(init_random),
    "focus": Method(init_focus, frozenset({"fasttext"})),
}


def run_method(kind: str, inputs: TransferInputs, *, seed: int, **params) -> EmbeddingInit:
    """Run the method registered as ``kind`` with its config parameters."""
    if kind not in METHODS:
        raise ValueError(f"unknown method kind {kind!r}; known: {sorted(METHODS)}")
    return METHODS[kind].fn(inputs, seed=seed, **params)


__all__ = ["METHODS", "EmbeddingInit", "Method", "TransferInputs", "run_method"]

"""The method registry: config ``kind`` -> function and what it reads (:class:`~vocab_transfer.workflow.needs.Need`).

A method module registers its function with :func:`register`; ``vocab_transfer.methods`` imports every module of
the package, so adding a method is one module (plus its config entry, test and doc line).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..workflow.needs import Need

Needs = frozenset[Need]


@dataclass(frozen=True)
class Method:
    kind: str
    fn: Callable  # (TransferInputs, *, seed, **params) -> EmbeddingInit
    needs: Needs | Callable[[dict], Needs] = frozenset()  # fixed, or a function of the (defaulted) params


METHODS: dict[str, Method] = {}


def register(kind: str, needs: Needs | Callable[[dict], Needs] = frozenset()) -> Callable:
    """Decorator: register ``fn`` as config ``kind`` with the artifacts it ``needs`` (a set of :class:`Need`, or a
    function of its parameters, defaults filled in, that returns one and raises ValueError on a bad choice)."""

    def decorate(fn: Callable) -> Callable:
        if kind in METHODS:
            raise ValueError(f"method kind {kind!r} registered twice ({METHODS[kind].fn.__module__}, {fn.__module__})")
        METHODS[kind] = Method(kind, fn, needs)
        return fn

    return decorate


def one_of(params: dict, key: str, allowed: tuple[str, ...]) -> None:
    """ValueError naming ``key`` unless ``params[key]`` is one of ``allowed``."""
    if params[key] not in allowed:
        raise ValueError(f"{key} must be one of {list(allowed)}, not {params[key]!r}")

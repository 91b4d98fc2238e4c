"""What each method declares, read without importing torch: its config ``kind``, its needs and its keyword parameters
(annotations, defaults). The config checks and the plan run at parse time, on every ``snakemake`` call, and need no
more than this; importing the method modules themselves (torch, transformers, pandas) would cost seconds there.

The declarations stay where they are, in each method module (``@register("focus", focus_needs)`` above
``methods/focus.py: init_focus``): this module reads the method modules with :func:`vocab_transfer.workflow.light.module`
(their top-level statements without the heavy imports), with a ``register`` that records what each one declares. A
method whose declaration cannot be read this way (its ``def`` skipped, an annotation or a needs function that uses a
name the light read left out) is taken from the real registry instead, which imports the method modules: the answer
is the same, only slower. ``tests/test_methods.py`` checks that every registered method reads the same both ways.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import pkgutil
import typing
from collections.abc import Callable
from pathlib import Path

from ..workflow import light as light_module
from .registry import Method, Needs, one_of

PACKAGE = __name__.rpartition(".")[0]  # vocab_transfer.methods


def method_modules() -> list[str]:
    """The modules of ``vocab_transfer.methods`` that register methods (every module but the helpers)."""
    from . import HELPERS

    return [m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)])
            if m.name not in HELPERS and m.name != "catalog"]


def load_all() -> dict[str, Method]:
    """The real registry: imports every method module (torch included) and returns ``METHODS``."""
    from .registry import METHODS

    for name in method_modules():
        importlib.import_module(f"{PACKAGE}.{name}")
    return METHODS


# --- the light read (vocab_transfer.workflow.light) -----------------------------------------------------------
class _Registry:
    """What the method modules register when read without their heavy imports."""

    def __init__(self):
        self.methods: dict[str, Method] = {}
        self.twice: set[str] = set()  # kinds registered twice: left to the real registry's error

    def register(self, kind: str, needs: Needs | Callable[[dict], Needs] = frozenset()) -> Callable:
        def decorate(fn: Callable) -> Callable:
            if kind in self.methods:
                self.twice.add(kind)
            self.methods[kind] = Method(kind, fn, needs)
            return fn

        return decorate


@functools.cache
def _read() -> _Registry:
    light = _Registry()
    registry = f"{PACKAGE}.registry"
    light_module.OVERRIDES[registry] = {"register": light.register, "one_of": one_of, "Method": Method,
                                        "Needs": Needs}
    try:
        for name in method_modules():
            light_module.module(f"{PACKAGE}.{name}")
    finally:
        del light_module.OVERRIDES[registry]
    for kind, method in list(light.methods.items()):
        try:
            typing.get_type_hints(method.fn, include_extras=True)
        except Exception:  # an annotation names what the light read left out
            del light.methods[kind]
    return light


# --- what the workflow asks -------------------------------------------------------------------------------------
def method(kind: str) -> Method:
    """The method registered as ``kind``: from the real registry where its module is imported already, else read
    without torch where possible, else from the real registry (KeyError for an unknown kind)."""
    from .registry import METHODS

    if kind in METHODS:
        return METHODS[kind]
    light = _read()
    if kind in light.methods and not light.twice:
        return light.methods[kind]
    return load_all()[kind]


def known(kind: str) -> bool:
    """Whether a method is registered as ``kind``."""
    try:
        method(kind)
    except KeyError:
        return False
    return True


def kinds() -> list[str]:
    """Every registered kind, sorted (from the real registry: what an error message lists)."""
    return sorted(load_all())


def method_params(kind: str, params: dict) -> dict:
    """``params`` completed with the defaults of the method function's keyword parameters."""
    sig = inspect.signature(method(kind).fn)
    defaults = {n: p.default for n, p in sig.parameters.items()
                if p.kind == p.KEYWORD_ONLY and n != "seed" and p.default is not p.empty}
    return {**defaults, **params}


def method_needs(kind: str, params: dict) -> Needs:
    """The artifacts method ``kind`` reads with these config parameters (ValueError for a bad choice)."""
    needs, p = method(kind).needs, method_params(kind, params)
    if not callable(needs):
        return needs
    try:
        return needs(p)
    except ValueError:
        raise
    except Exception:  # the light read left out a name the needs function uses: ask the real one
        real = load_all()[kind].needs
        return real(p) if callable(real) else real


def function(module: str, name: str) -> Callable:
    """Function ``name`` of ``vocab_transfer.methods.<module>`` without torch (:func:`.light.function`)."""
    _read()  # the method modules are read once, with the recording register
    return light_module.function(f"{PACKAGE}.{module}", name)

"""Heavy third-party modules bound at import time and imported at first use.

Snakemake parses the workflow on every call, ``-n`` included, and the planner imports the real method
registry, the corpus sources and the task checks: the method modules and the data modules they build on. Their
third-party dependencies cost seconds to import on a small machine (on 2 cores: torch 3.5 s, transformers 1.1
s, datasets 1.3 s, pandas 0.8 s, pyarrow 0.2 s, numpy 0.1 s), more than planning itself. So those modules bind
them with :func:`module` instead of ``import``::

    torch = lazy.module("torch")

``torch`` is then a stand-in whose first attribute read imports torch and puts the real module in its place in
the module that bound it, so ``torch.zeros(...)`` works as before and every later read is the real module's (a
test that monkeypatches ``datasets.load_dataset`` patches what the code calls). Nothing at a module's top
level may read such a module (a default argument, a base class, a decorator): that would import it while the
planner imports the module (``tests/test_layout.py`` checks that planning imports none of them).

Why not ``importlib.util.LazyLoader``: it puts the not-yet-loaded module into ``sys.modules`` for every
importer, and torch and transformers inspect their own modules while they load; this stand-in stays private to
the module that bound it, and an already imported module is returned as it is.
"""

from __future__ import annotations

import importlib
import sys
import types

__all__ = ["module"]


class _LazyModule(types.ModuleType):
    """Module ``__name__``, imported on the first attribute read; it then replaces this stand-in in ``_owner``
    (the namespace that bound it). A reference kept elsewhere forwards every read to the real module."""

    def __init__(self, name: str, owner: dict):
        super().__init__(name)
        self.__dict__["_owner"] = owner

    def __getattr__(self, attr: str):
        real = importlib.import_module(self.__name__)
        owner = self.__dict__["_owner"]
        for key, value in list(owner.items()):
            if value is self:
                owner[key] = real
        return getattr(real, attr)


def module(name: str) -> types.ModuleType:
    """Module ``name``: the module itself where it is imported already, else a stand-in that imports it on
    first use (call it at a module's top level: the stand-in replaces itself there)."""
    return sys.modules.get(name) or _LazyModule(name, sys._getframe(1).f_globals)

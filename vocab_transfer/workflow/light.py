"""Package modules read without their heavy imports, for the checks that run at parse time.

Snakemake parses the workflow on every call, ``-n`` included, and the config checks and the plan need only pure
parts of modules that import torch, transformers, pandas or ``datasets`` (which cost seconds to import on a small
machine): the methods' kinds, needs and parameters (:mod:`vocab_transfer.methods.catalog`), a task spec's check
(``data/tasks.py: check_spec``), a few constants. :func:`module` reads a module's source and runs its top-level
statements except the imports of third-party modules and of package modules outside its own folder (unless listed
in :data:`REAL`): functions are defined (their bodies run only when called), literal constants are set; a
statement that needs what was left out (a class built from pandas, a ``torch`` default) is skipped. Imports from
the same folder are read the same way.

What is read this way is checked against the real module by the tests, and every accessor here falls back to
the real module when the light one lacks a name (or a function's body uses a name that was left out): the answer
is the same, only slower.
"""

from __future__ import annotations
import __future__

import ast
import functools
import importlib
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

PACKAGE = "vocab_transfer"
ROOT = Path(__file__).resolve().parent.parent  # vocab_transfer/
#: Package modules that load without torch, pandas or datasets: a light read imports them for real.
REAL = ("vocab_transfer.typed", "vocab_transfer.workflow.needs", "vocab_transfer.workflow.paths",
        "vocab_transfer.workflow.model", "vocab_transfer.training.settings")

#: name -> a namespace standing in for that module in light reads (the method registry's ``register``).
OVERRIDES: dict[str, dict[str, Any]] = {}
_READ: dict[str, dict[str, Any]] = {}


def module(name: str) -> dict[str, Any]:
    """The namespace of package module ``name`` (``vocab_transfer.data.tasks``) read without its heavy imports."""
    if name in OVERRIDES:
        return OVERRIDES[name]
    if name not in _READ:
        mod = types.ModuleType(name)
        _READ[name] = ns = mod.__dict__
        path = ROOT.joinpath(*name.split(".")[1:]).with_suffix(".py")
        if path.exists():
            ns["__file__"] = str(path)
            # dataclasses look their module up by name while the read runs (the real one, where imported)
            sys.modules.setdefault(name, mod)
            try:
                _run(ast.parse(path.read_text(), filename=str(path)), str(path), name, ns)
            finally:
                if sys.modules.get(name) is mod:
                    del sys.modules[name]
    return _READ[name]


def _run(tree: ast.Module, filename: str, name: str, ns: dict) -> None:
    flags = 0
    for stmt in tree.body:
        if isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__":
            for alias in stmt.names:
                flags |= getattr(__future__, alias.name).compiler_flag
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            _import(stmt, name, ns)
        else:
            code = compile(ast.Module(body=[stmt], type_ignores=[]), filename, "exec", flags=flags, dont_inherit=True)
            try:
                exec(code, ns)
            except Exception:  # needs a name the light read left out
                pass


def _import(stmt: ast.Import | ast.ImportFrom, name: str, ns: dict) -> None:
    if isinstance(stmt, ast.Import):
        for alias in stmt.names:
            if _real(alias.name):
                mod = importlib.import_module(alias.name)
                if alias.asname:
                    ns[alias.asname] = mod
                else:
                    top = alias.name.partition(".")[0]
                    ns[top] = sys.modules[top]
        return
    folder = name.rpartition(".")[0]
    if stmt.level:
        parts = name.split(".")[: -stmt.level]
        full = ".".join([*parts, stmt.module] if stmt.module else parts)
    else:
        full = stmt.module or ""
    if full in OVERRIDES or (full.rpartition(".")[0] == folder and full not in REAL):
        source = module(full)
    elif _real(full):
        source = vars(importlib.import_module(full))
    else:
        return
    for alias in stmt.names:
        if alias.name in source:
            ns[alias.asname or alias.name] = source[alias.name]


def _real(name: str) -> bool:
    """A module a light read imports for real: the standard library and :data:`REAL`."""
    return name.partition(".")[0] in sys.stdlib_module_names or name in REAL


def value(name: str, attr: str) -> Any:
    """``attr`` of module ``name``, from the light read, else from the module itself."""
    ns = module(name)
    return ns[attr] if attr in ns else getattr(importlib.import_module(name), attr)


def function(name: str, attr: str) -> Callable:
    """Function ``attr`` of module ``name``, from the light read; it calls the real one when its body needs a name
    the light read left out (NameError)."""
    fn = module(name).get(attr)

    def real(*args, **kwargs):
        return getattr(importlib.import_module(name), attr)(*args, **kwargs)

    if not callable(fn):
        return real

    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except NameError:
            return real(*args, **kwargs)

    return call

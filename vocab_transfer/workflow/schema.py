"""The config's JSON schema, generated from the typed model (:mod:`vocab_transfer.workflow.model` and the
trainers' settings, :mod:`vocab_transfer.training.settings`) by pydantic's ``model_json_schema``, for editors
and readers (``schemas/config.schema.yaml``: completion, hover text, a red line under a misspelled key); the
pipeline checks a config with the model itself. ``python -m vocab_transfer.workflow.schema --write`` rewrites
it after a change of the model, and a test fails while it is stale.

:func:`fill_defaults` fills into the config as written the defaults of the fields a class's ``FILL`` names, so
that the params of the jobs that read those keys show them; any other default is the code's, and a key left
out stays out of the params."""

from __future__ import annotations

import copy
import re
import sys
import types
import typing
from pathlib import Path
from typing import Annotated, Union

from ..typed import Section
from .model import Config

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "schemas" / "config.schema.yaml"
HEADER = ("# Generated from vocab_transfer/workflow/model.py and vocab_transfer/training/settings.py by\n"
          "# `python -m vocab_transfer.workflow.schema --write`: edit the fields there, not this file.\n"
          "# For editors: the pipeline checks a config with the model itself.\n")


def _args(hint) -> tuple:
    """The types a hint stands for: a union's members, an ``Annotated`` type's own type, else the hint."""
    origin = typing.get_origin(hint)
    if origin is Annotated:
        return _args(typing.get_args(hint)[0])
    if origin in (Union, types.UnionType):
        return tuple(a for arg in typing.get_args(hint) for a in _args(arg))
    return (hint,)


def _section(hint) -> type[Section] | None:
    """The section class a hint holds (``X | None`` too), else None."""
    return next((a for a in _args(hint) if isinstance(a, type) and issubclass(a, Section)), None)


def fill_defaults(config: dict, cls: type[Section] = Config) -> dict:
    """``config`` with the defaults of the fields that a class's ``FILL`` names filled in, in place, through
    every section, mapping of sections and trainer's settings it holds (a section filled in as ``{}`` gets its
    own defaults). A value of the wrong type is left as it is, for the model to name."""
    for name, info in cls.model_fields.items():
        if name not in config and (cls.FILL is True or name in (cls.FILL or ())) and not info.is_required():
            value = info.get_default(call_default_factory=True)
            config[name] = {} if isinstance(value, Section) or (value is None and _section(info.annotation)) \
                else copy.deepcopy(value)
        if isinstance(config.get(name), (dict, list)):
            _fill_value(info.annotation, config[name])
    return config


def _fill_value(hint, value) -> None:
    members = _args(hint)
    sections = [a for a in members if isinstance(a, type) and issubclass(a, Section)]
    if len(sections) > 1 and isinstance(value, dict):  # a union by kind: the class of the value's kind
        kinds = {a: a.model_fields["kind"] for a in sections}
        members = [a for a, f in kinds.items() if value.get("kind") in typing.get_args(f.annotation)
                   or "kind" not in value and not f.is_required()]  # no kind: the class of the default one
    for arg in members:
        origin, args = typing.get_origin(arg), typing.get_args(arg)
        if isinstance(arg, type) and issubclass(arg, Section) and isinstance(value, dict):
            fill_defaults(value, arg)
        elif origin in (dict, list) and isinstance(value, origin):  # the items' type: the last argument
            for v in value.values() if origin is dict else value:
                if isinstance(v, (dict, list)):
                    _fill_value(args[-1], v)


BOUNDS = {"ge": "minimum", "gt": "exclusiveMinimum", "le": "maximum", "lt": "exclusiveMaximum"}


def _description(text: str) -> str:
    """A docstring's first paragraph on one line, without reStructuredText's roles and double backticks."""
    text = re.sub(r":(class|func|mod|meth|data):", "", text.split("\n\n")[0]).replace("``", "`")
    return re.sub(r"\s+", " ", text).strip()


def _tidy(node, schema: bool = True):
    """``node`` without pydantic's generated ``title`` of each schema (a property named ``title`` stays), with
    JSON schema's words for the bounds of a number that keeps an int as written
    (:data:`vocab_transfer.typed.Number`) and descriptions on one line."""
    if isinstance(node, list):
        return [_tidy(v) for v in node]
    if not isinstance(node, dict):
        return node
    if not schema:  # the keys of `properties` or `$defs` are names, each value a schema
        return {k: _tidy(v) for k, v in node.items()}
    names = ("properties", "$defs")
    return {BOUNDS.get(k, k): _description(v) if k == "description" else _tidy(v, k not in names)
            for k, v in node.items() if k != "title"}


def json_schema() -> dict:
    """The config's JSON schema (draft 2020-12)."""
    top = _tidy(Config.model_json_schema())
    defs = top.pop("$defs")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **top, "$defs": defs}


def schema_text() -> str:
    """The schema as the YAML of ``schemas/config.schema.yaml``."""
    import yaml

    return HEADER + yaml.safe_dump(json_schema(), sort_keys=False, allow_unicode=True, width=110)


def main(argv: list[str]) -> int:
    if argv == ["--write"]:
        SCHEMA_FILE.write_text(schema_text())
        print(f"wrote {SCHEMA_FILE}")
        return 0
    if argv == ["--check"]:
        stale = not SCHEMA_FILE.exists() or SCHEMA_FILE.read_text() != schema_text()
        print(f"{SCHEMA_FILE}: "
              f"{'stale: run python -m vocab_transfer.workflow.schema --write' if stale else 'current'}")
        return int(stale)
    sys.stdout.write(schema_text())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The config's JSON schema, generated from the typed model (:mod:`vocab_transfer.workflow.model`) and the trainers'
settings (:mod:`vocab_transfer.training.settings`): every key, type, enum, bound, default and description comes from
a field there, so the schema cannot drift from the code that reads the config.

Snakemake checks a config against it before any job runs (:func:`vocab_transfer.workflow.config.check_config`;
:func:`fill_defaults` then fills in the defaults the model marks), and ``schemas/config.schema.yaml`` holds
a copy for editors and readers: ``python -m vocab_transfer.workflow.schema --write`` rewrites it after a change of
the model, and a test fails while it is stale.

Field metadata read here (besides the bounds that :func:`vocab_transfer.typed.check_value` reads): ``doc`` (the
description), ``name`` (a string that is a config name: ``$defs/name``), ``settings`` (a mapping of a trainer's
settings: the dataclass whose fields are its keys), ``required_keys`` (of a free mapping), and ``fill`` (or a
class's ``FILL``): the default is filled into the config as written (:func:`fill_defaults`), so the params of the
jobs that read the key show it; any other default is the code's, and a key left out stays out of the params.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import re
import sys
import types
import typing
from pathlib import Path
from typing import Any, Literal, Union

from ..training.settings import AdapterConfig, FinetuneConfig, LaptConfig
from ..typed import type_hints
from .model import NAME, NAME_RULE, Config, Section

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "schemas" / "config.schema.yaml"
JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}
BOUNDS = {"ge": "minimum", "gt": "exclusiveMinimum", "le": "maximum", "lt": "exclusiveMaximum"}
#: The trainers' settings that config sections hold (``settings`` metadata), each once under ``$defs``.
SETTINGS_CLASSES = (LaptConfig, AdapterConfig, FinetuneConfig)
HEADER = ("# Generated from vocab_transfer/workflow/model.py and vocab_transfer/training/settings.py by\n"
          "# `python -m vocab_transfer.workflow.schema --write`: edit the fields there, not this file.\n")


def _optional(hint) -> tuple[Any, bool]:
    """(``hint`` without ``None``, whether it allowed ``None``)."""
    if typing.get_origin(hint) in (Union, types.UnionType) and type(None) in typing.get_args(hint):
        rest = tuple(a for a in typing.get_args(hint) if a is not type(None))
        return (rest[0] if len(rest) == 1 else Union[rest]), True  # noqa: UP007
    return hint, False


def _doc(cls) -> str:
    """A class docstring's first paragraph, on one line, without reStructuredText's double backticks."""
    text = (cls.__doc__ or "").split("\n\n")[0]
    return re.sub(r"\s+", " ", text.replace("``", "`").replace(":class:", "").replace(":func:", "")).strip()


def type_schema(hint, meta: typing.Mapping = types.MappingProxyType({})) -> dict:
    """The JSON schema of values of the type ``hint`` with the bounds in ``meta``."""
    hint, optional = _optional(hint)
    node = _type_schema(hint, meta)
    if optional and isinstance(node.get("type"), str):  # a union or a name ($ref) stays as it is
        node["type"] = [node["type"], "null"]
        if "enum" in node:
            node["enum"] = [*node["enum"], None]
    return node


def _type_schema(hint, meta) -> dict:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Annotated:
        extra = {k: v for a in args[1:] if hasattr(a, "meta") for k, v in a.meta().items()}
        return _type_schema(args[0], {**meta, **extra})
    if hint is Any:
        return {}
    if origin in (Union, types.UnionType):
        return {"oneOf": [type_schema(a, meta if a is str else {}) for a in args]}
    if isinstance(hint, type) and issubclass(hint, Section):
        return dict(section_schema(hint))
    if origin is Literal:
        node = {"type": JSON_TYPES[type(args[0])], "enum": list(args)}
        return node
    node: dict[str, Any] = {}
    if origin is list or hint is list:
        node["type"] = "array"
        if args:
            node["items"] = type_schema(args[0], meta.get("items", {}))
        if "min_items" in meta:
            node["minItems"] = meta["min_items"]
        if "max_items" in meta:
            node["maxItems"] = meta["max_items"]
        if meta.get("unique"):
            node["uniqueItems"] = True
        return node
    if origin is dict or hint is dict:
        node["type"] = "object"
        if meta.get("key_pattern") == NAME:
            node["propertyNames"] = {"$ref": "#/$defs/name"}
        if "min_items" in meta:
            node["minProperties"] = meta["min_items"]
        if "settings" in meta:
            node["$ref"] = f"#/$defs/{meta['settings'].__name__}"
        if "required_keys" in meta:
            node["required"] = list(meta["required_keys"])
        if args and args[1] is not Any:
            node["additionalProperties"] = type_schema(args[1], meta.get("values", {}))
        return node
    if hint is str and meta.get("name"):
        return {"$ref": "#/$defs/name"}
    node["type"] = JSON_TYPES[hint]
    for key, word in BOUNDS.items():
        if key in meta:
            node[word] = meta[key]
    if "min_len" in meta:
        node["minLength"] = meta["min_len"]
    return node


def _default(f: dataclasses.Field):
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default


def fills(cls, f: dataclasses.Field) -> bool:
    """Whether ``f``'s default is filled into the config as written (the class's ``FILL`` or the field's ``fill``):
    then it is part of the params of the jobs that read the key."""
    return bool(getattr(cls, "FILL", False) or f.metadata.get("fill")) and (
        f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING)


def field_schema(cls, f: dataclasses.Field, hint) -> dict:
    """A field's property: its type's schema, its description and its default (a section whose keys all have
    defaults: ``{}``)."""
    node = type_schema(hint, f.metadata)
    if "$ref" in node and f.metadata.get("doc"):
        node = {"$ref": node["$ref"]}
    if f.metadata.get("doc"):  # first, so that a reader sees it before a nested section's keys
        node = {"description": f.metadata["doc"], **{k: v for k, v in node.items() if k != "description"}}
    value = _default(f)
    section = _optional(hint)[0]
    if isinstance(section, type) and issubclass(section, Section) and value is None and \
            f.default is not dataclasses.MISSING and not section_schema(section).get("required"):
        node["default"] = {}
    elif value is not dataclasses.MISSING and (value is not None or fills(cls, f)):
        node["default"] = value
    return node


@functools.cache
def section_schema(cls: type[Section]) -> dict:
    """A section's object schema: its fields as properties, the fields without a default required, unknown keys
    refused unless the section keeps them (``EXTRA``: a method's parameters, a LAPT run's settings)."""
    hints = type_hints(cls, True)
    fields = [f for f in dataclasses.fields(cls) if f.name != cls.EXTRA]
    node: dict[str, Any] = {"type": "object"}
    if _doc(cls):
        node["description"] = _doc(cls)
    if cls.EXTRA is None:
        node["additionalProperties"] = False
    required = [f.name for f in fields if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    if required:
        node["required"] = required
    node["properties"] = {f.name: field_schema(cls, f, hints[f.name]) for f in fields}
    if cls.EXTRA is not None:
        extra = next(f for f in dataclasses.fields(cls) if f.name == cls.EXTRA)
        if "settings" in extra.metadata:  # the open keys are a trainer's settings: documented, checked there
            node["$ref"] = f"#/$defs/{extra.metadata['settings'].__name__}"
    return node


@functools.cache
def settings_schema(cls) -> dict:
    """The keys a trainer's settings dataclass takes (:mod:`vocab_transfer.training.settings`), each with its type,
    default and description. Open, except an adapter's: a LAPT run adds its own keys to LaptConfig's, and the
    dataclasses name an unknown key with the list of known ones."""
    hints = type_hints(cls, True)
    props = {}
    for f in dataclasses.fields(cls):
        props[f.name] = field_schema(cls, f, hints[f.name])
    node = {"type": "object", "description": _doc(cls), "properties": props}
    if cls is AdapterConfig:  # a key of its own (no run overrides it key by key): closed
        node["additionalProperties"] = False
    return node


def fill_defaults(config: dict, cls=Config, here: bool = True) -> dict:
    """``config`` (checked) with the defaults of the fields that :func:`fills` filled in, in place, through every
    section, mapping of sections and trainer's settings it holds (a section filled in as ``{}`` gets its own
    defaults). ``here=False`` fills only inside the keys given: a LAPT run's own settings keys replace
    ``lapt.training``'s, so a run gets no defaults of them (an ``adapter`` it gives is filled in)."""
    hints = type_hints(cls, True)
    for f in dataclasses.fields(cls):
        if f.name == getattr(cls, "EXTRA", None):
            if "settings" in f.metadata:
                fill_defaults(config, f.metadata["settings"], here=False)
            continue
        if here and f.name not in config and fills(cls, f):
            value, section = _default(f), _optional(hints[f.name])[0]
            is_section = isinstance(section, type) and issubclass(section, Section)
            config[f.name] = {} if value is None and is_section else copy.deepcopy(value)
        if isinstance(config.get(f.name), (dict, list)):
            _fill_value(hints[f.name], f.metadata, config[f.name])
    return config


def _fill_value(hint, meta, value) -> None:
    hint = _optional(hint)[0]
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if isinstance(hint, type) and issubclass(hint, Section) and isinstance(value, dict):
        fill_defaults(value, hint)
    elif "settings" in meta and isinstance(value, dict):
        fill_defaults(value, meta["settings"])
    elif origin is dict and isinstance(value, dict):
        for v in value.values():
            if isinstance(v, (dict, list)):
                _fill_value(args[1], meta.get("values", {}), v)
    elif origin is list and isinstance(value, list):
        for v in value:
            if isinstance(v, (dict, list)):
                _fill_value(args[0], meta.get("items", {}), v)
    elif origin in (Union, types.UnionType) and isinstance(value, dict):
        for a in args:
            if isinstance(a, type) and issubclass(a, Section):
                fill_defaults(value, a)


def json_schema() -> dict:
    """The config's JSON schema (draft 2020-12)."""
    top = section_schema(Config)
    defs = {"name": {"type": "string", "pattern": NAME, "description": NAME_RULE}}
    for cls in SETTINGS_CLASSES:
        defs[cls.__name__] = settings_schema(cls)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "description": top["description"], **{k: v for k, v in top.items() if k != "description"},
            "$defs": defs}


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
        print(f"{SCHEMA_FILE}: {'stale: run python -m vocab_transfer.workflow.schema --write' if stale else 'current'}")
        return int(stale)
    sys.stdout.write(schema_text())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Values from YAML/JSON checked against Python type hints: the one type check of the config model
(:mod:`vocab_transfer.workflow.model`), of the methods' parameters and of the trainers' settings
(:mod:`vocab_transfer.training.settings`).

:func:`check_value` knows ``bool``, ``int`` (not a bool), ``float`` (an int too), ``str``, ``list[...]``,
``dict[str, ...]``, bare ``list``/``dict``, ``X | None``, unions, ``Literal``, ``Any``, ``Annotated[..., Range(...)]``
and classes with a ``parse(value, where)`` classmethod (the config model's sections), plus bounds and size limits
given as ``meta``. No dependencies: it runs while Snakemake plans and in the trainers.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import types
import typing
from typing import Annotated, Any, Literal, Union

NO_META = types.MappingProxyType({})


def default(value=dataclasses.MISSING, **meta):
    """A dataclass field with the default ``value`` (a list or dict is copied for each instance) and its metadata:
    the bounds :func:`check_value` checks, ``doc`` and the schema's keys (:mod:`vocab_transfer.workflow.schema`)."""
    if isinstance(value, (list, dict)):
        return dataclasses.field(default_factory=lambda: type(value)(value), metadata=meta)
    return dataclasses.field(default=value, metadata=meta)


def required(**meta):
    """A dataclass field without a default (a config key that must be given), with its metadata."""
    return dataclasses.field(metadata=meta)


class ModelError(ValueError):
    """A config value that does not fit its type: names the key path and what was expected."""


@dataclasses.dataclass(frozen=True)
class Range:
    """Bounds of a number, for ``Annotated[int, Range(ge=1)]`` in a method's signature (a method parameter is
    checked at parse time against its annotation: :func:`vocab_transfer.workflow.model.check_parameters`)."""

    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None

    def meta(self) -> dict:
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}


#: The bounds of every seed in a config (the top-level ``seed``, ``eval.seed``, fine-tuning ``seeds``, a trainer's
#: ``seed``): numpy's legacy generator and most C libraries take 32-bit unsigned seeds.
SEED_MAX = 2**32 - 1
Seed = Annotated[int, Range(ge=0, le=SEED_MAX)]
#: The largest vocabulary a tokenizer trainer is asked for: SentencePiece and Hugging Face's trainers keep token ids
#: in 32-bit integers and panic far below 2**31; the largest published vocabularies hold about 256k tokens.
VOCAB_SIZE_MAX = 2**24
VocabSize = Annotated[int, Range(ge=100, le=VOCAB_SIZE_MAX)]
#: Integers a config passes on are 64-bit in every library that reads them (numpy, torch, pyarrow, C++).
INT64 = (-(2**63), 2**63 - 1)

#: How YAML 1.1 (PyYAML, Snakemake's config loader) reads these words unquoted; the first is the one a config most
#: likely meant (Norwegian ``no``).
YAML_BOOLEAN_WORDS = {False: ("no", "off", "false"), True: ("yes", "on", "true")}
LANGUAGE_KEYS = ("targets", "corpora", "word_vectors", "dictionaries", "languages")  # and every key with "lang"


def yaml_boolean_hint(where: str, value: bool, key: bool = False) -> str:
    """``targets[0]: got the YAML boolean false; write the language code in quotes ("no")``: a boolean at ``where``
    (``key``: a mapping key under ``where``) where a string belongs."""
    name = re.sub(r"\[\d+\]$", "", where).rsplit(".", 1)[-1]
    what = "the language code" if "lang" in name or name in LANGUAGE_KEYS else "the key" if key else "it"
    words, text = YAML_BOOLEAN_WORDS[value], str(value).lower()
    got = f"the key {text} is a YAML boolean" if key else f"got the YAML boolean {text}"
    return f'{where}: {got}; write {what} in quotes ("{words[0]}"): YAML reads {", ".join(words)} unquoted as {text}'


@functools.cache
def type_hints(obj, extras: bool = False) -> dict:
    """``typing.get_type_hints`` of a class or function, resolved once: a composite config checks the same sections
    thousands of times while Snakemake parses it, in every job."""
    return typing.get_type_hints(obj, include_extras=extras)


def check_value(hint, value, where: str, meta: dict | types.MappingProxyType = NO_META):
    """``value`` checked against the type ``hint`` and the bounds in ``meta`` (nested sections parsed), or
    :class:`ModelError` naming ``where``."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Annotated:
        extra = {k: v for a in args[1:] if isinstance(a, Range) for k, v in a.meta().items()}
        return check_value(args[0], value, where, {**meta, **extra})
    if origin in (Union, types.UnionType):
        if value is None:
            if type(None) in args:
                return None
            raise ModelError(f"{where}: must not be null")
        errors = []
        for arg in (a for a in args if a is not type(None)):
            try:
                return check_value(arg, value, where, meta)
            except ModelError as e:
                errors.append(str(e))
        raise ModelError(errors[0] if len(errors) == 1 else f"{where}: {value!r} fits none of: " + "; ".join(errors))
    if value is None and hint is not Any:
        raise ModelError(f"{where}: must not be null")
    if hint is Any:
        return value
    if isinstance(hint, type) and hasattr(hint, "parse"):  # a section of the config model
        return hint.parse(value, where)
    if origin is Literal:
        if value not in args or isinstance(value, bool) != isinstance(args[0], bool):
            raise ModelError(f"{where}: {value!r} is not one of {list(args)}")
        return value
    if origin is list:
        if not isinstance(value, list):
            raise ModelError(f"{where}: expected a list, got {value!r}")
        if len(value) < meta.get("min_items", 0):
            raise ModelError(f"{where}: needs at least {meta['min_items']} item(s)")
        if len(value) > meta.get("max_items", len(value)):
            raise ModelError(f"{where}: takes at most {meta['max_items']} item(s), got {len(value)}")
        if meta.get("unique") and len({repr(v) for v in value}) != len(value):
            raise ModelError(f"{where}: items must be unique, got {value!r}")
        return [check_value(args[0], v, f"{where}[{i}]", meta.get("items", {})) for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ModelError(f"{where}: expected a mapping, got {value!r}")
        pattern = meta.get("key_pattern")
        bad = [k for k in value if not isinstance(k, str) or (pattern and not re.match(pattern, k))]
        if bad:
            raise ModelError(f"{where}: invalid name(s) {bad}" + (f" (allowed: {pattern})" if pattern else ""))
        if len(value) < meta.get("min_items", 0):
            raise ModelError(f"{where}: needs at least {meta['min_items']} entry")
        return {k: check_value(args[1], v, f"{where}.{k}", meta.get("values", {})) for k, v in value.items()}
    if hint in (list, dict):
        if not isinstance(value, hint):
            raise ModelError(f"{where}: expected a {'list' if hint is list else 'mapping'}, got {value!r}")
        return value
    if hint is bool:
        ok = isinstance(value, bool)
    elif hint is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        if ok and not INT64[0] <= value <= INT64[1]:
            raise ModelError(f"{where}: {value!r} does not fit in a 64-bit integer")
    elif hint is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if ok and not math.isfinite(value):  # YAML's .nan, .inf: every bound test is False or meaningless for them
            raise ModelError(f"{where}: {value!r} is not a finite number")
    elif hint is str:
        if isinstance(value, bool):
            raise ModelError(yaml_boolean_hint(where, value))
        ok = isinstance(value, str) and len(value) >= meta.get("min_len", 0)
    else:
        raise TypeError(f"{where}: unsupported type {hint!r} (vocab_transfer.typed.check_value)")
    if not ok:
        raise ModelError(f"{where}: expected {getattr(hint, '__name__', hint)}, got {value!r}")
    for key, test, text in (("ge", lambda b: value >= b, ">="), ("gt", lambda b: value > b, ">"),
                            ("le", lambda b: value <= b, "<="), ("lt", lambda b: value < b, "<")):
        if key in meta and not test(meta[key]):
            raise ModelError(f"{where}: {value!r} must be {text} {meta[key]}")
    return value


class YamlError(ValueError):
    """A YAML text that :func:`load_yaml` refuses: names where it came from, the line, and what is wrong."""


@functools.lru_cache(maxsize=1)
def _strict_loader():
    """A SafeLoader (libyaml's parser when installed) that refuses a key given twice in one mapping and any
    tag it does not know (``!!python/...``): YAML 1.1 keeps the last of two equal keys, and PyYAML's
    SafeLoader fails on an unknown tag with an error that hides the line."""
    import yaml

    class StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
        def construct_mapping(self, node, deep=False):
            if isinstance(node, yaml.MappingNode):
                seen = {}
                for key_node, _ in node.value:
                    if key_node.tag == "tag:yaml.org,2002:merge":
                        continue  # `<<: *anchor`: a merge, whose keys the mapping may override
                    key = self.construct_object(key_node, deep=True)
                    line = key_node.start_mark.line + 1
                    try:
                        first = seen.get(key)
                        seen.setdefault(key, line)
                    except TypeError:
                        continue  # an unhashable key: SafeConstructor names it
                    if first is not None:
                        raise YamlError(f"line {line}: key {key!r} given twice in one mapping (first at line "
                                        f"{first}); YAML would keep only the last")
            return super().construct_mapping(node, deep=deep)

        def construct_undefined(self, node):
            tag = node.tag.replace("tag:yaml.org,2002:", "!!")
            raise YamlError(f"line {node.start_mark.line + 1}: tag {tag} is not allowed (plain YAML values "
                            "only: strings, numbers, booleans, null, lists, mappings; nothing is constructed "
                            "from a tag)")

    StrictLoader.add_constructor(None, StrictLoader.construct_undefined)
    return StrictLoader


def load_yaml(text: str, where: str):
    """The value of the YAML ``text`` (a config file's, a ``--param``'s) as :func:`yaml.safe_load` reads it,
    but :class:`YamlError` naming ``where``, the line and the key or tag for a key given twice in one mapping
    (at any depth), for a tag that plain YAML does not have (``!!python/object/apply:...``: nothing is
    constructed), and for text that is no YAML."""
    import yaml

    try:
        return yaml.load(text, Loader=_strict_loader())  # noqa: S506 - a SafeLoader subclass
    except YamlError as e:
        raise YamlError(f"{where}: {e}") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f"line {mark.line + 1}: " if mark is not None else ""
        raise YamlError(f"{where}: {line}not valid YAML ({getattr(e, 'problem', None) or e})") from None

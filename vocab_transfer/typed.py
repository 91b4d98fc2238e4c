"""The one validation engine of the config model (:mod:`vocab_transfer.workflow.model`), the trainers'
settings (:mod:`vocab_transfer.training.settings`) and the methods' parameters: pydantic models with strict
types (no string read as a number, a bool is no int), unknown keys refused, bounds on the fields
(``Field(ge=1, description=...)``), and one message style naming the key path: ``config.lapt.runs.focus.steps:
must be >= 1, got 0``.

:class:`Section` is the base of every section: :meth:`Section.parse` builds one from a dict (a mapping of a
YAML file, a job's JSON params) or raises :class:`ModelError`; :meth:`Section.written` tells what the config
wrote (pydantic's ``model_fields_set``); :meth:`Section.check` holds the rules between the keys of one
section. :func:`check_value` checks one value against a type hint (a method's ``Annotated[int, Range(ge=1)]``
parameter). Torch-free: it runs while Snakemake plans and in the trainers."""

from __future__ import annotations

import functools
import re
import typing
from typing import Annotated, Any, ClassVar, TypeVar

from annotated_types import Interval
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    WrapValidator,
    model_validator,
)
from pydantic_core import PydanticCustomError


class ModelError(ValueError):
    """A config value that does not fit its type: names the key path and what was expected."""


class ConfigError(ValueError):
    """A config problem between its sections (vocab_transfer.workflow.config, .views), reported before any
    job runs."""


def refuse_any(bad, message: str) -> None:
    """:class:`ConfigError` with ``message`` where ``bad`` (what a check found wrong) is not empty."""
    if bad:
        raise ConfigError(message)


#: Bounds of a number, for ``Annotated[int, Range(ge=1)]`` in a method's signature (a method parameter is
#: checked at parse time against its annotation: :func:`vocab_transfer.workflow.model.check_parameters`).
Range = Interval

#: The bounds of every seed in a config (the top-level ``seed``, ``eval.seed``, fine-tuning ``seeds``, a
#: trainer's ``seed``): numpy's legacy generator and most C libraries take 32-bit unsigned seeds.
SEED_MAX = 2**32 - 1
Seed = Annotated[int, Field(ge=0, le=SEED_MAX)]
#: The largest vocabulary a tokenizer trainer is asked for: SentencePiece and Hugging Face's trainers keep
#: token ids in 32-bit integers and panic far below 2**31; the largest published vocabularies hold about 256k
#: tokens.
VOCAB_SIZE_MAX = 2**24
VocabSize = Annotated[int, Field(ge=100, le=VOCAB_SIZE_MAX)]
#: Integers a config passes on are 64-bit in every library that reads them (numpy, torch, pyarrow, C++).
INT64 = (-(2**63), 2**63 - 1)


def _keep_int(value, handler):
    """A float field keeps an integer as written (``warmup_ratio: 0`` stays 0 in the params a job gets)."""
    checked = handler(value)
    return value if type(value) is int else checked


#: A finite number: an int or a float, never a bool or a string; an int stays an int.
Number = Annotated[float, WrapValidator(_keep_int)]

T = TypeVar("T")


def _unique(items: list) -> list:
    if len({repr(v) for v in items}) != len(items):
        raise PydanticCustomError("unique", "items must be unique, got {items}", {"items": repr(items)})
    return items


#: A list whose items are distinct.
UniqueList = Annotated[list[T], AfterValidator(_unique), Field(json_schema_extra={"uniqueItems": True})]

#: How YAML 1.1 (PyYAML, Snakemake's config loader) reads these words unquoted; the first is the one a config
#: most likely meant (Norwegian ``no``).
YAML_BOOLEAN_WORDS = {False: ("no", "off", "false"), True: ("yes", "on", "true")}
LANGUAGE_KEYS = ("targets", "corpora", "word_vectors", "dictionaries", "languages")  # + keys with "lang"


def yaml_boolean_hint(where: str, value: bool, key: bool = False) -> str:
    """``targets[0]: got the YAML boolean false; write the language code in quotes ("no")``: a boolean at
    ``where`` (``key``: a mapping key under ``where``) where a string belongs."""
    name = re.sub(r"\[\d+\]$", "", where).rsplit(".", 1)[-1]
    what = "the language code" if "lang" in name or name in LANGUAGE_KEYS else "the key" if key else "it"
    words, text = YAML_BOOLEAN_WORDS[value], str(value).lower()
    got = f"the key {text} is a YAML boolean" if key else f"got the YAML boolean {text}"
    return (f'{where}: {got}; write {what} in quotes ("{words[0]}"): YAML reads '
            f'{", ".join(words)} unquoted as {text}')


class Section(BaseModel):
    """A config section: :meth:`parse` builds it from a dict, checking every key against the fields. ``FILL``:
    the fields whose default is written into the config as written (``True``: all of them), so that the params
    of the jobs that read the key show it (:func:`vocab_transfer.workflow.schema.fill_defaults`)."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, allow_inf_nan=False,
                              revalidate_instances="never")
    FILL: ClassVar[bool | tuple[str, ...]] = False
    #: The key path that :meth:`parse` names by default.
    WHERE: ClassVar[str] = "config"

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        if isinstance(data, cls):
            return data
        if not isinstance(data, dict):
            raise PydanticCustomError("section_type", "expected a mapping of {section} keys, got {got}",
                                      {"section": cls.__name__, "got": repr(data)})
        boolean = next((k for k in data if isinstance(k, bool)), None)
        if boolean is not None:
            raise PydanticCustomError("yaml_boolean_key", "a YAML boolean key", {"key": boolean})
        for key, value in data.items():
            for i, v in enumerate(value if isinstance(value, list) else [value]):
                if type(v) is int and not INT64[0] <= v <= INT64[1]:
                    at = f".{key}[{i}]" if isinstance(value, list) else f".{key}"
                    raise PydanticCustomError("int64", "{at}: {value} does not fit in a 64-bit integer",
                                              {"at": at, "value": repr(v)})
        if cls.model_config.get("extra") == "forbid":
            fields = cls.__pydantic_fields__  # (``model_fields`` is slow on a class)
            unknown = [k for k in data if k not in fields]
            if unknown:
                raise PydanticCustomError("unknown_keys", "unknown key(s) {unknown}; known: {known}",
                                          {"unknown": str(sorted(map(str, unknown))),
                                           "known": str(sorted(fields))})
        return data

    @model_validator(mode="after")
    def _rules(self):
        self.check("")
        return self

    @classmethod
    def parse(cls, data: Any, where: str | None = None):
        """``data`` (a mapping) as this section; :class:`ModelError` names the key path under ``where``."""
        if isinstance(data, cls):
            return data
        try:
            return cls.model_validate(data)
        except ValidationError as e:
            raise ModelError(error_message(e, cls.WHERE if where is None else where, data)) from None

    def written(self, key: str) -> bool:
        """Whether the config gave ``key`` (rather than the field taking its default)."""
        return key in self.model_fields_set

    def as_written(self, exclude: tuple[str, ...] = ()) -> dict:
        """The keys the config gave, with their values as written (nested sections too): what a job's params
        pass on."""
        return self.model_dump(exclude_unset=True, exclude=set(exclude) or None)

    def check(self, where: str) -> None:
        """Rules between the keys of one section (override); the message starts with ``where`` (the key path,
        empty while the model validates: the engine puts the path in front)."""


class ByKind(Section):
    """A section with one class per ``kind`` (a union by kind: the config's tables and figures), each naming
    the keys its kind needs (``NEEDS``) and its rules against the rest of the config (:meth:`check_against`).
    A class whose ``kind`` is one value adds itself to ``KINDS`` (kind -> class), which a base class defines
    for its kinds."""

    NEEDS: ClassVar[tuple[str, ...]] = ()
    KINDS: ClassVar[dict[str, type]] = {}

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        if len(kinds := typing.get_args(cls.model_fields["kind"].annotation)) == 1:
            cls.KINDS[kinds[0]] = cls

    def check(self, where: str) -> None:
        if not all(getattr(self, k) for k in self.NEEDS):
            raise ModelError(f"{where}: kind {self.kind} needs {' and '.join(map(repr, self.NEEDS))}")

    def check_against(self, cfg, name: str) -> None:
        """Rules between the section and the rest of the config ``cfg`` (override); :class:`ConfigError` names
        the key under the section's entry ``name``."""


# --- messages -----------------------------------------------------------------------------------------------
TYPE_NAMES = {"int_type": "int", "float_type": "a number", "string_type": "str", "bool_type": "bool",
              "list_type": "a list", "dict_type": "a mapping", "model_type": "a mapping",
              "number_type": "a number", "literal_error": None}
BOUND_WORDS = {"greater_than_equal": (">=", "ge"), "greater_than": (">", "gt"),
               "less_than_equal": ("<=", "le"), "less_than": ("<", "lt")}


def _path(loc: tuple, data: Any, where: str) -> tuple[str, Any]:
    """The key path of an error's ``loc`` in ``data`` (union alternatives and missing keys left out) and the
    value there."""
    node, out = data, where
    for i, part in enumerate(loc):
        if i + 1 < len(loc) and loc[i + 1] == "[key]":
            break  # a mapping key itself: the mapping's path
        if isinstance(node, dict) and not isinstance(part, int) and part in node:
            out, node = f"{out}.{part}", node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            out, node = f"{out}[{part}]", node[part]
    return out, node


def _number_hint(value: Any) -> str:
    """A hint for a number that arrived as a string: YAML 1.1 reads ``5e-5`` (no dot) as one, and Snakemake
    reads a nested value of ``--config`` as one."""
    if not isinstance(value, str):
        return ""
    try:
        float(value)
    except ValueError:
        return ""
    if "." not in value and re.search("[eE]", value):
        return f" (YAML reads {value} as a string: write it with a dot and a signed exponent, e.g. 5.0e-5)"
    return (" (a number written as a string; Snakemake reads a nested value of --config as one: give it in a "
            "config file)")


#: One error's message after its key path, by its type: a function of the error, its input ``v`` and its
#: context ``c``.
TEXTS = {
    "missing": lambda e, v, c: f": missing required key {e['loc'][-1]!r}",
    "literal_error": lambda e, v, c: f": {v!r} is not one of {c['expected']}",
    "union_tag_invalid": lambda e, v, c: (f".{c['discriminator'].strip(chr(39))}: {c['tag']!r} is not one of "
                                          f"{c['expected_tags']}"),
    "union_tag_not_found": lambda e, v, c: f": missing required key {c['discriminator'].strip(chr(39))!r}",
    "finite_number": lambda e, v, c: f": {v!r} is not a finite number",
    "too_short": lambda e, v, c: f": needs at least {c['min_length']} item(s), got {c.get('actual_length')}",
    "too_long": lambda e, v, c: f": takes at most {c['max_length']} item(s), got {c.get('actual_length')}",
    "string_too_short": lambda e, v, c: f": needs at least {c['min_length']} character(s), got {v!r}",
}


def _text(e: dict) -> str:
    """One error's message after its key path."""
    kind, value, ctx = e["type"], e.get("input"), e.get("ctx") or {}
    if kind in TEXTS:
        return TEXTS[kind](e, value, ctx)
    if kind in BOUND_WORDS:
        word, bound = BOUND_WORDS[kind][0], ctx[BOUND_WORDS[kind][1]]
        bound = int(bound) if isinstance(bound, float) and bound.is_integer() else bound
        return f": must be {word} {bound!r}, got {value!r}"
    if kind in ("value_error", "assertion_error"):
        text = str(ctx.get("error", e["msg"]))
        return text if text[:1] in (".", ":", "[") else f": {text}"
    if kind in TYPE_NAMES:
        return f": expected {TYPE_NAMES[kind]}, got {value!r}{_number_hint(value)}"
    return e["msg"] if e["msg"][:1] in (".", "[") else f": {e['msg']}"


def _rank(e: dict) -> int:
    """Which error a message names first: a YAML boolean, then a name, then a key or value, then a rule
    between keys, then a type that does not fit one of a union's alternatives (a mapping tried as a
    string)."""
    kind, value = e["type"], e.get("input")
    if kind == "yaml_boolean_key" or (kind == "string_type" and isinstance(value, bool)):
        return 0
    if kind == "name":
        return 1
    if kind in ("value_error", "assertion_error"):
        return 3
    if kind in TYPE_NAMES and isinstance(value, (dict, list)) and len(e["loc"]) > 1:
        return 4
    return 2


def error_message(error: ValidationError, where: str, data: Any) -> str:
    """The first problem of a validation ``error`` (:func:`_rank`; the deepest first among equals), as
    ``<key path>: <what is wrong>``."""
    errors = error.errors(include_url=False)
    def order(ie):
        return _rank(ie[1]), -len(_path(ie[1]["loc"], data, "")[0]), ie[0]

    e = min(enumerate(errors), key=order)[1]
    path, _ = _path(e["loc"], data, where)
    if e["type"] == "yaml_boolean_key":
        return yaml_boolean_hint(path, e["ctx"]["key"], key=True)
    if e["type"] == "string_type" and isinstance(e.get("input"), bool):
        return yaml_boolean_hint(path, e["input"], key="[key]" in e["loc"])
    return f"{path}{_text(e)}"


@functools.cache
def type_hints(obj) -> dict:
    """``typing.get_type_hints`` of a function (its ``Annotated`` bounds kept), resolved once: a config checks
    the parameters of the same methods many times while Snakemake parses it, in every job."""
    return typing.get_type_hints(obj, include_extras=True)


@functools.cache
def _adapter(hint) -> TypeAdapter:
    return TypeAdapter(hint, config=ConfigDict(strict=True, allow_inf_nan=False))


def check_value(hint, value, where: str):
    """``value`` checked against the type ``hint`` and its bounds (``Annotated[int, Range(ge=1)]``), or
    :class:`ModelError` naming ``where``; the value as given."""
    try:
        _adapter(hint).validate_python(value)
    except ValidationError as e:
        raise ModelError(error_message(e, where, value)) from None
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

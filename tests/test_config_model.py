"""The typed config model (vocab_transfer.workflow.model) and the JSON schema (schemas/config.schema.yaml) agree
key by key: the same keys at every level, the same required keys, types, enums, bounds and defaults. And the model
itself refuses what the schema refuses, naming the key path."""

import dataclasses
import json
import types
import typing
from pathlib import Path
from typing import Any, Literal, Union

import pytest
import yaml

from vocab_transfer.training.settings import LaptConfig
from vocab_transfer.workflow import model
from vocab_transfer.workflow.model import Config, ModelError, Section, load

REPO = Path(__file__).resolve().parents[1]
SCHEMA = yaml.safe_load((REPO / "schemas" / "config.schema.yaml").read_text())
# every shipped config of one study (configs/papers.yaml names studies: tests/test_named_targets.py)
CONFIGS = sorted([REPO / "config.yaml", *(p for p in (REPO / "configs").glob("*.yaml") if p.name != "papers.yaml"),
                  *(REPO / "tests" / "data").glob("tiny*config.yaml")])

# Open sections that the schema leaves to a dataclass of the trainers (checked there and in test_schema_model.py).
OPEN = {"config.lapt.runs.*": LaptConfig}
BOUNDS = {"minimum": "ge", "exclusiveMinimum": "gt", "maximum": "le", "exclusiveMaximum": "lt",
          "minItems": "min_items", "minProperties": "min_items", "minLength": "min_len"}
JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}


def resolve(node):
    while "$ref" in node:
        target = SCHEMA
        for part in node["$ref"].lstrip("#/").split("/"):
            target = target[part]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def split_optional(hint):
    if typing.get_origin(hint) in (Union, types.UnionType) and type(None) in typing.get_args(hint):
        rest = [a for a in typing.get_args(hint) if a is not type(None)]
        return (rest[0] if len(rest) == 1 else typing.Union[tuple(rest)]), True  # noqa: UP007
    return hint, False


def schema_types(node) -> set:
    t = node.get("type")
    return set(t) if isinstance(t, list) else ({t} if t else set())


def compare_type(hint, node, where, meta=None):
    """``hint`` (a model annotation) and ``node`` (its schema) describe the same values."""
    meta = dict(meta or {})
    node = resolve(node)
    hint, optional = split_optional(hint)
    types_ = schema_types(node)
    if "null" in types_:
        assert optional, f"{where}: the schema allows null, the model does not"
        types_ -= {"null"}
    if hint is Any:
        return
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (Union, types.UnionType):
        options = node.get("oneOf") or node.get("anyOf")
        assert options and len(options) == len(args), f"{where}: the model's union {args} is no oneOf"
        for i, (a, n) in enumerate(zip(args, options, strict=True)):
            compare_type(a, n, f"{where}|{i}", meta if a is str else None)
        return
    for key, name in BOUNDS.items():
        if key in node and name != "min_items" or key in node and typing.get_origin(hint) in (list, dict):
            assert meta.get(name) == node[key], f"{where}: {key} {node[key]} vs model {name}={meta.get(name)}"
    for name, key in {"ge": "minimum", "gt": "exclusiveMinimum", "le": "maximum", "lt": "exclusiveMaximum",
                      "min_len": "minLength"}.items():
        if name in meta:
            assert node.get(key) == meta[name], f"{where}: model {name}={meta[name]}, schema {key}={node.get(key)}"
    if isinstance(hint, type) and issubclass(hint, Section):
        assert types_ == {"object"}, f"{where}: schema type {types_}"
        compare_section(hint, node, where)
        return
    if origin is Literal:
        assert node.get("enum") == list(args), f"{where}: enum {node.get('enum')} vs model {list(args)}"
        return
    if origin is list:
        assert types_ == {"array"}, f"{where}: schema type {types_}"
        assert bool(node.get("uniqueItems")) == bool(meta.get("unique")), f"{where}: uniqueItems"
        compare_type(args[0], node.get("items", {}), f"{where}[]", meta.get("items"))
        return
    if origin is dict:
        assert types_ == {"object"}, f"{where}: schema type {types_}"
        assert resolve(node.get("propertyNames", {})).get("pattern") == meta.get("key_pattern"), f"{where}: propertyNames"
        if args[1] is not Any or isinstance(node.get("additionalProperties"), dict):
            compare_type(args[1], node.get("additionalProperties", {}), f"{where}.*", meta.get("values"))
        return
    assert types_ == {JSON_TYPES[hint]}, f"{where}: schema type {types_}, model {hint.__name__}"


def compare_section(cls, node, where):
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.name != cls.EXTRA}
    props = node.get("properties", {})
    if cls.EXTRA is None:
        assert node.get("additionalProperties") is False, f"{where}: the schema accepts unknown keys, the model not"
        assert set(props) == set(fields), (f"{where}: schema-only {sorted(set(props) - set(fields))}, "
                                           f"model-only {sorted(set(fields) - set(props))}")
    else:
        assert set(fields) <= set(props), f"{where}: model-only {sorted(set(fields) - set(props))}"
        extra = set(props) - set(fields)
        if extra:  # the schema documents some of the open keys: they must be fields of the trainer's settings
            allowed = {f.name for f in dataclasses.fields(OPEN[where])} if where in OPEN else set()
            assert extra <= allowed, f"{where}: schema keys {sorted(extra - allowed)} are no fields"
    required = {n for n, f in fields.items()
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    assert set(node.get("required", [])) == required, f"{where}: required {node.get('required')} vs {required}"
    for name, f in fields.items():
        spec = resolve(props[name])
        compare_type(hints[name], spec, f"{where}.{name}", f.metadata)
        if "default" in spec:
            default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
            section = split_optional(hints[name])[0]
            if isinstance(section, type) and issubclass(section, Section):  # filled in by __post_init__
                assert spec["default"] == {} and default is None, f"{where}.{name}: a section's schema default is {{}}"
            else:
                assert default == spec["default"], f"{where}.{name}: default {default!r} vs schema {spec['default']!r}"


def test_the_model_is_the_schema():
    compare_section(Config, SCHEMA, "config")


def test_the_comparison_notices_a_drift():
    """The walk above fails when the schema and the model differ (here: a bound and a default)."""
    node = yaml.safe_load((REPO / "schemas" / "config.schema.yaml").read_text())
    node["properties"]["corpus_split"]["properties"]["heldout_fraction"]["default"] = 0.1
    with pytest.raises(AssertionError, match="heldout_fraction"):
        compare_section(Config, node, "config")
    node = yaml.safe_load((REPO / "schemas" / "config.schema.yaml").read_text())
    node["properties"]["eval"]["properties"]["seq_len"]["minimum"] = 4
    with pytest.raises(AssertionError, match="seq_len"):
        compare_section(Config, node, "config")


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_every_shipped_config_loads(path):
    cfg = load(yaml.safe_load(path.read_text()))
    assert cfg.methods and cfg.targets
    assert cfg.corpus_split.heldout_fraction > 0  # sections with defaults exist when omitted


BASE = yaml.safe_load((REPO / "tests" / "data" / "tiny_config.yaml").read_text())


@pytest.mark.parametrize("edit, message", [
    (lambda c: c["fasttext"].update(dim=1), "config.fasttext.dim: 1 must be >= 2"),
    (lambda c: c["fasttext"].update(dim=True), "config.fasttext.dim: expected int"),
    (lambda c: c["fasttext"].update(dims=3), "config.fasttext: unknown key(s) ['dims']"),
    (lambda c: c["corpus_filter"].update(normalization="NFX") if "corpus_filter" in c
     else c.update(corpus_filter={"normalization": "NFX"}), "'NFX' is not one of"),
    (lambda c: c.pop("seed"), "config: missing required key 'seed'"),
    (lambda c: c["sources"][next(iter(c["sources"]))].update(model="x/y"), "exactly one of model"),
    (lambda c: c["methods"].update({"bad name": {"kind": "focus"}}), "config.methods: 'bad name' cannot be a name"),
    (lambda c: c.update(targets=[]), "config.targets: needs at least 1"),
])
def test_the_model_names_the_bad_key(edit, message):
    config = yaml.safe_load(yaml.safe_dump(BASE))
    edit(config)
    with pytest.raises(ModelError) as e:
        load(config)
    assert message in str(e.value)


def test_scripts_round_trip_a_section():
    """A rule passes a section as JSON params; its script parses it back into the same class."""
    cfg = load(BASE)
    assert model.FastText.parse(json.loads(json.dumps(BASE["fasttext"]))) == cfg.fasttext
    assert model.FastText.parse({}).dim == 300  # FOCUS App. B, where the config leaves it out


@pytest.mark.parametrize("edit, message", [
    (lambda c: c["methods"].update(k={"kind": "keep", "percent": 150}), "methods.k.percent: 150 must be <= 100"),
    (lambda c: c["methods"].update(k={"kind": "keep"}), "methods.k: missing required parameter 'percent'"),
    (lambda c: c["methods"].update(p={"kind": "permute", "window": -3}), "methods.p.window: -3 must be >= 1"),
    (lambda c: c["methods"].update(m={"kind": "mf", "clusters": 0}), "methods.m.clusters: 0 must be >= 1"),
    (lambda c: c["methods"].update(w={"kind": "wechsel", "k": "10"}), "methods.w.k: expected int, got '10'"),
    (lambda c: c["corpora"].update(xx={"source": "text", "path": "no/such/file.txt"}),
     "corpora.xx.path: source text needs an existing file or folder, got 'no/such/file.txt'"),
    (lambda c: c["tokenizer"].pop("vocab_size"), "tokenizer.vocab_size: needed to train the tokenizers of"),
    (lambda c: c["corpora"]["de"].pop("source"), "corpora.de: 'source' is a required property"),
    (lambda c: c["lapt"]["training"].update(lr="5e-5"), "LAPT config: lr must be float, not '5e-5'"),  # YAML: no dot
    (lambda c: c["finetune"]["training"].update(batch_size=8.5), "fine-tuning config: batch_size must be int, not 8.5"),
    (lambda c: c["tables"].update(t={"kind": "overlap_counts"}), "tables.t: kind overlap_counts needs 'languages'"),
    (lambda c: c["tables"].update(t={"kind": "corpus_sizes", "languages": ["zz"]}),
     "tables.t.languages: ['zz'] are neither targets nor corpora keys"),
    (lambda c: c["tables"].update(t={"kind": "init", "rows": ["nope"], "languages": ["de"]}),
     "tables.t.rows: ['nope'] are not entries of methods"),
    (lambda c: c["tables"].update(t={"kind": "init", "rows": ["focus"]}), "kind init needs 'rows' (methods) and"),
])
def test_parse_time_rules_name_the_key(edit, message):
    """Method parameters are checked against the method's signature (type and bounds), and the rules between keys
    that a job would otherwise hit at run time fail at parse time."""
    from vocab_transfer.workflow.config import ConfigError, check_config

    config = yaml.safe_load(yaml.safe_dump(BASE))
    edit(config)
    with pytest.raises(ConfigError) as e:
        check_config(config, REPO / "schemas" / "config.schema.yaml")
    assert message in str(e.value)

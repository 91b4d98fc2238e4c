"""The JSON schema (checked before any job runs) and the typed Python settings it describes agree: every enum in
the schema is the tuple the code dispatches on, and every key the schema lists for a trainer's settings is a field
of its dataclass, with the same default where the schema gives one."""

import dataclasses
from pathlib import Path

import pytest
import yaml

from vocab_transfer.data.corpus import NORMALIZATIONS
from vocab_transfer.data.sources import SOURCES
from vocab_transfer.training import settings
from vocab_transfer.training.zeroshot import UNSEEN
from vocab_transfer.training.zeroshot import VARIANTS as ZERO_SHOT_VARIANTS
from vocab_transfer.workflow.config import PROVENANCES, RUN_KEYS

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = yaml.safe_load((ROOT / "schemas" / "config.schema.yaml").read_text())


def at(*keys):
    node = SCHEMA
    for k in keys:
        node = node[k]
    return node


LAPT = ("properties", "lapt", "properties")
ENUMS = {
    "corpus source": (("$defs", "corpus", "properties", "source"), SOURCES),
    "normalization": (("properties", "corpus_filter", "properties", "normalization"), NORMALIZATIONS),
    "lapt variant": ((*LAPT, "training", "properties", "variant"), settings.VARIANTS),
    "lapt reinit": ((*LAPT, "training", "properties", "reinit"), settings.REINIT),
    "adapter non-linearity": ((*LAPT, "training", "properties", "adapter", "properties", "non_linearity"),
                              settings.NON_LINEARITIES),
    "task type": (("properties", "finetune", "properties", "tasks", "additionalProperties", "properties", "task"),
                  tuple(settings.METRICS)),
    "unseen labels": (("properties", "finetune", "properties", "tasks", "additionalProperties", "properties",
                       "unseen_labels"), UNSEEN),
    "zero-shot variant": (("properties", "zero_shot", "properties", "setups", "additionalProperties", "properties",
                           "variant"), ZERO_SHOT_VARIANTS),
    "provenance": (("properties", "figures", "additionalProperties", "properties", "matched", "items"), PROVENANCES),
}


def _find(path):
    try:
        return at(*path)
    except KeyError:
        pytest.fail(f"schema has no {'/'.join(path)}")


@pytest.mark.parametrize("name", sorted(ENUMS))
def test_schema_enums_are_the_code_tuples(name):
    path, values = ENUMS[name]
    assert list(_find(path)["enum"]) == list(values), name


def _fields(cls):
    return {f.name: f for f in dataclasses.fields(cls)}


def _default(f):
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default


def test_lapt_keys_are_lapt_config_fields():
    fields = _fields(settings.LaptConfig)
    assert set(at(*LAPT, "training", "properties")) <= set(fields)
    run_keys = set(at(*LAPT, "runs", "additionalProperties", "properties")) - set(RUN_KEYS)
    assert run_keys <= set(fields), run_keys - set(fields)


def test_adapter_keys_and_defaults_are_adapter_config_fields():
    fields = _fields(settings.AdapterConfig)
    props = at(*LAPT, "training", "properties", "adapter", "properties")
    assert set(props) == set(fields)
    for key, spec in props.items():
        if "default" in spec:
            assert spec["default"] == _default(fields[key]), key


@pytest.mark.parametrize("name", ["config.yaml", "tests/data/tiny_config.yaml", *sorted(
    str(p.relative_to(ROOT)) for p in (ROOT / "configs").glob("*.yaml") if p.name != "papers.yaml")])
def test_defaults_are_filled_in_as_snakemake_validate_fills_them(name):
    """rules/common.smk fills in the schema's defaults with config.fill_defaults (the schema read once, with
    libyaml): the same config as snakemake.utils.validate gives."""
    import copy

    from snakemake.utils import validate

    from vocab_transfer.workflow.config import fill_defaults

    config = yaml.safe_load((ROOT / name).read_text())
    expected = copy.deepcopy(config)
    validate(expected, str(ROOT / "schemas/config.schema.yaml"))
    assert fill_defaults(copy.deepcopy(config), ROOT / "schemas/config.schema.yaml") == expected

"""Config names that become folders cannot leave results/: every such name fits one pattern
(vocab_transfer.workflow.model.NAME, the generated schema's pattern of every name), refused at parse time with
the key named, and every path the plan spells lies under results/ or resources/
(vocab_transfer.workflow.paths)."""

import copy
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from vocab_transfer.workflow import paths
from vocab_transfer.workflow.config import ConfigError, check_config, fill_defaults
from vocab_transfer.workflow.model import NAME, ModelError, load
from vocab_transfer.workflow.plan import Plan

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "schemas" / "config.schema.yaml"
BASE = yaml.safe_load((REPO / "tests" / "data" / "tiny_config.yaml").read_text())

BAD_NAMES = ["..", ".", ".hidden", "-x", "a/b", "a b"]
# where names are: a mapping's keys (a new entry copies the first one), or a list's entries (targets)
NAMED = ["corpora", "sources", "methods", "lapt.runs", "finetune.tasks", "finetune.models",
         "zero_shot.sources", "zero_shot.setups", "tables", "figures", "dictionaries", "dictionaries.en",
         "word_vectors", "targets"]


def with_name(key: str, name: str) -> dict:
    """The tiny config with ``name`` added at ``key``."""
    config = copy.deepcopy(BASE)
    node = config
    for part in key.split("."):
        node = node.setdefault(part, {})
    if isinstance(node, list):
        node.append(name)
    elif key == "word_vectors":
        node[name] = {"source": "fasttext_cc"}
    else:
        node[name] = copy.deepcopy(next(iter(node.values())))
    return config


@pytest.mark.parametrize("name", BAD_NAMES)
@pytest.mark.parametrize("key", NAMED)
def test_a_name_that_cannot_be_a_folder_is_refused_at_parse_time(key, name):
    config = with_name(key, name)
    with pytest.raises(ConfigError) as e:
        check_config(config)
    named = rf"{re.escape(key)}(\[\d+\])?: "  # a list's entry: its index
    assert re.match(rf"{named}{re.escape(repr(name))} cannot be a name: ", str(e.value)), str(e.value)
    with pytest.raises(ModelError, match=rf"^config\.{named}"):  # the typed config (the plan's)
        load(config)


def test_the_schema_names_the_models_pattern_everywhere():
    schema = yaml.safe_load(SCHEMA.read_text())

    def walk(node):
        if isinstance(node, dict):
            if "patternProperties" in node:  # a mapping whose keys are names
                yield from node["patternProperties"]
            for value in node.values():
                yield from walk(value)
        elif isinstance(node, list):
            for value in node:
                yield from walk(value)

    found = list(walk(schema))
    assert len(found) >= 12 and set(found) == {NAME}, found
    short, named = schema["properties"]["targets"]["items"]["anyOf"]
    assert short["pattern"] == NAME and schema["$defs"]["Target"]["properties"]["name"]["pattern"] == NAME
    assert named == {"$ref": "#/$defs/Target"}


@pytest.mark.parametrize("name", ["xlm-r.base", "tiny_2", "9b", "_x", "a.b-c"])
def test_inner_dots_dashes_and_underscores_are_names(name):
    config = copy.deepcopy(BASE)
    config["sources"] = {name: config["sources"]["tiny"]}
    config["methods"][name] = {"kind": "random"}
    assert name in check_config(config).sources


@pytest.mark.parametrize("args", [("s", "..", "r"), ("..", "t", "r"), ("s", "t", "."),
                                  ("s", "a/../../..", "r"), ("s", "", "r")])
def test_a_path_outside_results_is_refused(args):
    with pytest.raises(paths.PathError, match="lapt_run"):
        paths.lapt_model(*args)
    assert paths.lapt_model("s", "t", "r") == "results/lapt/s/t/r/model"


def test_the_plan_refuses_a_path_outside_results():
    """A value that is no config name (here a wildcard value no constraint stopped) but becomes a folder:
    refused while the DAG is planned, before any job runs."""
    config = copy.deepcopy(BASE)
    fill_defaults(config)
    plan = Plan(config)
    with pytest.raises(paths.PathError, match=r"'results/corpus/\.\./\.\./train\.parquet'"):
        plan.target_corpus(SimpleNamespace(target="../..", split="train"))

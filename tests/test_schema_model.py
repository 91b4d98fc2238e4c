"""Every enum of the JSON schema (generated from the typed model, checked before any job runs) is the tuple the code
dispatches on: the corpus sources, normalizations, LAPT variants, zero-shot variants, ... that the model's
``Literal`` types name are those the code implements."""

from pathlib import Path

import pytest
import yaml

from vocab_transfer.data.corpus import NORMALIZATIONS
from vocab_transfer.data.sources import SOURCES
from vocab_transfer.training import settings
from vocab_transfer.training.zeroshot import UNSEEN
from vocab_transfer.training.zeroshot import VARIANTS as ZERO_SHOT_VARIANTS
from vocab_transfer.workflow.config import PROVENANCES

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = yaml.safe_load((ROOT / "schemas" / "config.schema.yaml").read_text())


def at(*keys):
    node = SCHEMA
    for k in keys:
        node = node[k]
    return node


LAPT = ("properties", "lapt", "properties")
LAPT_CONFIG = ("$defs", "LaptConfig", "properties")
ENUMS = {
    "corpus source": (("properties", "corpora", "additionalProperties", "properties", "source"), SOURCES),
    "normalization": (("properties", "corpus_filter", "properties", "normalization"), NORMALIZATIONS),
    "lapt variant": ((*LAPT_CONFIG, "variant"), settings.VARIANTS),
    "lapt reinit": ((*LAPT_CONFIG, "reinit"), settings.REINIT),
    "lapt precision": ((*LAPT_CONFIG, "precision"), settings.PRECISIONS),
    "adapter non-linearity": (("$defs", "AdapterConfig", "properties", "non_linearity"), settings.NON_LINEARITIES),
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
    assert [v for v in _find(path)["enum"] if v is not None] == list(values), name  # None: an optional key

"""The typed config model (vocab_transfer.workflow.model, and the trainers' settings in
vocab_transfer.training.settings) is the one definition of the config and its one check: the JSON schema for
editors is generated from it (vocab_transfer.workflow.schema), every key is documented there, the copy in
schemas/ is current, and the model refuses a bad key or value, naming the key path."""

import copy
import json
import typing
from pathlib import Path

import pytest
import yaml

from vocab_transfer.training import settings
from vocab_transfer.workflow import model, schema
from vocab_transfer.workflow.model import Config, ModelError, load

REPO = Path(__file__).resolve().parents[1]
# every shipped config of one study (configs/papers.yaml names studies: tests/test_named_targets.py)
BASE = yaml.safe_load((REPO / "tests" / "data" / "tiny_config.yaml").read_text())
CONFIGS = sorted([REPO / "config.yaml",
                  *(p for p in (REPO / "configs").glob("*.yaml") if p.name != "papers.yaml"),
                  *(REPO / "tests" / "data").glob("tiny*config.yaml")])


def test_the_schema_file_is_generated_from_the_model():
    assert schema.SCHEMA_FILE.read_text() == schema.schema_text(), \
        "schemas/config.schema.yaml is stale: python -m vocab_transfer.workflow.schema --write"


def test_the_generated_schema_is_a_valid_draft_2020_12_schema():
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(schema.json_schema())


def test_a_stale_schema_file_is_noticed(tmp_path, monkeypatch):
    stale = tmp_path / "config.schema.yaml"
    stale.write_text(schema.schema_text().replace("default: 0.05", "default: 0.1"))
    monkeypatch.setattr(schema, "SCHEMA_FILE", stale)
    assert schema.main(["--check"]) == 1
    schema.main(["--write"])
    assert schema.main(["--check"]) == 0


def _classes(cls=Config, seen=None):
    """Every section class the config holds, with the trainers' settings its sections hold."""
    seen = {} if seen is None else seen
    seen[cls.__name__] = cls
    for info in cls.model_fields.values():
        hints = [info.annotation]
        while hints:
            h = hints.pop()
            hints += typing.get_args(h)
            if isinstance(h, type) and issubclass(h, model.Section) and h.__name__ not in seen:
                _classes(h, seen)
    return seen


def test_every_key_is_documented():
    classes = {**_classes(), "LaptConfig": settings.LaptConfig}
    assert {"Corpus", "Lapt", "LaptRun", "LaptSettings", "AdapterConfig", "TaskAdapter", "FinetuneConfig",
            "Eval"} <= set(classes)
    undocumented = [f"{name}.{key}" for name, cls in classes.items() for key, info in cls.model_fields.items()
                    if not info.description]
    assert undocumented == []


def _resolve(node):
    """A schema node with its $ref (and a `X | None`'s) followed into $defs."""
    defs = schema.json_schema()["$defs"]
    if "anyOf" in node:
        node = next(n for n in node["anyOf"] if n.get("type") != "null")
    return defs[node["$ref"].rsplit("/", 1)[1]] if "$ref" in node else node


def test_the_schema_shows_the_models_defaults_and_bounds():
    props = schema.json_schema()["properties"]
    assert _resolve(props["corpus_split"])["properties"]["heldout_fraction"] == {
        "type": "number", "minimum": 0, "exclusiveMaximum": 1, "default": 0.05,
        "description": model.CorpusSplit.model_fields["heldout_fraction"].description}
    assert "required" not in _resolve(props["eval"])  # every eval key has a default
    assert _resolve(props["lapt"])["properties"]["runtime_min"]["default"] == 1440
    lapt = schema.json_schema()["$defs"]["LaptSettings"]["properties"]
    assert lapt["precision"]["enum"] == list(settings.PRECISIONS) and lapt["precision"]["default"] == "auto"
    assert lapt["betas"]["items"] == {"type": "number", "minimum": 0, "exclusiveMaximum": 1}


def test_fill_defaults_fills_the_marked_defaults_only():
    """The defaults a job's params show (``fill``) are filled in; the rest stay the code's; a LAPT run's own
    settings are never filled (they replace lapt.training's), but an adapter it gives is."""
    config = copy.deepcopy(BASE)
    config.pop("corpus_split", None)
    config.pop("fasttext", None)
    config["lapt"]["runs"]["random"]["adapter"] = {"reduction_factor": 4}
    filled = schema.fill_defaults(config)
    assert filled["corpus_split"] == {"heldout_fraction": 0.05, "max_heldout_docs": 2000}
    assert filled["fasttext"] == {}  # the section is, its keys are the code's defaults (not in the params)
    assert (filled["lapt"]["training"]["snapshot_steps"] == []
            and "snapshot_steps" not in filled["lapt"]["runs"]["random"])
    assert filled["lapt"]["runs"]["random"]["adapter"] == {"reduction_factor": 4, "non_linearity": "gelu",
                                                            "invertible": True, "skip_last_layer": True,
                                                            "init_scale": 0.02}


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_every_shipped_config_loads(path):
    cfg = load(yaml.safe_load(path.read_text()))
    assert cfg.methods and cfg.targets
    assert cfg.corpus_split.heldout_fraction > 0  # sections with defaults exist when omitted


@pytest.mark.parametrize("edit, message", [
    (lambda c: c["fasttext"].update(dim=1), "config.fasttext.dim: must be >= 2, got 1"),
    (lambda c: c["fasttext"].update(dim=True), "config.fasttext.dim: expected int, got True"),
    (lambda c: c["fasttext"].update(dims=3), "config.fasttext: unknown key(s) ['dims']"),
    (lambda c: c["corpus_filter"].update(normalization="NFX") if "corpus_filter" in c
     else c.update(corpus_filter={"normalization": "NFX"}), "'NFX' is not one of"),
    (lambda c: c.pop("seed"), "config: missing required key 'seed'"),
    (lambda c: c["sources"][next(iter(c["sources"]))].update(model="x/y"), "exactly one of model"),
    (lambda c: c["methods"].update({"bad name": {"kind": "focus"}}),
     "config.methods: 'bad name' cannot be a name"),
    (lambda c: c.update(targets=[]), "config.targets: needs at least 1"),
    (lambda c: c["lapt"]["runs"]["focus"].update(steps=0),
     "config.lapt.runs.focus.steps: must be >= 1, got 0"),
    (lambda c: c["lapt"]["training"].update(snapshot_steps=[1, 1]),
     "config.lapt.training.snapshot_steps: items must be unique, got [1, 1]"),
    (lambda c: c["lapt"]["runs"]["focus"].update(snapshot_steps=[10**6]),
     "config.lapt.runs.focus.snapshot_steps: must be distinct optimizer steps in 0.."),
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
    (lambda c: c["methods"].update(k={"kind": "keep",
     "percent": 150}), "methods.k.percent: must be <= 100, got 150"),
    (lambda c: c["methods"].update(k={"kind": "keep"}), "methods.k: missing required parameter 'percent'"),
    (lambda c: c["methods"].update(p={"kind": "permute",
     "window": -3}), "methods.p.window: must be >= 1, got -3"),
    (lambda c: c["methods"].update(m={"kind": "mf",
     "clusters": 0}), "methods.m.clusters: must be >= 1, got 0"),
    (lambda c: c["methods"].update(w={"kind": "wechsel", "k": "10"}), "methods.w.k: expected int, got '10'"),
    (lambda c: c["corpora"].update(xx={"source": "text", "path": "no/such/file.txt"}),
     "corpora.xx.path: source text needs an existing file or folder, got 'no/such/file.txt'"),
    (lambda c: c["tokenizer"].pop("vocab_size"), "tokenizer.vocab_size: needed to train the tokenizers of"),
    (lambda c: c["corpora"]["de"].pop("source"), "corpora.de: missing required key 'source'"),
    (lambda c: c["lapt"]["training"].update(lr="5e-5"),
     "lapt.training.lr: expected a number, got '5e-5' (YAML reads"),
    (lambda c: c["finetune"]["training"].update(batch_size=8.5),
     "finetune.training.batch_size: expected int, got 8.5"),
    (lambda c: c["tables"].update(t={"kind": "overlap_counts"}),
     "tables.t: kind overlap_counts needs 'languages'"),
    (lambda c: c["tables"].update(t={"kind": "corpus_sizes", "languages": ["zz"]}),
     "tables.t.languages: ['zz'] are neither targets nor corpora keys"),
    (lambda c: c["tables"].update(t={"kind": "init", "rows": ["nope"], "languages": ["de"]}),
     "tables.t.rows: ['nope'] are not entries of methods"),
    (lambda c: c["tables"].update(t={"kind": "init",
     "rows": ["focus"]}), "kind init needs 'rows' and 'languages'"),
])
def test_parse_time_rules_name_the_key(edit, message):
    """Method parameters are checked against the method's signature (type and bounds), and the rules between
    keys that a job would otherwise hit at run time fail at parse time."""
    from vocab_transfer.workflow.config import ConfigError, check_config

    config = yaml.safe_load(yaml.safe_dump(BASE))
    edit(config)
    with pytest.raises(ConfigError) as e:
        check_config(config)
    assert message in str(e.value)

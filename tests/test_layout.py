"""The package's layering: the settings of the trainers load without them."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _modules_after(code: str) -> list[str]:
    code += "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return json.loads(out.splitlines()[-1])


def test_trainer_settings_load_without_torch():
    loaded = _modules_after("from vocab_transfer.training.settings import LaptConfig, FinetuneConfig\n"
                            "LaptConfig.from_dict({'steps': 10, 'variant': 'two_stage'}).stages()")
    assert "vocab_transfer.training.settings" in loaded
    assert "torch" not in loaded


def test_checking_a_config_does_not_import_the_trainers():
    loaded = _modules_after("import yaml\nfrom vocab_transfer.workflow.config import check_config\n"
                            "check_config(yaml.safe_load(open('tests/data/tiny_config.yaml')), 'schemas/config.schema.yaml')")
    assert "vocab_transfer.training.settings" in loaded  # the lapt, finetune and adapter settings were checked
    trainers = [m for m in loaded if m.rsplit(".", 1)[-1] in ("lapt", "finetune", "zeroshot", "adapters")]
    assert trainers == []


def test_planning_a_paper_grid_imports_no_heavy_module():
    """Snakemake parses the workflow on every call (`-n` too): the config checks and the plan read the methods'
    declarations and the task checks without torch, transformers, pandas, pyarrow or datasets
    (vocab_transfer.methods.catalog, vocab_transfer.workflow.light)."""
    loaded = _modules_after(
        "import yaml\nfrom vocab_transfer.workflow.config import check_config\n"
        "from vocab_transfer.workflow.plan import Plan\n"
        "for name in ('configs/unks.yaml', 'configs/focus.yaml', 'configs/vocab_swap.yaml', 'config.yaml'):\n"
        "    config = yaml.safe_load(open(name))\n"
        "    check_config(config, 'schemas/config.schema.yaml')\n"
        "    plan = Plan(config)\n"
        "    assert plan.factorizations or 'unks' not in name")
    heavy = [m for m in loaded if m.partition(".")[0] in ("torch", "transformers", "pandas", "pyarrow", "datasets")]
    assert heavy == []
    methods = [m for m in loaded if m.startswith("vocab_transfer.methods.") and m.rpartition(".")[2] != "catalog"]
    assert methods == ["vocab_transfer.methods.registry"]

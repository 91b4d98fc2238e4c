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

"""The path grammar (vocab_transfer.workflow.paths) is the only place that spells results/ and resources/
paths."""

import inspect
import re
from pathlib import Path

from vocab_transfer.workflow import paths

ROOT = Path(__file__).resolve().parent.parent
LITERAL = re.compile(r"""f?["'](?:results|resources)/""")  # a string that starts with a results/ path


def test_no_path_literal_outside_the_path_module():
    """Rules (outputs included), input functions, scripts and the package take every results/ and resources/
    path from vocab_transfer.workflow.paths; docstrings and comments may still show examples."""
    files = [*ROOT.glob("rules/*.smk"), ROOT / "Snakefile", *ROOT.glob("workflow_scripts/*.py"),
             *(p for p in ROOT.glob("vocab_transfer/**/*.py") if p.name != "paths.py")]
    offenders = [f"{f.relative_to(ROOT)}:{i}: {line.strip()}" for f in files
                 for i, line in enumerate(f.read_text().splitlines(), start=1)
                 if LITERAL.search(line) and not line.lstrip().startswith("#")]
    assert not offenders, "\n".join(offenders)


def test_patterns_read_as_the_documented_shape():
    assert paths.corpus("{lang}", "train") == "results/corpus/{lang}/train.parquet"
    assert paths.shards("de", "heldout") == "results/shards/de/heldout"
    assert paths.source_shards("xlmr", "en", "train") == "results/source_shards/xlmr/en/train"
    assert paths.extended_shards("s", "t", "m", "heldout") == "results/extended/s/t/m/shards/heldout"
    assert paths.lapt_curve("s", "t", "r") == paths.lapt_run("s", "t", "r") + "/curve.parquet"
    assert paths.finetune_scores("s", "task", "m", 3) == "results/finetune/s/task/m/seed3.parquet"
    assert paths.finetune_scores("s", "task", "m", "1+2+3") == "results/finetune/s/task/m/seed1+2+3.parquet"
    # every seed in one file
    assert paths.zeroshot_scores("s", "task", "m") == "results/zeroshot/s/task/m.parquet"
    assert paths.figure("lapt_curves", "s", "he", "png") == "results/figures/lapt_curves/s/he.png"
    doc = paths.__doc__
    for name, fn in inspect.getmembers(paths, inspect.isfunction):  # every artifact is in the module's map
        args = [f"<{p}>" if p not in ("ext", "split") else "x" for p in inspect.signature(fn).parameters]
        top = fn(*args).split("/")[1]
        assert f"{fn(*args).split('/')[0]}/{top}" in doc, name

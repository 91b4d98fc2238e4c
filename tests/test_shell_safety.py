"""No shell built from config values: the rules that run a shell command (the trainers' `exec <launcher> -m
...` and list_source_trainings) get a local model folder whose path holds spaces, quotes, `$(...)` and
backquotes as one argument, and run nothing else.

Snakemake itself formats the commands (a dry run with --printshellcmds of a config whose source model,
reference model and launchers are such); each command then runs in bash as the job's would (`set -euo
pipefail`), with stub trainers on PATH (python, python3, torchrun) that record their arguments instead of
training."""

import json
import os
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "tests" / "data" / "tiny_config.yaml"
HOSTILE = "src model 'single' \"double\" $(touch PWNED) `touch PWNED` ; touch PWNED & x"
TRAINERS = {"train_lapt", "finetune", "train_source_task", "evaluate_zero_shot"}
STUB = """#!{python}
import json, os, sys
with open(os.environ["ARGV_LOG"], "a") as f:
    f.write(json.dumps([os.path.basename(sys.argv[0]), *sys.argv[1:]]) + "\\n")
"""


@pytest.fixture(scope="module")
def hostile_workdir(tmp_path_factory, sw_tokenizer):
    """A working directory whose config takes its source and a reference model from a folder named HOSTILE,
    with a LAPT launcher given as a list of arguments."""
    from vocab_transfer.source_model import build_xlmr_mlm

    root = tmp_path_factory.mktemp("shell")
    model_dir = root / HOSTILE
    model = build_xlmr_mlm(sw_tokenizer, hidden_size=16, num_layers=1, num_heads=1, intermediate_size=16,
                           max_position_embeddings=64, seed=0)
    model.save_pretrained(model_dir)
    sw_tokenizer.save_pretrained(model_dir)
    config = yaml.safe_load(TINY.read_text())
    config["sources"] = {"local": {"model": str(model_dir), "languages": ["de"]}}
    config["lapt"]["launcher"] = ["torchrun", "--standalone", "--nproc-per-node", "2"]
    config["zero_shot"]["launcher"] = ["python3"]
    models = config["finetune"]["models"]
    models["reference"] = {"pretrained": str(model_dir), "label": "Reference", "tasks": ["he-ner"]}
    models["source-zs"] = {"source": True, "zero_shot": "full", "label": "Source (zero-shot)",
                           "tasks": ["he-ner-zs"]}
    config["zero_shot"]["setups"]["full"] = {"variant": "full"}
    (root / "config.yaml").write_text(yaml.safe_dump(config))
    stubs = root / "stubs"
    stubs.mkdir()
    for name in ("python", "python3", "torchrun"):
        (stubs / name).write_text(STUB.format(python=sys.executable))
        (stubs / name).chmod((stubs / name).stat().st_mode | stat.S_IEXEC)
    return root, model_dir


def shell_commands(workdir: Path) -> list[tuple[str, str]]:
    """(rule, command) of every job that runs a shell command, as Snakemake formats it (a dry run)."""
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "-n",
                           "-p", "--cores", "1", "--configfile", "config.yaml"], cwd=workdir,
                          capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    jobs, rule = [], None
    for line in proc.stdout.splitlines():
        if line.startswith(("rule ", "localrule ")):
            rule = line.split()[1].rstrip(":")
        elif line.startswith("Shell command: ") and line != "Shell command: None":  # None: a script job
            jobs.append((rule, line.removeprefix("Shell command: ")))
    return jobs


def option(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def test_config_values_reach_the_jobs_verbatim_and_run_nothing(hostile_workdir):
    root, model_dir = hostile_workdir
    jobs = shell_commands(root)
    assert {rule for rule, _ in jobs} == TRAINERS | {"list_source_trainings"}, sorted({r for r, _ in jobs})
    stubs, log = root / "stubs", root / "argv.jsonl"
    env = {**os.environ, "PATH": f"{stubs}{os.pathsep}{os.environ['PATH']}", "ARGV_LOG": str(log)}
    seen = {}
    for rule, command in jobs:
        for word in shlex.split(command):  # the folders its redirections and outputs write to
            if word.startswith(("logs/", "results/")):
                (root / word).parent.mkdir(parents=True, exist_ok=True)
        log.unlink(missing_ok=True)
        proc = subprocess.run(["bash", "-c", f"set -euo pipefail; {command}"], cwd=root, env=env,
                              capture_output=True, text=True)
        assert proc.returncode == 0, (rule, command, proc.stderr)
        assert not list(root.glob("PWNED*")), (rule, command)  # no substitution ran
        if rule == "list_source_trainings":
            out = root / shlex.split(command.split(">")[1])[0].removesuffix(".tmp")
            assert all(isinstance(t["trained"], str) for t in json.loads(out.read_text())), out.read_text()
            continue
        calls = [json.loads(line) for line in log.read_text().splitlines()]
        assert len(calls) == 1, (rule, calls)  # one process: exec, no other command
        argv = calls[0]
        # a GPU rule's job first claims its GPUs of a bundle, then execs the trainer (training/launch.py)
        assert argv[:4] == ["python", "-m", "vocab_transfer.training.launch", "--claim"], (rule, argv)
        argv = argv[argv.index("--") + 1:]
        json.loads(option(argv, "--config"))  # JSON as one argument, quotes and all
        seen.setdefault(rule, []).append(argv)

    lapt = seen["train_lapt"]
    assert all(a[:6] == ["torchrun", "--standalone", "--nproc-per-node", "2", "-m",
                         "vocab_transfer.training.lapt"]
               for a in lapt)
    assert all(option(a, "--model") == str(model_dir) for a in lapt)
    assert any("--embeddings" in a and "--anchors" in a for a in lapt)
    assert any("--embeddings" not in a for a in lapt)  # a run on the source's own vocabulary (madx)
    finetune = seen["finetune"]
    assert all(a[:3] == ["python", "-m", "vocab_transfer.training.finetune"] for a in finetune)
    models = {json.loads(option(a, "--meta"))["model"]: a for a in finetune}
    for name in ("source", "reference", "random-init"):
        assert option(models[name], "--model") == str(model_dir), name
    assert option(models["random-init"], "--embeddings").endswith("random.safetensors")
    assert option(models["reference"], "--tokenizer") == str(model_dir)
    train = seen["train_source_task"]
    assert all(a[:4] == ["python3", "-m", "vocab_transfer.training.zeroshot", "train"] for a in train)
    assert any(option(a, "--model") == str(model_dir) and option(a, "--variant") == "full" for a in train)
    assert any(option(a, "--target") == str(model_dir) for a in seen["evaluate_zero_shot"])
    assert not [str(p) for p in root.parent.rglob("PWNED*")]

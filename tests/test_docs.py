"""The documentation's commands and links hold: every `snakemake` line of a fenced ```bash block in README.md
and docs/*.md plans without error (a dry run from the repository root, `-n` added), every other line is
checked another way (`bash -n`, `--help`) or listed in EXEMPT with the reason, and every relative link names
an existing file and heading. Also: a config overlay merges over its base key by key
(docs/configuration.md)."""

from __future__ import annotations

import functools
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]

# Commands that cannot be dry-run or checked with --help here, each with the reason.
EXEMPT = {
    'pip install -e ".[slurm]"': "installs packages (scripts/setup_env.sh runs it)",
    "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cu<XYZ>":
        "installs a CUDA build of torch; <XYZ> depends on the cluster's driver",
    'python -c "import torch; print(torch.__version__, torch.cuda.is_available())"': "meant for a GPU node",
    "$EDITOR profiles/slurm/config.yaml": "opens an editor",
    "snakemake --report results/report.zip": "builds the report of a finished run (tests/test_workflow.py "
                                             "builds the tiny run's report and renders it)",
    "python -c \"import pandas as pd; print(pd.read_parquet("
    "'results/overlap/demo-xlmr/sw.parquet').head())\"":
        "reads an artifact of a finished demo run",
    "python -c \"from vocab_transfer.init import init_metadata; print(init_metadata("
    "'results/init/demo-xlmr/sw/focus.safetensors'))\"": "reads an artifact of a finished demo run",
    "docker build -t vocab-transfer .": "builds the container image (no Docker daemon in CI; "
                                        "tests/test_deploy.py checks the Dockerfile against pyproject.toml)",
    "apptainer build vocab-transfer.sif docker-daemon://vocab-transfer:latest": "converts the image (no "
                                                                                "Apptainer in CI)",
    "torchrun --standalone --nproc-per-node 4 -m vocab_transfer.training.lapt ...":
        "starts 4 training processes; the arguments are those of `--help` (checked)",
    "tensorboard --logdir results/lapt": "serves the event files of a run in progress (tests/test_lapt.py "
                                         "reads them with TensorBoard's reader)",
    "export WANDB_MODE=offline": "sets a variable of the jobs' environment",
    "wandb sync results/lapt/*/*/*/wandb/offline-run-*": "uploads offline W&B runs (no internet here; "
                                                          "tests/test_tracking.py writes one)",
    "export HF_TOKEN=hf_...": "sets the push's token",
    "snakemake push --configfile my.yaml": "pushes to the hub (tests/test_workflow.py pushes the tiny run's "
                                           "export to a local fake of the hub)",
    "snakemake results/export/xlmr/sw/lapt/focus.pushed.json --configfile my.yaml":
        "pushes one export to the hub",
}


def strip_comment(line: str) -> str:
    """The line without a trailing `# comment` (a `#` outside quotes, after whitespace)."""
    for match in re.finditer(r"\s#", line):
        head = line[: match.start()]
        try:
            shlex.split(head)
        except ValueError:  # inside quotes
            continue
        return head.rstrip()
    return line.rstrip()


def bash_blocks() -> list[tuple[str, list[str]]]:
    """(page, commands) per fenced bash block: continuation lines joined, comments and blank lines dropped."""
    blocks = []
    for page in PAGES:
        for body in re.findall(r"^```bash\n(.*?)^```", page.read_text(), flags=re.M | re.S):
            commands, pending = [], ""
            for raw in body.splitlines():
                line = strip_comment(raw)
                if line.endswith("\\"):
                    pending += line[:-1].rstrip() + " "
                    continue
                line = (pending + line.strip()).strip()
                pending = ""
                if line:
                    commands.append(line)
            blocks.append((page.relative_to(REPO).as_posix(), commands))
    return blocks


BLOCKS = bash_blocks()
# A block with `--directory DIR` is a recipe: its lines run in order with DIR replaced by a temporary folder.
RECIPES = [(page, cmds) for page, cmds in BLOCKS if any("--directory" in c for c in cmds)]


def plan_key(command: str):
    """Commands that plan the same jobs (`snakemake X` and `snakemake -n X`) are dry-run once."""
    words = shlex.split(command)
    return tuple(sorted(set(words) | {"-n"})) if words[0] == "snakemake" else command


COMMANDS = sorted({plan_key(c): c
                   for c in sorted(c for _, cmds in BLOCKS if not any("--directory" in x for x in cmds)
                                   for c in cmds)}.values())


@functools.lru_cache
def filled_profile() -> str:
    """profiles/slurm as a user runs it after editing it: its placeholders (which stop every call, -n
    included) filled in, in a temporary folder."""
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="profile-"))
    text = (REPO / "profiles" / "slurm" / "config.yaml").read_text()
    for placeholder in ("<cpu-partition>", "<cpu-account>", "<gpu-partition>", "<gpu-account>"):
        text = text.replace(placeholder, placeholder.strip("<>"))
    (folder / "config.yaml").write_text(text)
    return str(folder)


def dry_run(words: list[str], cwd: Path = REPO) -> subprocess.CompletedProcess:
    if not {"-n", "--dry-run", "--dryrun"} & set(words):
        words = [*words, "-n"]
    words = [filled_profile() if w == "slurm" and i and words[i - 1] == "--profile" else w
             for i, w in enumerate(words)]
    return subprocess.run([*SNAKEMAKE, *words], cwd=cwd, capture_output=True, text=True, timeout=300)


def check(command: str, cwd: Path = REPO) -> None:
    words = shlex.split(command)
    if command in EXEMPT:
        return
    if words[0] == "snakemake":
        proc = dry_run(words[1:], cwd)
        assert proc.returncode == 0, f"{command}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    elif words[:1] == ["bash"] and len(words) == 2 and words[1].endswith(".sh"):
        proc = subprocess.run(["bash", "-n", words[1]], cwd=cwd, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        assert (REPO / words[1]).is_file(), words[1]
    elif words[:2] == ["python", "-m"] or words[0] == "vocab-transfer":
        # a module's CLI (the console script vocab-transfer is vocab_transfer.api's): its --help runs, and
        # names every option the command uses
        words = ["python", "-m", "vocab_transfer.api", *words[1:]] if words[0] == "vocab-transfer" else words
        sub = words[3] if len(words) > 3 and not words[3].startswith("-") else None
        usage = cli_help(words[2], sub)
        for option in (w.split("=")[0] for w in words[3:] if w.startswith("--")):
            assert (option == "--help"
                    or re.search(rf"{re.escape(option)}\b", usage)), f"{command}: {option} unknown"
    else:
        raise AssertionError(f"command in the docs is neither checked nor exempt: {command}")


@functools.lru_cache
def cli_help(module: str, sub: str | None) -> str:
    proc = subprocess.run([sys.executable, "-m", module, *([sub] if sub else []), "--help"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "usage" in proc.stdout, proc.stderr[-2000:]
    return proc.stdout


def is_slow(command: str) -> bool:
    """Dry runs of the paper configs plan hundreds of jobs (about 5 s each)."""
    return command.startswith("snakemake") and "configs/" in command


@pytest.mark.parametrize("command",
                         [pytest.param(c, marks=pytest.mark.slow) if is_slow(c) else c for c in COMMANDS])
def test_documented_command(command):
    check(command)


def test_commands_are_found():
    assert len(COMMANDS) >= 10 and RECIPES
    assert "bash scripts/demo.sh" in COMMANDS and "bash scripts/test.sh" in COMMANDS
    assert not set(EXEMPT) - set(COMMANDS), "EXEMPT lists commands the docs no longer have"


@pytest.mark.slow
@pytest.mark.parametrize("page,commands", RECIPES, ids=[page for page, _ in RECIPES])
def test_documented_recipe(page, commands, tmp_path):
    directory = next(shlex.split(c)[shlex.split(c).index("--directory") + 1] for c in commands
                     if "--directory" in c)
    for command in commands:
        command = command.replace(directory, str(tmp_path / "work"))
        if command.startswith("snakemake"):
            check(command)
        else:
            proc = subprocess.run(command.replace("python ", f"{sys.executable} ", 1), shell=True, cwd=REPO,
                                  capture_output=True, text=True, timeout=300)
            assert proc.returncode == 0, f"{command}\n{proc.stderr[-2000:]}"


# --- links --------------------------------------------------------------------------------------------------
def anchors(page: Path) -> set[str]:
    """GitHub's heading anchors of a Markdown file (headings inside fenced blocks excluded)."""
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.M | re.S)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
            for h in re.findall(r"^#{1,6} (.+)$", text, flags=re.M)}


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(REPO).as_posix() for p in PAGES])
def test_relative_links_exist(page):
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.M | re.S)
    for target in re.findall(r"\[[^\]]*\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        assert file.exists(), f"{page.name}: {target}"
        if anchor and file.suffix == ".md":
            assert anchor in anchors(file), f"{page.name}: {target}: no such heading"


# --- config overlays (docs/configuration.md) ----------------------------------------------------------------
@functools.lru_cache
def lapt_settings(*config_args: str) -> dict:
    """The LaptConfig JSON of the tiny config's first train_lapt job, from a dry run with -p."""
    proc = dry_run(["-p", "--cores", "1", "results/lapt/tiny/sw/focus/curve.parquet", *config_args])
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if "vocab_transfer.training.lapt" in x)
    return json.loads(re.search(r"--config '(\{.*?\})'", line).group(1))


def test_overlay_merges_over_the_base_key_by_key():
    base = lapt_settings("--configfile", "tests/data/tiny_config.yaml")
    merged = lapt_settings("--configfile", "tests/data/tiny_config.yaml", "configs/overlays/short_lapt.yaml")
    assert (merged["steps"], merged["eval_every"], merged["checkpoint_every"]) == (1000, 100, 500)
    assert base["steps"] != 1000
    for key in set(base) - {"steps", "eval_every", "checkpoint_every"}:  # batch size, lr, seq_len, seed, ...
        assert merged[key] == base[key], key


def test_nested_config_values_arrive_as_strings_and_are_refused():
    """`--config 'lapt={training: {...}}'` merges recursively, but Snakemake reads the nested values as
    strings: the config check names them before any job runs, which is why the docs send nested keys through
    an overlay file."""
    proc = dry_run(["--cores", "1", "results/lapt/tiny/sw/focus/curve.parquet", "--configfile",
                    "tests/data/tiny_config.yaml", "--config", "lapt={training: {lr: 0.01}}"])
    assert proc.returncode != 0
    assert "lapt.training.lr: expected a number, got '0.01' (a number written as a string; Snakemake reads " \
        "a nested value of --config as one" in proc.stdout + proc.stderr
    top = lapt_settings("--configfile", "tests/data/tiny_config.yaml", "--config", "seed=3")
    assert top["seed"] == 3


# --- what the docs may say ----------------------------------------------------------------------------------
def test_layout_names_every_rule_file():
    """docs/development.md's layout row for `rules/<stage>.smk` names every stage file under rules/."""
    row = next(line for line in (REPO / "docs" / "development.md").read_text().splitlines()
               if line.startswith("| `rules/<stage>.smk`"))
    named = set(re.findall(r"\w+", row.split("one file per stage:")[1].split(";")[0]))
    assert named == {p.stem for p in (REPO / "rules").glob("*.smk")} - {"common"}
    assert "`rules/common.smk`" in row


@pytest.mark.parametrize("path", [*PAGES, *sorted((REPO / "configs").glob("*.yaml"))],
                         ids=lambda p: p.relative_to(REPO).as_posix())
def test_no_development_history_or_outside_paths(path):
    """The docs and paper configs describe the software: no dates or commits of development runs, no "this
    machine", and no paths outside the repository (the papers are cited in README.md, not linked)."""
    text = path.read_text()
    for pattern in (r"\b20\d\d-\d\d-\d\d\b", r"\bcommit `?[0-9a-f]{7,40}\b", r"\.\./shared\b",
                    r"\bthis (virtual )?machine\b"):
        assert not re.search(pattern, text), f"{path.name}: {re.search(pattern, text).group(0)!r}"

"""Faults under real processes: fine-tuning killed with SIGKILL (after a checkpoint, during a checkpoint
write, at seeded random moments) resumes to the uninterrupted run's scores and history; a second Snakemake on
the same working directory is refused with Snakemake's lock message while the first completes; a full file
system during an artifact write raises ENOSPC naming the file and leaves no partial file.

The module counts what it injected and what recovered, prints the summary at the end of the session
(conftest's terminal summary) and writes it to test-artifacts/fault_summary.json; docs/artifacts.md quotes the
figures."""

from __future__ import annotations

import errno
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from vocab_transfer.artifacts import MANIFEST

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "tests" / "data" / "tiny_config.yaml"
ARTIFACTS = Path(os.environ.get("TEST_ARTIFACTS", REPO / "test-artifacts"))
SEED = 19  # the random kill moments
RANDOM_KILLS = 3

#: What the module injected and what recovered (conftest.pytest_terminal_summary prints it).
SUMMARY = {"faults_injected": 0, "sigkill": 0, "sigkill_during_checkpoint_write": 0,
           "concurrent_snakemake": 0, "disk_full": 0, "same_size_corruption": 0, "runs_recovered": 0,
           "bytes_lost": 0, "partial_files_left": 0}


@pytest.fixture(scope="module", autouse=True)
def summary():
    yield SUMMARY
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "fault_summary.json").write_text(json.dumps(SUMMARY, indent=1) + "\n")


# --- fine-tuning under SIGKILL ------------------------------------------------------------------------------
FT_CONFIG = {"epochs": 1, "lr": 2e-3, "batch_size": 16, "seq_len": 64, "eval_fraction": 0.2, "threads": 1}


@pytest.fixture(scope="module")
def ft_inputs(tmp_path_factory, sw_tokenizer, swahili_verses):
    """A tiny XLM-R MLM and an NER-shaped task (capitalized words; tests/test_finetune.py's), 25 steps of
    16."""
    from test_finetune import TINY as SIZES
    from test_finetune import capital_tags

    from vocab_transfer.source_model import build_xlmr_mlm

    root = tmp_path_factory.mktemp("faults_ft")
    build_xlmr_mlm(sw_tokenizer, seed=0, dropout=0.1, **SIZES).save_pretrained(root / "model")
    sw_tokenizer.save_pretrained(root / "model")
    rows = pd.DataFrame([{"id": str(i), "tokens": v.split()[:30], "tags": capital_tags(v.split()[:30])}
                         for i, v in enumerate(swahili_verses[:520])])
    (root / "data").mkdir()
    for split, part in (("train", rows[:400]), ("dev", rows[400:460]), ("test", rows[460:])):
        part.reset_index(drop=True).to_parquet(root / "data" / f"{split}.parquet")
    return root


def finetune_cmd(root: Path, out: Path, seeds: tuple[int, ...] = (1,)) -> list[str]:
    return [sys.executable, "-m", "vocab_transfer.training.finetune", "--model", str(root / "model"),
            "--task", "ner", "--data", str(root / "data"), "--seed", *map(str, seeds), "--output", str(out),
            "--config", json.dumps(FT_CONFIG)]


ENV = {**os.environ, "HF_HUB_OFFLINE": "1"}


def finish(root: Path, out: Path, seeds: tuple[int, ...] = (1,)) -> float:
    start = time.monotonic()
    proc = subprocess.run(finetune_cmd(root, out, seeds), env=ENV, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    finish.stderr = proc.stderr
    return time.monotonic() - start


def kill_when(root: Path, out: Path, ready, timeout: float = 120, seeds: tuple[int, ...] = (1,)) -> bool:
    """Start the fine-tuning CLI and SIGKILL it as soon as ``ready()`` holds (polled without sleeping); False
    if it ended first."""
    proc = subprocess.Popen(finetune_cmd(root, out, seeds), env=ENV, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    end = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < end:
        if ready():
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            SUMMARY["faults_injected"] += 1
            SUMMARY["sigkill"] += 1
            return True
    proc.kill()
    proc.wait()
    return False


def writing(folder: Path) -> list[str]:
    """Temporary siblings that atomic_path is writing in ``folder`` (a checkpoint folder, best.pt)."""
    try:
        return [e.name for e in os.scandir(folder) if e.name.startswith(".") and e.name.endswith(".tmp")]
    except FileNotFoundError:
        return []


def history_path(out: Path) -> Path:
    return out.with_suffix(".history.parquet")


def assert_same_results(out: Path, ref: Path) -> None:
    """Scores row and dev history equal the uninterrupted run's (the bytes of those that do not count as
    lost); no checkpoint or temporary file is left."""
    differ = [b for a, b in ((out, ref), (history_path(out), history_path(ref)))
              if not a.is_file() or not pd.read_parquet(a).equals(pd.read_parquet(b))]
    SUMMARY["bytes_lost"] += sum(b.stat().st_size for b in differ)
    left = [p for p in out.parent.iterdir() if (p.name.startswith(".") and not p.name.endswith(MANIFEST))
            or p.name.endswith(".checkpoints")]  # a file's manifest beside it is no leftover
    SUMMARY["partial_files_left"] += len(left)
    for a, b in ((out, ref), (history_path(out), history_path(ref))):
        pd.testing.assert_frame_equal(pd.read_parquet(a), pd.read_parquet(b))
    assert not left, left


@pytest.fixture(scope="module")
def ft_reference(ft_inputs):
    out = ft_inputs / "ref" / "seed1.parquet"
    out.parent.mkdir()
    seconds = finish(ft_inputs, out)
    history = pd.read_parquet(history_path(out))
    assert history["step"].tolist() == [5, 10, 15, 20, 25]  # checkpoints are written at 5, 10, 15, 20
    return out, seconds


@pytest.mark.slow
def test_finetune_killed_after_a_checkpoint_resumes_to_the_same_scores(ft_inputs, ft_reference):
    ref, _ = ft_reference
    out = ft_inputs / "killed" / "seed1.parquet"
    out.parent.mkdir()
    ckpts = Path(f"{out}.checkpoints") / "seed1"  # the seed's folder
    assert kill_when(ft_inputs, out, lambda: any(ckpts.glob("step-*/state.json")))
    assert any(ckpts.glob("step-*/state.json")) and not out.exists() and not history_path(out).exists()
    finish(ft_inputs, out)
    assert_same_results(out, ref)
    SUMMARY["runs_recovered"] += 1


@pytest.mark.slow
def test_finetune_of_two_seeds_killed_in_the_second_keeps_the_first(ft_inputs, ft_reference):
    """A job of seeds 1 and 2 killed during seed 2 (after its first checkpoint) does not train seed 1 again on
    the rerun, and its rows equal seed 1's job of its own and seed 2's job of its own."""
    ref, _ = ft_reference
    alone = ft_inputs / "alone" / "seed2.parquet"
    alone.parent.mkdir()
    finish(ft_inputs, alone, seeds=(2,))
    out = ft_inputs / "two" / "seed1+2.parquet"
    out.parent.mkdir()
    ckpts = Path(f"{out}.checkpoints")
    assert kill_when(ft_inputs, out, lambda: any(ckpts.glob("seed2/step-*/state.json")), seeds=(1, 2))
    assert (ckpts / "seed1" / "finished.json").is_file() and not out.exists()
    finish(ft_inputs, out, seeds=(1, 2))
    assert "seed 1 (1 of 2): finished before" in finish.stderr and "resuming from" in finish.stderr
    rows, history = pd.read_parquet(out), pd.read_parquet(history_path(out))
    for seed, single in ((1, ref), (2, alone)):
        pd.testing.assert_frame_equal(rows[rows.seed == seed].reset_index(drop=True), pd.read_parquet(single))
        pd.testing.assert_frame_equal(
            history[history.seed == seed].drop(columns="seed").reset_index(drop=True),
            pd.read_parquet(history_path(single)).drop(columns="seed"))
    assert not ckpts.exists()
    SUMMARY["runs_recovered"] += 1


@pytest.mark.slow
def test_finetune_killed_while_writing_a_checkpoint_and_at_random_moments(ft_inputs, ft_reference):
    """SIGKILL the moment a checkpoint folder (or best.pt) is being written, until one kill leaves the
    temporary folder behind (proof that it hit the write), then at RANDOM_KILLS moments drawn with a fixed
    seed over the run's length; the last rerun ends where the uninterrupted run ended."""
    ref, seconds = ft_reference
    out = ft_inputs / "written" / "seed1.parquet"
    out.parent.mkdir()
    ckpts = Path(f"{out}.checkpoints") / "seed1"  # the seed's folder
    hits = 0
    for _ in range(6):
        if not kill_when(ft_inputs, out, lambda: bool(writing(ckpts))):
            break
        hits += bool(writing(ckpts))
        if hits:
            break
    assert hits, "no kill landed inside a checkpoint write"
    SUMMARY["sigkill_during_checkpoint_write"] += hits
    rng = random.Random(SEED)
    for delay in (rng.uniform(0.2, 1.0) * seconds for _ in range(RANDOM_KILLS)):
        start = time.monotonic()
        if not kill_when(ft_inputs, out, lambda d=delay, s=start: time.monotonic() - s >= d):
            break  # the resumed run finished before its moment came: it wrote the results
    else:
        if out.exists():  # the last kill landed after the results were written, while the process exited:
            pd.testing.assert_frame_equal(pd.read_parquet(out), pd.read_parquet(ref))  # they are whole
        finish(ft_inputs, out)
    assert_same_results(out, ref)
    SUMMARY["runs_recovered"] += 1


# --- two Snakemakes on one working directory ----------------------------------------------------------------
SNAKEMAKE = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile")]


@pytest.mark.slow
def test_a_second_snakemake_on_the_same_directory_is_refused(tmp_path):
    """While one Snakemake pretrains the source model, a second one asking for the same model stops with
    Snakemake's lock message (it names the directory and --unlock); the first completes and leaves nothing to
    redo. The inputs are built beforehand, so that the second plans the same job and meets the lock (a running
    job whose output folder already exists would be refused earlier, as incomplete)."""
    config = yaml.safe_load(TINY.read_text())
    # about 20 s on one core
    config["sources"]["tiny"]["pretrain"]["training"].update(steps=4000, eval_every=2000)
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    target = "results/source/tiny/model"
    cmd = [*SNAKEMAKE, target, "--cores", "1", "--configfile", "config.yaml"]
    subprocess.run([*cmd, "--omit-from", "pretrain_source_model"], cwd=tmp_path, env=ENV, check=True,
                   capture_output=True)
    first = subprocess.Popen(cmd, cwd=tmp_path, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True)
    locks = tmp_path / ".snakemake" / "locks"
    while first.poll() is None and not (locks.is_dir() and any(locks.iterdir())):
        time.sleep(0.05)
    assert first.poll() is None, "the first run ended before the second could start"
    second = subprocess.run(cmd, cwd=tmp_path, env=ENV, capture_output=True, text=True)
    still_running = first.poll() is None
    SUMMARY["faults_injected"] += 1
    SUMMARY["concurrent_snakemake"] += 1
    out = second.stdout + second.stderr
    assert second.returncode != 0
    assert "Directory cannot be locked" in out and "--unlock" in out, out[-3000:]
    assert str(tmp_path) in out  # the locked directory is named
    assert still_running, "the first run ended while the second ran: the refusal proves nothing"
    log = first.communicate(timeout=600)[0]
    assert first.returncode == 0, log[-3000:]
    assert (tmp_path / target / "config.json").is_file()
    assert not (locks.is_dir() and any(locks.iterdir()))  # the first released its lock
    proc = subprocess.run([*cmd, "-n"], cwd=tmp_path, env=ENV, capture_output=True, text=True)
    assert "Nothing to be done" in proc.stdout + proc.stderr  # the refused run left no trace to redo
    SUMMARY["runs_recovered"] += 1


# --- an artifact corrupted without changing its size --------------------------------------------------------
@pytest.mark.slow
def test_an_artifact_corrupted_in_place_is_not_used_downstream_and_its_hint_rebuilds_it(tmp_path):
    """The German target tokenizer's tokenizer.json is overwritten in place with bytes of the same length (its
    folder's time unchanged, so Snakemake sees nothing): the next job that reads it (the overlap) stops before
    reading, naming the file and a rebuild command with the run's --configfile; that command, run as printed,
    rebuilds the tokenizer, and the overlap then builds from the rebuilt one."""
    import shlex

    config = yaml.safe_load(TINY.read_text())
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    run = lambda *a: subprocess.run([*SNAKEMAKE, *a, "--cores", "1"], cwd=tmp_path, env=ENV,  # noqa: E731
                                    capture_output=True, text=True)
    tok, overlap = "results/tokenizers/de", "results/overlap/tiny/de.parquet"
    first = run(tok, "--configfile", "tiny.yaml")
    assert first.returncode == 0, first.stderr[-3000:]
    f = tmp_path / tok / "tokenizer.json"
    data, folder_time = bytearray(f.read_bytes()), (tmp_path / tok).stat().st_mtime_ns
    at = data.index(b'"vocab"') + 40
    data[at:at + 8] = b"X" * 8  # 8 bytes of a token's text: same size, still JSON, another vocabulary
    f.write_bytes(bytes(data))
    SUMMARY["faults_injected"] += 1
    SUMMARY["same_size_corruption"] += 1
    assert (tmp_path / tok).stat().st_mtime_ns == folder_time
    refused = run(overlap, "--configfile", "tiny.yaml")
    log = (tmp_path / "logs" / "compute_overlap" / "tiny" / "de.log")
    out = refused.stdout + refused.stderr + (log.read_text() if log.is_file() else "")
    assert refused.returncode != 0 and not (tmp_path / overlap).exists(), out[-3000:]
    assert f"{tok}/tokenizer.json changed (same size, other content)" in out, out[-3000:]
    hint = out[out.index("rebuild it with: ") + len("rebuild it with: "):].splitlines()[0]
    # run here with --snakefile, not from the repository root: the command names the Snakefile, the working
    # directory and the config file, and runs as printed from anywhere
    assert hint == (f"snakemake --snakefile {REPO / 'Snakefile'} --directory {tmp_path} --force {tok} "
                    f"--configfile {tmp_path / 'tiny.yaml'}"), hint
    words = shlex.split(hint)
    rebuilt = subprocess.run([sys.executable, "-m", *words, "--cores", "1"], cwd=REPO / "docs", env=ENV,
                             capture_output=True, text=True)  # from another folder, as printed
    assert rebuilt.returncode == 0, rebuilt.stderr[-3000:]
    assert bytes(data) != f.read_bytes()  # the edit is gone
    done = run(overlap, "--configfile", "tiny.yaml")
    assert done.returncode == 0 and (tmp_path / overlap).is_file(), done.stderr[-3000:]
    SUMMARY["runs_recovered"] += 1


# --- a full file system -------------------------------------------------------------------------------------
@pytest.fixture
def small_disk(tmp_path):
    """A 256 KiB tmpfs (needs root or CAP_SYS_ADMIN; skipped otherwise)."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root or CAP_SYS_ADMIN): {proc.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_a_full_disk_raises_enospc_naming_the_file_and_leaves_nothing(small_disk):
    import numpy as np
    import torch

    from vocab_transfer.io import write_parquet, write_tensors

    (small_disk / "kept.txt").write_text("already there")
    cases = {
        "table.parquet": lambda p: write_parquet(
            pd.DataFrame({"x": np.random.default_rng(0).random(100_000)}), p),
        "tensors.safetensors": lambda p: write_tensors({"embeddings": torch.ones(1000, 100)}, p),
    }
    for name, write in cases.items():
        target = small_disk / "results" / name
        with pytest.raises(OSError) as e:
            write(target)
        SUMMARY["faults_injected"] += 1
        SUMMARY["disk_full"] += 1
        assert e.value.errno == errno.ENOSPC, e.value
        assert e.value.filename == str(target) and str(target) in str(e.value), str(e.value)
        assert "no space left" in str(e.value)
        left = sorted(p.name for p in (small_disk / "results").iterdir())
        SUMMARY["partial_files_left"] += len(left)
        assert left == [], left  # neither the target nor its temporary sibling
        SUMMARY["runs_recovered"] += 1
    kept = (small_disk / "kept.txt").read_text()
    SUMMARY["bytes_lost"] += len("already there") - len(os.path.commonprefix([kept, "already there"]))
    assert kept == "already there"  # what was on the disk before is intact
    # once there is room, the same writers succeed
    write_tensors({"embeddings": torch.ones(10, 10)}, small_disk / "results" / "tensors.safetensors")
    assert sorted(p.name for p in (small_disk / "results").iterdir()) == [".tensors.safetensors" + MANIFEST,
                                                                          "tensors.safetensors"]


def test_checkpoints_deleted_midway_leave_nothing_to_resume(tmp_path, monkeypatch):
    """A job killed while it deletes its checkpoints (after its outputs are written) leaves no half-deleted
    step folder that a rerun would resume from: the folder is renamed aside before it is deleted."""
    from vocab_transfer import io
    from vocab_transfer.training.runtime import Checkpoints

    root = tmp_path / "seed1.parquet.checkpoints"
    (root / "step-00000005").mkdir(parents=True)
    for name in ("model.pt", "optimizer.pt", "rng.pt", "state.json"):
        (root / "step-00000005" / name).write_text("{}")
    assert Checkpoints(root, keep=1).latest() == root / "step-00000005"

    def killed(path, *args, **kwargs):
        (Path(path) / "step-00000005" / "model.pt").unlink()  # the deletion got this far
        raise KeyboardInterrupt

    monkeypatch.setattr(io.shutil, "rmtree", killed)
    with pytest.raises(KeyboardInterrupt):
        io.remove_tree(root)
    SUMMARY["faults_injected"] += 1
    assert not root.exists() and Checkpoints(root, keep=1).latest() is None
    SUMMARY["runs_recovered"] += 1

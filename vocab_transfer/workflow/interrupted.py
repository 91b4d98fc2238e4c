"""Whether the rehearsal's interrupted LAPT job (``rehearsal.interrupt``) was stopped by SLURM's signal before
its time limit, checkpointed, resumed by a retry, and ended bit-identical to a run that was never interrupted.

``python -m vocab_transfer.workflow.interrupted CONFIG...`` (scripts/rehearse.sh, in the rehearsal's working
directory, after the run) finds the job of each study whose ``rehearsal.interrupt`` names one of its LAPT
runs:

- its SLURM jobs: the sbatch logs under logs/slurm/ that ran its command (``--output <model folder>``);
- the signal: the first job's sbatch log shows Snakemake inside it stopping on it ("Will exit after finishing
  currently running jobs"), SLURM (``scontrol``, while it remembers the jobs) that it ended before its limit,
  not as TIMEOUT; the retry's trainer log (logs/[<study>/]train_lapt/<source>/<target>/<run>.log; Snakemake
  clears it before each attempt) the step it resumed from, the signal's checkpoint where that step is no
  multiple of ``checkpoint_every``;
- the reference: the same command (launcher, process count, inputs, settings) run again here, into a temporary
  folder, without a time limit; every ``.safetensors`` file of the final model and its snapshots is compared
  byte for byte (SHA-256) with the interrupted run's.

One line per job; exit status 1 if a job did not run, was not interrupted, not resumed, or differs.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import re
import shlex
import subprocess
import tempfile
from pathlib import Path

from .rehearsal import parse_config_arguments
from .studies import studies_of, study_plan
from .views import lapt_run_targets

#: The options of the LAPT command that name what it writes (moved to the reference's folder).
OUTPUT_OPTIONS = ("--output", "--curve", "--checkpoints", "--snapshots", "--token-accuracy")
#: What Snakemake inside a SLURM job logs when SLURM's signal reaches it.
SIGNALLED = "Will exit after finishing currently running jobs"


def interrupted_jobs(config: dict, base: str) -> list[tuple[str, str, str, str, str]]:
    """(study, source, target, run, model folder) of the LAPT job named by each ``rehearsal.interrupt``."""
    jobs = []
    for name, study in studies_of(config, base).items():
        plan = study_plan(study)
        cfg = plan.cfg
        stop = cfg.rehearsal.interrupt if cfg.rehearsal else None
        if stop is None or stop.run not in cfg.lapt.runs:
            continue
        target = stop.target or lapt_run_targets(cfg, stop.run)[0]
        jobs += [(name, source, target, stop.run, plan.paths.lapt_model(source, target, stop.run))
                 for source in cfg.sources]
    return jobs


def job_command(model: str) -> tuple[list[str], list[str]]:
    """The shell command of the job writing ``model`` as its sbatch logs print it; the logs, oldest first."""
    logs, command = [], None
    needle = f"--output {shlex.quote(model)} "
    for path in sorted(glob.glob("logs/slurm/**/*.log", recursive=True), key=_job_id):
        for line in _read(path).splitlines():
            line = line.strip().removeprefix("Shell command:").strip()  # printshellcmds
            if line.startswith("exec ") and "-m vocab_transfer.training.lapt" in line and needle in line:
                logs.append(path)
                command = line
                break
    return (shlex.split(command) if command else []), logs


def _read(path: str) -> str:
    return Path(path).read_text(errors="replace") if os.path.exists(path) else ""


def _job_id(path: str) -> int:
    digits = re.findall(r"\d+", os.path.basename(path))
    return int(digits[0]) if digits else 0


def reference_command(words: list[str], folder: str) -> list[str]:
    """``words`` (the job's command) without ``exec``, its GPU claim (``python -m
    vocab_transfer.training.launch --claim N --``), its log redirection and pace, into ``folder``."""
    words = words[1:] if words[:1] == ["exec"] else list(words)
    if words[1:4] == ["-m", "vocab_transfer.training.launch", "--claim"] and "--" in words:
        words = words[words.index("--") + 1:]
    if "2>>" in words:
        words = words[:words.index("2>>")]
    for i, word in enumerate(words[:-1]):
        if word in OUTPUT_OPTIONS:
            words[i + 1] = os.path.join(folder, word.lstrip("-"))
        elif word == "--config":  # unpaced: the pace (min_step_seconds) only stretches the job's time
            words[i + 1] = json.dumps({**json.loads(words[i + 1]), "min_step_seconds": 0})
    return words


def tensor_hashes(model: str, snapshots: str) -> dict[str, str]:
    """SHA-256 of every ``.safetensors`` file below the folders ``model`` and ``snapshots`` (as
    ``snapshots/<path>``) by its path relative to them."""
    out = {}
    for folder, prefix in ((model, ""), (snapshots, "snapshots/")):
        for path in sorted(Path(folder).rglob("*.safetensors")):
            if not any(part.startswith(".") for part in path.relative_to(folder).parts):
                out[prefix + str(path.relative_to(folder))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def resumed_step(log: str) -> int | None:
    """The step the last attempt resumed from, as its trainer log says (Snakemake clears a job's log before a
    retry, so the log holds the last attempt only)."""
    found = re.findall(r"resuming from \S+ \(step (\d+) of", _read(log))
    return int(found[-1]) if found else None


def slurm_state(job_id: int) -> dict[str, str]:
    """``scontrol show job`` of a job as ``{field: value}`` (empty once SLURM has forgotten it: MinJobAge)."""
    out = subprocess.run(["scontrol", "-o", "show", "job", str(job_id)], capture_output=True, text=True)
    return dict(f.split("=", 1) for f in out.stdout.split() if "=" in f) if out.returncode == 0 else {}


def job_outcome(job_id: int, state: dict[str, str], sbatch_log: str) -> str:
    """How one SLURM job of the run ended: SLURM's state, run time and limit while ``scontrol`` still knows
    the job; once SLURM has forgotten it (MinJobAge; a cluster without accounting), what its sbatch log
    says: signalled (the Snakemake in the job got the signal), completed or failed."""
    if state:
        return (f"{job_id} {state.get('JobState', '?')} after {state.get('RunTime', '?')} of "
                f"{state.get('TimeLimit', '?')}")
    said = ("signalled" if SIGNALLED in sbatch_log else "completed"
            if "Finished jobid" in sbatch_log and "Error in rule" not in sbatch_log else "failed")
    return f"{job_id} {said} (its sbatch log; SLURM no longer lists the job)"


def check(study: str, source: str, target: str, run: str, model: str) -> tuple[bool, str]:
    """Whether the job was signalled before its limit, checkpointed, retried, resumed and ended bit-identical
    to an uninterrupted run; the report line."""
    words, logs = job_command(model)
    log = os.path.join("logs", study, "train_lapt", source, target, f"{run}.log")
    head = f"interrupted LAPT run {model}"
    if not words:
        return False, f"{head}: no sbatch log under logs/slurm/ ran it"
    first = _read(logs[0])
    signal = re.search(r"slurm_extra=\S*--signal=(?:B:)?([A-Z0-9]+)@(\d+)", first)
    signalled = SIGNALLED in first
    step = resumed_step(log)
    every = (json.loads(words[words.index("--config") + 1])
             .get("checkpoint_every") if "--config" in words else None)
    states = [slurm_state(_job_id(p)) for p in logs]
    ended = ", ".join(job_outcome(_job_id(p), st, _read(p)) for p, st in zip(logs, states, strict=True))
    if len(logs) < 2 or not signalled or step is None or states[0].get("JobState") == "TIMEOUT":
        return False, (f"{head}: not interrupted and resumed as planned (SLURM jobs: {ended}; signal seen in "
                       f"the first: {signalled}; {log}: resumed from step {step})")
    if not os.path.isdir(model):
        return False, f"{head}: signalled and resumed from step {step}, but the retry did not finish " \
                      f"({ended})"
    name = f"SIG{signal.group(1)} ({signal.group(2)} s before the limit)" if signal else "the signal"
    own = (f"the signal's checkpoint: not a multiple of checkpoint_every {every}" if every and step % every
           else f"a periodic checkpoint (checkpoint_every {every})")
    with tempfile.TemporaryDirectory(prefix="uninterrupted-", dir=".") as folder:
        cmd = reference_command(words, folder)
        proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
        if proc.returncode != 0:
            return False, (f"{head}: the uninterrupted reference failed ({shlex.join(cmd)}): "
                           f"{proc.stderr[-1500:]}")
        ref = tensor_hashes(os.path.join(folder, "output"), os.path.join(folder, "snapshots"))
    ours = tensor_hashes(model, os.path.join(os.path.dirname(model), "snapshots"))
    same = bool(ref) and ref == ours
    return same, (f"{head}: {name} at step {step} ({own}), checkpoint, retried (SLURM jobs: {ended}), "
                  f"resumed from step {step}, finished; tensors bit-identical to an uninterrupted run: "
                  f"{'yes' if same else 'NO'} ({len(ref)} .safetensors files compared by SHA-256; reference: "
                  f"{shlex.join(cmd[:5])} ... here, without a time limit)")


def main(argv: list[str] | None = None) -> int:
    config, base = parse_config_arguments(argv, "python -m vocab_transfer.workflow.interrupted", __doc__,
                                          formatter_class=argparse.RawDescriptionHelpFormatter)
    jobs = interrupted_jobs(config, base)
    if not jobs:
        print("interrupted LAPT run: none (rehearsal.interrupt names no LAPT run of these configs)")
        return 0
    ok = True
    for job in jobs:
        good, line = check(*job)
        ok &= good
        print(line)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

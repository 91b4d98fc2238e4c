"""Restarting a run whose Snakemake process died (a lost login session) while its SLURM jobs go on.

The jobs a Snakemake run submits through the slurm executor outlive it: killed, it leaves them running, its
locks in ``.snakemake/locks/`` and their outputs half-written. Two guards for a restart in the same directory:

- :func:`explain_lock` (installed while rules/common.smk and rules/studies.smk are parsed): when Snakemake
  refuses the run because the directory is locked, it adds what to do: make sure no Snakemake runs there,
  wait for or cancel this directory's SLURM jobs still pending or running (it lists them), ``snakemake
  --unlock`` with the same arguments, then the same command again.
- :func:`check_no_other_run` (the ``onstart`` handler): with the slurm executor, the current user's SLURM
  jobs in this working directory that another Snakemake run submitted stop the run before it submits
  anything, listed by rule, wildcards, job id and state, with the ``squeue`` and ``scancel`` commands for
  them. Else the new run would submit them a second time and delete their outputs while they write them.

The slurm executor names each job after its run (``--job-name <run uuid>``), sets ``--comment
rule_<rule>[_wildcards_<values>]`` and ``-D <working directory>``; ``squeue --me`` reads them back
(:data:`SQUEUE_FORMAT`). Without ``squeue`` both are silent. Torch-free.
"""

from __future__ import annotations

import logging
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass

#: SLURM states of a job that has not ended (squeue %T): it runs, or will.
ACTIVE_STATES = frozenset({"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED",
                           "REQUEUE_HOLD", "REQUEUE_FED", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED",
                           "RESV_DEL_HOLD"})
#: Job id, name (the run's uuid), state, working directory, comment (last: it may hold any character).
SQUEUE_FORMAT = "%i\t%j\t%T\t%Z\t%k"
#: The slurm executor's ``--comment``.
COMMENT = re.compile(r"^rule_(?P<rule>.+?)(?:_wildcards_(?P<wildcards>.*))?$")
QUEUE_ERRORS = (RuntimeError, OSError, subprocess.SubprocessError)


@dataclass(frozen=True)
class SlurmJob:
    """A job of a Snakemake run, as ``squeue`` lists it."""

    job_id: str
    run: str  # the job name: the uuid of the Snakemake run that submitted it
    state: str
    rule: str
    wildcards: str

    def describe(self) -> str:
        wildcards = f" ({self.wildcards})" if self.wildcards else ""
        return f"{self.rule}{wildcards}: SLURM job {self.job_id}, {self.state}, run {self.run}"


def active_jobs(workdir: str | os.PathLike) -> list[SlurmJob] | None:
    """The current user's Snakemake jobs in SLURM that have not ended and run in ``workdir`` (not one without
    the executor's ``rule_...`` comment: submitted by hand); None without ``squeue``."""
    if shutil.which("squeue") is None:
        return None
    listing = subprocess.run(["squeue", "--me", "-h", "-o", SQUEUE_FORMAT], capture_output=True, text=True,
                             timeout=60)
    if listing.returncode != 0:
        raise RuntimeError(f"squeue --me exited with {listing.returncode}: {listing.stderr.strip()}")
    here = os.path.realpath(workdir)
    jobs = []
    for line in listing.stdout.splitlines():
        fields = line.split("\t", 4)
        if len(fields) < 5:
            continue
        job_id, run, state, job_dir, comment = fields
        match = COMMENT.match(comment.strip())
        if match and state in ACTIVE_STATES and os.path.realpath(job_dir) == here:
            jobs.append(SlurmJob(job_id, run, state, match["rule"], match["wildcards"] or ""))
    return jobs


def _job_lines(jobs: Sequence[SlurmJob]) -> list[str]:
    """The jobs, a line each, and the commands to wait for them or cancel them (by run: the job name)."""
    runs = list(dict.fromkeys(job.run for job in jobs))
    watch = "; ".join(f"squeue --me -n {shlex.quote(run)}" for run in runs)
    cancel = "; ".join(f"scancel --name {shlex.quote(run)}" for run in runs)
    return [*(f"  {job.describe()}" for job in jobs),
            f"Wait for them to end (to watch them: {watch}), or cancel them ({cancel})."]


def check_no_other_run(executor: str, workdir: str | os.PathLike, own_run: str | None = None) -> str | None:
    """Why this run must not submit anything yet (module docstring), or None; the jobs named ``own_run`` are
    this run's."""
    if executor != "slurm":
        return None
    try:
        listed = active_jobs(workdir)
    except QUEUE_ERRORS as e:
        return f"nothing submitted: the SLURM queue could not be read to find this directory's jobs: {e}"
    jobs = [job for job in listed or () if job.run != own_run]
    if not jobs:
        return None
    return "\n".join([
        f"nothing submitted: {len(jobs)} SLURM job(s) of another Snakemake run in {os.path.abspath(workdir)} "
        "are still pending or running: that run goes on here, or its Snakemake process ended (a lost login "
        "session) and its jobs did not. This run would submit them a second time and delete their outputs "
        "while they write them.",
        *_job_lines(jobs),
        "Then run the same command again."])


def lock_advice(workdir: str | os.PathLike, argv: Sequence[str]) -> str:
    """What to do when Snakemake refuses the command line ``argv`` because ``workdir`` is locked."""
    workdir = os.path.abspath(workdir)
    here = shlex.quote(workdir)
    lines = [
        f"This working directory is locked: {workdir}/.snakemake/locks/ holds another Snakemake run's locks. "
        "That run still goes on (then wait for it), or its Snakemake process was killed (a lost login "
        "session) and left its locks behind while its SLURM jobs go on. To restart:",
        f"1. Make sure no Snakemake runs in {workdir} any more (ps -u \"$USER\" -f | grep snakemake, on each "
        "login node you used)."]
    try:
        jobs, failed = active_jobs(workdir), ""
    except QUEUE_ERRORS as e:
        jobs, failed = None, f" (squeue failed: {e})"
    if jobs:
        lines += [f"2. {len(jobs)} SLURM job(s) from this directory are still pending or running:",
                  *_job_lines(jobs)]
    elif jobs is None:
        lines.append(f"2. Look for this directory's jobs in the SLURM queue{failed}: squeue --me -o "
                     "'%i %j %T %Z %k'; wait for them, or cancel them: scancel --name <job name>.")
    else:
        lines.append("2. No SLURM job from this directory is pending or running (squeue --me).")
    lines += [f"3. Unlock: cd {here} && {shlex.join(['snakemake', *argv[1:], '--unlock'])}",
              f"4. Restart: cd {here} && {shlex.join(['snakemake', *argv[1:]])}"]
    return "\n".join(lines)


class _LockAdvice(logging.Handler):
    """Writes :func:`lock_advice` after Snakemake's error record of a refused lock."""

    def __init__(self, workdir: str, argv: Sequence[str], stream):
        super().__init__(logging.ERROR)
        self.workdir, self.argv, self.stream = workdir, list(argv), stream

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(record, "exception", None) != "LockException":  # Snakemake's print_exception sets it
            return
        try:
            self.stream.write(lock_advice(self.workdir, self.argv) + "\n")
            self.stream.flush()
        except Exception:  # advice only: never turn Snakemake's own error into another
            self.handleError(record)


def explain_lock(workdir: str | os.PathLike, argv: Sequence[str]) -> None:
    """Make Snakemake's refusal of a locked ``workdir`` say what to do: :func:`lock_advice` on stderr after
    Snakemake's error, from a handler on its logger. Once per process."""
    logger = logging.getLogger("snakemake.logging")
    if not any(isinstance(handler, _LockAdvice) for handler in logger.handlers):
        logger.addHandler(_LockAdvice(os.path.abspath(workdir), argv, sys.stderr))

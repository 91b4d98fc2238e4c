"""What a Snakemake run's log says about the run: how far it got and which jobs failed in the end.

``python -m vocab_transfer.workflow.runlog <snakemake.log> --status <exit status>`` prints the ``jobs:`` and
``failed jobs:`` lines of the rehearsal's report (scripts/rehearse.sh), then what stopped a run that ran no
job (a locked directory: the advice of vocab_transfer/workflow/restart.py; any other error: Snakemake's
message).

A job counts as failed when its last word in the log is an error: Snakemake writes ``Error in rule <rule>:``
with the job's ``jobid: <n>`` for every failed attempt, and ``Finished jobid: <n>`` when it succeeds, so a job
that failed, was retried (``retries:`` in the profile) and then finished counts as finished (and as retried).
Only a run that reached the scheduler and found every target up to date says "none left to run"; one that
stopped before (a locked directory, an error while planning) says so.
"""

from __future__ import annotations

import argparse
import itertools
import re
from dataclasses import dataclass, field

STEPS = re.compile(r"(\d+) of (\d+) steps \(\d+%\) done")
PLANNED = re.compile(r"^total\s+(\d+)$")  # the last row of the "Job stats" table
SCHEDULED = "Select jobs to execute"  # the scheduler has started
DRY_RUN = "This was a dry-run"
ERROR = re.compile(r"^\s*Error in (?:rule|group) (\S+?):?$")  # indented inside a bundle's error
JOBID = re.compile(r"^\s+jobid: (\S+)$")
# "Finished jobid: 3 (Rule: x)" (Snakemake 9), "Finished job 3." (8)
FINISHED = re.compile(r"^Finished job(?:id:)? (\S+?)\.?(?: \(Rule: \S+\))?$")
NOTHING_TO_DO = "Nothing to be done"
LOCKED = "Directory cannot be locked"
LOCK_ADVICE = "This working directory is locked:"  # the first line of restart.lock_advice
EXCEPTION = re.compile(r"^(\w+(?:Error|Exception))(?: in .*)?:$")


@dataclass
class RunLog:
    """A run as its log tells it."""

    steps: tuple[int, int] | None = None  # (done, planned) at the last progress line, (0, planned) before it
    nothing_to_do: bool = False  # Snakemake found every target up to date
    locked: bool = False  # Snakemake refused the run: the directory is locked
    dry_run: bool = False
    failed: dict[str, str] = field(default_factory=dict)  # jobid -> rule: the last attempt failed
    retried: dict[str, str] = field(default_factory=dict)  # jobid -> rule: failed, then finished
    stop: list[str] = field(default_factory=list)  # why it stopped before running a job: advice, or the error


def read_log(text: str) -> RunLog:
    """A Snakemake log's run: progress, the jobs' final states, and why a run that ran nothing stopped."""
    run = RunLog(nothing_to_do=NOTHING_TO_DO in text, locked=LOCKED in text, dry_run=DRY_RUN in text)
    lines = text.splitlines()
    last: dict[str, str] = {}  # jobid -> "error" or "finished", in the order the log says them
    rules: dict[str, str] = {}
    for i, line in enumerate(lines):
        if match := STEPS.search(line):
            run.steps = (int(match[1]), int(match[2]))
        elif (match := PLANNED.match(line)) and run.steps is None and SCHEDULED in text:
            run.steps = (0, int(match[1]))  # the scheduler started, no job has finished (yet)
        elif match := ERROR.match(line):
            for following in lines[i + 1:i + 30]:  # the job's block: indented lines after the header
                if jobid := JOBID.match(following):
                    last[jobid[1]], rules[jobid[1]] = "error", match[1]
                    break
                if following and not following[0].isspace():
                    break
        elif (match := FINISHED.match(line)) and match[1] in last:
            last[match[1]] = "finished"
    run.failed = {j: rules[j] for j, state in last.items() if state == "error"}
    run.retried = {j: rules[j] for j in rules if last[j] == "finished"}
    if run.steps is None and not run.nothing_to_do:
        run.stop = _why_stopped(lines)
    return run


def _why_stopped(lines: list[str]) -> list[str]:
    """The lock advice, else Snakemake's first error message (its name and up to 5 lines, no traceback)."""
    for i, line in enumerate(lines):
        if line.startswith(LOCK_ADVICE):
            return [line, *itertools.takewhile(str.strip, lines[i + 1:])]
    for i, line in enumerate(lines):
        if EXCEPTION.match(line):
            return [line, *itertools.takewhile(lambda f: f.strip() and not EXCEPTION.match(f)
                                               and not f.startswith('  File "'), lines[i + 1:i + 6])]
    return []


def report_lines(run: RunLog, status: int) -> list[str]:
    """The report's ``jobs:`` and ``failed jobs:`` lines, then what stopped a run that ran nothing."""
    if run.steps:
        jobs = f"{run.steps[0]} of {run.steps[1]} steps"
    elif run.nothing_to_do:
        jobs = "none left to run"
    elif run.locked:
        jobs = "none run: the working directory is locked (below: what to do)"
    elif run.dry_run:
        jobs = "none run: a dry run (-n)"
    elif status == 0:
        jobs = "none run (snakemake exit status 0 without scheduling a job: --unlock, a summary)"
    else:
        jobs = f"none run: Snakemake stopped before running a job (exit status {status}; below: its error)"
    failed = f"failed jobs: {len(run.failed)}"
    if run.failed:
        failed += " (" + ", ".join(f"{rule} jobid {j}" for j, rule in run.failed.items()) + ")"
    if run.retried:
        failed += f"; {len(run.retried)} finished when retried after a failure (" + ", ".join(
            f"{rule} jobid {j}" for j, rule in run.retried.items()) + ")"
    return [f"jobs: {jobs}", failed, *run.stop]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log", help="the Snakemake run's log (its stdout and stderr)")
    parser.add_argument("--status", type=int, required=True, help="Snakemake's exit status")
    args = parser.parse_args(argv)
    with open(args.log, encoding="utf-8", errors="replace") as f:
        run = read_log(f.read())
    print("\n".join(report_lines(run, args.status)))


if __name__ == "__main__":
    main()

"""What a run does before its first job: the ``onstart:`` handler of rules/common.smk (one config) and of
rules/studies.smk (a composite's studies, whose modules' own handlers Snakemake does not run) both call
:func:`before_jobs`.

Outside a cluster job (the ``*-jobstep`` executors), the jobs to run are checked against the cluster they go
to (:func:`~.cluster.check_submission`: placeholders, GPU partitions, accounts, multi-node LAPT without
SLURM), the SLURM jobs another Snakemake run left in this directory stop the run (they would be submitted
twice, :func:`~.restart.check_no_other_run`), and the rules whose jobs resume over several submissions get
the retries their longest job needs on top of the profile's (:func:`~.resources.raise_retries`). A run with
enough script jobs on this machine (a local run's, a cluster run's local rules: tables, figures) forks them
from a warm starter that imported torch & co. once (:func:`vocab_transfer.warm.start`;
``VOCAB_TRANSFER_WARM=0`` turns it off).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable

from .. import warm
from . import restart
from .cluster import check_submission, resource_values
from .resources import raise_retries
from .studies import study_of_rule, target_job_rules

#: Script jobs below this many are not worth a warm starter (its imports cost as much as a few jobs').
WARM_MIN_JOBS = 4


def before_jobs(workflow, lapt_nodes: int, studies: Iterable[str] = ()) -> None:
    """Check the jobs ``workflow`` (Snakemake's) is about to run and prepare for them (module docstring);
    raise Snakemake's ``WorkflowError`` with every problem found. ``lapt_nodes``: the most nodes a LAPT job
    asks for; a composite's ``studies``' rules ``<study>_<rule>`` are checked as ``<rule>``."""
    from snakemake.exceptions import WorkflowError  # lazy: the planner's modules import without Snakemake

    studies = list(studies)
    executor = workflow.executor_plugin.name if workflow.executor_plugin else "local"
    if executor.endswith("jobstep"):  # Snakemake inside a cluster job: the submitting run did all this
        return
    jobs = [(_own_name(job.rule.name, studies), dict(job.resources)) for job in workflow.dag.needrun_jobs()]
    defaults = resource_values(workflow.resource_settings.default_resources)
    problems = check_submission(executor, jobs, lapt_nodes=lapt_nodes,
                                default_partition=defaults.get("slurm_partition"))
    if problems:
        raise WorkflowError("nothing submitted:\n  " + "\n  ".join(problems))
    # onstart runs before this run submits anything: every SLURM job found here is another run's
    if stop := restart.check_no_other_run(executor, workflow.workdir_init):
        raise WorkflowError(stop)
    for line in raise_retries(workflow.dag.needrun_jobs(), workflow.execution_settings.retries):
        print(line, file=sys.stderr)
    # jobs of rules with a benchmark: file are never forked (the file measures the job's process), so they do
    # not count; the trainers' are (they write their own benchmark files)
    if warm.wanted(workflow):
        forked = sum(1 for job in workflow.dag.needrun_jobs() if workflow.is_local(job.rule) and (
            job.rule.script and not job.rule.benchmark or hands_off_trainer(job.rule)))
        if forked >= WARM_MIN_JOBS:
            warm.start()


def hands_off_trainer(rule) -> bool:
    """Whether a rule's job starts a trainer through ``training/launch.py --benchmark``, which runs it in a
    child of a warm starter where its process has one (and writes the job's benchmark file itself)."""
    command = getattr(rule, "shellcmd", None) or ""
    return "vocab_transfer.training.launch" in command and "--benchmark" in command


def start_bundle_starter(workflow, argv: list[str]) -> None:
    """In a SLURM job that runs a bundle of two or more trainer jobs (:func:`hands_off_trainer`; a group job,
    profiles/slurm ``group-components``), start a warm starter inside the allocation, so that the bundle
    imports torch and transformers once instead of once per job. The Snakefile calls it in every Snakemake
    process; only the one that runs the bundle's jobs (``--mode remote`` without ``--executor``: started by
    ``srun`` in the allocation) starts one, and not with ``--dry-run`` or ``VOCAB_TRANSFER_WARM=0``. The
    starter exits with that Snakemake."""
    if (not os.environ.get("SLURM_JOB_ID") or os.environ.get(warm.ENV) == "0" or not workflow.remote_exec
            or "--executor" in argv or {"-n", "--dry-run", "--dryrun"} & set(argv)):
        return
    targets = target_job_rules(argv)
    rules = {}
    for name in set(targets):
        try:
            rules[name] = workflow.get_rule(name)
        except Exception:  # noqa: BLE001 - a module of a composite, read before the composite's rules exist
            return
    if sum(1 for name in targets if hands_off_trainer(rules[name])) >= 2:
        warm.start()


def _own_name(rule: str, studies: list[str]) -> str:
    study = study_of_rule(rule, studies)
    return rule[len(study) + 1:] if study else rule

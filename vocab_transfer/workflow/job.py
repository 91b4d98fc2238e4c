"""Job setup shared by the thin adapters in ``workflow_scripts/``."""

from __future__ import annotations

import logging
import os
import sys

from ..artifacts import set_job, snakemake_job, verify_inputs
from ..memory import keep_freed_memory, log_peak_memory_at_exit, return_freed_memory, use_system_arrow_pool
from ..training.launch import claim_gpus
from ..warm import IN_CHILD, is_workflow_script


def setup_job(log_path: str | None, threads: int = 1, streaming: bool = False) -> logging.Logger:
    """Log to the rule's log file (line-buffered) and stderr; route warnings and tqdm there too. Limit torch
    to ``threads`` CPU threads (now if it is loaded, else when it is first imported: corpus and shard jobs
    never load it). ``streaming`` jobs (a corpus or its shards, batch by batch) :func:`return_freed_memory`;
    in the process of a workflow script Snakemake runs, every other job :func:`keep_freed_memory` (not in a
    test that runs a script in its own process: see :mod:`vocab_transfer.memory`), and Arrow uses the system
    allocator (:func:`use_system_arrow_pool`). The job's peak memory is logged at exit
    (:func:`log_peak_memory_at_exit`)."""
    if streaming:
        return_freed_memory()
    if is_workflow_script(sys.argv[0]):
        if not streaming:
            keep_freed_memory()
        use_system_arrow_pool()
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_path:
        stream = open(log_path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115 - lives as long as the job
        handlers.append(logging.StreamHandler(stream))
        sys.stderr = stream  # tqdm and library warnings end up in the rule's log
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s",
                        handlers=handlers, force=True)
    logging.captureWarnings(True)
    n = max(1, threads)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(n)
    else:
        os.environ["OMP_NUM_THREADS"] = str(n)  # torch's intra-op threads when it is imported
    log = logging.getLogger("job")
    log_peak_memory_at_exit(log)
    if os.environ.get(IN_CHILD):
        log.info("warm start: forked from the run's starter, imports done (vocab_transfer/warm.py)")

    job = snakemake_job()
    # a job in a bundle of GPU jobs (one SLURM job; workflow/bundles.py) takes its own of the bundle's GPUs
    claimed = claim_gpus(int(job.resources.get("gpu", 0) or 0)) if job is not None else None
    if claimed:
        log.info("claimed GPU(s) %s of the SLURM job's (training/launch.py: claim_gpus)", ",".join(claimed))
    set_job(job)  # what every artifact this job writes records as its origin
    if job is not None:
        verify_inputs(list(job.input))  # damaged or inconsistent inputs stop the job before it reads them
    return log

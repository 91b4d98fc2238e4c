"""A job process's memory: its peak as the kernel records it, logged at exit, and glibc's handling of freed blocks.

Used by every job (``vocab_transfer.workflow.job.setup_job``) and every trainer's command line
(``vocab_transfer.training.runtime.setup_logging``).
"""

from __future__ import annotations

import atexit
import ctypes
import ctypes.util
import logging
import resource

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc mallopt parameters


def return_freed_memory(threshold: int = 128 << 10) -> bool:
    """Make glibc give freed memory back to the system: blocks of ``threshold`` bytes or more are mapped on their
    own and unmapped when freed, and the heap is trimmed past ``threshold`` free bytes. glibc otherwise raises its
    mmap threshold to the largest block freed so far (up to 32 MB), so a streaming job's batches (Arrow buffers,
    arrays) end up on a heap that fragments and keeps growing: prepare_corpus peaked at 227 MB instead of 163 MB on
    1 GB of text, about 8% slower. Jobs whose big buffers are long-lived (torch training) keep glibc's default.
    Returns False where the C library is not glibc."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.mallopt(_M_MMAP_THRESHOLD, threshold) and libc.mallopt(_M_TRIM_THRESHOLD, threshold))
    except (OSError, AttributeError):
        return False


PEAK_MEMORY = "peak resident memory"  # the line a job logs at exit (benchmarks/corpus_scale.py reads it)


def peak_rss_mb() -> float:
    """This process's peak resident memory since it started its program (the kernel's high-water mark, ``VmHWM``),
    in MB (2^20 bytes). Not ``getrusage``'s ``ru_maxrss``: that keeps the peak of the process it was forked from
    (a job started by Snakemake would report Snakemake's own memory)."""
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024  # kB
    except (OSError, StopIteration):  # not Linux
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def log_peak_memory_at_exit(log: logging.Logger) -> None:
    """Log :func:`peak_rss_mb` when the process exits (once per process): an exact figure, where a scheduler's or
    Snakemake's ``benchmark:`` samples the memory (every 30 s after a job's first 15 s) and can miss a short peak."""
    global _peak_logger
    if _peak_logger is None:
        atexit.register(_log_peak)
    _peak_logger = log


_peak_logger: logging.Logger | None = None


def _log_peak() -> None:
    logging.raiseExceptions = False  # a handler whose file is gone by now (a test's) stays silent
    if _peak_logger is not None:
        _peak_logger.info("%s: %.0f MB (high-water mark of the job's process)", PEAK_MEMORY, peak_rss_mb())

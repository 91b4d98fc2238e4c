"""A job process's memory: its peak as the kernel records it, logged at exit, and how glibc frees blocks.

Used by every job (``vocab_transfer.workflow.job.setup_job``) and every trainer's command line
(``vocab_transfer.training.runtime.setup_logging``; the trainers' ``__main__`` keep freed memory). Only job
processes raise glibc's thresholds (:func:`keep_freed_memory`): under them a second fastText training in one
process reads memory the first left behind (its vectors then differ from run to run; the first training's
equal those of glibc's defaults), so a test process that calls a trainer's ``main`` must keep glibc's
defaults. A job trains fastText once.
"""

from __future__ import annotations

import atexit
import ctypes
import ctypes.util
import logging
import os
import resource
import sys

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc mallopt parameters


def return_freed_memory(threshold: int = 128 << 10) -> bool:
    """Make glibc give freed memory back to the system: blocks of ``threshold`` bytes or more are mapped on
    their own and unmapped when freed, and the heap is trimmed past ``threshold`` free bytes. glibc otherwise
    raises its mmap threshold to the largest block freed so far (up to 32 MB), so a streaming job's batches
    (Arrow buffers, arrays) end up on a heap that fragments and keeps growing: prepare_corpus peaked at 227 MB
    instead of 163 MB on 1 GB of text, about 8% slower. Jobs whose big buffers are long-lived (torch training)
    :func:`keep_freed_memory` instead. Returns False where the C library is not glibc."""
    return _set_malloc_thresholds(threshold)


def keep_freed_memory(threshold: int = 2**31 - 1) -> bool:
    """Make glibc keep freed memory for reuse: no block below ``threshold`` bytes is mapped on its own, and
    the heap is not trimmed. Otherwise glibc returns large freed blocks to the system at once, and every
    training step pays page faults for its activations again (17% of a CPU step of the demo's LAPT). For jobs
    whose big buffers are long-lived (torch training, inits); a ``MALLOC_MMAP_THRESHOLD_`` or
    ``MALLOC_TRIM_THRESHOLD_`` in the environment wins. Returns False where the C library is not glibc."""
    if "MALLOC_MMAP_THRESHOLD_" in os.environ or "MALLOC_TRIM_THRESHOLD_" in os.environ:
        return False
    return _set_malloc_thresholds(threshold)


def _set_malloc_thresholds(threshold: int) -> bool:
    """glibc's mmap and trim thresholds (``mallopt``), both ``threshold`` bytes; False without glibc."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.mallopt(_M_MMAP_THRESHOLD, threshold) and libc.mallopt(_M_TRIM_THRESHOLD, threshold))
    except (OSError, AttributeError):
        return False


def use_system_arrow_pool() -> None:
    """Arrow allocates through the system allocator: its default mimalloc pool keeps the row groups a job has
    read long after it let them go (about 60 MB per 100 MB corpus part read), where the system allocator
    reuses them. An ``ARROW_DEFAULT_MEMORY_POOL`` in the environment wins."""
    if "ARROW_DEFAULT_MEMORY_POOL" in os.environ:
        return
    os.environ["ARROW_DEFAULT_MEMORY_POOL"] = "system"  # read when pyarrow is imported
    if "pyarrow" in sys.modules:  # already imported (a warm start's child): switch the pool itself
        sys.modules["pyarrow"].set_memory_pool(sys.modules["pyarrow"].system_memory_pool())


PEAK_MEMORY = "peak resident memory"  # the line a job logs at exit (benchmarks/corpus_scale.py reads it)


def peak_rss_mb() -> float:
    """This process's peak resident memory since it started its program (the kernel's high-water mark,
    ``VmHWM``), in MB (2^20 bytes). Not ``getrusage``'s ``ru_maxrss``: that keeps the peak of the process it
    was forked from (a job started by Snakemake would report Snakemake's own memory)."""
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024  # kB
    except (OSError, StopIteration):  # not Linux
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def log_peak_memory_at_exit(log: logging.Logger) -> None:
    """Log :func:`peak_rss_mb` when the process exits (once per process): an exact figure, where a scheduler's
    or Snakemake's ``benchmark:`` samples the memory (every 30 s after 15 s) and can miss a short peak."""
    global _peak_logger
    if _peak_logger is None:
        atexit.register(_log_peak)
    _peak_logger = log


_peak_logger: logging.Logger | None = None


def _log_peak() -> None:
    logging.raiseExceptions = False  # a handler whose file is gone by now (a test's) stays silent
    if _peak_logger is not None:
        _peak_logger.info("%s: %.0f MB (high-water mark of the job's process)", PEAK_MEMORY, peak_rss_mb())

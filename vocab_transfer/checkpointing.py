"""What every job that resumes shares (the trainers of :mod:`vocab_transfer.training`, the refinement of
:mod:`vocab_transfer.methods.token_distillation`): the stop signals, and the check before a checkpoint is
read.

- :class:`StopSignals` turns SIGUSR1 / SIGTERM (SLURM's ``--signal`` warning, preemption) into a checkpoint
  after the current step and exit code :data:`EXIT_RESUME` (75, EX_TEMPFAIL), which the profile retries.
- :func:`check_checkpoint` refuses a checkpoint whose manifest
  (:func:`vocab_transfer.artifacts.write_manifest`, written with it by :func:`vocab_transfer.io.atomic_path`)
  is missing or does not match its files, before any of its bytes are read: :class:`CheckpointError` names it
  and the folder to delete. A checkpoint holds tensors (safetensors, or ``torch.save`` files loaded with
  ``weights_only=True``) and JSON only, so even one that passes its check because its manifest was rewritten
  along with it cannot run code.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from pathlib import Path

log = logging.getLogger(__name__)
EXIT_RESUME = 75  # EX_TEMPFAIL: checkpointed after a signal, rerun to resume
SIGNALS = (signal.SIGUSR1, signal.SIGTERM)


class CheckpointError(RuntimeError):
    """A checkpoint that is not read: it has no manifest, or its files do not match it, or it is in a format
    that could run code when loaded (the refinement's ``state.pt`` of older versions)."""


def check_checkpoint(path: str | Path, what: str, delete: str | Path, deep: bool = True) -> None:
    """:class:`CheckpointError` unless the checkpoint ``path`` (a folder, or a file with its manifest beside
    it) has a manifest and every file listed matches it, with no file added (``deep``: every file's hash
    compared, not only those whose modification time changed). ``what`` names the job, ``delete`` the folder
    whose removal starts it over."""
    from .artifacts import check_manifest, manifest_path

    path = Path(path)
    manifest = manifest_path(path)
    if not manifest.is_file():
        raise CheckpointError(f"{what} checkpoint {path} has no manifest ({manifest.name}), so it is not "
                              f"read: it was not written whole by this version; delete {delete} to start the "
                              f"run over")
    problems = check_manifest(path, deep=deep)
    if problems:
        raise CheckpointError(f"{what} checkpoint {path} does not match its manifest "
                              f"({'; '.join(problems)}), so it is not read; delete {delete} to start the run "
                              f"over")


class StopSignals:
    """Within ``with StopSignals() as stop:``, SIGUSR1 and SIGTERM set ``stop.received`` instead of killing
    the process; the job checkpoints after the current step and calls :meth:`exit`. The previous handlers are
    restored on leaving the block. Outside the main thread (where Python cannot handle signals) it changes
    nothing."""

    def __init__(self):
        self.received: int | None = None
        self._previous: dict = {}

    def _handle(self, signum, frame) -> None:
        self.received = signum
        log.warning("received signal %d: checkpointing after this step", signum)

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            self._previous = {s: signal.signal(s, self._handle) for s in SIGNALS}
        return self

    def __exit__(self, *exc) -> None:
        for s, handler in self._previous.items():
            signal.signal(s, handler)

    def exit(self, step: int) -> None:
        """Exit with :data:`EXIT_RESUME` after the checkpoint of ``step``."""
        cause = f"signal {self.received}" if self.received else "another process's signal"
        log.warning("checkpointed at step %d after %s; rerun to resume", step, cause)
        sys.exit(EXIT_RESUME)

"""Job setup shared by the thin adapters in ``workflow_scripts/``."""

from __future__ import annotations

import logging
import os
import sys


def setup_job(log_path: str | None, threads: int = 1) -> logging.Logger:
    """Log to the rule's log file (line-buffered) and stderr; route warnings and tqdm there too. Limit torch to
    ``threads`` CPU threads (now if it is loaded, else when it is first imported: corpus and shard jobs never load
    it)."""
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
    return logging.getLogger("job")

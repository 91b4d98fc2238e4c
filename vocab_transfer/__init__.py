"""Transfer pretrained language models to a new tokenizer.

Methods live in :mod:`vocab_transfer.methods` (one module per method, named after it); the
pipeline stages (corpus, tokenizer, fastText, overlap, source model, MLM evaluation) each have a
module of their own. See docs/methods.md for the map from paper sections to functions.
"""

import os as _os

__version__ = "0.1.0"

# Warm starts (vocab_transfer/workflow/warm.py): in a workflow script of a local run that has a starter, the
# package's first import hands the job to a process forked from the starter, which has done the imports already.
if _os.environ.get("VOCAB_TRANSFER_WARM", "0") != "0" and not _os.environ.get("VOCAB_TRANSFER_WARM_CHILD"):
    from .workflow.warm import handoff

    handoff()


def transfer(*args, **kwargs):
    """One transfer in one call: :func:`vocab_transfer.api.transfer` (imported on first use)."""
    from .api import transfer as run

    return run(*args, **kwargs)

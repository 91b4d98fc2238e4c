"""Transfer pretrained language models to a new tokenizer.

Methods live in :mod:`vocab_transfer.methods` (one module per method, named after it); the
pipeline stages (corpus, tokenizer, fastText, overlap, source model, MLM evaluation) each have a
module of their own. See docs/methods.md for the map from paper sections to functions.
"""

__version__ = "0.1.0"

# Importing the package does nothing else: a workflow script hands its job to the run's warm starter by
# calling vocab_transfer.warm.handoff() itself, before its other imports.


def transfer(*args, **kwargs):
    """One transfer in one call: :func:`vocab_transfer.api.transfer` (imported on first use)."""
    from .api import transfer as run

    return run(*args, **kwargs)

"""An export folder uploaded to the hub, its card's model-index with the lm-eval scores where there are any
(rule push_export)."""

from vocab_transfer.warm import handoff

handoff()  # a local run's job continues forked from the run's starter (vocab_transfer/warm.py)

import json

import pandas as pd

from vocab_transfer.export import card_with_scores, push_export
from vocab_transfer.io import atomic_path
from vocab_transfer.workflow.job import setup_job


def main(inputs, repo, private, receipt_path, log_path):
    log = setup_job(log_path)
    scores = pd.read_parquet(inputs["scores"]) if "scores" in inputs else None
    card = card_with_scores(inputs["model"], scores) if scores is not None and len(scores) else None
    receipt = push_export(inputs["model"], repo, private=private, card=card)
    log.info("pushed %s to %s (commit %s, %d files)", inputs["model"], receipt["url"], receipt["commit"],
             len(receipt["files"]))
    with atomic_path(receipt_path) as tmp:
        tmp.write_text(json.dumps(receipt, indent=1) + "\n")


main(dict(snakemake.input.items()), snakemake.params.repo, snakemake.params.private, snakemake.output.receipt,
     snakemake.log[0])

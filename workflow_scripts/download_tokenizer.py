"""Fetch an existing tokenizer named by hub id (tokenizer.pretrained) into resources/tokenizers/ on the login
node, its files alone, recording the commit in origin.json (rule download_tokenizer)."""

from vocab_transfer.warm import handoff

handoff()  # a local run's job continues forked from the run's starter (vocab_transfer/warm.py)

from vocab_transfer.source_model import download_hub_model
from vocab_transfer.workflow.job import setup_job


def main(repo, out_dir, log_path):
    log = setup_job(log_path)
    origin = download_hub_model(repo, None, out_dir, weights=False)
    log.info("downloaded the tokenizer of %s (commit %s, %d files) to %s", repo, origin["resolved_revision"],
             len(origin["files"]), out_dir)


main(snakemake.params.repo, snakemake.output.tokenizer, snakemake.log[0])

"""Fetch a hub corpus's data files into resources/corpora/<name>/ on the login node (rule download_corpus):
resumable, checked by size and hash, the commit recorded in fetch.json (vocab_transfer.data.fetch)."""

from vocab_transfer.warm import handoff

handoff()  # a local run's job continues forked from the run's starter (vocab_transfer/warm.py)

import json

from vocab_transfer.data.fetch import fetch_hub_corpus
from vocab_transfer.workflow.job import setup_job


def main(spec: dict, max_bytes, out_dir, log_path):
    log = setup_job(log_path)
    record = fetch_hub_corpus(spec, out_dir, max_bytes, log=log.info)
    log.info("fetched %d files (%.2f GB) of %s at %s into %s", len(record["files"]), record["bytes"] / 1e9,
             record["repo"], record["resolved_revision"], out_dir)


main(json.loads(snakemake.params.spec), snakemake.params.max_bytes, snakemake.output.folder, snakemake.log[0])

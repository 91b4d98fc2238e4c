"""Read, clean, filter, deduplicate and split one language's corpus, streaming (rule prepare_corpus)."""

import json

from vocab_transfer.data.corpus import build_corpus, write_stats
from vocab_transfer.workflow.job import setup_job


def main(spec, filter_cfg, split_cfg, seed, train_path, heldout_path, stats_path, log_path):
    log = setup_job(log_path, streaming=True)
    stats = build_corpus(spec, filter_cfg=filter_cfg, split_cfg=split_cfg, seed=seed, train_path=train_path,
                         heldout_path=heldout_path, log=log.info)
    write_stats(stats, stats_path)


main(json.loads(snakemake.params.spec), json.loads(snakemake.params.filter), json.loads(snakemake.params.split),
     snakemake.params.seed, snakemake.output.train, snakemake.output.heldout, snakemake.output.stats, snakemake.log[0])

"""Read, clean, filter and split one language's corpus (rule prepare_corpus)."""

import json

from vocab_transfer.corpus import build_corpus, write_corpus
from vocab_transfer.workflow import setup_job


def main(spec, filter_cfg, split_cfg, seed, train_path, heldout_path, log_path):
    log = setup_job(log_path)
    train, heldout = build_corpus(spec, filter_cfg=filter_cfg, split_cfg=split_cfg, seed=seed, log=log.info)
    write_corpus(train, train_path)
    write_corpus(heldout, heldout_path)


main(json.loads(snakemake.params.spec), json.loads(snakemake.params.filter), json.loads(snakemake.params.split), snakemake.params.seed,
     snakemake.output.train, snakemake.output.heldout, snakemake.log[0])

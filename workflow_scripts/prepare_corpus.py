"""Read, clean, filter, deduplicate and split one language's corpus, streaming (rule prepare_corpus)."""

from vocab_transfer.warm import handoff

handoff()  # a local run's job continues forked from the run's starter (vocab_transfer/warm.py)

import json

from vocab_transfer.data.corpus import build_corpus, write_stats
from vocab_transfer.workflow.job import setup_job
from vocab_transfer.workflow.model import Corpus, CorpusFilter, CorpusSplit


def main(spec: dict, filt: CorpusFilter, split: CorpusSplit, seed, train_path, heldout_path, stats_path,
         log_path):
    log = setup_job(log_path, streaming=True)
    stats = build_corpus(spec, filter_cfg=filt.model_dump(), split_cfg=split.model_dump(), seed=seed,
                         train_path=train_path, heldout_path=heldout_path, log=log.info)
    write_stats(stats, stats_path)


# The corpus spec stays the dict as written (it is recorded in stats.json and read by the source's reader),
# once checked against its section.
spec = json.loads(snakemake.params.spec)
Corpus.parse(spec, f"corpora.{snakemake.wildcards.corpus}")
if snakemake.input.fetched:  # a hub corpus fetched on the login node (rule download_corpus): read its files
    spec["fetched"] = snakemake.input.fetched
main(spec, CorpusFilter.parse(json.loads(snakemake.params.filter), "corpus_filter"),
     CorpusSplit.parse(json.loads(snakemake.params.split), "corpus_split"), snakemake.params.seed,
     snakemake.output.train, snakemake.output.heldout, snakemake.output.stats, snakemake.log[0])

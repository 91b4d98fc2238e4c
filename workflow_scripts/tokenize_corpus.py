"""Tokenize a corpus split once into a memory-mappable token shard (rules tokenize_corpus,
tokenize_source_corpus, tokenize_extended_corpus)."""

from vocab_transfer.warm import handoff

handoff()  # a local run's job continues forked from the run's starter (vocab_transfer/warm.py)

from vocab_transfer.data.shards import tokenize_corpus
from vocab_transfer.workflow.job import setup_job


def main(corpus, tokenizer_dir, out_dir, log_path, threads):
    setup_job(log_path, threads)
    tokenize_corpus(corpus, tokenizer_dir, out_dir, threads=threads)


main(snakemake.input.corpus, snakemake.input.tokenizer, snakemake.output.shards, snakemake.log[0],
     snakemake.threads)

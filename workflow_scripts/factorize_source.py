"""Factorize the source embedding matrix for UNKs Everywhere's MF methods (rule factorize_source)."""

from vocab_transfer.warm import handoff

handoff()  # a local run's job continues forked from the run's starter (vocab_transfer/warm.py)

import json

from vocab_transfer.data.tokenizer import load_tokenizer
from vocab_transfer.io import write_tensors
from vocab_transfer.methods.unks import factorize
from vocab_transfer.source_model import read_embedding_rows
from vocab_transfer.workflow.job import setup_job


def main(model_dir, spec, seed, out_path, log_path, threads):
    log = setup_job(log_path, threads)
    # the rows, not the model
    source = read_embedding_rows(model_dir).matrix()[: len(load_tokenizer(model_dir))]
    factors = factorize(source, seed=seed, **spec)
    log.info("factorized %s: %s", tuple(source.shape), {k: tuple(v.shape) for k, v in factors.items()})
    write_tensors(factors, out_path, metadata={"spec": json.dumps(spec, sort_keys=True), "seed": str(seed)})


main(snakemake.input.model, json.loads(snakemake.params.spec), snakemake.params.seed,
     snakemake.output.factors, snakemake.log[0], snakemake.threads)

"""Overlap between the source model's and a target tokenizer's vocabularies (rule compute_overlap)."""

from vocab_transfer.warm import handoff

handoff()  # a local run's job continues forked from the run's starter (vocab_transfer/warm.py)

from vocab_transfer.data.tokenizer import load_tokenizer
from vocab_transfer.io import write_parquet
from vocab_transfer.methods.overlap import OVERLAP_SCHEMA, compute_overlap
from vocab_transfer.workflow.job import setup_job


def main(model_dir, tokenizer_dir, out_path, log_path):
    log = setup_job(log_path)
    overlap = compute_overlap(load_tokenizer(model_dir), load_tokenizer(tokenizer_dir))
    log.info("overlap: %d tokens; by match kind: %s; symbolic: %d", len(overlap),
             overlap["match"].value_counts().to_dict(), int(overlap["symbolic"].sum()))
    write_parquet(overlap, out_path, schema=OVERLAP_SCHEMA)


main(snakemake.input.model, snakemake.input.tokenizer, snakemake.output.overlap, snakemake.log[0])

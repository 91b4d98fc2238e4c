"""Pack a target language's held-out token shard into fixed-length sequences (rules pack_heldout,
pack_heldout_extended)."""

from vocab_transfer.warm import handoff

handoff()  # a local run's job continues forked from the run's starter (vocab_transfer/warm.py)

import json

from vocab_transfer.data.shards import open_blocks
from vocab_transfer.data.tokenizer import load_tokenizer
from vocab_transfer.io import write_tensors
from vocab_transfer.workflow.job import setup_job


def main(shards, tokenizer_dir, spec, out_path, log_path):
    log = setup_job(log_path)
    blocks = open_blocks(shards, load_tokenizer(tokenizer_dir), spec["seq_len"], tokenizer_dir=tokenizer_dir,
                         max_blocks=spec["max_sequences"]).materialize()
    log.info("%d held-out sequences of %d tokens", *blocks.shape)
    write_tensors({"input_ids": blocks}, out_path)


main(snakemake.input.shards, snakemake.input.tokenizer, json.loads(snakemake.params.spec),
     snakemake.output.blocks, snakemake.log[0])

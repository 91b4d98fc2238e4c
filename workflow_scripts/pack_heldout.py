"""Pack a target language's held-out text into fixed-length sequences (rule pack_heldout)."""

import json

from vocab_transfer.corpus import read_corpus
from vocab_transfer.io import write_tensors
from vocab_transfer.mlm import pack_texts
from vocab_transfer.tokenizer import load_tokenizer
from vocab_transfer.workflow import setup_job


def main(corpus, tokenizer_dir, spec, out_path, log_path):
    log = setup_job(log_path)
    blocks = pack_texts(read_corpus(corpus)["text"].tolist(), load_tokenizer(tokenizer_dir), spec["seq_len"],
                        max_sequences=spec["max_sequences"])
    log.info("%d held-out sequences of %d tokens", *blocks.shape)
    write_tensors({"input_ids": blocks}, out_path)


main(snakemake.input.corpus, snakemake.input.tokenizer, json.loads(snakemake.params.spec), snakemake.output.blocks,
     snakemake.log[0])

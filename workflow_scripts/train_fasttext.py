"""Token-level fastText vectors for a tokenizer, trained on a corpus's token shard (rules train_fasttext,
train_source_fasttext)."""

from vocab_transfer.warm import handoff

handoff()  # a local run's job continues forked from the run's starter (vocab_transfer/warm.py)

import json

import pandas as pd

from vocab_transfer.data.shards import open_shard
from vocab_transfer.data.token_fasttext import train_token_fasttext
from vocab_transfer.data.tokenizer import load_tokenizer
from vocab_transfer.io import write_parquet, write_tensors
from vocab_transfer.workflow.job import setup_job
from vocab_transfer.workflow.model import FastText


def main(shards, tokenizer_dir, spec: FastText, seed, vectors_path, tokens_path, log_path):
    log = setup_job(log_path, spec.threads)
    tok = load_tokenizer(tokenizer_dir)
    shard = open_shard(shards, tokenizer_dir)
    timings = {}
    tv = train_token_fasttext(shard, tok, seed=seed, verbose=2, timings=timings, **spec.model_dump())
    log.info("pretokenized %d tokens in %.1f s; fastText trained in %.1f s (%.0f words/s, %d threads); "
             "vectors read in %.1f s", timings["tokens"], timings["pretokenize_s"], timings["fasttext_s"],
             timings["words_per_s"], spec.threads, timings["vectors_s"])
    log.info("%d of %d tokens have a vector (min_count=%d; %d documents, %d tokens)",
             int(tv.has_vector.sum()), len(tok), spec.min_count, shard.n_docs, shard.n_tokens)
    write_tensors({"vectors": tv.vectors, "has_vector": tv.has_vector, "counts": tv.counts}, vectors_path)
    write_parquet(pd.DataFrame({"token_id": range(len(tok)),
                                "token": tok.convert_ids_to_tokens(list(range(len(tok)))),
                                "count": tv.counts.numpy(), "has_vector": tv.has_vector.numpy()}),
                  tokens_path)


main(snakemake.input.shards, snakemake.input.tokenizer,
     FastText.parse(json.loads(snakemake.params.spec), "fasttext"), snakemake.params.seed,
     snakemake.output.vectors, snakemake.output.tokens, snakemake.log[0])

"""Word vectors of one language: word-level fastText on its corpus (streamed), or pretrained vectors (rule
build_word_vectors)."""

import json

import pandas as pd

from vocab_transfer.data.corpus import iter_texts
from vocab_transfer.data.word_vectors import read_fasttext_vectors, train_word_fasttext
from vocab_transfer.io import write_parquet, write_tensors
from vocab_transfer.workflow.job import setup_job


def main(inputs, spec, lang, vectors_path, words_path, log_path, threads):
    log = setup_job(log_path, threads)
    if "pretrained" in inputs:
        wv = read_fasttext_vectors(inputs["pretrained"], max_words=spec["pretrained"].get("max_words"), lang=lang)
        log.info("read %d word vectors from %s", len(wv.words), inputs["pretrained"])
    else:
        train = dict(spec["train"], threads=threads)
        wv = train_word_fasttext(iter_texts(inputs["corpus"]), seed=spec["seed"], verbose=2, **train)
        log.info("trained %d word vectors (dim %d) on %s", len(wv.words), wv.vectors.shape[1], inputs["corpus"])
    write_tensors({"vectors": wv.vectors}, vectors_path)
    write_parquet(pd.DataFrame({"word": wv.words, "count": wv.counts}), words_path)


main(dict(snakemake.input.items()), json.loads(snakemake.params.spec), snakemake.wildcards.lang,
     snakemake.output.vectors, snakemake.output.words, snakemake.log[0], snakemake.threads)

"""Word vectors of one language: word-level fastText on its corpus (streamed), or pretrained vectors (rule
build_word_vectors)."""

from vocab_transfer.warm import handoff

handoff()  # a local run's job continues forked from the run's starter (vocab_transfer/warm.py)

import json

import pandas as pd

from vocab_transfer.data.corpus import iter_texts
from vocab_transfer.data.word_vectors import from_fasttext_model, read_fasttext_vectors, train_word_fasttext
from vocab_transfer.io import write_parquet, write_tensors
from vocab_transfer.workflow.job import setup_job
from vocab_transfer.workflow.model import WordFastText, WordVectors


def main(inputs, spec: WordVectors | WordFastText, seed, lang, vectors_path, words_path, log_path):
    """``spec``: the language's pretrained vectors (``word_vectors.<lang>``) or the training settings."""
    log = setup_job(log_path, getattr(spec, "threads", 1))
    if isinstance(spec, WordVectors):
        wv = read_fasttext_vectors(inputs["pretrained"], max_words=spec.max_words, lang=lang)
        log.info("read %d word vectors from %s", len(wv.words), inputs["pretrained"])
    elif "model" in inputs:
        # trained by rule save_word_fasttext_model with these settings: read, not trained again
        import fasttext

        wv = from_fasttext_model(fasttext.load_model(inputs["model"]), spec.max_words)
        log.info("read %d word vectors from %s", len(wv.words), inputs["model"])
    else:
        wv = train_word_fasttext(iter_texts(inputs["corpus"]), seed=seed, verbose=2, **spec.model_dump())
        log.info("trained %d word vectors (dim %d) on %s", len(wv.words), wv.vectors.shape[1],
                 inputs["corpus"])
    write_tensors({"vectors": wv.vectors}, vectors_path)
    write_parquet(pd.DataFrame({"word": wv.words, "count": wv.counts}), words_path)


params, lang = json.loads(snakemake.params.spec), snakemake.wildcards.lang
main(dict(snakemake.input.items()),
     WordVectors.parse(params["pretrained"], f"word_vectors.{lang}") if "pretrained" in params
     else WordFastText.parse(params["train"], "word_fasttext"), params.get("seed"), lang,
     snakemake.output.vectors, snakemake.output.words, snakemake.log[0])

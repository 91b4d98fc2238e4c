"""Target-language SentencePiece Unigram tokenizer (rule train_tokenizer)."""

import json

from vocab_transfer.corpus import read_corpus
from vocab_transfer.io import atomic_path
from vocab_transfer.tokenizer import train_unigram_tokenizer
from vocab_transfer.workflow import setup_job


def main(corpus, spec, out_dir, log_path):
    log = setup_job(log_path)
    texts = read_corpus(corpus)["text"].tolist()[: spec.get("max_docs")]
    tok = train_unigram_tokenizer(texts, spec["vocab_size"], character_coverage=spec.get("character_coverage", 1.0),
                                  num_threads=spec.get("threads", 2), show_progress=True)
    log.info("trained %d tokens on %d documents", len(tok), len(texts))
    with atomic_path(out_dir, directory=True) as tmp:
        tok.save_pretrained(str(tmp))


main(snakemake.input.corpus, json.loads(snakemake.params.spec), snakemake.output.tokenizer, snakemake.log[0])

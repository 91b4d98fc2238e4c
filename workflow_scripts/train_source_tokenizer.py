"""Multilingual SentencePiece Unigram tokenizer for a source model pretrained here."""

import json

from vocab_transfer.corpus import read_corpus
from vocab_transfer.io import atomic_path
from vocab_transfer.tokenizer import train_unigram_tokenizer
from vocab_transfer.workflow import setup_job


def main(corpora, spec, out_dir, log_path):
    log = setup_job(log_path)
    cap = spec["tokenizer"].get("max_docs_per_language")
    texts = []
    for path in corpora:
        docs = read_corpus(path)["text"].tolist()[:cap]
        log.info("%s: %d documents", path, len(docs))
        texts.extend(docs)
    cfg = spec["tokenizer"]
    tok = train_unigram_tokenizer(texts, cfg["vocab_size"], character_coverage=cfg.get("character_coverage", 1.0),
                                  num_threads=cfg.get("threads", 2), show_progress=True)
    log.info("trained %d tokens", len(tok))
    with atomic_path(out_dir, directory=True) as tmp:
        tok.save_pretrained(str(tmp))


main(list(snakemake.input.corpora), json.loads(snakemake.params.spec), snakemake.output.tokenizer, snakemake.log[0])

"""Multilingual SentencePiece Unigram tokenizer for a source model pretrained here (rule
train_source_tokenizer): the first `max_docs_per_language` documents of each language, streamed from the
corpora."""

from vocab_transfer.warm import handoff

handoff()  # a local run's job continues forked from the run's starter (vocab_transfer/warm.py)

import itertools
import json

from vocab_transfer.data.corpus import iter_texts
from vocab_transfer.data.tokenizer import (
    save_tokenizer,
    tokenizer_fingerprint,
    train_unigram_tokenizer,
    write_training_info,
)
from vocab_transfer.io import atomic_path
from vocab_transfer.workflow.job import setup_job
from vocab_transfer.workflow.model import Pretrain


def main(corpora, spec: Pretrain, out_dir, log_path):
    log = setup_job(log_path)
    cfg = spec.tokenizer
    cap, counts = cfg.max_docs_per_language, {}

    def texts():
        for path in corpora:
            counts[path] = 0
            for text in itertools.islice(iter_texts(path), cap):
                counts[path] += 1
                yield text
            log.info("%s: %d documents", path, counts[path])

    tok = train_unigram_tokenizer(texts(), cfg.vocab_size, character_coverage=cfg.character_coverage,
                                  num_threads=cfg.threads, show_progress=True)
    log.info("trained %d tokens", len(tok))
    with atomic_path(out_dir, directory=True) as tmp:
        save_tokenizer(tok, tmp)
        write_training_info(tmp, {"corpora": counts, "settings": cfg.model_dump(),
                                  "sha256": tokenizer_fingerprint(tmp)})


main(list(snakemake.input.corpora),
     Pretrain.parse(json.loads(snakemake.params.spec), f"sources.{snakemake.wildcards.source}.pretrain"),
     snakemake.output.tokenizer, snakemake.log[0])

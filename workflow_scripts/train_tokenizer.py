"""Target-language tokenizer (rule train_tokenizer): trained on a seeded sample of the corpus streamed from
disk (SentencePiece Unigram, the family `tokenizer.kind` names, or that of the source tokenizer
`tokenizer.like` names), or an existing tokenizer copied in where the config's `tokenizer.pretrained` names
one."""

from vocab_transfer.warm import handoff

handoff()  # a local run's job continues forked from the run's starter (vocab_transfer/warm.py)

import json
from pathlib import Path

import sentencepiece
import tokenizers

from vocab_transfer.artifacts import ORIGIN_FILE
from vocab_transfer.data.tokenizer import (
    load_tokenizer,
    sample_texts,
    save_tokenizer,
    tokenizer_fingerprint,
    tokenizer_kind,
    train_target_tokenizer,
    write_training_info,
)
from vocab_transfer.io import atomic_path
from vocab_transfer.workflow.job import setup_job
from vocab_transfer.workflow.model import Tokenizer
from vocab_transfer.workflow.views import followed_source


def main(corpus, spec: Tokenizer, pretrained, like, seed, out_dir, log_path, follow=None, follow_dirs=()):
    log = setup_job(log_path)
    if follow and not pretrained:  # no like, no kind: the layout of the one decoder source, else Unigram
        like = followed_source(follow, list(follow_dirs))
        log.info("tokenizer.like by default: %s",
                 like or f"none of {follow['sources']} is a decoder (Unigram)")
    info = {"corpus": corpus, "seed": seed,
            **{k: getattr(spec, k) for k in ("vocab_size", "input_sentence_size", "max_docs",
                                             "character_coverage", "threads")}}
    if pretrained:
        tok = load_tokenizer(pretrained)
        if not tok.is_fast:
            raise ValueError(
                f"tokenizer.pretrained {pretrained!r} has no fast (tokenizers) implementation: the "
                "overlap and the methods read its tokenizer.json")
        log.info("using the existing tokenizer %s (%s, %d tokens)", pretrained, type(tok).__name__, len(tok))
        info = {"pretrained": pretrained}
        # fetched from the hub (download_tokenizer): name the hub id, commit
        origin = Path(pretrained) / ORIGIN_FILE
        if origin.is_file():
            fetched = json.loads(origin.read_text())
            info = {"pretrained": fetched["repo"], "resolved_revision": fetched["resolved_revision"]}
    else:
        texts = sample_texts(corpus, spec.input_sentence_size, seed=seed, max_docs=spec.max_docs, info=info)
        template = load_tokenizer(like) if like else None
        tok = train_target_tokenizer(texts, spec.vocab_size, kind=spec.kind, like=template,
                                     character_coverage=spec.character_coverage, num_threads=spec.threads,
                                     show_progress=True)
        info.update(kind=tokenizer_kind(tok), sentencepiece=sentencepiece.__version__,
                    tokenizers=tokenizers.__version__, **({"like": like} if like else {}))
        log.info("trained %d %s tokens on %d of %d documents (%.1f MB of text)%s", len(tok), info["kind"],
                 info["sample_docs"], info["corpus_docs"], info["sample_bytes"] / 1e6,
                 f" in the layout of {like}" if like else "")
    with atomic_path(out_dir, directory=True) as tmp:
        save_tokenizer(tok, tmp)
        write_training_info(tmp, info | {"sha256": tokenizer_fingerprint(tmp)})


written = json.loads(snakemake.params.spec)
main(snakemake.input.corpus, Tokenizer.parse({k: v for k, v in written.items() if k != "follow"},
                                             f"tokenizer ({snakemake.wildcards.target})"),
     snakemake.input.pretrained or None, snakemake.input.like or None, snakemake.params.seed,
     snakemake.output.tokenizer, snakemake.log[0], written.get("follow"), snakemake.input.follow)

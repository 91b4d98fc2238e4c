"""Target-language tokenizer (rule train_tokenizer): SentencePiece Unigram trained on the corpus, or an
existing tokenizer copied in where the config's `tokenizer.pretrained` names one."""

import json

from vocab_transfer.corpus import read_corpus
from vocab_transfer.io import atomic_path
from vocab_transfer.tokenizer import load_tokenizer, train_unigram_tokenizer
from vocab_transfer.workflow import setup_job


def main(corpus, spec, pretrained, out_dir, log_path):
    log = setup_job(log_path)
    if pretrained:
        tok = load_tokenizer(pretrained)
        if not tok.is_fast:
            raise ValueError(f"tokenizer.pretrained {pretrained!r} has no fast (tokenizers) implementation: the "
                             "overlap and the methods read its tokenizer.json")
        log.info("using the existing tokenizer %s (%s, %d tokens)", pretrained, type(tok).__name__, len(tok))
    else:
        texts = read_corpus(corpus)["text"].tolist()[: spec.get("max_docs")]
        tok = train_unigram_tokenizer(texts, spec["vocab_size"], character_coverage=spec.get("character_coverage", 1.0),
                                      num_threads=spec.get("threads", 2), show_progress=True)
        log.info("trained %d tokens on %d documents", len(tok), len(texts))
    with atomic_path(out_dir, directory=True) as tmp:
        tok.save_pretrained(str(tmp))


main(snakemake.input.corpus, json.loads(snakemake.params.spec), snakemake.params.pretrained,
     snakemake.output.tokenizer, snakemake.log[0])

"""The path grammar of ``results/``: one function per artifact.

Rules, input functions, scripts and the package all take paths from here. Called with wildcard placeholders
(``corpus("{lang}", "{split}")``) a function gives the rule's readable output pattern; called with values it gives
the file. The shape of every path::

    results/corpus/<lang>/<split>.parquet/part-NNNNN.parquet   cleaned documents (split: train | heldout)
    results/corpus/<lang>/stats.json                           what was read, kept and dropped
    results/tokenizers/<lang>/                                 target tokenizer (+ training.json)
    results/shards/<lang>/<split>/                             the corpus tokenized with the target tokenizer
    results/source_shards/<source>/<lang>/<split>/             ... with the source model's tokenizer
    results/extended/<source>/<target>/<method>/tokenizer/     a source tokenizer extended with target tokens
    results/extended/<source>/<target>/<method>/shards/<split>/  the target corpus tokenized with it
    results/fasttext/<lang>/{vectors.safetensors,tokens.parquet}        token-level fastText (target tokenizer)
    results/source_fasttext/<source>/<lang>/{vectors.safetensors,tokens.parquet}  ... (source tokenizer)
    results/word_vectors/<lang>/{vectors.safetensors,words.parquet}     word-level fastText
    results/dictionaries/<source lang>/<lang>.parquet          bilingual dictionary

where ``<split>`` is ``train`` or ``heldout``. Every ``results/`` path of these artifacts is spelled here only.
"""

from __future__ import annotations

RESULTS = "results"
SPLITS = ("train", "heldout")


def corpus(lang: str, split: str) -> str:
    """A corpus split: a parquet directory dataset (``pandas.read_parquet`` opens it)."""
    return f"{RESULTS}/corpus/{lang}/{split}.parquet"


def corpus_stats(lang: str) -> str:
    return f"{RESULTS}/corpus/{lang}/stats.json"


def tokenizer(lang: str) -> str:
    """A language's target tokenizer folder (``AutoTokenizer`` loads it)."""
    return f"{RESULTS}/tokenizers/{lang}"


def shards(lang: str, split: str) -> str:
    """``corpus(lang, split)`` tokenized with ``tokenizer(lang)`` (:mod:`vocab_transfer.data.shards`)."""
    return f"{RESULTS}/shards/{lang}/{split}"


def source_tokenizer(source: str) -> str:
    """The tokenizer of a source model pretrained by the pipeline (trained before the model exists)."""
    return f"{RESULTS}/source/{source}/tokenizer"


def source_model(source: str) -> str:
    """A source model pretrained by the pipeline."""
    return f"{RESULTS}/source/{source}/model"


def source_shards(source: str, lang: str, split: str) -> str:
    """``corpus(lang, split)`` tokenized with the source model's tokenizer."""
    return f"{RESULTS}/source_shards/{source}/{lang}/{split}"


def extended_tokenizer(source: str, target: str, method: str) -> str:
    return f"{RESULTS}/extended/{source}/{target}/{method}/tokenizer"


def extended_shards(source: str, target: str, method: str, split: str) -> str:
    """``corpus(target, split)`` tokenized with ``extended_tokenizer(source, target, method)``."""
    return f"{RESULTS}/extended/{source}/{target}/{method}/shards/{split}"


def fasttext(lang: str, part: str = "vectors") -> str:
    """Token-level fastText of the target tokenizer: ``vectors`` (safetensors) or ``tokens`` (parquet)."""
    return f"{RESULTS}/fasttext/{lang}/{_fasttext_file(part)}"


def source_fasttext(source: str, lang: str, part: str = "vectors") -> str:
    """Token-level fastText of the source tokenizer on ``lang``'s corpus."""
    return f"{RESULTS}/source_fasttext/{source}/{lang}/{_fasttext_file(part)}"


def _fasttext_file(part: str) -> str:
    return {"vectors": "vectors.safetensors", "tokens": "tokens.parquet"}[part]


def word_vectors(lang: str, part: str = "vectors") -> str:
    """Word-level vectors: ``vectors`` (safetensors) or ``words`` (parquet: word, count)."""
    return f"{RESULTS}/word_vectors/{lang}/" + {"vectors": "vectors.safetensors", "words": "words.parquet"}[part]


def dictionary(source_lang: str, lang: str) -> str:
    return f"{RESULTS}/dictionaries/{source_lang}/{lang}.parquet"

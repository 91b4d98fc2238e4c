"""What an initialization method reads besides the source model, the target tokenizer and the overlap.

A method declares its needs as :class:`Need` values (``vocab_transfer.methods.register``); this registry says, for
each need, which artifacts become inputs of its ``init_embeddings`` job (:func:`init_inputs`, called by the DAG's
input function) and which :class:`~vocab_transfer.methods.TransferInputs` fields the loader fills from them
(``vocab_transfer.init.LOADERS``, keyed by the same values). Torch-free: it runs while Snakemake plans.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from . import paths


class Need(str, Enum):  # noqa: UP042 - StrEnum would change str(Need.X) from "Need.X" to its value
    """An artifact kind a method reads."""

    TOKEN_VECTORS = "fasttext"  # token-level fastText of the target tokenizer on the target corpus (+ counts; the
    #                             method's `fasttext` parameter, if any, names a recipe preset)
    SOURCE_TOKEN_VECTORS = "source_fasttext"  # ... of the source tokenizer on the `source_language` corpus
    TARGET_WORDS = "target_words"  # word vectors of the target language
    SOURCE_WORDS = "source_words"  # word vectors of the `source_language`
    WORD_MODELS = "word_fasttext_models"  # the word-level fastText models (.bin) of both languages (subword vectors)
    DICTIONARY = "dictionary"  # `source_language` -> target word pairs
    TOKENIZERS = "tokenizers"  # the source and target tokenizers themselves
    LANGUAGE_TOKENIZER = "language_tokenizer"  # a tokenizer trained on the `restrict_source` corpus (WECHSEL_EN)
    EXTENDED_TOKENIZER = "extended_tokenizer"  # the source tokenizer extended with target tokens (kind extend)
    FACTORS = "factorization"  # the source matrix's Semi-NMF factors (UNKs MF), shared per factorization setting


@dataclass(frozen=True)
class InitJob:
    """One ``init_embeddings`` job: its wildcards and the method's parameters (defaults filled in)."""

    source: str
    target: str
    method: str
    params: dict
    factorization: str | None = None  # the job's `mf-<hash>` key when it needs factors


@dataclass(frozen=True)
class NeedSpec:
    """The rule inputs of a need (input name -> path) and the TransferInputs fields its loader fills."""

    inputs: Callable[[InitJob], dict[str, str]]
    fills: tuple[str, ...]


NEEDS: dict[Need, NeedSpec] = {
    Need.TOKEN_VECTORS: NeedSpec(lambda j: {"vectors": paths.fasttext_vectors(j.target, j.params.get("fasttext"))},
                                 ("aux",)),
    Need.SOURCE_TOKEN_VECTORS: NeedSpec(
        lambda j: {"source_vectors": paths.source_fasttext_vectors(j.source, j.params["source_language"])},
        ("source_aux",)),
    Need.TARGET_WORDS: NeedSpec(lambda j: {"target_word_vectors": paths.word_vectors(j.target),
                                           "target_word_list": paths.word_list(j.target)}, ("target_words",)),
    Need.SOURCE_WORDS: NeedSpec(lambda j: {"source_word_vectors": paths.word_vectors(j.params["source_language"]),
                                           "source_word_list": paths.word_list(j.params["source_language"])},
                                ("source_words",)),
    Need.WORD_MODELS: NeedSpec(lambda j: {"source_word_model": paths.word_fasttext_model(j.params["source_language"]),
                                          "target_word_model": paths.word_fasttext_model(j.target)},
                               ("source_word_model", "target_word_model")),
    Need.DICTIONARY: NeedSpec(lambda j: {"dictionary": paths.dictionary(j.params["source_language"], j.target)},
                              ("dictionary",)),
    Need.TOKENIZERS: NeedSpec(lambda j: {}, ("source_tokenizer", "target_tokenizer")),
    Need.LANGUAGE_TOKENIZER: NeedSpec(lambda j: {"language_tokenizer": paths.tokenizer(j.params["restrict_source"])},
                                      ("language_tokenizer",)),
    Need.EXTENDED_TOKENIZER: NeedSpec(
        lambda j: {"extended_tokenizer": paths.extended_tokenizer(j.source, j.target, j.method)}, ()),
    Need.FACTORS: NeedSpec(lambda j: {"factors": paths.factors(j.source, j.factorization)}, ("source_factors",)),
}


def init_inputs(job: InitJob, needs: frozenset[Need]) -> dict[str, str]:
    """The inputs an ``init_embeddings`` job adds for ``needs``, in :class:`Need` order."""
    out: dict[str, str] = {}
    for need in Need:
        if need in needs:
            out.update(NEEDS[need].inputs(job))
    return out

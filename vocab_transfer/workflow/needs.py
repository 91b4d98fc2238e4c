"""Where the artifacts a method reads live: each :class:`~vocab_transfer.methods.Need` becomes inputs of the
``init_embeddings`` job (:func:`init_inputs`, called by the DAG's input function), named as
:data:`vocab_transfer.methods.NEED_INPUTS` names them; ``vocab_transfer.init`` loads them by those names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..methods import Need
from . import paths


@dataclass(frozen=True)
class InitJob:
    """One ``init_embeddings`` job: its wildcards and the method's parameters (defaults filled in)."""

    source: str
    target: str
    method: str
    params: dict
    factorization: str | None = None  # the job's `mf-<hash>` key when it needs factors
    # the method's token-level fastText recipe preset (``methods.<name>.fasttext``)
    fasttext: str | None = None
    language: str | None = None  # the target's language (dictionaries; default: the target's name)
    target_words: str | None = None  # where its word vectors live (word_vectors/<key>; default: the language)
    source_words: str | None = None  # ... and the source language's (default: params["source_language"])
    corpus: str | None = None  # the target's corpus (default: the target's name)

    @property
    def lang(self) -> str:
        return self.language or self.target

    @property
    def words(self) -> tuple[str, str | None]:
        """The word-vector keys of (target language, source language)."""
        return self.target_words or self.lang, self.source_words or self.params.get("source_language")


#: The paths of each need's inputs for one job: input name (those of ``NEED_INPUTS``) -> path.
NEED_PATHS: dict[Need, Callable[[InitJob, paths.Paths], dict[str, str]]] = {
    Need.TOKEN_VECTORS: lambda j, p: {"vectors": p.fasttext_vectors(j.target, j.fasttext)},
    Need.SOURCE_TOKEN_VECTORS: lambda j, p: {
        "source_vectors": p.source_fasttext_vectors(j.source, j.params["source_language"])},
    Need.TARGET_WORDS: lambda j, p: {"target_word_vectors": p.word_vectors(j.words[0]),
                                     "target_word_list": p.word_list(j.words[0])},
    Need.SOURCE_WORDS: lambda j, p: {"source_word_vectors": p.word_vectors(j.words[1]),
                                     "source_word_list": p.word_list(j.words[1])},
    Need.WORD_MODELS: lambda j, p: {"source_word_model": p.word_fasttext_model(j.words[1]),
                                    "target_word_model": p.word_fasttext_model(j.words[0])},
    Need.DICTIONARY: lambda j, p: {"dictionary": p.dictionary(j.params["source_language"], j.lang)},
    Need.TOKENIZERS: lambda j, p: {},
    Need.LANGUAGE_TOKENIZER: lambda j, p: {"language_tokenizer": p.tokenizer(j.params["restrict_source"])},
    Need.EXTENDED_TOKENIZER: lambda j, p: {"extended_tokenizer": p.extended_tokenizer(j.source, j.target,
                                                                                      j.method)},
    Need.FACTORS: lambda j, p: {"factors": p.factors(j.source, j.factorization)},
    Need.SOURCE_TOKEN_VECTORS_TARGET: lambda j, p: {
        "source_vectors": p.source_fasttext_vectors(j.source, j.corpus or j.target)},
    Need.BASE_INIT: lambda j, p: {"base_init": p.init(j.source, j.target, j.params["init"]),
                                  "base_provenance": p.provenance(j.source, j.target, j.params["init"])},
    Need.TRAIN_TEXT: lambda j, p: {"train_text": p.corpus(j.corpus or j.target, "train")},
}


def init_inputs(job: InitJob, needs: frozenset[Need], at: paths.Paths | None = None) -> dict[str, str]:
    """The inputs an ``init_embeddings`` job adds for ``needs``, in :class:`Need` order (paths of the study
    ``at``)."""
    at = at or paths.Paths()
    return {name: path for need in Need if need in needs for name, path in NEED_PATHS[need](job, at).items()}

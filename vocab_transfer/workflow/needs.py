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
    fasttext: str | None = None  # the method's token-level fastText recipe preset (``methods.<name>.fasttext``)


#: The paths of each need's inputs for one job: input name (those of ``NEED_INPUTS``) -> path.
NEED_PATHS: dict[Need, Callable[[InitJob], dict[str, str]]] = {
    Need.TOKEN_VECTORS: lambda j: {"vectors": paths.fasttext_vectors(j.target, j.fasttext)},
    Need.SOURCE_TOKEN_VECTORS: lambda j: {
        "source_vectors": paths.source_fasttext_vectors(j.source, j.params["source_language"])},
    Need.TARGET_WORDS: lambda j: {"target_word_vectors": paths.word_vectors(j.target),
                                  "target_word_list": paths.word_list(j.target)},
    Need.SOURCE_WORDS: lambda j: {"source_word_vectors": paths.word_vectors(j.params["source_language"]),
                                  "source_word_list": paths.word_list(j.params["source_language"])},
    Need.WORD_MODELS: lambda j: {"source_word_model": paths.word_fasttext_model(j.params["source_language"]),
                                 "target_word_model": paths.word_fasttext_model(j.target)},
    Need.DICTIONARY: lambda j: {"dictionary": paths.dictionary(j.params["source_language"], j.target)},
    Need.TOKENIZERS: lambda j: {},
    Need.LANGUAGE_TOKENIZER: lambda j: {"language_tokenizer": paths.tokenizer(j.params["restrict_source"])},
    Need.EXTENDED_TOKENIZER: lambda j: {"extended_tokenizer": paths.extended_tokenizer(j.source, j.target, j.method)},
    Need.FACTORS: lambda j: {"factors": paths.factors(j.source, j.factorization)},
}


def init_inputs(job: InitJob, needs: frozenset[Need]) -> dict[str, str]:
    """The inputs an ``init_embeddings`` job adds for ``needs``, in :class:`Need` order."""
    out: dict[str, str] = {}
    for need in Need:
        if need in needs:
            out.update(NEED_PATHS[need](job))
    return out

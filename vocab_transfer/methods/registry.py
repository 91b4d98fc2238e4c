"""The method registry: config ``kind`` -> function, its keyword parameters and what it reads (:class:`Need`);
complete once :mod:`vocab_transfer.methods` is imported (its docstring)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType


class Need(str, Enum):  # noqa: UP042 - StrEnum would change str(Need.X) from "Need.X" to its value
    """An artifact kind a method reads besides the source model, the target tokenizer and the overlap."""

    TOKEN_VECTORS = "fasttext"  # token-level fastText of the target tokenizer on its corpus (+ counts; the
    #                             method's `fasttext` parameter, if any, names a recipe preset)
    SOURCE_TOKEN_VECTORS = "source_fasttext"  # ... of the source tokenizer on the `source_language` corpus
    TARGET_WORDS = "target_words"  # word vectors of the target language
    SOURCE_WORDS = "source_words"  # word vectors of the `source_language`
    WORD_MODELS = "word_fasttext_models"  # both languages' word-level fastText models (.bin, subword vectors)
    DICTIONARY = "dictionary"  # `source_language` -> target word pairs
    TOKENIZERS = "tokenizers"  # the source and target tokenizers themselves
    LANGUAGE_TOKENIZER = "language_tokenizer"  # a tokenizer trained on `restrict_source` text (WECHSEL_EN)
    EXTENDED_TOKENIZER = "extended_tokenizer"  # the source tokenizer plus target tokens (kind extend)
    FACTORS = "factorization"  # the source matrix's Semi-NMF factors (UNKs MF), one per factorization setting
    SOURCE_TOKEN_VECTORS_TARGET = "source_fasttext_target"  # token fastText of the source tokenizer on the
    #                             target's own corpus (TokAlign: both tokenizations of one text)
    BASE_INIT = "base_init"  # the init artifact and provenance of the row named by the method's `init`
    TRAIN_TEXT = "train_text"  # the target corpus's training split (text), for methods that train the rows


#: The names of the ``init_embeddings`` inputs that carry each need: the workflow gives each a path
#: (``vocab_transfer.workflow.needs``), ``vocab_transfer.init`` loads them into ``TransferInputs``.
NEED_INPUTS: dict[Need, tuple[str, ...]] = {
    Need.TOKEN_VECTORS: ("vectors",),
    Need.SOURCE_TOKEN_VECTORS: ("source_vectors",),
    Need.TARGET_WORDS: ("target_word_vectors", "target_word_list"),
    Need.SOURCE_WORDS: ("source_word_vectors", "source_word_list"),
    Need.WORD_MODELS: ("source_word_model", "target_word_model"),
    Need.DICTIONARY: ("dictionary",),
    Need.TOKENIZERS: (),
    Need.LANGUAGE_TOKENIZER: ("language_tokenizer",),
    Need.EXTENDED_TOKENIZER: ("extended_tokenizer",),
    Need.FACTORS: ("factors",),
    Need.SOURCE_TOKEN_VECTORS_TARGET: ("source_vectors",),
    Need.BASE_INIT: ("base_init", "base_provenance"),
    Need.TRAIN_TEXT: ("train_text",),
}

Needs = frozenset[Need]


@dataclass(frozen=True)
class Method:
    fn: Callable  # (TransferInputs, *, seed, **params) -> EmbeddingInit
    needs: Needs | Callable[[dict], Needs] = frozenset()  # fixed, or a function of the (defaulted) params


METHODS: dict[str, Method] = {}


def register(kind: str, needs: Needs | Callable[[dict], Needs] = frozenset()) -> Callable:
    """Decorator: register ``fn`` as config ``kind`` with the artifacts it ``needs`` (a set of :class:`Need`,
    or a function of its parameters, defaults filled in, returning one; ValueError for parameters that do not
    go together). A parameter's choices are a ``Literal`` in ``fn``'s signature, checked when a config is
    parsed."""

    def decorate(fn: Callable) -> Callable:
        if kind in METHODS:
            raise ValueError(f"method kind {kind!r} registered twice "
                             f"({METHODS[kind].fn.__module__}, {fn.__module__})")
        METHODS[kind] = Method(fn, needs)
        return fn

    return decorate


def kinds() -> list[str]:
    """Every registered kind, sorted."""
    return sorted(METHODS)


def keyword_parameters(kind: str) -> Mapping[str, inspect.Parameter]:
    """The keyword parameters of ``kind``'s function besides ``seed``: its config entry's keys."""
    return _keyword_parameters(METHODS[kind].fn)


@functools.cache  # the plan asks once per job; inspect.signature is slow
def _keyword_parameters(fn: Callable) -> Mapping[str, inspect.Parameter]:
    return MappingProxyType({n: p for n, p in inspect.signature(fn).parameters.items()
                             if p.kind == p.KEYWORD_ONLY and n != "seed"})


def method_params(kind: str, params: dict) -> dict:
    """``params`` completed with the defaults of the method function's keyword parameters."""
    defaults = {n: p.default for n, p in keyword_parameters(kind).items() if p.default is not p.empty}
    return {**defaults, **params}


def method_needs(kind: str, params: dict) -> Needs:
    """The artifacts method ``kind`` reads with these config parameters (ValueError for parameters that do not
    go together)."""
    needs = METHODS[kind].needs
    return needs(method_params(kind, params)) if callable(needs) else needs

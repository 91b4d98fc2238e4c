"""Embedding-initialization methods, one module per method, registered by config ``kind``.

=================  ==========================================  ===========================================
config ``kind``    function                                    paper
=================  ==========================================  ===========================================
``random``         :func:`random_mapping.init_random`          FOCUS §3.1 "Random" (Zoph et al. 2016)
``random_normal``  :func:`random_normal.init_random_normal`    FOCUS fn. 9: N(mean, std) of the source
``focus``          :func:`focus.init_focus`                    FOCUS §2, eqs. 1-6; ``overlap: symbolic``
                                                               and ``aux: word_fasttext`` give Table 4's
                                                               "Symbolic Overlap" and "Word-fastText"
``wechsel``        :func:`wechsel.init_wechsel`                WECHSEL §3; ``restrict_source: en`` gives
                                                               WECHSEL_EN (FOCUS §3.1)
``extend``         :func:`extension.init_extension`            FOCUS §3.1 vocabulary extension
``reinit_embed``   :func:`vocab_swap.init_reinit_embed`        vocab-swap §2 "Reinit Embed"
``freq_match``     :func:`vocab_swap.init_freq_match`          vocab-swap §2 "Freq Match" (explicit counts)
``dict_match``     :func:`vocab_swap.init_dict_match`          vocab-swap §2 "Dict Match"
``align_match``    :func:`vocab_swap.init_align_match`         vocab-swap §2 "Align Match" (Tran 2020)
``permute``        :func:`vocab_swap.init_permute`             vocab-swap §3 "Permute" (``window: 100``)
``keep``           :func:`vocab_swap.init_keep`                vocab-swap §3 "x% Kept" (``percent``)
``el``             :func:`unks.init_el`                        UNKs Everywhere §3.1 EL-RAND / EL-LEX
``mf``             :func:`unks.init_mf`                        UNKs Everywhere §3.2 MF¹ / MF¹⁰ (k-means,
                                                               neural), -RAND / -LEX (eqs. 2-4)
=================  ==========================================  ===========================================

A method's ``needs`` names the artifacts it reads beyond the source model and the overlap (the
workflow's ``init_inputs`` turns them into rule inputs): ``fasttext`` (target-token fastText),
``source_fasttext`` (source-token fastText on the ``source_language`` corpus), ``target_words`` /
``source_words`` (word vectors), ``dictionary`` (``source_language`` → target), ``tokenizers``,
``language_tokenizer`` (a tokenizer of ``restrict_source``), ``extended_tokenizer``, ``factorization``
(the source matrix factorized once per factorization spec, UNKs MF).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass

from .base import EmbeddingInit, TransferInputs
from .extension import init_extension
from .focus import init_focus
from .random_mapping import init_random
from .random_normal import init_random_normal
from .unks import init_el, init_mf
from .vocab_swap import (
    init_align_match,
    init_dict_match,
    init_freq_match,
    init_keep,
    init_permute,
    init_reinit_embed,
)
from .wechsel import init_wechsel

Needs = frozenset[str]


@dataclass(frozen=True)
class Method:
    fn: Callable[..., EmbeddingInit]
    needs: Needs | Callable[[dict], Needs] = frozenset()  # fixed, or a function of the (defaulted) params


def _one_of(p: dict, key: str, allowed: tuple[str, ...]) -> None:
    if p[key] not in allowed:
        raise ValueError(f"{key} must be one of {list(allowed)}, not {p[key]!r}")


def _focus_needs(p: dict) -> Needs:
    _one_of(p, "aux", ("token_fasttext", "word_fasttext"))
    _one_of(p, "overlap", ("full", "symbolic", "none"))
    _one_of(p, "screen_dtype", ("float32", "bfloat16"))
    return frozenset({"target_words", "tokenizers"} if p["aux"] == "word_fasttext" else {"fasttext"})


def _wechsel_needs(p: dict) -> Needs:
    _one_of(p, "screen_dtype", ("float32", "bfloat16"))
    needs = {"source_words", "target_words", "dictionary", "tokenizers"}
    return frozenset(needs | ({"language_tokenizer"} if p["restrict_source"] else set()))


def _extend_needs(p: dict) -> Needs:
    _one_of(p, "new_rows", ("focus", "random"))
    return frozenset({"fasttext", "tokenizers", "extended_tokenizer"})


def _dict_match_needs(p: dict) -> Needs:
    _one_of(p, "choose", ("first", "frequent"))
    return frozenset({"dictionary", "tokenizers"} | ({"source_fasttext"} if p["choose"] == "frequent" else set()))


def _align_match_needs(p: dict) -> Needs:
    extra = {"dictionary", "tokenizers"} if p["dictionary_anchors"] else set()
    return frozenset({"fasttext", "source_fasttext"} | extra)


def _permute_needs(p: dict) -> Needs:
    _one_of(p, "order", ("id", "frequency"))
    return frozenset({"fasttext"} if p["order"] == "frequency" else set())


METHODS: dict[str, Method] = {
    "random": Method(init_random),
    "random_normal": Method(init_random_normal),
    "focus": Method(init_focus, _focus_needs),
    "wechsel": Method(init_wechsel, _wechsel_needs),
    "extend": Method(init_extension, _extend_needs),
    "reinit_embed": Method(init_reinit_embed),
    "freq_match": Method(init_freq_match, frozenset({"fasttext", "source_fasttext"})),
    "dict_match": Method(init_dict_match, _dict_match_needs),
    "align_match": Method(init_align_match, _align_match_needs),
    "permute": Method(init_permute, _permute_needs),
    "keep": Method(init_keep),
    "el": Method(init_el),
    "mf": Method(init_mf, frozenset({"factorization"})),
}


#: Keys of a config `methods` entry that are not parameters of the method function.
ROW_KEYS = ("kind", "label", "targets")


def method_config(spec: dict) -> dict:
    """A config `methods` entry without its table-row keys: the method's parameters as configured."""
    return {k: v for k, v in spec.items() if k not in ROW_KEYS}


def method_params(kind: str, params: dict) -> dict:
    """``params`` completed with the defaults of the method function's keyword parameters."""
    sig = inspect.signature(METHODS[kind].fn)
    defaults = {n: p.default for n, p in sig.parameters.items()
                if p.kind == p.KEYWORD_ONLY and n != "seed" and p.default is not p.empty}
    return {**defaults, **params}


def method_needs(kind: str, params: dict) -> Needs:
    """The artifacts method ``kind`` reads with these config parameters."""
    needs = METHODS[kind].needs
    return needs(method_params(kind, params)) if callable(needs) else needs


def run_method(kind: str, inputs: TransferInputs, *, seed: int, **params) -> EmbeddingInit:
    """Run the method registered as ``kind`` with its config parameters."""
    if kind not in METHODS:
        raise ValueError(f"unknown method kind {kind!r}; known: {sorted(METHODS)}")
    return METHODS[kind].fn(inputs, seed=seed, **params)


__all__ = ["METHODS", "ROW_KEYS", "EmbeddingInit", "Method", "TransferInputs", "method_config", "method_needs",
           "method_params", "run_method"]

"""Embedding-initialization methods, one module per method, registered by config ``kind``.

======================  ========================================  ============================================
config ``kind``         function                                  paper
======================  ========================================  ============================================
``random``              :func:`random_mapping.init_random`        FOCUS §3.1 "Random" (Zoph et al. 2016)
``random_normal``       :func:`random_normal.init_random_normal`  FOCUS fn. 9: N(mean, std) of the source
``focus``               :func:`focus.init_focus`                  FOCUS §2, eqs. 1-6; ``overlap: symbolic``
                                                                  and ``aux: word_fasttext`` give Table 4's
                                                                  "Symbolic Overlap" and "Word-fastText"
``wechsel``             :func:`wechsel.init_wechsel`              WECHSEL §3; ``restrict_source: en`` gives
                                                                  WECHSEL_EN (FOCUS §3.1)
``fvt``                 :func:`fvt.init_fvt`                      FVT (Gee et al. 2022): mean of the source
                                                                  rows of a token's source-tokenizer pieces
``clp``                 :func:`clp.init_clp`                      CLP-Transfer (Ostendorff & Rehm 2023):
                                                                  cosine-weighted mean of the overlap's rows
``omp``                 :func:`omp.init_omp`                      OMP on anchor tokens (mergekit tokensurgeon)
``extend``              :func:`extension.init_extension`          FOCUS §3.1 vocab extension (new rows FOCUS,
                                                                  random or transformers' mean-resizing)
``reinit_embed``        :func:`vocab_swap.init_reinit_embed`      vocab-swap §2 "Reinit Embed"
``freq_match``          :func:`vocab_swap.init_freq_match`        vocab-swap §2 "Freq Match" (explicit counts)
``dict_match``          :func:`vocab_swap.init_dict_match`        vocab-swap §2 "Dict Match"
``align_match``         :func:`vocab_swap.init_align_match`       vocab-swap §2 "Align Match" (Tran 2020)
``permute``             :func:`vocab_swap.init_permute`           vocab-swap §3 "Permute" (``window: 100``)
``keep``                :func:`vocab_swap.init_keep`              vocab-swap §3 "x% Kept" (``percent``)
``el``                  :func:`unks.init_el`                      UNKs Everywhere §3.1 EL-RAND / EL-LEX
``mf``                  :func:`unks.init_mf`                      UNKs Everywhere §3.2 MF¹ / MF¹⁰ (k-means,
                                                                  neural), -RAND / -LEX (eqs. 2-4)
``tokalign``            :func:`tokalign.init_tokalign`            TokAlign (Li et al. 2025): one source row
                                                                  per target token, aligned by pivot tokens
``token_distillation``  :func:`token_distillation.                Token Distillation (Dobler et al. 2025):
                        init_token_distillation`                  another row's init refined by matching
                                                                  hidden states
``embedding_lm``        :func:`token_distillation.                its baseline: embedding-only LM training for
                        init_embedding_lm`                        the same token budget
======================  ========================================  ============================================

Each module registers its functions with :func:`registry.register` (kind, and the :class:`registry.Need`
values of what it reads beyond the source model and the overlap); this package imports every method module, so
``METHODS`` is complete once it is imported. The method modules bind torch, numpy and pandas lazily
(:mod:`vocab_transfer.lazy`): the workflow imports this package while it plans, and turns the needs into rule
inputs (``vocab_transfer.workflow.needs``); ``vocab_transfer.init`` loads them. A new method is one module
here plus its line in the imports below.
"""

from __future__ import annotations

from . import (  # noqa: F401 - each module registers its methods
    clp,
    extension,
    focus,
    fvt,
    omp,
    random_mapping,
    random_normal,
    tokalign,
    token_distillation,
    unks,
    vocab_swap,
    wechsel,
)
from .base import EmbeddingInit, TransferInputs
from .registry import (
    METHODS,
    NEED_INPUTS,
    Method,
    Need,
    Needs,
    keyword_parameters,
    kinds,
    method_needs,
    method_params,
    register,
)

HELPERS = ("align", "base", "factorized", "neighbours", "overlap",
           "registry", "semi_nmf", "sparsemax")  # no method


def method_config(spec: dict) -> dict:
    """A method entry (a job's ``{"kind": ..., **params}``, with the row keys of
    :class:`vocab_transfer.workflow.model.Method` where set) without its row keys: the keys that ``kind``'s
    function takes. Its signature is the one list of them; a key it does not take is refused when the config
    is parsed (``Method.check``)."""
    taken = keyword_parameters(spec["kind"])
    return {k: v for k, v in spec.items() if k in taken}


def run_method(kind: str, inputs: TransferInputs, *, seed: int, **params) -> EmbeddingInit:
    """Run the method registered as ``kind`` with its config parameters."""
    if kind not in METHODS:
        raise ValueError(f"unknown method kind {kind!r}; known: {kinds()}")
    return METHODS[kind].fn(inputs, seed=seed, **params)


__all__ = ["METHODS", "NEED_INPUTS", "EmbeddingInit", "Method", "Need", "Needs", "TransferInputs",
           "kinds", "method_config", "method_needs", "method_params", "register", "run_method"]

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
``fvt``            :func:`fvt.init_fvt`                        FVT (Gee et al. 2022): mean of the source rows
                                                               of a token's source-tokenizer pieces
``clp``            :func:`clp.init_clp`                        CLP-Transfer (Ostendorff & Rehm 2023): cosine-
                                                               weighted average of the overlap's source rows
``omp``            :func:`omp.init_omp`                        OMP over anchor tokens (mergekit tokensurgeon)
``extend``         :func:`extension.init_extension`            FOCUS §3.1 vocabulary extension (new rows FOCUS,
                                                               random, or transformers' mean-resizing)
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

Each module registers its functions with :func:`registry.register` (kind, and the
:class:`~vocab_transfer.workflow.needs.Need` values of what it reads beyond the source model and the overlap);
``METHODS`` and :func:`run_method` import every module of the package, so a new method is one module. The workflow
turns needs into rule inputs (``vocab_transfer.workflow.needs.init_inputs``) and ``vocab_transfer.init`` loads them.
Importing this package loads no method module (nor torch): the config checks and the plan read each method's kind,
needs and parameters through :mod:`.catalog`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..workflow.needs import Need
from .catalog import load_all, method_needs, method_params
from .registry import Method, Needs, register

if TYPE_CHECKING:
    from .base import EmbeddingInit, TransferInputs

HELPERS = ("align", "base", "neighbours", "overlap", "registry", "semi_nmf", "sparsemax")  # modules without a method


def __getattr__(name: str):
    """``METHODS`` (every method module imported), ``EmbeddingInit`` and ``TransferInputs`` (torch), on first use."""
    if name == "METHODS":
        return load_all()
    if name in ("EmbeddingInit", "TransferInputs"):
        from . import base

        return getattr(base, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: Keys of a config `methods` entry that are not parameters of the method function.
ROW_KEYS = ("kind", "label", "targets", "output_rows")


def method_config(spec: dict) -> dict:
    """A config `methods` entry without its table-row keys: the method's parameters as configured."""
    return {k: v for k, v in spec.items() if k not in ROW_KEYS}


def run_method(kind: str, inputs: TransferInputs, *, seed: int, **params) -> EmbeddingInit:
    """Run the method registered as ``kind`` with its config parameters."""
    methods = load_all()
    if kind not in methods:
        raise ValueError(f"unknown method kind {kind!r}; known: {sorted(methods)}")
    return methods[kind].fn(inputs, seed=seed, **params)


__all__ = ["METHODS", "ROW_KEYS", "EmbeddingInit", "Method", "Need", "Needs", "TransferInputs", "method_config",
           "method_needs", "method_params", "register", "run_method"]

"""Vocabulary extension (focus.md §3.1 after Wang et al. 2020): keep the source vocabulary and add
the ``new_tokens`` most frequent target tokens it lacks; new rows random or FOCUS.

The extended tokenizer is an artifact of its own (rule ``extend_tokenizer``): the source's Unigram
model with the new target pieces appended after the source's last id, each with its target
log-probability as score (both are Unigram log-probabilities, so Viterbi segmentation can choose
between old and new pieces; Wang et al. extend a WordPiece vocabulary, which has no scores).
"""

from __future__ import annotations

import json
from typing import Annotated

import numpy as np
import pandas as pd
import torch
from tokenizers import Tokenizer
from transformers import PreTrainedTokenizerFast

from ..typed import Range
from ..workflow.needs import Need
from .base import COMBINED, COPIED, RANDOM, SPECIAL, EmbeddingInit, TransferInputs, normal_like
from .focus import focus_init
from .registry import one_of, register


def select_new_tokens(overlap: pd.DataFrame, counts: np.ndarray, special_ids: list[int], n: int) -> np.ndarray:
    """Target ids of the ``n`` most frequent target tokens not in the overlap (ties by id); only tokens
    seen in the target corpus (count > 0) qualify."""
    counts = np.asarray(counts)
    free = np.ones(len(counts), dtype=bool)
    free[overlap["target_id"].to_numpy()] = False
    free[special_ids] = False
    free &= counts > 0
    ids = np.flatnonzero(free)
    order = np.lexsort((ids, -counts[ids]))
    return ids[order[:n]]


def extend_tokenizer(source_tokenizer, target_tokenizer, new_target_ids: np.ndarray) -> PreTrainedTokenizerFast:
    """The source tokenizer with target pieces ``new_target_ids`` appended (ids ``len(source)`` onwards)."""
    src = json.loads(source_tokenizer.backend_tokenizer.to_str())
    tgt = json.loads(target_tokenizer.backend_tokenizer.to_str())
    if src["model"]["type"] != "Unigram" or tgt["model"]["type"] != "Unigram":
        raise ValueError("vocabulary extension is implemented for SentencePiece Unigram source and target tokenizers "
                         f"(got {src['model']['type']} and {tgt['model']['type']})")
    vocab = src["model"]["vocab"]
    # added tokens past the Unigram vocabulary (our <mask>) keep their ids: pad the vocabulary with them
    beyond = sorted((t["id"], t["content"]) for t in src.get("added_tokens", []) if t["id"] >= len(vocab))
    if [i for i, _ in beyond] != list(range(len(vocab), len(vocab) + len(beyond))):
        raise ValueError("the source tokenizer's added tokens leave holes in the id space; cannot extend it")
    vocab += [[content, 0.0] for _, content in beyond]
    if len(vocab) != len(source_tokenizer):
        raise ValueError(f"source tokenizer: {len(vocab)} vocabulary entries for {len(source_tokenizer)} tokens")
    vocab += [tgt["model"]["vocab"][int(i)] for i in new_target_ids]
    backend = Tokenizer.from_str(json.dumps(src))
    special = {k: v for k, v in source_tokenizer.special_tokens_map.items() if isinstance(v, str)}
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, model_max_length=source_tokenizer.model_max_length,
                                  **special)
    assert len(tok) == len(source_tokenizer) + len(new_target_ids)
    return tok


def extension_needs(p: dict) -> frozenset[Need]:
    one_of(p, "new_rows", ("focus", "random"))
    return frozenset({Need.TOKEN_VECTORS, Need.TOKENIZERS, Need.EXTENDED_TOKENIZER})


@register("extend", extension_needs)
def init_extension(inputs: TransferInputs, *, seed: int, new_tokens: Annotated[int, Range(ge=0)] = 30000, new_rows: str = "focus",
                   topk: int = 64) -> EmbeddingInit:
    """Config adapter: ``kind: extend``; rows of the extended tokenizer (source rows, then new ones).

    ``new_rows: focus`` combines overlapping tokens' source rows by FOCUS (anchors: the overlap, with
    token-level fastText vectors); ``random`` draws from N(mean, std) of the source matrix.
    """
    if inputs.aux is None:
        raise ValueError("vocabulary extension needs target token counts (the fastText stage)")
    special = inputs.overlap.loc[inputs.overlap["match"] == "special", "target_id"].tolist()
    new = select_new_tokens(inputs.overlap, inputs.aux.counts.numpy(), special, new_tokens)
    source = inputs.source_matrix
    v_s, n = source.shape[0], len(new)
    matrix = torch.cat([source, torch.empty(n, source.shape[1], dtype=source.dtype)])
    provenance = np.array([COPIED] * v_s + [RANDOM] * n, dtype=object)
    special_source = inputs.overlap.loc[inputs.overlap["match"] == "special", "source_id"].to_numpy()
    provenance[special_source] = SPECIAL
    n_sources = np.concatenate([np.ones(v_s, dtype=np.int64), np.zeros(n, dtype=np.int64)])
    if new_rows == "focus":
        keep = torch.zeros_like(inputs.aux.has_vector)  # anchors (the overlap) and the new rows: no others
        keep[torch.as_tensor(new, dtype=torch.long)] = True
        keep[torch.tensor(inputs.overlap["target_id"].to_numpy(), dtype=torch.long)] = True
        rows, kind, k = focus_init(source, inputs.target_vocab_size, torch.tensor(inputs.overlap["target_id"].to_numpy()),
                                   torch.tensor(inputs.overlap["source_id"].to_numpy()), inputs.aux.vectors,
                                   inputs.aux.has_vector & keep, seed=seed, topk=topk)
        matrix[v_s:] = rows[new]
        provenance[v_s:] = np.where(kind[new].numpy() == 1, COMBINED, RANDOM)
        n_sources[v_s:] = k[new].numpy()
    elif new_rows == "random":
        matrix[v_s:] = normal_like(source, n, torch.Generator().manual_seed(seed))
    else:
        raise ValueError(f"new_rows must be focus or random, not {new_rows!r}")
    return EmbeddingInit(matrix, provenance, n_sources)

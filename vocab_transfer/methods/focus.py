"""FOCUS (Dobler & de Melo 2023, focus.md §2, Appendix B)."""

from __future__ import annotations

import torch
from tqdm import tqdm

from ..overlap import restrict_overlap
from ..sparsemax import sparsemax, topk_sparsemax
from ..word_vectors import tokenize_flatten_reduce
from .base import (
    EmbeddingInit,
    TransferInputs,
    normal_like,
    provenance_of,
    screen_dtype_of,
)


def focus_init(source: torch.Tensor, target_vocab_size: int, overlap_target_ids: torch.Tensor,
               overlap_source_ids: torch.Tensor, target_vectors: torch.Tensor, has_vector: torch.Tensor, *,
               seed: int, topk: int = 64, batch_size: int = 4096, screen_dtype: torch.dtype | None = None,
               progress: bool = False) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """FOCUS embeddings for a target vocabulary.

    - overlapping tokens O copy their source row (eq. 1);
    - each additional token a ∈ A with an auxiliary vector gets ``Σ_o sparsemax(c_a)_o · e_o^s``
      (eqs. 2-6), where ``c_a`` are cosine similarities of auxiliary (token-level fastText) vectors
      between a and the overlapping tokens that have one;
    - additional tokens without an auxiliary vector (below fastText's minCount) are drawn from
      N(mean, std) of the source matrix per dimension (Appendix B).

    The sparsemax is computed exactly on each row's ``topk`` most similar anchors (falling back to
    a full sort for rows whose support is wider); rows are processed in ``batch_size`` chunks, so
    memory stays at ``batch_size × |O|`` similarities. With ``screen_dtype=torch.bfloat16`` the
    similarities are computed in bf16 to shortlist each row's ``topk`` anchors, whose cosines are then
    recomputed in float32 for the sparsemax (rows whose support could reach beyond the shortlist are
    redone exactly in float32); about 2.5x faster on CPUs with bf16 units, and the result can differ
    from the exact one only if bf16 rounding pushes a support anchor out of the top ``topk``. Returns ``(matrix [V_t, d],
    kind [V_t] int8: 0 copied / 1 combined / 2 random, n_sources [V_t])``.
    """
    g = torch.Generator().manual_seed(seed)
    out = torch.empty(target_vocab_size, source.shape[1], dtype=source.dtype)
    kind = torch.full((target_vocab_size,), 2, dtype=torch.int8)
    n_sources = torch.zeros(target_vocab_size, dtype=torch.long)
    out[overlap_target_ids] = source[overlap_source_ids]
    kind[overlap_target_ids], n_sources[overlap_target_ids] = 0, 1

    in_overlap = torch.zeros(target_vocab_size, dtype=torch.bool)
    in_overlap[overlap_target_ids] = True
    anchor = has_vector[overlap_target_ids]
    anchor_t, anchor_s = overlap_target_ids[anchor], overlap_source_ids[anchor]
    additional = (~in_overlap & has_vector).nonzero(as_tuple=True)[0]
    if len(anchor_t) == 0:
        additional = additional[:0]  # nothing to combine: every additional token falls back to random
    x = torch.nn.functional.normalize(target_vectors.float(), dim=1)
    x_anchor = x[anchor_t]
    x_anchor_t = x_anchor.T.contiguous()
    x_screen = x_anchor_t.to(screen_dtype) if screen_dtype is not None else None
    e_anchor = source[anchor_s]
    for start in tqdm(range(0, len(additional), batch_size), desc="FOCUS", disable=not progress, mininterval=5):
        rows = additional[start:start + batch_size]
        if x_screen is None or topk >= len(anchor_t):
            w, idx = topk_sparsemax(x[rows] @ x_anchor_t, topk)  # eqs. 2-5
        else:
            idx = (x[rows].to(screen_dtype) @ x_screen).topk(topk, dim=1).indices
            w = sparsemax(torch.einsum("nd,nkd->nk", x[rows], x_anchor[idx]), dim=1)
            spill = (w > 0).sum(1) == topk  # support may extend past the shortlist: redo exactly
            if bool(spill.any()):
                wide_w, wide_i = topk_sparsemax(x[rows[spill]] @ x_anchor_t, topk)
                if wide_w.shape[1] > topk:
                    w = torch.nn.functional.pad(w, (0, wide_w.shape[1] - topk))
                    idx = torch.nn.functional.pad(idx, (0, wide_w.shape[1] - topk))
                w[spill], idx[spill] = wide_w, wide_i
        out[rows] = sparse_combine(w, idx, e_anchor)  # eq. 6
        kind[rows], n_sources[rows] = 1, (w > 0).sum(1)

    rand = (kind == 2).nonzero(as_tuple=True)[0]
    out[rand] = normal_like(source, len(rand), g)
    return out, kind, n_sources


def sparse_combine(w: torch.Tensor, idx: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """``Σ_k w[n, k] · rows[idx[n, k]]`` over the non-zero weights only (sparsemax leaves most of the
    ``topk`` weights at zero; gathering all of them would copy ``n × topk × d`` floats)."""
    nz = w > 0
    n = torch.arange(w.shape[0]).unsqueeze(1).expand_as(idx)[nz]
    out = torch.zeros(w.shape[0], rows.shape[1], dtype=rows.dtype)
    return out.index_add_(0, n, w[nz].to(rows.dtype).unsqueeze(1) * rows[idx[nz]])


def init_focus(inputs: TransferInputs, *, seed: int, overlap: str = "full", aux: str = "token_fasttext",
               topk: int = 64, batch_size: int = 4096, screen_dtype: str = "float32") -> EmbeddingInit:
    """Config adapter: ``kind: focus``.

    ``overlap: full | symbolic`` (Table 4 "Symbolic Overlap"); ``aux: token_fasttext`` (FOCUS's
    token-level fastText) or ``word_fasttext`` (Table 4 "Word-fastText": word-level fastText of the
    target language turned into token vectors by WECHSEL's tokenize-flatten-reduce);
    ``screen_dtype: bfloat16`` turns on the bf16 shortlist of :func:`focus_init`.
    """
    screen = screen_dtype_of(screen_dtype)
    if aux == "token_fasttext":
        if inputs.aux is None:
            raise ValueError("FOCUS needs auxiliary token vectors (the fastText stage)")
        vectors, has_vector = inputs.aux.vectors, inputs.aux.has_vector
    elif aux == "word_fasttext":
        if inputs.target_words is None or inputs.target_tokenizer is None:
            raise ValueError("FOCUS with aux: word_fasttext needs target word vectors and the target tokenizer")
        vectors, has_vector = tokenize_flatten_reduce(inputs.target_words, inputs.target_tokenizer,
                                                      inputs.target_vocab_size)
    else:
        raise ValueError(f"aux must be token_fasttext or word_fasttext, not {aux!r}")
    ov = restrict_overlap(inputs.overlap, overlap)
    matrix, kind, n_sources = focus_init(
        inputs.source_matrix, inputs.target_vocab_size, torch.tensor(ov["target_id"].to_numpy()),
        torch.tensor(ov["source_id"].to_numpy()), vectors, has_vector, seed=seed,
        topk=topk, batch_size=batch_size, progress=True,
        screen_dtype=screen)
    provenance = provenance_of(kind, ov.loc[ov["match"] == "special", "target_id"].to_numpy())
    return EmbeddingInit(matrix, provenance, n_sources.numpy())

"""FOCUS (Dobler & de Melo 2023, §2, Appendix B)."""

from __future__ import annotations

from typing import Annotated, Literal

from .. import lazy
from ..data.word_vectors import tokenize_flatten_reduce
from ..typed import Range
from .base import EmbeddingInit, TransferInputs, batched, fill_random, overlap_ids, provenance_of
from .neighbours import ScreenDtype, Workspace, mix_rows, neighbour_weights, screen_dtype_of
from .overlap import Overlap, restrict_overlap
from .registry import Need, register

torch = lazy.module("torch")


def focus_init(source: torch.Tensor, target_vocab_size: int, overlap_target_ids: torch.Tensor,
               overlap_source_ids: torch.Tensor, target_vectors: torch.Tensor, has_vector: torch.Tensor, *,
               seed: int, topk: int = 64, batch_size: int = 4096, screen_dtype: torch.dtype | None = None,
               screen_k: int = 16, progress: bool = False) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """FOCUS embeddings for a target vocabulary: overlapping tokens O copy their source row (eq. 1); each
    additional token a ∈ A with an auxiliary (token-level fastText) vector gets ``Σ_o sparsemax(c_a)_o ·
    e_o^s`` (eqs. 2-6), ``c_a`` its cosine similarities to the overlapping tokens that have one; the others
    (below fastText's minCount) are drawn from N(mean, std) of the source matrix per dimension (Appendix B).

    The sparsemax is exact (:func:`~.sparsemax.topk_sparsemax` on each row's ``topk`` most similar anchors,
    ``batch_size`` rows at a time). ``screen_dtype=torch.bfloat16``: a certified bf16 shortlist of
    ``screen_k`` anchors per row (:mod:`.neighbours`; the float32 selection, weights up to float32 rounding).
    Returns ``(matrix [V_t, d], kind [V_t] int8: 0 copied / 1 combined / 2 random, n_sources [V_t])``.
    """
    out = torch.empty(target_vocab_size, source.shape[1], dtype=source.dtype)
    kind = torch.full((target_vocab_size,), 2, dtype=torch.int8)
    n_sources = torch.zeros(target_vocab_size, dtype=torch.long)
    out[overlap_target_ids] = source[overlap_source_ids]
    kind[overlap_target_ids], n_sources[overlap_target_ids] = 0, 1
    anchor = has_vector[overlap_target_ids]
    anchor_t, anchor_s = overlap_target_ids[anchor], overlap_source_ids[anchor]
    additional = ((kind != 0) & has_vector).nonzero(as_tuple=True)[0]  # kind 0: the overlap
    if len(anchor_t) == 0:
        additional = additional[:0]  # nothing to combine: every additional token falls back to random
    x = torch.nn.functional.normalize(target_vectors.float(), dim=1)
    x_anchor = x[anchor_t]
    x_anchor_t = x_anchor.T.contiguous()
    x_screen = x_anchor_t.to(screen_dtype) if screen_dtype is not None else None
    e_anchor, workspace = source[anchor_s], Workspace()
    for rows in batched(additional, batch_size, "FOCUS", progress):
        w, idx = neighbour_weights(x[rows], x_anchor, x_anchor_t, weighting="sparsemax", k=topk,
                                   screen=x_screen, screen_k=screen_k, workspace=workspace)  # eqs. 2-5
        out[rows] = mix_rows(w, idx, e_anchor)  # eq. 6
        kind[rows], n_sources[rows] = 1, (w > 0).sum(1)
    fill_random(out, (kind == 2).numpy(), source, seed)
    return out, kind, n_sources


def focus_needs(p: dict) -> frozenset[Need]:
    """FOCUS reads token-level fastText, or word vectors and the tokenizers (``aux: word_fasttext``)."""
    if p["aux"] == "word_fasttext":
        return frozenset({Need.TARGET_WORDS, Need.TOKENIZERS})
    return frozenset({Need.TOKEN_VECTORS})


@register("focus", focus_needs)
def init_focus(inputs: TransferInputs, *, seed: int, overlap: Overlap = "full",
               aux: Literal["token_fasttext", "word_fasttext"] = "token_fasttext",
               topk: Annotated[int, Range(ge=1)] = 64, batch_size: Annotated[int, Range(ge=1)] = 4096,
               screen_dtype: ScreenDtype = "bfloat16", screen_k: int = 16) -> EmbeddingInit:
    """Config adapter: ``kind: focus``. ``overlap``: :func:`~.overlap.restrict_overlap` (``symbolic``: Table 4
    "Symbolic Overlap"); ``aux: token_fasttext`` (FOCUS's token-level fastText, whose recipe is the config
    entry's ``fasttext``, e.g. the authors' ``deepfocus`` CBOW) or ``word_fasttext`` (Table 4 "Word-fastText":
    word-level fastText turned into token vectors by WECHSEL's tokenize-flatten-reduce); ``screen_dtype``:
    ``bfloat16`` (default, 2x faster at paper scale on CPU) or ``float32`` (:func:`focus_init`)."""
    screen = screen_dtype_of(screen_dtype)
    if aux == "token_fasttext":
        if inputs.aux is None:
            raise ValueError("FOCUS needs auxiliary token vectors (the fastText stage)")
        vectors, has_vector = inputs.aux.vectors, inputs.aux.has_vector
    elif aux == "word_fasttext":
        if inputs.target_words is None or inputs.target_tokenizer is None:
            raise ValueError("FOCUS with aux: word_fasttext needs target word vectors "
                             "and the target tokenizer")
        vectors, has_vector = tokenize_flatten_reduce(inputs.target_words, inputs.target_tokenizer,
                                                      inputs.target_vocab_size)
    else:
        raise ValueError(f"aux must be token_fasttext or word_fasttext, not {aux!r}")
    ov = restrict_overlap(inputs.overlap, overlap)
    matrix, kind, n_sources = focus_init(
        inputs.source_matrix, inputs.target_vocab_size, *overlap_ids(ov), vectors, has_vector, seed=seed,
        topk=topk, batch_size=batch_size, progress=True, screen_dtype=screen, screen_k=screen_k)
    return EmbeddingInit(matrix, provenance_of(kind, ov), n_sources.numpy())

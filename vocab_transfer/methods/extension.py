"""Vocabulary extension (FOCUS §3.1 after Wang et al. 2020): keep the source vocabulary and add target tokens
it lacks; new rows FOCUS, random, or Hugging Face's mean-resizing (:func:`mean_resize_rows`).

Which tokens: ``top_tokens: N`` (default 30000, FOCUS's "top 30k tokens of the language-specific tokenizer",
273k in all by its footnote 4) takes the N most frequent target tokens and leaves out those the source has;
``new_tokens: N`` adds the N most frequent the source lacks. "Has" is the overlap (exact and fuzzy matches,
special tokens by role). The extended tokenizer is an artifact of its own (rule ``extend_tokenizer``): the
source's Unigram model with the new pieces appended, each scored by its target log-probability, so Viterbi
segmentation can choose between old and new pieces. Details: docs/methods.md, "Vocabulary extension".
"""

from __future__ import annotations

import json
from typing import Annotated, Literal

from tokenizers import Tokenizer

from .. import lazy
from ..typed import Range
from .base import COMBINED, COPIED, RANDOM, SPECIAL, EmbeddingInit, TransferInputs, normal_like, overlap_ids
from .focus import focus_init
from .registry import Need, register

np = lazy.module("numpy")
pd = lazy.module("pandas")
torch = lazy.module("torch")
transformers = lazy.module("transformers")

#: FOCUS §3.1: "the top 30k tokens of the language-specific tokenizer", when neither count key is given.
PAPER_TOP_TOKENS = 30000
COUNT_KEYS = ("top_tokens", "new_tokens")


def extension_count(top_tokens: int | None, new_tokens: int | None) -> tuple[str, int]:
    """``("top_tokens", N)`` or ``("new_tokens", N)``: the one count key given, FOCUS's top 30k when neither
    is; ValueError naming both keys when both are."""
    if top_tokens is not None and new_tokens is not None:
        raise ValueError(f"give one of {list(COUNT_KEYS)}, not both (top_tokens: the N most frequent target "
                         "tokens, those the source lacks added, FOCUS §3.1; new_tokens: N "
                         "tokens the source lacks)")
    if new_tokens is not None:
        return "new_tokens", new_tokens
    return "top_tokens", PAPER_TOP_TOKENS if top_tokens is None else top_tokens


def select_new_tokens(overlap: pd.DataFrame, counts: np.ndarray, special_ids: list[int], n: int, *,
                      top: bool = False) -> np.ndarray:
    """Target ids to add, most frequent first (ties by id); only tokens seen in the target corpus (count > 0)
    qualify. ``top=False``: the ``n`` commonest target tokens not in the overlap. ``top=True`` (FOCUS §3.1):
    of the ``n`` most frequent target tokens, those not in the overlap (so fewer than ``n``)."""
    counts = np.asarray(counts)
    seen = np.flatnonzero(counts > 0)
    ranked = seen[np.lexsort((seen, -counts[seen]))]
    if top:
        ranked = ranked[:n]
    free = np.ones(len(counts), dtype=bool)
    free[overlap["target_id"].to_numpy()] = False
    free[special_ids] = False
    ranked = ranked[free[ranked]]
    return ranked if top else ranked[:n]


def new_token_ids(overlap: pd.DataFrame, counts: np.ndarray, *, top_tokens: int | None = None,
                  new_tokens: int | None = None) -> np.ndarray:
    """The target ids an extension adds, by the count key given (:func:`extension_count`)."""
    key, n = extension_count(top_tokens, new_tokens)
    special = overlap.loc[overlap["match"] == "special", "target_id"].tolist()
    return select_new_tokens(overlap, counts, special, n, top=key == "top_tokens")


def mean_resize_rows(source: torch.Tensor, n: int, *, seed: int, covariance_scale: float = 1e-9,
                     chunk_rows: int = 4096) -> torch.Tensor:
    """``n`` rows from N(μ, s·Σ) of the rows of ``source`` (μ their mean, Σ their covariance divided by the
    row count, s = ``covariance_scale``): ``transformers``' mean-resizing (>= 4.46,
    ``_init_added_embeddings_weights_with_mean``, after Hewitt 2021; its s is 1e-9), seeded. Falls back to μ
    itself when s·Σ is not positive definite, as transformers does. Σ is accumulated in float64 chunks around
    the first chunk's mean (no centred copy of the matrix, little cancellation); the output bias is one more
    column of the draw (transformers draws it apart)."""
    v, d = source.shape
    shift = source[:chunk_rows].double().mean(0)
    total, gram = torch.zeros(d, dtype=torch.float64), torch.zeros(d, d, dtype=torch.float64)
    for chunk in source.split(chunk_rows):
        chunk = chunk.double() - shift
        total += chunk.sum(0)
        gram += chunk.T @ chunk
    offset = total / v
    mean = shift + offset
    cov = (gram - v * torch.outer(offset, offset)) / v
    chol, info = torch.linalg.cholesky_ex(covariance_scale * cov)
    if n == 0 or covariance_scale == 0 or info.item() != 0:
        return mean.to(source.dtype).expand(n, d).clone()
    z = torch.randn(n, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return (mean + z @ chol.T).to(source.dtype)


def extend_tokenizer(source_tokenizer, target_tokenizer,
                     new_target_ids: np.ndarray) -> transformers.PreTrainedTokenizerFast:
    """The source tokenizer with target pieces ``new_target_ids`` appended (ids ``len(source)`` onwards)."""
    src = json.loads(source_tokenizer.backend_tokenizer.to_str())
    tgt = json.loads(target_tokenizer.backend_tokenizer.to_str())
    if src["model"]["type"] != "Unigram" or tgt["model"]["type"] != "Unigram":
        raise ValueError("vocabulary extension is implemented for SentencePiece Unigram source and target "
                         f"tokenizers (got {src['model']['type']} and {tgt['model']['type']})")
    vocab = src["model"]["vocab"]
    # added tokens past the Unigram vocabulary (our <mask>) keep their ids: pad the vocabulary with them
    beyond = sorted((t["id"], t["content"]) for t in src.get("added_tokens", []) if t["id"] >= len(vocab))
    if [i for i, _ in beyond] != list(range(len(vocab), len(vocab) + len(beyond))):
        raise ValueError("the source tokenizer's added tokens leave holes in the id space; cannot extend it")
    vocab += [[content, 0.0] for _, content in beyond]
    if len(vocab) != len(source_tokenizer):
        raise ValueError(f"source tokenizer: {len(vocab)} vocabulary entries for "
                         f"{len(source_tokenizer)} tokens")
    vocab += [tgt["model"]["vocab"][int(i)] for i in new_target_ids]
    special = {k: v for k, v in source_tokenizer.special_tokens_map.items() if isinstance(v, str)}
    tok = transformers.PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_str(json.dumps(src)),
                                               model_max_length=source_tokenizer.model_max_length, **special)
    assert len(tok) == len(source_tokenizer) + len(new_target_ids)
    return tok


NEW_ROWS = ("focus", "random", "mean_resize")


def extension_needs(p: dict) -> frozenset[Need]:
    extension_count(p["top_tokens"], p["new_tokens"])
    return frozenset({Need.TOKEN_VECTORS, Need.TOKENIZERS, Need.EXTENDED_TOKENIZER})


@register("extend", extension_needs)
def init_extension(inputs: TransferInputs, *, seed: int,
                   top_tokens: Annotated[int, Range(ge=0)] | None = None,
                   new_tokens: Annotated[int, Range(ge=0)] | None = None,
                   new_rows: Literal[NEW_ROWS] = "focus",  # type: ignore[valid-type]
                   topk: Annotated[int, Range(ge=1)] = 64,
                   covariance_scale: Annotated[float, Range(ge=0)] = 1e-9) -> EmbeddingInit:
    """Config adapter: ``kind: extend``; rows of the extended tokenizer (source rows, then new ones; which
    tokens: the module docstring). ``new_rows: focus`` combines overlapping tokens' source rows by FOCUS
    (anchors: the overlap, with token-level fastText vectors); ``random`` draws from N(mean, std) of the
    source matrix per dimension; ``mean_resize``: :func:`mean_resize_rows`."""
    if inputs.aux is None:
        raise ValueError("vocabulary extension needs target token counts (the fastText stage)")
    new = new_token_ids(inputs.overlap, inputs.aux.counts.numpy(), top_tokens=top_tokens,
                        new_tokens=new_tokens)
    source = inputs.source_matrix
    v_s, n = source.shape[0], len(new)
    matrix = torch.cat([source, torch.empty(n, source.shape[1], dtype=source.dtype)])
    provenance = np.array([COPIED] * v_s + [RANDOM] * n, dtype=object)
    provenance[inputs.overlap.loc[inputs.overlap["match"] == "special", "source_id"].to_numpy()] = SPECIAL
    n_sources = np.concatenate([np.ones(v_s, dtype=np.int64), np.zeros(n, dtype=np.int64)])
    if new_rows == "focus":
        ov_t, ov_s = overlap_ids(inputs.overlap)
        keep = torch.zeros_like(inputs.aux.has_vector)  # anchors (the overlap) and the new rows: no others
        keep[torch.as_tensor(new, dtype=torch.long)] = True
        keep[ov_t] = True
        rows, kind, k = focus_init(source, inputs.target_vocab_size, ov_t, ov_s, inputs.aux.vectors,
                                   inputs.aux.has_vector & keep, seed=seed, topk=topk)
        matrix[v_s:] = rows[new]
        provenance[v_s:] = np.where(kind[new].numpy() == 1, COMBINED, RANDOM)
        n_sources[v_s:] = k[new].numpy()
    elif new_rows == "random":
        matrix[v_s:] = normal_like(source, n, torch.Generator().manual_seed(seed))
    elif new_rows == "mean_resize":
        matrix[v_s:] = mean_resize_rows(source, n, seed=seed, covariance_scale=covariance_scale)
    else:
        raise ValueError(f"new_rows must be one of {list(NEW_ROWS)}, not {new_rows!r}")
    return EmbeddingInit(matrix, provenance, n_sources)

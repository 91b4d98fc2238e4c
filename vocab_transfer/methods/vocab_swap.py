"""Initializations of "How to do a vocab swap?" (anonymous ICLR 2023 submission, §2.1, §3.1).

Cross-tokenizer schemes (§2.1): Reinit Embed, Freq Match (explicit frequency ranks), Dict Match
(single-word dictionary translations) and Align Match (Tran 2020). Embedding-recovery
perturbations (§3.1): Permute (whole vocabulary or within windows) and Keep-x%.

Conventions shared by every function here:

- random rows (:func:`random_rows`): ``init="normal"`` draws N(0, ``std``²) per entry (default 0.02, the
  ``initializer_range`` of BERT / RoBERTa / XLM-R: what the model's own ``_init_weights`` gives a fresh
  embedding), ``init="source"`` N(mean, std) per dimension of the source matrix (:func:`~.base.normal_like`,
  as FOCUS/WECHSEL). An MLM output bias column is drawn the same way: ≈ 0 (where HF initializes a bias), or
  from the bias's own statistics;
- special tokens matched by role are copied by every config adapter (docs/methods.md, "Special tokens"),
  except Reinit Embed with ``copy_special=False``;
- a local ``torch.Generator`` seeded by ``seed``: the same seed gives a bit-identical matrix whatever the
  global RNG state;
- ``source_language`` (Freq, Dict and Align Match): the language whose corpus (token counts / vectors) or
  dictionary stands for the source side; the workflow reads it to choose the job's inputs (default English,
  as the paper).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Annotated, Literal

from .. import lazy
from ..data.tokenizer import CanonicalToken, canonicalize_vocab
from ..typed import Range
from .align import mutual_nearest_neighbours, normalize_embeddings, procrustes
from .base import (
    COPIED,
    MAPPED,
    RANDOM,
    EmbeddingInit,
    TransferInputs,
    batched,
    copy_rows,
    labels,
    normal_like,
    overlap_ids,
    provenance_of,
    specials,
)
from .neighbours import WEIGHTINGS, Weighting, mix_rows, neighbour_weights
from .registry import Need, register

np = lazy.module("numpy")
pd = lazy.module("pandas")
torch = lazy.module("torch")

INITS = ("normal", "source")
Init = Literal[INITS]  # type: ignore[valid-type]  # the rows a method draws (:func:`random_rows`)
DEFAULT_STD = 0.02  # BERT / RoBERTa / XLM-R ``initializer_range``


# --------------------------------------------------------------------------------------------- helpers

def random_rows(source: torch.Tensor, n: int, generator: torch.Generator, *, init: str = "normal",
                std: float = DEFAULT_STD) -> torch.Tensor:
    """``n`` random rows shaped like ``source``'s, drawn as ``init`` says (the module docstring)."""
    if init == "normal":
        return std * torch.randn(n, source.shape[1], generator=generator, dtype=source.dtype)
    if init == "source":
        return normal_like(source, n, generator)
    raise ValueError(f"unknown random init {init!r}; known: {', '.join(INITS)}")


def map_rows_init(source: torch.Tensor, target_vocab_size: int, target_ids: torch.Tensor,
                  source_ids: torch.Tensor, *, seed: int, init: str = "normal", std: float = DEFAULT_STD,
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """Target row ``target_ids[i]`` ← source row ``source_ids[i]``; every other row random, drawn in ascending
    target-id order. Returns ``(matrix [V_t, d], source_row [V_t] long)``, -1 for a random row."""
    g = torch.Generator().manual_seed(seed)
    target_ids, source_ids = _long(target_ids, source_ids)
    source_row = torch.full((target_vocab_size,), -1, dtype=torch.long)
    source_row[target_ids] = source_ids
    out = torch.empty(target_vocab_size, source.shape[1], dtype=source.dtype)
    mapped = source_row >= 0
    out[mapped] = source[source_row[mapped]]
    rand = (~mapped).nonzero(as_tuple=True)[0]
    out[rand] = random_rows(source, len(rand), g, init=init, std=std)
    return out, source_row


def _long(*ids) -> tuple[torch.Tensor, ...]:
    return tuple(torch.as_tensor(i, dtype=torch.long) for i in ids)


def _exact(overlap: pd.DataFrame) -> pd.DataFrame:
    """The identical tokens (``match == "exact"``) by target id: pairs are permuted, kept and aligned in this
    order. (Special tokens come from :func:`~.base.specials`; their uses do not depend on the order.)"""
    return overlap[overlap["match"] == "exact"].sort_values("target_id")


def _fit(t: torch.Tensor, n: int, fill: float | bool = 0) -> torch.Tensor:
    """First ``n`` entries (rows) of ``t``, padded with ``fill`` if ``t`` is shorter."""
    return t[:n] if len(t) >= n else torch.cat([t, t.new_full((n - len(t), *t.shape[1:]), fill)])


def _mapped(inputs: TransferInputs, label: str | np.ndarray, matrix: torch.Tensor,
            source_row: torch.Tensor) -> EmbeddingInit:
    """:func:`_finish` of a matrix of :func:`map_rows_init`: ``label`` (per target id, or one for all) for the
    mapped rows, RANDOM elsewhere."""
    mapped = (source_row >= 0).numpy()
    return _finish(matrix, np.where(mapped, label, RANDOM).astype(object), mapped.astype(np.int64), inputs)


def _finish(matrix: torch.Tensor, provenance: np.ndarray, n_sources: np.ndarray, inputs: TransferInputs,
            copy_special: bool = True) -> EmbeddingInit:
    if copy_special:
        copy_rows(matrix, provenance, n_sources, inputs.source_matrix, specials(inputs.overlap))
    return EmbeddingInit(matrix, provenance, n_sources)


def _dictionary_pairs(inputs: TransferInputs, **kw) -> pd.DataFrame:
    """:func:`dictionary_token_pairs` of the two tokenizers, within both matrices' rows."""
    pairs = dictionary_token_pairs(canonicalize_vocab(inputs.source_tokenizer),
                                   canonicalize_vocab(inputs.target_tokenizer), inputs.dictionary, **kw)
    return pairs[(pairs["target_id"] < inputs.target_vocab_size).to_numpy()
                 & (pairs["source_id"] < inputs.source_matrix.shape[0]).to_numpy()]


# ---------------------------------------------------------------------------------------- Reinit Embed

@register("reinit_embed")
def init_reinit_embed(inputs: TransferInputs, *, seed: int, copy_special: bool = True, init: Init = "normal",
                      std: float = DEFAULT_STD) -> EmbeddingInit:
    """Config adapter: ``kind: reinit_embed`` (vocab-swap §2.1): every target row random, the pretrained
    backbone kept; ``copy_special: false`` draws the special tokens too (the paper's literal "all rows
    random")."""
    n = inputs.target_vocab_size
    matrix = random_rows(inputs.source_matrix, n, torch.Generator().manual_seed(seed), init=init, std=std)
    return _finish(matrix, *labels(n), inputs, copy_special)


# ------------------------------------------------------------------------------------------ Freq Match

def freq_match_pairs(target_counts: torch.Tensor, source_counts: torch.Tensor,
                     special_target_ids: torch.Tensor,
                     special_source_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Explicit frequency matching (vocab-swap §2.1 "Freq Match"): the target token of rank j gets the source
    token of rank j. Non-special target and source ids are each sorted by count, descending, ties by ascending
    id. Returns ``(target_ids, source_ids)`` paired by rank, ``min(#target, #source)`` long."""
    def ranked(counts: torch.Tensor, special: torch.Tensor) -> torch.Tensor:
        keep = torch.ones(len(counts), dtype=torch.bool)
        special = torch.as_tensor(special, dtype=torch.long)
        keep[special[special < len(counts)]] = False
        ids = keep.nonzero(as_tuple=True)[0]
        order = torch.sort(torch.as_tensor(counts)[ids].to(torch.float64),
                           descending=True, stable=True).indices
        return ids[order]

    t, s = ranked(target_counts, special_target_ids), ranked(source_counts, special_source_ids)
    n = min(len(t), len(s))
    return t[:n], s[:n]


@register("freq_match", frozenset({Need.TOKEN_VECTORS, Need.SOURCE_TOKEN_VECTORS}))
def init_freq_match(inputs: TransferInputs, *, seed: int, source_language: str = "en", init: Init = "normal",
                    std: float = DEFAULT_STD) -> EmbeddingInit:
    """Config adapter: ``kind: freq_match``. Ranks target tokens by ``inputs.aux.counts`` (target corpus) and
    source tokens by ``inputs.source_aux.counts`` (source-language corpus); specials are copied by role and
    take no part; target tokens ranked beyond the source vocabulary get random rows. Target ids missing from
    ``aux.counts`` count 0; only source ids in ``source_aux.counts`` (and the matrix) are ranked."""
    if inputs.aux is None or inputs.source_aux is None:
        raise ValueError("Freq Match needs target and source token counts (the fastText stages)")
    target_counts = _fit(inputs.aux.counts, inputs.target_vocab_size, 0)
    source_counts = inputs.source_aux.counts[: inputs.source_matrix.shape[0]]
    t, s = freq_match_pairs(target_counts, source_counts, *overlap_ids(specials(inputs.overlap)))
    return _mapped(inputs, MAPPED, *map_rows_init(inputs.source_matrix, inputs.target_vocab_size, t, s,
                                                  seed=seed, init=init, std=std))


# ------------------------------------------------------------------------------------------ Dict Match

CHOOSE = ("first", "frequent")


def _key(words: pd.Series, lowercase: bool) -> pd.Series:
    return words.str.casefold() if lowercase else words


def _word_table(vocab: Sequence[CanonicalToken], lowercase: bool) -> pd.DataFrame:
    """Whole-word tokens (BOW, non-special, non-empty) with their match key."""
    text = pd.Series([t.text for t in vocab], dtype="string")
    ok = np.array([t.bow and not t.special and t.text != "" for t in vocab], dtype=bool)
    df = pd.DataFrame({"id": np.arange(len(vocab), dtype=np.int64), "text": text})[ok]
    return df.assign(key=_key(df["text"], lowercase))


def dictionary_token_pairs(source_vocab: Sequence[CanonicalToken], target_vocab: Sequence[CanonicalToken],
                           dictionary: pd.DataFrame, *, lowercase: bool = True, choose: str = "first",
                           source_counts: torch.Tensor | np.ndarray | None = None) -> pd.DataFrame:
    """Single-word dictionary translations between two vocabularies (vocab-swap §2.1 "Dict Match").

    A target token qualifies if it is a whole word (BOW, non-special; canonical text of
    :func:`~vocab_transfer.data.tokenizer.canonicalize_vocab`) that is a ``target_word`` of ``dictionary``; a
    translation qualifies if its ``source_word`` is itself a single whole-word source token (multi-word or
    split translations drop out). With ``lowercase`` all are compared casefolded; a casefolded key of several
    source tokens (``"The"``, ``"the"``) resolves to the one in lower case, then the lowest id. Of several
    translations of one target token, ``choose="first"`` takes the first in dictionary order, ``"frequent"``
    the source token with the highest ``source_counts`` (ties: lowest id). Returns ``target_id, source_id,
    target_word, source_word`` (dictionary spellings), one row per matched target token, by ``target_id``.
    """
    if choose not in CHOOSE:
        raise ValueError(f"unknown choose {choose!r}; known: {', '.join(CHOOSE)}")
    if choose == "frequent" and source_counts is None:
        raise ValueError("choose='frequent' needs source_counts")
    tgt = _word_table(target_vocab, lowercase).rename(columns={"id": "target_id"})
    src = _word_table(source_vocab, lowercase).rename(columns={"id": "source_id"})
    src["not_lower"] = src["text"] != src["key"]
    src = src.sort_values(["key", "not_lower", "source_id"]).drop_duplicates("key")

    d = dictionary[["source_word", "target_word"]].dropna().astype("string")
    d = d.assign(rank=np.arange(len(d)), source_word=d["source_word"].str.strip(),
                 target_word=d["target_word"].str.strip())
    d = d.assign(skey=_key(d["source_word"], lowercase), tkey=_key(d["target_word"], lowercase))

    m = tgt[["target_id", "key"]].merge(d, left_on="key", right_on="tkey").drop(columns="key")
    m = m.merge(src[["source_id", "key"]], left_on="skey", right_on="key")
    if choose == "first":
        m = m.sort_values(["target_id", "rank"])
    else:
        counts = np.asarray(source_counts, dtype=np.float64)
        sid = m["source_id"].to_numpy()
        m = m.assign(count=np.where(sid < len(counts), counts[np.minimum(sid, len(counts) - 1)], 0.0))
        m = m.sort_values(["target_id", "count", "source_id"], ascending=[True, False, True])
    m = m.drop_duplicates("target_id")
    return m[["target_id", "source_id", "target_word", "source_word"]].astype(
        {"target_id": "int64", "source_id": "int64"}).reset_index(drop=True)


def dict_match_needs(p: dict) -> frozenset[Need]:
    extra = {Need.SOURCE_TOKEN_VECTORS} if p["choose"] == "frequent" else set()
    return frozenset({Need.DICTIONARY, Need.TOKENIZERS} | extra)


@register("dict_match", dict_match_needs)
def init_dict_match(inputs: TransferInputs, *, seed: int, source_language: str = "en",
                    copy_overlap: bool = True, lowercase: bool = True,
                    choose: Literal["first", "frequent"] = "first", init: Init = "normal",
                    std: float = DEFAULT_STD) -> EmbeddingInit:
    """Config adapter: ``kind: dict_match``. Priority per target token: special (copied by role) > dictionary
    translation (:func:`dictionary_token_pairs`, provenance ``mapped``) > identical token (``match ==
    "exact"``, provenance ``copied``; only with ``copy_overlap``) > random.

    ``copy_overlap`` defaults to true: for two tokenizers of the same language Dict Match "devolves into an
    exact match between the two tokenizers" (§3.2, fn. 3), i.e. every identical token -- subwords included --
    keeps its row; across languages it also anchors numbers, names and identical subwords, and a translation
    still wins over an identical string (German "die" -> "the"). ``lowercase`` defaults to true: the paper's
    ``bert-base-uncased`` and MUSE-style dictionaries are lower case, German nouns capitalized.
    ``choose="frequent"`` ranks translations by ``inputs.source_aux.counts``.
    """
    if inputs.dictionary is None or inputs.source_tokenizer is None or inputs.target_tokenizer is None:
        raise ValueError("Dict Match needs a dictionary and both tokenizers")
    if choose == "frequent" and inputs.source_aux is None:
        raise ValueError("Dict Match with choose='frequent' needs source token counts "
                         "(source fastText stage)")
    pairs = _dictionary_pairs(inputs, lowercase=lowercase, choose=choose,
                              source_counts=inputs.source_aux.counts if choose == "frequent" else None)
    t, s = overlap_ids(pairs)
    label = np.full(inputs.target_vocab_size, MAPPED, dtype=object)
    if copy_overlap:
        exact = _exact(inputs.overlap)
        exact_t, exact_s = overlap_ids(exact[~exact["target_id"].isin(pairs["target_id"]).to_numpy()])
        t, s = torch.cat([t, exact_t]), torch.cat([s, exact_s])
        label[exact_t.numpy()] = COPIED
    return _mapped(inputs, label, *map_rows_init(inputs.source_matrix, inputs.target_vocab_size, t, s,
                                                 seed=seed, init=init, std=std))


# ----------------------------------------------------------------------------------------- Align Match

def align_match_init(source: torch.Tensor, target_vectors: torch.Tensor, target_has_vector: torch.Tensor,
                     source_vectors: torch.Tensor, source_has_vector: torch.Tensor,
                     anchor_target_ids: torch.Tensor, anchor_source_ids: torch.Tensor, *, seed: int,
                     weighting: str = "sparsemax", topk: int = 10, temperature: float = 0.1,
                     center: bool = True, refine_iters: int = 0, batch_size: int = 1024, init: str = "normal",
                     std: float = DEFAULT_STD,
                     progress: bool = False) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Align Match (Tran 2020; vocab-swap §2.1): align the target token vectors onto the source token vectors,
    then give each target token a convex combination of its nearest source rows.

    - both vector sets (rows with ``*_has_vector``) are normalized "renorm, center, renorm"
      (:func:`~.align.normalize_embeddings`);
    - ``W = procrustes(x_t[anchors], x_s[anchors])`` maps target space onto source space, the anchors being
      the given pairs (the adapter passes identical tokens, as Tran's identical-string seed dictionary);
      ``refine_iters`` times the anchors become the seed pairs plus the mutual nearest neighbours (cosine) of
      mapped target and source vectors, and ``W`` is re-fitted;
    - each target token with a vector gets ``Σ_j α_j e^s_j`` over source tokens with a vector, ``α =
      sparsemax(cos)`` (Tran 2020's released code; exact: ``max(topk, 64)`` only sizes the first pass of
      :func:`~.sparsemax.topk_sparsemax`) or, with ``weighting="softmax"``, ``softmax(cos/temperature)`` over
      the ``topk`` most similar, ``batch_size`` rows at a time; the others get :func:`random_rows`.

    Returns ``(matrix [V_t, d], kind [V_t] int8: 1 combined / 2 random, n_sources [V_t], W [dim_t, dim_s])``.
    """
    if weighting not in WEIGHTINGS:  # before the alignment work
        raise ValueError(f"unknown weighting {weighting!r}; known: {', '.join(WEIGHTINGS)}")
    g = torch.Generator().manual_seed(seed)
    V_t = len(target_vectors)
    t_rows = target_has_vector.nonzero(as_tuple=True)[0]
    s_rows = source_has_vector.nonzero(as_tuple=True)[0]
    anchor_t, anchor_s = _long(anchor_target_ids, anchor_source_ids)
    ok = target_has_vector[anchor_t] & source_has_vector[anchor_s]
    anchor_t, anchor_s = anchor_t[ok], anchor_s[ok]
    if len(anchor_t) == 0 or len(s_rows) == 0:
        raise ValueError("Align Match needs at least one anchor pair with vectors on both sides")
    xt = torch.zeros(V_t, target_vectors.shape[1])
    xt[t_rows] = normalize_embeddings(target_vectors[t_rows], center=center)
    xs = torch.zeros(len(source_vectors), source_vectors.shape[1])
    xs[s_rows] = normalize_embeddings(source_vectors[s_rows], center=center)

    W = procrustes(xt[anchor_t], xs[anchor_s])
    for _ in range(refine_iters):
        ia, ib = mutual_nearest_neighbours(torch.nn.functional.normalize(xt[t_rows] @ W, dim=1), xs[s_rows],
                                           batch_size=batch_size)
        key = torch.unique(torch.cat([anchor_t * len(xs) + anchor_s, t_rows[ia] * len(xs) + s_rows[ib]]))
        W = procrustes(xt[key // len(xs)], xs[key % len(xs)])

    out = torch.empty(V_t, source.shape[1], dtype=source.dtype)
    kind = torch.full((V_t,), 2, dtype=torch.int8)
    n_sources = torch.zeros(V_t, dtype=torch.long)
    xs_rows = xs[s_rows]
    xs_c, e_c = xs_rows.T.contiguous(), source[s_rows]
    for rows in batched(t_rows, batch_size, "Align Match", progress):
        q = torch.nn.functional.normalize(xt[rows] @ W, dim=1)
        w, idx = neighbour_weights(q, xs_rows, xs_c, weighting=weighting, temperature=temperature,
                                   k=max(topk, 64) if weighting == "sparsemax" else topk)
        out[rows] = mix_rows(w, idx, e_c)
        kind[rows], n_sources[rows] = 1, (w > 0).sum(1)
    rand = (kind == 2).nonzero(as_tuple=True)[0]
    out[rand] = random_rows(source, len(rand), g, init=init, std=std)
    return out, kind, n_sources, W


def align_match_needs(p: dict) -> frozenset[Need]:
    extra = {Need.DICTIONARY, Need.TOKENIZERS} if p["dictionary_anchors"] else set()
    return frozenset({Need.TOKEN_VECTORS, Need.SOURCE_TOKEN_VECTORS} | extra)


@register("align_match", align_match_needs)
def init_align_match(inputs: TransferInputs, *, seed: int, source_language: str = "en",
                     weighting: Weighting = "sparsemax", topk: Annotated[int, Range(ge=1)] = 10,
                     temperature: Annotated[float, Range(gt=0)] = 0.1, center: bool = True,
                     refine_iters: Annotated[int, Range(ge=0)] = 0,
                     copy_overlap: bool = False, dictionary_anchors: bool = False, lowercase: bool = True,
                     batch_size: int = 1024, init: Init = "normal",
                     std: float = DEFAULT_STD) -> EmbeddingInit:
    """Config adapter: ``kind: align_match``. Target vectors: ``inputs.aux`` (target-token fastText on the
    target corpus); source vectors: ``inputs.source_aux`` (source-token fastText on the source-language
    corpus). Anchors: the identical (``match == "exact"``) tokens with vectors on both sides, as Tran (2020)
    seeds the alignment, plus with ``dictionary_anchors`` the :func:`dictionary_token_pairs`. Defaults follow
    Tran's released code (alexa/ramen): no refinement (``refine_iters=0``) and sparsemax weights (k=10, τ=0.1
    for ``weighting="softmax"`` are our choice); Tran refines the Procrustes map with RCSLS (Joulin et al.
    2018), we stop at Procrustes. Specials are copied by role; ``copy_overlap`` also copies identical tokens
    (FOCUS-style; off in Tran)."""
    if inputs.aux is None or inputs.source_aux is None:
        raise ValueError("Align Match needs target and source token vectors (the fastText stages)")
    V_t, V_s = inputs.target_vocab_size, inputs.source_matrix.shape[0]
    special_t, special_s = overlap_ids(specials(inputs.overlap))
    exact = _exact(inputs.overlap)
    t_has = _fit(inputs.aux.has_vector, V_t, False).clone()
    t_has[special_t] = False
    s_has = _fit(inputs.source_aux.has_vector, V_s, False).clone()
    s_has[special_s] = False
    anchor_t, anchor_s = overlap_ids(exact)
    if dictionary_anchors:
        if inputs.dictionary is None or inputs.source_tokenizer is None or inputs.target_tokenizer is None:
            raise ValueError("dictionary_anchors needs a dictionary and both tokenizers")
        dict_t, dict_s = overlap_ids(_dictionary_pairs(inputs, lowercase=lowercase))
        anchor_t, anchor_s = torch.cat([anchor_t, dict_t]), torch.cat([anchor_s, dict_s])
    matrix, kind, n_sources, _ = align_match_init(
        inputs.source_matrix, _fit(inputs.aux.vectors, V_t, 0.0), t_has,
        _fit(inputs.source_aux.vectors, V_s, 0.0), s_has, anchor_t, anchor_s, seed=seed, weighting=weighting,
        topk=topk, temperature=temperature, center=center, refine_iters=refine_iters, batch_size=batch_size,
        init=init, std=std, progress=True)
    provenance = provenance_of(kind)
    n_sources = n_sources.numpy()
    if copy_overlap:
        copy_rows(matrix, provenance, n_sources, inputs.source_matrix, exact)
    return _finish(matrix, provenance, n_sources, inputs)


# --------------------------------------------------------------------------- Permute and Keep-x% (§3.1)

ORDERS = ("id", "frequency")


def window_groups(key: torch.Tensor, window: int) -> torch.Tensor:
    """Window index ``rank // window`` of each entry, ranking ``key`` ascending (ties: given order)."""
    if window < 1:
        raise ValueError(f"window must be a positive number of tokens, got {window}")
    rank = torch.empty(len(key), dtype=torch.long)
    rank[torch.sort(torch.as_tensor(key), stable=True).indices] = torch.arange(len(key))
    return torch.div(rank, window, rounding_mode="floor")


def permute_init(source: torch.Tensor, target_vocab_size: int, target_ids: torch.Tensor,
                 source_ids: torch.Tensor, *, seed: int, groups: torch.Tensor | None = None,
                 init: str = "normal", std: float = DEFAULT_STD) -> tuple[torch.Tensor, torch.Tensor]:
    """Permute (vocab-swap §3.1): scramble the rows the pairs ``target_ids[i] ← source_ids[i]`` would copy,
    uniformly at random among the pairs of the same ``groups`` value (window index per pair; ``None``: one
    group, the paper's "completely scrambling"): a random order, stably sorted by group. Other target rows are
    random. Returns ``(matrix [V_t, d], source_row [V_t])`` (-1 = random)."""
    g = torch.Generator().manual_seed(seed)
    target_ids, source_ids = _long(target_ids, source_ids)
    n = len(target_ids)
    groups = torch.zeros(n, dtype=torch.long) if groups is None else torch.as_tensor(groups, dtype=torch.long)
    by_group = torch.sort(groups, stable=True).indices  # pair positions, group by group
    rperm = torch.randperm(n, generator=g)
    shuffled = rperm[torch.sort(groups[rperm], stable=True).indices]  # same blocks, shuffled within each
    new_source = source_ids.clone()
    new_source[by_group] = source_ids[shuffled]
    return map_rows_init(source, target_vocab_size, target_ids, new_source,
                         seed=int(torch.randint(2**62, (1,), generator=g)), init=init, std=std)


def keep_init(source: torch.Tensor, target_vocab_size: int, target_ids: torch.Tensor,
              source_ids: torch.Tensor, *, seed: int, percent: float, init: str = "normal",
              std: float = DEFAULT_STD) -> tuple[torch.Tensor, torch.Tensor]:
    """Keep-x% (vocab-swap §3.1): keep exactly ``round(percent/100 · n)`` of the ``n`` pairs
    ``target_ids[i] ← source_ids[i]`` (rounded half up), chosen uniformly without replacement;
    every other target row, dropped pairs included, is random. Returns ``(matrix, source_row)``."""
    if not 0 <= percent <= 100:
        raise ValueError(f"percent must be in [0, 100], got {percent}")
    g = torch.Generator().manual_seed(seed)
    target_ids, source_ids = _long(target_ids, source_ids)
    n_keep = math.floor(percent / 100 * len(target_ids) + 0.5)
    kept = torch.randperm(len(target_ids), generator=g)[:n_keep].sort().values
    return map_rows_init(source, target_vocab_size, target_ids[kept], source_ids[kept],
                         seed=int(torch.randint(2**62, (1,), generator=g)), init=init, std=std)


def permute_needs(p: dict) -> frozenset[Need]:
    return frozenset({Need.TOKEN_VECTORS} if p["order"] == "frequency" else set())


@register("permute", permute_needs)
def init_permute(inputs: TransferInputs, *, seed: int, window: Annotated[int, Range(ge=1)] | None = None,
                 order: Literal["id", "frequency"] = "id", init: Init = "normal",
                 std: float = DEFAULT_STD) -> EmbeddingInit:
    """Config adapter: ``kind: permute`` (``window: null`` = Permute, ``window: 100`` = Permute 100), the
    paper's embedding-recovery setting (source tokenizer = target tokenizer) for any pair of tokenizers: the
    overlapping tokens are copied (specials by role, identical tokens), then the copied non-special rows are
    permuted among themselves (:func:`permute_init`, provenance ``mapped``) within windows of ``window``
    tokens: with ``order: id`` (the paper's frequency proxy) target-id ranges ``[k·window, (k+1)·window)`` --
    "token id 114 gets a row from ids 100-199"; specials stay put, so a window may hold fewer tokens -- with
    ``order: frequency`` blocks of ``window`` tokens ranked by ``inputs.aux.counts`` (descending, ties by id).
    Other target tokens are random."""
    if order not in ORDERS:
        raise ValueError(f"unknown order {order!r}; known: {', '.join(ORDERS)}")
    t, s = overlap_ids(_exact(inputs.overlap))
    groups = None
    if window is not None:
        if window < 1:
            raise ValueError(f"window must be a positive number of tokens, got {window}")
        if order == "id":
            groups = torch.div(t, window, rounding_mode="floor")
        else:
            if inputs.aux is None:
                raise ValueError("order='frequency' needs target token counts (the fastText stage)")
            groups = window_groups(-_fit(inputs.aux.counts, inputs.target_vocab_size, 0)[t], window)
    return _mapped(inputs, MAPPED, *permute_init(inputs.source_matrix, inputs.target_vocab_size, t, s,
                                                 seed=seed, groups=groups, init=init, std=std))


@register("keep")
def init_keep(inputs: TransferInputs, *, seed: int, percent: Annotated[float, Range(ge=0, le=100)],
              init: Init = "normal", std: float = DEFAULT_STD) -> EmbeddingInit:
    """Config adapter: ``kind: keep`` (``percent: 25 | 50 | 75`` = the paper's "x% Kept"): the base of
    :func:`init_permute`, then exactly ``round(percent %)`` of the copied non-special rows kept
    (:func:`keep_init`), the rest re-randomized."""
    t, s = overlap_ids(_exact(inputs.overlap))
    return _mapped(inputs, COPIED, *keep_init(inputs.source_matrix, inputs.target_vocab_size, t, s, seed=seed,
                                              percent=percent, init=init, std=std))

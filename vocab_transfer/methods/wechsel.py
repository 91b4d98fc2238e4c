"""WECHSEL (Minixhofer et al. 2022, §3) and WECHSEL_EN (Dobler & de Melo 2023, §3.1).

1. word vectors of the source language (S) and the target language (T) are aligned by orthogonal Procrustes on
   the pairs of a bilingual dictionary (WECHSEL §4: MUSE / FreeDict); T is mapped into S's space;
2. subword embeddings ``U^s``, ``U^t`` by tokenize-flatten-reduce (§3.1, eq. 1);
3. each target token with a non-zero ``U^t`` row = softmax(s/τ)-weighted mean of the source rows of its k most
   cosine-similar source tokens (§3.2, eqs. 2-3; τ = 0.1, k = 10 from their App. A); the others from N(E[E^s],
   Var[E^s]).

With a multilingual source, FOCUS applies WECHSEL "as-is using only English fastText word embeddings"
(``source_language: en``); WECHSEL_EN first restricts the source vocabulary to the tokens of an
English-specific tokenizer (``restrict_source: en``, after Wang et al. 2019).
"""

from __future__ import annotations

import logging
from typing import Annotated, Literal

from .. import lazy
from ..data.tokenizer import canonicalize_vocab
from ..data.word_vectors import WordVectors, fasttext_subword_vectors, tokenize_flatten_reduce
from ..typed import Range
from .align import normalize_embeddings, procrustes
from .base import EmbeddingInit, TransferInputs, batched, fill_random, overlap_ids, provenance_of, specials
from .neighbours import ScreenDtype, Workspace, mix_rows, neighbour_weights, screen_dtype_of
from .registry import Need, register

np = lazy.module("numpy")
pd = lazy.module("pandas")
torch = lazy.module("torch")

log = logging.getLogger(__name__)

DICTIONARY_PAIRS = ("case_variants", "unique")
SUBWORDS = ("tokenize", "fasttext")  # token vectors: tokenize-flatten-reduce (§3.1), fastText n-grams (D)


def dictionary_word_rows(source: WordVectors, target: WordVectors, dictionary: pd.DataFrame, *,
                         pairs: str = "case_variants") -> tuple[np.ndarray, np.ndarray]:
    """Row indices ``(s, t)`` of the dictionary pairs whose two words both have a vector.

    - ``case_variants`` (the ``wechsel`` package's ``_compute_align_matrix_from_dictionary``): each side is
      tried as written, lower-cased and title-cased, and every combination found on both sides is a pair, in
      dictionary order, duplicates included (a pair of lower-case words counts up to four times);
    - ``unique``: a word is looked up as written, else lower-cased (the first, most frequent, word of that
      spelling); each distinct pair of rows is used once.
    """
    s_words, t_words = dictionary["source_word"].tolist(), dictionary["target_word"].tolist()
    if pairs == "case_variants":
        s_index, t_index = ({w: i for i, w in reversed(list(enumerate(v.words)))}  # first row of a word
                            for v in (source, target))
        rows = [(s_index[a], t_index[b]) for sw, tw in zip(s_words, t_words, strict=True)
                for a in (sw, sw.lower(), sw.title()) if a in s_index
                for b in (tw, tw.lower(), tw.title()) if b in t_index]
        out = np.asarray(rows, dtype=np.int64).reshape(-1, 2)
        return out[:, 0], out[:, 1]
    if pairs != "unique":
        raise ValueError(f"pairs must be one of {DICTIONARY_PAIRS}, not {pairs!r}")

    def rows(vocabulary: list[str], words: list[str]) -> np.ndarray:
        exact, lower = {}, {}
        for i, w in enumerate(vocabulary):  # most frequent first: keep the first word of each spelling
            exact.setdefault(w, i)
            lower.setdefault(w.lower(), i)
        return np.array([exact.get(w, lower.get(w.lower(), -1)) for w in words], dtype=np.int64)

    s, t = rows(source.words, s_words), rows(target.words, t_words)
    found = np.unique(np.stack([s, t], 1)[(s >= 0) & (t >= 0)], axis=0)
    return found[:, 0], found[:, 1]


def align_to_source(source: WordVectors, target: WordVectors, dictionary: pd.DataFrame, *,
                    min_pairs: int = 10, normalize: bool = False,
                    pairs: str = "case_variants") -> tuple[WordVectors, WordVectors, int]:
    """:func:`alignment` applied: ``(source', target' = target @ W, pairs used)``."""
    xs, xt, w, n = alignment(source, target, dictionary, min_pairs=min_pairs,
                             normalize=normalize, pairs=pairs)
    return WordVectors(source.words, xs, source.counts), WordVectors(target.words, xt @ w, target.counts), n


def alignment(source: WordVectors, target: WordVectors, dictionary: pd.DataFrame, *, min_pairs: int = 10,
              normalize: bool = False, pairs: str = "case_variants"
              ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """Map the target word vectors into the source space by orthogonal Procrustes on the dictionary pairs
    (``pairs``: :func:`dictionary_word_rows`). ``normalize=False`` (the ``wechsel`` package) aligns the raw
    vectors; ``normalize=True`` unit-normalizes, mean-centres and re-normalizes both sets first (MUSE /
    VecMap, :func:`~vocab_transfer.methods.align.normalize_embeddings`). The package rotates the source onto
    the target; rotating the target by ``Rᵀ`` gives the same cosines. Returns ``(source vectors, target
    vectors, W, pairs used)``, the vectors not yet rotated, so that other vectors of the target space
    (fastText subword vectors, App. D) can take the same ``W``."""
    s_idx, t_idx = dictionary_word_rows(source, target, dictionary, pairs=pairs)
    if len(s_idx) < min_pairs:
        raise ValueError(f"only {len(s_idx)} dictionary pairs have word vectors on both sides (need "
                         f"{min_pairs}); check the dictionary's direction (source -> target) and the "
                         "word vectors' languages")
    distinct = len(set(zip(s_idx.tolist(), t_idx.tolist(), strict=True)))
    if distinct < source.vectors.shape[1]:
        log.warning("only %d distinct dictionary pairs for %d-dimensional vectors: the rotation is "
                    "underdetermined and the alignment will be poor", distinct, source.vectors.shape[1])
    xs, xt = (normalize_embeddings(v.vectors) if normalize else v.vectors.float() for v in (source, target))
    w = procrustes(xt[t_idx], xs[s_idx])
    log.info("Procrustes on %d pairs: translation precision@1 %.3f on them (nearest of the pairs' source "
             "words)", len(s_idx), precision_at_1(xt[t_idx] @ w, xs, s_idx))
    return xs, xt, w, len(s_idx)


def precision_at_1(mapped: torch.Tensor, source: torch.Tensor,
                   s_idx: np.ndarray, max_pairs: int = 5000) -> float:
    """Share of (mapped target word, source word) pairs whose nearest neighbour (cosine) among the
    pairs' source words is the paired word: a quick check that the alignment means something."""
    cand = np.unique(s_idx)
    rows = slice(0, min(len(s_idx), max_pairs))
    sims = (torch.nn.functional.normalize(mapped[rows], dim=1)
            @ torch.nn.functional.normalize(source[cand], dim=1).T)
    return float((torch.from_numpy(cand)[sims.argmax(1)] == torch.from_numpy(s_idx[rows])).float().mean())


def wechsel_init(source: torch.Tensor, target_vocab_size: int, source_sub: torch.Tensor,
                 source_has: torch.Tensor, target_sub: torch.Tensor, target_has: torch.Tensor,
                 special_target_ids: torch.Tensor, special_source_ids: torch.Tensor, *, seed: int,
                 k: int = 10, temperature: float = 0.1,
                 batch_size: int = 1024, screen_dtype: torch.dtype | None = None, progress: bool = False,
                 nearest: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """WECHSEL §3.2: top-k softmax(cos/τ) mixtures of source rows for every target token.

    ``source_sub``/``target_sub`` are aligned subword embeddings (rows with ``*_has`` False are ignored: they
    have no vector). Special tokens are copied by role, as the ``wechsel`` package copies the source's special
    tokens that the target vocabulary also has (``create_target_embeddings``); target tokens without a vector
    are drawn from N(mean, std) of the source rows per dimension. With ``screen_dtype=torch.bfloat16`` a
    certified bf16 shortlist of ``4k`` candidates replaces the float32 similarity matrix (:mod:`.neighbours`:
    the same neighbours as float32, up to exact ties). Returns ``(matrix, kind int8 0 copied / 1 combined / 2
    random, n_sources)``; a ``nearest`` tensor [V_t] gets each combined row's most similar source token (the
    largest weight; WECHSEL Table 6).
    """
    out = torch.empty(target_vocab_size, source.shape[1], dtype=source.dtype)
    kind = torch.full((target_vocab_size,), 2, dtype=torch.int8)
    n_sources = torch.zeros(target_vocab_size, dtype=torch.long)
    cand = source_has.nonzero(as_tuple=True)[0]
    rows = target_has.nonzero(as_tuple=True)[0]
    rows = rows[~torch.isin(rows, special_target_ids)] if len(cand) else rows[:0]
    k = min(k, len(cand))
    xs = torch.nn.functional.normalize(source_sub[cand].float(), dim=1)
    xs_t = xs.T.contiguous()
    xs_screen = xs_t.to(screen_dtype) if screen_dtype is not None else None
    xt = torch.nn.functional.normalize(target_sub.float(), dim=1)
    e_cand, workspace = source[cand], Workspace()
    for r in batched(rows, batch_size, "WECHSEL", progress):
        w, idx = neighbour_weights(xt[r], xs, xs_t, weighting="softmax", k=k, temperature=temperature,
                                   screen=xs_screen, workspace=workspace)  # eq. 3
        out[r] = mix_rows(w, idx, e_cand)
        kind[r], n_sources[r] = 1, k
        if nearest is not None:
            nearest[r] = cand[idx.gather(1, w.argmax(1, keepdim=True)).squeeze(1)]
    out[special_target_ids] = source[special_source_ids]
    kind[special_target_ids], n_sources[special_target_ids] = 0, 1
    fill_random(out, (kind == 2).numpy(), source, seed)
    return out, kind, n_sources


def restrict_to_vocabulary(source_tokenizer, language_tokenizer) -> torch.Tensor:
    """Mask of source tokens with canonical form in ``language_tokenizer`` (WECHSEL_EN; Wang et al. 2019)."""
    keep = {t.form for t in canonicalize_vocab(language_tokenizer) if not t.special}
    return torch.tensor([not t.special and t.form in keep for t in canonicalize_vocab(source_tokenizer)])


def wechsel_needs(p: dict) -> frozenset[Need]:
    if p["subwords"] == "fasttext" and p["normalize"]:
        raise ValueError("subwords: fasttext aligns the raw fastText vectors (as the wechsel package); "
                         "normalize: true is for tokenize-flatten-reduce only")
    return frozenset({Need.SOURCE_WORDS, Need.TARGET_WORDS, Need.DICTIONARY, Need.TOKENIZERS}
                     | ({Need.WORD_MODELS} if p["subwords"] == "fasttext" else set())
                     | ({Need.LANGUAGE_TOKENIZER} if p["restrict_source"] else set()))


@register("wechsel", wechsel_needs)
def init_wechsel(inputs: TransferInputs, *, seed: int, source_language: str = "en",
                 k: Annotated[int, Range(ge=1)] = 10, temperature: Annotated[float, Range(gt=0)] = 0.1,
                 restrict_source: str | None = None, min_pairs: int = 10,
                 screen_dtype: ScreenDtype = "bfloat16", normalize: bool = False,
                 dictionary_pairs: Literal[DICTIONARY_PAIRS] = "case_variants",  # type: ignore[valid-type]
                 subwords: Literal[SUBWORDS] = "tokenize") -> EmbeddingInit:  # type: ignore[valid-type]
    """Config adapter: ``kind: wechsel``. ``source_language``: the language whose word vectors stand for the
    source vocabulary (FOCUS §3.1: English for XLM-R); ``restrict_source: en`` gives WECHSEL_EN;
    ``screen_dtype``: ``bfloat16`` (default) or ``float32`` (:func:`wechsel_init`); ``normalize`` and
    ``dictionary_pairs``: :func:`alignment`, :func:`dictionary_word_rows` (the defaults are the ``wechsel``
    package's). ``subwords``: ``tokenize`` (tokenize-flatten-reduce, §3.1) or ``fasttext`` (App. D, Table 8:
    each token's vector from the word-level fastText model's character n-grams,
    :func:`~vocab_transfer.data.word_vectors.fasttext_subword_vectors`, rotated as the word vectors)."""
    screen = screen_dtype_of(screen_dtype)
    for name in ("source_words", "target_words", "dictionary", "source_tokenizer", "target_tokenizer"):
        if getattr(inputs, name) is None:
            raise ValueError(f"WECHSEL needs {name} (word vectors, dictionary and tokenizers stages)")
    if restrict_source is not None and inputs.language_tokenizer is None:
        raise ValueError(f"restrict_source: {restrict_source} needs the {restrict_source} tokenizer")
    xs, xt, rotation, n_pairs = alignment(inputs.source_words, inputs.target_words, inputs.dictionary,
                                          min_pairs=min_pairs, normalize=normalize, pairs=dictionary_pairs)
    log.info("aligned with %d dictionary pairs (%s -> target)", n_pairs, source_language)
    v_s = inputs.source_matrix.shape[0]
    if subwords == "fasttext":  # App. D: token vectors from character n-grams, rotated as the words were
        u_s, has_s = fasttext_subword_vectors(inputs.source_word_model, inputs.source_tokenizer, v_s,
                                              skip_special=False)
        u_t, has_t = fasttext_subword_vectors(inputs.target_word_model, inputs.target_tokenizer,
                                              inputs.target_vocab_size)
        u_t = u_t @ rotation
    else:
        s_words = WordVectors(inputs.source_words.words, xs, inputs.source_words.counts)
        t_words = WordVectors(inputs.target_words.words, xt @ rotation, inputs.target_words.counts)
        u_s, has_s = tokenize_flatten_reduce(s_words, inputs.source_tokenizer, v_s, skip_special=False)
        u_t, has_t = tokenize_flatten_reduce(t_words, inputs.target_tokenizer, inputs.target_vocab_size)
    if restrict_source is not None:
        has_s &= restrict_to_vocabulary(inputs.source_tokenizer, inputs.language_tokenizer)[:v_s]
    log.info("source tokens with a subword vector: %d of %d; target: %d of %d", int(has_s.sum()), v_s,
             int(has_t.sum()), inputs.target_vocab_size)
    nearest = torch.full((inputs.target_vocab_size,), -1, dtype=torch.long)
    matrix, kind, n_sources = wechsel_init(
        inputs.source_matrix, inputs.target_vocab_size, u_s, has_s, u_t, has_t,
        *overlap_ids(specials(inputs.overlap)), seed=seed, k=k, temperature=temperature,
        screen_dtype=screen, progress=True, nearest=nearest)
    provenance = provenance_of(kind, inputs.overlap)
    return EmbeddingInit(matrix, provenance, n_sources.numpy(), nearest=nearest.numpy())

"""Token overlap between a source and a target tokenizer (FOCUS, Dobler & de Melo 2023, Appendix B), on a
tokenizer-independent canonical form of both vocabularies
(:class:`vocab_transfer.data.tokenizer.CanonicalToken`: surface text without BOW / continuation markers, plus
a ``bow`` flag); the rule: :func:`compute_overlap`."""

from __future__ import annotations

from typing import Any, Literal

from tokenizers import Tokenizer

from .. import lazy
from ..data.tokenizer import BOW, BYTE_FALLBACK, canonicalize, is_symbolic

pd = lazy.module("pandas")
pa = lazy.module("pyarrow")

SPECIAL_ROLES = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")
#: ``overlap`` of FOCUS and CLP: all matches, numbers/punctuation/whitespace (the paper's Symbolic Overlap),
#: the same plus Unicode symbols (S*: currency, math, emoji), the special tokens only, or the pairs with the
#: identical token string (langsfer's exact-match overlap)
OVERLAP_KINDS = ("full", "symbolic", "symbolic_with_symbols", "none", "exact", "identical")
Overlap = Literal[OVERLAP_KINDS]  # type: ignore[valid-type]  # a method's ``overlap`` parameter
#: The overlap table's columns and their pandas dtypes (``OVERLAP_SCHEMA``: as an Arrow schema).
_DTYPES = {"target_id": "int64", "source_id": "int64", "target_token": "string", "source_token": "string",
           "canonical": "string", "match": "string", "symbolic": "bool"}


def _numbers_punctuation_whitespace(canonical: str) -> bool:
    """A canonical form (``"▁" + text`` for BOW tokens) made of numbers, punctuation and whitespace only; a
    lone BOW token is whitespace."""
    text = canonical.removeprefix(BOW)
    return text == "" or is_symbolic(text, symbols=False)


def _role_ids(tokenizer: Any, vocab_size: int) -> dict[str, int]:
    if isinstance(tokenizer, Tokenizer):
        return {}
    ids = {role: getattr(tokenizer, f"{role}_id", None) for role in SPECIAL_ROLES
           if getattr(tokenizer, role, None) is not None}  # a role not set: no transformers "not set" lookup
    return {role: i for role, i in ids.items() if isinstance(i, int) and 0 <= i < vocab_size}


def compute_overlap(source_tokenizer: Any, target_tokenizer: Any, *,
                    fuzzy_symbolic: bool = True) -> pd.DataFrame:
    """Match target tokens to source tokens; one row per matched target token, sorted by ``target_id``.

    Order: (1) specials by role, then remaining specials by identical string -> "special";
    (2) non-special exact ``(text, bow)`` match -> "exact" (among equal source forms prefer the one with
    the identical raw string, then a non-byte-fallback token, then the lowest id); (3) if
    ``fuzzy_symbolic``, unmatched symbolic targets vs symbolic sources on ``text.casefold()`` ignoring
    BOW, preferring the same BOW flag, then the lowest id -> "fuzzy". Columns: see ``OVERLAP_SCHEMA``.
    """
    src, src_raw, src_kind = canonicalize(source_tokenizer)
    tgt, tgt_raw, _ = canonicalize(target_tokenizer)
    matches: dict[int, tuple[int, str]] = {}

    # (1) special tokens: by role, then by identical string.
    src_roles = _role_ids(source_tokenizer, len(src))
    for role, t_id in _role_ids(target_tokenizer, len(tgt)).items():
        if role in src_roles and t_id not in matches:
            matches[t_id] = (src_roles[role], "special")
    # the lowest id of each special source token's text (reversed: the first one is written last)
    src_special = {tok.text: i for i, tok in reversed(list(enumerate(src))) if tok.special and tok.text}
    for i, tok in enumerate(tgt):
        if tok.special and i not in matches and tok.text in src_special:
            matches[i] = (src_special[tok.text], "special")

    # (2) exact match on (text, bow).
    def rank(i: int) -> tuple[bool, int]:  # lower is better: real tokens before byte-fallback aliases
        return (src_kind == "sentencepiece" and BYTE_FALLBACK.fullmatch(src_raw[i]) is not None, i)

    exact: dict[tuple[str, bool], int] = {}
    fuzzy: dict[tuple[str, bool], int] = {}
    for i, tok in enumerate(src):
        if tok.special:
            continue
        key = (tok.text, tok.bow)
        if key not in exact or rank(i) < rank(exact[key]):
            exact[key] = i
        if tok.symbolic:
            fuzzy.setdefault((tok.text.casefold(), tok.bow), i)
    src_by_raw = {r: i for i, r in enumerate(src_raw) if r and not src[i].special}
    for i, tok in enumerate(tgt):
        if tok.special or i in matches:
            continue
        key = (tok.text, tok.bow)
        if key in exact:
            j = src_by_raw.get(tgt_raw[i])
            same = j is not None and (src[j].text, src[j].bow) == key
            matches[i] = (j if same else exact[key], "exact")
        elif fuzzy_symbolic and tok.symbolic:
            # (3) fuzzy: casefolded text, same BOW flag preferred, then lowest id.
            text = tok.text.casefold()
            j = fuzzy.get((text, tok.bow), fuzzy.get((text, not tok.bow)))
            if j is not None:
                matches[i] = (j, "fuzzy")

    ids = sorted(matches)
    src_ids = [matches[i][0] for i in ids]
    return pd.DataFrame({"target_id": ids, "source_id": src_ids, "target_token": [tgt_raw[i] for i in ids],
                         "source_token": [src_raw[j] for j in src_ids],
                         "canonical": [tgt[i].form for i in ids], "match": [matches[i][1] for i in ids],
                         "symbolic": [tgt[i].special or tgt[i].symbolic for i in ids]}).astype(_DTYPES)


def restrict_overlap(overlap: pd.DataFrame, kind: str) -> pd.DataFrame:
    """Restrict an overlap table: "full" (unchanged), "symbolic" (specials and tokens made of numbers,
    punctuation and whitespace, read from ``canonical`` -- FOCUS Table 4 "Symbolic Overlap", fn. 2),
    "symbolic_with_symbols" (rows with ``symbolic``: Unicode symbols such as "€", "+", "©" too), "none"
    (specials only), "exact" (specials and exact ``(text, BOW)`` matches: the overlap without its fuzzy symbol
    matches, mergekit tokensurgeon's rule) or "identical" (rows whose target and source token strings are
    identical: langsfer's ``ExactMatchTokenOverlap``, the intersection of the two vocabularies' strings,
    without fuzzy symbol matches or matches across BOW/continuation conventions)."""
    if kind == "full":
        return overlap
    if kind == "symbolic":
        mask = ((overlap["match"] == "special")
                | overlap["canonical"].map(_numbers_punctuation_whitespace).astype(bool))
    elif kind == "symbolic_with_symbols":
        mask = overlap["symbolic"].astype(bool)
    elif kind == "none":
        mask = overlap["match"] == "special"
    elif kind == "exact":
        mask = overlap["match"] != "fuzzy"
    elif kind == "identical":
        mask = (overlap["target_token"] == overlap["source_token"]).astype(bool)
    else:
        raise ValueError(f"unknown overlap kind {kind!r}; known kinds: {', '.join(OVERLAP_KINDS)}")
    return overlap[mask.to_numpy()].reset_index(drop=True)


def __getattr__(name: str):
    """``OVERLAP_SCHEMA``: the overlap table's Arrow schema, built on first use (pyarrow is imported then)."""
    if name == "OVERLAP_SCHEMA":
        arrow = {"int64": pa.int64(), "string": pa.string(), "bool": pa.bool_()}
        return pa.schema([(column, arrow[dtype]) for column, dtype in _DTYPES.items()])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

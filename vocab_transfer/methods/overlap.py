"""Token overlap between a source and a target tokenizer (FOCUS, Dobler & de Melo 2023, Appendix B).

Tokens of both vocabularies are first brought to a tokenizer-independent canonical form
(:class:`CanonicalToken`): surface text without BOW / continuation markers plus a ``bow`` flag.
Overlap rule: exact match on ``(text, bow)``; tokens made only of numbers, punctuation, symbols or
whitespace are additionally matched fuzzily, disregarding case and the BOW flag. Special tokens
are matched by role (``mask_token`` -> ``mask_token``, ...), then by identical string.
"""

from __future__ import annotations

import codecs
import json
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pyarrow as pa
from tokenizers import Tokenizer

__all__ = [
    "OVERLAP_SCHEMA",
    "SPECIAL_ROLES",
    "CanonicalToken",
    "canonicalize_vocab",
    "compute_overlap",
    "detect_tokenizer_kind",
    "is_symbolic",
    "restrict_overlap",
]

BOW = "▁"
SPECIAL_ROLES = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")
#: ``overlap`` of FOCUS: all matches, numbers/punctuation/whitespace (the paper's Symbolic Overlap), the same plus
#: Unicode symbols (S*: currency, math, emoji), or the special tokens only
OVERLAP_KINDS = ("full", "symbolic", "symbolic_with_symbols", "none")
OVERLAP_SCHEMA = pa.schema(
    [
        ("target_id", pa.int64()),
        ("source_id", pa.int64()),
        ("target_token", pa.string()),
        ("source_token", pa.string()),
        ("canonical", pa.string()),
        ("match", pa.string()),
        ("symbolic", pa.bool_()),
    ]
)
_DTYPES = {
    "target_id": "int64",
    "source_id": "int64",
    "target_token": "string",
    "source_token": "string",
    "canonical": "string",
    "match": "string",
    "symbolic": "bool",
}
_BYTE_FALLBACK = re.compile(r"<0x([0-9A-Fa-f]{2})>")
_WORDCHAR = re.compile(r"[^\W\d_]")  # mostly letters (also e.g. "²", "Ⅻ")


def _hex_bytes(exc: UnicodeError) -> tuple[str, int]:
    """Codec error handler: undecodable bytes become ``<0xNN>`` (SentencePiece byte-fallback style)."""
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    return "".join(f"<0x{b:02X}>" for b in exc.object[exc.start : exc.end]), exc.end


codecs.register_error("vocab_transfer_hexbytes", _hex_bytes)


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable unicode character table."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
    bs += list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs, strict=True)}


_UNICODE_TO_BYTE = {c: b for b, c in _bytes_to_unicode().items()}


@dataclass(frozen=True, slots=True)
class CanonicalToken:
    """Tokenizer-independent view of one vocabulary entry.

    ``text``: surface text without BOW/continuation marker, bytes decoded to unicode (undecodable
    bytes are written ``<0xNN>``; holes in the id space have empty text and ``special=True``).
    ``bow``: the token starts a word. ``special``: control token; then ``text`` is the raw string.
    """

    text: str
    bow: bool
    special: bool

    @property
    def form(self) -> str:
        """One canonical string: ``"▁" + text`` for BOW tokens, ``text`` otherwise (specials: raw string)."""
        return self.text if self.special or not self.bow else BOW + self.text

    @property
    def symbolic(self) -> bool:
        """Non-special and only numbers/punctuation/symbols/whitespace; a lone BOW token counts."""
        return not self.special and (is_symbolic(self.text) or (self.bow and self.text == ""))


def is_symbolic(text: str, *, symbols: bool = True) -> bool:
    """True iff ``text`` is non-empty and every char is a number, punctuation, symbol or whitespace.

    Unicode categories N*, P*, S*, Z* or ``str.isspace()``; with ``symbols=False`` without S* (numbers,
    punctuation and whitespace only: FOCUS's Symbolic Overlap). The BOW marker "▁" (U+2581, category So)
    is itself symbolic, so "▁", "▁1" are symbolic; a lone BOW token (canonical text "") is treated
    as whitespace by :attr:`CanonicalToken.symbolic`. The empty string is not symbolic.
    """
    if not text:
        return False
    m = _WORDCHAR.search(text)  # fast reject for the common case: a letter
    if m and unicodedata.category(m.group())[0] == "L":
        return False
    categories = "NPSZ" if symbols else "NPZ"
    return all(ch.isspace() or unicodedata.category(ch)[0] in categories for ch in text)


def _numbers_punctuation_whitespace(canonical: str) -> bool:
    """A canonical form (``"▁" + text`` for BOW tokens) made of numbers, punctuation and whitespace only; a lone
    BOW token is whitespace."""
    text = canonical.removeprefix(BOW)
    return text == "" or is_symbolic(text, symbols=False)


def _backend(tokenizer: Any) -> Tokenizer:
    """The ``tokenizers.Tokenizer`` behind a transformers fast tokenizer / tokenizers wrapper."""
    if isinstance(tokenizer, Tokenizer):
        return tokenizer
    for attr in ("backend_tokenizer", "_tokenizer"):
        backend = getattr(tokenizer, attr, None)
        if isinstance(backend, Tokenizer):
            return backend
    raise TypeError(f"need a fast (tokenizers-backed) tokenizer, got {type(tokenizer).__name__}")


def _types(node: Any) -> set[str]:
    """All component ``type`` names in a (nested) tokenizer JSON fragment."""
    if isinstance(node, dict):
        found = {node["type"]} if isinstance(node.get("type"), str) else set()
        return found.union(*(_types(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_types(v) for v in node))
    return set()


def _config(tokenizer: Any) -> dict:
    """Tokenizer JSON config without the (large) vocabulary/merges, read component by component."""
    backend = _backend(tokenizer)
    model = backend.model
    cfg: dict[str, Any] = {
        "model": {
            "type": type(model).__name__,
            "byte_fallback": getattr(model, "byte_fallback", False),
            "continuing_subword_prefix": getattr(model, "continuing_subword_prefix", None),
        }
    }
    for key in ("normalizer", "pre_tokenizer", "decoder"):
        component = getattr(backend, key)
        try:
            cfg[key] = json.loads(component.__getstate__()) if component is not None else None
        except Exception:  # pragma: no cover - fall back to the full (slow for big vocabs) dump
            full = json.loads(backend.to_str())
            return {**full, "model": {k: v for k, v in full["model"].items() if k not in ("vocab", "merges")}}
    return cfg


def detect_tokenizer_kind(tokenizer: Any) -> str:
    """Return ``"sentencepiece"``, ``"bytelevel_bpe"`` or ``"wordpiece"`` from the backend tokenizer JSON.

    Unigram, or BPE with Metaspace / byte fallback / a "▁"-Replace (Llama-style) -> sentencepiece;
    BPE with ByteLevel pre-tokenizer or decoder -> bytelevel_bpe; WordPiece -> wordpiece.
    Raises ValueError for anything else.
    """
    return _kind_from_config(_config(tokenizer))


def _kind_from_config(cfg: dict) -> str:
    model = cfg.get("model") or {}
    mtype = model.get("type")
    if mtype == "WordPiece":
        return "wordpiece"
    if mtype == "Unigram":
        return "sentencepiece"
    if mtype == "BPE":
        pre, dec, norm = (cfg.get(k) for k in ("pre_tokenizer", "decoder", "normalizer"))
        if "ByteLevel" in _types(pre):
            return "bytelevel_bpe"
        if (
            "Metaspace" in _types([pre, dec])
            or model.get("byte_fallback")
            or BOW in json.dumps([norm, dec], ensure_ascii=False)
        ):
            return "sentencepiece"
        if "ByteLevel" in _types(dec):
            return "bytelevel_bpe"
    raise ValueError(
        f"unsupported tokenizer (model={mtype!r}); known kinds: sentencepiece, bytelevel_bpe, wordpiece"
    )


def _special_ids(tokenizer: Any, backend: Tokenizer, vocab: dict[str, int]) -> set[int]:
    ids = {i for i, tok in backend.get_added_tokens_decoder().items() if tok.special}
    if not isinstance(tokenizer, Tokenizer):
        ids.update(vocab[t] for t in getattr(tokenizer, "all_special_tokens", ()) if t in vocab)
    return ids


def _canon_sentencepiece(raw: str) -> CanonicalToken:
    m = _BYTE_FALLBACK.fullmatch(raw) if raw.startswith("<0x") else None
    if m:  # byte-fallback token
        byte = int(m.group(1), 16)
        if byte == 0x20:  # a space: what "▁" and byte-level "Ġ" spell alone
            return CanonicalToken("", True, False)
        return CanonicalToken(chr(byte) if byte < 0x80 else f"<0x{byte:02X}>", False, False)
    bow = raw.startswith(BOW)
    # SentencePiece decodes every "▁" to a space; inner ones (e.g. "▁▁") become real spaces.
    return CanonicalToken((raw[1:] if bow else raw).replace(BOW, " "), bow, False)


def _canon_bytelevel(raw: str) -> CanonicalToken:
    try:
        data = bytes(_UNICODE_TO_BYTE[c] for c in raw)
    except KeyError:  # not byte-encoded (e.g. literal non-special added token): take it literally
        return CanonicalToken(raw[1:] if raw.startswith(" ") else raw, raw.startswith(" "), False)
    bow = data.startswith(b" ")
    return CanonicalToken((data[1:] if bow else data).decode("utf-8", "vocab_transfer_hexbytes"), bow, False)


def _canonicalize(tokenizer: Any) -> tuple[list[CanonicalToken], list[str], str]:
    """(canonical tokens, raw token strings, kind), both lists indexed by token id."""
    backend = _backend(tokenizer)
    cfg = _config(backend)
    kind = _kind_from_config(cfg)
    vocab = backend.get_vocab(with_added_tokens=True)
    size = len(tokenizer) if hasattr(tokenizer, "__len__") else backend.get_vocab_size(with_added_tokens=True)
    size = max([size, *(i + 1 for i in vocab.values())]) if vocab else size
    raw: list[str] = [""] * size
    for tok, i in vocab.items():
        raw[i] = tok
    specials = _special_ids(tokenizer, backend, vocab)
    prefix = cfg["model"].get("continuing_subword_prefix") or "##"
    out: list[CanonicalToken] = []
    for i, tok in enumerate(raw):
        if i in specials or not tok:
            out.append(CanonicalToken(tok, False, True))
        elif kind == "sentencepiece":
            out.append(_canon_sentencepiece(tok))
        elif kind == "bytelevel_bpe":
            out.append(_canon_bytelevel(tok))
        elif tok.startswith(prefix) and len(tok) > len(prefix):
            out.append(CanonicalToken(tok[len(prefix) :], False, False))
        else:
            out.append(CanonicalToken(tok, True, False))
    return out, raw, kind


def canonicalize_vocab(tokenizer: Any) -> list[CanonicalToken]:
    """Canonical form of every token id ``0..len(tokenizer)-1`` (added tokens included).

    Rules: sentencepiece -- leading "▁" is BOW, inner "▁" become spaces, single-byte ASCII fallback
    tokens "<0x41>" decode to "A" (non-BOW), "<0x20>" to a bare BOW (a space, as "▁" and "Ġ"), others stay
    "<0xE2>"; bytelevel_bpe -- GPT-2 byte table,
    UTF-8 decode (undecodable bytes -> "<0xNN>"), leading space ("Ġ") is BOW; wordpiece -- "##x" is
    non-BOW "x", all other tokens BOW. Specials (``all_special_tokens`` + added tokens flagged
    special) keep their raw string with ``special=True``; ids missing from the vocab are empty specials.
    """
    return _canonicalize(tokenizer)[0]


def _role_ids(tokenizer: Any, vocab_size: int) -> dict[str, int]:
    if isinstance(tokenizer, Tokenizer):
        return {}
    out = {}
    for role in SPECIAL_ROLES:
        if getattr(tokenizer, role, None) is None:  # avoid transformers' "not set" lookups
            continue
        i = getattr(tokenizer, f"{role}_id", None)
        if isinstance(i, int) and 0 <= i < vocab_size:
            out[role] = i
    return out


def compute_overlap(
    source_tokenizer: Any, target_tokenizer: Any, *, fuzzy_symbolic: bool = True
) -> pd.DataFrame:
    """Match target tokens to source tokens; one row per matched target token, sorted by ``target_id``.

    Order: (1) specials by role, then remaining specials by identical string -> "special";
    (2) non-special exact ``(text, bow)`` match -> "exact" (among equal source forms prefer the one with
    the identical raw string, then a non-byte-fallback token, then the lowest id); (3) if
    ``fuzzy_symbolic``, unmatched symbolic targets vs symbolic sources on ``text.casefold()`` ignoring
    BOW, preferring the same BOW flag, then the lowest id -> "fuzzy". Columns: see ``OVERLAP_SCHEMA``.
    """
    src, src_raw, src_kind = _canonicalize(source_tokenizer)
    tgt, tgt_raw, _ = _canonicalize(target_tokenizer)
    matches: dict[int, tuple[int, str]] = {}

    # (1) special tokens: by role, then by identical string.
    src_roles = _role_ids(source_tokenizer, len(src))
    for role, t_id in _role_ids(target_tokenizer, len(tgt)).items():
        if role in src_roles and t_id not in matches:
            matches[t_id] = (src_roles[role], "special")
    src_special: dict[str, int] = {}
    for i, tok in enumerate(src):
        if tok.special and tok.text:
            src_special.setdefault(tok.text, i)
    for i, tok in enumerate(tgt):
        if tok.special and i not in matches and tok.text in src_special:
            matches[i] = (src_special[tok.text], "special")

    # (2) exact match on (text, bow).
    def rank(i: int) -> tuple[bool, int]:  # lower is better: real tokens before byte-fallback aliases
        return (src_kind == "sentencepiece" and _BYTE_FALLBACK.fullmatch(src_raw[i]) is not None, i)

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
    df = pd.DataFrame(
        {
            "target_id": ids,
            "source_id": [matches[i][0] for i in ids],
            "target_token": [tgt_raw[i] for i in ids],
            "source_token": [src_raw[matches[i][0]] for i in ids],
            "canonical": [tgt[i].form for i in ids],
            "match": [matches[i][1] for i in ids],
            "symbolic": [tgt[i].special or tgt[i].symbolic for i in ids],
        }
    )
    return df.astype(_DTYPES)


def restrict_overlap(overlap: pd.DataFrame, kind: str) -> pd.DataFrame:
    """Restrict an overlap table: "full" (unchanged), "symbolic" (specials and tokens made of numbers, punctuation
    and whitespace, read from ``canonical`` -- FOCUS Table 4 "Symbolic Overlap", fn. 2), "symbolic_with_symbols"
    (rows with ``symbolic``: Unicode symbols such as "€", "+", "©" too) or "none" (specials only)."""
    if kind == "full":
        return overlap
    if kind == "symbolic":
        mask = (overlap["match"] == "special") | overlap["canonical"].map(_numbers_punctuation_whitespace).astype(bool)
    elif kind == "symbolic_with_symbols":
        mask = overlap["symbolic"].astype(bool)
    elif kind == "none":
        mask = overlap["match"] == "special"
    else:
        raise ValueError(f"unknown overlap kind {kind!r}; known kinds: {', '.join(OVERLAP_KINDS)}")
    return overlap[mask.to_numpy()].reset_index(drop=True)

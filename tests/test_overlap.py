"""Tests for vocab_transfer.methods.overlap with tiny tokenizers built from scratch (no hub access)."""

from __future__ import annotations

import pyarrow as pa
import pytest
import tokenizers
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers
from transformers import PreTrainedTokenizerFast

from vocab_transfer.data.tokenizer import (
    CanonicalToken,
    _bytes_to_unicode,
    canonicalize_vocab,
    detect_tokenizer_kind,
    is_symbolic,
)
from vocab_transfer.methods.overlap import OVERLAP_SCHEMA, compute_overlap, restrict_overlap

CORPUS = [
    "Das Haus ist groß und schön. 3.5 Prozent!!! ;-) 1% [6]",
    "Hello world, über alles 1919 3500 ... Hause",
    "haus Haus Häuser 123 45 ü über",
] * 20
SP_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
B2U = _bytes_to_unicode()


def _bl(text: str) -> str:
    """Byte-level (GPT-2) spelling of a surface string."""
    return "".join(B2U[b] for b in text.encode("utf-8"))


def _wrap_sp(tok: Tokenizer, **roles: str) -> PreTrainedTokenizerFast:
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        mask_token="<mask>",
        **roles,
    )


@pytest.fixture(scope="module")
def sp() -> PreTrainedTokenizerFast:
    trainer = tokenizers.SentencePieceUnigramTokenizer()
    trainer.train_from_iterator(CORPUS, vocab_size=150, special_tokens=SP_SPECIALS, unk_token="<unk>")
    return _wrap_sp(trainer._tokenizer)


@pytest.fixture(scope="module")
def bpe() -> tokenizers.ByteLevelBPETokenizer:
    tok = tokenizers.ByteLevelBPETokenizer()
    tok.train_from_iterator(CORPUS, vocab_size=330, min_frequency=1, special_tokens=SP_SPECIALS)
    return tok


@pytest.fixture(scope="module")
def wp() -> PreTrainedTokenizerFast:
    trainer = tokenizers.BertWordPieceTokenizer(lowercase=False)
    trainer.train_from_iterator(CORPUS, vocab_size=200, min_frequency=1)
    return PreTrainedTokenizerFast(
        tokenizer_object=trainer._tokenizer,
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        pad_token="[PAD]",
        mask_token="[MASK]",
    )


def _unigram(pieces: list[str], byte_fallback: bool = False) -> PreTrainedTokenizerFast:
    """Hand-built SentencePiece-style Unigram tokenizer: specials first, then ``pieces``."""
    tok = Tokenizer(
        models.Unigram([(p, -1.0) for p in SP_SPECIALS + pieces], unk_id=3, byte_fallback=byte_fallback)
    )
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    tok.add_special_tokens(SP_SPECIALS)
    return _wrap_sp(tok)


def _bytelevel(surfaces: list[str]) -> PreTrainedTokenizerFast:
    """Hand-built byte-level BPE tokenizer (no merges) whose vocab spells ``surfaces`` byte-level."""
    vocab = {t: i for i, t in enumerate(SP_SPECIALS)}
    for s in surfaces:
        vocab.setdefault(_bl(s), len(vocab))
    tok = Tokenizer(models.BPE(vocab, []))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(SP_SPECIALS)
    return _wrap_sp(tok)


def _canon(tokenizer, raw: str) -> CanonicalToken:
    vocab = tokenizer.get_vocab()
    assert raw in vocab, f"{raw!r} not in the test vocabulary"
    return canonicalize_vocab(tokenizer)[vocab[raw]]


def _row(df, target_token: str):
    rows = df[df["target_token"] == target_token]
    assert len(rows) <= 1
    return None if rows.empty else rows.iloc[0]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("3.5", True),
        ("1919", True),
        (";-)", True),
        ("!!!", True),
        ("1%", True),
        ("[6]", True),
        ("...", True),
        ("▁", True),
        ("▁1", True),
        (" ", True),
        ("\n\t", True),
        ("€5", True),
        ("²", True),
        ("Ⅻ", True),
        ("Haus", False),
        ("ab1", False),
        ("1a", False),
        ("é", False),
        ("", False),
    ],
)
def test_is_symbolic(text: str, expected: bool) -> None:
    assert is_symbolic(text) is expected


@pytest.mark.parametrize("text,expected",
                         [("...", True), ("1,5", True), (" ", True), ("€5", False), ("+", False),
                          ("©", False), ("Haus", False), ("", False)])
def test_is_symbolic_without_symbols(text: str, expected: bool) -> None:
    """FOCUS's Symbolic Overlap: numbers, punctuation and whitespace (Unicode S* excluded)."""
    assert is_symbolic(text, symbols=False) is expected


def test_detect_tokenizer_kind(sp, bpe, wp) -> None:
    assert detect_tokenizer_kind(sp) == "sentencepiece"
    assert detect_tokenizer_kind(sp.backend_tokenizer) == "sentencepiece"
    assert detect_tokenizer_kind(bpe) == "bytelevel_bpe"
    assert detect_tokenizer_kind(bpe._tokenizer) == "bytelevel_bpe"
    assert detect_tokenizer_kind(wp) == "wordpiece"
    # Llama-style SentencePiece BPE: no pre-tokenizer, "▁" handled by normalizer/decoder.
    llama = Tokenizer(models.BPE({"<unk>": 0, "▁a": 1}, [], unk_token="<unk>"))
    llama.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    llama.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.Fuse()])
    assert detect_tokenizer_kind(llama) == "sentencepiece"
    with pytest.raises(ValueError, match="unsupported"):
        detect_tokenizer_kind(Tokenizer(models.BPE({"a": 0}, [])))


def test_canonical_forms_agree_across_kinds(sp, bpe, wp) -> None:
    haus = CanonicalToken("Haus", True, False)
    assert _canon(sp, "▁Haus") == haus
    assert _canon(bpe, "ĠHaus") == haus
    assert _canon(wp, "Haus") == haus
    assert haus.form == "▁Haus"
    aus = CanonicalToken("aus", False, False)
    assert _canon(wp, "##aus") == aus
    assert _canon(sp, "aus") == aus
    assert aus.form == "aus"
    # Byte-level multi-byte characters decode to unicode.
    assert _bl(" ü") == "ĠÃ¼"
    assert _canon(bpe, "ĠÃ¼") == CanonicalToken("ü", True, False)
    assert _canon(bpe, "Ã¼") == CanonicalToken("ü", False, False)
    assert _canon(sp, "▁ü").form == _canon(bpe, "ĠÃ¼").form == "▁ü"
    # Specials keep their raw string.
    assert _canon(sp, "<mask>") == CanonicalToken("<mask>", False, True)
    assert _canon(wp, "[MASK]").form == "[MASK]"


def test_canonicalize_covers_all_ids_including_added_tokens() -> None:
    tok = _unigram(["▁Haus", "aus"])
    tok.add_tokens(["▁neu"])
    tok.add_special_tokens({"additional_special_tokens": ["<extra>"]})
    canon = canonicalize_vocab(tok)
    assert len(canon) == len(tok)
    vocab = tok.get_vocab()
    assert canon[vocab["▁neu"]] == CanonicalToken("neu", True, False)
    assert canon[vocab["<extra>"]] == CanonicalToken("<extra>", False, True)
    assert all(canon[vocab[s]].special for s in SP_SPECIALS)


def test_sentencepiece_byte_fallback_and_bytelevel_partial_bytes() -> None:
    sp = _unigram(["<0x41>", "<0xE2>", "<0x31>", "▁▁", "A", "▁x"], byte_fallback=True)
    assert _canon(sp, "<0x41>") == CanonicalToken("A", False, False)
    assert _canon(sp, "<0xE2>") == CanonicalToken("<0xE2>", False, False)
    assert _canon(sp, "▁▁") == CanonicalToken(" ", True, False)
    assert _canon(sp, "▁x") == CanonicalToken("x", True, False)
    bl = _bytelevel(["A", "1", "  "])
    assert _canon(bl, _bl("  ")) == CanonicalToken(" ", True, False)
    # Undecodable partial UTF-8 bytes get the "<0xNN>" spelling (so they only match byte tokens exactly).
    partial = Tokenizer(models.BPE({"<unk>": 0, "â": 1, "Ġâ": 2, "abcâ": 3}, [], unk_token="<unk>"))
    partial.pre_tokenizer = pre_tokenizers.ByteLevel()
    canon = canonicalize_vocab(partial)
    assert canon[1] == CanonicalToken("<0xE2>", False, False)
    assert canon[2] == CanonicalToken("<0xE2>", True, False)
    assert canon[3] == CanonicalToken("abc<0xE2>", False, False)
    assert not any(c.symbolic for c in canon)
    # Cross-kind: "A" matches the real piece "A", not its byte-fallback alias; partial byte matches exactly.
    ov = compute_overlap(sp, bl)
    assert _row(ov, "A")["source_token"] == "A"
    assert _row(ov, "1")["source_token"] == "<0x31>"
    ov2 = compute_overlap(sp, partial)
    assert _row(ov2, "â")["source_token"] == "<0xE2>"
    assert _row(ov2, "Ġâ") is None


def test_special_tokens_matched_by_role(sp, wp) -> None:
    ov = compute_overlap(sp, wp)
    special = ov[ov["match"] == "special"].set_index("target_token")["source_token"].to_dict()
    assert special == {"[MASK]": "<mask>", "[PAD]": "<pad>", "[UNK]": "<unk>"}
    back = compute_overlap(wp, sp)
    assert _row(back, "<mask>")["source_token"] == "[MASK]"
    assert _row(back, "<s>") is None  # wordpiece defines no bos_token
    # XLM-R style source: bos == cls, eos == sep.
    xlmr = _wrap_sp(sp.backend_tokenizer, cls_token="<s>", sep_token="</s>")
    ov = compute_overlap(xlmr, wp)
    assert _row(ov, "[CLS]")["source_token"] == "<s>"
    assert _row(ov, "[SEP]")["source_token"] == "</s>"
    back = compute_overlap(wp, xlmr)
    assert _row(back, "<s>")["source_token"] == "[CLS]"  # bos role absent in source, cls role matches
    assert back["target_id"].is_unique


def test_specials_by_identical_string_without_roles(sp) -> None:
    raw = sp.backend_tokenizer  # a bare tokenizers.Tokenizer: no roles, only identical strings
    ov = compute_overlap(raw, raw)
    assert set(ov.loc[ov["match"] == "special", "target_token"]) == set(SP_SPECIALS)


def test_fuzzy_only_for_symbolic_tokens() -> None:
    src = _unigram(["▁1", "▁Haus", "ⅻ", "▁ⅻ", ";-)", "▁3.5"])
    tgt = _bytelevel(["1", "haus", "Haus", " haus", " HAUS", " Ⅻ", " ;-)", "3.5", " 3.5"])
    ov = compute_overlap(src, tgt)
    one = _row(ov, "1")
    assert (one["source_token"], one["match"], one["canonical"], one["symbolic"]) == (
        "▁1",
        "fuzzy",
        "1",
        True,
    )
    for word in ["haus", "Haus", "Ġhaus", "ĠHAUS"]:
        assert _row(ov, word) is None
    roman = _row(ov, _bl(" Ⅻ"))  # casefold; same BOW preferred over lower id
    assert (roman["source_token"], roman["match"]) == ("▁ⅻ", "fuzzy")
    assert _row(ov, "Ġ;-)")["source_token"] == ";-)"
    assert _row(ov, "Ġ3.5")["match"] == "exact"
    assert _row(ov, "3.5")["source_token"] == "▁3.5"
    assert set(ov["match"]) == {"special", "exact", "fuzzy"}
    strict = compute_overlap(src, tgt, fuzzy_symbolic=False)
    assert set(strict["match"]) == {"special", "exact"}
    assert _row(strict, "1") is None


def test_cross_kind_overlap(sp, bpe) -> None:
    ov = compute_overlap(bpe, sp)
    haus = _row(ov, "▁Haus")
    assert (haus["source_token"], haus["match"], haus["canonical"]) == ("ĠHaus", "exact", "▁Haus")
    assert _row(ov, "▁ü")["source_token"] == "ĠÃ¼"
    assert _row(ov, "▁")["source_token"] == "Ġ"
    assert "haus" in bpe.get_vocab() and "haus" not in set(ov["source_token"])


def test_overlap_table_shape(sp, bpe, wp) -> None:
    for src, tgt in [(sp, bpe), (bpe, wp), (wp, sp)]:
        ov = compute_overlap(src, tgt)
        assert ov.columns.tolist() == OVERLAP_SCHEMA.names
        assert ov["target_id"].is_unique and ov["target_id"].is_monotonic_increasing
        assert str(ov["target_id"].dtype) == "int64" and str(ov["source_id"].dtype) == "int64"
        assert str(ov["symbolic"].dtype) == "bool" and str(ov["match"].dtype) == "string"
        assert set(ov["match"]) <= {"special", "exact", "fuzzy"}
        table = pa.Table.from_pandas(ov, schema=OVERLAP_SCHEMA, preserve_index=False)
        assert table.schema.equals(OVERLAP_SCHEMA)


def test_identical_tokenizers_give_identity_overlap(sp) -> None:
    ov = compute_overlap(sp, sp)
    assert len(ov) == len(sp)
    assert (ov["target_id"] == ov["source_id"]).all()
    assert (ov["target_token"] == ov["source_token"]).all()
    assert set(ov.loc[ov["match"] == "special", "target_token"]) == set(SP_SPECIALS)
    assert set(ov["match"]) == {"special", "exact"}
    fb = _unigram(["<0x41>", "A", "▁A", "<0xE2>"], byte_fallback=True)
    ov = compute_overlap(fb, fb)
    assert len(ov) == len(fb) and (ov["target_id"] == ov["source_id"]).all()


def test_restrict_overlap() -> None:
    src = _unigram(["▁1", "▁Haus", ";-)", "▁€"])
    tgt = _bytelevel(["1", " Haus", ";-)", "€"])
    ov = compute_overlap(src, tgt)
    assert restrict_overlap(ov, "full").equals(ov)
    sym = restrict_overlap(ov, "symbolic")
    assert set(sym["target_token"]) == set(SP_SPECIALS) | {"1", ";-)"}
    assert sym.index.tolist() == list(range(len(sym)))
    broad = restrict_overlap(ov, "symbolic_with_symbols")  # "€" (Unicode Sc) too
    assert set(broad["canonical"]) - set(sym["canonical"]) == {"€"} and len(broad) == len(sym) + 1
    none = restrict_overlap(ov, "none")
    assert set(none["match"]) == {"special"} and len(none) == len(SP_SPECIALS)
    with pytest.raises(ValueError, match="full.*symbolic.*none"):
        restrict_overlap(ov, "partial")

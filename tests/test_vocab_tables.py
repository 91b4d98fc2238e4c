"""The corpus and vocabulary tables (FOCUS Tables 1, 7, 8; UNKs Everywhere Tables 1, 6, 7) on small real
inputs."""

import pandas as pd
import pytest

from vocab_transfer.methods.overlap import compute_overlap
from vocab_transfer.report import vocab_tables as vt


def overlap(rows):
    """An overlap frame in the artifact's columns from (target_id, canonical, match) triples."""
    return pd.DataFrame([{"target_id": i, "source_id": i, "target_token": c, "source_token": c,
                          "canonical": c, "match": m, "symbolic": False} for i, c, m in rows])


OV = overlap([(0, "<s>", "special"), (1, "▁Haus", "exact"), (2, "1919", "exact"), (3, "a", "exact"),
              (4, "ß", "exact"), (5, "▁Ἀθῆναι", "exact"), (6, "x", "exact"), (7, "Haus", "exact"),
              (8, "▁Zusammenkunft", "exact")])


def test_groups_follow_the_papers_definitions():
    assert [vt.overlap_group(t) for t in ["1919", "a", "Haus", "ß", "Ἀθῆναι", "中", "a1"]] == [
        "Numbers", "Lat Char", "Lat (S)W", "Lat Char", "Oth (S)W", "Oth Char", "Numbers"]
    table, md = vt.overlap_groups_table({"de": OV}, ["de"], "T6")
    share = table.set_index("group")["share"]
    assert share["Lat (S)W"] == pytest.approx(3 / 8) and share["Numbers"] == pytest.approx(1 / 8)
    assert share.sum() == pytest.approx(1.0) and "| Lat Char | 38% |" in md  # a, ß, x of 8: specials left out


def test_longest_tokens_are_unique_texts_longest_first():
    table, md = vt.overlap_longest_table({"de": OV}, ["de"], 3, "T7")
    assert table["token"].tolist() == ["Zusammenkunft", "Ἀθῆναι", "Haus"]  # "Haus" twice (▁ and inner): once
    assert md.splitlines()[-1] == "| Haus |"


def test_overlap_counts_full_and_with_a_vector():
    tokens = pd.DataFrame({"token_id": range(9),
                           "has_vector": [False, True, True, False, True, False, True, True, False]})
    table, md = vt.overlap_counts_table({"de": OV}, {"de": tokens}, ["de"], 10, "T8")
    assert table.iloc[0][["full", "with_vector"]].tolist() == [8, 5]
    assert "| German | 5 | 8 |" in md and "minCount = 10" in md


@pytest.mark.parametrize("text, category", [("3.5", "Symbols & Numbers"), (";-)", "Symbols & Numbers"),
                                            ("JavaScript", "Names & Entities"),
                                            ("Bewerber", "Target (sub-)words"),
                                            ("günstig", "Target (sub-)words"),
                                            ("Settings", "English & Code-switched"),
                                            ("zyq", "Not assignable"), ("Absalom", "Names & Entities")])
def test_automatic_categories_of_focus_table7(text, category):
    pytest.importorskip("wordfreq")
    assert vt.token_category(text, "de") == category


def test_sample_is_seeded_and_leaves_out_single_characters():
    big = overlap([(i, f"▁w{i:03d}", "exact") for i in range(300)] + [(300, "q", "exact")])
    a, md = vt.overlap_sample_table({"de": big}, ["de"], 50, 3, "T7")
    b, _ = vt.overlap_sample_table({"de": big}, ["de"], 50, 3, "T7")
    c, _ = vt.overlap_sample_table({"de": big}, ["de"], 50, 4, "T7")
    assert a.equals(b) and not a.equals(c) and len(a) == 50 and "q" not in set(a["token"])
    assert "50 of 300 overlapping tokens (seed 3)" in md


def test_vocab_coverage_counts_tokens_the_source_cannot_compose(sw_tokenizer, swahili_verses):
    """A Swahili source tokenizer composes every piece of a Swahili target; a Hebrew-script target is all
    UNKs."""
    from vocab_transfer.data.tokenizer import train_unigram_tokenizer

    hebrew = train_unigram_tokenizer(["בראשית ברא אלהים את השמים ואת הארץ והארץ היתה תהו ובהו"] * 50
                                     + ["Mungu"], 24, show_progress=False)
    target = train_unigram_tokenizer(swahili_verses[1000:2000], 300, show_progress=False)
    overlaps = {"sw": compute_overlap(sw_tokenizer, target), "he": compute_overlap(sw_tokenizer, hebrew)}
    table, md = vt.vocab_coverage_table(["sw", "he"], {"sw": target, "he": hebrew}, sw_tokenizer, overlaps,
                                        "U1")
    row = table.set_index("language")
    assert row.loc["sw", "unk_share"] < 0.05 and row.loc["sw", "overlap_share"] > 0.3
    assert row.loc["he", "script"] == "Hebrew" and row.loc["he", "unk_share"] > 0.2
    assert row.loc["sw", "script"] == "Latin" and "| Kiswahili | sw | Niger-Congo | Latin |" in md


def test_corpus_sizes():
    stats = {"de": {"train_docs": 10, "train_bytes": 18_000_000_000, "heldout_docs": 2},
             "xh": {"train_docs": 3, "train_bytes": 30_000_000, "heldout_docs": 1}}
    table, md = vt.corpus_sizes_table(stats, ["de", "xh"], "T1")
    assert "| German | 18.0 GB | 10 |" in md and "| isiXhosa | 30.0 MB | 3 |" in md
    assert table["train_bytes"].tolist() == [18_000_000_000, 30_000_000]


def test_nearest_tokens_sample_of_combined_rows():
    prov = pd.DataFrame({"target_id": range(6),
                         "token": ["<s>", "▁kuzidi", "▁na", "x", "▁dhamiri", "▁vipigo"],
                         "provenance": ["special", "combined", "combined", "combined", "copied", "combined"],
                         "nearest_source_token": [None, "▁acclaim", "▁and", "▁y", None, "▁Trouble"]})
    table, md = vt.nearest_tokens_table({"sw": prov}, ["sw"], 10, 0, "T6")
    # combined, more than one character, in id order
    assert table["token"].tolist() == ["kuzidi", "na", "vipigo"]
    assert "| kuzidi | acclaim |" in md and "| vipigo | Trouble |" in md
    with pytest.raises(ValueError, match="records no nearest source tokens"):
        vt.nearest_tokens_table({"sw": prov.drop(columns="nearest_source_token")}, ["sw"], 10, 0, "T6")


FRENCH_GERMAN = ["ça va bien, ça marche", "Die Straße ist über dem Fluss", "über alles, ça alors",
                 "la Straße et ça", "Grüße aus der Straße über uns"] * 20


def _bytelevel_bpe():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(FRENCH_GERMAN, trainers.BpeTrainer(
        vocab_size=400, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    return tok


def _wordpiece():
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(FRENCH_GERMAN, trainers.WordPieceTrainer(vocab_size=200, special_tokens=["[UNK]"],
                                                                     show_progress=False))
    return tok


def _raw_and_kind(tok):
    from vocab_transfer.data.tokenizer import detect_tokenizer_kind

    vocab = tok.get_vocab()
    return sorted(vocab, key=vocab.get), detect_tokenizer_kind(tok)


def _unigram():
    from vocab_transfer.data.tokenizer import train_unigram_tokenizer

    return train_unigram_tokenizer(FRENCH_GERMAN, 36, show_progress=False).backend_tokenizer


@pytest.mark.parametrize("make", [_bytelevel_bpe, _unigram, _wordpiece],
                         ids=["bytelevel", "unigram", "wordpiece"])
def test_token_text_shows_real_tokenizers_tokens_as_text(make):
    """Every kind's vocabulary shown as text holds the words as written, never their UTF-8 bytes as
    Latin-1."""
    from vocab_transfer.data.tokenizer import guess_token_kind, token_text

    raw, kind = _raw_and_kind(make())
    texts = {token_text(t, kind) for t in raw}
    assert guess_token_kind(raw) == kind
    assert "ça" in texts and any("ß" in t for t in texts) and any("ü" in t for t in texts)
    if kind != "sentencepiece":  # the small Unigram keeps only short pieces
        assert {"Straße", "über"} <= texts
    assert not any("Ã" in t or "Ġ" in t or "▁" in t or t.startswith("##") for t in texts)


def test_token_text_bytes_markers_and_escapes():
    from vocab_transfer.data.tokenizer import token_text

    assert token_text("ĠÃ§a", "bytelevel_bpe") == "ça" and token_text("Ã§a", "bytelevel_bpe") == "ça"
    assert (token_text("ĠÃ§a", "bytelevel_bpe", bow="_") == "_ça"
            and token_text("ÃŁe", "bytelevel_bpe") == "ße")
    assert token_text("Ã", "bytelevel_bpe") == "\\xc3"  # half a character: escaped, never "Ã"
    assert (token_text("▁ça", "sentencepiece", bow="_") == "_ça"
            and token_text("<0xC3>", "sentencepiece") == "\\xc3")
    assert token_text("<0x41>", "sentencepiece") == "A" and token_text("##ße", "wordpiece") == "ße"
    assert token_text("ça", "wordpiece", bow="_") == "_ça" and token_text("▁a<0xC3>", "canonical") == "a\\xc3"


def test_nearest_tokens_of_byte_level_tokenizers_are_text():
    """WECHSEL Table 6 for a GPT-2-style model: French targets and English sources shown as text."""
    bpe = _bytelevel_bpe()
    raw, _ = _raw_and_kind(bpe)
    ca, strasse = bpe.encode("ça").tokens[0], bpe.encode("Straße").tokens[0]
    assert ca == "ĠÃ§a"  # the raw byte-level form
    prov = pd.DataFrame({"target_id": range(len(raw)), "token": raw, "provenance": "copied",
                         "nearest_source_token": None})
    prov.loc[raw.index(ca), ["provenance", "nearest_source_token"]] = ["combined", "Ġthat"]
    prov.loc[raw.index(strasse), ["provenance", "nearest_source_token"]] = ["combined", "Ġstreet"]
    table, md = vt.nearest_tokens_table({"fr": prov}, ["fr"], 10, 0, "T6")
    assert set(table["token"]) == {"ça", "Straße"} and "| ça | that |" in md and "| Straße | street |" in md
    assert "Ã" not in md and "Ġ" not in md

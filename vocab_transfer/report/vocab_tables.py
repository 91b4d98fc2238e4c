"""The papers' tables of corpora and vocabularies (config ``tables`` of these kinds; rule make_paper_table):
``corpus_sizes``, ``overlap_counts``, ``overlap_sample`` (FOCUS Tables 1, 8, 7), ``nearest_tokens`` (WECHSEL
Table 6), ``vocab_coverage``, ``overlap_groups``, ``overlap_longest`` (UNKs Everywhere Tables 1, 6, 7), one
function ``<kind>_table`` each, which returns ``(long-form table, markdown)``.

Tokens are compared in their canonical form (:func:`vocab_transfer.data.tokenizer.canonicalize_vocab`: no word
markers, bytes decoded), special tokens left out, and shown as text by one function for every tokenizer kind
(:func:`vocab_transfer.data.tokenizer.token_text`: bytes decoded, "Ã§a" shown "ça", a byte that is no whole
character escaped "\\xc3", the word-initial marker left out).
"""

from __future__ import annotations

import unicodedata
from collections import Counter

import numpy as np
import pandas as pd

from ..data.tokenizer import canonicalize_vocab, guess_token_kind, token_text

# ISO code -> (language, family): the papers' languages and the demo's; others show their code and "—"
LANGUAGES = {
    "en": ("English", "Indo-European"), "de": ("German", "Indo-European"), "fr": ("French", "Indo-European"),
    "ar": ("Arabic", "Afro-Asiatic"), "he": ("Hebrew", "Afro-Asiatic"), "am": ("Amharic", "Afro-Asiatic"),
    "ha": ("Hausa", "Afro-Asiatic"), "sw": ("Kiswahili", "Niger-Congo"), "xh": ("isiXhosa", "Niger-Congo"),
    "ny": ("Chichewa", "Niger-Congo"), "wo": ("Wolof", "Niger-Congo"), "tl": ("Tagalog", "Austronesian"),
    "mi": ("Māori", "Austronesian"), "ilo": ("Ilokano", "Austronesian"), "zh": ("Chinese", "Sino-Tibetan"),
    "cdo": ("Mín Dōng", "Sino-Tibetan"), "bo": ("Tibetan", "Sino-Tibetan"), "ja": ("Japanese", "Japonic"),
    "ko": ("Korean", "Koreanic"), "ka": ("Georgian", "Kartvelian"), "xmf": ("Mingrelian", "Kartvelian"),
    "ur": ("Urdu", "Indo-European"), "hi": ("Hindi", "Indo-European"), "sd": ("Sindhi", "Indo-European"),
    "bh": ("Bhojpuri", "Indo-European"), "dv": ("Divehi", "Indo-European"), "gn": ("Guarani", "Tupian"),
    "si": ("Sinhala", "Indo-European"), "myv": ("Erzya", "Uralic"), "km": ("Khmer", "Austroasiatic"),
    "tr": ("Turkish", "Turkic"), "ru": ("Russian", "Indo-European"), "es": ("Spanish", "Indo-European"),
    "fi": ("Finnish", "Uralic"), "vi": ("Vietnamese", "Austroasiatic"), "id": ("Indonesian", "Austronesian"),
}
CATEGORIES = ("Symbols & Numbers", "Names & Entities", "Target (sub-)words", "English & Code-switched",
              "Not assignable")
GROUPS = ("Numbers", "Lat Char", "Lat (S)W", "Oth Char", "Oth (S)W")


def language_name(code: str) -> str:
    return LANGUAGES.get(code, (code, "—"))[0]


def _letters(text: str) -> list[str]:
    return [ch for ch in text if unicodedata.category(ch)[0] == "L"]


def script_of(ch: str) -> str:
    """The Unicode script of a letter, from its character name (``LATIN``, ``ARABIC``, ``CJK`` ...)."""
    name = unicodedata.name(ch, "")
    return name.split(" ")[0].title() if name else "Unknown"


def dominant_script(texts) -> str:
    """The script of most letters in ``texts`` (a vocabulary's canonical texts)."""
    counts = Counter(script_of(ch) for t in texts for ch in _letters(t))
    return counts.most_common(1)[0][0] if counts else "—"


def _fmt_bytes(n: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.2f} {unit}" if n < 10 * size else f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def _md(title: str, header: list[str], rows: list[list[str]]) -> str:
    lines = [f"**{title}**", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def real_overlap(overlap: pd.DataFrame) -> pd.DataFrame:
    """The overlap without special tokens (matched by role, not by text)."""
    return overlap[overlap["match"] != "special"]


def canonical_text(overlap: pd.DataFrame) -> pd.Series:
    """The overlapping tokens' canonical forms as text (:func:`token_text`), no word-initial marker."""
    return overlap["canonical"].map(lambda c: token_text(c, "canonical"))


def _overlap_texts(overlap: pd.DataFrame) -> pd.DataFrame:
    return real_overlap(overlap).assign(text=lambda d: canonical_text(d))


def _sample(frame: pd.DataFrame, size: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return frame.iloc[np.sort(rng.choice(len(frame), size=min(size, len(frame)), replace=False))]


def corpus_sizes_table(stats: dict[str, dict], languages: list[str], title: str) -> tuple[pd.DataFrame, str]:
    """FOCUS Table 1: one row per language, its training documents and bytes (after filtering and the
    held-out split)."""
    rows = [{"language": lang, "name": language_name(lang), **{k: int(stats[lang].get(k, 0)) for k in (
        "train_docs", "train_bytes", "heldout_docs")}} for lang in languages]
    return pd.DataFrame(rows), _md(title, ["Language", "Dataset size", "Documents"],
                                   [[r["name"], _fmt_bytes(r["train_bytes"]), f"{r['train_docs']:,}"]
                                    for r in rows])


def overlap_counts_table(overlaps: dict[str, pd.DataFrame], fasttext_tokens: dict[str, pd.DataFrame | None],
                         languages: list[str], min_count: int | None, title: str) -> tuple[pd.DataFrame, str]:
    """FOCUS Table 8, per language: overlapping (non-special) tokens in all (``full``) and those whose target
    token has a token-level fastText vector (``with_vector``: reached ``minCount``; NaN without token
    fastText)."""
    rows = []
    for lang in languages:
        ov = real_overlap(overlaps[lang])
        tokens = fasttext_tokens.get(lang)
        with_vector = (None if tokens is None else
                       int(tokens.set_index("token_id")["has_vector"].reindex(ov["target_id"]).fillna(False).sum()))
        rows.append({"language": lang, "name": language_name(lang), "full": len(ov),
                     "with_vector": with_vector})
    counted = f"minCount = {min_count}" if min_count is not None else "with a fastText vector"
    return pd.DataFrame(rows), _md(title, ["Language", counted, "Full"], [
        [r["name"], "—" if r["with_vector"] is None else f"{r['with_vector']:,}", f"{r['full']:,}"]
        for r in rows])


def _zipf(word: str, lang: str) -> float:
    try:
        import wordfreq
    except ImportError:  # pragma: no cover - optional (the demo extra)
        return 0.0
    return wordfreq.zipf_frequency(word, lang) if lang in wordfreq.available_languages() else 0.0


def token_category(text: str, lang: str, *, common: float = 2.5) -> str:
    """An automatic stand-in for FOCUS Table 7's manual categories, by Unicode and word-frequency rules:

    1. *Symbols & Numbers*: no letter, or a digit;
    2. *Names & Entities*: an inner capital after a lower-case letter (``BlackBerry``, ``JavaScript``);
    3. *Target (sub-)words*: a common word of the target language (``wordfreq`` Zipf frequency ≥ ``common``),
       at least as common there as in English;
    4. *English & Code-switched*: a common English word, more common than in the target language;
    5. *Names & Entities*: capitalised (``Messi``, ``Oscar``), three letters or more;
    6. *Not assignable*: the rest (fragments such as ``kub``, ``rez``).

    A hand annotation reads context the rules cannot: a capitalised German noun that is rare in ``wordfreq``
    lands in *Names*, a name that is also a common word (``Oscar``) in a language's words. Languages that
    ``wordfreq`` does not know have no common words: their tokens fall into English, Names or Not assignable.
    """
    letters = _letters(text)
    if not letters or any(unicodedata.category(ch) == "Nd" for ch in text):
        return CATEGORIES[0]
    if any(a.islower() and b.isupper() for a, b in zip(text, text[1:], strict=False)):
        return CATEGORIES[1]
    target, english = _zipf(text, lang), _zipf(text, "en")
    if target >= common and target >= english:
        return CATEGORIES[2]
    if english >= common:
        return CATEGORIES[3]
    if text[0].isupper() and len(letters) >= 3:
        return CATEGORIES[1]
    return CATEGORIES[4]


def overlap_sample_table(overlaps: dict[str, pd.DataFrame], languages: list[str], sample: int, seed: int,
                         title: str) -> tuple[pd.DataFrame, str]:
    """FOCUS Table 7: a seeded sample of ``sample`` overlapping tokens per language (single characters left
    out, as in the paper), each with :func:`token_category`; the markdown: each category's share, up to 6
    examples."""
    long, parts = [], []
    for lang in languages:
        ov = _overlap_texts(overlaps[lang])
        ov = ov[ov["text"].str.len() > 1].sort_values("target_id")
        picked = _sample(ov, sample, seed)
        cats = [token_category(t, lang) for t in picked["text"]]
        long.append(pd.DataFrame({"language": lang, "target_id": picked["target_id"].to_numpy(),
                                  "token": picked["text"].to_numpy(), "category": cats}))
        counts = Counter(cats)
        rows = [[c, f"{100 * counts[c] / max(len(cats), 1):.0f}%",
                 ", ".join([t for t, k in zip(picked["text"], cats, strict=True) if k == c][:6])]
                for c in CATEGORIES]
        parts.append(_md(f"{title}: {language_name(lang)}, {len(cats)} of {len(ov):,} overlapping tokens "
                         f"(seed {seed})", ["Category", "Share", "Examples"], rows))
    return pd.concat(long, ignore_index=True), "\n".join(parts)


def nearest_tokens_table(provenance: dict[str, pd.DataFrame], languages: list[str], sample: int, seed: int,
                         title: str) -> tuple[pd.DataFrame, str]:
    """WECHSEL Table 6: a seeded sample of ``sample`` target tokens per language whose rows WECHSEL combined,
    each with its most similar source token (the largest softmax weight, recorded by the init as
    ``nearest_source_token``), both shown as text (:func:`token_text`, word-initial markers left out). The
    provenance records raw token strings only: each side's tokenizer kind is read from them
    (:func:`guess_token_kind`: the whole target vocabulary, the source tokens the table's rows name)."""
    long, parts = [], []
    for lang in languages:
        prov = provenance[lang]
        if "nearest_source_token" not in prov:
            raise ValueError(f"the {lang} init records no nearest source tokens (made before they were "
                             "recorded: rebuild it)")
        target_kind, source_kind = map(guess_token_kind, (prov["token"], prov["nearest_source_token"]))
        combined = prov[(prov["provenance"] == "combined") & prov["nearest_source_token"].notna()]
        combined = combined.assign(text=[token_text(t, target_kind) for t in combined["token"]])
        picked = _sample(combined[combined["text"].str.strip().str.len() > 1], sample, seed)  # no single char
        rows = [[t.strip(), token_text(s, source_kind).strip()]
                for t, s in zip(picked["text"], picked["nearest_source_token"], strict=True)]
        long += [{"language": lang, "target_id": i, "token": t, "nearest_source_token": s}
                 for i, (t, s) in zip(picked["target_id"], rows, strict=True)]
        parts.append(_md(f"{title}: {language_name(lang)}", ["Target token", "Closest source token"], rows))
    return pd.DataFrame(long), "\n".join(parts)


def unk_share(target_texts: list[str], source_tokenizer) -> float:
    """Share of target tokens (canonical text with a leading space for word-initial ones) that the source
    tokenizer cannot encode without UNK (UNKs Everywhere §2: "cannot even be composed by subword tokens")."""
    unk = source_tokenizer.unk_token_id
    if unk is None or not target_texts:
        return 0.0
    encoded = source_tokenizer(target_texts, add_special_tokens=False)["input_ids"]
    return float(np.mean([unk in ids for ids in encoded]))


def vocab_coverage_table(languages: list[str], target_tokenizers: dict, source_tokenizer,
                         overlaps: dict[str, pd.DataFrame], title: str) -> tuple[pd.DataFrame, str]:
    """UNKs Everywhere Table 1: per language its family, script, UNK share (:func:`unk_share`) and overlap
    share."""
    rows = []
    for lang in languages:
        vocab = [t for t in canonicalize_vocab(target_tokenizers[lang]) if not t.special and t.text]
        texts = [(" " if t.bow else "") + t.text for t in vocab]
        name, family = LANGUAGES.get(lang, (lang, "—"))
        rows.append({"language": lang, "name": name, "family": family,
                     "script": dominant_script(t.text for t in vocab), "tokens": len(vocab),
                     "unk_share": unk_share(texts, source_tokenizer),
                     "overlap_share": len(real_overlap(overlaps[lang])) / max(len(vocab), 1)})
    return pd.DataFrame(rows), _md(title, ["Language", "iso", "Family", "Script", "UNK", "Overlap"], [
        [r["name"], r["language"], r["family"], r["script"], f"{100 * r['unk_share']:.0f}%",
         f"{100 * r['overlap_share']:.0f}%"] for r in rows])


def overlap_group(text: str) -> str:
    """UNKs Everywhere Table 6: *Numbers* (a digit), *Lat Char* (one Latin character), *Lat (S)W* (longer,
    with a Latin letter), *Oth Char* / *Oth (S)W* (one character / longer, without a Latin letter)."""
    if any(unicodedata.category(ch) == "Nd" for ch in text):
        return GROUPS[0]
    latin = any(script_of(ch) == "Latin" for ch in _letters(text))
    if len(text) == 1:
        return GROUPS[1] if latin else GROUPS[3]
    return GROUPS[2] if latin else GROUPS[4]


def overlap_groups_table(overlaps: dict[str, pd.DataFrame], languages: list[str],
                         title: str) -> tuple[pd.DataFrame, str]:
    """UNKs Everywhere Table 6: the share of each language's overlapping tokens in each group."""
    long = []
    for lang in languages:
        groups = Counter(overlap_group(t) for t in canonical_text(real_overlap(overlaps[lang])) if t)
        total = max(sum(groups.values()), 1)
        long += [{"language": lang, "group": g, "tokens": groups[g],
                  "share": groups[g] / total} for g in GROUPS]
    table = pd.DataFrame(long)
    share = table.set_index(["group", "language"])["share"]
    return table, _md(title, ["", *languages],
                      [[g, *(f"{100 * share[(g, lang)]:.0f}%" for lang in languages)] for g in GROUPS])


def overlap_longest_table(overlaps: dict[str, pd.DataFrame], languages: list[str], top: int,
                          title: str) -> tuple[pd.DataFrame, str]:
    """UNKs Everywhere Table 7: the ``top`` longest overlapping tokens per language (ties: lower target id,
    i.e. more frequent)."""
    long, columns = [], {}
    for lang in languages:
        ov = _overlap_texts(overlaps[lang])
        ov = ov.assign(length=ov["text"].str.len()).sort_values(["length", "target_id"],
                                                                ascending=[False, True])
        ov = ov.drop_duplicates("text")  # a word-initial and an inner piece of the same text show once
        columns[lang] = ov["text"].head(top).tolist()
        long += [{"language": lang, "rank": i + 1, "token": t} for i, t in enumerate(columns[lang])]
    rows = [[columns[lang][i] if i < len(columns[lang]) else "—" for lang in languages] for i in range(top)]
    return pd.DataFrame(long), _md(title, languages, rows)


def input_files(inputs: dict, manifest: list, what: str, source: str | None = None) -> dict:
    """language -> the input path of each manifest record of ``what`` (of ``source``, where given)."""
    return {rec["language"]: inputs[rec["input"]] for rec in manifest
            if rec["what"] == what and (source is None or rec.get("source") == source)}


def per_source(inputs: dict, manifest: list, title: str, block) -> tuple[pd.DataFrame, str]:
    """A corpus or vocabulary table of a `tables` entry (rule make_paper_table) drawn one block per source
    model, by ``block(source, overlaps, head)`` -> (table, markdown), ``overlaps`` the source's overlap with
    each language (language -> frame). ``manifest``: what each input is (``[{"input": name, "what": ...,
    "language": ..., "source": ...}]``)."""
    from ..io import read_parquet

    tables, parts = [], []
    for source in dict.fromkeys(rec["source"] for rec in manifest if "source" in rec):
        overlaps = {lang: read_parquet(path, kind="overlap")
                    for lang, path in input_files(inputs, manifest, "overlap", source).items()}
        table, md = block(source, overlaps, f"{title} (source `{source}`)")
        tables.append(table.assign(source=source))
        parts.append(md)
    return pd.concat(tables, ignore_index=True), "\n".join(parts)

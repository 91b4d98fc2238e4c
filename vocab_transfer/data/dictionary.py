"""Bilingual dictionaries: the seed pairs of WECHSEL's alignment (WECHSEL §4) and Dict Match.

Every reader returns a DataFrame with columns ``source_word`` and ``target_word`` (source → target,
one row per pair, deduplicated, single words only: multi-word expressions have no word vector).

- :func:`read_freedict`: FreeDict in dictd format, as installed by Debian's ``dict-freedict-*``
  packages (``/usr/share/dictd/freedict-eng-deu.{index,dict.dz}``) — WECHSEL's Swahili dictionary;
- :func:`read_pairs`: MUSE-style text files, one ``source target`` pair per line (WECHSEL's fr/de/zh);
- :func:`identical_pairs`: words spelled the same in both languages, the seed dictionary of Artetxe
  et al. (2017) and MUSE's ``identical_char`` — for pairs without a dictionary (here tl, ny).

Each kind a config names (``dictionaries.<source lang>.<lang>.source``) is one class named after it (``muse``:
:class:`MuseDictionary`); :data:`DICTIONARY_SOURCES` holds one of each.
"""

from __future__ import annotations

import functools
import gzip
import os
import re
from pathlib import Path

from .. import lazy
from ..io import read_parquet

pd = lazy.module("pandas")

DICTD_ROOT = "/usr/share/dictd"
_B64 = {c: i for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")}
_ANNOTATION = re.compile(r"<[^>]*>|\[[^\]]*\]|\([^)]*\)|\{[^}]*\}")
_PRONUNCIATION = re.compile(r"/[^/]*/")  # headword line only: translations may contain "and/or"
_NUMBERING = re.compile(r"^\s*\d+\.\s*")
_WORD = re.compile(r"^[\w'’\-]+$")
_SKIP = ("see:", "synonym:", "syn:", "antonym:", "note:", "example:", "ex:", "also:")


def _b64(s: str) -> int:
    return functools.reduce(lambda n, c: n * 64 + _B64[c], s, 0)


def _entries(name: str, root: str | os.PathLike) -> list[str]:
    base = Path(root) / f"freedict-{name}"
    index, data = base.with_suffix(".index"), Path(f"{base}.dict.dz")
    if not index.is_file() or not data.is_file():
        raise FileNotFoundError(
            f"FreeDict dictionary {name!r} not found under {root} (expected {index.name} and {data.name}); "
            f"install it with `apt-get install dict-freedict-{name}` or point `root` at a copy")
    raw = gzip.open(data).read()  # dictzip is gzip with a random-access header
    out = []
    for line in index.read_text(encoding="utf-8").splitlines():
        head, offset, length = line.split("\t")[:3]
        if head.startswith(("00-database", "00database")):
            continue
        out.append(raw[_b64(offset):_b64(offset) + _b64(length)].decode("utf-8", errors="replace"))
    return out


def parse_freedict_entry(entry: str) -> list[tuple[str, str]]:
    """(headword, translation) pairs of one dictd entry (TEI-to-dictd layout of FreeDict). Line 1 is the
    headword with pronunciation and part of speech; the following lines list translations separated by ``,``
    or ``;``, optionally numbered ``1.``; annotations in ``<>``, ``[]``, ``()`` and cross references (``see:
    {...}``) are dropped."""
    lines = [x for x in entry.splitlines() if x.strip()]
    if not lines:
        return []
    head = _ANNOTATION.sub(" ", _PRONUNCIATION.sub(" ", lines[0])).strip()
    pairs = []
    for line in lines[1:]:
        text = line.strip()
        if text.lower().startswith(_SKIP):
            continue
        text = _ANNOTATION.sub(" ", _NUMBERING.sub("", text))
        for part in re.split(r"[,;]", text):
            part = " ".join(part.split())
            if part:
                pairs.append((head, part))
    return pairs


def read_freedict(name: str, root: str | os.PathLike = DICTD_ROOT) -> pd.DataFrame:
    """All single-word pairs of FreeDict dictionary ``name`` (e.g. ``eng-deu``; source = first language)."""
    pairs = [p for entry in _entries(name, root) for p in parse_freedict_entry(entry)]
    return single_words(pd.DataFrame(pairs, columns=["source_word", "target_word"]))


def read_pairs(path: str | os.PathLike) -> pd.DataFrame:
    """A MUSE-style dictionary: one ``source<whitespace>target`` pair per line."""
    with open(path, encoding="utf-8") as f:
        rows = [parts for line in f if len(parts := line.split()) == 2]
    if not rows:
        raise ValueError(f"{path}: no 'source target' pairs found")
    return single_words(pd.DataFrame(rows, columns=["source_word", "target_word"]))


def identical_pairs(source_words: list[str], target_words: list[str], min_length: int = 2) -> pd.DataFrame:
    """Words present in both vocabularies with the same spelling (identical-strings seed dictionary)."""
    common = sorted(set(source_words) & set(target_words))
    common = [w for w in common if len(w) >= min_length and _WORD.match(w)]
    return pd.DataFrame({"source_word": common, "target_word": common})


def single_words(pairs: pd.DataFrame) -> pd.DataFrame:
    """Keep pairs where both sides are single words; strip; deduplicate; stable order."""
    pairs = pairs.assign(source_word=pairs["source_word"].str.strip(),
                         target_word=pairs["target_word"].str.strip())
    ok = pairs["source_word"].str.match(_WORD) & pairs["target_word"].str.match(_WORD)
    return pairs[ok].drop_duplicates().reset_index(drop=True)


class DictionarySource:
    """One kind of bilingual dictionary, named by its config value ``dictionaries.<slang>.<lang>.source``."""

    name: str
    key: str | None = None  # the spec key it needs, checked while the workflow is planned
    url: str | None = None  # downloaded from there ({slang}, {lang}) on the login node (cluster only)

    def problem(self, where: str, spec, vectors: bool) -> str | None:
        """What is wrong with the spec at ``where`` (``vectors``: both languages have word vectors)."""
        if self.key and getattr(spec, self.key) is None:
            return f"{where}: source {self.name!r} needs '{self.key}'"
        return None

    def inputs(self, spec, slang: str, lang: str, paths, word_list) -> dict[str, str]:
        """The files rule build_dictionary reads (``paths``: vocab_transfer.workflow.paths)."""
        return {}

    def pairs(self, spec, inputs: dict[str, str]) -> pd.DataFrame:
        """The dictionary's pairs, from the files of :meth:`inputs`."""
        return read_pairs(inputs["pairs"])


class FreedictDictionary(DictionarySource):
    """``source: freedict``: a FreeDict dictionary (``name``, e.g. eng-swh) of a Debian
    ``dict-freedict-<name>`` package, or under ``root`` (:func:`read_freedict`)."""

    name, key = "freedict", "name"

    def pairs(self, spec, inputs: dict[str, str]) -> pd.DataFrame:
        return read_freedict(spec.name, spec.root or DICTD_ROOT)


class MuseDictionary(DictionarySource):
    """``source: muse``: MUSE's ground-truth dictionary ``<slang>-<lang>.txt`` (rule download_dictionary)."""

    name, url = "muse", "https://dl.fbaipublicfiles.com/arrival/dictionaries/{slang}-{lang}.txt"

    def inputs(self, spec, slang: str, lang: str, paths, word_list) -> dict[str, str]:
        return {"pairs": paths.muse_dictionary(slang, lang)}


class FileDictionary(DictionarySource):
    """``source: file``: a text file (``path``), one ``source target`` pair per line (:func:`read_pairs`)."""

    name, key = "file", "path"

    def inputs(self, spec, slang: str, lang: str, paths, word_list) -> dict[str, str]:
        return {"pairs": spec.path}


class IdenticalDictionary(DictionarySource):
    """``source: identical``: the words spelled the same in both languages' word lists, ``min_length``
    characters or more (:func:`identical_pairs`)."""

    name = "identical"

    def problem(self, where: str, spec, vectors: bool) -> str | None:
        if not vectors:
            return f"{where}: identical-spelling dictionaries need word vectors of both languages"
        return None

    def inputs(self, spec, slang: str, lang: str, paths, word_list) -> dict[str, str]:
        return {"source_words": word_list(slang), "target_words": word_list(lang)}

    def pairs(self, spec, inputs: dict[str, str]) -> pd.DataFrame:
        source, target = (read_parquet(inputs[k], ["word"], kind="words")["word"].tolist()
                          for k in ("source_words", "target_words"))
        return identical_pairs(source, target, min_length=spec.min_length)


#: The kinds of dictionary by config value, one instance of each class.
DICTIONARY_SOURCES: dict[str, DictionarySource] = {s.name: s for s in (
    FreedictDictionary(), MuseDictionary(), FileDictionary(), IdenticalDictionary())}

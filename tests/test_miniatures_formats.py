"""The rehearsal's miniature hub resources in each resource's own file layout and compression
(vocab_transfer.miniatures.build), read through the cluster's code path: the login node's fetch from the hub
mirror (vocab_transfer.data.fetch) and the corpus job's reader (vocab_transfer.data.sources), which decompress
OSCAR 23.01's zstd, CC-100's xz and mC4's gzip as they stream. Two builds of a mirror give the same bytes."""

import gzip
import hashlib
import json
import lzma
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

from vocab_transfer import mirror
from vocab_transfer.data import fetch
from vocab_transfer.data.sources import SourceStats, iter_documents
from vocab_transfer.miniatures.build import OSCAR_WARNINGS, _documents, write_corpus

REPO = Path(__file__).resolve().parents[1]
DOCS = 120
# hub repository -> {(config name or data_dir): language}, as hub_resources reads them from a config
CORPORA = {
    "oscar-corpus/OSCAR-2301": {("data_dir", "sw_meta"): "sw"},
    "statmt/cc100": {("name", "sw"): "sw"},
    "allenai/c4": {("name", "sw"): "sw"},
}


@pytest.fixture
def hub(tmp_path, monkeypatch):
    import datasets

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv(mirror.MIRROR_ENV, str(tmp_path / "mirror"))
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for repo, configs in CORPORA.items():
        write_corpus(tmp_path / "mirror", repo, configs, docs=DOCS)
    return tmp_path / "mirror"


def read(spec: dict, out: Path) -> tuple[dict, list[dict], SourceStats]:
    """Fetch a hub corpus from the mirror as the login node does, and read it as the corpus job does."""
    record = fetch.fetch_hub_corpus(spec, out, log=lambda m: None)
    stats = SourceStats()
    return record, list(iter_documents({**spec, "fetched": str(out)}, stats)), stats


def test_oscar_2301_reads_as_jsonl_zst_through_the_hub_reader(hub, tmp_path):
    repo = hub / "oscar-corpus" / "OSCAR-2301"
    assert sorted(p.relative_to(repo).as_posix() for p in repo.rglob("*") if p.is_file()) == [
        "OSCAR-2301.py", "README.md", "sw_meta/checksum.sha256", "sw_meta/sw_meta_part_1.jsonl.zst",
        "sw_meta/sw_meta_part_2.jsonl.zst"]
    part = repo / "sw_meta" / "sw_meta_part_1.jsonl.zst"
    assert part.read_bytes()[:4] == b"(\xb5/\xfd"  # a zstd frame
    first = json.loads(zstandard.ZstdDecompressor().decompress(part.read_bytes()).split(b"\n")[0])
    assert set(first) == {"content", "warc_headers", "metadata"}
    assert {"identification", "harmful_pp", "tlsh", "quality_warnings", "categories",
            "sentence_identifications"} <= set(first["metadata"])
    assert first["warc_headers"]["warc-record-id"].startswith("<urn:uuid:")
    checksums = dict(reversed(line.split("  "))
                     for line in (repo / "sw_meta" / "checksum.sha256").read_text().split("\n") if line)
    assert checksums[part.name] == hashlib.sha256(part.read_bytes()).hexdigest()

    spec = {"source": "oscar", "lang": "sw"}
    record, docs, stats = read(spec, tmp_path / "oscar")
    assert ([f["path"] for f in record["files"]]
            == ["sw_meta/sw_meta_part_1.jsonl.zst", "sw_meta/sw_meta_part_2.jsonl.zst"])
    dropped = {i for i in range(DOCS)
               if set(OSCAR_WARNINGS.get(i % (DOCS // 2) % 50) or ()) & {"header", "footer", "noisy"}}
    kept = ["\n".join(d) for i, d in enumerate(_documents("sw", DOCS, 0)) if i not in dropped]
    assert dropped and [d["text"] for d in docs] == kept
    assert stats.origin["dataset"] == "oscar-corpus/OSCAR-2301" and stats.origin["data_dir"] == "sw_meta"
    assert [d["text"] for d in iter_documents(spec)] == kept  # streamed from the mirror, unfetched


def test_cc100_reads_as_txt_xz(hub, tmp_path):
    xz = hub / "statmt" / "cc100" / "sw.txt.xz"
    lines = lzma.decompress(xz.read_bytes()).decode().split("\n")
    first, second = _documents("sw", DOCS, 0)[:2]  # a line per paragraph, an empty line after each document
    assert lines[:len(first) + len(second) + 2] == [*first, "", *second, ""] and len(second) == 2
    record, docs, _ = read({"source": "cc100", "lang": "sw"}, tmp_path / "cc100")
    assert [f["path"] for f in record["files"]] == ["sw.txt.xz"]
    assert [d["text"] for d in docs] == [line for d in _documents("sw", DOCS, 0) for line in d]
    assert all(d["positional"] for d in docs)


def test_mc4_reads_as_allenai_c4_json_gz(hub, tmp_path):
    c4 = hub / "allenai" / "c4" / "multilingual"
    assert sorted(p.name for p in c4.iterdir()) == [
        "c4-sw-validation.tfrecord-00000-of-00008.json.gz", "c4-sw.tfrecord-00000-of-01024.json.gz",
        "c4-sw.tfrecord-00001-of-01024.json.gz"]
    with gzip.open(c4 / "c4-sw.tfrecord-00000-of-01024.json.gz", "rt") as f:
        assert set(json.loads(f.readline())) == {"text", "timestamp", "url"}
    record, docs, _ = read({"source": "mc4", "lang": "sw"}, tmp_path / "mc4")
    # the card's train split: no validation shard
    assert [f["path"] for f in record["files"]] == [f"multilingual/c4-sw.tfrecord-0000{k}-of-01024.json.gz"
                                                    for k in (0, 1)]
    documents = ["\n".join(d) for d in _documents("sw", DOCS, 0)]
    assert [d["text"] for d in docs] == documents[:-DOCS // 20]


def test_a_data_dir_is_read_in_the_order_of_its_part_numbers(tmp_path):
    folder = tmp_path / "repo" / "xx_meta"
    folder.mkdir(parents=True)
    for k in (1, 2, 10):
        (folder / f"xx_meta_part_{k}.jsonl.zst").write_bytes(b"")
    (folder / "checksum.sha256").write_text("")
    (tmp_path / "repo" / "repo.py").write_text("")
    assert (fetch.listed_files(tmp_path / "repo", "xx_meta")
            == [f"xx_meta/xx_meta_part_{k}.jsonl.zst" for k in (1, 2, 10)])
    with pytest.raises(ValueError, match="no data files under yy_meta/"):
        fetch.listed_files(tmp_path / "repo", "yy_meta")


def digests(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


BUILD = """
import sys
from vocab_transfer.miniatures.build import Resources, build_mirror

corpora = {"oscar-corpus/OSCAR-2301": {("data_dir", "sw_meta"): "sw"}, "statmt/cc100": {("name", "sw"): "sw"},
           "allenai/c4": {("name", "sw"): "sw"}}
build_mirror({}, sys.argv[1], progress=lambda m: None, resources=Resources(
    models={"google-bert/bert-base-multilingual-cased": {"de", "en"}}, corpora=corpora,
    tasks={"xnli": {"task": "nli", "loader": "xnli", "language": "sw"}}, word_vectors={"sw"},
    dictionaries={("en", "sw")}, benchmarks={"xnli_sw": "sw"}))
"""


def test_two_builds_of_a_mirror_give_the_same_bytes(tmp_path):
    """A BERT (WordPiece) model, a corpus of each compression, word vectors, a dictionary, a task and a
    benchmark, built twice in the same place (lm-eval task files name their data by absolute path), each in a
    process of its own, as two rehearsals are (the tokenizers library hashes differently in each process)."""
    root, builds = tmp_path / "mirror", []
    for i in range(2):
        subprocess.run([sys.executable, "-c", BUILD, str(root)], check=True, cwd=REPO,
                       env={**os.environ, "PYTHONPATH": str(REPO), "TOKENIZERS_PARALLELISM": "true"})
        builds.append(digests(root))
        shutil.move(root, tmp_path / f"build{i}")
    files = set(builds[0])
    assert {"google-bert/bert-base-multilingual-cased/tokenizer.json", "statmt/cc100/sw.txt.xz",
            "oscar-corpus/OSCAR-2301/sw_meta/sw_meta_part_1.jsonl.zst",
            "allenai/c4/multilingual/c4-sw.tfrecord-00000-of-01024.json.gz",
            "urls/dl.fbaipublicfiles.com/fasttext/vectors-crawl/cc.sw.300.bin.gz",
            "urls/dl.fbaipublicfiles.com/arrival/dictionaries/en-sw.txt", "rehearsal.json"} <= files
    assert any(f.endswith(".parquet") for f in files) and any(f.endswith(".safetensors") for f in files)
    assert builds[0] == builds[1], sorted(f for f in files if builds[0][f] != builds[1].get(f))
    assert gzip.open(
        tmp_path / "build0" / "urls/dl.fbaipublicfiles.com/fasttext/vectors-crawl/cc.sw.300.bin.gz"
    ).read(4) == b"\xba\x16\x4f\x2f"  # fastText's model magic number

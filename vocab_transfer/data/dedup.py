"""Exact deduplication in bounded memory: a set of 64-bit document hashes that spills to disk.

:class:`HashSet` keeps up to ``memory_keys`` keys in RAM as sorted NumPy runs (8 bytes each). Past that, the
runs are merged and written to a sorted file (a *disk run*) in ``spill_dir``; disk runs of similar size are
merged by a streaming two-way merge, so there are O(log n) of them and each key is rewritten O(log n) times.
Every spilled key also goes into a scalable Bloom filter (``bloom_bits`` bits per key: about 0.3% false
positives per filter at 12), and a key the filter does not rule out is looked up exactly: in each disk run's
sparse index (every ``BLOCK``-th key, in RAM) and then in one block of the file, read with ``os.pread``.

Memory: ``8 * memory_keys`` bytes (twice that while in-memory runs merge), ``bloom_bits / 8`` bytes per
spilled key (1.5 bytes at 12 bits: 0.15 GB per 100 M documents) and 8 bytes per ``BLOCK`` spilled keys.
Without ``spill_dir`` everything stays in RAM: 8 bytes per key, 0.8 GB per 100 M documents.
"""

from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path

from .. import lazy
from ..io import ArrayFile

np = lazy.module("numpy")

BLOCK = 4096  # keys per block of a disk run (32 KB): one pread per exact lookup
_M1, _M2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB  # splitmix64's multipliers


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer: a second, independent hash of each key (for double hashing)."""
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(_M1)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(_M2)
    return x ^ (x >> np.uint64(31))


class BloomFilter:
    """A Bloom filter of ``capacity`` keys at ``bits_per_key`` bits, ``k = bits_per_key * ln 2`` probes per
    key (double hashing: ``key + i * mix(key)``)."""

    def __init__(self, capacity: int, bits_per_key: int = 12):
        self.capacity, self.n = capacity, 0
        self.m = np.uint64(max(64, capacity * bits_per_key))
        self.k = max(1, round(bits_per_key * math.log(2)))
        self.bits = np.zeros((int(self.m) + 7) // 8, dtype=np.uint8)

    def _probes(self, keys: np.ndarray) -> np.ndarray:
        step = _mix(keys) | np.uint64(1)
        with np.errstate(over="ignore"):
            return (keys[None, :] + np.arange(self.k, dtype=np.uint64)[:, None] * step[None, :]) % self.m

    def add(self, keys: np.ndarray, chunk: int = 1 << 14) -> None:  # chunk: k x 16,384 probes, 1 MB each
        for a in range(0, len(keys), chunk):
            p = self._probes(keys[a:a + chunk]).ravel()
            np.bitwise_or.at(self.bits, (p >> np.uint64(3)).astype(np.intp),
                             (1 << (p & np.uint64(7))).astype(np.uint8))
        self.n += len(keys)

    def contains(self, keys: np.ndarray) -> np.ndarray:
        """Per key: False if it was certainly never added."""
        p = self._probes(keys)
        return (((self.bits[(p >> np.uint64(3)).astype(np.intp)] >> (p & np.uint64(7)).astype(np.uint8)) & 1)
                .all(0))


class DiskRun:
    """Sorted keys in a raw ``uint64`` file, with its sparse index (every :data:`BLOCK`-th key) in RAM."""

    def __init__(self, path: Path, n: int, sparse: np.ndarray):
        self.path, self.n, self.sparse = path, n, sparse
        self.file = ArrayFile(path, np.dtype("<u8"), length=n)

    @classmethod
    def write(cls, path: Path, keys: np.ndarray) -> DiskRun:
        keys.astype("<u8", copy=False).tofile(path)
        return cls(path, len(keys), keys[::BLOCK].copy())

    def contains(self, keys: np.ndarray) -> np.ndarray:
        """Exact membership of a few keys: one block read per distinct block they fall in."""
        out = np.zeros(len(keys), dtype=bool)
        blocks = np.searchsorted(self.sparse, keys, side="right") - 1
        for b in np.unique(blocks[blocks >= 0]):
            sel = blocks == b
            block = self.file.read(int(b) * BLOCK, (int(b) + 1) * BLOCK)
            pos = np.minimum(np.searchsorted(block, keys[sel]), len(block) - 1)
            out[sel] = block[pos] == keys[sel]
        return out

    def chunks(self, size: int = 1 << 17):
        for a in range(0, self.n, size):
            yield self.file.read(a, a + size)

    def remove(self) -> None:
        self.file.close()
        self.path.unlink(missing_ok=True)


def merge_runs(a: DiskRun, b: DiskRun, path: Path, chunk: int = 1 << 17) -> DiskRun:
    """Stream two disjoint sorted disk runs into one, ``chunk`` keys of each in memory at a time."""
    ita, itb, empty = a.chunks(chunk), b.chunks(chunk), np.zeros(0, np.uint64)
    bufa, bufb = next(ita, empty), next(itb, empty)
    n, sparse = 0, []
    with open(path, "wb") as f:
        while len(bufa) or len(bufb):
            ta, tb = len(bufa), len(bufb)
            if ta and tb:  # up to the smaller of the two last keys: nothing after it can come before it
                limit = min(bufa[-1], bufb[-1])
                ta, tb = (int(np.searchsorted(buf, limit, side="right")) for buf in (bufa, bufb))
            merged = np.concatenate([bufa[:ta], bufb[:tb]])
            merged.sort()
            merged.astype("<u8", copy=False).tofile(f)
            sparse.append(merged[(-n) % BLOCK::BLOCK].copy())  # the keys at multiples of BLOCK
            n += len(merged)
            bufa, bufb = bufa[ta:], bufb[tb:]
            bufa, bufb = bufa if len(bufa) else next(ita, empty), bufb if len(bufb) else next(itb, empty)
    return DiskRun(path, n, np.concatenate(sparse) if sparse else empty)


class HashSet:
    """An exact set of 64-bit keys (document hashes): sorted runs in RAM, spilled to disk runs behind a Bloom
    filter once more than ``memory_keys`` are held (the module docstring gives the memory it needs).
    ``spill_dir`` (a folder for temporary files, removed by :meth:`close`) enables spilling; without it every
    key stays in RAM."""

    def __init__(self, *, memory_keys: int = 1 << 18, spill_dir: str | os.PathLike | None = None,
                 bloom_bits: int = 12, bloom_capacity: int = 1 << 20):
        self.memory_keys, self.bloom_bits, self.bloom_capacity = memory_keys, bloom_bits, bloom_capacity
        self._runs: list[np.ndarray] = []
        self._disk: list[DiskRun] = []
        self._blooms: list[BloomFilter] = []
        self._tmp = (tempfile.TemporaryDirectory(prefix=".dedup-", dir=spill_dir)
                     if spill_dir is not None else None)
        self._files = 0

    def __len__(self) -> int:
        return sum(len(r) for r in self._runs) + sum(d.n for d in self._disk)

    @property
    def nbytes(self) -> int:
        """RAM held: in-memory runs, Bloom filters and sparse indexes."""
        return (sum(r.nbytes for r in self._runs) + sum(b.bits.nbytes for b in self._blooms)
                + sum(d.sparse.nbytes for d in self._disk))

    @property
    def spilled(self) -> int:
        return sum(d.n for d in self._disk)

    def add(self, keys: np.ndarray) -> np.ndarray:
        """Insert ``keys`` (uint64, in document order) and return a bool mask of those not seen before; of a
        key repeated within ``keys`` only the first occurrence is new."""
        keys = np.asarray(keys, dtype=np.uint64)
        uniq, first = np.unique(keys, return_index=True)
        new = np.ones(len(uniq), dtype=bool)
        for run in self._runs:
            pos = np.minimum(np.searchsorted(run, uniq), len(run) - 1)
            new &= run[pos] != uniq
        if self._disk and new.any():
            idx = np.flatnonzero(new)
            maybe = np.zeros(len(idx), dtype=bool)
            for bloom in self._blooms:
                maybe |= bloom.contains(uniq[idx])
            idx = idx[maybe]
            for run in reversed(self._disk):  # newest first
                if not len(idx):
                    break
                hit = run.contains(uniq[idx])
                new[idx[hit]] = False
                idx = idx[~hit]
        mask = np.zeros(len(keys), dtype=bool)
        mask[first[new]] = True
        if new.any():
            self._runs.append(uniq[new])
            while len(self._runs) > 1 and 2 * len(self._runs[-1]) >= len(self._runs[-2]):
                b, a = self._runs.pop(), self._runs.pop()
                merged = np.concatenate([a, b])
                merged.sort()
                self._runs.append(merged)
            if self._tmp is not None and sum(len(r) for r in self._runs) > self.memory_keys:
                self._spill()
        return mask

    def _path(self) -> Path:
        self._files += 1
        return Path(self._tmp.name) / f"run-{self._files:06d}.u64"

    def _spill(self) -> None:
        keys = np.concatenate(self._runs)
        keys.sort()
        self._runs = []
        for a in range(0, len(keys), 1 << 16):  # into the Bloom filters, a new one twice as large when full
            part = keys[a:a + (1 << 16)]
            while len(part):
                if not self._blooms or self._blooms[-1].n >= self._blooms[-1].capacity:
                    size = self.bloom_capacity if not self._blooms else 2 * self._blooms[-1].capacity
                    self._blooms.append(BloomFilter(size, self.bloom_bits))
                room = self._blooms[-1].capacity - self._blooms[-1].n
                self._blooms[-1].add(part[:room])
                part = part[room:]
        self._disk.append(DiskRun.write(self._path(), keys))
        del keys
        while len(self._disk) > 1 and 2 * self._disk[-1].n >= self._disk[-2].n:
            b, a = self._disk.pop(), self._disk.pop()
            self._disk.append(merge_runs(a, b, self._path()))
            a.remove()
            b.remove()

    def close(self) -> None:
        """Remove the spill files."""
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
        for d in self._disk:
            d.file.close()
        self._disk = []

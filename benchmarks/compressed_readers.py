"""Throughput and peak memory of the corpus reader (vocab_transfer.data.sources.read_lines) on one text
file, plain and compressed with gzip, xz, bzip2 and zstd.

    python benchmarks/compressed_readers.py --mb 200

writes a generated text of ``--mb`` MB (Zipf-distributed words, one document per line, so that it compresses
like text) and its compressed copies into a temporary folder, reads each in a fresh process, prints a table
(seconds, MB/s and seconds per GB of text, peak RSS over the process's RSS before reading) and deletes the
folder.
"""

from __future__ import annotations

import argparse
import bz2
import gzip
import json
import lzma
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHUNK_LINES = 20_000


def rss_mb(field: str = "VmRSS") -> float:
    """This process's resident memory now (VmRSS) or its peak (VmHWM), MB, from /proc (ru_maxrss would
    carry the parent's peak over the fork)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def generate(folder: Path, mb: int, seed: int) -> dict[str, Path]:
    """The text file and its compressed copies (gzip -6, xz -1, bzip2 -9, zstd -3), written chunk by chunk."""
    import numpy as np
    import zstandard

    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyzäöüéñ"))
    vocab = ["".join(rng.choice(letters, size=rng.integers(2, 12))) for _ in range(50_000)]
    weights = 1 / np.arange(1, len(vocab) + 1) ** 1.1
    weights /= weights.sum()
    files = {"txt": folder / "c.txt", "gzip": folder / "c.txt.gz", "xz": folder / "c.txt.xz",
             "bzip2": folder / "c.txt.bz2", "zstd": folder / "c.txt.zst"}
    raw = open(files["txt"], "wb")
    sinks = [raw, gzip.open(files["gzip"], "wb", compresslevel=6), lzma.open(files["xz"], "wb", preset=1),
             bz2.open(files["bzip2"], "wb", compresslevel=9)]
    zf = open(files["zstd"], "wb")
    sinks.append(zstandard.ZstdCompressor(level=3).stream_writer(zf, closefd=True))
    written = 0
    while written < mb * 1_000_000:
        lengths = rng.integers(5, 120, size=CHUNK_LINES)
        words = rng.choice(len(vocab), size=int(lengths.sum()), p=weights)
        lines, at = [], 0
        for n in lengths:
            lines.append(" ".join(vocab[w] for w in words[at:at + n]))
            at += n
        data = ("\n".join(lines) + "\n").encode()
        for s in sinks:
            s.write(data)
        written += len(data)
    for s in sinks:
        s.close()
    return files


def read(path: str) -> dict:
    """Read one file through the corpus reader (in this process): seconds, lines, peak RSS over the start."""
    from vocab_transfer.data.sources import read_lines

    before = rss_mb()
    start = time.perf_counter()
    lines = chars = 0
    for _, line in read_lines(path):
        lines += 1
        chars += len(line)
    seconds = time.perf_counter() - start
    peak = rss_mb("VmHWM")
    return {"seconds": seconds, "lines": lines, "rss_before_mb": before, "peak_rss_mb": peak}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=200, help="size of the generated text, MB (default 200)")
    ap.add_argument("--dir", default=None, help="where the temporary folder goes (default: the system's)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--read", help=argparse.SUPPRESS)  # one measurement, in a fresh process
    args = ap.parse_args(argv)
    if args.read:
        print(json.dumps(read(args.read)))
        return
    folder = Path(tempfile.mkdtemp(prefix="compressed_readers_", dir=args.dir))
    try:
        t = time.perf_counter()
        files = generate(folder, args.mb, args.seed)
        size = files["txt"].stat().st_size
        print(f"generated {size / 1e6:.1f} MB of text in {time.perf_counter() - t:.0f} s ({folder})")
        rows = []
        for kind, path in files.items():
            out = subprocess.run([sys.executable, __file__, "--read", str(path)], check=True,
                                 capture_output=True, text=True).stdout
            rows.append((kind, path.stat().st_size, json.loads(out.splitlines()[-1])))
        print(f"{'format':7} {'on disk MB':>10} {'ratio':>6} {'s':>7} {'MB/s':>7} {'s/GB':>7} "
              f"{'peak RSS MB':>11} {'over start':>10}")
        for kind, disk, r in rows:
            print(f"{kind:7} {disk / 1e6:10.1f} {size / disk:6.2f} {r['seconds']:7.2f} "
                  f"{size / 1e6 / r['seconds']:7.1f} {r['seconds'] * 1e9 / size:7.2f} "
                  f"{r['peak_rss_mb']:11.1f} {r['peak_rss_mb'] - r['rss_before_mb']:10.1f}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()

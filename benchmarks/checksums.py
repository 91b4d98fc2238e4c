"""What artifacts' self-checksums cost (``vocab_transfer.artifacts.write_manifest``, called by every atomic
write).

1. Corpus preparation: ``build_corpus`` on ``--gb`` GB of generated text (lines of random words drawn from a
   Zipf-like vocabulary), with manifests and with ``write_manifest`` replaced by a no-op, alternating,
   ``--runs`` times each: the difference of the medians, and the time spent in ``write_manifest`` itself
   (``manifest_s``; its share of the run, ``manifest_pct``), which run-to-run noise does not blur.
2. A finished run (``--results``, e.g. the demo's ``results/``): the time to hash every file its manifests
   list, which is what writing them cost (the write-time hash reads each file once more, from the page cache),
   against the run's wall time (``--run-seconds``).

    python benchmarks/checksums.py --gb 1
    python benchmarks/checksums.py --gb 0 --results results --run-seconds 1656

Writes ``benchmarks/out/checksums.csv``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import pandas as pd

from vocab_transfer import artifacts, io
from vocab_transfer.data.corpus import build_corpus

OUT = Path(__file__).resolve().parent / "out"


def write_text(path: Path, gb: float, seed: int = 0) -> int:
    rng = random.Random(seed)
    vocab = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyzäöü") for _ in range(rng.randint(2, 10)))
             for _ in range(50_000)]
    cum = list(itertools.accumulate(1 / (i + 1) for i in range(len(vocab))))
    target, written = int(gb * 1e9), 0
    with open(path, "w", encoding="utf-8") as f:
        while written < target:
            words = rng.choices(vocab, cum_weights=cum, k=240_000)
            block = "\n".join(" ".join(words[i:i + 24]) for i in range(0, len(words), 24))
            f.write(block + "\n")
            written += len(block.encode()) + 1
    return written


def prepare(text: Path, work: Path) -> float:
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    t0 = time.perf_counter()
    build_corpus({"source": "text", "path": str(text)}, filter_cfg={"min_chars": 10, "min_words": 2},
                 split_cfg={"heldout_fraction": 0.01, "max_heldout_docs": 20000}, seed=0,
                 train_path=work / "train.parquet", heldout_path=work / "heldout.parquet", log=lambda m: None)
    return time.perf_counter() - t0


def corpus_rows(gb: float, runs: int, tmp: Path) -> list[dict]:
    text = tmp / "corpus.txt"
    size = write_text(text, gb)
    real, spent = io.write_manifest, []

    def timed(*args, **kw):
        t0 = time.perf_counter()
        real(*args, **kw)
        spent.append(time.perf_counter() - t0)

    times: dict[str, list[float]] = {"with manifests": [], "without": []}
    for _ in range(runs):
        for name in times:
            io.write_manifest = timed if name == "with manifests" else (lambda *a, **k: None)
            times[name].append(prepare(text, tmp / "work"))
            print(name, round(times[name][-1], 2), flush=True)
    io.write_manifest = real
    out_mb = sum(f.stat().st_size for f in (tmp / "work").rglob("*") if f.is_file()) / 1e6
    on, off = statistics.median(times["with manifests"]), statistics.median(times["without"])
    return [{"what": f"build_corpus, {size / 1e9:.2f} GB of text ({out_mb:.0f} MB written)",
             "with_s": round(on, 2), "without_s": round(off, 2),
             "overhead_pct": round(100 * (on - off) / off, 2), "manifest_s": round(sum(spent) / runs, 3),
             "manifest_pct": round(100 * sum(spent) / runs / on, 2), "runs": runs}]


def run_rows(results: Path, run_seconds: float) -> list[dict]:
    manifests = sorted(results.rglob(f"*{artifacts.MANIFEST}"))
    n_bytes, t0 = 0, time.perf_counter()
    for m in manifests:
        root = m.parent if m.name == artifacts.MANIFEST else m.with_name(m.name[1:-len(artifacts.MANIFEST)])
        for rel in json.loads(m.read_text())["files"]:
            f = root / rel if rel else root
            if f.is_file():
                artifacts.hash_file(f)
                n_bytes += f.stat().st_size
    seconds = time.perf_counter() - t0
    return [{"what": f"{results}: {len(manifests)} manifests, {n_bytes / 1e6:.0f} MB hashed",
             "with_s": run_seconds, "without_s": None, "overhead_pct": None, "manifest_s": round(seconds, 3),
             "manifest_pct": round(100 * seconds / run_seconds, 2), "runs": 1}]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gb", type=float, default=1.0, help="GB of text for the corpus preparation (0: skip)")
    p.add_argument("--runs", type=int, default=2)
    p.add_argument("--results", type=Path, help="a finished run's results/ folder")
    p.add_argument("--run-seconds", type=float, help="that run's wall time")
    a = p.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(dir=OUT.parent) as tmp:
        if a.gb:
            rows += corpus_rows(a.gb, a.runs, Path(tmp))
    if a.results:
        rows += run_rows(a.results, a.run_seconds)
    OUT.mkdir(exist_ok=True)
    df = pd.DataFrame(rows)
    df.to_csv(OUT / "checksums.csv", index=False)
    print(df.to_markdown(index=False))


if __name__ == "__main__":
    main()

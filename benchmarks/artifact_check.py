"""What the artifact check costs per GB: ``python -m vocab_transfer.artifacts ROOT`` and ``--deep``.

Generates ``--gb`` GB of artifacts in a ``results`` folder under ``--dir`` (default: a temporary folder)
through the pipeline's writers: safetensors files of ``--tensor-mb`` MB of float32
(:func:`vocab_transfer.io.write_tensors`) and parquet tables of about 8 MB
(:func:`vocab_transfer.io.write_parquet`), in the share ``--parquet-share``, each with its manifest. Then runs
the check ``--runs`` times each way, as a user would (a fresh interpreter), and reports the median seconds per
GB. The files were just written, so they are in the page cache: the times are those of a check right after a
run, not of one that reads the disk cold. The generated folder is deleted at the end.

    python benchmarks/artifact_check.py --gb 1

Prints one line per mode; appends them to ``benchmarks/out/artifact_check.csv``.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

OUT = Path(__file__).resolve().parent / "out"


def generate(root: Path, gb: float, tensor_mb: int, parquet_share: float) -> tuple[int, int]:
    """Artifacts of about ``gb`` GB under ``root``; returns (files, bytes)."""
    import torch

    from vocab_transfer.io import write_parquet, write_tensors

    target, written, n = int(gb * 1e9), 0, 0
    rng = np.random.default_rng(0)
    while written < target * (1 - parquet_share):
        path = root / "init" / f"s{n // 10}" / f"m{n}.safetensors"
        write_tensors({"embeddings": torch.from_numpy(rng.standard_normal(tensor_mb * 2**18,
                                                                          dtype=np.float32))},
                      path)
        written, n = written + path.stat().st_size, n + 1
    while written < target:
        path = root / "overlap" / f"s{n // 10}" / f"t{n}.parquet"
        rows = 1_000_000
        write_parquet(pd.DataFrame({"target_id": np.arange(rows), "source_id": rng.integers(0, 1 << 40, rows),
                                    "score": rng.standard_normal(rows)}), path)
        written, n = written + path.stat().st_size, n + 1
    return n, written


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--gb", type=float, default=1.0)
    p.add_argument("--tensor-mb", type=int, default=64)
    p.add_argument("--parquet-share", type=float, default=0.2)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--dir", default=None, help="where to generate (default: a temporary folder)")
    args = p.parse_args(argv)
    base = Path(tempfile.mkdtemp(prefix="artifact-check.", dir=args.dir))
    rows = []
    try:
        root = base / "results"
        t0 = time.perf_counter()
        files, size = generate(root, args.gb, args.tensor_mb, args.parquet_share)
        print(f"generated {files} artifacts, {size / 1e9:.2f} GB, in {time.perf_counter() - t0:.1f} s",
              flush=True)
        for mode in ([], ["--deep"]):
            times = []
            for _ in range(args.runs):
                t0 = time.perf_counter()
                out = subprocess.run([sys.executable, "-m", "vocab_transfer.artifacts", str(root), *mode],
                                     capture_output=True, text=True)
                times.append(time.perf_counter() - t0)
                if out.returncode != 0:
                    raise SystemExit(f"the check failed on generated artifacts:\n{out.stdout}{out.stderr}")
            s = statistics.median(times)
            rows.append({"mode": "deep" if mode else "default", "files": files, "gb": round(size / 1e9, 3),
                         "seconds": round(s, 2), "s_per_gb": round(s / (size / 1e9), 2),
                         "cpus": os.cpu_count(), "machine": platform.platform(),
                         "last_line": out.stdout.strip().splitlines()[-1]})
            print(f"{rows[-1]['mode']:8} {s:6.2f} s for {size / 1e9:.2f} GB: {rows[-1]['s_per_gb']:.2f} s/GB "
                  f"(median of {args.runs}; {os.cpu_count()} CPUs) | {rows[-1]['last_line']}", flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    OUT.mkdir(exist_ok=True)
    csv = OUT / "artifact_check.csv"
    pd.DataFrame(rows).to_csv(csv, mode="a", header=not csv.exists(), index=False)


if __name__ == "__main__":
    main()

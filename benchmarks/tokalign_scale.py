"""Time and peak memory of TokAlign's alignment at 50k x 250k vocabularies (target x source).

Inputs are synthetic: clustered token vectors (a random cluster centre plus noise, like trained fastText
vectors) of ``--dim`` dimensions (the ``fasttext.dim`` of config.yaml, 100) for every token of both
vocabularies, and ``--pivots`` pivot pairs. The target tokens outside a ``--overlap`` share of the target
vocabulary are the queries. The time is ``vocab_transfer.methods.tokalign.align``, where the method spends it
(the rest copies rows); every case runs in a fresh subprocess, and "peak RSS" is that process's maximum
resident memory including the inputs.

With ``--fraction f`` below 1 only the first ``f`` of the queries are aligned and the full time is
extrapolated: ``t_full = t_0 + (t_f - t_0) / f``, where ``t_0`` is the same call with no query (the source's
relative representations and the target's mean: the part that does not grow with the queries), since the rest
is a loop over blocks of ``--batch-size`` queries of equal cost. The peak memory of a fraction is that of the
full run (the same blocks, one at a time).

    python benchmarks/tokalign_scale.py                                # 50k x 250k, dim 100, all queries
    python benchmarks/tokalign_scale.py --fraction 0.1                 # a tenth of the queries, extrapolated
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def clustered(n: int, dim: int, g, clusters: int = 5000, noise: float = 0.6):
    import torch

    centres = torch.randn(clusters, dim, generator=g)
    return centres[torch.randint(clusters, (n,), generator=g)] + noise * torch.randn(n, dim, generator=g)


def case(args: argparse.Namespace, k: int | None) -> dict:
    """One measurement in this process: ``align`` for the first ``k`` queries (all if None)."""
    import torch

    from vocab_transfer.methods.tokalign import align

    g = torch.Generator().manual_seed(0)
    t_vec, s_vec = clustered(args.target, args.dim, g), clustered(args.source, args.dim, g)
    n_overlap = int(args.overlap * args.target)
    t_piv = torch.randperm(n_overlap, generator=g)[: args.pivots]
    s_piv = torch.randperm(args.source, generator=g)[: args.pivots]
    candidates = torch.arange(args.source)
    queries = torch.arange(n_overlap, args.target)
    n_queries = len(queries)
    queries = queries if k is None else queries[:k]
    t0 = time.perf_counter()
    picks = align(t_vec, s_vec, t_piv, s_piv, candidates, queries, args.batch_size,
                  relative_mode=args.relative, target_known=torch.arange(args.target))
    seconds = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # kB -> GB
    return {"queries": len(picks), "all_queries": n_queries, "seconds": seconds, "peak_rss_gb": rss,
            "threads": torch.get_num_threads()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", type=int, default=50_000)
    ap.add_argument("--source", type=int, default=250_000)
    ap.add_argument("--dim", type=int, default=100)
    ap.add_argument("--pivots", type=int, default=300)
    ap.add_argument("--overlap", type=float, default=0.3,
                    help="share of the target vocabulary in the overlap")
    ap.add_argument("--batch-size", type=int, default=1024)
    ap.add_argument("--relative", default="centred_normalized")
    ap.add_argument("--fraction", type=float, default=1.0,
                    help="share of the queries aligned (then extrapolated)")
    ap.add_argument("--queries", type=int, default=None, help=argparse.SUPPRESS)  # one case, in a subprocess
    args = ap.parse_args()
    if args.queries is not None:
        print(json.dumps(case(args, None if args.queries < 0 else args.queries)))
        return

    def run(k: int) -> dict:
        cmd = [sys.executable, __file__, *sys.argv[1:], "--queries", str(k)]
        return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)

    n_queries = args.target - int(args.overlap * args.target)
    if args.fraction >= 1:
        full = run(-1)
        print(f"{args.target:,} x {args.source:,}, dim {args.dim}, {args.relative}: "
              f"{full['queries']:,} queries "
              f"aligned in {full['seconds']:.1f} s, peak RSS {full['peak_rss_gb']:.2f} GB "
              f"({full['threads']} threads)")
        return
    k = max(1, round(args.fraction * n_queries))
    zero, part = run(0), run(k)
    t_full = zero["seconds"] + (part["seconds"] - zero["seconds"]) * n_queries / k
    print(f"{args.target:,} x {args.source:,}, dim {args.dim}, {args.relative}: {k:,} of {n_queries:,} "
          f"queries in {part['seconds']:.1f} s (fixed part {zero['seconds']:.1f} s), "
          f"extrapolated to all: {t_full:.0f} s; "
          f"peak RSS {part['peak_rss_gb']:.2f} GB ({part['threads']} threads)")


if __name__ == "__main__":
    main()

"""Speed and peak memory of FOCUS and WECHSEL at paper scale (issue 3 targets: FOCUS ≤ 2.5 s / 2 GB,
WECHSEL ≤ 20 s / 4 GB on a 2-core CPU).

Paper scale (FOCUS §3, App. B): source XLM-R 250,002 × 768 embeddings (+ output bias column),
target vocabulary 50,000, auxiliary vectors 300-d. Inputs are synthetic (no hub here): Gaussian
source rows, clustered auxiliary vectors (random Gaussian ones would be the worst case of sparsemax),
for FOCUS an overlap of ``--overlap`` of the target vocabulary with ``--vector-rate`` of tokens
having a vector (defaults: German in FOCUS Table 8); for WECHSEL, ``--source-coverage`` of the
source tokens with a subword vector (XLM-R tokens that occur in no English word have none; 0.4 is
our assumption, not a measurement — rerun with 1.0 for the worst case). Every case runs in a fresh subprocess;
"peak RSS" is that process's maximum resident memory *including* the inputs (the source matrix alone is 0.77
GB); "time" covers only the method call, inputs already in memory. Cases ``focus_bf16`` / ``wechsel_bf16`` run
the methods' default (certified bf16 screening, ``screen_dtype: bfloat16``), ``focus`` / ``wechsel`` plain
float32. Cases ``omp`` / ``omp_mergekit`` / ``omp_mergekit64`` (not in the default list): the project's OMP
(``vocab_transfer.methods.omp.batch_omp`` in batches of 512 rows, float64 fit) against mergekit's tokensurgeon
``batch_omp`` (one call on all rows, float32 / float64; needs the ``parity`` extra) on the same synthetic
inputs: ``--omp-rows`` clustered ``--omp-dim`` vectors fitted with ``--k`` atoms among ``--omp-anchors``
anchors, the coefficients then applied to the anchors' source rows.

    python benchmarks/init_methods.py                       # all cases, paper scale
    python benchmarks/init_methods.py --cases focus --target 5000 --source-rows 20000   # quick
    python benchmarks/init_methods.py --cases omp omp_mergekit omp_mergekit64 --threads 1 --source-rows 20000

Writes ``benchmarks/out/init_methods.csv`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent / "out"


def clustered(n: int, dim: int, g, clusters: int = 5000, noise: float = 0.6):
    """Vectors with neighbourhood structure, like trained fastText vectors: a random cluster centre plus
    noise (pure Gaussian vectors are the worst case for sparsemax: every similarity is about 0)."""
    import torch

    centres = torch.randn(clusters, dim, generator=g)
    return centres[torch.randint(clusters, (n,), generator=g)] + noise * torch.randn(n, dim, generator=g)


def run_case(a) -> dict:
    import torch

    torch.set_num_threads(a.threads)
    g = torch.Generator().manual_seed(0)
    source = torch.randn(a.source_rows, a.dim + 1, generator=g)  # embeddings + output-bias column
    n_t = a.target
    if a.case.startswith("focus"):
        from vocab_transfer.methods.focus import focus_init

        n_ov = int(a.overlap * n_t)
        ov_t = torch.randperm(n_t, generator=g)[:n_ov]
        ov_s = torch.randperm(a.source_rows, generator=g)[:n_ov]
        x = clustered(n_t, a.aux_dim, g)
        has = torch.rand(n_t, generator=g) < a.vector_rate  # tokens below fastText's minCount have none
        t0 = time.perf_counter()
        screen = torch.bfloat16 if a.case == "focus_bf16" else None
        out, kind, _ = focus_init(source, n_t, ov_t, ov_s, x, has, seed=0, screen_dtype=screen)
        seconds = time.perf_counter() - t0
        detail = f"overlap {n_ov}, combined {(kind == 1).sum().item()}"
    elif a.case.startswith("wechsel"):
        from vocab_transfer.methods.wechsel import wechsel_init

        both = clustered(a.source_rows + n_t, a.aux_dim, g)
        us, ut = both[:a.source_rows], both[a.source_rows:]
        has_s = torch.rand(a.source_rows, generator=g) < a.source_coverage
        has_t = torch.rand(n_t, generator=g) < 0.97
        screen = torch.bfloat16 if a.case == "wechsel_bf16" else None
        t0 = time.perf_counter()
        out, kind, _ = wechsel_init(source, n_t, us, has_s, ut, has_t, torch.arange(4), torch.arange(4),
                                    seed=0, screen_dtype=screen)
        seconds = time.perf_counter() - t0
        detail = f"source candidates {int(has_s.sum())}, combined {(kind == 1).sum().item()}"
    elif a.case.startswith("omp"):
        x = clustered(a.omp_rows + a.omp_anchors, a.omp_dim, g, clusters=2000)
        targets, atoms = x[:a.omp_rows], x[a.omp_rows:]
        rows = source[:a.omp_anchors].double()  # the anchors' source rows
        if a.case == "omp":  # the project's OMP as init_omp runs it: 512 rows a batch, float64 fit and rows
            from vocab_transfer.methods import omp

            combine = getattr(omp, "combine", lambda idx, coef, rows: torch.bmm(coef.unsqueeze(1), rows[idx]))
            t0 = time.perf_counter()
            for start in range(0, a.omp_rows, 512):
                idx, coef = omp.batch_omp(targets[start:start + 512], atoms, a.k)
                combine(idx, coef, rows)
        else:  # mergekit's tokensurgeon: one call on every row (its default batch), float32 or float64
            from mergekit.tokensurgeon.omp import batch_omp

            dtype = torch.float64 if a.case == "omp_mergekit64" else torch.float32
            t0 = time.perf_counter()
            idx, coef = batch_omp(targets.to(dtype), atoms.to(dtype), a.k)
            torch.bmm(coef.unsqueeze(1), rows.to(dtype)[idx])
        seconds = time.perf_counter() - t0
        detail = f"{a.omp_rows} rows, {a.omp_anchors} anchors, {a.omp_dim}-d, k {a.k}"
    elif a.case == "procrustes":
        from vocab_transfer.methods.align import procrustes

        x, y = torch.randn(a.pairs, a.aux_dim, generator=g), torch.randn(a.pairs, a.aux_dim, generator=g)
        t0 = time.perf_counter()
        procrustes(x, y)
        seconds = time.perf_counter() - t0
        detail = f"{a.pairs} dictionary pairs"
    else:
        raise ValueError(a.case)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB
    return {"case": a.case, "seconds": round(seconds, 2), "peak_rss_gib": round(peak, 2), "detail": detail}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", nargs="+",
                   default=["focus", "focus_bf16", "wechsel", "wechsel_bf16", "procrustes"])
    p.add_argument("--case", help=argparse.SUPPRESS)
    p.add_argument("--source-rows", type=int, default=250_002)
    p.add_argument("--dim", type=int, default=768)
    p.add_argument("--target", type=int, default=50_000)
    p.add_argument("--aux-dim", type=int, default=300)
    p.add_argument("--overlap", type=float, default=0.38,
                   help="FOCUS: overlapping share of the target vocabulary (German: 18,986 "
                        "of 50k, FOCUS Table 8)")
    p.add_argument("--vector-rate", type=float, default=0.76,
                   help="FOCUS: share of tokens with a fastText vector (German: 14,485 of "
                        "18,986 overlap tokens)")
    p.add_argument("--source-coverage", type=float, default=0.4,
                   help="WECHSEL: share of source tokens with a subword vector")
    p.add_argument("--pairs", type=int, default=20_000, help="Procrustes: dictionary pairs")
    p.add_argument("--omp-rows", type=int, default=8_868, help="OMP: target tokens to fit")
    p.add_argument("--omp-anchors", type=int, default=710,
                   help="OMP: anchors (overlapping tokens with a vector)")
    p.add_argument("--omp-dim", type=int, default=100,
                   help="OMP: dimension of the auxiliary (fastText) vectors")
    p.add_argument("--k", type=int, default=64, help="OMP: atoms per token (tokensurgeon's default)")
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    if a.case:  # child process: one case
        print(json.dumps(run_case(a)))
        return
    rows = []
    for case in a.cases:
        args = [f"--{k.replace('_', '-')}={v}" for k, v in vars(a).items() if k not in ("cases", "case")]
        proc = subprocess.run([sys.executable, __file__, "--case", case, *args], capture_output=True,
                              text=True)
        if proc.returncode != 0:
            raise SystemExit(proc.stderr)
        rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        print(rows[-1], flush=True)
    import pandas as pd

    df = pd.DataFrame(rows)
    df.insert(1, "scale",
              f"source {a.source_rows}x{a.dim}, target {a.target}, aux {a.aux_dim}-d, {a.threads} threads")
    OUT.mkdir(exist_ok=True)
    df.to_csv(OUT / "init_methods.csv", index=False)
    (OUT / "init_methods.md").write_text(df.to_markdown(index=False) + "\n")
    print(df.to_markdown(index=False))


if __name__ == "__main__":
    main()

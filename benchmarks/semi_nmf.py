"""Benchmark Semi-NMF (vocab_transfer.methods.semi_nmf): time and reconstruction error against iterations.

Factorizes a synthetic embedding-like matrix (default 250,002 x 768, XLM-R's vocabulary and width)
to rank D' = 100 as UNKs Everywhere does (UNKs Everywhere §3.3 and Appendix "Semi-NMF": 3,000 update
steps), prints a table and writes every iteration to a CSV under benchmarks/out/semi_nmf/.

    python benchmarks/semi_nmf.py --rows 20000 --mode both
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

import torch

from vocab_transfer.methods.semi_nmf import semi_nmf


def synthetic_embeddings(rows: int, cols: int, seed: int) -> torch.Tensor:
    """Float32 [rows, cols]: Gaussian rows with a power-law spectrum (s_k ∝ k^-1/2), randomly rotated,
    plus a common mean vector, scaled to std ≈ 0.05 -- roughly the shape of a trained embedding matrix."""
    g = torch.Generator().manual_seed(seed)
    q, _ = torch.linalg.qr(torch.randn(cols, cols, generator=g))
    spectrum = torch.arange(1, cols + 1, dtype=torch.float32).rsqrt()
    x = torch.empty(rows, cols)
    for i in range(0, rows, 65536):
        n = min(65536, rows - i)
        x[i:i + n] = (torch.randn(n, cols, generator=g) * spectrum) @ q
    x += 0.5 * torch.randn(cols, generator=g) * spectrum.mean()
    return x * (0.05 / x.std())


def svd_floor(x: torch.Tensor, rank: int) -> float:
    """Relative error of the best rank-``rank`` approximation (truncated SVD, no sign constraint)."""
    gram = torch.zeros(x.shape[1], x.shape[1], dtype=torch.float64, device=x.device)
    for i in range(0, x.shape[0], 65536):
        c = x[i:i + 65536].double()
        gram.addmm_(c.T, c)
    ev = torch.linalg.eigvalsh(gram).clamp_min(0).flip(0)
    return float((ev[rank:].sum() / ev.sum()).sqrt())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=250_002, help="vocabulary size |V|")
    p.add_argument("--cols", type=int, default=768, help="embedding width D")
    p.add_argument("--rank", type=int, default=100, help="D' (paper: 100)")
    p.add_argument("--max-iter", type=int, default=3000, help="iteration cap (paper: 3,000 fixed)")
    p.add_argument("--tol", type=float, default=1e-4, help="stop when the relative error decrease is below")
    p.add_argument("--mode", choices=["gram", "direct", "both"], default="gram")
    p.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    p.add_argument("--device", default="auto", help="cpu, cuda or auto")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=Path(__file__).parent / "out" / "semi_nmf")
    args = p.parse_args()

    device = ("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device
    dtype = getattr(torch, args.dtype)
    x = synthetic_embeddings(args.rows, args.cols, args.seed).to(device)
    floor = svd_floor(x, args.rank)
    name = f"{args.rows}x{args.cols}_r{args.rank}_tol{args.tol:g}_{args.mode}_{args.dtype}_{device}"
    print(f"X {args.rows}x{args.cols} float32 on {device} ({torch.get_num_threads()} CPU threads), "
          f"rank {args.rank}, compute {args.dtype}, tol {args.tol:g}; truncated-SVD floor {floor:.5f}")
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"{name}.csv"
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["mode", "iteration", "seconds", "relative_error"])
        for mode in (["gram", "direct"] if args.mode == "both" else [args.mode]):
            t0 = time.perf_counter()
            _, G, h = semi_nmf(x, args.rank, seed=args.seed, max_iter=args.max_iter, tol=args.tol, mode=mode,
                               dtype=dtype)
            total = time.perf_counter() - t0
            w.writerows([mode, i + 1, f"{s:.4f}", f"{e:.7f}"] for i, (s, e) in enumerate(
                zip(h.seconds, h.error, strict=True)))
            marks = sorted({1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 3000, h.iterations} & set(
                range(1, h.iterations + 1)))
            print(f"\nmode {mode}: setup {h.setup_seconds:.2f} s, {h.iterations} iterations "
                  f"({'converged' if h.converged else 'hit max-iter'}), "
                  f"{(h.seconds[-1] - h.setup_seconds) / h.iterations * 1e3:.2f} ms/iteration, "
                  f"total {total:.2f} s (incl. final F), final error {h.final_error:.5f}, "
                  f"G >= 0: {bool((G >= 0).all())}")
            print(f"{'iteration':>9}  {'seconds':>8}  {'rel. error':>10}  {'vs SVD floor':>12}")
            for i in marks:
                e = h.error[i - 1]
                print(f"{i:>9}  {h.seconds[i - 1]:>8.2f}  {e:>10.5f}  {e / floor - 1:>+12.2%}")
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()

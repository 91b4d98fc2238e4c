"""MF^C factorizations of the source matrix at paper scale (UNKs Everywhere §3.3; issue 3 "MF-NEURAL at
scale"): time, steps and relative reconstruction error of MF¹ (Semi-NMF), MF¹⁰_KMEANS and MF¹⁰_NEURAL
(vocab_transfer.methods.unks.factorize_source) on a synthetic 250,002 × 768 embedding-like matrix
(benchmarks/semi_nmf.py's generator), D' = 100, C = 10. MF¹⁰_NEURAL costs O(|V|·C·D'·D) per Adam step
(≈ 0.4 TFLOP forward + backward), so the paper-scale run wants a GPU:

    python benchmarks/mf_neural.py                          # paper scale, on CUDA when there is one
    python benchmarks/mf_neural.py --rows 20000 --device cpu --neural-steps 300   # quick, CPU

Writes benchmarks/out/mf_neural.csv (one row per method) and mf_neural_history.csv (the neural fit's
error every 50 steps).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).parent))
from semi_nmf import synthetic_embeddings  # noqa: E402

from vocab_transfer.methods.factorized import fit_neural  # noqa: E402
from vocab_transfer.methods.semi_nmf import semi_nmf  # noqa: E402
from vocab_transfer.methods.unks import factorize_source  # noqa: E402

OUT = Path(__file__).resolve().parent / "out"


def error(X: torch.Tensor, F: torch.Tensor, G: torch.Tensor, Z: torch.Tensor | None) -> float:
    """||X − Σ_c diag(onehot(argmax Z))_c F G^c||_F / ||X||_F (the eval-mode reconstruction)."""
    if Z is None:
        R = F @ G[0]
    else:
        c = Z.argmax(1)
        R = torch.empty_like(X)
        for k in range(G.shape[0]):
            rows = (c == k).nonzero(as_tuple=True)[0]
            R[rows] = F[rows] @ G[k]
    return float((X - R).norm() / X.norm())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=250_002)
    p.add_argument("--cols", type=int, default=768)
    p.add_argument("--dim", type=int, default=100)
    p.add_argument("--clusters", type=int, default=10)
    p.add_argument("--neural-steps", type=int, default=3000)
    p.add_argument("--neural-tol", type=float, default=1e-4,
                   help="fit_neural's stopping tolerance (0: all steps)")
    p.add_argument("--neural-lr", type=float, default=1e-3)
    p.add_argument("--device", default="auto")
    a = p.parse_args()
    device = ("cuda" if torch.cuda.is_available() else "cpu") if a.device == "auto" else a.device
    X = synthetic_embeddings(a.rows, a.cols, 0).to(device)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    rows = []
    for name, spec in (("MF1 (Semi-NMF)", {"clusters": 1}), ("MF10 KMEANS", {"clusters": a.clusters})):
        sync()
        t0 = time.perf_counter()
        F, G, Z = factorize_source(X, seed=0, dim=a.dim, **spec)
        sync()
        rows.append({"method": name, "seconds": round(time.perf_counter() - t0, 1), "steps": None,
                     "rel_error": round(error(X, F, G, Z), 4)})
        print(rows[-1], flush=True)
    sync()
    t0 = time.perf_counter()
    F0, G0, _ = semi_nmf(X, a.dim, seed=0, max_iter=3000, tol=1e-5)
    sync()
    t_init = time.perf_counter() - t0
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    module, hist = fit_neural(X, F0, G0, a.clusters, seed=0, max_steps=a.neural_steps, tol=a.neural_tol,
                              lr=a.neural_lr, progress=True)
    sync()
    rows.append({"method": "MF10 NEURAL", "seconds": round(t_init + hist.seconds[-1], 1),
                 "steps": hist.steps[-1],
                 "rel_error": round(error(X, module.F.detach(), module.G.detach(), module.Z.detach()), 4)})
    print(rows[-1], flush=True)
    df = pd.DataFrame(rows)
    df.insert(1, "setting", f"{a.rows}x{a.cols}, D'={a.dim}, C={a.clusters}, {device}"
                            + (f" ({torch.cuda.get_device_name()})" if device == "cuda" else ""))
    if device == "cuda":
        df["neural_peak_gib"] = [None, None, round(torch.cuda.max_memory_allocated() / 2**30, 2)]
    OUT.mkdir(exist_ok=True)
    df.to_csv(OUT / "mf_neural.csv", index=False)
    pd.DataFrame({"step": hist.steps, "rel_error": hist.error, "seconds": hist.seconds}).to_csv(
        OUT / "mf_neural_history.csv", index=False)
    print(df.to_markdown(index=False))
    print(f"neural fit: {len(hist.steps)} checks, converged={hist.converged}")


if __name__ == "__main__":
    main()

"""Plots written as PNG next to the tables (matplotlib, headless)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from .io import atomic_path  # noqa: E402


def plot_curve(curve: pd.DataFrame, path: str, *, title: str, hline: float | None = None) -> None:
    """Training and held-out MLM loss against steps."""
    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    ax.plot(curve["step"], curve["train_loss"], label="train (mean since last log)")
    ax.plot(curve["step"], curve["heldout_loss"], marker="o", label="held-out")
    if hline is not None:
        ax.axhline(hline, ls="--", c="grey", label="ln |V| (uniform)")
    ax.set(xlabel="optimizer step", ylabel="MLM loss (nats)", title=title)
    ax.grid(alpha=0.3)
    ax.legend()
    save_figure(fig, path)


def plot_lapt_curves(table: pd.DataFrame, path: str, *, title: str, svg: str | None = None) -> None:
    """FOCUS Figure 2: held-out loss against samples of each run's last stage (for two-stage runs only the
    second stage, as the paper plots Random), one line per method."""
    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    for label, run in table.groupby("label", sort=False):
        last = run[run["stage"] == run["stage"].max()].sort_values("stage_samples")
        ax.plot(last["stage_samples"], last["heldout_loss"], marker="o", ms=3, label=label)
    ax.set(xlabel="samples (last stage)", ylabel="held-out MLM loss (nats)", title=title)
    ax.grid(alpha=0.3)
    ax.legend()
    save_figure(fig, path, svg=svg)


def last_per_step(curves: pd.DataFrame, by: str = "label") -> pd.DataFrame:
    """One record per (``by``, step) of LAPT curves, in step order (runs in their input order): at a two-stage
    boundary the later stage's."""
    return curves.sort_values(["step", "stage"], kind="stable").drop_duplicates([by, "step"], keep="last")


def plot_embedding_correlation(curves: pd.DataFrame, pairwise: dict[str, pd.DataFrame], path: str, *, title: str,
                               svg: str | None = None) -> None:
    """vocab-swap Figures 2/7 and 5 side by side: ρ̄ between each run's embedding and the source rows of
    the shared tokens against the LAPT step (``curves``: run label, step, source_correlation; skipped when
    empty), and one heatmap of pairwise ρ̄ between the final embeddings per entry of ``pairwise``."""
    has_curves = len(curves) and curves["source_correlation"].notna().any()
    n = int(bool(has_curves)) + len(pairwise)
    fig, axes = plt.subplots(1, max(n, 1), figsize=(5.2 * max(n, 1), 4.4), dpi=120, squeeze=False)
    axes = list(axes[0])
    if has_curves:
        ax = axes.pop(0)
        for label, run in last_per_step(curves).groupby("label", sort=False):
            ax.plot(run["step"], run["source_correlation"], marker="o", ms=3, label=label)
        ax.set(xlabel="LAPT step", ylabel="ρ̄ to the source embedding (shared tokens)", ylim=(-0.05, 1.02),
               title="Recovery of the source embedding")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    for ax, (name, m) in zip(axes, pairwise.items(), strict=False):
        im = ax.imshow(m.to_numpy(dtype=float), vmin=0, vmax=1, cmap="viridis")
        ax.set_xticks(range(len(m)), m.columns, rotation=45, ha="right", fontsize=7)
        ax.set_yticks(range(len(m)), m.index, fontsize=7)
        for i in range(len(m)):
            for j in range(len(m)):
                v = float(m.iat[i, j])
                ax.text(j, i, "—" if v != v else f"{v:.2f}", ha="center", va="center", fontsize=7,
                        color="white" if v < 0.6 else "black")
        ax.set_title(name, fontsize=9)
        fig.colorbar(im, ax=ax, fraction=0.046)
    if n == 0:
        axes[0].text(0.5, 0.5, "no LAPT run to compare", ha="center")
        axes[0].set_axis_off()
    fig.suptitle(title)
    save_figure(fig, path, svg=svg)


def plot_correlation_histograms(curves: pd.DataFrame, path: str, *, title: str, svg: str | None = None) -> None:
    """vocab-swap Figure 3: per run, the distribution of the per-token correlations ρ_i with the source rows at
    initialization, mid-way and at the end of LAPT (``curves``: label, step, stage, correlation_histogram,
    equal bins over [-1, 1])."""
    import math

    import numpy as np

    runs = [(label, run.dropna(subset=["correlation_histogram"]))
            for label, run in last_per_step(curves).groupby("label", sort=False) if "correlation_histogram" in run]
    runs = [(label, run) for label, run in runs if len(run)]
    cols = min(4, max(len(runs), 1))
    rows = max(1, math.ceil(len(runs) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 2.8 * rows), dpi=120, squeeze=False, sharex=True)
    for ax, (label, run) in zip(axes.flat, runs, strict=False):
        picks = sorted({0, len(run) // 2, len(run) - 1})
        for i in picks:
            counts = np.asarray(run["correlation_histogram"].iloc[i], dtype=float)
            edges = np.linspace(-1, 1, len(counts) + 1)
            ax.stairs(counts / max(counts.sum(), 1), edges, label=f"step {int(run['step'].iloc[i]):,}")
        ax.set_title(label, fontsize=8)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    for ax in list(axes.flat)[len(runs):]:
        ax.set_axis_off()
    if not runs:
        axes[0, 0].text(0.5, 0.5, "no correlation recorded", ha="center")
    for ax in axes[-1]:
        ax.set_xlabel("ρ_i to the source row")
    fig.suptitle(title)
    save_figure(fig, path, svg=svg)


def save_figure(fig, path: str, *, svg: str | None = None) -> None:
    """Lay out, write as PNG (and SVG when ``svg`` names a path) atomically, and free the figure."""
    fig.tight_layout()
    for out, fmt in ((path, "png"), (svg, "svg")):
        if out:
            with atomic_path(out) as tmp:
                fig.savefig(tmp, format=fmt)
    plt.close(fig)

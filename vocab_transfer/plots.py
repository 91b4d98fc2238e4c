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


def save_figure(fig, path: str, *, svg: str | None = None) -> None:
    """Lay out, write as PNG (and SVG when ``svg`` names a path) atomically, and free the figure."""
    fig.tight_layout()
    for out, fmt in ((path, "png"), (svg, "svg")):
        if out:
            with atomic_path(out) as tmp:
                fig.savefig(tmp, format=fmt)
    plt.close(fig)

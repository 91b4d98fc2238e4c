"""Plots written as PNG next to the tables (matplotlib, headless)."""

from __future__ import annotations

import itertools
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ..io import atomic_path  # noqa: E402
from .tables import finetune_table


def _tidy(ax, **legend) -> None:
    ax.grid(alpha=0.3)
    ax.legend(**legend)


def plot_curve(curve: pd.DataFrame, path: str, *, title: str, hline: float) -> None:
    """Training and held-out MLM loss against steps, and ``hline`` = ln |V| (a uniform prediction's)."""
    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    ax.plot(curve["step"], curve["train_loss"], label="train (mean since last log)")
    ax.plot(curve["step"], curve["heldout_loss"], marker="o", label="held-out")
    ax.axhline(hline, ls="--", c="grey", label="ln |V| (uniform)")
    ax.set(xlabel="optimizer step", ylabel="MLM loss (nats)", title=title)
    _tidy(ax)
    save_figure(fig, path)


def plot_lapt_curves(table: pd.DataFrame, path: str, *, title: str, svg: str | None = None) -> None:
    """FOCUS Figure 2: held-out loss against samples of each run's last stage (for two-stage runs only the
    second stage, as the paper plots Random), one line per method."""
    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    phases = set()
    for label, run in table.groupby("label", sort=False):
        last = run[run["stage"] == run["stage"].max()].sort_values("stage_samples")
        ax.plot(last["stage_samples"], last["heldout_loss"], marker="o", ms=3, label=label)
        phases |= phase_switches(last, "stage_samples")
    mark_phases(ax, phases)
    ax.set(xlabel="samples (last stage)", ylabel="held-out MLM loss (nats)", title=title)
    _tidy(ax)
    save_figure(fig, path, svg=svg)


def phase_switches(curve: pd.DataFrame, x: str) -> set[tuple[float, int]]:
    """(x of the last point before a long-sequence phase, its block length) of a curve with a ``seq_len``
    column (LAPT ``long_steps``: vocab-swap's last 10k steps at 512 tokens); empty without a switch."""
    if "seq_len" not in curve or curve["seq_len"].nunique() < 2:
        return set()
    curve = curve.sort_values(x)
    later = curve[curve["seq_len"] != curve["seq_len"].iloc[0]]
    before = curve[curve[x] < later[x].iloc[0]]
    return {(float(before[x].max()), int(later["seq_len"].iloc[0]))} if len(before) else set()


def mark_phases(ax, phases: set[tuple[float, int]]) -> None:
    for i, (x, n) in enumerate(sorted(phases)):
        ax.axvline(x, ls=":", c="grey", label=f"then {n}-token blocks (held-out too)" if i == 0 else None)


def last_per_step(curves: pd.DataFrame, by: str = "label") -> pd.DataFrame:
    """One record per (``by``, step) of LAPT curves, in step order (runs in their input order): at a two-stage
    boundary the later stage's."""
    return curves.sort_values(["step", "stage"], kind="stable").drop_duplicates([by, "step"], keep="last")


def plot_embedding_correlation(curves: pd.DataFrame, pairwise: dict[str, pd.DataFrame], path: str, *,
                               title: str, svg: str | None = None) -> None:
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
        _tidy(ax, fontsize=7)
    for ax, (name, m) in zip(axes, pairwise.items(), strict=False):
        im = ax.imshow(m.to_numpy(dtype=float), vmin=0, vmax=1, cmap="viridis")
        ax.set_xticks(range(len(m)), m.columns, rotation=45, ha="right", fontsize=7)
        ax.set_yticks(range(len(m)), m.index, fontsize=7)
        for i, j in itertools.product(range(len(m)), repeat=2):
            v = float(m.iat[i, j])
            ax.text(j, i, "—" if v != v else f"{v:.2f}", ha="center", va="center", fontsize=7,
                    color="white" if v < 0.6 else "black")
        ax.set_title(name, fontsize=9)
        fig.colorbar(im, ax=ax, fraction=0.046)
    if n == 0:
        axes[0].text(0.5, 0.5, "no LAPT run to compare", ha="center")
        axes[0].set_axis_off()
    save_figure(fig, path, svg=svg, title=title)


def plot_correlation_histograms(curves: pd.DataFrame, path: str, *, title: str,
                                svg: str | None = None) -> None:
    """vocab-swap Figure 3: per run, the distribution of the per-token correlations ρ_i with the source rows
    at initialization, mid-way and at the end of LAPT (``curves``: label, step, stage, correlation_histogram,
    equal bins over [-1, 1])."""
    runs = [(label, run.dropna(subset=["correlation_histogram"]))
            for label, run in last_per_step(curves).groupby("label", sort=False)
            if "correlation_histogram" in run]
    runs = [(label, run) for label, run in runs if len(run)]
    cols = min(4, max(len(runs), 1))
    rows = max(1, math.ceil(len(runs) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 2.8 * rows), dpi=120, squeeze=False,
                             sharex=True)
    for ax, (label, run) in zip(axes.flat, runs, strict=False):
        for i in sorted({0, len(run) // 2, len(run) - 1}):
            counts = np.asarray(run["correlation_histogram"].iloc[i], dtype=float)
            ax.stairs(counts / max(counts.sum(), 1), np.linspace(-1, 1, len(counts) + 1),
                      label=f"step {int(run['step'].iloc[i]):,}")
        ax.set_title(label, fontsize=8)
        _tidy(ax, fontsize=6)
    for ax in list(axes.flat)[len(runs):]:
        ax.set_axis_off()
    if not runs:
        axes[0, 0].text(0.5, 0.5, "no correlation recorded", ha="center")
    for ax in axes[-1]:
        ax.set_xlabel("ρ_i to the source row")
    save_figure(fig, path, svg=svg, title=title)


def lapt_finetune_table(curves: pd.DataFrame, scores: pd.DataFrame, points: list[tuple[str, str, int]],
                        runs: dict[str, str]) -> pd.DataFrame:
    """vocab-swap Figures 4/8 in long form: per run (``runs``: run -> label, in plot order) its held-out loss
    at every evaluation (``kind`` ``heldout_loss``; ``curves``: run, step, stage, heldout_loss) and, per
    ``points`` entry (fine-tuned model, run, LAPT step), the test score of ``scores`` (fine-tuning result
    rows, any seeds) as mean ± std over seeds in the metric's unit
    (:func:`vocab_transfer.report.tables.finetune_table`; ``kind`` ``test_<metric>``). Columns: kind, run,
    label, step, value, std, seeds, model."""
    rows = [pd.DataFrame({"kind": "heldout_loss", "run": run, "label": label, "step": c["step"].to_numpy(),
                          "value": c["heldout_loss"].to_numpy(), "std": float("nan"), "seeds": 0,
                          "model": None,
                          "seq_len": c["seq_len"].to_numpy() if "seq_len" in c else float("nan")})
            for run, label in runs.items() for c in [last_per_step(curves[curves["run"] == run], by="run")]]
    agg = finetune_table(scores).set_index("model") if len(scores) else pd.DataFrame()
    for model, run, step in points:
        if model not in agg.index:
            raise ValueError(f"no fine-tuning scores of model {model!r} (LAPT run {run!r}, step {step})")
        r = agg.loc[model]
        rows.append(pd.DataFrame([{"kind": f"test_{r['metric']}", "run": run, "label": runs[run],
                                   "step": step, "value": r["test_mean"], "std": r["test_std"],
                                   "seeds": r["seeds"], "model": model}]))
    return pd.concat(rows, ignore_index=True).sort_values(["kind", "step"], kind="stable", ignore_index=True)


def plot_lapt_finetune(table: pd.DataFrame, path: str, *, title: str, task: str,
                       svg: str | None = None) -> None:
    """vocab-swap Figures 4/8 from :func:`lapt_finetune_table`: left, the held-out MLM loss against the LAPT
    step per run; right, the downstream test score after fine-tuning at LAPT steps (mean ± std over seeds)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), dpi=120, sharex=True)
    colors, phases = {}, set()
    for label, run in table[table["kind"] == "heldout_loss"].groupby("label", sort=False):
        (line,) = left.plot(run["step"], run["value"], marker="o", ms=2, label=label)
        colors[label] = line.get_color()
        phases |= phase_switches(run, "step")
    mark_phases(left, phases)
    scores = table[table["kind"].str.startswith("test_")]
    for label, run in scores.groupby("label", sort=False):
        run = run.sort_values("step")
        right.errorbar(run["step"], run["value"], yerr=run["std"].fillna(0.0), marker="o", ms=4, capsize=3,
                       color=colors.get(label), label=label)
    metric = scores["kind"].iloc[0].removeprefix("test_") if len(scores) else "score"
    left.set(xlabel="LAPT step", ylabel="held-out MLM loss (nats)", title="Continued MLM training")
    right.set(xlabel="LAPT step of the fine-tuned model", ylabel=f"test {metric} (%)",
              title=f"{task} after fine-tuning (mean ± std over seeds)")
    for ax in (left, right):
        _tidy(ax, fontsize=7)
    save_figure(fig, path, svg=svg, title=title)


MATCHED, NOT_MATCHED = "matched", "not matched"


def split_matched(accuracy: pd.DataFrame, provenance: pd.DataFrame, matched: list[str]) -> pd.DataFrame:
    """One run's per-token accuracy (:func:`vocab_transfer.training.lapt.token_accuracy_table`, the last
    stage's record at a two-stage boundary) with ``provenance`` (of the init, by ``target_id``) and ``group``:
    ``matched`` when the init gave the token a row from one source token (``matched`` labels, e.g. copied /
    mapped), else ``not matched``. A token id not in the provenance table (another tokenizer): ValueError."""
    acc = last_per_step(accuracy, by="token_id")
    labels = provenance.set_index("target_id")["provenance"]
    missing = sorted(set(acc["token_id"]) - set(labels.index))
    if missing:
        raise ValueError(f"token ids {missing[:5]} have no provenance ({len(labels)} target tokens): the run "
                         "and the matching method use different tokenizers")
    acc = acc.assign(provenance=labels.reindex(acc["token_id"]).to_numpy())
    return acc.assign(group=acc["provenance"].isin(matched).map({True: MATCHED, False: NOT_MATCHED}))


def token_accuracy_means(table: pd.DataFrame) -> pd.DataFrame:
    """Per (run, label, step, group): the number of tracked tokens, how many were held-out targets (``seen``)
    and their token-wise mean accuracy (each seen token counts once, vocab-swap Figure 6 left)."""
    keys = ["run", "label", "step", "group"]
    return table.groupby(keys, sort=False).agg(tokens=("token_id", "size"),
                                               seen=("masked", lambda m: int((m > 0).sum())),
                                               mean_accuracy=("accuracy", "mean")).reset_index()


def token_accuracy_histograms(table: pd.DataFrame, steps: list[int]) -> pd.DataFrame:
    """Per (run, label, step in ``steps``, group): token counts of the per-token accuracy in ten equal bins
    over [0, 1] (the last one closed), seen tokens only (vocab-swap Figure 6 middle and right)."""
    edges = np.linspace(0.0, 1.0, 11).round(6)
    rows = []
    for (run, label), t in table.groupby(["run", "label"], sort=False):
        absent = [s for s in steps if s not in set(t["step"])]
        if absent:
            raise ValueError(f"LAPT run {run!r} has no token accuracy at steps {absent} (evaluated: "
                             f"{sorted(set(t['step']))})")
        for step, group in itertools.product(steps, (MATCHED, NOT_MATCHED)):
            values = t.loc[(t["step"] == step) & (t["group"] == group), "accuracy"].dropna().to_numpy()
            counts, _ = np.histogram(values, bins=edges)
            rows += [{"run": run, "label": label, "step": step, "group": group, "bin_lo": lo, "bin_hi": hi,
                      "tokens": int(c)} for lo, hi, c in zip(edges[:-1], edges[1:], counts, strict=True)]
    return pd.DataFrame(rows)


def plot_token_accuracy(means: pd.DataFrame, hists: pd.DataFrame, path: str, *, title: str, steps: list[int],
                        max_step: int | None = None, svg: str | None = None) -> None:
    """vocab-swap Figure 6: left, token-wise mean held-out accuracy against the LAPT step (up to
    ``max_step``), per run, matched tokens solid and not matched dashed; then per step of ``steps`` the
    distribution of the per-token accuracy (token counts) of matched and not matched tokens."""
    fig, axes = plt.subplots(1, 1 + len(steps), figsize=(4.6 * (1 + len(steps)), 4), dpi=120, squeeze=False)
    axes, colors, styles = list(axes[0]), {}, {MATCHED: "-", NOT_MATCHED: "--"}
    shown = means if max_step is None else means[means["step"] <= max_step]
    for (label, group), m in shown.groupby(["label", "group"], sort=False):
        kw = {"color": colors[label]} if label in colors else {}
        (line,) = axes[0].plot(m["step"], m["mean_accuracy"], styles[group], marker="o", ms=2,
                               label=f"{label}: {group}", **kw)
        colors.setdefault(label, line.get_color())
    axes[0].set(xlabel="LAPT step", ylabel="token-wise mean held-out accuracy", ylim=(0, 1),
                title="Most frequent tokens")
    for ax, step in zip(axes[1:], steps, strict=True):
        for (label, group), h in hists[hists["step"] == step].groupby(["label", "group"], sort=False):
            edges = [*h["bin_lo"], h["bin_hi"].iloc[-1]]
            ax.stairs(h["tokens"].to_numpy(), edges, ls=styles[group], color=colors.get(label),
                      label=f"{label}: {group}")
        ax.set(xlabel="per-token held-out accuracy", ylabel="tokens", title=f"step {step:,}")
    for ax in axes:
        _tidy(ax, fontsize=6)
    save_figure(fig, path, svg=svg, title=title)


def save_figure(fig, path: str, *, svg: str | None = None, title: str | None = None) -> None:
    """Title, lay out, write as PNG (and SVG when ``svg`` names a path) atomically, and free the figure."""
    if title is not None:
        fig.suptitle(title)
    fig.tight_layout()
    for out, fmt in ((path, "png"), (svg, "svg")):
        if out:
            with atomic_path(out) as tmp:
                fig.savefig(tmp, format=fmt)
    plt.close(fig)


def _per_language(table: pd.DataFrame, path: str, draw, *, title: str, svg: str | None, **axes) -> None:
    """A figure with one panel per ``language`` of ``table`` (in order of appearance): ``draw(ax, label,
    rows)`` per run ``label``, ``axes`` the panels' settings (``ax.set``)."""
    langs = list(dict.fromkeys(table["language"]))
    fig, panels = plt.subplots(1, len(langs), figsize=(5 * len(langs), 4), dpi=120, squeeze=False)
    for ax, lang in zip(panels[0], langs, strict=True):
        for label, run in table[table["language"] == lang].groupby("label", sort=False):
            draw(ax, label, run)
        ax.set(**axes, title=lang)
        _tidy(ax)
    save_figure(fig, path, svg=svg, title=title)


def plot_run_curves(table: pd.DataFrame, path: str, *, value: str, title: str,
                    svg: str | None = None) -> None:
    """WECHSEL Figures 3-5: ``value`` (``perplexity``, ``loss`` or ``bits_per_byte`` column of ``table``) of
    each run (``label``) over optimizer steps, one panel per ``language`` (log scale for perplexity)."""
    def draw(ax, label, run):
        ax.plot(run["step"], run[value], marker="o", ms=3, label=label)

    _per_language(table, path, draw, title=title, svg=svg, xlabel="optimizer step",
                  ylabel=f"held-out {value.replace('_', ' ')}",
                  **({"yscale": "log"} if value == "perplexity" else {}))


def plot_init_similarity(table: pd.DataFrame, path: str, *, title: str, svg: str | None = None) -> None:
    """WECHSEL Figure 6: the distribution of each token's cosine similarity between its embedding after LAPT
    and its initialization (``cosine`` of ``table``), a line per run (``label``), a panel per ``language``."""
    def draw(ax, label, run):
        ax.hist(run["cosine"], bins=np.linspace(-1, 1, 81), histtype="step", lw=1.5,
                label=f"{label} (median {run['cosine'].median():.2f})")

    _per_language(table, path, draw, title=title, svg=svg, xlabel="cosine similarity to the initialization",
                  ylabel="tokens")


def plot_sample_efficiency(table: pd.DataFrame, path: str, *, title: str, svg: str | None = None) -> None:
    """UNKs Everywhere Figure 3: the mean test score (``score``) of each ``series`` against the training
    sequences (``train_sequences``) of its LAPT runs, log x."""
    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    for label, series in table.groupby("series", sort=False):
        series = series.sort_values("train_sequences")
        ax.plot(series["train_sequences"], series["score"], marker="o", label=label)
    ax.set_xscale("log")
    ax.set(xlabel="LAPT training sequences", ylabel=f"mean test {table['metric'].iloc[0]} (%)", title=title)
    _tidy(ax)
    save_figure(fig, path, svg=svg)


def plot_unk_scatter(table: pd.DataFrame, path: str, *, title: str,
                     svg: str | None = None) -> dict[str, float]:
    """UNKs Everywhere Figure 2: a model's test score per language (``score``) against the share of the
    language's vocabulary that the source tokenizer cannot compose (``unk_share``) and the share it overlaps
    (``overlap_share``); returns Pearson's ρ of each (the paper: -0.798 and 0.443), NaN below 3 languages."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), dpi=120)
    rho = {}
    for ax, col, name in zip(axes, ("unk_share", "overlap_share"), ("UNKs", "lexical overlap"), strict=True):
        x, y = 100 * table[col], table["score"]
        rho[col] = float(x.corr(y)) if len(table) >= 3 and x.std() > 0 and y.std() > 0 else float("nan")
        ax.scatter(x, y)
        for _, r in table.iterrows():
            ax.annotate(r["language"], (100 * r[col], r["score"]), textcoords="offset points", xytext=(3, 3))
        ax.set(xlabel=f"{name} in the target vocabulary (%)", ylabel=f"test {table['metric'].iloc[0]} (%)",
               title=f"Pearson's ρ = {rho[col]:.3f}")
        ax.grid(alpha=0.3)
    save_figure(fig, path, svg=svg, title=title)
    return rho

"""Paper tables from the long-form result files."""

from __future__ import annotations

import pandas as pd


def init_loss_table(results: pd.DataFrame, *, method_labels: dict[str, str],
                    in_pretraining: dict[str, list[str]]) -> pd.DataFrame:
    """Long form of FOCUS Table 4: one row per (source, language, method).

    Columns: ``source, language, method, label, objective, mlm_loss (the loss of the objective), perplexity, masked_tokens,
    in_source_pretraining``.
    """
    df = results.rename(columns={"target": "language"}).copy()
    if "objective" not in df:
        df["objective"] = "mlm"  # result files written before decoder sources
    df["label"] = df["method"].map(method_labels)
    df["in_source_pretraining"] = [lang in in_pretraining.get(src, []) for src, lang in
                                   zip(df["source"], df["language"], strict=True)]
    cols = ["source", "language", "method", "label", "objective", "mlm_loss", "perplexity", "masked_tokens",
            "in_source_pretraining"]
    return df[cols].sort_values(["source", "in_source_pretraining", "language", "method"],
                                ascending=[True, False, True, True], ignore_index=True)


def init_loss_markdown(table: pd.DataFrame, *, methods: list[str], targets: list[str]) -> str:
    """Table 4's layout: methods as rows, languages as columns grouped by 'part of' / 'not part of'
    the source's pretraining; the best (lowest) loss per language in bold; missing cells '—'."""
    parts = []
    for source, df in table.groupby("source", sort=False):
        inside = [t for t in targets if df.loc[df.language == t, "in_source_pretraining"].any()]
        outside = [t for t in targets if t not in inside]
        langs = inside + outside
        grid = df.pivot(index="method", columns="language", values="mlm_loss").reindex(index=methods, columns=langs)
        labels = df.drop_duplicates("method").set_index("method")["label"].reindex(methods).fillna(
            pd.Series(methods, index=methods))
        best = grid.min()
        head = "| Initialization ↓ / Language → | " + " | ".join(
            [f"{t} (in)" for t in inside] + [f"{t} (not in)" for t in outside]) + " |"
        loss_name = "MLM loss" if (df["objective"] == "mlm").all() else "next-token (causal-LM) loss"
        lines = [f"**Source `{source}`** — {loss_name} right after initialization (lower is better); "
                 f"'in' = part of the source model's pretraining, 'not in' = not part of it.", "", head,
                 "|" + "---|" * (len(langs) + 1)]
        for m in methods:
            cells = []
            for t in langs:
                v = grid.loc[m, t]
                cells.append("—" if pd.isna(v) else (f"**{v:.2f}**" if v == best[t] else f"{v:.2f}"))
            lines.append(f"| {labels[m]} | " + " | ".join(cells) + " |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def finetune_table(scores: pd.DataFrame) -> pd.DataFrame:
    """Mean ± std over seeds of the test (and dev) metric per (source, task, model): FOCUS Tables 2-3.

    Columns: ``source, task_name, language, task, model, method, metric, seeds, test_mean, test_std,
    dev_mean, dev_std``; scores as the metric's unit (F1 / accuracy in %).
    """
    df = scores.copy()
    scale = df["task"].map(lambda t: 1.0 if t == "qa" else 100.0)  # SQuAD scores are already in %
    df["test"] = [r[f"test_{r['metric']}"] for _, r in df.iterrows()] * scale
    df["dev"] = [r[f"dev_{r['metric']}"] for _, r in df.iterrows()] * scale
    keys = ["source", "task_name", "language", "task", "model", "method", "metric"]
    out = df.groupby(keys, sort=False).agg(seeds=("seed", "nunique"), test_mean=("test", "mean"),
                                           test_std=("test", "std"), dev_mean=("dev", "mean"),
                                           dev_std=("dev", "std")).reset_index()
    return out


def finetune_markdown(table: pd.DataFrame, *, models: dict[str, str], tasks: dict[str, str]) -> str:
    """Models as rows, tasks as columns, test mean ± std over seeds; the best mean per task in bold;
    cells whose jobs have not run show as '—'."""
    parts = []
    for source, df in table.groupby("source", sort=False):
        head = "| Model ↓ / Task → | " + " | ".join(
            f"{label} ({df.loc[df.task_name == t, 'metric'].iloc[0] if (df.task_name == t).any() else '?'})"
            for t, label in tasks.items()) + " |"
        lines = [f"**Source `{source}`** — test score of the dev-selected checkpoint, mean ± std over seeds "
                 "(higher is better).", "", head, "|" + "---|" * (len(tasks) + 1)]
        best = df.groupby("task_name")["test_mean"].max()
        for m, label in models.items():
            cells = []
            for t in tasks:
                row = df[(df.model == m) & (df.task_name == t)]
                if row.empty:
                    cells.append("—")
                    continue
                r = row.iloc[0]
                std = 0.0 if pd.isna(r.test_std) else r.test_std
                cell = f"{r.test_mean:.1f} ± {std:.1f}"
                cells.append(f"**{cell}**" if r.test_mean == best[t] else cell)
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"

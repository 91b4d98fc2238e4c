"""Paper tables from the long-form result files."""

from __future__ import annotations

import pandas as pd


def init_loss_table(results: pd.DataFrame, *, method_labels: dict[str, str],
                    in_pretraining: dict[str, list[str]]) -> pd.DataFrame:
    """Long form of FOCUS Table 4: one row per (source, language, method).

    Columns: ``source, language, method, label, mlm_loss, perplexity, masked_tokens,
    in_source_pretraining``.
    """
    df = results.rename(columns={"target": "language"}).copy()
    df["label"] = df["method"].map(method_labels)
    df["in_source_pretraining"] = [lang in in_pretraining.get(src, []) for src, lang in
                                   zip(df["source"], df["language"], strict=True)]
    cols = ["source", "language", "method", "label", "mlm_loss", "perplexity", "masked_tokens",
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
        lines = [f"**Source `{source}`** — MLM loss right after initialization (lower is better); "
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

"""Paper tables from the long-form result files."""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable

import pandas as pd


def printed_best(values: dict[Hashable, float | None], *, higher: bool,
                 number: Callable[[float], str] | None = None) -> set[Hashable]:
    """The keys to bold: every value equal to the best as the table prints it (``number``: the cell's number
    format, e.g. ``"{:.2f}".format``; None: compared exactly), so that values that print alike are all bold
    (ties); missing values (None, NaN) are never bold. Every table kind bolds through this."""
    shown = {k: float(number(v)) if number else float(v) for k, v in values.items()
             if v is not None and not pd.isna(v)}
    if not shown:
        return set()
    best = (max if higher else min)(shown.values())
    return {k for k, v in shown.items() if v == best}


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def _names(part: str, text: str) -> bool:
    """``text`` already names ``part``: each word of ``part`` is a word of ``text`` or an abbreviation of
    three letters or more that ``text`` uses ("Acc." for accuracy), case-insensitively."""
    words = _words(text)
    return bool(_words(part)) and all(any(w == p or (len(w) >= 3 and p.startswith(w)) for w in words)
                                      for p in _words(part))


def column_header(label: str, *, group: str = "", metric: str | None = None) -> str:
    """A column's header: ``group`` before the column's ``label`` and its ``metric`` after it in parentheses,
    each left out where the label names it already (case-insensitive: "STSB (Pearson)" with metric pearson
    stays "STSB (Pearson)", "XNLI de" in group XNLI stays "XNLI de"), so a header never repeats a word. Every
    table kind's headers come from here."""
    head = label if not group or _names(group, label) else f"{group} {label}"
    return head if not metric or _names(metric, head) else f"{head} ({metric})"


def init_loss_table(results: pd.DataFrame, *, method_labels: dict[str, str],
                    in_pretraining: dict[str, list[str]]) -> pd.DataFrame:
    """Long form of FOCUS Table 4: one row per (source, language, method).

    Columns: ``source, language, method, label, objective, mlm_loss (the loss of the objective), perplexity,
    bits_per_byte, bits_per_char, masked_tokens, scored_bytes, in_source_pretraining`` (bits per byte and
    scored bytes are NaN in result files written without them).
    """
    df = results.rename(columns={"target": "language"}).copy()
    if "objective" not in df:
        df["objective"] = "mlm"  # result files written before decoder sources
    for col in ("bits_per_byte", "bits_per_char", "scored_bytes"):
        if col not in df:
            df[col] = float("nan")
    df["label"] = df["method"].map(method_labels)
    df["in_source_pretraining"] = [lang in in_pretraining.get(src, []) for src, lang in
                                   zip(df["source"], df["language"], strict=True)]
    cols = ["source", "language", "method", "label", "objective", "mlm_loss", "perplexity", "bits_per_byte",
            "bits_per_char", "masked_tokens", "scored_bytes", "in_source_pretraining"]
    return df[cols].sort_values(["source", "in_source_pretraining", "language", "method"],
                                ascending=[True, False, True, True], ignore_index=True)


INIT_VALUES = {  # column -> how the markdown names it
    "mlm_loss": None,  # "MLM loss" or "next-token (causal-LM) loss", by the rows' objective
    "bits_per_byte": "bits per byte (the same loss in bits per UTF-8 byte of the scored tokens' text; "
                     "comparable across tokenizers)",
}


def init_loss_markdown(table: pd.DataFrame, *, methods: list[str], targets: list[str],
                       values: tuple[str, ...] = ("mlm_loss", "bits_per_byte")) -> str:
    """Table 4's layout, once per value of ``values`` (:data:`INIT_VALUES`) and source: methods as rows,
    languages as columns grouped by 'part of' / 'not part of' the source's pretraining; the best (lowest)
    value per language in bold; missing cells '—'. A value with no numbers (old result files) is left out."""
    parts = []
    for source, df in table.groupby("source", sort=False):
        inside = [t for t in targets if df.loc[df.language == t, "in_source_pretraining"].any()]
        outside = [t for t in targets if t not in inside]
        langs = inside + outside
        labels = (df.drop_duplicates("method").set_index("method")["label"].reindex(methods).astype(object)
                  .fillna(pd.Series(methods, index=methods)))
        head = "| Initialization ↓ / Language → | " + " | ".join(
            [f"{t} (in)" for t in inside] + [f"{t} (not in)" for t in outside]) + " |"
        for value in values:
            if df[value].isna().all():
                continue
            grid = (df.pivot(index="method", columns="language", values=value)
                    .reindex(index=methods, columns=langs))
            name = INIT_VALUES[value] or ("MLM loss" if (df["objective"] == "mlm").all()
                                          else "next-token (causal-LM) loss")
            lines = [f"**Source `{source}`** — {name} right after initialization (lower is better); "
                     f"'in' = part of the source model's pretraining, 'not in' = not part of it.", "", head,
                     "|" + "---|" * (len(langs) + 1)]
            bold = {t: printed_best(grid[t].to_dict(), higher=False, number="{:.2f}".format) for t in langs}
            for m in methods:
                cells = []
                for t in langs:
                    v = grid.loc[m, t]
                    cells.append("—" if pd.isna(v) else (f"**{v:.2f}**" if m in bold[t] else f"{v:.2f}"))
                lines.append(f"| {labels[m]} | " + " | ".join(cells) + " |")
            parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def finetune_table(scores: pd.DataFrame) -> pd.DataFrame:
    """Mean ± std over seeds of the test (and dev) metric per (source, task, model): FOCUS Tables 2-3; the
    seeds are the rows' ``seed`` column. Zero-shot cells (``vocab_transfer.training.zeroshot``: one file per
    cell, a row per seed and source task) are the mean over seeds and source languages, as unks-everywhere
    Table 3 averages its four source languages; their std is over the seeds of the source-averaged score (not
    over all source × seed runs, which would mix the languages' spread in).

    Columns: ``source, task_name, language, task, model, method, metric, seeds, test_mean, test_std, dev_mean,
    dev_std, test2_mean`` (``SECONDARY``), ``extra_mean, extra_std`` (the metric on the first extra evaluation
    set ``test_<name>``, e.g. MNLI mismatched; NaN without one); scores in % (F1 / accuracy / correlation ×
    100; SQuAD scores are in % already).
    """
    df = scores.copy()
    scale = df["task"].map(lambda t: 1.0 if t == "qa" else 100.0)  # SQuAD scores are already in %
    df["test"] = [r[f"test_{r['metric']}"] for _, r in df.iterrows()] * scale
    df["dev"] = [r[f"dev_{r['metric']}"] for _, r in df.iterrows()] * scale
    df["test2"] = [r.get(f"test_{SECONDARY.get(r['metric'])}", float("nan"))
                   for _, r in df.iterrows()] * scale
    df["extra"] = [r.get(f"test_{_first_extra(r)}_{r['metric']}", float("nan"))
                   if _first_extra(r) else float("nan")
                   for _, r in df.iterrows()] * scale
    keys = ["source", "task_name", "language", "task", "model", "method", "metric"]
    # one value per seed first (zero-shot: the mean over the source tasks), so the std is over seeds only
    per_seed = df.groupby([*keys, "seed"], sort=False)[["test", "dev", "test2", "extra"]].mean().reset_index()
    out = per_seed.groupby(keys, sort=False).agg(seeds=("seed", "nunique"), test_mean=("test", "mean"),
                                                 test_std=("test", "std"), dev_mean=("dev", "mean"),
                                                 dev_std=("dev", "std"), test2_mean=("test2", "mean"),
                                                 extra_mean=("extra", "mean"), extra_std=("extra", "std")
                                                 ).reset_index()
    return out


def _first_extra(row) -> str | None:
    """The first extra evaluation set of a scores row (``extra_test_sets``: comma-separated), or None."""
    names = row.get("extra_test_sets")
    return str(names).split(",")[0] if isinstance(names, str) and names else None


SECONDARY = {"las": "uas"}  # shown before the selection metric in a cell, as the papers do ("UAS / LAS")
FORMATS = ("percent", "fraction")  # cells: 84.2 ± 0.4 (FOCUS, UNKs, WECHSEL) or 0.842 (±0.004) (vocab-swap)


def score_number(fmt: str = "percent") -> Callable[[float], str]:
    """How ``fmt`` prints a score in % (:func:`score_cell`): 84.2 (``percent``) or 0.842 (``fraction``)."""
    if fmt not in FORMATS:
        raise ValueError(f"table format must be one of {list(FORMATS)}, not {fmt!r}")
    scale, digits = (1.0, 1) if fmt == "percent" else (0.01, 3)
    return lambda v: f"{v * scale:.{digits}f}"


def score_cell(r, fmt: str = "percent") -> str:
    """An aggregated row as a cell: 'mean ± std' (0 std for one seed) in % (``fmt="percent"``) or, as
    vocab-swap prints it, '0.842 (±0.004)' (``"fraction"``); 'UAS / LAS' means for parsing; with an extra
    evaluation set (MNLI's mismatched), both means and stds: '84.2/84.6 ± 0.4/0.4' or '0.842/0.846
    (±0.004/0.004)' (m/mm)."""
    std = lambda v: 0.0 if pd.isna(v) else v  # noqa: E731
    num = score_number(fmt)
    if r.metric in SECONDARY:
        return f"{num(r.test2_mean)} / {num(r.test_mean)}"
    extra = getattr(r, "extra_mean", None)
    if extra is not None and not pd.isna(extra):
        means, stds = f"{num(r.test_mean)}/{num(extra)}", f"{num(std(r.test_std))}/{num(std(r.extra_std))}"
    else:
        means, stds = num(r.test_mean), num(std(r.test_std))
    return f"{means} ± {stds}" if fmt == "percent" else f"{means} (±{stds})"


def best_cells(values: dict[tuple[str, str], float | None], groups: list[list[str]] | None, *, higher: bool,
               number: Callable[[float], str] | None = None) -> set[tuple[str, str]]:
    """The (row, column) cells to bold: per column, the best value within each group of rows (``groups``;
    None: one group of all rows). A row in no group is never bold (vocab-swap Tables 1 and 4-7 leave the Bert
    Baseline out; Table 2 marks the best swapped model and the best reference model). Ties at the printed
    precision (``number``) are all bold (:func:`printed_best`)."""
    rows = list(dict.fromkeys(r for r, _ in values))
    out = set()
    for group in groups if groups is not None else [rows]:
        for col in dict.fromkeys(c for _, c in values):
            out |= printed_best({(r, col): values.get((r, col)) for r in group}, higher=higher, number=number)
    return out


def grid_markdown(grid: dict, values: dict[str, tuple[float, str]], *, higher: bool,
                  best_column: bool = False, corner: str = "", best_groups: list[list[str]] | None = None,
                  number: Callable[[float], str] | None = None) -> tuple[list[dict], list[str]]:
    """A paper's two-way layout (vocab-swap Tables 1 and 4-16: initialization × trained part and learning
    rate):
    ``grid = {"columns": [...], "rows": {row label: [name or null per column]}}`` (rows may also be [label,
    names] pairs); ``values`` maps a name (fine-tuned model or LAPT run) to (sort value, cell text). A null
    entry or a name without a value is "—"; the best value of each column as ``number`` prints it is bold
    (within each of ``best_groups``, see ``best_cells``); ``best_column`` adds the row's best (Tables 12-16
    "Best"); a row with one entry more than ``columns`` names its Best cell itself (the reference rows of
    Tables 12/13/15/16: mBERT, FlauBERT, German BERT fill only "Best"); the long row of a Best cell names the
    model it shows. Returns (long rows, Markdown lines)."""
    cols, pick, grid_rows = grid["columns"], (max if higher else min), dict(grid["rows"])
    cell = {(r, c): (n, values.get(n) if n else None) for r, names in grid_rows.items()
            for c, n in zip(cols, names[:len(cols)], strict=True)}
    own_best = {r: names[len(cols)] for r, names in grid_rows.items() if len(names) > len(cols)}
    # the model of each row's Best cell: its own (a reference row), else the row's best cell's (the first of
    # a tie)
    best_name = {r: own_best[r] if r in own_best else
                 pick([cell[r, c] for c in cols if cell[r, c][1] is not None], key=lambda nv: nv[1][0],
                      default=(None, None))[0] for r in grid_rows}
    row_best = {r: values.get(best_name[r]) if best_name[r] else None for r in grid_rows}
    bold = best_cells({(r, c): None if v is None else v[0] for (r, c), (_, v) in cell.items()}
                      | {(r, "Best"): None if v is None else v[0] for r, v in row_best.items()},
                      best_groups, higher=higher, number=number)
    head = f"| {corner} | " + " | ".join(cols + (["Best"] if best_column else [])) + " |"
    lines, long = [head, "|" + "---|" * (len(cols) + 1 + best_column)], []
    for r in grid_rows:
        texts = []
        for c in cols:
            name, v = cell[r, c]
            long.append({"row": r, "column": c, "name": name, "value": None if v is None else v[0]})
            texts.append("—" if v is None else (f"**{v[1]}**" if (r, c) in bold else v[1]))
        if best_column:
            v = row_best[r]
            long.append({"row": r, "column": "Best", "name": best_name[r],
                         "value": None if v is None else v[0]})
            texts.append("—" if v is None else (f"**{v[1]}**" if (r, "Best") in bold else v[1]))
        lines.append(f"| {r} | " + " | ".join(texts) + " |")
    return long, lines


def finetune_markdown(table: pd.DataFrame, *, models: dict[str, str], tasks: dict[str, str]) -> str:
    """Models as rows, tasks as columns, test mean ± std over seeds; the best mean per task in bold;
    cells whose jobs have not run show as '—'."""
    parts = []
    for source, df in table.groupby("source", sort=False):
        head = "| Model ↓ / Task → | " + " | ".join(
            column_header(label, metric=df.loc[df.task_name == t, "metric"].iloc[0]
                          if (df.task_name == t).any()
                          else "?") for t, label in tasks.items()) + " |"
        lines = [f"**Source `{source}`** — test score of the dev-selected checkpoint, mean ± std over seeds "
                 "(higher is better).", "", head, "|" + "---|" * (len(tasks) + 1)]
        bold = best_cells({(r.model, r.task_name): r.test_mean for r in df.itertuples() if r.model in models},
                          None, higher=True, number=score_number())
        for m, label in models.items():
            cells = []
            for t in tasks:
                row = df[(df.model == m) & (df.task_name == t)]
                if row.empty:
                    cells.append("—")
                    continue
                r = row.iloc[0]
                cell = score_cell(r)
                cells.append(f"**{cell}**" if (m, t) in bold else cell)
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def paper_table(scores: pd.DataFrame, spec: dict, *, models: dict[str, str], tasks: dict[str, str]
                ) -> tuple[pd.DataFrame, str]:
    """One downstream table in a paper's layout: ``spec["rows"]`` (model names, default all) as rows,
    ``spec["groups"]`` ({group title: [task names]}, default one group of all tasks) as column groups;
    cells are test mean ± std over seeds (``spec["format"]``: ``score_cell``; MNLI cells "m/mm"), the best
    mean of each column in bold (within each of ``spec["best_groups"]``, lists of rows: ``best_cells``; for
    an m/mm cell, by the first value), and a cell whose jobs have not run (or are not part of the grid) is
    "—", never 0. ``spec["source_languages"]`` keeps the zero-shot rows of those source languages only
    (unks-everywhere Tables 5a-d, 9a-d: one source language each). Returns (long table, Markdown)."""
    if spec.get("format", "percent") not in FORMATS:
        raise ValueError(f"table format must be one of {list(FORMATS)}, not {spec['format']!r}")
    if spec.get("source_languages") and "source_language" in scores:
        zero_shot = (scores["zero_shot"].eq(True) if "zero_shot" in scores
                     else pd.Series(False, index=scores.index))
        scores = scores[~zero_shot | scores["source_language"].isin(spec["source_languages"])]
    agg = finetune_table(scores) if len(scores) else pd.DataFrame(
        columns=["source", "task_name", "model", "metric", "seeds", "test_mean", "test_std", "test2_mean",
                 "extra_mean", "extra_std"])
    if "grid" in spec:
        return _paper_grid(agg, spec, tasks=tasks)
    rows = spec.get("rows") or list(models)
    groups = dict(spec.get("groups") or {"": list(tasks)})  # a mapping, or [title, tasks] pairs in order
    long = []
    for source in agg["source"].unique() if len(agg) else [None]:
        for m in rows:
            for group, names in groups.items():
                for t in names:
                    hit = agg[(agg.source == source) & (agg.model == m) & (agg.task_name == t)]
                    r = hit.iloc[0] if len(hit) else None
                    long.append({"source": source, "model": m, "label": models.get(m, m),
                                 "group": group, "task_name": t,
                                 "task_label": tasks.get(t, t), "metric": None if r is None else r.metric,
                                 "seeds": 0 if r is None else int(r.seeds),
                                 "test_mean": None if r is None else float(r.test_mean),
                                 "test_std": None if r is None
                                 else float(0.0 if pd.isna(r.test_std) else r.test_std),
                                 "test2_mean": None if r is None else r.test2_mean,
                                 "extra_mean": None if r is None else r.extra_mean,
                                 "extra_std": None if r is None else r.extra_std})
    table = pd.DataFrame(long)
    cols = [(g, t) for g, names in groups.items() for t in names]
    head = " | ".join(column_header(tasks.get(t, t), group=g) for g, t in cols)
    parts = []
    fmt = spec.get("format", "percent")
    for source, df in table.groupby("source", sort=False, dropna=False):
        bold = best_cells({(r.model, r.task_name): r.test_mean for r in df.itertuples()},
                          spec.get("best_groups"), higher=True, number=score_number(fmt))
        lines = [f"**{spec.get('title', 'Downstream results')}**"
                 + (f" (source `{source}`)" if source else ""), "",
                 f"| Model | {head} |", "|" + "---|" * (len(cols) + 1)]
        for m in rows:
            cells = []
            for _, t in cols:
                r = df[(df.model == m) & (df.task_name == t)].iloc[0]
                if pd.isna(r.test_mean):
                    cells.append("—")
                else:
                    cell = score_cell(r, fmt)
                    cells.append(f"**{cell}**" if (m, t) in bold else cell)
            lines.append(f"| {models.get(m, m)} | " + " | ".join(cells) + " |")
        if spec.get("caption"):
            lines += ["", spec["caption"]]
        parts.append("\n".join(lines))
    return table, "\n\n".join(parts) + "\n"


def _paper_grid(agg: pd.DataFrame, spec: dict, *, tasks: dict[str, str]) -> tuple[pd.DataFrame, str]:
    """Downstream tables in a two-way grid (``spec["grid"]``, models in the cells), one block per task of
    ``spec["tasks"]`` and source (vocab-swap Tables 1, 4-7 and 12-16: rows initialization, columns trained
    part and learning rate, plus "Best" in Tables 12-16); cells as ``score_cell`` in ``spec["format"]``, the
    best within each of ``spec["best_groups"]`` bold."""
    long, parts = [], []
    for source in agg["source"].unique() if len(agg) else [None]:
        for t in spec["tasks"]:
            df = agg[(agg.source == source) & (agg.task_name == t)]
            values = {r.model: (float(r.test_mean),
                                score_cell(r, spec.get("format", "percent"))) for r in df.itertuples()}
            rows, lines = grid_markdown(spec["grid"], values, higher=True,
                                        best_column=spec.get("best_column", False), corner=tasks.get(t, t),
                                        best_groups=spec.get("best_groups"),
                                        number=score_number(spec.get("format", "percent")))
            long += [{"source": source, "task_name": t, **r} for r in rows]
            parts.append("\n".join([f"**{spec.get('title', 'Downstream results')}: {tasks.get(t, t)}**"
                                     + (f" (source `{source}`)" if source else "")
                                     + " (test, mean ± std over seeds; higher is better)", "", *lines]
                                    + (["", spec["caption"]] if spec.get("caption") else [])))
    return pd.DataFrame(long), "\n\n".join(parts) + "\n"


def markdown_to_html(md: str, *, title: str) -> str:
    """Our Markdown tables as a standalone HTML page (for ``snakemake --report``, which shows HTML results
    inline and offers CSV only as a download): pipe tables become <table>, ``**x**`` bold, other lines <p>."""
    import html
    import re

    def inline(text: str) -> str:
        text = html.escape(text)
        return re.sub(r"`([^`]+)`", r"<code>\1</code>", re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text))

    out, rows = [], []

    def flush() -> None:
        if rows:
            head, body = rows[0], [r for r in rows[1:] if not set("".join(r)) <= set("-: ")]
            out.append("<table><thead><tr>" + "".join(f"<th>{inline(c)}</th>" for c in head)
                       + "</tr></thead><tbody>"
                       + "".join("<tr>" + "".join(f"<td>{inline(c)}</td>" for c in r) + "</tr>" for r in body)
                       + "</tbody></table>")
            rows.clear()

    for line in md.splitlines():
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
            continue
        flush()
        if line.strip():
            out.append(f"<p>{inline(line)}</p>")
    flush()
    style = ("body{font-family:sans-serif;margin:1.5em} table{border-collapse:collapse;margin:1em 0} "
             "th,td{border:1px solid #bbb;padding:4px 10px;text-align:right} th:first-child,td:first-child"
             "{text-align:left} thead{background:#eef}")
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{style}</style></head><body><h2>{html.escape(title)}</h2>{''.join(out)}</body></html>\n")


def lapt_table(curves: pd.DataFrame, spec: dict, *, runs: dict[str, str]) -> tuple[pd.DataFrame, str]:
    """A LAPT table in a paper's layout (WECHSEL Table 2): ``spec["rows"]`` (LAPT runs) as rows, and per
    language of ``spec["languages"]`` the held-out perplexity (``value: perplexity``, default), loss or bits
    per byte (``value: bits_per_byte``) at each step of ``spec["steps"]`` (global optimizer steps of the run;
    the curve must have been evaluated there, e.g. ``eval_every`` dividing every step). Missing cells are "—".
    ``curves`` has ``run, language, step, heldout_loss, heldout_bits_per_byte`` (the last record of a step,
    i.e. after a two-stage boundary the second stage's); several sources in ``source``: a block each."""
    import math

    sources = list(dict.fromkeys(curves["source"])) if "source" in curves and len(curves) else []
    if len(sources) > 1:  # one block per source model
        parts = [lapt_table(curves[curves["source"] == src].drop(columns="source"),
                            {**spec,
                             "title": f"{spec.get('title', 'Held-out ' + spec.get('value', 'perplexity'))} "
                                              f"(source `{src}`)"}, runs=runs) for src in sources]
        return (pd.concat([t.assign(source=src) for (t, _), src in zip(parts, sources, strict=True)],
                          ignore_index=True), "\n".join(md for _, md in parts))
    curves = curves.drop(columns="source", errors="ignore")
    rows, langs, steps = spec.get("rows") or list(runs), spec["languages"], spec["steps"]
    value = spec.get("value", "perplexity")
    column = "heldout_bits_per_byte" if value == "bits_per_byte" else "heldout_loss"
    if column not in curves:
        curves = curves.assign(**{column: float("nan")})  # curves written without bits per byte
    last = (curves.sort_values(["run", "language", "step", "stage"])
            .groupby(["run", "language", "step"]).last())

    def value_at(run: str, lang: str, step: int) -> float | None:
        v = last[column].get((run, lang, step)) if len(last) else None
        return None if v is None or pd.isna(v) else (math.exp(v) if value == "perplexity" else float(v))

    if "grid" in spec:  # vocab-swap Tables 8, 11, 14: runs in a two-way grid, one block per language and step
        long, parts = [], []
        for lang in langs:
            for s in steps:
                cells = {r: value_at(r, lang, s)
                         for names in dict(spec["grid"]["rows"]).values() for r in names if r}
                values = {r: (v, f"{v:.2f}") for r, v in cells.items() if v is not None}
                grid_rows, lines = grid_markdown(spec["grid"], values, higher=False, corner=lang,
                                                 best_groups=spec.get("best_groups"), number="{:.2f}".format)
                long += [{"language": lang, "step": s, **g} for g in grid_rows]
                parts.append("\n".join([f"**{spec.get('title', 'Held-out ' + value)}: "
                                        f"{lang}, held-out {value} at "
                                         f"step {s:,}** (lower is better)", "", *lines]))
        return pd.DataFrame(long), "\n\n".join(parts) + "\n"
    long = []
    for r in rows:
        for lang in langs:
            for s in steps:
                long.append({"run": r, "label": runs.get(r, r), "language": lang, "step": s,
                             value: value_at(r, lang, s)})
    table = pd.DataFrame(long)
    bold = {(lang, s): printed_best({r: value_at(r, lang, s) for r in rows},
                                    higher=False, number="{:.2f}".format)
            for lang in langs for s in steps}
    head = " | ".join(f"{lang} @{s:,}" for lang in langs for s in steps)
    lines = [f"**{spec.get('title', 'Held-out ' + value + ' during LAPT')}** (lower is better)", "",
             f"| Run | {head} |", "|" + "---|" * (len(langs) * len(steps) + 1)]
    for r in rows:
        cells = []
        for lang in langs:
            for s in steps:
                v = table[(table.run == r) & (table.language == lang) & (table.step == s)][value].iloc[0]
                cells.append("—" if pd.isna(v) else (f"**{v:.2f}**" if r in bold[(lang, s)] else f"{v:.2f}"))
        lines.append(f"| {runs.get(r, r)} | " + " | ".join(cells) + " |")
    return table, "\n".join(lines) + "\n"


def init_table(results: pd.DataFrame, spec: dict, *, labels: dict[str, str]) -> tuple[pd.DataFrame, str]:
    """A table of init-time held-out values (``kind: init``; WECHSEL Table 7's LM column, a grid of one
    method's parameters): ``spec["rows"]`` (methods) as rows, ``spec["languages"]`` as columns, one block per
    source; the cell is ``value``: ``perplexity`` (default), ``loss`` or ``bits_per_byte``; the best (lowest)
    per column in bold, "—" for a method that does not run on a language. ``results`` are rows of
    ``results/eval_init`` files, and with ``spec["probes"]`` rows of ``results/eval_init/<source>/probe``
    files (a ``probe`` column names their column):
    then the layout is WECHSEL Tables 7-8's, a row per (language, method) and a column per probe (test
    accuracy, higher is better) before the held-out value."""
    value = spec.get("value") or "perplexity"
    column = {"perplexity": "perplexity", "loss": "mlm_loss", "bits_per_byte": "bits_per_byte"}[value]
    rows, langs = spec["rows"], spec["languages"]
    df = results.copy()
    if "target" in df:  # init-eval rows name their language `target`, probe rows `language`
        df["language"] = df["target"] if "language" not in df else df["language"].fillna(df["target"])
    probed = df["probe"].notna() if "probe" in df else pd.Series(False, index=df.index)
    probes, df = df[probed], df[~probed]
    if column not in df:
        df = df.assign(**{column: float("nan")})
    fmt = ((lambda v: f"{v:.3g}" if v >= 1000 else f"{v:.2f}") if value == "perplexity"
           else (lambda v: f"{v:.3f}"))
    long, parts = [], []
    for source, d in df.groupby("source", sort=False):
        grid = d.pivot_table(index="method", columns="language", values=column, aggfunc="first").reindex(
            index=rows, columns=langs)
        head = f"**{spec.get('title', 'Right after initialization')} (source `{source}`)**: "
        if spec.get("probes"):
            p = probes[probes["source"] == source]
            parts.append(_probe_block(grid, p, spec, labels, head, value, fmt, long, source))
            continue
        bold = {t: printed_best(grid[t].to_dict(), higher=False, number=fmt) for t in langs}
        lines = [head + f"held-out {value} right after initialization (lower is better)", "",
                 "| Initialization | " + " | ".join(langs) + " |", "|" + "---|" * (len(langs) + 1)]
        for m in rows:
            cells = ["—" if pd.isna(grid.loc[m, t]) else (f"**{fmt(grid.loc[m, t])}**" if m in bold[t]
                                                          else fmt(grid.loc[m, t])) for t in langs]
            lines.append(f"| {labels.get(m, m)} | " + " | ".join(cells) + " |")
            long += [{"source": source, "method": m, "label": labels.get(m, m), "language": t,
                      value: grid.loc[m, t]} for t in langs]
        parts.append("\n".join(lines))
    return pd.DataFrame(long), "\n\n".join(parts) + "\n"


def _probe_block(grid: pd.DataFrame, probes: pd.DataFrame, spec: dict, labels: dict[str, str], head: str,
                 value: str, fmt, long: list, source: str) -> str:
    """WECHSEL Tables 7-8's layout: Language | Initialization | <probe columns> | <value>; per language the
    best of each column in bold (probes: highest accuracy, value: lowest)."""
    names = list(spec["probes"])
    acc = (probes.pivot_table(index=["language", "method"], columns="probe",
                              values="accuracy", aggfunc="first")
           if len(probes) else pd.DataFrame())
    lines = [head + f"linear-probe test accuracy (%, higher is better) and held-out {value} (lower is "
                    "better) right after initialization", "", "| Language | Initialization | "
             + " | ".join(names) + f" | {value} |", "|" + "---|" * (len(names) + 3)]
    for t in spec["languages"]:
        cells = {n: [acc.loc[(t, m), n] if (t, m) in acc.index and n in acc
                     else float("nan") for m in spec["rows"]]
                 for n in names}
        cells[value] = [grid.loc[m, t] for m in spec["rows"]]
        shown = {n: (lambda v: f"{100 * v:.1f}") if n in names else fmt for n in cells}
        bold = {n: printed_best(dict(enumerate(vs)), higher=n in names, number=shown[n])
                for n, vs in cells.items()}
        for i, m in enumerate(spec["rows"]):
            texts = []
            for n in [*names, value]:
                v = cells[n][i]
                text = "—" if pd.isna(v) else shown[n](v)
                texts.append(f"**{text}**" if i in bold[n] else text)
            lines.append(f"| {t if i == 0 else ''} | {labels.get(m, m)} | " + " | ".join(texts) + " |")
            long.append({"source": source, "method": m, "label": labels.get(m, m), "language": t,
                         **{n: cells[n][i] for n in names}, value: cells[value][i]})
        if "majority" in probes:  # the commonest training label's share of the test set: a no-skill probe
            share = {n: probes[(probes["language"] == t) & (probes["probe"] == n)]["majority"] for n in names}
            lines.append("|  | *(majority label)* | " + " | ".join(
                f"*{100 * share[n].iloc[0]:.1f}*" if len(share[n]) else "—" for n in names) + " | — |")
    return "\n".join(lines)


def benchmark_table(scores: pd.DataFrame, labels: dict[tuple[str, str], str]) -> tuple[pd.DataFrame, str]:
    """Benchmark scores (rows of ``results/benchmarks`` files with ``source``, ``target``, ``stage``,
    ``name``) as one block per (source, target): a row per model (the source first), a column per task with
    its primary metric's value and the share of the source's value it keeps, for multiple-choice accuracies
    also the share of the source's margin over chance (vocab_transfer.eval.benchmarks.kept_share). ``labels``:
    ``(stage, name)`` -> row label. Returns the long table (every metric, ``kept`` and ``kept_over_chance``
    included) and the markdown."""
    from ..eval.benchmarks import kept_share, primary_scores

    long = kept_share(scores)
    parts = []
    for (source, target), d in long.groupby(["source", "target"], sort=False):
        main = pd.concat([primary_scores(g) for _, g in d.groupby(["stage", "name"], sort=False)])
        tasks = list(dict.fromkeys(main["task"]))
        metric = main.drop_duplicates("task").set_index("task")["metric"]
        order = sorted(main[["stage", "name"]].drop_duplicates().itertuples(index=False),
                       key=lambda r: ("source", "init", "lapt").index(r.stage))
        lines = [f"**Benchmarks on `{target}` (source `{source}`)**: lm-eval score (share of the source's "
                 "score kept; multiple choice: and of its margin over chance, (score - "
                 "chance) / (source - chance))",
                 "", "| Model | " + " | ".join(column_header(t, metric=metric[t]) for t in tasks) + " |",
                 "|" + "---|" * (len(tasks) + 1)]
        for stage, name in order:
            row = main[(main.stage == stage) & (main.name == name)].set_index("task")
            cells = []
            for t in tasks:
                if t not in row.index:
                    cells.append("—")
                    continue
                v, k = row.loc[t, "value"], row.loc[t, "kept"]
                kc = row.loc[t, "kept_over_chance"]
                share = f"{k:.0%}" if pd.isna(kc) else f"{k:.0%}; {kc:.0%} over chance"
                cells.append(f"{v:.3f}" if stage == "source" or pd.isna(k) else f"{v:.3f} ({share})")
            lines.append(f"| {labels.get((stage, name), name)} | " + " | ".join(cells) + " |")
        parts.append("\n".join(lines))
    return long, "\n\n".join(parts) + "\n"

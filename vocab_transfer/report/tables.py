"""Paper tables from the long-form result files."""

from __future__ import annotations

import html
import itertools
import math
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
    """A column's header (every table kind's): ``group`` before ``label`` and ``metric`` after it in
    parentheses, each left out where the label names it already, case-insensitively ("STSB (Pearson)" with
    metric pearson, "XNLI de" in group XNLI stay as they are), so a header never repeats a word."""
    head = label if not group or _names(group, label) else f"{group} {label}"
    return head if not metric or _names(metric, head) else f"{head} ({metric})"


def _row(first: str, cells) -> str:
    return f"| {first} | " + " | ".join(cells) + " |"


def _head(first: str, columns: list[str]) -> list[str]:
    """A Markdown table's header row and rule."""
    return [_row(first, columns), "|" + "---|" * (len(columns) + 1)]


def _cell(text: str | None, bold: bool) -> str:
    """A cell: "—" where nothing ran (``text`` None; never 0), bold among the best."""
    return "—" if text is None else f"**{text}**" if bold else text


def _rows_markdown(corner: str, rows: list[tuple], columns: list[tuple], values: dict, *, higher: bool,
                   texts: dict | None = None, groups: list[list] | None = None,
                   number: Callable[[float], str] | None = None) -> list[str]:
    """Markdown lines of ``rows`` by ``columns`` ((key, label) pairs): a cell shows ``texts[row, column]``
    (default its value as ``number`` prints it), bold where its ``values[row, column]`` is the best of the
    column (within each of ``groups``, :func:`best_cells`)."""
    if texts is None:
        texts = {k: None if pd.isna(v) else number(v) for k, v in values.items()}
    bold = best_cells(values, groups, higher=higher, number=number)
    return [*_head(corner, [label for _, label in columns]),
            *(_row(label, [_cell(texts.get((r, c)), (r, c) in bold) for c, _ in columns])
              for r, label in rows)]


def init_loss_table(results: pd.DataFrame, *, method_labels: dict[str, str],
                    in_pretraining: dict[str, list[str]]) -> pd.DataFrame:
    """Long form of FOCUS Table 4: one row per (source, language, method); ``mlm_loss`` is the loss of the
    objective; bits per byte and scored bytes are NaN in result files written without them."""
    defaults = {"objective": "mlm",  # result files written before decoder sources
                **dict.fromkeys(("bits_per_byte", "bits_per_char", "scored_bytes"), float("nan"))}
    df = results.rename(columns={"target": "language"})
    df = df.assign(**{c: v for c, v in defaults.items() if c not in df})
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
        labels = (df.drop_duplicates("method").set_index("method")["label"].reindex(methods).astype(object)
                  .fillna(pd.Series(methods, index=methods)))
        columns = [(t, f"{t} (in)") for t in inside] + [(t, f"{t} (not in)") for t in outside]
        for value in values:
            if df[value].isna().all():
                continue
            grid = (df.pivot(index="method", columns="language", values=value)
                    .reindex(index=methods, columns=inside + outside))
            name = INIT_VALUES[value] or ("MLM loss" if (df["objective"] == "mlm").all()
                                          else "next-token (causal-LM) loss")
            parts.append("\n".join([
                f"**Source `{source}`** — {name} right after initialization (lower is better); 'in' = part "
                "of the source model's pretraining, 'not in' = not part of it.", "",
                *_rows_markdown("Initialization ↓ / Language →", [(m, labels[m]) for m in methods], columns,
                                {(m, t): grid.loc[m, t] for m in methods for t, _ in columns}, higher=False,
                                number="{:.2f}".format)]))
    return "\n\n".join(parts) + "\n"


def finetune_table(scores: pd.DataFrame) -> pd.DataFrame:
    """Mean ± std over seeds of the test (and dev) metric per (source, task, model): FOCUS Tables 2-3; the
    seeds are the rows' ``seed`` column. Zero-shot cells (``vocab_transfer.training.zeroshot``: one file per
    cell, a row per seed and source task) are the mean over seeds and source languages, as unks-everywhere
    Table 3 averages its four source languages; their std is over the seeds of the source-averaged score (not
    over all source × seed runs, which would mix the languages' spread in). ``test2_mean``: the
    :data:`SECONDARY` metric; ``extra_mean, extra_std``: the metric on the first extra evaluation set
    ``test_<name>`` (MNLI mismatched; NaN without one). Scores in % (F1 / accuracy / correlation × 100; SQuAD
    scores are in % already)."""
    df, nan = scores.copy(), float("nan")
    scale = df["task"].map(lambda t: 1.0 if t == "qa" else 100.0)  # SQuAD scores are already in %
    rows = [r for _, r in df.iterrows()]
    df["test"] = [r[f"test_{r['metric']}"] for r in rows] * scale
    df["dev"] = [r[f"dev_{r['metric']}"] for r in rows] * scale
    df["test2"] = [r.get(f"test_{SECONDARY.get(r['metric'])}", nan) for r in rows] * scale
    df["extra"] = [r.get(f"test_{_first_extra(r)}_{r['metric']}", nan) if _first_extra(r) else nan
                   for r in rows] * scale
    keys = ["source", "task_name", "language", "task", "model", "method", "metric"]
    # one value per seed first (zero-shot: the mean over the source tasks), so the std is over seeds only
    per_seed = df.groupby([*keys, "seed"], sort=False)[["test", "dev", "test2", "extra"]].mean().reset_index()
    stats = {f"{c}_{f}": (c, f) for c in ("test", "dev", "test2", "extra") for f in ("mean", "std")}
    del stats["test2_std"]  # the secondary metric's mean only
    return per_seed.groupby(keys, sort=False).agg(seeds=("seed", "nunique"), **stats).reset_index()


def _first_extra(row) -> str | None:
    """The first extra evaluation set of a scores row (``extra_test_sets``: comma-separated), or None."""
    names = row.get("extra_test_sets")
    return str(names).split(",")[0] if isinstance(names, str) and names else None


_STATS = ("test_mean", "test_std", "test2_mean", "extra_mean", "extra_std")  # a paper table cell's numbers
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
    rate): ``grid = {"columns": [...], "rows": {row label: [name or null per column]}}`` (or [label, names]
    pairs); ``values`` maps a name (fine-tuned model or LAPT run) to (sort value, cell text). A null
    entry or a name without a value is "—"; the best value of each column as ``number`` prints it is bold
    (within each of ``best_groups``, see ``best_cells``); ``best_column`` adds the row's best (Tables 12-16
    "Best"); a row with one entry more than ``columns`` names its Best cell itself (the reference rows of
    Tables 12/13/15/16: mBERT, FlauBERT, German BERT fill only "Best"); the long row of a Best cell names the
    model it shows. Returns (long rows, Markdown lines)."""
    cols, pick, grid_rows = grid["columns"], (max if higher else min), dict(grid["rows"])
    cell = {(r, c): (n, values.get(n) if n else None) for r, names in grid_rows.items()
            for c, n in zip(cols, names[:len(cols)], strict=True)}
    best = {}  # each row's Best cell: its own model (a reference row), else its best cell's (first of a tie)
    for r, names in grid_rows.items():
        name = names[len(cols)] if len(names) > len(cols) else pick(
            [cell[r, c] for c in cols if cell[r, c][1] is not None], key=lambda nv: nv[1][0],
            default=(None, None))[0]
        best[r] = (name, values.get(name) if name else None)
    every = cell | {(r, "Best"): b for r, b in best.items()}
    bold = best_cells({k: None if v is None else v[0] for k, (_, v) in every.items()}, best_groups,
                      higher=higher, number=number)
    shown = cols + (["Best"] if best_column else [])
    lines, long = _head(corner, shown), []
    for r in grid_rows:
        row = list(zip(shown, [cell[r, c] for c in cols] + ([best[r]] if best_column else []), strict=True))
        long += [{"row": r, "column": c, "name": n, "value": None if v is None else v[0]}
                 for c, (n, v) in row]
        lines.append(_row(r, [_cell(None if v is None else v[1], (r, c) in bold) for c, (_, v) in row]))
    return long, lines


def _source(source) -> str:
    return f" (source `{source}`)" if source else ""


def _caption(spec: dict) -> list[str]:
    return ["", spec["caption"]] if spec.get("caption") else []


def finetune_markdown(table: pd.DataFrame, *, models: dict[str, str], tasks: dict[str, str]) -> str:
    """Models as rows, tasks as columns, test mean ± std over seeds; the best mean per task in bold;
    cells whose jobs have not run show as '—'."""
    parts = []
    for source, df in table.groupby("source", sort=False):
        columns = [(t, column_header(label, metric=df.loc[df.task_name == t, "metric"].iloc[0]
                                     if (df.task_name == t).any() else "?")) for t, label in tasks.items()]
        texts, values = {}, {}
        for r in df.itertuples():
            if r.model in models:
                texts.setdefault((r.model, r.task_name), score_cell(r))
                values[r.model, r.task_name] = r.test_mean
        lines = _rows_markdown("Model ↓ / Task →", list(models.items()), columns, values, higher=True,
                               texts=texts, number=score_number())
        parts.append("\n".join([f"**Source `{source}`** — test score of the dev-selected checkpoint, mean ± "
                                 "std over seeds (higher is better).", "", *lines]))
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
    fmt = spec.get("format", "percent")
    number = score_number(fmt)  # an unknown format is an error
    if spec.get("source_languages") and "source_language" in scores:
        zero_shot = (scores["zero_shot"].eq(True) if "zero_shot" in scores
                     else pd.Series(False, index=scores.index))
        scores = scores[~zero_shot | scores["source_language"].isin(spec["source_languages"])]
    agg = finetune_table(scores) if len(scores) else pd.DataFrame(
        columns=["source", "task_name", "model", "metric", "seeds", *_STATS])
    if "grid" in spec:
        return _paper_grid(agg, spec, tasks=tasks)
    rows = spec.get("rows") or list(models)
    groups = dict(spec.get("groups") or {"": list(tasks)})  # a mapping, or [title, tasks] pairs in order
    long = []
    sources = agg["source"].unique() if len(agg) else [None]
    for source, m, (group, names) in itertools.product(sources, rows, groups.items()):
        for t in names:
            hit = agg[(agg.source == source) & (agg.model == m) & (agg.task_name == t)]
            r = hit.iloc[0] if len(hit) else None
            stats = {"metric": None, "seeds": 0} | dict.fromkeys(_STATS) if r is None else {
                "metric": r.metric, "seeds": int(r.seeds), "test_mean": float(r.test_mean),
                "test_std": float(0.0 if pd.isna(r.test_std) else r.test_std),
                "test2_mean": r.test2_mean, "extra_mean": r.extra_mean, "extra_std": r.extra_std}
            long.append({"source": source, "model": m, "label": models.get(m, m), "group": group,
                         "task_name": t, "task_label": tasks.get(t, t), **stats})
    table = pd.DataFrame(long)
    columns = [(t, column_header(tasks.get(t, t), group=g)) for g, names in groups.items() for t in names]
    parts = []
    for source, df in table.groupby("source", sort=False, dropna=False):
        texts = {}
        for r in df.itertuples():
            texts.setdefault((r.model, r.task_name), None if pd.isna(r.test_mean) else score_cell(r, fmt))
        parts.append("\n".join([
            f"**{spec.get('title', 'Downstream results')}**" + _source(source), "",
            *_rows_markdown("Model", [(m, models.get(m, m)) for m in rows], columns,
                            {(r.model, r.task_name): r.test_mean for r in df.itertuples()}, higher=True,
                            texts=texts, groups=spec.get("best_groups"), number=number), *_caption(spec)]))
    return table, "\n\n".join(parts) + "\n"


def _paper_grid(agg: pd.DataFrame, spec: dict, *, tasks: dict[str, str]) -> tuple[pd.DataFrame, str]:
    """Downstream tables in a two-way grid (``spec["grid"]``, models in the cells), one block per task of
    ``spec["tasks"]`` and source (vocab-swap Tables 1, 4-7 and 12-16: rows initialization, columns trained
    part and learning rate, plus "Best" in Tables 12-16); cells as ``score_cell`` in ``spec["format"]``, the
    best within each of ``spec["best_groups"]`` bold."""
    fmt = spec.get("format", "percent")
    long, parts = [], []
    for source in agg["source"].unique() if len(agg) else [None]:
        for t in spec["tasks"]:
            df = agg[(agg.source == source) & (agg.task_name == t)]
            rows, lines = grid_markdown(spec["grid"], {r.model: (float(r.test_mean), score_cell(r, fmt))
                                                       for r in df.itertuples()}, higher=True,
                                        best_column=spec.get("best_column", False), corner=tasks.get(t, t),
                                        best_groups=spec.get("best_groups"), number=score_number(fmt))
            long += [{"source": source, "task_name": t, **r} for r in rows]
            parts.append("\n".join([f"**{spec.get('title', 'Downstream results')}: {tasks.get(t, t)}**"
                                     + _source(source) + " (test, mean ± std over seeds; higher is better)",
                                     "", *lines, *_caption(spec)]))
    return pd.DataFrame(long), "\n\n".join(parts) + "\n"


def markdown_to_html(md: str, *, title: str) -> str:
    """Our Markdown tables as a standalone HTML page (for ``snakemake --report``, which shows HTML results
    inline and offers CSV only as a download): pipe tables become <table>, ``**x**`` bold, other lines <p>."""
    def inline(text: str) -> str:
        text = html.escape(text)
        return re.sub(r"`([^`]+)`", r"<code>\1</code>", re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text))

    out, rows = [], []

    def tr(cells: list[str], tag: str) -> str:
        return "<tr>" + "".join(f"<{tag}>{inline(c)}</{tag}>" for c in cells) + "</tr>"

    def flush() -> None:
        if rows:
            body = "".join(tr(r, "td") for r in rows[1:] if not set("".join(r)) <= set("-: "))
            out.append(f"<table><thead>{tr(rows[0], 'th')}</thead><tbody>{body}</tbody></table>")
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
    value = spec.get("value", "perplexity")
    sources = list(dict.fromkeys(curves["source"])) if "source" in curves and len(curves) else []
    if len(sources) > 1:  # one block per source model
        parts = [lapt_table(curves[curves["source"] == src].drop(columns="source"),
                            {**spec, "title": f"{spec.get('title', 'Held-out ' + value)} (source `{src}`)"},
                            runs=runs)
                 for src in sources]
        return (pd.concat([t.assign(source=src) for (t, _), src in zip(parts, sources, strict=True)],
                          ignore_index=True), "\n".join(md for _, md in parts))
    curves = curves.drop(columns="source", errors="ignore")
    rows, langs, steps = spec.get("rows") or list(runs), spec["languages"], spec["steps"]
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
        for lang, s in itertools.product(langs, steps):
            cells = {r: value_at(r, lang, s) for names in dict(spec["grid"]["rows"]).values()
                     for r in names if r}
            grid_rows, lines = grid_markdown(spec["grid"], {r: (v, f"{v:.2f}") for r, v in cells.items()
                                                            if v is not None}, higher=False, corner=lang,
                                             best_groups=spec.get("best_groups"), number="{:.2f}".format)
            long += [{"language": lang, "step": s, **g} for g in grid_rows]
            parts.append("\n".join([f"**{spec.get('title', 'Held-out ' + value)}: {lang}, held-out {value} "
                                     f"at step {s:,}** (lower is better)", "", *lines]))
        return pd.DataFrame(long), "\n\n".join(parts) + "\n"
    points = list(itertools.product(langs, steps))
    values = {(r, p): value_at(r, *p) for r in rows for p in points}
    table = pd.DataFrame([{"run": r, "label": runs.get(r, r), "language": lang, "step": s,
                           value: values[r, (lang, s)]} for r in rows for lang, s in points])
    lines = _rows_markdown("Run", [(r, runs.get(r, r)) for r in rows],
                           [(p, f"{p[0]} @{p[1]:,}") for p in points], values, higher=False,
                           number="{:.2f}".format)
    title = spec.get("title", "Held-out " + value + " during LAPT")
    return table, "\n".join([f"**{title}** (lower is better)", "", *lines]) + "\n"


def init_table(results: pd.DataFrame, spec: dict, *, labels: dict[str, str]) -> tuple[pd.DataFrame, str]:
    """A table of init-time held-out values (``kind: init``; WECHSEL Table 7's LM column, a grid of one
    method's parameters): ``spec["rows"]`` (methods) as rows, ``spec["languages"]`` as columns, one block per
    source; the cell is ``value``: ``perplexity`` (default), ``loss`` or ``bits_per_byte``; the best (lowest)
    per column in bold, "—" for a method that does not run on a language. ``results`` are rows of
    ``results/eval_init`` files, and with ``spec["probes"]`` rows of ``results/eval_init/<source>/probe``
    files (a ``probe`` column names their column): then the layout is WECHSEL Tables 7-8's, a row per
    (language, method) and a column per probe (test accuracy, higher is better) before the held-out value."""
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
        parts.append("\n".join([head + f"held-out {value} right after initialization (lower is better)", "",
                                *_rows_markdown("Initialization", [(m, labels.get(m, m)) for m in rows],
                                                [(t, t) for t in langs],
                                                {(m, t): grid.loc[m, t] for m in rows for t in langs},
                                                higher=False, number=fmt)]))
        long += [{"source": source, "method": m, "label": labels.get(m, m), "language": t,
                  value: grid.loc[m, t]} for m in rows for t in langs]
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
                    "better) right after initialization", "",
             *_head("Language", ["Initialization", *names, value])]
    for t in spec["languages"]:
        cells = {n: [acc.loc[(t, m), n] if (t, m) in acc.index and n in acc
                     else float("nan") for m in spec["rows"]]
                 for n in names}
        cells[value] = [grid.loc[m, t] for m in spec["rows"]]
        shown = {n: (lambda v: f"{100 * v:.1f}") if n in names else fmt for n in cells}
        bold = {n: printed_best(dict(enumerate(vs)), higher=n in names, number=shown[n])
                for n, vs in cells.items()}
        for i, m in enumerate(spec["rows"]):
            texts = [_cell(None if pd.isna(cells[n][i]) else shown[n](cells[n][i]), i in bold[n])
                     for n in [*names, value]]
            lines.append(_row(t if i == 0 else "", [labels.get(m, m), *texts]))
            long.append({"source": source, "method": m, "label": labels.get(m, m), "language": t,
                         **{n: cells[n][i] for n in names}, value: cells[value][i]})
        if "majority" in probes:  # the commonest training label's share of the test set: a no-skill probe
            share = {n: probes[(probes["language"] == t) & (probes["probe"] == n)]["majority"] for n in names}
            lines.append(_row("", ["*(majority label)*", *(f"*{100 * share[n].iloc[0]:.1f}*" if len(share[n])
                                                            else "—" for n in names), "—"]))
    return "\n".join(lines)


def _kept(v: float, k: float, kc: float, stage: str) -> str:
    """A benchmark cell: the score and, but for the source's, the share of the source's score it keeps and of
    the source's margin over chance."""
    share = f"{k:.0%}" if pd.isna(kc) else f"{k:.0%}; {kc:.0%} over chance"
    return f"{v:.3f}" if stage == "source" or pd.isna(k) else f"{v:.3f} ({share})"


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
                 "chance) / (source - chance))", "",
                 *_head("Model", [column_header(t, metric=metric[t]) for t in tasks])]
        for stage, name in order:
            row = main[(main.stage == stage) & (main.name == name)].set_index("task")
            kept = {t: _kept(*row.loc[t, ["value", "kept", "kept_over_chance"]], stage) for t in row.index}
            lines.append(_row(labels.get((stage, name), name), [kept.get(t, "—") for t in tasks]))
        parts.append("\n".join(lines))
    return long, "\n\n".join(parts) + "\n"

"""Paper-layout tables: mean ± std over seeds, best in bold, missing cells as '—' (never 0)."""

import pandas as pd
import pytest

from vocab_transfer.report.tables import finetune_table, paper_table


def scores():
    rows = []
    for model, task, seed, f1 in [("focus", "ner-a", 1, 0.60), ("focus", "ner-a", 2, 0.70),
                                  ("random", "ner-a", 1, 0.50), ("random", "ner-a", 2, 0.40),
                                  ("focus", "nli-b", 1, 0.8)]:
        metric = "f1" if task.startswith("ner") else "accuracy"
        rows.append({"source": "s", "task_name": task, "language": "x", "task": task[:3], "model": model,
                     "method": model, "metric": metric, "seed": seed, f"dev_{metric}": f1,
                     f"test_{metric}": f1})
    return pd.DataFrame(rows)


def test_finetune_table_mean_std_in_percent():
    t = finetune_table(scores()).set_index(["model", "task_name"])
    assert t.loc[("focus", "ner-a"), "test_mean"] == 65.0 and t.loc[("focus", "ner-a"), "seeds"] == 2
    assert abs(t.loc[("random", "ner-a"), "test_std"] - 7.0711) < 1e-3


def test_paper_table_layout_best_and_missing():
    spec = {"title": "T3", "rows": ["focus", "random"], "groups": {"NER": ["ner-a"], "NLI": ["nli-b"]}}
    table, md = paper_table(scores(), spec, models={"focus": "FOCUS", "random": "Random"},
                            tasks={"ner-a": "a", "nli-b": "b"})
    lines = md.splitlines()
    assert lines[0] == "**T3** (source `s`)" and lines[2] == "| Model | NER a | NLI b |"
    assert lines[4] == "| FOCUS | **65.0 ± 7.1** | **80.0 ± 0.0** |"
    assert lines[5] == "| Random | 45.0 ± 7.1 | — |"  # not run: missing, not zero
    assert table.loc[(table.model == "random") & (table.task_name == "nli-b"), "seeds"].item() == 0
    _, empty = paper_table(pd.DataFrame(), spec, models={}, tasks={})
    assert empty.count("—") == 4
    _, md = paper_table(scores(), spec, models={}, tasks={"ner-a": "NER de", "nli-b": "b"})
    assert md.splitlines()[2] == "| Model | NER de | NLI b |"  # a label that names its group says it once


def test_lapt_table_perplexity_at_steps():
    import math

    from vocab_transfer.report.tables import lapt_table

    curves = pd.DataFrame({"run": ["a"] * 4 + ["b"] * 2, "language": ["x"] * 6, "step": [0, 5, 5, 10, 0, 5],
                           "stage": [0, 0, 1, 1, 0, 0], "heldout_loss": [2.0, 1.5, 1.4, 1.0, 2.5, 1.2]})
    spec = {"rows": ["a", "b"], "languages": ["x"], "steps": [0, 5, 10]}
    table, md = lapt_table(curves, spec, runs={"a": "A", "b": "B"})
    ppl = table.set_index(["run", "step"])["perplexity"]
    assert ppl[("a", 5)] == math.exp(1.4)  # after a stage boundary: the later stage's record
    assert ppl[("b", 5)] == math.exp(1.2) and pd.isna(ppl[("b", 10)])
    assert md.splitlines()[2] == "| Run | x @0 | x @5 | x @10 |"
    assert md.splitlines()[5] == f"| B | {math.exp(2.5):.2f} | **{math.exp(1.2):.2f}** | — |"
    # the curves' own column, not derived
    bpb = curves.assign(heldout_bits_per_byte=curves["heldout_loss"] / 4)
    table, _ = lapt_table(bpb, {**spec, "value": "bits_per_byte"}, runs={})
    assert table.set_index(["run", "step"])["bits_per_byte"][("a", 10)] == 0.25
    table, _ = lapt_table(curves, {**spec, "value": "bits_per_byte"}, runs={})  # curves written without it
    assert table["bits_per_byte"].isna().all()


def test_init_table_kind_grid_of_methods():
    from vocab_transfer.report.tables import init_table

    rows = pd.DataFrame({"source": "s", "target": ["x", "x", "y", "x"], "method": ["a", "b", "a", "c"],
                         "mlm_loss": [5.0, 4.0, 3.0, 9.0], "perplexity": [148.4, 54.6, 20.1, 8103.1],
                         "bits_per_byte": [1.5, 1.75, 1.0, 3.0]})
    spec = {"rows": ["b", "a"], "languages": ["x", "y"], "title": "T7"}
    table, md = init_table(rows, spec, labels={"a": "k=1"})
    assert md.splitlines()[-2:] == ["| b | **54.60** | — |", "| k=1 | 148.40 | **20.10** |"]  # c is no row
    _, md = init_table(rows, {**spec, "value": "bits_per_byte"}, labels={})
    assert md.splitlines()[-1] == "| a | **1.500** | **1.000** |"
    assert table.set_index(["method", "language"])["perplexity"][("a", "y")] == 20.1


def test_init_table_gives_bits_per_byte_beside_the_loss():
    from vocab_transfer.report.tables import init_loss_markdown, init_loss_table

    rows = pd.DataFrame({"source": "s", "target": ["x", "x"], "method": ["a", "b"], "objective": "mlm",
                         "mlm_loss": [5.0, 4.0], "perplexity": [148.4, 54.6], "masked_tokens": 100,
                         "bits_per_byte": [1.5, 1.75], "bits_per_char": [1.6, 1.8], "scored_bytes": 400})
    table = init_loss_table(rows, method_labels={"a": "A", "b": "B"}, in_pretraining={})
    md = init_loss_markdown(table, methods=["a", "b"], targets=["x"]).split("**Source")[1:]
    assert "MLM loss" in md[0] and "| B | **4.00** |" in md[0]
    assert "bits per byte" in md[1] and "| A | **1.50** |" in md[1]  # a token-independent ranking may differ
    old = init_loss_table(rows.drop(columns=["bits_per_byte", "bits_per_char", "scored_bytes"]),
                          method_labels={}, in_pretraining={})
    assert "bits per byte" not in init_loss_markdown(old, methods=["a", "b"], targets=["x"])


def test_grid_tables_two_way_layout_best_column_and_dep_cells():
    """vocab-swap Tables 12/15 layout: models in a (row × column) grid, null cells "—", "Best" per row."""
    spec = {"title": "T15", "tasks": ["ner-a"], "best_column": True,
            "grid": {"columns": ["Embed", "All"],
                     "rows": {"Focus": [None, "focus"], "Rand": ["random", "random"]}}}
    table, md = paper_table(scores(), spec, models={}, tasks={"ner-a": "a"})
    lines = md.splitlines()
    assert lines[2] == "| a | Embed | All | Best |"
    assert lines[4] == "| Focus | — | **65.0 ± 7.1** | **65.0 ± 7.1** |"
    assert lines[5] == "| Rand | **45.0 ± 7.1** | 45.0 ± 7.1 | 45.0 ± 7.1 |"
    assert pd.isna(table[(table.row == "Focus") & (table.column == "Embed")]["name"].item())
    dep = pd.DataFrame([{"source": "s", "task_name": "ud", "language": "x", "task": "dep", "model": "m",
                         "method": "m", "metric": "las", "seed": 1, "dev_las": 0.5, "test_las": 0.6,
                         "dev_uas": 0.7, "test_uas": 0.8}])
    _, md = paper_table(dep, {"rows": ["m"], "groups": {"UD": ["ud"]}}, models={}, tasks={})
    assert "| m | **80.0 / 60.0** |" in md  # parsing cells read "UAS / LAS", as UNKs Table 3b


def test_grid_reference_rows_fill_only_best_and_are_never_bold():
    """vocab-swap Tables 12/13/15/16: mBERT / FlauBERT / German BERT rows are "-" in every column and hold
    their own score in "Best"; outside best_groups they are not bold although higher (Table 12: FlauBERT 0.806
    vs the bold 0.786); a reference model that has not run is "—"."""
    ref = scores()[lambda d: d.model == "focus"].assign(model="ref", method="ref")
    ref["test_f1"] += 0.2
    spec = {"title": "T12", "tasks": ["ner-a"], "best_column": True, "best_groups": [["Focus", "Rand"]],
            "grid": {"columns": ["Embed", "All"],
                     "rows": {"Focus": [None, "focus"], "Rand": ["random", "random"],
                              "Ref": [None, None, "ref"], "Gone": [None, None, "gone"]}}}
    table, md = paper_table(pd.concat([scores(), ref]), spec, models={}, tasks={"ner-a": "a"})
    lines = md.splitlines()
    assert lines[4] == "| Focus | — | **65.0 ± 7.1** | **65.0 ± 7.1** |"
    assert lines[6:] == ["| Ref | — | — | 85.0 ± 7.1 |", "| Gone | — | — | — |"]
    best = table[table.column == "Best"].set_index("row")
    assert best.loc["Ref", "name"] == "ref" and best.loc["Ref", "value"] == pytest.approx(85.0)
    assert (best.loc["Focus", "value"] == pytest.approx(65.0)
            and best.loc["Rand", "value"] == pytest.approx(45.0))
    assert pd.isna(best.loc["Gone", "value"])


def test_lapt_grid_table_loss_lower_is_better():
    from vocab_transfer.report.tables import lapt_table

    curves = pd.DataFrame({"run": ["a", "b", "c"], "language": ["de"] * 3, "step": [100] * 3,
                           "stage": [0] * 3, "heldout_loss": [2.0, 1.5, 3.0]})
    spec = {"languages": ["de"], "steps": [100], "value": "loss",
            "grid": {"columns": ["Embed", "All"],
                     "rows": {"Reinit": ["a", "b"], "Freq": [None, "c"], "Dict": ["d", None]}}}
    _, md = lapt_table(curves, spec, runs={})
    lines = md.splitlines()
    assert lines[0].startswith("**") and "de, held-out loss at step 100" in lines[0]
    assert lines[4:] == ["| Reinit | **2.00** | **1.50** |", "| Freq | — | 3.00 |", "| Dict | — | — |"]


def glue_scores():
    """MNLI rows with a mismatched evaluation set (m/mm) and MRPC rows scored by F1, two seeds each."""
    rows = []
    for model, seed, m, mm, f1 in [("base", 1, 0.840, 0.845, 0.90), ("base", 2, 0.844, 0.847, 0.89),
                                   ("keep", 1, 0.835, 0.836, 0.88), ("keep", 2, 0.837, 0.838, 0.86),
                                   ("reinit", 1, 0.820, 0.821, 0.89), ("reinit", 2, 0.820, 0.821, 0.87)]:
        common = {"source": "bert", "language": "en", "model": model, "method": model, "seed": seed}
        rows.append({**common, "task_name": "mnli", "task": "nli", "metric": "accuracy", "dev_accuracy": m,
                     "test_accuracy": m, "test_mismatched_accuracy": mm, "extra_test_sets": "mismatched"})
        rows.append({**common, "task_name": "mrpc", "task": "nli", "metric": "f1", "dev_f1": f1,
                     "test_f1": f1, "test_accuracy": 0.5, "extra_test_sets": ""})
    return pd.DataFrame(rows)


def test_mnli_cells_show_matched_and_mismatched_with_the_best_of_a_group_bold():
    """vocab-swap Tables 1/6/7: "0.842/0.846 (±0.004/0.004)" cells, the best scheme bold, the Bert Baseline
    (the reference, outside best_groups) never bold although higher, a cell without runs "—"."""
    spec = {"title": "T1", "tasks": ["mnli"], "format": "fraction",
            "best_groups": [["75% Kept", "Reinit", "Permute"]],
            "grid": {"columns": ["Embed 1e-4"], "rows": {"Bert Baseline": ["base"], "75% Kept": ["keep"],
                                                         "Reinit": ["reinit"], "Permute": ["permute"]}}}
    table, md = paper_table(glue_scores(), spec, models={}, tasks={"mnli": "MNLI (m/mm)"})
    lines = md.splitlines()
    assert lines[2] == "| MNLI (m/mm) | Embed 1e-4 |"
    assert lines[4:] == ["| Bert Baseline | 0.842/0.846 (±0.003/0.001) |",
                         "| 75% Kept | **0.836/0.837 (±0.001/0.001)** |",
                         "| Reinit | 0.820/0.821 (±0.000/0.000) |",
                         "| Permute | — |"]
    assert table.set_index("row")["value"]["Bert Baseline"] == pytest.approx(84.2)
    _, md = paper_table(glue_scores(), {**spec, "format": "percent", "best_groups": None}, models={},
                        tasks={})
    assert "| Bert Baseline | **84.2/84.6 ± 0.3/0.1** |" in md  # one group of all rows: the baseline is best


def test_model_rows_table_bold_per_group_and_f1_cells():
    """vocab-swap Tables 2/10: models as rows, tasks as columns; the best swapped model and the best reference
    model are bold; MRPC cells are the F1 the task was selected on."""
    spec = {"title": "T2", "groups": {"": ["mrpc", "mnli"]}, "format": "fraction",
            "best_groups": [["keep", "reinit"], ["base"]]}
    _, md = paper_table(glue_scores(), spec,
                        models={"base": "roberta-base", "keep": "Dict", "reinit": "Reinit"},
                        tasks={"mrpc": "MRPC (F1)", "mnli": "MNLI"})
    lines = md.splitlines()
    assert lines[2] == "| Model | MRPC (F1) | MNLI |"
    assert lines[4] == "| roberta-base | **0.895 (±0.007)** | **0.842/0.846 (±0.003/0.001)** |"
    assert lines[5] == "| Dict | 0.870 (±0.014) | **0.836/0.837 (±0.001/0.001)** |"
    assert lines[6] == "| Reinit | **0.880 (±0.014)** | 0.820/0.821 (±0.000/0.000) |"
    with pytest.raises(ValueError, match="table format must be one of"):
        paper_table(glue_scores(), {**spec, "format": "permille"}, models={"base": "b"}, tasks={})


def test_zero_shot_cells_average_source_languages_or_pick_one():
    """unks-everywhere Table 3: a zero-shot cell is the mean over seeds and source languages; Tables 5a-d pick
    one source language (``source_languages``); in-language rows are kept either way. A cell's rows (seeds x
    source tasks) come from one file with a ``seed`` column; fine-tuning rows from a file per seed."""
    rows = [{"source": "s", "task_name": "am-ner", "language": "am", "task": "ner", "model": "el-lex",
             "method": "el", "metric": "f1", "seed": seed, "dev_f1": f1, "test_f1": f1, "zero_shot": True,
             "source_task": f"{lang}-ner", "source_language": lang}
            for lang, base in (("en", 0.5), ("ar", 0.3)) for seed, f1 in ((1, base), (2, base + 0.1))]
    df = pd.concat([pd.DataFrame(rows), scores()], ignore_index=True)
    spec = {"rows": ["el-lex", "focus"], "groups": {"": ["am-ner", "ner-a"]}}
    table, _ = paper_table(df, spec, models={}, tasks={})
    cell = table.set_index(["model", "task_name"])
    assert (cell.loc[("el-lex", "am-ner"), "test_mean"] == 45.0
            and cell.loc[("el-lex", "am-ner"), "seeds"] == 2)
    # the std is over the seeds' source-averaged scores (40, 50), not over the four runs (50, 60, 30, 40)
    assert cell.loc[("el-lex", "am-ner"), "test_std"] == pytest.approx(7.0711, abs=1e-4)
    summary = finetune_table(df).set_index(["model", "task_name"])  # make_finetune_table: the same cell
    assert (summary.loc[("el-lex", "am-ner"), "seeds"] == 2
            and summary.loc[("el-lex", "am-ner"), "test_mean"] == 45.0)
    assert summary.loc[("el-lex", "am-ner"), "test_std"] == pytest.approx(7.0711, abs=1e-4)
    table, md = paper_table(df, {**spec, "source_languages": ["ar"]}, models={}, tasks={})
    cell = table.set_index(["model", "task_name"])
    assert round(cell.loc[("el-lex", "am-ner"), "test_mean"], 6) == 35.0
    assert cell.loc[("focus", "ner-a"), "test_mean"] == 65.0  # not zero-shot: untouched


def _header_cells(md: str) -> list[list[str]]:
    """The header cells of every Markdown table in ``md`` (the line before each |---| rule)."""
    lines = md.splitlines()
    return [[c.strip() for c in lines[i - 1].strip().strip("|").split("|")][1:]
            for i, line in enumerate(lines) if line.startswith("|---")]


def _repeats(header: str, part: str) -> bool:
    import re

    words = re.findall(r"\w+", header.lower())
    return any(words.count(w) > 1 for w in re.findall(r"\w+", part.lower()))


def test_column_header_names_metric_and_group_once():
    from vocab_transfer.report.tables import column_header

    assert column_header("STSB (Pearson)", metric="pearson") == "STSB (Pearson)"
    assert column_header("MRPC (F1)", metric="f1") == "MRPC (F1)"
    assert column_header("MNLI (m/mm Acc.)", metric="accuracy") == "MNLI (m/mm Acc.)"  # "Acc." abbreviates it
    assert column_header("Hebrew NER", metric="f1") == "Hebrew NER (f1)"
    assert column_header("a", group="NER") == "NER a" and column_header("NER de", group="ner") == "NER de"
    assert column_header("XNLI de", group="XNLI", metric="accuracy") == "XNLI de (accuracy)"


def test_finetune_and_paper_table_headers_never_repeat_metric_or_group():
    from vocab_transfer.report.tables import finetune_markdown

    glue = glue_scores()
    sts = glue[glue.task_name == "mrpc"].assign(task_name="stsb", task="sts", metric="pearson",
                                                dev_pearson=lambda d: d["dev_f1"],
                                                test_pearson=lambda d: d["test_f1"])
    df = pd.concat([glue, sts], ignore_index=True)  # the metrics: stsb pearson, mrpc f1, mnli accuracy
    tasks = {"stsb": "STSB (Pearson)", "mrpc": "MRPC (F1)", "mnli": "MNLI (m/mm Acc.)"}
    md = finetune_markdown(finetune_table(df), models={"keep": "Dict Match", "base": "Base"}, tasks=tasks)
    metrics = dict(zip(df["task_name"], df["metric"], strict=True))
    head = _header_cells(md)[0]
    assert head[:3] == ["STSB (Pearson)", "MRPC (F1)", "MNLI (m/mm Acc.)"]
    assert not any(_repeats(h, metrics[t]) for h, t in zip(head, tasks, strict=True))
    spec = {"title": "T", "groups": {"MRPC": ["mrpc"], "GLUE": ["mnli"], "Pearson": ["stsb"]}}
    _, md = paper_table(df, spec, models={"keep": "Dict Match", "base": "Base"}, tasks=tasks)
    head = _header_cells(md)[0]
    assert head == ["MRPC (F1)", "GLUE MNLI (m/mm Acc.)", "STSB (Pearson)"]
    assert not any(_repeats(h, g) or _repeats(h, metrics[t])
                   for h, (g, names) in zip(head, spec["groups"].items(), strict=True) for t in names)


def test_printed_ties_are_all_bold():
    from vocab_transfer.report.tables import best_cells, printed_best

    assert printed_best({"a": 1.004, "b": 0.996, "c": 1.2, "d": None}, higher=False,
                        number="{:.2f}".format) == {"a", "b"}  # both print 1.00
    assert printed_best({"a": 1.004, "b": 0.996}, higher=False) == {"b"}  # compared exactly
    assert printed_best({"a": float("nan")}, higher=True) == set()
    assert best_cells({("x", "c"): 84.24, ("y", "c"): 84.16, ("z", "c"): 80.0}, None, higher=True,
                      number=lambda v: f"{v:.1f}") == {("x", "c"), ("y", "c")}


def test_tied_means_are_bold_in_finetune_paper_and_lapt_tables():
    from vocab_transfer.report.tables import finetune_markdown, lapt_table

    df = scores()
    # mean 65.0 as focus's (0.60, 0.70), printed 65.0
    df.loc[df.model == "random", "test_f1"] = [0.65004, 0.64996]
    md = finetune_markdown(finetune_table(df), models={"focus": "FOCUS", "random": "Random"},
                           tasks={"ner-a": "a"})
    assert "| FOCUS | **65.0 ± 7.1** |" in md and "| Random | **65.0 ± 0.0** |" in md
    _, md = paper_table(df, {"rows": ["focus", "random"], "groups": {"": ["ner-a"]}, "format": "fraction"},
                        models={}, tasks={})
    assert md.count("**0.650") == 2
    curves = pd.DataFrame([{"run": r, "language": "de", "step": 10, "stage": 1, "heldout_loss": loss}
                           for r, loss in (("a", 1.0041), ("b", 0.9962), ("c", 2.0))])
    _, md = lapt_table(curves, {"languages": ["de"], "steps": [10], "value": "loss"},
                       runs={r: r for r in "abc"})
    assert md.count("**1.00**") == 2 and "| c | 2.00 |" in md


def test_tied_values_are_bold_in_init_tables():
    from vocab_transfer.report.tables import init_loss_markdown, init_loss_table, init_table

    results = pd.DataFrame([{"source": "s", "target": "de", "method": m, "mlm_loss": v, "perplexity": v,
                             "masked_tokens": 10} for m, v in (("a", 3.001), ("b", 2.996), ("c", 4.0))])
    md = init_table(results, {"rows": ["a", "b", "c"], "languages": ["de"]}, labels={})[1]
    assert md.count("**3.00**") == 2 and "| c | 4.00 |" in md
    table = init_loss_table(results, method_labels={"a": "A", "b": "B", "c": "C"}, in_pretraining={})
    md = init_loss_markdown(table, methods=["a", "b", "c"], targets=["de"], values=("mlm_loss",))
    assert md.count("**3.00**") == 2


PAPER_LABELS = {"reinit_embed": "Reinit Embed", "freq_match": "Freq Match", "dict_match": "Dict Match",
                "align_match": "Align Match"}  # vocab-swap §2.1's names of its schemes


@pytest.mark.parametrize("name", ["vocab_swap", "vocab_swap_frankenbert", "vocab_swap_frankenberta",
                                  "vocab_swap_recovery"])
def test_vocab_swap_configs_name_each_method_by_its_one_label(name):
    """A scheme reads alike in every row: its method's label, which its LAPT runs, fine-tuned models and grid
    rows begin with (no "Dict" beside "Reinit Embed", no "Embed Reinit" beside "Reinit Embed")."""
    from pathlib import Path

    import yaml

    cfg = yaml.safe_load((Path(__file__).parents[1] / "configs" / f"{name}.yaml").read_text())
    methods = {m: spec["label"] for m, spec in cfg["methods"].items() if spec["kind"] in PAPER_LABELS}
    assert all(label == PAPER_LABELS[cfg["methods"][m]["kind"]] for m, label in methods.items())
    runs = (cfg.get("lapt") or {}).get("runs") or {}
    # a run that re-initializes every weight is the paper's "Scratch", whatever its embedding rows' method
    run_method = {r: None if spec.get("reinit") == "all" else spec["method"] for r, spec in runs.items()}
    rows = [(spec["label"], run_method[r]) for r, spec in runs.items() if "label" in spec]
    rows += [(spec["label"], run_method[spec["lapt"]]) for spec in cfg["finetune"]["models"].values()
             if "label" in spec and spec.get("lapt") in run_method]
    for label, method in rows:
        if method in methods:
            assert label.split(",")[0] == methods[method], label
    grid_rows = [row for t in (cfg.get("tables") or {}).values() if "grid" in t
                 for row in dict(t["grid"]["rows"])]
    words = {w for label in PAPER_LABELS.values() for w in label.split()} - {"Match", "Embed"}
    assert all(row.split(",")[0] in PAPER_LABELS.values() for row in grid_rows
               if set(row.split()) & words), grid_rows


def test_every_table_label_is_the_entry_label_or_its_name():
    """Tables, figures and the benchmark report name a method, run, model or task by one function
    (label_of)."""
    from types import SimpleNamespace

    from vocab_transfer.workflow.plan.base import label_of

    assert label_of("dict", SimpleNamespace(label="Dict Match")) == "Dict Match"
    assert label_of("dict", SimpleNamespace(label=None)) == "dict" and label_of("dict", None) == "dict"

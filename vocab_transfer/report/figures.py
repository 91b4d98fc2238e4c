"""The data behind the paper figures of rule plot_figure (config `figures` of kind curves, init_similarity,
unk_scatter, sample_efficiency: WECHSEL Figures 3-6, UNKs Everywhere Figures 2-3), one entry of
:data:`FIGURES` per kind: what the kind reads from its inputs (a table), how it is drawn (:mod:`.plots`) and
what the job logs of it.

``inputs``: the rule's input files by name; ``manifest``: what each input is (``[{"input": name, "kind": ...,
"run": ..., "language": ...}]``), from the rule's params (vocab_transfer/workflow/plan/figures.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import pandas as pd

from .. import lazy
from ..io import read_tensors
from ..source_model import read_input_embeddings
from .plots import plot_init_similarity, plot_run_curves, plot_sample_efficiency, plot_unk_scatter

torch = lazy.module("torch")


def curves(inputs, manifest) -> pd.DataFrame:
    """The last record per step of each run's curve (after a two-stage boundary: the second stage's), with the
    perplexity beside the loss."""
    frames = []
    for rec in manifest:
        curve = pd.read_parquet(inputs[rec["input"]]).sort_values(["step", "stage"]).groupby("step").last()
        if "heldout_bits_per_byte" not in curve:  # curves written without it
            curve["heldout_bits_per_byte"] = float("nan")
        curve = curve.reset_index()[["step", "heldout_loss", "heldout_bits_per_byte"]]
        frames.append(curve.rename(columns={"heldout_loss": "loss",
                                            "heldout_bits_per_byte": "bits_per_byte"}).assign(
            perplexity=lambda d: d["loss"].map(lambda v: math.exp(min(v, 50.0))), run=rec["run"],
            label=rec["label"], language=rec["language"]))
    return pd.concat(frames, ignore_index=True)


def similarities(inputs, manifest) -> pd.DataFrame:
    """Per token: the cosine similarity of its input embedding after LAPT to its initialization (the init
    tensor's embedding columns; an output-bias column is left out)."""
    frames = []
    for rec in (r for r in manifest if r["kind"] == "model"):
        init_rec = next(r for r in manifest if r["kind"] == "init" and r["run"] == rec["run"]
                        and r["language"] == rec["language"])
        trained = read_input_embeddings(inputs[rec["input"]]).float()
        init = read_tensors(inputs[init_rec["input"]])["embeddings"].float()[:, : trained.shape[1]]
        n = min(len(trained), len(init))
        cosine = torch.nn.functional.cosine_similarity(trained[:n], init[:n], dim=1)
        frames.append(pd.DataFrame({"token_id": range(n), "cosine": cosine.numpy(), "run": rec["run"],
                                    "label": rec["label"], "language": rec["language"]}))
    return pd.concat(frames, ignore_index=True)


def unk_points(inputs, manifest) -> pd.DataFrame:
    """Per task language: the model's mean test score (over seeds and, for zero-shot cells, source tasks; in
    %) and the UNK and overlap shares of the language's tokenizer (vocab_transfer.report.vocab_tables)."""
    from ..data.tokenizer import load_tokenizer
    from .vocab_tables import vocab_coverage_table

    source = load_tokenizer(next(inputs[r["input"]] for r in manifest if r["kind"] == "source"))
    rows = []
    for task in dict.fromkeys(r["task"] for r in manifest if r["kind"] == "scores"):
        recs = [r for r in manifest if r.get("task") == task]
        scores = pd.concat([pd.read_parquet(inputs[r["input"]]) for r in recs if r["kind"] == "scores"])
        lang, metric = recs[0]["language"], scores["metric"].iloc[0]
        tokenizer = load_tokenizer(next(inputs[r["input"]] for r in recs if r["kind"] == "tokenizer"))
        overlap = pd.read_parquet(next(inputs[r["input"]] for r in recs if r["kind"] == "overlap"))
        coverage, _ = vocab_coverage_table([lang], {lang: tokenizer}, source, {lang: overlap}, "")
        scale = 1.0 if scores["task"].iloc[0] == "qa" else 100.0
        rows.append({"task": task, "language": lang, "metric": metric, "runs": len(scores),
                     "score": scale * scores[f"test_{metric}"].mean(),
                     **coverage.iloc[0][["unk_share", "overlap_share"]].to_dict()})
    return pd.DataFrame(rows)


def efficiency_points(inputs, manifest) -> pd.DataFrame:
    """Per series model: the training sequences of its LAPT runs (their curves; the mean over the task
    languages) and its test score (in %) averaged over tasks, seeds and, for zero-shot cells, source tasks."""
    rows = []
    for (series, model), recs in pd.DataFrame(manifest).groupby(["series", "model"], sort=False):
        curves = [pd.read_parquet(inputs[r]) for r in recs[recs["kind"] == "curve"]["input"]]
        scores = pd.concat([pd.read_parquet(inputs[r]) for r in recs[recs["kind"] == "scores"]["input"]])
        metric = scores["metric"].iloc[0]
        scale = 1.0 if scores["task"].iloc[0] == "qa" else 100.0
        seen = [c["train_sequences"].max() if "train_sequences" in c else float("nan") for c in curves]
        rows.append({"series": series, "model": model, "metric": metric,
                     "train_sequences": sum(seen) / len(seen),
                     "score": scale * scores[f"test_{metric}"].mean(), "runs": len(scores)})
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class FigureKind:
    """One kind of figure: its table from the inputs, its plot (:mod:`.plots`; also given the spec's
    ``options`` keys, else their defaults) and the job's log line (of the table, spec and plot's return)."""

    table: Callable[[dict, list], pd.DataFrame]
    plot: Callable[..., object]
    describe: Callable[[pd.DataFrame, dict, object], str]
    options: dict = field(default_factory=dict)


FIGURES: dict[str, FigureKind] = {
    "curves": FigureKind(
        curves, plot_run_curves,
        lambda t, spec, _: f"last {spec.get('value', 'perplexity')} per run and language:\n"
                           + t.groupby(["language", "label"])[spec.get("value", "perplexity")].last()
                           .to_string(),
        {"value": "perplexity"}),
    "sample_efficiency": FigureKind(
        efficiency_points, plot_sample_efficiency,
        lambda t, spec, _: "mean score per series and LAPT data:\n" + t.to_string(index=False)),
    "unk_scatter": FigureKind(
        unk_points, plot_unk_scatter,
        lambda t, spec, rho: (f"Pearson's rho of the score with the UNK share {rho['unk_share']:.3f}, with "
                              f"the overlap share {rho['overlap_share']:.3f}\n" + t.to_string(index=False))),
    "init_similarity": FigureKind(
        similarities, plot_init_similarity,
        lambda t, spec, _: "median cosine similarity to the init:\n"
                           + t.groupby(["language", "label"])["cosine"].median().to_string()),
}


def draw_figure(spec: dict, inputs: dict, manifest: list,
                png: str, svg: str | None) -> tuple[pd.DataFrame, str]:
    """The figure of ``spec`` (its ``kind``, one of :data:`FIGURES`) drawn to ``png`` and ``svg``: its table
    and the job's log line."""
    kind = FIGURES[spec["kind"]]
    table = kind.table(inputs, manifest)
    drawn = kind.plot(table, png, title=spec["title"], svg=svg,
                      **{k: spec.get(k, default) for k, default in kind.options.items()})
    return table, kind.describe(table, spec, drawn)

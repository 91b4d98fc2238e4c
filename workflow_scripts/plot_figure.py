"""A paper figure (rule plot_figure; config `figures` of kind curves, init_similarity, unk_scatter or
sample_efficiency): WECHSEL Figures 3-5 (held-out perplexity over steps) and 6 (cosine similarity of embeddings to
their init); UNKs Everywhere Figures 2 (test score against the UNK share of each language's vocabulary) and 3 (test
score against the amount of LAPT data)."""

from vocab_transfer.workflow.warm import handoff

handoff()  # a local run's job continues forked from the run's starter (vocab_transfer/workflow/warm.py)

import json
import math

import pandas as pd
import torch

from vocab_transfer.io import read_tensors, write_text
from vocab_transfer.report.plots import (
    plot_init_similarity,
    plot_run_curves,
    plot_sample_efficiency,
    plot_unk_scatter,
)
from vocab_transfer.source_model import read_input_embeddings
from vocab_transfer.workflow.job import setup_job


def curves(inputs, manifest) -> pd.DataFrame:
    """The last record per step of each run's curve (after a two-stage boundary: the second stage's), with the
    perplexity beside the loss."""
    frames = []
    for rec in manifest:
        curve = pd.read_parquet(inputs[rec["input"]]).sort_values(["step", "stage"]).groupby("step").last()
        if "heldout_bits_per_byte" not in curve:  # curves written without it
            curve["heldout_bits_per_byte"] = float("nan")
        curve = curve.reset_index()[["step", "heldout_loss", "heldout_bits_per_byte"]]
        frames.append(curve.rename(columns={"heldout_loss": "loss", "heldout_bits_per_byte": "bits_per_byte"}).assign(
            perplexity=lambda d: d["loss"].map(lambda v: math.exp(min(v, 50.0))), run=rec["run"], label=rec["label"],
            language=rec["language"]))
    return pd.concat(frames, ignore_index=True)


def similarities(inputs, manifest) -> pd.DataFrame:
    """Per token: the cosine similarity of its input embedding after LAPT to its initialization (the init tensor's
    embedding columns; an output-bias column is left out)."""
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
    """Per task language: the model's mean test score (over seeds and, for zero-shot cells, source tasks; in %) and
    the UNK and overlap shares of the language's tokenizer (vocab_transfer.report.vocab_tables)."""
    from vocab_transfer.data.tokenizer import load_tokenizer
    from vocab_transfer.report.vocab_tables import vocab_coverage_table

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
    """Per series model: the training sequences of its LAPT runs (their curves; the mean over the task languages)
    and its test score (in %) averaged over tasks, seeds and, for zero-shot cells, source tasks."""
    rows = []
    for (series, model), recs in pd.DataFrame(manifest).groupby(["series", "model"], sort=False):
        curves = [pd.read_parquet(inputs[r]) for r in recs[recs["kind"] == "curve"]["input"]]
        scores = pd.concat([pd.read_parquet(inputs[r]) for r in recs[recs["kind"] == "scores"]["input"]])
        metric = scores["metric"].iloc[0]
        scale = 1.0 if scores["task"].iloc[0] == "qa" else 100.0
        seen = [c["train_sequences"].max() if "train_sequences" in c else float("nan") for c in curves]
        rows.append({"series": series, "model": model, "metric": metric, "train_sequences": sum(seen) / len(seen),
                     "score": scale * scores[f"test_{metric}"].mean(), "runs": len(scores)})
    return pd.DataFrame(rows)


def main(inputs, params, png, svg, csv, log_path):
    log = setup_job(log_path)
    spec, manifest = params["spec"], params["manifest"]
    if spec["kind"] == "curves":
        table = curves(inputs, manifest)
        plot_run_curves(table, png, value=spec.get("value", "perplexity"), title=spec["title"], svg=svg)
        log.info("last %s per run and language:\n%s", spec.get("value", "perplexity"),
                 table.groupby(["language", "label"])[spec.get("value", "perplexity")].last().to_string())
    elif spec["kind"] == "sample_efficiency":
        table = efficiency_points(inputs, manifest)
        plot_sample_efficiency(table, png, title=spec["title"], svg=svg)
        log.info("mean score per series and LAPT data:\n%s", table.to_string(index=False))
    elif spec["kind"] == "unk_scatter":
        table = unk_points(inputs, manifest)
        rho = plot_unk_scatter(table, png, title=spec["title"], svg=svg)
        log.info("Pearson's rho of the score with the UNK share %.3f, with the overlap share %.3f\n%s",
                 rho["unk_share"], rho["overlap_share"], table.to_string(index=False))
    else:
        table = similarities(inputs, manifest)
        plot_init_similarity(table, png, title=spec["title"], svg=svg)
        log.info("median cosine similarity to the init:\n%s",
                 table.groupby(["language", "label"])["cosine"].median().to_string())
    write_text(table.to_csv(index=False), csv)


main(dict(snakemake.input.items()), json.loads(snakemake.params.spec), snakemake.output.png, snakemake.output.svg,
     snakemake.output.csv, snakemake.log[0])

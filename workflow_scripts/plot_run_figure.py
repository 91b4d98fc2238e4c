"""A figure of LAPT runs (rule plot_run_figure; config `figures` of kind curves or init_similarity): WECHSEL
Figures 3-5 (held-out perplexity over steps) and Figure 6 (cosine similarity of embeddings to their init)."""

import json
import math

import pandas as pd
import torch

from vocab_transfer.io import read_tensors, write_text
from vocab_transfer.report.plots import plot_init_similarity, plot_run_curves
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


def main(inputs, params, png, svg, csv, log_path):
    log = setup_job(log_path)
    spec, manifest = params["spec"], params["manifest"]
    if spec["kind"] == "curves":
        table = curves(inputs, manifest)
        plot_run_curves(table, png, value=spec.get("value", "perplexity"), title=spec["title"], svg=svg)
        log.info("last %s per run and language:\n%s", spec.get("value", "perplexity"),
                 table.groupby(["language", "label"])[spec.get("value", "perplexity")].last().to_string())
    else:
        table = similarities(inputs, manifest)
        plot_init_similarity(table, png, title=spec["title"], svg=svg)
        log.info("median cosine similarity to the init:\n%s",
                 table.groupby(["language", "label"])["cosine"].median().to_string())
    write_text(table.to_csv(index=False), csv)


main(dict(snakemake.input.items()), json.loads(snakemake.params.spec), snakemake.output.png, snakemake.output.svg,
     snakemake.output.csv, snakemake.log[0])

"""vocab-swap Figures 2 and 5 for one (source, target): ρ̄ to the source during LAPT, and pairwise ρ̄ between
the LAPT'd embeddings over all tokens and the 50% most frequent (rule plot_embedding_correlation)."""

from vocab_transfer.warm import handoff

handoff()  # a local run's job continues forked from the run's starter (vocab_transfer/warm.py)

import json

import numpy as np
import pandas as pd

from vocab_transfer.data.shards import open_shard
from vocab_transfer.eval.correlation import correlation_matrix, top_fraction_rows
from vocab_transfer.io import write_text
from vocab_transfer.report.plots import last_per_step, plot_correlation_histograms, plot_embedding_correlation
from vocab_transfer.source_model import load_source_model
from vocab_transfer.workflow.job import setup_job


def main(inputs, manifest, wildcards, png, svg, hist, csv, log_path):
    log = setup_job(log_path)
    curves = pd.concat([pd.read_parquet(inputs[r["input"]]).assign(run=r["run"], label=r["label"])
                        for r in manifest if r["kind"] == "curve"], ignore_index=True)
    if "source_correlation" not in curves:
        curves["source_correlation"] = np.nan
    embeddings = {r["label"]: load_source_model(inputs[r["input"]]).get_input_embeddings().weight.detach()
                  for r in manifest if r["kind"] == "model"}
    counts = open_shard(inputs["heldout"], inputs["tokenizer"]).counts()  # held-out token frequencies
    top = top_fraction_rows(counts, 0.5)
    pairwise = {"ρ̄ after LAPT, all tokens": correlation_matrix(embeddings),
                "ρ̄ after LAPT, 50% most frequent tokens": correlation_matrix(embeddings, rows=top)}
    plot_embedding_correlation(curves, pairwise if len(embeddings) > 1 else {}, png, svg=svg,
                               title=f"Embedding correlation, {wildcards['target']} (source "
                                     f"{wildcards['source']})")
    plot_correlation_histograms(curves, hist, title="Per-token correlation with the source embedding, "
                                f"{wildcards['target']} (source {wildcards['source']})")
    rows = [{"kind": "to_source", "a": r.label, "b": "source", "step": int(r.step),
             "rho": r.source_correlation}
            for r in last_per_step(curves, by="run").sort_values(["run", "step"], kind="stable").itertuples()]
    for kind, m in zip(("pairwise_all", "pairwise_top50"), pairwise.values(), strict=True):
        rows += [{"kind": kind, "a": a, "b": b, "step": None, "rho": float(m.loc[a, b])}
                 for a in m.index for b in m]
    write_text(pd.DataFrame(rows).to_csv(index=False), csv)
    log.info("pairwise ρ̄ after LAPT (all tokens):\n%s",
             pairwise["ρ̄ after LAPT, all tokens"].round(3).to_string())


main(dict(snakemake.input.items()), json.loads(snakemake.params.manifest), dict(snakemake.wildcards.items()),
     snakemake.output.png, snakemake.output.svg, snakemake.output.hist, snakemake.output.csv,
     snakemake.log[0])

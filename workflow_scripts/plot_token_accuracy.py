"""vocab-swap Figure 6 for one (source, figure): held-out accuracy of the most frequent tokens during LAPT,
matched vs not matched by the initialization, and its distribution at chosen steps (rule
plot_token_accuracy)."""

from vocab_transfer.warm import handoff

handoff()  # a local run's job continues forked from the run's starter (vocab_transfer/warm.py)

import json

import pandas as pd

from vocab_transfer.io import write_text
from vocab_transfer.report.plots import (
    plot_token_accuracy,
    split_matched,
    token_accuracy_histograms,
    token_accuracy_means,
)
from vocab_transfer.workflow.job import setup_job


def main(inputs, spec, png, svg, csv, log_path):
    log = setup_job(log_path)
    matched = spec.get("matched", ["copied", "mapped"])
    table = pd.concat([split_matched(pd.read_parquet(inputs[f"accuracy__{run}"]),
                                     pd.read_parquet(inputs[f"provenance__{run}"]),
                                     matched).assign(run=run, label=label)
                       for run, label in spec["runs"]], ignore_index=True)
    means, hists = token_accuracy_means(table), token_accuracy_histograms(table, spec["steps"])
    plot_token_accuracy(means, hists, png, title=spec["title"], steps=spec["steps"],
                        max_step=spec.get("max_step"), svg=svg)
    out = pd.concat([means.assign(kind="mean"), hists.assign(kind="histogram")], ignore_index=True)
    write_text(out[["kind", *[c for c in out if c != "kind"]]].to_csv(index=False), csv)
    log.info("%s: token-wise mean accuracy (matched: provenance in %s)\n%s", spec["title"], matched,
             means[means["step"].isin(spec["steps"])].to_string(index=False))


main(dict(snakemake.input.items()), json.loads(snakemake.params.spec), snakemake.output.png,
     snakemake.output.svg, snakemake.output.csv, snakemake.log[0])

"""FOCUS Figure 2: held-out loss against LAPT samples, one line per method (rule plot_lapt_curves)."""

from vocab_transfer.warm import handoff

handoff()  # a local run's job continues forked from the run's starter (vocab_transfer/warm.py)

import json

import pandas as pd

from vocab_transfer.io import write_text
from vocab_transfer.report.plots import plot_lapt_curves
from vocab_transfer.workflow.job import setup_job


def main(inputs, manifest, wildcards, png, svg, csv, log_path):
    log = setup_job(log_path)
    frames = [pd.read_parquet(inputs[rec["input"]]).assign(run=rec["run"], label=rec["label"])
              for rec in manifest if rec["kind"] == "curve"]
    table = pd.concat(frames, ignore_index=True)
    plot_lapt_curves(table, png, title=f"LAPT on {wildcards['target']} (source {wildcards['source']})",
                     svg=svg)
    write_text(table.to_csv(index=False), csv)
    final = table.sort_values("step").groupby("label")["heldout_loss"].last()
    log.info("final held-out loss per method:\n%s", final.to_string())


main(dict(snakemake.input.items()), json.loads(snakemake.params.manifest), dict(snakemake.wildcards.items()),
     snakemake.output.png, snakemake.output.svg, snakemake.output.csv, snakemake.log[0])

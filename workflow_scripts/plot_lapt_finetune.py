"""vocab-swap Figures 4/8 for one (source, figure): held-out MLM loss during LAPT and the test score after
fine-tuning at LAPT snapshots and at the end of each run (rule plot_lapt_finetune; config `figures`)."""

from vocab_transfer.warm import handoff

handoff()  # a local run's job continues forked from the run's starter (vocab_transfer/warm.py)

import json

import pandas as pd

from vocab_transfer.io import write_text
from vocab_transfer.report.plots import lapt_finetune_table, plot_lapt_finetune
from vocab_transfer.workflow.job import setup_job


def main(inputs, manifest, spec, png, svg, csv, log_path):
    log = setup_job(log_path)
    curves = pd.concat([pd.read_parquet(inputs[r["input"]]).assign(run=r["run"]) for r in manifest
                        if r["kind"] == "curve"], ignore_index=True)
    scores = pd.concat([pd.read_parquet(inputs[r["input"]]) for r in manifest if r["kind"] == "scores"],
                       ignore_index=True)
    table = lapt_finetune_table(curves, scores, [tuple(p) for p in spec["points"]], dict(spec["runs"]))
    plot_lapt_finetune(table, png, title=spec["title"], task=spec["task"], svg=svg)
    write_text(table.to_csv(index=False), csv)
    log.info("%s: test scores at LAPT steps\n%s", spec["title"],
             table[table["kind"] != "heldout_loss"].drop(columns="kind").to_string(index=False))


main(dict(snakemake.input.items()), json.loads(snakemake.params.manifest), json.loads(snakemake.params.spec),
     snakemake.output.png, snakemake.output.svg,
     snakemake.output.csv, snakemake.log[0])

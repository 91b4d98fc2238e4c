"""One table in a paper's layout (rule make_paper_table; config `tables`): downstream scores, or LAPT
held-out perplexity at given steps (`kind: lapt`)."""

import json

import pandas as pd

from vocab_transfer.io import write_text
from vocab_transfer.tables import lapt_table, markdown_to_html, paper_table
from vocab_transfer.workflow.job import setup_job


def main(inputs, spec, meta, csv_path, md_path, html_path, log_path):
    log = setup_job(log_path)
    if spec.get("kind") == "lapt":
        frames = [pd.read_parquet(p).assign(run=key.split("__")[1], language=key.split("__")[2])
                  for key, p in inputs.items()]
        curves = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
        table, md = lapt_table(curves, spec, runs=dict(meta["runs"]))
    else:
        paths = [p for key, p in inputs.items() if key.startswith("scores__")]
        scores = pd.concat([pd.read_parquet(p) for p in paths], ignore_index=True) if paths else pd.DataFrame()
        table, md = paper_table(scores, spec, models=dict(meta["models"]), tasks=dict(meta["tasks"]))
    write_text(table.to_csv(index=False), csv_path)
    write_text(md, md_path)
    write_text(markdown_to_html(md, title=spec.get("title", "")), html_path)
    log.info("%s\n%s", spec.get("title", ""), md)


main(dict(snakemake.input.items()), json.loads(snakemake.params.spec), json.loads(snakemake.params.meta),
     snakemake.output.csv, snakemake.output.md, snakemake.output.html, snakemake.log[0])

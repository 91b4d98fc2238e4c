"""One table in a paper's layout (rule make_paper_table; config `tables`): downstream scores, or LAPT
held-out perplexity at given steps (`kind: lapt`)."""

import json

import pandas as pd

from vocab_transfer.io import write_text
from vocab_transfer.report.tables import lapt_table, markdown_to_html, paper_table
from vocab_transfer.workflow.job import setup_job


def main(inputs, manifest, spec, meta, csv_path, md_path, html_path, log_path):
    """``manifest``: what each input is (``[{"input": name, "run": ..., "language": ...}]``, kind lapt: curves;
    else fine-tuning scores), from the rule's params."""
    log = setup_job(log_path)
    frames = [pd.read_parquet(inputs[rec["input"]]).assign(**{k: v for k, v in rec.items() if k != "input"})
              for rec in manifest]
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if spec.get("kind") == "lapt":
        table, md = lapt_table(frame, spec, runs=dict(meta["runs"]))
    else:
        scores = frame
        table, md = paper_table(scores, spec, models=dict(meta["models"]), tasks=dict(meta["tasks"]))
    write_text(table.to_csv(index=False), csv_path)
    write_text(md, md_path)
    write_text(markdown_to_html(md, title=spec.get("title", "")), html_path)
    log.info("%s\n%s", spec.get("title", ""), md)


main(dict(snakemake.input.items()), json.loads(snakemake.params.manifest), json.loads(snakemake.params.spec),
     json.loads(snakemake.params.meta),
     snakemake.output.csv, snakemake.output.md, snakemake.output.html, snakemake.log[0])

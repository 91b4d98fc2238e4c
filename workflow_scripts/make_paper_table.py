"""One downstream table in a paper's layout (rule make_paper_table; config `tables`)."""

import json

import pandas as pd

from vocab_transfer.io import write_text
from vocab_transfer.tables import markdown_to_html, paper_table
from vocab_transfer.workflow import setup_job


def main(paths, spec, meta, csv_path, md_path, html_path, log_path):
    log = setup_job(log_path)
    scores = pd.concat([pd.read_parquet(p) for p in paths], ignore_index=True) if paths else pd.DataFrame()
    table, md = paper_table(scores, spec, models=meta["models"], tasks=meta["tasks"])
    write_text(table.to_csv(index=False), csv_path)
    write_text(md, md_path)
    write_text(markdown_to_html(md, title=spec.get("title", "Downstream results")), html_path)
    log.info("%s\n%s", spec.get("title", ""), md)


main(list(snakemake.input.scores), json.loads(snakemake.params.spec), json.loads(snakemake.params.meta),
     snakemake.output.csv, snakemake.output.md, snakemake.output.html, snakemake.log[0])

"""Collect init-time MLM losses into FOCUS Table 4 (rule make_init_table)."""

import json

import pandas as pd

from vocab_transfer.io import write_text
from vocab_transfer.report.tables import init_loss_markdown, init_loss_table, markdown_to_html
from vocab_transfer.workflow.job import setup_job


def main(paths, meta, csv_path, md_path, html_path, log_path):
    log = setup_job(log_path)
    table = init_loss_table(pd.concat([pd.read_parquet(p) for p in paths], ignore_index=True),
                            method_labels=meta["method_labels"], in_pretraining=meta["in_pretraining"])
    write_text(table.to_csv(index=False), csv_path)
    md = init_loss_markdown(table, methods=meta["methods"], targets=meta["targets"])
    write_text(md, md_path)
    write_text(markdown_to_html(md, title="FOCUS Table 4: MLM loss right after initialization"), html_path)
    log.info("table written to %s and %s\n%s", csv_path, md_path, md)


main(list(snakemake.input.results), json.loads(snakemake.params.meta), snakemake.output.csv, snakemake.output.md, snakemake.output.html,
     snakemake.log[0])

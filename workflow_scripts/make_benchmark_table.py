"""Every benchmark score and the share of the source's score it keeps (rule make_benchmark_table)."""

import json

import pandas as pd

from vocab_transfer.io import write_text
from vocab_transfer.report.tables import benchmark_table
from vocab_transfer.workflow.job import setup_job


def main(paths, labels, csv_path, md_path, log_path):
    log = setup_job(log_path)
    scores = pd.concat([pd.read_parquet(p) for p in paths], ignore_index=True)
    long, md = benchmark_table(scores, {tuple(k.split("/", 1)): v for k, v in labels.items()})
    write_text(long.to_csv(index=False), csv_path)
    write_text(md, md_path)
    log.info("table written to %s and %s\n%s", csv_path, md_path, md)


main(list(snakemake.input.scores), json.loads(snakemake.params.labels), snakemake.output.csv, snakemake.output.md,
     snakemake.log[0])

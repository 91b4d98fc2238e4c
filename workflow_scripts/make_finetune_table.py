"""Collect fine-tuning scores into mean ± std per (task, model) (rule make_finetune_table), with the table's
provenance."""

from vocab_transfer.warm import handoff

handoff()  # a local run's job continues forked from the run's starter (vocab_transfer/warm.py)

import json

from vocab_transfer.io import write_parquet, write_text
from vocab_transfer.report.provenance import ARTIFACT, finetune_cells, read_tagged, write_provenance
from vocab_transfer.report.tables import finetune_markdown, finetune_table, markdown_to_html
from vocab_transfer.workflow.job import setup_job


def main(paths, meta, csv_path, md_path, html_path, parquet_path, provenance_path, log_path):
    log = setup_job(log_path)
    tagged = read_tagged(paths)
    scores = tagged.drop(columns=ARTIFACT)
    write_parquet(scores, parquet_path)
    table = finetune_table(scores)
    write_provenance(finetune_cells(table, tagged), "finetune", provenance_path)
    write_text(table.to_csv(index=False), csv_path)
    md = finetune_markdown(table, models=dict(meta["models"]), tasks=dict(meta["tasks"]))
    write_text(md, md_path)
    write_text(markdown_to_html(md, title="Downstream fine-tuning"), html_path)
    log.info("%d runs; table written to %s and %s (provenance: %s)\n%s", len(scores), csv_path, md_path,
             provenance_path, md)


main(list(snakemake.input.scores), json.loads(snakemake.params.meta), snakemake.output.csv,
     snakemake.output.md, snakemake.output.html, snakemake.output.parquet, snakemake.output.provenance,
     snakemake.log[0])

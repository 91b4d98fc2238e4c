"""Collect init-time MLM losses into FOCUS Table 4 (rule make_init_table), with the table's provenance."""

from vocab_transfer.warm import handoff

handoff()  # a local run's job continues forked from the run's starter (vocab_transfer/warm.py)

import json

from vocab_transfer.io import write_text
from vocab_transfer.report.provenance import ARTIFACT, init_loss_cells, read_tagged, write_provenance
from vocab_transfer.report.tables import init_loss_markdown, init_loss_table, markdown_to_html
from vocab_transfer.workflow.job import setup_job


def main(paths, meta, csv_path, md_path, html_path, provenance_path, log_path):
    log = setup_job(log_path)
    results = read_tagged(paths)
    table = init_loss_table(results.drop(columns=ARTIFACT), method_labels=meta["method_labels"],
                            in_pretraining=meta["in_pretraining"])
    write_provenance(init_loss_cells(table, results), "init_mlm_loss", provenance_path)
    write_text(table.to_csv(index=False), csv_path)
    md = init_loss_markdown(table, methods=meta["methods"], targets=meta["targets"])
    write_text(md, md_path)
    write_text(markdown_to_html(md, title="FOCUS Table 4: MLM loss right after initialization"), html_path)
    log.info("table written to %s and %s (provenance: %s)\n%s", csv_path, md_path, provenance_path, md)


main(list(snakemake.input.results), json.loads(snakemake.params.meta), snakemake.output.csv,
     snakemake.output.md, snakemake.output.html, snakemake.output.provenance, snakemake.log[0])

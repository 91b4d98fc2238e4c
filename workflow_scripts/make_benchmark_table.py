"""Every benchmark score and the share of the source's score it keeps (rule make_benchmark_table), with the
table's provenance."""

from vocab_transfer.warm import handoff

handoff()  # a local run's job continues forked from the run's starter (vocab_transfer/warm.py)

import json

from vocab_transfer.io import write_text
from vocab_transfer.report.provenance import ARTIFACT, benchmark_cells, read_tagged, write_provenance
from vocab_transfer.report.tables import benchmark_table, markdown_to_html
from vocab_transfer.workflow.job import setup_job


def main(paths, labels, csv_path, md_path, html_path, provenance_path, log_path):
    log = setup_job(log_path)
    long, md = benchmark_table(read_tagged(paths), {tuple(k.split("/", 1)): v for k, v in labels.items()})
    write_provenance(benchmark_cells(long), "benchmarks", provenance_path)
    write_text(long.drop(columns=ARTIFACT).to_csv(index=False), csv_path)
    write_text(md, md_path)
    write_text(markdown_to_html(md, title="lm-eval benchmarks"), html_path)
    log.info("table written to %s, %s and %s (provenance: %s)\n%s", csv_path, md_path, html_path,
             provenance_path, md)


main(list(snakemake.input.scores), json.loads(snakemake.params.labels), snakemake.output.csv,
     snakemake.output.md, snakemake.output.html, snakemake.output.provenance, snakemake.log[0])

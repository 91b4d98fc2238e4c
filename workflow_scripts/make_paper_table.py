"""One table in a paper's layout (rule make_paper_table; config `tables`), drawn as its kind says
(vocab_transfer.workflow.table_kinds): downstream scores, LAPT held-out perplexity at given steps, init-time
values, or a corpus / vocabulary table; with the table's provenance (vocab_transfer.report.provenance)."""

from vocab_transfer.warm import handoff

handoff()  # a local run's job continues forked from the run's starter (vocab_transfer/warm.py)

import json
import os

from vocab_transfer.io import write_text
from vocab_transfer.report.provenance import write_provenance
from vocab_transfer.report.tables import markdown_to_html
from vocab_transfer.workflow.job import setup_job
from vocab_transfer.workflow.table_kinds import TABLE_KINDS


def main(inputs, manifest, spec, meta, csv_path, md_path, html_path, provenance_path, log_path):
    """``manifest``: what each input is (``[{"input": name, ...}]``: the records its kind planned), from the
    rule's params."""
    log = setup_job(log_path)
    table, md, entries = TABLE_KINDS[spec.get("kind", "finetune")].render(inputs, manifest, spec, meta)
    write_provenance(entries, name_of(csv_path), provenance_path)
    write_text(table.to_csv(index=False), csv_path)
    write_text(md, md_path)
    write_text(markdown_to_html(md, title=spec.get("title", "")), html_path)
    log.info("%s (provenance: %s)\n%s", spec.get("title", ""), provenance_path, md)


def name_of(path: str) -> str:
    """The table's name: its file's name without the extension (the config's key)."""
    return os.path.basename(path).rpartition(".")[0]


main(dict(snakemake.input.items()), json.loads(snakemake.params.manifest), json.loads(snakemake.params.spec),
     json.loads(snakemake.params.meta), snakemake.output.csv, snakemake.output.md, snakemake.output.html,
     snakemake.output.provenance, snakemake.log[0])

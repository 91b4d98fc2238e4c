"""One table in a paper's layout (rule make_paper_table; config `tables`): downstream scores, LAPT held-out
perplexity at given steps (`kind: lapt`), or a corpus / vocabulary table (vocab_transfer.report.vocab_tables);
with the table's provenance (vocab_transfer.report.provenance)."""

from vocab_transfer.workflow.warm import handoff

handoff()  # a local run's job continues forked from the run's starter (vocab_transfer/workflow/warm.py)

import json
import os

import pandas as pd

from vocab_transfer.io import write_text
from vocab_transfer.report import provenance as prov
from vocab_transfer.report import vocab_tables as vt
from vocab_transfer.report.tables import init_table, lapt_table, markdown_to_html, paper_table
from vocab_transfer.workflow.job import setup_job
from vocab_transfer.workflow.model import VOCAB_TABLE_KINDS


def main(inputs, manifest, spec, meta, csv_path, md_path, html_path, provenance_path, log_path):
    """``manifest``: what each input is (``[{"input": name, "run": ..., "language": ...}]``, kind lapt:
    curves; corpus/vocabulary kinds: ``what`` it is; else fine-tuning scores), from the rule's params."""
    log = setup_job(log_path)
    kind = spec.get("kind")
    if kind in VOCAB_TABLE_KINDS:
        table, md = vt.vocab_table(inputs, manifest, spec, meta.get("fasttext_min_count"))
        files = pd.DataFrame([{prov.ARTIFACT: inputs[rec["input"]],
                               **{k: v for k, v in rec.items() if k != "input"}} for rec in manifest])
        entries = prov.vocab_cells(kind, table, files)
    else:
        frames = [pd.read_parquet(inputs[rec["input"]]).assign(
            **{k: v for k, v in rec.items() if k != "input"}, **{prov.ARTIFACT: inputs[rec["input"]]})
                  for rec in manifest]
        tagged = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame({prov.ARTIFACT: []})
        frame = tagged.drop(columns=prov.ARTIFACT)
        if kind == "lapt":
            table, md = lapt_table(frame, spec, runs=dict(meta["runs"]))
            entries = prov.lapt_cells(table, tagged, spec)
        elif kind == "init":
            table, md = init_table(frame, spec, labels=dict(meta["methods"]))
            entries = prov.init_table_cells(table, tagged, spec)
        else:
            table, md = paper_table(frame, spec, models=dict(meta["models"]), tasks=dict(meta["tasks"]))
            entries = prov.paper_cells(table, tagged, spec)
    prov.write_provenance(entries, name_of(csv_path), provenance_path)
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

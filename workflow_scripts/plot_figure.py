"""A paper figure (rule plot_figure; config `figures` of kind curves, init_similarity, unk_scatter or
sample_efficiency), drawn by its kind's entry of vocab_transfer.report.figures.FIGURES."""

from vocab_transfer.warm import handoff

handoff()  # a local run's job continues forked from the run's starter (vocab_transfer/warm.py)

import json

from vocab_transfer.io import write_text
from vocab_transfer.report.figures import draw_figure
from vocab_transfer.workflow.job import setup_job


def main(inputs, params, png, svg, csv, log_path):
    log = setup_job(log_path)
    table, described = draw_figure(params["spec"], inputs, params["manifest"], png, svg)
    log.info("%s", described)
    write_text(table.to_csv(index=False), csv)


main(dict(snakemake.input.items()), json.loads(snakemake.params.spec), snakemake.output.png,
     snakemake.output.svg, snakemake.output.csv, snakemake.log[0])

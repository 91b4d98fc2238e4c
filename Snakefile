# Transfer pretrained language models to new tokenizers: FOCUS, WECHSEL, UNKs Everywhere, vocab-swap.
# `snakemake --cores all` runs the embedded offline demo (config.yaml); see README.md.
from snakemake.utils import min_version

min_version("9.0")

# `snakemake --report results/report.zip` (or .html): every table and figure of the run, by paper, with
# captions; report/workflow.rst is the report's start page.
report: "report/workflow.rst"


# Software for every job (README.md, "Software deployment and lint"): `--sdm conda` builds the env each rule names
# (envs/vocab-transfer.yaml); `--sdm apptainer` runs each job in this image, built once from the Dockerfile: a path
# relative to the working directory, or a URI such as docker://<registry>/vocab-transfer:<tag>.
container: "vocab-transfer.sif"


# config.yaml is the embedded default; a --configfile (e.g. configs/focus.yaml) replaces it instead of
# being merged into it, so a paper config never inherits the demo's languages or methods.
if not workflow.config_settings.configfiles:

    configfile: "config.yaml"


# A composite config (configs/papers.yaml: `studies: [configs/focus.yaml, ...]`) runs each study as a module of this
# workflow, sharing what they name alike (rules/studies.smk); any other config is one study.
if "studies" in config:

    include: "rules/studies.smk"

    rule all:
        input:
            STUDY_OUTPUTS,
        default_target: True

else:

    include: "rules/study.smk"

    rule all:
        input:
            rules.make_init_table.output,
            plan.lapt_outputs(),
            plan.finetune_outputs(),
            plan.paper_table_outputs(),
            plan.paper_figure_outputs(),
            plan.benchmark_outputs(),
        default_target: True


# A SLURM job that runs a bundle of trainer jobs forks them from one warm starter inside its allocation
# (vocab_transfer/workflow/onstart.py: start_bundle_starter; nothing happens anywhere else).
import sys

from vocab_transfer.workflow.onstart import start_bundle_starter

start_bundle_starter(workflow, sys.argv)

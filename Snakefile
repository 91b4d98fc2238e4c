# Transfer pretrained language models to new tokenizers: FOCUS, WECHSEL, UNKs Everywhere, vocab-swap.
# `snakemake --cores all` runs the embedded offline demo (config.yaml); see README.md.
from snakemake.utils import min_version

min_version("9.0")


# Software for every job (README.md, "Software deployment and lint"): `--sdm conda` builds the env each rule names
# (envs/vocab-transfer.yaml); `--sdm apptainer` runs each job in this image, built once from the Dockerfile: a path
# relative to the working directory, or a URI such as docker://<registry>/vocab-transfer:<tag>.
container: "vocab-transfer.sif"


# config.yaml is the embedded default; a --configfile (e.g. configs/focus.yaml) replaces it instead of
# being merged into it, so a paper config never inherits the demo's languages or methods.
if not workflow.config_settings.configfiles:

    configfile: "config.yaml"


# `priority:` orders the jobs that are ready when cores are short (a laptop, the demo on 2 cores): the source model
# and what only it unblocks first (source tokenizer, its shards, pretraining: 100) and the target tokenizers (100:
# Snakemake starts a job that needs several threads only once that many cores are free at the same time, which never
# happens while one-thread jobs keep arriving), then each target's shards and token fastText (95: every init of the
# language waits for them, and a late one leaves a core idle at the end), then the long jobs, longest first
# (factorizations 90, LAPT 80, fine-tuning 70). Everything else is 0. A cluster runs ready jobs side by side anyway.
include: "rules/common.smk"
include: "rules/corpus.smk"
include: "rules/source.smk"
include: "rules/tokenizer.smk"
include: "rules/shards.smk"
include: "rules/fasttext.smk"
include: "rules/word_vectors.smk"
include: "rules/dictionary.smk"
include: "rules/overlap.smk"
include: "rules/init.smk"
include: "rules/eval.smk"
include: "rules/lapt.smk"
include: "rules/finetune.smk"
include: "rules/zeroshot.smk"
include: "rules/tables.smk"
include: "rules/export.smk"


for problem in res.check(config, [r.name for r in workflow.rules]):
    raise WorkflowError(f"config error: {problem}")


rule all:
    input:
        rules.make_init_table.output,
        plan.lapt_outputs(),
        plan.finetune_outputs(),
        plan.paper_table_outputs(),
        plan.paper_figure_outputs(),
    default_target: True

# One study: every rule of the workflow on one config (the Snakefile includes this for any config but a composite).
# `priority:` orders the jobs that are ready when cores are short (a laptop, the demo on 2 cores): the source model
# and what only it unblocks first (source tokenizer, its shards, pretraining: 100) and the target tokenizers (100:
# Snakemake starts a job that needs several threads only once that many cores are free at the same time, which never
# happens while one-thread jobs keep arriving), then each target's shards and token fastText (95: every init of the
# target waits for them, and a late one leaves a core idle at the end), then the long jobs, longest first
# (factorizations 90, LAPT 80, the source model's task training 75, fine-tuning 70), and the evaluations on the
# GPU partition with fine-tuning (70: left to the end, they and the tables waiting for them would run with the GPUs
# otherwise idle). Everything else is 0. A cluster runs ready jobs side by side, up to the profile's `jobs`.
include: "common.smk"
include: "corpus.smk"
include: "source.smk"
include: "tokenizer.smk"
include: "shards.smk"
include: "fasttext.smk"
include: "word_vectors.smk"
include: "dictionary.smk"
include: "overlap.smk"
include: "init.smk"
include: "eval.smk"
include: "lapt.smk"
include: "finetune.smk"
include: "zeroshot.smk"
include: "tables.smk"
include: "export.smk"


# resources.<rule> names a rule of this workflow (in a composite its rules are <study>_<rule>)
for problem in res.check(config, [r.name.removeprefix(f"{cfg.study}_") for r in workflow.rules]):
    raise WorkflowError(f"config error: {problem}")

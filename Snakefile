# Transfer pretrained language models to new tokenizers: FOCUS, WECHSEL, UNKs Everywhere, vocab-swap.
# `snakemake --cores all` runs the embedded offline demo (config.yaml); see README.md.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config.yaml"


include: "rules/common.smk"
include: "rules/corpus.smk"
include: "rules/source.smk"
include: "rules/tokenizer.smk"
include: "rules/fasttext.smk"
include: "rules/overlap.smk"
include: "rules/init.smk"
include: "rules/eval.smk"
include: "rules/tables.smk"


rule all:
    input:
        rules.make_init_table.output,
    default_target: True

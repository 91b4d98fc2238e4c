# Word-level static embeddings per language (WECHSEL §3; FOCUS Table 4 "Word-fastText"): trained with
# fastText on the language's corpus, or read from pretrained vectors named in config `word_vectors`.
# Input and params functions: vocab_transfer/workflow/plan/vectors.py (`plan.<name>`).
from vocab_transfer.data.word_vectors import FasttextCcVectors


# `localrule: True`: the download runs on the login node (compute nodes may have no internet).

rule build_word_vectors:
    input:
        unpack(plan.word_vector_inputs),
    output:
        vectors=paths.word_vectors("{lang}"),
        words=paths.word_list("{lang}"),
    params:
        spec=plan.word_vector_spec,
    threads: cfg.word_fasttext.threads
    log:
        logs("build_word_vectors/{lang}.log"),
    benchmark:
        benchmarks("build_word_vectors/{lang}.tsv")
    resources:
        **resources_of("build_word_vectors", word_fasttext_mem_mb, word_fasttext_gb),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/build_word_vectors.py"


# The fastText model itself (WECHSEL App. D, `subwords: fasttext`: token vectors from character n-grams): the
# word-level training saved as .bin (build_word_vectors then reads the language's vectors from it instead of
# training again); or a copy of the pretrained .bin named in config `word_vectors`.
rule save_word_fasttext_model:
    input:
        unpack(plan.word_model_inputs),
    output:
        model=paths.word_fasttext_model("{lang}"),
    params:
        spec=plan.word_vector_spec,
    threads: cfg.word_fasttext.threads
    log:
        logs("save_word_fasttext_model/{lang}.log"),
    resources:
        **resources_of("build_word_vectors", word_fasttext_mem_mb, word_fasttext_gb),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/save_word_fasttext_model.py"


# Cluster only (config `word_vectors: {<lang>: {source: fasttext_cc}}`): the 300-d Common Crawl vectors.
rule download_word_vectors:
    localrule: True
    output:
        paths.cc_word_vectors("{lang}"),
    params:
        url=FasttextCcVectors.url,
    log:
        logs("download_word_vectors/{lang}.log"),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/download_file.py"

# Source model: pretrained here (offline demo) or downloaded from the hub when the config names one.
# Input and params functions: vocab_transfer/workflow/plan/source.py (`plan.<name>`).


# `localrule: True`: the download runs on the login node (compute nodes may have no internet).

rule train_source_tokenizer:
    input:
        corpora=plan.source_corpora,
    output:
        tokenizer=directory(paths.source_tokenizer("{source}")),
    params:
        spec=plan.pretrain_spec,
    threads: plan.pretrain_tokenizer_threads
    priority: 210  # above any two one-thread jobs: see pretrain_source_model
    log:
        logs("train_source_tokenizer/{source}.log"),
    benchmark:
        benchmarks("train_source_tokenizer/{source}.tsv")
    resources:
        **resources_of("train_source_tokenizer"),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/train_source_tokenizer.py"


rule pretrain_source_model:
    input:
        tokenizer=paths.source_tokenizer("{source}"),
        corpora=plan.source_pretrain_shards,
        heldout=plan.source_pretrain_heldout,
    output:
        model=directory(paths.source_model("{source}")),
        curve=report(
            paths.pretrain_curve("{source}", "parquet"),
            category=plan.report_category,
            subcategory="Source model",
            caption="../report/pretrain_curve.rst",
            labels=plan.report_labels("figure", "{source}: pretraining loss curve, values (parquet)"),
        ),
        plot=report(
            paths.pretrain_curve("{source}", "png"),
            category=plan.report_category,
            subcategory="Source model",
            caption="../report/pretrain_curve.rst",
            labels=plan.report_labels("figure", "{source}: pretraining loss curve"),
        ),
    params:
        spec=plan.pretrain_spec,
        seed=cfg.seed,
    threads: plan.pretrain_threads
    # Snakemake's scheduler picks the ready jobs with the largest sum of priorities that fit the free cores, so on a
    # small machine a job of several threads must outrank any two one-thread jobs (priorities <= 100), or it waits
    # until nothing else is ready. The tokenizers (210) go first: a target tokenizer left for later waits for both
    # cores to be free at once, which happens only at the end of the run.
    priority: 205
    log:
        logs("pretrain_source_model/{source}.log"),
    benchmark:
        benchmarks("pretrain_source_model/{source}.tsv")
    resources:
        **resources_of("pretrain_source_model"),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/pretrain_source_model.py"


rule download_source_model:
    localrule: True
    wildcard_constraints:
        source=plan.hub_source_pattern(),
    output:
        model=directory(paths.downloaded_model("{source}")),
    params:
        repo=plan.source_hub_spec,
    log:
        logs("download_source_model/{source}.log"),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/download_source_model.py"

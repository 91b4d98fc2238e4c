# Source model: pretrained here (offline demo) or downloaded from the hub when the config names one.


rule train_source_tokenizer:
    input:
        corpora=source_corpora,
    output:
        tokenizer=directory("results/source/{source}/tokenizer"),
    params:
        spec=pretrain_spec,
    threads: 2
    log:
        "logs/train_source_tokenizer/{source}.log",
    benchmark:
        "benchmarks/out/train_source_tokenizer/{source}.tsv"
    script:
        "../workflow_scripts/train_source_tokenizer.py"


rule pretrain_source_model:
    input:
        tokenizer="results/source/{source}/tokenizer",
        corpora=source_corpora,
        heldout=source_heldout_corpora,
    output:
        model=directory("results/source/{source}/model"),
        curve=report(
            "results/source/{source}/pretrain_curve.parquet",
            category="Source model",
            caption="../report/pretrain_curve.rst",
        ),
        plot=report(
            "results/source/{source}/pretrain_curve.png",
            category="Source model",
            caption="../report/pretrain_curve.rst",
        ),
    params:
        spec=pretrain_spec,
        seed=config["seed"],
    threads: 2
    log:
        "logs/pretrain_source_model/{source}.log",
    benchmark:
        "benchmarks/out/pretrain_source_model/{source}.tsv"
    resources:
        mem_mb=4000,
    script:
        "../workflow_scripts/pretrain_source_model.py"


rule download_source_model:
    output:
        model=directory("resources/models/{source}"),
    params:
        repo=source_hub_id,
    log:
        "logs/download_source_model/{source}.log",
    script:
        "../workflow_scripts/download_source_model.py"

# Corpus reading, cleaning, filtering, deduplication and the seeded train/held-out split, per language, streaming
# (vocab_transfer.data.corpus.build_corpus): each split is a parquet directory dataset, stats.json says what was read.
# Input and params functions: vocab_transfer/workflow/plan/corpus.py (`plan.<name>`).


rule prepare_corpus:
    output:
        train=directory(paths.corpus("{lang}", "train")),
        heldout=directory(paths.corpus("{lang}", "heldout")),
        stats=paths.corpus_stats("{lang}"),
    params:
        spec=plan.corpus_spec,
        filter=plan.written("corpus_filter"),
        split=plan.written("corpus_split"),
        seed=cfg.seed,
    log:
        "logs/prepare_corpus/{lang}.log",
    benchmark:
        "benchmarks/out/prepare_corpus/{lang}.tsv"
    resources:
        **resources_of("prepare_corpus", data_gb=corpus_gb),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/prepare_corpus.py"

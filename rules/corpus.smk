# Corpus reading, cleaning, filtering, deduplication and the seeded train/held-out split, per language, streaming
# (vocab_transfer.data.corpus.build_corpus): each split is a parquet directory dataset, stats.json says what was read.
# Input and params functions: vocab_transfer/workflow/plan/corpus.py (`plan.<name>`).


rule prepare_corpus:
    output:
        train=directory(paths.corpus("{corpus}", "train")),
        heldout=directory(paths.corpus("{corpus}", "heldout")),
        stats=paths.corpus_stats("{corpus}"),
    params:
        spec=plan.corpus_spec,
        filter=plan.written("corpus_filter"),
        split=plan.written("corpus_split"),
        seed=cfg.seed,
    log:
        LOGS + "prepare_corpus/{corpus}.log",
    benchmark:
        BENCHMARKS + "prepare_corpus/{corpus}.tsv"
    resources:
        **resources_of("prepare_corpus", data_gb=corpus_gb),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/prepare_corpus.py"

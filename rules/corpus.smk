# Corpus reading, cleaning, filtering, deduplication and the seeded train/held-out split, per language, streaming
# (vocab_transfer.data.corpus.build_corpus): each split is a parquet directory dataset, stats.json says what was read.
# Input and params functions: vocab_transfer/workflow/plan/corpus.py (`plan.<name>`).


rule prepare_corpus:
    input:
        fetched=plan.corpus_fetched,
    output:
        train=directory(paths.corpus("{corpus}", "train")),
        heldout=directory(paths.corpus("{corpus}", "heldout")),
        stats=paths.corpus_stats("{corpus}"),
    params:
        spec=plan.corpus_spec,
        filter=plan.written("corpus_filter"),
        split=plan.written("corpus_split"),
        seed=cfg.seed,
    group: bundled("prepare_corpus")  # jobs per SLURM job: profiles/slurm group-components
    log:
        logs("prepare_corpus/{corpus}.log"),
    benchmark:
        benchmarks("prepare_corpus/{corpus}.tsv")
    resources:
        **resources_of("prepare_corpus", data_gb=corpus_gb),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/prepare_corpus.py"


# A hub corpus's data files, fetched on the login node (compute nodes may have no internet) before its corpus job
# reads them: resumes a killed fetch, checks sizes and hashes, records the commit (vocab_transfer.data.fetch).
rule download_corpus:
    localrule: True
    output:
        folder=directory(paths.downloaded_corpus("{corpus}")),
    params:
        spec=plan.corpus_spec,
        max_bytes=plan.corpus_cap,
    log:
        logs("download_corpus/{corpus}.log"),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/download_corpus.py"

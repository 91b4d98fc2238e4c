# Corpus download/reading, cleaning, filtering and the seeded train/held-out split, per language.


rule prepare_corpus:
    output:
        train="results/corpus/{lang}/train.parquet",
        heldout="results/corpus/{lang}/heldout.parquet",
    params:
        spec=corpus_spec,
        filter=canonical(config.get("corpus_filter", {})),
        split=canonical(config.get("corpus_split", {})),
        seed=config["seed"],
    log:
        "logs/prepare_corpus/{lang}.log",
    resources:
        mem_mb=2000,
    script:
        "../workflow_scripts/prepare_corpus.py"

# Token-level fastText on the target corpus pre-tokenized with the target tokenizer (FOCUS App. B).


rule train_fasttext:
    input:
        corpus="results/corpus/{target}/train.parquet",
        tokenizer="results/tokenizers/{target}",
    output:
        vectors="results/fasttext/{target}/vectors.safetensors",
        tokens="results/fasttext/{target}/tokens.parquet",
    params:
        spec=canonical(config["fasttext"]),
        seed=config["seed"],
    threads: config["fasttext"].get("threads", 1)
    log:
        "logs/train_fasttext/{target}.log",
    benchmark:
        "benchmarks/out/train_fasttext/{target}.tsv"
    script:
        "../workflow_scripts/train_fasttext.py"


# Source-token fastText on a source-language corpus (vocab-swap Freq Match counts, Align Match vectors).
rule train_source_fasttext:
    input:
        corpus="results/corpus/{slang}/train.parquet",
        tokenizer=source_model_dir,
    output:
        vectors="results/source_fasttext/{source}/{slang}/vectors.safetensors",
        tokens="results/source_fasttext/{source}/{slang}/tokens.parquet",
    params:
        spec=canonical(config["fasttext"]),
        seed=config["seed"],
    threads: config["fasttext"].get("threads", 1)
    log:
        "logs/train_source_fasttext/{source}/{slang}.log",
    benchmark:
        "benchmarks/out/train_source_fasttext/{source}/{slang}.tsv"
    script:
        "../workflow_scripts/train_fasttext.py"

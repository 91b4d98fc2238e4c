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

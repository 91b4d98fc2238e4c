# Target tokenizers: SentencePiece Unigram per target language, XLM-R layout (FOCUS App. A).


rule train_tokenizer:
    input:
        corpus="results/corpus/{target}/train.parquet",
    output:
        tokenizer=directory("results/tokenizers/{target}"),
    params:
        spec=canonical(config["tokenizer"]),
    threads: config["tokenizer"].get("threads", 2)
    log:
        "logs/train_tokenizer/{target}.log",
    benchmark:
        "benchmarks/out/train_tokenizer/{target}.tsv"
    script:
        "../workflow_scripts/train_tokenizer.py"

# Per-language tokenizers (targets; the source language for WECHSEL_EN): SentencePiece Unigram, XLM-R layout (FOCUS App. A).


rule train_tokenizer:
    input:
        corpus="results/corpus/{lang}/train.parquet",
    output:
        tokenizer=directory("results/tokenizers/{lang}"),
    params:
        spec=canonical(config["tokenizer"]),
    threads: config["tokenizer"].get("threads", 2)
    log:
        "logs/train_tokenizer/{lang}.log",
    benchmark:
        "benchmarks/out/train_tokenizer/{lang}.tsv"
    script:
        "../workflow_scripts/train_tokenizer.py"

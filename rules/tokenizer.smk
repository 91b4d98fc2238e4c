# Per-language tokenizers (targets; the source language for WECHSEL_EN): SentencePiece Unigram, XLM-R layout (FOCUS App. A),
# or an existing tokenizer where `tokenizer.pretrained` names one (vocab-swap §3.1/§3.3).


rule train_tokenizer:
    input:
        corpus="results/corpus/{lang}/train.parquet",
        pretrained=pretrained_tokenizer_dir,
    output:
        tokenizer=directory("results/tokenizers/{lang}"),
    params:
        spec=canonical({k: v for k, v in config["tokenizer"].items() if k != "pretrained"}),
        pretrained=lambda w: pretrained_tokenizer(w.lang),
    threads: config["tokenizer"].get("threads", 2)
    log:
        "logs/train_tokenizer/{lang}.log",
    benchmark:
        "benchmarks/out/train_tokenizer/{lang}.tsv"
    script:
        "../workflow_scripts/train_tokenizer.py"

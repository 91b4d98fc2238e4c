# Per-language tokenizers (targets; the source language for WECHSEL_EN): SentencePiece Unigram, XLM-R layout (FOCUS App. A),
# or another family (`tokenizer.kind`) or the family and layout of a source model's tokenizer (`tokenizer.like`),
# trained on a seeded sample of `tokenizer.input_sentence_size` documents streamed from the corpus, or an existing
# tokenizer where `tokenizer.pretrained` names one (vocab-swap §3.1/§3.3).
# Input and params functions: vocab_transfer/workflow/plan/corpus.py (`plan.<name>`).


rule train_tokenizer:
    input:
        corpus=paths.corpus("{lang}", "train"),
        stats=paths.corpus_stats("{lang}"),
        pretrained=plan.pretrained_tokenizer_dir,
        like=plan.like_tokenizer_dir,
    output:
        tokenizer=directory(paths.tokenizer("{lang}")),
    params:
        spec=plan.written("tokenizer", exclude=("pretrained",)),
        pretrained=plan.pretrained_tokenizer_of,
        like=plan.like_tokenizer_dir,
        seed=cfg.seed,
    threads: cfg.tokenizer.threads
    priority: 210  # above any two one-thread jobs (priorities <= 100): see pretrain_source_model
    log:
        "logs/train_tokenizer/{lang}.log",
    benchmark:
        "benchmarks/out/train_tokenizer/{lang}.tsv"
    resources:
        **resources_of("train_tokenizer", tokenizer_sample_mb),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/train_tokenizer.py"

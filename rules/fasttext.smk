# Token-level fastText on the target corpus's token shard (pre-tokenized with the target tokenizer; FOCUS App. B).
# Input and params functions: vocab_transfer/workflow/plan/vectors.py (`plan.<name>`).


rule train_fasttext:
    input:
        shards=paths.shards("{target}", "train"),
        tokenizer=paths.tokenizer("{target}"),
    output:
        vectors=paths.fasttext_vectors("{target}"),
        tokens=paths.fasttext_tokens("{target}"),
    params:
        spec=plan.written("fasttext"),
        seed=cfg.seed,
    threads: cfg.fasttext.threads
    priority: 95
    log:
        logs("train_fasttext/{target}.log"),
    benchmark:
        benchmarks("train_fasttext/{target}.tsv")
    resources:
        **resources_of("train_fasttext", fasttext_mem_mb, fasttext_gb),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/train_fasttext.py"


# The same with a named variant of the recipe (vocab_transfer.data.token_fasttext.FASTTEXT_PRESETS; a FOCUS method's `fasttext: deepfocus`).
rule train_fasttext_preset:
    input:
        shards=paths.shards("{target}", "train"),
        tokenizer=paths.tokenizer("{target}"),
    output:
        vectors=paths.fasttext_vectors("{target}", "{preset}"),
        tokens=paths.fasttext_tokens("{target}", "{preset}"),
    params:
        spec=plan.fasttext_preset_spec,
        seed=cfg.seed,
    threads: cfg.fasttext.threads
    log:
        logs("train_fasttext_preset/{target}/{preset}.log"),
    benchmark:
        benchmarks("train_fasttext_preset/{target}/{preset}.tsv")
    resources:
        **resources_of("train_fasttext_preset", fasttext_mem_mb, fasttext_gb),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/train_fasttext.py"


# Source-token fastText on a source-language corpus (vocab-swap Freq Match counts, Align Match vectors).
rule train_source_fasttext:
    input:
        shards=plan.source_fasttext_shards,
        tokenizer=plan.source_tokenizer_dir,
    output:
        vectors=paths.source_fasttext_vectors("{source}", "{slang}"),
        tokens=paths.source_fasttext_tokens("{source}", "{slang}"),
    params:
        spec=plan.written("fasttext"),
        seed=cfg.seed,
    threads: cfg.fasttext.threads
    log:
        logs("train_source_fasttext/{source}/{slang}.log"),
    benchmark:
        benchmarks("train_source_fasttext/{source}/{slang}.tsv")
    resources:
        **resources_of("train_source_fasttext", fasttext_mem_mb, fasttext_gb),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/train_fasttext.py"

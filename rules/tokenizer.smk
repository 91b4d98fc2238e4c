# Per-target tokenizers (each target's corpus; the source language for WECHSEL_EN): SentencePiece Unigram, XLM-R layout (FOCUS App. A),
# or another family (`tokenizer.kind`) or the family and layout of a source model's tokenizer (`tokenizer.like`;
# by default that of the one decoder source, decided here for a hub id from its downloaded config.json),
# trained on a seeded sample of `tokenizer.input_sentence_size` documents streamed from the corpus, or an existing
# tokenizer where `tokenizer.pretrained` names one (vocab-swap §3.1/§3.3).
# Input and params functions: vocab_transfer/workflow/plan/corpus.py (`plan.<name>`).


rule train_tokenizer:
    input:
        corpus=plan.target_corpus,
        stats=plan.target_corpus_stats,
        pretrained=plan.pretrained_tokenizer_dir,
        like=plan.like_tokenizer_dir,
        follow=plan.follow_tokenizer_dirs,
    output:
        tokenizer=directory(paths.tokenizer("{target}")),
    params:
        spec=plan.tokenizer_spec,
        seed=cfg.seed,
    threads: plan.tokenizer_threads
    priority: 210  # above any two one-thread jobs (priorities <= 100): see pretrain_source_model
    log:
        logs("train_tokenizer/{target}.log"),
    benchmark:
        benchmarks("train_tokenizer/{target}.tsv")
    resources:
        **resources_of("train_tokenizer", tokenizer_sample_mb),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/train_tokenizer.py"


# An existing tokenizer named by hub id (`tokenizer.pretrained.<target>: <owner>/<name>`): its files alone, fetched on
# the login node (compute nodes may have no internet) into resources/tokenizers/<owner>--<name>/ with origin.json.
rule download_tokenizer:
    localrule: True
    output:
        tokenizer=directory(paths.downloaded_tokenizer("{hubtok}")),
    params:
        repo=plan.tokenizer_hub_id,
    log:
        logs("download_tokenizer/{hubtok}.log"),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/download_tokenizer.py"

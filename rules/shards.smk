# Tokenize once: each corpus split becomes a token shard per tokenizer that reads it (vocab_transfer.data.shards):
# token fastText, token counts, held-out packing, LAPT and source pretraining read ids from these, never text.
# Input and params functions: vocab_transfer/workflow/plan/corpus.py (`plan.<name>`).


rule tokenize_corpus:
    input:
        corpus=plan.target_corpus,
        tokenizer=paths.tokenizer("{target}"),
    output:
        shards=directory(paths.shards("{target}", "{split}")),
    threads: res.threads(config, "tokenize_corpus")
    priority: 95
    group: bundled("tokenize_corpus")  # jobs per SLURM job: profiles/slurm group-components
    log:
        logs("tokenize_corpus/{target}/{split}.log"),
    benchmark:
        benchmarks("tokenize_corpus/{target}/{split}.tsv")
    resources:
        **resources_of("tokenize_corpus"),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/tokenize_corpus.py"


# With a source model's tokenizer: source pretraining, Freq/Align Match's source counts and vectors, source-vocabulary
# LAPT runs.
use rule tokenize_corpus as tokenize_source_corpus with:
    input:
        corpus=paths.corpus("{corpus}", "{split}"),
        tokenizer=plan.source_tokenizer_dir,
    output:
        shards=directory(paths.source_shards("{source}", "{corpus}", "{split}")),
    threads: res.threads(config, "tokenize_source_corpus")
    priority: 100
    group: bundled("tokenize_source_corpus")  # jobs per SLURM job: profiles/slurm group-components
    log:
        logs("tokenize_source_corpus/{source}/{corpus}/{split}.log"),
    benchmark:
        benchmarks("tokenize_source_corpus/{source}/{corpus}/{split}.tsv")
    resources:
        **resources_of("tokenize_source_corpus"),


# With a vocabulary-extension tokenizer (kind: extend): its held-out evaluation and LAPT.
use rule tokenize_corpus as tokenize_extended_corpus with:
    input:
        corpus=plan.target_corpus,
        tokenizer=paths.extended_tokenizer("{source}", "{target}", "{method}"),
    output:
        shards=directory(paths.extended_shards("{source}", "{target}", "{method}", "{split}")),
    threads: res.threads(config, "tokenize_extended_corpus")
    group: bundled("tokenize_extended_corpus")  # jobs per SLURM job: profiles/slurm group-components
    log:
        logs("tokenize_extended_corpus/{source}/{target}/{method}/{split}.log"),
    benchmark:
        benchmarks("tokenize_extended_corpus/{source}/{target}/{method}/{split}.tsv")
    resources:
        **resources_of("tokenize_extended_corpus"),

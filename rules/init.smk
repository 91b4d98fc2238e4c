# Embedding initialization per (source, target, method): the methods of vocab_transfer.methods.
# Input and params functions: vocab_transfer/workflow/plan/init.py (`plan.<name>`).


rule init_embeddings:
    wildcard_constraints:
        method=plan.method_pattern(refining=False),
    input:
        unpack(plan.init_inputs),
    output:
        embeddings=paths.init("{source}", "{target}", "{method}"),
        provenance=paths.provenance("{source}", "{target}", "{method}"),
    params:
        method=plan.method_params,
        seed=cfg.seed,
    threads: 1
    group: bundled("init_embeddings")  # jobs per SLURM job: profiles/slurm group-components
    log:
        logs("init_embeddings/{source}/{target}/{method}.log"),
    benchmark:
        benchmarks("init_embeddings/{source}/{target}/{method}.tsv")
    resources:
        **resources_of("init_embeddings", res.init_mem_mb),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/init_embeddings.py"


# Methods that refine another row's init by training its rows (kind token_distillation, embedding_lm): the model
# runs, on a GPU where LAPT jobs get one (profiles/slurm lists this rule with the GPU partition).
rule refine_embeddings:
    wildcard_constraints:
        method=plan.method_pattern(refining=True),
    input:
        unpack(plan.init_inputs),
    output:
        embeddings=paths.init("{source}", "{target}", "{method}"),
        provenance=paths.provenance("{source}", "{target}", "{method}"),
    params:
        method=plan.method_params,
        seed=cfg.seed,
    threads: res.threads(config, "refine_embeddings")
    group: bundled("refine_embeddings", partition_gpus("refine_embeddings", plan.refine_gpus))
    log:
        logs("refine_embeddings/{source}/{target}/{method}.log"),
    benchmark:
        benchmarks("refine_embeddings/{source}/{target}/{method}.tsv")
    resources:
        gpu=partition_gpus("refine_embeddings", plan.refine_gpus),
        **resources_of("refine_embeddings"),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/init_embeddings.py"


# Vocabulary extension (kind: extend): the source tokenizer plus frequent target tokens it lacks.
rule extend_tokenizer:
    input:
        model=plan.source_model_dir,
        tokenizer=paths.tokenizer("{target}"),
        overlap=paths.overlap("{source}", "{target}"),
        vectors=paths.fasttext_vectors("{target}"),
    output:
        tokenizer=directory(paths.extended_tokenizer("{source}", "{target}", "{method}")),
    params:
        selection=plan.extension_selection,
    log:
        logs("extend_tokenizer/{source}/{target}/{method}.log"),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/extend_tokenizer.py"


# UNKs Everywhere MF: the source matrix factorized once per factorization setting and source (shared by
# the -RAND and -LEX rows and by every target).
rule factorize_source:
    input:
        model=plan.source_model_dir,
    output:
        factors=paths.factors("{source}", "{factorization}"),
    params:
        spec=plan.factorization_params,
        seed=cfg.seed,
    threads: 1
    priority: 90
    group: bundled("factorize_source", partition_gpus("factorize_source", plan.factorization_gpus))
    resources:
        gpu=partition_gpus("factorize_source", plan.factorization_gpus),
    log:
        logs("factorize_source/{source}/{factorization}.log"),
    benchmark:
        benchmarks("factorize_source/{source}/{factorization}.tsv")
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/factorize_source.py"

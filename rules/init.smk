# Embedding initialization per (source, target, method): the methods of vocab_transfer.methods.


rule init_embeddings:
    input:
        unpack(init_inputs),
    output:
        embeddings="results/init/{source}/{target}/{method}.safetensors",
        provenance="results/init/{source}/{target}/{method}.provenance.parquet",
    params:
        method=method_params,
        seed=config["seed"],
    threads: 1
    log:
        "logs/init_embeddings/{source}/{target}/{method}.log",
    benchmark:
        "benchmarks/out/init_embeddings/{source}/{target}/{method}.tsv"
    script:
        "../workflow_scripts/init_embeddings.py"


# Vocabulary extension (kind: extend): the source tokenizer plus the most frequent new target tokens.
rule extend_tokenizer:
    input:
        model=source_model_dir,
        tokenizer="results/tokenizers/{target}",
        overlap="results/overlap/{source}/{target}.parquet",
        vectors="results/fasttext/{target}/vectors.safetensors",
    output:
        tokenizer=directory("results/extended/{source}/{target}/{method}/tokenizer"),
    params:
        new_tokens=extension_size,
    log:
        "logs/extend_tokenizer/{source}/{target}/{method}.log",
    script:
        "../workflow_scripts/extend_tokenizer.py"


# UNKs Everywhere MF: the source matrix factorized once per factorization setting and source (shared by
# the -RAND and -LEX rows and by every target).
rule factorize_source:
    input:
        model=source_model_dir,
    output:
        factors="results/factorized/{source}/{factorization}.safetensors",
    params:
        spec=factorization_params,
        seed=config["seed"],
    threads: 2
    resources:
        gpu=factorization_gpus,
    log:
        "logs/factorize_source/{source}/{factorization}.log",
    benchmark:
        "benchmarks/out/factorize_source/{source}/{factorization}.tsv"
    script:
        "../workflow_scripts/factorize_source.py"

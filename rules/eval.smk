# Init-time masked-LM loss on held-out target text (FOCUS Table 4).


rule pack_heldout:
    input:
        corpus="results/corpus/{target}/heldout.parquet",
        tokenizer="results/tokenizers/{target}",
    output:
        blocks="results/eval_init/heldout/{target}.safetensors",
    params:
        spec=canonical(config["eval"]),
    log:
        "logs/pack_heldout/{target}.log",
    script:
        "../workflow_scripts/pack_heldout.py"


rule evaluate_init:
    input:
        model=source_model_dir,
        tokenizer="results/tokenizers/{target}",
        embeddings="results/init/{source}/{target}/{method}.safetensors",
        blocks="results/eval_init/heldout/{target}.safetensors",
    output:
        result="results/eval_init/{source}/{target}/{method}.parquet",
    params:
        spec=canonical(config["eval"]),
    threads: 1
    log:
        "logs/evaluate_init/{source}/{target}/{method}.log",
    benchmark:
        "benchmarks/out/evaluate_init/{source}/{target}/{method}.tsv"
    resources:
        mem_mb=3000,
    script:
        "../workflow_scripts/evaluate_init.py"

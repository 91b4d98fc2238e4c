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

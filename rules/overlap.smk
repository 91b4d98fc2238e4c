# Vocabulary overlap between source and target tokenizers after canonicalization (FOCUS App. B).
# Input and params functions: vocab_transfer/workflow/plan/init.py (`plan.<name>`).


rule compute_overlap:
    input:
        model=plan.source_model_dir,
        tokenizer=paths.tokenizer("{target}"),
    output:
        overlap=paths.overlap("{source}", "{target}"),
    group: bundled("compute_overlap")  # jobs per SLURM job: profiles/slurm group-components
    log:
        logs("compute_overlap/{source}/{target}.log"),
    benchmark:
        benchmarks("compute_overlap/{source}/{target}.tsv")
    resources:
        **resources_of("compute_overlap"),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/compute_overlap.py"

# Transferred models as Hugging Face model folders with a model card: right after initialization (every cell of the
# init table) and after LAPT (every run). `snakemake export` writes them all (vocab_transfer/export.py).
# Input and params functions: vocab_transfer/workflow/plan/export.py (`plan.<name>`).


rule export_init_model:
    input:
        unpack(plan.export_init_inputs),
    output:
        model=directory(paths.export_init("{source}", "{target}", "{method}")),
    params:
        card=plan.export_card,
        command=reproduce_command,
    group: bundled("export_init_model")  # jobs per SLURM job: profiles/slurm group-components
    log:
        logs("export_init_model/{source}/{target}/{method}.log"),
    resources:
        **resources_of("export_init_model"),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/export_model.py"


rule export_lapt_model:
    input:
        unpack(plan.export_lapt_inputs),
    output:
        model=directory(paths.export_lapt("{source}", "{target}", "{run}")),
    params:
        card=plan.export_card,
        command=reproduce_command,
    group: bundled("export_lapt_model")  # jobs per SLURM job: profiles/slurm group-components
    log:
        logs("export_lapt_model/{source}/{target}/{run}.log"),
    resources:
        **resources_of("export_lapt_model"),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/export_model.py"


rule export:
    input:
        plan.export_outputs(),


# An export uploaded to the hub (export.push; vocab_transfer.export.push_export): only when `snakemake push` (or
# one receipt) is named, never by `all`. A local rule: the login node has internet; the token is HF_TOKEN there.
rule push_export:
    localrule: True
    input:
        unpack(plan.push_inputs),
    output:
        receipt=paths.export_pushed("{source}", "{target}", "{stage}", "{name}"),
    wildcard_constraints:
        stage="init|lapt",
    params:
        repo=plan.push_repo,
        private=plan.push_private,
    log:
        logs("push_export/{source}/{target}/{stage}/{name}.log"),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/push_export.py"


rule push:
    input:
        plan.push_outputs,

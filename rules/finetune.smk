# Downstream fine-tuning: task data in a common schema (vocab_transfer.data.tasks), then one job per
# (source, task, model) and group of seeds (finetune.seeds_per_job; default: all seeds in one job) through
# `python -m vocab_transfer.training.finetune`: dev selection every 5% of the steps, test score of the selected
# checkpoint (FOCUS Tables 2-3 and 6).
# Input and params functions: vocab_transfer/workflow/plan/finetune.py, tables.py and figures.py (`plan.<name>`).


# `localrule: True`: downloads, tables and plots run on the login node, never through the cluster's scheduler.

rule prepare_task:
    localrule: True
    output:
        data=directory(paths.task_data("{task}")),
    params:
        spec=plan.task_spec,
        task=plan.finetune_task_type,
        seed=cfg.seed,
    log:
        logs("prepare_task/{task}.log"),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/prepare_task.py"


# A reference model named by hub id (finetune.models.<m>.pretrained: vocab-swap Tables 2/10 "Pre-trained" rows),
# fetched once; a local folder is used in place.
rule download_reference_model:
    localrule: True
    wildcard_constraints:
        ftmodel=plan.reference_model_pattern(),
    output:
        model=directory(paths.reference_model("{ftmodel}")),
    params:
        repo=plan.reference_hub_spec,
    log:
        logs("download_reference_model/{ftmodel}.log"),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/download_source_model.py"


rule finetune:
    input:
        unpack(plan.finetune_inputs),
    output:
        scores=paths.finetune_scores("{source}", "{task}", "{ftmodel}", "{seeds}"),
        history=paths.finetune_history("{source}", "{task}", "{ftmodel}", "{seeds}"),
    wildcard_constraints:
        seeds=r"-?\d+(\+-?\d+)*",
    params:
        model=plan.finetune_model_dir,
        tokenizer=plan.finetune_tokenizer_dir,
        config=plan.finetune_config,
        meta=plan.finetune_meta,
        embeddings=plan.finetune_embeddings_flag,
        task=plan.finetune_task_type,
        seeds=plan.finetune_seeds,
        checkpoints=paths.finetune_checkpoints("{source}", "{task}", "{ftmodel}", "{seeds}"),
        launcher=cfg.finetune.launch_command(),  # quoted words (vocab_transfer.training.launch)
    threads: cfg.finetune.job_threads()
    priority: 70
    group: bundled("finetune", partition_gpus("finetune", cfg.finetune.gpus))  # profiles/slurm
    resources:
        gpu=partition_gpus("finetune", cfg.finetune.gpus),
        mem_mb=res.model_mem_mb(config, "finetune", finetune_mem_mb),
        runtime=res.capped_runtime(config, "finetune", cfg.finetune.runtime_min, "finetune.runtime_min",
                                   finetune_estimate),
    log:
        main=logs("finetune/{source}/{task}/{ftmodel}/seed{seeds}.log"),
        # written by training/launch.py (--benchmark): the job may fork from a warm starter
        benchmark=benchmarks("finetune/{source}/{task}/{ftmodel}/seed{seeds}.tsv"),
    conda:
        "../envs/vocab-transfer.yaml"
    # Every value is quoted ({...:q}, or words the plan quoted: the launcher, --embeddings); the seeds after --seed
    # are integers (the seeds wildcard's constraint), one word each.
    shell:
        # its own GPUs in a bundle, its benchmark file
        "exec python -m vocab_transfer.training.launch --claim {resources.gpu} --benchmark {log.benchmark:q} --"
        " {params.launcher} -m vocab_transfer.training.finetune --model {params.model:q} {params.embeddings}"
        " --tokenizer {params.tokenizer:q} --task {params.task:q} --data {input.data:q} --seed {params.seeds}"
        " --output {output.scores:q} --history {output.history:q} --checkpoints {params.checkpoints:q}"
        " --meta {params.meta:q} --config {params.config:q} 2>> {log.main:q}"


rule make_finetune_table:
    localrule: True
    input:
        scores=plan.finetune_scores,
    output:
        csv=paths.finetune_table("csv"),
        md=paths.finetune_table("md"),
        html=report(
            paths.finetune_table("html"),
            category=plan.report_category,
            subcategory="Tables",
            caption="../report/finetune.rst",
            labels=plan.report_labels("table", "Fine-tuning: every model and task (FOCUS Tables 2-3)"),
        ),
        parquet=paths.finetune_scores_table(),
        # where each number of the table was read from (vocab_transfer.report.provenance)
        provenance=paths.finetune_table("provenance.parquet"),
    params:
        meta=plan.table_labels(),
    log:
        logs("make_finetune_table/all.log"),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/make_finetune_table.py"


# A table in a paper's layout (config `tables`): downstream scores (rows = models, column groups = tasks)
# or, with `kind: lapt`, held-out perplexity of LAPT runs at given steps (WECHSEL Table 2).
rule make_paper_table:
    localrule: True
    input:
        unpack(plan.paper_table_inputs),
    output:
        csv=paths.paper_table("{table}", "csv"),
        md=paths.paper_table("{table}", "md"),
        html=report(
            paths.paper_table("{table}", "html"),
            category=plan.report_category,
            subcategory="Tables",
            caption="../report/paper_table.rst",
            labels=plan.paper_table_report_labels,
        ),
        # where each number of the table was read from (vocab_transfer.report.provenance)
        provenance=paths.paper_table("{table}", "provenance.parquet"),
    params:
        spec=plan.paper_table_spec,
        meta=plan.table_labels(),
        manifest=plan.paper_table_manifest,
    log:
        logs("make_paper_table/{table}.log"),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/make_paper_table.py"


# vocab-swap Figures 4/8 (config `figures`, kind lapt_finetune): held-out MLM loss during LAPT and the task's test
# score after fine-tuning at LAPT snapshots (finetune.models entries with `steps`) and at the end of each run.
rule plot_lapt_finetune:
    localrule: True
    input:
        unpack(plan.figure_inputs),
    output:
        png=report(
            paths.figure("lapt_finetune", "{source}", "{figure}", "png"),
            category=plan.report_category,
            subcategory="Figures",
            caption="../report/lapt_finetune.rst",
            labels=plan.figure_report_labels,
        ),
        svg=paths.figure("lapt_finetune", "{source}", "{figure}", "svg"),
        csv=paths.figure("lapt_finetune", "{source}", "{figure}", "csv"),
    wildcard_constraints:
        figure="|".join(plan.figures_of_kind("lapt_finetune")) or "^$",
    params:
        spec=plan.lapt_finetune_params,
        manifest=plan.lapt_finetune_manifest,
    log:
        logs("plot_lapt_finetune/{source}/{figure}.log"),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/plot_lapt_finetune.py"

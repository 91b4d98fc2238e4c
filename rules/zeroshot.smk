# Zero-shot cross-lingual transfer (UNKs Everywhere §2, §4.1-4.3, App. A.1; `python -m vocab_transfer.training.zeroshot`):
# the task is trained ONCE per (source, source task, setup, seed) on source-language data with the source's own
# vocabulary (MAD-X: a task adapter on the source-language adapter), then each (zero-shot task, model) cell is one
# job that loads the target once, swaps its embeddings and language adapter in under each seed's source-side
# training and scores the target's test split: one row per seed and source task (Table 3 averages them;
# `tables.<name>.source_languages` picks one, Tables 5/9). The cells of a task read its source-side trainings from
# one list (rule list_source_trainings) instead of 20 folders and 20 score files each.
# Input and params functions: vocab_transfer/workflow/plan/zeroshot.py (`plan.<name>`).



rule train_source_task:
    input:
        unpack(plan.source_task_inputs),
    output:
        model=directory(paths.source_task_model("{source}", "{srctask}", "{setup}", "{seed}")),
        scores=paths.source_task_scores("{source}", "{srctask}", "{setup}", "{seed}"),
        history=paths.source_task_history("{source}", "{srctask}", "{setup}", "{seed}"),
    params:
        config=plan.source_task_config,
        adapter=plan.source_task_adapter,
        variant=plan.source_task_variant,
        task=plan.source_task_type,
        meta=plan.source_task_meta,
        checkpoints=paths.source_task_checkpoints("{source}", "{srctask}", "{setup}", "{seed}"),
        launcher=cfg.zero_shot.launch_command(),  # quoted words (vocab_transfer.training.launch)
    threads: cfg.zero_shot.job_threads()
    priority: 75  # rules/study.smk: before fine-tuning, its zero-shot evaluations wait for it
    group: bundled("train_source_task", partition_gpus("train_source_task", cfg.zero_shot.gpus))
    resources:
        gpu=partition_gpus("train_source_task", cfg.zero_shot.gpus),
        mem_mb=res.model_mem_mb(config, "train_source_task", source_task_mem_mb),
        runtime=res.capped_runtime(config, "train_source_task", cfg.zero_shot.runtime_min,
                                   "zero_shot.runtime_min", source_task_estimate),
    log:
        main=logs("train_source_task/{source}/{srctask}/{setup}/seed{seed}.log"),
        # written by training/launch.py (--benchmark): the job may fork from a warm starter
        benchmark=benchmarks("train_source_task/{source}/{srctask}/{setup}/seed{seed}.tsv"),
    conda:
        "../envs/vocab-transfer.yaml"
    # Every value is quoted ({...:q}; the launcher: words quoted by the plan).
    shell:
        # its own GPUs in a bundle, its benchmark file
        "exec python -m vocab_transfer.training.launch --claim {resources.gpu} --benchmark {log.benchmark:q} --"
        " {params.launcher} -m vocab_transfer.training.zeroshot train --model {input.model:q}"
        " --tokenizer {input.tokenizer:q} --task {params.task:q} --data {input.data:q} --seed {wildcards.seed:q}"
        " --variant {params.variant:q} --adapter {params.adapter:q} --output {output.model:q}"
        " --scores {output.scores:q} --history {output.history:q} --checkpoints {params.checkpoints:q}"
        " --meta {params.meta:q} --config {params.config:q} 2>> {log.main:q}"


rule list_source_trainings:
    localrule: True
    input:
        unpack(plan.source_trainings_inputs),
    output:
        paths.zeroshot_trainings("{source}", "{task}", "{setup}"),
    params:
        trainings=plan.source_trainings_json,
    log:
        logs("list_source_trainings/{source}/{task}/{setup}.log"),
    conda:
        "../envs/vocab-transfer.yaml"
    shell:
        "(printf '%s\\n' {params.trainings:q} > {output:q}.tmp && mv {output:q}.tmp {output:q}) 2> {log:q}"


rule evaluate_zero_shot:
    input:
        unpack(plan.zero_shot_inputs),
    output:
        scores=paths.zeroshot_scores("{source}", "{task}", "{ftmodel}"),
    params:
        config=plan.zero_shot_config,
        meta=plan.zero_shot_meta,
        task=plan.finetune_task_type,
        unseen=plan.zero_shot_unseen,
        launcher=cfg.zero_shot.launch_command(),  # quoted words (vocab_transfer.training.launch)
    threads: cfg.zero_shot.job_threads()
    priority: 70  # rules/study.smk
    group: bundled("evaluate_zero_shot", partition_gpus("evaluate_zero_shot", cfg.zero_shot.gpus))
    resources:
        gpu=partition_gpus("evaluate_zero_shot", cfg.zero_shot.gpus),
        mem_mb=res.model_mem_mb(config, "evaluate_zero_shot", zero_shot_mem_mb),
        runtime=res.capped_runtime(config, "evaluate_zero_shot", plan.zero_shot_runtime,
                                   "zero_shot.eval_runtime_min", zero_shot_estimate, resumes=False),
    log:
        main=logs("evaluate_zero_shot/{source}/{task}/{ftmodel}.log"),
        # written by training/launch.py (--benchmark): the job may fork from a warm starter
        benchmark=benchmarks("evaluate_zero_shot/{source}/{task}/{ftmodel}.tsv"),
    conda:
        "../envs/vocab-transfer.yaml"
    shell:
        # its own GPUs in a bundle, its benchmark file
        "exec python -m vocab_transfer.training.launch --claim {resources.gpu} --benchmark {log.benchmark:q} --"
        " {params.launcher} -m vocab_transfer.training.zeroshot evaluate --target {input.target:q}"
        " --task {params.task:q} --data {input.data:q} --trainings {input.trainings:q} --output {output.scores:q}"
        " --unseen-labels {params.unseen:q} --meta {params.meta:q} --config {params.config:q} 2>> {log.main:q}"

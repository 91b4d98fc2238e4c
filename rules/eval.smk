# Init-time masked-LM loss on held-out target text (FOCUS Table 4).
# Input and params functions: vocab_transfer/workflow/plan/eval.py (`plan.<name>`).


rule pack_heldout:
    input:
        shards=paths.shards("{target}", "heldout"),
        tokenizer=paths.tokenizer("{target}"),
    output:
        blocks=paths.heldout_blocks("{target}"),
    params:
        spec=canonical({"seq_len": cfg.eval.seq_len, "max_sequences": cfg.eval.max_sequences}),
    group: bundled("pack_heldout")  # jobs per SLURM job: profiles/slurm group-components
    log:
        logs("pack_heldout/{target}.log"),
    benchmark:
        benchmarks("pack_heldout/{target}.tsv")
    resources:
        **resources_of("pack_heldout"),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/pack_heldout.py"


# Vocabulary extension evaluates with its own tokenizer, so its held-out text is packed per method.
use rule pack_heldout as pack_heldout_extended with:
    input:
        shards=paths.extended_shards("{source}", "{target}", "{method}", "heldout"),
        tokenizer=paths.extended_tokenizer("{source}", "{target}", "{method}"),
    output:
        blocks=paths.extended_heldout_blocks("{source}", "{target}", "{method}"),
    group: bundled("pack_heldout_extended")  # jobs per SLURM job: profiles/slurm group-components
    log:
        logs("pack_heldout_extended/{source}/{target}/{method}.log"),
    benchmark:
        benchmarks("pack_heldout_extended/{source}/{target}/{method}.tsv")


# One job per (source, target) evaluates every method's init: the source model is loaded once instead of
# once per method (on a 2-core machine the imports alone cost about as much as the evaluation).
rule evaluate_init:
    input:
        unpack(plan.eval_inputs),
    output:
        result=paths.init_eval("{source}", "{target}"),
    params:
        spec=plan.written("eval"),
        methods=plan.eval_methods,
    threads: 1
    # jobs per SLURM job: profiles/slurm group-components; a job of a bundle claims its GPU in setup_job
    priority: 70  # rules/study.smk
    group: bundled("evaluate_init", partition_gpus("evaluate_init", cfg.eval.gpus))
    log:
        logs("evaluate_init/{source}/{target}.log"),
    benchmark:
        benchmarks("evaluate_init/{source}/{target}.tsv")
    resources:
        gpu=partition_gpus("evaluate_init", cfg.eval.gpus),
        **resources_of("evaluate_init"),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/evaluate_init.py"


# Linear probes of the last hidden state right after initialization (WECHSEL Tables 7-8's NLI and POS columns; a
# kind init table's `probes`): one job per (source, task, method).
rule probe_init:
    input:
        unpack(plan.probe_inputs),
    output:
        result=paths.init_probe("{source}", "{task}", "{method}"),
    params:
        spec=plan.probe_spec(),
        task=plan.finetune_task_type,
    threads: res.threads(config, "probe_init")
    priority: 70  # rules/study.smk
    group: bundled("probe_init")  # jobs per SLURM job: profiles/slurm group-components
    log:
        logs("probe_init/{source}/{task}/{method}.log"),
    benchmark:
        benchmarks("probe_init/{source}/{task}/{method}.tsv")
    resources:
        **resources_of("probe_init"),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/probe_init.py"


# Zero-shot benchmark scores of decoder models with lm-evaluation-harness (eval.benchmarks; vocab_transfer.eval.
# benchmarks): the datasets of a target's tasks fetched on the login node (a local rule: compute nodes may have no
# internet), then one job per model reads them offline.
rule download_benchmark_data:
    localrule: True
    output:
        data=paths.benchmark_data("{target}"),
    params:
        spec=plan.benchmark_spec,
        cache=paths.benchmark_cache(),
    log:
        logs("download_benchmark_data/{target}.log"),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/download_benchmark_data.py"


rule benchmark_model:
    wildcard_constraints:
        stage="source|init|lapt",
    input:
        unpack(plan.benchmark_inputs),
    output:
        scores=paths.benchmark("{source}", "{target}", "{stage}", "{name}"),
    params:
        spec=plan.benchmark_spec,
        cache=paths.benchmark_cache(),
        seed=cfg.eval.seed,
    threads: 1
    priority: 70  # rules/study.smk
    group: bundled("benchmark_model", partition_gpus("benchmark_model", cfg.eval.gpus))  # as evaluate_init
    log:
        logs("benchmark_model/{target}/{source}/{stage}/{name}.log"),
    benchmark:
        benchmarks("benchmark_model/{target}/{source}/{stage}/{name}.tsv")
    resources:
        gpu=partition_gpus("benchmark_model", cfg.eval.gpus),
        **resources_of("benchmark_model"),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/benchmark_model.py"

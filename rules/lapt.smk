# Language-adaptive pretraining (LAPT) of transferred models: `python -m vocab_transfer.training.lapt`, one process
# per GPU on lapt.nodes nodes (torchrun; vocab_transfer/training/launch.py picks the launcher from lapt.gpus and
# lapt.nodes); resumable from its checkpoints (FOCUS §3.1, Figure 2).
# `exec` hands SLURM's --signal=TERM warning straight to the trainer, which checkpoints and exits 75;
# the next submission (the profile's `retries`, raised for a run estimated to need more submissions than they
# give: resources.raise_retries) resumes it (profiles/slurm/config.yaml).
# Every value reaches the shell quoted: `{...:q}`, or words the plan quoted already (the launcher, optional flags),
# so a local model folder with spaces, quotes or `$(...)` in its path is one argument and runs nothing.
# Input and params functions: vocab_transfer/workflow/plan/lapt.py and figures.py (`plan.<name>`).


# `localrule: True`: plots run on the login node, never through the cluster's scheduler.

rule train_lapt:
    input:
        model=plan.source_model_dir,
        embeddings=plan.lapt_embeddings,
        tokenizer=plan.lapt_tokenizer,
        train=plan.lapt_train_shards,
        heldout=plan.lapt_heldout_shards,
        anchors=plan.lapt_anchors,
    output:
        model=directory(paths.lapt_model("{source}", "{target}", "{run}")),
        curve=paths.lapt_curve("{source}", "{target}", "{run}"),
        snapshots=directory(paths.lapt_snapshots("{source}", "{target}", "{run}")),  # step-XXXXXXXX/ (snapshot_steps)
        token_accuracy=paths.lapt_token_accuracy("{source}", "{target}", "{run}"),  # rows: token_accuracy_top
    params:
        config=plan.lapt_config,
        checkpoints=paths.lapt_checkpoints("{source}", "{target}", "{run}"),
        embeddings=plan.lapt_embeddings_flag,  # "--embeddings <init artifact>" (quoted), or nothing
        anchors=plan.lapt_anchors_flag,  # "--anchors <overlap>" (quoted), or nothing
        launcher=cfg.lapt.launch_command(),  # quoted words (vocab_transfer.training.launch)
    threads: cfg.lapt.job_threads()
    priority: 80
    # jobs per SLURM job: profiles/slurm group-components; a job on several nodes or the one a rehearsal
    # interrupts keeps a SLURM job of its own
    group: bundled("train_lapt", partition_gpus("train_lapt", cfg.lapt.gpus), alone=lapt_alone(cfg))
    resources:
        gpu=partition_gpus("train_lapt", cfg.lapt.gpus),
        # sbatch --nodes only for a job on several nodes: a bundle would ask for the sum of its jobs' nodes
        **({"nodes": cfg.lapt.nodes} if cfg.lapt.nodes > 1 else {}),
        mem_mb=res.model_mem_mb(config, "train_lapt", lapt_mem_mb),
        # lapt.runtime_min, or a rehearsal's shorter limit for the job it interrupts (rehearsal.interrupt)
        runtime=res.capped_runtime(config, "train_lapt", plan.lapt_runtime, "lapt.runtime_min", lapt_estimate),
    log:
        main=logs("train_lapt/{source}/{target}/{run}.log"),
        # written by training/launch.py (--benchmark): the job may fork from a warm starter
        benchmark=benchmarks("train_lapt/{source}/{target}/{run}.tsv"),
    conda:
        "../envs/vocab-transfer.yaml"
    shell:
        # its own GPUs in a bundle, its benchmark file
        "exec python -m vocab_transfer.training.launch --claim {resources.gpu} --benchmark {log.benchmark:q} --"
        " {params.launcher} -m vocab_transfer.training.lapt --model {input.model:q} {params.embeddings}"
        " --tokenizer {input.tokenizer:q} --train {input.train:q} --heldout {input.heldout:q}"
        " --output {output.model:q} --curve {output.curve:q} --checkpoints {params.checkpoints:q}"
        " --snapshots {output.snapshots:q} --token-accuracy {output.token_accuracy:q} {params.anchors}"
        " --config {params.config:q} 2>> {log.main:q}"


rule plot_lapt_curves:
    localrule: True
    input:
        unpack(plan.lapt_curves),
    output:
        png=report(
            paths.figure("lapt_curves", "{source}", "{target}", "png"),
            category=plan.report_category,
            subcategory="Figures",
            caption="../report/lapt_curves.rst",
            labels=plan.report_labels("figure", "LAPT held-out loss, {source} to {target} (FOCUS Figure 2)"),
        ),
        svg=paths.figure("lapt_curves", "{source}", "{target}", "svg"),
        csv=paths.figure("lapt_curves", "{source}", "{target}", "csv"),
    params:
        manifest=plan.lapt_curve_manifest,
    log:
        logs("plot_lapt_curves/{source}/{target}.log"),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/plot_lapt_curves.py"


rule plot_embedding_correlation:
    localrule: True
    input:
        unpack(plan.lapt_correlation_inputs),
    output:
        png=report(
            paths.figure("embedding_correlation", "{source}", "{target}", "png"),
            category=plan.report_category,
            subcategory="Figures",
            caption="../report/embedding_correlation.rst",
            labels=plan.report_labels(
                "figure", "Embedding correlation, {source} to {target} (vocab-swap Figures 2, 5, 7)"
            ),
        ),
        svg=paths.figure("embedding_correlation", "{source}", "{target}", "svg"),
        hist=report(
            paths.figure("embedding_correlation", "{source}", "{target}", "histograms.png"),
            category=plan.report_category,
            subcategory="Figures",
            caption="../report/correlation_histograms.rst",
            labels=plan.report_labels(
                "figure", "Per-token embedding correlation, {source} to {target} (vocab-swap Figure 3)"
            ),
        ),
        csv=paths.figure("embedding_correlation", "{source}", "{target}", "csv"),
    params:
        manifest=plan.lapt_curve_manifest,
    log:
        logs("plot_embedding_correlation/{source}/{target}.log"),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/plot_embedding_correlation.py"


# vocab-swap Figure 6 (config `figures`, kind token_accuracy): held-out accuracy of the most frequent tokens during
# LAPT, split by whether the init matched them to a source token, and its distribution at chosen steps.
rule plot_token_accuracy:
    localrule: True
    input:
        unpack(plan.figure_inputs),
    output:
        png=report(
            paths.figure("token_accuracy", "{source}", "{figure}", "png"),
            category=plan.report_category,
            subcategory="Figures",
            caption="../report/token_accuracy.rst",
            labels=plan.figure_report_labels,
        ),
        svg=paths.figure("token_accuracy", "{source}", "{figure}", "svg"),
        csv=paths.figure("token_accuracy", "{source}", "{figure}", "csv"),
    wildcard_constraints:
        figure="|".join(plan.figures_of_kind("token_accuracy")) or "^$",
    params:
        spec=plan.token_accuracy_params,
    log:
        logs("plot_token_accuracy/{source}/{figure}.log"),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/plot_token_accuracy.py"


# WECHSEL Figures 3-6 and UNKs Everywhere Figures 2-3 (config `figures`, kinds curves, init_similarity, unk_scatter,
# sample_efficiency):
# held-out perplexity (loss, bits per byte) of chosen LAPT runs over steps, one panel per language; how far each
# token's embedding moved from its initialization during LAPT (cosine similarity); a model's test score per language
# against the share of its vocabulary the source tokenizer cannot compose (UNKs) and the overlap; mean test scores
# against the amount of LAPT data.
rule plot_figure:
    localrule: True
    input:
        unpack(plan.figure_inputs),
    output:
        png=report(
            paths.figure("{kind}", "{source}", "{figure}", "png"),
            category=plan.report_category,
            subcategory="Figures",
            caption="../report/figure.rst",
            labels=plan.figure_report_labels,
        ),
        svg=paths.figure("{kind}", "{source}", "{figure}", "svg"),
        csv=paths.figure("{kind}", "{source}", "{figure}", "csv"),
    wildcard_constraints:
        kind="curves|init_similarity|unk_scatter|sample_efficiency",
        figure="|".join(plan.figures_of_kind("curves") + plan.figures_of_kind("init_similarity")
                        + plan.figures_of_kind("unk_scatter") + plan.figures_of_kind("sample_efficiency")) or "^$",
    params:
        spec=plan.figure_params,
    log:
        logs("plot_figure/{kind}/{source}/{figure}.log"),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/plot_figure.py"

# Tables: FOCUS Table 4 (init-time MLM loss) as long-form CSV and a Markdown rendering.
# Input and params functions: vocab_transfer/workflow/plan/eval.py (`plan.<name>`).


# `localrule: True`: the table renders on the login node, never through the cluster's scheduler.

rule make_init_table:
    localrule: True
    input:
        results=plan.init_eval_results,
    output:
        csv=paths.init_table("csv"),
        md=paths.init_table("md"),
        html=report(
            paths.init_table("html"),
            category=plan.report_category,
            subcategory="Tables",
            caption="../report/init_mlm_loss.rst",
            labels=plan.report_labels("table", "MLM loss right after initialization (FOCUS Table 4)"),
        ),
        # where each number of the table was read from (vocab_transfer.report.provenance)
        provenance=paths.init_table("provenance.parquet"),
    params:
        meta=plan.table_metadata(),
    log:
        logs("make_init_table/all.log"),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/make_init_table.py"


# lm-eval scores of every benchmarked model and the share of the source's score each keeps.
rule make_benchmark_table:
    localrule: True
    input:
        scores=plan.benchmark_scores,
    output:
        csv=paths.benchmark_table("csv"),
        md=paths.benchmark_table("md"),
        html=report(
            paths.benchmark_table("html"),
            category=plan.report_category,
            subcategory="Tables",
            caption="../report/benchmarks.rst",
            labels=plan.report_labels("table", "lm-eval benchmarks: scores and the source's share kept"),
        ),
        # where each number of the table was read from (vocab_transfer.report.provenance)
        provenance=paths.benchmark_table("provenance.parquet"),
    params:
        labels=plan.benchmark_labels(),
    log:
        logs("make_benchmark_table/all.log"),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/make_benchmark_table.py"

# Tables: FOCUS Table 4 (init-time MLM loss) as long-form CSV and a Markdown rendering.


rule make_init_table:
    input:
        results=init_eval_results,
    output:
        csv=report(
            "results/tables/init_mlm_loss.csv",
            category="Tables",
            caption="../report/init_mlm_loss.rst",
        ),
        md="results/tables/init_mlm_loss.md",
    params:
        meta=table_metadata(),
    log:
        "logs/make_init_table/all.log",
    script:
        "../workflow_scripts/make_init_table.py"

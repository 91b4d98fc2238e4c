"""The workflow layer between the config and the package: where artifacts live (:mod:`.paths`), what each job
asks the scheduler for (:mod:`.resources`), and the job setup shared by the thin scripts in ``workflow_scripts/``
(:mod:`.job`). Importing this package (and :mod:`.paths`, :mod:`.resources`) loads neither torch nor
transformers, so that planning a DAG stays cheap."""

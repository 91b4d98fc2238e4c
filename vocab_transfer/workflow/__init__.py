"""The workflow layer between the config and the package: the config checks run at parse time (:mod:`.config`),
where artifacts live (:mod:`.paths`), what init methods need (:mod:`.needs`), the rules' input and params functions
(:mod:`.plan`), what each job asks the scheduler for (:mod:`.resources`), and the job setup shared by the thin scripts
in ``workflow_scripts/`` (:mod:`.job`). None of them loads torch, transformers, pandas or ``datasets``: Snakemake
parses the workflow on every call, and :mod:`.config` and :mod:`.plan` read the methods' parameters and needs
(:mod:`vocab_transfer.methods.catalog`) and the task spec checks without importing those modules (:mod:`.light`)."""

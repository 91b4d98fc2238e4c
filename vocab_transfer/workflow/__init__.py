"""The workflow layer between the config and the package: the config checks run at parse time (:mod:`.config`),
where artifacts live (:mod:`.paths`), what init methods need (:mod:`.needs`), the rules' input and params functions
(:mod:`.plan`), what each job asks the scheduler for (:mod:`.resources`), and the job setup shared by the thin scripts
in ``workflow_scripts/`` (:mod:`.job`). Importing this package (and :mod:`.paths`, :mod:`.needs`,
:mod:`.resources`) loads neither torch nor transformers; :mod:`.config` and :mod:`.plan` import
the method registry (method parameters and needs)."""

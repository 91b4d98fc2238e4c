"""The workflow layer between the config and the package: the config checks run at parse time
(:mod:`.config`), where artifacts live (:mod:`.paths`), what init methods need (:mod:`.needs`), the rules'
input and params functions (:mod:`.plan`), what each job asks the scheduler for (:mod:`.resources`), and the
job setup shared by the thin scripts in ``workflow_scripts/`` (:mod:`.job`). Snakemake parses the workflow on
every call: :mod:`.config` and :mod:`.plan` import the real method registry (:mod:`vocab_transfer.methods`),
the corpus sources and the task checks, whose modules bind torch, transformers, pandas, pyarrow and
``datasets`` lazily (:mod:`vocab_transfer.lazy`), so planning imports none of them
(``tests/test_layout.py``)."""

# Several studies in one DAG (configs/papers.yaml): each study config is a module of this workflow, its rules named
# <study>_<rule>, its own artifacts under results/<study>/. What studies share by name (corpora, source models and
# their shards, task data, word vectors, dictionaries, downloads; vocab_transfer/workflow/paths.py: SHARED) is
# planned once: the first study that names it builds it (ruleorder), after vocab_transfer/workflow/studies.py has
# checked that every study means the same thing by it.
import sys

from vocab_transfer.workflow import restart, warm
from vocab_transfer.workflow.cluster import check_submission, resource_values
from vocab_transfer.workflow.resources import raise_retries
from vocab_transfer.workflow.config import ConfigError
from vocab_transfer.workflow.rehearsal import mirrored_downloads
from vocab_transfer.workflow.studies import (check_shared, job_rules, load_studies, parsing_study, study_of_rule,
                                            study_plan)


restart.explain_lock(workflow.workdir_init, sys.argv)  # as rules/common.smk does for one config
# A job (Snakemake in a SLURM allocation, twice: --target-jobs <study>_<rule>:...) reads only its own study; the
# run that planned it has read and checked them all.
JOB_RULES = job_rules(sys.argv)
try:
    STUDIES = load_studies(config, workflow.basedir, rules=JOB_RULES)
    STUDY_PLANS = {} if JOB_RULES else {name: study_plan(study) for name, study in STUDIES.items()}
    check_shared(STUDY_PLANS)
except ConfigError as e:
    raise WorkflowError(f"config error: {e}") from None
# Without a hub mirror, the downloads one served stop the run (as rules/common.smk does for one config).
if not any(study.get("hub_mirror") for study in STUDIES.values()) and (mirrored := mirrored_downloads()):
    raise WorkflowError(f"{len(mirrored)} downloads here came from a hub mirror (a rehearsal's miniatures), and a run "
                        f"without hub_mirror would take them for the real ones: remove them first ({mirrored[0]}, ...), "
                        "or rehearse in a directory of its own (scripts/rehearse.sh: rehearsal/)")

# The profile's per-rule settings (set-resources, set-threads: train_lapt's GPU partition) name the workflow's rules;
# in the composite each rule is <study>_<rule>, so each study's copy gets its rule's settings (Snakemake 9.27's parsed
# settings, read when a rule is defined; tests/test_named_targets.py checks that a LAPT job gets the GPU partition).
settings = workflow.resource_settings
for parsed in (settings._parsed_overwrite_resources, settings._parsed_overwrite_threads):
    for rule_name, value in list(parsed.items()):
        parsed.update({f"{name}_{rule_name}": value for name in STUDIES})

for name, study in STUDIES.items():
    workflow.module(name, snakefile=workflow.main_snakefile, config=study)
    with parsing_study(name):  # rules/common.smk asks study_being_parsed()
        workflow.userule(rules=["*"], from_module=name, name_modifier=f"{name}_*")(lambda: None)


def study_rule(name):
    """(study, rule) of a rule of the composite: ``vocab_swap_frankenbert_train_lapt`` -> (``vocab_swap_frankenbert``,
    ``train_lapt``), the longest study name first; (None, name) for the composite's own rules."""
    study = study_of_rule(name, STUDIES)
    return (study, name[len(study) + 1:]) if study else (None, name)


# A shared artifact any study could build is built by the first study that lists it.
if len(STUDIES) > 1:
    for rule_name in sorted({study_rule(r.name)[1] for r in workflow.rules if study_rule(r.name)[0]}):
        workflow.ruleorder(*[f"{name}_{rule_name}" for name in STUDIES])

STUDY_OUTPUTS = [getattr(rules, f"{name}_all").input for name in STUDIES]


# Before any job is submitted: every study's jobs against the cluster (as rules/common.smk does for one config; a
# module's own onstart does not run).
onstart:
    executor = workflow.executor_plugin.name if workflow.executor_plugin else "local"
    if not executor.endswith("jobstep"):
        jobs = [(study_rule(job.rule.name)[1], dict(job.resources)) for job in workflow.dag.needrun_jobs()]
        nodes = max((p.cfg.lapt.nodes for p in STUDY_PLANS.values()), default=1)  # none in a job
        defaults = resource_values(workflow.resource_settings.default_resources)
        default_partition = defaults.get("slurm_partition")
        problems = check_submission(executor, jobs, lapt_nodes=nodes, default_partition=default_partition)
        if problems:
            raise WorkflowError("nothing submitted:\n  " + "\n  ".join(problems))
        if stop := restart.check_no_other_run(executor, workflow.workdir_init, restart.current_run(workflow)):
            raise WorkflowError(stop)
        for line in raise_retries(workflow.dag.needrun_jobs(), workflow.execution_settings.retries):
            print(line, file=sys.stderr)
    if executor == "local" and warm.wanted(workflow):
        if sum(1 for job in workflow.dag.needrun_jobs() if job.rule.script) >= 4:
            warm.start()

# Several studies in one DAG (configs/papers.yaml): each study config is a module of this workflow, its rules named
# <study>_<rule>, its own artifacts under results/<study>/. What studies share by name (corpora, source models and
# their shards, task data, word vectors, dictionaries, downloads; vocab_transfer/workflow/paths.py: SHARED) is
# planned once: the first study that names it builds it (ruleorder), after vocab_transfer/workflow/studies.py has
# checked that every study means the same thing by it.
import sys

from vocab_transfer.workflow import restart
from vocab_transfer.workflow.cluster import check_profile_filled
from vocab_transfer.workflow.config import ConfigError
from vocab_transfer.workflow.onstart import before_jobs
from vocab_transfer.workflow.rehearsal import check_no_mirrored_downloads
from vocab_transfer.workflow.studies import (check_shared, job_rules, load_studies, parsing_study,
                                            share_rule_settings, study_of_rule, study_plan)


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
if not any(study.get("hub_mirror") for study in STUDIES.values()) and (stop := check_no_mirrored_downloads()):
    raise WorkflowError(stop)
# A placeholder left in the profile stops every call, -n included (as rules/common.smk does for one config;
# the studies' modules leave it to this file, which checks the settings as given, before the copies below).
if stop := check_profile_filled(workflow.resource_settings, sys.argv):
    raise WorkflowError(stop)

# The profile's per-rule settings (set-resources, set-threads: train_lapt's GPU partition) name the workflow's
# rules; in the composite each rule is <study>_<rule>, so each study's copy gets its rule's settings. They are
# written through Snakemake's public settings fields before the first rule is defined
# (vocab_transfer/workflow/studies.py: share_rule_settings; docs/development.md, "Snakemake's API").
share_rule_settings(workflow.resource_settings, STUDIES)

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


# Before any job is submitted (vocab_transfer/workflow/onstart.py, as for one config): every study's jobs, under
# their rules' own names; a module's own onstart does not run. A cluster job has no study plans (no LAPT nodes).
onstart:
    before_jobs(workflow, lapt_nodes=max((p.cfg.lapt.nodes for p in STUDY_PLANS.values()), default=1),
                studies=STUDIES)

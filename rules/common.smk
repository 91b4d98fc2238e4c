# Config validation (before any job runs), the wildcards' constraints, and the Plan whose methods are the rules'
# input and params functions (vocab_transfer/workflow/plan/: a module per stage); resource functions at the end.
import json
import os
import shlex
import sys
from types import SimpleNamespace

from vocab_transfer.workflow.config import (ConfigError, all_targets, check_config, check_configfiles,
                                            expand_snapshot_models, fill_defaults)
from vocab_transfer.workflow import paths
from vocab_transfer.workflow.rehearsal import mirrored_downloads, shrink
from vocab_transfer.workflow import resources as res
from vocab_transfer.workflow import warm
from vocab_transfer.workflow.bundles import BundleGroup, pass_group_settings_to_slurm_jobs
from vocab_transfer.workflow.cluster import check_profile, check_submission, profile_file, resource_values
from vocab_transfer.artifacts import RERUN_ENV
from vocab_transfer.mirror import MIRROR_ENV
from vocab_transfer.data.token_fasttext import FASTTEXT_PRESETS
from vocab_transfer.source_model import TRUSTED_ENV
from vocab_transfer.workflow.plan import Plan, canonical


try:
    check_configfiles(workflow.config_settings.configfiles)  # a target written after --configfile
    shrink(config)  # a rehearsal: the config in miniature (vocab_transfer/workflow/rehearsal.py)
    check_config(config)
    fill_defaults(config)  # the defaults the model marks as part of the params (vocab_transfer.workflow.schema)
except ConfigError as e:
    raise WorkflowError(f"config error: {e}") from None
# The resources a profile gives (profiles/slurm/config.yaml): a placeholder left in them stops every call, -n
# included, naming the key and the profile file (vocab_transfer/workflow/cluster.py).
profile_problems = check_profile(
    resource_values(workflow.resource_settings.default_resources),
    {rule: resource_values(r) for rule, r in workflow.resource_settings.overwrite_resources.items()},
    profile_file(sys.argv))
if profile_problems:
    raise WorkflowError("nothing submitted: fill in the profile's placeholders first\n  " + "\n  ".join(profile_problems))
# A SLURM job that runs a bundle of jobs (group-components in profiles/slurm) runs them side by side in one
# Snakemake (vocab_transfer/workflow/bundles.py).
pass_group_settings_to_slurm_jobs()


def bundled(name):
    """A small rule's `group:`: the group `name` where the profile's group-components bundle it, else none."""
    return BundleGroup(workflow, name)


if "finetune" in config:  # `steps: [N, ...]` entries become one model per LAPT snapshot, <name>-step<N>
    config["finetune"]["models"] = expand_snapshot_models(config)["finetune"].get("models", {})

# envs/vocab-transfer.yaml installs the package from this checkout by absolute path: Snakemake builds the
# environment from a copy of the file in .snakemake/conda/, where a path relative to envs/ would miss.
os.environ.update(VOCAB_TRANSFER_ROOT=os.path.abspath(workflow.basedir))
# A hub mirror (config hub_mirror; vocab_transfer/mirror.py): every download job copies from it. Without one, the
# downloads a mirror served (a rehearsal's miniatures) stop the run: their params are those of the real downloads.
if config.get("hub_mirror"):
    os.environ[MIRROR_ENV] = os.path.abspath(config["hub_mirror"])
elif not workflow.modifier.is_module and (mirrored := mirrored_downloads()):
    raise WorkflowError(f"{len(mirrored)} downloads here came from a hub mirror (a rehearsal's miniatures), and a run "
                        "without hub_mirror would take them for the real ones: remove them first (rm -r "
                        f"{' '.join(shlex.quote(p) for p in mirrored[:20])}{' ...' if len(mirrored) > 20 else ''}), "
                        "or rehearse in a directory of its own (scripts/rehearse.sh: rehearsal/)")
# How to call this workflow again (a model card's "Reproduce", an artifact's rebuild hint): from the repository root
# as the README does, else from anywhere (--snakefile, --directory and the config files as absolute paths).
def rerun_words():
    here = os.path.realpath(os.getcwd()) == os.path.realpath(workflow.basedir)
    words = ["snakemake"] if here else ["snakemake", "--snakefile", os.path.abspath(workflow.main_snakefile),
                                        "--directory", os.getcwd()]
    configfiles = [os.path.relpath(c) if here else os.path.abspath(c)
                   for c in workflow.config_settings.configfiles or ()]
    return words, configfiles


os.environ[RERUN_ENV] = json.dumps(dict(zip(("snakemake", "configfiles"), rerun_words())))

# Before any job is submitted: the jobs against the cluster they go to (profile placeholders, GPU partitions,
# multi-node LAPT without SLURM; vocab_transfer/workflow/cluster.py). Not inside a cluster job (*-jobstep).
onstart:
    executor = workflow.executor_plugin.name if workflow.executor_plugin else "local"
    if not executor.endswith("jobstep"):
        jobs = [(job.rule.name, dict(job.resources)) for job in workflow.dag.needrun_jobs()]
        problems = check_submission(executor, jobs, lapt_nodes=plan.cfg.lapt.nodes)
        if problems:
            raise WorkflowError("nothing submitted:\n  " + "\n  ".join(problems))
    # Jobs run here: fork the script jobs from one process that has imported torch & co. once
    # (vocab_transfer/workflow/warm.py; VOCAB_TRANSFER_WARM=0 turns it off). A handful of jobs is not worth
    # it, and the jobs of rules with a benchmark: file are never forked (their file measures the job process).
    if executor == "local" and warm.wanted(workflow):
        if sum(1 for job in workflow.dag.needrun_jobs() if job.rule.script and not job.rule.benchmark) >= 4:
            warm.start()


# The rules' input and params functions: methods of one Plan of this config (vocab_transfer/workflow/plan/, a
# module per stage); cfg is the config typed (vocab_transfer/workflow/model.py).
plan = Plan(config)

# The model folders whose own code may run (sources.<name>.trust_remote_code), for every job's loaders
# (vocab_transfer.source_model.remote_code_allowed): jobs inherit the environment, and a job under SLURM parses
# this file again. The studies of a composite config add theirs to the ones before (one process parses them all).
trusted = [os.path.abspath(plan.source_model_dir(SimpleNamespace(source=name)))
           for name, source in plan.cfg.sources.items() if source.trust_remote_code]
earlier = os.environ.get(TRUSTED_ENV, "").split(os.pathsep) if workflow.modifier.is_module else []
os.environ[TRUSTED_ENV] = os.pathsep.join(dict.fromkeys(p for p in [*earlier, *trusted] if p))
cfg = plan.cfg
# The paths of this config's artifacts (vocab_transfer/workflow/paths.py): with `study: <name>` (a paper config),
# what it does not share by name lives under results/<name>/, its jobs' logs and benchmarks under logs/<name>/ and
# benchmarks/out/<name>/.
paths = plan.paths


def logs(name):
    """A job's log file, under logs/<study>/ for a config with `study`."""
    return os.path.join("logs", cfg.study or "", name)


def benchmarks(name):
    """A job's benchmark file, under benchmarks/out/<study>/ for a config with `study`."""
    return os.path.join("benchmarks", "out", cfg.study or "", name)


wildcard_constraints:
    corpus="|".join(cfg.corpora),
    hubtok="|".join(plan.hub_tokenizers) or "^$",
    lang="|".join(plan.languages),
    target="|".join(dict.fromkeys([*all_targets(cfg), *cfg.corpora, *filter(cfg.is_target, plan.languages)])),
    source="|".join(plan.sources),
    method="|".join(plan.method_names),
    slang="|".join(plan.languages),
    split="train|heldout",
    factorization="mf-[0-9a-f]{12}",
    run="|".join(cfg.lapt.runs) or "^$",
    task="|".join(plan.task_names) or "^$",
    srctask="|".join(cfg.zero_shot.sources) or "^$",
    setup="|".join(cfg.zero_shot.setups) or "^$",
    ftmodel="|".join(cfg.finetune.models) or "^$",
    seed=r"\d+",
    preset="|".join(FASTTEXT_PRESETS),
    table="|".join(cfg.tables) or "^$",
    figure="|".join(cfg.figures) or "^$",


def reproduce_command(wildcards, output):
    """The command that rebuilds an output, for its model card (targets before --configfile, which takes every word
    after it as a config file): run from the repository root, it works as printed (rerun_words)."""
    words, configs = rerun_words()
    return shlex.join([words[0], "--cores", "all", *words[1:], output[0],
                       *(["--configfile", *configs] if configs else [])])


# --- what each job asks the scheduler for (vocab_transfer.workflow.resources) ----------------------------
def resources_of(rule, extra=None, data_gb=None):
    """mem_mb and runtime of this rule's jobs, from their input size (or `data_gb(wildcards, input)`, the GB their
    costs scale with) or config `resources.<rule>` (vocab_transfer.workflow.resources)."""
    return {"mem_mb": res.mem_mb(config, rule, extra, data_gb), "runtime": res.runtime(config, rule, data_gb)}


def corpus_gb(wildcards, input):
    """GB of text prepare_corpus reads: the corpus's cap, a text source's files, or a hub corpus's assumed size."""
    return res.corpus_gb(config, wildcards.corpus)


def tokenizer_sample_mb(wildcards, input):
    """SentencePiece's memory for the sample of the corpus that train_tokenizer trains on."""
    if plan.pretrained_tokenizer(wildcards.target):
        return 0
    return res.tokenizer_sample_mb(res.read_json(input.stats), cfg.target_tokenizer(wildcards.target).input_sentence_size)


def fasttext_mem_mb(wildcards, input):
    """fastText's matrices for the shard's vocabulary (its meta.json; 250k, XLM-R's, before it exists)."""
    vocab = res.read_json(os.path.join(input.shards, "meta.json")).get("vocab_size", 250_000)
    return res.fasttext_mem_mb(cfg.fasttext.dim, vocab, cfg.fasttext.maxn)


def word_fasttext_mem_mb(wildcards, input):
    """Word-level fastText's matrices (a vocabulary of a million words, or `word_fasttext.max_words`)."""
    spec = cfg.word_fasttext
    return 0 if "pretrained" in input.keys() else res.fasttext_mem_mb(spec.dim, spec.max_words or 1_000_000, spec.maxn)

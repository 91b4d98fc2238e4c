# Config validation (before any job runs), the wildcards' constraints, and the Plan whose methods are the rules'
# input and params functions (vocab_transfer/workflow/plan/: a module per stage); resource functions at the end.
import gc
import json
import os
import shlex
import sys
from types import SimpleNamespace

# What is built by now (Snakemake itself, and below the workflow's modules) lives as long as the run: the garbage
# collector leaves it alone, where each full collection would walk it again (planning takes a quarter less time:
# benchmarks/planning.py).
gc.freeze()

from vocab_transfer.workflow.config import ConfigError, check_config, check_configfiles, fill_defaults
from vocab_transfer.workflow.views import all_targets, expand_snapshot_models
from vocab_transfer.workflow import paths
from vocab_transfer.workflow.rehearsal import check_no_mirrored_downloads, shrink
from vocab_transfer.workflow import resources as res
from vocab_transfer.workflow import restart
from vocab_transfer.workflow.bundles import BundleGroup, lapt_alone, pass_group_settings_to_slurm_jobs
from vocab_transfer.workflow.cluster import check_profile_filled, resource_values
from vocab_transfer.workflow.onstart import before_jobs
from vocab_transfer.artifacts import RERUN_ENV
from vocab_transfer.mirror import MIRROR_ENV
from vocab_transfer.data.token_fasttext import FASTTEXT_PRESETS
from vocab_transfer.methods import Need
from vocab_transfer.source_model import TRUSTED_ENV
from vocab_transfer.training.settings import FinetuneConfig
from vocab_transfer.workflow.plan import Plan, canonical
from vocab_transfer.workflow.studies import study_being_parsed

gc.freeze()


try:
    check_configfiles(workflow.config_settings.configfiles)  # a target written after --configfile
    shrink(config)  # a rehearsal: the config in miniature (vocab_transfer/workflow/rehearsal.py)
    check_config(config)
    fill_defaults(config)  # the defaults the model marks as part of the params (vocab_transfer.workflow.schema)
except ConfigError as e:
    raise WorkflowError(f"config error: {e}") from None
# The resources a profile gives (profiles/slurm/config.yaml): a placeholder left in them stops every call, -n
# included, naming the key and the profile file (vocab_transfer/workflow/cluster.py). A composite's studies
# are checked once, by rules/studies.smk.
if study_being_parsed() is None and (stop := check_profile_filled(workflow.resource_settings, sys.argv)):
    raise WorkflowError(stop)
# A SLURM job that runs a bundle of jobs (group-components in profiles/slurm) runs them side by side in one
# Snakemake (vocab_transfer/workflow/bundles.py).
pass_group_settings_to_slurm_jobs()


def bundled(name, gpus=0, alone=None):
    """A rule's `group:`: the group `name` where the profile's group-components bundle it, else none; a
    GPU rule gives its jobs' `gpus` (bundles fit one node), `alone` the jobs that keep a SLURM job alone."""
    return BundleGroup(workflow, name, gpus, alone)


if "finetune" in config:  # `steps: [N, ...]` entries become one model per LAPT snapshot, <name>-step<N>
    config["finetune"]["models"] = expand_snapshot_models(config)["finetune"].get("models", {})

# envs/vocab-transfer.yaml installs the package from this checkout by absolute path: Snakemake builds the
# environment from a copy of the file in .snakemake/conda/, where a path relative to envs/ would miss.
os.environ.update(VOCAB_TRANSFER_ROOT=os.path.abspath(workflow.basedir))
# A hub mirror (config hub_mirror; vocab_transfer/mirror.py): every download job copies from it. Without one, the
# downloads a mirror served (a rehearsal's miniatures) stop the run: their params are those of the real downloads.
if config.get("hub_mirror"):
    os.environ[MIRROR_ENV] = os.path.abspath(config["hub_mirror"])
elif study_being_parsed() is None and (stop := check_no_mirrored_downloads()):  # composite: studies.smk
    raise WorkflowError(stop)
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
# A locked directory (a killed run's locks): what to do, after Snakemake's error (workflow/restart.py)
restart.explain_lock(workflow.workdir_init, sys.argv)  # once per process: a composite's studies add none

# Before any job is submitted: the jobs against the cluster they go to (profile placeholders, GPU partitions,
# multi-node LAPT without SLURM), another run's SLURM jobs, the retries of resuming jobs, and on this machine
# the warm starter (vocab_transfer/workflow/onstart.py). Not inside a cluster job (*-jobstep).
onstart:
    before_jobs(workflow, lapt_nodes=plan.cfg.lapt.nodes)


# The rules' input and params functions: methods of one Plan of this config (vocab_transfer/workflow/plan/, a
# module per stage); cfg is the config typed (vocab_transfer/workflow/model.py).
plan = Plan(config)

# The model folders whose own code may run (sources.<name>.trust_remote_code), for every job's loaders
# (vocab_transfer.source_model.remote_code_allowed): jobs inherit the environment, and a job under SLURM parses
# this file again. The studies of a composite config add theirs to the ones before (one process parses them all).
trusted = [os.path.abspath(plan.source_model_dir(SimpleNamespace(source=name)))
           for name, source in plan.cfg.sources.items() if source.trust_remote_code]
earlier = os.environ.get(TRUSTED_ENV, "").split(os.pathsep) if study_being_parsed() else []
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
    """GB of text prepare_corpus reads: at most the corpus's cap, of the size download_corpus recorded
    (fetch.json), a text source's files, or a hub corpus's assumed size before its download."""
    fetched = input.get("fetched")
    return res.corpus_gb(config, wildcards.corpus, fetched if isinstance(fetched, str) else None)


def fasttext_gb(wildcards, input):
    """GB of token shards, scaled by fastText's dim, epochs and threads (res.fasttext_work): its
    thread-minutes per GB run on fasttext.threads."""
    spec = cfg.fasttext
    return res.data_gb(input, ("shards",)) * res.fasttext_work(spec.dim, spec.epochs, spec.threads)


def word_fasttext_gb(wildcards, input):
    """GB of text of word-level fastText, divided by its threads (res.fasttext_work)."""
    return res.data_gb(input, ("corpus",)) * res.fasttext_work(threads=cfg.word_fasttext.threads)


def profile_gpu_model(rule):
    """The GPU type the profile gives `rule` (set-resources: gpu_model), for its throughput; None when
    unset."""
    return resource_values(workflow.resource_settings.overwrite_resources.get(rule)).get("gpu_model")


def model_shape(wildcards, input, name):
    """The shape of a job's model: the config.json in its input `name`, else, before the download, the known
    shape (res.SOURCE_SHAPES) of the fine-tuned reference model or of the source; {} when unknown."""
    folder = input.get(name)
    shape = res.read_json(os.path.join(folder, "config.json")) if isinstance(folder, str) else {}
    if shape:
        return shape
    ftmodel = cfg.finetune.models.get(getattr(wildcards, "ftmodel", None) or "")
    return res.SOURCE_SHAPES.get(ftmodel.pretrained if ftmodel and ftmodel.pretrained
                                 else cfg.sources[wildcards.source].model, {})


def job_vocab(input, shape):
    """Rows of the job's vocabulary: its tokenizer's (input `tokenizer`), else the model's."""
    folder = input.get("tokenizer")
    return (res.tokenizer_vocab_size(folder) if isinstance(folder, str) else None) or shape.get(
        "text_config", shape).get("vocab_size")


def lapt_estimate(wildcards, input):
    """train_lapt's time (res.lapt_minutes) from its tokens, the source's shape (its config.json, else
    res.SOURCE_SHAPES before the download) with the run's vocabulary, and the GPUs the job gets (the profile's
    gpu_model); None for a run on CPUs or a source of unknown shape (lapt.runtime_min then)."""
    if not cfg.lapt.gpus:
        return None
    shape = model_shape(wildcards, input, "model")
    if not res.compute_params(shape, head=False):
        return None
    vocab = res.tokenizer_vocab_size(input.get("tokenizer")) or lapt_config_vocab(wildcards, shape)
    return res.lapt_minutes(cfg.lapt_run_config(wildcards.run), res.compute_params(shape, vocab),
                            cfg.lapt.gpus, cfg.lapt.nodes, profile_gpu_model("train_lapt"))


def lapt_mem_mb(wildcards, input):
    """train_lapt's host memory (res.training_mem_mb): every GPU's process loads the model (bf16 in bf16_pure,
    else float32) and a checkpoint gathers it once more; None for a source of unknown shape."""
    shape = model_shape(wildcards, input, "model")
    if not res.compute_params(shape, head=False):
        return None
    vocab = res.tokenizer_vocab_size(input.get("tokenizer")) or lapt_config_vocab(wildcards, shape)
    pure = cfg.lapt_run_config(wildcards.run).precision == "bf16_pure"
    return res.training_mem_mb(res.total_params(shape, vocab), processes=cfg.lapt.gpus,
                               weight_bytes=2 if pure else 4)


def task_work(wildcards, input, dataset, settings, model, runs, train, gpus, rule):
    """A fine-tuning or zero-shot job's time (res.finetune_minutes): its task's examples (the parquet files
    prepare_task wrote, else res.TASK_ROWS), the model's shape (input `model`), `runs` seeds or evaluations,
    the GPUs (the profile's gpu_model of `rule`); None on CPUs, for an unknown task size or model shape."""
    shape = model_shape(wildcards, input, model)
    rows = res.task_rows(input.get("data"), dataset)
    if not gpus or not res.compute_params(shape, head=False) or rows is None:
        return None
    return res.finetune_minutes(FinetuneConfig.parse(json.loads(settings)), rows,
                                res.compute_params(shape, head=False), runs=runs, train=train, gpus=gpus,
                                gpu_model=profile_gpu_model(rule))


def task_mem_mb(wildcards, input, dataset, settings, model, copies):
    """A fine-tuning or zero-shot job's host memory (res.training_mem_mb): the model in float32 and `copies`
    more (a checkpoint; a training swapped in), and its encoded task data; None for a model of unknown
    shape."""
    shape = model_shape(wildcards, input, model)
    if not res.compute_params(shape, head=False):
        return None
    rows = res.task_rows(input.get("data"), dataset) or {}
    tokens = sum(rows.values()) * FinetuneConfig.parse(json.loads(settings)).seq_len
    return res.training_mem_mb(res.total_params(shape, job_vocab(input, shape)), copies=copies,
                               data_tokens=tokens)


def finetune_estimate(wildcards, input):
    """finetune's time: each seed of the job trains `epochs` over the task's train split (task_work)."""
    return task_work(wildcards, input, plan.task_entry(wildcards.task).dataset,
                     plan.finetune_config(wildcards), "model", len(wildcards.seeds.split("+")), True,
                     cfg.finetune.gpus, "finetune")


def finetune_mem_mb(wildcards, input):
    return task_mem_mb(wildcards, input, plan.task_entry(wildcards.task).dataset,
                       plan.finetune_config(wildcards), "model", 1)


def source_task_estimate(wildcards, input):
    """train_source_task's time: one seed on the source task's train split (task_work)."""
    return task_work(wildcards, input, cfg.zero_shot.sources[wildcards.srctask].dataset,
                     plan.source_task_config(wildcards), "model", 1, True, cfg.zero_shot.gpus,
                     "train_source_task")


def source_task_mem_mb(wildcards, input):
    return task_mem_mb(wildcards, input, cfg.zero_shot.sources[wildcards.srctask].dataset,
                       plan.source_task_config(wildcards), "model", 1)


def zero_shot_estimate(wildcards, input):
    """evaluate_zero_shot's time: the test split once per (seed, source task) evaluation of the cell
    (task_work)."""
    return task_work(wildcards, input, plan.task_entry(wildcards.task).dataset,
                     plan.zero_shot_config(wildcards), "target", len(plan.zero_shot_evaluations(wildcards)),
                     False, cfg.zero_shot.gpus, "evaluate_zero_shot")


def zero_shot_mem_mb(wildcards, input):
    return task_mem_mb(wildcards, input, plan.task_entry(wildcards.task).dataset,
                       plan.zero_shot_config(wildcards), "target", 1)


def lapt_config_vocab(wildcards, shape):
    """The run's vocabulary before its tokenizer exists: the source's (a run with `source: true`), the target
    tokenizer's vocab_size, or both (an extended vocabulary: at most their sum)."""
    method = cfg.lapt.runs[wildcards.run].method
    source_vocab = shape.get("text_config", shape).get("vocab_size")
    target_vocab = cfg.target_tokenizer(wildcards.target).vocab_size if method else None
    if not method or not target_vocab:
        return source_vocab
    extended = Need.EXTENDED_TOKENIZER in plan.method_needs_of(method)
    return target_vocab + source_vocab if extended else target_vocab


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


def partition_gpus(rule, gpus):
    """GPUs a job of `rule` asks for: the config's `gpus` (a number, or a function of the job's wildcards),
    and at least one where the profile puts `rule` on a partition of its own (its set-resources entry names
    the GPU partition, which some sites refuse a job without a GPU on; res.partition_gpus). A job that runs on CPUs
    only there holds a GPU it does not use; remove the rule's entry from the profile to run all its jobs on
    the CPU partition."""
    default = resource_values(workflow.resource_settings.default_resources)
    own = resource_values(workflow.resource_settings.overwrite_resources.get(rule))
    if callable(gpus):
        return lambda wildcards: res.partition_gpus(gpus(wildcards), default, own)
    return res.partition_gpus(gpus, default, own)

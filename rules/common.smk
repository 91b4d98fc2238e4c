# Config validation (before any job runs) and the helper functions the rules call.
import hashlib
import json
import os
from types import SimpleNamespace

from snakemake.utils import validate

from vocab_transfer.config import (
    ConfigError,
    all_targets,
    check_config,
    expand_snapshot_models,
    figure_points,
    figure_runs,
    finetune_model_tasks,
    lapt_run_settings,
    lapt_run_targets,
    local_model_dir,
    method_targets,
    source_languages,
    zero_shot_training,
)
from vocab_transfer.methods import METHODS, method_config, method_needs
from vocab_transfer.methods import method_params as with_defaults
from vocab_transfer.methods.unks import factorization_spec
from vocab_transfer.workflow import paths
from vocab_transfer.workflow.needs import InitJob, Need
from vocab_transfer.workflow.needs import init_inputs as needs_inputs
from vocab_transfer.workflow import resources as res


try:
    check_config(config, workflow.source_path("../schemas/config.schema.yaml"))
except ConfigError as e:
    raise WorkflowError(f"config error: {e}") from None
validate(config, "../schemas/config.schema.yaml")  # fills in the schema's defaults
if "finetune" in config:  # `steps: [N, ...]` entries become one model per LAPT snapshot, <name>-step<N>
    config["finetune"]["models"] = expand_snapshot_models(config)["finetune"].get("models", {})

# glibc returns large freed blocks to the OS at once, and every training step then pays page faults
# for its activations again (17% of a CPU step in the demo). Jobs inherit these unless already set.
os.environ.setdefault("MALLOC_MMAP_THRESHOLD_", str(2**32))
os.environ.setdefault("MALLOC_TRIM_THRESHOLD_", str(2**32))
# Arrow's default mimalloc pool keeps the row groups a job has read long after it let them go (about 60 MB per
# 100 MB corpus part read); the system allocator reuses them.
os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")

SOURCES = list(config["sources"])
TARGETS = list(config["targets"])
METHOD_NAMES = list(config["methods"])
# results/tasks/<task>: finetune.tasks and the zero-shot source tasks
TASK_NAMES = [*config.get("finetune", {}).get("tasks", {}), *config.get("zero_shot", {}).get("sources", {})]


wildcard_constraints:
    lang="|".join(set(config["corpora"]) | set(config.get("word_vectors", {}))),
    target="|".join(all_targets(config)),
    source="|".join(SOURCES),
    method="|".join(METHOD_NAMES),
    slang="|".join(set(config["corpora"]) | set(config.get("word_vectors", {}))),
    split="train|heldout",
    factorization="mf-[0-9a-f]{12}",
    run="|".join(config.get("lapt", {}).get("runs", {})) or "^$",
    task="|".join(TASK_NAMES) or "^$",
    srctask="|".join(config.get("zero_shot", {}).get("sources", {})) or "^$",
    setup="|".join(config.get("zero_shot", {}).get("setups", {})) or "^$",
    ftmodel="|".join(config.get("finetune", {}).get("models", {})) or "^$",
    seed=r"\d+",
    table="|".join(config.get("tables", {})) or "^$",
    figure="|".join(config.get("figures", {})) or "^$",


def canonical(obj):
    """A config section as a params value: JSON with sorted keys, so reordering YAML keys reruns nothing
    (Snakemake compares params by their repr). Scripts read it with json.loads."""
    return json.dumps(obj, sort_keys=True)


def corpus_spec(wildcards):
    return canonical(config["corpora"][wildcards.lang])


def pretrain_spec(wildcards):
    """The `pretrain` recipe of a source (only sources that are pretrained here have one)."""
    return canonical(config["sources"][wildcards.source]["pretrain"])


def source_model_dir(wildcards):
    """Where a source model lives: pretrained here, a local folder, or downloaded into resources/."""
    source = config["sources"][wildcards.source]
    if "pretrain" in source:
        return paths.source_model(wildcards.source)
    local = local_model_dir(source)
    return str(local) if local is not None else paths.downloaded_model(wildcards.source)


def source_tokenizer_dir(wildcards):
    """The tokenizer of a source model: trained here before the model (pretrained sources), else the model's."""
    if "pretrain" in config["sources"][wildcards.source]:
        return paths.source_tokenizer(wildcards.source)
    return source_model_dir(wildcards)


def source_corpora(wildcards):
    """Training corpora of a source pretrained here (its tokenizer's training text)."""
    return [paths.corpus(lang, "train") for lang in config["sources"][wildcards.source]["pretrain"]["languages"]]


def source_pretrain_shards(wildcards, split="train"):
    """Its pretraining languages' corpora tokenized with its tokenizer."""
    languages = config["sources"][wildcards.source]["pretrain"]["languages"]
    return [paths.source_shards(wildcards.source, lang, split) for lang in languages]


def source_pretrain_heldout(wildcards):
    return source_pretrain_shards(wildcards, split="heldout")


def resources_of(rule, extra=None):
    """mem_mb and runtime of a rule (vocab_transfer.workflow.resources: from its input size, or config
    `resources.<rule>`)."""
    return {"mem_mb": res.mem_mb(config, rule, extra), "runtime": res.runtime(config, rule)}


def tokenizer_sample_mb(wildcards, input):
    """SentencePiece's memory for the sample of the corpus that train_tokenizer trains on."""
    if pretrained_tokenizer(wildcards.lang):
        return 0
    return res.tokenizer_sample_mb(res.read_json(input.stats), config["tokenizer"].get("input_sentence_size"))


def fasttext_mem_mb(wildcards, input):
    """fastText's matrices for the shard's vocabulary (its meta.json; 250k, XLM-R's, before it exists)."""
    vocab = res.read_json(os.path.join(input.shards, "meta.json")).get("vocab_size", 250_000)
    return res.fasttext_mem_mb(config["fasttext"], vocab)


def word_fasttext_mem_mb(wildcards, input):
    """Word-level fastText's matrices (a vocabulary of a million words, or `word_fasttext.max_words`)."""
    spec = config.get("word_fasttext", {})
    return 0 if "pretrained" in input.keys() else res.fasttext_mem_mb(spec, spec.get("max_words") or 1_000_000)


def source_fasttext_shards(wildcards):
    return paths.source_shards(wildcards.source, wildcards.slang, "train")


def method_spec(wildcards):
    return config["methods"][wildcards.method]


def method_params(wildcards):
    """The method's parameters as a JSON string (a parameter change reruns only that method's jobs)."""
    spec = method_spec(wildcards)
    return canonical({"kind": spec["kind"], **method_config(spec)})


def method_needs_of(method):
    spec = config["methods"][method]
    return method_needs(spec["kind"], method_config(spec))


def method_option(method, name):
    """A method parameter as the method will see it (config value, else the function's default)."""
    spec = config["methods"][method]
    return with_defaults(spec["kind"], method_config(spec))[name]


def init_inputs(wildcards):
    """Inputs of init_embeddings: the source model, the target tokenizer, the overlap, and what the method needs
    (vocab_transfer.workflow.needs: the registry the method declares its needs in)."""
    needs = method_needs_of(wildcards.method)
    job = InitJob(wildcards.source, wildcards.target, wildcards.method, with_defaults(*method_kind_params(wildcards.method)),
                  factorization_key(wildcards.method) if Need.FACTORS in needs else None)
    return {"model": source_model_dir(wildcards), "tokenizer": paths.tokenizer(wildcards.target),
            "overlap": paths.overlap(wildcards.source, wildcards.target), **needs_inputs(job, needs)}


def method_kind_params(method):
    spec = config["methods"][method]
    return spec["kind"], method_config(spec)


def factorization_key(method):
    """`mf-<hash>`: methods whose factorization settings agree share one factorize_source job."""
    spec = config["methods"][method]
    params = with_defaults(spec["kind"], method_config(spec))
    digest = hashlib.sha1(canonical(factorization_spec(params)).encode()).hexdigest()
    return f"mf-{digest[:12]}"


FACTORIZATIONS = {factorization_key(m): m for m in METHOD_NAMES if Need.FACTORS in method_needs_of(m)}


def factorization_params(wildcards):
    spec = config["methods"][FACTORIZATIONS[wildcards.factorization]]
    return canonical(factorization_spec(with_defaults(spec["kind"], method_config(spec))))


def factorization_gpus(wildcards):
    """A factorization with `device: auto` or `cuda` (MF-NEURAL at paper scale) gets a GPU where LAPT jobs get them."""
    on_gpu = json.loads(factorization_params(wildcards)).get("device") in ("auto", "cuda")
    return 1 if on_gpu and config.get("lapt", {}).get("gpus", 0) > 0 else 0


def extended_tokenizer_dir(wildcards):
    return paths.extended_tokenizer(wildcards.source, wildcards.target, wildcards.method)


def pretrained_tokenizer(lang):
    """The existing tokenizer a language uses instead of a trained one: a folder or hub id, or None."""
    spec = config["tokenizer"].get("pretrained", {}).get(lang)
    if isinstance(spec, dict):  # the source model's own tokenizer (saved with the model)
        return source_model_dir(SimpleNamespace(source=spec["source"]))
    return spec


def pretrained_tokenizer_dir(wildcards):
    """Input of train_tokenizer: the folder of a local/pretrained-here tokenizer (a hub id is fetched by the job)."""
    path = pretrained_tokenizer(wildcards.lang)
    return [] if path is None or not (path.startswith((paths.RESULTS + "/", paths.RESOURCES + "/"))
                                      or os.path.isdir(path)) else path


def eval_tokenizer(source, target, method):
    """The tokenizer a transferred model is evaluated with: the target's, or the extended one."""
    if Need.EXTENDED_TOKENIZER in method_needs_of(method):
        return paths.extended_tokenizer(source, target, method)
    return paths.tokenizer(target)


def eval_blocks(source, target, method):
    """Held-out text packed with that tokenizer."""
    if Need.EXTENDED_TOKENIZER in method_needs_of(method):
        return paths.extended_heldout_blocks(source, target, method)
    return paths.heldout_blocks(target)


def word_vector_inputs(wildcards):
    """A pretrained vector file named in config `word_vectors`, else the language's corpus to train on."""
    spec = config.get("word_vectors", {}).get(wildcards.lang)
    if spec is None:
        return {"corpus": paths.corpus(wildcards.lang, "train")}
    if "path" in spec:
        return {"pretrained": spec["path"]}
    return {"pretrained": paths.cc_word_vectors(wildcards.lang)}


def word_vector_spec(wildcards):
    """Only what this language's vectors depend on: the pretrained spec, or the training settings."""
    pretrained = config.get("word_vectors", {}).get(wildcards.lang)
    if pretrained:
        return canonical({"pretrained": pretrained})
    return canonical({"train": config.get("word_fasttext", {}), "seed": config["seed"]})


def dictionary_spec(wildcards):
    return config.get("dictionaries", {}).get(wildcards.slang, {}).get(wildcards.lang)


def dictionary_inputs(wildcards):
    """Files a dictionary is built from: nothing (freedict: a system package), a file, a MUSE download,
    or both languages' word lists (identical spellings)."""
    spec = dictionary_spec(wildcards)
    if spec is None:
        raise WorkflowError(f"no dictionary configured for {wildcards.slang} -> {wildcards.lang} (config 'dictionaries')")
    if spec["source"] == "file":
        return {"pairs": spec["path"]}
    if spec["source"] == "muse":
        return {"pairs": paths.muse_dictionary(wildcards.slang, wildcards.lang)}
    if spec["source"] == "identical":
        return {"source_words": paths.word_list(wildcards.slang),
                "target_words": paths.word_list(wildcards.lang)}
    return {}


def dictionary_params(wildcards):
    return canonical(dictionary_spec(wildcards))


def init_eval_results(wildcards=None):
    return expand(paths.init_eval("{source}", "{target}"), source=SOURCES, target=TARGETS)


def eval_methods(wildcards):
    """Methods evaluated on this target (a method's `targets` may leave some out)."""
    return [m for m in METHOD_NAMES if wildcards.target in method_targets(config, m)]


def eval_inputs(wildcards):
    """The source model, then per method: its init artifact, tokenizer and packed held-out text."""
    inputs = {"model": source_model_dir(wildcards)}
    s, t = wildcards.source, wildcards.target
    for m in eval_methods(wildcards):
        inputs[f"embeddings__{m}"] = paths.init(s, t, m)
        inputs[f"tokenizer__{m}"] = eval_tokenizer(s, t, m)
        inputs[f"blocks__{m}"] = eval_blocks(s, t, m)
    return inputs


def table_metadata():
    """Row labels and Table 4's column groups, passed to the table rule as params."""
    return canonical({
        "method_labels": {m: spec.get("label", m) for m, spec in config["methods"].items()},
        "in_pretraining": {s: source_languages(spec) for s, spec in config["sources"].items()},
        "targets": TARGETS,
        "methods": [m for m in METHOD_NAMES if method_targets(config, m)],  # `targets: []`: LAPT-only methods
    })


def source_hub_id(wildcards):
    return config["sources"][wildcards.source]["model"]


def extension_size(wildcards):
    return method_option(wildcards.method, "new_tokens")


# --- LAPT -----------------------------------------------------------------------------------------
LAPT = config.get("lapt", {})
LAPT_RUNS = list(LAPT.get("runs", {}))
LAPT_TARGETS = list(dict.fromkeys(t for run in LAPT_RUNS for t in lapt_run_targets(config, run)))


def lapt_embeddings(wildcards):
    """The run's init artifact; none for a run on the source model's own vocabulary (`source: true`)."""
    method = LAPT["runs"][wildcards.run].get("method")
    return paths.init(wildcards.source, wildcards.target, method) if method else []


def lapt_tokenizer(wildcards):
    method = LAPT["runs"][wildcards.run].get("method")
    return eval_tokenizer(wildcards.source, wildcards.target, method) if method else source_model_dir(wildcards)


def lapt_shards(wildcards, split):
    """The run's corpus tokenized with its tokenizer: the target's, an extended one, or the source model's."""
    method = LAPT["runs"][wildcards.run].get("method")
    s, t = wildcards.source, wildcards.target
    if not method:
        return paths.source_shards(s, t, split)
    if Need.EXTENDED_TOKENIZER in method_needs_of(method):
        return paths.extended_shards(s, t, method, split)
    return paths.shards(t, split)


def lapt_train_shards(wildcards):
    return lapt_shards(wildcards, "train")


def lapt_heldout_shards(wildcards):
    return lapt_shards(wildcards, "heldout")


def lapt_anchors(wildcards):
    """The source/target overlap, for the curve's ρ̄ to the source rows (none for an extended tokenizer)."""
    if lapt_tokenizer(wildcards) != paths.tokenizer(wildcards.target):
        return []
    return paths.overlap(wildcards.source, wildcards.target)


def lapt_config(wildcards):
    """The training settings plus the run's own (variant, ...), and the global seed, as JSON."""
    return canonical(lapt_run_settings(config, wildcards.run))


def lapt_curves(wildcards):
    return {f"curve__{run}": paths.lapt_curve(wildcards.source, wildcards.target, run)
            for run in LAPT_RUNS if wildcards.target in lapt_run_targets(config, run)}


def lapt_run_labels(wildcards):
    return canonical({run: spec.get("label", run) for run, spec in LAPT["runs"].items()})


def lapt_correlation_inputs(wildcards):
    """Curves of every LAPT run on the target, and the final models of those with the target's tokenizer."""
    out = lapt_curves(wildcards)
    for run in LAPT_RUNS:
        w = SimpleNamespace(source=wildcards.source, target=wildcards.target, run=run)
        if f"curve__{run}" in out and lapt_anchors(w):
            out[f"model__{run}"] = paths.lapt_model(wildcards.source, wildcards.target, run)
    return out | {"tokenizer": paths.tokenizer(wildcards.target), "heldout": paths.shards(wildcards.target, "heldout")}


def lapt_outputs(wildcards=None):
    """Figure 2 per LAPT language, the embedding correlations where a run has a new vocabulary (not on languages
    with `source: true` runs only, such as zero-shot source languages)."""
    swapped = [t for t in LAPT_TARGETS if any("method" in LAPT["runs"][r] and t in lapt_run_targets(config, r)
                                              for r in LAPT_RUNS)]
    return (expand(paths.figure("lapt_curves", "{source}", "{target}", "png"), source=SOURCES, target=LAPT_TARGETS)
            + expand(paths.figure("embedding_correlation", "{source}", "{target}", "png"), source=SOURCES, target=swapped))


# --- fine-tuning ----------------------------------------------------------------------------------
FINETUNE = config.get("finetune", {})
FT_TASKS = FINETUNE.get("tasks", {})
FT_MODELS = FINETUNE.get("models", {})


def task_entry(name):
    """A finetune.tasks entry, or a zero_shot.sources entry (source-language task data)."""
    return FT_TASKS[name] if name in FT_TASKS else config["zero_shot"]["sources"][name]


def task_spec(wildcards):
    """The dataset spec with the task type, so a loader serving several (`ud`: pos, dep) loads the right one; a
    zero-shot task reads its test split only (`test_only`)."""
    task = task_entry(wildcards.task)
    return canonical({"task": task["task"], **task["dataset"], **({"test_only": True} if "zero_shot" in task else {})})


def reference_model_dir(wildcards):
    """A reference model (`finetune.models.<m>.pretrained`): a local folder used in place, or a hub id downloaded
    by download_reference_model into resources/reference_models/."""
    ref = FT_MODELS[wildcards.ftmodel]["pretrained"]
    return ref if os.path.isdir(ref) else paths.reference_model(wildcards.ftmodel)


def reference_hub_id(wildcards):
    return FT_MODELS[wildcards.ftmodel]["pretrained"]


def finetune_inputs(wildcards):
    """The model to fine-tune (LAPT output or snapshot, source model + init artifact, the source model, or a
    reference model with its own tokenizer), its tokenizer and the prepared task data. A snapshot lives inside the
    run's `snapshots/` folder, which is what Snakemake tracks (finetune_model_dir names the step's folder)."""
    model, lang, s = FT_MODELS[wildcards.ftmodel], FT_TASKS[wildcards.task]["language"], wildcards.source
    inputs = {"data": paths.task_data(wildcards.task)}
    if "step" in model:
        inputs["snapshots"] = paths.lapt_snapshots(s, lang, model["lapt"])
    elif "lapt" in model:
        inputs["model"] = inputs["tokenizer"] = paths.lapt_model(s, lang, model["lapt"])
    elif "init" in model:
        inputs["model"] = source_model_dir(wildcards)
        inputs["embeddings"] = paths.init(s, lang, model["init"])
        inputs["tokenizer"] = eval_tokenizer(s, lang, model["init"])
    elif "pretrained" in model:
        inputs["model"] = inputs["tokenizer"] = reference_model_dir(wildcards)
    else:
        inputs["model"] = inputs["tokenizer"] = source_model_dir(wildcards)
    return inputs


def finetune_model_dir(wildcards, input):
    """--model and --tokenizer of a fine-tuning job: a LAPT snapshot's folder (step-XXXXXXXX/ in the run's
    snapshots/, vocab-swap Figures 4/8), else the model input (its tokenizer input for --tokenizer)."""
    step = FT_MODELS[wildcards.ftmodel].get("step")
    return f"{input.snapshots}/step-{step:08d}" if step is not None else input.model


def finetune_tokenizer_dir(wildcards, input):
    """--tokenizer: the snapshot's own (saved with it), else the tokenizer input."""
    return finetune_model_dir(wildcards, input) if "step" in FT_MODELS[wildcards.ftmodel] else input.tokenizer


def finetune_config(wildcards):
    return canonical({**FINETUNE.get("training", {}), **FT_TASKS[wildcards.task].get("training", {})})


def finetune_meta(wildcards):
    model, task = FT_MODELS[wildcards.ftmodel], FT_TASKS[wildcards.task]
    step = {"lapt_step": model["step"]} if "step" in model else {}  # snapshots only: other jobs keep their params
    return canonical({"source": wildcards.source, "model": wildcards.ftmodel,
                      "method": model.get("lapt") and LAPT["runs"][model["lapt"]].get("method") or model.get("init")
                      or ("reference" if model.get("pretrained") else "source"), "lapt": model.get("lapt"),
                      "task_name": wildcards.task, "language": task["language"], "dataset": task["dataset"]["loader"],
                      **step})


def finetune_embeddings_flag(wildcards, input):
    return f"--embeddings {input.embeddings}" if "embeddings" in input.keys() else ""


def cell_scores(source, task, model, seed):
    """The scores file of one (source, task, model, seed) cell: fine-tuning, or zero-shot evaluation."""
    if "zero_shot" in FT_TASKS[task]:
        return paths.zeroshot_scores(source, task, model, seed)
    return paths.finetune_scores(source, task, model, seed)


def finetune_scores(wildcards=None):
    """Every (source, task, model, seed) cell; a model's `tasks` may leave some tasks out."""
    return [cell_scores(s, t, m, seed) for s in SOURCES for m in FT_MODELS
            for t in finetune_model_tasks(config, m) for seed in FINETUNE.get("seeds", [])]


def finetune_outputs(wildcards=None):
    return [paths.finetune_table("md")] if FT_TASKS and FT_MODELS else []


def finetune_task_type(wildcards):
    return task_entry(wildcards.task)["task"]


# --- paper tables ---------------------------------------------------------------------------------
PAPER_TABLES = config.get("tables", {})


def paper_table_inputs(wildcards):
    """kind lapt: the curves of the table's runs and languages; otherwise the fine-tuning results of the
    table's cells that are part of the grid (others render as "—")."""
    spec = PAPER_TABLES[wildcards.table]
    cells = [n for names in spec["grid"]["rows"].values() for n in names if n] if "grid" in spec else None
    if spec.get("kind") == "lapt":
        return {f"curve__{r}__{lang}": paths.lapt_curve(s, lang, r) for s in SOURCES
                for r in cells or spec.get("rows") or LAPT_RUNS for lang in spec["languages"]
                if lang in lapt_run_targets(config, r)}
    rows = cells or spec.get("rows") or list(FT_MODELS)
    tasks = set(spec["tasks"]) if "grid" in spec else {
        t for names in (spec.get("groups") or {"": list(FT_TASKS)}).values() for t in names}
    files = [cell_scores(s, t, m, seed) for s in SOURCES for m in rows
             for t in finetune_model_tasks(config, m) if t in tasks for seed in FINETUNE.get("seeds", [])]
    return {f"scores__{i}": p for i, p in enumerate(files)}


def table_labels():
    """Row and column labels of the fine-tuning and paper tables, as [name, label] pairs in config order
    (canonical()'s sorted keys would reorder a mapping); scripts read them with dict()."""
    return canonical({"models": [[m, spec.get("label", m)] for m, spec in FT_MODELS.items()],
                      "tasks": [[t, spec.get("label", t)] for t, spec in FT_TASKS.items()],
                      "runs": [[r, spec.get("label", r)] for r, spec in LAPT.get("runs", {}).items()]})


def paper_table_spec(wildcards):
    """The table's spec as JSON; column groups and grid rows as [label, value] pairs, so that their order
    (which canonical()'s sorted keys would lose) is the config's."""
    spec = dict(PAPER_TABLES[wildcards.table])
    if "groups" in spec:
        spec["groups"] = list(map(list, spec["groups"].items()))
    if "grid" in spec:
        spec["grid"] = {**spec["grid"], "rows": list(map(list, spec["grid"]["rows"].items()))}
    return canonical(spec)


def paper_table_outputs(wildcards=None):
    return expand(paths.paper_table("{table}", "md"), table=list(PAPER_TABLES))


# --- paper figures --------------------------------------------------------------------------------
FIGURES = config.get("figures", {})


def figures_of_kind(kind):
    return [name for name, spec in FIGURES.items() if spec["kind"] == kind]


def figure_language(figure):
    spec = FIGURES[figure]
    return FT_TASKS[spec["task"]]["language"] if spec["kind"] == "lapt_finetune" else spec["language"]


def lapt_finetune_inputs(wildcards):
    """vocab-swap Figures 4/8: the held-out curves of the figure's LAPT runs and the scores of every model
    fine-tuned on its task from those runs (snapshots and final models), all seeds."""
    s, lang, spec = wildcards.source, figure_language(wildcards.figure), FIGURES[wildcards.figure]
    inputs = {f"curve__{r}": paths.lapt_curve(s, lang, r)
              for r in figure_runs(config, wildcards.figure)}
    for model, _, _ in figure_points(config, wildcards.figure):
        for seed in FINETUNE.get("seeds", []):
            inputs[f"scores__{model}__{seed}"] = paths.finetune_scores(s, spec["task"], model, seed)
    return inputs


def lapt_finetune_params(wildcards):
    """The figure's runs (with labels) and points [model, run, step], as JSON in config order."""
    spec, runs = FIGURES[wildcards.figure], figure_runs(config, wildcards.figure)
    return canonical({"title": spec.get("title", wildcards.figure),
                      "task": FT_TASKS[spec["task"]].get("label", spec["task"]),
                      "runs": [[r, LAPT["runs"][r].get("label", r)] for r in runs],
                      "points": [list(p) for p in figure_points(config, wildcards.figure)]})


def token_accuracy_inputs(wildcards):
    """vocab-swap Figure 6: each run's per-token accuracy and the provenance that splits its tokens into matched
    and not matched (the `matched_by` method's, else the run's own init)."""
    s, lang, spec = wildcards.source, figure_language(wildcards.figure), FIGURES[wildcards.figure]
    inputs = {}
    for r in figure_runs(config, wildcards.figure):
        method = spec.get("matched_by") or LAPT["runs"][r]["method"]
        inputs[f"accuracy__{r}"] = paths.lapt_token_accuracy(s, lang, r)
        inputs[f"provenance__{r}"] = paths.provenance(s, lang, method)
    return inputs


def token_accuracy_params(wildcards):
    spec = FIGURES[wildcards.figure]
    return canonical({**{k: v for k, v in spec.items() if k != "runs"}, "title": spec.get("title", wildcards.figure),
                      "runs": [[r, LAPT["runs"][r].get("label", r)] for r in figure_runs(config, wildcards.figure)]})


def paper_figure_outputs(wildcards=None):
    return [paths.figure(spec["kind"], s, name, "png") for name, spec in FIGURES.items() for s in SOURCES]


# --- zero-shot cross-lingual transfer (UNKs Everywhere §4.3) ---------------------------------------------------
ZERO_SHOT = config.get("zero_shot", {})
ZS_SOURCES, ZS_SETUPS = ZERO_SHOT.get("sources", {}), ZERO_SHOT.get("setups", {})


def source_task_model(wildcards):
    """The source side of a setup: its source-language LAPT output (variant adapter: source model + language
    adapter), else the source model."""
    setup, lang = ZS_SETUPS[wildcards.setup], ZS_SOURCES[wildcards.srctask]["language"]
    if setup["variant"] == "adapter":
        return paths.lapt_model(wildcards.source, lang, setup["lapt"])
    return source_model_dir(wildcards)


def source_task_inputs(wildcards):
    model = source_task_model(wildcards)
    return {"model": model, "tokenizer": model, "data": paths.task_data(wildcards.srctask)}


def source_task_config(wildcards):
    return canonical(zero_shot_training(config, wildcards.setup, wildcards.srctask))


def source_task_adapter(wildcards):
    return canonical(ZS_SETUPS[wildcards.setup].get("adapter", {}))


def source_task_variant(wildcards):
    return ZS_SETUPS[wildcards.setup]["variant"]


def source_task_type(wildcards):
    return ZS_SOURCES[wildcards.srctask]["task"]


def source_task_meta(wildcards):
    src = ZS_SOURCES[wildcards.srctask]
    return canonical({"source": wildcards.source, "source_task": wildcards.srctask, "source_language": src["language"],
                      "setup": wildcards.setup, "dataset": src["dataset"]["loader"]})


def zero_shot_setup(wildcards):
    return FT_MODELS[wildcards.ftmodel]["zero_shot"]


def zero_shot_inputs(wildcards):
    """The target model (the model's LAPT output on the task's language, or the source), the task's test data and
    per source task the source-side training of the model's setup and seed."""
    model, task = FT_MODELS[wildcards.ftmodel], FT_TASKS[wildcards.task]
    s, setup = wildcards.source, model["zero_shot"]
    target = (paths.lapt_model(s, task["language"], model["lapt"]) if "lapt" in model
              else source_model_dir(wildcards))
    inputs = {"target": target, "data": paths.task_data(wildcards.task)}
    for src in task["zero_shot"]:
        inputs[f"trained__{src}"] = paths.source_task_model(s, src, setup, wildcards.seed)
        inputs[f"scores__{src}"] = paths.source_task_scores(s, src, setup, wildcards.seed)
    return inputs


def zero_shot_flags(wildcards, input):
    """`--from <source task> <trained folder> <scores>` per source task of the zero-shot task."""
    return " ".join(f"--from {src} {input[f'trained__{src}']} {input[f'scores__{src}']}"
                    for src in FT_TASKS[wildcards.task]["zero_shot"])


def zero_shot_config(wildcards):
    """Evaluation settings (seq_len, eval_batch_size, precision, threads): the first source task's training."""
    return canonical(zero_shot_training(config, zero_shot_setup(wildcards), FT_TASKS[wildcards.task]["zero_shot"][0]))


def zero_shot_unseen(wildcards):
    return FT_TASKS[wildcards.task].get("unseen_labels", "error")


def zero_shot_meta(wildcards):
    return canonical({**json.loads(finetune_meta(wildcards)), "setup": zero_shot_setup(wildcards)})

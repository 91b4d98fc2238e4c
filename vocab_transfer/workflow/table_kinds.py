"""The config's paper tables (``tables.<name>``; rule make_paper_table), one class per ``kind`` in
:data:`TABLE_KINDS`: its keys (fields; ``NEEDS``), its rules against the rest of the config
(:meth:`~TableSpec.check_against`), the files it reads (:meth:`~TableSpec.records`) and how it is drawn with
each number's provenance (:meth:`~TableSpec.render`, by :mod:`vocab_transfer.report`). The config's union
:data:`Table` is made of :class:`TableSpec`'s direct subclasses; the corpus and vocabulary kinds share one,
:class:`VocabTable` (one entry of the schema), and a table of theirs is parsed as the class of its kind."""

from __future__ import annotations

import functools
import json
import operator
from pathlib import Path
from types import SimpleNamespace
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BeforeValidator, Field

from .. import lazy
from ..data.tokenizer import load_tokenizer
from ..eval.probe import PROBE_TASKS  # task types a linear probe reads
from ..io import read_parquet
from ..report import provenance
from ..typed import ByKind, ConfigError, Section, Seed, UniqueList, refuse_any
from .views import all_targets, finetune_model_tasks, lapt_run_targets, method_targets, task_target

pd = lazy.module("pandas")
report_tables = lazy.module("vocab_transfer.report.tables")
vocab_tables = lazy.module("vocab_transfer.report.vocab_tables")

Records = list[tuple[str, str, dict]]


class Grid(Section):
    columns: list[str] = Field(min_length=1, description="column labels")
    rows: dict[str, list[str | None]] = Field(description=(
        "row label -> one model/run name (or null) per column; with best_column, one more entry names the "
        "row's own Best cell (a reference model that fills only 'Best': vocab-swap Tables 12/13/15/16 mBERT,"
        " FlauBERT, German BERT)"))


class TableSpec(ByKind):
    """``tables.<name>``: a paper table (vocab_transfer.report.tables.paper_table); one class per ``kind``
    (:data:`Table`)."""

    FILL: ClassVar[tuple[str, ...]] = ("kind", "format")
    KINDS: ClassVar[dict[str, type[TableSpec]]] = {}
    #: How :meth:`render` draws a kind of scores: its function of :mod:`vocab_transfer.report.tables`, the
    #: labels of ``meta`` it takes (keyword -> meta key) and its function of the cells' provenance.
    DRAW: ClassVar[tuple[str, dict[str, str], str]]

    kind: str = Field(description="what the table shows (one class per kind; default finetune)")
    title: str | None = Field(None, description="heading, e.g. 'FOCUS Table 3: NER (F1)'")
    rows: list[str] | None = Field(None, description=(
        "finetune.models keys (kind lapt: lapt.runs keys; kind init: methods keys), in row order (default: "
        "all)"))
    languages: list[str] | None = Field(None, description=(
        "kind lapt: column groups (LAPT languages); corpus and vocabulary kinds: the languages"))
    steps: list[Annotated[int, Field(ge=0)]] | None = Field(None, description=(
        "kind lapt: optimizer steps per language"))
    value: Literal["perplexity", "loss", "bits_per_byte"] | None = Field(None, description=(
        "kinds lapt, init: exp(held-out loss), the loss, or the loss in bits per byte"))
    groups: dict[str, list[str]] | None = Field(None, description=(
        "column group title -> finetune.tasks keys (default: one group of all)"))
    caption: str | None = Field(None, description="text under the table")
    format: Literal["percent", "fraction"] = Field("percent", description=(
        "cell numbers: percent '84.2 ± 0.4' or fraction '0.842 (±0.004)' (vocab-swap's tables); MNLI cells "
        "show matched/mismatched: '0.842/0.846 (±0.004/0.004)'"))
    best_groups: list[Annotated[list[str], Field(min_length=1)]] | None = Field(None, description=(
        "groups of rows (grid row labels, else finetune.models keys) within which each column's best is "
        "bold; a row in no group is never bold (default: one group of all rows; vocab-swap Tables 1, 4-7 "
        "leave the Bert Baseline out, Table 2 marks the best swapped and the best reference model)"))
    grid: Grid | None = Field(None, description=(
        "two-way layout (vocab-swap Tables 1, 4-8, 11-16): rows x columns of finetune.models keys (kind "
        "lapt: lapt.runs keys); null = not part of the paper's grid ('—'); replaces `rows`/`groups`"))
    tasks: list[str] | None = Field(None, description=(
        "with grid (kind finetune): finetune.tasks keys, one block each"))
    source_languages: UniqueList[str] | None = Field(None, description=(
        "zero-shot cells from these source languages only (UNKs Everywhere Tables 5a-d, 9a-d); default: all "
        "source tasks of each cell (Table 3's average)"))
    best_column: bool | None = Field(None, description=(
        "with grid: add each row's best cell (vocab-swap Tables 12-16 'Best')"))
    sample: int | None = Field(None, ge=1, description=(
        "kinds overlap_sample (overlapping tokens sampled per language, paper: 500) and nearest_tokens "
        "(target tokens per language, default 10)"))
    seed: Seed | None = Field(None, description="kind overlap_sample: the seed of the sample (default 0)")
    top: int | None = Field(None, ge=1, description="kind overlap_longest: tokens per language (paper: 5)")
    method: str | None = Field(None, description=(
        "kind nearest_tokens (required): a methods key of kind wechsel, whose init records each token's most"
        " similar source token"))
    probes: dict[str, list[str]] | None = Field(None, description=(
        "kind init: column label -> finetune.tasks keys (nli, pos or ner; one per language) whose linear "
        "probe accuracy at init is shown next to the held-out value (WECHSEL Tables 7-8: NLI, POS)"))

    def records(self, plan) -> Records:
        """(input name, path, what it is) per file the table reads, as ``plan`` (a :class:`~.plan.Plan`)
        plans them: the inputs and manifest of rule make_paper_table."""
        raise NotImplementedError

    @classmethod
    def render(cls, inputs: dict, manifest: list, spec: dict, meta: dict) -> tuple[Any, str, list[dict]]:
        """(long-form table, markdown, provenance entries) from make_paper_table's ``inputs`` (name -> path),
        ``manifest`` (``[{"input": name, ...its record's fields}]``), ``spec`` (the table as written; groups
        and grid rows as [label, value] pairs) and ``meta`` (labels of models, tasks, runs and methods)."""
        draw, labels, cells = cls.DRAW
        frame, tagged = _read_tagged(inputs, manifest)
        table, md = getattr(report_tables, draw)(frame, spec, **{k: dict(meta[m]) for k, m in labels.items()})
        return table, md, getattr(provenance, cells)(table, tagged, spec)

    def grid_names(self) -> list[str]:
        """The model (or run) names of a grid table's cells, row by row, without the empty ones."""
        return [n for names in self.grid.rows.values() for n in names if n is not None] if self.grid else []

    def check_rows(self, name: str, known: dict, what: str) -> None:
        """The rows or grid cells name entries of ``known`` (the config's ``what``) with distinct labels, and
        ``best_groups`` name rows."""
        from .config import check_labels

        if self.grid:
            width = len(self.grid.columns)
            bad = [r for r, names in self.grid.rows.items()
                   if len(names) != width and not (len(names) == width + 1 and self.best_column)]
            best = ", plus optionally its own Best cell" if self.best_column else ""
            refuse_any(bad, f"tables.{name}.grid.rows {bad}: each row needs one entry (or null) per column "
                       f"of {self.grid.columns}{best}")
        bad = [m for m in (self.grid_names() if self.grid else self.rows or []) if m not in known]
        refuse_any(bad, f"tables.{name}: {bad} are not entries of {what}")
        if not self.grid:
            check_labels({m: known[m].label or m for m in self.rows or known}, f"tables.{name}.rows", what)
        row_labels = list(self.grid.rows) if self.grid else self.rows or list(known)
        grouped = [r for group in self.best_groups or [] for r in group]
        bad = sorted({r for r in grouped if r not in row_labels or grouped.count(r) > 1})
        refuse_any(bad, f"tables.{name}.best_groups: {bad} are not rows of the table (or are in two groups); "
                   f"rows: {row_labels}")


#: kind -> the class of a table of that kind (each adds itself).
TABLE_KINDS = TableSpec.KINDS


def _read_tagged(inputs: dict, manifest: list):
    """The records of a table's parquet inputs, each with its manifest fields: (the records, the same with the
    file each was read from, :data:`vocab_transfer.report.provenance.ARTIFACT`)."""
    frames = [provenance.read_tagged([inputs[rec["input"]]], **{k: v for k, v in rec.items() if k != "input"})
              for rec in manifest]
    tagged = pd.concat(frames or [provenance.read_tagged([])], ignore_index=True)
    return tagged.drop(columns=provenance.ARTIFACT), tagged


class FinetuneTable(TableSpec):
    kind: Literal["finetune"] = Field("finetune", description="downstream scores")
    DRAW = ("paper_table", {"models": "models", "tasks": "tasks"}, "paper_cells")

    def check_against(self, cfg, name: str) -> None:
        self.check_rows(name, cfg.finetune.models, "finetune.models")
        known_languages = {s.language for s in cfg.zero_shot.sources.values()}
        bad = [lang for lang in self.source_languages or [] if lang not in known_languages]
        refuse_any(bad, f"tables.{name}.source_languages: {bad} are not languages of zero_shot.sources "
                   f"({sorted(known_languages)})")
        tasks = self.tasks or [] if self.grid else [t for ts in (self.groups or {}).values() for t in ts]
        refuse_any(self.grid and not tasks, f"tables.{name}: a grid table of fine-tuning scores needs "
                   "'tasks'")
        bad = [t for t in tasks if t not in cfg.finetune.tasks]
        refuse_any(bad, f"tables.{name}: {bad} are not entries of finetune.tasks")

    def records(self, plan) -> Records:
        """The fine-tuning scores of the table's cells that are part of the grid (others render as "—")."""
        tasks = set(self.tasks or []) if self.grid else {
            t for names in (self.groups or {"": list(plan.ft_tasks)}).values() for t in names}
        files = [f for s in plan.sources for m in self.grid_names() or self.rows or list(plan.ft_models)
                 for t in finetune_model_tasks(plan.cfg, m) if t in tasks and plan.paired_task(s, t)
                 for f in plan.cell_scores(s, t, m)]
        return [(f"scores__{i}", p, {}) for i, p in enumerate(files)]


class LaptTable(TableSpec):
    kind: Literal["lapt"] = Field(description="held-out perplexity/loss of LAPT runs at given steps")
    NEEDS: ClassVar[tuple[str, ...]] = ("languages", "steps")
    DRAW = ("lapt_table", {"runs": "runs"}, "lapt_cells")

    def check_against(self, cfg, name: str) -> None:
        refuse_any(self.best_column, f"tables.{name}.best_column: a 'Best' column is for fine-tuning tables, "
                   "not kind lapt")
        self.check_rows(name, cfg.lapt.runs, "lapt.runs")

    def records(self, plan) -> Records:
        """The curves of the table's runs on its languages."""
        runs = [(s, r, lang) for s in plan.sources for r in self.grid_names() or self.rows or plan.lapt_runs
                for lang in self.languages if lang in lapt_run_targets(plan.cfg, r) and plan.paired(s, lang)]
        return [(f"curve__{i}", plan.paths.lapt_curve(s, lang, r), {"run": r, "language": lang, "source": s})
                for i, (s, r, lang) in enumerate(runs)]


class InitTable(TableSpec):
    kind: Literal["init"] = Field(description=(
        "init-time held-out perplexity/loss/bits per byte of `rows` (methods) on `languages`"))
    NEEDS: ClassVar[tuple[str, ...]] = ("rows", "languages")
    DRAW = ("init_table", {"labels": "methods"}, "init_table_cells")

    def check_against(self, cfg, name: str) -> None:
        from .config import check_labels, check_method_language

        bad = [m for m in self.rows if m not in cfg.methods]
        refuse_any(bad, f"tables.{name}.rows: {bad} are not entries of methods")
        known = all_targets(cfg)
        bad = [lang for lang in self.languages if lang not in known]
        refuse_any(bad, f"tables.{name}.languages: {bad} are not targets ({known}: targets, LAPT and "
                   "fine-tuning languages)")
        for m in self.rows:
            check_method_language(cfg, m, self.languages, f"tables.{name}.rows")
        check_labels({m: cfg.methods[m].label or m for m in self.rows}, f"tables.{name}.rows", "methods")
        for label, tasks in (self.probes or {}).items():
            where = f"tables.{name}.probes.{label}"
            bad = [t for t in tasks if t not in cfg.finetune.tasks]
            refuse_any(bad, f"{where}: {bad} are not entries of finetune.tasks")
            bad = [t for t in tasks if cfg.finetune.tasks[t].task not in PROBE_TASKS]
            refuse_any(bad, f"{where}: {bad} are not of a probed task type ({', '.join(PROBE_TASKS)})")
            langs = [task_target(cfg, t) for t in tasks]
            bad = [t for t, lang in zip(tasks, langs, strict=True) if lang not in self.languages]
            refuse_any(bad, f"{where}: the languages of {bad} are not among the table's languages "
                       f"{self.languages}")
            refuse_any(len(set(langs)) < len(langs),
                       f"{where}: one task per language (a column has one cell per language)")

    def records(self, plan) -> Records:
        """The init evaluations of each source and language, and the probes of the table's methods."""
        records = [(f"eval__{s}__{lang}", plan.paths.init_eval(s, lang), {}) for s in plan.sources
                   for lang in self.languages if plan.paired(s, lang)]
        return records + [(f"probe__{s}__{t}__{m}", plan.paths.init_probe(s, t, m),
                           {"probe": label, "language": plan.task_target(t)})
                          for label, tasks in (self.probes or {}).items() for t in tasks
                          for s in plan.sources for m in self.rows if plan.paired(s, plan.task_target(t))]


class VocabTable(TableSpec):
    kind: Literal["corpus_sizes", "overlap_counts", "overlap_sample", "vocab_coverage",
                   "overlap_groups", "overlap_longest", "nearest_tokens"] = Field(description=(
        "corpora and vocabularies of `languages` (vocab_transfer.report.vocab_tables): corpus_sizes "
        "(FOCUS Table 1), overlap_counts (FOCUS Table 8), overlap_sample (FOCUS Table 7), vocab_coverage "
        "(UNKs Table 1), overlap_groups (UNKs Table 6), overlap_longest (UNKs Table 7), nearest_tokens "
        "(WECHSEL Table 6)"))
    NEEDS: ClassVar[tuple[str, ...]] = ("languages",)
    #: What its cells are read from (the manifest's ``what``), and the table's column that tells a language's
    #: cells apart (:func:`vocab_transfer.report.provenance.vocab_cells`).
    READS: ClassVar[str] = "overlap"
    COLUMN: ClassVar[str | tuple[str, ...]] = ()
    #: The keys of the spec (-> their defaults) that :meth:`block` passes on after the languages.
    OPTIONS: ClassVar[dict[str, int]] = {}

    def check_against(self, cfg, name: str) -> None:
        bad = [lang for lang in self.languages if not cfg.is_target(lang)]
        refuse_any(bad, f"tables.{name}.languages: {bad} are neither targets nor corpora keys (targets: "
                   f"{cfg.target_names}; corpora: {sorted(cfg.corpora)})")

    def overlaps(self, plan, source: str) -> Records:
        """The overlaps of ``source`` with the table's languages it is paired with."""
        return [(f"overlap__{source}__{lang}", plan.paths.overlap(source, lang),
                 {"what": "overlap", "source": source, "language": lang})
                for lang in self.languages if plan.paired(source, lang)]

    def records(self, plan) -> Records:
        return [r for s in plan.sources for r in self.overlaps(plan, s)]

    @classmethod
    def render(cls, inputs, manifest, spec, meta):
        table, md = cls.draw(inputs, manifest, spec, meta, spec.get("title", spec["kind"]))
        files = pd.DataFrame([{provenance.ARTIFACT: inputs[rec["input"]],
                               **{k: v for k, v in rec.items() if k != "input"}} for rec in manifest])
        return table, md, cls.cells(table, files)

    @classmethod
    def draw(cls, inputs: dict, manifest: list, spec: dict, meta: dict, title: str) -> tuple[Any, str]:
        """(long-form table, markdown): a block per source model, ``cls.block(inputs, manifest, spec, meta,
        source, overlaps, head)`` (``overlaps``: the source's overlap with each language it reads)."""
        return vocab_tables.per_source(inputs, manifest, title,
                                       functools.partial(cls.block, inputs, manifest, spec, meta))

    @classmethod
    def block(cls, inputs, manifest, spec, meta, source, overlaps, head) -> tuple[Any, str]:
        """One source's block: ``vocab_tables.<kind>_table(overlaps, languages, *options, head)``."""
        return getattr(vocab_tables, f"{spec['kind']}_table")(
            overlaps, spec["languages"], *(spec.get(k, default) for k, default in cls.OPTIONS.items()), head)

    @classmethod
    def cells(cls, table, files) -> list[dict]:
        """The provenance entries of the table's cells: ``files`` has one record per input file, with its
        manifest fields and :data:`vocab_transfer.report.provenance.ARTIFACT`."""
        return provenance.vocab_cells(table, files, cls.READS, column=cls.COLUMN)


class CorpusSizesTable(VocabTable):
    """FOCUS Table 1: the size of each language's training corpus."""

    kind: Literal["corpus_sizes"]
    READS = "stats"

    def records(self, plan) -> Records:
        return [(f"stats__{lang}", plan.paths.corpus_stats(plan.cfg.target_corpus(lang)),
                 {"what": "stats", "language": lang}) for lang in self.languages]

    @classmethod
    def draw(cls, inputs, manifest, spec, meta, title):
        stats = {rec["language"]: json.loads(Path(inputs[rec["input"]]).read_text()) for rec in manifest}
        return vocab_tables.corpus_sizes_table(stats, spec["languages"], title)


class OverlapCountsTable(VocabTable):
    """FOCUS Table 8: overlapping tokens, all of them and those with a token-level fastText vector."""

    kind: Literal["overlap_counts"]

    def records(self, plan) -> Records:
        return super().records(plan) + [(f"fasttext__{lang}", plan.paths.fasttext_tokens(lang),
                                         {"what": "fasttext_tokens", "language": lang})
                                        for lang in self.languages]

    @classmethod
    def block(cls, inputs, manifest, spec, meta, source, overlaps, head):
        tokens = {lang: pd.read_parquet(path)
                  for lang, path in vocab_tables.input_files(inputs, manifest, "fasttext_tokens").items()}
        return vocab_tables.overlap_counts_table(overlaps, tokens, spec["languages"],
                                                 meta.get("fasttext_min_count"), head)

    @classmethod
    def cells(cls, table, files):
        return super().cells(table, files) + provenance.vocab_cells(
            table, files, "fasttext_tokens", keys=("language",), fields=["with_vector"])


class OverlapSampleTable(VocabTable):
    """FOCUS Table 7: a seeded sample of overlapping tokens per language, each with a category."""

    kind: Literal["overlap_sample"]
    COLUMN = "token"
    OPTIONS = {"sample": 500, "seed": 0}


class VocabCoverageTable(VocabTable):
    """UNKs Everywhere Table 1: the shares of target tokens that the source tokenizer cannot compose, and that
    overlap."""

    kind: Literal["vocab_coverage"]

    def records(self, plan) -> Records:
        records = []
        for s in plan.sources:
            records += self.overlaps(plan, s) + [(f"source_tokenizer__{s}",
                                                  plan.source_tokenizer_dir(SimpleNamespace(source=s)),
                                                  {"what": "source_tokenizer", "source": s})]
        return records + [(f"tokenizer__{lang}", plan.paths.tokenizer(lang),
                           {"what": "tokenizer", "language": lang}) for lang in self.languages]

    @classmethod
    def block(cls, inputs, manifest, spec, meta, source, overlaps, head):
        source_dir = next(inputs[r["input"]] for r in manifest if r["what"] == "source_tokenizer"
                          and r["source"] == source)
        targets = {lang: load_tokenizer(path)
                   for lang, path in vocab_tables.input_files(inputs, manifest, "tokenizer").items()}
        return vocab_tables.vocab_coverage_table(spec["languages"], targets, load_tokenizer(source_dir),
                                                 overlaps, head)

    @classmethod
    def cells(cls, table, files):
        return (provenance.vocab_cells(table, files, "tokenizer", keys=("language",),
                                       fields=["tokens", "unk_share", "overlap_share"])
                + provenance.vocab_cells(table, files, "overlap", fields=["overlap_share"])
                + provenance.vocab_cells(table, files, "source_tokenizer", keys=("source",),
                                         fields=["unk_share"], role="reference"))


class OverlapGroupsTable(VocabTable):
    """UNKs Everywhere Table 6: the overlapping tokens of each language by group."""

    kind: Literal["overlap_groups"]
    COLUMN = "group"


class OverlapLongestTable(VocabTable):
    """UNKs Everywhere Table 7: the longest overlapping (sub)words of each language."""

    kind: Literal["overlap_longest"]
    COLUMN = "rank"
    OPTIONS = {"top": 5}


class NearestTokensTable(VocabTable):
    """WECHSEL Table 6: sampled target tokens with the most similar source token that ``method`` recorded."""

    kind: Literal["nearest_tokens"]
    READS = "provenance"
    COLUMN = "token"

    def check_against(self, cfg, name: str) -> None:
        if self.method not in cfg.methods or cfg.methods[self.method].kind != "wechsel":
            raise ConfigError(f"tables.{name}.method: {self.method!r} is not a methods entry of kind "
                              "wechsel (the method that records each token's nearest source token)")
        bad = [lang for lang in self.languages if lang not in method_targets(cfg, self.method)]
        refuse_any(bad, f"tables.{name}.languages: {bad} are not targets of method {self.method!r}")

    def records(self, plan) -> Records:
        return [(f"provenance__{s}__{lang}", plan.paths.provenance(s, lang, self.method),
                 {"what": "provenance", "source": s, "language": lang})
                for s in plan.sources for lang in self.languages if plan.paired(s, lang)]

    @classmethod
    def block(cls, inputs, manifest, spec, meta, source, overlaps, head):
        found = {lang: read_parquet(path, kind="provenance")
                 for lang, path in vocab_tables.input_files(inputs, manifest, "provenance", source).items()}
        return vocab_tables.nearest_tokens_table(found, spec["languages"], spec.get("sample", 10),
                                                 spec.get("seed", 0), head)


def _finetune_by_default(table: Any) -> Any:
    return {"kind": "finetune", **table} if isinstance(table, dict) and "kind" not in table else table


def _of_its_kind(table: TableSpec) -> TableSpec:
    """``table`` as the class of its kind (a table of a :class:`VocabTable` kind is parsed as VocabTable)."""
    cls = TABLE_KINDS[table.kind]
    return table if type(table) is cls else cls.model_construct(table.model_fields_set, **dict(table))


#: A table, by its ``kind`` (finetune where it names none): the union of :class:`TableSpec`'s direct
#: subclasses, each table then as the class of its kind.
Table = Annotated[functools.reduce(operator.or_, TableSpec.__subclasses__()),  # type: ignore[valid-type]
                  Field(discriminator="kind"), BeforeValidator(_finetune_by_default),
                  AfterValidator(_of_its_kind)]

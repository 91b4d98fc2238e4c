"""Input and params functions of make_paper_table (rules/finetune.smk) and make_finetune_table: the paper
tables' inputs, specs and labels."""

from __future__ import annotations

from types import SimpleNamespace

from ..model import VOCAB_TABLE_KINDS
from ..views import finetune_model_tasks, lapt_run_targets, table_cells
from .base import PlanBase, canonical, label_of


class TablesPlan(PlanBase):
    """The input and params functions of the paper tables (rules/finetune.smk: make_paper_table,
    make_finetune_table)."""

    def paper_table_records(self, wildcards) -> list[tuple[str, str, dict]]:
        """(input name, path, what it is) per file of a paper table: kind lapt, the curves of the table's runs
        and languages; otherwise the fine-tuning results of the table's cells that are part of the grid
        (others render as "—")."""
        spec = self.cfg.tables[wildcards.table]
        if spec.kind in VOCAB_TABLE_KINDS:
            return self.vocab_table_records(spec)
        if spec.kind == "init":
            records = [(f"eval__{s}__{lang}", self.paths.init_eval(s, lang), {}) for s in self.sources
                       for lang in spec.languages if self.paired(s, lang)]
            return records + [(f"probe__{s}__{t}__{m}", self.paths.init_probe(s, t, m),
                               {"probe": label, "language": self.task_target(t)})
                              for label, tasks in (spec.probes or {}).items() for t in tasks
                              for s in self.sources for m in spec.rows if self.paired(s, self.task_target(t))]
        cells = table_cells(spec)
        if spec.kind == "lapt":
            runs = [(s, r, lang) for s in self.sources for r in cells or spec.rows or self.lapt_runs
                    for lang in spec.languages
                    if lang in lapt_run_targets(self.cfg, r) and self.paired(s, lang)]
            return [(f"curve__{i}", self.paths.lapt_curve(s, lang, r),
                     {"run": r, "language": lang, "source": s})
                    for i, (s, r, lang) in enumerate(runs)]
        rows = cells or spec.rows or list(self.ft_models)
        tasks = set(spec.tasks or []) if spec.grid else {
            t for names in (spec.groups or {"": list(self.ft_tasks)}).values() for t in names}
        files = [f for s in self.sources for m in rows for t in finetune_model_tasks(self.cfg, m)
                 if t in tasks and self.paired_task(s, t)
                 for f in self.cell_scores(s, t, m)]
        return [(f"scores__{i}", p, {}) for i, p in enumerate(files)]

    def vocab_table_records(self, spec) -> list[tuple[str, str, dict]]:
        """The files of a corpus or vocabulary table (vocab_transfer.report.vocab_tables): corpus statistics,
        or per source the overlaps (with the token-fastText token lists for overlap_counts, and the tokenizers
        for vocab_coverage)."""
        langs = spec.languages
        if spec.kind == "corpus_sizes":
            return [(f"stats__{lang}", self.paths.corpus_stats(self.cfg.target_corpus(lang)),
                     {"what": "stats", "language": lang}) for lang in langs]
        if spec.kind == "nearest_tokens":
            return [(f"provenance__{s}__{lang}", self.paths.provenance(s, lang, spec.method),
                     {"what": "provenance", "source": s, "language": lang})
                    for s in self.sources for lang in langs
                    if self.paired(s, lang)]
        records = []
        for s in self.sources:
            records += [(f"overlap__{s}__{lang}", self.paths.overlap(s, lang),
                         {"what": "overlap", "source": s,
                                                                           "language": lang})
                        for lang in langs if self.paired(s, lang)]
            if spec.kind == "vocab_coverage":
                records.append((f"source_tokenizer__{s}",
                                self.source_tokenizer_dir(SimpleNamespace(source=s)),
                                {"what": "source_tokenizer", "source": s}))
        if spec.kind == "overlap_counts":
            records += [(f"fasttext__{lang}", self.paths.fasttext_tokens(lang), {"what": "fasttext_tokens",
                                                                             "language": lang})
                        for lang in langs]
        if spec.kind == "vocab_coverage":
            records += [(f"tokenizer__{lang}", self.paths.tokenizer(lang),
                         {"what": "tokenizer", "language": lang})
                        for lang in langs]
        return records

    def paper_table_inputs(self, wildcards):
        return {name: path for name, path, _ in self.paper_table_records(wildcards)}

    def paper_table_manifest(self, wildcards):
        """What each input of the table is: ``[{"input": name, "run": ..., "language": ...}]`` (canonical
        JSON)."""
        return canonical([{"input": name, **fields}
                          for name, _, fields in self.paper_table_records(wildcards)])

    def table_labels(self):
        """Row and column labels of the fine-tuning and paper tables, as [name, label] pairs in config order
        (canonical()'s sorted keys would reorder a mapping); scripts read them with dict()."""
        return canonical({"models": [[m, label_of(m, spec)] for m, spec in self.ft_models.items()],
                          "tasks": [[t, label_of(t, spec)] for t, spec in self.ft_tasks.items()],
                          "runs": [[r, label_of(r, spec)] for r, spec in self.cfg.lapt.runs.items()],
                          "methods": [[m, label_of(m, spec)] for m, spec in self.cfg.methods.items()],
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
        return [self.paths.paper_table(t, "md") for t in self.cfg.tables]

"""Input and params functions of make_paper_table (rules/finetune.smk) and make_finetune_table: the paper
tables' inputs, specs and labels."""

from __future__ import annotations

from .base import PlanBase, canonical, label_of


class TablesPlan(PlanBase):
    def paper_table_records(self, wildcards) -> list[tuple[str, str, dict]]:
        """(input name, path, what it is) per file of a paper table, as its kind plans them
        (:meth:`vocab_transfer.workflow.table_kinds.TableSpec.records`)."""
        return self.cfg.tables[wildcards.table].records(self)

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

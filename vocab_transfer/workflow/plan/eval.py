"""Input and params functions of rules/eval.smk, tables.smk: the init-time loss of every method on a target,
the linear probes, and the init-loss table."""

from __future__ import annotations

from ..views import all_targets, lapt_run_targets, method_targets
from .base import PlanBase, canonical, label_of


class EvalPlan(PlanBase):
    def init_eval_results(self, wildcards=None):
        return [self.paths.init_eval(s, t) for s, t in self.pairs]

    def eval_methods(self, wildcards):
        """Methods evaluated on this target: those whose `targets` include it, and the rows of the init tables
        that show it (a LAPT or fine-tuning language is in no method's `targets`)."""
        shown = {m for spec in self.cfg.tables.values()
                 if spec.kind == "init" and wildcards.target in spec.languages for m in spec.rows}
        return [m for m in self.method_names if wildcards.target in method_targets(self.cfg, m) or m in shown]

    def probe_spec(self):
        """``eval.probe`` as written (defaults filled in) with the sample's seed, ``eval.seed``."""
        return canonical({**self.config["eval"].get("probe", {}), "seed": self.cfg.eval.seed})

    def probe_inputs(self, wildcards):
        """The source model, the method's init artifact and tokenizer on the task's language, its data."""
        s, m, lang = wildcards.source, wildcards.method, self.task_target(wildcards.task)
        return {"model": self.source_model_dir(wildcards), "embeddings": self.paths.init(s, lang, m),
                "tokenizer": self.eval_tokenizer(s, lang, m), "data": self.paths.task_data(wildcards.task)}

    def eval_inputs(self, wildcards):
        """The source model, then per method: its init artifact, tokenizer and packed held-out text."""
        inputs = {"model": self.source_model_dir(wildcards)}
        s, t = wildcards.source, wildcards.target
        for m in self.eval_methods(wildcards):
            inputs[f"embeddings__{m}"] = self.paths.init(s, t, m)
            inputs[f"tokenizer__{m}"] = self.eval_tokenizer(s, t, m)
            inputs[f"blocks__{m}"] = self.eval_blocks(s, t, m)
        return inputs

    def in_pretraining(self) -> dict[str, list[str]]:
        """Per source, the targets whose language it was pretrained on (Table 4's column groups): languages of
        a hub source (``languages``), or of the corpora a source pretrained here read."""
        cfg, out = self.cfg, {}
        targets = list(dict.fromkeys([*all_targets(cfg), *cfg.corpora]))
        for s, spec in cfg.sources.items():
            langs = {cfg.language(x) if spec.pretrain else x for x in spec.pretrain_languages}
            out[s] = [t for t in targets if cfg.target_language(t) in langs]
        return out

    def table_metadata(self):
        """Row labels and Table 4's column groups, passed to the table rule as params."""
        return canonical({"method_labels": {m: label_of(m, spec) for m, spec in self.cfg.methods.items()},
                          "in_pretraining": self.in_pretraining(), "targets": self.targets,
                          # `targets: []`: LAPT-only methods
                          "methods": [m for m in self.method_names if method_targets(self.cfg, m)]})

    # --- lm-eval benchmarks of decoder models (rules benchmark_model, make_benchmark_table) -----------------
    def benchmark_models(self) -> list[tuple[str, str, str, str]]:
        """``(source, target, stage, name)`` of every benchmarked model: per target with tasks, each source,
        its init exports (``eval.benchmarks.methods``, default every method on the target) and LAPT exports
        (``runs``, default every run on the target)."""
        spec, out = self.cfg.eval.benchmarks, []
        for t in spec.tasks:
            methods = [m for m in (spec.methods if spec.methods is not None else self.method_names)
                       if t in method_targets(self.cfg, m)]
            runs = [r for r in (spec.runs if spec.runs is not None else self.cfg.lapt.runs)
                    if t in lapt_run_targets(self.cfg, r)]
            for s in (s for s in self.sources if self.paired(s, t)):
                out += [(s, t, "source", s), *[(s, t, "init", m)
                                               for m in methods], *[(s, t, "lapt", r) for r in runs]]
        return out

    def benchmark_outputs(self, wildcards=None):
        return [self.paths.benchmark_table("md")] if self.cfg.eval.benchmarks.tasks else []

    def benchmark_scores(self, wildcards=None):
        return [self.paths.benchmark(*m) for m in self.benchmark_models()]

    def benchmark_spec(self, wildcards):
        """The target's tasks and the harness settings, as the job passes them to lm-eval."""
        spec = self.cfg.eval.benchmarks
        return canonical({"tasks": spec.tasks[wildcards.target], "include_path": spec.include_path,
                          "num_fewshot": spec.num_fewshot, "limit": spec.limit,
                          "batch_size": spec.batch_size})

    def benchmark_inputs(self, wildcards):
        """The model folder (the source's, or an init's or LAPT run's export) and fetched datasets."""
        s, t, stage = wildcards.source, wildcards.target, wildcards.stage
        model = (self.source_model_dir(wildcards) if stage == "source"
                 else self.export_folder(s, t, stage, wildcards.name))  # ExportPlan's
        return {"model": model, "data": self.paths.benchmark_data(t)}

    def benchmark_labels(self):
        """Row labels of the benchmark table: ``stage/name`` -> label."""
        labels = {f"source/{s}": f"Source ({s})" for s in self.sources}
        labels |= {f"init/{m}": label_of(m, spec) for m, spec in self.cfg.methods.items()}
        labels |= {f"lapt/{r}": f"{label_of(r, spec)} + LAPT" for r, spec in self.cfg.lapt.runs.items()}
        return canonical(labels)

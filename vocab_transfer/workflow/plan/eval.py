"""Input and params functions of rules/eval.smk, tables.smk: the init-time loss of every method on a target, the
linear probes, and the init-loss table."""

from __future__ import annotations

from ..config import all_targets, method_targets
from .base import PlanBase, canonical


class EvalPlan(PlanBase):
    """The input and params functions of rules/eval.smk and tables.smk."""

    def init_eval_results(self, wildcards=None):
        return [self.paths.init_eval(s, t) for s in self.sources for t in self.targets]

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
        """Per source, the targets whose language it was pretrained on (Table 4's column groups): languages of a hub
        source (``languages``), or of the corpora a source pretrained here read."""
        cfg, out = self.cfg, {}
        targets = list(dict.fromkeys([*all_targets(cfg), *cfg.corpora]))
        for s, spec in cfg.sources.items():
            langs = {cfg.language(x) if spec.pretrain else x for x in spec.pretrain_languages}
            out[s] = [t for t in targets if cfg.target_language(t) in langs]
        return out

    def table_metadata(self):
        """Row labels and Table 4's column groups, passed to the table rule as params."""
        return canonical({
            "method_labels": {m: spec.label or m for m, spec in self.cfg.methods.items()},
            "in_pretraining": self.in_pretraining(),
            "targets": self.targets,
            "methods": [m for m in self.method_names if method_targets(self.cfg, m)],  # `targets: []`: LAPT-only methods
        })

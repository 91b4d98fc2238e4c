"""Input and params functions of rules/export.smk: Hugging Face model folders of inits and LAPT runs, with
their model cards."""

from __future__ import annotations

from ..views import lapt_run_targets, method_targets
from .base import PlanBase, canonical


class ExportPlan(PlanBase):
    def exports(self) -> list[tuple[str, str, str, str]]:
        """``(source, target, stage, name)`` of every export: each init of the init table's cells (stage init,
        the method) and each LAPT model (stage lapt, the run)."""
        init = [(s, t, "init", m) for s, t in self.pairs for m in self.method_names
                if t in method_targets(self.cfg, m)]
        lapt = [(s, t, "lapt", r) for s in self.sources for r in self.lapt_runs
                for t in lapt_run_targets(self.cfg, r) if self.paired(s, t)]
        return init + lapt

    def export_folder(self, source: str, target: str, stage: str, name: str) -> str:
        return (self.paths.export_init if stage == "init" else self.paths.export_lapt)(source, target, name)

    def export_outputs(self, wildcards=None):
        """The folders of every export (:meth:`exports`; `snakemake export`)."""
        return [self.export_folder(*cell) for cell in self.exports()]

    def push_outputs(self, wildcards=None):
        """The receipts of every export pushed to the hub (`snakemake push`; ``export.push``)."""
        if self.cfg.export.push is None:
            raise ValueError("snakemake push: the config has no export.push (repo: a repository name "
                             "template such as my-org/{source}-{target}-{stage}-{name}; private: true), so "
                             "nothing says where to")
        return [self.paths.export_pushed(*cell) for cell in self.exports()]

    def push_inputs(self, wildcards):
        """The export folder, and its lm-eval scores where eval.benchmarks has them (for the model-index)."""
        s, t, stage, name = wildcards.source, wildcards.target, wildcards.stage, wildcards.name
        inputs = {"model": self.export_folder(s, t, stage, name)}
        if (s, t, stage, name) in self.benchmark_models():
            inputs["scores"] = self.paths.benchmark(s, t, stage, name)
        return inputs

    def push_private(self, wildcards) -> bool:
        """Whether a repository the push creates is private (``export.push.private``)."""
        return self.cfg.export.push.private

    def push_repo(self, wildcards):
        """The repository an export goes to (``export.push.repo`` filled in)."""
        return self.cfg.export.push.repo.format(source=wildcards.source, target=wildcards.target,
                                                stage=wildcards.stage, name=wildcards.name)

    def export_init_inputs(self, wildcards):
        """The source model, the init artifact and its evaluation tokenizer, the init-time loss of the
        target's methods and the target corpus's statistics."""
        s, t, m = wildcards.source, wildcards.target, wildcards.method
        return {"model": self.source_model_dir(wildcards), "embeddings": self.paths.init(s, t, m),
                "tokenizer": self.eval_tokenizer(s, t, m), "eval": self.paths.init_eval(s, t),
                "stats": self.paths.corpus_stats(self.cfg.target_corpus(t))}

    def export_lapt_inputs(self, wildcards):
        """The run's final model (with its tokenizer) and curve, the corpus's statistics, the source model
        (its card's license), and the init-time loss of the run's method where the init table has it."""
        s, t, run = wildcards.source, wildcards.target, wildcards.run
        method = self.cfg.lapt.runs[run].method
        inputs = {"model": self.paths.lapt_model(s, t, run), "curve": self.paths.lapt_curve(s, t, run),
                  "stats": self.paths.corpus_stats(self.cfg.target_corpus(t)),
                  "source": self.source_model_dir(wildcards)}  # its card's license
        if method and t in self.targets and t in method_targets(self.cfg, method):
            inputs["eval"] = self.paths.init_eval(s, t)
        return inputs

    def export_card(self, wildcards):
        """What the model card names from the config (JSON): source, method and parameters, LAPT settings."""
        s, t = wildcards.source, wildcards.target
        run = getattr(wildcards, "run", None)
        method = self.cfg.lapt.runs[run].method if run else wildcards.method
        spec = self.cfg.sources[s]
        source_model = spec.model or self.paths.source_model(s)
        card = {"source": s, "source_model": source_model, "target": t, "method": method or "source",
                "kind": self.cfg.methods[method].kind if method else "none",
                "params": self.cfg.methods[method].params if method else {}}
        if run:
            card |= {"lapt_run": run, "lapt_settings": self.cfg.lapt_run_settings(run)}
        if self.cfg.target_language(t) != t:  # a target named by what it is (de-bpe32k): its text's language
            card["language"] = self.cfg.target_language(t)
        return canonical(card)

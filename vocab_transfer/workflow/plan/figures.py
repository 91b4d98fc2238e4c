"""Input and params functions of the paper figures (config `figures`): rules plot_lapt_finetune
(rules/finetune.smk), plot_token_accuracy and plot_figure (rules/lapt.smk)."""

from __future__ import annotations

from .base import PlanBase, canonical, label_of


class FiguresPlan(PlanBase):
    def figures_of_kind(self, kind):
        return [name for name, spec in self.cfg.figures.items() if spec.kind == kind]

    def lapt_finetune_manifest(self, wildcards):
        """``[{"input": name, "kind": "curve", "run": r} | {"input": name, "kind": "scores", "model": m,
        "seeds": g}]`` of the figure's inputs (canonical JSON; ``g``: a job's seeds, ``1+2+3``)."""
        return canonical([{"input": n, **f} for n, _, f in self.figure_records(wildcards)])

    def lapt_finetune_params(self, wildcards):
        """The figure's runs (with labels) and points [model, run, step], as JSON in config order."""
        spec = self.cfg.figures[wildcards.figure]
        runs = spec.figure_runs(self.cfg)
        return canonical({"title": spec.title or wildcards.figure,
                          "task": label_of(spec.task, self.ft_tasks[spec.task]),
                          "runs": [[r, label_of(r, self.cfg.lapt.runs[r])] for r in runs],
                          "points": [list(p) for p in spec.figure_points(self.cfg)]})

    def token_accuracy_params(self, wildcards):
        spec = self.config["figures"][wildcards.figure]  # as written
        return canonical({**{k: v for k, v in spec.items() if k != "runs"},
                          "title": spec.get("title", wildcards.figure),
                          "runs": [[r, label_of(r, self.cfg.lapt.runs[r])]
                                   for r in self.cfg.figures[wildcards.figure].figure_runs(self.cfg)]})

    def figure_records(self, wildcards) -> list[tuple[str, str, dict]]:
        """The inputs of a figure (rules plot_lapt_finetune, plot_token_accuracy, plot_figure), as its kind
        plans them (:meth:`vocab_transfer.workflow.figure_kinds.FigureSpec.records`)."""
        return self.cfg.figures[wildcards.figure].records(self, wildcards.source)

    def figure_inputs(self, wildcards):
        return {name: path for name, path, _ in self.figure_records(wildcards)}

    def figure_params(self, wildcards):
        """The figure's spec (as written) and what each input is, as canonical JSON."""
        spec = self.config["figures"][wildcards.figure]
        return canonical({"spec": {**spec, "title": spec.get("title", wildcards.figure)},
                          "manifest": [{"input": n, **f} for n, _, f in self.figure_records(wildcards)]})

    def paper_figure_outputs(self, wildcards=None):
        return [self.paths.figure(spec.kind, s, name, "png")
                for name, spec in self.cfg.figures.items() for s in self.sources]

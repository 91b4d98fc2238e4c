"""Input and params functions of The paper figures (config `figures`): rules plot_lapt_finetune
(rules/finetune.smk), plot_token_accuracy and plot_figure (rules/lapt.smk)."""

from __future__ import annotations

from types import SimpleNamespace

from ..views import figure_language, figure_points, figure_runs
from .base import PlanBase, canonical, label_of


class FiguresPlan(PlanBase):
    """The input and params functions of the paper figures (rules/lapt.smk, finetune.smk)."""

    def figures_of_kind(self, kind):
        return [name for name, spec in self.cfg.figures.items() if spec.kind == kind]

    def lapt_finetune_inputs(self, wildcards):
        """vocab-swap Figures 4/8: the held-out curves of the figure's LAPT runs and the scores of every model
        fine-tuned on its task from those runs (snapshots and final models), all seeds."""
        s, lang, spec = (wildcards.source, figure_language(self.cfg, wildcards.figure),
                         self.cfg.figures[wildcards.figure])
        inputs = {f"curve__{r}": self.paths.lapt_curve(s, lang, r)
                  for r in figure_runs(self.cfg, wildcards.figure)}
        for model, _, _ in figure_points(self.cfg, wildcards.figure):
            for group in self.seed_groups(spec.task):
                inputs[f"scores__{model}__{group}"] = self.paths.finetune_scores(s, spec.task, model, group)
        return inputs

    def lapt_finetune_manifest(self, wildcards):
        """``[{"input": name, "kind": "curve", "run": r} | {"input": name, "kind": "scores", "model": m,
        "seeds": g}]`` of :meth:`lapt_finetune_inputs` (canonical JSON; ``g``: a job's seeds, ``1+2+3``)."""
        out = [{"input": f"curve__{r}", "kind": "curve", "run": r}
               for r in figure_runs(self.cfg, wildcards.figure)]
        task = self.cfg.figures[wildcards.figure].task
        for model, _, _ in figure_points(self.cfg, wildcards.figure):
            for group in self.seed_groups(task):
                out.append({"input": f"scores__{model}__{group}", "kind": "scores",
                            "model": model, "seeds": group})
        return canonical(out)

    def lapt_finetune_params(self, wildcards):
        """The figure's runs (with labels) and points [model, run, step], as JSON in config order."""
        spec, runs = self.cfg.figures[wildcards.figure], figure_runs(self.cfg, wildcards.figure)
        return canonical({"title": spec.title or wildcards.figure,
                          "task": label_of(spec.task, self.ft_tasks[spec.task]),
                          "runs": [[r, label_of(r, self.cfg.lapt.runs[r])] for r in runs],
                          "points": [list(p) for p in figure_points(self.cfg, wildcards.figure)]})

    def token_accuracy_inputs(self, wildcards):
        """vocab-swap Figure 6: each run's per-token accuracy and the provenance that splits its tokens into
        matched and not matched (the `matched_by` method's, else the run's own init)."""
        s, lang, spec = (wildcards.source, figure_language(self.cfg, wildcards.figure),
                         self.cfg.figures[wildcards.figure])
        inputs = {}
        for r in figure_runs(self.cfg, wildcards.figure):
            method = spec.matched_by or self.cfg.lapt.runs[r].method
            inputs[f"accuracy__{r}"] = self.paths.lapt_token_accuracy(s, lang, r)
            inputs[f"provenance__{r}"] = self.paths.provenance(s, lang, method)
        return inputs

    def token_accuracy_params(self, wildcards):
        spec = self.config["figures"][wildcards.figure]  # as written
        return canonical({**{k: v for k, v in spec.items() if k != "runs"},
                          "title": spec.get("title", wildcards.figure),
                          "runs": [[r, label_of(r, self.cfg.lapt.runs[r])]
                                   for r in figure_runs(self.cfg, wildcards.figure)]})

    def figure_records(self, wildcards) -> list[tuple[str, str, dict]]:
        """The inputs of a figure drawn by rule plot_figure (kinds curves, init_similarity, unk_scatter)."""
        if self.cfg.figures[wildcards.figure].kind == "unk_scatter":
            return self.unk_scatter_records(wildcards)
        if self.cfg.figures[wildcards.figure].kind == "sample_efficiency":
            return self.sample_efficiency_records(wildcards)
        return self.run_figure_records(wildcards)

    def figure_inputs(self, wildcards):
        return {name: path for name, path, _ in self.figure_records(wildcards)}

    def figure_params(self, wildcards):
        """The figure's spec (as written) and what each input is, as canonical JSON."""
        spec = self.config["figures"][wildcards.figure]
        return canonical({"spec": {**spec, "title": spec.get("title", wildcards.figure)},
                          "manifest": [{"input": n, **f} for n, _, f in self.figure_records(wildcards)]})

    def run_figure_records(self, wildcards) -> list[tuple[str, str, dict]]:
        """(input name, path, what it is) of a figure of kind curves (each run's curve per language) or
        init_similarity (each run's final model and its init tensor per language)."""
        s, spec = wildcards.source, self.cfg.figures[wildcards.figure]
        records = []
        for r in spec.runs:
            label = label_of(r, self.cfg.lapt.runs[r])
            for lang in spec.languages:
                if spec.kind == "curves":
                    records.append((f"curve__{r}__{lang}", self.paths.lapt_curve(s, lang, r),
                                    {"kind": "curve", "run": r, "label": label, "language": lang}))
                else:
                    records += [(f"model__{r}__{lang}", self.paths.lapt_model(s, lang, r),
                                 {"kind": "model", "run": r, "label": label, "language": lang}),
                                (f"init__{r}__{lang}", self.paths.init(s, lang, self.cfg.lapt.runs[r].method),
                                 {"kind": "init", "run": r, "label": label, "language": lang})]
        return records

    def unk_scatter_records(self, wildcards) -> list[tuple[str, str, dict]]:
        """UNKs Everywhere Figure 2: the model's scores on each task (all seeds), the source tokenizer, and
        per task language its tokenizer and overlap."""
        s, spec = wildcards.source, self.cfg.figures[wildcards.figure]
        records = [("source_tokenizer",
                    self.source_tokenizer_dir(SimpleNamespace(source=s)), {"kind": "source"})]
        for t in spec.tasks:
            lang = self.task_target(t)
            records += [(f"scores__{t}__{i}", f, {"kind": "scores", "task": t, "language": lang})
                        for i, f in enumerate(self.cell_scores(s, t, spec.model))]
            records += [(f"tokenizer__{t}", self.paths.tokenizer(lang),
                         {"kind": "tokenizer", "task": t, "language": lang}),
                        (f"overlap__{t}", self.paths.overlap(s, lang),
                         {"kind": "overlap", "task": t, "language": lang})]
        return records

    def sample_efficiency_records(self, wildcards) -> list[tuple[str, str, dict]]:
        """UNKs Everywhere Figure 3: per series model and task, the scores (all seeds) and the LAPT curve of
        the model's run on the task's language (its ``train_sequences`` column is the point's x)."""
        s, spec = wildcards.source, self.cfg.figures[wildcards.figure]
        records = []
        for label, models in spec.series.items():
            for m in models:
                run = self.ft_models[m].lapt
                for t in spec.tasks:
                    lang = self.task_target(t)
                    fields = {"series": label, "model": m, "task": t}
                    records.append((f"curve__{m}__{t}", self.paths.lapt_curve(s, lang, run),
                                    {"kind": "curve", **fields}))
                    records += [(f"scores__{m}__{t}__{i}", f, {"kind": "scores", **fields})
                                for i, f in enumerate(self.cell_scores(s, t, m))]
        return records

    def paper_figure_outputs(self, wildcards=None):
        return [self.paths.figure(spec.kind, s, name, "png")
                for name, spec in self.cfg.figures.items() for s in self.sources]

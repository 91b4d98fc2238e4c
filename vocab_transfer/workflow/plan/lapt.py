"""Input and params functions of rules/lapt.smk: a LAPT run's model, init, tokenizer, shards and settings, and
the per-target LAPT figures (curves, embedding correlations)."""

from __future__ import annotations

from types import SimpleNamespace

from ...methods import Need
from ..views import lapt_run_targets
from .base import PlanBase, canonical, label_of, shell_option


class LaptPlan(PlanBase):
    def lapt_embeddings(self, wildcards):
        """The run's init artifact; none for a run on the source model's own vocabulary (`source: true`)."""
        method = self.cfg.lapt.runs[wildcards.run].method
        return self.paths.init(wildcards.source, wildcards.target, method) if method else []

    def lapt_tokenizer(self, wildcards):
        method = self.cfg.lapt.runs[wildcards.run].method
        return (self.eval_tokenizer(wildcards.source, wildcards.target, method) if method
                else self.source_model_dir(wildcards))

    def lapt_shards(self, wildcards, split):
        """The run's corpus tokenized with its tokenizer: the target's, an extended one, or the source
        model's."""
        method = self.cfg.lapt.runs[wildcards.run].method
        s, t = wildcards.source, wildcards.target
        if not method:
            return self.paths.source_shards(s, self.cfg.target_corpus(t), split)
        if Need.EXTENDED_TOKENIZER in self.method_needs_of(method):
            return self.paths.extended_shards(s, t, method, split)
        return self.paths.shards(t, split)

    def lapt_train_shards(self, wildcards):
        return self.lapt_shards(wildcards, "train")

    def lapt_heldout_shards(self, wildcards):
        return self.lapt_shards(wildcards, "heldout")

    def lapt_anchors(self, wildcards):
        """The source/target overlap, for the curve's ρ̄ to the source rows (none for an extended
        tokenizer)."""
        if self.lapt_tokenizer(wildcards) != self.paths.tokenizer(wildcards.target):
            return []
        return self.paths.overlap(wildcards.source, wildcards.target)

    def lapt_embeddings_flag(self, wildcards, input):
        return shell_option("--embeddings", input.embeddings)

    def lapt_anchors_flag(self, wildcards, input):
        return shell_option("--anchors", input.anchors)

    def lapt_runtime(self, wildcards) -> int:
        """SLURM time limit of a LAPT job (minutes): ``lapt.runtime_min``, or the rehearsal's
        ``interrupt.runtime_min`` for the job it interrupts (:func:`~..rehearsal.interrupt_runtime`)."""
        from ..rehearsal import interrupt_runtime

        return interrupt_runtime(self.cfg, wildcards.run, wildcards.target) or self.cfg.lapt.runtime_min

    def lapt_config(self, wildcards):
        """The training settings plus the run's own (variant, ...), and the global seed, as JSON."""
        return canonical(self.cfg.lapt_run_settings(wildcards.run))

    def lapt_figure_records(self, wildcards) -> list[tuple[str, str, dict]]:
        """(input name, path, what it is) for the LAPT figures of a target: the curve of every run on it, and
        the final model of each such run that has the target's own tokenizer (the embedding correlations)."""
        s, t = wildcards.source, wildcards.target
        labels = {run: label_of(run, spec) for run, spec in self.cfg.lapt.runs.items()}
        runs = [run for run in self.lapt_runs if t in lapt_run_targets(self.cfg, run)]
        out = [(f"curve__{run}", self.paths.lapt_curve(s, t, run),
                {"kind": "curve", "run": run, "label": labels[run]}) for run in runs]
        for run in runs:
            if self.lapt_anchors(SimpleNamespace(source=s, target=t, run=run)):
                out.append((f"model__{run}", self.paths.lapt_model(s, t, run),
                            {"kind": "model", "run": run, "label": labels[run]}))
        return out

    def lapt_curves(self, wildcards):
        return {name: path for name, path, f in self.lapt_figure_records(wildcards) if f["kind"] == "curve"}

    def lapt_correlation_inputs(self, wildcards):
        """Curves of every LAPT run on the target, the final models of those with the target's tokenizer, the
        tokenizer and the held-out shard (its token frequencies)."""
        files = {name: path for name, path, _ in self.lapt_figure_records(wildcards)}
        return files | {"tokenizer": self.paths.tokenizer(wildcards.target),
                        "heldout": self.paths.shards(wildcards.target, "heldout")}

    def lapt_curve_manifest(self, wildcards):
        """``[{"input": name, "kind": "curve" | "model", "run": run, "label": label}]`` of the LAPT figures'
        inputs (canonical JSON)."""
        return canonical([{"input": name, **fields}
                          for name, _, fields in self.lapt_figure_records(wildcards)])

    def lapt_outputs(self, wildcards=None):
        """Figure 2 per LAPT language, the embedding correlations where a run has a new vocabulary (not on
        languages with `source: true` runs only, such as zero-shot source languages)."""
        swapped = [t for t in self.lapt_targets
                   if any(self.cfg.lapt.runs[r].method and t in lapt_run_targets(self.cfg, r)
                          for r in self.lapt_runs)]
        return ([self.paths.figure("lapt_curves", s, t, "png")
                 for s in self.sources for t in self.lapt_targets if self.paired(s, t)]
                + [self.paths.figure("embedding_correlation", s, t, "png")
                   for s in self.sources for t in swapped if self.paired(s, t)])

"""Input and params functions of rules/finetune.smk: task data, reference models and the fine-tuning jobs of
each (source, task, model) cell and group of seeds."""

from __future__ import annotations

import os
import re

from ..views import finetune_model_tasks, finetune_training
from .base import PlanBase, canonical, hub_spec, shell_option


class FinetunePlan(PlanBase):
    def task_spec(self, wildcards):
        """The dataset spec with the task type, so a loader serving several (`ud`: pos, dep) loads the right
        one; a zero-shot task reads its test split only (`test_only`)."""
        task = self.task_entry(wildcards.task)
        zero_shot = getattr(task, "zero_shot", None) is not None
        return canonical({"task": task.task, **task.dataset, **({"test_only": True} if zero_shot else {})})

    def reference_model_dir(self, wildcards):
        """A reference model (`finetune.models.<m>.pretrained`): a local folder used in place, or a hub id
        downloaded by download_reference_model into resources/reference_models/."""
        ref = self.ft_models[wildcards.ftmodel].pretrained
        return ref if os.path.isdir(ref) else self.paths.reference_model(wildcards.ftmodel)

    def reference_model_pattern(self) -> str:
        """The ``ftmodel`` wildcard of rule download_reference_model: this config's reference models named by
        hub id (a pattern that matches nothing where there are none), so that in a composite a study's copy of
        the rule never claims another study's model of the same name."""
        hub = [m for m, model in self.ft_models.items() if model.pretrained
               and not os.path.isdir(model.pretrained)]
        return "|".join(re.escape(m) for m in hub) or "(?!)"

    def reference_hub_spec(self, wildcards):
        model = self.ft_models[wildcards.ftmodel]
        return hub_spec(model.pretrained, model.revision)

    def finetune_inputs(self, wildcards):
        """The model to fine-tune (LAPT output or snapshot, source model + init artifact, the source model, or
        a reference model), its tokenizer and the prepared task data. Snakemake tracks a snapshot's run's
        `snapshots/` folder (:meth:`finetune_model_dir` names the step's folder)."""
        model, lang, s = self.ft_models[wildcards.ftmodel], self.task_target(wildcards.task), wildcards.source
        inputs = {"data": self.paths.task_data(wildcards.task)}
        if model.step is not None:
            inputs["snapshots"] = self.paths.lapt_snapshots(s, lang, model.lapt)
        elif model.lapt:
            inputs["model"] = inputs["tokenizer"] = self.paths.lapt_model(s, lang, model.lapt)
        elif model.init:
            inputs["model"] = self.source_model_dir(wildcards)
            inputs["embeddings"] = self.paths.init(s, lang, model.init)
            inputs["tokenizer"] = self.eval_tokenizer(s, lang, model.init)
        elif model.pretrained:
            inputs["model"] = inputs["tokenizer"] = self.reference_model_dir(wildcards)
        else:
            inputs["model"] = inputs["tokenizer"] = self.source_model_dir(wildcards)
        return inputs

    def finetune_model_dir(self, wildcards, input):
        """--model and --tokenizer of a fine-tuning job: a LAPT snapshot's folder (step-XXXXXXXX/ in the run's
        snapshots/, vocab-swap Figures 4/8), else the model input (its tokenizer input for --tokenizer)."""
        step = self.ft_models[wildcards.ftmodel].step
        return f"{input.snapshots}/step-{step:08d}" if step is not None else input.model

    def finetune_tokenizer_dir(self, wildcards, input):
        """--tokenizer: the snapshot's own (saved with it), else the tokenizer input."""
        step = self.ft_models[wildcards.ftmodel].step
        return self.finetune_model_dir(wildcards, input) if step is not None else input.tokenizer

    def finetune_config(self, wildcards):
        return canonical(finetune_training(self.cfg, wildcards.task))

    def finetune_meta(self, wildcards):
        model, task = self.ft_models[wildcards.ftmodel], self.ft_tasks[wildcards.task]
        # snapshots only: other jobs keep their params
        step = {"lapt_step": model.step} if model.step is not None else {}
        return canonical({"source": wildcards.source, "model": wildcards.ftmodel,
                          "method": model.lapt and self.cfg.lapt.runs[model.lapt].method or model.init
                          or ("reference" if model.pretrained else "source"), "lapt": model.lapt,
                          "task_name": wildcards.task, "language": task.language,
                          "dataset": task.dataset["loader"], **step})

    def finetune_embeddings_flag(self, wildcards, input):
        return shell_option("--embeddings", input.embeddings) if "embeddings" in input.keys() else ""

    def finetune_seeds(self, wildcards) -> str:
        """--seed of a fine-tuning job: the seeds of its files' name, space-separated."""
        return wildcards.seeds.replace("+", " ")

    def finetune_scores(self, wildcards=None):
        """The scores files of every (source, task, model) cell; a model's `tasks` may leave some out."""
        return [f for s in self.sources for m in self.ft_models for t in finetune_model_tasks(self.cfg, m)
                if self.paired_task(s, t)
                for f in self.cell_scores(s, t, m)]

    def finetune_outputs(self, wildcards=None):
        return [self.paths.finetune_table("md")] if self.ft_tasks and self.ft_models else []

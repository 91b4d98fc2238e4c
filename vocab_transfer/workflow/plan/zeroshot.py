"""Input and params functions of rules/zeroshot.smk: source-side trainings of the zero-shot setups and the
zero-shot cells."""

from __future__ import annotations

import json

from ..views import zero_shot_training
from .base import PlanBase, canonical


class ZeroShotPlan(PlanBase):
    def source_task_model(self, wildcards):
        """The source side of a setup: its source-language LAPT output (variant adapter: source model +
        language adapter), else the source model."""
        setup, lang = self.zs_setups[wildcards.setup], self.zs_sources[wildcards.srctask].language
        if setup.variant == "adapter":
            return self.paths.lapt_model(wildcards.source, lang, setup.lapt)
        return self.source_model_dir(wildcards)

    def source_task_inputs(self, wildcards):
        model = self.source_task_model(wildcards)
        return {"model": model, "tokenizer": model, "data": self.paths.task_data(wildcards.srctask)}

    def source_task_config(self, wildcards):
        return canonical(zero_shot_training(self.cfg, wildcards.setup, wildcards.srctask))

    def source_task_adapter(self, wildcards):
        """The setup's task adapter as written (schema defaults filled in); none for variants without one."""
        setup = self.config["zero_shot"]["setups"][wildcards.setup]
        return canonical(setup.get("adapter", {}) if setup["variant"] == "adapter" else {})

    def source_task_variant(self, wildcards):
        return self.zs_setups[wildcards.setup].variant

    def source_task_type(self, wildcards):
        return self.zs_sources[wildcards.srctask].task

    def source_task_meta(self, wildcards):
        src = self.zs_sources[wildcards.srctask]
        return canonical({"source": wildcards.source, "source_task": wildcards.srctask,
                          "source_language": src.language,
                          "setup": wildcards.setup, "dataset": src.dataset["loader"]})

    def zero_shot_setup(self, wildcards):
        return self.ft_models[wildcards.ftmodel].zero_shot

    def zero_shot_evaluations(self, wildcards) -> list[tuple[int, str]]:
        """The (seed, source task) pairs a zero-shot cell evaluates: every seed of ``finetune.seeds`` times
        every source task of the zero-shot task, seeds first."""
        return [(seed, src) for seed in self.seeds for src in self.ft_tasks[wildcards.task].zero_shot]

    def zero_shot_inputs(self, wildcards):
        """The target model (the model's LAPT output on the task's language, or the source), the task's test
        data and the list of the source-side trainings of the model's setup (one file: every cell of a task
        reads the same trainings, and 40 inputs per cell were two thirds of the UNKs grid's planning time)."""
        model, s = self.ft_models[wildcards.ftmodel], wildcards.source
        target = (self.paths.lapt_model(s, self.task_target(wildcards.task), model.lapt) if model.lapt
                  else self.source_model_dir(wildcards))
        return {"target": target, "data": self.paths.task_data(wildcards.task),
                "trainings": self.paths.zeroshot_trainings(s, wildcards.task, model.zero_shot)}

    def source_trainings(self, wildcards) -> list[dict]:
        """Per seed and source task of a zero-shot task, the source-side training of a setup: its source task,
        seed, folder and scores (rule list_source_trainings writes the list)."""
        s, setup = wildcards.source, wildcards.setup
        return [{"source_task": src, "seed": seed,
                 "trained": self.paths.source_task_model(s, src, setup, seed),
                 "scores": self.paths.source_task_scores(s, src, setup, seed)}
                for seed, src in self.zero_shot_evaluations(wildcards)]

    def source_trainings_json(self, wildcards) -> str:
        return json.dumps(self.source_trainings(wildcards))

    def source_trainings_inputs(self, wildcards):
        return {f"{kind}__{t['source_task']}__{t['seed']}": t[kind]
                for t in self.source_trainings(wildcards) for kind in ("trained", "scores")}

    def zero_shot_runtime(self, wildcards):
        """Minutes a zero-shot cell's job asks for: ``zero_shot.eval_runtime_min`` per evaluation (a seed and
        a source task) times its evaluations."""
        return self.cfg.zero_shot.eval_runtime_min * max(1, len(self.zero_shot_evaluations(wildcards)))

    def zero_shot_config(self, wildcards):
        """Evaluation settings (seq_len, eval_batch_size, precision, threads): the first source task's
        training."""
        return canonical(zero_shot_training(self.cfg, self.zero_shot_setup(wildcards),
                                            self.ft_tasks[wildcards.task].zero_shot[0]))

    def zero_shot_unseen(self, wildcards):
        return self.ft_tasks[wildcards.task].unseen_labels or "error"

    def zero_shot_meta(self, wildcards):
        return canonical({**json.loads(self.finetune_meta(wildcards)),
                          "setup": self.zero_shot_setup(wildcards)})

"""The config's paper figures (``figures.<name>``), one class per ``kind`` in :data:`FIGURE_KINDS`: its keys
(fields; ``NEEDS``), what it derives from the config (its language and LAPT runs), its rules against the rest
of the config (:meth:`~FigureSpec.check_against`) and the files it reads (:meth:`~FigureSpec.records`: the
inputs of rule plot_figure, which draws a kind by its entry of :data:`vocab_transfer.report.figures.FIGURES`,
or of the kind's own rule, plot_lapt_finetune or plot_token_accuracy). The config's union :data:`Figure` is
made of the classes."""

from __future__ import annotations

import functools
import operator
from types import SimpleNamespace
from typing import Annotated, ClassVar, Literal

from pydantic import Field

from ..typed import ByKind, ConfigError, UniqueList, refuse_any
from .views import finetune_model_tasks, lapt_run_targets, task_target

Records = list[tuple[str, str, dict]]
Provenance = Literal["special", "copied", "combined", "mapped", "random"]  # methods.base labels


class FigureSpec(ByKind):
    """``figures.<name>``: a paper figure drawn from LAPT runs (vocab_transfer.report.plots); one class per
    ``kind`` (:data:`Figure`), each naming the keys its kind needs (``NEEDS``)."""

    FILL: ClassVar[tuple[str, ...]] = ("value", "matched_by", "matched", "max_step", "steps")
    KINDS: ClassVar[dict[str, type[FigureSpec]]] = {}

    kind: str = Field(description="what the figure draws (one class per kind)")
    title: str | None = Field(None, description="figure title (default: the figure's name)")
    runs: UniqueList[str] | None = Field(None, min_length=1, description=(
        "lapt.runs keys, in legend order (default: every run on the figure's language)"))
    task: str | None = Field(None, description=(
        "kind lapt_finetune: a finetune.tasks key; its language is the figure's"))
    language: str | None = Field(None, description="kind token_accuracy: the LAPT target language")
    languages: UniqueList[str] | None = Field(None, min_length=1, description=(
        "kinds curves, init_similarity (required): LAPT target languages, one panel each"))
    value: Literal["perplexity", "loss", "bits_per_byte"] = Field("perplexity", description=(
        "kind curves: exp(held-out loss), the loss, or the loss in bits per byte"))
    model: str | None = Field(None, description=(
        "kind unk_scatter (required): the finetune.models key whose scores are drawn"))
    tasks: UniqueList[str] | None = Field(None, min_length=1, description=(
        "kinds unk_scatter (one point per task language, at least 2) and sample_efficiency (the scores "
        "averaged; required): finetune.tasks keys"))
    series: dict[str, list[str]] | None = Field(None, description=(
        "kind sample_efficiency (required): line label -> finetune.models keys fine-tuned from LAPT runs on "
        "different amounts of data (lapt train_sequences), one point each"))
    matched_by: str | None = Field(None, description=(
        "kind token_accuracy: the methods key whose init provenance splits the tokens of every run (e.g. "
        "Dict Match's, to compare Reinit on the same tokens); null: each run's own"))
    matched: list[Provenance] = Field(["copied", "mapped"], description=(
        "kind token_accuracy: provenance labels counted as matched (a row from one source token: copied for "
        "identical tokens, mapped for dictionary/frequency matches)"))
    max_step: int | None = Field(None, ge=0, description=(
        "kind token_accuracy: last LAPT step of the accuracy curve (vocab-swap: 5000; null: the whole run)"))
    steps: list[Annotated[int, Field(ge=0)]] = Field(default_factory=list, description=(
        "kind token_accuracy (required): evaluation steps whose per-token accuracy distribution is drawn "
        "(vocab-swap: 1000, 5000)"))

    def figure_language(self, cfg) -> str | None:
        """The language of the figure: its ``language``."""
        return self.language

    def figure_runs(self, cfg) -> list[str]:
        """The figure's LAPT runs: its ``runs``, else every run on its language."""
        if self.runs is not None:
            return list(self.runs)
        lang = self.figure_language(cfg)
        return [r for r in cfg.lapt.runs if lang in lapt_run_targets(cfg, r)]

    def records(self, plan, source: str) -> Records:
        """(input name, path, what it is) per file the figure of ``source`` reads, as ``plan`` (a
        :class:`~.plan.Plan`) plans them: the inputs of the rule that draws it."""
        raise NotImplementedError

    def checked_runs(self, cfg, where: str) -> list[str]:
        """The figure's runs, which are LAPT runs on its language (at least one)."""
        lang, names = self.figure_language(cfg), self.figure_runs(cfg)
        bad = [r for r in names if r not in cfg.lapt.runs]
        refuse_any(bad, f"{where}.runs: {bad} are not entries of lapt.runs")
        bad = [r for r in names if lang not in lapt_run_targets(cfg, r)]
        refuse_any(bad or not names, f"{where}.runs: {bad or 'none'} of the LAPT runs on {lang!r}")
        return names


#: kind -> the class of a figure of that kind (each adds itself).
FIGURE_KINDS = FigureSpec.KINDS


class LaptFinetuneFigure(FigureSpec):
    kind: Literal["lapt_finetune"] = Field(description=(
        "held-out MLM loss during LAPT and the task's test score after fine-tuning at LAPT snapshots "
        "(vocab-swap Figures 4/8)"))
    NEEDS: ClassVar[tuple[str, ...]] = ("task",)

    def figure_language(self, cfg) -> str | None:
        """The language of the figure's task."""
        return task_target(cfg, self.task)

    def figure_points(self, cfg) -> list[tuple[str, str, int]]:
        """``(finetune model, LAPT run, LAPT step)``: every model fine-tuned on the figure's task from one of
        its runs, a snapshot at its ``step``, the run's final model at the run's last step. Expects
        :func:`~.views.expand_snapshot_models` to have run."""
        runs, points = self.figure_runs(cfg), []
        for name, model in cfg.finetune.models.items():
            if model.lapt in runs and self.task in finetune_model_tasks(cfg, name):
                stages = cfg.lapt_run_config(model.lapt).stages()
                step = model.step if model.step is not None else sum(n for n, _ in stages)
                points.append((name, model.lapt, step))
        return points

    def records(self, plan, source: str) -> Records:
        """The curves of the figure's LAPT runs and the scores of every model fine-tuned on its task from
        those runs (snapshots and final models), all seeds."""
        lang = self.figure_language(plan.cfg)
        return [(f"curve__{r}", plan.paths.lapt_curve(source, lang, r), {"kind": "curve", "run": r})
                for r in self.figure_runs(plan.cfg)] + [
            (f"scores__{m}__{g}", plan.paths.finetune_scores(source, self.task, m, g),
             {"kind": "scores", "model": m, "seeds": g})
            for m, _, _ in self.figure_points(plan.cfg) for g in plan.seed_groups(self.task)]

    def check_against(self, cfg, name: str) -> None:
        where, ft = f"figures.{name}", cfg.finetune
        if self.task not in ft.tasks:
            raise ConfigError(f"{where}.task: {self.task!r} is not an entry of finetune.tasks")
        if ft.tasks[self.task].zero_shot is not None:
            raise ConfigError(f"{where}.task: {self.task!r} is a zero-shot task; the figure reads "
                              "in-language fine-tuning scores")
        names = self.checked_runs(cfg, where)
        refuse_any(not self.figure_points(cfg), f"{where}: no finetune.models entry fine-tunes the runs "
                   f"{names} on {self.task!r} (e.g. {{lapt: <run>, steps: [...]}} for LAPT snapshots, "
                   "{lapt: <run>} for the end)")


class TokenAccuracyFigure(FigureSpec):
    kind: Literal["token_accuracy"] = Field(description=(
        "held-out accuracy of the most frequent tokens, matched vs not matched by the init (vocab-swap "
        "Figure 6)"))
    NEEDS: ClassVar[tuple[str, ...]] = ("language", "steps")

    def check_against(self, cfg, name: str) -> None:
        where, runs = f"figures.{name}", cfg.lapt.runs
        names = self.checked_runs(cfg, where)
        bad = [r for r in names if not runs[r].method] if not self.matched_by else []
        refuse_any(bad, f"{where}: runs {bad} keep the source vocabulary (no init provenance to split their "
                   "tokens by): set matched_by to a methods entry, or leave them out of runs")
        refuse_any(self.matched_by is not None and self.matched_by not in cfg.methods,
                   f"{where}.matched_by: {self.matched_by!r} is not an entry of 'methods'")
        for run in names:
            settings = cfg.lapt_run_config(run)
            refuse_any(not settings.token_accuracy_top, f"{where}: LAPT run {run!r} records no per-token "
                       f"accuracy; set token_accuracy_top in lapt.training or lapt.runs.{run}")
            missing = [s for s in self.steps if s not in settings.eval_steps()]
            refuse_any(missing, f"{where}.steps: {missing} are not evaluation steps of LAPT run {run!r} "
                       f"(every eval_every = {settings.eval_every} steps of each stage, and its end)")

    def records(self, plan, source: str) -> Records:
        """Each run's per-token accuracy and the provenance that splits its tokens into matched and not
        matched (the ``matched_by`` method's, else the run's own init)."""
        lang, runs = self.figure_language(plan.cfg), plan.cfg.lapt.runs
        return [record for r in self.figure_runs(plan.cfg) for record in (
            (f"accuracy__{r}", plan.paths.lapt_token_accuracy(source, lang, r), {}),
            (f"provenance__{r}", plan.paths.provenance(source, lang, self.matched_by or runs[r].method), {}))]


class CurvesFigure(FigureSpec):
    kind: Literal["curves"] = Field(description=(
        "held-out value of some runs over steps, one panel per language (WECHSEL Figures 3-5)"))
    NEEDS: ClassVar[tuple[str, ...]] = ("runs", "languages")

    def check_against(self, cfg, name: str) -> None:
        bad = [r for r in self.runs if r not in cfg.lapt.runs]
        refuse_any(bad, f"figures.{name}.runs: {bad} are not entries of lapt.runs")
        bad = [f"{r} on {lang}" for r in self.runs for lang in self.languages
               if lang not in lapt_run_targets(cfg, r)]
        refuse_any(bad, f"figures.{name}: LAPT runs {bad} are not planned (the run's targets)")

    def records(self, plan, source: str) -> Records:
        """Each run's curve per language."""
        return [(f"curve__{r}__{lang}", plan.paths.lapt_curve(source, lang, r),
                 {"kind": "curve", "run": r, "label": _label(plan, r), "language": lang})
                for r in self.runs for lang in self.languages]


class InitSimilarityFigure(CurvesFigure):
    kind: Literal["init_similarity"] = Field(description=(
        "cosine similarity of each token's embedding after LAPT to its initialization (WECHSEL Figure 6)"))

    def check_against(self, cfg, name: str) -> None:
        super().check_against(cfg, name)
        bad = [r for r in self.runs if not cfg.lapt.runs[r].method or cfg.lapt_run_config(r).factorized]
        refuse_any(bad, f"figures.{name}.runs: {bad} start from no init tensor (or a factorized one)")

    def records(self, plan, source: str) -> Records:
        """Each run's final model and its init tensor per language."""
        return [(f"{kind}__{r}__{lang}", path,
                 {"kind": kind, "run": r, "label": _label(plan, r), "language": lang})
                for r in self.runs for lang in self.languages
                for kind, path in (("model", plan.paths.lapt_model(source, lang, r)),
                                   ("init", plan.paths.init(source, lang, plan.cfg.lapt.runs[r].method)))]


class UnkScatterFigure(FigureSpec):
    kind: Literal["unk_scatter"] = Field(description=(
        "a model's test score per language against the UNK and overlap share of the language's vocabulary "
        "(UNKs Everywhere Figure 2)"))

    def check_against(self, cfg, name: str) -> None:
        if self.model not in cfg.finetune.models or not self.tasks or len(self.tasks) < 2:
            raise ConfigError(f"figures.{name}: kind unk_scatter needs 'model' (a finetune.models key, got "
                              f"{self.model!r}) and 'tasks' (at least 2)")
        bad = [t for t in self.tasks if t not in finetune_model_tasks(cfg, self.model)]
        refuse_any(bad, f"figures.{name}.tasks: {bad} are not tasks of finetune.models.{self.model}")

    def records(self, plan, source: str) -> Records:
        """The model's scores on each task (all seeds), the source tokenizer, and per task language its
        tokenizer and overlap."""
        records = [("source_tokenizer",
                    plan.source_tokenizer_dir(SimpleNamespace(source=source)), {"kind": "source"})]
        for t in self.tasks:
            lang = plan.task_target(t)
            records += [(f"scores__{t}__{i}", f, {"kind": "scores", "task": t, "language": lang})
                        for i, f in enumerate(plan.cell_scores(source, t, self.model))]
            records += [(f"tokenizer__{t}", plan.paths.tokenizer(lang),
                         {"kind": "tokenizer", "task": t, "language": lang}),
                        (f"overlap__{t}", plan.paths.overlap(source, lang),
                         {"kind": "overlap", "task": t, "language": lang})]
        return records


class SampleEfficiencyFigure(FigureSpec):
    kind: Literal["sample_efficiency"] = Field(description=(
        "mean test score against the training sequences of the models' LAPT runs (UNKs Everywhere Figure 3)"))
    NEEDS: ClassVar[tuple[str, ...]] = ("series", "tasks")

    def check_against(self, cfg, name: str) -> None:
        ft = cfg.finetune
        for label, models in self.series.items():
            bad = [m for m in models if m not in ft.models or ft.models[m].lapt is None]
            refuse_any(bad, f"figures.{name}.series.{label}: {bad} are not finetune.models entries "
                       "fine-tuned from a LAPT run")
            bad = [f"{m}: {t}" for m in models for t in self.tasks if t not in finetune_model_tasks(cfg, m)]
            refuse_any(bad, f"figures.{name}.series.{label}: {bad} are not tasks of these models")

    def records(self, plan, source: str) -> Records:
        """Per series model and task, the scores (all seeds) and the LAPT curve of the model's run on the
        task's language (its ``train_sequences`` column is the point's x)."""
        records = []
        for label, models in self.series.items():
            for m in models:
                run = plan.ft_models[m].lapt
                for t in self.tasks:
                    fields, lang = {"series": label, "model": m, "task": t}, plan.task_target(t)
                    records.append((f"curve__{m}__{t}", plan.paths.lapt_curve(source, lang, run),
                                    {"kind": "curve", **fields}))
                    records += [(f"scores__{m}__{t}__{i}", f, {"kind": "scores", **fields})
                                for i, f in enumerate(plan.cell_scores(source, t, m))]
        return records


def _label(plan, run: str) -> str:
    """A LAPT run's label in a figure's legend."""
    from .plan.base import label_of

    return label_of(run, plan.cfg.lapt.runs[run])


#: A figure, by its ``kind``: the union of the classes of :data:`FIGURE_KINDS`.
Figure = Annotated[functools.reduce(operator.or_, FIGURE_KINDS.values()),  # type: ignore[valid-type]
                   Field(discriminator="kind")]

"""The config's derived views, computed from the typed config (:mod:`vocab_transfer.workflow.model`): the
targets a method, a LAPT run or a fine-tuning task trains, a fine-tuned model's tasks and its training's
settings, a table's cells, a figure's language, runs and points, the snapshot models of ``finetune.models``,
what a source model is (masked or causal LM, its positions) and the source whose tokenizer a target's follows
by default. The plan (:mod:`vocab_transfer.workflow.plan`) and the rehearsal read them; so do the checks
between sections (:mod:`vocab_transfer.workflow.config`), which raise :class:`ConfigError`, as a view does
that cannot be had (a task's language that is several targets' language, a snapshot model's name taken)."""

from __future__ import annotations

import contextlib
import json
import types
from pathlib import Path
from typing import TYPE_CHECKING

from ..source_model import is_causal_config, position_limit
from ..typed import ConfigError
from . import paths

if TYPE_CHECKING:
    from .model import Config, Source


def local_model_dir(source: Source) -> Path | None:
    """The source's ``model`` as a local directory, or None when it is a hub id (or pretrained here)."""
    return Path(source.model) if source.model and Path(source.model).is_dir() else None


def source_role(name: str, source: Source, downloaded: bool = True) -> str | None:
    """``"masked"`` or ``"causal"`` (:func:`~..source_model.is_causal_config`) where a source's
    ``config.json`` is known before any job runs: a model pretrained here (an XLM-R masked LM), a local
    folder, and with ``downloaded`` a hub id already downloaded to ``resources/models/<name>/``; None
    otherwise (its job decides), or where it is unreadable or no object."""
    if source.pretrain:
        return "masked"
    folder = local_model_dir(source) or (Path(paths.downloaded_model(name)) if downloaded else None)
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8")) if folder else None
    except (OSError, ValueError):
        return None
    if not isinstance(config, dict):
        return None
    return "causal" if is_causal_config(types.SimpleNamespace(**config)) else "masked"


def source_is_masked(name: str, source: Source) -> bool:
    """Whether a source's ``config.json`` says it is no decoder (:func:`~..source_model.is_causal_config`): a
    local folder's, or a hub id's already downloaded to ``resources/models/<name>/``; False where none is
    known yet (the job decides) or it is unreadable (:func:`~.config.check_local_source` names that)."""
    return bool(source.model) and source_role(name, source) == "masked"


def source_positions(source: Source) -> int | None:
    """Tokens a sequence of ``source`` may have, where it is known before any job runs: a model pretrained
    here (its training blocks' length) or a local model folder (its ``config.json``); None for a hub id."""
    if source.pretrain:
        return source.pretrain.training.seq_len
    model = local_model_dir(source)
    if model is None:
        return None
    with contextlib.suppress(ValueError, OSError):  # no or an unreadable config.json
        return position_limit(json.loads((model / "config.json").read_text(encoding="utf-8")))
    return None


def followed_sources(cfg: Config, target: str) -> list[str]:
    """The sources whose tokenizer a target's tokenizer may follow by default (no ``like``, no ``kind``, no
    ``tokenizer.pretrained`` entry): each source not known to be a masked LM from the config alone (pretrained
    here, or a local folder whose ``config.json`` is one; a hub id is decided by the ``train_tokenizer`` job
    from its downloaded ``config.json``, so the plan is the same before and after the download). None: every
    source is a masked LM and the target's tokenizer is SentencePiece Unigram in XLM-R's layout."""
    tok = cfg.target_tokenizer(target)
    if tok.like is not None or tok.kind is not None or target in cfg.tokenizer.pretrained:
        return []
    return [s for s, spec in cfg.sources.items() if source_role(s, spec, downloaded=False) != "masked"]


def several_families(where: str, sources: dict[str, str | None], target: str | None = None) -> str:
    """The message refusing a default tokenizer among sources of several families (``sources``: name
    -> role)."""
    roles = ", ".join(f"{s} ({r or 'a hub model'})" for s, r in sources.items())
    own = f"targets[i].tokenizer.like ({{name: {target}, tokenizer: {{like: <source>}}}})" if target else \
        "targets[i].tokenizer.like"
    return (f"{where}.like: the sources {roles} include a decoder LLM, whose target tokenizer needs its "
            "family, layout, special tokens and chat template, and there is more than one source to take "
            f"them from; name one with tokenizer.like or per target with {own} (choose from "
            f"{sorted(sources)}), or tokenizer.kind for a family in its usual layout")


def followed_source(follow: dict, folders: list[str]) -> str | None:
    """The ``train_tokenizer`` job's side of the default (:func:`followed_sources`): the folder of the one
    decoder source whose tokenizer the target's tokenizer takes, or None (every followed source is a masked
    LM: Unigram). ``follow``: ``{"sources": names of ``folders``, "of": every source, "target": the target}``;
    a decoder among several sources raises :class:`ConfigError` as parse time does where it can tell."""
    roles = {}
    for name, folder in zip(follow["sources"], folders, strict=True):
        config = json.loads((Path(folder) / "config.json").read_text(encoding="utf-8"))
        roles[name] = "causal" if is_causal_config(types.SimpleNamespace(**config)) else "masked"
    causal = [folders[i] for i, name in enumerate(follow["sources"]) if roles[name] == "causal"]
    if not causal:
        return None
    if len(follow["of"]) > 1:
        raise ConfigError(several_families("tokenizer", {s: roles.get(s, "masked") for s in follow["of"]},
                                           follow.get("target")))
    return causal[0]


def method_targets(cfg: Config, name: str) -> list[str]:
    """The targets a method runs on in the init table: its own ``targets`` list, else all of the config's."""
    targets = cfg.methods[name].targets
    return list(cfg.target_names if targets is None else targets)


def task_target(cfg: Config, task: str) -> str:
    """The target whose model fine-tunes on ``finetune.tasks.<task>``: its ``target``; else the target of
    ``targets`` named like the task's language, or the one there in that language (several: the config must
    name one); else the corpus of that name or language (a language only LAPT and fine-tuning transfer to)."""
    spec = cfg.finetune.tasks[task]
    if spec.target is not None or spec.language in cfg.target_names:
        return spec.target if spec.target is not None else spec.language
    found = [t for t in cfg.target_names if cfg.target_language(t) == spec.language]
    if len(found) > 1:
        raise ConfigError(f"finetune.tasks.{task}.target: the task's language {spec.language!r} is the "
                          f"language of several targets {found}; name one")
    if found or cfg.is_target(spec.language):
        return found[0] if found else spec.language
    raise ConfigError(f"finetune.tasks.{task}.target: the task's language {spec.language!r} is no target's "
                      f"language and no corpus's (targets: {cfg.target_names}); name the target to fine-tune")


def all_targets(cfg: Config) -> list[str]:
    """The init table's targets, then those that only LAPT or fine-tuning transfer to."""
    extra = list(cfg.lapt.targets or []) + [t for run in cfg.lapt.runs.values() for t in run.targets or []]
    extra += [task_target(cfg, t) for t in cfg.finetune.tasks]
    return list(dict.fromkeys(cfg.target_names + extra))


def target_users(cfg: Config, target: str) -> str:
    """The first key that names ``target`` as a LAPT or fine-tuning target (for an error message)."""
    if target in (cfg.lapt.targets or []):
        return "lapt.targets"
    for name, run in cfg.lapt.runs.items():
        if target in (run.targets or []):
            return f"lapt.runs.{name}.targets"
    return next((f"finetune.tasks.{n}.target" for n in cfg.finetune.tasks if task_target(cfg, n) == target),
                "targets")


def lapt_run_targets(cfg: Config, run: str) -> list[str]:
    """The languages a LAPT run trains on: its own ``targets``, else ``lapt.targets``."""
    targets = cfg.lapt.runs[run].targets
    return list(cfg.lapt.targets or [] if targets is None else targets)


def sequence_lengths(cfg: Config) -> list[tuple[str, int]]:
    """(key, tokens) of every sequence length a job feeds a source-architecture model as it is: the init-time
    evaluation, the probes of a table, each LAPT run (and its long phase). Fine-tuning and zero-shot trainings
    are not among them: they cut ``seq_len`` to the model's positions (``training.finetune.fit_to_model``)."""
    out = [("eval.seq_len", cfg.eval.seq_len)]
    # probes run for a table only
    if cfg.eval.probe is not None and any(t.probes for t in cfg.tables.values()):
        out.append(("eval.probe.seq_len", cfg.eval.probe.seq_len))
    for run in cfg.lapt.runs:
        settings = cfg.lapt_run_config(run)
        out.append((f"lapt.runs.{run}: seq_len", settings.seq_len))
        if settings.long_steps:
            out.append((f"lapt.runs.{run}: long_seq_len", settings.long_seq_len))
    return out


def expand_snapshot_models(config: dict) -> dict:
    """``config`` with each ``finetune.models`` entry that lists LAPT snapshot ``steps: [N, ...]`` replaced by
    one model per step, ``<name>-step<N>`` = ``{lapt, step: N, label: "<label> @ N steps", tasks}``
    (vocab-swap Figures 4/8: fine-tuning at points of the LAPT run), in place of the entry; a new dict, the
    input is not changed."""
    finetune = config.get("finetune")
    models = (finetune.get("models") or {}) if isinstance(finetune, dict) else {}
    if not isinstance(models, dict) or not any(_snapshot_steps(m) for m in models.values()):
        return config
    out: dict = {}
    for name, model in models.items():
        if not _snapshot_steps(model):
            out[name] = model
            continue
        rest = {k: v for k, v in model.items() if k not in ("steps", "label")}
        for step in model["steps"]:
            key = f"{name}-step{step}"
            if key in models or key in out:
                raise ConfigError(f"finetune.models.{name}.steps: the snapshot model {key!r} clashes with "
                                  "another entry of finetune.models")
            out[key] = {**rest, "step": step, "label": f"{model.get('label', name)} @ {step:,} steps"}
    return {**config, "finetune": {**config["finetune"], "models": out}}


def _snapshot_steps(model) -> bool:
    """Whether a ``finetune.models`` entry lists snapshot ``steps`` to expand: distinct integers (anything
    else is left for the model to name)."""
    steps = model.get("steps") if isinstance(model, dict) else None
    return isinstance(steps, list) and bool(steps) and all(type(s) is int and s >= 0 for s in steps) \
        and len(set(steps)) == len(steps)


def finetune_model_tasks(cfg: Config, model: str) -> list[str]:
    """The tasks a fine-tuned model runs on: its own ``tasks``, else every in-language task, plus the
    zero-shot tasks (``zero_shot``) when the model names a ``zero_shot`` setup."""
    spec = cfg.finetune.models[model]
    if spec.tasks is not None:
        return list(spec.tasks)
    return [t for t, task in cfg.finetune.tasks.items() if task.zero_shot is None or spec.zero_shot]


def finetune_training(cfg: Config, task: str) -> dict:
    """FinetuneConfig fields of in-language fine-tuning on ``task`` as written: ``finetune.training``, then
    the task's own ``training``."""
    shared, own = cfg.finetune.training, cfg.finetune.tasks[task].training
    return {**(shared.as_written() if shared else {}), **(own.as_written() if own else {})}


def zero_shot_training(cfg: Config, setup: str, source_task: str) -> dict:
    """FinetuneConfig fields of a source-side training: ``zero_shot.training``, the source task's
    ``training``, the setup's ``training``, then the setup's ``task_training`` for the task type (e.g. DP's
    learning rates)."""
    zs = cfg.zero_shot
    src, st = zs.sources[source_task], zs.setups[setup]
    task = st.task_training.get(src.task)
    return {**zs.training.as_written(), **src.training.as_written(), **st.training.as_written(),
            **(task.as_written() if task else {})}


def zero_shot_trainings(cfg: Config) -> list[tuple[str, str]]:
    """(source task, setup) pairs some zero-shot cell needs: each is trained once per seed."""
    ft = cfg.finetune
    pairs = [(s, model.zero_shot) for m, model in ft.models.items() if model.zero_shot
             for t in finetune_model_tasks(cfg, m) for s in ft.tasks[t].zero_shot or []]
    return list(dict.fromkeys(pairs))

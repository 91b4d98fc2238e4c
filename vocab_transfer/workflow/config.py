"""Checks of the workflow config that JSON schema cannot express; run at parse time by rules/common.smk."""

from __future__ import annotations

import inspect
from pathlib import Path

from ..methods import METHODS, method_config
from . import paths
from .needs import Need


class ConfigError(ValueError):
    """A config problem, reported before any job runs."""


def source_languages(source: dict) -> list[str]:
    """Languages a source model was pretrained on (Table 4's 'part of pretraining' columns)."""
    return list(source.get("pretrain", {}).get("languages", source.get("languages", [])))


def _path_not_hub_id(name: str) -> bool:
    """A name that can only be a filesystem path: relative/absolute, or more slashes than a hub ``owner/repo``."""
    return name.startswith((".", "/")) or name.count("/") > 1


def local_model_dir(source: dict) -> Path | None:
    """The source's ``model`` as a local directory, or None when it is a hub id (or pretrained here)."""
    model = source.get("model")
    return Path(model) if model and Path(model).is_dir() else None


def method_parameters(kind: str) -> set[str]:
    """Keyword parameters the method function of ``kind`` accepts (besides ``seed``)."""
    sig = inspect.signature(METHODS[kind].fn)
    return {n for n, p in sig.parameters.items() if p.kind == p.KEYWORD_ONLY and n != "seed"}


def check_schema(config: dict, schema_path: str | Path) -> None:
    """Validate ``config`` against the JSON schema; the error names the key path and the problem."""
    import jsonschema
    import yaml

    schema = yaml.safe_load(Path(schema_path).read_text())
    validator = jsonschema.Draft202012Validator(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(config))
    if error is not None:
        where = ".".join(str(p) for p in error.absolute_path) or "(top level)"
        raise ConfigError(f"{where}: {error.message}")


def check_config(config: dict, schema_path: str | Path | None = None) -> None:
    """Raise :class:`ConfigError` naming the first problem: a schema violation (misspelled key, wrong
    type, unknown method kind), an unknown language or method parameter, or a local source model
    whose tokenizer does not match its embedding matrix."""
    if schema_path is not None:
        check_schema(config, schema_path)
    config = expand_snapshot_models(config)
    corpora = config["corpora"]
    for lang in config["targets"]:
        if lang not in corpora:
            raise ConfigError(f"targets: language {lang!r} has no entry under 'corpora' (known: {sorted(corpora)})")
    for name, source in config["sources"].items():
        for lang in source_languages(source):
            if lang not in corpora:
                raise ConfigError(f"sources.{name}: pretraining language {lang!r} has no entry under 'corpora' "
                                  f"(known: {sorted(corpora)})")
        model = local_model_dir(source)
        if model is not None:
            check_local_source(name, model, source.get("allow_padded_embeddings", False))
        elif source.get("model") and _path_not_hub_id(source["model"]):
            raise ConfigError(f"sources.{name}.model: {source['model']!r} is not a directory (nor a hub id)")
    for name, method in config["methods"].items():
        kind = method["kind"]
        if kind not in METHODS:
            raise ConfigError(f"methods.{name}: unknown kind {kind!r}; known: {sorted(METHODS)}")
        unknown = set(method_config(method)) - method_parameters(kind)
        if unknown:
            raise ConfigError(f"methods.{name}: unknown parameter(s) {sorted(unknown)} for kind {kind!r}; "
                              f"accepted: {sorted(method_parameters(kind))}")
        check_method_resources(config, name, method)
    for lang, spec in config.get("tokenizer", {}).get("pretrained", {}).items():
        if lang not in corpora:
            raise ConfigError(f"tokenizer.pretrained.{lang}: language {lang!r} has no entry under 'corpora'")
        if isinstance(spec, dict) and spec["source"] not in config["sources"]:
            raise ConfigError(f"tokenizer.pretrained.{lang}.source: {spec['source']!r} is not an entry of 'sources' "
                              f"(known: {sorted(config['sources'])})")
        if isinstance(spec, str) and _path_not_hub_id(spec) and not Path(spec).is_dir():
            raise ConfigError(f"tokenizer.pretrained.{lang}: {spec!r} is not a directory (nor a hub id)")
    check_lapt(config)
    check_finetune(config)
    check_zero_shot(config)
    check_tables(config)
    check_figures(config)
    for slang, by_target in config.get("dictionaries", {}).items():
        for lang, spec in by_target.items():
            where = f"dictionaries.{slang}.{lang}"
            key = {"freedict": "name", "file": "path"}.get(spec["source"])
            if key and key not in spec:
                raise ConfigError(f"{where}: source {spec['source']!r} needs '{key}'")
            if spec["source"] == "identical" and not {slang, lang} <= set(corpora) | set(config.get("word_vectors", {})):
                raise ConfigError(f"{where}: identical-spelling dictionaries need word vectors of both languages")


def method_targets(config: dict, name: str) -> list[str]:
    """The targets a method runs on in the init table: its own ``targets`` list, else all of the config's."""
    return list(config["methods"][name].get("targets", config["targets"]))


def all_targets(config: dict) -> list[str]:
    """The init table's targets, then the languages that only LAPT or fine-tuning transfer to."""
    lapt = config.get("lapt", {})
    extra = list(lapt.get("targets", [])) + [t for run in lapt.get("runs", {}).values() for t in run.get("targets", [])]
    extra += [t["language"] for t in config.get("finetune", {}).get("tasks", {}).values()]
    return list(dict.fromkeys(list(config["targets"]) + extra))


def check_method_resources(config: dict, name: str, method: dict) -> None:
    """Every artifact the method needs can be built: languages with corpora, dictionaries configured."""
    from ..methods import method_needs, method_params

    params = method_config(method)
    try:
        needs, p = method_needs(method["kind"], params), method_params(method["kind"], params)
    except ValueError as e:
        raise ConfigError(f"methods.{name}: {e}") from None
    corpora, vectors = set(config["corpora"]), set(config.get("word_vectors", {}))
    for t in method.get("targets", []):
        if t not in config["targets"]:
            raise ConfigError(f"methods.{name}.targets: {t!r} is not one of the config's targets {config['targets']}")
    if Need.SOURCE_TOKEN_VECTORS in needs and p["source_language"] not in corpora:
        raise ConfigError(f"methods.{name}: source_language {p['source_language']!r} has no entry under 'corpora'")
    if Need.SOURCE_WORDS in needs and p["source_language"] not in corpora | vectors:
        raise ConfigError(f"methods.{name}: source_language {p['source_language']!r} has neither a corpus nor "
                          "'word_vectors'")
    if Need.LANGUAGE_TOKENIZER in needs and p["restrict_source"] not in corpora:
        raise ConfigError(f"methods.{name}: restrict_source {p['restrict_source']!r} has no entry under 'corpora'")
    if Need.DICTIONARY in needs:
        have = config.get("dictionaries", {}).get(p["source_language"], {})
        missing = [t for t in method_targets(config, name) if t not in have]
        if missing:
            raise ConfigError(f"methods.{name}: no dictionary {p['source_language']} -> {missing} under "
                              f"'dictionaries' (e.g. {{source: freedict, name: ...}} or {{source: identical}}), "
                              "or restrict the method with 'targets'")


def check_local_source(name: str, model_dir: Path, allow_padded: bool) -> None:
    """Compare the tokenizer's size with the embedding rows in ``config.json`` (no weights loaded)."""
    from ..data.tokenizer import load_tokenizer
    from ..source_model import TokenizerModelMismatch, check_tokenizer_matches, model_vocab_size

    if not (model_dir / "config.json").is_file():
        raise ConfigError(f"sources.{name}.model: {model_dir} has no config.json (not a save_pretrained folder)")
    try:
        check_tokenizer_matches(len(load_tokenizer(str(model_dir))), model_vocab_size(model_dir), name=name,
                                allow_padded_embeddings=allow_padded)
    except TokenizerModelMismatch as e:
        raise ConfigError(str(e)) from None


RUN_KEYS = ("method", "source", "label", "targets")  # lapt.runs entries: these are not LaptConfig fields
PROVENANCES = ("special", "copied", "combined", "mapped", "random")  # vocab_transfer.methods.base labels


def lapt_run_settings(config: dict, run: str) -> dict:
    """The LaptConfig fields of a LAPT run: the global seed, ``lapt.training``, then the run's own keys."""
    lapt = config.get("lapt", {})
    own = {k: v for k, v in lapt["runs"][run].items() if k not in RUN_KEYS}
    return {"seed": config["seed"], **lapt.get("training", {}), **own}


def lapt_run_config(config: dict, run: str):
    """The run's :class:`vocab_transfer.training.settings.LaptConfig` (its stages, evaluation and snapshot steps)."""
    from ..training.settings import LaptConfig

    return LaptConfig.from_dict(lapt_run_settings(config, run))


def snapshot_model_name(name: str, step: int) -> str:
    """The fine-tuned model a ``finetune.models`` entry with ``steps`` gets for one snapshot step."""
    return f"{name}-step{step}"


def expand_snapshot_models(config: dict) -> dict:
    """``config`` with each ``finetune.models`` entry that lists LAPT snapshot ``steps: [N, ...]`` replaced by one
    model per step, ``<name>-step<N>`` = ``{lapt, step: N, label: "<label> @ N steps", tasks}`` (vocab-swap Figures
    4/8: fine-tuning at points of the LAPT run), in place of the entry; a new dict, the input is not changed."""
    models = config.get("finetune", {}).get("models", {})
    if not any("steps" in m for m in models.values()):
        return config
    out: dict = {}
    for name, model in models.items():
        if "steps" not in model:
            out[name] = model
            continue
        rest = {k: v for k, v in model.items() if k not in ("steps", "label")}
        for step in model["steps"]:
            key = snapshot_model_name(name, step)
            if key in models or key in out:
                raise ConfigError(f"finetune.models.{name}.steps: the snapshot model {key!r} clashes with another "
                                  "entry of finetune.models")
            out[key] = {**rest, "step": step, "label": f"{model.get('label', name)} @ {step:,} steps"}
    return {**config, "finetune": {**config["finetune"], "models": out}}


def lapt_run_targets(config: dict, run: str) -> list[str]:
    """The languages a LAPT run trains on: its own ``targets``, else ``lapt.targets``."""
    lapt = config.get("lapt", {})
    return list(lapt["runs"][run].get("targets", lapt.get("targets", [])))


def finetune_model_tasks(config: dict, model: str) -> list[str]:
    """The tasks a fine-tuned model runs on: its own ``tasks``, else every in-language task, plus the zero-shot
    tasks (``zero_shot``) when the model names a ``zero_shot`` setup."""
    ft = config.get("finetune", {})
    spec = ft["models"][model]
    if "tasks" in spec:
        return list(spec["tasks"])
    return [t for t, task in ft.get("tasks", {}).items() if "zero_shot" not in task or spec.get("zero_shot")]


def zero_shot_training(config: dict, setup: str, source_task: str) -> dict:
    """FinetuneConfig fields of a source-side training: ``zero_shot.training``, the source task's ``training``, the
    setup's ``training``, then the setup's ``task_training`` for the task type (e.g. DP's learning rates)."""
    zs = config.get("zero_shot", {})
    src, st = zs["sources"][source_task], zs["setups"][setup]
    return {**zs.get("training", {}), **src.get("training", {}), **st.get("training", {}),
            **st.get("task_training", {}).get(src["task"], {})}


def zero_shot_trainings(config: dict) -> list[tuple[str, str]]:
    """(source task, setup) pairs some zero-shot cell needs: each is trained once per seed."""
    ft = config.get("finetune", {})
    pairs = [(s, model["zero_shot"]) for m, model in ft.get("models", {}).items() if model.get("zero_shot")
             for t in finetune_model_tasks(config, m) for s in ft["tasks"][t].get("zero_shot", [])]
    return list(dict.fromkeys(pairs))


def check_lapt(config: dict) -> None:
    """LAPT runs start from configured methods on languages with corpora, with valid LaptConfig fields."""
    from ..training.settings import LaptConfig

    lapt = config.get("lapt", {})
    for name in lapt.get("runs", {}):
        for t in lapt_run_targets(config, name):
            if t not in config["corpora"]:
                raise ConfigError(f"lapt: target {t!r} of run {name!r} has no entry in 'corpora'")
    for name, run in lapt.get("runs", {}).items():
        kinds = [k for k in ("method", "source") if run.get(k)]
        if len(kinds) != 1:
            raise ConfigError(f"lapt.runs.{name}: give exactly one of method (a new vocabulary: an entry of 'methods') "
                              f"and source: true (the source model with its own vocabulary), got {kinds}")
        if "method" in kinds and run["method"] not in config["methods"]:
            raise ConfigError(f"lapt.runs.{name}.method: {run['method']!r} is not an entry of 'methods'")
        if "method" in kinds:
            check_method_language(config, run["method"], lapt_run_targets(config, name), f"lapt.runs.{name}")
        try:
            cfg = LaptConfig.from_dict(lapt_run_settings(config, name))
        except (TypeError, ValueError) as e:
            raise ConfigError(f"lapt.runs.{name}: {e}") from None
        kind = config["methods"][run["method"]].get("kind") if "method" in kinds else None
        if cfg.factorized and kind != "mf":
            raise ConfigError(f"lapt.runs.{name}: factorized: true trains the factors of a kind: mf init, but "
                              + (f"method {run['method']!r} is of kind {kind!r}" if kind else "the run has no init"))


def check_method_language(config: dict, method: str, langs: list[str], where: str) -> None:
    """A method can be used by LAPT or fine-tuning on any language with a corpus (its ``targets`` list only
    picks its cells of the init-loss table), unless it needs a dictionary that is not configured."""
    from ..methods import method_needs, method_params

    spec = config["methods"][method]
    params = method_config(spec)
    if Need.DICTIONARY in method_needs(spec["kind"], params):
        slang = method_params(spec["kind"], params)["source_language"]
        missing = [t for t in langs if t not in config.get("dictionaries", {}).get(slang, {})]
        if missing:
            raise ConfigError(f"{where}: method {method!r} needs a dictionary {slang} -> {missing}")


def check_finetune(config: dict) -> None:
    """Fine-tuned models exist in the config (LAPT runs on the task's language, methods, reference models), tasks
    have corpora and known loaders, and the training settings are FinetuneConfig fields with a metric the task
    reports."""
    from ..data.tasks import check_spec
    from ..training.settings import FinetuneConfig, selection_metric

    ft = config.get("finetune", {})
    for name, task in ft.get("tasks", {}).items():
        where = f"finetune.tasks.{name}"
        if task["language"] not in config["corpora"]:
            raise ConfigError(f"{where}.language: {task['language']!r} has no entry in 'corpora'")
        if task["dataset"].get("test_only"):
            raise ConfigError(f"{where}.dataset.test_only: a task that is trained on needs its train split; test-only "
                              "data is for zero-shot targets (zero_shot: [...]), which read the test split by themselves")
        try:
            check_spec({"task": task["task"], **task["dataset"]})
            selection_metric(task["task"], FinetuneConfig.from_dict({**ft.get("training", {}),
                                                                      **task.get("training", {})}))
        except (TypeError, ValueError) as e:
            raise ConfigError(f"{where}: {e}") from None
    for mname, model in ft.get("models", {}).items():
        where = f"finetune.models.{mname}"
        kinds = [k for k in ("lapt", "init", "source", "pretrained") if model.get(k)]
        if len(kinds) != 1:
            raise ConfigError(f"{where}: give exactly one of lapt, init, source, pretrained (got {kinds})")
        ref = model.get("pretrained")
        if ref and _path_not_hub_id(ref) and not Path(ref).is_dir():
            raise ConfigError(f"{where}.pretrained: {ref!r} is not a directory (nor a hub id)")
        if "lapt" in model and model["lapt"] not in config.get("lapt", {}).get("runs", {}):
            raise ConfigError(f"{where}.lapt: {model['lapt']!r} is not an entry of lapt.runs")
        if "step" in model:
            if "lapt" not in model:
                raise ConfigError(f"{where}: step/steps (a LAPT snapshot) needs lapt: <run>")
            kept = lapt_run_config(config, model["lapt"]).snapshot_steps
            if model["step"] not in kept:
                raise ConfigError(f"{where}: LAPT run {model['lapt']!r} keeps no snapshot of step {model['step']} "
                                  f"(its snapshot_steps: {kept}); add the step to lapt.runs.{model['lapt']}."
                                  "snapshot_steps (or lapt.training)")
        if "init" in model and model["init"] not in config["methods"]:
            raise ConfigError(f"{where}.init: {model['init']!r} is not an entry of 'methods'")
        unknown = [t for t in model.get("tasks", []) if t not in ft.get("tasks", {})]
        if unknown:
            raise ConfigError(f"{where}.tasks: {unknown} are not entries of finetune.tasks")
        for tname in finetune_model_tasks(config, mname):
            lang = ft["tasks"][tname]["language"]
            if "init" in model:
                check_method_language(config, model["init"], [lang], where)
            if "lapt" in model and lang not in lapt_run_targets(config, model["lapt"]):
                raise ConfigError(f"{where}: LAPT run {model['lapt']!r} is not trained on {lang!r} (task {tname}); "
                                  "add it to lapt.targets or the run's targets")


def check_tables(config: dict) -> None:
    """Paper tables name configured fine-tuned models or LAPT runs (rows / grid cells) and tasks (columns)."""
    ft = config.get("finetune", {})
    for name, spec in config.get("tables", {}).items():
        lapt = spec.get("kind") == "lapt"
        known = config.get("lapt", {}).get("runs", {}) if lapt else ft.get("models", {})
        what = "lapt.runs" if lapt else "finetune.models"
        if lapt and spec.get("best_column"):
            raise ConfigError(f"tables.{name}.best_column: a 'Best' column is for fine-tuning tables, not kind lapt")
        if "grid" in spec:
            grid = spec["grid"]
            width = len(grid["columns"])
            bad = [r for r, names in grid["rows"].items()
                   if len(names) != width and not (len(names) == width + 1 and spec.get("best_column"))]
            if bad:
                raise ConfigError(f"tables.{name}.grid.rows {bad}: each row needs one entry (or null) per column "
                                  f"of {grid['columns']}" + (", plus optionally its own Best cell" if
                                                             spec.get("best_column") else ""))
            names = [n for names in grid["rows"].values() for n in names if n is not None]
        else:
            names = spec.get("rows", [])
        bad = [m for m in names if m not in known]
        if bad:
            raise ConfigError(f"tables.{name}: {bad} are not entries of {what}")
        row_labels = list(spec["grid"]["rows"]) if "grid" in spec else spec.get("rows") or list(known)
        grouped = [r for group in spec.get("best_groups", []) for r in group]
        bad = sorted({r for r in grouped if r not in row_labels} | {r for r in grouped if grouped.count(r) > 1})
        if bad:
            raise ConfigError(f"tables.{name}.best_groups: {bad} are not rows of the table (or are in two groups); "
                              f"rows: {row_labels}")
        if lapt:
            if not spec.get("languages") or not spec.get("steps"):
                raise ConfigError(f"tables.{name}: kind lapt needs 'languages' and 'steps'")
            continue
        known_languages = {s["language"] for s in config.get("zero_shot", {}).get("sources", {}).values()}
        bad = [lang for lang in spec.get("source_languages", []) if lang not in known_languages]
        if bad:
            raise ConfigError(f"tables.{name}.source_languages: {bad} are not languages of zero_shot.sources "
                              f"({sorted(known_languages)})")
        tasks = spec.get("tasks", []) if "grid" in spec else [t for ts in spec.get("groups", {}).values() for t in ts]
        if "grid" in spec and not tasks:
            raise ConfigError(f"tables.{name}: a grid table of fine-tuning scores needs 'tasks'")
        bad = [t for t in tasks if t not in ft.get("tasks", {})]
        if bad:
            raise ConfigError(f"tables.{name}: {bad} are not entries of finetune.tasks")


def check_figures(config: dict) -> None:
    """Paper figures (config ``figures``) name LAPT runs trained on their language; ``lapt_finetune`` a task with
    fine-tuned models of those runs; ``token_accuracy`` runs that record it, evaluated at the histogram steps."""
    runs = config.get("lapt", {}).get("runs", {})
    ft = config.get("finetune", {})
    for name, spec in config.get("figures", {}).items():
        where = f"figures.{name}"
        if spec["kind"] == "lapt_finetune":
            if spec.get("task") not in ft.get("tasks", {}):
                raise ConfigError(f"{where}.task: {spec.get('task')!r} is not an entry of finetune.tasks")
            if "zero_shot" in ft["tasks"][spec["task"]]:
                raise ConfigError(f"{where}.task: {spec['task']!r} is a zero-shot task; the figure reads in-language "
                                  "fine-tuning scores")
            lang = ft["tasks"][spec["task"]]["language"]
        else:
            lang = spec.get("language")
            if lang is None:
                raise ConfigError(f"{where}: kind token_accuracy needs 'language' (a LAPT target)")
        names = figure_runs(config, name)
        bad = [r for r in names if r not in runs]
        if bad:
            raise ConfigError(f"{where}.runs: {bad} are not entries of lapt.runs")
        bad = [r for r in names if lang not in lapt_run_targets(config, r)]
        if bad or not names:
            raise ConfigError(f"{where}.runs: {bad or 'none'} of the LAPT runs on {lang!r}")
        if spec["kind"] == "token_accuracy" and not spec.get("matched_by"):
            bad = [r for r in names if "method" not in runs[r]]
            if bad:
                raise ConfigError(f"{where}: runs {bad} keep the source vocabulary (no init provenance to split their "
                                  "tokens by): set matched_by to a methods entry, or leave them out of runs")
        if spec["kind"] == "lapt_finetune":
            if not figure_points(config, name):
                raise ConfigError(f"{where}: no finetune.models entry fine-tunes the runs {names} on {spec['task']!r} "
                                  "(e.g. {lapt: <run>, steps: [...]} for LAPT snapshots, {lapt: <run>} for the end)")
            continue
        if not spec.get("steps"):
            raise ConfigError(f"{where}: kind token_accuracy needs 'steps' (evaluation steps of the histograms)")
        if spec.get("matched_by") is not None and spec["matched_by"] not in config["methods"]:
            raise ConfigError(f"{where}.matched_by: {spec['matched_by']!r} is not an entry of 'methods'")
        bad = [p for p in spec.get("matched", []) if p not in PROVENANCES]
        if bad:
            raise ConfigError(f"{where}.matched: {bad} are not provenance labels {list(PROVENANCES)}")
        for run in names:
            cfg = lapt_run_config(config, run)
            if not cfg.token_accuracy_top:
                raise ConfigError(f"{where}: LAPT run {run!r} records no per-token accuracy; set token_accuracy_top "
                                  f"in lapt.training or lapt.runs.{run}")
            missing = [s for s in spec.get("steps", []) if s not in cfg.eval_steps()]
            if missing:
                raise ConfigError(f"{where}.steps: {missing} are not evaluation steps of LAPT run {run!r} (every "
                                  f"eval_every = {cfg.eval_every} steps of each stage, and its end)")


def figure_runs(config: dict, figure: str) -> list[str]:
    """A figure's LAPT runs: its ``runs``, else every run on its language (kind lapt_finetune: the task's)."""
    spec = config["figures"][figure]
    if "runs" in spec:
        return list(spec["runs"])
    ft = config.get("finetune", {})
    lang = ft["tasks"][spec["task"]]["language"] if spec["kind"] == "lapt_finetune" else spec["language"]
    return [r for r in config.get("lapt", {}).get("runs", {}) if lang in lapt_run_targets(config, r)]


def figure_points(config: dict, figure: str) -> list[tuple[str, str, int]]:
    """``(finetune model, LAPT run, LAPT step)`` of a ``lapt_finetune`` figure: every model fine-tuned on its task
    from one of its runs, a snapshot at its ``step``, the run's final model at the run's last step. Expects
    :func:`expand_snapshot_models` to have run."""
    spec = config["figures"][figure]
    runs = figure_runs(config, figure)
    points = []
    for name, model in config.get("finetune", {}).get("models", {}).items():
        if model.get("lapt") in runs and spec["task"] in finetune_model_tasks(config, name):
            stages = lapt_run_config(config, model["lapt"]).stages()
            points.append((name, model["lapt"], model.get("step", sum(n for n, _ in stages))))
    return points


def check_zero_shot(config: dict) -> None:
    """Zero-shot transfer (unks-everywhere §4.3, App. A.1): source tasks and setups are well-formed, a zero-shot
    task names source tasks of its task type, and every model on a zero-shot task names a setup its target side
    fits: a task adapter (``adapter``) needs a target LAPT run of variant adapter whose language adapter has the
    settings of the setup's source-language run, ``fmt`` an ``embeddings_only`` run (or the source), ``full`` the
    source model; the setup's source-language run must have been trained on each source task's language."""
    from ..data.tasks import check_spec
    from ..training.settings import AdapterConfig, FinetuneConfig, task_adapter_config

    zs, ft = config.get("zero_shot", {}), config.get("finetune", {})
    sources, setups, tasks = zs.get("sources", {}), zs.get("setups", {}), ft.get("tasks", {})
    runs = config.get("lapt", {}).get("runs", {})
    clash = sorted(set(sources) & set(tasks))
    if clash:
        raise ConfigError(f"zero_shot.sources {clash}: the names are taken by finetune.tasks (one namespace: "
                          f"{paths.task_data('<name>')})")
    for name, src in sources.items():
        if src["dataset"].get("test_only"):
            raise ConfigError(f"zero_shot.sources.{name}.dataset.test_only: the source side trains on this task")
        try:
            check_spec({"task": src["task"], **src["dataset"]})
        except ValueError as e:
            raise ConfigError(f"zero_shot.sources.{name}: {e}") from None
    for name, setup in setups.items():
        where = f"zero_shot.setups.{name}"
        if setup["variant"] != "adapter":
            extra = [k for k in ("lapt", "adapter") if k in setup]
            if extra:
                raise ConfigError(f"{where}: {extra} apply to variant adapter, not {setup['variant']!r}")
            continue
        run = setup.get("lapt")
        if run not in runs:
            raise ConfigError(f"{where}.lapt: {run!r} is not an entry of lapt.runs (variant adapter stacks the task "
                              "adapter on that run's source-language adapter)")
        lapt = lapt_run_config(config, run)
        if not runs[run].get("source") or lapt.variant != "adapter" or lapt.train_embeddings:
            raise ConfigError(f"{where}.lapt: run {run!r} must train MAD-X language adapters on the source model's "
                              "own vocabulary, which stays the source's: source: true, variant: adapter, "
                              "train_embeddings: false")
        try:
            task_adapter_config(setup.get("adapter", {}))
        except ValueError as e:
            raise ConfigError(f"{where}.adapter: {e}") from None
    for name, task in tasks.items():
        if "zero_shot" not in task:
            if "unseen_labels" in task:
                raise ConfigError(f"finetune.tasks.{name}.unseen_labels applies to zero-shot tasks (zero_shot: ...)")
            continue
        for s in task["zero_shot"]:
            if s not in sources:
                raise ConfigError(f"finetune.tasks.{name}.zero_shot: {s!r} is not an entry of zero_shot.sources")
            if sources[s]["task"] != task["task"]:
                raise ConfigError(f"finetune.tasks.{name}.zero_shot: source task {s!r} is {sources[s]['task']!r}, "
                                  f"not {task['task']!r}")
    for mname, model in ft.get("models", {}).items():
        where, setup = f"finetune.models.{mname}", model.get("zero_shot")
        if setup is not None and setup not in setups:
            raise ConfigError(f"{where}.zero_shot: {setup!r} is not an entry of zero_shot.setups")
        zs_tasks = [t for t in finetune_model_tasks(config, mname) if "zero_shot" in tasks[t]]
        if zs_tasks and setup is None:
            raise ConfigError(f"{where}: tasks {zs_tasks} are zero-shot; name a zero_shot setup (zero_shot: <setup>)")
        if not zs_tasks or setup is None:
            continue
        spec, run = setups[setup], model.get("lapt")
        lapt = None if run is None else lapt_run_config(config, run)
        variant = lapt.variant if lapt else None
        if spec["variant"] == "full" and not model.get("source"):
            raise ConfigError(f"{where}: setup {setup!r} (variant full) evaluates the fine-tuned source model itself: "
                              "the model must be {source: true}")
        if spec["variant"] == "fmt" and not (model.get("source") or variant == "embeddings_only"):
            raise ConfigError(f"{where}: setup {setup!r} (variant fmt) swaps in embeddings learned against the frozen "
                              "transformer: the model must be a LAPT run of variant embeddings_only (or the source)")
        if spec["variant"] == "adapter":
            if variant != "adapter":
                raise ConfigError(f"{where}: setup {setup!r} (variant adapter) swaps in the target's language adapter: "
                                  "the model must be a LAPT run of variant adapter")
            ours = AdapterConfig.from_dict(lapt_run_settings(config, spec["lapt"]).get("adapter", {}))
            if AdapterConfig.from_dict(lapt.adapter) != ours:
                raise ConfigError(f"{where}: the language adapter of LAPT run {run!r} ({lapt.adapter}) differs from "
                                  f"the source-side run {spec['lapt']!r} of setup {setup!r} "
                                  f"({lapt_run_settings(config, spec['lapt']).get('adapter', {})})")
            for t in zs_tasks:
                for s in tasks[t]["zero_shot"]:
                    if sources[s]["language"] not in lapt_run_targets(config, spec["lapt"]):
                        raise ConfigError(f"{where}: setup {setup!r} needs LAPT run {spec['lapt']!r} on "
                                          f"{sources[s]['language']!r} (source task {s}); add it to the run's targets")
    for s, setup in zero_shot_trainings(config):
        try:
            cfg = FinetuneConfig.from_dict(zero_shot_training(config, setup, s))
        except (TypeError, ValueError) as e:
            raise ConfigError(f"zero_shot (source task {s}, setup {setup}): {e}") from None
        if cfg.train_language_adapter:
            raise ConfigError(f"zero_shot (setup {setup}): train_language_adapter must be false (the source-language "
                              "adapter is swapped at inference, so it stays fixed)")

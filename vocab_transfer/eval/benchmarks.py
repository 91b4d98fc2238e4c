"""Zero-shot benchmark scores of decoder models with EleutherAI's lm-evaluation-harness (PyPI ``lm-eval``),
and the share of the source model's score that a transferred model keeps (as the OMP tokensurgeon paper and
tokenkit report them).

The harness is used as a library (``lm_eval.simple_evaluate`` with its ``hf`` model on a local Hugging Face
folder), so its task definitions, prompts, metrics and standard errors are the harness's own. Tasks on local
files are task YAMLs in a folder (``include_path``, as ``lm_eval --include_path``). The datasets are fetched
once, on a machine with internet (:func:`fetch`, rule download_benchmark_data on the login node), into a
datasets cache that the evaluation jobs then read offline.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from .. import lazy
from ..io import atomic_path

pd = lazy.module("pandas")  # the planner imports this module for the parse-time checks

if TYPE_CHECKING:
    import pandas as pd  # noqa: F811

log = logging.getLogger(__name__)

#: Environment variable naming the folder of the task-registry cache (:func:`task_registry`); an empty value
#: turns the cache off.
REGISTRY_CACHE_ENV = "VOCAB_TRANSFER_TASKS_CACHE"
#: ``dataset_path`` values of lm-eval tasks that read local files (the datasets library's packaged builders).
LOCAL_BUILDERS = frozenset({"json", "csv", "parquet", "text", "arrow", "pandas", "webdataset", "xml"})

#: The score a table shows for a task, the first of these the task reports (multiple choice: length-normalized
#: accuracy where the task has it, as the OMP paper and tokenkit report ARC and HellaSwag).
PRIMARY_METRICS = ("acc_norm", "acc", "exact_match", "f1", "mcc", "bleu")


def use_cache(cache: str | os.PathLike, offline: bool) -> None:
    """Point the datasets library at ``cache`` (created) for this process; ``offline``: no network access."""
    import datasets

    Path(cache).mkdir(parents=True, exist_ok=True)
    datasets.config.HF_DATASETS_CACHE = Path(cache).resolve()
    if offline:  # the flags are read when the libraries are imported (a warm-started job has imported them)
        import huggingface_hub.constants

        os.environ["HF_HUB_OFFLINE"] = os.environ["HF_DATASETS_OFFLINE"] = "1"
        datasets.config.HF_HUB_OFFLINE = datasets.config.HF_DATASETS_OFFLINE = True
        huggingface_hub.constants.HF_HUB_OFFLINE = True


def task_manager(include_path: str | None):
    """lm-eval's TaskManager with ``include_path``'s tasks and a hub mirror's, which take precedence over the
    harness's own (:func:`task_paths`)."""
    from lm_eval.tasks import TaskManager

    if include_path is not None and not Path(include_path).is_dir():
        raise FileNotFoundError(f"eval.benchmarks.include_path: {include_path} is not a folder of task YAMLs")
    return TaskManager(include_path=task_paths(include_path) or None)


def task_paths(include_path: str | None) -> list[str]:
    """The task folders lm-eval reads beside its own: ``include_path`` and a hub mirror's task YAMLs."""
    from .. import mirror

    tasks = mirror.root() / mirror.LM_EVAL_TASKS if mirror.root() else None
    return ([include_path] if include_path else []) + ([str(tasks)] if tasks and tasks.is_dir() else [])


def registry_from(manager) -> dict:
    """What the parse-time checks read of a TaskManager's index: ``{"tasks": {name: dataset_path}, "groups":
    {name: [member, ...]}}``, ``dataset_path`` "" where the YAML names none (a Python task); groups, tags
    alike."""
    tasks, groups = {}, {}
    for name, entry in manager.task_index.items():
        kind, cfg = entry.kind.name, entry.cfg or {}
        if kind == "GROUP":
            members = cfg.get("task") or []
            groups[name] = [m if isinstance(m, str) else m.get("task") or m.get("group")
                            for m in (members if isinstance(members, list) else [members])
                            if isinstance(m, (str, dict))]
        elif kind == "TAG":
            groups[name] = sorted(entry.tags)
        else:
            path = cfg.get("dataset_path")
            tasks[name] = path if isinstance(path, str) else ""
    return {"tasks": tasks, "groups": groups}


def _stamp(folder: str) -> float:
    """The newest modification time of ``folder`` and everything under it (0 when it is missing)."""
    root = Path(folder)
    return max(f.stat().st_mtime for f in (root, *root.rglob("*"))) if root.exists() else 0.0


def _registry_cache(include_path: str | None) -> Path | None:
    """The cache file of the task registry for lm-eval's installed version and these task folders (their
    modification times), in ``~/.cache/vocab_transfer/lm_eval_tasks`` (:data:`REGISTRY_CACHE_ENV`); None
    without lm-eval or with the cache turned off."""
    import hashlib
    from importlib import metadata

    try:
        version = metadata.version("lm_eval")
    except metadata.PackageNotFoundError:
        return None
    root = os.environ.get(REGISTRY_CACHE_ENV, str(Path.home() / ".cache/vocab_transfer/lm_eval_tasks"))
    if not root:
        return None
    key = json.dumps([version, [(str(Path(p).resolve()), _stamp(p)) for p in task_paths(include_path)]])
    return Path(root) / f"{hashlib.sha256(key.encode()).hexdigest()[:24]}.json"


def _registry_of_a_child(include_path: str | None) -> dict:
    """:func:`registry_from` lm-eval's TaskManager, built in a child process: lm-eval's task index imports
    torch and transformers, which a process that plans the workflow never loads (tests/test_layout.py)."""
    import subprocess
    import sys
    import tempfile

    code = ("import json, sys\nfrom vocab_transfer.eval.benchmarks import registry_from, task_manager\n"
            "registry = registry_from(task_manager(sys.argv[1] or None))\n"
            "open(sys.argv[2], 'w', encoding='utf-8').write(json.dumps(registry))")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "registry.json"
        proc = subprocess.run([sys.executable, "-c", code, include_path or "", str(out)], capture_output=True,
                              text=True)
        if proc.returncode != 0 or not out.is_file():
            raise RuntimeError(f"lm-eval's task index could not be built (exit {proc.returncode}): "
                               f"{proc.stderr.strip()[-2000:]}")
        return json.loads(out.read_text(encoding="utf-8"))


def task_registry(include_path: str | None) -> dict | None:
    """lm-eval's task names and their datasets (:func:`registry_from`) with ``include_path``'s tasks and a hub
    mirror's, or None where lm-eval is not installed. Indexing lm-eval's task YAMLs takes seconds, so the
    result is cached (:func:`_registry_cache`)."""
    import importlib.util

    if importlib.util.find_spec("lm_eval") is None:
        return None
    cache = _registry_cache(include_path)
    if cache is not None and cache.is_file():
        with contextlib.suppress(OSError, ValueError):  # a torn or foreign file: rebuild it
            return json.loads(cache.read_text(encoding="utf-8"))
    registry = _registry_of_a_child(include_path)
    if cache is not None:
        try:
            with atomic_path(cache, checksum=False) as tmp:
                tmp.write_text(json.dumps(registry), encoding="utf-8")
        except OSError as e:  # a read-only home: check without the cache
            log.debug("task registry cache %s not written: %s", cache, e)
    return registry


def unknown_tasks(tasks: list[str], registry: dict) -> list[str]:
    """A line per name in ``tasks`` that the registry lacks, with its close matches (difflib)."""
    known = [*registry["tasks"], *registry["groups"]]
    near = [(t, difflib.get_close_matches(t, known, n=3, cutoff=0.75)) for t in tasks if t not in known]
    return [f"{t!r}" + (f" (did you mean {', '.join(map(repr, m))}?)" if m else "") for t, m in near]


def leaf_datasets(task: str, registry: dict, _seen: frozenset = frozenset()) -> dict[str, str]:
    """``{leaf task: dataset_path}`` of a task, group or tag (members resolved recursively; unknown members
    left out)."""
    if task in registry["tasks"]:
        return {task: registry["tasks"][task]}
    out: dict[str, str] = {}
    for member in registry["groups"].get(task, []):
        if member and member not in _seen:
            out |= leaf_datasets(member, registry, _seen | {task})
    return out


def is_offline() -> bool:
    """Whether this run may not reach the hub: ``HF_DATASETS_OFFLINE`` or ``HF_HUB_OFFLINE`` set and no hub
    mirror (:mod:`vocab_transfer.mirror`) to read instead."""
    from .. import mirror

    return mirror.root() is None and any(os.environ.get(f, "").strip().upper() in ("1", "ON", "YES", "TRUE")
                                         for f in ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE"))


def check_offline(tasks: list[str], registry: dict, cache: str | os.PathLike, where: str) -> None:
    """Raise at once, naming ``where`` and the tasks, when the run is offline (:func:`is_offline`) and leaf
    tasks of ``tasks`` read hub datasets (neither a packaged builder on local files nor a local folder) not
    in the datasets cache ``cache`` (as ``owner___name``): what an offline run cannot fetch."""
    if not is_offline():
        return
    bad = [f"{leaf} ({path})" if leaf == t else f"{t}: {leaf} ({path})"
           for t in tasks for leaf, path in leaf_datasets(t, registry).items()
           if path and path not in LOCAL_BUILDERS and not Path(path).is_dir()
           and not (Path(cache) / path.replace("/", "___")).is_dir()]
    if bad:
        raise ValueError(f"{where}: this run is offline (HF_DATASETS_OFFLINE/HF_HUB_OFFLINE set, "
                         f"no hub mirror VOCAB_TRANSFER_HUB_MIRROR) and tasks {bad} read hub datasets not in "
                         f"{cache}: fetch them on a machine with internet, point VOCAB_TRANSFER_HUB_MIRROR "
                         "at a mirror, or leave them out")


def fetch(tasks: list[str], include_path: str | None, *, cache: str | os.PathLike | None = None,
          limit: int | None = None) -> dict:
    """Build the tasks (the harness downloads their datasets into the datasets cache) and say what they hold:
    ``{task: {"version": ..., "documents": n, "chance": c}}`` for every leaf task of the groups named;
    ``chance`` (multiple-choice tasks only) is the mean of 1/number of choices over the documents scored (the
    first ``limit``). An offline run whose tasks need hub datasets not in ``cache`` fails at once
    (:func:`check_offline`)."""
    from lm_eval.tasks import get_task_dict

    manager = task_manager(include_path)
    unknown = unknown_tasks(tasks, registry := registry_from(manager))
    if unknown:
        raise ValueError(f"eval.benchmarks.tasks: lm-eval knows no task or group {', '.join(unknown)} "
                         f"(include_path: {include_path}); `lm_eval --tasks list` lists them")
    if cache is not None:
        check_offline(tasks, registry, cache, "eval.benchmarks.tasks")
    out: dict = {}

    def walk(d):
        for value in d.values():
            if isinstance(value, dict):
                walk(value)
            else:
                docs = value.eval_docs
                c = chance(value, docs, limit)
                out[value.config.task] = {"version": value.VERSION, "documents": len(docs),
                                          **({} if c is None else {"chance": c})}

    walk(get_task_dict(tasks, manager))
    return out


def chance(task, docs, limit: int | None = None) -> float | None:
    """A multiple-choice task's chance accuracy: the mean of 1/number of choices over its first ``limit``
    documents (all without a limit); None for other tasks."""
    if getattr(task, "OUTPUT_TYPE", None) != "multiple_choice":
        return None
    n = len(docs) if limit is None else min(limit, len(docs))
    counts = [len(task.doc_to_choice(docs[i])) for i in range(n)]
    return sum(1 / c for c in counts if c) / len(counts) if counts else None


def evaluate(model_dir: str, tasks: list[str], *, include_path: str | None = None,
             num_fewshot: int | None = None, limit: int | None = None, batch_size: int = 8, seed: int = 0,
             device: str | None = None) -> pd.DataFrame:
    """Score the model folder ``model_dir`` (with its tokenizer) on ``tasks``: one row per (task, metric) with
    ``value``, ``stderr`` and ``samples`` (documents scored). bf16 on a GPU, fp32 on the CPU; seeded."""
    import lm_eval
    import torch
    from transformers import AutoConfig

    from ..source_model import is_causal_lm

    if not is_causal_lm(AutoConfig.from_pretrained(model_dir)):
        raise ValueError(f"{model_dir} is a masked LM; lm-eval's benchmarks (eval.benchmarks) score decoder "
                         "(causal) LMs: leave this config's benchmarks out")
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    dtype = "bfloat16" if device.startswith("cuda") else "float32"
    res = lm_eval.simple_evaluate(
        model="hf", model_args={"pretrained": str(model_dir), "dtype": dtype}, tasks=list(tasks),
        task_manager=task_manager(include_path), num_fewshot=num_fewshot, limit=limit, batch_size=batch_size,
        device=device, random_seed=seed, numpy_random_seed=seed, torch_random_seed=seed,
        fewshot_random_seed=seed, log_samples=False)
    rows = []
    for task, metrics in res["results"].items():
        samples = res.get("n-samples", {}).get(task, {}).get("effective")
        for key, value in metrics.items():
            name, comma, filt = key.partition(",")  # "<metric>,<filter>"; other keys (alias, ...) no score
            if (not comma or name.endswith("_stderr") or not isinstance(value, (int, float))
                or isinstance(value, bool)):
                continue
            stderr = metrics.get(f"{name}_stderr,{filt}")
            rows.append({"task": task, "metric": name, "filter": filt, "value": float(value),
                         "stderr": float(stderr) if isinstance(stderr, (int, float)) else float("nan"),
                         "samples": samples, "num_fewshot": res.get("n-shot", {}).get(task)})
    if not rows:
        raise ValueError(f"lm-eval returned no scores for {tasks} on {model_dir}")
    return pd.DataFrame(rows)


def primary_scores(scores: pd.DataFrame) -> pd.DataFrame:
    """One row per task: its primary metric (:data:`PRIMARY_METRICS`, else the first it reports), unfiltered
    where a metric has several filters (``none``, else the first: gsm8k's ``strict-match``)."""
    keep = []
    for _, rows in scores.groupby("task", sort=False):
        ranked = sorted(rows.index, key=lambda i: (
            PRIMARY_METRICS.index(rows.loc[i, "metric"]) if rows.loc[i, "metric"] in PRIMARY_METRICS
            else len(PRIMARY_METRICS), rows.loc[i, "filter"] != "none"))
        keep.append(ranked[0])
    return scores.loc[keep]


#: Metrics that chance adjusts (:func:`kept_share`): accuracies of multiple-choice tasks.
CHANCE_METRICS = ("acc", "acc_norm")


def add_chance(scores: pd.DataFrame, fetched: dict) -> pd.DataFrame:
    """``scores`` (rows of :func:`evaluate`) with ``chance``: the task's chance accuracy from ``fetched`` (the
    ``fetched`` of rule download_benchmark_data's ``data.json``, :func:`fetch`) on :data:`CHANCE_METRICS` rows
    of multiple-choice tasks, NaN elsewhere."""
    out = scores.copy()
    out["chance"] = [float(fetched.get(t, {}).get("chance", float("nan")))
                     if m in CHANCE_METRICS else float("nan")
                     for t, m in zip(out["task"], out["metric"], strict=True)]
    return out


def kept_share(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` (columns source, target, stage, task, metric, filter, value, optionally chance) with
    ``kept``: each value over the source model's value of the same source, target, task, metric and filter
    (NaN where the source scores 0), and ``kept_over_chance``: the share of the source's margin over chance
    kept, (value - chance) / (source value - chance), for multiple-choice accuracies (NaN where chance is
    unknown or the source scores no more than chance)."""
    import math

    key = ["source", "target", "task", "metric", "filter"]
    ref = table[table["stage"] == "source"].set_index(key)["value"]
    base = ref.reindex(pd.MultiIndex.from_frame(table[key])).to_numpy()
    out = table.copy()
    out["kept"] = [v / b if b else float("nan") for v, b in zip(out["value"], base, strict=True)]
    chance = out["chance"] if "chance" in out else [float("nan")] * len(out)
    out["kept_over_chance"] = [(v - c) / (b - c) if not math.isnan(c) and b - c > 0 else float("nan")
                               for v, b, c in zip(out["value"], base, chance, strict=True)]
    return out

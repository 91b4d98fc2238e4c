"""Zero-shot benchmark scores of decoder models with EleutherAI's lm-evaluation-harness (PyPI ``lm-eval``), and the
share of the source model's score that a transferred model keeps (as the OMP tokensurgeon paper and tokenkit report
them).

The harness is used as a library (``lm_eval.simple_evaluate`` with its ``hf`` model on a local Hugging Face folder),
so its task definitions, prompts, metrics and standard errors are the harness's own. Tasks on local files are task
YAMLs in a folder (``include_path``, as ``lm_eval --include_path``). The datasets are fetched once, on a machine with
internet (:func:`fetch`, rule download_benchmark_data on the login node), into a datasets cache that the evaluation
jobs then read offline.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pandas as pd

log = logging.getLogger(__name__)

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
    from lm_eval.tasks import TaskManager

    from .. import mirror

    if include_path is not None and not Path(include_path).is_dir():
        raise FileNotFoundError(f"eval.benchmarks.include_path: {include_path} is not a folder of task YAMLs")
    paths = [include_path] if include_path else []
    if mirror.root() and (mirror.root() / mirror.LM_EVAL_TASKS).is_dir():  # a hub mirror's tasks, which take
        paths.append(str(mirror.root() / mirror.LM_EVAL_TASKS))             # precedence over lm-eval's own
    return TaskManager(include_path=paths or None)


def fetch(tasks: list[str], include_path: str | None) -> dict:
    """Build the tasks (the harness downloads their datasets into the datasets cache) and say what they hold:
    ``{task: {"version": ..., "documents": n}}`` for every leaf task of the groups named."""
    from lm_eval.tasks import get_task_dict

    manager = task_manager(include_path)
    unknown = [t for t in tasks if t not in manager.all_tasks]
    if unknown:
        raise ValueError(f"eval.benchmarks.tasks: lm-eval knows no task or group {unknown} (include_path: "
                         f"{include_path}); `lm_eval --tasks list` lists them")
    out: dict = {}

    def walk(d):
        for value in d.values():
            if isinstance(value, dict):
                walk(value)
            else:
                docs = value.eval_docs
                out[value.config.task] = {"version": value.VERSION, "documents": len(docs)}

    walk(get_task_dict(tasks, manager))
    return out


def evaluate(model_dir: str, tasks: list[str], *, include_path: str | None = None, num_fewshot: int | None = None,
             limit: int | None = None, batch_size: int = 8, seed: int = 0, device: str | None = None) -> pd.DataFrame:
    """Score the model folder ``model_dir`` (with its tokenizer) on ``tasks``: one row per (task, metric) with
    ``value``, ``stderr`` and ``samples`` (documents scored). bf16 on a GPU, fp32 on the CPU; seeded."""
    import lm_eval
    import torch
    from transformers import AutoConfig

    from ..source_model import is_causal_lm

    if not is_causal_lm(AutoConfig.from_pretrained(model_dir)):
        raise ValueError(f"{model_dir} is a masked LM; lm-eval's benchmarks (eval.benchmarks) score decoder (causal) "
                         "LMs: leave this config's benchmarks out")
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    dtype = "bfloat16" if device.startswith("cuda") else "float32"
    res = lm_eval.simple_evaluate(
        model="hf", model_args={"pretrained": str(model_dir), "dtype": dtype}, tasks=list(tasks),
        task_manager=task_manager(include_path), num_fewshot=num_fewshot, limit=limit, batch_size=batch_size,
        device=device, random_seed=seed, numpy_random_seed=seed, torch_random_seed=seed, fewshot_random_seed=seed,
        log_samples=False)
    rows = []
    for task, metrics in res["results"].items():
        samples = res.get("n-samples", {}).get(task, {}).get("effective")
        for key, value in metrics.items():
            name, comma, filt = key.partition(",")  # "<metric>,<filter>"; other keys (alias, sample_len) are no score
            if not comma or name.endswith("_stderr") or not isinstance(value, (int, float)) or isinstance(value, bool):
                continue
            stderr = metrics.get(f"{name}_stderr,{filt}")
            rows.append({"task": task, "metric": name, "filter": filt, "value": float(value),
                         "stderr": float(stderr) if isinstance(stderr, (int, float)) else float("nan"),
                         "samples": samples, "num_fewshot": res.get("n-shot", {}).get(task)})
    if not rows:
        raise ValueError(f"lm-eval returned no scores for {tasks} on {model_dir}")
    return pd.DataFrame(rows)


def primary_scores(scores: pd.DataFrame) -> pd.DataFrame:
    """One row per task: its primary metric (:data:`PRIMARY_METRICS`, else the first it reports), unfiltered where the
    task reports a metric under several filters (``none``, else the first: gsm8k's ``strict-match``)."""
    keep = []
    for _, rows in scores.groupby("task", sort=False):
        ranked = sorted(rows.index, key=lambda i: (
            PRIMARY_METRICS.index(rows.loc[i, "metric"]) if rows.loc[i, "metric"] in PRIMARY_METRICS
            else len(PRIMARY_METRICS), rows.loc[i, "filter"] != "none"))
        keep.append(ranked[0])
    return scores.loc[keep]


def kept_share(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` (columns source, target, stage, task, metric, filter, value) with ``kept``: each value over the source
    model's value of the same source, target, task, metric and filter (NaN where the source scores 0)."""
    key = ["source", "target", "task", "metric", "filter"]
    ref = table[table["stage"] == "source"].set_index(key)["value"]
    idx = pd.MultiIndex.from_frame(table[key])
    base = ref.reindex(idx).to_numpy()
    out = table.copy()
    out["kept"] = [v / b if b else float("nan") for v, b in zip(out["value"], base, strict=True)]
    return out

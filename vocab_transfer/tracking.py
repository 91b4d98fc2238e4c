"""Live training curves: the trainers' scalars written as TensorBoard event files or to a Weights & Biases run
while they train, so that a long run is watched, and compared with its siblings, before it ends.

A trainer opens one :class:`Tracker` on its first process with the section's ``report_to`` (``[tensorboard]``,
``[wandb]``, both, or ``[]``) and calls :meth:`Tracker.log` where it appends a row to its curve: the step axis
is the curve's, the one of the DAG's figures, which still come from the artifacts. Logged names are
``<split>/<name>`` (``train/loss``, ``heldout/loss``, ``train/lr``, ``train/grad_norm``,
``train/tokens_per_s``, ``train/mfu`` on a GPU).

- TensorBoard: event files in ``<run folder>/tensorboard`` (``tensorboard --logdir results/lapt``). A resumed
  run writes on from its checkpoint's step (``purge_step``: TensorBoard drops what the killed attempt logged
  after it); a fresh start purges from step 0.
- Weights & Biases: one run per trainer run, its id derived from the run folder, so a resumed job continues
  the same W&B run (``resume="allow"``). Project from ``WANDB_PROJECT`` (default ``vocab-transfer``). Without
  internet on the compute nodes, set ``WANDB_MODE=offline``: the run is written under ``<run folder>/wandb``
  and ``wandb sync <run folder>/wandb/offline-run-*`` uploads it later from a login node.

The packages are imported only when a trainer opens a tracker; :func:`check_report_to` names an unknown value
or a missing package while the config is parsed.
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import os
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator

from .typed import UniqueList

#: Peak dense throughput per GPU in TFLOP/s, (16-bit tensor cores, fp32), from the vendors' data sheets
#: (without sparsity): A100 312 / 19.5, H100 and H200 SXM 989 / 67, V100 SXM2 125 / 15.7, RTX A6000 155 /
#: 38.7. The logged MFU and the planner's time estimates (vocab_transfer.workflow.resources) read it.
GPU_TFLOPS = {"a100": (312.0, 19.5), "h100": (989.0, 67.0), "h200": (989.0, 67.0), "v100": (125.0, 15.7),
              "a6000": (155.0, 38.7)}

#: What ``report_to`` may list, each also the name of the package it needs.
REPORT_TO = ("tensorboard", "wandb")
DEFAULT_REPORT_TO = ("tensorboard",)


def missing_package(values) -> str | None:
    """Why ``values`` (a ``report_to`` list) cannot run here: the first whose package is not installed, or
    None."""
    for v in values or ():
        if v in REPORT_TO and importlib.util.find_spec(v) is None:
            return (f"{v!r} needs the {v!r} package, which is not installed here (pip install {v}), or leave "
                    f"{v!r} out")
    return None


def _installed(values: list[str]) -> list[str]:
    if problem := missing_package(values):
        raise ValueError(problem)
    return values


#: A ``report_to`` key (``lapt.training``, ``finetune.training``, a refining method's parameters): distinct
#: values of :data:`REPORT_TO`, each with its package installed, checked while the config is parsed.
ReportTo = Annotated[UniqueList[Literal["tensorboard", "wandb"]], AfterValidator(_installed)]


def check_report_to(values, where: str) -> list[str]:
    """``values`` (a section's ``report_to``) as a list, each one of :data:`REPORT_TO` with its package
    installed (as :data:`ReportTo` checks a config), or ValueError naming ``where``."""
    if values is None:
        return []
    values = [values] if isinstance(values, str) else list(values)
    if unknown := [v for v in values if v not in REPORT_TO]:
        raise ValueError(f"{where}: {unknown[0]!r} is not one of {sorted(REPORT_TO)} (or an empty list: no "
                         "live curves)")
    if problem := missing_package(values):
        raise ValueError(f"{where}: {problem}")
    return values


def peak_flops(device) -> float | None:
    """The dense bf16 peak of a CUDA device, from its name (:data:`GPU_TFLOPS`); None on the CPU or for a GPU
    not listed (no MFU is logged then)."""
    if getattr(device, "type", str(device)) != "cuda":
        return None
    import torch

    name = torch.cuda.get_device_name(device).lower()
    return next((tflops[0] * 1e12 for model, tflops in GPU_TFLOPS.items() if model in name), None)


def mfu(tokens_per_s: float, flops_per_token: float, peak: float | None, processes: int = 1) -> float | None:
    """Model FLOPs utilization (PaLM App. B) of ``processes`` GPUs: ``tokens_per_s`` (all processes) x
    ``flops_per_token`` (training FLOPs, about 6 x parameters) over their peak; None without a known peak."""
    return tokens_per_s * flops_per_token / (peak * processes) if peak and tokens_per_s else None


class Tracker:
    """The live curves of one run: :meth:`log` per curve row, :meth:`close` at the end (or a ``with`` block);
    with an empty ``report_to``, nothing."""

    def __init__(self, report_to, run_dir: str | os.PathLike, *, name: str, config: dict | None = None,
                 start_step: int = 0):
        self.report_to = check_report_to(report_to, "report_to")
        self.run_dir, self.writer, self.wandb = Path(run_dir), None, None
        if "tensorboard" in self.report_to:
            from torch.utils.tensorboard import SummaryWriter

            # purge_step: what an earlier attempt logged from here on is dropped (a resumed or fresh run)
            self.writer = SummaryWriter(log_dir=str(self.run_dir / "tensorboard"), purge_step=start_step)
            if config:
                self.writer.add_text("config",
                                     "\n".join(f"    {k}: {v}" for k, v in sorted(config.items())), 0)
        if "wandb" in self.report_to:
            import wandb

            run_id = hashlib.sha256(str(self.run_dir.resolve()).encode()).hexdigest()[:16]
            (self.run_dir / "wandb").mkdir(parents=True, exist_ok=True)
            self.wandb = wandb.init(project=os.environ.get("WANDB_PROJECT", "vocab-transfer"), name=name,
                                    id=run_id, resume="allow", dir=str(self.run_dir), config=config or {})

    def log(self, step: int, metrics: dict[str, float | None], flush: bool = True) -> None:
        """The scalars of ``step``; None and NaN values are left out. ``flush``: on disk now (a trainer that
        logs every step flushes when it prints its progress line)."""
        kept = {k: float(v) for k, v in metrics.items() if v is not None and math.isfinite(float(v))}
        if self.writer is not None:
            for k, v in kept.items():
                self.writer.add_scalar(k, v, step)
            if flush:
                self.writer.flush()  # watched live: the row is on disk when it is logged
        if self.wandb is not None and kept:
            self.wandb.log(kept, step=step)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        if self.wandb is not None:
            self.wandb.finish()

    def __enter__(self) -> Tracker:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

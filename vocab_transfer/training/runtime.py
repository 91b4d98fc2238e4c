"""What every trainer shares (docs/architecture.md, "The training runtime"): the process group
(:func:`init_distributed`, DDP, FSDP2), device and precision, the optimizer step and schedule, atomic
checkpoints whose resume is refused under other settings, and the signal protocol of a SLURM job
(:class:`~vocab_transfer.checkpointing.StopSignals`: SIGUSR1 / SIGTERM -> checkpoint after the current step ->
exit :data:`EXIT_RESUME`, 75, which the profile retries). A trainer (:mod:`.lapt`, :mod:`.finetune`,
:mod:`.zeroshot`) keeps only its objective, its data order and what it records; data order, masks and dropout
must be functions of the seed and the step, so a resumed run ends bit-identical to an uninterrupted one."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import sys
import time
from pathlib import Path

import torch

from ..checkpointing import EXIT_RESUME, StopSignals, check_checkpoint  # noqa: F401  (the refinement's too)
from ..io import atomic_path, refuse_links, remove_tree
from ..memory import log_peak_memory_at_exit
from ..typed import Section
from .launch import first_node, node_address

log = logging.getLogger(__name__)


def local_rank() -> int:
    """This process's index on its node: torchrun's ``LOCAL_RANK``, else SLURM's ``SLURM_LOCALID`` (``srun``
    with one task per GPU), else 0."""
    return int(os.environ.get("LOCAL_RANK", os.environ.get("SLURM_LOCALID", 0)) if _launched() else 0)


def _launched() -> bool:
    """Started as one of several processes: by torchrun (``WORLD_SIZE``), or by a several-task ``srun``."""
    if int(os.environ.get("WORLD_SIZE", 1)) > 1:
        return True
    srun = "SLURM_PROCID" in os.environ and "SLURM_STEP_ID" in os.environ
    return srun and int(os.environ.get("SLURM_NTASKS", 1)) > 1


def pick_device() -> torch.device:
    """``cuda:<local rank>`` when CUDA is available (one process per GPU), else the CPU."""
    return torch.device(f"cuda:{local_rank()}" if torch.cuda.is_available() else "cpu")


@dataclasses.dataclass(frozen=True)
class Distributed:
    """The processes of one training run: ``world`` of them, this one ``rank`` (0 writes the artifacts)."""

    world: int = 1
    rank: int = 0

    @property
    def main(self) -> bool:
        return self.rank == 0

    def wrap(self, module: torch.nn.Module, device: torch.device) -> torch.nn.Module:
        """``module`` under DistributedDataParallel when there are several processes (gradients averaged over
        them), else itself."""
        if self.world == 1:
            return module
        return torch.nn.parallel.DistributedDataParallel(
            module, device_ids=[device.index] if device.type == "cuda" else None)

    def any(self, flag: bool, device: torch.device) -> bool:
        """Whether ``flag`` holds on any process (True on all of them then): SLURM's signal reaches the
        processes at slightly different times, and all must stop after the same step."""
        if self.world == 1:
            return flag
        value = torch.tensor(int(flag), device=device)
        torch.distributed.all_reduce(value, op=torch.distributed.ReduceOp.MAX)
        return bool(value.item())

    def barrier(self) -> None:
        if self.world > 1:
            torch.distributed.barrier()

    def close(self) -> None:
        if self.world > 1 and torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()


def current_distributed() -> Distributed:
    """The process group this process has joined (:func:`init_distributed`), or one process."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return Distributed(torch.distributed.get_world_size(), torch.distributed.get_rank())
    return Distributed()


def init_distributed() -> Distributed:
    """Join the run's process group, or a :class:`Distributed` of one process.

    Under torchrun (single node: ``torchrun --standalone --nproc-per-node N``; several nodes: one torchrun per
    node with c10d rendezvous, :mod:`vocab_transfer.training.launch`) the environment names world size, rank
    and the rendezvous. Under ``srun`` with one task per GPU and no torchrun, SLURM's ``SLURM_NTASKS`` /
    ``SLURM_PROCID`` / ``SLURM_LOCALID`` name them and ``MASTER_ADDR`` (default: the job's first node) /
    ``MASTER_PORT`` the rendezvous. NCCL on GPUs, gloo on CPUs; each process takes its local rank's GPU."""
    if not _launched():
        return Distributed()
    if "WORLD_SIZE" not in os.environ:  # srun: SLURM's variables
        os.environ.update(WORLD_SIZE=os.environ["SLURM_NTASKS"], RANK=os.environ["SLURM_PROCID"],
                          LOCAL_RANK=os.environ.get("SLURM_LOCALID", "0"))
        os.environ.setdefault("MASTER_ADDR",
                              node_address(first_node(os.environ.get("SLURM_JOB_NODELIST", "localhost"))))
        os.environ.setdefault("MASTER_PORT", str(29500 + int(os.environ.get("SLURM_JOB_ID", 0)) % 20000))
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank())
    torch.distributed.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    dist = current_distributed()
    log.info("process %d of %d (local rank %d, %s)", dist.rank, dist.world, local_rank(),
             torch.distributed.get_backend())
    return dist


def enable_gradient_checkpointing(model: torch.nn.Module) -> bool:
    """Recompute each transformer layer's activations in the backward pass instead of keeping them (less
    memory for larger models or longer sequences, about a third more compute); False if the model cannot."""
    if not getattr(model, "supports_gradient_checkpointing", False):
        return False
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    return True


def _layers(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The transformer layers: modules of the classes the model's ``_no_split_modules`` names."""
    names = set(getattr(model, "_no_split_modules", None) or ())
    return [m for m in model.modules() if type(m).__name__ in names]


def compile_layers(model: torch.nn.Module) -> int:
    """``torch.compile`` each transformer layer in place (``nn.Module.compile``: parameter names, state dicts
    and checkpoints are unchanged). The layers share one compiled graph; embeddings, head and loss stay eager.
    Compiling whole models was slower in ``benchmarks/lapt_speed.py``; per layer it fuses the elementwise work
    between the matrix products (casts, LayerNorm, dropout, GELU). Returns the number of layers compiled now
    (0 where the model names no layer classes, or they are compiled)."""
    layers = [m for m in _layers(model) if getattr(m, "_compiled_call_impl", None) is None]
    for layer in layers:
        layer.compile(dynamic=False)  # static shapes: training and held-out batches get a graph each
    return len(layers)


def shard_model(model: torch.nn.Module) -> int:
    """FSDP2 (``torch.distributed.fsdp.fully_shard``) over the job's processes: each transformer layer is one
    unit whose parameters are gathered for its forward and backward only, the rest (embeddings, head, final
    norm) the root unit; parameters, gradients and optimizer states are sharded. Returns the layer unit count;
    ValueError if the model declares no layer classes."""
    from torch.distributed.fsdp import fully_shard

    layers = _layers(model)
    if not layers:
        raise ValueError(f"distributed: fsdp: {type(model).__name__} names no transformer layer classes "
                         "(_no_split_modules) to shard by; use distributed: ddp")
    for layer in layers:
        fully_shard(layer)
    fully_shard(model)
    return len(layers)


def is_sharded(model: torch.nn.Module) -> bool:
    from torch.distributed.fsdp import FSDPModule

    return isinstance(model, FSDPModule)


def full_state_dict(model: torch.nn.Module,
                    opt: torch.optim.Optimizer | None = None) -> tuple[dict, dict | None]:
    """(model, optimizer) state dicts as one process would hold them: gathered from the shards to rank 0 on
    the CPU for a :func:`shard_model` model (every process must call it; the others get empty dicts; the
    optimizer's is keyed by parameter name), else the plain ``state_dict()``s."""
    if not is_sharded(model):
        return model.state_dict(), None if opt is None else opt.state_dict()
    from torch.distributed.checkpoint.state_dict import (
        StateDictOptions,
        get_model_state_dict,
        get_optimizer_state_dict,
    )

    options = StateDictOptions(full_state_dict=True, cpu_offload=True)
    return (get_model_state_dict(model, options=options),
            None if opt is None else get_optimizer_state_dict(model, opt, options=options))


def param_dtype(precision: str) -> torch.dtype:
    """The dtype a trainer keeps the weights (and so gradients and optimizer states) in: bf16 for
    ``bf16_pure``, else fp32 (mixed precision casts inside autocast; a checkpoint stored in bf16, as decoder
    LLMs on the hub are, is upcast)."""
    return torch.bfloat16 if precision == "bf16_pure" else torch.float32


def autocast_factory(precision: str, device: torch.device):
    """``(autocast, dtype)`` for ``precision`` (``auto``: bf16 where the GPU has it, else fp16; ``bf16``,
    ``fp16``, ``fp32``; ``bf16_pure``: no autocast, the weights are bf16 themselves, :func:`param_dtype`): a
    factory of autocast contexts and the dtype they cast to (None: full precision); on a CPU only ``bf16``."""
    if device.type != "cuda":
        dtype = torch.bfloat16 if precision == "bf16" else None
    elif precision in ("auto", "bf16") and torch.cuda.is_bf16_supported():
        dtype = torch.bfloat16
    elif precision in ("auto", "fp16"):
        dtype = torch.float16
    else:
        dtype = None
    if dtype is None:
        return (lambda: torch.autocast(device.type, enabled=False)), None
    return (lambda: torch.autocast(device.type, dtype=dtype)), dtype


def grad_scaler(amp_dtype) -> torch.amp.GradScaler | None:
    """For fp16 autocast; None otherwise."""
    return torch.amp.GradScaler("cuda") if amp_dtype == torch.float16 else None


def linear_schedule(opt, steps: int, warmup_ratio: float, constant: bool = False
                    ) -> torch.optim.lr_scheduler.LambdaLR:
    """Linear warmup over ``round(warmup_ratio * steps)`` steps (at least 1), then linear decay to 0 at
    ``steps`` (or constant)."""
    warmup = max(1, round(warmup_ratio * steps))

    def factor(s: int) -> float:  # s = number of steps taken so far
        if s < warmup:
            return (s + 1) / warmup
        return 1.0 if constant else max(0.0, (steps - s) / max(1, steps - warmup))

    return torch.optim.lr_scheduler.LambdaLR(opt, factor)


def optimizer_step(params, opt, sched, scaler, clip_norm: float):
    """Unscale (fp16), clip the gradient norm, step optimizer and schedule, clear the gradients. Returns the
    norm before clipping, a tensor on the device (read it when logging: no host sync per step)."""
    if scaler:
        scaler.unscale_(opt)
    norm = torch.nn.utils.clip_grad_norm_(params, clip_norm)
    scaler.step(opt) if scaler else opt.step()
    if scaler:
        scaler.update()
    sched.step()
    opt.zero_grad(set_to_none=True)
    return norm


def checkpoint_settings(cfg, free: tuple[str, ...] = (), **extra) -> dict:
    """What a run's checkpoints are valid for (saved in their state, compared by :meth:`Checkpoints.resume`):
    ``extra`` and every field of the settings ``cfg`` but those in ``free`` (a resumed run may change them),
    as JSON values; a nested section (LAPT's ``adapter``) as its params wrote it."""
    fields = {k: v.as_written() if isinstance(v, Section) else getattr(cfg, k) for k, v in cfg}
    return json.loads(json.dumps({**extra, **{k: v for k, v in fields.items() if k not in free}}))


def check_settings(now: dict, then: dict, what: str, delete: str | os.PathLike) -> None:
    """ValueError naming the keys whose values differ between two :func:`checkpoint_settings` (or only one of
    them has) and the folder to delete: a job rerun after its parameters changed must not continue another
    run. ``what``: what was made with ``then`` ("<path> was written")."""
    changed = sorted(k for k in now.keys() | then.keys() if now.get(k) != then.get(k))
    if changed:
        raise ValueError(f"{what} with other settings ({', '.join(changed)}: {[then.get(k) for k in changed]}"
                         f" then, {[now.get(k) for k in changed]} now); delete {delete} to start this run "
                         "over")


class Checkpoints:
    """``step-XXXXXXXX/`` folders under ``root``, each written atomically with its manifest (the files' sizes
    and hashes, checked before it is read); only the newest ``keep`` are kept. ``root`` must not be, nor hold,
    a symbolic link (:func:`~vocab_transfer.io.refuse_links`): nothing is written, read or deleted through
    one. ``what`` names the trainer in errors."""

    def __init__(self, root: str | os.PathLike, keep: int, what: str = "training"):
        self.root, self.keep, self.what = Path(root), keep, what

    def _steps(self) -> list[Path]:
        refuse_links(self.root, what=f"{self.what} checkpoint folder")
        if not self.root.is_dir():
            return []
        return sorted(p for p in self.root.glob("step-*") if (p / "state.json").is_file())

    def latest(self) -> Path | None:
        done = self._steps()
        return done[-1] if done else None

    def save(self, step: int, model, opt, sched, scaler, state: dict) -> None:
        """Write the checkpoint of ``step`` (a :func:`shard_model` model: every process calls it, rank 0
        writes the gathered full state, so ``model.pt`` loads into the unsharded model)."""
        model_state, opt_state = full_state_dict(model, opt)
        if is_sharded(model) and torch.distributed.get_rank() != 0:
            return
        refuse_links(self.root, what=f"{self.what} checkpoint folder")
        with atomic_path(self.root / f"step-{step:08d}", directory=True) as tmp:
            torch.save(model_state, tmp / "model.pt")
            torch.save({"optimizer": opt_state, "scheduler": sched.state_dict(),
                        "scaler": scaler.state_dict() if scaler is not None else None}, tmp / "optimizer.pt")
            torch.save({"torch": torch.get_rng_state(),
                        "cuda": torch.cuda.get_rng_state_all()
                        if torch.cuda.is_available() else None}, tmp / "rng.pt")
            (tmp / "state.json").write_text(json.dumps(state))
        for old in self._steps()[: -self.keep]:
            remove_tree(old, within=self.root)

    def resume(self, settings: dict | None = None) -> tuple[Path | None, dict | None]:
        """The newest complete checkpoint (its manifest checked) and its state, or ``(None, None)``. With
        ``settings`` (what the run's result depends on, saved as the state's ``config``), one written with
        other settings raises ValueError (:func:`check_settings`); one without saved settings is taken."""
        path = self.latest()
        if path is None:
            return None, None
        check_checkpoint(path, self.what, self.root)  # before any of its files is read
        state = json.loads((path / "state.json").read_text())
        if settings is not None:
            check_settings(settings, state.get("config", settings),
                           f"{self.what} checkpoint {path} was written", self.root)
        return path, state

    @staticmethod
    def restore_model(path: Path, model, device: torch.device) -> None:
        """Load the model's weights of the checkpoint ``path`` (from :meth:`resume`, whose check of every
        file's hash it repeats by sizes and times)."""
        check_checkpoint(path, "training", path.parent, deep=False)
        model.load_state_dict(torch.load(path / "model.pt", map_location=device, weights_only=True))

    @staticmethod
    def restore_optimizer(path: Path, opt, sched, scaler, device: torch.device, model=None) -> None:
        """Load the optimizer, schedule and scaler states (``model``: a :func:`shard_model` model, whose full
        optimizer state is sharded as its parameters are)."""
        check_checkpoint(path, "training", path.parent, deep=False)
        states = torch.load(path / "optimizer.pt", map_location=device, weights_only=True)
        if model is not None and is_sharded(model):
            from torch.distributed.checkpoint.state_dict import StateDictOptions, set_optimizer_state_dict

            set_optimizer_state_dict(model, opt, states["optimizer"],
                                     options=StateDictOptions(full_state_dict=True))
        else:
            opt.load_state_dict(states["optimizer"])
        sched.load_state_dict(states["scheduler"])
        if scaler is not None and states["scaler"] is not None:
            scaler.load_state_dict(states["scaler"])


def setup_logging(log_path: str | None) -> None:
    """A trainer CLI's logging: stderr and ``log_path``; its peak memory is logged at exit."""
    handlers = [logging.StreamHandler(sys.stderr)] + ([logging.FileHandler(log_path)] if log_path else [])
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s",
                        handlers=handlers, force=True)
    log_peak_memory_at_exit(logging.getLogger("job"))


class Progress:
    """Steps (or another ``unit``) per second and the ETA since ``start`` (where the run began or resumed)."""

    def __init__(self, start: int, total: int, unit: str = "steps"):
        self.start, self.total, self.t0, self.unit = start, total, time.time(), unit

    def rate(self, step: int) -> float:
        return (step - self.start) / max(time.time() - self.t0, 1e-9)

    def __call__(self, step: int) -> str:
        rate = self.rate(step)
        eta = (self.total - step) / rate if rate > 0 else float("nan")
        return f"{rate:.2f} {self.unit}/s, ETA {eta:.0f} s"

"""Language-adaptive pretraining (LAPT) of a transferred model: a resumable CLI for CPU, one GPU, or
many GPUs and nodes through ``torchrun``.

    python -m vocab_transfer.lapt --model results/source/demo-xlmr/model \\
        --embeddings results/init/demo-xlmr/sw/focus.safetensors --tokenizer results/tokenizers/sw \\
        --train results/corpus/sw/train.parquet --heldout results/corpus/sw/heldout.parquet \\
        --output results/lapt/demo-xlmr/sw/focus --config '{"steps": 300, "batch_size": 16}'
    torchrun --nproc-per-node 4 -m vocab_transfer.lapt ...       # DDP, same flags

Defaults are FOCUS's (focus.md Table 5): AdamW β = (0.9, 0.999), ε = 1e-8, no weight decay, peak lr
5e-5, linear warmup over 10% of the steps then constant, batch 128 × 256 tokens, gradient clipping 1.0,
15% masking with 80/10/10. ``objective`` is the model's own by default: masked LM, or next-token loss
for a decoder-only source (WECHSEL's GPT-2). ``variant`` selects what is trained (one loop, stages of
trainable sets):

- ``full``: everything;
- ``two_stage``: embeddings only for an extra ``embedding_stage_ratio`` (20%) of the steps, then
  everything (FOCUS §3.1, the Random baseline); each stage has its own optimizer and warmup;
- ``embeddings_only``: vocab-swap's "Embed Grad";
- ``freeze_body``: the non-embedding parameters frozen for the first ``embedding_stage_ratio`` of the
  steps (WECHSEL §5.4.2);
- ``adapter``: MAD-X language adapters (MAD-X 2.0 by default, settings in ``adapter``:
  ``vocab_transfer.adapters.AdapterConfig``) trained jointly with the embeddings, the rest frozen
  (unks-everywhere §4.3); ``--output`` also holds ``language_adapter.safetensors`` / ``.json``. With
  ``train_embeddings: false`` only the adapters train: MAD-X's own setting, a language adapter for the source
  model's vocabulary (no ``--embeddings``), whose rows stay the source's (unks-everywhere §4.1, §4.3).

Every ``checkpoint_every`` steps the model, optimizer, scheduler, RNG states and step are written
atomically to ``--checkpoints``; a rerun resumes from the last one and ends bit-identical to an
uninterrupted run (data order, masks and dropout are functions of the seed and the step). On
SIGUSR1 / SIGTERM (SLURM's ``--signal`` warning, preemption) the job checkpoints after the current
step and exits with code 75, so a retry resumes. The held-out loss is logged every ``eval_every``
steps (first at step 0) to ``--curve`` (parquet). With ``--anchors`` (an overlap parquet of
``compute_overlap``), each record also holds ``source_correlation``: ρ̄ (vocab-swap §2.3) between the
current input embeddings of the target tokens shared with the source (special and exact matches) and
those tokens' source embeddings, vocab-swap Figure 2's recovery curve (all tokens when the target
tokenizer is the source's).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import logging
import math
import os
import shutil
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import torch
import torch.distributed as dist

from .adapters import (
    AdapterConfig,
    adapter_parameter_names,
    add_language_adapter,
    save_language_adapter,
    strip_language_adapter,
)
from .corpus import read_corpus
from .correlation import row_correlations
from .io import atomic_path, write_parquet
from .mlm import mask_tokens, pack_texts

log = logging.getLogger(__name__)
EXIT_RESUME = 75  # EX_TEMPFAIL: checkpointed after a signal, rerun to resume


CORRELATION_BINS = 40  # per-token ρ_i histogram over [-1, 1] in the curve (vocab-swap Figure 3)


@dataclass
class LaptConfig:
    objective: str = "auto"  # auto: from the model (clm for decoders, WECHSEL's GPT-2; mlm otherwise) | mlm | clm
    steps: int = 1000  # optimizer steps of the main stage
    batch_size: int = 128  # sequences per optimizer step, over all devices (kept when GPUs change)
    micro_batch_size: int | None = None  # sequences per device and forward pass (None: all of a device's share)
    seq_len: int = 256
    lr: float = 5e-5
    warmup_ratio: float = 0.1
    schedule: str = "constant"  # after warmup: constant (FOCUS) | linear decay to 0 (WECHSEL)
    betas: list[float] = field(default_factory=lambda: [0.9, 0.999])
    eps: float = 1e-8
    weight_decay: float = 0.0
    clip_norm: float = 1.0
    mask_prob: float = 0.15
    precision: str = "auto"  # auto (bf16 on GPUs that have it, else fp16 + scaler; fp32 on CPU) | bf16 | fp16 | fp32
    eval_every: int = 100  # steps between held-out evaluations
    eval_sequences: int = 64
    checkpoint_every: int = 100
    keep_checkpoints: int = 2
    variant: str = "full"  # full | two_stage | embeddings_only | freeze_body | adapter
    adapter: dict = field(default_factory=dict)  # variant adapter: AdapterConfig fields (default MAD-X 2.0)
    train_embeddings: bool = True  # variant adapter: train the embeddings with the adapters (false: adapters only)
    embedding_stage_ratio: float = 0.2
    seed: int = 0
    threads: int | None = None  # CPU threads (None: torch's default)

    def __post_init__(self) -> None:
        allowed = {"objective": ("auto", "mlm", "clm"), "schedule": ("constant", "linear"),
                   "precision": ("auto", "bf16", "fp16", "fp32"),
                   "variant": ("full", "two_stage", "embeddings_only", "freeze_body", "adapter")}
        for key, values in allowed.items():
            if getattr(self, key) not in values:
                raise ValueError(f"LAPT config: {key} must be one of {list(values)}, not {getattr(self, key)!r}")
        AdapterConfig.from_dict(self.adapter)
        if not self.train_embeddings and self.variant != "adapter":
            raise ValueError(f"LAPT config: train_embeddings: false applies to variant 'adapter' (MAD-X language "
                             f"adapters for the source's own vocabulary), not {self.variant!r}")

    @classmethod
    def from_dict(cls, d: dict) -> LaptConfig:
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(d) - names
        if unknown:
            raise ValueError(f"LAPT config: unknown key(s) {sorted(unknown)}; known: {sorted(names)}")
        return cls(**d)

    def stages(self) -> list[tuple[int, str]]:
        """(steps, trainable) per stage: trainable is ``embeddings``, ``adapter`` (and embeddings),
        ``adapter_only`` or ``all``."""
        k = round(self.embedding_stage_ratio * self.steps)
        return {"full": [(self.steps, "all")],
                "two_stage": [(k, "embeddings"), (self.steps, "all")],
                "embeddings_only": [(self.steps, "embeddings")],
                "freeze_body": [(k, "embeddings"), (self.steps - k, "all")],
                "adapter": [(self.steps, "adapter" if self.train_embeddings else "adapter_only")]}[self.variant]


def embedding_parameter_names(model) -> set[str]:
    """Input embeddings (tied to the output embeddings) and the LM head's output bias."""
    emb = model.get_input_embeddings().weight
    names = {n for n, p in model.named_parameters() if p is emb}
    out = model.get_output_embeddings()
    for n, p in model.named_parameters():
        if out is not None and (p is getattr(out, "bias", None) or p is out.weight):
            names.add(n)
    return names


def resolve_objective(model, objective: str) -> str:
    """The objective that fits the model: ``clm`` for a decoder-only causal LM (GPT-2), ``mlm`` for a masked
    LM (XLM-R); see :func:`vocab_transfer.source_model.is_causal_lm`. ``auto`` picks it; an explicit
    ``mlm`` / ``clm`` that does not fit raises ValueError naming both."""
    from .source_model import is_causal_lm

    fits = "clm" if is_causal_lm(model) else "mlm"
    if objective not in ("auto", fits):
        kind = "a causal (decoder-only) LM" if fits == "clm" else "a masked LM"
        raise ValueError(f"LAPT objective {objective!r} does not fit the model {type(model).__name__}, which is "
                         f"{kind}: set objective: {fits!r} (or auto) in the LAPT config")
    return fits


def set_trainable(model, trainable: str) -> None:
    keep = set() if trainable == "adapter_only" else embedding_parameter_names(model)
    keep |= adapter_parameter_names(model) if trainable in ("adapter", "adapter_only") else set()
    for n, p in model.named_parameters():
        p.requires_grad_(trainable == "all" or n in keep)


class LossModule(torch.nn.Module):
    """Wraps the model so that DDP sees the whole loss computation (MLM head on masked positions only)."""

    def __init__(self, model, objective: str):
        super().__init__()
        self.model, self.objective = model, objective

    def forward(self, inputs: torch.Tensor, labels: torch.Tensor, positions: torch.Tensor | None = None
                ) -> torch.Tensor:
        if self.objective == "clm":
            return self.model(input_ids=inputs, labels=labels).loss
        from .source_model import masked_lm_loss

        return masked_lm_loss(self.model, inputs, labels, positions=positions)


def to_device(batch: tuple[torch.Tensor, torch.Tensor], device: torch.device, objective: str
              ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """(inputs, labels, masked positions) on ``device`` without waiting for the GPU: the positions are found
    on the CPU (a boolean index on the GPU would synchronize), and pinned copies do not block, so the host
    prepares the next batch while the device computes."""
    inputs, labels = batch
    positions = (labels.view(-1) != -100).nonzero().squeeze(1) if objective == "mlm" else None
    if device.type != "cuda":
        return inputs, labels, positions
    move = lambda t: None if t is None else t.pin_memory().to(device, non_blocking=True)  # noqa: E731
    return move(inputs), move(labels), move(positions)


def batch_rows(step: int, batch_size: int, n: int, seed: int) -> torch.Tensor:
    """Row ids of optimizer step ``step`` (1-based): consecutive slices of per-epoch seeded permutations,
    so the data position is a function of the step (exact resume, any number of devices)."""
    start = (step - 1) * batch_size
    idx = torch.arange(start, start + batch_size)
    out = torch.empty(batch_size, dtype=torch.long)
    for epoch in idx.div(n, rounding_mode="floor").unique().tolist():
        perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed * 1_000_003 + epoch))
        sel = idx.div(n, rounding_mode="floor") == epoch
        out[sel] = perm[idx[sel] % n]
    return out


def make_batch(blocks: torch.Tensor, rows: torch.Tensor, cfg: LaptConfig, tokenizer, step: int, part: int
               ) -> tuple[torch.Tensor, torch.Tensor]:
    batch = blocks[rows]
    if cfg.objective == "clm":
        return batch, batch.clone()
    g = torch.Generator().manual_seed(cfg.seed * 1_000_003 + step * 1_009 + part)
    return mask_tokens(batch, mask_token_id=tokenizer.mask_token_id, vocab_size=len(tokenizer),
                       special_ids=tokenizer.all_special_ids, generator=g, mask_prob=cfg.mask_prob)


@torch.no_grad()
def heldout_loss(model, blocks: torch.Tensor, cfg: LaptConfig, tokenizer, device, autocast) -> float:
    """Mean loss per predicted token on fixed held-out blocks (fixed masks, seed 12345)."""
    model.eval()
    loss_fn = LossModule(model, cfg.objective)
    total, count = 0.0, 0
    for i in range(0, len(blocks), 16):
        inputs, labels = make_batch(blocks, torch.arange(i, min(i + 16, len(blocks))), dataclasses.replace(
            cfg, seed=12345), tokenizer, 0, i)
        n = int((labels != -100).sum()) if cfg.objective == "mlm" else labels.numel() - len(labels)
        with autocast():
            total += float(loss_fn(inputs.to(device), labels.to(device))) * n
        count += n
    model.train()
    return total / max(count, 1)


def _autocast_factory(precision: str, device: torch.device):
    if device.type == "cuda":
        if precision in ("auto", "bf16") and torch.cuda.is_bf16_supported():
            dtype = torch.bfloat16
        elif precision in ("auto", "fp16"):
            dtype = torch.float16
        else:
            dtype = None
    else:
        dtype = torch.bfloat16 if precision == "bf16" else None
    if dtype is None:
        return (lambda: torch.autocast(device.type, enabled=False)), None
    return (lambda: torch.autocast(device.type, dtype=dtype)), dtype


class Checkpoints:
    """``step-XXXXXXXX/`` folders, each written atomically; the newest complete one is resumed."""

    def __init__(self, root: str | os.PathLike, keep: int):
        self.root, self.keep = Path(root), keep

    def latest(self) -> Path | None:
        done = sorted(p for p in self.root.glob("step-*") if (p / "state.json").is_file()) if self.root.is_dir() else []
        return done[-1] if done else None

    def save(self, step: int, model, opt, sched, scaler, state: dict) -> None:
        with atomic_path(self.root / f"step-{step:08d}", directory=True) as tmp:
            torch.save(model.state_dict(), tmp / "model.pt")
            torch.save({"optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                        "scaler": scaler.state_dict() if scaler is not None else None}, tmp / "optimizer.pt")
            torch.save({"torch": torch.get_rng_state(),
                        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None}, tmp / "rng.pt")
            (tmp / "state.json").write_text(json.dumps(state))
        for old in sorted(p for p in self.root.glob("step-*") if (p / "state.json").is_file())[: -self.keep]:
            shutil.rmtree(old, ignore_errors=True)


def optimizer_step(params, opt, sched, scaler, clip_norm: float) -> None:
    """Unscale (fp16), clip the gradient norm, step optimizer and schedule, clear the gradients."""
    if scaler:
        scaler.unscale_(opt)
    torch.nn.utils.clip_grad_norm_(params, clip_norm)
    scaler.step(opt) if scaler else opt.step()
    if scaler:
        scaler.update()
    sched.step()
    opt.zero_grad(set_to_none=True)


def _scheduler(opt, cfg: LaptConfig, steps: int):
    warmup = max(1, round(cfg.warmup_ratio * steps))

    def factor(s: int) -> float:  # s = number of steps taken so far in this stage
        if s < warmup:
            return (s + 1) / warmup
        return 1.0 if cfg.schedule == "constant" else max(0.0, (steps - s) / max(1, steps - warmup))

    return torch.optim.lr_scheduler.LambdaLR(opt, factor)


def train(model, tokenizer, train_blocks: torch.Tensor, heldout_blocks: torch.Tensor, cfg: LaptConfig, *,
          checkpoint_dir: str | os.PathLike, stop_after: int | None = None,
          anchors: tuple[torch.Tensor, torch.Tensor] | None = None) -> pd.DataFrame:
    """Run (or resume) LAPT; returns the loss curve. ``stop_after`` (tests) stops after that global step
    as a kill would, leaving only the checkpoints behind. ``anchors`` = (target ids, their source
    embedding rows) adds ``source_correlation`` (ρ̄ of those rows now and in the source) to the curve."""
    cfg = dataclasses.replace(cfg, objective=resolve_objective(model, cfg.objective))
    world, rank = (dist.get_world_size(), dist.get_rank()) if dist.is_initialized() else (1, 0)
    device = torch.device(f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}" if torch.cuda.is_available() else "cpu")
    if cfg.variant == "adapter" and not adapter_parameter_names(model):  # before resuming: checkpoints hold it
        add_language_adapter(model, AdapterConfig.from_dict(cfg.adapter), seed=cfg.seed)
    model.to(device).train()
    autocast, amp_dtype = _autocast_factory(cfg.precision, device)
    if cfg.batch_size % world:
        raise ValueError(f"batch_size {cfg.batch_size} is not divisible by {world} devices")
    per_rank = cfg.batch_size // world
    micro = min(cfg.micro_batch_size or per_rank, per_rank)
    ckpt = Checkpoints(checkpoint_dir, cfg.keep_checkpoints)
    stages = cfg.stages()
    total = sum(s for s, _ in stages)
    curve: list[dict] = []
    step, resume, resumed_running = 0, ckpt.latest(), (0.0, 0)
    if resume is not None:
        state = json.loads((resume / "state.json").read_text())
        step, curve = state["step"], state["curve"]
        resumed_running = (state.get("running", 0.0), state.get("n_running", 0))
        model.load_state_dict(torch.load(resume / "model.pt", map_location=device))
        log.info("resuming from %s (step %d of %d)", resume, step, total)
    stop = {"signal": None}

    def on_signal(signum, frame):
        stop["signal"] = signum
        log.warning("received signal %d: checkpointing after this step", signum)

    for sig in (signal.SIGUSR1, signal.SIGTERM):
        signal.signal(sig, on_signal)

    def record(step_: int, stage: int, stage_step: int, train_loss: float) -> None:
        held = heldout_loss(model, heldout_blocks[: cfg.eval_sequences], cfg, tokenizer, device, autocast)
        curve.append({"step": step_, "samples": step_ * cfg.batch_size, "stage": stage,
                      "stage_samples": stage_step * cfg.batch_size, "train_loss": train_loss, "heldout_loss": held})
        if anchors is not None:
            ids, ref = anchors
            rho = row_correlations(model.get_input_embeddings().weight.detach()[ids.to(device)].float().cpu(),
                                   ref.float())
            curve[-1]["source_correlation"] = float(rho.nanmean())  # ρ̄ (vocab-swap §2.3)
            curve[-1]["correlation_histogram"] = torch.histc(rho[~rho.isnan()], bins=CORRELATION_BINS,
                                                             min=-1.0, max=1.0).long().tolist()  # Figure 3
        rate = (step_ - start_step) / max(time.time() - t0, 1e-9)
        log.info("step %d/%d (stage %d) train %.4f held-out %.4f (%.2f steps/s, ETA %.0f s)", step_, total, stage,
                 train_loss, held, rate, (total - step_) / rate if rate > 0 else float("nan"))

    t0, start_step, first = time.time(), step, 0
    for stage, (n_steps, trainable) in enumerate(stages):
        if step >= first + n_steps:
            first += n_steps
            continue
        set_trainable(model, trainable)
        params = [p for p in model.parameters() if p.requires_grad]
        opt = torch.optim.AdamW(params, lr=cfg.lr, betas=tuple(cfg.betas), eps=cfg.eps, weight_decay=cfg.weight_decay,
                                fused=device.type == "cuda")
        sched = _scheduler(opt, cfg, n_steps)
        scaler = torch.amp.GradScaler("cuda") if amp_dtype == torch.float16 else None
        if resume is not None and step > first:
            states = torch.load(resume / "optimizer.pt", map_location=device, weights_only=False)
            opt.load_state_dict(states["optimizer"])
            sched.load_state_dict(states["scheduler"])
            if scaler is not None and states["scaler"] is not None:
                scaler.load_state_dict(states["scaler"])
        loss_module = LossModule(model, cfg.objective)
        if world > 1:
            loss_module = torch.nn.parallel.DistributedDataParallel(
                loss_module, device_ids=[device.index] if device.type == "cuda" else None)
        if step == first and rank == 0 and not any(r["step"] == step and r["stage"] == stage for r in curve):
            record(step, stage, 0, float("nan"))
        running, n_running = resumed_running if resume is not None and step > first else (0.0, 0)
        running = torch.tensor(running, dtype=torch.float64, device=device)  # no host sync per step
        while step < first + n_steps:
            step += 1
            torch.manual_seed(cfg.seed * 1_000_003 + step * 101 + rank)  # dropout: a function of the step
            rows = batch_rows(step, cfg.batch_size, len(train_blocks), cfg.seed)[rank * per_rank:(rank + 1) * per_rank]
            n_micro = math.ceil(per_rank / micro)
            for part in range(n_micro):
                inputs, labels = make_batch(train_blocks, rows[part * micro:(part + 1) * micro], cfg, tokenizer, step,
                                            rank * 1000 + part)
                sync = part == n_micro - 1 or world == 1
                ctx = loss_module.no_sync() if not sync and world > 1 else contextlib.nullcontext()
                with ctx, autocast():
                    loss = loss_module(*to_device((inputs, labels), device, cfg.objective)) / n_micro
                (scaler.scale(loss) if scaler else loss).backward()
                running += loss.detach().double()  # float64, as a Python float sum would be
            optimizer_step(params, opt, sched, scaler, cfg.clip_norm)
            n_running += 1
            stage_step = step - first
            if rank == 0 and (stage_step % cfg.eval_every == 0 or step == first + n_steps):
                record(step, stage, stage_step, float(running) / n_running)
                running, n_running = torch.zeros_like(running), 0
            last = step == total
            if (step % cfg.checkpoint_every == 0 or stop["signal"] or step == stop_after) and not last:
                if rank == 0:
                    ckpt.save(step, model, opt, sched, scaler, {"step": step, "curve": curve, "running": float(running),
                                                                "n_running": n_running})
                if world > 1:
                    dist.barrier()
            if stop["signal"]:
                log.warning("checkpointed at step %d after signal %d; rerun to resume", step, stop["signal"])
                sys.exit(EXIT_RESUME)
            if step == stop_after:
                return pd.DataFrame(curve)
        first += n_steps
    model.eval()
    return pd.DataFrame(curve)


def load_blocks(corpus: str, tokenizer, seq_len: int, max_sequences: int | None = None) -> torch.Tensor:
    return pack_texts(read_corpus(corpus)["text"].tolist(), tokenizer, seq_len, max_sequences=max_sequences)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="source model: save_pretrained folder")
    p.add_argument("--embeddings", help="init artifact (results/init/...safetensors); omit to train the model as is")
    p.add_argument("--tokenizer", required=True, help="target tokenizer folder")
    p.add_argument("--train", required=True, help="target corpus parquet (text column)")
    p.add_argument("--heldout", required=True, help="held-out corpus parquet")
    p.add_argument("--output", required=True, help="save_pretrained folder written at the end (atomically)")
    p.add_argument("--curve", help="loss curve parquet (default: <output>.curve.parquet)")
    p.add_argument("--checkpoints", help="checkpoint folder (default: <output>.checkpoints)")
    p.add_argument("--config", default="{}", help="LaptConfig as JSON, or @file.json")
    p.add_argument("--anchors", help="overlap parquet (compute_overlap): log ρ̄ to the source rows of shared tokens")
    p.add_argument("--log", help="log file")
    args = p.parse_args(argv)
    handlers = [logging.StreamHandler(sys.stderr)] + ([logging.FileHandler(args.log)] if args.log else [])
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s",
                        handlers=handlers, force=True)
    raw = Path(args.config[1:]).read_text() if args.config.startswith("@") else args.config
    cfg = LaptConfig.from_dict(json.loads(raw))
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
        if torch.cuda.is_available():
            torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    from .init import swap_embeddings
    from .source_model import load_source_model
    from .tokenizer import load_tokenizer

    tokenizer = load_tokenizer(args.tokenizer)
    model = load_source_model(args.model)
    anchors = None
    if args.anchors:
        pairs = pd.read_parquet(args.anchors, columns=["target_id", "source_id", "match"])
        pairs = pairs[pairs["match"].isin(["special", "exact"])]
        ids = torch.as_tensor(pairs["target_id"].to_numpy())
        anchors = (ids, model.get_input_embeddings().weight.detach()[torch.as_tensor(pairs["source_id"].to_numpy())]
                   .float().clone())
        log.info("source correlation over %d shared tokens (%s)", len(ids), args.anchors)
    if args.embeddings:  # after the anchors: they are the source's rows
        model = swap_embeddings(model, args.embeddings)
    resolve_objective(model, cfg.objective)  # a mismatch fails before the corpus is tokenized
    if model.get_input_embeddings().weight.shape[0] != len(tokenizer):
        raise ValueError(f"{args.embeddings or args.model} has {model.get_input_embeddings().weight.shape[0]} "
                         f"embedding rows, the tokenizer {args.tokenizer} {len(tokenizer)} tokens")
    train_blocks = load_blocks(args.train, tokenizer, cfg.seq_len)
    heldout_blocks = load_blocks(args.heldout, tokenizer, cfg.seq_len, cfg.eval_sequences)
    log.info("%d training sequences of %d tokens; %d held-out", len(train_blocks), cfg.seq_len, len(heldout_blocks))
    checkpoints = args.checkpoints or f"{args.output}.checkpoints"
    curve = train(model, tokenizer, train_blocks, heldout_blocks, cfg, checkpoint_dir=checkpoints, anchors=anchors)
    if not dist.is_initialized() or dist.get_rank() == 0:
        write_parquet(curve, args.curve or f"{args.output}.curve.parquet")
        with atomic_path(args.output, directory=True) as tmp:
            if adapter_parameter_names(model):  # language_adapter.* beside a plain model
                save_language_adapter(model, tmp)
                strip_language_adapter(model)
            model.save_pretrained(str(tmp))
            tokenizer.save_pretrained(str(tmp))
        shutil.rmtree(checkpoints, ignore_errors=True)
    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()

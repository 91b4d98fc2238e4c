"""Pretraining of the demo's source model: a small XLM-R-architecture MLM (``source_model.build_xlmr_mlm``)
trained from scratch on packed blocks (rule pretrain_source_model). It uses the runtime's optimizer step; it
runs in minutes on a CPU and is neither checkpointed nor resumed (a killed job starts over)."""

from __future__ import annotations

import logging
import math
import time

import pandas as pd
import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from ..eval.mlm import mask_tokens, mlm_loss
from ..source_model import masked_lm_loss
from .cpu_dropout import use_fast_dropout
from .runtime import Progress, optimizer_step

log = logging.getLogger(__name__)


def pretrain_mlm(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, train: torch.Tensor,
                 heldout: torch.Tensor, *, steps: int, batch_size: int, lr: float, warmup_ratio: float,
                 weight_decay: float, eval_every: int, seed: int, mask_prob: float = 0.15,
                 clip_norm: float = 1.0) -> pd.DataFrame:
    """Train ``model`` with the MLM objective on packed ``train`` blocks (AdamW, linear warmup then
    linear decay, gradient clipping). Returns the curve: one row per logged step with the training
    loss (mean since the last log) and held-out loss (fixed masks), starting at step 0."""
    g = torch.Generator().manual_seed(seed)
    use_fast_dropout(model, next(model.parameters()).device)
    torch.manual_seed(seed)
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=lr, betas=(0.9, 0.98), eps=1e-6)
    warmup = max(1, int(warmup_ratio * steps))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warmup, max(0.0, (steps - s) / max(1, steps - warmup))))
    rows, running, n_running, t0, progress = [], 0.0, 0, time.time(), Progress(0, steps)

    def evaluate(step: int) -> None:
        held = mlm_loss(model, heldout, tokenizer, seed=seed + 1, mask_prob=mask_prob)["mlm_loss"]
        train_loss = running / n_running if n_running else float("nan")
        rows.append({"step": step, "samples": step * batch_size, "train_loss": train_loss,
                     "heldout_loss": held, "lr": sched.get_last_lr()[0], "elapsed_s": time.time() - t0})
        log.info("step %d/%d train %.3f held-out %.3f (%s)", step, steps, train_loss, held, progress(step))
        model.train()

    evaluate(0)
    order = torch.randperm(len(train), generator=g)
    pos = 0
    for step in range(1, steps + 1):
        if pos + batch_size > len(order):
            order, pos = torch.randperm(len(train), generator=g), 0
        batch = train[order[pos:pos + batch_size]]
        pos += batch_size
        inputs, labels = mask_tokens(batch, mask_token_id=tokenizer.mask_token_id, vocab_size=len(tokenizer),
                                     special_ids=tokenizer.all_special_ids, generator=g, mask_prob=mask_prob)
        loss = masked_lm_loss(model, inputs, labels)
        loss.backward()
        optimizer_step(list(model.parameters()), opt, sched, None, clip_norm)
        running, n_running = running + loss.item(), n_running + 1
        if step % eval_every == 0 or step == steps:
            evaluate(step)
            running, n_running = 0.0, 0
    model.eval()
    curve = pd.DataFrame(rows)
    curve.attrs["ln_vocab"] = math.log(len(tokenizer))
    return curve

"""Language-adaptive pretraining (LAPT) of a transferred model: a resumable CLI for CPU, one GPU, or many GPUs
and nodes through ``torchrun`` (docs/training.md, LAPT; the keys: :class:`~.settings.LaptConfig`).

    python -m vocab_transfer.training.lapt --model results/source/demo-xlmr/model \\
        --embeddings results/init/demo-xlmr/sw/focus.safetensors --tokenizer results/tokenizers/sw \\
        --train results/shards/sw/train --heldout results/shards/sw/heldout \\
        --output results/lapt/demo-xlmr/sw/focus --config '{"steps": 300, "batch_size": 16}'
    torchrun --standalone --nproc-per-node 4 -m vocab_transfer.training.lapt ...  # DDP, same flags

``--train`` / ``--heldout`` are token shards of the tokenizer (``python -m vocab_transfer.data.shards`` writes
them): training blocks are read on demand, so memory does not grow with the corpus, and each rank reads only
its own blocks.

Defaults are FOCUS's (Table 5): AdamW β = (0.9, 0.999), ε = 1e-8, no weight decay, peak lr 5e-5, linear warmup
over 10% of the steps then constant, batch 128 × 256 tokens, gradient clipping 1.0, 15% masking with 80/10/10.
``objective`` is the model's own: masked LM, or next-token loss for a decoder-only source (WECHSEL's GPT-2).
``variant`` selects what is trained, in stages of trainable sets, each with its own optimizer and warmup:
``full``; ``two_stage`` (embeddings first: FOCUS §3.1's Random baseline); ``embeddings_only`` (vocab-swap's
"Word Embed Only", §2.2); ``embedding_layers`` (vocab-swap's "Embed Grad" / "Embed Layers", §2.2);
``freeze_body`` (WECHSEL §5.4.2); ``adapter`` (MAD-X language adapters trained with the embeddings,
unks-everywhere §4.3, or alone on the source's vocabulary with ``train_embeddings: false``, §4.1; ``--output``
also holds ``language_adapter.*``). ``factorized: true`` trains UNKs' MF rows (§3.3) in the factorized form of
the init artifact (:class:`~vocab_transfer.methods.factorized.FactorizedVocabulary`); ``long_steps`` trains
the last steps on blocks of ``long_seq_len`` (BERT's schedule, vocab-swap §3.1); ``reinit`` re-initializes
weights before training, seeded (vocab-swap's "Scratch" and "Embed Layers", WECHSEL's FullRand).

Every ``checkpoint_every`` steps the model, optimizer, scheduler, RNG states and step are written atomically
to ``--checkpoints``; a rerun resumes from the last one and ends bit-identical to an uninterrupted run (data
order, masks and dropout are functions of the seed and the step). On SIGUSR1 / SIGTERM the job checkpoints
after the current step and exits with code 75. The held-out loss is logged every ``eval_every`` steps (first
at step 0) to ``--curve``; with ``--anchors`` (an overlap parquet) also ρ̄ between the shared tokens' rows and
their source rows (vocab-swap §2.3, Figure 2). ``snapshot_steps`` keeps the model at those steps (vocab-swap
Figures 4/6/8; step 0 is the model as training starts), staged under the checkpoint folder and hard-linked
into ``--snapshots`` at the end; ``token_accuracy_top`` records the held-out accuracy of the N most frequent
tokens (``--token-accuracy``, vocab-swap Figure 6)."""

from __future__ import annotations

import argparse
import contextlib
import functools
import logging
import math
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import torch

from ..artifacts import input_records, recorded_reads
from ..data.shards import Blocks, open_blocks
from ..data.tokenizer import load_tokenizer
from ..eval.correlation import row_correlations
from ..eval.mlm import mask_tokens, token_lengths
from ..export import retarget_configs
from ..init import swap_embeddings
from ..io import atomic_path, remove_tree, write_parquet, write_tensors
from ..memory import keep_freed_memory
from ..methods import factorized
from ..source_model import (
    is_causal_lm,
    load_source_model,
    masked_lm_logits,
    masked_lm_loss,
    max_sequence_length,
)
from ..tracking import Tracker, mfu, peak_flops
from . import runtime
from .adapters import adapter_parameter_names, add_language_adapter, save_language_adapter
from .cpu_dropout import use_fast_dropout
from .settings import REINIT, LaptConfig

log = logging.getLogger(__name__)


CORRELATION_BINS = 40  # per-token ρ_i histogram over [-1, 1] in the curve (vocab-swap Figure 3)
SNAPSHOTS = "snapshots"  # staged snapshots inside the checkpoint folder (it outlives a failed job's outputs)
TOKEN_ACCURACY_SCHEMA = pa.schema([
    ("step", pa.int64()), ("stage", pa.int64()), ("token_id", pa.int64()), ("token", pa.string()),
    ("train_count", pa.int64()), ("masked", pa.int64()), ("correct", pa.int64()), ("accuracy", pa.float64())])


def embedding_parameter_names(model) -> set[str]:
    """The input embeddings (a factorized vocabulary's F', G, Z; tied output embeddings) and output bias."""
    out = model.get_output_embeddings()
    own = {id(p) for p in model.get_input_embeddings().parameters()}
    own |= {id(p) for p in (getattr(out, "weight", None), getattr(out, "bias", None))
            if isinstance(p, torch.nn.Parameter)}
    return {n for n, p in model.named_parameters() if id(p) in own}


def embedding_layer_names(model) -> set[str]:
    """The block holding the input embeddings (BERT-style ``embeddings``: word, position and token-type
    embeddings, LayerNorm) plus :func:`embedding_parameter_names`: vocab-swap's "Embed Layers" (§2.2).
    ValueError without such a block (GPT-2's embeddings sit in the transformer)."""
    emb = model.get_input_embeddings()
    owner = next(n for n, m in model.named_modules() if any(c is emb for c in m.children()))  # ...embeddings
    if not owner.endswith("embeddings"):
        raise ValueError(f"{type(model).__name__} has no embedding block (word embeddings at {owner!r}): the "
                         "embedding_layers variant and reinit are for BERT-style encoders")
    return {n for n, _ in model.named_parameters()
            if n.startswith(owner + ".")} | embedding_parameter_names(model)


def reinit_parameter_names(model, part: str) -> set[str]:
    """The parameters ``reinit: part`` re-initializes: ``embedding_layers`` = the embedding block without the
    word embeddings (position, token-type embeddings, LayerNorm); ``all`` = every parameter but the word
    embeddings, the tied output embeddings and the output bias (and MAD-X adapters); ``none`` = none."""
    if part == "none":
        return set()
    keep = embedding_parameter_names(model) | adapter_parameter_names(model)
    if part == "embedding_layers":
        return embedding_layer_names(model) - keep
    if part == "all":
        return {n for n, _ in model.named_parameters()} - keep
    raise ValueError(f"reinit must be one of {list(REINIT)}, not {part!r}")


RESUME_FREE = ("threads", "keep_checkpoints", "checkpoint_every", "min_step_seconds", "micro_batch_size",
               "long_micro_batch_size", "gradient_checkpointing", "compile", "report_to")


def resume_settings(cfg: LaptConfig) -> dict:
    """What a checkpoint is valid for: every LaptConfig field but ``RESUME_FREE``, which a resumed run may
    change (e.g. micro-batching, gradient checkpointing or compiling after running out of GPU memory: the same
    sequences per step, computed differently)."""
    return runtime.checkpoint_settings(cfg, RESUME_FREE)


def reinitialize(model, part: str, seed: int) -> list[str]:
    """Re-initialize ``reinit_parameter_names(model, part)`` in place with the model's own ``_init_weights``
    (vocab-swap's "Scratch" and "Embed Layers", §2.1-2.2; WECHSEL's FullRand) from the forked CPU generator
    seeded with ``seed`` (call it before moving the model to a GPU). Modules are visited children first
    (``nn.Module.apply``), as transformers' own initialization does, and each whose parameters are all
    selected is passed to ``_init_weights``, so a parent's rule applies on top of its children's (GPT-2's
    c_proj scaled by 1/sqrt(2 n_layer)). A selected parameter no module covers, or left unchanged, is an
    error."""
    names = reinit_parameter_names(model, part)
    if not names:
        return []
    by_id = {id(p): n for n, p in model.named_parameters()}
    done: list[str] = []

    def init(module: torch.nn.Module) -> None:
        own, tree = list(module.parameters(recurse=False)), list(module.parameters())
        if not tree or not all(by_id.get(id(p)) in names for p in tree):
            return
        before = [p.detach().clone() for p in own]
        for p in tree:  # loaded weights are flagged initialized, which _init_weights would respect
            p._is_hf_initialized = False
        model._init_weights(module)
        for p in tree:
            p._is_hf_initialized = True
        done.extend(by_id[id(p)] for p in own)
        same = [by_id[id(p)] for p, b in zip(own, before, strict=True)
                if torch.equal(p, b) and p.numel() > 1 and not (b == b.flatten()[0]).all()]
        if same:
            raise ValueError(f"reinit {part}: {type(model).__name__}._init_weights left {same} unchanged")

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model.apply(init)
    left = sorted(names - set(done))
    if left:
        raise ValueError(f"reinit {part}: no module of {type(model).__name__} re-initializes {left} alone")
    return sorted(done)


def resolve_objective(model, objective: str) -> str:
    """The objective that fits the model (:func:`~vocab_transfer.source_model.is_causal_lm`): ``clm`` or
    ``mlm``. ``auto`` picks it; an explicit one that does not fit raises ValueError naming both."""
    fits = "clm" if is_causal_lm(model) else "mlm"
    if objective not in ("auto", fits):
        kind = "a causal (decoder-only) LM" if fits == "clm" else "a masked LM"
        raise ValueError(f"LAPT objective {objective!r} does not fit the model {type(model).__name__}, which "
                         f"is {kind}: set objective: {fits!r} (or auto) in the LAPT config")
    return fits


def set_trainable(model, trainable: str) -> None:
    """Gradients for ``all``, or only the embeddings (:func:`embedding_parameter_names`), the embedding block
    (``embedding_layers``), embeddings and adapters (``adapter``) or adapters alone (``adapter_only``)."""
    keep = set() if trainable == "adapter_only" else embedding_parameter_names(model)
    keep |= adapter_parameter_names(model) if trainable in ("adapter", "adapter_only") else set()
    keep |= embedding_layer_names(model) if trainable == "embedding_layers" else set()
    for n, p in model.named_parameters():
        p.requires_grad_(trainable == "all" or n in keep)


class LossModule(torch.nn.Module):
    """Wraps the model so that DDP sees the whole loss computation (MLM head on masked positions only)."""

    def __init__(self, model, objective: str):
        super().__init__()
        self.model, self.objective = model, objective

    def forward(self, inputs: torch.Tensor, labels: torch.Tensor, positions: torch.Tensor | None = None,
                position_ids: torch.Tensor | None = None) -> torch.Tensor:
        if self.objective == "clm":  # restarting position_ids: packed documents (transformers masks across)
            packed = {} if position_ids is None else {"position_ids": position_ids, "use_cache": False}
            return self.model(input_ids=inputs, labels=labels, **packed).loss
        return masked_lm_loss(self.model, inputs, labels, positions=positions)


def to_device(batch: tuple[torch.Tensor, torch.Tensor, torch.Tensor | None], device: torch.device,
              objective: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """(inputs, labels, masked positions, position ids) on ``device`` without a host sync: positions found on
    the CPU, pinned copies that do not block (the host prepares the next batch meanwhile)."""
    inputs, labels, position_ids = batch
    positions = (labels.view(-1) != -100).nonzero().squeeze(1) if objective == "mlm" else None
    if device.type != "cuda":
        return inputs, labels, positions, position_ids
    move = lambda t: None if t is None else t.pin_memory().to(device, non_blocking=True)  # noqa: E731
    return move(inputs), move(labels), move(positions), move(position_ids)


@functools.lru_cache(maxsize=2)
def epoch_permutation(n: int, seed: int, epoch: int) -> torch.Tensor:
    """The seeded order of the ``n`` blocks in ``epoch`` (int32 when it fits: 4 bytes per block, cached for
    the epoch and the next, so a step does not pay for a fresh permutation)."""
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed * 1_000_003 + epoch))
    return perm.int() if n < 2**31 else perm


def batch_rows(step: int, batch_size: int, n: int, seed: int) -> torch.Tensor:
    """Row ids of optimizer step ``step`` (1-based): consecutive slices of per-epoch seeded permutations, a
    function of the step (exact resume, any number of devices; ranks take disjoint slices)."""
    idx = torch.arange((step - 1) * batch_size, step * batch_size)
    epochs = idx.div(n, rounding_mode="floor")
    out = torch.empty(batch_size, dtype=torch.long)
    for epoch in epochs.unique().tolist():
        sel = epochs == epoch
        out[sel] = epoch_permutation(n, seed, epoch)[idx[sel] % n].long()
    return out


def make_batch(blocks: torch.Tensor | Blocks, rows: torch.Tensor, cfg: LaptConfig, tokenizer, step: int,
               part: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """(inputs, labels, position ids) of the blocks ``rows``; with ``packing: documents`` the position ids
    restart at each document (:meth:`Blocks.positions`) and a document's first token is no target."""
    batch = blocks[rows]
    if cfg.objective == "clm":
        if cfg.packing == "stream":
            return batch, batch.clone(), None
        position_ids = blocks.positions(rows)
        return batch, batch.masked_fill(position_ids == 0, -100), position_ids
    g = torch.Generator().manual_seed(cfg.seed * 1_000_003 + step * 1_009 + part)
    return *mask_tokens(batch, mask_token_id=tokenizer.mask_token_id, vocab_size=len(tokenizer),
                        special_ids=tokenizer.all_special_ids, generator=g, mask_prob=cfg.mask_prob), None


@torch.no_grad()
def check_document_masking(model, device: torch.device) -> None:
    """ValueError unless the causal LM ``model`` keeps packed documents apart given restarting position ids
    (transformers derives the block-diagonal causal mask from them): the logits of a second document packed
    behind a first must equal its logits alone, up to a tenth of what attending to the first changes."""
    ids = (torch.arange(1, 9, device=device) % model.get_input_embeddings().weight.shape[0]).unsqueeze(0)
    restart = torch.tensor([[0, 1, 2, 3, 0, 1, 2, 3]], device=device)
    training, _ = model.training, model.eval()
    packed, joined = (model(input_ids=ids, position_ids=p, use_cache=False).logits[0, 4:].float()
                      for p in (restart, torch.arange(8, device=device).unsqueeze(0)))
    alone = model(input_ids=ids[:, 4:], position_ids=restart[:, 4:], use_cache=False).logits[0].float()
    model.train(training)
    err, leak = float((packed - alone).abs().max()), float((joined - alone).abs().max())
    if err > 0.1 * leak:
        impl = getattr(model.config, "_attn_implementation", None)
        raise ValueError(f"packing: documents: {type(model).__name__} (attention {impl!r}) attends across "
                         f"documents given restarting position ids (logits off by {err:.3g}, {leak:.3g} "
                         "without them): use packing: stream for this model")


def frequent_tokens(blocks: torch.Tensor | Blocks, vocab_size: int, special_ids, n: int
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """``(ids, counts)`` of the ``n`` most frequent non-special token ids in ``blocks`` (shard blocks counted
    chunk by chunk), most frequent first, ties by ascending id; tokens that never occur are left out."""
    counts = (torch.from_numpy(blocks.token_counts(vocab_size)) if isinstance(blocks, Blocks)
              else torch.bincount(blocks.flatten(), minlength=vocab_size))
    counts[torch.as_tensor(list(special_ids), dtype=torch.long)] = 0
    order = torch.sort(counts, descending=True, stable=True).indices  # stable: equal counts keep id order
    order = order[counts[order] > 0][:n]
    return order, counts[order]


def token_accuracy_counts(predicted: torch.Tensor, labels: torch.Tensor, track: torch.Tensor) -> torch.Tensor:
    """Per tracked token id (``track`` [k]): how often it labels a predicted position (``labels`` [n]) and how
    often the argmax there (``predicted`` [n]) is right, as int64 ``[k, 2]`` (masked, correct)."""
    size = int(max(int(track.max()) if len(track) else -1, int(labels.max()) if len(labels) else -1)) + 1
    index = torch.full((size,), -1, dtype=torch.long)
    index[track] = torch.arange(len(track))
    j = index[labels] if len(labels) else labels.long()
    hit = j >= 0
    masked = torch.bincount(j[hit], minlength=len(track))
    correct = torch.bincount(j[hit & (predicted == labels)], minlength=len(track))
    return torch.stack([masked, correct], 1)


@torch.no_grad()
def heldout_eval(model, blocks: torch.Tensor, cfg: LaptConfig, tokenizer, device, autocast,
                 track: torch.Tensor | None = None, lengths: torch.Tensor | None = None
                 ) -> tuple[float, torch.Tensor | None, float]:
    """Mean loss per predicted token on fixed held-out blocks (fixed masks, seed 12345); with ``track`` (MLM)
    also its :func:`token_accuracy_counts` from the same logits (every labelled position counts); with
    ``lengths`` (:func:`~vocab_transfer.eval.mlm.token_lengths`) the NLL in bits per byte (else NaN)."""
    model.eval()
    loss_fn = LossModule(model, cfg.objective)
    total, count, n_bytes = 0.0, 0, 0
    counts = None if track is None else torch.zeros(len(track), 2, dtype=torch.long)
    for i in range(0, len(blocks), 16):
        inputs, labels, position_ids = make_batch(blocks, torch.arange(i, min(i + 16, len(blocks))),
                                                  cfg.model_copy(update={"seed": 12345}), tokenizer, 0, i)
        scored = labels[labels != -100] if cfg.objective == "mlm" else labels[:, 1:][labels[:, 1:] != -100]
        n = len(scored)
        if lengths is not None:
            n_bytes += int(lengths[scored, 0].sum())
        with autocast():
            if counts is None:
                total += float(loss_fn(inputs.to(device), labels.to(device), None,
                                       None if position_ids is None else position_ids.to(device))) * n
            else:
                logits, targets = masked_lm_logits(model, inputs.to(device), labels.to(device))
                total += float(torch.nn.functional.cross_entropy(logits.float(), targets)) * n
                counts += token_accuracy_counts(logits.argmax(-1).cpu(), targets.cpu(), track)
        count += n
    model.train()
    return total / max(count, 1), counts, total / math.log(2) / n_bytes if n_bytes else float("nan")


def heldout_loss(model, blocks: torch.Tensor, cfg: LaptConfig, tokenizer, device, autocast) -> float:
    """The mean loss of :func:`heldout_eval`."""
    return heldout_eval(model, blocks, cfg, tokenizer, device, autocast)[0]


def save_model(model, tokenizer, folder: str | os.PathLike, state: dict | None = None) -> None:
    """``save_pretrained`` of the model and tokenizer into ``folder``, atomically, without changing the live
    model: a language adapter goes beside the plain weights as ``language_adapter.*``, factorized embeddings
    are written flattened (eval-mode table) with the factors in ``factorized_embeddings.safetensors``;
    ``config.json`` carries the tokenizer's special-token ids. The final model and the snapshots are all
    written here, so a snapshot at the last step equals it. ``state``: the weights (a sharded model's,
    gathered)."""
    with atomic_path(folder, directory=True) as tmp:
        adapter = adapter_parameter_names(model)
        if adapter:
            save_language_adapter(model, tmp)
            state = {k: v for k, v in model.state_dict().items() if k not in adapter}
        if isinstance(model.get_input_embeddings(), factorized.FactorizedVocabulary):
            state = factorized.flat_state_dict(model, state)
            write_tensors(model.get_input_embeddings().factors.state(), tmp / factorized.FACTORS_FILE)
        model.save_pretrained(str(tmp), state_dict=state)
        tokenizer.save_pretrained(str(tmp))
        retarget_configs(tmp, tmp, tokenizer)


def publish_snapshots(checkpoint_dir: str | os.PathLike,
                      dest: str | os.PathLike, steps: list[int]) -> list[Path]:
    """Hard-link (copy across file systems) the snapshots staged under ``checkpoint_dir`` into ``dest``
    (created even without any) as ``step-XXXXXXXX/``, atomically; FileNotFoundError names any not staged."""
    staged = Path(checkpoint_dir) / SNAPSHOTS
    missing = [s for s in steps if not (staged / f"step-{s:08d}" / "config.json").is_file()]
    if missing:
        raise FileNotFoundError(f"LAPT snapshots of steps {missing} are missing under {staged} (a run "
                                "resumed from checkpoints written before snapshot_steps named them: delete "
                                f"{checkpoint_dir} to train from the start)")

    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    with atomic_path(dest, directory=True) as tmp:
        for s in sorted(steps):
            shutil.copytree(staged / f"step-{s:08d}", tmp / f"step-{s:08d}", copy_function=link)
    return [Path(dest) / f"step-{s:08d}" for s in sorted(steps)]


def token_accuracy_table(curve: pd.DataFrame, ids: torch.Tensor,
                         counts: torch.Tensor, tokenizer) -> pd.DataFrame:
    """Long form of the curve's ``token_masked`` / ``token_correct`` lists: a row per (evaluation, tracked
    token), accuracy NaN where the token was never a held-out target; empty when nothing was tracked."""
    if "token_masked" not in curve or not len(ids):
        return TOKEN_ACCURACY_SCHEMA.empty_table().to_pandas()
    k, n = len(ids), len(curve)
    masked = torch.tensor(curve["token_masked"].tolist(), dtype=torch.long).flatten()
    correct = torch.tensor(curve["token_correct"].tolist(), dtype=torch.long).flatten()
    return pd.DataFrame({
        "step": curve["step"].repeat(k).to_numpy(), "stage": curve["stage"].repeat(k).to_numpy(),
        "token_id": ids.repeat(n).numpy(), "token": tokenizer.convert_ids_to_tokens(ids.tolist()) * n,
        "train_count": counts.repeat(n).numpy(), "masked": masked.numpy(), "correct": correct.numpy(),
        "accuracy": (correct.double() / masked.clamp(min=1)).where(masked > 0, torch.nan).numpy()})


def train(model, tokenizer, train_blocks: torch.Tensor | Blocks, heldout_blocks: torch.Tensor,
          cfg: LaptConfig, *, checkpoint_dir: str | os.PathLike, stop_after: int | None = None,
          anchors: tuple[torch.Tensor, torch.Tensor] | None = None,
          long_blocks: tuple[torch.Tensor | Blocks, torch.Tensor] | None = None,
          track_dir: str | os.PathLike | None = None) -> pd.DataFrame:
    """Run (or resume) LAPT; returns the loss curve. ``train_blocks``: packed blocks as a tensor or
    :class:`~vocab_transfer.data.shards.Blocks` read on demand; ``long_blocks``: (train, held-out) blocks of
    ``cfg.long_seq_len``, needed with ``cfg.long_steps``. ``stop_after`` (tests) stops after that global step
    as a kill would. ``anchors``: (target ids, their source rows) adds ``source_correlation`` to the curve;
    ``cfg.token_accuracy_top`` adds ``token_masked`` / ``token_correct`` lists (:func:`token_accuracy_table`);
    ``cfg.snapshot_steps`` stages a :func:`save_model` folder per step under ``checkpoint_dir/snapshots``.
    ``track_dir``: where the first process writes the live curves of ``cfg.report_to``."""
    cfg = cfg.model_copy(update={"objective": resolve_objective(model, cfg.objective)})
    if cfg.token_accuracy_top and cfg.objective != "mlm":
        raise ValueError("LAPT config: token_accuracy_top needs the masked-LM objective (the "
                         "model is a causal LM)")
    if cfg.long_steps and (long_blocks is None or long_blocks[0].shape[1] != cfg.long_seq_len):
        raise ValueError(f"LAPT config: long_steps {cfg.long_steps} needs training blocks of long_seq_len "
                         f"{cfg.long_seq_len} tokens (long_blocks)")
    if cfg.packing == "documents":
        if cfg.objective != "clm":
            raise ValueError("LAPT config: packing: documents is for causal LMs (the model is a masked LM)")
        if not all(isinstance(b, Blocks) for b in (train_blocks, heldout_blocks, *(long_blocks or ()))):
            raise ValueError("LAPT config: packing: documents needs blocks read from token shards (Blocks: "
                             "their document index), not packed tensors")
    run = _Run(model, tokenizer, train_blocks, heldout_blocks, cfg, checkpoint_dir, anchors, long_blocks,
               track_dir)
    with runtime.StopSignals() as stop, run.tracker:
        return run.train(stop, stop_after)


class _Run:
    """One LAPT run, set up from :func:`train`'s arguments: the model, its tokenizer and data, the settings,
    checkpoints, process group, device and precision, the tracked token ids (or None), and the curve so far
    from ``start_step`` on (``resume``: the checkpoint restored, with its running loss)."""

    def __init__(self, model, tokenizer, train_blocks, heldout_blocks, cfg: LaptConfig, checkpoint_dir,
                 anchors, long_blocks, track_dir):
        snapshots = set(cfg.snapshot_steps)
        self.group = group = runtime.current_distributed()
        world, rank = group.world, group.rank
        sharded = cfg.distributed == "fsdp" and world > 1  # all processes evaluate: forward is collective
        self.track = (frequent_tokens(train_blocks, len(tokenizer), tokenizer.all_special_ids,
                                      cfg.token_accuracy_top)[0]
                      if cfg.token_accuracy_top and (rank == 0 or sharded) else None)
        self.device = device = runtime.pick_device()
        if cfg.variant == "adapter" and not adapter_parameter_names(model):  # first: checkpoints hold it
            add_language_adapter(model, cfg.adapter, seed=cfg.seed)
        self.ckpt = ckpt = runtime.Checkpoints(checkpoint_dir, cfg.keep_checkpoints, what="LAPT")
        if ckpt.latest() is None:  # a resumed run has them in its checkpoint
            reset = reinitialize(model, cfg.reinit, seed=cfg.seed * 1_000_003 + 7)
            if reset:
                log.info("reinit %s: %d parameter tensors re-initialized (%s ...)",
                         cfg.reinit, len(reset), reset[0])
        model.to(device=device, dtype=runtime.param_dtype(cfg.precision)).train()
        use_fast_dropout(model, device)
        if cfg.packing == "documents":
            check_document_masking(model, device)
        if cfg.gradient_checkpointing and not runtime.enable_gradient_checkpointing(model):
            log.warning("gradient_checkpointing: %s does not support it; training without",
                        type(model).__name__)
        if cfg.compile:
            log.info("compile: %d transformer layers compiled", runtime.compile_layers(model))
        self.autocast, self.amp_dtype = runtime.autocast_factory(cfg.precision, device)
        for key in ("batch_size", "long_batch_size") if cfg.long_steps else ("batch_size",):
            if getattr(cfg, key) and getattr(cfg, key) % world:
                raise ValueError(f"LAPT config: {key} {getattr(cfg, key)} is not divisible by {world} "
                                 "devices")
        self.curve, step, self.resumed_running = [], 0, (0.0, 0)
        resume, state = ckpt.resume(resume_settings(cfg))
        if resume is not None:
            staged = Path(checkpoint_dir) / SNAPSHOTS
            missing = [s for s in sorted(snapshots) if s <= state["step"]
                       and not (staged / f"step-{s:08d}").is_dir()]
            if missing:
                raise FileNotFoundError(f"LAPT snapshots of steps {missing} are missing under {staged}, and "
                                        f"the checkpoint {resume} is past them: delete {checkpoint_dir} "
                                        "to start this run over")
            step, self.curve = state["step"], state["curve"]
            self.resumed_running = (state.get("running", 0.0), state.get("n_running", 0))
            ckpt.restore_model(resume, model, device)
            log.info("resuming from %s (step %d of %d)", resume, step, cfg.total_steps())
        if sharded:
            log.info("FSDP: %d layers sharded over %d processes", runtime.shard_model(model), world)
        self.model, self.tokenizer, self.cfg, self.anchors = model, tokenizer, cfg, anchors
        self.train_blocks, self.heldout_blocks, self.long_blocks = train_blocks, heldout_blocks, long_blocks
        self.evaluates = rank == 0 or runtime.is_sharded(model)  # processes running held-out evals
        self.lengths = token_lengths(tokenizer) if self.evaluates else None  # held-out bits per byte
        self.start_step, self.resume, self.progress = step, resume, runtime.Progress(step, cfg.total_steps())
        # the live curves' extras: the last step's learning rate and gradient norm, tokens since the last row
        self.live = {"lr": None, "grad_norm": None, "tokens": 0, "since": time.perf_counter()}
        self.flops_per_token = 6 * sum(p.numel() for p in model.parameters())  # per token: PaLM App. B
        self.tracker = Tracker(cfg.report_to if track_dir is not None and rank == 0 else [], track_dir or ".",
                               name=Path(track_dir or ".").resolve().name, config=resume_settings(cfg),
                               start_step=step + 1 if resume is not None else 0)
        self.peak = peak_flops(device)  # the GPU's peak FLOP/s, for MFU

    def record(self, step: int, stage: int, stage_step: int, train_loss: float) -> None:
        """Evaluate on held-out text and append the curve's row of ``step`` (rank 0 keeps it)."""
        cfg, model, curve = self.cfg, self.model, self.curve
        long, n = cfg.is_long(step), cfg.eval_sequences
        blocks = self.long_blocks[1] if long else self.heldout_blocks
        blocks = blocks.head(n) if isinstance(blocks, Blocks) else blocks[:n]  # the first eval_sequences
        held, counts, held_bpb = heldout_eval(model, blocks, cfg, self.tokenizer, self.device, self.autocast,
                                              self.track, self.lengths)
        curve.append({"step": step, "samples": cfg.samples_at(step), "stage": stage,
                      "stage_samples": cfg.samples_at(step) - cfg.samples_at(step - stage_step),
                      "seq_len": cfg.long_seq_len if long else cfg.seq_len, "train_loss": train_loss,
                      "heldout_loss": held, "heldout_bits_per_byte": held_bpb,
                      "train_sequences": len(self.train_blocks)})  # the run's corpus (train_sequences caps)
        if counts is not None:  # vocab-swap Figure 6: per-token held-out accuracy
            curve[-1].update(token_masked=counts[:, 0].tolist(), token_correct=counts[:, 1].tolist())
            seen = counts[:, 0] > 0
            log.info("step %d: mean held-out accuracy of the %d most frequent tokens %.4f (%d seen)", step,
                     len(counts), float((counts[seen, 1] / counts[seen, 0]).mean()) if seen.any()
                     else float("nan"), int(seen.sum()))
        if self.anchors is not None:
            ids, ref = self.anchors
            weight = model.get_input_embeddings().weight.detach()
            weight = weight.full_tensor() if hasattr(weight, "full_tensor") else weight  # sharded: gathered
            rho = row_correlations(weight[ids.to(self.device)].float().cpu(), ref.float())
            curve[-1]["source_correlation"] = float(rho.nanmean())  # ρ̄ (vocab-swap §2.3)
            curve[-1]["correlation_histogram"] = torch.histc(rho[~rho.isnan()], bins=CORRELATION_BINS,
                                                             min=-1.0, max=1.0).long().tolist()  # Figure 3
        log.info("step %d/%d (stage %d) train %.4f held-out %.4f (%s)", step, cfg.total_steps(), stage,
                 train_loss, held, self.progress(step))
        if self.tracker.report_to:
            live, now = self.live, time.perf_counter()
            rate = live["tokens"] / max(now - live["since"], 1e-9) if live["tokens"] else None
            norm = None if live["grad_norm"] is None else float(live["grad_norm"])
            self.tracker.log(step, {
                "train/loss": train_loss, "heldout/loss": held, "heldout/bits_per_byte": held_bpb,
                "train/lr": live["lr"], "train/grad_norm": norm, "train/tokens_per_s": rate,
                "train/mfu": mfu(rate, self.flops_per_token, self.peak, self.group.world),
                "heldout/source_correlation": curve[-1].get("source_correlation")})
            live.update(tokens=0, since=time.perf_counter())  # the held-out evaluation is not training time

    def snapshot(self, step: int) -> None:
        """Stage the model of ``step`` as a snapshot (every evaluating process gathers a sharded model)."""
        state = runtime.full_state_dict(self.model)[0] if runtime.is_sharded(self.model) else None
        if self.group.rank == 0:
            folder = Path(self.ckpt.root) / SNAPSHOTS
            save_model(self.model, self.tokenizer, folder / f"step-{step:08d}", state)
            log.info("snapshot of step %d staged in %s", step, folder)

    def step_batch(self, step: int) -> tuple[Any, Any, int, int]:
        """``(blocks, rows, per-process batch, micro batch)`` of ``step``, a function of the seed and step."""
        cfg, world = self.cfg, self.group.world
        size, micro = cfg.phase_batch(step)
        per_rank = size // world
        micro = min(micro or per_rank, per_rank)
        long = cfg.is_long(step)  # the long phase has its own data order, from its first step
        blocks = self.long_blocks[0] if long else self.train_blocks
        rows = batch_rows(step - cfg.long_start() if long else step, size, len(blocks), cfg.seed)
        return blocks, rows[self.group.rank * per_rank:(self.group.rank + 1) * per_rank], per_rank, micro

    def train(self, stop: runtime.StopSignals, stop_after: int | None) -> pd.DataFrame:
        """The steps of :func:`train` from ``start_step`` on: stages, records, snapshots, checkpoints."""
        cfg, model, group, device, curve = self.cfg, self.model, self.group, self.device, self.curve
        world, rank, step, resume = group.world, group.rank, self.start_step, self.resume
        snapshots, settings = set(cfg.snapshot_steps), resume_settings(cfg)
        total, long_start = cfg.total_steps(), cfg.long_start()
        if self.evaluates and 0 in snapshots and resume is None:  # the starting model (resumed runs have it)
            self.snapshot(0)
        first = 0
        for stage, (n_steps, trainable) in enumerate(cfg.stages()):
            if step >= first + n_steps:
                first += n_steps
                continue
            set_trainable(model, trainable)
            params = [p for p in model.parameters() if p.requires_grad]
            opt = cfg.adamw(params, device)
            sched = runtime.linear_schedule(opt, n_steps, cfg.warmup_ratio,
                                            constant=cfg.schedule == "constant")
            scaler = runtime.grad_scaler(self.amp_dtype)
            if resume is not None and step > first:
                self.ckpt.restore_optimizer(resume, opt, sched, scaler, device, model)
            loss_module = LossModule(model, cfg.objective)
            loss_module = loss_module if runtime.is_sharded(model) else group.wrap(loss_module, device)
            if step == first and self.evaluates and not any(r["step"] == step
                                                            and r["stage"] == stage for r in curve):
                self.record(step, stage, 0, float("nan"))
            running, n_running = self.resumed_running if resume is not None and step > first else (0.0, 0)
            running = torch.tensor(running, dtype=torch.float64, device=device)  # no host sync per step
            while step < first + n_steps:
                step += 1
                started = time.monotonic()
                blocks, rows, per_rank, micro = self.step_batch(step)
                n_micro = math.ceil(per_rank / micro)
                for part in range(n_micro):
                    # The micro batch's place in the step's global batch seeds its masks and dropout, so that
                    # N processes with micro batches of size m train as one process with micro batches of m.
                    index = rank * n_micro + part
                    torch.manual_seed(cfg.seed * 1_000_003 + step * 101 + index * 1_000_000_007)  # dropout
                    part_rows = rows[part * micro:(part + 1) * micro]
                    batch = make_batch(blocks, part_rows, cfg, self.tokenizer, step, index)
                    sync = part == n_micro - 1 or world == 1
                    if runtime.is_sharded(model):  # reduce-scatter after the last micro batch only
                        model.set_requires_gradient_sync(sync)
                    no_sync = not sync and world > 1 and not runtime.is_sharded(model)
                    with loss_module.no_sync() if no_sync else contextlib.nullcontext(), self.autocast():
                        # weighed by its share of the device's sequences (parts may differ: 48 = 16 + 32)
                        loss = (loss_module(*to_device(batch, device, cfg.objective))
                                * (len(part_rows) / per_rank))
                    (scaler.scale(loss) if scaler else loss).backward()
                    running += loss.detach().double()  # float64, as a Python float sum would be
                norm = runtime.optimizer_step(params, opt, sched, scaler, cfg.clip_norm)
                if cfg.min_step_seconds:  # paced: the step lasts at least this long; the tensors are the same
                    time.sleep(max(0.0, cfg.min_step_seconds - (time.monotonic() - started)))
                n_running += 1
                seq_len = cfg.long_seq_len if cfg.is_long(step) else cfg.seq_len
                self.live.update(lr=sched.get_last_lr()[0], grad_norm=norm,
                                 tokens=self.live["tokens"] + per_rank * world * seq_len)
                stage_step = step - first
                if self.evaluates and (stage_step % cfg.eval_every == 0 or step == first + n_steps
                                       or step == long_start):
                    self.record(step, stage, stage_step, float(running) / n_running)
                    running, n_running = torch.zeros_like(running), 0
                if self.evaluates and step in snapshots:
                    self.snapshot(step)
                last = step == total
                stopping = group.any(stop.received is not None, device)  # all processes stop at the same step
                if (step % cfg.checkpoint_every == 0 or stopping or step == stop_after) and not last:
                    if self.evaluates:
                        self.ckpt.save(step, model, opt, sched, scaler, {"step": step, "curve": curve,
                                       "running": float(running), "n_running": n_running, "config": settings})
                    group.barrier()
                if stopping and not last:  # a signal in the last step: the run ends instead
                    stop.exit(step)
                if step == stop_after:
                    return pd.DataFrame(curve)
            first += n_steps
        model.eval()
        return pd.DataFrame(curve)


def load_blocks(shards: str, tokenizer, seq_len: int, max_sequences: int | None = None, *,
                tokenizer_dir: str | None = None, lazy: bool = False) -> Blocks | torch.Tensor:
    """Blocks of ``seq_len`` read on demand from the token shard folder ``shards`` (checked against
    ``tokenizer_dir``); with ``max_sequences`` (held-out sets) the first ones, a tensor unless ``lazy``."""
    blocks = open_blocks(shards, tokenizer, seq_len, tokenizer_dir=tokenizer_dir, max_blocks=max_sequences)
    return blocks.materialize() if max_sequences is not None and not lazy else blocks


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add = p.add_argument
    add("--model", required=True, help="source model: save_pretrained folder")
    add("--embeddings", help="init artifact (results/init/...safetensors); omit to train the model as is")
    add("--tokenizer", required=True, help="target tokenizer folder")
    add("--train", required=True, help="token shard of the training corpus (tokenized with --tokenizer)")
    add("--heldout", required=True, help="token shard of the held-out corpus")
    add("--output", required=True, help="save_pretrained folder written at the end (atomically)")
    add("--curve", help="loss curve parquet (default: <output>.curve.parquet)")
    add("--checkpoints", help="checkpoint folder (default: <output>.checkpoints)")
    add("--snapshots",
        help="folder of the snapshot_steps models, step-XXXXXXXX/ (default: <output>.snapshots)")
    add("--token-accuracy",
        help="per-token held-out accuracy parquet (default: <output>.token_accuracy.parquet)")
    add("--config", default="{}", help="LaptConfig as JSON, or @file.json")
    add("--track-dir", help="folder of the live curves, tensorboard/ or wandb/ (lapt.training."
                            "report_to; default: the folder of --output, the run's folder)")
    add("--anchors", help="overlap parquet (compute_overlap): log ρ̄ to the source rows of shared tokens")
    add("--log", help="log file")
    args = p.parse_args(argv)
    cfg = LaptConfig.from_cli(args)
    group = runtime.init_distributed()
    # what the run started from, recorded in what it writes (vocab_transfer.report.provenance follows it)
    reads = input_records({"model": args.model, "embeddings": args.embeddings, "tokenizer": args.tokenizer,
                           "train": args.train, "heldout": args.heldout, "anchors": args.anchors})
    tokenizer = load_tokenizer(args.tokenizer)
    model = load_source_model(args.model)
    anchors = None
    if args.anchors:
        pairs = pd.read_parquet(args.anchors, columns=["target_id", "source_id", "match"])
        pairs = pairs[pairs["match"].isin(["special", "exact"])]
        ids, rows = (torch.tensor(pairs[k].to_numpy()) for k in ("target_id", "source_id"))
        anchors = (ids, model.get_input_embeddings().weight.detach()[rows].float().clone())
        log.info("source correlation over %d shared tokens (%s)", len(ids), args.anchors)
    if args.embeddings:  # after the anchors: they are the source's rows
        model = swap_embeddings(model, args.embeddings)
    if cfg.factorized:
        factorized.attach_factorized(model, factorized.read_factors(args.embeddings),
                                     freeze_up_projection=cfg.freeze_up_projection)
    resolve_objective(model, cfg.objective)  # a mismatch fails before the corpus is tokenized
    if model.get_input_embeddings().weight.shape[0] != len(tokenizer):
        raise ValueError(f"{args.embeddings or args.model} has {model.get_input_embeddings().weight.shape[0]}"
                         f" embedding rows, the tokenizer {args.tokenizer} {len(tokenizer)} tokens")
    for key in ("seq_len", "long_seq_len"):
        if getattr(cfg, key) and getattr(cfg, key) > max_sequence_length(model):
            raise ValueError(f"LAPT config: {key} {getattr(cfg, key)} exceeds the "
                             f"{max_sequence_length(model)} positions of the model {args.model}")
    train_blocks = open_blocks(args.train, tokenizer, cfg.seq_len, tokenizer_dir=args.tokenizer,
                               max_blocks=cfg.train_sequences)  # train_sequences: a prefix of the corpus only
    heldout = functools.partial(load_blocks, args.heldout, tokenizer, max_sequences=cfg.eval_sequences,
                                tokenizer_dir=args.tokenizer, lazy=cfg.packing == "documents")
    heldout_blocks = heldout(cfg.seq_len)
    log.info("%d training sequences of %d tokens; %d held-out", len(train_blocks),
             cfg.seq_len, len(heldout_blocks))
    long_blocks = None
    if cfg.long_steps:
        long_blocks = (load_blocks(args.train, tokenizer, cfg.long_seq_len, tokenizer_dir=args.tokenizer),
                       heldout(cfg.long_seq_len))
        log.info("last %d steps: %d training sequences of %d tokens; %d held-out", cfg.long_steps,
                 len(long_blocks[0]), cfg.long_seq_len, len(long_blocks[1]))
    checkpoints = args.checkpoints or f"{args.output}.checkpoints"
    curve = train(model, tokenizer, train_blocks, heldout_blocks, cfg, checkpoint_dir=checkpoints,
                  anchors=anchors, long_blocks=long_blocks,
                  track_dir=args.track_dir or Path(args.output).parent)
    state = runtime.full_state_dict(model)[0] if runtime.is_sharded(model) else None  # gathered by all
    if group.main:
        with recorded_reads(reads, started_from="embeddings" if args.embeddings else "model"):
            top = cfg.token_accuracy_top
            ids, counts = frequent_tokens(train_blocks, len(tokenizer), tokenizer.all_special_ids,
                                          top) if top else (torch.zeros(0), None)
            write_parquet(token_accuracy_table(curve, ids, counts, tokenizer),
                          args.token_accuracy or f"{args.output}.token_accuracy.parquet",
                          schema=TOKEN_ACCURACY_SCHEMA)
            write_parquet(curve.drop(columns=["token_masked", "token_correct"], errors="ignore"),
                          args.curve or f"{args.output}.curve.parquet")
            save_model(model, tokenizer, args.output, state)  # language_adapter.* beside a plain model
            publish_snapshots(checkpoints, args.snapshots or f"{args.output}.snapshots", cfg.snapshot_steps)
        remove_tree(checkpoints)  # whole or gone if killed meanwhile
    group.close()


if __name__ == "__main__":  # a trainer job's process (a test may call main() in its own)
    keep_freed_memory()
    main()

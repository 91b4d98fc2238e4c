"""Language-adaptive pretraining (LAPT) of a transferred model: a resumable CLI for CPU, one GPU, or
many GPUs and nodes through ``torchrun``.

    python -m vocab_transfer.training.lapt --model results/source/demo-xlmr/model \\
        --embeddings results/init/demo-xlmr/sw/focus.safetensors --tokenizer results/tokenizers/sw \\
        --train results/shards/sw/train --heldout results/shards/sw/heldout \\
        --output results/lapt/demo-xlmr/sw/focus --config '{"steps": 300, "batch_size": 16}'
    torchrun --standalone --nproc-per-node 4 -m vocab_transfer.training.lapt ...  # DDP, same flags

``--train`` / ``--heldout`` are token shards of the tokenizer (``python -m vocab_transfer.data.shards`` writes
them from a corpus): training blocks are read from them on demand, so memory does not grow with the corpus,
and each rank reads only its own blocks.

Defaults are FOCUS's (FOCUS Table 5): AdamW β = (0.9, 0.999), ε = 1e-8, no weight decay, peak lr
5e-5, linear warmup over 10% of the steps then constant, batch 128 × 256 tokens, gradient clipping 1.0,
15% masking with 80/10/10. ``objective`` is the model's own by default: masked LM, or next-token loss
for a decoder-only source (WECHSEL's GPT-2). ``variant`` selects what is trained (one loop, stages of
trainable sets):

- ``full``: everything;
- ``two_stage``: embeddings only for an extra ``embedding_stage_ratio`` (20%) of the steps, then
  everything (FOCUS §3.1, the Random baseline); each stage has its own optimizer and warmup;
- ``embeddings_only``: the word embeddings (tied output embeddings) and the output bias only: vocab-swap's
  "Word Embed Only" (§2.2, Table 8, Figure 7);
- ``embedding_layers``: every parameter of the embedding block (word, position and token-type embeddings,
  embedding LayerNorm) plus the output bias, the body frozen: vocab-swap's "Embed Grad" / "Embed Layers"
  (§2.2: "we only update the parameters in the embedding layer"; BERT-style encoders);
- ``freeze_body``: the non-embedding parameters frozen for the first ``embedding_stage_ratio`` of the
  steps (WECHSEL §5.4.2);
- ``adapter``: MAD-X language adapters (MAD-X 2.0 by default, settings in ``adapter``:
  ``vocab_transfer.training.settings.AdapterConfig``) trained jointly with the embeddings, the rest frozen
  (unks-everywhere §4.3); ``--output`` also holds ``language_adapter.safetensors`` / ``.json``. With
  ``train_embeddings: false`` only the adapters train: MAD-X's own setting, a language adapter for the source
  model's vocabulary (no ``--embeddings``), whose rows stay the source's (unks-everywhere §4.1, §4.3).

``factorized: true`` (UNKs §3.3, the MF rows) trains the embeddings in the form the init artifact of a ``kind:
mf`` method holds them: ``F'`` (low-dimensional rows), the up-projections ``G`` (fixed with
``freeze_up_projection``) and the cluster logits ``Z`` (straight-through Gumbel-softmax), instead of the flat
``F'G`` (:class:`vocab_transfer.methods.factorized.FactorizedVocabulary`); ``--output`` holds the flattened
model plus the trained factors in ``factorized_embeddings.safetensors``.

``long_steps`` / ``long_seq_len`` / ``long_batch_size`` train the last ``long_steps`` optimizer steps of the
run on blocks of ``long_seq_len`` tokens (packed separately from the same corpus), ``long_batch_size``
sequences per step (default ``batch_size``): BERT's schedule that vocab-swap reproduces (§3.1: "a sequence
length of 128 for 40k steps and 512 for 10k steps", §3.3: 90k + 10k; App. A.1: batch 256 at 128, 48 at 512).
The phase is a function of the global step (resume-exact), the learning-rate schedule runs on, and held-out
evaluations in the phase use held-out blocks of ``long_seq_len`` (the curve's ``seq_len`` column).

``reinit`` re-initializes weights with the model's own initializer (``_init_weights``: N(0,
``initializer_range``) for linear and embedding weights, zero biases, LayerNorm 1/0) before training,
seeded by ``seed`` (bit-identical for a seed; a resumed run takes them from its checkpoint):
``embedding_layers`` the position and token-type embeddings and the embedding LayerNorm (vocab-swap §2.2 and
Figure 2: "reinitialization all embedding layers and initializing with the given scheme"; the word
embeddings are the init method's), ``all`` every weight but the word embeddings and output bias (the
method's), i.e. vocab-swap's "Scratch" (§2.1, §3.1) with a Reinit Embed init.

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

vocab-swap Figures 4/6/8: ``snapshot_steps`` keeps the model (``save_pretrained`` + tokenizer) at those global
steps, staged under the checkpoint folder (so a failed job whose outputs are removed keeps them) and
hard-linked into ``--snapshots`` as ``step-XXXXXXXX/`` at the end; a resumed run writes the same snapshots bit
for bit. Step 0 is the model as training starts (after ``reinit``: WECHSEL Table 1's FullRand Score@0
fine-tunes it). ``token_accuracy_top`` records, at every evaluation, how often each of the N most frequent
(non-special) tokens of the training blocks was a held-out prediction target and how often the argmax
prediction was right, written to ``--token-accuracy`` (parquet, one row per step and token; vocab-swap Figure
6 splits it by the init's provenance).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import logging
import math
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
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
from ..methods.factorized import (
    FACTORS_FILE,
    FactorizedVocabulary,
    attach_factorized,
    flat_state_dict,
    read_factors,
)
from ..source_model import (
    is_causal_lm,
    load_source_model,
    masked_lm_logits,
    masked_lm_loss,
    max_sequence_length,
)
from ..tracking import Tracker, mfu, peak_flops
from .adapters import (
    adapter_parameter_names,
    add_language_adapter,
    save_language_adapter,
)
from .cpu_dropout import use_fast_dropout
from .runtime import (
    Checkpoints,
    Distributed,
    Progress,
    StopSignals,
    adamw,
    autocast_factory,
    checkpoint_settings,
    compile_layers,
    current_distributed,
    enable_gradient_checkpointing,
    full_state_dict,
    grad_scaler,
    init_distributed,
    is_sharded,
    linear_schedule,
    optimizer_step,
    param_dtype,
    pick_device,
    setup_logging,
    shard_model,
)
from .settings import REINIT, LaptConfig

log = logging.getLogger(__name__)


CORRELATION_BINS = 40  # per-token ρ_i histogram over [-1, 1] in the curve (vocab-swap Figure 3)
SNAPSHOTS = "snapshots"  # staged snapshots inside the checkpoint folder (it outlives a failed job's outputs)
TOKEN_ACCURACY_SCHEMA = pa.schema([
    ("step", pa.int64()), ("stage", pa.int64()), ("token_id", pa.int64()), ("token", pa.string()),
    ("train_count", pa.int64()), ("masked", pa.int64()), ("correct", pa.int64()), ("accuracy", pa.float64())])
def embedding_parameter_names(model) -> set[str]:
    """Input embeddings (tied to the output embeddings; a factorized vocabulary's F', G, Z) and the LM head's
    output bias."""
    out = model.get_output_embeddings()
    own = {id(p) for p in model.get_input_embeddings().parameters()}
    own |= {id(p) for p in (getattr(out, "weight", None), getattr(out, "bias", None))
            if isinstance(p, torch.nn.Parameter)}
    return {n for n, p in model.named_parameters() if id(p) in own}


def embedding_layer_names(model) -> set[str]:
    """Every parameter of the block that holds the input embeddings (BERT/RoBERTa/XLM-R ``embeddings``: word,
    position and token-type embeddings, LayerNorm) plus :func:`embedding_parameter_names` (tied output
    embeddings, output bias): vocab-swap's "Embed Layers" (§2.2). ValueError for a model without such a block
    (GPT-2's word and position embeddings sit directly in the transformer)."""
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
    """The settings a checkpoint is only valid for (stored in its state.json, compared when resuming): every
    LaptConfig field but those a resumed run may change (threads, checkpointing, and micro-batching, gradient
    checkpointing or compiling, e.g. after running out of GPU memory: the same sequences per step, only
    computed differently)."""
    return checkpoint_settings(cfg, RESUME_FREE)


def _post_order(module: torch.nn.Module):
    """Modules children first, as ``nn.Module.apply`` (so transformers' initialization) visits them."""
    for child in module.children():
        yield from _post_order(child)
    yield module


def reinitialize(model, part: str, seed: int) -> list[str]:
    """Re-initialize ``reinit_parameter_names(model, part)`` in place with the model's own ``_init_weights``
    (vocab-swap's "Scratch" and "Embed Layers", §2.1-2.2; WECHSEL's FullRand), seeded: the CPU generator is
    forked and seeded, so the values depend on ``seed`` only (call it before moving the model to a GPU).
    Modules are visited children first, as transformers' own initialization does, and each module whose
    parameters (its own and its children's) are all selected is passed to ``_init_weights``, so a parent's
    rule applies on top of its children's (GPT-2's c_proj scaled by 1/sqrt(2 n_layer) in GPT2Attention /
    GPT2MLP). A selected parameter that no module covers is an error, as is one ``_init_weights`` leaves
    unchanged. Returns the re-initialized parameter names."""
    names = reinit_parameter_names(model, part)
    if not names:
        return []
    by_id = {id(p): n for n, p in model.named_parameters()}
    done: list[str] = []
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for module in _post_order(model):
            own, tree = list(module.parameters(recurse=False)), list(module.parameters())
            if not tree or not all(by_id.get(id(p)) in names for p in tree):
                continue
            before = [p.detach().clone() for p in own]
            for p in tree:  # loaded weights are flagged initialized, which _init_weights would respect
                p._is_hf_initialized = False
            model._init_weights(module)
            for p in tree:
                p._is_hf_initialized = True
            done += [by_id[id(p)] for p in own]
            same = [by_id[id(p)] for p, b in zip(own, before, strict=True)
                    if torch.equal(p, b) and p.numel() > 1
                    and not (b == b.flatten()[0]).all()]
            if same:
                raise ValueError(f"reinit {part}: {type(model).__name__}._init_weights left {same} unchanged")
    left = sorted(names - set(done))
    if left:
        raise ValueError(f"reinit {part}: no module of {type(model).__name__} re-initializes {left} alone")
    return sorted(done)


def resolve_objective(model, objective: str) -> str:
    """The objective that fits the model: ``clm`` for a decoder-only causal LM (GPT-2), ``mlm`` for a masked
    LM (XLM-R); see :func:`vocab_transfer.source_model.is_causal_lm`. ``auto`` picks it; an explicit
    ``mlm`` / ``clm`` that does not fit raises ValueError naming both."""
    fits = "clm" if is_causal_lm(model) else "mlm"
    if objective not in ("auto", fits):
        kind = "a causal (decoder-only) LM" if fits == "clm" else "a masked LM"
        raise ValueError(f"LAPT objective {objective!r} does not fit the model {type(model).__name__}, which "
                         f"is {kind}: set objective: {fits!r} (or auto) in the LAPT config")
    return fits


def set_trainable(model, trainable: str) -> None:
    """``all``, or only the embeddings (``embedding_parameter_names``), the embedding block
    (``embedding_layer_names``), the embeddings and MAD-X adapters (``adapter``) or the adapters alone
    (``adapter_only``) get gradients."""
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


def to_device(batch: tuple[torch.Tensor, torch.Tensor, torch.Tensor | None],
              device: torch.device, objective: str
              ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """(inputs, labels, masked positions, position ids) on ``device`` without waiting for the GPU: the masked
    positions are found on the CPU (a boolean index on the GPU would synchronize), and pinned copies do not
    block, so the host prepares the next batch while the device computes."""
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
    """Row ids of optimizer step ``step`` (1-based): consecutive slices of per-epoch seeded permutations, so
    the data position is a function of the step (exact resume, any number of devices; the ranks take disjoint
    slices of a step's rows, so no two see the same block in an epoch)."""
    start = (step - 1) * batch_size
    idx = torch.arange(start, start + batch_size)
    out = torch.empty(batch_size, dtype=torch.long)
    for epoch in idx.div(n, rounding_mode="floor").unique().tolist():
        perm = epoch_permutation(n, seed, epoch)
        sel = idx.div(n, rounding_mode="floor") == epoch
        out[sel] = perm[idx[sel] % n].long()
    return out


def make_batch(blocks: torch.Tensor | Blocks, rows: torch.Tensor, cfg: LaptConfig,
               tokenizer, step: int, part: int
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """(inputs, labels, position ids) of the blocks ``rows``: the position ids are None but for ``packing:
    documents``, where they restart at each document (:meth:`Blocks.positions`) and the first token of a
    document that begins inside the block is no target (its context would be the previous document)."""
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
    """ValueError unless the causal LM ``model`` keeps packed documents apart when given position ids that
    restart (transformers derives the block-diagonal causal mask from them: an explicit mask for sdpa/eager
    attention, varlen kernels for flash attention): the logits of a second document packed behind a first must
    equal its logits alone, up to a tenth of what attending to the first document changes."""
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
    """``(ids, counts)`` of the ``n`` most frequent non-special token ids in ``blocks`` (the packed training
    corpus; shard blocks are counted chunk by chunk), most frequent first, ties by ascending id; tokens that
    never occur are left out."""
    if isinstance(blocks, Blocks):
        counts = torch.from_numpy(blocks.token_counts(vocab_size))
    else:
        counts = torch.bincount(blocks.flatten(), minlength=vocab_size)
    counts[torch.as_tensor(list(special_ids), dtype=torch.long)] = 0
    order = torch.sort(counts, descending=True, stable=True).indices  # stable: equal counts keep id order
    order = order[counts[order] > 0][:n]
    return order, counts[order]


def token_accuracy_counts(predicted: torch.Tensor, labels: torch.Tensor, track: torch.Tensor) -> torch.Tensor:
    """Per tracked token id (``track`` [k]): how often it is the label of a predicted position (``labels``
    [n]) and how often the prediction there (``predicted`` [n], the argmax) is right. Returns int64 ``[k, 2]``
    (masked, correct); positions labelled with an untracked token are ignored."""
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
    """Mean loss per predicted token on fixed held-out blocks (fixed masks, seed 12345); with ``track`` (token
    ids, MLM only) also their :func:`token_accuracy_counts` [k, 2] over the same masked positions (80/10/10:
    every labelled position counts), from the same logits as the loss; with ``lengths``
    (:func:`vocab_transfer.eval.mlm.token_lengths`) the NLL in bits per byte of scored tokens (else NaN)."""
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
    """Mean loss per predicted token on fixed held-out blocks (fixed masks, seed 12345)."""
    return heldout_eval(model, blocks, cfg, tokenizer, device, autocast)[0]


def save_model(model, tokenizer, folder: str | os.PathLike, state: dict | None = None) -> None:
    """``save_pretrained`` of the model and the tokenizer into ``folder``, atomically, without changing the
    live model: a language adapter (variant adapter) goes beside the plain weights as ``language_adapter.*``,
    and factorized embeddings (``factorized``) are written flattened (eval-mode table) with the factors beside
    them as ``factorized_embeddings.safetensors``; ``config.json`` carries the tokenizer's special-token ids
    (:func:`~vocab_transfer.export.retarget_special_ids`), not the source's. The final model and the snapshots
    are written by this one function, so a snapshot at the last step equals it. ``state``: the weights to
    write (a sharded model's, gathered by :func:`.runtime.full_state_dict`); default: the model's."""
    with atomic_path(folder, directory=True) as tmp:
        adapter = adapter_parameter_names(model)
        if adapter:
            save_language_adapter(model, tmp)
            state = {k: v for k, v in model.state_dict().items() if k not in adapter}
        if isinstance(model.get_input_embeddings(), FactorizedVocabulary):
            state = flat_state_dict(model, state)
            write_tensors(model.get_input_embeddings().factors.state(), tmp / FACTORS_FILE)
        model.save_pretrained(str(tmp), state_dict=state)
        tokenizer.save_pretrained(str(tmp))
        retarget_configs(tmp, tmp, tokenizer)


def publish_snapshots(checkpoint_dir: str | os.PathLike,
                      dest: str | os.PathLike, steps: list[int]) -> list[Path]:
    """Hard-link (copy across file systems) the snapshots staged under ``checkpoint_dir`` into ``dest``,
    atomically, as ``step-XXXXXXXX/``; ``dest`` is created even without snapshots. A snapshot in ``steps``
    that was not staged raises FileNotFoundError naming it (staged copies live as long as the checkpoints)."""
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
    """Long form of the curve's ``token_masked`` / ``token_correct`` lists: one row per (evaluation, tracked
    token) with ``step, stage, token_id, token, train_count, masked, correct, accuracy`` (NaN where the token
    was never a held-out target); empty (same columns) when nothing was tracked."""
    if "token_masked" not in curve or not len(ids):
        return TOKEN_ACCURACY_SCHEMA.empty_table().to_pandas()
    k = len(ids)
    masked = torch.tensor(curve["token_masked"].tolist(), dtype=torch.long).flatten()
    correct = torch.tensor(curve["token_correct"].tolist(), dtype=torch.long).flatten()
    return pd.DataFrame({
        "step": curve["step"].repeat(k).to_numpy(), "stage": curve["stage"].repeat(k).to_numpy(),
        "token_id": ids.repeat(len(curve)).numpy(),
        "token": tokenizer.convert_ids_to_tokens(ids.tolist()) * len(curve),
        "train_count": counts.repeat(len(curve)).numpy(), "masked": masked.numpy(),
        "correct": correct.numpy(),
        "accuracy": (correct.double() / masked.clamp(min=1)).where(masked > 0, torch.nan).numpy()})


def train(model, tokenizer, train_blocks: torch.Tensor | Blocks, heldout_blocks: torch.Tensor,
          cfg: LaptConfig, *, checkpoint_dir: str | os.PathLike, stop_after: int | None = None,
          anchors: tuple[torch.Tensor, torch.Tensor] | None = None,
          long_blocks: tuple[torch.Tensor | Blocks, torch.Tensor] | None = None,
          track_dir: str | os.PathLike | None = None) -> pd.DataFrame:
    """Run (or resume) LAPT; returns the loss curve. ``train_blocks`` is a tensor of packed blocks or
    :class:`~vocab_transfer.data.shards.Blocks` read from a token shard on demand. ``long_blocks`` = (train,
    held-out) blocks of ``cfg.long_seq_len`` tokens, needed when ``cfg.long_steps`` > 0. ``stop_after``
    (tests) stops after that global step as a kill would, leaving only the checkpoints behind. ``anchors`` =
    (target ids, their source embedding rows) adds ``source_correlation`` (ρ̄ of those rows now and in the
    source) to the curve. ``cfg.token_accuracy_top`` adds ``token_masked`` / ``token_correct`` lists (per
    token of :func:`frequent_tokens`, see :func:`token_accuracy_table`); ``cfg.snapshot_steps`` stages a
    :func:`save_model` folder per step under ``checkpoint_dir/snapshots`` (:func:`publish_snapshots`).
    ``track_dir``: the first process writes the live curves of ``cfg.report_to`` there (:mod:`.tracking`)."""
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
    snapshots = set(cfg.snapshot_steps)
    group = current_distributed()
    world, rank = group.world, group.rank
    sharded = cfg.distributed == "fsdp" and world > 1  # all processes evaluate: forward is collective
    track = (frequent_tokens(train_blocks, len(tokenizer), tokenizer.all_special_ids,
                             cfg.token_accuracy_top)[0]
             if cfg.token_accuracy_top and (rank == 0 or sharded) else None)
    device = pick_device()
    if cfg.variant == "adapter" and not adapter_parameter_names(model):  # before resuming: checkpoints hold
        add_language_adapter(model, cfg.adapter, seed=cfg.seed)
    ckpt = Checkpoints(checkpoint_dir, cfg.keep_checkpoints, what="LAPT")
    if ckpt.latest() is None:  # a resumed run has them in its checkpoint
        reset = reinitialize(model, cfg.reinit, seed=cfg.seed * 1_000_003 + 7)
        if reset:
            log.info("reinit %s: %d parameter tensors re-initialized (%s ...)",
                     cfg.reinit, len(reset), reset[0])
    model.to(device=device, dtype=param_dtype(cfg.precision)).train()
    use_fast_dropout(model, device)
    if cfg.packing == "documents":
        check_document_masking(model, device)
    if cfg.gradient_checkpointing and not enable_gradient_checkpointing(model):
        log.warning("gradient_checkpointing: %s does not support it; training without", type(model).__name__)
    if cfg.compile:
        log.info("compile: %d transformer layers compiled", compile_layers(model))
    autocast, amp_dtype = autocast_factory(cfg.precision, device)
    for key in ("batch_size", "long_batch_size") if cfg.long_steps else ("batch_size",):
        if getattr(cfg, key) and getattr(cfg, key) % world:
            raise ValueError(f"LAPT config: {key} {getattr(cfg, key)} is not divisible by {world} devices")
    total = cfg.total_steps()
    curve: list[dict] = []
    step, resumed_running = 0, (0.0, 0)
    resume, state = ckpt.resume(resume_settings(cfg))
    if resume is not None:
        staged = Path(checkpoint_dir) / SNAPSHOTS
        missing = [s for s in sorted(snapshots) if s <= state["step"]
                   and not (staged / f"step-{s:08d}").is_dir()]
        if missing:
            raise FileNotFoundError(f"LAPT snapshots of steps {missing} are missing under {staged}, and the "
                                    f"checkpoint {resume} is past them: delete {checkpoint_dir} "
                                    "to start this run over")
        step, curve = state["step"], state["curve"]
        resumed_running = (state.get("running", 0.0), state.get("n_running", 0))
        ckpt.restore_model(resume, model, device)
        log.info("resuming from %s (step %d of %d)", resume, step, total)
    if sharded:
        log.info("FSDP: %d layers sharded over %d processes", shard_model(model), world)
    run = _Run(model, tokenizer, train_blocks, heldout_blocks, long_blocks, cfg, ckpt, group, device,
               autocast, amp_dtype, track, anchors, curve, step, resume, resumed_running)
    tracker = Tracker(cfg.report_to if track_dir is not None and rank == 0 else [], track_dir or ".",
                      name=Path(track_dir or ".").resolve().name, config=resume_settings(cfg),
                      start_step=step + 1 if resume is not None else 0)
    run.tracker, run.peak = tracker, peak_flops(device)
    with StopSignals() as stop, tracker:
        return run.train(stop, stop_after)


@dataclass
class _Run:
    """What the steps of one LAPT run share (:func:`train` builds it): the model, its tokenizer and data, the
    settings, the checkpoints, the process group, device and precision, the tracked tokens and anchors, and
    the curve so far from ``start_step`` on (``resume``: the checkpoint restored, with its running loss)."""

    model: Any
    tokenizer: Any
    train_blocks: Any  # torch.Tensor | Blocks
    heldout_blocks: Any
    long_blocks: Any  # (train, held-out) blocks of long_seq_len, or None
    cfg: LaptConfig
    ckpt: Checkpoints
    group: Distributed
    device: Any
    autocast: Callable
    amp_dtype: Any
    track: Any  # token ids whose held-out accuracy is recorded (vocab-swap Figure 6), or None
    anchors: Any  # (target ids, their source rows) for the curve's source correlation, or None
    curve: list[dict]
    start_step: int  # the step it starts (or resumes) from; train() counts on from it
    resume: Any
    resumed_running: tuple[float, int]

    def __post_init__(self):
        self.evaluates = self.group.rank == 0 or is_sharded(self.model)  # processes running held-out evals
        self.lengths = token_lengths(self.tokenizer) if self.evaluates else None  # held-out bits per byte
        self.progress = Progress(self.start_step, self.cfg.total_steps())
        self.tracker, self.peak = None, None  # the live curves (train() opens them) and the GPU's peak FLOP/s
        # what the live curves log besides the curve's row: the last step's learning rate and gradient norm,
        # and the tokens since the last row (tokens/s, MFU)
        self.live = {"lr": None, "grad_norm": None, "tokens": 0, "since": time.perf_counter()}
        # training FLOPs per token (PaLM App. B)
        self.flops_per_token = 6 * sum(p.numel() for p in self.model.parameters())

    def record(self, step: int, stage: int, stage_step: int, train_loss: float) -> None:
        """Evaluate on held-out text and append the curve's row of ``step`` (rank 0 keeps it)."""
        cfg, model = self.cfg, self.model
        long = cfg.is_long(step)
        held, counts, held_bpb = heldout_eval(model, first_blocks(self.long_blocks[1] if long
                                                                  else self.heldout_blocks,
                                                                  cfg.eval_sequences),
                                              cfg, self.tokenizer, self.device,
                                              self.autocast, self.track, self.lengths)
        curve = self.curve
        curve.append({"step": step, "samples": cfg.samples_at(step), "stage": stage,
                      "stage_samples": cfg.samples_at(step) - cfg.samples_at(step - stage_step),
                      "seq_len": cfg.long_seq_len if long else cfg.seq_len, "train_loss": train_loss,
                      "heldout_loss": held, "heldout_bits_per_byte": held_bpb,
                      "train_sequences": len(self.train_blocks)})  # the run's corpus (train_sequences caps)
        if counts is not None:  # vocab-swap Figure 6: per-token held-out accuracy
            curve[-1]["token_masked"], curve[-1]["token_correct"] = (counts[:, 0].tolist(),
                                                                     counts[:, 1].tolist())
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
        if self.tracker is not None and self.tracker.report_to:
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
        """Stage the model of ``step`` as a snapshot (every evaluating process gathers a sharded model, rank 0
        writes)."""
        state = full_state_dict(self.model)[0] if is_sharded(self.model) else None
        if self.group.rank == 0:
            folder = Path(self.ckpt.root) / SNAPSHOTS
            save_model(self.model, self.tokenizer, folder / f"step-{step:08d}", state)
            log.info("snapshot of step %d staged in %s", step, folder)

    def step_batch(self, step: int) -> tuple[Any, Any, int, int]:
        """``(blocks, this process's rows, per-process batch, micro batch)`` of ``step`` (a function of the
        seed and the step: a resumed run sees the same batches)."""
        cfg, world = self.cfg, self.group.world
        size, micro = cfg.phase_batch(step)
        per_rank = size // world
        micro = min(micro or per_rank, per_rank)
        if cfg.is_long(step):  # its own data order, from the phase's first step
            blocks, rows = self.long_blocks[0], batch_rows(step - cfg.long_start(), size,
                                                           len(self.long_blocks[0]), cfg.seed)
        else:
            blocks, rows = self.train_blocks, batch_rows(step, size, len(self.train_blocks), cfg.seed)
        return blocks, rows[self.group.rank * per_rank:(self.group.rank + 1) * per_rank], per_rank, micro

    def train(self, stop: StopSignals, stop_after: int | None) -> pd.DataFrame:
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
            opt = adamw(params, lr=cfg.lr, betas=cfg.betas, eps=cfg.eps,
                        weight_decay=cfg.weight_decay, device=device)
            sched = linear_schedule(opt, n_steps, cfg.warmup_ratio, constant=cfg.schedule == "constant")
            scaler = grad_scaler(self.amp_dtype)
            if resume is not None and step > first:
                self.ckpt.restore_optimizer(resume, opt, sched, scaler, device, model)
            loss_module = LossModule(model, cfg.objective)
            loss_module = loss_module if is_sharded(model) else group.wrap(loss_module, device)
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
                    if is_sharded(model):  # reduce-scatter the gradients after the last micro batch only
                        model.set_requires_gradient_sync(sync)
                    no_sync = not sync and world > 1 and not is_sharded(model)
                    with loss_module.no_sync() if no_sync else contextlib.nullcontext(), self.autocast():
                        # each part weighs by its share of the device's sequences (parts may be unequal: 48 =
                        # 16 + 32)
                        loss = (loss_module(*to_device(batch, device, cfg.objective))
                                * (len(part_rows) / per_rank))
                    (scaler.scale(loss) if scaler else loss).backward()
                    running += loss.detach().double()  # float64, as a Python float sum would be
                norm = optimizer_step(params, opt, sched, scaler, cfg.clip_norm)
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
                                                                         "running": float(running),
                                                                         "n_running": n_running,
                                                                         "config": settings})
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
    ``tokenizer_dir``); with ``max_sequences`` (held-out sets), the first ones, as a tensor unless ``lazy``
    (document packing reads their position ids from the shard too)."""
    blocks = open_blocks(shards, tokenizer, seq_len, tokenizer_dir=tokenizer_dir, max_blocks=max_sequences)
    return blocks.materialize() if max_sequences is not None and not lazy else blocks


def first_blocks(blocks: torch.Tensor | Blocks, n: int) -> torch.Tensor | Blocks:
    """The first ``n`` blocks, of the same kind."""
    return blocks.head(n) if isinstance(blocks, Blocks) else blocks[:n]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="source model: save_pretrained folder")
    p.add_argument("--embeddings",
                   help="init artifact (results/init/...safetensors); omit to train the model as is")
    p.add_argument("--tokenizer", required=True, help="target tokenizer folder")
    p.add_argument("--train", required=True,
                   help="token shard of the training corpus (tokenized with --tokenizer)")
    p.add_argument("--heldout", required=True, help="token shard of the held-out corpus")
    p.add_argument("--output", required=True, help="save_pretrained folder written at the end (atomically)")
    p.add_argument("--curve", help="loss curve parquet (default: <output>.curve.parquet)")
    p.add_argument("--checkpoints", help="checkpoint folder (default: <output>.checkpoints)")
    p.add_argument("--snapshots",
                   help="folder of the snapshot_steps models, step-XXXXXXXX/ (default: <output>.snapshots)")
    p.add_argument("--token-accuracy",
                   help="per-token held-out accuracy parquet (default: <output>.token_accuracy.parquet)")
    p.add_argument("--config", default="{}", help="LaptConfig as JSON, or @file.json")
    p.add_argument("--track-dir", help="folder of the live curves, tensorboard/ or wandb/ (lapt.training."
                                       "report_to; default: the folder of --output, the run's folder)")
    p.add_argument("--anchors",
                   help="overlap parquet (compute_overlap): log ρ̄ to the source rows of shared tokens")
    p.add_argument("--log", help="log file")
    args = p.parse_args(argv)
    setup_logging(args.log)
    raw = Path(args.config[1:]).read_text() if args.config.startswith("@") else args.config
    cfg = LaptConfig.parse(json.loads(raw))
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    group = init_distributed()
    # what the run started from, recorded in what it writes (vocab_transfer.report.provenance follows it)
    reads = input_records({"model": args.model, "embeddings": args.embeddings, "tokenizer": args.tokenizer,
                           "train": args.train, "heldout": args.heldout, "anchors": args.anchors})

    tokenizer = load_tokenizer(args.tokenizer)
    model = load_source_model(args.model)
    anchors = None
    if args.anchors:
        pairs = pd.read_parquet(args.anchors, columns=["target_id", "source_id", "match"])
        pairs = pairs[pairs["match"].isin(["special", "exact"])]
        ids = torch.tensor(pairs["target_id"].to_numpy())
        anchors = (ids,
                   model.get_input_embeddings().weight.detach()[torch.tensor(pairs["source_id"].to_numpy())]
                   .float().clone())
        log.info("source correlation over %d shared tokens (%s)", len(ids), args.anchors)
    if args.embeddings:  # after the anchors: they are the source's rows
        model = swap_embeddings(model, args.embeddings)
    if cfg.factorized:
        attach_factorized(model, read_factors(args.embeddings), freeze_up_projection=cfg.freeze_up_projection)
    resolve_objective(model, cfg.objective)  # a mismatch fails before the corpus is tokenized
    if model.get_input_embeddings().weight.shape[0] != len(tokenizer):
        raise ValueError(f"{args.embeddings or args.model} has "
                         f"{model.get_input_embeddings().weight.shape[0]} embedding rows, the tokenizer "
                         f"{args.tokenizer} {len(tokenizer)} tokens")

    for key in ("seq_len", "long_seq_len"):
        if getattr(cfg, key) and getattr(cfg, key) > max_sequence_length(model):
            raise ValueError(f"LAPT config: {key} {getattr(cfg, key)} exceeds the "
                             f"{max_sequence_length(model)} positions of the model {args.model}")
    train_blocks = open_blocks(args.train, tokenizer, cfg.seq_len, tokenizer_dir=args.tokenizer,
                               max_blocks=cfg.train_sequences)  # train_sequences: a prefix of the corpus only
    lazy = cfg.packing == "documents"
    heldout_blocks = load_blocks(args.heldout, tokenizer, cfg.seq_len, cfg.eval_sequences,
                                 tokenizer_dir=args.tokenizer, lazy=lazy)
    log.info("%d training sequences of %d tokens; %d held-out", len(train_blocks),
             cfg.seq_len, len(heldout_blocks))
    long_blocks = None
    if cfg.long_steps:
        long_blocks = (load_blocks(args.train, tokenizer, cfg.long_seq_len, tokenizer_dir=args.tokenizer),
                       load_blocks(args.heldout, tokenizer, cfg.long_seq_len, cfg.eval_sequences,
                                   tokenizer_dir=args.tokenizer, lazy=lazy))
        log.info("last %d steps: %d training sequences of %d tokens; %d held-out", cfg.long_steps,
                 len(long_blocks[0]), cfg.long_seq_len, len(long_blocks[1]))
    checkpoints = args.checkpoints or f"{args.output}.checkpoints"
    curve = train(model, tokenizer, train_blocks, heldout_blocks, cfg, checkpoint_dir=checkpoints,
                  anchors=anchors, long_blocks=long_blocks,
                  track_dir=args.track_dir or Path(args.output).parent)
    state = full_state_dict(model)[0] if is_sharded(model) else None  # every process gathers, rank 0 writes
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

"""Token Distillation (Dobler, Elliott & de Melo 2025, arXiv 2505.20133), and embedding-only LM training as
its baseline: both refine another row's init (``init: focus``) by briefly optimizing the embedding rows alone.

``token_distillation``: the source model on its own tokenization is the teacher, the same model with the
``init`` row's target rows on the target tokenization of the same text the student; where both tokenizations
end a word (``positions``) the student's hidden state at ``layer`` is pulled towards the teacher's (MSE). An
untied LM head's rows learn by the model's own objective on the student's frozen last hidden states.
``embedding_lm``: the model's own objective (MLM with 80/10/10 masking, or next-token prediction) trains the
same rows for the same token budget. Both freeze the body and train the rows a method did not copy (``rows:
new``) or all of them, with AdamW (no weight decay, constant learning rate) over ``tokens`` target tokens of
the training split. Settings, checkpoints and where the authors' code differs: docs/methods.md, "Token
Distillation".
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import random
import time
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import count, islice
from pathlib import Path
from typing import Annotated, Literal

from .. import lazy
from .. import source_model as sm
from ..checkpointing import CheckpointError, StopSignals, check_checkpoint
from ..data.corpus import iter_texts
from ..io import atomic_path, refuse_links, remove_tree
from ..tracking import ReportTo, Tracker
from ..typed import Range
from .base import COPIED, SPECIAL, EmbeddingInit, TransferInputs
from .registry import Need, register

np = lazy.module("numpy")
torch = lazy.module("torch")

log = logging.getLogger(__name__)

NEEDS = frozenset({Need.TOKENIZERS, Need.BASE_INIT, Need.TRAIN_TEXT})
Positions = Literal["word_ends", "token_ends"]
Rows = Literal["new", "all"]
Device = Literal["auto", "cpu", "cuda"]
Count = Annotated[int, Range(ge=1)]
Length = Annotated[int, Range(ge=8)]
Rate = Annotated[float, Range(gt=0)]
Share = Annotated[float, Range(gt=0, lt=1)]


# --- aligning two tokenizations of one text -----------------------------------------------------------------
def _punct(ch: str) -> bool:
    return unicodedata.category(ch).startswith("P")


def word_boundary(text: str, e: int) -> bool:
    """Whether a word ends at character ``e`` of ``text``: the text ends, or whitespace or punctuation
    follows, or punctuation precedes (``word,`` ends at the word and at the comma; text without spaces ends
    words at punctuation only)."""
    return e >= len(text) or text[e].isspace() or _punct(text[e]) or (e > 0 and _punct(text[e - 1]))


def token_ends(offsets, special) -> dict[int, int]:
    """Character end offset -> index of the last (non-special, non-empty) token that ends there."""
    return {b: i for i, ((a, b), s) in enumerate(zip(offsets, special, strict=True)) if not s and b > a}


def aligned_positions(text: str, source: tuple, target: tuple,
                      positions: str = "word_ends") -> list[tuple[int, int]]:
    """``(source index, target index)`` of the tokens that end at the same character of ``text`` in both
    tokenizations (``(offsets, special_tokens_mask)`` each), in text order; with ``word_ends`` only where a
    word ends there (:func:`word_boundary`)."""
    se, te = token_ends(*source), token_ends(*target)
    common = se.keys() & te.keys()
    if positions == "word_ends":
        common = {e for e in common if word_boundary(text, e)}
    return [(se[e], te[e]) for e in sorted(common)]


def segments(text: str, source_offsets, target_offsets, room_source: int, room_target: int,
             positions: str = "word_ends") -> list[str]:
    """``text`` cut at word ends (``token_ends``: at any shared token end) into pieces that take at most
    ``room_*`` tokens in either tokenization (offsets of the whole text, without special tokens); a span
    longer than the room between two cuts is dropped. A piece tokenized on its own can differ at its first
    word from the whole text's tokens, so the batches truncate at ``seq_len`` as well."""
    s_ends, t_ends = [b for _, b in source_offsets], [b for _, b in target_offsets]
    cuts = sorted(e for e in set(s_ends) & set(t_ends) if positions == "token_ends" or word_boundary(text, e))
    out, start, ns, nt, last, si, ti = [], 0, 0, 0, None, 0, 0  # ns/nt: tokens before `start`
    for e in cuts:
        while si < len(s_ends) and s_ends[si] <= e:
            si += 1
        while ti < len(t_ends) and t_ends[ti] <= e:
            ti += 1
        if si - ns <= room_source and ti - nt <= room_target:
            last = (e, si, ti)
            continue
        if last is not None:
            out.append(text[start:last[0]].strip())
            start, ns, nt = last
            last = None
            if si - ns <= room_source and ti - nt <= room_target:
                last = (e, si, ti)
                continue
        start, ns, nt = e, si, ti  # a span longer than the room on its own: skipped
    if last is not None:
        out.append(text[start:last[0]].strip())
    return [s for s in out if s]


@dataclass
class Batch:
    target_ids: torch.Tensor  # [B, Tt]
    target_mask: torch.Tensor
    source_ids: torch.Tensor  # [B, Ts]
    source_mask: torch.Tensor
    source_at: torch.Tensor  # [P] flat (row-major) indices of the aligned positions
    target_at: torch.Tensor
    tokens: int  # target tokens in the batch (not padding)


def batches(train_text: str, source_tokenizer, target_tokenizer, *, batch_size: int, seq_len: int, seed: int,
            positions: str, shuffle_buffer: int = 10_000) -> Iterator[Batch]:
    """Batches of segments of the training split, both tokenizations and their aligned positions, forever
    (each pass through the split in a new seeded shuffle-buffer order): at most ``seq_len`` tokens a segment
    in either tokenization. Memory: the shuffle buffer's segments."""
    rooms = tuple(seq_len - len(t("a", add_special_tokens=True)["input_ids"])  # less the special tokens
                  + len(t("a", add_special_tokens=False)["input_ids"])
                  for t in (source_tokenizer, target_tokenizer))
    for epoch in count():
        segs = _shuffled_segments(train_text, source_tokenizer, target_tokenizer, rooms,
                                  random.Random(seed * 1_000_003 + epoch), shuffle_buffer, positions)
        produced = False
        while pending := list(islice(segs, batch_size)):
            yield _collate(pending, source_tokenizer, target_tokenizer, positions, seq_len)
            produced = True
        if not produced:
            raise ValueError(f"{train_text} has no text that fits {seq_len} tokens in both tokenizations")


def _shuffled_segments(path, source_tokenizer, target_tokenizer, rooms, rng, buffer_size, positions
                       ) -> Iterator[str]:
    """Segments of the split's documents (read 256 at a time) through a shuffle buffer of ``buffer_size``."""
    buffer: list[str] = []

    def cut(texts):
        s, t = (tok(texts, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
                for tok in (source_tokenizer, target_tokenizer))
        return [seg for text, so, to in zip(texts, s, t, strict=True)
                for seg in segments(text, so, to, *rooms, positions)]

    chunk: list[str] = []
    for text in iter_texts(path):
        chunk.append(text)
        if len(chunk) < 256:
            continue
        for seg in cut(chunk):
            if len(buffer) < buffer_size:
                buffer.append(seg)
                continue
            i = rng.randrange(buffer_size)
            yield buffer[i]
            buffer[i] = seg
        chunk = []
    buffer.extend(cut(chunk) if chunk else [])
    rng.shuffle(buffer)
    yield from buffer


def _encode(tokenizer, texts, max_len: int):
    """Ids (right-padded with 0: the attention mask hides them), attention mask, offsets and special-token
    masks, at most ``max_len`` tokens a text; decoders often have no pad token, so the padding is done
    here."""
    enc = tokenizer(texts, add_special_tokens=True, return_offsets_mapping=True,
                    return_special_tokens_mask=True, truncation=True, max_length=max_len)
    ids = enc["input_ids"]
    out, mask = (torch.zeros(len(ids), max(map(len, ids)), dtype=torch.long) for _ in range(2))
    for r, row in enumerate(ids):
        out[r, : len(row)] = torch.tensor(row)
        mask[r, : len(row)] = 1
    return out, mask, enc["offset_mapping"], enc["special_tokens_mask"]


def _collate(texts: list[str], source_tokenizer, target_tokenizer, positions: str, seq_len: int) -> Batch:
    s_ids, s_mask, s_off, s_spec = _encode(source_tokenizer, texts, seq_len)
    t_ids, t_mask, t_off, t_spec = _encode(target_tokenizer, texts, seq_len)
    s_at, t_at = [], []
    for row, text in enumerate(texts):
        pairs = aligned_positions(text, (s_off[row], s_spec[row]), (t_off[row], t_spec[row]), positions)
        s_at += [row * s_ids.shape[1] + i for i, _ in pairs]
        t_at += [row * t_ids.shape[1] + j for _, j in pairs]
    return Batch(t_ids, t_mask, s_ids, s_mask, torch.tensor(s_at, dtype=torch.long),
                 torch.tensor(t_at, dtype=torch.long), int(t_mask.sum()))


# --- the optimization ---------------------------------------------------------------------------------------
def _base_rows(inputs: TransferInputs) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """The ``init`` row's input rows, output rows (an untied head; None: tied, or the base copied its input
    rows) and output bias, cut to the target vocabulary (a padded source pads its init artifacts)."""
    n, base = inputs.target_vocab_size, inputs.base_init
    rows = (base["embeddings"], base.get("output_embeddings"), base.get("output_bias"))
    return tuple(None if t is None else t[:n].float().clone() for t in rows)


def _lm_loss(model, hidden: torch.Tensor, ids: torch.Tensor, mask: torch.Tensor, labels: torch.Tensor | None,
             causal: bool) -> torch.Tensor:
    """The LM loss from the last hidden states ``hidden``: next-token (causal) or masked-token (``labels``)
    cross-entropy, the head run on the scored positions only."""
    if causal:
        keep = (mask[:, 1:] > 0).reshape(-1)
        h, targets = hidden[:, :-1].reshape(-1, hidden.shape[-1])[keep], ids[:, 1:].reshape(-1)[keep]
        logits = model.get_output_embeddings()(h)
    else:
        keep = (labels != -100).reshape(-1)
        h, targets = hidden.reshape(-1, hidden.shape[-1])[keep], labels.reshape(-1)[keep]
        head = sm.mlm_head(model)
        logits = head(h) if head is not None else model.get_output_embeddings()(h)
    return torch.nn.functional.cross_entropy(logits.float(), targets)


class Checkpoint:
    """The refinement's state in ``folder/step-XXXXXXXX/`` (written atomically, the newest kept):
    ``tensors.safetensors`` (the trained matrices, AdamW's state tensors, the masking generator's state),
    ``state.json`` (the counters, AdamW's other state, a digest of ``key``: the settings and starting rows)
    and ``.manifest.json``. :meth:`load` checks the manifest before it reads a byte and refuses a damaged
    checkpoint, or an older version's pickled ``state.pt``, with
    :class:`~vocab_transfer.checkpointing.CheckpointError`; a state of another ``key`` is deleted and the run
    starts afresh. ``folder`` must not be, nor hold, a symbolic link
    (:class:`~vocab_transfer.io.UnsafePathError`). Details: docs/methods.md, "Token Distillation"."""

    TENSORS, STATE = "tensors.safetensors", "state.json"

    def __init__(self, folder: str | None, key: str):
        self.folder = Path(folder) if folder else None
        self.key = hashlib.sha256(key.encode()).hexdigest()

    def _steps(self) -> list[Path]:
        refuse_links(self.folder, what="refinement checkpoint folder")
        return sorted(self.folder.glob("step-*")) if self.folder.is_dir() else []

    def load(self, params: list, opt, gen) -> dict | None:
        """Restore ``params``, ``opt`` and ``gen`` from the newest checkpoint and return its counters
        (``step``, ``drawn``, ``consumed``, ``curve``), or None (no checkpoint, or a stale one, now
        deleted)."""
        from safetensors.torch import load_file

        if self.folder is None:
            return None
        steps = self._steps()
        if (self.folder / "state.pt").exists():
            raise CheckpointError(f"refinement checkpoint {self.folder / 'state.pt'} is in the pickle "
                                  f"format of older versions, which is never loaded (unpickling a file can "
                                  f"run code); delete {self.folder} to start the refinement over")
        if not steps:
            return None
        path = steps[-1]
        check_checkpoint(path, "refinement", self.folder)
        state = json.loads((path / self.STATE).read_text(encoding="utf-8"))
        if state.get("key") != self.key:
            log.warning("%s was written with other settings or rows: deleted, starting afresh", path)
            remove_tree(self.folder)
            return None
        tensors = load_file(path / self.TENSORS)
        with torch.no_grad():
            for i, p in enumerate(params):
                p.copy_(tensors[f"param.{i}"])
        full = opt.state_dict()  # the groups (lr, betas) are this run's, equal to the checkpoint's by the key
        full["state"] = {int(i): {**kept["scalars"], **{n: tensors[f"opt.{i}.{n}"] for n in kept["tensors"]}}
                         for i, kept in state["optimizer"].items()}
        opt.load_state_dict(full)
        gen.set_state(tensors["generator"])
        return {k: state[k] for k in ("step", "drawn", "consumed", "curve")} | {"path": path}

    def save(self, params: list, opt, gen, **counters) -> None:
        """Write the checkpoint of ``counters["step"]`` (with ``drawn``, ``consumed``, ``curve``) and delete
        the older ones."""
        from safetensors.torch import save_file

        if self.folder is None:
            return
        old = self._steps()
        tensors = {f"param.{i}": p.detach().cpu().contiguous() for i, p in enumerate(params)}
        tensors["generator"] = gen.get_state()
        optimizer = {}
        for i, st in opt.state_dict()["state"].items():
            names = sorted(n for n, v in st.items() if isinstance(v, torch.Tensor))
            tensors |= {f"opt.{i}.{n}": st[n].detach().cpu().contiguous() for n in names}
            optimizer[str(i)] = {"tensors": names, "scalars": {n: v for n, v in st.items() if n not in names}}
        with atomic_path(self.folder / f"step-{counters['step']:08d}", directory=True) as tmp:
            save_file(tensors, tmp / self.TENSORS)
            (tmp / self.STATE).write_text(json.dumps({**counters, "optimizer": optimizer, "key": self.key}),
                                          encoding="utf-8")
        for path in old:
            if path.name != f"step-{counters['step']:08d}":
                remove_tree(path, within=self.folder)


def _digest(*tensors) -> str:
    h = hashlib.blake2b(digest_size=16)
    for t in tensors:
        if t is not None:
            h.update(memoryview(t.detach().contiguous().view(torch.uint8).numpy()))
    return h.hexdigest()


def _files_key(folder: str) -> str:
    """The files under ``folder`` (or the file) by name, size and modification time: a rebuilt corpus or
    another model gives another key."""
    root = Path(folder)
    files = sorted(root.rglob("*")) if root.is_dir() else [root]
    return json.dumps([(str(f.relative_to(root)) if root.is_dir() else f.name,
                        f.stat().st_size, f.stat().st_mtime_ns)
                       for f in files if f.is_file()])


def refine(inputs: TransferInputs, *, objective: str, seed: int, tokens: int, layer: int, positions: str,
           rows: str, lr: float, batch_size: int, seq_len: int, mask_prob: float, device: str,
           checkpoint_every: int = 500, report_to=("tensorboard",)) -> EmbeddingInit:
    """Train the ``init`` row's embedding rows for ``tokens`` target tokens (``objective``:
    ``distill``/``lm``)."""
    if tokens < 1:
        raise ValueError(f"tokens must be at least 1, not {tokens}")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device: cuda, but torch sees no GPU")
    dev = torch.device("cuda" if device != "cpu" and torch.cuda.is_available() else "cpu")
    emb, out, bias = _base_rows(inputs)
    prov = inputs.base_provenance["provenance"].to_numpy()[: inputs.target_vocab_size]
    train_mask = torch.from_numpy(~np.isin(prov, [COPIED, SPECIAL]) | (rows == "all"))  # all: every row
    torch.manual_seed(seed)
    # fp32 weights (a bf16 checkpoint too: AdamW's small steps would round away), bf16 autocast on a GPU
    model = sm.load_source_model(inputs.source_model_dir).float()
    causal, untied = sm.is_causal_lm(model), sm.has_untied_output(model)
    longest = sm.max_sequence_length(model)
    if seq_len > longest:
        raise ValueError(f"seq_len {seq_len} is more than the {longest} positions of "
                         f"{inputs.source_model_dir}")
    # the teacher embeds with the source's own embedding module (a model that scales its embeddings, as Gemma
    # does, scales them there), the student with the target's, both passed on as inputs_embeds
    teacher_embed = copy.deepcopy(model.get_input_embeddings()).requires_grad_(False).to(dev)
    model = sm.transferred_model(model, emb, bias, out).to(dev).eval()  # eval: no dropout, fixed targets
    model.requires_grad_(False)
    body, embed = model.base_model, model.get_input_embeddings()
    inp, head = embed.weight, model.get_output_embeddings().weight if untied else None
    params = [inp] + ([head] if head is not None else [])
    for p in params:
        p.requires_grad_(True)
    no_cache = {"use_cache": False} if causal else {}  # a decoder builds no key/value cache in training
    opt = torch.optim.AdamW(params, lr=lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    autocast = (torch.autocast("cuda", dtype=torch.bfloat16) if dev.type == "cuda"
                else torch.autocast("cpu", enabled=False))
    tgt_tok, src_tok = inputs.target_tokenizer, inputs.source_tokenizer
    grad_mask = train_mask.to(dev, torch.float32)[:, None]
    gen = torch.Generator().manual_seed(seed)
    stream = batches(inputs.train_text, src_tok, tgt_tok, batch_size=batch_size, seq_len=seq_len, seed=seed,
                     positions=positions)

    def own_loss(b: Batch, t_ids, t_mask, *, frozen: bool, last=None):
        """The model's own objective on the batch, next-token or masked-token; ``frozen``: from hidden states
        that pass no gradient back (only an untied head learns); ``last``: the unmasked forward pass's last
        hidden state, reused by a decoder."""
        ids, labels = t_ids, None
        if not causal:
            masked, labels = sm.mask_tokens(b.target_ids, mask_token_id=tgt_tok.mask_token_id,
                                            vocab_size=len(tgt_tok), special_ids=tgt_tok.all_special_ids,
                                            generator=gen, mask_prob=mask_prob)
            labels[b.target_mask == 0] = -100  # padding is never scored
            ids, labels, last = masked.to(dev), labels.to(dev), None
        if last is None:
            with torch.set_grad_enabled(not frozen), autocast:
                last = body(inputs_embeds=embed(ids), attention_mask=t_mask, **no_cache).last_hidden_state
        return _lm_loss(model, last.detach() if frozen else last, t_ids, t_mask, labels, causal)

    consumed, step, drawn, curve, t0, shown = 0, 0, 0, [], time.perf_counter(), 0.0
    settings = dict(objective=objective, seed=seed, tokens=tokens, layer=layer, positions=positions,
                    rows=rows, lr=lr, batch_size=batch_size, seq_len=seq_len, mask_prob=mask_prob)
    key = (json.dumps(settings, sort_keys=True) + _digest(emb, out, bias) + _files_key(inputs.train_text)
           + _files_key(inputs.source_model_dir)) if inputs.checkpoint_dir else ""  # no folder: no match
    ckpt = Checkpoint(inputs.checkpoint_dir, key)
    state = ckpt.load(params, opt, gen)  # before any step: a refused checkpoint (or folder) costs no training
    if state is not None:  # resume: the same rows, optimizer, masks and text as an uninterrupted run
        consumed, step, drawn, curve = state["consumed"], state["step"], state["drawn"], state["curve"]
        for _ in range(drawn):
            next(stream)
        log.info("resumed from %s at step %d (%d tokens)", state["path"], step, consumed)
    start = consumed
    log.info("%s: %d of %d rows train, %d tokens, batch %d x %d, lr %g, on %s", objective,
             int(train_mask.sum()), len(train_mask), tokens, batch_size, seq_len, lr, dev)
    tracker = Tracker(report_to if inputs.track_dir else [], inputs.track_dir or ".", config=settings,
                      name=f"refine {objective}", start_step=step + 1 if state is not None else 0)
    with StopSignals() as stop, tracker:
        while consumed < tokens:
            b = next(stream)
            drawn += 1
            t_ids, t_mask = b.target_ids.to(dev), b.target_mask.to(dev)
            opt.zero_grad(set_to_none=True)
            if objective == "distill":
                if len(b.target_at) == 0:
                    continue
                with torch.no_grad(), autocast:
                    teacher = body(inputs_embeds=teacher_embed(b.source_ids.to(dev)),
                                   attention_mask=b.source_mask.to(dev), output_hidden_states=True,
                                   **no_cache).hidden_states[layer]
                with autocast:
                    student = body(inputs_embeds=embed(t_ids), attention_mask=t_mask,
                                   output_hidden_states=True, **no_cache)
                d = teacher.shape[-1]
                student_h = student.hidden_states[layer].reshape(-1, d).index_select(0, b.target_at.to(dev))
                teacher_h = teacher.reshape(-1, d).index_select(0, b.source_at.to(dev))
                loss = torch.nn.functional.mse_loss(student_h.float(), teacher_h.float())
                if head is not None:  # an untied head learns by the model's own objective, from frozen states
                    loss = loss + own_loss(b, t_ids, t_mask, frozen=True, last=student.last_hidden_state)
            else:
                loss = own_loss(b, t_ids, t_mask, frozen=False)
            loss.backward()
            for p in params:  # rows that do not train keep their values exactly (AdamW without weight decay)
                p.grad.mul_(grad_mask)
            opt.step()
            consumed, step = consumed + b.tokens, step + 1
            curve.append(float(loss.detach()))
            if (step % checkpoint_every == 0 or stop.received) and consumed < tokens:  # SIGTERM/SIGUSR1
                ckpt.save(params, opt, gen, step=step, drawn=drawn, consumed=consumed, curve=curve)
            if stop.received and consumed < tokens:  # a signal in the last step: the run ends instead
                if ckpt.folder is None:
                    log.warning("no checkpoint folder: a rerun starts the refinement afresh")
                stop.exit(step)
            now = time.perf_counter()
            printed = now - shown > 10 or consumed >= tokens
            rate = (consumed - start) / max(now - t0, 1e-9)
            tracker.log(step, {"refine/loss": curve[-1], "refine/tokens": consumed,
                               "refine/tokens_per_s": rate}, flush=printed)
            if printed:
                log.info("%s step %d: loss %.4f, %d/%d tokens, %.0f tokens/s, ETA %.0f s", objective, step,
                         curve[-1], min(consumed, tokens), tokens, rate, max(tokens - consumed, 0) / rate)
                shown = now
    if ckpt.folder is not None:  # the artifact is written next; a rerun of the job starts from the init row
        remove_tree(ckpt.folder)
    matrix = [inp.detach().float().cpu()]
    if inputs.source_matrix.shape[1] - emb.shape[1] - int(bias is not None) == emb.shape[1]:  # untied rows
        matrix.append(head.detach().float().cpu() if head is not None else matrix[0].clone())
    if bias is not None:
        matrix.append(bias[:, None])
    prov, n = inputs.base_provenance, inputs.target_vocab_size
    return EmbeddingInit(torch.cat(matrix, 1).to(inputs.source_matrix.dtype),
                         prov["provenance"].to_numpy()[:n].astype(object), prov["n_sources"].to_numpy()[:n],
                         extra={"refine_loss": torch.tensor(curve, dtype=torch.float32),
                                "refine_tokens": torch.tensor([consumed], dtype=torch.int64)})


@register("token_distillation", NEEDS)
def init_token_distillation(inputs: TransferInputs, *, seed: int, init: str, tokens: Count = 1_000_000,
                            layer: int = -1, positions: Positions = "word_ends", rows: Rows = "new",
                            lr: Rate = 1e-4, batch_size: Count = 16, seq_len: Length = 128,
                            mask_prob: Share = 0.15, device: Device = "auto", checkpoint_every: Count = 500,
                            report_to: ReportTo = ("tensorboard",)) -> EmbeddingInit:
    """Config adapter: ``kind: token_distillation``. The ``init`` row's rows refined by matching the source
    model's hidden states at ``layer`` (``hidden_states`` index: -1 the last layer, 0 the embeddings) where
    both tokenizations end a word, for ``tokens`` target tokens (defaults: the authors' lr 1e-4, batch 16);
    ``report_to``: its live loss curve (vocab_transfer.tracking)."""
    return refine(inputs, objective="distill", seed=seed, tokens=tokens, layer=layer, positions=positions,
                  rows=rows, lr=lr, batch_size=batch_size, seq_len=seq_len, mask_prob=mask_prob,
                  device=device, checkpoint_every=checkpoint_every, report_to=report_to)


@register("embedding_lm", NEEDS)
def init_embedding_lm(inputs: TransferInputs, *, seed: int, init: str, tokens: Count = 1_000_000,
                      rows: Rows = "new", lr: Rate = 1e-4, batch_size: Count = 16, seq_len: Length = 128,
                      mask_prob: Share = 0.15, positions: Positions = "word_ends", device: Device = "auto",
                      checkpoint_every: Count = 500, report_to: ReportTo = ("tensorboard",)) -> EmbeddingInit:
    """Config adapter: ``kind: embedding_lm``. The ``init`` row's rows trained by the model's own objective
    (MLM or next-token) for ``tokens`` target tokens of the same text, the body frozen: embedding-only LAPT at
    :func:`init_token_distillation`'s budget (``positions`` only picks the same text segments)."""
    return refine(inputs, objective="lm", seed=seed, tokens=tokens, layer=-1, positions=positions, rows=rows,
                  lr=lr, batch_size=batch_size, seq_len=seq_len, mask_prob=mask_prob, device=device,
                  checkpoint_every=checkpoint_every, report_to=report_to)

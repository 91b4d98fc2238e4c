"""Language-model data and evaluation: packing, 15% masking with 80/10/10, held-out masked-LM loss, and
held-out causal-LM (next-token) loss for decoder sources."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from tqdm import tqdm
from transformers import PreTrainedModel, PreTrainedTokenizerBase


def pack_texts(texts: Sequence[str], tokenizer: PreTrainedTokenizerBase, seq_len: int, *,
               max_sequences: int | None = None, batch_size: int = 1000) -> torch.Tensor:
    """Tokenize ``texts``, concatenate them and cut ``<s> … </s>`` blocks of ``seq_len`` ids, in memory.

    The remainder that does not fill a block is dropped. Returns a LongTensor ``[n, seq_len]``. For small inputs
    (tests, a few held-out documents); the pipeline cuts the same blocks from token shards on demand
    (:class:`vocab_transfer.data.shards.Blocks`).
    """
    from ..data.shards import encoder, special_ids

    body, encode = seq_len - 2, encoder(tokenizer)
    parts: list[np.ndarray] = []
    have, need = 0, None if max_sequences is None else max_sequences * body
    for i in range(0, len(texts), batch_size):
        for seq in encode(list(texts[i:i + batch_size])):
            parts.append(np.asarray(seq, dtype=np.int64))
            have += len(seq)
        if need is not None and have >= need:
            break
    n = have // body if need is None else min(have // body, max_sequences)
    if n == 0:
        raise ValueError(f"text too short for one sequence of {seq_len} tokens")
    ids = np.concatenate(parts)[: n * body]
    bos, eos = special_ids(tokenizer)
    out = np.empty((n, seq_len), dtype=np.int64)
    out[:, 0], out[:, -1], out[:, 1:-1] = bos, eos, ids.reshape(n, body)
    return torch.from_numpy(out)


def mask_tokens(input_ids: torch.Tensor, *, mask_token_id: int, vocab_size: int, special_ids: Sequence[int],
                generator: torch.Generator, mask_prob: float = 0.15) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT masking: choose ``mask_prob`` of the non-special positions; of those 80% → ``<mask>``,
    10% → a random token, 10% unchanged. Labels are -100 elsewhere. Same generator state, same masks."""
    labels = input_ids.clone()
    special = torch.isin(input_ids, torch.as_tensor(list(special_ids)))
    probs = torch.full(input_ids.shape, mask_prob).masked_fill(special, 0.0)
    chosen = torch.bernoulli(probs, generator=generator).bool()
    labels[~chosen] = -100
    inputs = input_ids.clone()
    replace = torch.bernoulli(torch.full(input_ids.shape, 0.8), generator=generator).bool() & chosen
    inputs[replace] = mask_token_id
    rand = torch.bernoulli(torch.full(input_ids.shape, 0.5), generator=generator).bool() & chosen & ~replace
    inputs[rand] = torch.randint(vocab_size, input_ids.shape, generator=generator)[rand]
    return inputs, labels


@torch.no_grad()
def mlm_loss(model: PreTrainedModel, blocks: torch.Tensor, tokenizer: PreTrainedTokenizerBase, *, seed: int,
             mask_prob: float = 0.15, batch_size: int = 16, progress: bool = False) -> dict[str, float]:
    """Mean masked-LM cross-entropy (nats per masked token) of ``model`` on ``blocks``.

    Masks depend only on ``blocks``, the tokenizer and ``seed``, so every initialization of the same
    target vocabulary is scored on the same masked positions. The LM head runs on the masked positions only
    (:func:`vocab_transfer.source_model.masked_lm_logits`): a 50k vocabulary's logits of a whole batch would take
    0.4 GB.
    """
    from ..source_model import masked_lm_logits

    model.eval()
    g = torch.Generator().manual_seed(seed)
    total, count = 0.0, 0
    for i in tqdm(range(0, len(blocks), batch_size), desc="MLM eval", disable=not progress, mininterval=5):
        inputs, labels = mask_tokens(blocks[i:i + batch_size], mask_token_id=tokenizer.mask_token_id,
                                     vocab_size=len(tokenizer), special_ids=tokenizer.all_special_ids,
                                     generator=g, mask_prob=mask_prob)
        logits, targets = masked_lm_logits(model, inputs, labels)  # the LM head on the masked positions only
        total += float(torch.nn.functional.cross_entropy(logits.float(), targets, reduction="sum"))
        count += len(targets)
    loss = total / max(count, 1)
    return {"mlm_loss": loss, "perplexity": math.exp(min(loss, 50.0)), "masked_tokens": count,
            "sequences": len(blocks)}


@torch.no_grad()
def clm_loss(model: PreTrainedModel, blocks: torch.Tensor, *, batch_size: int = 16, progress: bool = False
             ) -> dict[str, float]:
    """Mean next-token cross-entropy (nats per predicted token) of a causal LM on packed ``blocks``.

    Every position but the first is predicted from the ids before it, so a ``[n, L]`` input scores
    ``n * (L - 1)`` tokens; same value as ``model(input_ids=blocks, labels=blocks).loss`` (the blocks have
    no padding). Perplexity = exp(loss), the measure of WECHSEL Table 2.
    """
    model.eval()
    total, count = 0.0, 0
    for i in tqdm(range(0, len(blocks), batch_size), desc="CLM eval", disable=not progress, mininterval=5):
        ids = blocks[i:i + batch_size]
        logits = model(input_ids=ids).logits[:, :-1]
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(),
                                                 ids[:, 1:].reshape(-1), reduction="sum")
        total += float(loss)
        count += ids[:, 1:].numel()
    loss = total / max(count, 1)
    return {"clm_loss": loss, "perplexity": math.exp(min(loss, 50.0)), "predicted_tokens": count,
            "sequences": len(blocks)}


def init_eval_row(model: PreTrainedModel, blocks: torch.Tensor, tokenizer: PreTrainedTokenizerBase, *,
                  objective: str, seed: int, mask_prob: float = 0.15, batch_size: int = 16) -> dict:
    """One row of the init-time evaluation (FOCUS Table 4; WECHSEL Table 2 for decoders).

    ``objective`` is ``mlm`` (masked LM, :func:`mlm_loss`) or ``clm`` (causal LM, :func:`clm_loss`). The
    columns are the same for both so the tables stay one schema: ``objective``, ``mlm_loss`` (the held-out
    loss of that objective, nats per scored token), ``perplexity``, ``masked_tokens`` (tokens scored:
    masked positions, or predicted next tokens for ``clm``), ``sequences``.
    """
    if objective == "mlm":
        res = mlm_loss(model, blocks, tokenizer, seed=seed, mask_prob=mask_prob, batch_size=batch_size)
        return {"objective": "mlm", **res}
    if objective == "clm":
        res = clm_loss(model, blocks, batch_size=batch_size)
        return {"objective": "clm", "mlm_loss": res["clm_loss"], "perplexity": res["perplexity"],
                "masked_tokens": res["predicted_tokens"], "sequences": res["sequences"]}
    raise ValueError(f"objective must be 'mlm' or 'clm', not {objective!r}")

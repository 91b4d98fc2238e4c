"""Language-model data and evaluation: packing, 15% masking with 80/10/10, held-out masked-LM loss, and
held-out causal-LM (next-token) loss for decoder sources, each also in bits per byte and per character.

Bits per byte make losses under different tokenizers comparable: the total negative log-likelihood of the
scored tokens in bits, divided by the UTF-8 bytes of those tokens' text (:func:`token_lengths`). For a masked
LM the scored tokens are the masked positions, for a causal LM every predicted next token.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np
import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from ..data.shards import encoder, special_ids
from ..data.tokenizer import canonicalize_vocab
from ..source_model import mask_tokens, masked_lm_logits  # noqa: F401 - mask_tokens: the trainers' import


def pack_texts(texts: Sequence[str], tokenizer: PreTrainedTokenizerBase, seq_len: int, *,
               max_sequences: int | None = None, batch_size: int = 1000) -> torch.Tensor:
    """Tokenize ``texts``, concatenate them and cut ``<s> … </s>`` blocks of ``seq_len`` ids, in memory, as a
    LongTensor ``[n, seq_len]`` (the remainder that fills no block dropped). For small inputs (tests, a few
    held-out documents); the pipeline cuts the same blocks from token shards on demand
    (:class:`vocab_transfer.data.shards.Blocks`)."""
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


_HEX_BYTE = re.compile(r"<0x([0-9A-F]{2})>")


def token_lengths(tokenizer) -> torch.Tensor:
    """``[V, 2]`` int64: the UTF-8 bytes and the characters of each token id's canonical surface form
    (:func:`vocab_transfer.data.tokenizer.canonicalize_vocab`): a word-initial marker (``▁``, ``Ġ``, a
    WordPiece token without ``##``) counts as one space, a byte token (``<0xNN>``, or an undecodable byte of a
    byte-level token) as one byte and as one character if it starts a UTF-8 sequence (0 for a continuation
    byte), so the lengths of a text's tokens add up to its own. Special tokens (``<s>``, ``<mask>``,
    ``<unk>``, ...) have length 0: an ``<unk>`` is scored, its text not counted."""
    out = []
    for tok in canonicalize_vocab(tokenizer):
        if tok.special:
            out.append((0, 0))
            continue
        parts = _HEX_BYTE.split(tok.text)  # literal text, hex byte, literal text, ...
        literal, hexes, bow = "".join(parts[::2]), parts[1::2], int(tok.bow)
        out.append((bow + len(literal.encode("utf-8")) + len(hexes),
                    bow + len(literal) + sum((int(h, 16) & 0xC0) != 0x80 for h in hexes)))
    return torch.tensor(out, dtype=torch.long).reshape(-1, 2)


def bits(nats_total: float, scored: int, lengths: torch.Tensor) -> dict[str, float]:
    """Bits per byte and per character of a summed NLL (nats) over tokens whose summed ``[bytes, chars]`` are
    ``lengths``; ``scored_bytes`` / ``scored_chars`` are those sums (NaN rates when nothing was scored)."""
    n_bytes, n_chars = (int(v) for v in lengths)
    total_bits = nats_total / math.log(2)
    return {"bits_per_byte": total_bits / n_bytes if n_bytes else float("nan"),
            "bits_per_char": total_bits / n_chars if n_chars else float("nan"),
            "scored_bytes": n_bytes, "scored_chars": n_chars}


@torch.no_grad()
def mlm_loss(model: PreTrainedModel, blocks: torch.Tensor, tokenizer: PreTrainedTokenizerBase, *, seed: int,
             mask_prob: float = 0.15, batch_size: int = 16) -> dict[str, float]:
    """Mean masked-LM cross-entropy (nats per masked token) of ``model`` on ``blocks``, and the same NLL in
    bits per byte and per character of the masked tokens' text (:func:`bits`). Masks depend only on
    ``blocks``, the tokenizer and ``seed``, so every initialization of one target vocabulary is scored on the
    same positions. The LM head runs on the masked positions only (:func:`masked_lm_logits`): a 50k
    vocabulary's logits of a whole batch would take 0.4 GB."""
    model.eval()
    g = torch.Generator().manual_seed(seed)
    lengths, scored, total, count = token_lengths(tokenizer), torch.zeros(2, dtype=torch.long), 0.0, 0
    for i in range(0, len(blocks), batch_size):
        inputs, labels = mask_tokens(blocks[i:i + batch_size], mask_token_id=tokenizer.mask_token_id,
                                     vocab_size=len(tokenizer), special_ids=tokenizer.all_special_ids,
                                     generator=g, mask_prob=mask_prob)
        logits, targets = masked_lm_logits(model, inputs.to(model.device), labels.to(model.device))
        total += float(torch.nn.functional.cross_entropy(logits.float(), targets, reduction="sum"))
        count += len(targets)
        scored += lengths[targets.cpu()].sum(0)
    loss = total / max(count, 1)
    return {"mlm_loss": loss, "perplexity": math.exp(min(loss, 50.0)), "masked_tokens": count,
            "sequences": len(blocks), **bits(total, count, scored)}


@torch.no_grad()
def clm_loss(model: PreTrainedModel, blocks: torch.Tensor, tokenizer: PreTrainedTokenizerBase | None = None,
             *, batch_size: int = 16, head_chunk: int = 4096) -> dict[str, float]:
    """Mean next-token cross-entropy (nats per predicted token) of a causal LM on packed ``blocks`` (and,
    given the ``tokenizer``, bits per byte and per character of the predicted tokens' text, :func:`bits`).
    A ``[n, L]`` input scores ``n * (L - 1)`` tokens, the value of ``model(input_ids=blocks,
    labels=blocks).loss`` (the blocks have no padding). Perplexity = exp(loss), WECHSEL Table 2's measure. The
    LM head runs on ``head_chunk`` positions at a time, so a 152k vocabulary's logits never exist for a whole
    batch."""
    model.eval()
    lengths = None if tokenizer is None else token_lengths(tokenizer)
    scored, total, count = torch.zeros(2, dtype=torch.long), 0.0, 0
    for i in range(0, len(blocks), batch_size):
        ids = blocks[i:i + batch_size]
        total += next_token_nll(model, ids.to(model.device), head_chunk)
        count += ids[:, 1:].numel()
        if lengths is not None:
            scored += lengths[ids[:, 1:].reshape(-1)].sum(0)
    loss = total / max(count, 1)
    out = {"clm_loss": loss, "perplexity": math.exp(min(loss, 50.0)), "predicted_tokens": count,
           "sequences": len(blocks)}
    return out if lengths is None else {**out, **bits(total, count, scored)}


#: Decoders whose logits are their LM head on ``model.model``'s last hidden state (Gemma 2: then soft-capped).
CHUNKED_HEAD = frozenset({"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "phi3",
                          "gemma", "gemma2", "olmo", "olmo2"})


def next_token_nll(model: PreTrainedModel, ids: torch.Tensor, head_chunk: int = 4096) -> float:
    """Summed next-token cross-entropy of ``ids`` ``[n, L]``: the LM head (and its logits) on ``head_chunk``
    positions at a time for the architectures of :data:`CHUNKED_HEAD`, else the model's own logits."""
    head, targets = model.get_output_embeddings(), ids[:, 1:].reshape(-1)
    if model.config.model_type not in CHUNKED_HEAD:
        logits = model(input_ids=ids).logits[:, :-1].flatten(0, 1).float()
        return float(torch.nn.functional.cross_entropy(logits, targets, reduction="sum"))
    hidden = model.model(input_ids=ids).last_hidden_state[:, :-1].reshape(-1, head.in_features)
    scale = getattr(model.config, "final_logit_softcapping", None)  # Gemma 2: cap * tanh(logits / cap)
    total = 0.0
    for j in range(0, len(targets), head_chunk):
        logits = head(hidden[j:j + head_chunk]).float()
        if scale:
            logits = scale * torch.tanh(logits / scale)
        total += float(torch.nn.functional.cross_entropy(logits, targets[j:j + head_chunk], reduction="sum"))
    return total


def init_eval_row(model: PreTrainedModel, blocks: torch.Tensor, tokenizer: PreTrainedTokenizerBase, *,
                  objective: str, seed: int, mask_prob: float = 0.15, batch_size: int = 16) -> dict:
    """One row of the init-time evaluation (FOCUS Table 4; WECHSEL Table 2 for decoders), ``objective``
    ``mlm`` (:func:`mlm_loss`) or ``clm`` (:func:`clm_loss`), in one schema for both: ``objective``,
    ``mlm_loss`` (the held-out loss of that objective, nats per scored token), ``perplexity``,
    ``masked_tokens`` (tokens scored: masked positions, or predicted next tokens for ``clm``), ``sequences``,
    ``bits_per_byte``, ``bits_per_char``, ``scored_bytes``, ``scored_chars`` (:func:`bits`)."""
    if objective == "mlm":
        res = mlm_loss(model, blocks, tokenizer, seed=seed, mask_prob=mask_prob, batch_size=batch_size)
        return {"objective": "mlm", **res}
    if objective == "clm":
        res = clm_loss(model, blocks, tokenizer, batch_size=batch_size)
        return {"objective": "clm", "mlm_loss": res.pop("clm_loss"), "perplexity": res.pop("perplexity"),
                "masked_tokens": res.pop("predicted_tokens"), **res}
    raise ValueError(f"objective must be 'mlm' or 'clm', not {objective!r}")

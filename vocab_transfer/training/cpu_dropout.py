"""Dropout at a CPU's speed: masks from 16-bit random draws instead of torch's ``bernoulli_``.

On the CPU, ``torch.nn.functional.dropout`` draws one Bernoulli sample per element (``aten::bernoulli_``,
about 8 ns each on 2 cores); in the demo's source-model step that was a fifth of the step time.
:func:`keep_mask` draws 64 random bits per four elements and keeps an element when its 16 bits are at or above
``p`` of their range (the drop probability is ``p`` rounded to a multiple of 2⁻¹⁶), about 4× faster;
:class:`FastDropout` scales the kept elements by ``1 / (1 - p)`` as dropout does (it keeps the scaled mask, in
the input's dtype, for the backward pass: 4 bytes per element in fp32 where torch keeps 1).

:func:`use_fast_dropout` puts it in a model for training: every ``nn.Dropout`` module becomes a
:class:`FastDropout` of the same ``p`` (a subclass, no weights: state dicts and checkpoints are unchanged),
and the attention of BERT-family models (XLM-R, RoBERTa, BERT: ``attention_probs_dropout_prob``) runs
:func:`attention`, the eager attention with this dropout on the attention weights, where ``sdpa`` would drop
them with ``bernoulli_``. Only on the CPU: on a GPU models keep torch's dropout (fast there) and attention.

The masks come from torch's default generator, as torch's own dropout does: a trainer that seeds it per step
keeps its masks functions of the seed and the step (bit-identical resume). They are other masks than torch's
for the same seed.
"""

from __future__ import annotations

import math

import torch

#: The attention implementation name :func:`use_fast_dropout` registers with transformers.
ATTENTION = "vocab_transfer_cpu_dropout"


def keep_mask(shape: torch.Size | tuple[int, ...], p: float,
              device: torch.device | str = "cpu") -> torch.Tensor:
    """Boolean mask of ``shape``, each element True (kept) with chance ``1 - p`` (``p`` rounded to 2⁻¹⁶)."""
    n = math.prod(shape)
    bits = torch.randint(-2**63, 2**63 - 1, ((n + 3) // 4,), dtype=torch.int64, device=device)
    return bits.view(torch.int16)[:n].view(shape) >= round(p * 65536) - 32768


def fast_dropout(x: torch.Tensor, p: float, training: bool = True) -> torch.Tensor:
    """``torch.nn.functional.dropout(x, p, training)`` with a :func:`keep_mask` mask (not in place)."""
    if not training or p == 0:
        return x
    if p == 1:
        return torch.zeros_like(x)
    # the scaled mask in x's dtype: one multiplication each way (autograd keeps it for the backward pass)
    scale = 65536 / (65536 - round(p * 65536))
    return x * keep_mask(x.shape, p, x.device).to(x.dtype).mul_(scale)


class FastDropout(torch.nn.Dropout):
    """``nn.Dropout`` whose masks come from :func:`keep_mask` on the CPU (torch's dropout elsewhere)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.device.type != "cpu" or self.inplace:
            return super().forward(x)
        return fast_dropout(x, self.p, self.training)


def attention(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
              attention_mask: torch.Tensor | None, scaling: float | None = None,
              dropout: float = 0.0, **kwargs
              ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """transformers' attention interface: softmax(q kᵀ · scaling + mask), :func:`fast_dropout` on it, times v.
    ``attention_mask`` is additive (transformers' eager mask, registered with it). Without dropout
    (evaluation) it runs ``scaled_dot_product_attention``."""
    if scaling is None:
        scaling = query.size(-1) ** -0.5
    if not dropout or query.device.type != "cpu":
        out = torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=attention_mask,
                                                               dropout_p=dropout, scale=scaling)
        return out.transpose(1, 2).contiguous(), None
    weights = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        weights = weights + attention_mask
    weights = fast_dropout(torch.softmax(weights, dim=-1), dropout)
    return torch.matmul(weights, value).transpose(1, 2).contiguous(), None


def _register() -> None:
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, eager_mask

    AttentionInterface.register(ATTENTION, attention)
    ALL_MASK_ATTENTION_FUNCTIONS.register(ATTENTION, eager_mask)


def use_fast_dropout(model: torch.nn.Module, device: torch.device) -> int:
    """On the CPU: every ``nn.Dropout`` of ``model`` becomes a :class:`FastDropout`, and a BERT-family model
    with attention dropout attends with :func:`attention`. Returns how many modules changed (0 on a GPU)."""
    if device.type != "cpu":
        return 0
    changed = 0
    for module in list(model.modules()):
        for name, child in list(module.named_children()):
            if type(child) is torch.nn.Dropout:
                setattr(module, name, FastDropout(child.p, child.inplace).train(child.training))
                changed += 1
    config = getattr(model, "config", None)
    if (getattr(config, "attention_probs_dropout_prob", 0) or 0) > 0 and \
            getattr(config, "_attn_implementation", None) in ("sdpa", "eager"):
        _register()
        config._attn_implementation = ATTENTION
    return changed

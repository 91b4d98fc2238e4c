"""CPU dropout (vocab_transfer/training/cpu_dropout.py): masks with the asked drop rate, dropout's scaling and
gradient, determinism under a seed, and a model that trains with it and evaluates as before."""

import json

import pytest
import torch
from transformers import XLMRobertaConfig, XLMRobertaForMaskedLM

from vocab_transfer.training.cpu_dropout import (
    ATTENTION,
    FastDropout,
    attention,
    fast_dropout,
    keep_mask,
    use_fast_dropout,
)


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_keep_mask_rate(p):
    torch.manual_seed(0)
    keep = keep_mask((1000, 1001), p)
    assert keep.dtype == torch.bool and keep.shape == (1000, 1001)
    n = keep.numel()
    sd = (p * (1 - p) / n) ** 0.5
    assert abs(1 - keep.float().mean().item() - p) < 6 * sd + 2**-16
    # no structure across the four 16-bit lanes of a 64-bit draw
    lanes = keep.flatten()[: n // 4 * 4].view(-1, 4).float().mean(0)
    assert torch.all((lanes - (1 - p)).abs() < 6 * (p * (1 - p) / (n // 4)) ** 0.5)


def test_dropout_scales_and_backward():
    torch.manual_seed(1)
    x = torch.randn(64, 33, requires_grad=True)
    state = torch.get_rng_state()
    y = fast_dropout(x, 0.25)
    kept = y != 0
    assert 0.6 < kept.float().mean() < 0.9
    assert torch.allclose(y[kept], x.detach()[kept] / 0.75)
    y.sum().backward()
    assert torch.allclose(x.grad, kept.float() / 0.75)
    torch.set_rng_state(state)
    assert torch.equal(fast_dropout(x, 0.25), y)  # a function of the generator's state
    assert fast_dropout(x, 0.25, training=False) is x and fast_dropout(x, 0.0) is x
    assert torch.equal(fast_dropout(x, 1.0), torch.zeros_like(x))


def test_module_matches_functional_and_eval_is_identity():
    m = FastDropout(0.3)
    assert isinstance(m, torch.nn.Dropout)
    x = torch.randn(8, 16)
    torch.manual_seed(2)
    a = m(x)
    torch.manual_seed(2)
    assert torch.equal(a, fast_dropout(x, 0.3))
    assert torch.equal(m.eval()(x), x)


def test_attention_drops_weights():
    torch.manual_seed(3)
    q, k, v = (torch.randn(2, 3, 5, 4) for _ in range(3))
    mask = torch.zeros(2, 1, 5, 5)
    mask[1, :, :, -2:] = torch.finfo(torch.float32).min
    module = torch.nn.Module()
    plain, _ = attention(module, q, k, v, mask)
    w = torch.softmax(q @ k.transpose(2, 3) * 0.5 + mask, -1)
    assert torch.allclose(plain, (w @ v).transpose(1, 2), atol=1e-6)
    torch.manual_seed(4)
    dropped, _ = attention(module, q, k, v, mask, dropout=0.2)
    torch.manual_seed(4)
    assert torch.allclose(dropped, (fast_dropout(w, 0.2) @ v).transpose(1, 2), atol=1e-6)


def _tiny_mlm() -> XLMRobertaForMaskedLM:
    torch.manual_seed(0)
    cfg = XLMRobertaConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                           intermediate_size=32, max_position_embeddings=20, pad_token_id=1)
    return XLMRobertaForMaskedLM(cfg)


def test_model_trains_with_it_and_evaluates_as_before(tmp_path):
    model = _tiny_mlm()
    ids = torch.randint(3, 50, (4, 12))
    mask = torch.ones_like(ids)
    mask[2, 8:] = 0
    model.eval()
    before = model(input_ids=ids, attention_mask=mask).logits
    keys = set(model.state_dict())
    # 3 per layer (attention, its output, the FFN), embeddings
    assert use_fast_dropout(model, torch.device("cpu")) == 2 * 3 + 1
    assert model.config._attn_implementation == ATTENTION
    assert not any(type(m) is torch.nn.Dropout for m in model.modules())
    assert set(model.state_dict()) == keys
    assert torch.allclose(model(input_ids=ids, attention_mask=mask).logits, before, atol=1e-5)
    model.train()
    torch.manual_seed(5)
    a = model(input_ids=ids, attention_mask=mask).logits
    torch.manual_seed(5)
    assert torch.equal(model(input_ids=ids, attention_mask=mask).logits, a)  # seeded: the same masks
    assert not torch.allclose(a, before, atol=1e-3)  # dropout acts
    a.sum().backward()
    assert all(p.grad is not None for p in model.parameters() if p.requires_grad and p.ndim > 1)
    model.save_pretrained(tmp_path)  # the implementation is the process's, not the saved model's
    assert ATTENTION not in (tmp_path / "config.json").read_text()
    json.loads((tmp_path / "config.json").read_text())


def test_gpu_models_keep_torch_dropout():
    model = _tiny_mlm()
    assert use_fast_dropout(model, torch.device("cuda")) == 0
    assert model.config._attn_implementation != ATTENTION
    assert any(type(m) is torch.nn.Dropout for m in model.modules())

"""MAD-X language adapters: identity at init, placement (MAD-X 2.0), parameter count, what the ``adapter``
LAPT variant trains, save/strip/reload, bit-identical resume, DDP, unsupported architectures."""

import copy
import json
import os
import subprocess
import sys

import pandas as pd
import pytest
import torch
from transformers import (
    AutoModelForMaskedLM,
    AutoModelForSequenceClassification,
    XLMRobertaConfig,
    XLMRobertaForMaskedLM,
)

from vocab_transfer.eval.mlm import pack_texts
from vocab_transfer.source_model import build_xlmr_mlm
from vocab_transfer.training.adapters import (
    AdapterConfig,
    InvertibleAdapter,
    adapter_parameter_names,
    add_language_adapter,
    load_language_adapter,
    save_language_adapter,
    strip_language_adapter,
)
from vocab_transfer.training.lapt import LaptConfig, LossModule, embedding_parameter_names, train

TINY = dict(hidden_size=16, num_layers=2, num_heads=2, intermediate_size=32, max_position_embeddings=32)


def tiny_model(sw_tokenizer, seed=0):
    return build_xlmr_mlm(sw_tokenizer, seed=seed, dropout=0.1, **TINY)


def config(**kw):
    base = dict(steps=8, batch_size=8, seq_len=32, lr=1e-2, eval_every=4, eval_sequences=8,
                checkpoint_every=4, seed=3, threads=1, variant="adapter")
    return LaptConfig.parse({**base, **kw})


def adapter_count(h: int, layers: int, r: int, invertible: bool) -> int:
    """Eq. 1 per layer: D (h·h/r + h/r) and U (h/r·h + h); NICE: F and G, each h/2 → h/4 → h/2."""
    return (layers * (2 * h * h // r + h // r + h)
            + invertible * 2 * (2 * (h // 2) * (h // 4) + h // 4 + h // 2))


@pytest.fixture(scope="module")
def blocks(swahili_verses, sw_tokenizer):
    return (pack_texts(swahili_verses[:600], sw_tokenizer, 32),
            pack_texts(swahili_verses[600:700], sw_tokenizer, 32))


@pytest.fixture(scope="module")
def trained(tmp_path_factory, sw_tokenizer, blocks):
    """(model before training with its adapter attached, model after an 8-step ``adapter`` run)."""
    model = tiny_model(sw_tokenizer)
    add_language_adapter(model, seed=3)  # as train() would: seed = cfg.seed
    before = copy.deepcopy(model)
    curve = train(model, sw_tokenizer, *blocks, config(), checkpoint_dir=tmp_path_factory.mktemp("ckpt"))
    assert curve["heldout_loss"].iloc[-1] < curve["heldout_loss"].iloc[0]
    return before, model


def test_zero_init_adapter_leaves_outputs_unchanged(sw_tokenizer, blocks):
    model = tiny_model(sw_tokenizer).eval()
    x = blocks[1][:4]
    ref = model(input_ids=x).logits
    state = torch.get_rng_state()
    add_language_adapter(model)
    assert torch.equal(torch.get_rng_state(), state)  # seeded from its own generator
    assert torch.allclose(model(input_ids=x).logits, ref, atol=0, rtol=0)
    with torch.autocast("cpu", dtype=torch.bfloat16):  # mixed precision: runs, fp32 gradients on the adapter
        model(input_ids=x).logits.float().sum().backward()
    grads = [p.grad for n, p in model.named_parameters() if n in adapter_parameter_names(model)]
    assert all(g is not None and g.dtype == torch.float32 and g.isfinite().all() for g in grads)


def test_invertible_adapter_inverse_is_exact():
    inv = InvertibleAdapter(16, AdapterConfig(), torch.Generator().manual_seed(0))
    with torch.no_grad():
        for p in inv.parameters():
            p.normal_(0, 0.5)
    x = torch.randn(3, 5, 16)
    y = inv(x)
    assert not torch.allclose(y, x) and torch.allclose(inv(y, inverse=True), x, atol=1e-5)
    assert torch.allclose(inv(inv(x, inverse=True)), x, atol=1e-5)


def test_placement_mad_x_2_and_parameter_count(sw_tokenizer):
    for skip, invertible in ((True, True), (False, True), (True, False)):
        model = tiny_model(sw_tokenizer)
        add_language_adapter(model, AdapterConfig(skip_last_layer=skip, invertible=invertible))
        names = adapter_parameter_names(model)
        layers = {int(n.split(".")[3]) for n in names if ".language_adapter." in n}
        assert layers == ({0} if skip else {0, 1})  # MAD-X 2.0: no adapter in the last layer
        assert any(n.startswith("roberta.invertible_adapter.") for n in names) == invertible
        params = dict(model.named_parameters())
        assert sum(params[n].numel() for n in names) == adapter_count(16, len(layers), 2, invertible)
    big = XLMRobertaConfig(vocab_size=8, hidden_size=768, num_hidden_layers=12, num_attention_heads=12)
    with torch.device("meta"):  # xlm-roberta-base dimensions, no memory
        model = XLMRobertaForMaskedLM(big)
    add_language_adapter(model)
    assert (sum(p.numel() for n, p in model.named_parameters() if n in adapter_parameter_names(model))
            == 6_796_800)
    assert adapter_count(768, 11, 2, False) == 6_500_736


def test_adapter_variant_trains_only_adapters_and_embeddings(sw_tokenizer, trained):
    before, model = trained
    adapters, emb = adapter_parameter_names(model), embedding_parameter_names(model)
    assert adapters and emb and not adapters & emb and config().stages() == [(8, "adapter")]
    old = dict(before.named_parameters())
    for n, p in model.named_parameters():
        # adapters and embeddings moved, nothing else
        assert torch.equal(p, old[n]) != (n in adapters | emb), n
        assert p.requires_grad == (n in adapters | emb), n


def test_adapter_only_keeps_the_source_embeddings(tmp_path, sw_tokenizer, blocks):
    """``train_embeddings: false`` (MAD-X language adapters on the source's own vocabulary, the source side of
    zero-shot transfer): the adapters train, every other weight (the embeddings too) stays the source's."""
    model = tiny_model(sw_tokenizer)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    train(model, sw_tokenizer, *blocks, config(steps=4, train_embeddings=False), checkpoint_dir=tmp_path)
    adapters = adapter_parameter_names(model)
    assert config(train_embeddings=False).stages() == [(8, "adapter_only")]
    assert all(torch.equal(p, before[n]) for n, p in model.named_parameters() if n not in adapters)
    assert not all(torch.equal(p, torch.zeros_like(p)) for n, p in model.named_parameters() if ".up." in n)
    with pytest.raises(ValueError, match="train_embeddings: false applies to variant 'adapter'"):
        LaptConfig.parse({"variant": "full", "train_embeddings": False})


def test_save_strip_reload_reproduces_the_trained_model(tmp_path, sw_tokenizer, blocks, trained):
    model = copy.deepcopy(trained[1]).eval()  # deepcopy keeps the patched forwards on the copy
    x = blocks[1][:4]
    logits, hidden = model(input_ids=x).logits, model.base_model(input_ids=x).last_hidden_state
    assert torch.equal(trained[1].eval()(input_ids=x).logits, logits)
    from vocab_transfer.training.lapt import save_model

    # LAPT's writer (final model, snapshots): no stripping
    save_model(model, sw_tokenizer, tmp_path / "saved")
    assert adapter_parameter_names(model) and torch.equal(model(input_ids=x).logits, logits)
    save_language_adapter(model, tmp_path)
    strip_language_adapter(model)
    plain = tiny_model(sw_tokenizer).state_dict().keys()
    assert not adapter_parameter_names(model) and model.state_dict().keys() == plain
    assert not torch.equal(model(input_ids=x).logits, logits)  # the adapter mattered
    model.save_pretrained(tmp_path)
    for name in ("model.safetensors", "language_adapter.safetensors", "language_adapter.json"):
        assert (tmp_path / "saved" / name).read_bytes() == (tmp_path / name).read_bytes(), name
    meta = json.loads((tmp_path / "language_adapter.json").read_text())
    assert meta["layers"] == [0] and meta["config"] == AdapterConfig().__dict__
    loaded, info = AutoModelForMaskedLM.from_pretrained(tmp_path, output_loading_info=True)
    assert not info["unexpected_keys"] and not info["missing_keys"]
    assert (load_language_adapter(loaded, tmp_path)
            and not load_language_adapter(tiny_model(sw_tokenizer), tmp_path / "x"))
    assert torch.equal(loaded.eval()(input_ids=x).logits, logits)
    task = AutoModelForSequenceClassification.from_pretrained(tmp_path, num_labels=3).eval()
    assert load_language_adapter(task, tmp_path)  # what fine-tuning does: the encoder as trained
    assert torch.equal(task.base_model(input_ids=x).last_hidden_state, hidden)


def test_adapter_resume_is_bit_identical(tmp_path, sw_tokenizer, blocks, trained):
    interrupted = tiny_model(sw_tokenizer)
    train(interrupted, sw_tokenizer, *blocks, config(), checkpoint_dir=tmp_path, stop_after=6)
    torch.randn(100)  # disturb the global RNG as a new process would
    resumed = tiny_model(sw_tokenizer, seed=99)  # the checkpoint, not the init, must decide the weights
    train(resumed, sw_tokenizer, *blocks, config(), checkpoint_dir=tmp_path)
    full = trained[1].state_dict()
    assert resumed.state_dict().keys() == full.keys()
    for name, a in resumed.state_dict().items():
        assert torch.equal(a, full[name]), name


def test_ddp_sees_every_trainable_parameter(tmp_path, sw_tokenizer, blocks):
    import torch.distributed as dist

    from vocab_transfer.training.lapt import set_trainable

    model = tiny_model(sw_tokenizer)
    add_language_adapter(model)
    set_trainable(model, "adapter")
    dist.init_process_group("gloo", init_method=f"file://{tmp_path}/store", rank=0, world_size=1)
    try:
        ddp = torch.nn.parallel.DistributedDataParallel(LossModule(model, "mlm"))
        labels = torch.where(
            torch.rand(blocks[0][:4].shape, generator=torch.Generator().manual_seed(0)) < 0.3,
            blocks[0][:4], -100)
        for _ in range(2):  # a parameter without a gradient would fail the second iteration
            ddp(blocks[0][:4], labels).backward()
    finally:
        dist.destroy_process_group()


def test_unsupported_architecture_and_bad_config(sw_tokenizer):
    from transformers import GPT2Config, GPT2LMHeadModel

    gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=50, n_positions=16, n_embd=16, n_layer=1, n_head=2))
    with pytest.raises(NotImplementedError, match="GPT2LMHeadModel.*'gpt2'"):
        add_language_adapter(gpt2)
    with pytest.raises(ValueError, match=r"adapter: unknown key.*'reduction'"):
        LaptConfig.parse({"variant": "adapter", "adapter": {"reduction": 2}})
    with pytest.raises(ValueError, match="non_linearity"):
        AdapterConfig(non_linearity="swish")
    model = tiny_model(sw_tokenizer)
    add_language_adapter(model)
    with pytest.raises(ValueError, match="already has"):
        add_language_adapter(model)


@pytest.mark.slow
def test_cli_adapter_variant_under_torchrun(tmp_path, sw_tokenizer, swahili_verses):
    """Two processes (gloo): the output folder holds a plain model, the tokenizer and language_adapter.*."""
    from test_lapt import cli, write_fixture

    model_dir = write_fixture(tmp_path, sw_tokenizer, swahili_verses)
    cmd = cli(tmp_path, model_dir, tmp_path / "out", 10, variant="adapter")
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    proc = subprocess.run([*torchrun, *cmd[1:]], env={**os.environ, "HF_HUB_OFFLINE": "1"},
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = tmp_path / "out"
    assert ({"model.safetensors", "tokenizer.json", "language_adapter.safetensors", "language_adapter.json"}
            <= {p.name for p in out.iterdir()})
    model, info = AutoModelForMaskedLM.from_pretrained(out, output_loading_info=True)
    assert not info["unexpected_keys"] and load_language_adapter(model, out)
    assert pd.read_parquet(tmp_path / "out.curve.parquet")["step"].iloc[-1] == 10

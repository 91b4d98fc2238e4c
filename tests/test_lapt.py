"""LAPT: resumable training (bit-identical after a kill or a signal), variants, CLI output."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import torch

from vocab_transfer.corpus import write_corpus
from vocab_transfer.lapt import (
    EXIT_RESUME,
    LaptConfig,
    embedding_layer_names,
    embedding_parameter_names,
    reinit_parameter_names,
    reinitialize,
    train,
)
from vocab_transfer.mlm import pack_texts
from vocab_transfer.source_model import build_xlmr_mlm

TINY = dict(hidden_size=16, num_layers=1, num_heads=2, intermediate_size=32, max_position_embeddings=32)


@pytest.fixture(scope="module")
def blocks(swahili_verses, sw_tokenizer):
    return pack_texts(swahili_verses[:600], sw_tokenizer, 32), pack_texts(swahili_verses[600:700], sw_tokenizer, 32)


def tiny_model(sw_tokenizer, seed=0):
    return build_xlmr_mlm(sw_tokenizer, seed=seed, dropout=0.1, **TINY)


def config(**kw):
    base = dict(steps=12, batch_size=8, seq_len=32, lr=1e-3, eval_every=4, eval_sequences=8, checkpoint_every=4,
                seed=3, threads=1)
    return LaptConfig.from_dict({**base, **kw})


def test_resume_is_bit_identical(tmp_path, sw_tokenizer, blocks):
    full = tiny_model(sw_tokenizer)
    curve_full = train(full, sw_tokenizer, *blocks, config(), checkpoint_dir=tmp_path / "a")
    interrupted = tiny_model(sw_tokenizer)
    train(interrupted, sw_tokenizer, *blocks, config(), checkpoint_dir=tmp_path / "b", stop_after=6)
    torch.randn(100)  # disturb the global RNG as a new process would
    resumed = tiny_model(sw_tokenizer, seed=99)  # the checkpoint, not the init, must decide the weights
    curve = train(resumed, sw_tokenizer, *blocks, config(), checkpoint_dir=tmp_path / "b")
    for (name, a), b in zip(full.state_dict().items(), resumed.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    pd.testing.assert_frame_equal(curve, curve_full)
    assert curve["step"].tolist() == [0, 4, 8, 12] and curve["heldout_loss"].iloc[-1] < curve["heldout_loss"].iloc[0]


def test_two_stage_trains_only_embeddings_first(tmp_path, sw_tokenizer, blocks):
    model = tiny_model(sw_tokenizer)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    cfg = config(variant="two_stage", embedding_stage_ratio=0.5, steps=8)
    assert cfg.stages() == [(4, "embeddings"), (8, "all")]
    train(model, sw_tokenizer, *blocks, cfg, checkpoint_dir=tmp_path / "c", stop_after=4)
    emb = embedding_parameter_names(model)
    assert emb and all(n.endswith(("word_embeddings.weight", "lm_head.bias", "lm_head.decoder.weight")) for n in emb)
    for n, p in model.named_parameters():
        assert torch.equal(p, before[n]) != (n in emb), n  # embeddings moved, the body did not
    curve = train(model, sw_tokenizer, *blocks, cfg, checkpoint_dir=tmp_path / "c")
    assert curve["stage"].tolist() == [0, 0, 1, 1, 1] and curve["step"].tolist() == [0, 4, 4, 8, 12]
    assert not torch.equal(model.roberta.encoder.layer[0].output.dense.weight,
                           before["roberta.encoder.layer.0.output.dense.weight"])


def pretrained_like(sw_tokenizer, tmp_path, seed=0):
    """A tiny model saved and loaded back (loaded weights carry transformers' "initialized" flag, which a plain
    _init_weights call respects), with every weight moved off its initializer's values (LayerNorm not 1/0)."""
    from transformers import AutoModelForMaskedLM

    model = tiny_model(sw_tokenizer, seed=seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.5 * torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())))
    model.save_pretrained(tmp_path / "pretrained")
    return AutoModelForMaskedLM.from_pretrained(tmp_path / "pretrained")


EMBEDDING_BLOCK = {"roberta.embeddings.position_embeddings.weight", "roberta.embeddings.token_type_embeddings.weight",
                   "roberta.embeddings.LayerNorm.weight", "roberta.embeddings.LayerNorm.bias"}


def test_reinitialize_embedding_layers_and_all(tmp_path, sw_tokenizer):
    """vocab-swap "Embed Layers" re-initializes position / token-type embeddings and the embedding LayerNorm,
    "Scratch" every weight but the word embeddings and output bias; with the model's initializer, seeded."""
    model = pretrained_like(sw_tokenizer, tmp_path)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    assert reinit_parameter_names(model, "embedding_layers") == EMBEDDING_BLOCK
    assert embedding_layer_names(model) == EMBEDDING_BLOCK | embedding_parameter_names(model)
    assert sorted(reinitialize(model, "embedding_layers", seed=5)) == sorted(EMBEDDING_BLOCK)
    changed = {n for n, p in model.named_parameters() if not torch.equal(p, before[n])}
    assert changed == EMBEDDING_BLOCK  # the word embeddings, the body and the LM head bit-identical
    emb = model.roberta.embeddings
    assert torch.equal(emb.LayerNorm.weight, torch.ones(16)) and torch.equal(emb.LayerNorm.bias, torch.zeros(16))
    pos = emb.position_embeddings.weight
    assert torch.equal(pos[model.config.pad_token_id], torch.zeros(16))  # padding_idx row, as _init_weights does
    assert abs(pos.std().item() - model.config.initializer_range) < 0.005
    torch.randn(100)  # the global RNG does not matter, the seed does
    again = pretrained_like(sw_tokenizer, tmp_path)
    reinitialize(again, "embedding_layers", seed=5)
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), again.state_dict().values(), strict=True))
    other = pretrained_like(sw_tokenizer, tmp_path)
    reinitialize(other, "embedding_layers", seed=6)
    assert not torch.equal(other.roberta.embeddings.position_embeddings.weight, pos)
    scratch = pretrained_like(sw_tokenizer, tmp_path)
    reinitialize(scratch, "all", seed=5)
    kept = {n for n, p in scratch.named_parameters() if torch.equal(p, before[n])}
    assert kept == embedding_parameter_names(scratch) and len(kept) == 2  # word embeddings (tied), output bias
    assert torch.equal(scratch.get_input_embeddings().weight, model.get_input_embeddings().weight)
    assert reinitialize(scratch, "none", seed=5) == []


def test_embedding_layers_variant_trains_the_block_and_resumes_bit_identically(tmp_path, sw_tokenizer, blocks):
    """variant embedding_layers (vocab-swap "Embed Grad"): the embedding block and output bias move, the body does
    not; with reinit all ("Scratch") a run killed mid-way resumes bit-identically (the re-initialized weights come
    from its checkpoint, not from a second re-initialization)."""
    cfg = config(variant="embedding_layers", reinit="embedding_layers", steps=4)
    assert cfg.stages() == [(4, "embedding_layers")]
    model = pretrained_like(sw_tokenizer, tmp_path)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    train(model, sw_tokenizer, *blocks, cfg, checkpoint_dir=tmp_path / "a")
    block = embedding_layer_names(model)
    for n, p in model.named_parameters():
        assert torch.equal(p, before[n]) != (n in block), n
    ref = pretrained_like(sw_tokenizer, tmp_path)
    reinitialize(ref, "embedding_layers", seed=cfg.seed * 1_000_003 + 7)  # what train() re-initialized at step 0
    assert not torch.equal(ref.roberta.embeddings.LayerNorm.weight, before["roberta.embeddings.LayerNorm.weight"])
    scratch = config(reinit="all", steps=8)
    full = pretrained_like(sw_tokenizer, tmp_path)
    curve_full = train(full, sw_tokenizer, *blocks, scratch, checkpoint_dir=tmp_path / "b")
    plain = train(pretrained_like(sw_tokenizer, tmp_path), sw_tokenizer, *blocks, config(steps=1),
                  checkpoint_dir=tmp_path / "c")
    assert curve_full["heldout_loss"].iloc[0] != plain["heldout_loss"].iloc[0]  # step 0 already re-initialized
    cut = pretrained_like(sw_tokenizer, tmp_path)
    train(cut, sw_tokenizer, *blocks, scratch, checkpoint_dir=tmp_path / "d", stop_after=4)
    torch.randn(10)
    resumed = pretrained_like(sw_tokenizer, tmp_path)  # pretrained weights again: the checkpoint must win
    curve = train(resumed, sw_tokenizer, *blocks, scratch, checkpoint_dir=tmp_path / "d")
    for (name, a), b in zip(full.state_dict().items(), resumed.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    pd.testing.assert_frame_equal(curve, curve_full)


def test_reinit_needs_an_embedding_block():
    from transformers import GPT2Config, GPT2LMHeadModel

    gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=50, n_embd=16, n_layer=1, n_head=2, n_positions=32))
    with pytest.raises(ValueError, match="GPT2LMHeadModel has no embedding block .* embedding_layers variant and "
                                         "reinit are for BERT-style encoders"):
        reinitialize(gpt2, "embedding_layers", seed=0)
    assert "transformer.h.0.mlp.c_fc.weight" in reinit_parameter_names(gpt2, "all")
    with pytest.raises(ValueError, match=r"reinit must be one of \['none', 'embedding_layers', 'all'\]"):
        LaptConfig.from_dict({"reinit": "body"})


def test_source_correlation_curve(tmp_path, sw_tokenizer, blocks):
    """vocab-swap Figure 2: ρ̄ between the anchored rows and their source rows, 1 at step 0 for kept rows,
    near 0 for permuted rows, rising for those as the embeddings are relearned."""
    model = tiny_model(sw_tokenizer)
    W = model.get_input_embeddings().weight.detach().clone()
    ids = torch.arange(len(W))
    curve = train(model, sw_tokenizer, *blocks, config(steps=4), checkpoint_dir=tmp_path / "a", anchors=(ids, W))
    assert curve["source_correlation"].iloc[0] == pytest.approx(1.0)
    assert 0.5 < curve["source_correlation"].iloc[-1] < 1.0  # trained, so moved away from the start
    perm = torch.randperm(len(W), generator=torch.Generator().manual_seed(0))
    model = tiny_model(sw_tokenizer)
    with torch.no_grad():
        model.get_input_embeddings().weight.copy_(W[perm])
    curve = train(model, sw_tokenizer, *blocks, config(steps=4), checkpoint_dir=tmp_path / "b", anchors=(ids, W))
    assert abs(curve["source_correlation"].iloc[0]) < 0.1


def test_bad_config_key_is_named():
    with pytest.raises(ValueError, match="unknown key.*'stpes'"):
        LaptConfig.from_dict({"stpes": 3})
    with pytest.raises(ValueError, match="variant must be one of"):
        LaptConfig.from_dict({"variant": "two-stage"})


def write_fixture(tmp_path, sw_tokenizer, swahili_verses):
    model_dir = tmp_path / "model"
    tiny_model(sw_tokenizer).save_pretrained(model_dir)
    sw_tokenizer.save_pretrained(model_dir)
    for name, texts in (("train", swahili_verses[:800]), ("heldout", swahili_verses[800:900])):
        write_corpus(pd.DataFrame({"doc_id": [str(i) for i in range(len(texts))], "text": texts}),
                     tmp_path / f"{name}.parquet")
    return model_dir


def cli(tmp_path, model_dir, out, steps, **kw):
    cfg = config(steps=steps, checkpoint_every=2, eval_every=10, **kw).__dict__
    return [sys.executable, "-m", "vocab_transfer.lapt", "--model", str(model_dir), "--tokenizer", str(model_dir),
            "--train", str(tmp_path / "train.parquet"), "--heldout", str(tmp_path / "heldout.parquet"),
            "--output", str(out), "--config", __import__("json").dumps(cfg)]


@pytest.mark.slow
def test_cli_survives_kill_and_signal(tmp_path, sw_tokenizer, swahili_verses):
    model_dir = write_fixture(tmp_path, sw_tokenizer, swahili_verses)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    subprocess.run(cli(tmp_path, model_dir, tmp_path / "ref", 40), check=True, env=env, capture_output=True)

    # SIGKILL once a checkpoint exists, then rerun: same final weights and curve
    proc = subprocess.Popen(cli(tmp_path, model_dir, tmp_path / "killed", 40), env=env, stderr=subprocess.PIPE)
    ckpts = tmp_path / "killed.checkpoints"
    while proc.poll() is None and not any(ckpts.glob("step-*/state.json")):
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    assert any(ckpts.glob("step-*/state.json")) and not (tmp_path / "killed").exists()
    subprocess.run(cli(tmp_path, model_dir, tmp_path / "killed", 40), check=True, env=env, capture_output=True)

    # SIGUSR1 (SLURM's --signal warning): checkpoint, exit 75, rerun resumes
    proc = subprocess.Popen(cli(tmp_path, model_dir, tmp_path / "signalled", 40), env=env, stderr=subprocess.PIPE)
    while proc.poll() is None and not any((tmp_path / "signalled.checkpoints").glob("step-*/state.json")):
        time.sleep(0.05)
    proc.send_signal(signal.SIGUSR1)
    err = proc.communicate()[1].decode()
    assert proc.returncode == EXIT_RESUME, err[-2000:]
    assert "rerun to resume" in err and not (tmp_path / "signalled").exists()
    subprocess.run(cli(tmp_path, model_dir, tmp_path / "signalled", 40), check=True, env=env, capture_output=True)

    from safetensors.torch import load_file
    from transformers import AutoModelForMaskedLM

    ref = load_file(tmp_path / "ref" / "model.safetensors")
    for name in ("killed", "signalled"):
        other = load_file(tmp_path / name / "model.safetensors")
        assert all(torch.equal(ref[k], other[k]) for k in ref), name
        pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / f"{name}.curve.parquet"),
                                      pd.read_parquet(tmp_path / "ref.curve.parquet"))
        assert not (tmp_path / f"{name}.checkpoints").exists()  # cleaned up after the final save
    assert AutoModelForMaskedLM.from_pretrained(tmp_path / "ref").config.vocab_size == len(sw_tokenizer)
    assert Path(tmp_path / "ref" / "tokenizer.json").is_file()


def test_clm_objective_trains_a_decoder(tmp_path, sw_tokenizer, blocks):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(sw_tokenizer), n_positions=32, n_embd=16, n_layer=1, n_head=2))
    curve = train(model, sw_tokenizer, *blocks, config(objective="clm", steps=8), checkpoint_dir=tmp_path / "d")
    assert curve["heldout_loss"].iloc[-1] < curve["heldout_loss"].iloc[0]


@pytest.mark.slow
def test_torchrun_ddp_on_cpu(tmp_path, sw_tokenizer, swahili_verses):
    """Two processes (gloo) through torchrun: one model written, loss falls, batch split across ranks."""
    model_dir = write_fixture(tmp_path, sw_tokenizer, swahili_verses)
    cmd = cli(tmp_path, model_dir, tmp_path / "ddp", 10)
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    proc = subprocess.run([*torchrun, *cmd[1:]], env={**os.environ, "HF_HUB_OFFLINE": "1"}, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    curve = pd.read_parquet(tmp_path / "ddp.curve.parquet")
    assert curve["heldout_loss"].iloc[-1] < curve["heldout_loss"].iloc[0]
    assert (tmp_path / "ddp" / "model.safetensors").is_file() and not (tmp_path / "ddp.checkpoints").exists()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (CI has none)")
def test_cuda_resume_is_bit_identical(tmp_path):
    """On a GPU (bf16 autocast, fused AdamW, pinned non-blocking copies): an interrupted and resumed run ends
    bit-identical to an uninterrupted one, for one- and two-stage runs. Ran on an H100 (2026-11-22)."""
    from transformers import XLMRobertaConfig, XLMRobertaForMaskedLM

    class Tok:
        mask_token_id, all_special_ids, pad_token_id = 499, [0, 1, 2, 3, 499], 1

        def __len__(self):
            return 500

    def model():
        torch.manual_seed(0)
        return XLMRobertaForMaskedLM(XLMRobertaConfig(vocab_size=500, hidden_size=64, num_hidden_layers=2,
                                                      num_attention_heads=2, intermediate_size=128,
                                                      max_position_embeddings=40, pad_token_id=1))

    blocks = torch.randint(4, 499, (256, 32), generator=torch.Generator().manual_seed(0))
    for variant in ("full", "two_stage"):
        cfg = config(variant=variant, batch_size=16)
        m1, m2 = model(), model()
        c1 = train(m1, Tok(), blocks, blocks[:8], cfg, checkpoint_dir=tmp_path / f"{variant}-a")
        train(m2, Tok(), blocks, blocks[:8], cfg, checkpoint_dir=tmp_path / f"{variant}-b", stop_after=6)
        m3 = model()
        c3 = train(m3, Tok(), blocks, blocks[:8], cfg, checkpoint_dir=tmp_path / f"{variant}-b")
        assert next(m1.parameters()).is_cuda
        for (name, a), b in zip(m1.state_dict().items(), m3.state_dict().values(), strict=True):
            assert torch.equal(a, b), (variant, name)
        pd.testing.assert_frame_equal(c1, c3)

"""LAPT options for decoder LLMs on a tiny Llama (untied head): pure bf16, document packing, embeddings first,
FSDP."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from vocab_transfer.data.shards import Blocks, Shard, _bisect_right, open_blocks, write_shard
from vocab_transfer.io import ArrayFile
from vocab_transfer.training.lapt import (
    LaptConfig,
    LossModule,
    embedding_parameter_names,
    make_batch,
    save_model,
    train,
)


def tiny_llama(vocab_size: int, seed: int = 0, attn: str = "sdpa", layers: int = 2):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    return LlamaForCausalLM(LlamaConfig(
        vocab_size=vocab_size, hidden_size=16, intermediate_size=32, num_hidden_layers=layers,
        num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=64, tie_word_embeddings=False,
        bos_token_id=0, eos_token_id=2, pad_token_id=1, attn_implementation=attn))


@pytest.fixture(scope="module")
def shards(tmp_path_factory, sw_tokenizer, swahili_verses):
    """Training and held-out blocks of 32 tokens read from token shards (documents: verses, ~25 tokens
    each)."""
    root = tmp_path_factory.mktemp("decoder_shards")
    sw_tokenizer.save_pretrained(root / "tok")
    for name, texts in (("train", swahili_verses[:400]), ("heldout", swahili_verses[400:480])):
        write_shard(texts, sw_tokenizer, root / name, tokenizer_dir=root / "tok")
    return tuple(open_blocks(root / name, sw_tokenizer, 32, tokenizer_dir=root / "tok")
                 for name in ("train", "heldout"))


def config(**kw):
    base = dict(objective="clm", steps=8, batch_size=4, seq_len=32, lr=3e-3, eval_every=4, eval_sequences=8,
                checkpoint_every=4, seed=3, threads=1)
    return LaptConfig.parse({**base, **kw})


def fake_shard(tmp_path, lengths: list[int]) -> Shard:
    tokens = np.arange(3, 3 + sum(lengths), dtype="<u2")
    tokens.tofile(tmp_path / "tokens.bin")
    np.save(tmp_path / "index.npy", np.concatenate([[0], np.cumsum(lengths)]).astype("<i8"))
    return Shard(tmp_path, {}, ArrayFile(tmp_path / "tokens.bin", tokens.dtype),
                 ArrayFile.npy(tmp_path / "index.npy"))


def test_block_positions_restart_at_each_document(tmp_path):
    """Known answer: documents of 3, 5, 2 and 7 tokens in blocks <s> + 4 tokens + </s>; a document that begins
    with the block's body shares position 0 with <s>."""
    blocks = Blocks([fake_shard(tmp_path, [3, 5, 2, 7])], 6, bos_id=0, eos_id=2)
    assert blocks[[0]].tolist() == [[0, 3, 4, 5, 6, 2]]
    assert blocks.positions(torch.arange(4)).tolist() == [[0, 1, 2, 3, 0, 1], [0, 1, 2, 3, 4, 5],
                                                          [0, 1, 2, 0, 1, 2], [0, 1, 2, 3, 4, 5]]
    assert torch.equal(blocks.head(2).positions([1]), blocks.positions([1])) and len(blocks.head(2)) == 2
    index = ArrayFile.npy(tmp_path / "index.npy")
    values = index.read(0, len(index))
    for x in range(-1, 19):  # the chunked binary search, with chunks smaller than the index
        assert _bisect_right(index, x, chunk=2) == np.searchsorted(values, x, side="right"), x


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_packed_block_loss_is_the_sum_of_its_documents_losses(shards, sw_tokenizer, attn):
    """With packing: documents, a block's summed next-token loss equals the summed losses of its documents run
    one by one (positions from 0, no context from the previous document); with packing: stream it does not."""
    model = tiny_llama(len(sw_tokenizer), attn=attn).eval()
    blocks = shards[0]
    rows = torch.tensor([i for i in range(20) if (blocks.positions([i])[0, 1:] == 0).sum() >= 2][:3])
    assert len(rows) == 3  # blocks with at least three documents
    inputs, labels, position_ids = make_batch(blocks, rows, config(packing="documents"), sw_tokenizer, 1, 0)
    with torch.no_grad():
        loss_fn = LossModule(model, "clm")
        n = int((labels[:, 1:] != -100).sum())
        packed = float(loss_fn(inputs, labels, None, position_ids)) * n
        separate, m = 0.0, 0
        for ids, pos in zip(inputs, position_ids, strict=True):
            starts = (pos == 0).nonzero().squeeze(1).tolist() + [len(pos)]
            for a, b in zip(starts[:-1], starts[1:], strict=True):
                if b - a > 1:
                    doc = ids[a:b].unsqueeze(0)
                    separate += float(model(input_ids=doc, labels=doc).loss) * (b - a - 1)
                    m += b - a - 1
        stream = float(loss_fn(inputs, inputs.clone())) * (inputs.numel() - len(inputs))
    assert n == m
    assert packed == pytest.approx(separate, rel=1e-5)
    assert abs(stream - separate) > 1e-3 * abs(separate)  # attending across documents changes the loss


def test_document_packing_trains_and_resumes(tmp_path, shards, sw_tokenizer):
    cfg = config(packing="documents")
    full = tiny_llama(len(sw_tokenizer))
    curve = train(full, sw_tokenizer, *shards, cfg, checkpoint_dir=tmp_path / "a")
    resumed = tiny_llama(len(sw_tokenizer))
    train(resumed, sw_tokenizer, *shards, cfg, checkpoint_dir=tmp_path / "b", stop_after=4)
    resumed = tiny_llama(len(sw_tokenizer), seed=9)
    pd.testing.assert_frame_equal(train(resumed, sw_tokenizer, *shards, cfg, checkpoint_dir=tmp_path / "b"),
                                  curve)
    assert curve["heldout_loss"].iloc[-1] < curve["heldout_loss"].iloc[0]
    for (name, a), b in zip(full.state_dict().items(), resumed.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    with pytest.raises(ValueError, match="needs blocks read from token shards"):
        train(tiny_llama(len(sw_tokenizer)), sw_tokenizer, shards[0][:16], shards[1], cfg,
              checkpoint_dir=tmp_path / "c")


def test_document_packing_refuses_a_model_that_attends_across_documents(tmp_path, shards, sw_tokenizer,
                                                                        monkeypatch):
    """A model that ignores restarting position ids (here: transformers' packed-sequence detection switched
    off) is named before training starts."""
    import transformers.masking_utils as masking

    monkeypatch.setattr(masking, "find_packed_sequence_indices", lambda position_ids: None)
    with pytest.raises(ValueError, match="LlamaForCausalLM .* attends across documents"):
        train(tiny_llama(len(sw_tokenizer)), sw_tokenizer, *shards, config(packing="documents"),
              checkpoint_dir=tmp_path / "a")


def test_pure_bf16_trains_bf16_weights_and_resumes_bit_identically(tmp_path, shards, sw_tokenizer):
    """precision: bf16_pure keeps weights, gradients and AdamW states in bf16 (no autocast), resumes
    bit-identically from its checkpoints and saves a bf16 model; mixed bf16 keeps fp32 weights even for a bf16
    checkpoint."""
    from safetensors import safe_open

    cfg = config(precision="bf16_pure")
    full = tiny_llama(len(sw_tokenizer))
    curve = train(full, sw_tokenizer, *shards, cfg, checkpoint_dir=tmp_path / "a")
    assert {p.dtype for p in full.parameters()} == {torch.bfloat16}
    assert curve["heldout_loss"].iloc[-1] < curve["heldout_loss"].iloc[0] - 0.1
    cut = tiny_llama(len(sw_tokenizer))
    train(cut, sw_tokenizer, *shards, cfg, checkpoint_dir=tmp_path / "b", stop_after=4)
    states = torch.load(next((tmp_path / "b").glob("step-*/optimizer.pt")),
                        weights_only=True)["optimizer"]["state"]
    assert {s["exp_avg"].dtype for s in states.values()} == {torch.bfloat16}
    resumed = tiny_llama(len(sw_tokenizer), seed=9)
    pd.testing.assert_frame_equal(train(resumed, sw_tokenizer, *shards, cfg, checkpoint_dir=tmp_path / "b"),
                                  curve)
    for (name, a), b in zip(full.state_dict().items(), resumed.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    save_model(full, sw_tokenizer, tmp_path / "out")
    with safe_open(tmp_path / "out" / "model.safetensors", "pt") as f:
        assert {f.get_tensor(k).dtype for k in f.keys()} == {torch.bfloat16}
    mixed = tiny_llama(len(sw_tokenizer)).to(torch.bfloat16)  # as a hub checkpoint stored in bf16 loads
    train(mixed, sw_tokenizer, *shards, config(precision="bf16", steps=2), checkpoint_dir=tmp_path / "c")
    assert {p.dtype for p in mixed.parameters()} == {torch.float32}


def test_two_stage_decoder_trains_embeddings_and_head_first_and_resumes_across_the_boundary(tmp_path, shards,
                                                                                             sw_tokenizer):
    """variant two_stage on a decoder with an untied head: in the first stage only the input embeddings and
    the LM head move; then every weight trains; a run stopped at the stage boundary and one stopped inside the
    second stage resume to the uninterrupted run's weights and curve."""
    cfg = config(variant="two_stage", embedding_stage_ratio=0.5, steps=8)  # 4 embedding steps, then 8
    model = tiny_llama(len(sw_tokenizer))
    assert embedding_parameter_names(model) == {"model.embed_tokens.weight", "lm_head.weight"}
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    train(model, sw_tokenizer, *shards, cfg, checkpoint_dir=tmp_path / "a", stop_after=4)
    for n, p in model.named_parameters():
        assert torch.equal(p, before[n]) != (n in {"model.embed_tokens.weight", "lm_head.weight"}), n
    full = tiny_llama(len(sw_tokenizer))
    curve = train(full, sw_tokenizer, *shards, cfg, checkpoint_dir=tmp_path / "full")
    assert curve["stage"].tolist() == [0, 0, 1, 1, 1]
    assert all(not torch.equal(p, before[n]) for n, p in full.named_parameters())
    for stop in (4, 6):
        cut = tiny_llama(len(sw_tokenizer))
        train(cut, sw_tokenizer, *shards, cfg, checkpoint_dir=tmp_path / f"cut{stop}", stop_after=stop)
        resumed = tiny_llama(len(sw_tokenizer), seed=9)
        pd.testing.assert_frame_equal(train(resumed, sw_tokenizer, *shards, cfg,
                                            checkpoint_dir=tmp_path / f"cut{stop}"),
                                      curve)
        for (name, a), b in zip(full.state_dict().items(), resumed.state_dict().values(), strict=True):
            assert torch.equal(a, b), (stop, name)


@pytest.fixture(scope="module")
def llama_fixture(tmp_path_factory, sw_tokenizer, swahili_verses):
    root = tmp_path_factory.mktemp("llama_cli")
    tiny_llama(len(sw_tokenizer)).save_pretrained(root / "model")
    sw_tokenizer.save_pretrained(root / "model")
    for name, texts in (("train", swahili_verses[:400]), ("heldout", swahili_verses[400:480])):
        write_shard(texts, sw_tokenizer, root / name, tokenizer_dir=root / "model")
    return root


def lapt_cli(root, out, launcher, **kw):
    cfg = config(steps=40, checkpoint_every=2, eval_every=20, **kw).model_dump(mode="json")
    return [*launcher, "-m", "vocab_transfer.training.lapt", "--model", str(root / "model"),
            "--tokenizer", str(root / "model"), "--train", str(root / "train"), "--heldout",
            str(root / "heldout"), "--output", str(out), "--config", json.dumps(cfg)]


def descendants(pid: int) -> list[int]:
    """The processes started by ``pid`` and by them (from /proc)."""
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        children = parents.get(todo.pop(), [])
        out, todo = out + children, todo + children
    return out


# as DDP's (tests/test_lapt.py): gradients averaged over shards, not summed in one process
FSDP_TOLERANCE = 1e-4


@pytest.mark.slow
def test_fsdp_on_two_cpu_processes_trains_as_one_process_and_resumes(tmp_path, llama_fixture):
    """distributed: fsdp on two processes (gloo, FSDP2 fully_shard per decoder layer, gradient checkpointing,
    document packing) trains the model one process trains on the same global batch in two micro batches,
    within FSDP_TOLERANCE; its checkpoints hold the full state (model.pt loads into the unsharded model), a
    run killed after a checkpoint resumes to the uninterrupted run's weights, and the output is a plain
    save_pretrained folder."""
    from safetensors.torch import load_file

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    kw = dict(packing="documents", gradient_checkpointing=True)
    one = subprocess.run(lapt_cli(llama_fixture, tmp_path / "one", [sys.executable],
                                  micro_batch_size=2, **kw),
                         env=env, capture_output=True, text=True)
    assert one.returncode == 0, one.stderr[-3000:]
    fsdp = lapt_cli(llama_fixture, tmp_path / "fsdp", torchrun, distributed="fsdp", **kw)
    proc = subprocess.run(fsdp, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "FSDP: 2 layers sharded over 2 processes" in proc.stderr
    a, b = (pd.read_parquet(tmp_path / f"{n}.curve.parquet") for n in ("one", "fsdp"))
    assert list(a["step"]) == list(b["step"]) == [0, 20, 40]
    torch.testing.assert_close(torch.tensor(b["heldout_loss"].to_numpy()),
                               torch.tensor(a["heldout_loss"].to_numpy()),
                               rtol=FSDP_TOLERANCE, atol=FSDP_TOLERANCE)
    wa, wb = (load_file(tmp_path / "one" / "model.safetensors"),
              load_file(tmp_path / "fsdp" / "model.safetensors"))
    assert set(wa) == set(wb)
    for k in wa:
        torch.testing.assert_close(wb[k], wa[k], rtol=FSDP_TOLERANCE, atol=FSDP_TOLERANCE, msg=k)

    killed = lapt_cli(llama_fixture, tmp_path / "killed", torchrun, distributed="fsdp", **kw)
    run = subprocess.Popen(killed, env=env, stderr=subprocess.DEVNULL)
    ckpts = tmp_path / "killed.checkpoints"
    while run.poll() is None and not any(ckpts.glob("step-*/state.json")):
        time.sleep(0.05)
    for pid in [run.pid, *descendants(run.pid)]:  # torchrun's workers run in sessions of their own
        os.kill(pid, signal.SIGKILL)
    run.wait()
    assert not (tmp_path / "killed").exists()  # killed mid-run
    first = sorted(ckpts.glob("step-*/model.pt"))[0]
    tiny_llama(len(torch.load(first)["lm_head.weight"])).load_state_dict(torch.load(first))  # the full state
    again = subprocess.run(killed, env=env, capture_output=True, text=True)
    assert again.returncode == 0 and "resuming from" in again.stderr, again.stderr[-3000:]
    wk = load_file(tmp_path / "killed" / "model.safetensors")
    for k in wb:
        torch.testing.assert_close(wk[k], wb[k], rtol=0, atol=0, msg=k)

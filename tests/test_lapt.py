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

from vocab_transfer.data.shards import write_shard
from vocab_transfer.eval.mlm import pack_texts
from vocab_transfer.source_model import build_xlmr_mlm
from vocab_transfer.training.lapt import (
    LaptConfig,
    embedding_layer_names,
    embedding_parameter_names,
    reinit_parameter_names,
    reinitialize,
    train,
)
from vocab_transfer.training.runtime import EXIT_RESUME

TINY = dict(hidden_size=16, num_layers=1, num_heads=2, intermediate_size=32, max_position_embeddings=32)


@pytest.fixture(scope="module")
def blocks(swahili_verses, sw_tokenizer):
    return (pack_texts(swahili_verses[:600], sw_tokenizer, 32),
            pack_texts(swahili_verses[600:700], sw_tokenizer, 32))


def tiny_model(sw_tokenizer, seed=0):
    return build_xlmr_mlm(sw_tokenizer, seed=seed, dropout=0.1, **TINY)


def config(**kw):
    base = dict(steps=12, batch_size=8, seq_len=32, lr=1e-3, eval_every=4, eval_sequences=8,
                checkpoint_every=4, seed=3, threads=1)
    return LaptConfig.parse({**base, **kw})


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
    assert (curve["step"].tolist() == [0, 4, 8, 12]
            and curve["heldout_loss"].iloc[-1] < curve["heldout_loss"].iloc[0])


def test_a_paced_run_lasts_its_minimum_trains_the_same_tensors_and_resumes_with_another_pace(tmp_path,
                                                                                             sw_tokenizer,
                                                                                             blocks):
    """min_step_seconds pauses after each faster step: 12 steps of at least 0.1 s last at least 1.2 s, the
    weights and the curve are those of the unpaced run, and a run resumed with another pace (a rehearsal's
    reference) is accepted."""
    fast = tiny_model(sw_tokenizer)
    curve_fast = train(fast, sw_tokenizer, *blocks, config(), checkpoint_dir=tmp_path / "a")
    paced = tiny_model(sw_tokenizer)
    start = time.monotonic()
    train(paced, sw_tokenizer, *blocks, config(min_step_seconds=0.1), checkpoint_dir=tmp_path / "b",
          stop_after=6)
    assert time.monotonic() - start >= 0.6
    curve = train(paced, sw_tokenizer, *blocks, config(min_step_seconds=0), checkpoint_dir=tmp_path / "b")
    for (name, a), b in zip(fast.state_dict().items(), paced.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    pd.testing.assert_frame_equal(curve, curve_fast)


def test_training_from_a_shard_equals_training_from_packed_tensors(tmp_path, sw_tokenizer, swahili_verses,
                                                                   blocks):
    """LAPT reads blocks on demand from a token shard; the run is bit-identical to one on the packed tensor,
    the frequent tokens are counted chunk by chunk from the shard, and a resumed shard run ends the same."""
    from vocab_transfer.data.shards import open_blocks
    from vocab_transfer.training.lapt import frequent_tokens

    sw_tokenizer.save_pretrained(tmp_path / "tok")
    write_shard(swahili_verses[:600], sw_tokenizer, tmp_path / "train", tokenizer_dir=tmp_path / "tok")
    lazy = open_blocks(tmp_path / "train", sw_tokenizer, 32, tokenizer_dir=tmp_path / "tok")
    cfg = config(token_accuracy_top=20)
    ref, on_shard, resumed = (tiny_model(sw_tokenizer) for _ in range(3))
    curve_ref = train(ref, sw_tokenizer, blocks[0], blocks[1], cfg, checkpoint_dir=tmp_path / "a")
    curve = train(on_shard, sw_tokenizer, lazy, blocks[1], cfg, checkpoint_dir=tmp_path / "b")
    train(resumed, sw_tokenizer, lazy, blocks[1], cfg, checkpoint_dir=tmp_path / "c", stop_after=5)
    train(resumed, sw_tokenizer, lazy, blocks[1], cfg, checkpoint_dir=tmp_path / "c")
    pd.testing.assert_frame_equal(curve, curve_ref)
    for (name, a), b, c in zip(ref.state_dict().items(), on_shard.state_dict().values(),
                               resumed.state_dict().values(), strict=True):
        assert torch.equal(a, b) and torch.equal(a, c), name
    for x, y in zip(frequent_tokens(lazy, 600, sw_tokenizer.all_special_ids, 50),
                    frequent_tokens(blocks[0], 600, sw_tokenizer.all_special_ids, 50), strict=True):
        assert torch.equal(x, y)


def test_ranks_read_disjoint_blocks_within_an_epoch():
    """Under DDP each rank takes its slice of a step's rows: over an epoch no block is read twice."""
    from vocab_transfer.training.lapt import batch_rows

    n, size, world = 96, 16, 4
    seen = [batch_rows(step, size, n, seed=3)[r * 4:(r + 1) * 4] for step in range(1, n // size + 1)
            for r in range(world)]
    flat = torch.cat(seen)
    assert len(flat) == n and len(set(flat.tolist())) == n
    # a function of the step
    assert torch.equal(batch_rows(7, size, n, seed=3), batch_rows(7, size, n, seed=3))


def test_two_stage_trains_only_embeddings_first(tmp_path, sw_tokenizer, blocks):
    model = tiny_model(sw_tokenizer)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    cfg = config(variant="two_stage", embedding_stage_ratio=0.5, steps=8)
    assert cfg.stages() == [(4, "embeddings"), (8, "all")]
    train(model, sw_tokenizer, *blocks, cfg, checkpoint_dir=tmp_path / "c", stop_after=4)
    emb = embedding_parameter_names(model)
    assert emb and all(n.endswith(("word_embeddings.weight", "lm_head.bias", "lm_head.decoder.weight"))
                       for n in emb)
    for n, p in model.named_parameters():
        assert torch.equal(p, before[n]) != (n in emb), n  # embeddings moved, the body did not
    curve = train(model, sw_tokenizer, *blocks, cfg, checkpoint_dir=tmp_path / "c")
    assert curve["stage"].tolist() == [0, 0, 1, 1, 1] and curve["step"].tolist() == [0, 4, 4, 8, 12]
    assert not torch.equal(model.roberta.encoder.layer[0].output.dense.weight,
                           before["roberta.encoder.layer.0.output.dense.weight"])


def pretrained_like(sw_tokenizer, tmp_path, seed=0):
    """A tiny model saved and loaded back (loaded weights carry transformers' "initialized" flag, which a
    plain _init_weights call respects), with every weight moved off its initializer's values (LayerNorm not
    1/0)."""
    from transformers import AutoModelForMaskedLM

    model = tiny_model(sw_tokenizer, seed=seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.5 * torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())))
    model.save_pretrained(tmp_path / "pretrained")
    return AutoModelForMaskedLM.from_pretrained(tmp_path / "pretrained")


EMBEDDING_BLOCK = {"roberta.embeddings.position_embeddings.weight",
                   "roberta.embeddings.token_type_embeddings.weight", "roberta.embeddings.LayerNorm.weight",
                   "roberta.embeddings.LayerNorm.bias"}


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
    assert (torch.equal(emb.LayerNorm.weight, torch.ones(16))
            and torch.equal(emb.LayerNorm.bias, torch.zeros(16)))
    pos = emb.position_embeddings.weight
    # padding_idx row, as _init_weights does
    assert torch.equal(pos[model.config.pad_token_id], torch.zeros(16))
    assert abs(pos.std().item() - model.config.initializer_range) < 0.005
    torch.randn(100)  # the global RNG does not matter, the seed does
    again = pretrained_like(sw_tokenizer, tmp_path)
    reinitialize(again, "embedding_layers", seed=5)
    assert all(torch.equal(a, b)
               for a, b in zip(model.state_dict().values(), again.state_dict().values(), strict=True))
    other = pretrained_like(sw_tokenizer, tmp_path)
    reinitialize(other, "embedding_layers", seed=6)
    assert not torch.equal(other.roberta.embeddings.position_embeddings.weight, pos)
    scratch = pretrained_like(sw_tokenizer, tmp_path)
    reinitialize(scratch, "all", seed=5)
    kept = {n for n, p in scratch.named_parameters() if torch.equal(p, before[n])}
    # word embeddings (tied), output bias
    assert kept == embedding_parameter_names(scratch) and len(kept) == 2
    assert torch.equal(scratch.get_input_embeddings().weight, model.get_input_embeddings().weight)
    assert reinitialize(scratch, "none", seed=5) == []


def test_embedding_layers_variant_trains_the_block_and_resumes_bit_identically(tmp_path, sw_tokenizer,
                                                                               blocks):
    """variant embedding_layers (vocab-swap "Embed Grad"): the embedding block and output bias move, the body
    does not; with reinit all ("Scratch") a run killed mid-way resumes bit-identically (the re-initialized
    weights come from its checkpoint, not from a second re-initialization)."""
    cfg = config(variant="embedding_layers", reinit="embedding_layers", steps=4)
    assert cfg.stages() == [(4, "embedding_layers")]
    model = pretrained_like(sw_tokenizer, tmp_path)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    train(model, sw_tokenizer, *blocks, cfg, checkpoint_dir=tmp_path / "a")
    block = embedding_layer_names(model)
    for n, p in model.named_parameters():
        assert torch.equal(p, before[n]) != (n in block), n
    ref = pretrained_like(sw_tokenizer, tmp_path)
    # what train() re-initialized at step 0
    reinitialize(ref, "embedding_layers", seed=cfg.seed * 1_000_003 + 7)
    assert not torch.equal(ref.roberta.embeddings.LayerNorm.weight,
                           before["roberta.embeddings.LayerNorm.weight"])
    scratch = config(reinit="all", steps=8, snapshot_steps=[0])  # step 0: WECHSEL's FullRand Score@0 model
    full = pretrained_like(sw_tokenizer, tmp_path)
    curve_full = train(full, sw_tokenizer, *blocks, scratch, checkpoint_dir=tmp_path / "b")
    plain = train(pretrained_like(sw_tokenizer, tmp_path), sw_tokenizer, *blocks, config(steps=1),
                  checkpoint_dir=tmp_path / "c")
    # step 0 already re-initialized
    assert curve_full["heldout_loss"].iloc[0] != plain["heldout_loss"].iloc[0]
    cut = pretrained_like(sw_tokenizer, tmp_path)
    train(cut, sw_tokenizer, *blocks, scratch, checkpoint_dir=tmp_path / "d", stop_after=4)
    torch.randn(10)
    resumed = pretrained_like(sw_tokenizer, tmp_path)  # pretrained weights again: the checkpoint must win
    curve = train(resumed, sw_tokenizer, *blocks, scratch, checkpoint_dir=tmp_path / "d")
    for (name, a), b in zip(full.state_dict().items(), resumed.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    pd.testing.assert_frame_equal(curve, curve_full)
    from safetensors.torch import load_file

    zero = {k: load_file(tmp_path / r / "snapshots/step-00000000/model.safetensors")
            for k, r in (("b", "b"), ("d", "d"))}
    assert (zero["b"].keys() == zero["d"].keys()
            and all(torch.equal(zero["b"][k], zero["d"][k]) for k in zero["b"]))
    # word embeddings kept, the body re-initialized
    init = pretrained_like(sw_tokenizer, tmp_path).state_dict()
    assert torch.equal(zero["b"]["roberta.embeddings.word_embeddings.weight"],
                       init["roberta.embeddings.word_embeddings.weight"])
    assert not torch.equal(zero["b"]["roberta.encoder.layer.0.attention.self.query.weight"],
                           init["roberta.encoder.layer.0.attention.self.query.weight"])


def test_reinit_needs_an_embedding_block():
    from transformers import GPT2Config, GPT2LMHeadModel

    gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=50, n_embd=16, n_layer=1, n_head=2, n_positions=32))
    with pytest.raises(ValueError, match="GPT2LMHeadModel has no embedding block .* embedding_layers variant "
                                         "and reinit are for BERT-style encoders"):
        reinitialize(gpt2, "embedding_layers", seed=0)
    assert "transformer.h.0.mlp.c_fc.weight" in reinit_parameter_names(gpt2, "all")
    with pytest.raises(ValueError, match=r"reinit: 'body' is not one of 'none', 'embedding_layers' or 'all'"):
        LaptConfig.parse({"reinit": "body"})


def test_source_correlation_curve(tmp_path, sw_tokenizer, blocks):
    """vocab-swap Figure 2: ρ̄ between the anchored rows and their source rows, 1 at step 0 for kept rows,
    near 0 for permuted rows, rising for those as the embeddings are relearned."""
    model = tiny_model(sw_tokenizer)
    W = model.get_input_embeddings().weight.detach().clone()
    ids = torch.arange(len(W))
    curve = train(model, sw_tokenizer, *blocks, config(steps=4), checkpoint_dir=tmp_path / "a",
                  anchors=(ids, W))
    assert curve["source_correlation"].iloc[0] == pytest.approx(1.0)
    assert 0.5 < curve["source_correlation"].iloc[-1] < 1.0  # trained, so moved away from the start
    perm = torch.randperm(len(W), generator=torch.Generator().manual_seed(0))
    model = tiny_model(sw_tokenizer)
    with torch.no_grad():
        model.get_input_embeddings().weight.copy_(W[perm])
    curve = train(model, sw_tokenizer, *blocks, config(steps=4), checkpoint_dir=tmp_path / "b",
                  anchors=(ids, W))
    assert abs(curve["source_correlation"].iloc[0]) < 0.1


def test_token_accuracy_counts_known_answer():
    """Labels 5, 5, 7, 9, 7, 3 with predictions 5, 2, 7, 9, 1, 3; tracked tokens 7, 5, 8: 7 is a target twice
    and right once, 5 twice and right once, 8 never; 9 and 3 are not tracked."""
    from vocab_transfer.training.lapt import token_accuracy_counts

    counts = token_accuracy_counts(torch.tensor([5, 2, 7, 9, 1, 3]), torch.tensor([5, 5, 7, 9, 7, 3]),
                                   torch.tensor([7, 5, 8]))
    assert counts.tolist() == [[2, 1], [2, 1], [0, 0]]
    assert token_accuracy_counts(torch.tensor([], dtype=torch.long), torch.tensor([], dtype=torch.long),
                                 torch.tensor([7])).tolist() == [[0, 0]]


def test_frequent_tokens_skip_specials_and_break_ties_by_id():
    from vocab_transfer.training.lapt import frequent_tokens

    blocks = torch.tensor([[0, 6, 4, 4, 9, 2], [0, 9, 4, 6, 6, 2], [0, 5, 3, 3, 3, 2]])  # 0, 2 special
    ids, counts = frequent_tokens(blocks, 12, [0, 1, 2], 4)
    assert ids.tolist() == [3, 4, 6, 9] and counts.tolist() == [3, 3, 3, 2]  # 3, 4, 6 tie: by id; 5 cut off


def test_heldout_token_accuracy_matches_full_logits(sw_tokenizer, blocks):
    """The per-token counts of the held-out pass equal those of the model's full-vocabulary forward on the
    same masked blocks, and tracking does not change the held-out loss."""
    from vocab_transfer.training.lapt import frequent_tokens, heldout_eval, heldout_loss, make_batch

    model, cfg = tiny_model(sw_tokenizer).eval(), config()
    held = blocks[1][:20]
    track, _ = frequent_tokens(blocks[0], len(sw_tokenizer), sw_tokenizer.all_special_ids, 50)
    off = torch.autocast("cpu", enabled=False)
    loss, counts, _ = heldout_eval(model, held, cfg, sw_tokenizer, torch.device("cpu"), lambda: off, track)
    assert loss == heldout_loss(model, held, cfg, sw_tokenizer, torch.device("cpu"), lambda: off)
    expected = torch.zeros(len(track), 2, dtype=torch.long)
    for i in range(0, len(held), 16):
        inputs, labels, _ = make_batch(held, torch.arange(i, min(i + 16, len(held))), LaptConfig.parse(
            {**cfg.model_dump(), "seed": 12345}), sw_tokenizer, 0, i)
        with torch.no_grad():
            predicted = model(input_ids=inputs).logits.argmax(-1)
        for label, guess in zip(labels.flatten().tolist(), predicted.flatten().tolist(), strict=True):
            if label in track.tolist():
                j = track.tolist().index(label)
                expected[j, 0] += 1
                expected[j, 1] += int(guess == label)
    assert torch.equal(counts, expected) and counts[:, 0].sum() > 0


def test_snapshots_and_token_accuracy_survive_a_resume(tmp_path, sw_tokenizer, blocks):
    """Snapshots staged before an interruption and after the resume are bit-identical to an uninterrupted
    run's; the one at the last step is the final model; the token-accuracy records resume with the curve."""
    from vocab_transfer.training.lapt import publish_snapshots, save_model, token_accuracy_table

    cfg = config(snapshot_steps=[0, 4, 12], token_accuracy_top=30)
    full = tiny_model(sw_tokenizer)
    curve_full = train(full, sw_tokenizer, *blocks, cfg, checkpoint_dir=tmp_path / "a")
    publish_snapshots(tmp_path / "a", tmp_path / "a-snapshots", cfg.snapshot_steps)
    save_model(full, sw_tokenizer, tmp_path / "a-final")
    train(tiny_model(sw_tokenizer), sw_tokenizer, *blocks, cfg, checkpoint_dir=tmp_path / "b", stop_after=6)
    torch.randn(100)
    curve = train(tiny_model(sw_tokenizer, seed=99), sw_tokenizer, *blocks, cfg,
                  checkpoint_dir=tmp_path / "b")
    publish_snapshots(tmp_path / "b", tmp_path / "b-snapshots", cfg.snapshot_steps)
    pd.testing.assert_frame_equal(curve, curve_full)
    snap = lambda root, s: (root / f"step-{s:08d}" / "model.safetensors").read_bytes()  # noqa: E731
    for s in cfg.snapshot_steps:
        assert snap(tmp_path / "a-snapshots", s) == snap(tmp_path / "b-snapshots", s), s
    assert snap(tmp_path / "a-snapshots", 12) == (tmp_path / "a-final" / "model.safetensors").read_bytes()
    assert snap(tmp_path / "a-snapshots", 4) != snap(tmp_path / "a-snapshots", 12)
    # step 0: before the first update
    save_model(tiny_model(sw_tokenizer), sw_tokenizer, tmp_path / "untrained")
    assert snap(tmp_path / "a-snapshots", 0) == (tmp_path / "untrained" / "model.safetensors").read_bytes()
    from transformers import AutoModelForMaskedLM

    AutoModelForMaskedLM.from_pretrained(tmp_path / "b-snapshots" / "step-00000004")
    assert (tmp_path / "b-snapshots" / "step-00000004" / "tokenizer.json").is_file()
    with pytest.raises(FileNotFoundError, match=r"steps \[8\]"):
        publish_snapshots(tmp_path / "b", tmp_path / "c", [4, 8])
    from vocab_transfer.training.lapt import frequent_tokens

    ids, counts = frequent_tokens(blocks[0], len(sw_tokenizer), sw_tokenizer.all_special_ids, 30)
    table = token_accuracy_table(curve, ids, counts, sw_tokenizer)
    assert len(table) == 30 * len(curve) and table["step"].unique().tolist() == [0, 4, 8, 12]
    assert (table["correct"] <= table["masked"]).all() and table.groupby("step")["masked"].sum().gt(0).all()
    assert table.loc[table.masked == 0, "accuracy"].isna().all()
    first = table[table.step == 0].set_index("token_id")
    assert (first["train_count"].is_monotonic_decreasing
            and first["token"].iloc[0] == sw_tokenizer.convert_ids_to_tokens(int(ids[0])))


def test_snapshot_and_eval_steps_config():
    assert config(eval_every=5).eval_steps() == [0, 5, 10, 12]
    assert (config(variant="two_stage", embedding_stage_ratio=0.5, eval_every=4).eval_steps()
            == [0, 4, 6, 10, 14, 18])
    with pytest.raises(ValueError, match=r"snapshot_steps: must be distinct optimizer steps in 0\.\.12"):
        config(snapshot_steps=[4, 13])
    with pytest.raises(ValueError, match="snapshot_steps"):
        config(snapshot_steps=[-1])
    with pytest.raises(ValueError, match="snapshot_steps"):
        config(snapshot_steps=[4, 4])
    config(variant="two_stage", embedding_stage_ratio=0.5, snapshot_steps=[18])  # global steps: 6 + 12


def test_long_phase_trains_the_last_steps_on_longer_blocks_and_resumes(tmp_path, sw_tokenizer, swahili_verses,
                                                                       monkeypatch):
    """BERT's schedule as vocab-swap runs it (§3.1, §3.3: the last 10k steps at 512 tokens, batch 48 instead
    of 256): the last ``long_steps`` optimizer steps draw ``long_batch_size`` blocks of ``long_seq_len``
    tokens (in ``long_micro_batch_size`` parts), their evaluations use long held-out blocks, and a run killed
    inside the long phase resumes bit-identically."""
    import vocab_transfer.training.lapt as lapt
    from vocab_transfer.training.lapt import heldout_loss

    texts = swahili_verses[:600], swahili_verses[600:700]
    short = tuple(pack_texts(t, sw_tokenizer, 16) for t in texts)
    long = tuple(pack_texts(t, sw_tokenizer, 48) for t in texts)
    cfg = config(seq_len=16, long_steps=4, long_seq_len=48, long_batch_size=4, long_micro_batch_size=2)
    assert [cfg.is_long(s) for s in (0, 8, 9, 12)] == [False, False, True, True]
    assert cfg.phase_batch(8) == (8, None) and cfg.phase_batch(9) == (4, 2)
    # + the step before the switch
    assert config(long_steps=3, long_seq_len=48).eval_steps() == [0, 4, 8, 9, 12]
    # the same tokens per forward
    default = config(seq_len=16, micro_batch_size=8, long_steps=4, long_seq_len=48)
    assert default.phase_batch(8) == (8, 8) and default.phase_batch(9) == (8, 2)
    assert [cfg.samples_at(s) for s in (0, 8, 10, 12)] == [0, 64, 72, 80]
    seen, real = [], lapt.make_batch

    def spy(blocks, rows, cfg_, tokenizer, step, part):
        if step:  # held-out evaluations call it with step 0
            seen.append((step, blocks.shape[1], len(rows)))
        return real(blocks, rows, cfg_, tokenizer, step, part)

    monkeypatch.setattr(lapt, "make_batch", spy)
    wide = dict(TINY, max_position_embeddings=64)
    full = build_xlmr_mlm(sw_tokenizer, seed=0, dropout=0.1, **wide)
    curve_full = train(full, sw_tokenizer, *short, cfg, checkpoint_dir=tmp_path / "a", long_blocks=long)
    assert seen == [(s, 16, 8) for s in range(1, 9)] + [(s, 48, 2) for s in range(9, 13) for _ in range(2)]
    assert (curve_full["seq_len"].tolist() == [16, 16, 16, 48]
            and curve_full["samples"].tolist() == [0, 32, 64, 80])
    off = torch.autocast("cpu", enabled=False)
    assert curve_full["heldout_loss"].iloc[-1] == heldout_loss(full, long[1][:8], cfg.model_copy(
        update={"objective": "mlm"}), sw_tokenizer, torch.device("cpu"), lambda: off)
    cut = build_xlmr_mlm(sw_tokenizer, seed=0, dropout=0.1, **wide)
    train(cut, sw_tokenizer, *short, cfg, checkpoint_dir=tmp_path / "b", stop_after=10, long_blocks=long)
    torch.randn(10)
    resumed = build_xlmr_mlm(sw_tokenizer, seed=5, dropout=0.1, **wide)
    curve = train(resumed, sw_tokenizer, *short, cfg, checkpoint_dir=tmp_path / "b", long_blocks=long)
    for (name, a), b in zip(full.state_dict().items(), resumed.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    pd.testing.assert_frame_equal(curve, curve_full)
    with pytest.raises(ValueError, match="long_blocks"):
        train(build_xlmr_mlm(sw_tokenizer, seed=0, **wide), sw_tokenizer, *short, cfg,
              checkpoint_dir=tmp_path / "c")
    with pytest.raises(ValueError, match=r"long_steps: must be an integer in 0\.\.12"):
        config(long_steps=13, long_seq_len=48)
    with pytest.raises(ValueError, match="long_steps: 4 needs long_seq_len"):
        config(long_steps=4)


def test_phase_switch_is_marked_where_the_blocks_get_longer():
    from vocab_transfer.report.plots import phase_switches

    curve = pd.DataFrame({"step": [0, 4, 8, 9, 12], "seq_len": [16, 16, 16, 16, 48]})
    assert phase_switches(curve, "step") == {(9.0, 48)}
    assert (phase_switches(curve.assign(seq_len=16), "step") == set()
            == phase_switches(curve.drop(columns="seq_len"), "step"))


def test_cli_names_a_sequence_length_beyond_the_position_table(tmp_path, sw_tokenizer, swahili_verses):
    from vocab_transfer.training.lapt import main

    model_dir = write_fixture(tmp_path, sw_tokenizer, swahili_verses)
    argv = cli(tmp_path, model_dir, tmp_path / "out", 4, long_steps=2, long_seq_len=64)[3:]
    with pytest.raises(ValueError, match=r"long_seq_len 64 exceeds the 32 positions of the model"):
        main(argv)
    assert not (tmp_path / "out").exists()
    main(cli(tmp_path, model_dir, tmp_path / "out", 4, seq_len=16, long_steps=2, long_seq_len=32)[3:])
    curve = pd.read_parquet(tmp_path / "out.curve.parquet")  # the CLI packs the corpus at both lengths
    assert (curve["seq_len"].tolist() == [16, 16, 32] and curve["step"].tolist() == [0, 2, 4]
            and (tmp_path / "out" / "config.json").is_file())
    full = int(curve["train_sequences"].iloc[0])
    main(cli(tmp_path, model_dir, tmp_path / "small", 4, seq_len=16, train_sequences=20)[3:])
    small = pd.read_parquet(tmp_path / "small.curve.parquet")  # train_sequences: a prefix of the corpus only
    assert full > 100 and small["train_sequences"].tolist() == [20, 20]
    with pytest.raises(ValueError, match=r"lapt\.train_sequences: must be >= 1, got 0"):
        LaptConfig.parse({"train_sequences": 0})


def test_reinit_all_applies_gpt2s_scaled_residual_init():
    """FullRand-GPT2 (WECHSEL §4): reinit all is the model's own initializer, including GPT-2's c_proj scaled
    by 1/sqrt(2 n_layer), which GPT2Attention / GPT2MLP apply on top of their Conv1D children."""
    import math

    from transformers import GPT2Config, GPT2LMHeadModel

    model = GPT2LMHeadModel(GPT2Config(vocab_size=50, n_embd=128, n_layer=12, n_head=2, n_positions=16,
                                       bos_token_id=0, eos_token_id=0))
    with torch.no_grad():
        for p in model.parameters():
            p.add_(1.0)
    wte = model.transformer.wte.weight.detach().clone()
    reinitialize(model, "all", seed=1)
    block = model.transformer.h[5]
    scaled = 0.02 / math.sqrt(2 * 12)
    assert abs(block.attn.c_proj.weight.std().item() - scaled) < 0.1 * scaled
    assert abs(block.mlp.c_proj.weight.std().item() - scaled) < 0.1 * scaled
    assert (abs(block.attn.c_attn.weight.std().item() - 0.02) < 0.002
            and torch.equal(wte, model.transformer.wte.weight))
    assert (torch.equal(block.ln_1.weight, torch.ones(128))
            and torch.equal(block.attn.c_proj.bias, torch.zeros(128)))


def test_resume_refuses_checkpoints_of_other_settings_and_missing_snapshots(tmp_path, sw_tokenizer, blocks):
    """A job rerun after its LAPT settings changed does not continue the old run's checkpoints: the changed
    keys are named. Threads and checkpointing may change. A snapshot step already passed but never staged is
    named at resume, not after the whole run."""
    cfg = config(snapshot_steps=[4])
    train(tiny_model(sw_tokenizer), sw_tokenizer, *blocks, cfg, checkpoint_dir=tmp_path / "a", stop_after=8)
    with pytest.raises(ValueError,
                       match=r"other settings \(lr, steps: \[0\.001, 12\] then, \[0\.002, 16\] now\)"):
        train(tiny_model(sw_tokenizer), sw_tokenizer, *blocks, config(snapshot_steps=[4], lr=2e-3, steps=16),
              checkpoint_dir=tmp_path / "a")
    train(tiny_model(sw_tokenizer), sw_tokenizer, *blocks,
          config(snapshot_steps=[4], threads=2, checkpoint_every=2), checkpoint_dir=tmp_path / "a")
    train(tiny_model(sw_tokenizer), sw_tokenizer, *blocks, config(), checkpoint_dir=tmp_path / "b",
          stop_after=8)
    with pytest.raises(ValueError, match="snapshot_steps"):  # a settings change too
        train(tiny_model(sw_tokenizer), sw_tokenizer, *blocks, cfg, checkpoint_dir=tmp_path / "b")
    import shutil

    train(tiny_model(sw_tokenizer), sw_tokenizer, *blocks, cfg, checkpoint_dir=tmp_path / "c", stop_after=8)
    shutil.rmtree(tmp_path / "c" / "snapshots" / "step-00000004")
    with pytest.raises(FileNotFoundError, match=r"snapshots of steps \[4\] are missing"):
        train(tiny_model(sw_tokenizer), sw_tokenizer, *blocks, cfg, checkpoint_dir=tmp_path / "c")


def test_bad_config_key_is_named():
    with pytest.raises(ValueError, match="unknown key.*'stpes'"):
        LaptConfig.parse({"stpes": 3})
    with pytest.raises(ValueError, match="lapt.variant: 'two-stage' is not one of"):
        LaptConfig.parse({"variant": "two-stage"})


def write_fixture(tmp_path, sw_tokenizer, swahili_verses):
    model_dir = tmp_path / "model"
    tiny_model(sw_tokenizer).save_pretrained(model_dir)
    sw_tokenizer.save_pretrained(model_dir)
    for name, texts in (("train", swahili_verses[:800]), ("heldout", swahili_verses[800:900])):
        write_shard(texts, sw_tokenizer, tmp_path / name, tokenizer_dir=model_dir)
    return model_dir


def cli(tmp_path, model_dir, out, steps, **kw):
    cfg = config(steps=steps, checkpoint_every=2, eval_every=10, **kw).model_dump()
    return [sys.executable, "-m", "vocab_transfer.training.lapt", "--model", str(model_dir), "--tokenizer",
            str(model_dir), "--train", str(tmp_path / "train"), "--heldout", str(tmp_path / "heldout"),
            "--output", str(out), "--config", __import__("json").dumps(cfg)]


@pytest.mark.slow
def test_cli_survives_kill_and_signal(tmp_path, sw_tokenizer, swahili_verses):
    model_dir = write_fixture(tmp_path, sw_tokenizer, swahili_verses)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    kw = dict(snapshot_steps=[10, 40], token_accuracy_top=20)  # vocab-swap Figures 4/8 and 6
    subprocess.run(cli(tmp_path, model_dir, tmp_path / "ref", 40, **kw), check=True, env=env,
                   capture_output=True)

    # SIGKILL once a checkpoint exists, then rerun: same final weights, curve and snapshots
    proc = subprocess.Popen(cli(tmp_path, model_dir, tmp_path / "killed", 40, **kw), env=env,
                            stderr=subprocess.PIPE)
    ckpts = tmp_path / "killed.checkpoints"
    while proc.poll() is None and not any(ckpts.glob("step-*/state.json")):
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    assert any(ckpts.glob("step-*/state.json")) and not (tmp_path / "killed").exists()
    subprocess.run(cli(tmp_path, model_dir, tmp_path / "killed", 40, **kw), check=True, env=env,
                   capture_output=True)

    # SIGUSR1 (SLURM's --signal warning): checkpoint, exit 75, rerun resumes
    proc = subprocess.Popen(cli(tmp_path, model_dir, tmp_path / "signalled", 40, **kw), env=env,
                            stderr=subprocess.PIPE)
    while proc.poll() is None and not any((tmp_path / "signalled.checkpoints").glob("step-*/state.json")):
        time.sleep(0.05)
    proc.send_signal(signal.SIGUSR1)
    err = proc.communicate()[1].decode()
    assert proc.returncode == EXIT_RESUME, err[-2000:]
    assert "rerun to resume" in err and not (tmp_path / "signalled").exists()
    subprocess.run(cli(tmp_path, model_dir, tmp_path / "signalled", 40, **kw), check=True, env=env,
                   capture_output=True)

    from safetensors.torch import load_file
    from transformers import AutoModelForMaskedLM

    ref = load_file(tmp_path / "ref" / "model.safetensors")
    for name in ("killed", "signalled"):
        other = load_file(tmp_path / name / "model.safetensors")
        assert all(torch.equal(ref[k], other[k]) for k in ref), name
        pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / f"{name}.curve.parquet"),
                                      pd.read_parquet(tmp_path / "ref.curve.parquet"))
        pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / f"{name}.token_accuracy.parquet"),
                                      pd.read_parquet(tmp_path / "ref.token_accuracy.parquet"))
        for step in ("step-00000010", "step-00000040"):
            assert ((tmp_path / f"{name}.snapshots" / step / "model.safetensors").read_bytes()
                    == (tmp_path / "ref.snapshots" / step / "model.safetensors").read_bytes()), (name, step)
        assert not (tmp_path / f"{name}.checkpoints").exists()  # cleaned up after the final save
    assert sorted(p.name for p in (tmp_path / "ref.snapshots").iterdir() if not p.name.startswith(".")) == [
        "step-00000010", "step-00000040"]
    assert (tmp_path / "ref.snapshots/step-00000040/model.safetensors").read_bytes() == (
        tmp_path / "ref/model.safetensors").read_bytes()  # the last step's snapshot is the final model
    accuracy = pd.read_parquet(tmp_path / "ref.token_accuracy.parquet")
    assert len(accuracy) == 20 * 5 and sorted(accuracy["step"].unique()) == [0, 10, 20, 30, 40]
    assert "token_masked" not in pd.read_parquet(tmp_path / "ref.curve.parquet")
    assert AutoModelForMaskedLM.from_pretrained(tmp_path / "ref").config.vocab_size == len(sw_tokenizer)
    assert Path(tmp_path / "ref" / "tokenizer.json").is_file()


def test_clm_objective_trains_a_decoder(tmp_path, sw_tokenizer, blocks):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(sw_tokenizer), n_positions=32, n_embd=16, n_layer=1,
                                       n_head=2))
    curve = train(model, sw_tokenizer, *blocks, config(objective="clm", steps=8),
                  checkpoint_dir=tmp_path / "d")
    assert curve["heldout_loss"].iloc[-1] < curve["heldout_loss"].iloc[0]


DDP_TOLERANCE = 1e-4  # held-out loss and weights: DDP averages two gradients, one process sums two halves


def assert_same_training(tmp_path, one, other):
    """Two LAPT outputs with the same held-out curve and weights, up to float summation order."""
    from safetensors.torch import load_file

    a, b = (pd.read_parquet(tmp_path / f"{name}.curve.parquet") for name in (one, other))
    assert list(a["step"]) == list(b["step"])
    torch.testing.assert_close(torch.tensor(b["heldout_loss"].to_numpy()),
                               torch.tensor(a["heldout_loss"].to_numpy()), rtol=DDP_TOLERANCE,
                               atol=DDP_TOLERANCE)
    wa, wb = (load_file(tmp_path / one / "model.safetensors"),
              load_file(tmp_path / other / "model.safetensors"))
    for k in wa:
        torch.testing.assert_close(wb[k], wa[k], rtol=DDP_TOLERANCE, atol=DDP_TOLERANCE, msg=k)
    assert not all(torch.equal(wa[k], w0)
                   for k, w0 in load_file(tmp_path / "model" / "model.safetensors").items()
                   if k in wa)  # it trained


@pytest.mark.slow
def test_torchrun_ddp_on_cpu_trains_as_one_process(tmp_path, sw_tokenizer, swahili_verses):
    """Two processes (gloo) through ``torchrun --standalone``, each with half of every batch, train the model
    one process does with the same global batch in two micro batches: the same data order, masks and dropout
    (seeded by the micro batch's place in the global batch), the gradient averaged instead of summed."""
    model_dir = write_fixture(tmp_path, sw_tokenizer, swahili_verses)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    one = subprocess.run(cli(tmp_path, model_dir, tmp_path / "one", 10, micro_batch_size=4), env=env,
                         capture_output=True, text=True)
    assert one.returncode == 0, one.stderr[-3000:]
    cmd = cli(tmp_path, model_dir, tmp_path / "ddp", 10)
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    proc = subprocess.run([*torchrun, *cmd[1:]], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "process 1 of 2" in proc.stderr
    assert (tmp_path / "ddp" / "model.safetensors").is_file() and not (tmp_path / "ddp.checkpoints").exists()
    assert_same_training(tmp_path, "one", "ddp")
    # the tolerance is tight enough to tell: one micro batch of 8 masks the second half differently
    whole = subprocess.run(cli(tmp_path, model_dir, tmp_path / "whole", 10), env=env, capture_output=True,
                           text=True)
    assert whole.returncode == 0, whole.stderr[-3000:]
    with pytest.raises(AssertionError):
        assert_same_training(tmp_path, "whole", "ddp")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (CI has none)")
def test_cuda_resume_is_bit_identical(tmp_path):
    """On a GPU (bf16 autocast, fused AdamW, pinned non-blocking copies): an interrupted and resumed run ends
    bit-identical to an uninterrupted one, for one- and two-stage runs. With compiled layers (compile: true)
    it is close, not bit-identical: two uninterrupted compiled runs differ as much (measured on an H200, torch
    2.11)."""
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast, XLMRobertaConfig, XLMRobertaForMaskedLM

    words = ["<s>", "<pad>", "</s>", "<unk>"] + [f"w{i}" for i in range(4, 499)] + ["<mask>"]
    tok = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(models.WordPiece({w: i for i, w in enumerate(words)}, unk_token="<unk>")),
        bos_token="<s>", pad_token="<pad>", eos_token="</s>", unk_token="<unk>", mask_token="<mask>")
    assert tok.mask_token_id == 499 and len(tok) == 500

    def model():
        torch.manual_seed(0)
        return XLMRobertaForMaskedLM(XLMRobertaConfig(vocab_size=500, hidden_size=64, num_hidden_layers=2,
                                                      num_attention_heads=2, intermediate_size=128,
                                                      max_position_embeddings=40, pad_token_id=1))

    blocks = torch.randint(4, 499, (256, 32), generator=torch.Generator().manual_seed(0))
    for variant, compiled in (("full", False), ("two_stage", False), ("full", True)):
        # counts from GPU logits
        cfg = config(variant=variant, batch_size=16, token_accuracy_top=20, compile=compiled)
        m1, m2 = model(), model()
        run = f"{variant}-{compiled}"
        c1 = train(m1, tok, blocks, blocks[:8], cfg, checkpoint_dir=tmp_path / f"{run}-a")
        train(m2, tok, blocks, blocks[:8], cfg, checkpoint_dir=tmp_path / f"{run}-b", stop_after=6)
        m3 = model()
        c3 = train(m3, tok, blocks, blocks[:8], cfg, checkpoint_dir=tmp_path / f"{run}-b")
        assert next(m1.parameters()).is_cuda
        for (name, a), b in zip(m1.state_dict().items(), m3.state_dict().values(), strict=True):
            if compiled:  # compiled kernels are not bit-reproducible: 1e-5 apart after 12 steps on an H200
                torch.testing.assert_close(a, b, rtol=1e-3, atol=1e-3, msg=name)
            else:
                assert torch.equal(a, b), (variant, name)
        if compiled:
            pd.testing.assert_frame_equal(c1, c3, check_exact=False, rtol=1e-3, atol=1e-3)
        else:
            pd.testing.assert_frame_equal(c1, c3)


def test_compile_layers_keeps_the_state_dict():
    """compile: true compiles each transformer layer in place, once: the parameter names (checkpoints, saved
    models) stay those of the eager model. (Compiling runs at the first forward pass: a GPU test above trains
    with it.)"""
    from transformers import XLMRobertaConfig, XLMRobertaForMaskedLM

    from vocab_transfer.training.runtime import compile_layers

    m = XLMRobertaForMaskedLM(XLMRobertaConfig(vocab_size=50, hidden_size=8, num_hidden_layers=3,
                                               num_attention_heads=2, intermediate_size=16))
    names = list(m.state_dict())
    assert compile_layers(m) == sum(type(x).__name__ in m._no_split_modules for x in m.modules()) >= 3
    assert compile_layers(m) == 0  # already compiled
    assert list(m.state_dict()) == names
    assert compile_layers(torch.nn.Linear(2, 2)) == 0  # no layer classes declared


def mf_artifact(tmp_path, model, clusters, seed=0):
    """An init artifact of kind mf for ``model``'s vocabulary: factors of its own embeddings (+ bias
    column)."""
    from vocab_transfer.io import write_tensors
    from vocab_transfer.methods.unks import factorize_source, mf_init
    from vocab_transfer.source_model import embedding_matrix

    X = embedding_matrix(model)
    F, G, Z = factorize_source(X, seed=seed, clusters=clusters, dim=4, max_iter=50)
    n = X.shape[0]
    module = mf_init(F, G, Z, n, torch.arange(n), torch.arange(n), seed=seed)
    flat = module.flatten()
    d = model.get_input_embeddings().weight.shape[1]
    path = tmp_path / f"mf{clusters}.safetensors"
    write_tensors({"embeddings": flat[:, :d].contiguous(), "output_bias": flat[:, d].contiguous(),
                   **module.state()}, path)
    return path


@pytest.mark.parametrize("clusters", [1, 3])
def test_factorized_lapt_trains_the_factors(tmp_path, sw_tokenizer, blocks, clusters):
    """UNKs §3.3: LAPT in factorized form starts from exactly the flattened model, trains F' (and Z, G) and
    the output bias only (embeddings_only), resumes bit-identically, and flattens back to a plain tied
    model."""
    from vocab_transfer.init import swap_embeddings
    from vocab_transfer.methods.factorized import attach_factorized, flat_state_dict, read_factors

    def fresh():
        model = swap_embeddings(tiny_model(sw_tokenizer), str(art))
        attach_factorized(model, read_factors(str(art)))
        return model

    art = mf_artifact(tmp_path, tiny_model(sw_tokenizer), clusters)
    plain = swap_embeddings(tiny_model(sw_tokenizer), str(art)).eval()
    model = fresh().eval()
    ids = blocks[0][:2]
    torch.testing.assert_close(model(input_ids=ids).logits, plain(input_ids=ids).logits, rtol=1e-5, atol=1e-5)
    names = embedding_parameter_names(model)
    assert {n.rsplit(".", 1)[-1] for n in names} == {"F", "G", "bias"} | ({"Z"} if clusters > 1 else set())
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    cfg = config(variant="embeddings_only", steps=8)
    curve = train(model, sw_tokenizer, *blocks, cfg, checkpoint_dir=tmp_path / "a")
    for n, p in model.named_parameters():
        assert torch.equal(p, before[n]) != (n in names), n  # the factors and bias moved, nothing else
    assert curve["heldout_loss"].iloc[-1] < curve["heldout_loss"].iloc[0]

    interrupted = fresh()
    train(interrupted, sw_tokenizer, *blocks, cfg, checkpoint_dir=tmp_path / "b", stop_after=4)
    torch.randn(10)
    resumed = fresh()
    train(resumed, sw_tokenizer, *blocks, cfg, checkpoint_dir=tmp_path / "b")
    for (n, a), b in zip(model.state_dict().items(), resumed.state_dict().values(), strict=True):
        assert torch.equal(a, b), n

    model.eval()
    flat = tiny_model(sw_tokenizer).eval()
    flat.load_state_dict(flat_state_dict(model))
    assert torch.equal(flat.get_input_embeddings().weight,
                       model.get_input_embeddings().factors.flatten()[:, :16])
    torch.testing.assert_close(flat(input_ids=ids).logits, model(input_ids=ids).logits, rtol=1e-5, atol=1e-5)


def test_factorized_lapt_can_fix_the_up_projection(tmp_path, sw_tokenizer, blocks):
    from vocab_transfer.init import swap_embeddings
    from vocab_transfer.methods.factorized import attach_factorized, read_factors

    art = mf_artifact(tmp_path, tiny_model(sw_tokenizer), 1)
    model = swap_embeddings(tiny_model(sw_tokenizer), str(art))
    attach_factorized(model, read_factors(str(art)), freeze_up_projection=True)
    G = model.get_input_embeddings().factors.G.clone()
    train(model, sw_tokenizer, *blocks, config(steps=4), checkpoint_dir=tmp_path / "a")
    assert torch.equal(model.get_input_embeddings().factors.G, G)
    assert not any(n.endswith(".G") for n, _ in model.named_parameters())


def test_factorized_lapt_needs_an_mf_artifact(tmp_path, sw_tokenizer):
    from vocab_transfer.io import write_tensors
    from vocab_transfer.methods.factorized import read_factors

    write_tensors({"embeddings": torch.zeros(3, 2)}, tmp_path / "focus.safetensors")
    with pytest.raises(ValueError, match=r"kind: mf.*has \['embeddings'\]"):
        read_factors(str(tmp_path / "focus.safetensors"))


def test_factorized_lapt_cli_writes_flat_model_and_factors(tmp_path, sw_tokenizer, swahili_verses):
    from transformers import AutoModelForMaskedLM

    from vocab_transfer.io import read_tensors
    from vocab_transfer.methods.factorized import FACTORS_FILE, FactorizedEmbedding

    model_dir = write_fixture(tmp_path, sw_tokenizer, swahili_verses)
    art = mf_artifact(tmp_path, tiny_model(sw_tokenizer), 3)
    cmd = cli(tmp_path, model_dir, tmp_path / "out", 4, factorized=True, snapshot_steps=[2, 4])
    subprocess.run(cmd + ["--embeddings", str(art)], check=True, env={**os.environ, "HF_HUB_OFFLINE": "1"},
                   capture_output=True)
    factors = FactorizedEmbedding.from_tensors(read_tensors(tmp_path / "out" / FACTORS_FILE))
    start = FactorizedEmbedding.from_tensors(read_tensors(art))
    assert not torch.equal(factors.F, start.F) and factors.Z is not None
    saved = AutoModelForMaskedLM.from_pretrained(tmp_path / "out")
    assert torch.equal(saved.get_input_embeddings().weight, factors.flatten()[:, :16])
    assert saved.get_output_embeddings().weight is saved.get_input_embeddings().weight
    # snapshots are written the same way, mid-run, without disturbing the training (the last equals the final)
    snaps = tmp_path / "out.snapshots"
    last = AutoModelForMaskedLM.from_pretrained(snaps / "step-00000004")
    for (n, a), b in zip(saved.state_dict().items(), last.state_dict().values(), strict=True):
        assert torch.equal(a, b), n
    mid = FactorizedEmbedding.from_tensors(read_tensors(snaps / "step-00000002" / FACTORS_FILE))
    assert not torch.equal(mid.F, factors.F) and not torch.equal(mid.F, start.F)


def test_live_curves_hold_the_runs_curve_across_a_resume(tmp_path, sw_tokenizer, blocks):
    """lapt.training.report_to: [tensorboard]: the event files, read with TensorBoard's own reader, hold the
    curve's train and held-out loss at its steps, and the learning rate, gradient norm and tokens/s of each
    row, each step once over a run killed after step 6 and resumed (tests/test_tracking.py: what a killed
    attempt logged after its checkpoint is purged). Tracking changes no tensor: the curve equals the untracked
    run's."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    untracked = train(tiny_model(sw_tokenizer), sw_tokenizer, *blocks, config(report_to=[]),
                      checkpoint_dir=tmp_path / "a", track_dir=tmp_path / "untracked")
    assert not (tmp_path / "untracked").exists()
    train(tiny_model(sw_tokenizer), sw_tokenizer, *blocks, config(), checkpoint_dir=tmp_path / "b",
          stop_after=6, track_dir=tmp_path / "run")
    curve = train(tiny_model(sw_tokenizer), sw_tokenizer, *blocks, config(), checkpoint_dir=tmp_path / "b",
                  track_dir=tmp_path / "run")
    pd.testing.assert_frame_equal(curve, untracked)
    events = EventAccumulator(str(tmp_path / "run" / "tensorboard"))
    events.Reload()

    def logged(tag):
        return [(e.step, e.value) for e in events.Scalars(tag)]

    assert [s for s, _ in logged("heldout/loss")] == curve["step"].tolist() == [0, 4, 8, 12]
    assert [v for _, v in logged("heldout/loss")] == pytest.approx(curve["heldout_loss"].tolist(), rel=1e-6)
    train_loss = curve.dropna(subset=["train_loss"])  # step 0 has no training loss
    assert logged("train/loss") == [(s, pytest.approx(v, rel=1e-6)) for s, v in
                                    zip(train_loss["step"], train_loss["train_loss"], strict=True)]
    assert logged("train/lr") == [(s, pytest.approx(1e-3)) for s in (4, 8, 12)]  # constant after its warmup
    assert all(v > 0 for _, v in logged("train/grad_norm") + logged("train/tokens_per_s"))
    assert "train/mfu" not in events.Tags()["scalars"]  # on the CPU: no peak to compare with

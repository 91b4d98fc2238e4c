"""Bits per byte / per character: token lengths of every tokenizer kind add up to the text's own, and the
held-out evaluations (init-time MLM and CLM, LAPT curves) report the same NLL per byte."""

import json
import math

import pytest
import torch
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from vocab_transfer.eval.mlm import clm_loss, init_eval_row, mlm_loss, pack_texts, token_lengths
from vocab_transfer.source_model import build_xlmr_mlm

TEXTS = ["Im Anfang schuf Gott Himmel und Erde.", "Ümlaut ß — testing 123!!", "ሰላም ዓለም 𝄞 Ĳ", "naïve café"]


def bytelevel_bpe() -> PreTrainedTokenizerFast:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(TEXTS[:2] * 20, trainers.BpeTrainer(
        vocab_size=300, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=["<s>"]))
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>")


def bytefallback_bpe() -> PreTrainedTokenizerFast:
    """Llama-2 style: Metaspace-like normalizer, BPE with the 256 ``<0xNN>`` tokens as ordinary vocabulary."""
    trained = Tokenizer(models.BPE(unk_token="<unk>"))
    trained.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    trained.train_from_iterator(TEXTS[:2] * 20,
                                trainers.BpeTrainer(vocab_size=100, special_tokens=["<unk>", "<s>"]))
    state = json.loads(trained.to_str())["model"]
    vocab = dict(state["vocab"])
    for b in range(256):
        vocab.setdefault(f"<0x{b:02X}>", len(vocab))
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in state["merges"]]
    tok = Tokenizer(models.BPE(vocab, merges, unk_token="<unk>", byte_fallback=True))
    tok.normalizer = trained.normalizer
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
    tok.add_special_tokens(["<unk>", "<s>"])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", unk_token="<unk>")


def wordpiece() -> PreTrainedTokenizerFast:
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.train_from_iterator(TEXTS * 20,
                            trainers.WordPieceTrainer(vocab_size=300, special_tokens=["[UNK]", "[CLS]"]))
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", cls_token="[CLS]")


@pytest.mark.parametrize("make", [bytelevel_bpe, bytefallback_bpe, wordpiece])
def test_token_lengths_add_up_to_the_text(make):
    """Every kind: the tokens' bytes and characters sum to those of " " + text (the word-initial marker of the
    first word is one space), unseen characters included (byte tokens: one byte each, one character per UTF-8
    lead byte)."""
    tok = make()
    lengths = token_lengths(tok)
    assert lengths.shape == (len(tok), 2)
    for text in TEXTS:
        if make is wordpiece and text != TEXTS[0]:
            continue  # WordPiece has no byte fallback: unseen characters become [UNK]
        ids = tok(text, add_special_tokens=False)["input_ids"]
        assert tok.unk_token_id not in ids, (text, tok.convert_ids_to_tokens(ids))
        assert lengths[ids].sum(0).tolist() == [len((" " + text).encode()), len(" " + text)], text


def test_sentencepiece_lengths_and_unknown_tokens(sw_tokenizer):
    """A Unigram tokenizer without byte fallback: ▁ counts as a space, and an <unk> or special token counts
    0."""
    lengths = token_lengths(sw_tokenizer)
    text = "Mungu akasema"
    ids = sw_tokenizer(text, add_special_tokens=False)["input_ids"]
    assert sw_tokenizer.unk_token_id not in ids
    assert lengths[ids].sum(0).tolist() == [len(" " + text)] * 2
    assert lengths[sw_tokenizer.all_special_ids].eq(0).all()


def test_mlm_and_clm_bits_per_byte_are_the_loss_in_bits_over_the_scored_bytes(sw_tokenizer, swahili_verses):
    blocks = pack_texts(swahili_verses[:300], sw_tokenizer, 32, max_sequences=12)
    model = build_xlmr_mlm(sw_tokenizer, seed=0, hidden_size=16, num_layers=1, num_heads=2,
                           intermediate_size=32, max_position_embeddings=40)
    res = mlm_loss(model, blocks, sw_tokenizer, seed=5, batch_size=5)
    assert 0 < res["scored_chars"] <= res["scored_bytes"]  # Swahili: mostly ASCII
    assert res["scored_bytes"] > 2 * res["masked_tokens"]  # a token spans several bytes
    total_bits = res["mlm_loss"] * res["masked_tokens"] / math.log(2)
    assert res["bits_per_byte"] == pytest.approx(total_bits / res["scored_bytes"])
    assert res["bits_per_char"] == pytest.approx(total_bits / res["scored_chars"])
    row = init_eval_row(model, blocks, sw_tokenizer, objective="mlm", seed=5, batch_size=5)
    assert row["bits_per_byte"] == pytest.approx(res["bits_per_byte"])
    assert row["scored_bytes"] == res["scored_bytes"]

    from transformers import GPT2Config, GPT2LMHeadModel
    gpt = GPT2LMHeadModel(GPT2Config(vocab_size=len(sw_tokenizer), n_positions=40, n_embd=16, n_layer=1,
                                     n_head=2))
    res = clm_loss(gpt, blocks, sw_tokenizer, batch_size=5)
    expected_bytes = int(token_lengths(sw_tokenizer)[blocks[:, 1:].reshape(-1), 0].sum())
    assert res["scored_bytes"] == expected_bytes
    assert res["bits_per_byte"] == pytest.approx(res["clm_loss"] * res["predicted_tokens"] / math.log(2)
                                                 / expected_bytes)
    row = init_eval_row(gpt, blocks, sw_tokenizer, objective="clm", seed=5)
    assert row["bits_per_byte"] == pytest.approx(res["bits_per_byte"]) and row["objective"] == "clm"


def test_lapt_curve_records_bits_per_byte(tmp_path, sw_tokenizer, swahili_verses):
    from vocab_transfer.training.lapt import LaptConfig, heldout_eval, train

    train_blocks = pack_texts(swahili_verses[:400], sw_tokenizer, 32)
    held = pack_texts(swahili_verses[600:700], sw_tokenizer, 32)
    model = build_xlmr_mlm(sw_tokenizer, seed=0, dropout=0.1, hidden_size=16, num_layers=1, num_heads=2,
                           intermediate_size=32, max_position_embeddings=32)
    cfg = LaptConfig.parse(dict(steps=4, batch_size=8, seq_len=32, lr=1e-3, eval_every=2, eval_sequences=8,
                                    checkpoint_every=4, seed=3, threads=1, objective="mlm"))
    curve = train(model, sw_tokenizer, train_blocks, held, cfg, checkpoint_dir=tmp_path / "ckpt")
    assert (curve["heldout_bits_per_byte"].notna().all()
            and (curve["train_sequences"] == len(train_blocks)).all())
    off = torch.autocast("cpu", enabled=False)
    loss, _, bpb = heldout_eval(model, held[:8], cfg, sw_tokenizer, torch.device("cpu"), lambda: off, None,
                                token_lengths(sw_tokenizer))
    assert loss == pytest.approx(curve["heldout_loss"].iloc[-1], abs=1e-6)
    assert bpb == pytest.approx(curve["heldout_bits_per_byte"].iloc[-1], abs=1e-6)
    assert 0.5 * loss / math.log(2) > bpb > 0  # several bytes per masked token

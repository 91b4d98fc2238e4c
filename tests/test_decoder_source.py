"""Decoder-only sources (WECHSEL §4: GPT-2): loading, vocabulary swap, init-time causal-LM loss,
initialization methods and LAPT with the clm objective, on a tiny GPT-2 with the Swahili test vocabulary."""

from __future__ import annotations

import json
import math
import shutil

import pandas as pd
import pytest
import torch
from transformers import (
    AutoConfig,
    BertConfig,
    GPT2Config,
    GPT2LMHeadModel,
    T5Config,
    XLMRobertaConfig,
    XLMRobertaForMaskedLM,
)

from vocab_transfer.data.shards import write_shard
from vocab_transfer.data.tokenizer import load_tokenizer, train_unigram_tokenizer
from vocab_transfer.eval.mlm import clm_loss, init_eval_row, mlm_loss, pack_texts
from vocab_transfer.init import initialize, load_transferred_model
from vocab_transfer.io import write_parquet, write_tensors
from vocab_transfer.methods.overlap import OVERLAP_SCHEMA, compute_overlap
from vocab_transfer.report.tables import init_loss_table
from vocab_transfer.source_model import (
    build_xlmr_mlm,
    embedding_matrix,
    has_output_bias,
    hub_download_patterns,
    is_causal_lm,
    load_source_model,
    transferred_model,
)
from vocab_transfer.training.lapt import LaptConfig, load_blocks, main, resolve_objective, train

D = 16


def tiny_gpt2(vocab_size: int, seed: int = 0) -> GPT2LMHeadModel:
    torch.manual_seed(seed)
    return GPT2LMHeadModel(GPT2Config(vocab_size=vocab_size, n_positions=64, n_embd=D, n_layer=1, n_head=2,
                                      bos_token_id=0, eos_token_id=2, pad_token_id=1)).eval()


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory, sw_tokenizer):
    """A tiny GPT-2 whose vocabulary is the XLM-R-layout Swahili test tokenizer, saved as a source folder."""
    path = tmp_path_factory.mktemp("gpt2")
    tiny_gpt2(len(sw_tokenizer)).save_pretrained(path)
    sw_tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def xlmr_dir(tmp_path_factory, sw_tokenizer):
    path = tmp_path_factory.mktemp("xlmr")
    build_xlmr_mlm(sw_tokenizer, hidden_size=D, num_layers=1, num_heads=2, intermediate_size=32,
                   max_position_embeddings=32, seed=0).save_pretrained(path)
    sw_tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def target(tmp_path_factory, swahili_verses):
    """A 400-token target tokenizer, its overlap with the source, random token vectors and a corpus."""
    path = tmp_path_factory.mktemp("target")
    tok = train_unigram_tokenizer(swahili_verses[1500:3000], 400, show_progress=False)
    tok.save_pretrained(path / "tokenizer")
    g = torch.Generator().manual_seed(0)
    has_vector = torch.ones(len(tok), dtype=torch.bool)
    has_vector[tok.all_special_ids] = False
    write_tensors({"vectors": torch.randn(len(tok), 8, generator=g) * has_vector[:, None],
                   "has_vector": has_vector, "counts": torch.ones(len(tok), dtype=torch.long)},
                  path / "vectors.safetensors")
    for name, texts in (("train", swahili_verses[1500:2100]), ("heldout", swahili_verses[2100:2300])):
        write_shard(texts, tok, path / name, tokenizer_dir=path / "tokenizer")
    return path


def init_paths(model_dir, target) -> dict[str, str]:
    overlap = target / "overlap.parquet"
    if not overlap.exists():
        ov = compute_overlap(load_tokenizer(str(model_dir)), load_tokenizer(str(target / "tokenizer")))
        write_parquet(ov, overlap, schema=OVERLAP_SCHEMA)
    return {"model": str(model_dir), "tokenizer": str(target / "tokenizer"), "overlap": str(overlap),
            "vectors": str(target / "vectors.safetensors")}


def test_loading_picks_causal_lm_for_gpt2_and_masked_lm_for_xlmr(gpt2_dir, xlmr_dir):
    gpt2, xlmr = load_source_model(str(gpt2_dir)), load_source_model(str(xlmr_dir))
    assert type(gpt2) is GPT2LMHeadModel and type(xlmr) is XLMRobertaForMaskedLM
    assert is_causal_lm(gpt2) and not is_causal_lm(xlmr)
    assert (is_causal_lm(AutoConfig.from_pretrained(gpt2_dir))
            and not is_causal_lm(AutoConfig.from_pretrained(xlmr_dir)))


def test_hub_download_fetches_safetensors_or_else_the_pytorch_bin(xlmr_dir, tmp_path):
    """rules download_*_model: safetensors when the repository has them; a .bin-only repository (older hub
    models, e.g. FlauBERT) gives pytorch_model.bin, which loads; never TF/Flax/training-state files."""
    from fnmatch import fnmatch

    def fetched(files):
        return sorted(f for f in files if any(fnmatch(f, p) for p in hub_download_patterns(files)))

    common = ["config.json", "vocab.json", "merges.txt", "tokenizer_config.json", "README.md", "tf_model.h5",
              "flax_model.msgpack", "training_args.bin"]
    assert fetched(common + ["model.safetensors", "pytorch_model.bin"]) == [
        "README.md", "config.json", "merges.txt", "model.safetensors", "tokenizer_config.json", "vocab.json"]
    assert fetched(common + ["pytorch_model.bin"]) == [
        "README.md", "config.json", "merges.txt", "pytorch_model.bin", "tokenizer_config.json", "vocab.json"]
    with pytest.raises(FileNotFoundError, match="no model weights"):
        hub_download_patterns(common)
    source = load_source_model(str(xlmr_dir))  # a .bin-only folder as such a repository's snapshot
    source.config.save_pretrained(tmp_path)
    torch.save(source.state_dict(), tmp_path / "pytorch_model.bin")
    reloaded = load_source_model(str(tmp_path))
    torch.testing.assert_close(embedding_matrix(reloaded), embedding_matrix(load_source_model(str(xlmr_dir))))


@pytest.mark.parametrize("config,causal", [
    (GPT2Config(), True),  # no architectures: gpt2 has a causal-LM class and no masked-LM class
    (AutoConfig.for_model("llama"), True),
    (AutoConfig.for_model("opt"), True),
    (AutoConfig.for_model("bloom"), True),
    (XLMRobertaConfig(), False),  # has both: a masked LM, as before
    (BertConfig(), False),
    (XLMRobertaConfig(architectures=["XLMRobertaForCausalLM"]), True),  # saved as a decoder
    (GPT2Config(architectures=["GPT2LMHeadModel"]), True),
    (BertConfig(is_decoder=True), True),
    (T5Config(), False),  # encoder-decoder
])
def test_is_causal_lm_rule(config, causal):
    assert is_causal_lm(config) is causal


def test_vocabulary_swap_keeps_gpt2_tied(gpt2_dir, tmp_path):
    model = load_source_model(str(gpt2_dir))
    assert embedding_matrix(model).shape == (600, D) and not has_output_bias(model)  # no bias column
    new = torch.randn(400, D, generator=torch.Generator().manual_seed(1))
    model = transferred_model(model, new, None)
    assert model.lm_head.weight is model.transformer.wte.weight and torch.equal(model.lm_head.weight, new)
    assert model.config.vocab_size == 400
    ids = torch.randint(0, 400, (2, 10), generator=torch.Generator().manual_seed(2))
    logits = model(input_ids=ids).logits
    assert logits.shape == (2, 10, 400)
    model.save_pretrained(tmp_path)  # the swapped model reloads as a causal LM with the same outputs
    again = load_source_model(str(tmp_path))
    assert type(again) is GPT2LMHeadModel and again.lm_head.weight is again.transformer.wte.weight
    torch.testing.assert_close(again.eval()(input_ids=ids).logits, logits)
    with pytest.raises(ValueError, match="output bias.*GPT2LMHeadModel"):
        transferred_model(load_source_model(str(gpt2_dir)), new, torch.zeros(400))


def test_clm_loss_known_answers(sw_tokenizer, swahili_verses):
    blocks = pack_texts(swahili_verses[:300], sw_tokenizer, 32, max_sequences=10)
    model = tiny_gpt2(len(sw_tokenizer))
    res = clm_loss(model, blocks, batch_size=3)  # uneven batches: still the mean over all tokens
    assert res["predicted_tokens"] == 10 * 31 and res["sequences"] == 10
    torch.testing.assert_close(res["clm_loss"], model(input_ids=blocks, labels=blocks).loss.item())
    assert res["perplexity"] == pytest.approx(math.exp(res["clm_loss"]))
    assert abs(res["clm_loss"] - math.log(600)) < 0.1  # random weights: close to uniform
    with torch.no_grad():
        model.transformer.wte.weight.zero_()  # tied lm_head: every logit 0, exactly uniform
    assert clm_loss(model, blocks)["clm_loss"] == pytest.approx(math.log(600), abs=1e-5)


def test_init_eval_row_has_one_schema_for_both_objectives(sw_tokenizer, swahili_verses):
    blocks = pack_texts(swahili_verses[:300], sw_tokenizer, 32, max_sequences=8)
    clm = init_eval_row(tiny_gpt2(len(sw_tokenizer)), blocks, sw_tokenizer, objective="clm", seed=0)
    xlmr = build_xlmr_mlm(sw_tokenizer, hidden_size=D, num_layers=1, num_heads=2, intermediate_size=32,
                          max_position_embeddings=32, seed=0)
    mlm = init_eval_row(xlmr, blocks, sw_tokenizer, objective="mlm", seed=0)
    assert list(clm) == list(mlm) == ["objective", "mlm_loss", "perplexity", "masked_tokens", "sequences",
                                      "bits_per_byte", "bits_per_char", "scored_bytes", "scored_chars"]
    assert clm["objective"] == "clm" and clm["masked_tokens"] == 8 * 31
    assert mlm["mlm_loss"] == mlm_loss(xlmr, blocks, sw_tokenizer, seed=0)["mlm_loss"]
    rows = pd.DataFrame([{"source": "gpt2", "target": "sw", "method": "focus", **clm},
                         {"source": "xlmr", "target": "sw", "method": "focus", **mlm}])
    table = init_loss_table(rows, method_labels={"focus": "FOCUS"}, in_pretraining={})
    assert table["mlm_loss"].notna().all() and table["bits_per_byte"].notna().all()
    with pytest.raises(ValueError, match="objective must be"):
        init_eval_row(xlmr, blocks, sw_tokenizer, objective="nsp", seed=0)


@pytest.mark.parametrize("kind", ["focus", "random"])
def test_init_methods_on_a_decoder(gpt2_dir, target, tmp_path, kind):
    tensors, provenance = initialize(init_paths(gpt2_dir, target), {"kind": kind}, seed=0)
    assert set(tensors) == {"embeddings"} and tensors["embeddings"].shape == (400, D)  # no output_bias
    source = embedding_matrix(load_source_model(str(gpt2_dir)))
    copied = provenance[provenance["provenance"] == "copied"]
    if kind == "focus":
        ov = pd.read_parquet(target / "overlap.parquet").set_index("target_id")
        assert len(copied) > 50
        for t in copied["target_id"]:
            assert torch.equal(tensors["embeddings"][t], source[ov.loc[t, "source_id"]])
    write_tensors(tensors, tmp_path / f"{kind}.safetensors")
    model = load_transferred_model(str(gpt2_dir), str(tmp_path / f"{kind}.safetensors"))
    assert type(model) is GPT2LMHeadModel and model.lm_head.weight is model.transformer.wte.weight
    assert torch.equal(model.transformer.wte.weight, tensors["embeddings"])


def lapt_config(**kw) -> dict:
    return dict(dict(objective="clm", steps=6, batch_size=8, seq_len=32, lr=3e-3, eval_every=3,
                     eval_sequences=8, checkpoint_every=100, seed=0, threads=1), **kw)


def test_lapt_clm_after_focus_init(gpt2_dir, target, tmp_path):
    tensors, _ = initialize(init_paths(gpt2_dir, target), {"kind": "focus"}, seed=0)
    write_tensors(tensors, tmp_path / "focus.safetensors")
    model = load_transferred_model(str(gpt2_dir), str(tmp_path / "focus.safetensors"))
    tok = load_tokenizer(str(target / "tokenizer"))
    train_blocks = load_blocks(str(target / "train"), tok, 32)
    heldout = load_blocks(str(target / "heldout"), tok, 32, 8)
    curve = train(model, tok, train_blocks, heldout, LaptConfig.parse(lapt_config()),
                  checkpoint_dir=tmp_path / "ckpt")
    assert curve["step"].tolist() == [0, 3, 6]
    assert curve["heldout_loss"].iloc[-1] < curve["heldout_loss"].iloc[0]
    # the held-out loss at step 0 is the init-time CLM loss of the same blocks
    assert curve["heldout_loss"].iloc[0] == pytest.approx(
        load_transferred_model(str(gpt2_dir), str(tmp_path / "focus.safetensors")).eval()(
            input_ids=heldout, labels=heldout).loss.item(), rel=1e-4)


def test_lapt_cli_with_a_decoder_source(gpt2_dir, target, tmp_path):
    tensors, _ = initialize(init_paths(gpt2_dir, target), {"kind": "random"}, seed=0)
    write_tensors(tensors, tmp_path / "random.safetensors")
    args = ["--model", str(gpt2_dir), "--embeddings", str(tmp_path / "random.safetensors"),
            "--tokenizer", str(target / "tokenizer"), "--train", str(target / "train"),
            "--heldout", str(target / "heldout"), "--output", str(tmp_path / "out")]
    with pytest.raises(ValueError, match="objective 'mlm' does not fit the model GPT2LMHeadModel.*causal"):
        main([*args, "--config", json.dumps(lapt_config(objective="mlm"))])
    cfg = lapt_config(steps=2, eval_every=2)
    del cfg["objective"]  # default auto: clm for the decoder
    main([*args, "--config", json.dumps(cfg)])
    out = load_source_model(str(tmp_path / "out"))
    assert type(out) is GPT2LMHeadModel and out.config.vocab_size == 400
    assert pd.read_parquet(tmp_path / "out.curve.parquet")["step"].tolist() == [0, 2]


def test_mismatched_objective_is_named(sw_tokenizer, tmp_path):
    blocks = torch.zeros(4, 32, dtype=torch.long)
    xlmr = build_xlmr_mlm(sw_tokenizer, hidden_size=D, num_layers=1, num_heads=2, intermediate_size=32,
                          max_position_embeddings=32, seed=0)
    assert LaptConfig().objective == "auto"
    assert resolve_objective(xlmr, "auto") == resolve_objective(xlmr, "mlm") == "mlm"
    assert resolve_objective(tiny_gpt2(600), "auto") == resolve_objective(tiny_gpt2(600), "clm") == "clm"
    with pytest.raises(ValueError,
                       match="objective 'clm' does not fit the model XLMRobertaForMaskedLM.*masked LM"
                             ".*'mlm'"):
        train(xlmr, sw_tokenizer, blocks, blocks, LaptConfig.parse(lapt_config()), checkpoint_dir=tmp_path)
    with pytest.raises(ValueError, match="objective 'mlm' does not fit the model GPT2LMHeadModel.*'clm'"):
        train(tiny_gpt2(600), sw_tokenizer, blocks, blocks, LaptConfig.parse(lapt_config(objective="mlm")),
              checkpoint_dir=tmp_path)


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory, sw_tokenizer):
    """A tiny Llama with an untied LM head (its own output matrix), the Swahili test vocabulary."""
    from transformers import LlamaConfig, LlamaForCausalLM

    path = tmp_path_factory.mktemp("llama")
    torch.manual_seed(0)
    LlamaForCausalLM(LlamaConfig(vocab_size=len(sw_tokenizer), hidden_size=D, intermediate_size=32,
                                 num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                                 max_position_embeddings=64, tie_word_embeddings=False, bos_token_id=0,
                                 eos_token_id=2, pad_token_id=1)
                     ).save_pretrained(path)
    sw_tokenizer.save_pretrained(path)
    return path


@pytest.mark.parametrize("kind", ["focus", "fvt", "random_normal"])
def test_untied_head_is_transferred_with_the_input_rows(llama_dir, target, tmp_path, kind):
    """An untied LM head's rows go through the method with the input rows: an overlapping token's output row
    is the source's output row of that token (not its input row), and a combined row the same combination of
    output rows."""
    source = load_source_model(str(llama_dir))
    e_in, e_out = (source.get_input_embeddings().weight.detach(),
                   source.get_output_embeddings().weight.detach())
    assert not torch.equal(e_in, e_out) and embedding_matrix(source).shape == (600, 2 * D)
    tensors, provenance = initialize(init_paths(llama_dir, target), {"kind": kind}, seed=0)
    assert (set(tensors) == {"embeddings", "output_embeddings"}
            and tensors["output_embeddings"].shape == (400, D))
    ov = pd.read_parquet(target / "overlap.parquet").set_index("target_id")
    copied = provenance.loc[provenance["provenance"] == "copied", "target_id"].tolist()
    if kind != "random_normal":
        assert len(copied) > 50
    for t in copied:
        s = ov.loc[t, "source_id"]
        assert (torch.equal(tensors["embeddings"][t], e_in[s])
                and torch.equal(tensors["output_embeddings"][t], e_out[s]))
    if kind == "fvt":  # a combined row: the mean of the same source tokens' rows on both sides
        tok = load_tokenizer(str(target / "tokenizer"))
        src_tok = load_tokenizer(str(llama_dir))
        t = provenance.loc[provenance["provenance"] == "combined", "target_id"].iloc[0]
        pieces = src_tok(tok.convert_tokens_to_string([tok.convert_ids_to_tokens(int(t))]).strip(),
                         add_special_tokens=False)["input_ids"]
        torch.testing.assert_close(tensors["embeddings"][t], e_in[pieces].mean(0))
        torch.testing.assert_close(tensors["output_embeddings"][t], e_out[pieces].mean(0))
    write_tensors(tensors, tmp_path / "init.safetensors")
    model = load_transferred_model(str(llama_dir), str(tmp_path / "init.safetensors"))
    assert torch.equal(model.lm_head.weight, tensors["output_embeddings"])
    assert torch.equal(model.get_input_embeddings().weight, tensors["embeddings"])
    model.save_pretrained(tmp_path / "saved")  # the head stays untied through save and reload
    again = load_source_model(str(tmp_path / "saved"))
    assert (torch.equal(again.lm_head.weight, tensors["output_embeddings"])
            and not again.config.tie_word_embeddings)


def test_output_rows_copy_input_keeps_the_old_behaviour(llama_dir, target, tmp_path, gpt2_dir):
    tensors, _ = initialize(init_paths(llama_dir, target), {"kind": "focus", "output_rows": "copy_input"},
                            seed=0)
    assert set(tensors) == {"embeddings"}
    write_tensors(tensors, tmp_path / "init.safetensors")
    model = load_transferred_model(str(llama_dir), str(tmp_path / "init.safetensors"))
    assert torch.equal(model.lm_head.weight, tensors["embeddings"])  # the head gets the new input rows
    transferred = initialize(init_paths(llama_dir, target), {"kind": "focus"}, seed=0)[0]
    # the same weights (FOCUS's do not read the rows); a wider matrix product may round the last bit
    # differently
    torch.testing.assert_close(transferred["embeddings"], tensors["embeddings"], rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match="tied to its input embeddings"):
        transferred_model(load_source_model(str(gpt2_dir)), transferred["embeddings"], None,
                          transferred["output_embeddings"])


def test_embedding_rows_are_read_by_name_without_loading_the_model(gpt2_dir, xlmr_dir, llama_dir, target,
                                                                   tmp_path, monkeypatch):
    """read_embedding_rows gives the loaded model's input rows, untied output rows and bias, from one
    safetensors file or from shards; initialize never loads the model; a pickle-only checkpoint is refused
    with the fix."""
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM

    from vocab_transfer.source_model import read_embedding_rows

    for path in (gpt2_dir, xlmr_dir, llama_dir):
        model = load_source_model(str(path))
        rows = read_embedding_rows(path)
        assert torch.equal(rows.matrix(), embedding_matrix(model)), path
        assert ((rows.output is None)
                == (model.get_output_embeddings().weight is model.get_input_embeddings().weight))
        assert (rows.bias is None) == (not has_output_bias(model))
    shards = tmp_path / "sharded"
    load_source_model(str(llama_dir)).save_pretrained(shards, max_shard_size="20KB")
    load_tokenizer(str(llama_dir)).save_pretrained(shards)
    assert (shards / "model.safetensors.index.json").is_file() and len(list(shards.glob("*.safetensors"))) > 2
    assert torch.equal(read_embedding_rows(shards).matrix(), read_embedding_rows(llama_dir).matrix())

    def refuse(*args, **kwargs):
        raise AssertionError("initialize loaded the whole model")

    expected = initialize(init_paths(llama_dir, target), {"kind": "focus"}, seed=0)[0]
    for auto in (AutoModelForCausalLM, AutoModelForMaskedLM):
        monkeypatch.setattr(auto, "from_pretrained", refuse)
    got = initialize(init_paths(shards, target), {"kind": "focus"}, seed=0)[0]
    assert all(torch.equal(got[k], expected[k]) for k in expected) and set(got) == set(expected)
    monkeypatch.undo()
    pickled = tmp_path / "pickled"  # an older checkpoint: config and pickled weights only
    model = load_source_model(str(gpt2_dir))
    model.config.save_pretrained(pickled)
    torch.save(model.state_dict(), pickled / "pytorch_model.bin")
    with pytest.raises(FileNotFoundError,
                       match="only pickle weights.*pytorch_model.bin.*safe_serialization=True"):
        read_embedding_rows(pickled)


def test_a_padded_source_pads_the_new_rows_by_its_rule(sw_tokenizer, target, tmp_path):
    """A source whose embedding matrix is padded past its tokenizer (Qwen2.5: 151,936 rows for 151,665 tokens)
    transfers only the real rows and pads the new matrix to the same multiple, with rows no token id reaches;
    the transferred model loads, scores a loss and keeps the padding in its config."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from vocab_transfer.eval.mlm import init_eval_row, pack_texts
    from vocab_transfer.source_model import padding_multiple

    assert (padding_multiple(151_936, 151_665), padding_multiple(32_064, 32_011),
            padding_multiple(600, 600)) == (128, 64, 1)
    torch.manual_seed(0)
    Qwen2ForCausalLM(Qwen2Config(vocab_size=640, hidden_size=D, intermediate_size=32, num_hidden_layers=1,
                                 num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=64,
                                 tie_word_embeddings=True)).save_pretrained(tmp_path / "qwen")
    sw_tokenizer.save_pretrained(tmp_path / "qwen")  # 600 tokens, 640 rows: padded to a multiple of 128
    tensors, provenance = initialize(init_paths(tmp_path / "qwen", target), {"kind": "focus"}, seed=0)
    e = tensors["embeddings"]
    assert set(tensors) == {"embeddings"} and e.shape == (512, D) and len(provenance) == 400
    torch.testing.assert_close(e[400:], e[:400].mean(0).expand(112, D))
    write_tensors(tensors, tmp_path / "init.safetensors")
    model = load_transferred_model(str(tmp_path / "qwen"), str(tmp_path / "init.safetensors"))
    assert model.config.vocab_size == 512 and torch.equal(model.get_input_embeddings().weight, e)
    tok = load_tokenizer(str(target / "tokenizer"))
    blocks = pack_texts(["Hapo mwanzo Mungu aliziumba mbingu na nchi."] * 20, tok, 16, max_sequences=4)
    assert math.isfinite(init_eval_row(model, blocks, tok, objective="clm", seed=0)["mlm_loss"])


def test_an_architecture_without_a_known_lm_head_is_named(sw_tokenizer, tmp_path):
    """T5 (encoder-decoder) has no causal-LM or masked-LM class: refused when a local folder is parsed and by
    the init's reader, naming the folder and the model type."""
    from vocab_transfer.source_model import read_embedding_rows
    from vocab_transfer.workflow.config import ConfigError, check_local_source

    (tmp_path / "t5").mkdir()
    (tmp_path / "t5" / "config.json").write_text(json.dumps({"model_type": "t5", "vocab_size": 600,
                                                             "d_model": 16}))
    sw_tokenizer.save_pretrained(tmp_path / "t5")
    with pytest.raises(ConfigError,
                       match=r"sources.t5.model: .*t5 is a 't5' model, for which transformers .* has no "
                             r"causal-LM or masked-LM class"):
        check_local_source("t5", tmp_path / "t5", False)
    with pytest.raises(ValueError, match="'t5' model"):
        read_embedding_rows(tmp_path / "t5")


@pytest.mark.parametrize("arch", ["llama", "gemma2"])
def test_causal_loss_with_the_head_in_chunks_equals_the_models_own(arch):
    """The init-time causal-LM loss runs the LM head on a few positions at a time (a 152k vocabulary's logits
    never exist for a whole batch): the same value as the model's own loss, Gemma 2's logit soft-capping
    included."""
    from transformers import Gemma2Config, Gemma2ForCausalLM, LlamaConfig, LlamaForCausalLM

    from vocab_transfer.eval.mlm import clm_loss

    small = dict(vocab_size=300, hidden_size=D, intermediate_size=32, num_hidden_layers=1,
                 num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=64)
    torch.manual_seed(0)
    model = (LlamaForCausalLM(LlamaConfig(**small)) if arch == "llama" else
             Gemma2ForCausalLM(Gemma2Config(**small, head_dim=8, final_logit_softcapping=0.5))).eval()
    blocks = torch.randint(300, (5, 20))
    got = clm_loss(model, blocks, batch_size=2, head_chunk=7)
    with torch.no_grad():
        want = float(model(input_ids=blocks, labels=blocks).loss)
    assert got["predicted_tokens"] == 5 * 19 and got["clm_loss"] == pytest.approx(want, rel=1e-5)


def test_a_masked_lm_with_a_maskless_target_tokenizer_is_named(xlmr_dir, target, swahili_verses, tmp_path):
    """A byte-level BPE target (no mask token) for an XLM-R source: the init names the tokenizer, the model
    and the settings that fit, instead of failing later in the masked-LM evaluation."""
    from vocab_transfer.data.tokenizer import train_target_tokenizer

    train_target_tokenizer(swahili_verses[1500:3000], 400, kind="byte_level").save_pretrained(
        tmp_path / "tok")
    paths = init_paths(xlmr_dir, target) | {"tokenizer": str(tmp_path / "tok")}
    with pytest.raises(ValueError, match=r"has no mask token, which the masked LM .* unigram or wordpiece"):
        initialize(paths, {"kind": "random"}, seed=0)


REMOTE_FILES = {
    "configuration_tiny.py": "from transformers import LlamaConfig\n\n\nclass TinyConfig(LlamaConfig):\n"
                             "    model_type = 'tinycustom'\n",
    "modeling_tiny.py": "from transformers import LlamaForCausalLM\n\n"
                        "from .configuration_tiny import TinyConfig\n\n\n"
                        "class TinyForCausalLM(LlamaForCausalLM):\n    config_class = TinyConfig\n",
}


def test_remote_code_runs_only_where_the_config_allows_it_for_that_model(llama_dir, tmp_path, monkeypatch):
    """A model whose architecture lives in its own Python files (auto_map): refused by the parse-time check
    and the init's reader, unless the source has trust_remote_code (its folder in
    VOCAB_TRANSFER_TRUST_REMOTE_CODE, which the workflow sets for the jobs); then its own class is built and
    its rows read."""
    from vocab_transfer.source_model import TRUSTED_ENV, read_embedding_rows
    from vocab_transfer.workflow.config import ConfigError, check_local_source

    folder = tmp_path / "custom"
    shutil.copytree(llama_dir, folder)
    config = json.loads((folder / "config.json").read_text())
    config |= {"model_type": "tinycustom", "architectures": ["TinyForCausalLM"],
               "auto_map": {"AutoConfig": "configuration_tiny.TinyConfig",
                            "AutoModelForCausalLM": "modeling_tiny.TinyForCausalLM"}}
    (folder / "config.json").write_text(json.dumps(config))
    for name, code in REMOTE_FILES.items():
        (folder / name).write_text(code)
    monkeypatch.delenv(TRUSTED_ENV, raising=False)
    with pytest.raises(ConfigError, match=r"sources.custom.model: .* needs code from the model's repository "
                                          r"\(config.json: configuration_tiny.TinyConfig; "
                                          r".*trust_remote_code: true"):
        check_local_source("custom", folder, False)
    with pytest.raises(ValueError, match="needs code from the model's repository"):
        read_embedding_rows(folder)
    check_local_source("custom", folder, False, trust_remote_code=True)
    monkeypatch.setenv(TRUSTED_ENV, str(folder))
    rows = read_embedding_rows(folder)
    from safetensors.torch import load_file

    assert torch.equal(rows.output, load_file(llama_dir / "model.safetensors")["lm_head.weight"])
    assert type(load_source_model(str(folder))).__name__ == "TinyForCausalLM"

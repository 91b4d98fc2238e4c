"""Init exports without loading the model (vocab_transfer.export.export_init): tiny Llama (untied head), Qwen2
and GPT-2 (tied), XLM-R (tied, output bias), saved whole and in shards; the export equals the loaded-model
swap."""

from __future__ import annotations

import errno
import json
import os

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (
    AutoModelForCausalLM,
    AutoModelForMaskedLM,
    AutoTokenizer,
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedModel,
    PreTrainedTokenizerFast,
    Qwen2Config,
    Qwen2ForCausalLM,
    XLMRobertaConfig,
    XLMRobertaForMaskedLM,
)

from vocab_transfer.export import (
    export_folder,
    export_init,
    read_header,
    retarget_special_ids,
    rewrite_safetensors,
)
from vocab_transfer.init import swap_embeddings
from vocab_transfer.io import write_tensors
from vocab_transfer.source_model import load_source_model, read_embedding_rows

V, V_NEW, D = 96, 130, 16
IDS = dict(bos_token_id=0, pad_token_id=1, eos_token_id=2)
SMALL = dict(hidden_size=D, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
             num_key_value_heads=1, max_position_embeddings=64)


def build(kind: str) -> PreTrainedModel:
    torch.manual_seed(0)
    if kind == "llama":
        model = LlamaForCausalLM(LlamaConfig(vocab_size=V, tie_word_embeddings=False, **SMALL, **IDS))
    elif kind == "qwen2":
        model = Qwen2ForCausalLM(Qwen2Config(vocab_size=V, tie_word_embeddings=True, **SMALL, **IDS))
    elif kind == "gpt2":
        model = GPT2LMHeadModel(GPT2Config(vocab_size=V, n_positions=64, n_embd=D, n_layer=2, n_head=2,
                                           **IDS))
    else:
        model = XLMRobertaForMaskedLM(XLMRobertaConfig(vocab_size=V, hidden_size=D, num_hidden_layers=2,
                                                       num_attention_heads=2, intermediate_size=32,
                                                       max_position_embeddings=66, **IDS))
        with torch.no_grad():
            model.lm_head.bias.normal_()  # zeros would not tell a copied bias from a lost one
        return model.eval()
    model.generation_config.update(bos_token_id=0, eos_token_id=[2, 3], pad_token_id=1)
    return model.eval()


@pytest.fixture(scope="module")
def target_tokenizer(tmp_path_factory):
    """A V_NEW-token tokenizer whose special tokens sit at other ids than the sources' (0, 1, 2)."""
    vocab = {f"w{i}": i for i in range(V_NEW)} | {"<unk>": 3, "<s>": 7, "</s>": 8, "<pad>": 9}
    vocab = {t: i for t, i in vocab.items() if not (t.startswith("w") and int(t[1:]) in (3, 7, 8, 9))}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>",
                                  pad_token="<pad>", unk_token="<unk>")
    assert len(tok) == V_NEW
    path = tmp_path_factory.mktemp("target_tokenizer")
    tok.save_pretrained(path)
    return path


def source_folder(tmp_path, kind: str, shard: str | None) -> str:
    path = tmp_path / f"{kind}-{shard or 'whole'}"
    build(kind).save_pretrained(path, **({"max_shard_size": shard} if shard else {}))
    return str(path)


def artifact(tmp_path, source: str) -> str:
    """An init artifact laid out as rule init_embeddings writes it: random new rows of every per-token
    tensor."""
    rows = read_embedding_rows(source)
    g = torch.Generator().manual_seed(1)
    path = tmp_path / "init.safetensors"
    write_tensors(rows.split(torch.randn(V_NEW, rows.matrix().shape[1], generator=g)), path)
    return str(path)


def refuse_loading(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the export loaded the model")

    for cls in (PreTrainedModel, AutoModelForCausalLM, AutoModelForMaskedLM):
        monkeypatch.setattr(cls, "from_pretrained", refuse)


@pytest.mark.parametrize("kind,shard", [("llama", None), ("llama", "8KB"), ("qwen2", "8KB"), ("gpt2", None),
                                        ("gpt2", "8KB"), ("xlmr", "8KB"), ("xlmr", None)])
def test_export_equals_the_loaded_swap_and_links_unchanged_shards(tmp_path, monkeypatch, target_tokenizer,
                                                                  kind, shard):
    source = source_folder(tmp_path, kind, shard)
    init = artifact(tmp_path, source)
    out = tmp_path / "export"
    with monkeypatch.context() as m:
        refuse_loading(m)
        export_init(source, init, str(target_tokenizer), str(out), "card")
    files = sorted(p.name for p in out.glob("*.safetensors"))
    assert files == sorted(p.name for p in (tmp_path / f"{kind}-{shard or 'whole'}").glob("*.safetensors"))
    if shard:
        assert len(files) > 2
        index = json.loads((out / "model.safetensors.index.json").read_text())
        source_index = json.loads((tmp_path / f"{kind}-{shard}" / "model.safetensors.index.json").read_text())
        assert index["weight_map"] == source_index["weight_map"]
        assert index["metadata"]["total_size"] == sum(os.path.getsize(out / f) - read_header(out / f)[1]
                                                      for f in files)
    changed = {f for f in files if os.stat(out / f).st_ino != os.stat(os.path.join(source, f)).st_ino}
    for f in files:  # unchanged shards are links to the source's; the others hold a new row tensor
        with safe_open(out / f, "pt") as new:
            with safe_open(os.path.join(source, f), "pt") as old:
                assert new.metadata() == old.metadata() and set(new.keys()) == set(old.keys())
                differ = {k for k in old.keys()
                          if old.get_slice(k).get_shape() != new.get_slice(k).get_shape()}
        assert bool(differ) == (f in changed)
    assert changed and (not shard or len(changed) < len(files))

    auto = AutoModelForMaskedLM if kind == "xlmr" else AutoModelForCausalLM
    model, info = auto.from_pretrained(out, output_loading_info=True)
    assert not any(info[k] for k in ("missing_keys", "unexpected_keys", "mismatched_keys"))
    expected = swap_embeddings(load_source_model(source), init).eval()
    got, want = model.state_dict(), expected.state_dict()
    assert got.keys() == want.keys() and all(torch.equal(got[k], want[k]) for k in want)
    with safe_open(init, "pt") as f:
        assert torch.equal(model.get_input_embeddings().weight, f.get_tensor("embeddings"))
        if kind == "llama":
            assert torch.equal(model.get_output_embeddings().weight, f.get_tensor("output_embeddings"))
        if kind == "xlmr":
            assert torch.equal(model.lm_head.bias, f.get_tensor("output_bias"))
    ids = torch.tensor([[7, 5, 100, 129, 8, 1]])
    assert torch.equal(model(input_ids=ids).logits, expected(input_ids=ids).logits)

    config = json.loads((out / "config.json").read_text())
    assert config["vocab_size"] == V_NEW and (config["bos_token_id"], config["eos_token_id"]) == (7, 8)
    assert config["pad_token_id"] == (1 if kind == "xlmr" else 9)  # RoBERTa's positions count from its pad id
    if kind != "xlmr":  # a masked LM has no generation config
        generation = json.loads((out / "generation_config.json").read_text())
        assert (generation["bos_token_id"], generation["eos_token_id"],
                generation["pad_token_id"]) == (7, [8], 9)
    assert len(AutoTokenizer.from_pretrained(out)) == V_NEW  # the target tokenizer
    assert (out / "README.md").read_text() == "card"


def test_tied_source_that_stores_both_names_keeps_both(tmp_path, target_tokenizer):
    """A tied checkpoint that stores the head's copy as well (older files do) gets the new rows under both
    names."""
    source = tmp_path / "qwen2-both"
    model = build("qwen2")
    model.save_pretrained(source)
    tensors = load_file(source / "model.safetensors")
    assert "lm_head.weight" not in tensors
    save_file({**tensors, "lm_head.weight": tensors["model.embed_tokens.weight"].clone()},
              source / "model.safetensors", metadata={"format": "pt"})
    init = artifact(tmp_path, str(source))
    export_init(str(source), init, str(target_tokenizer), str(tmp_path / "export"), "card")
    with safe_open(tmp_path / "export" / "model.safetensors", "pt") as f, safe_open(init, "pt") as a:
        assert torch.equal(f.get_tensor("lm_head.weight"), a.get_tensor("embeddings"))
        assert torch.equal(f.get_tensor("model.embed_tokens.weight"), a.get_tensor("embeddings"))


def test_rewrite_keeps_dtype_alignment_and_the_format(tmp_path):
    """bf16 and float32 tensors in one file: new rows are written in the stored dtype, wider elements first,
    the header padded to 8 bytes, and the file reads back with safetensors."""
    g = torch.Generator().manual_seed(0)
    tensors = {"a.weight": torch.randn(5, 3, generator=g).bfloat16(), "b.bias": torch.randn(5, generator=g),
               "c": torch.arange(7, dtype=torch.int64), "emb": torch.randn(5, 3, generator=g).bfloat16()}
    save_file(tensors, tmp_path / "src.safetensors", metadata={"format": "pt", "x": "y"})
    new = {"emb": torch.randn(9, 3, generator=g), "b.bias": torch.randn(9, generator=g)}
    size = rewrite_safetensors(tmp_path / "src.safetensors", tmp_path / "dst.safetensors", new)
    header, start = read_header(tmp_path / "dst.safetensors")
    assert start % 8 == 0 and os.path.getsize(tmp_path / "dst.safetensors") == start + size
    widths = {"I64": 8, "F32": 4, "BF16": 2}
    order = sorted((e["data_offsets"], widths[e["dtype"]]) for k, e in header.items() if k != "__metadata__")
    assert [w for _, w in order] == [8, 4, 2, 2] and all(b % w == 0 for (b, _), w in order)
    # no gaps
    assert [o[0][0] for o in order[1:]] == [o[0][1] for o in order[:-1]] and order[-1][0][1] == size
    with safe_open(tmp_path / "dst.safetensors", "pt") as f:
        assert f.metadata() == {"format": "pt", "x": "y"}
        assert (f.get_tensor("emb").dtype == torch.bfloat16
                and torch.equal(f.get_tensor("emb"), new["emb"].bfloat16()))
        assert torch.equal(f.get_tensor("b.bias"), new["b.bias"])
        assert all(torch.equal(f.get_tensor(k), tensors[k]) for k in ("a.weight", "c"))


def test_retarget_special_ids():
    class Tok:
        bos_token_id, eos_token_id, pad_token_id, sep_token_id, cls_token_id = 7, 8, None, 8, 7

    config = {"model_type": "llama", "bos_token_id": 1, "eos_token_id": [2, 5], "pad_token_id": 0,
              "decoder_start_token_id": 1, "sep_token_id": 2, "vocab_size": 10}
    assert retarget_special_ids(config, Tok()) == {"model_type": "llama", "bos_token_id": 7,
                                                   "eos_token_id": [8], "pad_token_id": None,
                                                   "decoder_start_token_id": 7, "sep_token_id": 8,
                                                   "vocab_size": 10}
    assert retarget_special_ids({"model_type": "xlm-roberta", "pad_token_id": 1}, Tok())["pad_token_id"] == 1
    assert "cls_token_id" not in retarget_special_ids({"eos_token_id": 2}, Tok())


def test_pickle_only_source_is_refused_and_lapt_folders_are_retargeted(tmp_path, target_tokenizer):
    pickled = tmp_path / "pickled"
    model = build("gpt2")
    model.config.save_pretrained(pickled)
    torch.save(model.state_dict(), pickled / "pytorch_model.bin")
    with pytest.raises(FileNotFoundError,
                       match="only pickle weights.*pytorch_model.bin.*safe_serialization=True"):
        export_init(str(pickled), str(tmp_path / "none.safetensors"), str(target_tokenizer),
                    str(tmp_path / "o"), "")
    assert not (tmp_path / "o").exists()
    lapt = tmp_path / "lapt"  # a LAPT model saved with the source's ids in its config
    model.save_pretrained(lapt)
    for f in target_tokenizer.iterdir():
        (lapt / f.name).write_bytes(f.read_bytes())
    export_folder(str(lapt), str(tmp_path / "lapt-export"), "card")
    config = json.loads((tmp_path / "lapt-export" / "config.json").read_text())
    assert (config["bos_token_id"], config["eos_token_id"], config["pad_token_id"]) == (7, 8, 9)
    assert (os.stat(tmp_path / "lapt-export" / "model.safetensors").st_ino
            == os.stat(lapt / "model.safetensors").st_ino)


def test_across_file_systems_shards_are_copied(tmp_path, monkeypatch, target_tokenizer):
    """Where neither a link nor a kernel copy works (another file system, no copy_file_range), shards are
    copied byte for byte and rewritten shards go through the buffer."""
    import vocab_transfer.export as export

    def cross_device(*args, **kwargs):
        raise OSError(errno.EXDEV, "cross-device")

    source = source_folder(tmp_path, "llama", "8KB")
    init = artifact(tmp_path, source)
    export_init(source, init, str(target_tokenizer), str(tmp_path / "linked"), "card")
    monkeypatch.setattr(export.os, "link", cross_device)
    monkeypatch.setattr(export.os, "copy_file_range", cross_device)
    export_init(source, init, str(target_tokenizer), str(tmp_path / "copied"), "card")
    for f in (tmp_path / "linked").glob("*.safetensors"):
        assert (tmp_path / "copied" / f.name).read_bytes() == f.read_bytes()
        assert os.stat(tmp_path / "copied" / f.name).st_nlink == 1


# --- the source's extra special tokens (Qwen2's ChatML tokens) in the export's tokenizer --------------------
CHAT = ["<|im_start|>", "<|im_end|>"]
TEXTS = [f"hello world number {i} this is test {i * 7} of things" for i in range(300)]


def qwen_source(tmp_path):
    """A tiny Qwen2 with a Qwen2-style tokenizer: ``<|im_start|>``/``<|im_end|>`` as extra special tokens."""
    from conftest import qwen_like_tokenizer

    tok = qwen_like_tokenizer(TEXTS, 300)
    path = tmp_path / "qwen-source"
    torch.manual_seed(0)
    Qwen2ForCausalLM(Qwen2Config(vocab_size=len(tok), tie_word_embeddings=True, bos_token_id=None,
                                 eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, **SMALL)
                     ).save_pretrained(path)
    tok.save_pretrained(path)
    return path, tok


def drop_extra_specials(folder) -> None:
    """A tokenizer folder whose tokenizer_config.json lists no extra special tokens (they stay added
    tokens)."""
    path = folder / "tokenizer_config.json"
    config = json.loads(path.read_text())
    for key in ("extra_special_tokens", "additional_special_tokens"):
        config.pop(key, None)
    path.write_text(json.dumps(config))
    (folder / "special_tokens_map.json").unlink(missing_ok=True)


def test_train_like_keeps_the_templates_extra_special_tokens(tmp_path):
    from conftest import qwen_like_tokenizer

    tok = qwen_like_tokenizer(TEXTS, 300)
    tok.save_pretrained(tmp_path)
    config = json.loads((tmp_path / "tokenizer_config.json").read_text())
    assert config.get("extra_special_tokens", config.get("additional_special_tokens")) == CHAT
    assert AutoTokenizer.from_pretrained(tmp_path).extra_special_tokens == CHAT


@pytest.mark.parametrize("listed", [True, False], ids=["target-lists-them", "target-dropped-them"])
def test_init_export_lists_the_sources_extra_special_tokens_with_target_ids(tmp_path, listed):
    """The export's tokenizer lists every extra special token of the source, with the target tokenizer's ids
    (here other ids than the source's: the target's added tokens come in another order)."""
    from conftest import CHATML

    from vocab_transfer.data.tokenizer import template_tokenizer, train_like

    source, source_tok = qwen_source(tmp_path)
    template = template_tokenizer("byte_level")
    template.add_special_tokens({"additional_special_tokens": ["<|other|>", *reversed(CHAT)]})
    template.bos_token = template.unk_token = None
    template.chat_template = CHATML
    target = train_like(template, TEXTS, 320)
    target_dir = tmp_path / "target"
    target.save_pretrained(target_dir)
    if not listed:
        drop_extra_specials(target_dir)
        assert not AutoTokenizer.from_pretrained(target_dir).extra_special_tokens or \
            set(AutoTokenizer.from_pretrained(target_dir).extra_special_tokens) == {"<|other|>"}
    g = torch.Generator().manual_seed(1)
    init = tmp_path / "init.safetensors"
    write_tensors({"embeddings": torch.randn(len(target), D, generator=g)}, init)
    out = tmp_path / "export"
    export_init(str(source), str(init), str(target_dir), str(out), "card")
    loaded = AutoTokenizer.from_pretrained(out)
    assert set(CHAT) <= set(loaded.extra_special_tokens)
    ids = loaded.convert_tokens_to_ids(CHAT)
    assert ids == target.convert_tokens_to_ids(CHAT) != source_tok.convert_tokens_to_ids(CHAT)
    assert set(CHAT) <= set(loaded.all_special_tokens)
    assert loaded.decode(ids, skip_special_tokens=True) == ""
    assert loaded.apply_chat_template([{"role": "user", "content": "hi"}],
                                      tokenize=False).startswith("<|im_start|>")


def test_source_extra_special_tokens_reads_both_names(tmp_path):
    from vocab_transfer.export import source_extra_special_tokens

    (tmp_path / "special_tokens_map.json").write_text(json.dumps({"additional_special_tokens": [
        {"content": "<|im_start|>", "special": True}, "<|im_end|>"]}))
    (tmp_path / "tokenizer_config.json").write_text(
        json.dumps({"extra_special_tokens": ["<|eot|>", "<|im_end|>"]}))
    assert source_extra_special_tokens(tmp_path) == ["<|eot|>", "<|im_end|>", "<|im_start|>"]
    assert source_extra_special_tokens(tmp_path / "missing") == []

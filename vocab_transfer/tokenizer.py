"""SentencePiece-Unigram tokenizers with XLM-R's layout (FOCUS §3, Appendix A: HF tokenizers, Unigram)."""

from __future__ import annotations

from collections.abc import Iterable

from tokenizers import AddedToken, SentencePieceUnigramTokenizer, processors
from transformers import AutoTokenizer, PreTrainedTokenizerBase, PreTrainedTokenizerFast

#: XLM-R's special tokens: ids 0-3 up front, ``<mask>`` as the very last id.
XLMR_SPECIALS = {"bos_token": "<s>", "pad_token": "<pad>", "eos_token": "</s>", "unk_token": "<unk>"}
MASK = "<mask>"


def train_unigram_tokenizer(texts: Iterable[str], vocab_size: int, *, max_piece_length: int = 16,
                            model_max_length: int = 512, show_progress: bool = True) -> PreTrainedTokenizerFast:
    """Train a SentencePiece Unigram tokenizer laid out like XLM-R's.

    ``<s>=0, <pad>=1, </s>=2, <unk>=3``, the learned pieces, then ``<mask>`` last, so
    ``len(tokenizer) == vocab_size``; sequences are ``<s> A </s>`` and pairs ``<s> A </s></s> B </s>``.
    Deterministic for the same texts in the same order.
    """
    specials = list(XLMR_SPECIALS.values())
    if vocab_size <= len(specials) + 1:
        raise ValueError(f"vocab_size={vocab_size} leaves no room for pieces")
    sp = SentencePieceUnigramTokenizer()
    sp.train_from_iterator(iter(texts), vocab_size=vocab_size - 1, special_tokens=specials, unk_token="<unk>",
                           show_progress=show_progress)
    backend = sp._tokenizer
    backend.add_special_tokens([AddedToken(MASK, lstrip=True, special=True, normalized=False)])
    backend.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, mask_token=MASK, cls_token="<s>", sep_token="</s>",
                                  model_max_length=model_max_length, **XLMR_SPECIALS)
    assert [tok.convert_tokens_to_ids(t) for t in specials] == [0, 1, 2, 3], "XLM-R special-token layout broken"
    assert tok.mask_token_id == len(tok) - 1
    return tok


def load_tokenizer(path: str) -> PreTrainedTokenizerBase:
    """Load a tokenizer saved with ``save_pretrained`` (or a hub id, when the config names one)."""
    return AutoTokenizer.from_pretrained(path)

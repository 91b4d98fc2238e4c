"""SentencePiece-Unigram tokenizers with XLM-R's layout (FOCUS §3, Appendix A).

Trained with Google's ``sentencepiece`` (deterministic for a fixed ``num_threads``; the HF
``tokenizers`` Unigram trainer sums in hash-map order and changes piece ids from run to run),
then served as an HF fast tokenizer (``tokenizer.json``) that ``AutoTokenizer`` loads.
"""

from __future__ import annotations

import io
from collections.abc import Iterable

import sentencepiece as spm
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
from transformers import AutoTokenizer, PreTrainedTokenizerBase, PreTrainedTokenizerFast

#: XLM-R's special tokens: ids 0-3 up front, ``<mask>`` as the very last id.
XLMR_SPECIALS = {"bos_token": "<s>", "pad_token": "<pad>", "eos_token": "</s>", "unk_token": "<unk>"}
MASK = "<mask>"


def train_unigram_tokenizer(texts: Iterable[str], vocab_size: int, *, character_coverage: float = 1.0,
                            max_piece_length: int = 16, num_threads: int = 2, model_max_length: int = 512,
                            show_progress: bool = False) -> PreTrainedTokenizerFast:
    """Train a SentencePiece Unigram tokenizer laid out like XLM-R's.

    ``<s>=0, <pad>=1, </s>=2, <unk>=3``, the learned pieces, then ``<mask>`` last, so
    ``len(tokenizer) == vocab_size``; sequences are ``<s> A </s>`` and pairs ``<s> A </s></s> B </s>``.
    ``character_coverage=1.0`` keeps every character, as HF tokenizers does (FOCUS App. A).
    Bit-identical output for the same texts, order, and ``num_threads``.
    """
    if vocab_size <= len(XLMR_SPECIALS) + 1:
        raise ValueError(f"vocab_size={vocab_size} leaves no room for pieces")
    proto = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(texts), model_writer=proto, model_type="unigram", vocab_size=vocab_size - 1,
        character_coverage=character_coverage, max_sentencepiece_length=max_piece_length,
        bos_id=0, pad_id=1, eos_id=2, unk_id=3, normalization_rule_name="nmt_nfkc", num_threads=num_threads,
        input_sentence_size=0, shuffle_input_sentence=False, minloglevel=0 if show_progress else 2)
    sp = spm.SentencePieceProcessor(model_proto=proto.getvalue())
    vocab = [(sp.id_to_piece(i), 0.0 if sp.is_control(i) or sp.is_unknown(i) else sp.get_score(i))
             for i in range(sp.get_piece_size())]
    backend = Tokenizer(models.Unigram(vocab, unk_id=3, byte_fallback=False))
    backend.normalizer = normalizers.Sequence(
        [normalizers.Nmt(), normalizers.NFKC(), normalizers.Replace(Regex(" {2,}"), " ")])
    backend.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    backend.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    backend.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in XLMR_SPECIALS.values()])
    backend.add_special_tokens([AddedToken(MASK, lstrip=True, special=True, normalized=False)])
    backend.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, mask_token=MASK, cls_token="<s>", sep_token="</s>",
                                  model_max_length=model_max_length, **XLMR_SPECIALS)
    assert [tok.convert_tokens_to_ids(t) for t in XLMR_SPECIALS.values()] == [0, 1, 2, 3], "layout broken"
    assert tok.mask_token_id == len(tok) - 1 == vocab_size - 1
    return tok


def load_tokenizer(path: str) -> PreTrainedTokenizerBase:
    """Load a tokenizer saved with ``save_pretrained`` (or a hub id, when the config names one)."""
    return AutoTokenizer.from_pretrained(path)

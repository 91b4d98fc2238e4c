"""Target tokenizers: SentencePiece Unigram with XLM-R's layout (FOCUS §3, Appendix A), or a tokenizer of
another family (SentencePiece-style BPE with byte fallback, byte-level BPE, WordPiece) laid out like a given
one: the source model's own (``tokenizer.like``), or a template of the family (``tokenizer.kind``). Unigram is
trained with Google's ``sentencepiece`` (deterministic for a fixed ``num_threads``; the HF ``tokenizers``
Unigram trainer sums in hash-map order and changes piece ids from run to run), then served as an HF fast
tokenizer (``tokenizer.json``) that ``AutoTokenizer`` loads. BPE and WordPiece are trained by the
``tokenizers`` trainers on the template's pipeline (:func:`train_like`; deterministic: the same texts give the
same file, WordPiece's pieces are numbered in code-point order).

SentencePiece loads every training sentence (about 20 bytes of memory per byte of text, measured), so a large
corpus is trained on a seeded uniform sample of ``input_sentence_size`` documents streamed from the corpus
(:func:`sample_texts`; large-vocabulary tokenizers are trained the same way). :func:`tokenizer_fingerprint`
identifies a tokenizer's files, so that artifacts built with one (token shards) can refuse another.

Every vocabulary has a tokenizer-independent canonical form (:func:`canonicalize_vocab`,
:class:`CanonicalToken`): surface text without word-start or continuation markers plus a word-start flag, read
from the backend's JSON (:func:`detect_tokenizer_kind`). The overlap, the methods that compare vocabularies,
the per-character evaluation and the vocabulary tables all compare tokens in that form."""

from __future__ import annotations

import codecs
import hashlib
import io
import json
import os
import re
import tempfile
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sentencepiece as spm
from tokenizers import (
    AddedToken,
    Regex,
    Tokenizer,
    decoders,
    models,
    normalizers,
    pre_tokenizers,
    processors,
    trainers,
)

from .. import lazy
from ..source_model import remote_code_allowed
from .corpus import corpus_num_docs, iter_corpus

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase, PreTrainedTokenizerFast

np = lazy.module("numpy")
transformers = lazy.module("transformers")

#: XLM-R's special tokens: ids 0-3 up front, ``<mask>`` as the very last id.
XLMR_SPECIALS = {"bos_token": "<s>", "pad_token": "<pad>", "eos_token": "</s>", "unk_token": "<unk>"}
MASK = "<mask>"


def train_unigram_tokenizer(texts: Iterable[str], vocab_size: int, *, character_coverage: float = 1.0,
                            num_threads: int = 2, show_progress: bool = False) -> PreTrainedTokenizerFast:
    """Train a SentencePiece Unigram tokenizer laid out like XLM-R's. ``<s>=0, <pad>=1, </s>=2, <unk>=3``, the
    learned pieces, then ``<mask>`` last, so ``len(tokenizer) == vocab_size``; sequences are ``<s> A </s>``
    and pairs ``<s> A </s></s> B </s>``. ``character_coverage=1.0`` keeps every character, as HF tokenizers
    does (FOCUS App. A). Bit-identical output for the same texts, order, and ``num_threads``. Texts longer
    than SentencePiece's sentence limit are cut at spaces (:func:`sentence_chunks`) instead of being
    skipped."""
    if vocab_size <= len(XLMR_SPECIALS) + 1:
        raise ValueError(f"vocab_size={vocab_size} leaves no room for pieces")
    proto = io.BytesIO()
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=sentence_chunks(texts), model_writer=proto, model_type="unigram",
            vocab_size=vocab_size - 1, character_coverage=character_coverage, max_sentencepiece_length=16,
            bos_id=0, pad_id=1, eos_id=2, unk_id=3, normalization_rule_name="nmt_nfkc", input_sentence_size=0,
            num_threads=num_threads, shuffle_input_sentence=False, minloglevel=0 if show_progress else 2)
    except RuntimeError as e:
        most = re.search(r"Vocabulary size too high \(\d+\)\. Please set it to a value <= (\d+)", str(e))
        if most is None:
            raise
        raise ValueError(f"tokenizer.vocab_size {vocab_size} is more than this corpus supports: its text has "
                         f"at most {int(most.group(1)) + 1} distinct pieces (specials and <mask> included); "
                         "lower tokenizer.vocab_size, or give the language more text") from None
    sp = spm.SentencePieceProcessor(model_proto=proto.getvalue())
    vocab = [(sp.id_to_piece(i), 0.0 if sp.is_control(i) or sp.is_unknown(i) else sp.get_score(i))
             for i in range(sp.get_piece_size())]
    backend = Tokenizer(models.Unigram(vocab, unk_id=3, byte_fallback=False))
    backend.normalizer = normalizers.Sequence(
        [normalizers.Nmt(), normalizers.NFKC(), normalizers.Replace(Regex(" {2,}"), " ")])
    backend.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    backend.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    backend.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in XLMR_SPECIALS.values()]
                               + [AddedToken(MASK, lstrip=True, special=True, normalized=False)])
    backend.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    tok = transformers.PreTrainedTokenizerFast(tokenizer_object=backend, mask_token=MASK, cls_token="<s>",
                                               sep_token="</s>", model_max_length=512, **XLMR_SPECIALS)
    assert [tok.convert_tokens_to_ids(t) for t in XLMR_SPECIALS.values()] == [0, 1, 2, 3], "layout broken"
    assert tok.mask_token_id == len(tok) - 1 == vocab_size - 1
    # save_tokenizer writes it beside: shards encode with it (fast path)
    tok.sentencepiece_model = proto.getvalue()
    return tok


#: Tokenizer families a target tokenizer can be trained in (``tokenizer.kind``).
KINDS = ("unigram", "bpe", "byte_level", "wordpiece")


def template_tokenizer(kind: str) -> PreTrainedTokenizerFast:
    """An untrained tokenizer of family ``kind`` laid out like the usual model of that family: ``bpe`` like
    Llama 2 and Mistral (SentencePiece BPE with byte fallback; ``<unk>=0, <s>=1, </s>=2``, the 256 ``<0xNN>``
    tokens, a prompt is ``<s> A``), ``byte_level`` like GPT-2 (``<|endoftext|>`` for bos, eos and unk; no
    specials added), ``wordpiece`` like BERT (``[PAD] [UNK] [CLS] [SEP] [MASK]``, ``[CLS] A [SEP]``).
    :func:`train_like` trains it."""
    if kind == "bpe":
        backend = Tokenizer(models.BPE(vocab={}, merges=[], unk_token="<unk>",
                                       byte_fallback=True, fuse_unk=True))
        backend.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
        backend.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                             decoders.Fuse(), decoders.Strip(" ", 1, 0)])
        specials = {"unk_token": "<unk>", "bos_token": "<s>", "eos_token": "</s>"}
        post = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
                                             special_tokens=[("<s>", 1)])
    elif kind == "byte_level":
        backend = Tokenizer(models.BPE(vocab={}, merges=[]))
        backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        backend.decoder = decoders.ByteLevel()
        specials = dict.fromkeys(("unk_token", "bos_token", "eos_token"), "<|endoftext|>")
        post = processors.ByteLevel(trim_offsets=False)
    elif kind == "wordpiece":
        backend = Tokenizer(models.WordPiece(vocab={}, unk_token="[UNK]", max_input_chars_per_word=100))
        backend.normalizer = normalizers.BertNormalizer(lowercase=False)
        backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        backend.decoder = decoders.WordPiece(prefix="##")
        specials = {"pad_token": "[PAD]", "unk_token": "[UNK]", "cls_token": "[CLS]", "sep_token": "[SEP]",
                    "mask_token": "[MASK]"}
        post = processors.TemplateProcessing(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
                                             special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    else:
        raise ValueError(f"no template for tokenizer kind {kind!r} (one of {', '.join(KINDS[1:])}; unigram "
                         "is trained by train_unigram_tokenizer)")
    backend.add_special_tokens([AddedToken(t, special=True, normalized=False)
                                for t in dict.fromkeys(specials.values())])
    backend.post_processor = post
    return transformers.PreTrainedTokenizerFast(tokenizer_object=backend, **specials)


def tokenizer_kind(tokenizer) -> str:
    """The family of a fast tokenizer in ``tokenizer.kind``'s terms: ``unigram``, ``bpe``
    (SentencePiece-style, ``▁`` for spaces), ``byte_level`` (GPT-2's byte symbols) or ``wordpiece``:
    :func:`detect_tokenizer_kind` (which raises for any other) with SentencePiece split by model."""
    kind = detect_tokenizer_kind(tokenizer)
    if kind == "sentencepiece":
        return "unigram" if isinstance(tokenizer.backend_tokenizer.model, models.Unigram) else "bpe"
    return {"bytelevel_bpe": "byte_level", "wordpiece": "wordpiece"}[kind]


BYTE_TOKENS = tuple(f"<0x{b:02X}>" for b in range(256))  # byte fallback's tokens, SentencePiece's spelling


def train_like(template: PreTrainedTokenizerFast, texts: Iterable[str], vocab_size: int, *,
               show_progress: bool = False) -> PreTrainedTokenizerFast:
    """A BPE or WordPiece tokenizer of ``vocab_size`` tokens trained on ``texts``, ``template``'s pipeline.
    Kept from the template: normalizer, pre-tokenizer, decoder, the post-processor (its token ids remapped),
    every added token with its flags (ids first, in the template's order), the named special tokens, the chat
    template and ``model_max_length``. Byte fallback gets the 256 ``<0xNN>`` tokens right after the added
    tokens (Llama's layout); a byte-level pre-tokenizer gets all 256 byte symbols. A SentencePiece-style
    template that does not split words (no pre-tokenizer, or ``Metaspace(split=False)``) is trained on words
    cut before each ``▁``, as SentencePiece does, so no piece spans two words. Same texts, same tokenizer (the
    trainers break ties by pair order). ``len(result) == vocab_size``."""
    spec = json.loads(template.backend_tokenizer.to_str())
    model, added = spec["model"], sorted(spec.pop("added_tokens"), key=lambda a: a["id"])
    post = spec.pop("post_processor")
    if model["type"] not in ("BPE", "WordPiece"):
        raise ValueError(f"train_like trains BPE and WordPiece tokenizers, not {model['type']} (Unigram: "
                         "train_unigram_tokenizer)")
    specials = [AddedToken(a["content"], single_word=a["single_word"], lstrip=a["lstrip"], rstrip=a["rstrip"],
                           normalized=a["normalized"], special=True) for a in added]
    bpe = model["type"] == "BPE"
    byte_fallback = bpe and model.get("byte_fallback")
    byte_level = "ByteLevel" in json.dumps(spec.get("pre_tokenizer"))
    reserved = len(specials) + (len(BYTE_TOKENS) if byte_fallback else 0) + (256 if byte_level else 0)
    if vocab_size <= reserved:
        raise ValueError(f"vocab_size={vocab_size} leaves no room for pieces ({reserved} added, "
                         "byte and alphabet tokens)")
    pre = spec["pre_tokenizer"]
    if bpe and not byte_level and (pre is None or pre.get("type") == "Metaspace"):
        spec["pre_tokenizer"] = ({**pre, "split": True} if pre else
                                 json.loads(pre_tokenizers.Split("▁", "merged_with_next").__getstate__()))
    model.update(vocab={}, **({"merges": []} if bpe else {}))  # the template's own pieces: not parsed
    backend = Tokenizer.from_str(json.dumps(spec))
    if bpe:
        backend.train_from_iterator(texts, trainer=trainers.BpeTrainer(
            vocab_size=vocab_size, show_progress=show_progress,
            special_tokens=specials + list(BYTE_TOKENS if byte_fallback else ()),
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet() if byte_level else [],
            **{k: model[k] for k in ("continuing_subword_prefix", "end_of_word_suffix") if model.get(k)}))
    else:
        prefix = model.get("continuing_subword_prefix", "##")
        with tempfile.TemporaryDirectory() as tmp:
            spool = Path(tmp) / "texts.jsonl"
            continuing = _continuation_symbols(backend, texts, prefix, spool)
            trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, show_progress=show_progress,
                                                special_tokens=specials + continuing,
                                                continuing_subword_prefix=prefix)
            with open(spool, encoding="utf-8") as f:
                backend.train_from_iterator((json.loads(line) for line in f), trainer=trainer)
    trained = json.loads(backend.to_str())
    trained["pre_tokenizer"] = pre
    ids = trained["model"]["vocab"]
    # its trainer numbers the pieces in hash order; a WordPiece ignores the order
    if not bpe:
        fixed = [a["content"] for a in added]
        ids = trained["model"]["vocab"] = {t: i for i, t in enumerate(
            sorted(fixed, key=ids.get) + sorted(t for t in ids if t not in fixed))}
        for a in trained["added_tokens"]:
            a["id"] = ids[a["content"]]
    flags = {a["content"]: a["special"] for a in added}
    trained["added_tokens"] = [a | {"special": flags[a["content"]]} for a in trained["added_tokens"]
                               # byte and continuation tokens stay in the vocabulary only
                               if a["content"] in flags]
    trained["post_processor"] = _remap_post_processor(post, ids)
    out = transformers.PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer.from_str(json.dumps(trained)), model_max_length=template.model_max_length,
        **{k: v for k in ("bos_token", "eos_token", "unk_token", "pad_token", "cls_token",
                          "sep_token", "mask_token")
           if (v := getattr(template, k, None)) is not None})
    set_extra_special_tokens(out, [t for t in extra_special_tokens(template) if t in ids])
    out.chat_template = template.chat_template
    if len(out) != vocab_size:
        raise ValueError(f"trained {len(out)} tokens, not vocab_size={vocab_size}: the texts hold too few "
                         "distinct pieces for that vocabulary")
    return out


def _continuation_symbols(backend: Tokenizer, texts: Iterable[str], prefix: str, spool: Path) -> list[str]:
    """Every ``prefix + c`` for a character ``c`` that follows the first of a word of ``texts`` (as
    ``backend`` normalizes and splits them), sorted; the texts go to ``spool`` (JSON lines) for training. The
    WordPiece trainer numbers these continuation symbols in hash order, which differs from run to run, and
    breaks ties between equally frequent merges by those numbers: given to it first, as special tokens in
    sorted order, they are numbered alike in every run, and the same texts give the same vocabulary."""
    normalize = backend.normalizer.normalize_str if backend.normalizer is not None else str
    split = (backend.pre_tokenizer.pre_tokenize_str if backend.pre_tokenizer is not None
             else (lambda s: [(s, None)]))
    chars: set[str] = set()
    with open(spool, "w", encoding="utf-8") as f:
        for text in texts:
            f.write(json.dumps(text, ensure_ascii=False) + "\n")
            for word, _ in split(normalize(text)):
                chars.update(word[1:])
    return [prefix + c for c in sorted(chars)]


def extra_special_tokens(tokenizer) -> list[str]:
    """The special tokens ``tokenizer`` lists beyond its named ones (bos, eos, ...: Qwen2's ``<|im_start|>``,
    ``<|im_end|>``), under either name transformers has given the list: ``extra_special_tokens``
    (transformers 5) or ``additional_special_tokens`` (before). A dict of named tokens gives its values."""
    for name in ("extra_special_tokens", "additional_special_tokens"):
        value = getattr(tokenizer, name, None)
        if isinstance(value, dict):
            value = list(value.values())
        if value:
            return [str(t) for t in value]
    return []


def set_extra_special_tokens(tokenizer, tokens: list[str]) -> None:
    """List ``tokens`` (already in ``tokenizer``'s vocabulary) as its extra special tokens, after those it
    lists, so that ``save_pretrained`` writes them to ``tokenizer_config.json``
    (:func:`extra_special_tokens`)."""
    have = extra_special_tokens(tokenizer)
    missing = [t for t in dict.fromkeys(tokens) if t not in have]
    if missing:
        tokenizer.add_special_tokens({"additional_special_tokens": have + missing})  # replaces the list


def _remap_post_processor(post: dict | None, ids: dict[str, int]) -> dict | None:
    """``post`` with the id of every special token it names looked up in ``ids`` (the new vocabulary)."""
    if post is None:
        return None
    post = json.loads(json.dumps(post))
    if post.get("type") == "Sequence":
        post["processors"] = [_remap_post_processor(p, ids) for p in post["processors"]]
    for entry in (post.get("special_tokens") or {}).values():  # TemplateProcessing
        entry["ids"] = [ids[t] for t in entry["tokens"]]
    for key in ("cls", "sep"):  # RobertaProcessing, BertProcessing
        if key in post:
            post[key] = [post[key][0], ids[post[key][0]]]
    return post


def train_target_tokenizer(texts: Iterable[str], vocab_size: int, *, kind: str | None = None,
                           like: PreTrainedTokenizerFast | None = None, character_coverage: float = 1.0,
                           num_threads: int = 2, show_progress: bool = False) -> PreTrainedTokenizerFast:
    """A target tokenizer of ``kind``, or of ``like``'s family laid out like ``like`` (a source model's
    tokenizer), or else SentencePiece Unigram in XLM-R's layout. A Unigram ``like`` is trained in XLM-R's
    layout, which must then have ``like``'s special tokens."""
    if like is not None and kind is not None:
        raise ValueError("give a tokenizer kind or a tokenizer to train like, not both")
    kind = kind or (tokenizer_kind(like) if like is not None else "unigram")
    if kind == "unigram":
        tok = train_unigram_tokenizer(texts, vocab_size, character_coverage=character_coverage,
                                      num_threads=num_threads, show_progress=show_progress)
        if like is not None:
            theirs = {k: str(v) for k in (*XLMR_SPECIALS, "mask_token") if (v := getattr(like, k, None))}
            ours = {k: str(getattr(tok, k)) for k in theirs}
            if theirs != ours:
                raise ValueError(f"a Unigram tokenizer is trained in XLM-R's layout ({ours}), which lacks "
                                 f"the source tokenizer's special tokens {theirs}: set tokenizer.kind "
                                 "instead of tokenizer.like")
        return tok
    if kind not in KINDS:
        raise ValueError(f"tokenizer kind {kind!r}: one of {', '.join(KINDS)}")
    return train_like(like if like is not None else template_tokenizer(kind), texts, vocab_size,
                      show_progress=show_progress)


SPM_MODEL = "unigram.model"  # the SentencePiece model of a tokenizer trained here, beside its tokenizer.json


def save_tokenizer(tokenizer, folder: str | os.PathLike) -> None:
    """``save_pretrained``, plus the SentencePiece model of a tokenizer trained by
    :func:`train_unigram_tokenizer` (``unigram.model``), which token shards encode with
    (:class:`SentencePieceEncoder`)."""
    tokenizer.save_pretrained(str(folder))
    if (model := getattr(tokenizer, "sentencepiece_model", None)) is not None:
        (Path(folder) / SPM_MODEL).write_bytes(model)


class SentencePieceEncoder:
    """The ids of a tokenizer trained here, computed by SentencePiece's own encoder (3.3 times the
    ``tokenizers`` Unigram model it is served with, on one thread). The texts go through the tokenizer's own
    normalizer (``tokenizers``) first, and SentencePiece gets a copy of the model whose normalizer is the
    identity (and that keeps whitespace as it is), so that both see the same string: the two disagreed on
    zero-width characters otherwise (12 of 30,782 Arabic verses; 4,835 of 30,900 Hindi). With that, both find
    the same most likely segmentation; they differ only where two segmentations tie (the same pieces in
    another order, equal score): 1 of 29,346 Chichewa verses (``o wawa wa`` against ``o wa wawa``), none of
    the demo's Arabic, German, Hebrew, Swahili and Tagalog ones. The shard writer checks a sample of every
    batch against the tokenizer (:meth:`equivalent`: equal, or a tie) and falls back to it on any other
    difference."""

    def __init__(self, tokenizer, model: bytes, threads: int | None = None):
        self.normalizer = tokenizer.backend_tokenizer.normalizer
        self.sp = spm.SentencePieceProcessor(model_proto=_with_identity_normalizer(model))
        self.threads = threads or 1

    def __call__(self, texts: list[str]) -> list[list[int]]:
        normalized = (self.normalizer.normalize_str(t) if self.normalizer is not None else t for t in texts)
        # Metaspace: a leading space is the "▁"
        return self.sp.encode([t.removeprefix(" ") for t in normalized], num_threads=self.threads)

    def equivalent(self, want: list[int], got: list[int], tol: float = 1e-4) -> bool:
        """Whether ``got`` is ``want`` or another segmentation of the same string with the same Unigram score
        (a tie the two encoders break differently)."""
        if list(want) == list(got):
            return True
        piece, score = self.sp.id_to_piece, self.sp.get_score
        return ("".join(piece(int(i)) for i in want) == "".join(piece(int(i)) for i in got)
                and abs(sum(score(int(i)) for i in want) - sum(score(int(i)) for i in got)) <= tol)


def _varint(data: bytes, i: int) -> tuple[int, int]:
    """The protobuf varint at ``data[i]`` and the offset after it."""
    value = shift = 0
    while data[i] & 0x80:
        value, i, shift = value | (data[i] & 0x7F) << shift, i + 1, shift + 7
    return value | data[i] << shift, i + 1


def _with_identity_normalizer(model: bytes) -> bytes:
    """A SentencePiece ``ModelProto`` with its ``normalizer_spec`` (field 3) replaced by the identity:
    name "identity", no character map, dummy prefix and whitespace escaping on, extra whitespace kept."""
    # 1: name (8 bytes); 3: add_dummy_prefix, 4: remove_extra_whitespaces, 5: escape
    spec = b"\x0a\x08identity" + b"\x18\x01" + b"\x20\x00" + b"\x28\x01"
    out, i = bytearray(), 0
    while i < len(model):
        key, j = _varint(model, i)
        wire = key & 7
        if wire == 2:  # length-delimited
            size, j = _varint(model, j)
            end = j + size
        else:  # varint, fixed32 / fixed64
            end = _varint(model, j)[1] if wire == 0 else j + (4 if wire == 5 else 8)
        out += (b"\x1a\x10" + spec) if key >> 3 == 3 else model[i:end]  # field 3, 16 bytes long
        i = end
    return bytes(out)


SPM_MAX_SENTENCE_BYTES = 4192  # SentencePiece's default max_sentence_length: it skips longer sentences


def sentence_chunks(texts: Iterable[str], max_bytes: int = SPM_MAX_SENTENCE_BYTES) -> Iterator[str]:
    """``texts`` with every one longer than ``max_bytes`` UTF-8 bytes cut into pieces at spaces (at a
    character boundary where a piece has no space): whole Wikipedia articles would otherwise be dropped from
    tokenizer training. Pieces cannot span a space in SentencePiece (``split_by_whitespace``), so cutting
    there loses no candidate piece."""
    for text in texts:
        raw = text.encode("utf-8")
        if len(raw) <= max_bytes:
            yield text
            continue
        start = 0
        while start < len(raw):
            end = min(start + max_bytes, len(raw))
            if end < len(raw):
                space = raw.rfind(b" ", start, end + 1)
                if space > start:
                    end = space
                else:
                    while end > start and raw[end] & 0xC0 == 0x80:  # not inside a UTF-8 sequence
                        end -= 1
            piece = raw[start:end].decode("utf-8").strip()
            if piece:
                yield piece
            start = end


#: ``tokenizer_class`` values of a folder that ``AutoTokenizer`` loads as ``PreTrainedTokenizerFast`` itself.
GENERIC_CLASSES = ("TokenizersBackend", "PreTrainedTokenizerFast")


def load_tokenizer(path: str) -> PreTrainedTokenizerBase:
    """Load a tokenizer saved with ``save_pretrained`` (or a hub id) through ``AutoTokenizer``; a
    tokenizer-only folder (no ``config.json``: the target tokenizers trained here) of the generic fast class
    is loaded by that class directly, the same object, without importing torch and transformers' model
    registry (a second or two of every job's start)."""
    folder = Path(path)
    config = folder / "tokenizer_config.json"
    if config.is_file() and (folder / "tokenizer.json").is_file() and not (folder / "config.json").exists():
        settings = json.loads(config.read_text(encoding="utf-8"))
        if settings.get("tokenizer_class") in GENERIC_CLASSES and "auto_map" not in settings:
            return transformers.PreTrainedTokenizerFast.from_pretrained(path)
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path, trust_remote_code=remote_code_allowed(path))


def sample_positions(n: int, k: int, seed: int, chunk: int = 1 << 16) -> np.ndarray:
    """``k`` distinct positions of ``range(n)``, uniformly at random, sorted: each chunk of ``chunk``
    positions takes a hypergeometric share of what is left, then that many positions of its own, so memory is
    the sample's 8 bytes per position whatever ``n``. A function of ``(n, k, seed, chunk)``."""
    if not 0 <= k <= n:
        raise ValueError(f"cannot sample {k} of {n} positions")
    rng = np.random.default_rng(seed)
    out, left, need = [], n, k
    for start in range(0, n, chunk):
        size = min(chunk, n - start)
        take = need if size == left else int(rng.hypergeometric(size, left - size, need)) if need else 0
        if take:
            out.append(start + np.sort(rng.choice(size, take, replace=False)))
        left, need = left - size, need - take
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def sample_texts(corpus: str | os.PathLike, sentences: int | None, *, seed: int, max_docs: int | None = None,
                 info: dict | None = None) -> Iterator[str]:
    """Stream the training texts of a tokenizer from a corpus split: its first ``max_docs`` documents, or of
    those a seeded uniform sample of ``sentences`` (:func:`sample_positions`), in corpus order. Nothing but
    the sample's positions is held. ``info`` receives ``corpus_docs``, ``sample_docs`` and (once consumed)
    ``sample_bytes``."""
    import pyarrow as pa

    n = corpus_num_docs(corpus)
    n = min(n, max_docs) if max_docs else n
    keep = None if sentences is None or sentences >= n else sample_positions(n, sentences, seed)
    info = info if info is not None else {}
    info.update(corpus_docs=n, sample_docs=n if keep is None else len(keep), sample_bytes=0)
    start = 0
    for batch in iter_corpus(corpus, ("text",)):  # only the sampled rows of a batch become Python strings
        if start >= n:
            return
        column = batch.column(0).slice(0, n - start)
        if keep is not None:
            lo, hi = np.searchsorted(keep, [start, start + len(column)])
            column = column.take(pa.array(keep[lo:hi] - start))
        start += batch.num_rows
        for text in column.to_pylist():
            info["sample_bytes"] += len(text.encode("utf-8"))
            yield text
        if keep is not None and (not len(keep) or start > keep[-1]):  # the sample is complete
            return


#: Files that define a tokenizer (a fast tokenizer is its ``tokenizer.json``; slow ones have vocabularies).
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
                   "vocab.txt", "vocab.json", "merges.txt", "sentencepiece.bpe.model", "spiece.model",
                   "tokenizer.model", "source.spm", "target.spm")


def tokenizer_fingerprint(path: str | os.PathLike) -> str:
    """SHA-256 over the files that define the tokenizer saved in folder ``path`` (``tokenizer.json`` when
    there is one, else its vocabulary and settings files; model weights and configs are ignored)."""
    path = Path(path)
    names = ["tokenizer.json"] if (path / "tokenizer.json").is_file() else [
        n for n in TOKENIZER_FILES if (path / n).is_file()]
    if not names:
        raise FileNotFoundError(f"{path} holds no tokenizer files (expected tokenizer.json or one of "
                                f"{list(TOKENIZER_FILES)})")
    return hashlib.sha256(b"".join(n.encode() + b"\0" + (path / n).read_bytes() for n in names)).hexdigest()


TRAINING_INFO = "training.json"  # beside a trained tokenizer: corpus, sample and settings it was trained with


def write_training_info(folder: str | os.PathLike, info: dict) -> None:
    (Path(folder) / TRAINING_INFO).write_text(json.dumps(info, indent=1, sort_keys=True) + "\n")


# --- canonical token forms ----------------------------------------------------------------------------------
BOW = "▁"
CANONICAL_KINDS = ("sentencepiece", "bytelevel_bpe", "wordpiece")  # detect_tokenizer_kind
BYTE_FALLBACK = re.compile(r"<0x([0-9A-Fa-f]{2})>")  # a byte-fallback token
_WORDCHAR = re.compile(r"[^\W\d_]")  # mostly letters (also e.g. "²", "Ⅻ")


def _hex_bytes(exc: UnicodeError) -> tuple[str, int]:
    """Codec error handler: undecodable bytes become ``<0xNN>`` (SentencePiece byte-fallback style)."""
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    return "".join(f"<0x{b:02X}>" for b in exc.object[exc.start : exc.end]), exc.end


HEX_BYTES = "vocab_transfer_hexbytes"
codecs.register_error(HEX_BYTES, _hex_bytes)


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable unicode character table."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), 256)]
    rest = [b for b in range(256) if b not in printable]  # mapped to 256, 257, ...
    return {b: chr(b) for b in printable} | {b: chr(256 + n) for n, b in enumerate(rest)}


_UNICODE_TO_BYTE = {c: b for b, c in _bytes_to_unicode().items()}


@dataclass(frozen=True, slots=True)
class CanonicalToken:
    """Tokenizer-independent view of one vocabulary entry. ``text``: surface text without BOW/continuation
    marker, bytes decoded to unicode (undecodable bytes are written ``<0xNN>``; holes in the id space have
    empty text and ``special=True``). ``bow``: the token starts a word. ``special``: control token; then
    ``text`` is the raw string."""

    text: str
    bow: bool
    special: bool

    @property
    def form(self) -> str:
        """One canonical string: ``"▁" + text`` for BOW tokens, ``text`` otherwise (specials: raw string)."""
        return self.text if self.special or not self.bow else BOW + self.text

    @property
    def symbolic(self) -> bool:
        """Non-special and only numbers/punctuation/symbols/whitespace; a lone BOW token counts."""
        return not self.special and (is_symbolic(self.text) or (self.bow and self.text == ""))


def is_symbolic(text: str, *, symbols: bool = True) -> bool:
    """True iff ``text`` is non-empty and every char is a number, punctuation, symbol or whitespace. Unicode
    categories N*, P*, S*, Z* or ``str.isspace()``; with ``symbols=False`` without S* (numbers, punctuation
    and whitespace only: FOCUS's Symbolic Overlap). The BOW marker "▁" (U+2581, category So) is itself
    symbolic, so "▁", "▁1" are symbolic; a lone BOW token (canonical text "") is treated as whitespace by
    :attr:`CanonicalToken.symbolic`. The empty string is not symbolic."""
    if not text:
        return False
    if (m := _WORDCHAR.search(text)) and unicodedata.category(m.group())[0] == "L":  # fast reject: a letter
        return False
    categories = "NPSZ" if symbols else "NPZ"
    return all(ch.isspace() or unicodedata.category(ch)[0] in categories for ch in text)


def _backend(tokenizer: Any) -> Tokenizer:
    """The ``tokenizers.Tokenizer`` behind a transformers fast tokenizer / tokenizers wrapper."""
    if isinstance(tokenizer, Tokenizer):
        return tokenizer
    for attr in ("backend_tokenizer", "_tokenizer"):
        backend = getattr(tokenizer, attr, None)
        if isinstance(backend, Tokenizer):
            return backend
    raise TypeError(f"need a fast (tokenizers-backed) tokenizer, got {type(tokenizer).__name__}")


def _types(node: Any) -> set[str]:
    """All component ``type`` names in a (nested) tokenizer JSON fragment."""
    if isinstance(node, dict):
        found = {node["type"]} if isinstance(node.get("type"), str) else set()
        return found.union(*(_types(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_types(v) for v in node))
    return set()


def detect_tokenizer_kind(tokenizer: Any) -> str:
    """Return ``"sentencepiece"``, ``"bytelevel_bpe"`` or ``"wordpiece"`` from the backend tokenizer JSON.
    Unigram, or BPE with Metaspace / byte fallback / a "▁"-Replace (Llama-style) -> sentencepiece; BPE with
    ByteLevel pre-tokenizer or decoder -> bytelevel_bpe; WordPiece -> wordpiece. Raises ValueError for
    anything else."""
    backend = _backend(tokenizer)
    mtype, byte_fallback = type(backend.model).__name__, getattr(backend.model, "byte_fallback", False)
    # the pipeline's components, read one by one: without the (large) vocabulary and merges
    norm, pre, dec = (None if c is None else json.loads(c.__getstate__())
                      for c in (backend.normalizer, backend.pre_tokenizer, backend.decoder))
    if kind := {"WordPiece": "wordpiece", "Unigram": "sentencepiece"}.get(mtype):
        return kind
    if mtype == "BPE":
        if "ByteLevel" in _types(pre):
            return "bytelevel_bpe"
        if ("Metaspace" in _types([pre, dec]) or byte_fallback
                or BOW in json.dumps([norm, dec], ensure_ascii=False)):
            return "sentencepiece"
        if "ByteLevel" in _types(dec):
            return "bytelevel_bpe"
    raise ValueError(f"unsupported tokenizer (model={mtype!r}); known kinds: {', '.join(CANONICAL_KINDS)}")


def canonicalize(tokenizer: Any) -> tuple[list[CanonicalToken], list[str], str]:
    """``(canonical tokens, raw token strings, kind)``, both lists indexed by token id
    (:func:`canonicalize_vocab`'s rules; kind as :func:`detect_tokenizer_kind` gives it)."""
    backend = _backend(tokenizer)
    kind = detect_tokenizer_kind(backend)
    vocab = backend.get_vocab(with_added_tokens=True)
    size = len(tokenizer) if hasattr(tokenizer, "__len__") else backend.get_vocab_size(with_added_tokens=True)
    size = max([size, *(i + 1 for i in vocab.values())]) if vocab else size
    raw: list[str] = [""] * size
    for tok, i in vocab.items():
        raw[i] = tok
    specials = {i for i, tok in backend.get_added_tokens_decoder().items() if tok.special}
    if not isinstance(tokenizer, Tokenizer):
        specials.update(vocab[t] for t in getattr(tokenizer, "all_special_tokens", ()) if t in vocab)
    prefix = getattr(backend.model, "continuing_subword_prefix", None) or "##"
    out = [CanonicalToken(tok, False, True) if i in specials or not tok
           else canonical_token(tok, kind, prefix=prefix) for i, tok in enumerate(raw)]
    return out, raw, kind


def canonical_token(raw: str, kind: str, *, prefix: str = "##", errors: str = HEX_BYTES) -> CanonicalToken:
    """The canonical form of one (non-special) raw token string of a tokenizer of ``kind``
    (:func:`canonicalize_vocab`'s rules; ``prefix``: WordPiece's continuation marker; ``errors``: the codec
    error handler for bytes that are no whole UTF-8 character, ``<0xNN>`` by default)."""
    if kind == "sentencepiece":
        m = BYTE_FALLBACK.fullmatch(raw) if raw.startswith("<0x") else None
        if m:  # byte-fallback token; a space (0x20) is what "▁" and byte-level "Ġ" spell alone
            byte = int(m.group(1), 16)
            return CanonicalToken("", True, False) if byte == 0x20 else CanonicalToken(
                bytes([byte]).decode("utf-8", errors), False, False)
        bow = raw.startswith(BOW)
        # SentencePiece decodes every "▁" to a space; inner ones (e.g. "▁▁") become real spaces.
        return CanonicalToken((raw[1:] if bow else raw).replace(BOW, " "), bow, False)
    if kind == "bytelevel_bpe":
        try:
            data = bytes(_UNICODE_TO_BYTE[c] for c in raw)
        except KeyError:  # not byte-encoded (e.g. literal non-special added token): take it literally
            return CanonicalToken(raw[1:] if raw.startswith(" ") else raw, raw.startswith(" "), False)
        bow = data.startswith(b" ")
        return CanonicalToken((data[1:] if bow else data).decode("utf-8", errors), bow, False)
    if kind == "wordpiece":
        if raw.startswith(prefix) and len(raw) > len(prefix):
            return CanonicalToken(raw[len(prefix) :], False, False)
        return CanonicalToken(raw, True, False)
    raise ValueError(f"unknown tokenizer kind {kind!r}; known kinds: {', '.join(CANONICAL_KINDS)}")


def guess_token_kind(tokens: Iterable[str | None]) -> str:
    """The tokenizer kind that wrote these raw token strings (a vocabulary, or a sample of one), for tables
    made from token strings alone: the kind whose word markers most tokens carry ("▁x" sentencepiece, "Ġx"
    bytelevel_bpe, "##x" wordpiece); with none, bytelevel_bpe if every character is one of GPT-2's byte
    symbols and one is outside printable ASCII and Latin-1 letters as written (e.g. "Ã§a"), else sentencepiece
    (the text as it is)."""
    tokens = [t for t in tokens if isinstance(t, str) and t]
    marks = {"sentencepiece": sum(t.startswith(BOW) for t in tokens),
             "bytelevel_bpe": sum(t.startswith("Ġ")
                                  and all(c in _UNICODE_TO_BYTE for c in t) for t in tokens),
             "wordpiece": sum(t.startswith("##") and len(t) > 2 for t in tokens)}
    kind, count = max(marks.items(), key=lambda kv: kv[1])
    if count:
        return kind
    byte_symbols = all(c in _UNICODE_TO_BYTE for t in tokens for c in t)
    return ("bytelevel_bpe" if tokens and byte_symbols
            and any(_is_mojibake(t) for t in tokens) else "sentencepiece")


def _is_mojibake(raw: str) -> bool:
    """A byte-level token string (every character a byte symbol) that is no text as written: a symbol above
    U+00FF ("Ġ", "Ċ"), or UTF-8 bytes that read as other text ("Ã§a" is "ça")."""
    if any(ord(c) > 0xFF for c in raw):
        return True
    try:
        return bytes(_UNICODE_TO_BYTE[c] for c in raw).decode("utf-8") != raw
    except UnicodeDecodeError:
        return False


def token_text(raw: str, kind: str, *, bow: str = "", prefix: str = "##") -> str:
    """A raw token string as a person reads it, for every tokenizer kind (tables of tokens): byte-level BPE
    through GPT-2's byte table and UTF-8 ("Ã§a" -> "ça"), SentencePiece / byte-fallback BPE with "<0xNN>" byte
    tokens read as their byte, WordPiece without its continuation marker. A word-initial token ("▁ça", "Ġça",
    WordPiece "ça") is written ``bow`` + text (default: the bare text); a byte that is no whole UTF-8
    character is written escaped (``\\xc3``). ``kind`` as :func:`detect_tokenizer_kind` names it, or
    ``"canonical"`` for a canonical form (:attr:`CanonicalToken.form`: a leading "▁", undecodable bytes
    "<0xNN>")."""
    if kind == "canonical":
        tok = CanonicalToken(raw.removeprefix(BOW), raw.startswith(BOW), False)
        text = BYTE_FALLBACK.sub(lambda m: f"\\x{int(m.group(1), 16):02x}", tok.text)
        return (bow if tok.bow else "") + text
    tok = canonical_token(raw, kind, prefix=prefix, errors="backslashreplace")
    return (bow if tok.bow else "") + tok.text


def canonicalize_vocab(tokenizer: Any) -> list[CanonicalToken]:
    """Canonical form of every token id ``0..len(tokenizer)-1`` (added tokens included). Rules: sentencepiece
    -- leading "▁" is BOW, inner "▁" become spaces, single-byte ASCII fallback tokens "<0x41>" decode to "A"
    (non-BOW), "<0x20>" to a bare BOW (a space, as "▁" and "Ġ"), others stay "<0xE2>"; bytelevel_bpe -- GPT-2
    byte table, UTF-8 decode (undecodable bytes -> "<0xNN>"), leading space ("Ġ") is BOW; wordpiece -- "##x"
    is non-BOW "x", all other tokens BOW. Specials (``all_special_tokens`` + added tokens flagged special)
    keep their raw string with ``special=True``; ids missing from the vocab are empty specials."""
    return canonicalize(tokenizer)[0]

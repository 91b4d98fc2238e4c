"""WECHSEL, tokenize-flatten-reduce, word vectors, dictionaries, vocabulary extension, random normal."""

import gzip

import numpy as np
import pandas as pd
import pytest
import torch

from vocab_transfer.data.dictionary import identical_pairs, parse_freedict_entry, read_freedict, read_pairs
from vocab_transfer.data.token_fasttext import TokenVectors
from vocab_transfer.data.word_vectors import (
    WordVectors,
    tokenize_flatten_reduce,
    train_word_fasttext,
    word_tokenize,
)
from vocab_transfer.methods import TransferInputs, run_method
from vocab_transfer.methods.align import normalize_embeddings
from vocab_transfer.methods.extension import extend_tokenizer, select_new_tokens
from vocab_transfer.methods.overlap import compute_overlap
from vocab_transfer.methods.wechsel import align_to_source, dictionary_word_rows, wechsel_init


class StubTokenizer:
    """Just what tokenize-flatten-reduce calls: ``tok(words, add_special_tokens=False)["input_ids"]``."""

    all_special_ids = [0]

    def __init__(self, table):
        self.table = table

    def __call__(self, words, add_special_tokens=True):
        return {"input_ids": [self.table.get(w, self.table.get(w.strip())) for w in words]}

    def __len__(self):
        return 1 + max(i for ids in self.table.values() for i in ids)


def test_tokenize_flatten_reduce_known_answer():
    # "ab" -> [1, 2], "a" -> [1], "c" -> [3], "aa" -> [1, 1] (token 1 counted once for "aa")
    words = WordVectors(["ab", "a", "c", "aa"],
                        torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 2.0]]),
                        np.array([3, 1, 2, 4]))
    tok = StubTokenizer({"ab": [1, 2], "a": [1], "c": [3], "aa": [1, 1], "": [0]})
    u, has = tokenize_flatten_reduce(words, tok, vocab_size=5)
    torch.testing.assert_close(u[1], (3 * torch.tensor([1.0, 0]) + 1 * torch.tensor([0, 1.0])
                                      + 4 * torch.tensor([2.0, 2]))
                               / 8)
    torch.testing.assert_close(u[2], torch.tensor([1.0, 0.0]))
    torch.testing.assert_close(u[3], torch.tensor([1.0, 1.0]))
    assert has.tolist() == [False, True, True, True, False] and u[4].abs().sum() == 0
    # byte-level BPE marks word starts only after a space: " c" -> [4] also gets c's vector
    tok.table[" c"] = [4]
    u, has = tokenize_flatten_reduce(words, tok, vocab_size=5)
    torch.testing.assert_close(u[4], torch.tensor([1.0, 1.0]))
    assert has[4]


def test_tokenize_flatten_reduce_batches_agree():
    g = torch.Generator().manual_seed(0)
    words = WordVectors([f"w{i}" for i in range(50)], torch.randn(50, 4, generator=g), np.arange(50, 0, -1))
    tok = StubTokenizer({f"w{i}": [1 + i % 7, 1 + i % 3] for i in range(50)})
    a = tokenize_flatten_reduce(words, tok, vocab_size=8, batch_size=7)
    b = tokenize_flatten_reduce(words, tok, vocab_size=8, batch_size=1000)
    torch.testing.assert_close(a[0], b[0])
    assert torch.equal(a[1], b[1])


def test_word_tokenize_keeps_inner_apostrophes_and_splits_punctuation():
    assert word_tokenize("Yesu akasema: «Mwana-kondoo wa Mungu's!»") == [
        "Yesu", "akasema", ":", "«", "Mwana-kondoo", "wa", "Mungu's", "!", "»"]


def test_dictionary_pairs_and_procrustes_recover_a_rotation():
    g = torch.Generator().manual_seed(1)
    src = torch.randn(200, 8, generator=g)
    q, _ = torch.linalg.qr(torch.randn(8, 8, generator=g))
    words = [f"w{i}" for i in range(200)]
    source = WordVectors(words, src, np.ones(200, dtype=np.int64))
    target = WordVectors([w.upper() for w in words], src @ q, np.ones(200, dtype=np.int64))
    dictionary = pd.DataFrame({"source_word": words[:100], "target_word": [w.upper() for w in words[:100]]})
    s, t = dictionary_word_rows(source, target, dictionary, pairs="unique")
    assert len(s) == 100 and (s == t).all()
    # the wechsel package's pairs: as written / lower / title case on both sides, every hit kept: "w0" is
    # found as written and lower-cased, "W0" as written and title-cased, so each entry gives 2 x 2 pairs
    s, t = dictionary_word_rows(source, target, dictionary)
    assert len(s) == 400 and (s == t).all() and s[:4].tolist() == [0, 0, 0, 0]
    aligned_src, aligned_tgt, n = align_to_source(source, target, dictionary)
    assert n == 400 and torch.equal(aligned_src.vectors, src)  # raw vectors: only the target is rotated
    # every target word (also the 100 outside the dictionary) lands on its source word
    torch.testing.assert_close(aligned_tgt.vectors, aligned_src.vectors, atol=1e-4, rtol=1e-4)
    # normalize: unit length, centred, unit length (MUSE) on both sides first; the rotation is the same
    norm_src, norm_tgt, _ = align_to_source(source, target, dictionary, normalize=True)
    torch.testing.assert_close(norm_src.vectors, normalize_embeddings(src))
    torch.testing.assert_close(norm_tgt.vectors, norm_src.vectors, atol=1e-4, rtol=1e-4)


def test_alignment_with_too_few_pairs_fails_clearly():
    wv = WordVectors(["a", "b"], torch.eye(2), np.ones(2, dtype=np.int64))
    with pytest.raises(ValueError, match="only 0 dictionary pairs"):
        align_to_source(wv, wv, pd.DataFrame({"source_word": ["x"], "target_word": ["y"]}))


def test_wechsel_known_answer():
    source = torch.arange(12, dtype=torch.float32).view(4, 3)  # rows e_0..e_3
    source_sub = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    source_has = torch.tensor([False, True, True, True])  # row 0 (special) is never a neighbour
    target_sub = torch.tensor([[0.0, 0.0], [2.0, 0.0], [1.0, 0.1], [0.0, 0.0]])
    target_has = torch.tensor([False, True, True, False])
    out, kind, n = wechsel_init(source, 4, source_sub, source_has, target_sub, target_has, torch.tensor([0]),
                                torch.tensor([0]), seed=0, k=1)
    torch.testing.assert_close(out[0], source[0])  # special copied by role
    torch.testing.assert_close(out[1], source[1])  # top-1 neighbour of (2, 0) is source token 1
    torch.testing.assert_close(out[2], source[1])
    assert kind.tolist() == [0, 1, 1, 2]
    # k = 2: softmax(cos / tau) over the two nearest neighbours (eq. 3)
    nearest = torch.full((4,), -1)
    out, _, n = wechsel_init(source, 4, source_sub, source_has, target_sub, target_has, torch.tensor([0]),
                             torch.tensor([0]), seed=0, k=2, temperature=0.1, nearest=nearest)
    assert nearest.tolist() == [-1, 1, 1, -1]  # the largest weight of each combined row (WECHSEL Table 6)
    cos = torch.tensor([1.0, 1 / 2**0.5])  # (1, 0) vs tokens 1 and 3
    w = torch.softmax(cos / 0.1, 0)
    torch.testing.assert_close(out[1], w[0] * source[1] + w[1] * source[3])
    assert n.tolist()[1:3] == [2, 2]


def test_wechsel_bf16_screening_matches_exact_selection():
    g = torch.Generator().manual_seed(2)
    source, us, ut = (torch.randn(500, 6, generator=g), torch.randn(500, 16, generator=g),
                      torch.randn(80, 16, generator=g))
    args = (source, 80, us, torch.ones(500, dtype=torch.bool), ut, torch.ones(80, dtype=torch.bool),
            torch.tensor([0]), torch.tensor([0]))
    exact = wechsel_init(*args, seed=0)[0]
    screened = wechsel_init(*args, seed=0, screen_dtype=torch.bfloat16)[0]
    torch.testing.assert_close(screened, exact)


def test_freedict_entry_parsing():
    entry = "cat /kæt/ <n>\n1. Katze <fem>, Kater [zool.]\n2. (informal) Typ\n see: {kitten}\n"
    assert parse_freedict_entry(entry) == [("cat", "Katze"), ("cat", "Kater"), ("cat", "Typ")]


def test_read_freedict_from_dictd_files(tmp_path):
    entries = ["life /lˈaɪf/ <n>\n\nmaisha\n", "big day /bˈɪɡ/\nsiku kuu\n", "water\nmaji, maji ya mto\n"]
    body = "".join(entries).encode()
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

    def b64(n):
        return alphabet[n] if n < 64 else b64(n // 64) + alphabet[n % 64]

    lines, pos = [], 0
    for head, e in zip(["life", "big day", "water"], entries, strict=True):
        lines.append(f"{head}\t{b64(pos)}\t{b64(len(e.encode()))}")
        pos += len(e.encode())
    (tmp_path / "freedict-eng-xyz.index").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with gzip.open(tmp_path / "freedict-eng-xyz.dict.dz", "wb") as f:
        f.write(body)
    pairs = read_freedict("eng-xyz", tmp_path)
    assert pairs.values.tolist() == [["life", "maisha"], ["water", "maji"]]  # multi-word sides dropped
    with pytest.raises(FileNotFoundError, match="apt-get install dict-freedict-eng-abc"):
        read_freedict("eng-abc", tmp_path)


def test_installed_freedict_eng_swh_has_common_words():
    pairs = read_freedict("eng-swh")  # installed by scripts/setup_env.sh
    assert len(pairs) > 1000
    assert ("water", "maji") in set(zip(pairs["source_word"], pairs["target_word"], strict=True))


def test_read_pairs_and_identical(tmp_path):
    (tmp_path / "en-de.txt").write_text("the der\nthe die\nhouse Haus\nbad line here\n")
    assert read_pairs(tmp_path / "en-de.txt").values.tolist() == [["the", "der"], ["the", "die"],
                                                                  ["house", "Haus"]]
    assert identical_pairs(["Berlin", "a", "the", "42"], ["Berlin", "a", "42", "der"]).values.tolist() == [
        ["42", "42"], ["Berlin", "Berlin"]]


def test_word_fasttext_is_deterministic(swahili_verses):
    a = train_word_fasttext(swahili_verses[:500], dim=8, min_count=3, epochs=1, seed=3)
    b = train_word_fasttext(swahili_verses[:500], dim=8, min_count=3, epochs=1, seed=3)
    assert a.words == b.words and torch.equal(a.vectors, b.vectors)
    # kept, as the wechsel package
    assert list(a.counts) == sorted(a.counts, reverse=True) and "</s>" in a.words


def test_wechsel_adapter_end_to_end(swahili_verses, sw_tokenizer):
    from vocab_transfer.data.tokenizer import train_unigram_tokenizer

    target_tok = train_unigram_tokenizer(swahili_verses[1000:], 300)
    words = train_word_fasttext(swahili_verses, dim=8, min_count=2, epochs=1, seed=0)
    overlap = compute_overlap(sw_tokenizer, target_tok)
    g = torch.Generator().manual_seed(0)
    inputs = TransferInputs(source_matrix=torch.randn(len(sw_tokenizer), 5, generator=g),
                            target_vocab_size=len(target_tok), overlap=overlap, source_words=words,
                            target_words=words, dictionary=identical_pairs(words.words, words.words),
                            source_tokenizer=sw_tokenizer, target_tokenizer=target_tok,
                            language_tokenizer=target_tok)
    a = run_method("wechsel", inputs, seed=1)
    b = run_method("wechsel", inputs, seed=1)
    assert torch.equal(a.matrix, b.matrix) and (a.provenance == "combined").sum() > 200
    # same language on both sides: a target token that is also a source token has itself among its neighbours
    en = run_method("wechsel", inputs, seed=1, restrict_source="en")
    assert en.matrix.shape == a.matrix.shape and not torch.equal(en.matrix, a.matrix)


def test_random_normal_copies_specials_and_matches_moments():
    g = torch.Generator().manual_seed(0)
    source = torch.randn(3000, 4, generator=g) * torch.tensor([1.0, 2.0, 0.5, 3.0]) + 1
    overlap = pd.DataFrame({"target_id": [0], "source_id": [5], "match": ["special"], "symbolic": [False]})
    res = run_method("random_normal", TransferInputs(source, 4000, overlap), seed=0)
    torch.testing.assert_close(res.matrix[0], source[5])
    torch.testing.assert_close(res.matrix[1:].mean(0), source.mean(0), atol=0.15, rtol=0.05)
    torch.testing.assert_close(res.matrix[1:].std(0), source.std(0), atol=0.15, rtol=0.05)


def test_select_new_tokens_by_frequency():
    overlap = pd.DataFrame({"target_id": [0, 2]})
    counts = np.array([100, 5, 50, 5, 0, 7])
    # ties by id; unseen token 4 never
    assert select_new_tokens(overlap, counts, [0], 3).tolist() == [5, 1, 3]


def test_extension_tokenizer_and_rows(swahili_verses, sw_tokenizer):
    from vocab_transfer.data.tokenizer import train_unigram_tokenizer

    source_tok = train_unigram_tokenizer(swahili_verses[:300], 200)
    overlap = compute_overlap(source_tok, sw_tokenizer)
    counts = torch.ones(len(sw_tokenizer), dtype=torch.long)
    new = select_new_tokens(overlap, counts.numpy(), [0, 1, 2, 3, len(sw_tokenizer) - 1], 50)
    ext = extend_tokenizer(source_tok, sw_tokenizer, new)
    assert len(ext) == 250 and ext.mask_token_id == source_tok.mask_token_id
    assert (ext.convert_ids_to_tokens(list(range(200, 250)))
            == sw_tokenizer.convert_ids_to_tokens(new.tolist()))
    text = swahili_verses[2000]
    assert len(ext(text)["input_ids"]) < len(source_tok(text)["input_ids"])  # longer pieces now available
    assert ext.decode(ext(text)["input_ids"], skip_special_tokens=True) == source_tok.decode(
        source_tok(text)["input_ids"], skip_special_tokens=True)
    g = torch.Generator().manual_seed(0)
    aux = TokenVectors(torch.randn(len(sw_tokenizer), 4, generator=g),
                       torch.ones(len(sw_tokenizer), dtype=torch.bool), counts)
    source = torch.randn(200, 3, generator=g)
    res = run_method("extend", TransferInputs(source, len(sw_tokenizer), overlap, aux=aux), seed=0,
                     new_tokens=50)
    assert res.matrix.shape == (250, 3) and torch.equal(res.matrix[:200], source)
    assert set(res.provenance[200:]) <= {"combined", "random"}


def test_read_pretrained_bin_and_vec(tmp_path, swahili_verses):
    from vocab_transfer.data.token_fasttext import train_unsupervised
    from vocab_transfer.data.word_vectors import read_fasttext_vectors

    corpus = tmp_path / "words.txt"
    corpus.write_text("\n".join(" ".join(word_tokenize(t)) for t in swahili_verses[:1500]), encoding="utf-8")
    ft = train_unsupervised(input=str(corpus), dim=8, minCount=3, epoch=1, thread=1, seed=0)
    ft.save_model(str(tmp_path / "cc.sw.8.bin"))
    wv = read_fasttext_vectors(tmp_path / "cc.sw.8.bin")
    assert len(wv.words) == len(ft.words) and list(wv.counts) == sorted(wv.counts, reverse=True)
    torch.testing.assert_close(wv.vectors[0], torch.from_numpy(ft.get_word_vector(wv.words[0])))
    lines = [f"{len(wv.words)} 8"] + [w + " " + " ".join(f"{x:.6f}" for x in v.tolist())
                                      for w, v in zip(wv.words, wv.vectors, strict=True)]
    (tmp_path / "sw.vec").write_text("\n".join(lines) + "\n", encoding="utf-8")
    vec = read_fasttext_vectors(tmp_path / "sw.vec", max_words=20, lang="sw")
    assert vec.words == wv.words[:20] and (vec.counts > 0).all()
    torch.testing.assert_close(vec.vectors, wv.vectors[:20], atol=1e-5, rtol=0)
    with pytest.raises(FileNotFoundError, match="not found"):
        read_fasttext_vectors(tmp_path / "missing.bin")


def test_extension_focus_rows_equal_full_focus_rows(swahili_verses, sw_tokenizer):
    from vocab_transfer.data.tokenizer import train_unigram_tokenizer
    from vocab_transfer.methods.focus import focus_init

    source_tok = train_unigram_tokenizer(swahili_verses[:300], 200)
    overlap = compute_overlap(source_tok, sw_tokenizer)
    g = torch.Generator().manual_seed(0)
    aux = TokenVectors(torch.randn(len(sw_tokenizer), 4, generator=g),
                       torch.ones(len(sw_tokenizer), dtype=torch.bool),
                       torch.arange(len(sw_tokenizer), 0, -1))
    source = torch.randn(200, 3, generator=g)
    res = run_method("extend", TransferInputs(source, len(sw_tokenizer), overlap, aux=aux), seed=0,
                     new_tokens=30)
    full, _, _ = focus_init(source, len(sw_tokenizer), torch.tensor(overlap["target_id"].to_numpy()),
                            torch.tensor(overlap["source_id"].to_numpy()), aux.vectors, aux.has_vector,
                            seed=0)
    new = select_new_tokens(overlap, aux.counts.numpy(), [], 30)
    torch.testing.assert_close(res.matrix[200:], full[new])


def test_fasttext_subword_information(tmp_path, sw_tokenizer, swahili_verses):
    """WECHSEL App. D: the saved model gives the same word vectors as the training that wrote it, a token's
    vector is fastText's vector of its decoded text, and WECHSEL with subwords: fasttext runs on real
    models."""
    import fasttext

    from vocab_transfer.data.word_vectors import (
        fasttext_subword_vectors,
        from_fasttext_model,
        train_word_fasttext,
    )

    wv = train_word_fasttext(swahili_verses[:800], dim=16, min_count=2, epochs=1, bucket=200000, seed=1,
                             model_path=tmp_path / "sw.bin")
    model = fasttext.load_model(str(tmp_path / "sw.bin"))
    assert torch.equal(from_fasttext_model(model).vectors, wv.vectors)
    u, has = fasttext_subword_vectors(model, sw_tokenizer)
    assert u.shape == (len(sw_tokenizer), 16) and not has[sw_tokenizer.all_special_ids].any()
    i = next(i for i in range(10, len(sw_tokenizer)) if len(sw_tokenizer.decode([i]).strip()) > 2)
    np.testing.assert_array_equal(u[i].numpy(), model.get_word_vector(sw_tokenizer.decode([i]).strip()))
    assert has.float().mean() > 0.8  # most pieces decompose into n-grams (single characters do not)

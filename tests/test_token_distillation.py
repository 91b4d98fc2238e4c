"""Token Distillation and its embedding-only LM baseline (vocab_transfer.methods.token_distillation), TokAlign
(vocab_transfer.methods.tokalign): known answers on constructed cases, then real runs on tiny real models."""

import pandas as pd
import pytest
import torch

from vocab_transfer.data.corpus import write_corpus
from vocab_transfer.data.token_fasttext import TokenVectors
from vocab_transfer.data.tokenizer import train_unigram_tokenizer
from vocab_transfer.methods import TransferInputs, run_method
from vocab_transfer.methods.tokalign import relative
from vocab_transfer.methods.token_distillation import aligned_positions, segments
from vocab_transfer.source_model import build_xlmr_mlm, embedding_matrix

# --- aligning two tokenizations -----------------------------------------------------------------------------


def test_aligned_positions_pair_the_tokens_that_end_a_word_in_both_tokenizations():
    text = "walking home"  # source: <s> walk ing ▁home </s>; target: <s> walking ▁ho me </s>
    source = ([(0, 0), (0, 4), (4, 7), (7, 12), (0, 0)], [1, 0, 0, 0, 1])
    target = ([(0, 0), (0, 7), (7, 10), (10, 12), (0, 0)], [1, 0, 0, 0, 1])
    assert aligned_positions(text, source, target) == [(2, 1), (3, 3)]  # "walking" ends at 7, "home" at 12
    # every shared token end: the same here, no subword boundary is shared
    assert aligned_positions(text, source, target, "token_ends") == [(2, 1), (3, 3)]
    # a boundary inside a word that both share counts only for token_ends
    target2 = ([(0, 0), (0, 4), (4, 7), (7, 12), (0, 0)], [1, 0, 0, 0, 1])
    source2 = ([(0, 0), (0, 4), (4, 12), (0, 0)], [1, 0, 0, 1])
    assert aligned_positions("walking home", source2, target2) == [(2, 3)]
    assert aligned_positions("walking home", source2, target2, "token_ends") == [(1, 1), (2, 3)]
    # byte pieces of one character share its end: the last one stands for it
    source3 = ([(0, 1), (0, 1), (1, 2)], [0, 0, 0])
    target3 = ([(0, 2)], [0])
    assert aligned_positions("éa", source3, target3, "token_ends") == [(2, 0)]


def test_punctuation_ends_words_and_text_without_spaces_is_cut_there():
    # "word," : the word ends at the comma, the comma at the space
    source = ([(0, 4), (4, 5), (5, 10)], [0, 0, 0])  # word | , | ▁next
    target = ([(0, 5), (5, 10)], [0, 0])  # word, | ▁next
    assert aligned_positions("word, next", source, target) == [(1, 0), (2, 1)]
    text = "天地。人和。"  # no spaces: words end at punctuation only
    per_char = [(i, i + 1) for i in range(len(text))]
    pairs = [(0, 2), (2, 3), (3, 5), (5, 6)]
    assert segments(text, per_char, pairs, 3, 3) == ["天地。", "人和。"]
    assert segments(text, per_char, pairs, 3, 3, "token_ends") == ["天地。", "人和。"]
    assert segments(text, per_char, pairs, 1, 1, "token_ends") == ["。", "。"]


def test_kept_share_per_filter_and_the_primary_metric():
    from vocab_transfer.eval.benchmarks import kept_share, primary_scores

    rows = [("source", "s", "gsm8k", "exact_match", "strict-match", 0.4),
            ("source", "s", "gsm8k", "exact_match", "flexible-extract", 0.5),
            ("init", "focus", "gsm8k", "exact_match", "strict-match", 0.2),
            ("init", "focus", "gsm8k", "exact_match", "flexible-extract", 0.4),
            ("source", "s", "arc", "acc", "none", 0.6), ("source", "s", "arc", "acc_norm", "none", 0.8),
            ("init", "focus", "arc", "acc", "none", 0.3), ("init", "focus", "arc", "acc_norm", "none", 0.6)]
    table = pd.DataFrame([{"source": "s", "target": "de", "stage": st, "name": n, "task": t, "metric": m,
                           "filter": f, "value": v} for st, n, t, m, f, v in rows])
    kept = kept_share(table).set_index(["stage", "task", "metric", "filter"])["kept"]
    assert kept[("init", "gsm8k", "exact_match", "flexible-extract")] == pytest.approx(0.8)
    assert kept[("init", "gsm8k", "exact_match", "strict-match")] == pytest.approx(0.5)
    assert kept[("init", "arc", "acc_norm", "none")] == pytest.approx(0.75)
    main = primary_scores(table[table.stage == "init"])
    assert sorted(zip(main.task, main.metric, strict=True)) == [("arc", "acc_norm"), ("gsm8k", "exact_match")]


def test_segments_cut_at_shared_word_ends_within_the_room():
    text = "aa bb cc dd"
    one_per_char = [(i, i + 1) for i, c in enumerate(text) if c != " "]  # 8 tokens
    per_word = [(0, 2), (3, 5), (6, 8), (9, 11)]
    assert segments(text, one_per_char, per_word, 4, 4) == ["aa bb", "cc dd"]
    assert segments(text, one_per_char, per_word, 8, 8) == ["aa bb cc dd"]
    assert segments(text, one_per_char, per_word, 3, 3) == ["aa", "bb", "cc", "dd"]
    assert segments(text, one_per_char, per_word, 1, 1) == []  # no word fits


# --- TokAlign -----------------------------------------------------------------------------------------------


def test_tokalign_recovers_a_permutation_of_a_rotated_space():
    # target vectors: 8 pivot tokens on the axes of R^8, 24 random unit vectors; the source vocabulary holds
    # the same tokens in another order, in a space rotated by Q. Cosines to the pivots are then the same in
    # both spaces, so the relative representations of a token agree exactly and have unit length: the top dot
    # product is the token itself.
    g = torch.Generator().manual_seed(0)
    d, n = 8, 32
    t_vec = torch.cat([torch.eye(d),
                       torch.nn.functional.normalize(torch.randn(n - d, d, generator=g), dim=1)])
    q, _ = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=torch.float64))
    perm = torch.randperm(n, generator=g)  # source id perm[i] is target token i
    s_vec = torch.empty(n, d)
    s_vec[perm] = (t_vec.double() @ q).float()
    source = torch.randn(n, 5, generator=g)
    overlap = pd.DataFrame({"target_id": range(d), "source_id": perm[:d].tolist(), "match": ["exact"] * d,
                            "symbolic": [False] * d})
    aux = TokenVectors(t_vec, torch.ones(n, dtype=torch.bool), torch.ones(n, dtype=torch.long))
    source_aux = TokenVectors(s_vec, torch.ones(n, dtype=torch.bool), torch.ones(n, dtype=torch.long))
    res = run_method("tokalign", TransferInputs(source, n, overlap, aux=aux, source_aux=source_aux), seed=0,
                     pivots=d)
    assert torch.equal(res.matrix, source[perm])
    assert res.provenance.tolist() == ["copied"] * d + ["mapped"] * (n - d)
    assert res.nearest[d:].tolist() == perm[d:].tolist()
    torch.testing.assert_close(relative(t_vec, torch.arange(d)), t_vec.double())


def test_tokalign_gives_tokens_without_a_vector_a_random_source_row_and_needs_a_pivot():
    g = torch.Generator().manual_seed(1)
    source = torch.randn(10, 3, generator=g)
    has = torch.tensor([True] * 6 + [False] * 2)
    aux = TokenVectors(torch.randn(8, 4, generator=g), has, torch.ones(8, dtype=torch.long))
    source_aux = TokenVectors(torch.randn(10, 4, generator=g), torch.ones(10, dtype=torch.bool),
                              torch.ones(10, dtype=torch.long))
    overlap = pd.DataFrame({"target_id": [0, 1], "source_id": [3, 4], "match": ["special", "exact"],
                            "symbolic": [False, False]})
    res = run_method("tokalign", TransferInputs(source, 8, overlap, aux=aux, source_aux=source_aux), seed=0)
    assert res.provenance.tolist() == ["special", "copied"] + ["mapped"] * 4 + ["random"] * 2
    rows = [int((source == r).all(1).nonzero()[0]) for r in res.matrix[6:]]
    assert all(r != 3 for r in rows)  # never the special token's row
    again = run_method("tokalign", TransferInputs(source, 8, overlap, aux=aux, source_aux=source_aux), seed=0)
    assert torch.equal(res.matrix, again.matrix)
    none = TokenVectors(aux.vectors, torch.zeros(8, dtype=torch.bool), aux.counts)
    with pytest.raises(ValueError, match="no pivot"):
        run_method("tokalign", TransferInputs(source, 8, overlap, aux=none, source_aux=source_aux), seed=0)


# --- Token Distillation on a real (tiny) masked LM and decoder ----------------------------------------------


@pytest.fixture(scope="module")
def setting(tmp_path_factory, swahili_verses, sw_tokenizer):
    """A tiny XLM-R MLM source on a 600-token Swahili tokenizer, a 400-token target tokenizer, a training
    split."""
    root = tmp_path_factory.mktemp("td")
    model = build_xlmr_mlm(sw_tokenizer, hidden_size=32, num_layers=2, num_heads=2, intermediate_size=64,
                           max_position_embeddings=128, seed=0, dropout=0.0)
    model.save_pretrained(root / "source")
    sw_tokenizer.save_pretrained(root / "source")
    target = train_unigram_tokenizer(swahili_verses[1000:], 400, show_progress=False)
    write_corpus(pd.DataFrame({"doc_id": [str(i) for i in range(400)], "text": swahili_verses[:400]}),
                 root / "train.parquet")
    return root, model, target


def inputs_for(root, model, target, base_rows, provenance):
    n = len(target)
    return TransferInputs(source_matrix=embedding_matrix(model), target_vocab_size=n, overlap=pd.DataFrame(),
                          source_tokenizer=None, target_tokenizer=target,
                          base_init=base_rows, base_provenance=provenance,
                          train_text=str(root / "train.parquet"), source_model_dir=str(root / "source"))


def base_of(model, target, seed=0):
    g = torch.Generator().manual_seed(seed)
    full = embedding_matrix(model)
    rows = full[torch.randint(len(full), (len(target),), generator=g)]
    prov = ["special" if i in target.all_special_ids else ("copied" if i % 5 == 0 else "mapped")
            for i in range(len(target))]
    return ({"embeddings": rows[:, :-1].contiguous(), "output_bias": rows[:, -1].contiguous()},
            pd.DataFrame({"provenance": prov, "n_sources": [1] * len(target)}))


def test_distillation_lowers_the_hidden_state_gap_trains_new_rows_only_and_is_deterministic(setting,
                                                                                            sw_tokenizer):
    from vocab_transfer.methods.token_distillation import batches

    root, model, target = setting
    base, prov = base_of(model, target)
    inputs = inputs_for(root, model, target, base, prov)
    inputs.source_tokenizer = sw_tokenizer
    kw = dict(init="random", tokens=6000, lr=1e-2, batch_size=8, seq_len=64, device="cpu")
    res = run_method("token_distillation", inputs, seed=3, **kw)
    assert res.matrix.shape == (len(target), inputs.source_matrix.shape[1])
    curve = res.extra["refine_loss"]
    assert int(res.extra["refine_tokens"]) >= 6000
    assert curve[-5:].mean() < 0.8 * curve[:5].mean()  # the gap to the teacher's hidden states closes
    frozen = torch.tensor(prov["provenance"].isin(["copied", "special"]).to_numpy())
    emb = res.matrix[:, :-1]
    assert torch.equal(emb[frozen], base["embeddings"][frozen])  # copied and special rows keep their values
    assert not torch.equal(emb[~frozen], base["embeddings"][~frozen])
    assert torch.equal(res.matrix[:, -1], base["output_bias"])  # the output bias stays
    again = run_method("token_distillation", inputs, seed=3, **kw)
    assert torch.equal(res.matrix, again.matrix)
    # the batches pair positions where both tokenizations end a word
    b = next(batches(inputs.train_text, sw_tokenizer, target, batch_size=4, seq_len=64, seed=0,
                     positions="word_ends"))
    assert len(b.source_at) == len(b.target_at) > 0 and b.tokens == int(b.target_mask.sum())


def test_embedding_lm_trains_the_same_rows_on_the_same_budget(setting, sw_tokenizer):
    root, model, target = setting
    base, prov = base_of(model, target)
    inputs = inputs_for(root, model, target, base, prov)
    inputs.source_tokenizer = sw_tokenizer
    res = run_method("embedding_lm", inputs, seed=3, init="random", tokens=6000, lr=1e-2, batch_size=8,
                     seq_len=64, device="cpu", rows="all")
    curve = res.extra["refine_loss"]
    assert curve[-5:].mean() < curve[:5].mean()
    assert not torch.equal(res.matrix[:, :-1], base["embeddings"])


def test_untied_decoder_head_rows_learn_by_next_token_prediction(tmp_path, swahili_verses, sw_tokenizer):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=len(sw_tokenizer), hidden_size=16, intermediate_size=32,
                                         num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                                         max_position_embeddings=128, tie_word_embeddings=False,
                                         bos_token_id=0, eos_token_id=2, pad_token_id=1))
    model.save_pretrained(tmp_path / "source")
    sw_tokenizer.save_pretrained(tmp_path / "source")
    target = train_unigram_tokenizer(swahili_verses[1000:], 400, show_progress=False)
    write_corpus(pd.DataFrame({"doc_id": [str(i) for i in range(300)], "text": swahili_verses[:300]}),
                 tmp_path / "train.parquet")
    g = torch.Generator().manual_seed(0)
    inp, out = model.get_input_embeddings().weight.detach(), model.get_output_embeddings().weight.detach()
    pick = torch.randint(len(inp), (len(target),), generator=g)
    base = {"embeddings": inp[pick].clone(), "output_embeddings": out[pick].clone()}
    prov = pd.DataFrame({"provenance": ["mapped"] * len(target), "n_sources": [1] * len(target)})
    inputs = TransferInputs(source_matrix=torch.cat([inp, out], 1), target_vocab_size=len(target),
                            overlap=pd.DataFrame(), source_tokenizer=sw_tokenizer, target_tokenizer=target,
                            base_init=base, base_provenance=prov, train_text=str(tmp_path / "train.parquet"),
                            source_model_dir=str(tmp_path / "source"))
    res = run_method("token_distillation", inputs, seed=0, init="random", tokens=3000, lr=1e-2, batch_size=8,
                     seq_len=64, device="cpu")
    d = inp.shape[1]
    assert res.matrix.shape == (len(target), 2 * d)
    assert not torch.equal(res.matrix[:, :d], base["embeddings"])
    assert not torch.equal(res.matrix[:, d:], base["output_embeddings"])  # the head's rows learned too


def test_a_killed_refinement_resumes_to_the_same_rows(setting, sw_tokenizer, tmp_path, monkeypatch):
    """The state is saved every `checkpoint_every` steps; a run stopped after its second save and run again
    ends with the rows of an uninterrupted run, bit for bit, and removes its state; a state of other settings
    is not trusted."""
    from vocab_transfer.methods import token_distillation as td

    root, model, target = setting
    base, prov = base_of(model, target)
    inputs = inputs_for(root, model, target, base, prov)
    inputs.source_tokenizer = sw_tokenizer
    kw = dict(init="random", tokens=4000, lr=1e-2, batch_size=8, seq_len=64, device="cpu", checkpoint_every=3)
    whole = run_method("token_distillation", inputs, seed=3, **kw)

    class Killed(Exception):
        pass

    save, saves = td.Checkpoint.save, []

    def save_then_die(self, *args, **counters):
        save(self, *args, **counters)
        saves.append(counters["step"])
        if len(saves) == 2:
            raise Killed

    inputs.checkpoint_dir = str(tmp_path / "ckpt")
    monkeypatch.setattr(td.Checkpoint, "save", save_then_die)
    with pytest.raises(Killed):
        run_method("token_distillation", inputs, seed=3, **kw)
    assert saves == [3, 6] and [p.name for p in (tmp_path / "ckpt").iterdir()] == ["step-00000006"]
    assert sorted(p.name for p in (tmp_path / "ckpt" / "step-00000006").iterdir()) == [
        ".manifest.json", "state.json", "tensors.safetensors"]
    monkeypatch.setattr(td.Checkpoint, "save", save)
    resumed = run_method("token_distillation", inputs, seed=3, **kw)
    assert torch.equal(resumed.matrix, whole.matrix)
    assert torch.equal(resumed.extra["refine_loss"], whole.extra["refine_loss"])
    assert not (tmp_path / "ckpt").exists()
    # a state written with another learning rate is set aside
    monkeypatch.setattr(td.Checkpoint, "save", save_then_die)
    saves.clear()
    with pytest.raises(Killed):
        run_method("token_distillation", inputs, seed=3, **{**kw, "lr": 5e-3})
    monkeypatch.setattr(td.Checkpoint, "save", save)
    assert torch.equal(run_method("token_distillation", inputs, seed=3, **kw).matrix, whole.matrix)

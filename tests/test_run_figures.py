"""Figures of LAPT runs (kinds curves and init_similarity: WECHSEL Figures 3-6) and reading a saved model's
input embeddings without loading the model."""

from pathlib import Path

import pytest
import torch
import yaml

from vocab_transfer.source_model import build_xlmr_mlm, read_input_embeddings
from vocab_transfer.workflow.config import ConfigError, check_config

REPO = Path(__file__).resolve().parents[1]


def test_read_input_embeddings_without_loading_the_model(tmp_path, sw_tokenizer):
    """Tied (XLM-R's MLM head shares the matrix) and a GPT-2 causal LM, single file and sharded."""
    from transformers import GPT2Config, GPT2LMHeadModel

    model = build_xlmr_mlm(sw_tokenizer, seed=0, hidden_size=16, num_layers=1, num_heads=2,
                           intermediate_size=32, max_position_embeddings=40)
    model.save_pretrained(tmp_path / "xlmr")
    assert torch.equal(read_input_embeddings(tmp_path / "xlmr"), model.get_input_embeddings().weight)
    gpt = GPT2LMHeadModel(GPT2Config(vocab_size=300, n_positions=16, n_embd=16, n_layer=2, n_head=2))
    gpt.save_pretrained(tmp_path / "gpt2", max_shard_size="20KB")  # several shards and an index
    assert (tmp_path / "gpt2" / "model.safetensors.index.json").exists()
    assert torch.equal(read_input_embeddings(tmp_path / "gpt2"), gpt.transformer.wte.weight)
    (tmp_path / "gpt2" / "model.safetensors.index.json").unlink()
    with pytest.raises(FileNotFoundError, match="no model.safetensors and no model.safetensors.index.json"):
        read_input_embeddings(tmp_path / "gpt2")  # shards without their index: named, not guessed


def demo_config():
    return yaml.safe_load((REPO / "config.yaml").read_text())


@pytest.mark.parametrize("figure, message", [
    ({"kind": "curves", "runs": ["focus"]}, "kind curves needs 'runs' and 'languages'"),
    ({"kind": "curves", "runs": ["nope"], "languages": ["he"]},
     "runs: ['nope'] are not entries of lapt.runs"),
    ({"kind": "init_similarity", "runs": ["focus"], "languages": ["de"]},
     "LAPT runs ['focus on de'] are not planned"),
])
def test_bad_run_figures_are_named(figure, message):
    config = demo_config()
    config["figures"] = {"f": figure}
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        check_config(config)


def test_curves_and_similarity_plots(tmp_path):
    import pandas as pd

    from vocab_transfer.report.plots import plot_init_similarity, plot_run_curves

    curves = pd.DataFrame({"step": [0, 10, 0, 10], "perplexity": [100.0, 50.0, 90.0, 40.0],
                           "label": ["a", "a", "b", "b"], "language": ["x", "x", "x", "x"]})
    plot_run_curves(curves, str(tmp_path / "c.png"), value="perplexity", title="t",
                    svg=str(tmp_path / "c.svg"))
    sims = pd.DataFrame({"cosine": [0.1, 0.9, 0.95], "label": ["a", "a", "a"], "language": ["x", "y", "y"]})
    plot_init_similarity(sims, str(tmp_path / "s.png"), title="t")
    assert (tmp_path / "c.png").stat().st_size > 1000 and (tmp_path / "c.svg").exists()
    assert (tmp_path / "s.png").stat().st_size > 1000


def run_script(name, inputs, params, out):
    """Run a workflow script as Snakemake would, with a stand-in for the ``snakemake`` object."""
    import builtins
    import json
    from types import SimpleNamespace

    out.mkdir(parents=True, exist_ok=True)
    builtins.snakemake = SimpleNamespace(
        input=SimpleNamespace(items=lambda: inputs.items()), params=SimpleNamespace(spec=json.dumps(params)),
        output=SimpleNamespace(png=str(out / "f.png"), svg=str(out / "f.svg"), csv=str(out / "f.csv")),
        log=[str(out / "f.log")])
    try:
        exec(compile((REPO / "workflow_scripts" / name).read_text(), name, "exec"), {"__name__": "__main__"})
    finally:
        del builtins.snakemake


def test_unk_scatter_figure_from_real_tokenizers(tmp_path, sw_tokenizer, swahili_verses):
    """UNKs Everywhere Figure 2 end to end: a Swahili and a Hebrew-script target against a Swahili source
    tokenizer; the Hebrew vocabulary is mostly UNKs, and the scores are the mean over seeds in %."""
    import pandas as pd

    from vocab_transfer.data.tokenizer import train_unigram_tokenizer
    from vocab_transfer.io import write_parquet
    from vocab_transfer.methods.overlap import compute_overlap

    targets = {"sw": train_unigram_tokenizer(swahili_verses[1000:2000], 300, show_progress=False),
               "he": train_unigram_tokenizer(["בראשית ברא אלהים את השמים ואת הארץ והארץ היתה תהו ובהו"] * 50
                                             + ["Mungu"], 24, show_progress=False),
               "xx": train_unigram_tokenizer(swahili_verses[2000:2500], 200, show_progress=False)}
    sw_tokenizer.save_pretrained(tmp_path / "source")
    inputs, manifest = ({"source_tokenizer": str(tmp_path / "source")},
                        [{"input": "source_tokenizer", "kind": "source"}])
    for i, (lang, tok) in enumerate(targets.items()):
        tok.save_pretrained(tmp_path / lang)
        write_parquet(compute_overlap(sw_tokenizer, tok), tmp_path / f"{lang}.overlap.parquet")
        for seed, f1 in ((1, 0.2 * (i + 1)), (2, 0.2 * (i + 1) + 0.1)):
            write_parquet(pd.DataFrame({"metric": ["f1"], "task": ["ner"], "test_f1": [f1]}),
                          tmp_path / f"{lang}.{seed}.parquet")
            inputs[f"scores__{lang}__{seed}"] = str(tmp_path / f"{lang}.{seed}.parquet")
            manifest.append({"input": f"scores__{lang}__{seed}", "kind": "scores", "task": f"{lang}-ner",
                             "language": lang})
        inputs[f"tokenizer__{lang}"], inputs[f"overlap__{lang}"] = str(tmp_path / lang), str(
            tmp_path / f"{lang}.overlap.parquet")
        manifest += [{"input": f"tokenizer__{lang}", "kind": "tokenizer", "task": f"{lang}-ner",
                      "language": lang},
                     {"input": f"overlap__{lang}", "kind": "overlap", "task": f"{lang}-ner",
                      "language": lang}]
    run_script("plot_figure.py", inputs,
               {"spec": {"kind": "unk_scatter", "title": "F2"}, "manifest": manifest}, tmp_path / "out")
    table = pd.read_csv(tmp_path / "out" / "f.csv").set_index("language")
    assert table.loc["sw", "score"] == pytest.approx(25.0) and table.loc["he", "score"] == pytest.approx(45.0)
    assert table.loc["he", "unk_share"] > 0.2 > table.loc["sw", "unk_share"]
    assert "Pearson's rho of the score with the UNK share" in (tmp_path / "out" / "f.log").read_text()
    assert (tmp_path / "out" / "f.png").stat().st_size > 1000


def test_sample_efficiency_figure(tmp_path):
    """UNKs Everywhere Figure 3: x is the runs' training sequences read off their curves, y the mean score in
    %."""
    import pandas as pd

    from vocab_transfer.io import write_parquet

    inputs, manifest = {}, []
    for series, models in {"EL": [("el-1k", 1000, 0.2), ("el", 50000, 0.4)],
                           "MF": [("mf-1k", 1000, 0.1)]}.items():
        for model, seqs, f1 in models:
            for task in ("a-ner", "b-ner"):
                curve = tmp_path / f"{model}.{task}.curve.parquet"
                write_parquet(pd.DataFrame({"step": [0, 10], "train_sequences": [seqs, seqs]}), curve)
                scores = tmp_path / f"{model}.{task}.parquet"
                write_parquet(pd.DataFrame({"metric": ["f1"], "task": ["ner"], "test_f1": [f1]}), scores)
                fields = {"series": series, "model": model, "task": task}
                inputs[f"curve__{model}__{task}"], inputs[f"scores__{model}__{task}__1"] = (
                    str(curve), str(scores))
                manifest += [{"input": f"curve__{model}__{task}", "kind": "curve", **fields},
                             {"input": f"scores__{model}__{task}__1", "kind": "scores", **fields}]
    run_script("plot_figure.py", inputs,
               {"spec": {"kind": "sample_efficiency", "title": "F3"}, "manifest": manifest}, tmp_path / "out")
    table = pd.read_csv(tmp_path / "out" / "f.csv").set_index("model")
    assert table.loc["el", "train_sequences"] == 50000 and table.loc["el", "score"] == pytest.approx(40.0)
    assert table.loc["mf-1k", "series"] == "MF" and table.loc["el-1k", "runs"] == 2

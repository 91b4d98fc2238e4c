"""The Snakemake workflow end to end on a tiny config, in a temporary working directory."""

import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml
from conftest import planned_job_counts
from safetensors.torch import load_file

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "tests" / "data" / "tiny_config.yaml"
SNAKEMAKE = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile")]


def snakemake(workdir: Path, *args: str, config: Path | None = None, check: bool = True):
    cmd = [*SNAKEMAKE, *args, "--configfile", str(config or workdir / "config.yaml")]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=workdir,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}")
    return proc


def planned_jobs(proc) -> dict[str, int]:
    return planned_job_counts(proc.stdout + proc.stderr)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("tiny")
    shutil.copy(TINY, workdir / "config.yaml")
    snakemake(workdir, "--cores", "2")
    return workdir


@pytest.mark.slow
def test_tiny_dag_produces_table_and_artifacts(tiny_run):
    table = pd.read_csv(tiny_run / "results/tables/init_mlm_loss.csv")
    assert set(table.columns) >= {"language", "method", "mlm_loss", "in_source_pretraining"}
    config = yaml.safe_load(TINY.read_text())
    expected = {(t, m) for m, spec in config["methods"].items()
                for t in spec.get("targets", config["targets"])}
    assert (set(zip(table["language"], table["method"], strict=True)) == expected
            and len(table) == len(expected))
    assert table.set_index("language")["in_source_pretraining"].to_dict() == {"de": True, "sw": False}
    assert table["mlm_loss"].notna().all()
    # each paper's method beats nothing trivially wrong: FOCUS below Random in both languages
    loss = table.set_index(["language", "method"])["mlm_loss"]
    assert all(loss[(t, "focus")] < loss[(t, "random")] for t in ("de", "sw"))
    md = (tiny_run / "results/tables/init_mlm_loss.md").read_text()
    assert "de (in)" in md and "sw (not in)" in md and "FOCUS" in md
    # the script jobs of a local run were forked from the run's warm starter
    # (vocab_transfer/warm.py), but those of rules with a benchmark: file, which import for
    # themselves so that the file measures them
    table_logs = list((tiny_run / "logs/make_init_table").rglob("*.log"))
    assert table_logs and all("warm start: forked" in p.read_text() for p in table_logs)
    init_logs = list((tiny_run / "logs/init_embeddings").rglob("*.log"))
    assert init_logs and not any("warm start: forked" in p.read_text() for p in init_logs)
    # the trainers' jobs fork too, and write their benchmark files themselves (training/launch.py): the
    # forked trainer's own memory and CPU
    lapt_logs = list((tiny_run / "logs/train_lapt").rglob("*.log"))
    assert lapt_logs and all("ran in a child of the warm starter" in p.read_text() for p in lapt_logs)
    trained = [b for b in (tiny_run / "benchmarks").rglob("*.tsv")
               if {"train_lapt", "finetune"} & set(b.parts)]
    assert trained
    for bench in trained:
        row = pd.read_csv(bench, sep="\t").iloc[0]
        assert row["max_rss"] > 100 and 0 < row["cpu_time"] and row["s"] > 0, (bench, row.to_dict())
    # every intermediate opens with pandas or safetensors alone
    for path in (tiny_run / "results").rglob("*"):
        if path.suffix == ".parquet":
            pd.read_parquet(path)
        elif path.suffix == ".safetensors":
            load_file(path)
    from vocab_transfer.init import init_metadata

    meta = init_metadata(str(tiny_run / "results/init/tiny/sw/focus.safetensors"))
    assert meta["method"]["kind"] == "focus" and meta["seed"] == 7  # method config and seed in the artifact
    prov = pd.read_parquet(tiny_run / "results/init/tiny/sw/focus.provenance.parquet")
    assert set(prov["provenance"]) <= {"special", "copied", "combined", "random"}
    assert (prov["provenance"] == "combined").any()
    assert (pd.read_parquet(tiny_run / "results/init/tiny/sw/wechsel.provenance.parquet")["provenance"]
            == "combined").any()
    factors = load_file(tiny_run / "results/init/tiny/sw/mf10_kmeans_lex.safetensors")
    assert {"embeddings", "mf_F", "mf_G", "mf_Z"} <= set(factors)
    from vocab_transfer.data.tokenizer import load_tokenizer

    extended = load_tokenizer(str(tiny_run / "results/extended/tiny/sw/extend/tokenizer"))
    source = load_tokenizer(str(tiny_run / "results/source/tiny/model"))
    assert len(extended) == len(load_file(tiny_run / "results/init/tiny/sw/extend.safetensors")["embeddings"])
    assert len(extended) > len(source)
    # FreeDict eng-swh
    assert pd.read_parquet(tiny_run / "results/dictionaries/en/sw.parquet").shape[0] > 1000
    # LAPT: Figure 2 data for both runs, the two-stage run with its embeddings-only stage first
    lapt = pd.read_csv(tiny_run / "results/figures/lapt_curves/tiny/sw.csv")
    assert set(lapt["run"]) == {"random", "focus", "adapter", "mf_factorized"}
    assert (tiny_run / "results/figures/lapt_curves/tiny/sw.png").is_file()
    assert (tiny_run / "results/lapt/tiny/sw/mf_factorized/model/factorized_embeddings.safetensors").is_file()
    assert (tiny_run / "results/figures/lapt_curves/tiny/sw.svg").read_text().lstrip().startswith("<?xml")
    assert lapt.loc[lapt["run"] == "random", "stage"].tolist()[:3] == [0, 0, 1]
    from transformers import AutoModelForMaskedLM

    AutoModelForMaskedLM.from_pretrained(tiny_run / "results/lapt/tiny/sw/focus/model")
    assert not (tiny_run / "results/lapt/tiny/sw/focus/checkpoints").exists()
    adapter_dir = tiny_run / "results/lapt/tiny/he/adapter/model"
    assert {"model.safetensors", "language_adapter.safetensors", "language_adapter.json"} <= {
        p.name for p in adapter_dir.iterdir()}
    # fine-tuning: one row per (model, seed) for every kind of model; the table has every cell
    all_scores = pd.read_parquet(tiny_run / "results/tables/finetune_scores.parquet")
    scores = all_scores[all_scores["zero_shot"].ne(True)]  # in-language fine-tuning
    ner, dep = scores[scores.task == "ner"], scores[scores.task == "dep"]
    assert sorted(ner["model"]) == ["adapter-lapt", "focus-lapt", "focus-snapshot-step3", "random-init",
                                    "source"]
    # per-model tasks
    assert sorted(dep["model"]) == ["focus-lapt", "source"] and (dep["metric"] == "las").all()
    assert set(scores["method"]) == {"focus", "random", "source"} and (scores["n_train"] == 150).all()
    assert ner[["dev_f1", "test_f1"]].notna().all().all() and (ner["test_f1"] >= 0).all()
    assert (dep["test_uas"] >= dep["test_las"]).all() and (dep["test_uas"] > 0).all()
    assert (scores["n_test"] == 716).all() and (scores["language"] == "he").all()
    md = (tiny_run / "results/tables/finetune.md").read_text()
    rows = [line for line in md.splitlines() if line.startswith("| ") and "Task" not in line]
    assert "Hebrew NER (f1)" in md and "Hebrew DP (las)" in md and "Hebrew NER (zero-shot) (f1)" in md
    assert len(rows) == 6  # the five models above and the zero-shot-only MAD-X row
    assert all(" ± " in r for r in rows) and sum(" / " in r for r in rows) == 2  # UAS / LAS where parsed
    table3 = (tiny_run / "results/tables/paper/table3.md").read_text().splitlines()
    assert table3[2] == "| Model | Hebrew NER | Hebrew DP |"  # column groups in the config's order
    # not part of the grid
    assert table3[6].startswith("| Random (no LAPT) |") and table3[6].endswith("| — |")
    curve = pd.read_parquet(tiny_run / "results/source/tiny/pretrain_curve.parquet")
    assert curve["heldout_loss"].iloc[-1] < curve["heldout_loss"].iloc[0]
    # zero-shot (UNKs §4.3): the task adapter is trained once on the source side, each cell evaluates it
    zs = all_scores[all_scores["zero_shot"].eq(True)].set_index("model")
    assert sorted(zs.index) == ["adapter-lapt", "madx"] and (zs["source_task"] == "he-ner-src").all()
    assert ((zs["task_name"] == "he-ner-zs").all() and (zs["n_train"] == 150).all()
            and (zs["n_test"] == 716).all())
    assert (zs["variant"] == "adapter").all() and zs.loc["adapter-lapt", "lapt"] == "adapter"
    # MAD-X row: the source side's own adapter swapped in
    for k in ("test_f1", "test_precision", "test_recall"):
        assert zs.loc["madx", k] == zs.loc["madx", f"source_{k}"]
    # one file per cell: a row per seed and source task
    cell = pd.read_parquet(tiny_run / "results/zeroshot/tiny/he-ner-zs/madx.parquet")
    assert list(zip(cell["seed"], cell["source_task"], strict=True)) == [(1, "he-ner-src")]
    trained = tiny_run / "results/source_task/tiny/he-ner-src/madx/seed1.model"
    assert ({"task_adapter.safetensors", "task_head.safetensors", "zero_shot.json"}
            <= {p.name for p in trained.iterdir()})
    assert not (trained / "model.safetensors").exists()  # the frozen transformer is not stored again
    assert len(pd.read_parquet(tiny_run / "results/tasks/he-ner-zs/train.parquet")) == 0  # test split only
    madx = load_file(tiny_run / "results/lapt/tiny/he/madx/model/model.safetensors")
    src = load_file(next((tiny_run / "results/source/tiny/model").glob("*.safetensors")))
    key = next(k for k in src if k.endswith("word_embeddings.weight"))
    assert torch.equal(madx[key], src[key])  # train_embeddings: false: the source's rows stay
    zero_shot = (tiny_run / "results/tables/paper/zero_shot.md").read_text().splitlines()
    assert zero_shot[2] == "| Model | Hebrew NER (zero-shot) |" and zero_shot[4].startswith("| MAD-X |")


@pytest.mark.slow
def test_every_table_number_has_its_artifact_and_checksum(tiny_run):
    """Each numeric cell of each table's CSV has a provenance row (a fine-tuning cell that did not run, 0
    seeds, reads nothing), each recorded checksum is the artifact's content now, and no two rows read one
    artifact."""
    from vocab_transfer.report.provenance import artifact_checksum, check_table_provenance, provenance_path

    tables = sorted((tiny_run / "results/tables").rglob("*.md"))
    assert len(tables) == 4  # init, fine-tuning, and the two paper tables
    for md in tables:
        csv = pd.read_csv(md.with_suffix(".csv"))
        side = pd.read_parquet(provenance_path(md))
        numeric = {(i, c) for c in csv.columns if pd.api.types.is_numeric_dtype(csv[c])
                   and not pd.api.types.is_bool_dtype(csv[c]) for i in csv.index[csv[c].notna()]
                   if not (c == "seeds" and csv.at[i, c] == 0)}
        assert numeric and numeric == set(zip(side["csv_row"], side["field"], strict=True)), md.name
        for artifact, checksum in side.drop_duplicates("artifact")[["artifact", "checksum"]].itertuples(
                index=False):
            assert checksum == artifact_checksum(tiny_run / artifact, deep=True), artifact
        assert check_table_provenance(md, base=tiny_run) == [], md.name
    init = pd.read_parquet(provenance_path(tiny_run / "results/tables/init_mlm_loss.md"))
    assert set(init["artifact"]) == {"results/eval_init/tiny/de.parquet", "results/eval_init/tiny/sw.parquet"}
    # the check followed each score file to the model it is of, and a LAPT output to the init it started from
    from vocab_transfer.report.provenance import lineage

    finetune = pd.read_parquet(provenance_path(tiny_run / "results/tables/finetune.md"))
    traced = {a: lineage(a, tiny_run) for a in set(finetune["artifact"])}
    assert all("model" in t for t in traced.values()), traced
    lapt = [t for t in traced.values() if t["model"]["path"] == "results/lapt/tiny/he/focus/model"]
    assert lapt and all(t["origin"]["path"] == "results/init/tiny/he/focus.safetensors" for t in lapt)


@pytest.mark.slow
def test_snakemake_push_uploads_an_export_with_its_receipt(tiny_run, tmp_path):
    """rule push_export (`snakemake push` names every export): with export.push in the config and the token in
    HF_TOKEN, the export goes to its repository (a local fake of the hub's HTTP API, tests/fake_hub.py, at
    HF_ENDPOINT) byte for byte, and the receipt names the commit; the folder stays as it was."""
    import hashlib

    from fake_hub import FakeHub

    config = yaml.safe_load((tiny_run / "config.yaml").read_text())
    config["export"] = {"push": {"repo": "someone/{source}-{target}-{stage}-{name}", "private": True}}
    (tmp_path / "push.yaml").write_text(yaml.safe_dump(config))
    receipt, folder = ("results/export/tiny/sw/init/focus.pushed.json",
                       tiny_run / "results/export/tiny/sw/init/focus")
    # the other jobs as they are (the export's params name the config file it was built with)
    snakemake(tiny_run, "--cores", "2", str(folder.relative_to(tiny_run)), "--rerun-triggers", "mtime")
    with FakeHub("hf_fake") as hub:
        env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
        proc = subprocess.run([*SNAKEMAKE, "--cores", "1", receipt, "--rerun-triggers", "mtime",
                               "--configfile", str(tmp_path / "push.yaml")], cwd=tiny_run,
                              capture_output=True, text=True,
                              env={**env, "HF_TOKEN": "hf_fake", "HF_ENDPOINT": hub.url})
    assert proc.returncode == 0, proc.stderr[-4000:]
    repo = hub.repos["someone/tiny-sw-init-focus"]
    on_disk = {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
               for p in folder.rglob("*") if p.is_file() and not p.name.startswith(".")}
    assert {k: hashlib.sha256(v).hexdigest() for k, v in repo.files.items()} == on_disk and repo.private
    assert json.loads((tiny_run / receipt).read_text())["repo"] == "someone/tiny-sw-init-focus"
    dry = snakemake(tiny_run, "-n", "--cores", "1")  # `all` pushes nothing
    assert "push_export" not in dry.stdout + dry.stderr


@pytest.mark.slow
def test_exports_load_with_auto_classes_and_score_the_pipelines_loss(tiny_run):
    """`snakemake <export folder>`: an init export is the model the init-time loss was measured on (AutoModel,
    AutoTokenizer, the same held-out blocks and masks: the same loss); a LAPT export is the run's model, with
    a card that names where it comes from and how to rebuild it."""
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    from vocab_transfer.eval.mlm import init_eval_row

    init, lapt = "results/export/tiny/sw/init/focus", "results/export/tiny/sw/lapt/focus"
    snakemake(tiny_run, "--cores", "2", init, lapt)
    model = AutoModelForMaskedLM.from_pretrained(tiny_run / init)
    tokenizer = AutoTokenizer.from_pretrained(tiny_run / init)
    blocks = load_file(tiny_run / "results/eval_init/heldout/sw.safetensors")["input_ids"]
    spec = yaml.safe_load(TINY.read_text())["eval"]
    row = init_eval_row(model.eval(), blocks, tokenizer, objective="mlm", seed=spec["seed"],
                        mask_prob=spec["mask_prob"], batch_size=spec["batch_size"])
    table = pd.read_parquet(tiny_run / "results/eval_init/tiny/sw.parquet").set_index("method")
    assert row["mlm_loss"] == pytest.approx(table.loc["focus", "mlm_loss"], abs=1e-5)
    assert row["masked_tokens"] == table.loc["focus", "masked_tokens"]
    card = (tiny_run / init / "README.md").read_text()
    from huggingface_hub import ModelCard

    data = ModelCard(card).data  # the Hub metadata, as huggingface_hub reads it
    assert (data.library_name, data.language, data.pipeline_tag) == ("transformers", ["sw"], "fill-mask")
    assert {r.metric_type: r.metric_value for r in data.eval_results}["loss"] == pytest.approx(
        table.loc["focus", "mlm_loss"])
    assert f"{table.loc['focus', 'mlm_loss']:.4f}" in card and "kind `focus`" in card and "FOCUS" in card
    command = card[card.index("snakemake --cores all"):].splitlines()[0]  # the card's "Reproduce"
    assert command == shlex.join(["snakemake", "--cores", "all", "--snakefile", str(REPO / "Snakefile"),
                                  "--directory", str(tiny_run), init, "--configfile",
                                  str(tiny_run / "config.yaml")])
    # runs as printed, from elsewhere
    dry = subprocess.run([sys.executable, "-m", *shlex.split(command), "-n"], cwd=REPO / "docs",
                         capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert dry.returncode == 0, dry.stderr[-3000:]
    exported = load_file(tiny_run / lapt / "model.safetensors")
    trained = load_file(tiny_run / "results/lapt/tiny/sw/focus/model/model.safetensors")
    assert exported.keys() == trained.keys() and all(torch.equal(exported[k], trained[k]) for k in trained)
    AutoModelForMaskedLM.from_pretrained(tiny_run / lapt)
    assert len(AutoTokenizer.from_pretrained(tiny_run / lapt)) == len(tokenizer)
    card = (tiny_run / lapt / "README.md").read_text()
    curve = pd.read_parquet(tiny_run / "results/lapt/tiny/sw/focus/curve.parquet")
    assert f"{int(curve.step.iloc[-1])} steps" in card and f"{curve.heldout_loss.iloc[-1]:.4f}" in card
    assert "## LAPT curve" in card and card.count("\n| ") >= len(curve) + 4


@pytest.mark.slow
def test_unks_figures_2_and_3_from_the_dag(tiny_run):
    """UNKs Everywhere Figures 2-3 in miniature (tiny config's figures unk_scatter, sample_efficiency): scores
    read from the fine-tuning cells, the UNK share from the Hebrew tokenizer and the source's, x of Figure 3
    from the runs' curves."""
    from vocab_transfer.data.tokenizer import load_tokenizer
    from vocab_transfer.report.vocab_tables import vocab_coverage_table

    fig2 = pd.read_csv(tiny_run / "results/figures/unk_scatter/tiny/unk_scatter.csv").set_index("task")
    for task, column in (("he-ner", "test_f1"), ("he-dep", "test_las")):
        cell = pd.read_parquet(tiny_run / f"results/finetune/tiny/{task}/source/seed1.parquet").iloc[0]
        assert fig2.loc[task, "score"] == pytest.approx(100 * cell[column]) and fig2.loc[task, "runs"] == 1
    table1, _ = vocab_coverage_table(["he"], {"he": load_tokenizer(str(tiny_run / "results/tokenizers/he"))},
                                     load_tokenizer(str(tiny_run / "results/source/tiny/model")),
                                     {"he": pd.read_parquet(tiny_run / "results/overlap/tiny/he.parquet")},
                                     "T1")
    for column in ("unk_share", "overlap_share"):  # the x of Figure 2 is Table 1's number
        assert fig2.loc["he-ner", column] == pytest.approx(table1[column].iloc[0])
    assert fig2.loc["he-ner", "unk_share"] > 0.5  # Hebrew script: unseen by the source tokenizer (de, en, sw)
    fig3 = pd.read_csv(
        tiny_run / "results/figures/sample_efficiency/tiny/sample_efficiency.csv").set_index("model")
    assert (fig3.loc["focus-lapt", "series"] == "FOCUS"
            and fig3.loc["adapter-lapt", "series"] == "FOCUS + MAD-X")
    for model, run in (("focus-lapt", "focus"), ("adapter-lapt", "adapter")):
        curve = pd.read_parquet(tiny_run / f"results/lapt/tiny/he/{run}/curve.parquet")
        assert fig3.loc[model, "train_sequences"] == curve["train_sequences"].iloc[-1]
        cell = pd.read_parquet(tiny_run / f"results/finetune/tiny/he-ner/{model}/seed1.parquet").iloc[0]
        assert fig3.loc[model, "score"] == pytest.approx(100 * cell["test_f1"])
    for name in ("unk_scatter/tiny/unk_scatter", "sample_efficiency/tiny/sample_efficiency"):
        assert (tiny_run / f"results/figures/{name}.png").stat().st_size > 10_000


@pytest.mark.slow
def test_lapt_snapshots_and_figure4(tiny_run):
    """vocab-swap Figure 4 in miniature: FOCUS's LAPT keeps snapshots at steps 3 and 6 (the last: the final
    model), the step-3 snapshot is fine-tuned on Hebrew NER, and the figure's scores are those fine-tuning
    results."""
    from transformers import AutoModelForMaskedLM

    run = tiny_run / "results/lapt/tiny/he/focus"
    assert sorted(p.name for p in (run / "snapshots").glob("step-*")) == ["step-00000003", "step-00000006"]
    assert ((run / "snapshots/step-00000006/model.safetensors").read_bytes()
            == (run / "model/model.safetensors").read_bytes())
    assert ((run / "snapshots/step-00000003/model.safetensors").read_bytes()
            != (run / "model/model.safetensors").read_bytes())
    AutoModelForMaskedLM.from_pretrained(run / "snapshots/step-00000003")
    assert (run / "snapshots/step-00000003/tokenizer.json").is_file()
    assert not any((tiny_run / "results/lapt/tiny/he/random/snapshots").glob("step-*"))  # no snapshot_steps
    assert pd.read_parquet(tiny_run / "results/lapt/tiny/he/random/token_accuracy.parquet").empty
    scores = pd.read_parquet(tiny_run / "results/tables/finetune_scores.parquet")
    scores = scores[scores["zero_shot"].ne(True)].set_index("model")  # in-language fine-tuning only
    assert (scores.loc["focus-snapshot-step3", "lapt_step"] == 3
            and scores.loc["focus-snapshot-step3", "lapt"] == "focus")
    fig = pd.read_csv(tiny_run / "results/figures/lapt_finetune/tiny/figure4.csv")
    points = fig[fig.kind == "test_f1"]
    assert list(zip(points.run, points.step, points.model, strict=True)) == [
        ("focus", 3, "focus-snapshot-step3"), ("focus", 6, "focus-lapt"), ("adapter", 6, "adapter-lapt")]
    ner = scores[scores.task == "ner"]
    for r in points.itertuples():
        assert r.value == pytest.approx(100 * ner.loc[r.model, "test_f1"]) and r.seeds == 1
    curve = pd.read_parquet(run / "curve.parquet")
    loss = fig[(fig.kind == "heldout_loss") & (fig.run == "focus")]
    assert (loss.step.tolist() == curve.step.tolist()
            and loss.value.tolist() == pytest.approx(curve.heldout_loss.tolist()))
    assert set(fig.label) == {"FOCUS", "FOCUS + MAD-X"}
    for suffix in ("png", "svg"):
        assert (tiny_run / f"results/figures/lapt_finetune/tiny/figure4.{suffix}").stat().st_size > 10_000


@pytest.mark.slow
def test_rerun_has_nothing_to_do_and_param_change_reruns_only_that_method(tiny_run):
    proc = snakemake(tiny_run, "-n", "--cores", "1")
    assert "Nothing to be done" in proc.stdout + proc.stderr
    before = load_file(tiny_run / "results/init/tiny/sw/focus.safetensors")

    config = yaml.safe_load((tiny_run / "config.yaml").read_text())
    config["methods"]["focus_symbolic"]["topk"] = 8
    changed = tiny_run / "changed.yaml"
    changed.write_text(yaml.safe_dump(config, sort_keys=False))  # the order of models/tasks orders the tables
    jobs = planned_jobs(snakemake(tiny_run, "-n", "--cores", "1", config=changed))
    assert jobs == {"init_embeddings": 2, "evaluate_init": 2, "make_init_table": 1, "all": 1}, jobs
    proc = snakemake(tiny_run, "-n", "--cores", "1", config=changed)
    planned = re.findall(r"output: (results/init/\S+)\.safetensors", proc.stdout + proc.stderr)
    assert sorted(planned) == ["results/init/tiny/de/focus_symbolic", "results/init/tiny/sw/focus_symbolic"]

    # rerunning one init from scratch gives bit-identical tensors (same config, same seed)
    target = "results/init/tiny/sw/focus.safetensors"
    snakemake(tiny_run, target, "--cores", "1", "--forcerun", "init_embeddings", "--allowed-rules",
              "init_embeddings")
    after = load_file(tiny_run / target)
    assert all(torch.equal(before[k], after[k]) for k in before)


CHECKSUMS = REPO / "tests" / "data" / "init_checksums.json"


def cpu_class() -> str:
    """The CPU features that decide which float kernels torch and MKL run (tensors are bit-identical within a
    class): the architecture, torch's vector capability, and whether the CPU has bf16 units (FOCUS/WECHSEL
    screen in bf16)."""
    import platform

    flags = set()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        flags = set(re.findall(r"\b(amx_bf16|avx512_bf16)\b", cpuinfo.read_text()))
    bf16 = "+".join(sorted(flags)) or "no-bf16"
    return f"{platform.system()}-{platform.machine()}-{torch.backends.cpu.get_cpu_capability()}-{bf16}"


@pytest.mark.slow
def test_init_tensors_match_stored_checksums(tiny_run):
    """Every init tensor of the tiny run (all methods, both languages) has the SHA-256 recorded in
    tests/data/init_checksums.json for this CPU class (tensor data only; the metadata holds versions, paths
    and times). `UPDATE_CHECKSUMS=1` records this machine's instead of comparing."""
    from vocab_transfer.artifacts import tensor_checksums

    found = {p.relative_to(tiny_run).as_posix(): tensor_checksums(p)
             for p in sorted((tiny_run / "results/init").rglob("*.safetensors"))}
    config = yaml.safe_load(TINY.read_text())
    cells = {f"results/init/tiny/{t}/{m}.safetensors" for m, spec in config["methods"].items()
             for t in spec.get("targets", config["targets"])}
    assert cells <= set(found), sorted(cells - set(found))
    stored = json.loads(CHECKSUMS.read_text()) if CHECKSUMS.is_file() else {}
    key = cpu_class()
    if os.environ.get("UPDATE_CHECKSUMS") == "1":
        from vocab_transfer.artifacts import versions

        stored[key] = {"versions": {k: v for k, v in versions().items() if k != "vocab_transfer"},
                       "checksums": found}
        CHECKSUMS.write_text(json.dumps(stored, indent=1, sort_keys=True) + "\n")
        return
    if key not in stored:
        pytest.skip(f"no init checksums recorded for CPU class {key} (recorded: {sorted(stored)}); "
                    "UPDATE_CHECKSUMS=1 records them")
    expected = stored[key]["checksums"]
    assert sorted(found) == sorted(expected), set(found) ^ set(expected)
    differ = {path: sorted(k for k in found[path] if found[path][k] != expected[path].get(k))
              for path in found if found[path] != expected[path]}
    assert not differ, (f"{len(differ)} of {len(found)} init artifacts differ from {CHECKSUMS.name} "
                        f"(recorded with {stored[key]['versions']}): {differ}")


def bad_config(tmp_path: Path, edit) -> subprocess.CompletedProcess:
    config = yaml.safe_load(TINY.read_text())
    edit(config)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(config))
    proc = snakemake(tmp_path, "-n", "--cores", "1", config=path, check=False)
    proc.stderr = proc.stdout + proc.stderr  # snakemake prints workflow errors to stdout
    return proc


def test_misspelled_key_is_named(tmp_path):
    proc = bad_config(tmp_path, lambda c: c.update(methdos=c.pop("methods")))
    assert proc.returncode != 0 and "methdos" in proc.stderr


def test_unknown_method_is_named(tmp_path):
    proc = bad_config(tmp_path, lambda c: c["methods"].update(fancy={"kind": "fokus"}))
    assert proc.returncode != 0 and "fokus" in proc.stderr


def test_unknown_method_parameter_is_named(tmp_path):
    proc = bad_config(tmp_path, lambda c: c["methods"]["focus"].update(tokp=3))
    assert proc.returncode != 0 and "tokp" in proc.stderr and "topk" in proc.stderr


def test_missing_language_is_named(tmp_path):
    proc = bad_config(tmp_path, lambda c: c["targets"].append("xh"))
    assert proc.returncode != 0 and "'xh'" in proc.stderr and "corpora" in proc.stderr


def test_missing_dictionary_is_named(tmp_path):
    proc = bad_config(tmp_path, lambda c: c["dictionaries"]["en"].pop("sw"))
    assert proc.returncode != 0 and "no dictionary en -> ['sw']" in proc.stderr


def test_method_target_outside_targets_is_named(tmp_path):
    proc = bad_config(tmp_path, lambda c: c["methods"]["reinit"].update(targets=["fr"]))
    assert proc.returncode != 0 and "methods.reinit.targets" in proc.stderr


def test_factorized_run_of_a_flat_method_is_named(tmp_path):
    proc = bad_config(tmp_path, lambda c: c["lapt"]["runs"]["focus"].update(factorized=True))
    assert (proc.returncode != 0 and "lapt.runs.focus: factorized: true" in proc.stderr
            and "'focus'" in proc.stderr)


def test_every_registered_method_kind_is_documented():
    """A method is one module that registers itself; its doc lines are the registry table of
    vocab_transfer.methods and the method table of docs/methods.md."""
    import vocab_transfer.methods as methods

    table = (REPO / "docs/methods.md").read_text()
    for kind, method in methods.METHODS.items():
        assert f"``{kind}``" in methods.__doc__ and f"`kind: {kind}" in table, kind
        assert method.fn.__module__.startswith("vocab_transfer.methods."), kind


def test_mismatched_source_tokenizer_is_named(tmp_path, sw_tokenizer):
    from vocab_transfer.source_model import build_xlmr_mlm

    model_dir = tmp_path / "bad-model"
    model = build_xlmr_mlm(sw_tokenizer, hidden_size=16, num_layers=1, num_heads=1, intermediate_size=16,
                           max_position_embeddings=16, seed=0)
    model.resize_token_embeddings(500)  # embedding matrix now smaller than the 600-token tokenizer
    model.save_pretrained(model_dir)
    sw_tokenizer.save_pretrained(model_dir)

    def edit(c):
        c["sources"] = {"broken": {"model": str(model_dir), "languages": ["de"]}}

    proc = bad_config(tmp_path, edit)
    assert proc.returncode != 0 and "600 tokens" in proc.stderr and "500 rows" in proc.stderr


@pytest.mark.slow
def test_local_and_hub_sources_plan_without_network(tiny_run, tmp_path):
    config = yaml.safe_load(TINY.read_text())
    config["sources"] = {"local": {"model": str(tiny_run / "results/source/tiny/model"), "languages": ["de"]},
                         "hub": {"model": "FacebookAI/xlm-roberta-base", "languages": ["de", "sw"]}}
    path = tmp_path / "sources.yaml"
    path.write_text(yaml.safe_dump(config))
    proc = snakemake(tmp_path, "-n", "--cores", "1", config=path)
    jobs = planned_jobs(proc)
    assert "pretrain_source_model" not in jobs and jobs["download_source_model"] == 1
    config = yaml.safe_load(TINY.read_text())
    cells = {(t, m) for m, spec in config["methods"].items() for t in spec.get("targets", config["targets"])}
    lapt, ft = config["lapt"], config["finetune"]
    cells |= {(t, run["method"]) for run in lapt["runs"].values() if "method" in run
              for t in run.get("targets", lapt["targets"])}
    cells |= {(task["language"], m["init"]) for m in ft["models"].values() if "init" in m
              for task in ft["tasks"].values()}
    assert jobs["init_embeddings"] == 2 * len(cells)  # Table 4 cells, plus the inits LAPT and fine-tuning use
    assert "resources/models/hub" in proc.stdout


@pytest.fixture(scope="module")
def decoder_run(tmp_path_factory):
    """scripts/tiny_decoders.py's two decoder sources and config, run as its docstring says."""
    from conftest import write_tiny_decoders

    workdir = write_tiny_decoders(tmp_path_factory.mktemp("decoder"))
    snakemake(workdir, "--cores", "2")
    return workdir


@pytest.mark.slow
def test_decoder_source_dag(decoder_run):
    """A Qwen2 source (tied): causal-LM loss right after init (random weights: ln |V|), CLM LAPT lowers it;
    the target tokenizer is byte-level BPE in Qwen2's layout (no bos, ChatML tokens, chat template)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    res = pd.read_parquet(decoder_run / "results/eval_init/qwen2-tiny/sw.parquet")
    assert (res["objective"] == "clm").all() and (abs(res["mlm_loss"] - math.log(400)) < 0.1).all()
    assert "causal-LM" in (decoder_run / "results/tables/init_mlm_loss.md").read_text()
    curve = pd.read_parquet(decoder_run / "results/lapt/qwen2-tiny/sw/focus/curve.parquet")
    assert curve["heldout_loss"].iloc[-1] < curve["heldout_loss"].iloc[0]
    table = pd.read_csv(decoder_run / "results/tables/paper/table2.csv")
    assert sorted(table["source"].unique()) == ["llama-tiny", "qwen2-tiny"]  # one block per source model
    table = table[table.source == "qwen2-tiny"].set_index("step")["perplexity"]
    assert table[0] == pytest.approx(math.exp(curve["heldout_loss"].iloc[0])) and table[6] < table[0]
    md = (decoder_run / "results/tables/paper/table2.md").read_text()
    assert md.count("| FOCUS |") == 2 and "(source `qwen2-tiny`)" in md and "(source `llama-tiny`)" in md
    lapt = AutoModelForCausalLM.from_pretrained(decoder_run / "results/lapt/qwen2-tiny/sw/focus/model")
    assert lapt.config.vocab_size == 400 and lapt.config.tie_word_embeddings
    tok = AutoTokenizer.from_pretrained(decoder_run / "results/tokenizers/sw")
    source = AutoTokenizer.from_pretrained(decoder_run / "qwen2-tiny")
    assert tok.chat_template == source.chat_template and tok.bos_token is None and len(tok) == 400
    assert tok.convert_ids_to_tokens([0, 1, 2]) == source.convert_ids_to_tokens([0, 1, 2])
    overlap = pd.read_parquet(decoder_run / "results/overlap/qwen2-tiny/sw.parquet")
    assert len(overlap) >= 256  # every byte symbol, the specials and shared pieces


@pytest.mark.slow
def test_lm_eval_benchmarks_of_the_source_init_and_lapt_exports(decoder_run):
    """eval.benchmarks: lm-eval scores the source, the FOCUS init export and the FOCUS LAPT export of each
    decoder on a local multiple-choice task; the table gives each score and the share of the source's score it
    keeps."""
    data = json.loads((decoder_run / "results/benchmarks/sw/data.json").read_text())
    assert data["fetched"]["sw_verses"]["documents"] == 40
    for source in ("qwen2-tiny", "llama-tiny"):
        scores = {
            stage: pd.read_parquet(decoder_run / f"results/benchmarks/sw/{source}/{stage}/{name}.parquet")
            for stage, name in (("source", source), ("init", "focus"), ("lapt", "focus"))}
        for df in scores.values():
            acc = df.set_index("metric").loc["acc"]
            assert acc["samples"] == 20 and 0 <= acc["value"] <= 1 and acc["task"] == "sw_verses"
    table = pd.read_csv(decoder_run / "results/tables/benchmarks.csv")
    assert len(table[(table.stage == "source")]) == 4  # acc and acc_norm of two sources
    init = table[(table.stage == "init") & (table.metric == "acc") & (table.source == "llama-tiny")].iloc[0]
    source = table[(table.stage == "source") & (table.metric == "acc")
                   & (table.source == "llama-tiny")].iloc[0]
    assert init["kept"] == pytest.approx(init["value"] / source["value"])
    md = (decoder_run / "results/tables/benchmarks.md").read_text()
    assert "| Source (llama-tiny) |" in md and "sw_verses (acc_norm)" in md and "| FOCUS + LAPT |" in md
    html = (decoder_run / "results/tables/benchmarks.html").read_text()  # the report's copy
    assert html.count("<table>") == 2 and "<td>FOCUS + LAPT</td>" in html  # a block per source
    from vocab_transfer.report.provenance import check_table_provenance, provenance_path

    side = pd.read_parquet(provenance_path(decoder_run / "results/tables/benchmarks.md"))
    kept = side[(side.row == "stage=init name=focus") & (side.field == "kept")
                & side.block.str.contains("llama")]
    assert set(zip(kept.role, kept.artifact, strict=True)) == {  # the init's score over the source's
        ("value", "results/benchmarks/sw/llama-tiny/init/focus.parquet"),
        ("reference", "results/benchmarks/sw/llama-tiny/source/llama-tiny.parquet")}
    assert check_table_provenance(decoder_run / "results/tables/benchmarks.md", base=decoder_run) == []


@pytest.mark.slow
def test_untied_decoder_head_through_the_dag(decoder_run):
    """A Llama source with an untied head: `focus` transfers the head's own rows (an overlapping token keeps
    its source output row), `focus_copy_head` copies the new input rows into it; LAPT keeps the head
    untied."""
    from transformers import AutoModelForCausalLM

    source = load_file(decoder_run / "llama-tiny/model.safetensors")
    e_in, e_out = source["model.embed_tokens.weight"], source["lm_head.weight"]
    focus = load_file(decoder_run / "results/init/llama-tiny/sw/focus.safetensors")
    assert set(focus) == {"embeddings", "output_embeddings"}
    assert (set(load_file(decoder_run / "results/init/llama-tiny/sw/focus_copy_head.safetensors"))
            == {"embeddings"})
    # tied
    assert set(load_file(decoder_run / "results/init/qwen2-tiny/sw/focus.safetensors")) == {"embeddings"}
    prov = pd.read_parquet(decoder_run / "results/init/llama-tiny/sw/focus.provenance.parquet")
    overlap = pd.read_parquet(decoder_run / "results/overlap/llama-tiny/sw.parquet").set_index("target_id")
    copied = prov.loc[prov.provenance == "copied", "target_id"].tolist()
    assert len(copied) > 20
    for t in copied:
        s = overlap.loc[t, "source_id"]
        assert (torch.equal(focus["output_embeddings"][t], e_out[s])
                and torch.equal(focus["embeddings"][t], e_in[s]))
    res = pd.read_parquet(decoder_run / "results/eval_init/llama-tiny/sw.parquet").set_index("method")
    # different heads, different loss
    assert res.loc["focus", "mlm_loss"] != res.loc["focus_copy_head", "mlm_loss"]
    lapt = AutoModelForCausalLM.from_pretrained(decoder_run / "results/lapt/llama-tiny/sw/focus/model")
    assert not lapt.config.tie_word_embeddings and lapt.config.vocab_size == 400
    assert not torch.equal(lapt.lm_head.weight, lapt.get_input_embeddings().weight)


@pytest.mark.slow
@pytest.mark.parametrize("source", ["qwen2-tiny", "llama-tiny"])
def test_decoder_exports_reload_score_the_pipelines_loss_and_generate(decoder_run, source):
    """A decoder's init and LAPT exports load with AutoModelForCausalLM and AutoTokenizer: the tokenizer gives
    the pipeline's ids, the init export scores the init-time loss on the same held-out blocks, config.json and
    generation_config.json carry the target tokenizer's special ids, and `generate` stops at its eos."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from vocab_transfer.data.corpus import iter_corpus
    from vocab_transfer.data.tokenizer import load_tokenizer
    from vocab_transfer.eval.mlm import init_eval_row

    init, lapt = f"results/export/{source}/sw/init/focus", f"results/export/{source}/sw/lapt/focus"
    snakemake(decoder_run, "--cores", "2", init, lapt)
    ours = load_tokenizer(str(decoder_run / "results/tokenizers/sw"))
    texts = [t for b in iter_corpus(decoder_run / "results/corpus/sw/heldout.parquet", ("text",))
             for t in b.column(0).to_pylist()]
    for folder in (init, lapt):
        tok = AutoTokenizer.from_pretrained(decoder_run / folder)
        assert [tok(t)["input_ids"] for t in texts[:100]] == [ours(t)["input_ids"] for t in texts[:100]]
        assert tok.chat_template == ours.chat_template and tok.bos_token is None
        model = AutoModelForCausalLM.from_pretrained(decoder_run / folder).eval()
        assert model.config.vocab_size == len(tok) == 400
        assert (model.config.eos_token_id, model.config.pad_token_id) == (tok.eos_token_id, tok.pad_token_id)
        assert model.config.bos_token_id is None and model.generation_config.eos_token_id == tok.eos_token_id
        prompt = tok("Mungu akasema", return_tensors="pt")
        out = model.generate(**prompt, max_new_tokens=8, do_sample=False)
        assert out.shape[1] > prompt["input_ids"].shape[1] and int(out.max()) < len(tok)
    blocks = load_file(decoder_run / "results/eval_init/heldout/sw.safetensors")["input_ids"]
    spec = yaml.safe_load((REPO / "tests/data/tiny_decoder_config.yaml").read_text())["eval"]
    row = init_eval_row(AutoModelForCausalLM.from_pretrained(decoder_run / init).eval(), blocks, ours,
                        objective="clm", seed=spec["seed"], batch_size=spec["batch_size"])
    table = pd.read_parquet(decoder_run / f"results/eval_init/{source}/sw.parquet").set_index("method")
    assert row["mlm_loss"] == pytest.approx(table.loc["focus", "mlm_loss"], abs=1e-5)


ARTIFACTS = Path(os.environ.get("TEST_ARTIFACTS", REPO / "test-artifacts"))
SHOW = """<script>
// test hook: once the report app is up, open one result in the content pane and its subcategory's list (or
// its caption: navbarMode resultinfo) in the navigation bar, as clicks would
window.addEventListener("load", () => setTimeout(() => {
  const [path, entry] = Object.entries(results).find(([p]) => p.endsWith("%s"));
  const [category, subcategory] = Object.entries(categories).flatMap(([c, subs]) => Object.entries(subs)
    .filter(([, paths]) => paths.includes(path)).map(([sub]) => [c, sub]))[0];
  app.setView({navbarMode: "%s", category, subcategory, content: "%s", contentPath: entry.data_uri,
               resultPath: path});
}, 1500));
</script>"""


def chromium(*args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if exe is None:
        if os.environ.get("CI"):
            raise AssertionError("chromium is missing (scripts/test.sh installs Debian's chromium as root)")
        pytest.skip("chromium not installed (apt-get install chromium)")
    return subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--window-size=1400,900", "--virtual-time-budget=20000", *args],
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def tiny_report(tiny_run) -> str:
    """The tiny run's `snakemake --report report.html`: one self-contained page."""
    snakemake(tiny_run, "--report", "report.html")
    return (tiny_run / "report.html").read_text()


def report_data(page: str, name: str):
    """The JSON a Snakemake report embeds for its app: ``results`` (path -> label, caption, data URI, ...),
    ``categories`` (category -> subcategory -> paths) or ``workflow_desc`` (the start page's HTML)."""
    match = re.search(r"\n\s*var " + name + r' = ([{"].*);\n', page)  # not the bundled libraries' variables
    assert match, name
    return json.loads(match[1])


def test_report_categories_are_the_papers():
    """The composite's report groups each study's tables and figures under the paper their titles name; a
    study without tables or figures (LLM benchmarks) has a category of its own."""
    from vocab_transfer.workflow.plan.report import paper_of_title
    from vocab_transfer.workflow.studies import load_studies, study_plan

    assert paper_of_title("UNKs Everywhere Tables 5a-d: zero-shot NER") == "UNKs Everywhere"
    assert paper_of_title("vocab-swap Figure 4 in miniature: Hebrew NER") == "vocab-swap"
    assert paper_of_title("Table 3 in miniature") is None and paper_of_title(None) is None
    studies = load_studies(yaml.safe_load((REPO / "configs/papers.yaml").read_text()), str(REPO))
    categories = {name: study_plan(study).report_category for name, study in studies.items()}
    assert categories == {"focus": "FOCUS", "wechsel": "WECHSEL", "wechsel_gpt2": "WECHSEL",
                          "unks": "UNKs Everywhere", "vocab_swap": "vocab-swap",
                          "vocab_swap_frankenbert": "vocab-swap", "vocab_swap_frankenberta": "vocab-swap",
                          "vocab_swap_recovery": "vocab-swap", "llm_mistral": "llm_mistral"}


@pytest.mark.slow
def test_report_holds_every_paper_table_and_figure(tiny_run, tiny_report):
    """Every paper table and figure of the tiny run is in its report, byte for byte, labelled with its title
    and captioned with the paper it reproduces, under the run's category and the subcategory of its kind; the
    start page describes the workflow (report/workflow.rst)."""
    import base64
    from html import escape

    results, categories = report_data(tiny_report, "results"), report_data(tiny_report, "categories")
    config = yaml.safe_load((tiny_run / "config.yaml").read_text())
    # the tiny config's titles name several papers and it has no study
    assert list(categories) == ["This run"]
    assert set(categories["This run"]) == {"Tables", "Figures", "Source model"}
    tables = sorted((tiny_run / "results/tables/paper").glob("*.md"))
    assert [t.stem for t in tables] == sorted(config["tables"])
    figures = sorted((tiny_run / "results/figures").glob("*/*/*.png"))
    assert len(figures) >= len(config["figures"])
    expected = {f"results/tables/paper/{t.stem}.html": ("Tables", "table", config["tables"][t.stem]["title"])
                for t in tables}
    expected.update({str(f.relative_to(tiny_run)): ("Figures", "figure", config["figures"][f.stem]["title"])
                     for f in figures if f.stem in config["figures"]})
    for f in figures:
        expected.setdefault(str(f.relative_to(tiny_run)), ("Figures", "figure", None))
    for t in ("init_mlm_loss", "finetune"):
        expected[f"results/tables/{t}.html"] = ("Tables", "table", None)
    for path, (subcategory, kind, title) in expected.items():
        assert path in categories["This run"][subcategory], path
        entry = results[path]
        data = base64.b64decode(entry["data_uri"].split("base64,", 1)[1])
        assert data == (tiny_run / path).read_bytes(), path
        label = entry["labels"][kind]
        assert label == title if title else label, (path, label)
        # the caption names the paper table or figure: from the title, else from the caption's own text
        paper = re.search(r"(Table|Figure)s? \d", entry["caption"])
        assert paper and (title is None or escape(title) in entry["caption"]), (path, entry["caption"][:300])
    labels = [entry["labels"] for entry in results.values()]
    assert len({json.dumps(label) for label in labels}) == len(labels)  # one result per label
    start = report_data(tiny_report, "workflow_desc")
    assert "Where to find what" in start and "How to read a table" in start
    assert "align-items: flex-start" in start  # its top stays in view (report/workflow.rst)


@pytest.mark.slow
def test_html_report_shows_tables_and_plots(tiny_run, tiny_report):
    """`snakemake --report` of the tiny run, opened in headless Chromium: the init-loss table renders in the
    content pane next to the list of every table's label, the LAPT figure next to its caption (screenshots
    kept in test-artifacts/)."""
    html = tiny_report
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    from matplotlib.image import imread

    results = report_data(html, "results")
    for name, suffix, kind, navbar in (("table", "init_mlm_loss.html", "html", "subcategory"),
                                       ("figure", "lapt_curves/tiny/sw.png", "img", "resultinfo")):
        page = tiny_run / f"report_{name}.html"
        end = html.rfind("</body>")  # the last one: bundled libraries contain the string too
        page.write_text(html[:end] + SHOW % (suffix, navbar, kind) + html[end:])
        dom = chromium("--dump-dom", page.as_uri())
        assert dom.returncode == 0, dom.stderr[-2000:]
        # what the app drew, not its data
        rendered = re.sub(r"<script.*?</script>", "", dom.stdout, flags=re.S)
        entry = next(entry for path, entry in results.items() if path.endswith(suffix))
        if navbar == "subcategory":  # the subcategory's list: every table's label
            tables = [e["labels"]["table"] for e in results.values() if "table" in e["labels"]]
            assert len(tables) >= 4 and all(label in rendered for label in tables), tables
        else:  # the figure's caption: FOCUS Figure 2, the source model and the language
            caption = re.sub(r"<[^>]+>", "", entry["caption"])
            assert "FOCUS Figure 2" in caption and "tiny" in caption and "sw" in caption, caption
            assert "FOCUS Figure 2" in re.sub(r"<[^>]+>", "", rendered)
        tag = "<iframe" if kind == "html" else "<img"
        assert re.search(tag + r'[^>]*src="data:' + ("text/html" if kind == "html" else "image/png"),
                         dom.stdout), name
        shot = ARTIFACTS / f"report_{name}.png"
        proc = chromium(f"--screenshot={shot}", page.as_uri())
        assert proc.returncode == 0 and shot.is_file(), proc.stderr[-2000:]
        pixels = imread(shot)[:, 450:, :3]  # the content pane, right of the navigation bar
        assert pixels.std() > 0.05 and (pixels.mean(axis=2) < 0.5).mean() > 0.002, f"{name}: nothing drawn"
    table = (tiny_run / "results/tables/init_mlm_loss.html").read_text()
    methods = len(pd.read_csv(tiny_run / "results/tables/init_mlm_loss.csv")["method"].unique())
    assert table.count("<tr>") == 2 * (1 + methods)  # the loss and the bits-per-byte grids


@pytest.fixture(scope="module")
def recovery_run(tmp_path_factory):
    """vocab-swap Experiment 1 in miniature (tests/data/tiny_recovery_config.yaml): the target tokenizer is
    the source's own (`tokenizer.pretrained: {en: {source: tiny}}`)."""
    workdir = tmp_path_factory.mktemp("recovery")
    shutil.copy(REPO / "tests/data/tiny_recovery_config.yaml", workdir / "config.yaml")
    shutil.copytree(REPO / "tests/data/tasks/glue", workdir / "tests/data/tasks/glue")  # data_files, relative
    from test_finetune import save_tiny_flaubert

    save_tiny_flaubert(workdir / "flaubert-tiny",
                       [p.read_text() for p in (workdir / "tests/data/tasks/glue").iterdir()])
    snakemake(workdir, "--cores", "2")
    return workdir


@pytest.mark.slow
def test_embedding_recovery_table8_and_figure2(recovery_run):
    from vocab_transfer.data.tokenizer import load_tokenizer

    src = load_tokenizer(str(recovery_run / "results/source/tiny/model"))
    tgt = load_tokenizer(str(recovery_run / "results/tokenizers/en"))
    assert tgt.get_vocab() == src.get_vocab()  # the source's vocabulary, not a trained one
    overlap = pd.read_parquet(recovery_run / "results/overlap/tiny/en.parquet")
    assert len(overlap) == len(src) and (overlap.target_id == overlap.source_id).all()
    source = load_file(next((recovery_run / "results/source/tiny/model").glob("*.safetensors")))
    W = next(v for k, v in source.items() if k.endswith("word_embeddings.weight"))
    kept = load_file(recovery_run / "results/init/tiny/en/keep_50.safetensors")["embeddings"]
    same = (kept == W).all(1)
    assert abs(same[5:].float().mean().item() - 0.5) < 0.01  # 50% Kept: half of the non-special rows
    md = (recovery_run / "results/tables/paper/table8.md").read_text().splitlines()
    assert md[2] == "| en | All Layers | Word Embed Only |"
    assert [line.split(" | ")[0] for line in md[4:]] == ["| Reinit Embed", "| 50% Kept", "| Permute 100"]
    assert md[6].endswith("| — |")  # Permute 100 has no word-only run: missing, not zero
    curves = pd.read_csv(recovery_run / "results/figures/embedding_correlation/tiny/en.csv")
    rho = curves[curves.kind == "to_source"].pivot(index="step", columns="a", values="rho")
    assert abs(rho.loc[0, "Reinit Embed, all"]) < 0.05 and abs(rho.loc[0, "50% Kept, all"] - 0.5) < 0.05
    assert rho["Reinit Embed, word"].is_monotonic_increasing and rho.loc[12, "Reinit Embed, word"] > 0.3
    pair = curves[curves.kind == "pairwise_all"].set_index(["a", "b"])["rho"]
    assert (pair[("50% Kept, all", "50% Kept, all")] == 1.0
            and pair[("50% Kept, all", "Reinit Embed, all")] < 0.9)
    assert (recovery_run / "results/figures/embedding_correlation/tiny/en.png").stat().st_size > 10_000
    curve = pd.read_parquet(recovery_run / "results/lapt/tiny/en/keep_50_all/curve.parquet")
    # Figure 3: per-token ρ_i in 40 bins over [-1, 1]
    hist = [list(h) for h in curve["correlation_histogram"]]
    assert all(len(h) == 40 and sum(h) == len(src) for h in hist) and hist[0][-1] >= len(src) // 2
    assert ((recovery_run / "results/figures/embedding_correlation/tiny/en.histograms.png").stat().st_size
            > 10_000)


@pytest.mark.slow
def test_probe_table_has_wechsel_table7s_layout(recovery_run):
    """A kind init table with `probes`: one probe_init job per (task, method), its accuracy next to the MLM
    loss."""
    md = (recovery_run / "results/tables/paper/probe.md").read_text().splitlines()
    assert md[2] == "| Language | Initialization | NLI | loss |"
    assert [line.split(" | ")[1] for line in md[4:7]] == ["Reinit Embed", "50% Kept", "Permute 100"]
    evals = pd.read_parquet(recovery_run / "results/eval_init/tiny/en.parquet").set_index("method")
    for line, method in zip(md[4:7], ("reinit", "keep_50", "permute_100"), strict=True):
        probe = pd.read_parquet(recovery_run / f"results/eval_init/tiny/probe/mnli/{method}.parquet").iloc[0]
        # premise + hypothesis
        assert probe.test_items == 16 and probe.train_items == 48 and probe.features == 2 * 32
        nli, loss = (cell.strip("* |") for cell in line.split(" | ")[2:])
        assert nli == f"{100 * probe.accuracy:.1f}" and loss == f"{evals.loc[method, 'mlm_loss']:.3f}"


@pytest.mark.slow
def test_token_accuracy_figure6(recovery_run):
    """vocab-swap Figure 6 in miniature: the 50 most frequent tokens' held-out accuracy of 50% Kept and
    Reinit, both split by 50% Kept's provenance (kept rows are matched); counts add up, means and histograms
    match the data."""
    from vocab_transfer.data.corpus import read_corpus
    from vocab_transfer.data.tokenizer import load_tokenizer
    from vocab_transfer.eval.mlm import pack_texts
    from vocab_transfer.training.lapt import frequent_tokens

    tok = load_tokenizer(str(recovery_run / "results/tokenizers/en"))
    blocks = pack_texts(read_corpus(recovery_run / "results/corpus/en/train.parquet")["text"].tolist(),
                        tok, 32)
    top, _ = frequent_tokens(blocks, len(tok), tok.all_special_ids, 50)
    prov = pd.read_parquet(
        recovery_run / "results/init/tiny/en/keep_50.provenance.parquet").set_index("target_id")
    kept = int((prov.loc[top.tolist(), "provenance"] == "copied").sum())
    assert 0 < kept < 50
    fig = pd.read_csv(recovery_run / "results/figures/token_accuracy/tiny/figure6.csv")
    means, hists = fig[fig.kind == "mean"], fig[fig.kind == "histogram"]
    for run in ("keep_50_all", "reinit_all"):
        acc = pd.read_parquet(recovery_run / f"results/lapt/tiny/en/{run}/token_accuracy.parquet")
        assert sorted(acc.step.unique()) == [0, 4, 8, 12] and (acc.groupby("step").token_id.apply(list) == [
            top.tolist()] * 4).all()  # the same 50 tokens, most frequent first, at every evaluation
        acc["group"] = ((prov.loc[acc.token_id, "provenance"] == "copied")
                        .map({True: "matched", False: "not matched"}).to_numpy())
        m = means[means.run == run].set_index(["step", "group"])
        assert ((m.tokens.groupby("step").sum() == 50).all()
                and (m.xs("matched", level="group").tokens == kept).all())
        expected = acc.groupby(["step", "group"]).accuracy.mean()
        assert m.mean_accuracy.sort_index().tolist() == pytest.approx(expected.sort_index().tolist(),
                                                                      nan_ok=True)
        seen = acc[acc.masked > 0].groupby(["step", "group"]).size()
        h = hists[hists.run == run].groupby(["step", "group"]).tokens.sum()
        assert sorted(h.index.get_level_values("step").unique()) == [4, 12]
        assert all(h[k] == seen.get(k, 0) for k in h.index)
    assert means.seen.sum() > 0
    assert (recovery_run / "results/figures/token_accuracy/tiny/figure6.png").stat().st_size > 10_000


def test_snapshot_and_figure_config_errors_are_named():
    """Bad snapshot fine-tuning and figure settings fail at parse time, naming the key (no Snakemake
    process)."""
    from vocab_transfer.workflow.config import ConfigError, check_config


    def check(edit, *needles):
        config = yaml.safe_load(TINY.read_text())
        edit(config)
        with pytest.raises(ConfigError) as e:
            check_config(config)
        assert all(n in str(e.value) for n in needles), str(e.value)

    check(lambda c: c["finetune"]["models"]["focus-snapshot"].update(steps=[4]), "focus-snapshot-step4",
          "keeps no snapshot of step 4", "snapshot_steps: [3, 6]")
    check(lambda c: c["lapt"]["runs"]["focus"].update(snapshot_steps=[7]), "lapt.runs.focus",
          "snapshot_steps", "0..6")
    check(lambda c: c["finetune"]["models"].update(x={"init": "focus", "steps": [3]}),
          "finetune.models.x-step3", "needs lapt")
    check(lambda c: c["figures"]["figure4"].update(task="he-nerr"), "figures.figure4.task", "he-nerr")
    check(lambda c: c["figures"]["figure4"].update(runs=["random"]), "figures.figure4",
          "no finetune.models entry fine-tunes the runs ['random']")
    six = {"kind": "token_accuracy", "language": "sw", "runs": ["focus"], "steps": [3]}
    check(lambda c: c["figures"].update(f6=six), "figures.f6",
          "LAPT run 'focus' records no per-token accuracy", "token_accuracy_top")
    check(lambda c: (c["figures"].update(f6={**six, "steps": [4]}),
                     c["lapt"]["training"].update(token_accuracy_top=5)),
          "figures.f6.steps: [4] are not evaluation steps of LAPT run 'focus'")
    check(lambda c: c["figures"].update(f6={**six, "language": "de"}), "figures.f6.runs", "on 'de'")
    check(lambda c: c["figures"].update(f6={**six, "matched_by": "fokus"}), "figures.f6.matched_by", "fokus")
    check(lambda c: c["figures"]["figure4"].update(task="he-ner-zs"), "figures.figure4.task",
          "zero-shot task")
    check(lambda c: c["finetune"]["tasks"]["he-ner"]["dataset"].update(test_only=True),
          "finetune.tasks.he-ner.dataset.test_only", "needs its train split")
    check(lambda c: c["zero_shot"]["sources"]["he-ner-src"]["dataset"].update(test_only=True),
          "zero_shot.sources.he-ner-src.dataset.test_only")


def test_embed_layers_and_glue_tables(recovery_run):
    """vocab-swap "Embed Layers" (embedding block re-initialized and trained, body frozen) through LAPT, then
    GLUE-shaped MNLI (m/mm) and STS-B fine-tuning into Tables 1/5 in miniature."""
    def weights(folder: str) -> dict:
        return load_file(next((recovery_run / folder).glob("*.safetensors")))

    source, layers = (weights("results/source/tiny/model"),
                      weights("results/lapt/tiny/en/keep_50_layers/model"))
    body = [k for k in source if ".encoder." in k]
    assert body and all(torch.equal(layers[k], source[k]) for k in body)  # frozen body
    changed = {k for k in source if not torch.equal(layers[k], source[k])}
    assert {k.split(".", 2)[-1] for k in changed if ".embeddings." in k} == {
        "word_embeddings.weight", "position_embeddings.weight", "token_type_embeddings.weight",
        "LayerNorm.weight", "LayerNorm.bias"}
    mnli = recovery_run / "results/tasks/mnli"
    assert sorted(p.name for p in mnli.iterdir() if not p.name.startswith(".")) == [
        "dev.parquet", "labels.json", "test.parquet", "test_mismatched.parquet", "train.parquet"]
    assert [len(pd.read_parquet(mnli / f"{s}.parquet"))
            for s in ("train", "dev", "test", "test_mismatched")] == [
        48, 16, 16, 16]
    row = pd.read_parquet(recovery_run / "results/finetune/tiny/mnli/keep-50-layers/seed1.parquet").iloc[0]
    assert row["extra_test_sets"] == "mismatched" and 0 <= row["test_mismatched_accuracy"] <= 1
    sts = pd.read_parquet(recovery_run / "results/finetune/tiny/stsb/permute-100-all/seed1.parquet").iloc[0]
    assert sts["metric"] == "pearson" and -1 <= sts["test_pearson"] <= 1 and "test_spearman" in sts
    mnli_md, sts_md = (part.splitlines()
                       for part in (recovery_run / "results/tables/paper/glue.md").read_text()
                       .strip().split("\n\n**"))  # one block per task: title, blank, table
    assert mnli_md[2] == "| MNLI | Embed Layers | All Layers |" and sts_md[2].startswith("| STSB (Pearson) |")
    cell = f"{row['test_accuracy']:.3f}/{row['test_mismatched_accuracy']:.3f} (±0.000/0.000)"  # one seed
    # no MNLI run: missing
    assert mnli_md[4:] == [f"| 50% Kept | **{cell}** | — |", "| Permute 100 | — | — |"]
    assert sts_md[4:] == ["| 50% Kept | — | — |", f"| Permute 100 | — | {sts['test_pearson']:.3f} (±0.000) |"]


@pytest.mark.slow
def test_reference_row_best_cell_and_step0_snapshot(recovery_run):
    """vocab-swap Tables 12-16's reference rows (a local FlauBERT-shaped model with a slow tokenizer,
    fine-tuned in place, never downloaded) fill only "Best" and are not bold; a LAPT run's step-0 snapshot
    (WECHSEL Table 1's FullRand Score@0) is the model before any update and is fine-tuned like any
    snapshot."""
    run = recovery_run / "results/lapt/tiny/en/permute_100_all"
    zero = load_file(run / "snapshots/step-00000000/model.safetensors")
    init = load_file(recovery_run / "results/init/tiny/en/permute_100.safetensors")["embeddings"]
    assert torch.equal(zero["roberta.embeddings.word_embeddings.weight"], init)
    final = load_file(next((run / "model").glob("*.safetensors")))
    assert not torch.equal(final["roberta.embeddings.word_embeddings.weight"], init)
    assert not (recovery_run / "resources/reference_models").exists()
    ref = pd.read_parquet(recovery_run / "results/finetune/tiny/mnli/flaubert/seed1.parquet").iloc[0]
    at0 = pd.read_parquet(recovery_run / "results/finetune/tiny/stsb/permute-100-step0/seed1.parquet").iloc[0]
    sts = pd.read_parquet(recovery_run / "results/finetune/tiny/stsb/permute-100-all/seed1.parquet").iloc[0]
    mnli_md, sts_md = (part.splitlines()
                       for part in (recovery_run / "results/tables/paper/best.md").read_text()
                       .strip().split("\n\n**"))
    assert mnli_md[2] == "| MNLI | Embed Layers | All Layers @0 | All Layers | Best |"
    flau = f"{ref['test_accuracy']:.3f}/{ref['test_mismatched_accuracy']:.3f} (±0.000/0.000)"
    assert mnli_md[-1] == f"| FlauBERT-like | — | — | — | {flau} |"  # outside best_groups: never bold
    assert mnli_md[-3].startswith("| 50% Kept | **")
    cells = [f"{v:.3f} (±0.000)" for v in (at0["test_pearson"], sts["test_pearson"])]
    best = cells[int(sts["test_pearson"] > at0["test_pearson"])]
    assert sts_md[-2] == f"| Permute 100 | — | **{cells[0]}** | **{cells[1]}** | **{best}** |"
    assert sts_md[-1] == "| FlauBERT-like | — | — | — | — |"  # not fine-tuned on STS-B: missing, not zero
    from vocab_transfer.report.provenance import check_table_provenance

    for md in sorted((recovery_run / "results/tables").rglob("*.md")):  # LAPT, init-probe and grid tables too
        assert check_table_provenance(md, base=recovery_run) == [], md.name


def test_pretrained_tokenizer_errors_are_named(tmp_path):
    proc = bad_config(tmp_path, lambda c: c["tokenizer"].update(pretrained={"sw": {"source": "tinyy"}}))
    assert (proc.returncode != 0 and "tokenizer.pretrained.sw.source" in proc.stderr
            and "'tinyy'" in proc.stderr)
    proc = bad_config(tmp_path, lambda c: c["tokenizer"].update(pretrained={"xx": "/no/such/dir"}))
    assert proc.returncode != 0 and "tokenizer.pretrained.xx" in proc.stderr


def test_glue_finetune_and_table_config_errors_are_named(tmp_path):
    """check_config (run at parse time) names a metric the task does not report, a reference model that is
    neither a folder nor a hub id, best_groups rows that are not rows, and a bad LAPT reinit."""
    from vocab_transfer.workflow.config import ConfigError, check_config

    base = yaml.safe_load((REPO / "tests/data/tiny_recovery_config.yaml").read_text())
    base["finetune"]["models"]["flaubert"]["pretrained"] = str(tmp_path)  # the test writes ./flaubert-tiny
    check_config(base)
    cases = [
        (lambda c: c["finetune"]["tasks"]["mnli"].update(training={"metric": "pearson"}),
         r"finetune.tasks.mnli: fine-tuning config: metric 'pearson' is not reported for task 'nli'"),
        (lambda c: c["finetune"]["models"].update(ref={"pretrained": "./no/such/model"}),
         r"finetune.models.ref.pretrained: './no/such/model' is not a directory"),
        (lambda c: c["finetune"]["models"].update(ref={"pretrained": "x/y", "source": True}),
         r"finetune.models.ref: give exactly one of lapt, init, source, pretrained"),
        (lambda c: c["tables"]["glue"].update(best_groups=[["50% Kept", "Scratch"]]),
         r"tables.glue.best_groups: \['Scratch'\] are not rows of the table"),
        (lambda c: c["tables"]["glue"].update(format="permille"),
         r"tables.glue.format: 'permille' is not one of"),
        (lambda c: c["tables"]["table8"].update(best_column=True),
         r"tables.table8.best_column: a 'Best' column is for"),
        (lambda c: c["tables"]["best"]["grid"]["rows"].update(
            Extra=[None, None, None, "flaubert", "flaubert"]),
         r"tables.best.grid.rows \['Extra'\]: each row needs one entry \(or null\) per column .* "
         r"plus optionally"),
        (lambda c: c["lapt"]["runs"]["keep_50_layers"].update(reinit="body"),
         r"lapt.runs.keep_50_layers.reinit: 'body' is not one of 'none', 'embedding_layers' or 'all'"),
        (lambda c: c["finetune"]["tasks"]["stsb"].update(task="nli"), r"glue stsb is task 'sts', not 'nli'"),
    ]
    for edit, message in cases:
        config = yaml.safe_load(yaml.safe_dump(base))
        edit(config)
        with pytest.raises(ConfigError, match=message):
            check_config(config)


def test_zero_shot_errors_are_named(tmp_path):
    proc = bad_config(tmp_path, lambda c: c["finetune"]["models"]["madx"].pop("zero_shot"))
    assert (proc.returncode != 0 and "finetune.models.madx" in proc.stderr
            and "name a zero_shot setup" in proc.stderr)


@pytest.mark.slow
def test_refining_rows_and_tokalign_run_in_the_dag(tiny_run, tmp_path):
    """Rows that refine another row's init (Token Distillation, embedding-only LM) run through rule
    refine_embeddings on that row's artifact and the target's training split; TokAlign trains the source
    tokenizer's fastText on the target's corpus. Run in a copy of the tiny run, so only the new jobs run."""
    work = tmp_path / "w"
    shutil.copytree(tiny_run, work, symlinks=True)
    config = yaml.safe_load(TINY.read_text())
    config["methods"] |= {
        "focus_distill": {"kind": "token_distillation", "init": "focus", "tokens": 2000, "lr": 1.0e-3,
                          "batch_size": 8, "seq_len": 32, "targets": ["sw"],
                          "label": "FOCUS + Token Distillation"},
        "focus_lm": {"kind": "embedding_lm", "init": "focus", "tokens": 2000, "lr": 1.0e-3, "batch_size": 8,
                     "seq_len": 32, "targets": ["sw"], "label": "FOCUS + embedding-only MLM"},
        "tokalign": {"kind": "tokalign", "pivots": 50, "targets": ["sw"], "label": "TokAlign"}}
    (work / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    proc = snakemake(work, "--cores", "2", "results/tables/init_mlm_loss.csv")
    ran = planned_jobs(proc)
    assert ran["refine_embeddings"] == 2 and ran["init_embeddings"] == 1 and ran["train_source_fasttext"] == 1
    # nothing else reran
    assert not {"train_tokenizer", "pretrain_source_model", "compute_overlap"} & set(ran)
    focus = load_file(work / "results/init/tiny/sw/focus.safetensors")
    prov = pd.read_parquet(work / "results/init/tiny/sw/focus.provenance.parquet")
    kept = torch.tensor(prov["provenance"].isin(["copied", "special"]).to_numpy())
    for name in ("focus_distill", "focus_lm"):
        t = load_file(work / f"results/init/tiny/sw/{name}.safetensors")
        assert torch.equal(t["embeddings"][kept], focus["embeddings"][kept])  # rows: new
        assert not torch.equal(t["embeddings"][~kept], focus["embeddings"][~kept])
        assert int(t["refine_tokens"]) >= 2000 and len(t["refine_loss"]) > 0
        assert (work / f"logs/refine_embeddings/tiny/sw/{name}.log").is_file()
    assert (work / "results/source_fasttext/tiny/sw/vectors.safetensors").is_file()
    mapped = pd.read_parquet(work / "results/init/tiny/sw/tokalign.provenance.parquet")
    assert (mapped["provenance"] == "mapped").any() and (mapped["nearest_source_id"] >= 0).any()
    table = pd.read_csv(work / "results/tables/init_mlm_loss.csv")
    assert {"focus_distill", "focus_lm", "tokalign"} <= set(table["method"])

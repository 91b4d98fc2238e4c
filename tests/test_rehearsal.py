"""The rehearsal (configs/overlays/rehearsal.yaml, scripts/rehearse.sh): every paper config shrunk to a
miniature of its own grid (vocab_transfer.workflow.rehearsal), and a hub mirror of miniatures its downloads
read (vocab_transfer.mirror, vocab_transfer.miniatures)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml
from snakemake.utils import update_config

from vocab_transfer import mirror
from vocab_transfer.workflow.config import ConfigError, check_config
from vocab_transfer.workflow.rehearsal import planned_outputs, shrink
from vocab_transfer.workflow.views import task_target

REPO = Path(__file__).resolve().parents[1]
OVERLAY = yaml.safe_load((REPO / "configs/overlays/rehearsal.yaml").read_text())
STUDIES = yaml.safe_load((REPO / "configs/papers.yaml").read_text())["studies"]


def rehearsed(file: str) -> tuple[dict, dict]:
    """(the paper config as written, the same with the overlay merged and shrunk)."""
    paper = yaml.safe_load((REPO / file).read_text())
    config = copy.deepcopy(paper)
    update_config(config, copy.deepcopy(OVERLAY))
    return paper, shrink(config)


@pytest.mark.parametrize("file", STUDIES)
def test_every_paper_shrinks_to_a_valid_miniature_of_its_grid(file):
    paper, config = rehearsed(file)
    cfg = check_config(copy.deepcopy(config))
    assert shrink(copy.deepcopy(config)) == config  # idempotent: a composite's module shrinks its study again
    r = OVERLAY["rehearsal"]
    assert cfg.tokenizer.vocab_size <= r["vocab_size"] and cfg.fasttext.dim <= 16
    assert len(cfg.finetune.seeds or []) <= r["seeds"]
    if cfg.lapt.runs:
        assert cfg.lapt.training.steps == min(r["steps"], paper["lapt"]["training"]["steps"])
        assert cfg.lapt.gpus == min(paper["lapt"].get("gpus", 0), r["gpus"]) and cfg.lapt.nodes == 1
        assert cfg.lapt.training.seq_len <= r["seq_len"]
    # every table and figure kind of the paper is still there, with columns
    assert set(cfg.tables) == set(paper.get("tables") or {})
    for name, table in cfg.tables.items():
        assert table.groups is None or all(table.groups.values()), name
        assert table.languages is None or table.languages, name
    kinds = {f["kind"] for f in (paper.get("figures") or {}).values()}
    assert {f.kind for f in cfg.figures.values()} == kinds
    # the grid cut: no task of a target that is gone
    kept = set(cfg.target_names) | {s.language for s in cfg.zero_shot.sources.values()}
    assert all(task_target(cfg, t) in kept for t in cfg.finetune.tasks)


def test_step_counts_scale_with_the_run():
    """WECHSEL's Score@25k of a 250k-step run stays at 10% of the shrunk run, and its figures' snapshots with
    it."""
    paper, config = rehearsed("configs/wechsel.yaml")
    assert paper["lapt"]["training"]["steps"] == 250000 and config["lapt"]["training"]["steps"] == 20
    steps = {m.get("step") for m in config["finetune"]["models"].values()} - {None}
    assert (steps == {round(s * 20 / 250000)
                      for s in {m.get("step") for m in paper["finetune"]["models"].values()} - {None}}
            and 2 in steps)
    check_config(config)  # which refuses a fine-tuned snapshot that its run does not keep
    kept = {s for run in config["lapt"]["runs"].values() for s in run.get("snapshot_steps", [])}
    assert steps - {0} <= kept


def test_the_grid_cut_keeps_what_the_tables_and_zero_shot_need():
    """UNKs: a target for each table's first column and two for Figure 2's scatter; the zero-shot source
    languages' LAPT runs (the source-language adapters) stay."""
    paper, config = rehearsed("configs/unks.yaml")
    cfg = check_config(config)
    assert len(cfg.target_names) < len(paper["targets"]) and "ka" in cfg.target_names
    scatter = next(f for f in cfg.figures.values() if f.kind == "unk_scatter")
    assert len(scatter.tasks) >= 2
    sources = {s.language for s in cfg.zero_shot.sources.values()}
    assert sources <= set(cfg.lapt.runs["madx"].targets)


def test_a_config_without_the_section_is_left_as_it_is():
    config = yaml.safe_load((REPO / "configs/focus.yaml").read_text())
    assert shrink(copy.deepcopy(config)) == config


def test_a_misspelled_key_is_named():
    config = yaml.safe_load((REPO / "configs/focus.yaml").read_text())
    config["rehearsal"] = {"step": 10}
    with pytest.raises(Exception, match=r"rehearsal: unknown key\(s\) \['step'\]"):
        shrink(config)


def test_the_composite_plans_every_table_and_figure_of_every_paper():
    config = yaml.safe_load((REPO / "configs/papers.yaml").read_text()) | copy.deepcopy(OVERLAY)
    outputs = planned_outputs(config, str(REPO))
    studies = {s for s, _, _ in outputs}
    assert studies == {yaml.safe_load((REPO / f).read_text())["study"] for f in STUDIES}
    for file in STUDIES:
        study = yaml.safe_load((REPO / file).read_text())
        for table in study.get("tables") or {}:
            assert any(p.endswith(f"/{table}.md") for s, k, p in outputs if s == study["study"]), table


# ------------------------------------------------------------------------------------------- the hub mirror
def test_the_miniatures_cover_every_hub_resource_of_the_papers():
    from vocab_transfer.miniatures.build import family, hub_resources

    res = hub_resources(yaml.safe_load((REPO / "configs/papers.yaml").read_text()))
    assert {"FacebookAI/xlm-roberta-base", "FacebookAI/roberta-base", "openai-community/gpt2",
            "mistralai/Mistral-7B-v0.1", "google-bert/bert-base-multilingual-cased"} <= set(res.models)
    assert [family(m)
            for m in ("FacebookAI/xlm-roberta-base", "FacebookAI/roberta-base", "openai-community/gpt2",
                      "mistralai/Mistral-7B-v0.1", "dbmdz/bert-base-german-cased")] == [
        ("xlm-roberta", "unigram"), ("roberta", "byte_level"), ("gpt2", "byte_level"), ("mistral", "bpe"),
        ("bert", "wordpiece")]
    assert set(res.corpora) == {"statmt/cc100", "oscar-corpus/OSCAR-2301", "allenai/c4",
                                "wikimedia/wikipedia"}
    assert ("data_dir", "de_meta") in res.corpora["oscar-corpus/OSCAR-2301"]
    assert {s["loader"] for s in res.tasks.values()} >= {"wikiann", "xnli", "glue", "ud", "tydiqa_goldp"}
    assert {"de", "en"} <= res.word_vectors and ("en", "de") in res.dictionaries
    assert res.benchmarks["belebele_deu_Latn"] == "de"
    with pytest.raises(ValueError, match="no miniature for this architecture"):
        family("someone/t5-small")


@pytest.fixture
def hub(tmp_path, monkeypatch):
    monkeypatch.setenv(mirror.MIRROR_ENV, str(tmp_path / "hub"))
    return tmp_path / "hub"


def test_a_model_download_copies_its_files_from_the_mirror(hub, tmp_path):
    """download_hub_model on a mirror: the repository's configs, tokenizer and safetensors, no other files,
    the revision recorded as `mirror`; the miniature is a GPT-2 of the same tokenizer family, loadable as a
    source."""
    from vocab_transfer.data.tokenizer import load_tokenizer, tokenizer_kind
    from vocab_transfer.miniatures.build import write_model
    from vocab_transfer.source_model import download_hub_model, load_source_model

    repo = write_model(hub, "openai-community/gpt2", {"en"}, vocab_size=400)
    (repo / "tf_model.h5").write_bytes(b"never fetched")
    origin = download_hub_model("openai-community/gpt2", None, tmp_path / "gpt2")
    assert origin["resolved_revision"] == mirror.COMMIT and "tf_model.h5" not in origin["files"]
    assert "model.safetensors" in origin["files"] and json.loads((tmp_path / "gpt2/origin.json").read_text())
    assert load_source_model(str(tmp_path / "gpt2")).config.model_type == "gpt2"
    assert tokenizer_kind(load_tokenizer(str(tmp_path / "gpt2"))) == "byte_level"
    with pytest.raises(FileNotFoundError, match="not in the hub mirror"):
        download_hub_model("openai-community/gpt3", None, tmp_path / "gpt3")


def test_a_url_download_copies_the_mirrors_file(hub, tmp_path):
    from vocab_transfer.io import fetch_url, sha256_file
    from vocab_transfer.miniatures.build import MUSE_URL, write_dictionary

    copy_ = write_dictionary(hub, "en", "de", pairs=10)
    url = MUSE_URL.format(slang="en", lang="de")
    origin = fetch_url(url, tmp_path / "en-de.txt", log=lambda m: None)
    partial = tmp_path / "en-de.txt.partial"
    assert partial.read_bytes() == copy_.read_bytes() and origin["sha256"] == sha256_file(copy_)
    assert origin["url"] == url and len(partial.read_text().splitlines()) == 10
    with pytest.raises(FileNotFoundError, match="expected the file"):
        fetch_url(MUSE_URL.format(slang="en", lang="xx"), tmp_path / "x.txt", log=lambda m: None)


def test_a_second_build_keeps_what_is_unchanged_and_rewrites_the_rest(tmp_path, monkeypatch):
    from vocab_transfer.miniatures import build

    res = build.Resources(corpora={"statmt/cc100": {("name", "de"): "de"}}, tasks={},
                          dictionaries={("en", "de")}, benchmarks={"mini_de": "de"})
    monkeypatch.setattr(build, "hub_resources", lambda config: res)
    card, muse = (tmp_path / "statmt/cc100/README.md",
                  tmp_path / "urls/dl.fbaipublicfiles.com/arrival/dictionaries")

    def rebuild() -> tuple[str, dict]:
        lines = []
        done = build.build_mirror({}, tmp_path, progress=lines.append)
        assert done == json.loads((tmp_path / "rehearsal.json").read_text())["made"]
        return lines[-1], {f: f.stat().st_mtime_ns for f in tmp_path.rglob("*") if f.name != "rehearsal.json"}

    assert rebuild()[0] == "0 of 3 miniatures kept from an earlier build" and card.is_file()
    last, stamps = rebuild()
    assert last == "3 of 3 miniatures kept from an earlier build"
    assert stamps == {f: f.stat().st_mtime_ns for f in stamps}  # nothing rewritten
    # a config the mirror lacks: written with the one it had
    res.corpora["statmt/cc100"] = {("name", "sw"): "sw"}
    (muse / "en-de.txt").unlink()  # a file gone: written again
    assert rebuild()[0] == "1 of 3 miniatures kept from an earlier build"
    assert "config_name: sw" in card.read_text() and "config_name: de" in card.read_text()
    assert (muse / "en-de.txt").is_file()
    res.corpora["statmt/cc100"] = {("name", "de"): "de"}  # covered by what the mirror has: kept
    assert (rebuild()[0] == "3 of 3 miniatures kept from an earlier build"
            and "config_name: sw" in card.read_text())


def test_hub_mirror_key_is_checked():
    config = yaml.safe_load((REPO / "configs/focus.yaml").read_text())
    config["hub_mirror"] = ""
    with pytest.raises(ConfigError, match="hub_mirror"):
        check_config(config)


# ---------------------------------------------------------------------- what the rehearsal found in the plans
def test_a_setup_without_a_task_adapter_passes_none():
    """The task adapter's defaults are filled into every zero-shot setup; only variant adapter's job gets them
    (the trainer refuses adapter settings for full and fmt)."""
    from types import SimpleNamespace as W

    from vocab_transfer.workflow.studies import study_plan

    plan = study_plan(yaml.safe_load((REPO / "configs/unks.yaml").read_text()))
    variants = {name: s.variant for name, s in plan.cfg.zero_shot.setups.items()}
    assert {"adapter", "full", "fmt"} <= set(variants.values())
    for name, variant in variants.items():
        adapter = json.loads(plan.source_task_adapter(W(setup=name)))
        assert bool(adapter) == (variant == "adapter"), name


def test_a_study_claims_only_its_own_downloads():
    """In the composite, the first study's copy of a download rule builds a shared path: its wildcard must not
    match a source or reference model that only another study defines (FOCUS's fine-tuning model `xlmr` is the
    source, WECHSEL's a reference model named by hub id)."""
    import re

    from vocab_transfer.workflow.studies import study_plan

    focus = study_plan(yaml.safe_load((REPO / "configs/focus.yaml").read_text()))
    wechsel = study_plan(yaml.safe_load((REPO / "configs/wechsel.yaml").read_text()))
    assert "xlmr" in focus.cfg.finetune.models and not re.fullmatch(focus.reference_model_pattern(), "xlmr")
    assert re.fullmatch(wechsel.reference_model_pattern(), "xlmr")
    assert (re.fullmatch(focus.hub_source_pattern(), "xlmr")
            and not re.fullmatch(focus.hub_source_pattern(), "mbert"))


def test_a_run_without_the_mirror_refuses_what_the_mirror_served(tmp_path, monkeypatch):
    """A download's params are the same from a mirror and from the hub: a run without hub_mirror in a
    directory where a rehearsal ran would take the miniatures for the real models, corpora and task data, so
    it names them."""
    from vocab_transfer.workflow import paths
    from vocab_transfer.workflow.rehearsal import mirrored_downloads

    monkeypatch.chdir(tmp_path)
    for folder, record, data in [(paths.downloaded_model("xlmr"), "origin.json",
                                  {"resolved_revision": "mirror"}),
                                 (paths.downloaded_model("gpt2"), "origin.json",
                                  {"resolved_revision": "a" * 40}),
                                 (paths.downloaded_corpus("cc100-de"), "fetch.json",
                                  {"resolved_revision": "mirror"}),
                                 (paths.task_data("de-xnli"), "origin.json", {"hub_mirror": "/x"})]:
        Path(folder).mkdir(parents=True)
        (Path(folder) / record).write_text(json.dumps(data))
    vectors = Path(paths.cc_word_vectors("de"))
    vectors.parent.mkdir(parents=True)
    vectors.write_bytes(b"")
    vectors.with_name(f".{vectors.name}.origin.json").write_text(json.dumps({"url": "u", "mirror": "/x/u"}))
    assert mirrored_downloads() == [paths.downloaded_model("xlmr"), paths.downloaded_corpus("cc100-de"),
                                    paths.task_data("de-xnli"), str(vectors)]


@pytest.mark.parametrize("composite", [False, True])
def test_a_run_stops_on_what_a_mirror_served(tmp_path, composite):
    """The guard holds for a single config (rules/common.smk) and for a composite (rules/studies.smk), with
    one message (vocab_transfer.workflow.rehearsal.check_no_mirrored_downloads): the demo config, planned in a
    directory holding a model a mirror served, stops and names it."""
    import subprocess
    import sys

    import yaml

    from vocab_transfer.workflow import paths

    folder = tmp_path / paths.downloaded_model("demo-xlmr")
    folder.mkdir(parents=True)
    (folder / "origin.json").write_text(json.dumps({"resolved_revision": "mirror"}))
    config = REPO / "config.yaml"
    if composite:
        (tmp_path / "demo.yaml").write_text(
            yaml.safe_dump({**yaml.safe_load(config.read_text()), "study": "demo"}))
        config = tmp_path / "both.yaml"
        config.write_text(yaml.safe_dump({"studies": [str(tmp_path / "demo.yaml")]}))
    run = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--snakefile", str(REPO / "Snakefile"),
                          "--configfile", str(config), "--directory", str(tmp_path)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode != 0
    out = run.stdout + run.stderr
    assert "1 downloads here came from a hub mirror" in out, out[-3000:]
    assert f"remove them first (rm -r {paths.downloaded_model('demo-xlmr')})" in out

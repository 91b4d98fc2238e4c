"""Table provenance (vocab_transfer.report.provenance): each number's artifact and checksum, and the check
that finds two rows of a table read from one artifact."""

import json
import os
import shutil
from types import SimpleNamespace

import pandas as pd
import pytest

from vocab_transfer.artifacts import hash_file
from vocab_transfer.io import write_parquet
from vocab_transfer.report import provenance as prov
from vocab_transfer.report.tables import paper_table
from vocab_transfer.workflow.table_kinds import TABLE_KINDS


def _scores(model: str, seed: int, f1: float) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "source": "s",
                "task_name": "mnli",
                "language": "en",
                "task": "nli",
                "model": model,
                "method": model,
                "metric": "accuracy",
                "seed": seed,
                "dev_accuracy": f1,
                "test_accuracy": f1,
            }
        ]
    )


@pytest.fixture
def scores_dir(tmp_path, monkeypatch):
    """Fine-tuning scores of three models (one seed each) in the workflow's layout; the working directory is
    ``tmp_path`` (artifact paths are relative to it, as the workflow gives them)."""
    monkeypatch.chdir(tmp_path)
    for model in ("dict", "freq", "reinit"):
        write_parquet(_scores(model, 1, 0.312), f"results/finetune/s/mnli/{model}/seed1.parquet")
    return tmp_path


GRID = {
    "title": "T10",
    "tasks": ["mnli"],
    "format": "fraction",
    "grid": {
        "columns": ["All"],
        "rows": [["Dict Match", ["dict"]], ["Freq Match", ["freq"]], ["Reinit Embed", ["reinit"]]],
    },
}


def _table(spec: dict, files: list[str], out: str = "results/tables/paper/t10"):
    """The paper table of ``spec`` from ``files`` and its provenance sidecar, as rule make_paper_table writes
    them."""
    tagged = prov.read_tagged(files)
    table, _ = paper_table(tagged.drop(columns=prov.ARTIFACT), spec, models={}, tasks={})
    prov.write_provenance(prov.paper_cells(table, tagged, spec), "t10", f"{out}{prov.SUFFIX}")
    return table, f"{out}.md"


def test_rows_with_their_own_artifacts_pass_and_record_the_manifests_checksum(scores_dir):
    files = [f"results/finetune/s/mnli/{m}/seed1.parquet" for m in ("dict", "freq", "reinit")]
    table, md = _table(GRID, files)
    assert table["value"].tolist() == pytest.approx([31.2] * 3)  # rows that score alike: the miniatures' case
    side = pd.read_parquet(prov.provenance_path(md))
    assert list(side.columns) == list(prov.COLUMNS)
    assert sorted(side["row"]) == ["Dict Match", "Freq Match", "Reinit Embed"]
    assert side.set_index("row").loc["Freq Match", "artifact"] == files[1]
    assert all(
        c == f"xxh3_128:{hash_file(a)}" for a, c in zip(side["artifact"], side["checksum"], strict=True)
    )
    assert set(side["records"]) == {"seed=1"} and set(side["role"]) == {"value"}
    assert prov.check_table_provenance(md) == []
    assert prov.main([md]) == 0


def test_two_rows_wired_to_one_artifact_are_named(scores_dir, capsys):
    """A grid row that names another row's model (here Freq Match -> dict) reads that row's scores: the check
    names the table, both rows and the artifact."""
    wrong = {
        **GRID,
        "grid": {
            "columns": ["All"],
            "rows": [["Dict Match", ["dict"]], ["Freq Match", ["dict"]], ["Reinit Embed", ["reinit"]]],
        },
    }
    files = [f"results/finetune/s/mnli/{m}/seed1.parquet" for m in ("dict", "reinit")]
    _, md = _table(wrong, files)
    problems = prov.check_table_provenance(md)
    assert problems == [
        "t10: rows 'Dict Match', 'Freq Match' read the same artifact "
        "results/finetune/s/mnli/dict/seed1.parquet (seed=1)"
    ]
    assert prov.main(["results/tables"]) == 1
    out = capsys.readouterr().out
    assert "PROBLEM results/tables/paper/t10.provenance.parquet" in out and "'Freq Match'" in out


def test_two_files_that_claim_one_run_and_a_changed_file_are_named(scores_dir):
    """freq's scores file holding dict's scores (a job wired to the wrong model writes what it ran): the Dict
    Match cell reads seed 1 from two files; a file rebuilt after the table is named too."""
    shutil.copy2("results/finetune/s/mnli/dict/seed1.parquet", "results/finetune/s/mnli/freq/seed1.parquet")
    shutil.copy2(
        "results/finetune/s/mnli/dict/.seed1.parquet.manifest.json",
        "results/finetune/s/mnli/freq/.seed1.parquet.manifest.json",
    )
    files = [f"results/finetune/s/mnli/{m}/seed1.parquet" for m in ("dict", "freq", "reinit")]
    _, md = _table(GRID, files)
    assert prov.check_table_provenance(md) == [
        "t10: row 'Dict Match' (All) reads seed=1 from 2 artifacts: "
        "results/finetune/s/mnli/dict/seed1.parquet, "
        "results/finetune/s/mnli/freq/seed1.parquet"
    ]
    write_parquet(_scores("reinit", 1, 0.5), "results/finetune/s/mnli/reinit/seed1.parquet")  # rebuilt since
    assert "t10: results/finetune/s/mnli/reinit/seed1.parquet changed since the table was written" in (
        prov.check_table_provenance(md)
    )
    assert len(prov.check_table_provenance(md, verify=False)) == 1


def test_two_languages_read_from_identical_files_are_named(tmp_path, monkeypatch):
    """Corpus statistics (JSON, no records to tell them apart) of one language copied to another's path."""
    from vocab_transfer.io import write_text
    from vocab_transfer.report.vocab_tables import corpus_sizes_table

    monkeypatch.chdir(tmp_path)
    stats = {
        "de": '{"train_docs": 10, "train_bytes": 900, "heldout_docs": 2}',
        "sw": '{"train_docs": 12, "train_bytes": 800, "heldout_docs": 2}',
    }
    for lang, text in stats.items():
        write_text(text, f"corpus/{lang}/stats.json")
    files = pd.DataFrame(
        {
            prov.ARTIFACT: ["corpus/de/stats.json", "corpus/sw/stats.json"],
            "what": "stats",
            "language": ["de", "sw"],
        }
    )
    import json

    table, _ = corpus_sizes_table({k: json.loads(v) for k, v in stats.items()}, ["de", "sw"], "T1")
    entries = TABLE_KINDS["corpus_sizes"].cells(table, files)
    assert {(e["row"], e["artifact"]) for e in entries} == {
        ("de", "corpus/de/stats.json"),
        ("sw", "corpus/sw/stats.json"),
    }
    assert prov.check_provenance(prov.provenance_frame(entries, "t1")) == []
    write_text(stats["de"], "corpus/sw/stats.json")
    (problem,) = prov.check_provenance(prov.provenance_frame(entries, "t1"), verify=False)
    assert problem.startswith(
        "t1: rows 'de', 'sw' read identical files corpus/de/stats.json, corpus/sw/stats.json"
    )


def test_two_methods_of_one_file_are_two_artifacts_and_a_shared_reference_is_allowed(tmp_path, monkeypatch):
    """Records of one file (an init evaluation holds every method of a language) count apart; a reference read
    (the source model behind each share kept) may be shared by every row."""
    monkeypatch.chdir(tmp_path)
    evals = pd.DataFrame(
        {"source": "s", "target": "de", "method": ["focus", "random"], "mlm_loss": [3.0, 3.0]}
    )
    write_parquet(evals, "eval/s/de.parquet")
    from vocab_transfer.report.tables import init_loss_table

    tagged = prov.read_tagged(["eval/s/de.parquet"])
    table = init_loss_table(
        tagged.drop(columns=prov.ARTIFACT).assign(perplexity=20.0, masked_tokens=10),
        method_labels={},
        in_pretraining={},
    )
    entries = prov.init_loss_cells(table, tagged)
    assert {(e["row"], e["records"]) for e in entries} == {
        ("focus", "method=focus"),
        ("random", "method=random"),
    }
    assert prov.check_provenance(prov.provenance_frame(entries, "init")) == []
    same = [{**e, "records": "method=focus"} for e in entries]  # both rows read the focus records
    assert prov.check_provenance(prov.provenance_frame(same, "init")) == [
        "init: rows 'focus', 'random' read the same artifact eval/s/de.parquet (method=focus)"
    ]
    shared = [{**e, "role": "reference"} for e in same]
    assert prov.check_provenance(prov.provenance_frame(shared, "init")) == []


def test_a_cell_computed_from_nothing_read_is_an_error_and_a_missing_sidecar_a_problem(tmp_path):
    table = pd.DataFrame({"source": ["s"], "model": ["m"], "task_name": ["t"], "test_mean": [50.0]})
    inputs = pd.DataFrame(
        {prov.ARTIFACT: ["a.parquet"], "source": ["s"], "model": ["other"], "task_name": ["t"]}
    )
    with pytest.raises(ValueError, match=r"table row 0 \(source=s, task_name=t, model=m\)"):
        prov.finetune_cells(table, inputs)
    (tmp_path / "x.md").write_text("| a |\n")
    assert prov.check_table_provenance(tmp_path / "x.md") == [
        f"x: no provenance ({tmp_path / 'x.provenance.parquet'} is missing)"
    ]


def test_sidecar_name():
    assert prov.provenance_path("results/tables/init_mlm_loss.md").name == "init_mlm_loss.provenance.parquet"
    assert str(prov.provenance_path("results/tables/paper/t.provenance.parquet")) == (
        "results/tables/paper/t.provenance.parquet"
    )


def test_vocabulary_tables_name_their_overlap_fasttext_and_tokenizer_files(tmp_path, monkeypatch):
    """overlap_counts reads each language's overlap and fastText token list; vocab_coverage also the
    language's tokenizer folder (a tree checksum from its manifest) and the source tokenizer, shared by every
    row as a reference."""
    from vocab_transfer.io import atomic_path

    monkeypatch.chdir(tmp_path)
    rows = []
    for n, lang in enumerate(("de", "sw")):  # the languages' files differ, as the pipeline's do
        write_parquet(pd.DataFrame({"target_id": [1, 2 + n], "match": "exact"}), f"overlap/{lang}.parquet")
        write_parquet(pd.DataFrame({"token_id": [1, 2 + n], "has_vector": True}), f"fasttext/{lang}.parquet")
        with atomic_path(f"tokenizers/{lang}", directory=True) as tmp:
            (tmp / "tokenizer.json").write_text(f'{{"lang": "{lang}"}}')
        rows += [{prov.ARTIFACT: f"overlap/{lang}.parquet", "what": "overlap", "source": "s",
                  "language": lang},
                 {prov.ARTIFACT: f"fasttext/{lang}.parquet", "what": "fasttext_tokens", "language": lang},
                 {prov.ARTIFACT: f"tokenizers/{lang}", "what": "tokenizer", "language": lang}]
    with atomic_path("source_tokenizer", directory=True) as tmp:
        (tmp / "tokenizer.json").write_text("{}")
    files = pd.DataFrame([*rows,
                          {prov.ARTIFACT: "source_tokenizer", "what": "source_tokenizer", "source": "s"}])
    counts = pd.DataFrame({"language": ["de", "sw"], "name": ["German", "Kiswahili"], "full": [2, 2],
                           "with_vector": [2, 2], "source": "s"})
    entries = TABLE_KINDS["overlap_counts"].cells(counts, files)
    assert {(e["row"], e["field"], e["artifact"]) for e in entries} == {
        (lang, field, f"{what}/{lang}.parquet") for lang in ("de", "sw")
        for field, what in (("full", "overlap"), ("with_vector", "overlap"), ("with_vector", "fasttext"))}
    coverage = pd.DataFrame({"language": ["de", "sw"], "tokens": [10, 12], "unk_share": [0.1, 0.5],
                             "overlap_share": [0.2, 0.1], "source": "s"})
    frame = prov.provenance_frame(TABLE_KINDS["vocab_coverage"].cells(coverage, files), "unks1")
    shared = frame[frame["artifact"] == "source_tokenizer"]
    assert set(shared["row"]) == {"de", "sw"} and set(shared["role"]) == {"reference"}
    assert frame.set_index("artifact")["checksum"]["tokenizers/de"].iloc[0].startswith("xxh3_128-tree:")
    assert prov.check_provenance(frame) == []
    frame.loc[frame["artifact"] == "tokenizers/sw", "artifact"] = "tokenizers/de"  # sw's row wired to de's
    assert prov.check_provenance(frame, verify=False) == [
        "unks1: rows 'de', 'sw' read the same artifact tokenizers/de"]


# -------------------------------------------------------------------------------------------------------
# Following a score file back to the model it is of, and that model's LAPT run to the init artifact it started
# from: real LAPT and fine-tuning runs (tiny model, two LAPT steps, one fine-tuning epoch) in the workflow's
# layout, as the rules wire them, or wired wrong.

LAPT_RUNS = {"focus-lapt": ("focus", 1e-3), "wechsel-lapt": ("wechsel", 1e-3),
             "focus-lapt-2e-3": ("focus", 2e-3)}


class _Items(dict):
    """Snakemake's named lists: iterable over values, with .items()."""

    def __iter__(self):
        return iter(self.values())


def _init_artifact(path: str, method: str, rows: int, seed: int) -> None:
    """An init artifact as rule init_embeddings writes one: its job (rule, wildcards) in the metadata."""
    import torch

    from vocab_transfer import artifacts
    from vocab_transfer.io import write_tensors

    job = SimpleNamespace(rule="init_embeddings", wildcards=_Items(source="s", target="sw", method=method),
                          params=_Items(seed=seed), input=_Items())
    artifacts.set_job(job)
    try:
        rng = torch.Generator().manual_seed(seed)
        write_tensors({"embeddings": torch.randn(rows, 16, generator=rng)}, path)
    finally:
        artifacts._reset_for_tests()


def _finetune(model: str, name: str, method: str, out: str, embeddings: str | None = None) -> str:
    """Scores of one fine-tuning job (`python -m vocab_transfer.training.finetune`, in this process) of
    ``model`` (a folder), labelled as the model ``name`` of method ``method``."""
    from vocab_transfer.training import finetune

    meta = {"source": "s", "model": name, "method": method, "task_name": "sw-ner", "language": "sw"}
    finetune.main(["--model", model, "--tokenizer", model, "--task", "ner", "--data", "results/tasks/sw-ner",
                   "--seed", "1", "--output", out, "--meta", json.dumps(meta), "--config", FT_CONFIG,
                   *(["--embeddings", embeddings] if embeddings else [])])
    return out


FT_CONFIG = json.dumps({"epochs": 1, "lr": 1e-3, "batch_size": 8, "seq_len": 32, "eval_fraction": 0.5,
                        "threads": 1})
ZERO_SHOT = "results/source_task/s/sw-ner/full/seed1"


@pytest.fixture(scope="module")
def workflow(tmp_path_factory, sw_tokenizer, swahili_verses):
    """A workflow folder (the working directory while it is built, as for the workflow's jobs) with a source
    model, FOCUS and WECHSEL init artifacts, three LAPT runs (focus-lapt and focus-lapt-2e-3 from the FOCUS
    init at two learning rates, wechsel-lapt from the WECHSEL one) and fine-tuning scores of each model as the
    rules wire them, plus two wired wrong (``wrong/``)."""
    from vocab_transfer.data.shards import write_shard
    from vocab_transfer.io import atomic_path
    from vocab_transfer.source_model import build_xlmr_mlm
    from vocab_transfer.training import lapt, zeroshot

    root = tmp_path_factory.mktemp("workflow")
    here = os.getcwd()
    os.chdir(root)
    try:
        source = "results/source/s/model"
        with atomic_path(source, directory=True) as tmp:
            build_xlmr_mlm(sw_tokenizer, seed=0, dropout=0.1, hidden_size=16, num_layers=1, num_heads=2,
                           intermediate_size=32, max_position_embeddings=40).save_pretrained(tmp)
            sw_tokenizer.save_pretrained(str(tmp))
        for method, seed in (("focus", 1), ("wechsel", 2)):
            _init_artifact(f"results/init/s/sw/{method}.safetensors", method, len(sw_tokenizer), seed)
        for split, texts in (("train", swahili_verses[:200]), ("heldout", swahili_verses[200:240])):
            write_shard(texts, sw_tokenizer, f"results/shards/sw/{split}", tokenizer_dir=source)
        words = [v.split()[:12] for v in swahili_verses[300:340]]
        tasks = pd.DataFrame({"id": [str(i) for i in range(40)], "tokens": words,
                              "tags": [["B-X" if w[:1].isupper() else "O" for w in ws] for ws in words]})
        with atomic_path("results/tasks/sw-ner", directory=True) as tmp:
            for split, rows in (("train", tasks[:24]), ("dev", tasks[24:32]), ("test", tasks[32:])):
                rows.to_parquet(tmp / f"{split}.parquet")
        for run, (method, lr) in LAPT_RUNS.items():
            config = {"steps": 2, "batch_size": 4, "seq_len": 32, "lr": lr, "eval_every": 2, "seed": 3,
                      "eval_sequences": 4, "checkpoint_every": 2, "threads": 1, "snapshot_steps": [1]}
            out = f"results/lapt/s/sw/{run}"
            lapt.main(["--model", source, "--embeddings", f"results/init/s/sw/{method}.safetensors",
                       "--tokenizer", source, "--train", "results/shards/sw/train",
                       "--heldout", "results/shards/sw/heldout", "--output", f"{out}/model",
                       "--curve", f"{out}/curve.parquet", "--snapshots", f"{out}/snapshots",
                       "--token-accuracy", f"{out}/token_accuracy.parquet", "--config", json.dumps(config)])
        for run, (method, _) in LAPT_RUNS.items():
            _finetune(f"results/lapt/s/sw/{run}/model", run, method, _scores_of(run))
        _finetune(source, "source", "source", "results/finetune/s/sw-ner/source/seed1.parquet")
        _finetune(source, "focus-init", "focus", "results/finetune/s/sw-ner/focus-init/seed1.parquet",
                  embeddings="results/init/s/sw/focus.safetensors")
        # wechsel-lapt's job wired to focus-lapt's model; and to a run of FOCUS's init (the LAPT rule's fault)
        _finetune("results/lapt/s/sw/focus-lapt/model", "wechsel-lapt", "wechsel", "wrong/model.parquet")
        _finetune("results/lapt/s/sw/focus-lapt-2e-3/model", "wechsel-lapt", "wechsel", "wrong/init.parquet")
        task = ["--task", "ner", "--data", "results/tasks/sw-ner", "--config", FT_CONFIG]
        zeroshot.main(["train", "--model", source, "--seed", "1", "--variant", "full", "--output",
                       f"{ZERO_SHOT}.model", "--scores", f"{ZERO_SHOT}.parquet", *task])
        zeroshot.main(["evaluate", "--target", source, "--from", "sw-ner", "1", f"{ZERO_SHOT}.model",
                       f"{ZERO_SHOT}.parquet", "--output", "results/zeroshot/s/sw-ner/source.parquet", *task,
                       "--meta", json.dumps({"source": "s", "model": "source", "method": "source"})])
    finally:
        os.chdir(here)
    return root


def _finetune_table(files: list[str], out: str = "results/tables/finetune") -> str:
    """The fine-tuning table of ``files`` and its sidecar, as rule make_finetune_table writes them."""
    from vocab_transfer.report.tables import finetune_table

    tagged = prov.read_tagged(files)
    table = finetune_table(tagged.drop(columns=prov.ARTIFACT))
    prov.write_provenance(prov.finetune_cells(table, tagged), "finetune", f"{out}{prov.SUFFIX}")
    return f"{out}.md"


def _scores_of(run: str) -> str:
    return f"results/finetune/s/sw-ner/{run}/seed1.parquet"


def test_trainers_record_the_model_they_read_and_what_its_run_started_from(workflow, monkeypatch):
    """A score file names the model it fine-tuned (path as given, checksum as recorded by the model's
    manifest); a LAPT output, its curve and its snapshots name the init artifact and source model it started
    from; a score file of the source with an init artifact's rows is of the init artifact."""
    import pyarrow.parquet as pq

    from vocab_transfer import artifacts

    monkeypatch.chdir(workflow)
    model = "results/lapt/s/sw/focus-lapt/model"
    meta = json.loads(pq.read_schema(_scores_of("focus-lapt")).metadata[b"vocab_transfer"])
    assert meta["evaluated"] == "model"
    checksum = artifacts.artifact_checksum(model, deep=True)
    assert meta["reads"]["model"] == {"path": model, "checksum": checksum}
    assert meta["reads"]["data"]["path"] == "results/tasks/sw-ner"
    assert meta["reads"]["data"]["checksum"].startswith("xxh3_128-tree:")
    history = artifacts.read_metadata("results/finetune/s/sw-ner/focus-lapt/seed1.history.parquet")
    assert history["reads"] == meta["reads"]
    init = "results/init/s/sw/focus.safetensors"
    run = "results/lapt/s/sw/focus-lapt"
    for written in (model, f"{run}/curve.parquet", f"{run}/snapshots", f"{run}/snapshots/step-00000001"):
        record = artifacts.recorded_inputs(written)
        assert record["started_from"] == "embeddings", written
        assert record["reads"]["embeddings"] == {"path": init, "checksum": f"xxh3_128:{hash_file(init)}"}
        assert record["reads"]["model"]["path"] == "results/source/s/model"
    manifest = json.loads((workflow / model / ".manifest.json").read_text())
    assert manifest["reads"]["embeddings"]["path"] == init
    assert artifacts.artifact_checksum("results/lapt/s/sw/focus-lapt/snapshots/step-00000001") == (
        artifacts.artifact_checksum("results/lapt/s/sw/focus-lapt/snapshots/step-00000001", deep=True))
    swapped = artifacts.recorded_inputs(_scores_of("focus-init"))
    assert swapped["evaluated"] == "embeddings" and swapped["reads"]["embeddings"]["path"] == init
    assert prov.lineage(_scores_of("focus-lapt")) == {
        "model": {"path": model, "checksum": meta["reads"]["model"]["checksum"], "read": "model"},
        "origin": {"path": init, "checksum": f"xxh3_128:{hash_file(init)}", "read": "embeddings",
                   "method": "focus"},
        "claims": {"source": ["s"], "language": ["sw"], "model": ["focus-lapt"], "method": ["focus"]},
    }
    assert prov.lineage("results/lapt/s/sw/focus-lapt/curve.parquet")["origin"]["path"] == init
    assert "origin" not in prov.lineage(_scores_of("source"))  # the source model: no run recorded behind it
    # zero-shot: the scores are of the target; the source-side training is read too, and records its model
    zero_shot = artifacts.recorded_inputs("results/zeroshot/s/sw-ner/source.parquet")
    assert zero_shot["evaluated"] == "target"
    assert zero_shot["reads"]["target"]["path"] == "results/source/s/model"
    trained = f"{ZERO_SHOT}.model"
    assert zero_shot["reads"]["trained:sw-ner:1"] == {
        "path": trained, "checksum": artifacts.artifact_checksum(trained, deep=True)}
    for written in (f"{ZERO_SHOT}.model", f"{ZERO_SHOT}.parquet"):
        record = artifacts.recorded_inputs(written)
        assert record["evaluated"] == "model" and record["reads"]["model"]["path"] == "results/source/s/model"


def test_rows_wired_as_the_rules_wire_them_pass_and_share_only_references(workflow, monkeypatch):
    """Every model its own checkpoint: two LAPT runs of one method at two learning rates share their init
    artifact, the init row fine-tunes that artifact too, and every row but the source's starts from the source
    model (a reference): no problem."""
    monkeypatch.chdir(workflow)
    files = [_scores_of(r) for r in (*LAPT_RUNS, "source", "focus-init")]
    table = pd.read_parquet(_finetune_table(files).replace(".md", prov.SUFFIX))
    assert sorted(set(table["row"])) == sorted([*LAPT_RUNS, "source", "focus-init"])
    assert prov.check_table_provenance("results/tables/finetune.md") == []


def test_a_row_fine_tuned_from_another_rows_lapt_model_is_named(workflow, monkeypatch):
    """wechsel-lapt's job loaded focus-lapt's LAPT output and labelled its scores wechsel-lapt: each table row
    reads its own score file (the check of the files read passes), but both files are scores of one model."""
    monkeypatch.chdir(workflow)
    md = _finetune_table([_scores_of("focus-lapt"), "wrong/model.parquet"], "results/tables/wrong_model")
    assert prov.check_table_provenance(md) == [
        "finetune: rows 'focus-lapt' (sw-ner), 'wechsel-lapt' (sw-ner) (models focus-lapt, wechsel-lapt) are "
        "scores of one model results/lapt/s/sw/focus-lapt/model "
        "(results/finetune/s/sw-ner/focus-lapt/seed1.parquet, wrong/model.parquet)"
    ]
    assert prov.check_provenance(pd.read_parquet(md.replace(".md", prov.SUFFIX)), follow=False) == []


def test_a_row_whose_lapt_run_started_from_another_methods_init_is_named(workflow, monkeypatch):
    """wechsel-lapt's scores are of a LAPT output that started from the FOCUS init: with focus-lapt in the
    table the two rows (two methods) share one starting point; alone, its init was made for another method."""
    monkeypatch.chdir(workflow)
    md = _finetune_table([_scores_of("focus-lapt"), "wrong/init.parquet"], "results/tables/wrong_init")
    assert prov.check_table_provenance(md) == [
        "finetune: rows 'focus-lapt' (sw-ner), 'wechsel-lapt' (sw-ner) (methods focus, wechsel) trace back "
        "to one starting point results/init/s/sw/focus.safetensors (through "
        "results/lapt/s/sw/focus-lapt-2e-3/model, results/lapt/s/sw/focus-lapt/model)",
        "finetune: row 'wechsel-lapt' (sw-ner) claims method wechsel, but its model started from "
        "results/init/s/sw/focus.safetensors, made for method focus (wrong/init.parquet)",
    ]
    md = _finetune_table(["wrong/init.parquet"], "results/tables/wrong_init_alone")
    assert prov.check_table_provenance(md) == [
        "finetune: row 'wechsel-lapt' (sw-ner) claims method wechsel, but its model started from "
        "results/init/s/sw/focus.safetensors, made for method focus (wrong/init.parquet)"
    ]


def test_a_model_rebuilt_since_its_scores_were_made_is_named(workflow, tmp_path, monkeypatch):
    """A LAPT output written again after the fine-tuning that read it (a copy of the workflow folder, file
    times kept, so the manifests still hold)."""
    from vocab_transfer.io import atomic_path

    copy = tmp_path / "copy"
    shutil.copytree(workflow, copy)
    monkeypatch.chdir(copy)
    md = _finetune_table([_scores_of("focus-lapt"), _scores_of("wechsel-lapt")])
    assert prov.check_table_provenance(md) == []
    model = "results/lapt/s/sw/focus-lapt/model"
    with atomic_path(model, directory=True) as tmp:
        for f in (copy / model).iterdir():
            if f.name != ".manifest.json":
                shutil.copy2(f, tmp / f.name)
        (tmp / "config.json").write_text((copy / model / "config.json").read_text().replace("16", "17"))
    assert prov.check_table_provenance(md) == [
        f"finetune: {_scores_of('focus-lapt')} traces back to {model}, which changed since"
    ]

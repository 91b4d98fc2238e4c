"""Table provenance (vocab_transfer.report.provenance): each number's artifact and checksum, and the check
that finds two rows of a table read from one artifact."""

import shutil

import pandas as pd
import pytest

from vocab_transfer.artifacts import hash_file
from vocab_transfer.io import write_parquet
from vocab_transfer.report import provenance as prov
from vocab_transfer.report.tables import paper_table


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
    entries = prov.vocab_cells("corpus_sizes", table, files)
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
    """overlap_counts reads each language's overlap and fastText token list; vocab_coverage also the language's
    tokenizer folder (a tree checksum from its manifest) and the source tokenizer, shared by every row as a
    reference."""
    from vocab_transfer.io import atomic_path

    monkeypatch.chdir(tmp_path)
    rows = []
    for n, lang in enumerate(("de", "sw")):  # the languages' files differ, as the pipeline's do
        write_parquet(pd.DataFrame({"target_id": [1, 2 + n], "match": "exact"}), f"overlap/{lang}.parquet")
        write_parquet(pd.DataFrame({"token_id": [1, 2 + n], "has_vector": True}), f"fasttext/{lang}.parquet")
        with atomic_path(f"tokenizers/{lang}", directory=True) as tmp:
            (tmp / "tokenizer.json").write_text(f'{{"lang": "{lang}"}}')
        rows += [{prov.ARTIFACT: f"overlap/{lang}.parquet", "what": "overlap", "source": "s", "language": lang},
                 {prov.ARTIFACT: f"fasttext/{lang}.parquet", "what": "fasttext_tokens", "language": lang},
                 {prov.ARTIFACT: f"tokenizers/{lang}", "what": "tokenizer", "language": lang}]
    with atomic_path("source_tokenizer", directory=True) as tmp:
        (tmp / "tokenizer.json").write_text("{}")
    files = pd.DataFrame([*rows, {prov.ARTIFACT: "source_tokenizer", "what": "source_tokenizer", "source": "s"}])
    counts = pd.DataFrame({"language": ["de", "sw"], "name": ["German", "Kiswahili"], "full": [2, 2],
                           "with_vector": [2, 2], "source": "s"})
    entries = prov.vocab_cells("overlap_counts", counts, files)
    assert {(e["row"], e["field"], e["artifact"]) for e in entries} == {
        (lang, field, f"{what}/{lang}.parquet") for lang in ("de", "sw")
        for field, what in (("full", "overlap"), ("with_vector", "overlap"), ("with_vector", "fasttext"))}
    coverage = pd.DataFrame({"language": ["de", "sw"], "tokens": [10, 12], "unk_share": [0.1, 0.5],
                             "overlap_share": [0.2, 0.1], "source": "s"})
    frame = prov.provenance_frame(prov.vocab_cells("vocab_coverage", coverage, files), "unks1")
    shared = frame[frame["artifact"] == "source_tokenizer"]
    assert set(shared["row"]) == {"de", "sw"} and set(shared["role"]) == {"reference"}
    assert frame.set_index("artifact")["checksum"]["tokenizers/de"].iloc[0].startswith("xxh3_128-tree:")
    assert prov.check_provenance(frame) == []
    frame.loc[frame["artifact"] == "tokenizers/sw", "artifact"] = "tokenizers/de"  # sw's row wired to de's
    assert prov.check_provenance(frame, verify=False) == [
        "unks1: rows 'de', 'sw' read the same artifact tokenizers/de"]

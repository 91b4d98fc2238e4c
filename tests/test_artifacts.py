"""Artifact metadata and checks: every parquet/safetensors artifact says what made it; damaged or stale inputs
stop a job with the file and the rebuild command; ``python -m vocab_transfer.artifacts`` lists what is corrupt
or stale."""

import json
import os
import subprocess
import sys
from types import SimpleNamespace

import pandas as pd
import pytest
import torch

from vocab_transfer import artifacts
from vocab_transfer.artifacts import ArtifactError, check_readable, read_metadata, verify_inputs
from vocab_transfer.io import write_parquet, write_tensors


class Items(dict):
    """Snakemake's named lists: iterable over values, with .items()."""

    def __iter__(self):
        return iter(self.values())


def fake_job(tmp_path, inputs):
    return SimpleNamespace(rule="compute_overlap", wildcards=Items(source="s", target="de"),
                           params=Items(spec='{"a": 1}'), input=Items(inputs))


@pytest.fixture(autouse=True)
def no_job():
    yield
    artifacts._reset_for_tests()


def test_artifacts_record_rule_inputs_and_versions(tmp_path):
    tok = tmp_path / "tokenizer"
    tok.mkdir()
    (tok / "tokenizer.json").write_text('{"v": 1}')
    artifacts.set_job(fake_job(tmp_path, {"tokenizer": str(tok)}))
    write_parquet(pd.DataFrame({"a": [1, 2]}), tmp_path / "overlap.parquet")
    write_tensors({"embeddings": torch.ones(3, 2)}, tmp_path / "init.safetensors", metadata={"other": "kept"})
    for name in ("overlap.parquet", "init.safetensors"):
        meta = read_metadata(tmp_path / name)
        assert meta["rule"] == "compute_overlap" and meta["wildcards"] == {"source": "s", "target": "de"}
        assert meta["inputs"] == {str(tok): artifacts.fingerprint(tok)} and meta["versions"]["torch"]
        assert len(meta["params_sha256"]) == 64
    from safetensors import safe_open

    with safe_open(str(tmp_path / "init.safetensors"), "pt") as f:
        assert f.metadata()["other"] == "kept"
    assert pd.read_parquet(tmp_path / "overlap.parquet")["a"].tolist() == [1, 2]  # readers see the same data


def test_fingerprint_follows_content_not_time(tmp_path):
    f = tmp_path / "a.txt"
    f.write_text("x")
    before = artifacts.fingerprint(f)
    f.write_text("x")  # rewritten, same content
    assert artifacts.fingerprint(f) == before
    f.write_text("y")
    assert artifacts.fingerprint(f) != before and artifacts.fingerprint(tmp_path / "no") == "missing"
    big = tmp_path / "big.bin"
    big.write_bytes(b"\0" * (artifacts.FULL_HASH_LIMIT + 10))
    assert artifacts.fingerprint(big).startswith(f"edges:{artifacts.FULL_HASH_LIMIT + 10}:")


def test_tensor_checksums_follow_the_tensors_not_the_metadata(tmp_path):
    """tests/test_workflow.py compares init tensors with stored checksums: the header's metadata (paths,
    versions, time) must not enter them, every bit of a tensor must."""
    import hashlib

    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    write_tensors({"embeddings": x, "output_bias": torch.zeros(3)}, tmp_path / "a.safetensors")
    artifacts.set_job(fake_job(tmp_path, {}))  # other metadata: a rule, params, another time
    write_tensors({"output_bias": torch.zeros(3), "embeddings": x.clone()}, tmp_path / "b.safetensors",
                  metadata={"method": "{}"})
    a, b = (artifacts.tensor_checksums(tmp_path / f"{n}.safetensors") for n in "ab")
    assert (tmp_path / "a.safetensors").read_bytes() != (tmp_path / "b.safetensors").read_bytes()
    assert a == b and sorted(a) == ["embeddings", "output_bias"]
    assert a["embeddings"] == hashlib.sha256(b"F32[3, 4]\0" + x.numpy().tobytes()).hexdigest()  # known answer
    y = x.clone()
    y.view(torch.int32)[1, 2] ^= 1  # one bit of one value
    write_tensors({"embeddings": y, "output_bias": torch.zeros(3)}, tmp_path / "c.safetensors")
    c = artifacts.tensor_checksums(tmp_path / "c.safetensors")
    assert c["embeddings"] != a["embeddings"] and c["output_bias"] == a["output_bias"]
    write_tensors({"embeddings": x.reshape(4, 3), "output_bias": torch.zeros(3)}, tmp_path / "d.safetensors")
    # same bytes
    assert artifacts.tensor_checksums(tmp_path / "d.safetensors")["embeddings"] != a["embeddings"]


@pytest.mark.parametrize("name, cut", [("t.parquet", 20), ("t.safetensors", 8), ("t.json", 3)])
def test_truncated_artifacts_are_named_with_the_rebuild_command(tmp_path, name, cut):
    path = tmp_path / name
    if name.endswith("parquet"):
        write_parquet(pd.DataFrame({"a": range(100)}), path)
    elif name.endswith("safetensors"):
        write_tensors({"x": torch.arange(100.0)}, path)
    else:
        path.write_text(json.dumps({"a": list(range(10))}))
    check_readable(path)
    path.write_bytes(path.read_bytes()[:-cut])
    with pytest.raises(ArtifactError, match=str(path)):
        check_readable(path)
    with pytest.raises(ArtifactError, match=rf"rebuild it with: snakemake --force {path}"):
        verify_inputs([path])


def test_an_input_made_from_an_older_version_of_another_input_stops_the_job(tmp_path):
    """The overlap was computed with a tokenizer that has changed since: a job reading both refuses."""
    tok = tmp_path / "tokenizer"
    tok.mkdir()
    (tok / "tokenizer.json").write_text('{"v": 1}')
    artifacts.set_job(fake_job(tmp_path, {"tokenizer": str(tok)}))
    write_parquet(pd.DataFrame({"a": [1]}), tmp_path / "overlap.parquet")
    artifacts._reset_for_tests()
    verify_inputs([tmp_path / "overlap.parquet", tok])  # consistent
    (tok / "tokenizer.json").write_text('{"v": 2}')
    with pytest.raises(ArtifactError, match=r"overlap.parquet was made from an older version of .*tokenizer"):
        verify_inputs([tmp_path / "overlap.parquet", tok])
    verify_inputs([tmp_path / "overlap.parquet"])  # a job that does not read the tokenizer does not care


def test_check_cli_reports_corrupt_and_stale(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    src = results / "src.parquet"
    write_parquet(pd.DataFrame({"a": [1]}), src)
    artifacts.set_job(fake_job(tmp_path, {"src": str(src)}))
    write_parquet(pd.DataFrame({"b": [1]}), results / "derived.parquet")
    artifacts._reset_for_tests()
    write_tensors({"x": torch.zeros(10)}, results / "t.safetensors")
    run = lambda: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "vocab_transfer.artifacts", str(results)], capture_output=True, text=True)
    ok = run()
    assert ok.returncode == 0 and "3 artifacts" in ok.stdout and "3 ok" in ok.stdout, ok.stdout + ok.stderr
    write_parquet(pd.DataFrame({"a": [2]}), src)  # src changed: derived is stale
    (results / "t.safetensors").write_bytes((results / "t.safetensors").read_bytes()[:-4])
    bad = run()
    assert bad.returncode == 1
    assert (f"STALE    {results / 'derived.parquet'}" in bad.stdout
            and f"CORRUPT  {results / 't.safetensors'}" in bad.stdout)
    assert "1 corrupt, 1 ok, 1 stale" in bad.stdout


# --- artifacts that checksum themselves ---------------------------------------------------------------------
def overwrite_middle(path, n=16, keep_time=False):
    """Overwrite ``n`` bytes in the middle of a file with other bytes: same size (and, with ``keep_time``, the
    same modification time)."""
    st = path.stat()
    data = bytearray(path.read_bytes())
    mid = len(data) // 2
    data[mid:mid + n] = bytes((b + 1) % 256 for b in data[mid:mid + n])
    path.write_bytes(bytes(data))
    if keep_time:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size


def test_a_file_artifact_corrupted_without_changing_its_size_stops_the_job(tmp_path):
    path = tmp_path / "init.safetensors"
    write_tensors({"embeddings": torch.randn(64, 32)}, path)
    assert artifacts.sidecar(path).is_file() and artifacts.check_manifest(path) == []
    verify_inputs([path])
    overwrite_middle(path)
    check_readable(path, deep=True)  # still a valid safetensors file: only its checksum tells
    with pytest.raises(ArtifactError,
                       match=r"init.safetensors changed after it was written: .*same size, other "
                             r"content.*rebuild it with: snakemake --force"):
        verify_inputs([path])


def test_a_corruption_that_keeps_the_time_is_found_by_deep_checks(tmp_path):
    path = tmp_path / "overlap.parquet"
    write_parquet(pd.DataFrame({"a": range(1000)}), path)
    overwrite_middle(path, keep_time=True)
    assert artifacts.check_manifest(path) == []  # the cheap check trusts size and time
    assert "same size, other content" in artifacts.check_manifest(path, deep=True)[0]
    with pytest.raises(ArtifactError, match="changed after it was written"):
        verify_inputs([path], deep=True)


def test_a_folder_edited_in_place_is_detected(tmp_path):
    from vocab_transfer.io import atomic_path

    tok = tmp_path / "tokenizer"
    with atomic_path(tok, directory=True) as tmp:
        (tmp / "tokenizer.json").write_text('{"model": {"vocab": [1, 2, 3]}}')
        (tmp / "sub").mkdir()
        (tmp / "sub" / "b.txt").write_text("b")
    assert sorted(json.loads((tok / ".manifest.json").read_text())["files"]) == ["sub/b.txt",
                                                                                 "tokenizer.json"]
    (tok / ".snakemake_timestamp").write_text("")  # Snakemake's marker in folder outputs is not a change
    verify_inputs([tok])
    (tok / "tokenizer.json").write_text('{"model": {"vocab": [1, 2, 4]}}')  # same size, edited in place
    with pytest.raises(ArtifactError, match=r"tokenizer.json changed \(same size, other content\)"):
        verify_inputs([tok])
    (tok / "tokenizer.json").write_text('{"model": {"vocab": [1, 2, 3]}}')
    verify_inputs([tok])  # back as written
    (tok / "added_tokens.json").write_text("{}")
    assert artifacts.check_manifest(tok) == [f"{tok / 'added_tokens.json'} was added"]
    (tok / "added_tokens.json").unlink()
    (tok / "sub" / "b.txt").unlink()
    assert artifacts.check_manifest(tok) == [f"{tok / 'sub' / 'b.txt'} was removed"]
    (tok / ".manifest.json").write_text("{not json")
    assert "unreadable" in artifacts.check_manifest(tok)[0]


def test_rebuild_hints_name_the_rule_output_and_the_config_files(tmp_path, monkeypatch):
    """A corrupt corpus part is rebuilt through its split folder (the rule's output, not the part file), with
    the config files of the run that wrote it; without any (config.yaml) the command has none."""
    from vocab_transfer.io import atomic_path

    monkeypatch.setenv(artifacts.RERUN_ENV, json.dumps({"snakemake": ["snakemake"],
                                                        "configfiles": ["configs/focus.yaml",
                                                                        "configs/overlays/x y.yaml"]}))
    split = tmp_path / "corpus" / "de" / "train.parquet"
    with atomic_path(split, directory=True) as tmp:
        pd.DataFrame({"text": ["a"]}).to_parquet(tmp / "part-00000.parquet")
    part = split / "part-00000.parquet"
    assert (artifacts.rerun_hint(part)
            == (f"rebuild it with: snakemake --force {split} --configfile configs/focus.yaml "
                "'configs/overlays/x y.yaml'"))
    monkeypatch.setenv(artifacts.RERUN_ENV, json.dumps({"snakemake": ["snakemake"], "configfiles": []}))
    write_tensors({"x": torch.zeros(2)}, tmp_path / "t.safetensors")
    assert (artifacts.rerun_hint(tmp_path / "t.safetensors")
            == f"rebuild it with: snakemake --force {tmp_path}/t.safetensors")
    # a run outside the repo
    elsewhere = ["snakemake", "--snakefile", "/repo/Snakefile", "--directory", "/work/run 1"]
    monkeypatch.setenv(artifacts.RERUN_ENV,
                       json.dumps({"snakemake": elsewhere, "configfiles": ["/work/c.yaml"]}))
    write_tensors({"x": torch.zeros(2)}, tmp_path / "u.safetensors")
    assert artifacts.rerun_hint(tmp_path / "u.safetensors") == (
        "rebuild it with: snakemake --snakefile /repo/Snakefile --directory '/work/run 1' --force "
        f"{tmp_path}/u.safetensors --configfile /work/c.yaml")
    part.write_bytes(part.read_bytes()[:-3])
    with pytest.raises(ArtifactError,
                       match=rf"changed after it was written: .*rebuild it with: snakemake --force {split} "
                             r"--configfile configs/focus.yaml"):
        verify_inputs([split])


def test_check_cli_reports_changed_artifacts(tmp_path):
    results = tmp_path / "results"
    write_tensors({"x": torch.randn(100)}, results / "init.safetensors")
    write_parquet(pd.DataFrame({"a": range(100)}), results / "overlap.parquet")
    overwrite_middle(results / "init.safetensors")
    overwrite_middle(results / "overlap.parquet", keep_time=True)
    run = lambda *a: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "vocab_transfer.artifacts", str(results), *a], capture_output=True, text=True)
    cheap, deep = run(), run("--deep")
    assert cheap.returncode == deep.returncode == 1
    assert (f"CHANGED  {results / 'init.safetensors'}" in cheap.stdout
            and "overlap.parquet:" not in cheap.stdout)
    assert f"CHANGED  {results / 'overlap.parquet'}" in deep.stdout, deep.stdout

"""Hub models (sources.<name>.model, finetune.models.<m>.pretrained) are downloaded at a pinned revision, and
the commit it resolved to is recorded in the folder's origin.json and in the metadata of every artifact made
from it.

The hub is the only thing replaced: a fake HfApi / snapshot_download serves a local tiny model folder as a
repository with two commits (in this process by monkeypatching, in Snakemake's jobs through a sitecustomize
module)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "tests" / "data" / "tiny_config.yaml"
SNAKEMAKE = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile")]
HUB_ID = "tiny-org/tiny-xlmr"
COMMITS = {"main": "a" * 40, "v1": "b" * 40}  # branch/tag -> commit of the fake repository

# The fake hub: `HUB_ROOT/<commit>/` holds the repository's files at that commit.
FAKE_HUB = (f'''
import fnmatch, os, shutil
from pathlib import Path
import huggingface_hub

ROOT = Path(os.environ["FAKE_HUB_ROOT"])
COMMITS = {COMMITS!r}
CALLS = []


class Info:
    def __init__(self, sha):
        self.sha = sha


def _commit(repo, revision):
    if repo != {HUB_ID!r}:
        raise FileNotFoundError(f'no repository {{repo}}')
    revision = revision or "main"
    commit = COMMITS.get(revision, revision)
    if not (ROOT / commit).is_dir():
        raise FileNotFoundError(f'{{repo}}: no revision {{revision}}')
    return commit


class HfApi:
    def __init__(self, *args, **kwargs):
        pass

    def model_info(self, repo_id, revision=None, **kwargs):
        CALLS.append(("model_info", repo_id, revision))
        return Info(_commit(repo_id, revision))

    def list_repo_files(self, repo_id, revision=None, **kwargs):
        CALLS.append(("list_repo_files", repo_id, revision))
        root = ROOT / _commit(repo_id, revision)
        return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def snapshot_download(repo_id, revision=None, local_dir=None, allow_patterns=None, **kwargs):
    CALLS.append(("snapshot_download", repo_id, revision, tuple(allow_patterns or ())))
    root = ROOT / _commit(repo_id, revision)
    for p in sorted(root.rglob("*")):
        name = p.relative_to(root).as_posix()
        if p.is_file() and (allow_patterns is None or any(fnmatch.fnmatch(name, pat) '''
            '''for pat in allow_patterns)):
            (Path(local_dir) / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(p, Path(local_dir) / name)
    cache = Path(local_dir) / ".cache" / "huggingface"  # what the real client keeps next to the files
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "download.lock").write_text("")
    return str(local_dir)
''')
# In Snakemake's jobs: imported at interpreter start from PYTHONPATH.
SITECUSTOMIZE = (FAKE_HUB + "\nhuggingface_hub.HfApi = HfApi\n"
                 "huggingface_hub.snapshot_download = snapshot_download\n")


@pytest.fixture(scope="module")
def fake_hub(tmp_path_factory, sw_tokenizer):
    """A folder with one tiny XLM-R MLM per commit (the two differ in their weights) and files a download must
    skip, and the sitecustomize module that serves it as the hub."""
    from vocab_transfer.source_model import build_xlmr_mlm

    root = tmp_path_factory.mktemp("hub")
    for i, commit in enumerate(sorted(set(COMMITS.values()))):
        model = build_xlmr_mlm(sw_tokenizer, hidden_size=16, num_layers=1, num_heads=2, intermediate_size=32,
                               max_position_embeddings=64, seed=i)
        model.save_pretrained(root / commit)
        sw_tokenizer.save_pretrained(root / commit)
        (root / commit / "tf_model.h5").write_bytes(b"not fetched")
        (root / commit / "onnx").mkdir()
        (root / commit / "onnx" / "model.onnx").write_bytes(b"not fetched")
    site = tmp_path_factory.mktemp("site")
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    return root, site


@pytest.fixture
def patched_hub(fake_hub, monkeypatch):
    """The fake hub in this process: huggingface_hub's HfApi and snapshot_download replaced; returns its call
    log."""
    root, _ = fake_hub
    monkeypatch.setenv("FAKE_HUB_ROOT", str(root))
    namespace: dict = {}
    exec(compile(FAKE_HUB, "fake_hub", "exec"), namespace)
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "HfApi", namespace["HfApi"])
    monkeypatch.setattr(huggingface_hub, "snapshot_download", namespace["snapshot_download"])
    return namespace["CALLS"]


def test_download_pins_the_revision_and_records_the_commit(patched_hub, fake_hub, tmp_path):
    from vocab_transfer.artifacts import ORIGIN_FILE, model_origin
    from vocab_transfer.source_model import download_hub_model, load_source_model, read_input_embeddings

    root, _ = fake_hub
    out = tmp_path / "resources/models/hub"
    origin = download_hub_model(HUB_ID, "v1", out)
    assert origin == {"repo": HUB_ID, "revision": "v1", "resolved_revision": COMMITS["v1"],
                      "files": sorted(p.name for p in out.iterdir()
                                      if p.is_file() and p.name not in (ORIGIN_FILE, ".manifest.json"))}
    assert json.loads((out / ORIGIN_FILE).read_text()) == origin == model_origin(out)
    assert "model.safetensors" in origin["files"] and "tokenizer.json" in origin["files"]
    assert "tf_model.h5" not in origin["files"] and not (out / "onnx").exists()  # hub_download_patterns
    assert not any(f.startswith(".cache") for f in origin["files"])
    # the file list and the files come from the resolved commit, not from a branch name that may move
    # meanwhile
    assert [c[:3] for c in patched_hub] == [("model_info", HUB_ID, "v1"),
                                            ("list_repo_files", HUB_ID, COMMITS["v1"]),
                                            ("snapshot_download", HUB_ID, COMMITS["v1"])]
    assert ((out / "model.safetensors").read_bytes()
            == (root / COMMITS["v1"] / "model.safetensors").read_bytes())
    assert load_source_model(str(out)).config.model_type == "xlm-roberta"
    assert read_input_embeddings(out).shape[1] == 16
    # no revision: the default branch, whose commit is recorded
    default = download_hub_model(HUB_ID, None, tmp_path / "default")
    assert default["revision"] is None and default["resolved_revision"] == COMMITS["main"]
    assert (tmp_path / "default/model.safetensors").read_bytes() != (out / "model.safetensors").read_bytes()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary folder left


def test_a_failed_download_leaves_nothing(patched_hub, monkeypatch, tmp_path):
    """A connection lost halfway through leaves no model folder, only `<folder>.partial`, where the next
    attempt resumes (the hub client skips the files it has) and which it removes; an unknown revision is the
    hub's error."""
    import huggingface_hub

    from vocab_transfer.source_model import download_hub_model

    fake = huggingface_hub.snapshot_download

    def cut_off(repo_id, local_dir=None, **kwargs):
        fake(repo_id, local_dir=local_dir, **kwargs)
        assert any(Path(local_dir).iterdir())  # files were written
        raise ConnectionError("connection reset by peer")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", cut_off)
    (tmp_path / "models").mkdir()
    with pytest.raises(ConnectionError):
        download_hub_model(HUB_ID, "v1", tmp_path / "models/hub")
    assert [p.name for p in (tmp_path / "models").iterdir()] == ["hub.partial"]
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake)
    download_hub_model(HUB_ID, "v1", tmp_path / "models/hub")
    assert [p.name for p in (tmp_path / "models").iterdir()] == ["hub"]
    shutil.rmtree(tmp_path / "models/hub")
    with pytest.raises(FileNotFoundError, match="no revision no-such-tag"):
        download_hub_model(HUB_ID, "no-such-tag", tmp_path / "models/hub")
    assert list((tmp_path / "models").iterdir()) == []


def test_a_model_that_needs_its_repositorys_code_is_refused(patched_hub, fake_hub, monkeypatch, tmp_path):
    """`auto_map` in config.json (or tokenizer_config.json) asks transformers to import the repository's
    Python files: refused after the download (which leaves nothing) and, for a local folder, when the config
    is parsed."""
    import huggingface_hub

    from vocab_transfer.source_model import download_hub_model
    from vocab_transfer.workflow.config import ConfigError, check_local_source

    fake = huggingface_hub.snapshot_download

    def with_remote_code(repo_id, local_dir=None, **kwargs):
        fake(repo_id, local_dir=local_dir, **kwargs)
        config = json.loads((Path(local_dir) / "config.json").read_text())
        config["auto_map"] = {"AutoModelForMaskedLM": "modeling_custom.CustomForMaskedLM"}
        (Path(local_dir) / "config.json").write_text(json.dumps(config))

    monkeypatch.setattr(huggingface_hub, "snapshot_download", with_remote_code)
    (tmp_path / "models").mkdir()
    with pytest.raises(ValueError, match=r"needs code from the model's repository \(config.json: "
                                         r"modeling_custom.CustomForMaskedLM\)"):
        download_hub_model(HUB_ID, "v1", tmp_path / "models/hub")
    assert list((tmp_path / "models").iterdir()) == []
    from vocab_transfer.source_model import TRUSTED_ENV

    monkeypatch.setenv(TRUSTED_ENV, str(tmp_path / "models/hub"))  # sources.<name>.trust_remote_code: true
    assert "config.json" in download_hub_model(HUB_ID, "v1", tmp_path / "models/hub")["files"]
    monkeypatch.delenv(TRUSTED_ENV)
    local = tmp_path / "local"
    shutil.copytree(fake_hub[0] / COMMITS["v1"], local)
    tok = json.loads((local / "tokenizer_config.json").read_text())
    (local / "tokenizer_config.json").write_text(
        json.dumps(tok | {"auto_map": {"AutoTokenizer": [None, "t.Fast"]}}))
    with pytest.raises(ConfigError, match=r"sources.mine.model: .* \(tokenizer_config.json: t.Fast\)"):
        check_local_source("mine", local, False)


def test_artifacts_made_from_a_downloaded_model_record_its_origin(patched_hub, tmp_path):
    from types import SimpleNamespace

    import pandas as pd
    import torch

    from vocab_transfer import artifacts
    from vocab_transfer.io import write_parquet, write_tensors
    from vocab_transfer.source_model import download_hub_model

    model = tmp_path / "resources/models/hub"
    origin = download_hub_model(HUB_ID, "v1", model)
    other = tmp_path / "results/tokenizers/sw"
    other.mkdir(parents=True)
    (other / "tokenizer.json").write_text("{}")

    class Params(dict):
        pass

    def job(inputs):
        return SimpleNamespace(rule="init_embeddings",
                               wildcards=Params(source="hub", target="sw", method="focus"),
                               params=Params(seed=1), input=[str(p) for p in inputs])

    try:
        artifacts.set_job(job([model, other]))
        write_tensors({"embeddings": torch.zeros(2, 3)}, tmp_path / "init.safetensors")
        write_parquet(pd.DataFrame({"a": [1]}), tmp_path / "table.parquet")
        for path in ("init.safetensors", "table.parquet"):
            meta = artifacts.read_metadata(tmp_path / path)
            assert meta["origins"] == {str(model): origin}, path
            assert meta["origins"][str(model)]["resolved_revision"] == COMMITS["v1"]
            assert set(meta["inputs"]) == {str(model), str(other)}
        artifacts.set_job(job([other]))  # no downloaded model among the inputs: no origins
        write_parquet(pd.DataFrame({"a": [1]}), tmp_path / "plain.parquet")
        assert "origins" not in artifacts.read_metadata(tmp_path / "plain.parquet")
    finally:
        artifacts._reset_for_tests()


def snakemake(workdir: Path, *args: str, env: dict) -> subprocess.CompletedProcess:
    proc = subprocess.run([*SNAKEMAKE, *args, "--configfile", "config.yaml"], capture_output=True, text=True,
                          cwd=workdir, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return proc


def test_download_rules_pin_the_revision_and_rerun_when_it_changes(fake_hub, tmp_path):
    """Real Snakemake, fake hub: both download rules fetch the configured revision and record its commit; a
    new revision in the config makes Snakemake download again (it is a param of the rule), the same one does
    not."""
    root, site = fake_hub
    config = yaml.safe_load(TINY.read_text())
    config["sources"]["hub"] = {"model": HUB_ID, "revision": "v1", "languages": ["de"]}
    config["finetune"]["models"]["ref"] = {"pretrained": HUB_ID, "label": "Reference", "tasks": ["he-ner"]}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    env = {**os.environ, "FAKE_HUB_ROOT": str(root),
           "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    targets = ["resources/models/hub", "resources/reference_models/ref"]
    snakemake(tmp_path, *targets, "--cores", "1", env=env)
    source = json.loads((tmp_path / "resources/models/hub/origin.json").read_text())
    reference = json.loads((tmp_path / "resources/reference_models/ref/origin.json").read_text())
    assert (source["revision"], source["resolved_revision"]) == ("v1", COMMITS["v1"])
    assert (reference["revision"], reference["resolved_revision"]) == (None, COMMITS["main"])
    assert (tmp_path / "resources/models/hub/model.safetensors").read_bytes() == \
        (root / COMMITS["v1"] / "model.safetensors").read_bytes()
    log = (tmp_path / "logs/download_source_model/hub.log").read_text()
    assert f"{HUB_ID} at v1 (commit {COMMITS['v1']}" in log

    assert "Nothing to be done" in snakemake(tmp_path, *targets, "-n", "--cores", "1", env=env).stdout
    config["sources"]["hub"]["revision"] = COMMITS["main"]
    config["finetune"]["models"]["ref"]["revision"] = "v1"
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    dry = snakemake(tmp_path, *targets, "-n", "--cores", "1", env=env)
    out = dry.stdout + dry.stderr
    assert "download_source_model" in out and "download_reference_model" in out and "params" in out.lower()
    snakemake(tmp_path, *targets, "--cores", "1", env=env)
    source = json.loads((tmp_path / "resources/models/hub/origin.json").read_text())
    reference = json.loads((tmp_path / "resources/reference_models/ref/origin.json").read_text())
    assert source["resolved_revision"] == COMMITS["main"] and reference["resolved_revision"] == COMMITS["v1"]
    shutil.rmtree(tmp_path / ".snakemake", ignore_errors=True)


@pytest.mark.parametrize("edit, message", [
    (lambda c, d: c["sources"].update(local={"model": str(d), "revision": "v1"}),
     "sources.local.revision: "),
    (lambda c, d: c["sources"]["tiny"].update(revision="v1"),
     "sources.tiny.revision: a hub revision needs model"),
    (lambda c, d: c["finetune"]["models"]["source"].update(revision="v1"),
     "finetune.models.source.revision: a hub revision pins pretrained: <hub id> only"),
    (lambda c, d: c["finetune"]["models"].update(ref={"pretrained": str(d), "revision": "v1"}),
     "is a local folder"),
])
def test_a_revision_without_a_hub_id_is_named(edit, message, fake_hub, tmp_path):
    from vocab_transfer.workflow.config import ConfigError, check_config
    from vocab_transfer.workflow.model import ModelError

    root, _ = fake_hub
    config = yaml.safe_load(TINY.read_text())
    edit(config, root / COMMITS["v1"])
    with pytest.raises((ConfigError, ModelError)) as e:
        check_config(config)
    assert message in str(e.value)

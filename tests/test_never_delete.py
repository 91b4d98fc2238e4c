"""Bad inputs that must never cost a user a file: ``vocab-transfer --out`` refuses any folder it did not write
(and replaces an earlier export of its own in one swap), bad arguments are named before the DAG runs, YAML
with a key given twice or a Python tag is refused with its line (config files, study configs, ``--param``),
and a rebuild hint of a copied run directory names the copy. Every case here runs without a DAG."""

import json
import os
import shlex
import shutil
from pathlib import Path

import pytest
import torch
import yaml

from vocab_transfer import api, artifacts
from vocab_transfer.io import atomic_path, write_tensors
from vocab_transfer.typed import YamlError, load_yaml
from vocab_transfer.workflow.config import ConfigError, check_configfiles

REPO = Path(__file__).resolve().parents[1]
PWNED = "touch {}"


@pytest.fixture
def here(tmp_path, monkeypatch):
    """A user's folder as the current directory, with a corpus, a folder of the user's own files and a
    file."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.txt").write_text("Habari ya asubuhi.\n")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "thesis.tex").write_text("years of work")
    (tmp_path / "notes.txt").write_text("notes")
    return tmp_path


def cli(capsys, *args, out="new", **options):
    """vocab-transfer transfer with a valid source, tokenizer and corpus unless ``options`` say otherwise:
    (exit status, stderr)."""
    given = {"--source": "org/model", "--tokenizer": "300", "--corpus": "c.txt", "--out": out,
             "--workdir": "run",
             **{f"--{k}": v for k, v in options.items()}}
    code = api.main(["transfer", *[w for kv in given.items() for w in kv], *args])
    return code, capsys.readouterr().err


def untouched(here: Path) -> None:
    """The user's files are all there and no working directory was made: nothing ran."""
    assert (here / "mine" / "thesis.tex").read_text() == "years of work"
    assert (here / "notes.txt").read_text() == "notes" and (here / "c.txt").is_file()
    assert not (here / "run").exists() and not (here / "new").exists()


def fake_export(folder: Path, weights: bytes = b"old") -> Path:
    """A model folder laid out as rule export_init_model writes it (its manifest records the rule)."""
    job = type("Job", (), {"rule": "export_init_model", "params": {}, "wildcards": {}, "input": []})()
    artifacts.set_job(job)
    try:
        with atomic_path(folder, directory=True) as tmp:
            (tmp / "config.json").write_text('{"model_type": "llama"}')
            (tmp / "README.md").write_text("# model card")
            (tmp / "model.safetensors").write_bytes(weights)
    finally:
        artifacts._reset_for_tests()
    return folder


# --- --out
# -------------------------------------------------------------------------------------------------------
def test_out_a_folder_with_a_users_files_is_refused_before_anything_runs(here, capsys):
    code, err = cli(capsys, out="mine")
    assert code == 1 and f"--out mine: a folder with files ({here / 'mine'})" in err and "thesis.tex" in err
    untouched(here)


def test_out_the_current_directory_or_above_is_refused(here, capsys):
    code, err = cli(capsys, out=".")
    assert code == 1 and f"--out .: the current directory ({here})" in err
    code, err = cli(capsys, out="..")
    assert code == 1 and "--out ..: the current directory or a folder above it" in err
    untouched(here)


def test_out_home_and_the_repository_are_refused(here, capsys):
    code, err = cli(capsys, out=str(Path.home()))
    assert code == 1 and "your home folder" in err
    code, err = cli(capsys, out=str(REPO))
    assert code == 1 and "the repository's checkout" in err
    untouched(here)


def test_out_the_working_directory_inside_or_above_it_is_refused(here, capsys):
    for out, workdir in (("run", "run"), ("run/model", "run"), ("runs", "runs/a")):
        code, err = cli(capsys, out=out, workdir=workdir)
        assert code == 1 and f"--out {out}: the working directory of the run ({here / workdir})" in err, err
    untouched(here)


def test_out_an_existing_file_is_refused(here, capsys):
    code, err = cli(capsys, out="notes.txt")
    assert code == 1 and "--out notes.txt: an existing file, not a folder" in err
    untouched(here)


def test_out_a_symbolic_link_to_a_users_folder_is_refused(here, capsys):
    (here / "link").symlink_to(here / "mine")
    code, err = cli(capsys, out="link")
    assert code == 1 and f"--out link: a symbolic link (to {here / 'mine'})" in err
    untouched(here)
    assert (here / "link").is_symlink()


def test_out_an_export_with_a_users_file_added_is_refused(here, capsys):
    fake_export(here / "model")
    (here / "model" / "my-eval.json").write_text("{}")
    code, err = cli(capsys, out="model")
    assert code == 1 and "an exported model folder changed since" in err and "my-eval.json was added" in err
    assert (here / "model" / "my-eval.json").is_file()
    assert (here / "model" / "model.safetensors").read_bytes() == b"old"


def test_out_an_earlier_export_or_an_empty_folder_may_be_written(here):
    fake_export(here / "model")
    (here / "empty").mkdir()
    assert api.check_out("model", here / "run") == here / "model"
    assert api.check_out("empty", here / "run") == here / "empty"
    assert api.check_out("sub/new", here / "run") == here / "sub" / "new"


def test_replacing_an_earlier_export_swaps_it_in_one_step(here):
    old, new = fake_export(here / "model"), fake_export(here / "run" / "export", b"new")
    api.replace_folder(new, old)
    assert (old / "model.safetensors").read_bytes() == b"new" and api.is_export(old) is None
    # no temporaries left beside it
    assert sorted(p.name for p in here.iterdir()) == ["c.txt", "mine", "model", "notes.txt", "run"]
    api.replace_folder(new, here / "fresh")  # a new folder
    assert (here / "fresh" / "model.safetensors").read_bytes() == b"new"


def test_a_failed_copy_leaves_the_earlier_export_as_it_was(here, monkeypatch):
    old, new = fake_export(here / "model"), fake_export(here / "run" / "export", b"new")

    def copy_then_fail(src, dst, **kwargs):
        Path(dst).mkdir()
        (Path(dst) / "config.json").write_text("half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(api.shutil, "copytree", copy_then_fail)
    with pytest.raises(OSError, match="No space left"):
        api.replace_folder(new, old)
    assert (old / "model.safetensors").read_bytes() == b"old" and api.is_export(old) is None
    assert sorted(p.name for p in here.iterdir()) == ["c.txt", "mine", "model", "notes.txt", "run"]


def test_the_swap_without_renameat2_is_two_renames(here, monkeypatch):
    """Where the kernel has no RENAME_EXCHANGE, the fallback swaps with two renames (undone if the second
    fails)."""
    import ctypes

    monkeypatch.setattr(ctypes, "CDLL", lambda *a, **k: (_ for _ in ()).throw(OSError("no libc")))
    (here / "a").mkdir()
    (here / "a" / "x").write_text("a")
    (here / "b").mkdir()
    (here / "b" / "x").write_text("b")
    api._exchange(here / "a", here / "b")
    assert (here / "a" / "x").read_text() == "b" and (here / "b" / "x").read_text() == "a"


# --- the other arguments
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("tokenizer, message", [
    ("-5", "tokenizer '-5': a vocabulary size must be from 100"),
    ("0", "tokenizer '0': a vocabulary size must be from 100"),
    (str(10**12), f"tokenizer '{10**12}': a vocabulary size must be from 100 (the special tokens and the "
                  "alphabet) to 16777216"),
    ("bad id!!", "tokenizer 'bad id!!': no such folder, and not a hub id"),
    ("notes.txt", "tokenizer 'notes.txt': a file; give a folder"),
])
def test_a_bad_tokenizer_is_named(here, capsys, tokenizer, message):
    code, err = cli(capsys, tokenizer=tokenizer)
    assert code == 1 and message in err
    untouched(here)


def test_vocabulary_sizes_at_the_bounds_are_accepted():
    assert api.transfer_config("org/model", 100, "focus", "c.txt")["tokenizer"]["vocab_size"] == 100
    assert api.transfer_config("org/model", str(2**24), "focus", "c.txt")["tokenizer"]["vocab_size"] == 2**24
    with pytest.raises(ValueError, match="tokenizer 99"):
        api.transfer_config("org/model", 99, "focus", "c.txt")
    with pytest.raises(ValueError, match="tokenizer True"):
        api.transfer_config("org/model", True, "focus", "c.txt")


@pytest.mark.parametrize("options, message", [
    ({"source": "bad id!!"}, "source 'bad id!!': no such folder, and not a hub id"),
    ({"corpus": "missing.txt.gz"}, "corpus 'missing.txt.gz': no such file or folder"),
    ({"cores": "0"}, "cores 0: at least 1"),
    ({"seed": "-1"}, "seed -1: an integer from 0 to 4294967295 (2**32 - 1)"),
    ({"seed": str(2**32)}, f"seed {2**32}: an integer from 0 to 4294967295 (2**32 - 1)"),
])
def test_bad_source_corpus_cores_and_seed_are_named(here, capsys, options, message):
    code, err = cli(capsys, **options)
    assert code == 1 and message in err, err
    untouched(here)


# --- YAML
# -----------------------------------------------------------------------------------------------------------
def test_a_python_tag_in_a_param_is_refused_and_not_run(here, capsys):
    marker = here / "pwned"
    tag = f"!!python/object/apply:os.system ['{PWNED.format(marker)}']"
    code, err = cli(capsys, "--param", f"temperature={tag}")
    assert code == 2 and "Traceback" not in err
    assert "vocab-transfer: --param temperature: line 1: tag !!python/object/apply:os.system is not " \
           "allowed" in err
    assert not marker.exists()
    untouched(here)


def test_a_duplicate_key_in_a_param_is_refused(here, capsys):
    code, err = cli(capsys, "--param", "temperature={a: 1, a: 2}")
    assert code == 2 and "--param temperature: line 1: key 'a' given twice in one mapping" in err


def test_a_config_file_with_a_key_given_twice_names_the_file_key_and_line(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text("seed: 1\nmethods:\n  focus:\n    kind: focus\nfocus_note: x\n"
                      "methods:\n  wechsel: {kind: wechsel}\n")
    with pytest.raises(ConfigError, match=rf"--configfile {config}: line 6: key 'methods' given twice in one "
                                          r"mapping "
                                          r"\(first at line 2\)"):
        check_configfiles([str(config)])


def test_a_nested_duplicate_key_is_named_with_its_line(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text("methods:\n  focus:\n    kind: focus\n    temperature: 0.1\n    temperature: 0.2\n")
    with pytest.raises(ConfigError, match=r"line 5: key 'temperature' given twice in one mapping "
                                          r"\(first at line 4\)"):
        check_configfiles([str(config)])
    # a merge key may be overridden, as YAML means it; JSON that YAML cannot read (tabs) is Snakemake's to
    # read
    config.write_text("base: &b {kind: focus, k: 1}\nmethods:\n  focus:\n    <<: *b\n    k: 2\n")
    check_configfiles([str(config)])
    config.write_text('{\n\t"seed": 1\n}\n')
    check_configfiles([str(config)])


def test_a_python_tag_in_a_config_file_is_named_and_not_run(tmp_path):
    marker = tmp_path / "pwned"
    config = tmp_path / "config.yaml"
    config.write_text(f"seed: 1\nmethods: !!python/object/apply:os.system ['{PWNED.format(marker)}']\n")
    with pytest.raises(ConfigError, match=rf"--configfile {config}: line 2: tag "
                                          r"!!python/object/apply:os.system is "
                                          "not allowed"):
        check_configfiles([str(config)])
    assert not marker.exists()
    with pytest.raises(YamlError, match="x.yaml: line 1: tag !!python/name:os.system is not allowed"):
        load_yaml("a: !!python/name:os.system ''\n", "x.yaml")


def test_a_study_config_with_a_key_given_twice_is_named(tmp_path, monkeypatch):
    from vocab_transfer.workflow.studies import load_studies

    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.yaml").write_text("study: a\nseed: 1\nseed: 2\n")
    with pytest.raises(ConfigError, match=r"studies\[0\]: a.yaml: line 3: key 'seed' given twice"):
        load_studies({"studies": ["a.yaml"]}, str(REPO))


# --- rebuild hints
# --------------------------------------------------------------------------------------------------
def written_in_run(run: Path, monkeypatch, outputs: bool) -> Path:
    """An artifact written as a job of a run in ``run`` (outside the repository) records it: the environment
    that rules/common.smk sets, with the API's config file inside the run directory; ``outputs``: the job is
    known."""
    run.mkdir()
    (run / "transfer.yaml").write_text(yaml.safe_dump({"seed": 0}))
    words = ["snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(run)]
    monkeypatch.setenv(artifacts.RERUN_ENV, json.dumps({"snakemake": words,
                                                        "configfiles": [str(run / "transfer.yaml")]}))
    target = run / "results" / "init" / "source" / "target" / "focus.safetensors"
    if outputs:
        job = type("Job", (), {"output": [os.path.relpath(target)]})()
        monkeypatch.setattr(artifacts, "snakemake_job", lambda: job)
    write_tensors({"embeddings": torch.zeros(2, 2)}, target)
    monkeypatch.undo()
    return target


@pytest.mark.parametrize("outputs", [True, False], ids=["job-outputs", "results-layout"])
def test_a_rebuild_hint_in_a_copied_run_directory_names_the_copy(tmp_path, monkeypatch, outputs):
    monkeypatch.chdir(tmp_path)
    target = written_in_run(tmp_path / "run", monkeypatch, outputs)
    monkeypatch.chdir(tmp_path)
    record = artifacts.read_manifest(target)["rerun"]
    assert record["configfiles"] == ["transfer.yaml"] and record["directory"] == str(tmp_path / "run")
    shutil.copytree(tmp_path / "run", tmp_path / "run2")
    shutil.move(tmp_path / "run", tmp_path / "moved")
    for run in (tmp_path / "run2", tmp_path / "moved"):
        copy = run / target.relative_to(tmp_path / "run")
        hint = artifacts.rerun_hint(copy)
        assert hint.startswith("rebuild it with: ")
        words = shlex.split(hint.removeprefix("rebuild it with: "))
        original = str(tmp_path / "run")
        assert not [w for w in words if w == original or w.startswith(original + os.sep)], hint
        assert words[words.index("--directory") + 1] == str(run)
        assert words[words.index("--configfile") + 1] == str(run / "transfer.yaml")
        assert words[words.index("--force") + 1] == "results/init/source/target/focus.safetensors"
        assert (run / words[words.index("--force") + 1]).is_file()

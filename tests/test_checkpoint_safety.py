"""Checkpoints that are damaged, planted or reached through links are refused before they are read or
written, and a stop signal leaves a checkpoint a rerun resumes from: the refinement (Token Distillation), the
trainers' ``Checkpoints`` (LAPT, fine-tuning) and :func:`vocab_transfer.io.remove_tree`. Real torch, real tiny
models."""

import json
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pandas as pd
import pytest
import torch

from vocab_transfer.checkpointing import EXIT_RESUME, CheckpointError, StopSignals
from vocab_transfer.data.corpus import write_corpus
from vocab_transfer.data.tokenizer import load_tokenizer, train_unigram_tokenizer
from vocab_transfer.io import UnsafePathError, remove_tree, write_tensors
from vocab_transfer.methods import TransferInputs, run_method
from vocab_transfer.source_model import build_xlmr_mlm, embedding_matrix
from vocab_transfer.training.runtime import Checkpoints

ROOT = Path(__file__).resolve().parent.parent
KW = dict(init="random", tokens=1500, lr=1e-2, batch_size=8, seq_len=64, device="cpu", checkpoint_every=2)


# --- a tiny refinement, its inputs on disk (a subprocess reads them too) ------------------------------------
@pytest.fixture(scope="module")
def refinement(tmp_path_factory, swahili_verses, sw_tokenizer):
    root = tmp_path_factory.mktemp("refine")
    model = build_xlmr_mlm(sw_tokenizer, hidden_size=16, num_layers=1, num_heads=2, intermediate_size=32,
                           max_position_embeddings=128, seed=0, dropout=0.0)
    model.save_pretrained(root / "source")
    sw_tokenizer.save_pretrained(root / "source")
    train_unigram_tokenizer(swahili_verses[1000:], 300, show_progress=False).save_pretrained(root / "target")
    write_corpus(pd.DataFrame({"doc_id": [str(i) for i in range(200)], "text": swahili_verses[:200]}),
                 root / "train.parquet")
    target = load_tokenizer(str(root / "target"))
    full = embedding_matrix(model)
    rows = full[torch.randint(len(full), (len(target),), generator=torch.Generator().manual_seed(0))]
    write_tensors({"embeddings": rows[:, :-1].contiguous(), "output_bias": rows[:, -1].contiguous()},
                  root / "base.safetensors")
    pd.DataFrame({"provenance": ["mapped"] * len(target), "n_sources": [1] * len(target)}).to_parquet(
        root / "prov.parquet")
    whole = run_method("token_distillation", make_inputs(root), seed=3, **KW)
    return root, whole


def make_inputs(root: Path, checkpoint_dir: Path | None = None) -> TransferInputs:
    from safetensors.torch import load_file

    from vocab_transfer.source_model import load_source_model

    target = load_tokenizer(str(root / "target"))
    return TransferInputs(source_matrix=embedding_matrix(load_source_model(str(root / "source"))),
                          target_vocab_size=len(target), overlap=pd.DataFrame(),
                          source_tokenizer=load_tokenizer(str(root / "source")), target_tokenizer=target,
                          base_init=load_file(root / "base.safetensors"),
                          base_provenance=pd.read_parquet(root / "prov.parquet"),
                          train_text=str(root / "train.parquet"), source_model_dir=str(root / "source"),
                          checkpoint_dir=str(checkpoint_dir) if checkpoint_dir else None)


def interrupted(root: Path, ckpt: Path, monkeypatch, at: int = 2) -> Path:
    """A refinement stopped right after its checkpoint of step ``at``: that checkpoint's folder."""
    from vocab_transfer.methods import token_distillation as td

    class Killed(Exception):
        pass

    save = td.Checkpoint.save

    def save_then_die(self, *args, **counters):
        save(self, *args, **counters)
        if counters["step"] == at:
            raise Killed

    with monkeypatch.context() as m:
        m.setattr(td.Checkpoint, "save", save_then_die)
        with pytest.raises(Killed):
            run_method("token_distillation", make_inputs(root, ckpt), seed=3, **KW)
    return ckpt / f"step-{at:08d}"


def same_size_edit(path: Path, offset: int = -1) -> None:
    """Flip one byte of ``path`` and give it back its modification time: only its hash tells."""
    st = path.stat()
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


class Bomb:
    """Unpickling it creates ``marker``: a stand-in for any code a planted pickle would run."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


# --- the refinement's checkpoint ----------------------------------------------------------------------------
def test_a_planted_pickle_state_is_never_unpickled(refinement, tmp_path):
    root, _ = refinement
    ckpt, marker = tmp_path / "ckpt", tmp_path / "ran"
    ckpt.mkdir()
    (ckpt / "state.pt").write_bytes(pickle.dumps(Bomb(marker)))
    with pytest.raises(CheckpointError, match=r"state.pt is in the pickle format of older versions, which is "
                                              r"never loaded .* delete .*ckpt to start the refinement over"):
        run_method("token_distillation", make_inputs(root, ckpt), seed=3, **KW)
    assert not marker.exists() and (ckpt / "state.pt").is_file()  # not run, and left for a person to look at


def test_the_package_never_unpickles_beyond_tensors():
    found = [f"{f}:{i}" for f in (ROOT / "vocab_transfer").rglob("*.py")
             for i, line in enumerate(f.read_text().splitlines(), 1) if "weights_only=False" in line]
    assert found == []


def test_a_refinement_checkpoint_is_safetensors_json_and_a_manifest(refinement, tmp_path, monkeypatch):
    from safetensors.torch import load_file

    root, _ = refinement
    path = interrupted(root, tmp_path / "ckpt", monkeypatch)
    assert sorted(p.name for p in path.iterdir()) == [".manifest.json", "state.json", "tensors.safetensors"]
    state = json.loads((path / "state.json").read_text())
    assert state["step"] == 2 and state["drawn"] >= 2 and len(state["curve"]) == 2
    tensors = load_file(path / "tensors.safetensors")
    assert tensors["generator"].dtype == torch.uint8 and {"param.0", "opt.0.exp_avg", "opt.0.exp_avg_sq",
                                                          "opt.0.step"} <= set(tensors)
    manifest = json.loads((path / ".manifest.json").read_text())
    assert set(manifest["files"]) == {"state.json", "tensors.safetensors"}


def test_a_tensor_byte_changed_in_place_is_refused(refinement, tmp_path, monkeypatch):
    root, _ = refinement
    path = interrupted(root, tmp_path / "ckpt", monkeypatch)
    same_size_edit(path / "tensors.safetensors")
    with pytest.raises(CheckpointError, match=r"refinement checkpoint .*step-00000002 does not match its "
                                              r"manifest \(.*tensors.safetensors changed \(same size, other "
                                              r"content\)\).*delete .*ckpt"):
        run_method("token_distillation", make_inputs(root, tmp_path / "ckpt"), seed=3, **KW)


def test_a_refinement_checkpoint_without_its_manifest_is_refused(refinement, tmp_path, monkeypatch):
    root, _ = refinement
    path = interrupted(root, tmp_path / "ckpt", monkeypatch)
    (path / ".manifest.json").unlink()
    with pytest.raises(CheckpointError, match=r"step-00000002 has no manifest \(.manifest.json\), so it is "
                                              r"not read"):
        run_method("token_distillation", make_inputs(root, tmp_path / "ckpt"), seed=3, **KW)


def test_an_edited_json_state_is_refused(refinement, tmp_path, monkeypatch):
    root, _ = refinement
    path = interrupted(root, tmp_path / "ckpt", monkeypatch)
    state = json.loads((path / "state.json").read_text())
    (path / "state.json").write_text(json.dumps({**state, "step": 1000}))
    with pytest.raises(CheckpointError, match=r"state.json changed \(\d+ bytes when written, \d+ now\)"):
        run_method("token_distillation", make_inputs(root, tmp_path / "ckpt"), seed=3, **KW)


def test_a_file_added_to_a_checkpoint_is_refused(refinement, tmp_path, monkeypatch):
    root, _ = refinement
    path = interrupted(root, tmp_path / "ckpt", monkeypatch)
    (path / "extra.safetensors").write_bytes(b"x")
    with pytest.raises(CheckpointError, match=r"extra.safetensors was added"):
        run_method("token_distillation", make_inputs(root, tmp_path / "ckpt"), seed=3, **KW)


def test_a_checkpoint_folder_that_is_a_link_is_refused_before_any_step(refinement, tmp_path, monkeypatch):
    from vocab_transfer.methods import token_distillation as td

    root, _ = refinement
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine")
    (tmp_path / "ckpt").symlink_to(outside, target_is_directory=True)
    steps = []
    monkeypatch.setattr(td.torch.optim.AdamW, "step", lambda self, *a, **k: steps.append(1))
    with pytest.raises(UnsafePathError, match=r"refinement checkpoint folder .*ckpt: .*ckpt is a symbolic "
                                              r"link"):
        run_method("token_distillation", make_inputs(root, tmp_path / "ckpt"), seed=3, **KW)
    assert steps == [] and [p.name for p in outside.iterdir()] == ["keep.txt"]
    assert (outside / "keep.txt").read_text() == "mine"


def test_a_link_inside_the_checkpoint_folder_is_refused(refinement, tmp_path):
    root, _ = refinement
    outside = tmp_path / "outside"
    (outside / "step-00000099").mkdir(parents=True)
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "step-00000099").symlink_to(outside / "step-00000099", target_is_directory=True)
    with pytest.raises(UnsafePathError, match=r"step-00000099 is a symbolic link"):
        run_method("token_distillation", make_inputs(root, tmp_path / "ckpt"), seed=3, **KW)
    assert (outside / "step-00000099").is_dir() and (tmp_path / "ckpt" / "step-00000099").is_symlink()


def test_sigterm_to_a_refinement_leaves_a_checkpoint_and_the_rerun_is_bit_identical(refinement, tmp_path):
    """A refinement process sent SIGTERM in its third step (of five) saves that step and exits 75; a rerun
    resumes there and ends with the rows and loss curve of the uninterrupted run, and removes the
    checkpoint."""
    root, whole = refinement
    ckpt = tmp_path / "ckpt"
    child = textwrap.dedent(f"""
        import os, signal, sys
        sys.path.insert(0, {str(ROOT / "tests")!r})
        import torch
        from test_checkpoint_safety import KW, make_inputs
        from pathlib import Path
        from vocab_transfer.methods import run_method
        real, calls = torch.nn.functional.mse_loss, []
        def loss_then_signal(*a, **k):
            calls.append(1)
            if len(calls) == 3:
                os.kill(os.getpid(), signal.SIGTERM)
            return real(*a, **k)
        torch.nn.functional.mse_loss = loss_then_signal
        run_method("token_distillation", make_inputs(Path({str(root)!r}), Path({str(ckpt)!r})), seed=3, **KW)
        """)
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == EXIT_RESUME, (len(whole.extra["refine_loss"]), proc.stderr[-3000:])
    assert "rerun to resume" in proc.stderr
    assert [p.name for p in ckpt.iterdir()] == ["step-00000003"]  # the signalled step, not a periodic one
    resumed = run_method("token_distillation", make_inputs(root, ckpt), seed=3, **KW)
    assert torch.equal(resumed.matrix, whole.matrix)
    assert torch.equal(resumed.extra["refine_loss"], whole.extra["refine_loss"])
    assert not ckpt.exists()


def test_sigusr1_in_process_checkpoints_and_exits_75(refinement, tmp_path, monkeypatch):
    from vocab_transfer.methods import token_distillation as td

    root, whole = refinement
    real, calls = td.torch.nn.functional.mse_loss, []

    def loss_then_signal(*a, **k):
        calls.append(1)
        if len(calls) == 1:
            os.kill(os.getpid(), signal.SIGUSR1)
        return real(*a, **k)

    with monkeypatch.context() as m:
        m.setattr(td.torch.nn.functional, "mse_loss", loss_then_signal)
        with pytest.raises(SystemExit) as exit_:
            run_method("token_distillation", make_inputs(root, tmp_path / "ckpt"), seed=3, **KW)
    assert exit_.value.code == EXIT_RESUME and signal.getsignal(signal.SIGUSR1) is signal.SIG_DFL
    assert [p.name for p in (tmp_path / "ckpt").iterdir()] == ["step-00000001"]
    resumed = run_method("token_distillation", make_inputs(root, tmp_path / "ckpt"), seed=3, **KW)
    assert torch.equal(resumed.matrix, whole.matrix)


# --- the trainers' Checkpoints ------------------------------------------------------------------------------
def saved_checkpoints(root: Path, steps=(1, 2, 3), keep=2) -> Checkpoints:
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
    ckpt = Checkpoints(root, keep=keep, what="LAPT")
    for step in steps:
        model(torch.randn(2, 4)).sum().backward()
        opt.step()
        ckpt.save(step, model, opt, sched, None, {"step": step, "config": {"lr": 1e-3}})
    return ckpt


def test_trainer_checkpoints_carry_a_manifest_and_resume_from_the_newest(tmp_path):
    ckpt = saved_checkpoints(tmp_path / "c")
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == ["step-00000002", "step-00000003"]
    assert (tmp_path / "c" / "step-00000003" / ".manifest.json").is_file()
    path, state = ckpt.resume({"lr": 1e-3})
    assert path.name == "step-00000003" and state["step"] == 3
    model = torch.nn.Linear(4, 3)
    Checkpoints.restore_model(path, model, torch.device("cpu"))


def test_a_trainer_checkpoint_with_model_pt_changed_in_place_is_refused(tmp_path):
    ckpt = saved_checkpoints(tmp_path / "c")
    same_size_edit(tmp_path / "c" / "step-00000003" / "model.pt", offset=-30)
    with pytest.raises(CheckpointError, match=r"LAPT checkpoint .*step-00000003 does not match its manifest "
                                              r"\(.*model.pt changed \(same size, other content\)\), so it "
                                              r"is not read; delete .*c to start the run over"):
        ckpt.resume({"lr": 1e-3})


def test_a_trainer_checkpoint_without_a_manifest_is_refused_and_not_loaded(tmp_path):
    ckpt = saved_checkpoints(tmp_path / "c")
    (tmp_path / "c" / "step-00000003" / ".manifest.json").unlink()
    with pytest.raises(CheckpointError, match=r"LAPT checkpoint .*step-00000003 has no manifest"):
        ckpt.resume({"lr": 1e-3})
    with pytest.raises(CheckpointError, match=r"has no manifest"):
        Checkpoints.restore_model(tmp_path / "c" / "step-00000003", torch.nn.Linear(4, 3),
                                  torch.device("cpu"))


def test_a_trainer_state_json_edited_is_refused(tmp_path):
    ckpt = saved_checkpoints(tmp_path / "c")
    path = tmp_path / "c" / "step-00000003" / "state.json"
    path.write_text(path.read_text().replace('"step": 3', '"step": 9'))
    with pytest.raises(CheckpointError, match=r"state.json changed \(same size, other content\)"):
        ckpt.resume({"lr": 1e-3})


def test_pruning_never_follows_a_step_link(tmp_path):
    """A ``step-*`` link among the checkpoints (to a folder outside) is refused before anything is written,
    and pruning, asked to delete it, deletes nothing."""
    outside = tmp_path / "outside" / "step-00000000"
    outside.mkdir(parents=True)
    (outside / "state.json").write_text("{}")
    (outside / "model.pt").write_text("precious")
    saved_checkpoints(tmp_path / "c", steps=(1,))
    (tmp_path / "c" / "step-00000000").symlink_to(outside, target_is_directory=True)
    with pytest.raises(UnsafePathError, match=r"LAPT checkpoint folder .*c: .*step-00000000 is a symbolic "
                                              r"link"):
        saved_checkpoints(tmp_path / "c", steps=(2, 3), keep=1)
    assert not (tmp_path / "c" / "step-00000002").exists()
    with pytest.raises(UnsafePathError, match=r"folder to delete .*step-00000000 is a symbolic link"):
        remove_tree(tmp_path / "c" / "step-00000000", within=tmp_path / "c")
    assert (outside / "model.pt").read_text() == "precious"
    assert (tmp_path / "c" / "step-00000000").is_symlink()


def test_remove_tree_refuses_links_and_paths_outside_its_root_and_never_follows_inner_links(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine")
    (tmp_path / "link").symlink_to(outside, target_is_directory=True)
    with pytest.raises(UnsafePathError, match=r"link is a symbolic link"):
        remove_tree(tmp_path / "link")
    (tmp_path / "run" / "checkpoints").mkdir(parents=True)
    with pytest.raises(UnsafePathError, match=r"is not under"):
        remove_tree(tmp_path / "run" / "checkpoints" / ".." / ".." / "outside", within=tmp_path / "run")
    (tmp_path / "run" / "checkpoints" / "inner").symlink_to(outside, target_is_directory=True)
    remove_tree(tmp_path / "run" / "checkpoints", within=tmp_path / "run")  # the link goes, not its target
    assert not (tmp_path / "run" / "checkpoints").exists() and (outside / "keep.txt").read_text() == "mine"


def test_a_lapt_checkpoint_root_that_is_a_link_is_refused_before_training(tmp_path, sw_tokenizer,
                                                                          swahili_verses):
    from vocab_transfer.eval.mlm import pack_texts
    from vocab_transfer.training.lapt import LaptConfig, train

    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "c").symlink_to(outside, target_is_directory=True)
    blocks = (pack_texts(swahili_verses[:100], sw_tokenizer, 32),
              pack_texts(swahili_verses[100:120], sw_tokenizer, 32))
    cfg = LaptConfig.parse(dict(steps=4, batch_size=8, seq_len=32, eval_every=2, eval_sequences=8,
                                    checkpoint_every=2, seed=3, threads=1))
    model = build_xlmr_mlm(sw_tokenizer, seed=0, hidden_size=16, num_layers=1, num_heads=2,
                           intermediate_size=32, max_position_embeddings=32)
    with pytest.raises(UnsafePathError, match=r"LAPT checkpoint folder .*c: .*c is a symbolic link"):
        train(model, sw_tokenizer, *blocks, cfg, checkpoint_dir=tmp_path / "c")
    assert list(outside.iterdir()) == []
    # a real LAPT checkpoint whose model.pt is changed afterwards is refused at resume, naming what to delete
    train(model, sw_tokenizer, *blocks, cfg, checkpoint_dir=tmp_path / "real", stop_after=2)
    same_size_edit(tmp_path / "real" / "step-00000002" / "model.pt", offset=-20)
    with pytest.raises(CheckpointError, match=r"LAPT checkpoint .*step-00000002 does not match .*delete "
                                              r".*real"):
        train(model, sw_tokenizer, *blocks, cfg, checkpoint_dir=tmp_path / "real")


# --- fine-tuning --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ner(tmp_path_factory, swahili_verses, sw_tokenizer):
    path = tmp_path_factory.mktemp("ft") / "model"
    build_xlmr_mlm(sw_tokenizer, seed=0, dropout=0.1, hidden_size=16, num_layers=1, num_heads=2,
                   intermediate_size=32, max_position_embeddings=64).save_pretrained(path)
    sw_tokenizer.save_pretrained(path)
    rows = [{"id": str(i), "tokens": v.split()[:20], "tags": ["B-CAP" if w[:1].isupper() else "O"
                                                               for w in v.split()[:20]]}
            for i, v in enumerate(swahili_verses[:200])]
    df = pd.DataFrame(rows)
    return path, {"train": df[:160].reset_index(drop=True), "dev": df[160:180].reset_index(drop=True),
                  "test": df[180:].reset_index(drop=True)}


def finetune_run(ner, sw_tokenizer, folder: Path, stop_after=None):
    from vocab_transfer.training.finetune import FinetuneConfig, finetune, load_task_model, task_labels

    path, data = ner
    labels = task_labels("ner", data)
    torch.manual_seed(1)
    model = load_task_model("ner", str(path), labels)
    cfg = FinetuneConfig.parse({"epochs": 1, "lr": 2e-3, "batch_size": 16, "seq_len": 32,
                                    "eval_fraction": 0.5, "threads": 1})
    return finetune(model, sw_tokenizer, "ner", data, labels, cfg, seed=1, checkpoint_dir=folder,
                    stop_after=stop_after)


def test_sigterm_to_fine_tuning_saves_a_checkpoint_and_the_rerun_ends_as_the_uninterrupted_run(
        ner, sw_tokenizer, tmp_path, monkeypatch):
    from vocab_transfer.training import finetune as ft

    ref, ref_history = finetune_run(ner, sw_tokenizer, tmp_path / "ref")
    real, calls = ft.optimizer_step, []

    def step_then_signal(*a, **k):
        real(*a, **k)
        calls.append(1)
        if len(calls) == 3:  # between the evaluations (every 5 of 10 steps): only the signal saves
            os.kill(os.getpid(), signal.SIGTERM)

    with monkeypatch.context() as m:
        m.setattr(ft, "optimizer_step", step_then_signal)
        with pytest.raises(SystemExit) as exit_:
            finetune_run(ner, sw_tokenizer, tmp_path / "cut")
    assert exit_.value.code == EXIT_RESUME and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    assert [p.name for p in (tmp_path / "cut").glob("step-*")] == ["step-00000003"]
    assert (tmp_path / "cut" / "step-00000003" / ".manifest.json").is_file()
    scores, history = finetune_run(ner, sw_tokenizer, tmp_path / "cut")
    assert scores == ref
    pd.testing.assert_frame_equal(history, ref_history)


def test_fine_tunings_selected_weights_are_checked_before_they_are_loaded(ner, sw_tokenizer, tmp_path,
                                                                          monkeypatch):
    from vocab_transfer.training import finetune as ft

    finetune_run(ner, sw_tokenizer, tmp_path / "cut", stop_after=6)  # best.pt of step 5, checkpoint of step 6
    best = tmp_path / "cut" / "best.pt"
    assert (tmp_path / "cut" / ".best.pt.manifest.json").is_file()
    same_size_edit(best, offset=-40)
    real = ft.evaluate
    monkeypatch.setattr(ft, "evaluate", lambda *a, **k: {m: -1.0 for m in real(*a, **k)})  # no better later
    with pytest.raises(CheckpointError, match=r"fine-tuning checkpoint .*best.pt does not match its "
                                              r"manifest"):
        finetune_run(ner, sw_tokenizer, tmp_path / "cut")


def test_stop_signals_outside_the_main_thread_change_nothing():
    before, seen = signal.getsignal(signal.SIGTERM), []

    def body():
        with StopSignals() as stop:
            seen.append(stop.received)

    t = threading.Thread(target=body)
    t.start()
    t.join()
    assert seen == [None] and signal.getsignal(signal.SIGTERM) is before


def test_shutil_is_not_used_to_delete_checkpoints():
    """Every deletion in the checkpoint classes goes through remove_tree (links refused, never followed)."""
    for f in ("vocab_transfer/methods/token_distillation.py", "vocab_transfer/training/runtime.py"):
        assert "rmtree" not in (ROOT / f).read_text() and "shutil" not in (ROOT / f).read_text(), f

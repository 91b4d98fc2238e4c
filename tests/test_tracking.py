"""Live curves (vocab_transfer.tracking): TensorBoard event files read back with TensorBoard's own reader,
a resumed run's purge of what its killed attempt logged, W&B offline runs, and the named errors of
report_to."""

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from vocab_transfer.tracking import Tracker, check_report_to, mfu


def scalars(run_dir) -> dict[str, list[tuple[int, float]]]:
    events = EventAccumulator(str(run_dir / "tensorboard"))
    events.Reload()
    return {tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


def test_tensorboard_events_hold_the_logged_curve_and_a_resume_replaces_the_killed_attempts_tail(tmp_path):
    with Tracker(["tensorboard"], tmp_path, name="run", config={"lr": 0.001}) as t:
        for step in (0, 10, 20, 30):  # the killed attempt logged up to 30; its checkpoint is at 20
            t.log(step, {"train/loss": 5.0 - step / 10, "heldout/loss": 6.0 - step / 10, "train/mfu": None})
    with Tracker(["tensorboard"], tmp_path, name="run", start_step=21) as t:
        t.log(30, {"train/loss": 1.5, "heldout/loss": float("nan")})
        t.log(40, {"train/loss": 1.0, "heldout/loss": 2.0})
    got = scalars(tmp_path)
    assert got["train/loss"] == [(0, 5.0), (10, 4.0), (20, 3.0), (30, 1.5), (40, 1.0)]
    assert got["heldout/loss"] == [(0, 6.0), (10, 5.0), (20, 4.0), (40, 2.0)]  # NaN left out; 30 purged
    assert "train/mfu" not in got


def test_a_fresh_start_purges_an_earlier_runs_events(tmp_path):
    with Tracker(["tensorboard"], tmp_path, name="run") as t:
        t.log(5, {"train/loss": 9.0})
    with Tracker(["tensorboard"], tmp_path, name="run") as t:
        t.log(3, {"train/loss": 1.0})
    assert scalars(tmp_path)["train/loss"] == [(3, 1.0)]


def test_wandb_offline_writes_a_run_that_a_resumed_job_continues(tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    ids = []
    for start in (0, 10):
        with Tracker(["wandb"], tmp_path, name="focus", config={"lr": 0.001}, start_step=start) as t:
            t.log(start + 5, {"train/loss": 2.0})
            ids.append(t.wandb.id)
    assert ids[0] == ids[1]  # the same run: the id comes from the run folder
    runs = sorted((tmp_path / "wandb").glob(f"offline-run-*-{ids[0]}"))
    assert runs and all(any(r.glob("*.wandb")) for r in runs)  # `wandb sync` uploads these (one per second)


@pytest.mark.parametrize("value,message", [
    (["tensorbord"], "'tensorbord' is not one of ['tensorboard', 'wandb']"),
    ("mlflow", "'mlflow' is not one of"),
])
def test_report_to_names_an_unknown_value(value, message):
    with pytest.raises(ValueError,
                       match="lapt.training.report_to: " + message.replace("[", r"\[").replace("]", r"\]")):
        check_report_to(value, "lapt.training.report_to")


def test_report_to_names_a_missing_package(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "wandb" else real(name, *a))
    with pytest.raises(ValueError, match="finetune.training.report_to: 'wandb' needs the 'wandb' package, "
                                         "which is not installed"):
        check_report_to(["tensorboard", "wandb"], "finetune.training.report_to")
    assert check_report_to([], "x") == [] and check_report_to(None, "x") == []


def test_mfu_is_model_flops_over_the_peak_and_none_without_one():
    assert mfu(1000.0, 6e9, 989e12) == pytest.approx(6e12 / 989e12)
    assert mfu(1000.0, 6e9, 989e12, processes=2) == pytest.approx(3e12 / 989e12)
    assert mfu(1000.0, 6e9, None) is None

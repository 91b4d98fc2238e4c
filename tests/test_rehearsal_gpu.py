"""The rehearsal takes the GPU path of a cluster run: the shipped profile, placeholders filled in or not,
becomes one for the local SLURM with its requests kept (GPU partition, accounts, gpu_model, signals); trainers
keep asking for GPUs (at most rehearsal.gpus) and LAPT starts torchrun with that many processes, which stop
together after the same step on SLURM's signal and resume bit-identically; accounts missing on a cluster that
enforces them are named."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from vocab_transfer.workflow.cluster import (
    check_accounts,
    check_submission,
    cluster_accounts,
    gpu_type,
    local_profile,
)

REPO = Path(__file__).resolve().parents[1]
SHIPPED = REPO / "profiles" / "slurm" / "config.yaml"
GRES = {"cpu": "(null)", "gpu": "gpu:a100:4"}.get


def filled(text: str, gpu_model: str | None = "h100") -> str:
    """The shipped profile as docs/cluster.md says to fill it in (and gpu_model uncommented)."""
    for placeholder, value in {"<cpu-partition>": "standard", "<gpu-partition>": "gpu-a100",
                               "<cpu-account>": "p123", "<gpu-account>": "p123-gpu"}.items():
        text = text.replace(placeholder, value)
    return text.replace("# gpu_model: a100", f"gpu_model: {gpu_model}") if gpu_model else text


@pytest.mark.parametrize("fill", [False, True], ids=["placeholders", "filled"])
def test_local_profile_keeps_the_requests_with_the_local_values(tmp_path, fill):
    shipped = tmp_path / "config.yaml"
    shipped.write_text(filled(SHIPPED.read_text()) if fill else SHIPPED.read_text())
    local_profile(shipped, tmp_path / "local", cpus=1, mem_mb=3000, signal_s=90, local_gpu_type="a100")
    text = (tmp_path / "local" / "config.yaml").read_text()
    profile = yaml.safe_load(text)
    default, lapt = profile["default-resources"], profile["set-resources"]["train_lapt"]
    assert (default["slurm_partition"], default["slurm_account"]) == ("cpu", "rehearsal-cpu")
    assert (lapt["slurm_partition"], lapt["slurm_account"]) == ("gpu", "rehearsal-gpu")
    assert (lapt["slurm_extra"] == "'--signal=TERM@90'" and lapt["cpus_per_task"] == 1
            and lapt["mem_mb"] == 3000)
    for rule, resources in profile["set-resources"].items():
        assert resources["slurm_partition"] == "gpu" and resources["slurm_account"] == "rehearsal-gpu", rule
        assert resources.get("gpu_model") == ("a100" if fill else None), rule
    assert profile["retries"] == 2 and profile["executor"] == "slurm"
    # a job's CPUs follow its threads, at most one here: a bundle of four 4-thread jobs fits the 8-CPU node
    assert default["cpus_per_task"] == "min(threads, 1)"
    assert "<" not in "".join(line for line in text.splitlines() if not line.startswith("#"))  # none left
    if fill:
        assert ("#   gpu_model 'h100' -> 'a100'" in text
                and "#   slurm_account 'p123-gpu' -> 'rehearsal-gpu'" in text)


def test_local_profile_drops_gpu_model_for_untyped_gpus(tmp_path):
    shipped = tmp_path / "config.yaml"
    shipped.write_text(filled(SHIPPED.read_text(), "a100"))
    local_profile(shipped, tmp_path / "local", local_gpu_type=lambda: None)
    profile = yaml.safe_load((tmp_path / "local" / "config.yaml").read_text())
    assert all("gpu_model" not in r for r in profile["set-resources"].values())
    assert "gpu_model 'a100' dropped" in (tmp_path / "local" / "config.yaml").read_text()


def test_gpu_type_of_sinfo():
    assert gpu_type("gpu:a100:4") == "a100" and gpu_type("gpu:a100:4(S:0)") == "a100"
    assert gpu_type("gpu:4") is None and gpu_type("(null)") is None and gpu_type(None) is None


def test_gpus_on_a_partition_without_them_are_named_before_submitting():
    problems = check_submission("slurm", [("train_lapt", {"slurm_partition": "cpu", "gpu": 2,
                                                          "slurm_account": "a"})], gres=GRES,
                                accounts=lambda: None)
    assert problems == ["profiles/slurm/config.yaml: rule train_lapt asks for 2 GPU(s) on partition 'cpu', "
                        "whose nodes have none (sinfo -p cpu -o %G: (null)); set its "
                        "slurm_partition to a GPU partition"]


def test_accounts_are_checked_where_the_cluster_enforces_them():
    jobs = [("prepare_corpus", {"slurm_partition": "cpu"}),
            ("train_lapt", {"slurm_account": "p999", "gpu": 2}), ("finetune", {"slurm_account": "'p123'"})]
    problems = check_accounts(jobs, "associations,limits", {"p123"})
    assert problems == [
        "profiles/slurm/config.yaml: rules prepare_corpus have no slurm_account, but this cluster enforces "
        "accounts (AccountingStorageEnforce=associations,limits): set slurm_account under default-resources "
        "/ set-resources (accounts: sacctmgr show assoc user=$USER format=account,partition)",
        "profiles/slurm/config.yaml: slurm_account 'p999' (rules train_lapt) has no association for this "
        "user on this cluster (sacctmgr lists: p123); replace it (accounts: sacctmgr show assoc user=$USER "
        "format=account,partition)"]
    assert check_accounts(jobs, "none", None) == []  # no enforcement: any account, or none, is taken
    assert len(check_accounts(jobs, "associations", None)) == 1  # no sacctmgr answer: only the missing one
    through = check_submission("slurm", jobs, gres=GRES, accounts=lambda: ("associations", {"p123"}))
    assert len(through) == 2 and check_submission("local", jobs, accounts=lambda: ("qos", set())) == []


@pytest.mark.skipif(shutil.which("scontrol") is None, reason="needs the local SLURM")
def test_the_local_cluster_enforces_no_accounts_and_takes_any():
    """scripts/slurm runs without slurmdbd: nothing enforced, sacctmgr cannot list associations, `sbatch -A
    name` is taken (scripts/rehearse.sh's jobs carry the profile's accounts)."""
    enforce, known = cluster_accounts()
    assert enforce == "none" and known is None
    job = subprocess.run(["sbatch", "--parsable", "-A", "rehearsal-gpu", "-p", "gpu", "--gpus=1", "--time=1",
                          "--output=/dev/null", "--wrap=true"], capture_output=True, text=True, timeout=60)
    assert job.returncode == 0, job.stderr
    out = subprocess.run(["scontrol", "show", "job", job.stdout.strip()], capture_output=True,
                         text=True).stdout
    assert "Account=rehearsal-gpu" in out, out


def test_shrink_keeps_gpu_requests_and_interrupts_one_run():
    from vocab_transfer.workflow.config import check_config
    from vocab_transfer.workflow.rehearsal import interrupt_runtime, shrink

    config = yaml.safe_load((REPO / "configs" / "focus.yaml").read_text())
    config["rehearsal"] = {
        **yaml.safe_load((REPO / "configs/overlays/rehearsal.yaml").read_text())["rehearsal"]}
    cfg = check_config(shrink(config))
    assert cfg.lapt.gpus == 2 and cfg.lapt.launch_command() == "torchrun --standalone --nproc-per-node 2"
    assert cfg.finetune.gpus == 1 and cfg.finetune.launch_command() == "python"
    stop = cfg.rehearsal.interrupt
    assert (config["lapt"]["runs"]["focus"]["steps"] == stop.steps
            and stop.min_seconds > 60 * stop.runtime_min - 90)
    assert config["lapt"]["runs"]["focus"]["min_step_seconds"] == stop.min_seconds / stop.steps  # paced
    target = cfg.lapt.targets[0]
    assert interrupt_runtime(cfg, "focus", target) == cfg.rehearsal.interrupt.runtime_min
    assert (interrupt_runtime(cfg, "focus", "xx") is None
            and interrupt_runtime(cfg, "original", target) is None)


@pytest.mark.slow
@pytest.mark.parametrize("launcher", [False, True])
def test_torchrun_on_fake_gpus_stops_together_on_a_signal_and_resumes_bit_identically(
        tmp_path, sw_tokenizer, swahili_verses, launcher):
    """Two processes (gloo: CUDA_VISIBLE_DEVICES names GPUs, but there is no device) get SIGTERM as SLURM's
    --signal sends it, to every process of the job; they stop after the same step and checkpoint, and the
    rerun ends with the bytes of an uninterrupted two-process run. Through the rules' launcher (`launch
    --claim N --benchmark FILE -- torchrun ...` in a SLURM job) as well: it passes nothing on (torchrun gets
    the signal once, from SLURM), outlives torchrun and writes the job's benchmark file."""
    from test_lapt import cli, write_fixture

    model_dir = write_fixture(tmp_path, sw_tokenizer, swahili_verses)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "CUDA_VISIBLE_DEVICES": "0,1", "OMP_NUM_THREADS": "1"}
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]

    bench = tmp_path / "bench.tsv"

    def run(name):
        command = [*torchrun, *cli(tmp_path, model_dir, tmp_path / name, 60)[1:]]
        return command if not launcher or name == "ref" else [
            sys.executable, "-m", "vocab_transfer.training.launch", "--claim", "2", "--benchmark", str(bench),
            "--", *command]

    ref = subprocess.run(run("ref"), env=env, capture_output=True, text=True)
    assert ref.returncode == 0 and "process 1 of 2 (local rank 1, gloo)" in ref.stderr, ref.stderr[-3000:]
    if launcher:
        env["SLURM_JOB_ID"] = "1"  # one job, its GPUs to itself: the claim changes nothing
    proc = subprocess.Popen(run("signalled"), env=env, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    while proc.poll() is None and not any((tmp_path / "signalled.checkpoints").glob("step-*/state.json")):
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGTERM)  # every process, as SLURM signals every process of the step
    err = proc.communicate()[1]
    assert proc.returncode != 0 and err.count("rerun to resume") == 2, err[-3000:]
    assert "another process's signal" not in err or "received signal 15" in err
    again = subprocess.run(run("signalled"), env=env, capture_output=True, text=True)
    assert again.returncode == 0 and "resuming from" in again.stderr, again.stderr[-3000:]
    assert (tmp_path / "signalled" / "model.safetensors").read_bytes() == (
        tmp_path / "ref" / "model.safetensors").read_bytes()
    if launcher:
        header, row = bench.read_text().splitlines()
        assert dict(zip(header.split("\t"), row.split("\t"), strict=True))["max_rss"] != "0.00"


def test_the_reference_of_the_interrupted_run_is_its_command_unpaced_into_another_folder():
    from vocab_transfer.workflow.interrupted import reference_command

    words = ["exec", "python", "-m", "vocab_transfer.training.launch", "--claim", "2", "--", "torchrun",
             "--nproc-per-node", "2", "-m", "vocab_transfer.training.lapt", "--output", "results/m",
             "--config", json.dumps({"steps": 1200, "min_step_seconds": 0.125, "seed": 42}), "2>>",
             "logs/x.log"]
    cmd = reference_command(words, "/tmp/ref")
    assert (cmd[:3] == ["torchrun", "--nproc-per-node", "2"]
            and cmd[cmd.index("--output") + 1] == "/tmp/ref/output")
    assert json.loads(cmd[cmd.index("--config") + 1]) == {"steps": 1200, "min_step_seconds": 0, "seed": 42}
    assert "2>>" not in cmd


def test_a_job_slurm_has_forgotten_is_told_from_its_sbatch_log():
    """The rehearsal report's line on the interrupted run names each SLURM job's end: SLURM's state while it
    still lists the job, else what the job's sbatch log says (the composite checks long after MinJobAge)."""
    from vocab_transfer.workflow.interrupted import job_outcome

    listed = {"JobState": "FAILED", "RunTime": "00:01:32", "TimeLimit": "00:03:00"}
    assert job_outcome(7, listed, "") == "7 FAILED after 00:01:32 of 00:03:00"
    signalled = ("slurmstepd: error: *** STEP 7.0 CANCELLED ***\n"
                 "Will exit after finishing currently running jobs (scheduler).\nError in rule x:\n")
    assert job_outcome(7, {}, signalled) == "7 signalled (its sbatch log; SLURM no longer lists the job)"
    done = "Finished jobid: 0 (Rule: focus_train_lapt)\nElapsed time: 0:00:19\n"
    assert job_outcome(8, {}, done).startswith("8 completed ")
    assert job_outcome(9, {}, "Error in rule focus_train_lapt:\n").startswith("9 failed ")

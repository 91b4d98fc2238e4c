"""Before any job is submitted, the run's jobs are checked against the cluster
(vocab_transfer.workflow.cluster): an unfilled profile placeholder, GPUs asked of a partition without them,
multi-node LAPT without SLURM. The message names what to fix, and nothing runs."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from vocab_transfer.workflow.cluster import check_submission

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "tests" / "data" / "tiny_config.yaml"
GRES = {"cpu": "(null)", "gpu": "gpu:a100:4"}.get  # partition -> what `sinfo -o %G` prints; None: unknown

LAPT_JOB = ("train_lapt", {"slurm_partition": "gpu", "gpu": 2, "mem_mb": 64000})
CPU_JOB = ("prepare_corpus", {"slurm_partition": "cpu", "mem_mb": 4000})


def test_a_well_formed_submission_passes():
    assert check_submission("slurm", [LAPT_JOB, CPU_JOB, ("pack_heldout", {"tmpdir": "<TBD>"})],
                            gres=GRES) == []
    assert check_submission("local", [("train_lapt", {"gpu": 0})], gres=GRES) == []


def test_unfilled_placeholders_are_named_once_with_their_rules():
    jobs = [("prepare_corpus", {"slurm_partition": "<cpu-partition>", "slurm_account": "<cpu-account>",
                                "tmpdir": "<TBD>"}),  # Snakemake's own placeholder until the job runs
            ("train_tokenizer", {"slurm_partition": "<cpu-partition>"}), LAPT_JOB]
    problems = check_submission("slurm", jobs, gres=GRES)
    assert len(problems) == 2
    assert ("slurm_partition is still the placeholder '<cpu-partition>' (rules prepare_corpus, "
            "train_tokenizer)" in problems[1])
    assert all(p.startswith("profiles/slurm/config.yaml: ") for p in problems)


def test_gpus_on_a_partition_without_them_are_named():
    problems = check_submission("slurm", [("train_lapt", {"slurm_partition": "cpu", "gpu": 2}),
                                          ("finetune", {"slurm_partition": "cpu", "gres": "gpu:a100:1"})],
                                gres=GRES)
    assert problems == [
        "profiles/slurm/config.yaml: rule train_lapt asks for 2 GPU(s) on partition 'cpu', whose nodes have "
        "none (sinfo -p cpu -o %G: (null)); set its slurm_partition to a GPU partition",
        "profiles/slurm/config.yaml: rule finetune asks for 1 GPU(s) on partition 'cpu', whose nodes have "
        "none (sinfo -p cpu -o %G: (null)); set its slurm_partition to a GPU partition"]
    unknown = check_submission("slurm", [("train_lapt", {"slurm_partition": "gpus", "gpu": 1})],
                               gres=lambda p: "")
    assert unknown == ["profiles/slurm/config.yaml: rule train_lapt goes to partition 'gpus', which SLURM "
                       "does not know (sinfo -s lists the partitions)"]


def test_multi_node_lapt_needs_slurm():
    assert check_submission("local", [LAPT_JOB], lapt_nodes=2, gres=GRES) == [
        "lapt.nodes: 2 nodes per LAPT job need the SLURM executor (snakemake --profile slurm), not 'local'; "
        "set lapt.nodes: 1 to train on this machine"]
    assert check_submission("slurm", [LAPT_JOB], lapt_nodes=2, gres=GRES) == []


def run_snakemake(workdir, *args):
    return subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), *args],
                          cwd=workdir, capture_output=True, text=True,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=300)


def test_local_multi_node_run_stops_before_any_job(tmp_path):
    config = yaml.safe_load(TINY.read_text())
    config["lapt"]["nodes"] = 2
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    proc = run_snakemake(tmp_path, "--cores", "1", "results/lapt/tiny/sw/focus/curve.parquet",
                         "--configfile", "config.yaml")
    assert proc.returncode != 0
    assert ("nothing submitted" in proc.stderr
            and "lapt.nodes: 2 nodes per LAPT job need the SLURM executor" in proc.stderr)
    assert not (tmp_path / "results").exists()  # not even the corpus was prepared


@pytest.mark.slurm
@pytest.mark.skipif(shutil.which("sbatch") is None and not os.environ.get("CI"),
                    reason="needs the local SLURM")
def test_unfilled_profile_placeholder_submits_nothing(tmp_path):
    """The shipped profile as a user who did not edit it would run it, on the real local SLURM."""
    shutil.copy(TINY, tmp_path / "config.yaml")
    (tmp_path / "profile").mkdir()
    shutil.copy(REPO / "profiles" / "slurm" / "config.yaml", tmp_path / "profile" / "config.yaml")
    proc = run_snakemake(tmp_path, "--profile", str(tmp_path / "profile"), "results/corpus/sw/stats.json",
                         "--configfile", "config.yaml")
    assert proc.returncode != 0, proc.stderr[-2000:]
    out = proc.stdout + proc.stderr
    assert ("nothing submitted" in out
            and "slurm_partition is still the placeholder '<cpu-partition>'" in out), out[-3000:]
    assert "submitted with SLURM jobid" not in out and not (tmp_path / "results").exists()

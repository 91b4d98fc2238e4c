"""LAPT on two processes as two tasks of one job of the real local SLURM (scripts/slurm/start.sh): ``srun``
starts them without torchrun, the trainer joins them from SLURM's environment (gloo), and the run trains the
model that one process trains on the same global batch (tests/test_lapt.py's tolerance).

Without ``sbatch`` the test skips, except under CI (env var CI set), where it fails.
"""

import os
import shlex
import shutil
import subprocess

import pytest
from test_lapt import assert_same_training, cli, write_fixture

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

if shutil.which("sbatch") is None and not os.environ.get("CI"):
    pytest.skip("sbatch not found: SLURM is not installed (sudo bash scripts/slurm/install.sh && "
                "sudo bash scripts/slurm/start.sh)", allow_module_level=True)


def test_lapt_ddp_as_two_tasks_of_one_slurm_job(tmp_path, sw_tokenizer, swahili_verses):
    model_dir = write_fixture(tmp_path, sw_tokenizer, swahili_verses)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    one = subprocess.run(cli(tmp_path, model_dir, tmp_path / "one", 10, micro_batch_size=4), env=env,
                         capture_output=True, text=True)
    assert one.returncode == 0, one.stderr[-3000:]
    trainer = shlex.join(cli(tmp_path, model_dir, tmp_path / "ddp", 10))
    log = tmp_path / "job.log"
    job = subprocess.run(["sbatch", "--wait", "--parsable", "--job-name", "ddp-test", "--ntasks=2",
                          "--cpus-per-task=1", "--mem=3000", "--time=5", f"--output={log}",
                          f"--chdir={tmp_path}", f"--wrap=srun --ntasks=2 {trainer}"], env=env,
                         capture_output=True, text=True, timeout=420)
    text = log.read_text() if log.exists() else ""
    assert job.returncode == 0, f"{job.stderr}\n{text[-3000:]}"
    assert "process 0 of 2" in text and "process 1 of 2" in text, text[-3000:]
    assert_same_training(tmp_path, "one", "ddp")

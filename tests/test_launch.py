"""How training jobs start their processes: the launcher for a config's GPUs and nodes, the multi-node command line
(srun + torchrun with c10d rendezvous), and how a trainer finds its place among the processes."""

import os
import re
import shlex
import subprocess
import sys

import pytest
import yaml

from vocab_transfer.training.launch import first_node, launcher_args, launcher_command, multinode_command
from vocab_transfer.workflow.model import ModelError, load


@pytest.mark.parametrize("gpus, nodes, launcher, expected", [
    (0, 1, "auto", "python"),
    (1, 1, "auto", "python"),
    (4, 1, "auto", "torchrun --standalone --nproc-per-node 4"),
    (8, 2, "auto", "python -m vocab_transfer.training.launch --nodes 2 --gpus-per-node 8 --"),
    (4, 1, ["torchrun", "--standalone", "--nproc-per-node", "2"], "torchrun --standalone --nproc-per-node 2"),
    (4, 1, "python", "python"),
    (1, 1, ["accelerate", "launch", "--num_processes=1"], "accelerate launch --num_processes=1"),
])
def test_launcher_for_gpus_and_nodes(gpus, nodes, launcher, expected):
    assert launcher_command(gpus, nodes, launcher) == expected


@pytest.mark.parametrize("launcher, message", [
    ("torchrun --standalone --nproc-per-node 2", "as a list: ['torchrun', '--standalone', '--nproc-per-node', '2']"),
    ("python; touch PWNED", "is not a launcher"),
    ("bash", "is not a launcher"),
    (["bash", "-c", "touch PWNED"], "'bash', which is not a known launcher"),
    (["python", "$(touch PWNED)"], "['$(touch PWNED)'] are not options or values"),
    (["srun", "--comment=a b"], "['--comment=a b'] are not options or values"),
    (["accelerate", "-m"], "'accelerate launch'"),
    ([], "is not a launcher"),
])
def test_an_unknown_or_unsafe_launcher_is_refused(launcher, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        launcher_args(1, 1, launcher)
    config = yaml.safe_load(open("tests/data/tiny_config.yaml"))
    for section in ("lapt", "finetune", "zero_shot"):
        edited = {**config, section: {**config[section], "launcher": launcher}}
        with pytest.raises(ModelError, match=rf"config\.{section}\.launcher: .*{re.escape(message)}"):
            load(edited)


def test_config_picks_the_launcher():
    config = yaml.safe_load(open("tests/data/tiny_config.yaml"))
    config["lapt"].pop("launcher", None)
    config["lapt"].update(gpus=4, nodes=2)
    assert load(config).lapt.launch_command().startswith("python -m vocab_transfer.training.launch --nodes 2 ")


@pytest.mark.parametrize("nodelist, head", [("gpu[07-08]", "gpu07"), ("gpu[03,05-06],cpu1", "gpu03"),
                                            ("node12", "node12"), ("a100-[1-4]", "a100-1")])
def test_first_node_of_a_slurm_node_list(nodelist, head):
    assert first_node(nodelist) == head


def test_multinode_command_line():
    cmd = multinode_command(2, 4, "gpu07", 29533, "1234", ["-m", "vocab_transfer.training.lapt", "--model", "m"])
    assert cmd == ["srun", "--nodes=2", "--ntasks=2", "--ntasks-per-node=1", "--kill-on-bad-exit=1",
                   "torchrun", "--nnodes=2", "--nproc-per-node=4", "--rdzv-backend=c10d",
                   "--rdzv-endpoint=gpu07:29533", "--rdzv-id=1234", "-m", "vocab_transfer.training.lapt",
                   "--model", "m"]


def test_launch_cli_builds_the_command_inside_an_allocation():
    """What the rule's `exec <launcher> -m vocab_transfer.training.lapt ...` runs on the job's first node with two
    nodes of four GPUs: one torchrun per node, meeting at that node on a free port."""
    env = {**os.environ, "SLURM_JOB_NODELIST": "gpu[07-08]", "SLURM_JOB_ID": "1234"}
    out = subprocess.run([sys.executable, "-m", "vocab_transfer.training.launch", "--nodes", "2", "--gpus-per-node",
                          "4", "--dry-run", "--", "-m", "vocab_transfer.training.lapt", "--model", "m"], env=env,
                         capture_output=True, text=True, check=True).stdout
    cmd = shlex.split(out)
    endpoint = next(a for a in cmd if a.startswith("--rdzv-endpoint="))
    host, port = endpoint.removeprefix("--rdzv-endpoint=").split(":")
    assert host == "gpu07" and 1024 <= int(port) < 65536
    assert cmd[:cmd.index("torchrun")] == ["srun", "--nodes=2", "--ntasks=2", "--ntasks-per-node=1",
                                           "--kill-on-bad-exit=1"]
    assert cmd[-4:] == ["-m", "vocab_transfer.training.lapt", "--model", "m"] and "--rdzv-id=1234" in cmd


def test_launch_outside_an_allocation_is_refused():
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    proc = subprocess.run([sys.executable, "-m", "vocab_transfer.training.launch", "--nodes", "2", "--gpus-per-node",
                           "1", "--", "-m", "vocab_transfer.training.lapt"], env=env, capture_output=True, text=True)
    assert proc.returncode != 0 and "inside a SLURM allocation" in proc.stderr


def test_one_process_without_a_launcher(monkeypatch):
    from vocab_transfer.training.runtime import Distributed, init_distributed

    for key in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "SLURM_NTASKS", "SLURM_PROCID", "SLURM_STEP_ID"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("SLURM_NTASKS", "4")  # a batch script's environment, outside an srun step: not launched
    assert init_distributed() == Distributed(world=1, rank=0)

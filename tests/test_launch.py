"""How training jobs start their processes: the launcher for a config's GPUs and nodes, the multi-node command
line (srun + torchrun with c10d rendezvous), and how a trainer finds its place among the processes."""

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
    ("torchrun --standalone --nproc-per-node 2",
     "as a list: ['torchrun', '--standalone', '--nproc-per-node', '2']"),
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
    assert load(config).lapt.launch_command().startswith(
        "python -m vocab_transfer.training.launch --nodes 2 ")


@pytest.mark.parametrize("nodelist, head", [("gpu[07-08]", "gpu07"), ("gpu[03,05-06],cpu1", "gpu03"),
                                            ("node12", "node12"), ("a100-[1-4]", "a100-1")])
def test_first_node_of_a_slurm_node_list(nodelist, head):
    assert first_node(nodelist) == head


def test_multinode_command_line():
    cmd = multinode_command(2, 4, "gpu07", 29533, "1234",
                            ["-m", "vocab_transfer.training.lapt", "--model", "m"])
    assert cmd == ["srun", "--nodes=2", "--ntasks=2", "--ntasks-per-node=1", "--kill-on-bad-exit=1",
                   "torchrun", "--nnodes=2", "--nproc-per-node=4", "--rdzv-backend=c10d",
                   "--rdzv-endpoint=gpu07:29533", "--rdzv-id=1234", "-m", "vocab_transfer.training.lapt",
                   "--model", "m"]


def test_launch_cli_builds_the_command_inside_an_allocation():
    """What the rule's `exec <launcher> -m vocab_transfer.training.lapt ...` runs on the job's first node with
    two nodes of four GPUs: one torchrun per node, meeting at that node on a free port."""
    env = {**os.environ, "SLURM_JOB_NODELIST": "gpu[07-08]", "SLURM_JOB_ID": "1234"}
    out = subprocess.run([sys.executable, "-m", "vocab_transfer.training.launch", "--nodes", "2",
                          "--gpus-per-node", "4", "--dry-run", "--", "-m", "vocab_transfer.training.lapt",
                          "--model", "m"], env=env,
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
    proc = subprocess.run([sys.executable, "-m", "vocab_transfer.training.launch", "--nodes", "2",
                           "--gpus-per-node", "1", "--", "-m", "vocab_transfer.training.lapt"], env=env,
                          capture_output=True, text=True)
    assert proc.returncode != 0 and "inside a SLURM allocation" in proc.stderr


def test_one_process_without_a_launcher(monkeypatch):
    from vocab_transfer.training.runtime import Distributed, init_distributed

    for key in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "SLURM_NTASKS", "SLURM_PROCID", "SLURM_STEP_ID"):
        monkeypatch.delenv(key, raising=False)
    # a batch script's environment, outside an srun step: not launched
    monkeypatch.setenv("SLURM_NTASKS", "4")
    assert init_distributed() == Distributed(world=1, rank=0)


# GPU claims: the jobs of a bundle (one SLURM job, vocab_transfer/workflow/bundles.py) each take their own
# GPUs.
CLAIM_ENV = {"SLURM_JOB_ID": "4242", "CUDA_VISIBLE_DEVICES": "0,1,2,3"}
# Claims as a job of a bundle makes them, in a process of its own: prints the GPUs, then holds them while it
# reads a line from stdin; `exec`s what follows the count, where given, as `launch --claim` does.
CLAIMER = """
import os, sys
from vocab_transfer.training.launch import claim_gpus
print(claim_gpus(int(sys.argv[1]), folder=sys.argv[2]), os.environ.get("CUDA_VISIBLE_DEVICES"), flush=True)
sys.stdin.readline()
"""


def start_claimer(count: int, folder, env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CLAIMER, str(count), str(folder)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env={**os.environ, **env})


def test_jobs_of_a_bundle_claim_distinct_gpus_and_hold_them_while_they_run(tmp_path):
    """Three processes in one allocation of 4 GPUs: 1 + 2 + 1 GPUs, none shared; a fourth that asks for one
    finds none free (an error naming the lock folder); once the first exits, its GPU is free again."""
    first = start_claimer(1, tmp_path, CLAIM_ENV)
    claims = [first.stdout.readline().split()]  # one after the other: each claim takes the first free GPUs
    second = start_claimer(2, tmp_path, CLAIM_ENV)
    claims.append(second.stdout.readline().split())
    third = start_claimer(1, tmp_path, CLAIM_ENV)
    claims.append(third.stdout.readline().split())
    assert [c[-1] for c in claims] == ["0", "1,2", "3"], claims  # CUDA_VISIBLE_DEVICES of each
    assert sorted(os.listdir(tmp_path)) == ["0.lock", "1.lock", "2.lock", "3.lock"]
    full = subprocess.run([sys.executable, "-c", CLAIMER, "1", str(tmp_path)], capture_output=True, text=True,
                          env={**os.environ, **CLAIM_ENV}, input="\n")
    assert full.returncode != 0, full.stderr
    assert "only 0 of CUDA_VISIBLE_DEVICES=0,1,2,3 are free" in full.stderr, full.stderr
    assert str(tmp_path) in full.stderr
    first.communicate("\n")  # the first job ends: its lock goes with its process
    again = subprocess.run([sys.executable, "-c", CLAIMER, "1", str(tmp_path)], capture_output=True,
                           text=True, env={**os.environ, **CLAIM_ENV}, input="\n")
    assert again.returncode == 0 and again.stdout.split()[-1] == "0", again.stderr
    for proc in (second, third):
        proc.communicate("\n")


@pytest.mark.parametrize("env, count", [
    ({"CUDA_VISIBLE_DEVICES": "0,1"}, 1),                                  # no SLURM job
    ({**CLAIM_ENV, "CUDA_VISIBLE_DEVICES": "0"}, 1),                       # the allocation is the job's own
    ({**CLAIM_ENV, "CUDA_VISIBLE_DEVICES": "0,1"}, 2),
    ({**CLAIM_ENV, "SLURM_JOB_NUM_NODES": "2"}, 2),                        # a job on several nodes
    (CLAIM_ENV, 0),                                                        # no GPU asked for
])
def test_claim_changes_nothing_where_there_is_nothing_to_share(tmp_path, env, count):
    from vocab_transfer.training.launch import claim_gpus

    environ = dict(env)
    assert claim_gpus(count, environ, folder=str(tmp_path / "locks")) is None
    assert environ == env and not (tmp_path / "locks").exists()


def test_launch_claim_execs_the_command_with_its_gpus_and_the_locks_held(tmp_path):
    """`python -m vocab_transfer.training.launch --claim 2 -- <command>`: the command runs in the same process
    (exec: SLURM's signal reaches it), sees its 2 GPUs, and holds their locks (a second claim gets the
    others); the claim is logged. The folder is ${TMPDIR}/vocab-transfer-gpus-<job id>; no torch is
    imported."""
    probe = tmp_path / "probe.py"  # the command: where it runs, what it sees, whether GPU 0 is locked
    probe.write_text(
        "import os, subprocess, sys\n"
        "lock = os.path.join(os.environ['TMPDIR'], 'vocab-transfer-gpus-4242', '0.lock')\n"
        "other = subprocess.run([sys.executable, '-c', 'import fcntl, os, sys; "
        "fcntl.flock(os.open(sys.argv[1], os.O_RDWR), fcntl.LOCK_EX | fcntl.LOCK_NB)', lock])\n"
        "print(os.getpid(), os.environ['CUDA_VISIBLE_DEVICES'], 'torch' in sys.modules, other.returncode)\n")
    proc = subprocess.Popen([sys.executable, "-m", "vocab_transfer.training.launch", "--claim", "2", "--",
                             sys.executable, str(probe)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, **CLAIM_ENV, "TMPDIR": str(tmp_path)})
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    pid, visible, torch_loaded, locked_elsewhere = out.split()
    assert int(pid) == proc.pid  # exec, not a child
    assert visible == "0,1" and torch_loaded == "False"
    assert int(locked_elsewhere) != 0  # another process cannot lock GPU 0 while the command runs
    assert "launch: claimed GPU(s) 0,1 of 0,1,2,3 in SLURM job 4242" in err
    assert sorted(os.listdir(tmp_path / "vocab-transfer-gpus-4242"))[:2] == ["0.lock", "1.lock"]

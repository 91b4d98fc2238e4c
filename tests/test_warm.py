"""Warm job starts (vocab_transfer/warm.py): a real starter process, real jobs forked from it."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vocab_transfer import warm

REPO = Path(__file__).resolve().parents[1]

JOB = '''"""A job script as the workflow's are: handoff() first, then the rest."""
from vocab_transfer.warm import handoff

handoff()

import json, os, sys, torch

torch.set_num_threads(2)
a = torch.randn(512, 512)
(a @ a).sum().item()  # an OpenMP region with 2 threads: hangs if the starter had started OpenMP's pool
print(json.dumps({"pid": os.getpid(), "ppid": os.getppid(), "cwd": os.getcwd(), "argv": sys.argv[1:],
                  "foo": os.environ.get("FOO"), "threads": torch.get_num_threads(),
                  "child": os.environ.get("VOCAB_TRANSFER_WARM_CHILD")}))
print("to stderr", file=sys.stderr)
sys.exit(int(sys.argv[1]))
'''

SLEEPER = '''"""Writes its pid, then sleeps."""
from vocab_transfer.warm import handoff

handoff()

import os, sys, time

open(sys.argv[1], "w").write(str(os.getpid()))
time.sleep(120)
'''


def _env(name: str | None) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in (warm.ENV, warm.IN_CHILD, warm.ALLOCATION, "SLURM_JOB_ID")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    if name is not None:
        env[warm.ENV] = name
    return env


@pytest.fixture(scope="module")
def starter():
    name = f"vocab-transfer-warm-test-{os.getpid()}"
    proc = subprocess.Popen([sys.executable, "-m", "vocab_transfer.warm", name],
                            stdin=subprocess.PIPE, env=_env(None), cwd=REPO)
    deadline = time.time() + 60
    while True:  # listening (a job that connects earlier runs in its own process, as it should)
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect("\0" + name)
            break
        except OSError:
            assert time.time() < deadline and proc.poll() is None, "the starter did not listen"
            time.sleep(0.05)
        finally:
            probe.close()
    yield name, proc
    proc.stdin.close()
    proc.wait(timeout=30)


def _script(tmp_path: Path, name: str, text: str) -> Path:
    """A job script where Snakemake writes the scripts of its rules (.snakemake/scripts/): only those hand
    off."""
    scripts = tmp_path / ".snakemake" / "scripts"
    scripts.mkdir(parents=True, exist_ok=True)
    (scripts / name).write_text(text)
    return scripts / name


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text().split("State:")[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_a_job_runs_forked_from_the_starter_with_its_own_stdio_env_cwd_and_status(starter, tmp_path):
    name, proc = starter
    job = _script(tmp_path, "job.py", JOB)
    for status in (0, 3):
        out = subprocess.run([sys.executable, str(job), str(status), "x y"], cwd=tmp_path,
                             capture_output=True, text=True, env={**_env(name), "FOO": "bar"}, timeout=300)
        assert out.returncode == status, out.stderr
        seen = json.loads(out.stdout)
        assert seen["ppid"] == proc.pid  # forked from the starter, not run by the job process
        assert seen["cwd"] == str(tmp_path) and seen["argv"] == [str(status), "x y"] and seen["foo"] == "bar"
        assert seen["threads"] == 2 and seen["child"] == "1"
        assert out.stderr.strip().endswith("to stderr")


def test_without_a_starter_the_job_runs_in_its_own_process(tmp_path):
    job = _script(tmp_path, "job.py", JOB)
    for name in ("vocab-transfer-warm-nobody-listens", "0"):
        out = subprocess.run([sys.executable, str(job), "0"], cwd=tmp_path, capture_output=True, text=True,
                             env=_env(name), timeout=300)
        assert out.returncode == 0, out.stderr
        assert '"child": null' in out.stdout


def test_a_slurm_job_hands_off_only_to_a_starter_of_its_own_allocation(starter, tmp_path):
    """A SLURM job inherits the environment of the Snakemake that submitted it, the login node's starter
    name included; on a single-node SLURM that socket is reachable, and a job forked there would run outside
    its allocation. Inside the starter's own allocation it is forked as any job."""
    name, proc = starter
    job = _script(tmp_path, "job.py", JOB)
    for allocation, forked in (("", False), ("41", False), ("42", True)):
        env = {**_env(name), warm.ALLOCATION: allocation, "SLURM_JOB_ID": "42"}
        out = subprocess.run([sys.executable, str(job), "0"], cwd=tmp_path, capture_output=True, text=True,
                             env=env, timeout=300)
        assert out.returncode == 0, out.stderr
        seen = json.loads(out.stdout)
        assert (seen["ppid"] == proc.pid) is forked and (seen["child"] == "1") is forked, allocation


def test_a_process_that_is_no_workflow_script_runs_in_its_own_process(starter, tmp_path):
    """Snakemake itself and the trainers a job starts import the package with the starter's name in their
    environment: they never hand off."""
    name, proc = starter
    (tmp_path / "job.py").write_text(JOB)
    out = subprocess.run([sys.executable, "job.py", "0"], cwd=tmp_path, capture_output=True, text=True,
                         env=_env(name), timeout=300)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    assert seen["ppid"] != proc.pid and seen["child"] is None


IMPORTS_ONLY = '''"""A job script that imports the package and its job setup, and never calls handoff()."""
import vocab_transfer
import vocab_transfer.workflow.job

import json, os

print(json.dumps({"ppid": os.getppid(), "child": os.environ.get("VOCAB_TRANSFER_WARM_CHILD")}))
'''


def test_importing_the_package_never_hands_off(starter, tmp_path):
    """Only an explicit handoff() forks: a script that just imports the package runs in its own process, with
    a starter listening under the name in the environment and with the variable set to 1."""
    name, _ = starter
    job = _script(tmp_path, "imports.py", IMPORTS_ONLY)
    for value in (name, "1"):
        out = subprocess.run([sys.executable, str(job)], cwd=tmp_path, capture_output=True, text=True,
                             env=_env(value), timeout=300)
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout) == {"ppid": os.getpid(), "child": None}, value


def test_every_workflow_script_hands_off_before_its_other_imports():
    """The one entry of warm starts: each script of workflow_scripts/ calls handoff() right after its
    docstring."""
    import ast

    scripts = sorted((REPO / "workflow_scripts").glob("*.py"))
    assert len(scripts) > 20
    for script in scripts:
        body = ast.parse(script.read_text()).body
        first = [ast.unparse(node) for node in body[1:3]]
        assert ast.get_docstring(ast.Module(body=body, type_ignores=[])) and first == [
            "from vocab_transfer.warm import handoff", "handoff()"], f"{script.name}: {first}"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_killing_the_job_process_ends_the_forked_job(starter, tmp_path, sig):
    name, _ = starter
    sleeper = _script(tmp_path, "sleeper.py", SLEEPER)
    pid_file = tmp_path / "pid"
    job = subprocess.Popen([sys.executable, str(sleeper), str(pid_file)], cwd=tmp_path, env=_env(name))
    deadline = time.time() + 120
    while not (pid_file.is_file() and pid_file.read_text()):
        assert time.time() < deadline and job.poll() is None
        time.sleep(0.05)
    child = int(pid_file.read_text())
    assert child != job.pid and _alive(child)
    job.send_signal(sig)
    job.wait(timeout=30)
    deadline = time.time() + 10
    while _alive(child) and time.time() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def test_the_starter_exits_with_the_process_that_started_it():
    name = f"vocab-transfer-warm-exit-{os.getpid()}"
    proc = subprocess.Popen([sys.executable, "-m", "vocab_transfer.warm", name],
                            stdin=subprocess.PIPE, env=_env(None), cwd=REPO)
    time.sleep(0.5)
    assert proc.poll() is None
    proc.stdin.close()  # what the Snakemake process's exit does
    assert proc.wait(timeout=60) == 0


BENCHMARKED = '''"""A rule's script: with a benchmark file, holds 300 MiB for 1.5 s; says if it forked."""
from vocab_transfer.warm import handoff

handoff()

import json, os, time
import numpy as np

if snakemake.rule == "measured":
    block = np.ones(300 * 2**20 // 8)  # 300 MiB, every page written
    time.sleep(1.5)
json.dump({"child": os.environ.get("VOCAB_TRANSFER_WARM_CHILD")}, open(snakemake.output[0], "w"))
'''

SNAKEFILE = '''
rule measured:
    output: "measured.json"
    benchmark: "measured.tsv"
    script: "job.py"

rule plain:
    output: "plain.json"
    script: "job.py"
'''


def test_a_job_with_a_benchmark_file_runs_in_the_process_snakemake_measures(starter, tmp_path):
    """Snakemake's benchmark: samples the job process and its descendants; a forked job is neither, so a
    rule with a benchmark file imports for itself, and its file has the job's memory and time. Others fork."""
    name, _ = starter
    (tmp_path / "Snakefile").write_text(SNAKEFILE)
    (tmp_path / "job.py").write_text(BENCHMARKED)
    out = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", "measured.json", "plain.json"],
                         cwd=tmp_path, capture_output=True, text=True, env=_env(name), timeout=300)
    assert out.returncode == 0, out.stderr
    header, row = (tmp_path / "measured.tsv").read_text().splitlines()[:2]
    bench = dict(zip(header.split("\t"), row.split("\t"), strict=True))
    assert float(bench["max_rss"]) >= 300 and float(bench["s"]) >= 1.5, bench
    assert json.loads((tmp_path / "measured.json").read_text())["child"] is None
    assert json.loads((tmp_path / "plain.json").read_text())["child"] == "1"


# A trainer as the launcher runs one (python -m <module> ...): it holds 300 MiB, burns a second of CPU, says
# where it ran, and exits with the status it is given, or 75 after SIGTERM (a trainer's checkpoint-and-exit).
TRAINER = '''import json, os, signal, sys, time

def stop(signum, frame):
    open(sys.argv[1] + ".signal", "w").write(str(signum))
    sys.exit(75)

signal.signal(signal.SIGTERM, stop)
block = bytearray(300 * 2**20)
for i in range(0, len(block), 4096):
    block[i] = 1  # every page written
end = time.process_time() + 1.0
while time.process_time() < end:
    pass
json.dump({"pid": os.getpid(), "child": os.environ.get("VOCAB_TRANSFER_WARM_CHILD"),
           "gpus": os.environ.get("CUDA_VISIBLE_DEVICES")}, open(sys.argv[1], "w"))
if len(sys.argv) > 3:
    time.sleep(float(sys.argv[3]))
sys.exit(int(sys.argv[2]))
'''


def _launch_trainer(tmp_path: Path, name: str | None, status: int = 0, sleep: float | None = None):
    (tmp_path / "fake_trainer.py").write_text(TRAINER)
    env = _env(name)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env["PYTHONPATH"]])
    args = [str(tmp_path / "out.json"), str(status)] + ([str(sleep)] if sleep is not None else [])
    command = [sys.executable, "-m", "vocab_transfer.training.launch", "--claim", "0",
               "--benchmark", str(tmp_path / "bench" / "job.tsv"), "--", "python", "-m", "fake_trainer",
               *args]
    return subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _benchmark(path: Path) -> dict:
    header, row = path.read_text().splitlines()
    pairs = zip(header.split("\t"), row.split("\t"), strict=True)
    return {k: (v if k == "h:m:s" else float(v)) for k, v in pairs}


@pytest.mark.parametrize("warm_start", [True, False])
def test_a_trainer_job_writes_its_own_benchmark_file_forked_or_not(starter, tmp_path, warm_start):
    """The trainers' rules run `launch --claim N --benchmark FILE -- python -m <trainer>`: with a starter the
    trainer runs in a child of it, without one in a child of the launcher; either way the launcher writes the
    benchmark file (Snakemake's columns) with the trainer's own time, CPU and memory before it exits with
    the trainer's status."""
    name, _ = starter
    proc = _launch_trainer(tmp_path, name if warm_start else None, status=3, sleep=2.0)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 3, err
    ran = json.loads((tmp_path / "out.json").read_text())
    assert ran["child"] == ("1" if warm_start else None)
    assert ran["pid"] != proc.pid
    bench = _benchmark(tmp_path / "bench" / "job.tsv")  # written before the job process ended
    assert list(bench) == ["s", "h:m:s", "max_rss", "max_vms", "max_uss", "max_pss", "io_in", "io_out",
                           "mean_load", "cpu_time"]
    assert bench["max_rss"] >= 300 and bench["s"] >= 3.0, bench
    assert 1.0 <= bench["cpu_time"] < bench["s"], bench  # the busy second
    assert ("ran in a child of the warm starter" in err) == warm_start


@pytest.mark.parametrize("warm_start", [True, False])
def test_a_trainer_gets_the_jobs_signal_and_its_exit_status_comes_back(starter, tmp_path, warm_start):
    """Snakemake stopping the job (SIGTERM to the job process) outside SLURM: the launcher passes it on to the
    trainer, forked or its own child, which checkpoints and exits 75, and the job exits 75 (retried and
    resumed), with its benchmark file written."""
    name, _ = starter
    proc = _launch_trainer(tmp_path, name if warm_start else None, sleep=60)
    deadline = time.time() + 60
    while not (tmp_path / "out.json").exists():
        assert time.time() < deadline and proc.poll() is None, proc.stderr.read() if proc.poll() else ""
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=30)
    assert proc.returncode == 75
    assert (tmp_path / "out.json.signal").read_text() == str(int(signal.SIGTERM))
    assert _benchmark(tmp_path / "bench" / "job.tsv")["max_rss"] >= 300


class _Rule:
    def __init__(self, shellcmd):
        self.shellcmd = shellcmd


class _Workflow:
    """The two things start_bundle_starter reads of Snakemake's workflow: its mode and its rules."""
    remote_exec = True

    def __init__(self):
        launch = "exec python -m vocab_transfer.training.launch --claim 1 --benchmark b.tsv -- python -m x"
        self.rules = {"focus_finetune": _Rule(launch), "focus_train_lapt": _Rule(launch),
                      "focus_init_embeddings": _Rule(None)}

    def get_rule(self, name):
        return self.rules[name]


BUNDLE = ["--target-jobs", "focus_finetune:task=a", "focus_finetune:task=b"]
IN_JOB = {"SLURM_JOB_ID": "7"}


@pytest.mark.parametrize("argv, env, starts", [
    # the Snakemake srun started in a SLURM job for a bundle of two trainer jobs: a starter
    ([*BUNDLE, "--mode", "remote"], IN_JOB, True),
    (["--target-jobs", "focus_finetune:task=a", "focus_train_lapt:run=b", "--mode", "remote"], IN_JOB, True),
    # one trainer job, or script jobs only: none (its imports would cost what they save)
    (["--target-jobs", "focus_finetune:task=a", "focus_init_embeddings:x=1", "--mode", "remote"], IN_JOB,
     False),
    # the Snakemake that submitted the bundle (jobstep executor), a dry run, no SLURM job, warm starts off
    ([*BUNDLE, "--executor", "slurm-jobstep", "--mode", "remote"], IN_JOB, False),
    (["-n", *BUNDLE, "--mode", "remote"], IN_JOB, False),
    ([*BUNDLE, "--mode", "remote"], {}, False),
    ([*BUNDLE, "--mode", "remote"], {**IN_JOB, warm.ENV: "0"}, False),
])
def test_a_bundle_of_trainer_jobs_starts_a_starter_in_its_allocation(monkeypatch, argv, env, starts):
    from vocab_transfer.workflow import onstart

    started = []
    monkeypatch.setattr(warm, "start", lambda: started.append(True))
    for key in ("SLURM_JOB_ID", warm.ENV):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    onstart.start_bundle_starter(_Workflow(), ["snakemake", *argv])
    assert bool(started) == starts

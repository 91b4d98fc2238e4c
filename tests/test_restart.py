"""Restarting after a lost login session (vocab_transfer/workflow/restart.py) and what the rehearsal's
report says about a run (vocab_transfer/workflow/runlog.py).

The report's counts are read from the logs of real Snakemake runs of a small Snakefile on this machine. The
restart runs the pipeline (tests/data/tiny_config.yaml) through the local SLURM of scripts/slurm/start.sh with
the shipped profile: a run is killed with SIGKILL once it has submitted its job, which stays in the queue (it
may start in 10 minutes), and the same command again is refused, first by Snakemake's lock, then, after the
``--unlock`` the advice prints, before it submits anything; both times the job and the ``scancel`` command
are named. Once the job is cancelled, the restart runs to the end. The test cancels only the job of the run it
killed (by that run's name).
"""

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vocab_transfer.workflow.restart import ACTIVE_STATES, check_no_other_run
from vocab_transfer.workflow.runlog import read_log, report_lines

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "tests" / "data" / "tiny_config.yaml"

# flaky fails its first attempt and finishes its second; broken fails every attempt; good finishes at once.
SNAKEFILE = """
rule all:
    input: "flaky.txt", "broken.txt", "good.txt"
rule flaky:
    output: "flaky.txt"
    shell: "if [ -e tried ]; then echo ok > {output}; else touch tried; exit 1; fi"
rule broken:
    output: "broken.txt"
    shell: "exit 3"
rule good:
    output: "good.txt"
    shell: "echo ok > {output}"
rule slow:
    output: "slow.txt"
    shell: "sleep 60; touch {output}"
"""


def snakemake(workdir: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Snakemake on the three-rule Snakefile in ``workdir``: its exit status and log (stdout and stderr)."""
    return subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", *args], cwd=workdir, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)


@pytest.fixture
def small(tmp_path):
    (tmp_path / "Snakefile").write_text(SNAKEFILE)
    return tmp_path


def test_a_job_that_finishes_when_retried_is_not_failed(small):
    run = snakemake(small, "--retries", "1", "--keep-going")
    assert run.returncode != 0  # broken fails both attempts
    assert run.stdout.count("Error in rule flaky:") == 1 and run.stdout.count("Error in rule broken:") == 2
    log = read_log(run.stdout)
    assert sorted(log.failed.values()) == ["broken"], log
    assert sorted(log.retried.values()) == ["flaky"], log
    jobs, failed = report_lines(log, run.returncode)[:2]
    assert jobs == "jobs: 2 of 4 steps", run.stdout[-3000:]  # good and flaky; broken and all not
    broken = next(j for j, rule in log.failed.items() if rule == "broken")
    flaky = next(j for j, rule in log.retried.items() if rule == "flaky")
    assert failed == (f"failed jobs: 1 (broken jobid {broken}); 1 finished when retried after a failure "
                      f"(flaky jobid {flaky})"), failed

    again = snakemake(small, "good.txt")  # up to date
    assert report_lines(read_log(again.stdout), again.returncode)[:2] == ["jobs: none left to run",
                                                                          "failed jobs: 0"]


def test_a_run_that_runs_nothing_says_why(small):
    """Snakemake refused by a lock a killed run left, or stopped by an error while planning: never "none left
    to run"."""
    proc = subprocess.Popen([sys.executable, "-m", "snakemake", "--cores", "1", "slow.txt"], cwd=small,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not list((small / ".snakemake" / "locks").glob("*.lock")) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert list((small / ".snakemake" / "locks").glob("*.lock")), "the run wrote no lock"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    locked = snakemake(small, "slow.txt")
    assert locked.returncode != 0 and "Directory cannot be locked" in locked.stdout, locked.stdout[-2000:]
    lines = report_lines(read_log(locked.stdout), locked.returncode)
    assert lines[:2] == ["jobs: none run: the working directory is locked (below: what to do)",
                         "failed jobs: 0"], lines
    assert lines[2] == "LockException:", lines  # Snakemake's message: this Snakefile installs no advice

    missing = snakemake(small, "no-such-file.txt")
    lines = report_lines(read_log(missing.stdout), missing.returncode)
    assert lines[0] == ("jobs: none run: Snakemake stopped before running a job "
                        f"(exit status {missing.returncode}; below: its error)"), lines
    assert lines[2] == "MissingRuleException:" and "no-such-file.txt" in lines[3], lines


def test_only_the_slurm_executor_checks_the_queue(tmp_path, monkeypatch):
    assert check_no_other_run("local", tmp_path) is None
    monkeypatch.setenv("PATH", str(tmp_path))  # a machine without SLURM: no squeue
    assert shutil.which("squeue") is None
    assert check_no_other_run("slurm", tmp_path) is None


# --- through the local SLURM ----------------------------------------------------------------------------

needs_slurm = pytest.mark.skipif(shutil.which("sbatch") is None and not os.environ.get("CI"),
                                 reason="sbatch not found: SLURM is not installed (scripts/slurm/install.sh)")


def snakemake_here(workdir: Path, args: list[str]) -> subprocess.CompletedProcess:
    """``snakemake <args>`` in ``workdir``: its exit status and log."""
    return subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=workdir, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=400,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})


def pipeline(workdir: Path, profile: Path, *args: str) -> subprocess.CompletedProcess:
    return snakemake_here(workdir, pipeline_command(profile, *args)[3:])


def pipeline_command(profile: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), *args,
            "--profile", str(profile), "--configfile", str(TINY)]


def job_state(job_id: str) -> str:
    listed = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%T"], capture_output=True, text=True)
    return listed.stdout.strip()


@needs_slurm
@pytest.mark.slurm
def test_a_restart_waits_for_the_jobs_of_a_killed_run(tmp_path):
    from test_slurm import require_local_cluster, shipped_profile

    require_local_cluster()
    workdir = tmp_path / "run"
    workdir.mkdir()
    profile = shipped_profile(tmp_path / "profile")
    target = "results/corpus/sw/train.parquet"  # prepare_corpus: a cluster job
    # The killed run's job may start in 10 minutes (sbatch --begin): it is still queued at the restart.
    later = ["--set-resources", "prepare_corpus:slurm_extra='--begin=now+600'"]
    log_path = tmp_path / "killed.log"
    with open(log_path, "w") as log:
        killed = subprocess.Popen(pipeline_command(profile, target, *later), cwd=workdir, stdout=log,
                                  stderr=subprocess.STDOUT, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    run_id = None
    try:
        submitted, deadline = "has been submitted with SLURM jobid", time.monotonic() + 120
        while submitted not in log_path.read_text() and time.monotonic() < deadline:
            assert killed.poll() is None, log_path.read_text()[-3000:]
            time.sleep(0.2)
        killed.send_signal(signal.SIGKILL)  # the login session is lost
        killed.wait()
        text = log_path.read_text()
        run_id = re.search(r"SLURM run ID: (\S+)", text)[1]
        (job_id,) = re.findall(r"has been submitted with SLURM jobid (\d+)", text)
        # a job on its own names its wildcards; a bundle (profiles/slurm group-components) its group and rules
        listed = (rf"  prepare_corpus(?: \(sw\)|_prepare_corpus): SLURM job {job_id}, PENDING, "
                  rf"run {re.escape(run_id)}\n")
        assert job_state(job_id) == "PENDING"

        locked = pipeline(workdir, profile, target)
        out = locked.stdout
        assert locked.returncode != 0, out[-3000:]
        assert "Directory cannot be locked" in out, out[-3000:]
        assert f"This working directory is locked: {workdir}/.snakemake/locks/" in out, out[-3000:]
        assert re.search(listed, out), out[-3000:]
        assert f"(scancel --name {run_id})" in out and f"squeue --me -n {run_id}" in out, out[-3000:]
        # the advice's commands, run as they are printed (snakemake as python -m snakemake)
        unlock, restart = (advised(out, f"{step}. {name}: cd {shlex.quote(str(workdir))} && snakemake ")
                           for step, name in ((3, "Unlock"), (4, "Restart")))
        assert restart == ["--snakefile", str(REPO / "Snakefile"), target, "--profile", str(profile),
                           "--configfile", str(TINY)]
        assert unlock == [*restart, "--unlock"]

        unlocked = snakemake_here(workdir, unlock)
        assert unlocked.returncode == 0, unlocked.stdout[-2000:]
        assert "Unlocked working directory" in unlocked.stdout, unlocked.stdout[-2000:]

        refused = snakemake_here(workdir, restart)
        out = refused.stdout
        assert refused.returncode != 0, out[-3000:]
        assert f"nothing submitted: 1 SLURM job(s) of another Snakemake run in {workdir} are still" in out
        assert re.search(listed, out), out[-3000:]
        assert f"(scancel --name {run_id})" in out, out[-3000:]
        assert "has been submitted with SLURM jobid" not in out, out[-3000:]
        assert job_state(job_id) == "PENDING"  # left alone
        assert not (workdir / ".snakemake" / "locks").exists()  # released: the next try needs no --unlock

        subprocess.run(["scancel", "--name", run_id], check=True)  # the killed run's job: this test's own
        deadline = time.monotonic() + 60
        while job_state(job_id) in ACTIVE_STATES:
            assert time.monotonic() < deadline, f"job {job_id} is still {job_state(job_id)}"
            time.sleep(1)
        restarted = snakemake_here(workdir, restart)
        assert restarted.returncode == 0, restarted.stdout[-4000:]
        assert len(re.findall(r"has been submitted with SLURM jobid", restarted.stdout)) == 1
        assert (workdir / target).is_dir()
    finally:
        if killed.poll() is None:
            killed.kill()
        if run_id:
            subprocess.run(["scancel", "--name", run_id])


def advised(out: str, prefix: str) -> list[str]:
    """The arguments of the advice's line that starts with ``prefix`` (after ``snakemake``)."""
    line = next((line for line in out.splitlines() if line.startswith(prefix)), None)
    assert line, f"no line {prefix!r}:\n{out[-3000:]}"
    return shlex.split(line[len(prefix):])


@needs_slurm
@pytest.mark.slurm
def test_a_composite_config_waits_for_them_too(tmp_path):
    """rules/studies.smk (a composite config's studies as modules) has its own onstart and lock advice: a job
    in this directory with another run's name, as the slurm executor submits one, stops the run before it
    submits anything, and a lock Snakemake left gets the advice."""
    import yaml
    from test_slurm import require_local_cluster, shipped_profile

    require_local_cluster()
    workdir = tmp_path / "run"
    workdir.mkdir()
    (tmp_path / "a.yaml").write_text(yaml.safe_dump({**yaml.safe_load(TINY.read_text()), "study": "a"}))
    (tmp_path / "both.yaml").write_text(yaml.safe_dump({"studies": [str(tmp_path / "a.yaml")]}))
    profile = shipped_profile(tmp_path / "profile")
    args = ["--snakefile", str(REPO / "Snakefile"), "results/corpus/sw/train.parquet",
            "--profile", str(profile), "--configfile", str(tmp_path / "both.yaml")]
    other_run = f"test-restart-{os.getpid()}-{time.time_ns()}"
    comment = "rule_a_finetune_wildcards_tiny_sw_focus"  # a fine-tuning that runs on
    sbatch = ["sbatch", "--parsable", "--job-name", other_run, "--comment", comment, "-D", str(workdir),
              "-p", "cpu", "-t", "10", "--mem", "100", "-o", "/dev/null", "--wrap", "sleep 300"]
    job_id = subprocess.run(sbatch, capture_output=True, text=True, check=True).stdout.strip().split(";")[0]
    try:
        listed = rf"  a_finetune \(tiny_sw_focus\): SLURM job {job_id}, [A-Z]+, run {other_run}\n"
        refused = snakemake_here(workdir, args)
        assert refused.returncode != 0, refused.stdout[-3000:]
        out = refused.stdout
        assert "nothing submitted: 1 SLURM job(s) of another Snakemake run" in out, out[-3000:]
        assert re.search(listed, refused.stdout), refused.stdout[-3000:]
        assert f"(scancel --name {other_run})" in refused.stdout
        assert "has been submitted with SLURM jobid" not in refused.stdout

        (workdir / ".snakemake" / "locks").mkdir(parents=True)  # as a killed run leaves it
        (workdir / ".snakemake" / "locks" / "0.output.lock").write_text("results/corpus/sw/train.parquet\n")
        locked = snakemake_here(workdir, args)
        assert locked.returncode != 0 and "Directory cannot be locked" in locked.stdout, locked.stdout[-3000:]
        assert locked.stdout.count("This working directory is locked:") == 1, locked.stdout[-3000:]
        assert re.search(listed, locked.stdout), locked.stdout[-3000:]
    finally:
        subprocess.run(["scancel", "--name", other_run])


def test_a_bundle_that_failed_counts_its_jobs_as_failed():
    """A bundle's error (a group job SLURM refused) lists its jobs indented under the group's message."""
    log = read_log("""Select jobs to execute...
[Sat Nov 28 06:56:43 2026]
    message: Error in group tokenize_corpus
    jobs:
        rule focus_tokenize_corpus:
            jobid: 10
    [Sat Nov 28 06:56:43 2026]
    Error in rule focus_tokenize_corpus:
        message: None
        jobid: 10
        output: results/focus/shards/de/train
    [Sat Nov 28 06:56:43 2026]
    Error in rule focus_tokenize_corpus:
        message: None
        jobid: 13
Finished jobid: 13 (Rule: focus_tokenize_corpus)
3 of 1433 steps (1%) done
""")
    assert log.failed == {"10": "focus_tokenize_corpus"} and log.retried == {"13": "focus_tokenize_corpus"}

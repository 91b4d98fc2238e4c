"""Jobs really pass through SLURM: tests/slurm/Snakefile on the local cluster of scripts/slurm/start.sh.

Four Snakemake runs (tests/slurm/profile, executor `slurm`) go side by side, each in its own
working directory: `ok` (a plain job, two jobs on the fake GPU and a localrule), `fail` (a job
that exits 1), `timeout` (a job that outlives its 1-minute time limit) and `resume` (a resumable
stand-in for LAPT that gets SIGTERM ahead of its time limit, checkpoints, and finishes on the retry). Each
test then checks one run against what SLURM itself recorded for its jobs. The `timeout` run sets the pace:
SLURM checks time limits every 30 s, so the job dies 60-90 s after it starts, and Snakemake's status polls
(their interval grows by 10 s per poll) notice a little later: about 2.5 minutes.

The cluster has two partitions on its one node, `cpu` (the default) and `gpu`, as a real cluster has;
the tests check on which one SLURM ran each job. The last test runs the pipeline's own jobs with the
shipped profiles/slurm/config.yaml, its placeholders filled in with these two partitions.

Without `sbatch` the tests skip, except under CI (env var CI set), where they fail: CI installs
and starts the cluster with scripts/slurm/install.sh and scripts/slurm/start.sh.
"""

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SNAKEFILE = REPO / "tests" / "slurm" / "Snakefile"
PROFILE = REPO / "tests" / "slurm" / "profile"
SHIPPED_PROFILE = REPO / "profiles" / "slurm" / "config.yaml"
CLUSTER = "localcluster"  # ClusterName in scripts/slurm/conf/slurm.conf.in
CPU_PARTITION, GPU_PARTITION = "cpu", "gpu"  # its partitions, both on the one node
RUN_TIMEOUT_S = 400  # per Snakemake run; the slowest (TIMEOUT) takes about 2-3 minutes
START_HINT = "sudo bash scripts/slurm/install.sh && sudo bash scripts/slurm/start.sh --gpus 4 --gpu-type a100"
MIN_GPUS = 2  # per node: two one-GPU jobs bundled into one SLURM job, and the rehearsal's LAPT on 2 GPUs

pytestmark = pytest.mark.slurm

if shutil.which("sbatch") is None and not os.environ.get("CI"):
    pytest.skip(
        f"sbatch not found: SLURM is not installed (to run these tests: {START_HINT})",
        allow_module_level=True,
    )


@dataclass
class Run:
    """One finished Snakemake run: its working directory, exit status and log."""

    workdir: Path
    returncode: int
    log: str

    @property
    def slurm_job_ids(self) -> list[str]:
        """SLURM job ids of every job this run submitted, from the plugin's log lines."""
        return submitted_job_ids(self.log)


def submitted_job_ids(log: str) -> list[str]:
    """SLURM job ids of every job a Snakemake run submitted, from the plugin's log lines."""
    return re.findall(r"has been submitted with SLURM jobid (\d+)", log)


def command_output(*cmd: str) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def require_local_cluster() -> None:
    """Fail (not skip) unless sbatch reaches the local test cluster with its partition up."""
    if shutil.which("sbatch") is None:
        pytest.fail(f"sbatch not found although CI is set: run {START_HINT} before pytest")
    ping = command_output("scontrol", "ping")
    if "UP" not in ping.stdout:
        pytest.fail(f"slurmctld is not reachable ({(ping.stdout + ping.stderr).strip()}): run {START_HINT}")
    config = command_output("scontrol", "show", "config").stdout
    name = re.search(r"^ClusterName\s*=\s*(\S+)", config, re.MULTILINE)
    if not name or name.group(1) != CLUSTER:
        pytest.fail(
            f"sbatch talks to cluster {name.group(1) if name else '?'!r}, not the local test cluster "
            f"{CLUSTER!r} of scripts/slurm/start.sh; refusing to submit test jobs there"
        )
    for partition in (CPU_PARTITION, GPU_PARTITION):
        state = command_output("sinfo", "-h", "-p", partition, "-o", "%a %T").stdout.split()
        if not state or state[0] != "up" or not {"idle", "mixed", "allocated", "completing"} & set(state[1:]):
            pytest.fail(f"partition {partition} is not usable (sinfo: {state}): run {START_HINT}")
    gres = command_output("sinfo", "-h", "-p", GPU_PARTITION, "-o", "%G").stdout
    gpus = max((int(n) for n in re.findall(r"gpu(?::[^:,(\s]+)?:(\d+)", gres)), default=0)
    if gpus < MIN_GPUS:
        pytest.fail(f"partition {GPU_PARTITION} has {gpus} GPU(s) per node (sinfo %G: {gres.strip()!r}); the "
                    f"GPU bundles and the rehearsal's LAPT ask for {MIN_GPUS} in one job: restart the "
                    f"cluster with `sudo bash scripts/slurm/start.sh --gpus 4 --gpu-type a100`")


def start_snakemake(workdir: Path, *args: str) -> tuple[subprocess.Popen, Path]:
    workdir.mkdir(parents=True)
    log_path = workdir / "snakemake.log"
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(SNAKEFILE),
        "--profile",
        str(PROFILE),
        *args,
    ]
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, cwd=workdir, stdout=log, stderr=subprocess.STDOUT, text=True)
    return proc, log_path


def wait_for(proc: subprocess.Popen, deadline: float) -> int:
    """Wait until `deadline`; past it, interrupt Snakemake (SIGINT makes it scancel its jobs)."""
    try:
        return proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        return -1


def slurm_job(job_id: str) -> dict[str, str]:
    """What SLURM recorded for a job: sacct where accounting works, else `scontrol show job`.

    The local cluster has no slurmdbd (sacct exits 1); slurmctld keeps finished jobs for
    MinJobAge=600 s, long enough for `scontrol show job` here.
    """
    sacct = command_output(
        "sacct", "-n", "-X", "-P", "-j", job_id, "-o", "State,ExitCode,Partition,AllocTRES,Comment"
    )
    if sacct.returncode == 0 and sacct.stdout.strip():
        state, exit_code, partition, tres, comment = sacct.stdout.strip().splitlines()[0].split("|")
        return {"JobState": state.split()[0], "ExitCode": exit_code, "Partition": partition, "TRES": tres,
                "Comment": comment}
    show = command_output("scontrol", "-o", "show", "job", job_id)
    assert show.returncode == 0, f"SLURM does not know job {job_id}: {show.stderr.strip()}"
    return dict(re.findall(r"(\w+)=(\S*)", show.stdout))


def rule_of(job: dict[str, str]) -> str:
    """The rule a SLURM job ran: the plugin submits it with --comment rule_<rule>[_wildcards_<values>], a
    bundle (a group job) with rule_<group>_<its rules>: rule_<rule>_<rule> for the pipeline's (each group is
    named after its rule)."""
    match = re.match(r"rule_(\w+?)(_wildcards_|$)", job.get("Comment", ""))
    assert match, f"no rule_<name> comment on the job: {job}"
    name = match.group(1)
    half = name[: len(name) // 2]
    return half if name == f"{half}_{half}" else name


def rules_of(job: dict[str, str]) -> list[str]:
    """The rules of a SLURM job: :func:`rule_of`'s, or those of a bundle of the composite, whose comment is
    rule_<group>_<rule>_<rule>... with every rule ending in the group's name (<study>_train_lapt in group
    train_lapt)."""
    name = rule_of(job)
    for i in (i for i, c in enumerate(name) if c == "_"):
        group, rest = name[:i], name[i + 1:]
        parts = rest.split(group)
        if rest.endswith(group) and all(p == "" or p.endswith("_") for p in parts[:1]) and \
                all(p.startswith("_") and (p == "_" or p.endswith("_")) for p in parts[1:-1]):
            return [f"{p.strip('_')}_{group}" if p.strip("_") else group for p in parts[:-1]]
    return [name]


def environment_record(path: Path) -> dict[str, str]:
    """The `name=value` fields a rule of tests/slurm/Snakefile wrote into its output."""
    return dict(field.split("=", 1) for field in path.read_text().split())


# The composite of every paper with the rehearsal overlay, through SLURM with the shipped profile, to a table
# of each paper, chosen among those with the fewest jobs: FOCUS Table 1 (corpus sizes), WECHSEL Table 6
# (nearest tokens), UNKs Everywhere Table 7 (longest overlapping subwords), vocab-swap Table 9 (LAPT losses).
# The hub resources come from the mirror on the login node; scripts/rehearse.sh runs every table.
REHEARSED_TABLES = {"focus": "focus_table1", "wechsel": "wechsel_table6", "unks": "unks_table7",
                    "vocab_swap_frankenberta": "vocab_swap_table9"}
CI_REHEARSAL = REPO / "tests/data/rehearsal_ci.yaml"  # the overlay's grid cut further: one target per study


def rehearsal_tables() -> list[str]:
    return [f"results/{study}/tables/paper/{table}.md" for study, table in REHEARSED_TABLES.items()]


@pytest.fixture(scope="module")
def rehearsal(tmp_path_factory):
    """The rehearsal of test_the_rehearsal_writes_a_table_of_each_paper_through_slurm, started before the runs
    below: it builds the mirror and its jobs use the CPUs while theirs wait for SLURM's time limit and signal
    (yields the working directory, the process and its log)."""
    require_local_cluster()
    workdir = tmp_path_factory.mktemp("rehearsal")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    configs = [str(REPO / "configs/papers.yaml"), str(REPO / "configs/overlays/rehearsal.yaml"),
               str(CI_REHEARSAL)]
    build = [sys.executable, "-m", "vocab_transfer.miniatures", *configs]
    run = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), *rehearsal_tables(),
           "--profile", str(shipped_profile(workdir / "profile")), "--configfile", *configs]
    log_path = workdir / "rehearsal.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(["bash", "-c", f"{shlex.join(build)} && {shlex.join(run)}"], cwd=workdir,
                                env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
    yield workdir, proc, log_path
    if proc.poll() is None:  # a test before the rehearsal's failed the module
        wait_for(proc, time.monotonic())


@pytest.fixture(scope="module")
def runs(tmp_path_factory, rehearsal) -> dict[str, Run]:
    """The runs of tests/slurm/Snakefile, side by side (after the rehearsal has started: see there): most of
    their time is waiting for a time limit, its signal or a sleep, which they do together."""
    require_local_cluster()
    root = tmp_path_factory.mktemp("slurm")
    arguments = {  # the slow ones first, so they get a CPU at once
        "timeout": ["results/timeout.txt"],
        "resume": ["results/resumed.txt", "--retries", "1"],
        "resumed_bundle": [*[f"results/resumed_bundle/{i}.txt" for i in range(2)], "--group-components",
                           "gpu_resumed=2", "--retries", "1"],
        "bundled": [*[f"results/bundled/{i}.txt" for i in range(3)], "--group-components", "bundled=3"],
        "claimed": [*[f"results/claimed/{i}.txt" for i in range(2)], "--group-components", "gpu_bundled=2"],
        "warm_bundled": [*[f"results/warm_bundled/{i}.json" for i in range(2)], "--group-components",
                         "trainer_bundled=2"],
        "fail": ["results/failed.txt"],
        "ok": ["results/host.txt", "results/gpu.txt", "results/gpu_count.txt", "results/local.txt"],
    }
    started = {name: start_snakemake(root / name, *args) for name, args in arguments.items()}
    deadline = time.monotonic() + RUN_TIMEOUT_S
    return {
        name: Run(root / name, wait_for(proc, deadline), log_path.read_text())
        for name, (proc, log_path) in started.items()
    }


def test_jobs_run_as_slurm_jobs(runs):
    ok = runs["ok"]
    assert ok.returncode == 0, ok.log[-4000:]
    assert len(ok.slurm_job_ids) == 3, ok.log[-4000:]
    record = environment_record(ok.workdir / "results/host.txt")
    assert record["SLURM_JOB_ID"] in ok.slurm_job_ids, record
    assert record["SLURM_JOB_PARTITION"] == CPU_PARTITION
    for job_id in ok.slurm_job_ids:
        job = slurm_job(job_id)
        assert job["JobState"] == "COMPLETED", job


def test_jobs_land_on_their_partition(runs):
    """As profiles/slurm lays it out: CPU jobs on the default (CPU) partition, the rules with a GPU
    (gres or gpu resource) on the GPU partition, and a localrule never reaches SLURM."""
    ok = runs["ok"]
    assert ok.returncode == 0, ok.log[-4000:]
    partitions = {}
    for job_id in ok.slurm_job_ids:
        job = slurm_job(job_id)
        partitions[rule_of(job)] = job["Partition"]
    assert partitions == {"record_host": CPU_PARTITION, "use_gpu": GPU_PARTITION,
                          "use_gpu_count": GPU_PARTITION}
    record = environment_record(ok.workdir / "results/local.txt")  # written by the Snakemake process itself
    assert record["SLURM_JOB_ID"] == "unset", record


@pytest.mark.parametrize("output", ["results/gpu.txt", "results/gpu_count.txt"], ids=["gres", "gpu"])
def test_gpu_rules_get_the_gpu(runs, output):
    """Both ways to ask for a GPU: resources gres="gpu:1" (--gres) and gpu=1 (--gpus, as train_lapt)."""
    ok = runs["ok"]
    assert ok.returncode == 0, ok.log[-4000:]
    record = environment_record(ok.workdir / output)
    assert record["SLURM_JOB_ID"] in ok.slurm_job_ids, record
    # one fake GPU, as SLURM sets it (which of the node's, where it has several, depends on the other jobs)
    assert re.fullmatch(r"\d+", record["CUDA_VISIBLE_DEVICES"]), record
    assert record["SLURM_JOB_PARTITION"] == GPU_PARTITION, record
    job = slurm_job(record["SLURM_JOB_ID"])
    requested = " ".join(job.get(key, "") for key in ("TresPerNode", "TresPerJob", "TRES"))
    assert "gpu:1" in requested or "gres/gpu=1" in requested, job


def test_failing_job_fails_the_workflow_and_leaves_no_output(runs):
    fail = runs["fail"]
    assert fail.returncode not in (0, -1), fail.log[-4000:]
    assert "Error in rule fail_on_purpose" in fail.log, fail.log[-4000:]
    assert not (fail.workdir / "results/failed.txt").exists()
    (job_id,) = fail.slurm_job_ids
    job = slurm_job(job_id)
    assert job["JobState"] == "FAILED", job
    assert job["ExitCode"].startswith("1:"), job


def test_time_limit_is_enforced_by_slurm(runs):
    timeout = runs["timeout"]
    assert timeout.returncode not in (0, -1), timeout.log[-4000:]
    assert "Error in rule exceed_time_limit" in timeout.log, timeout.log[-4000:]
    assert "TIMEOUT" in timeout.log, timeout.log[-4000:]
    assert not (timeout.workdir / "results/timeout.txt").exists()
    (job_id,) = timeout.slurm_job_ids
    job = slurm_job(job_id)
    assert job["JobState"] == "TIMEOUT", job
    assert job.get("TimeLimit", "00:01:00") == "00:01:00", job


def test_signal_before_time_limit_lets_a_job_checkpoint_and_resume(runs):
    """profiles/slurm's `--signal=TERM@300`: the training process gets SIGTERM ahead of the limit
    while Snakemake's own processes in the job survive it; the retry resumes from the checkpoint."""
    resume = runs["resume"]
    assert resume.returncode == 0, resume.log[-4000:]
    first, second = resume.slurm_job_ids
    record = environment_record(resume.workdir / "results/resumed.txt")
    assert record["signal"] == "SIGTERM", record
    assert record["checkpointed_by"] == first and record["resumed_by"] == second, record
    assert int(record["elapsed_s"]) < 120, record  # before the 2-minute time limit
    assert slurm_job(first)["JobState"] == "FAILED"  # ended by the checkpoint's exit, not TIMEOUT
    assert slurm_job(second)["JobState"] == "COMPLETED"


def test_bundled_jobs_run_side_by_side_in_one_slurm_job(runs):
    """Three jobs of one group with --group-components bundled=3: one sbatch, one SLURM job, and inside it one
    group job whose jobs run in one Snakemake (not one after another, each in its own)."""
    run = runs["bundled"]
    assert run.returncode == 0, run.log[-4000:]
    assert len(run.slurm_job_ids) == 1, run.log[-4000:]
    records = [environment_record(run.workdir / f"results/bundled/{i}.txt") for i in range(3)]
    assert {r["SLURM_JOB_ID"] for r in records} == set(run.slurm_job_ids)
    # one group job inside the SLURM job: one Snakemake runs the three (three group jobs would run one by one)
    job_log = (run.workdir / "logs/slurm/group_bundled_record_bundled"
               / f"{run.slurm_job_ids[0]}.log").read_text()
    assert job_log.count("Group job bundled") == 1, job_log[-4000:]
    assert rule_of(slurm_job(run.slurm_job_ids[0])) == "bundled_record_bundled"


def test_bundled_gpu_jobs_each_claim_their_own_gpu(runs):
    """Two one-GPU jobs bundled into one SLURM job: it asks for 2 GPUs (--gpus=2), and the jobs, running at
    the same time and each claiming its own (launch --claim), see different ones of them."""
    run = runs["claimed"]
    assert run.returncode == 0, run.log[-4000:]
    (job_id,) = run.slurm_job_ids
    records = [environment_record(run.workdir / f"results/claimed/{i}.txt") for i in range(2)]
    assert {r["SLURM_JOB_ID"] for r in records} == {job_id}, records
    assert max(int(r["started"]) for r in records) < min(int(r["ended"]) for r in records), records
    devices = [r["CUDA_VISIBLE_DEVICES"] for r in records]
    assert len(set(devices)) == 2 and all(d and "," not in d for d in devices), devices
    job = slurm_job(job_id)
    assert job["Partition"] == GPU_PARTITION, job
    requested = " ".join(job.get(key, "") for key in ("TresPerNode", "TresPerJob", "TRES"))
    assert "gpu:2" in requested or "gres/gpu=2" in requested, job
    logs = "".join((run.workdir / f"logs/claim_gpu/{i}.log").read_text() for i in range(2))
    assert logs.count(f"in SLURM job {job_id}") == 2, logs  # each claim is logged


def test_a_bundle_of_trainer_jobs_forks_them_from_a_starter_of_its_allocation(runs):
    """Two trainer jobs bundled into one SLURM job (as fine-tuning's bundles): the Snakemake inside the
    allocation started a warm starter there, each job's `python -m` trainer ran in a child of it (the
    starter's allocation is the job's), on a GPU of its own, and each job's benchmark file was written by
    its launcher."""
    run = runs["warm_bundled"]
    assert run.returncode == 0, run.log[-4000:]
    (job_id,) = run.slurm_job_ids
    records = [json.loads((run.workdir / f"results/warm_bundled/{i}.json").read_text()) for i in range(2)]
    assert all(r["VOCAB_TRANSFER_WARM_CHILD"] == "1" for r in records), records
    assert {(r["SLURM_JOB_ID"], r["VOCAB_TRANSFER_WARM_ALLOCATION"]) for r in records} == {(job_id, job_id)}
    assert len({r["CUDA_VISIBLE_DEVICES"] for r in records}) == 2, records
    for i in range(2):
        log = (run.workdir / f"logs/warm_bundled/{i}.log").read_text()
        assert "ran in a child of the warm starter" in log, log
        header, row = (run.workdir / f"benchmarks/warm_bundled/{i}.tsv").read_text().splitlines()
        bench = dict(zip(header.split("\t"), row.split("\t"), strict=True))
        assert float(bench["s"]) > 0 and float(bench["max_rss"]) > 0, bench


def test_bundled_trainings_checkpoint_on_the_signal_and_resume_together(runs):
    """Two resumable GPU jobs in one SLURM job (as train_lapt's bundles): SLURM's SIGTERM ahead of the time
    limit reaches both trainers through their claims' exec, both checkpoint, the bundle fails, and its one
    retry resumes both; each ran on a GPU of its own."""
    run = runs["resumed_bundle"]
    assert run.returncode == 0, run.log[-4000:]
    first, second = run.slurm_job_ids
    records = [environment_record(run.workdir / f"results/resumed_bundle/{i}.txt") for i in range(2)]
    for record in records:
        assert record["signal"] == "SIGTERM", record
        assert record["checkpointed_by"] == first and record["resumed_by"] == second, record
        assert int(record["elapsed_s"]) < 120, record
    assert len({record["gpus"] for record in records}) == 2, records
    assert slurm_job(first)["JobState"] == "FAILED"
    assert slurm_job(second)["JobState"] == "COMPLETED"


def shipped_profile(directory: Path, cpus: int = 2) -> Path:
    """profiles/slurm/config.yaml for this cluster, written to `directory`
    (vocab_transfer.workflow.cluster.local_profile: partitions and accounts of this cluster, CPUs and memory
    per job capped to what the node has), with the run settings (status command, polling, retries) of
    tests/slurm/profile."""
    from vocab_transfer.workflow.cluster import local_profile

    local = yaml.safe_load((PROFILE / "config.yaml").read_text())
    local_profile(SHIPPED_PROFILE, directory, cpus=cpus, mem_mb=4000,
                  settings={key: value for key, value in local.items() if not key.endswith("-resources")})
    return directory


def test_pipeline_jobs_run_through_sbatch_on_their_partition(tmp_path):
    """The tiny pipeline's own jobs with the shipped profile (its inputs built locally first): train_lapt
    (a GPU rule) runs on the GPU partition and writes a loadable model, pack_heldout (a CPU rule) on the
    CPU partition, and prepare_task (a localrule) in the Snakemake process, without sbatch."""
    require_local_cluster()
    tiny = REPO / "tests" / "data" / "tiny_config.yaml"
    base = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile")]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    model = "results/lapt/tiny/sw/focus/model"
    targets = [model, "results/eval_init/heldout/sw.safetensors", "results/tasks/he-ner"]
    local = subprocess.run([*base, "results/init/tiny/sw/focus.safetensors", "results/shards/sw/heldout",
                            "--cores", "2", "--configfile", str(tiny)], cwd=tmp_path, env=env,
                           capture_output=True, text=True)
    assert local.returncode == 0, local.stdout[-2000:] + local.stderr[-3000:]
    profile = shipped_profile(tmp_path / "profile")
    remote = subprocess.run([*base, *targets, "--profile", str(profile), "--configfile", str(tiny)],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    log = remote.stdout + remote.stderr
    assert remote.returncode == 0, log[-4000:]
    partitions = {}
    for job_id in submitted_job_ids(log):
        job = slurm_job(job_id)
        assert job["JobState"] == "COMPLETED", job
        partitions[rule_of(job)] = job["Partition"]
    # exactly these two jobs went through sbatch; prepare_task ran here
    assert partitions == {"train_lapt": GPU_PARTITION, "pack_heldout": CPU_PARTITION}, log[-3000:]
    assert (tmp_path / model / "model.safetensors").is_file()
    assert (tmp_path / "results/lapt/tiny/sw/focus/curve.parquet").is_file()
    assert (tmp_path / "results/tasks/he-ner/train.parquet").is_file()


def test_the_rehearsal_writes_a_table_of_each_paper_through_slurm(rehearsal):
    """configs/papers.yaml with the rehearsal overlay, as the cluster runs it: the downloads read the hub
    mirror on the login node (no job of a download or table rule reaches SLURM), the other jobs run through
    sbatch on the partition the shipped profile gives their rule, and each paper's table is written with its
    cells."""
    from vocab_transfer.workflow.studies import study_of_rule

    workdir, proc, log_path = rehearsal
    returncode = wait_for(proc, time.monotonic() + 900)
    log = log_path.read_text()
    assert returncode == 0, log[-6000:]
    gpu_rules = {rule for rule, res in yaml.safe_load(SHIPPED_PROFILE.read_text())["set-resources"].items()
                 if res.get("slurm_partition") == "<gpu-partition>"}
    partitions: dict[str, set[str]] = {}
    for job_id in submitted_job_ids(log):
        job = slurm_job(job_id)
        assert job["JobState"] == "COMPLETED", job
        for rule in rules_of(job):
            partitions.setdefault(rule, set()).add(job["Partition"])
    studies = [yaml.safe_load((REPO / f).read_text())["study"]
               for f in yaml.safe_load((REPO / "configs/papers.yaml").read_text())["studies"]]
    for rule, parts in partitions.items():
        base = rule.removeprefix(f"{study_of_rule(rule, studies)}_")
        assert not base.startswith(("download_", "make_paper_table")), rule  # localrules: on the login node
        assert parts == {GPU_PARTITION if base in gpu_rules else CPU_PARTITION}, (rule, parts)
    assert {"focus_prepare_corpus", "wechsel_init_embeddings", "unks_compute_overlap",
            "vocab_swap_frankenberta_train_lapt"} <= set(partitions), sorted(partitions)
    for path in rehearsal_tables():
        text = (workdir / path).read_text()
        assert text.count("\n|") >= 3, text  # a header, its rule and at least one row of cells
    fetched = json.loads((workdir / "resources/corpora/cc100-de/fetch.json").read_text())
    assert fetched["repo"] == "statmt/cc100" and fetched["resolved_revision"] == "mirror", fetched

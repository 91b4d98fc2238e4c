"""What a job costs on top of its command when it runs through SLURM with the shipped profile.

A Snakefile of ``--jobs`` trivial jobs (``echo``) runs through the local single-node SLURM of
scripts/slurm/start.sh with profiles/slurm/config.yaml as scripts/rehearse.sh runs it (placeholders filled in,
vocab_transfer.workflow.cluster.local_profile: the local run settings). Prints the wall time of the whole
``snakemake`` call, the SLURM jobs it submitted (``sbatch``) and the wall seconds per step.

    python benchmarks/slurm_overhead.py                      # one job, then 8 side by side
    python benchmarks/slurm_overhead.py --jobs 8 --group 8   # the 8 in one group job (--group-components)
    python benchmarks/slurm_overhead.py --settings shipped   # the shipped profile's polling
    python benchmarks/slurm_overhead.py --profile ../other/profiles/slurm/config.yaml   # another checkout's

Needs the local cluster (sudo bash scripts/slurm/start.sh); submits only its own jobs.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SNAKEFILE = """
from vocab_transfer.workflow.bundles import pass_group_settings_to_slurm_jobs

pass_group_settings_to_slurm_jobs()  # as rules/common.smk: a bundle's jobs side by side in its SLURM job
N = {jobs}

rule all:
    input: expand("out/{{i}}.txt", i=range(N))

rule echo:
    output: "out/{{i}}.txt"
    {group}
    shell: "echo {{wildcards.i}} > {{output}}"
"""


def run(jobs: int, group: int, settings: str, workdir: Path,
        shipped: Path = REPO / "profiles/slurm/config.yaml") -> dict:
    """One ``snakemake`` call of ``jobs`` trivial jobs in ``workdir``: its wall seconds and sbatch count."""
    from vocab_transfer.workflow.cluster import LOCAL_RUN_SETTINGS, local_profile

    # the shipped profile's own polling; squeue for the status, as this cluster has no accounting (sacct)
    chosen = {"local": LOCAL_RUN_SETTINGS, "shipped": {"slurm-status-command": "squeue"}}[settings]
    workdir.mkdir(parents=True)
    group_line = 'group: "trivial"' if group > 1 else ""
    (workdir / "Snakefile").write_text(SNAKEFILE.format(jobs=jobs, group=group_line))
    profile = local_profile(shipped, workdir / "profile", cpus=1, mem_mb=300,
                            settings=chosen)
    cmd = [sys.executable, "-m", "snakemake", "--profile", profile]
    if group > 1:
        cmd += ["--group-components", f"trivial={group}"]
    start = time.monotonic()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, env=env)
    wall = time.monotonic() - start
    if out.returncode != 0:
        raise SystemExit(f"snakemake failed ({out.returncode}):\n{out.stdout[-3000:]}{out.stderr[-3000:]}")
    log = out.stdout + out.stderr
    return {"jobs": jobs, "sbatch": len(re.findall(r"submitted with SLURM jobid", log)), "wall_s": wall}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--jobs", type=int, nargs="+", default=[1, 8], help="trivial jobs per run (one run each)")
    p.add_argument("--group", type=int, default=1,
                   help="jobs per SLURM job (--group-components; 1: no group)")
    p.add_argument("--settings", choices=["local", "shipped"], default="local",
                   help="the status polling of the local run settings or of the shipped profile")
    p.add_argument("--profile", type=Path, default=REPO / "profiles/slurm/config.yaml",
                   help="the shipped profile to start from (another checkout's, to compare)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="slurm-overhead-") as tmp:
        for n in args.jobs:
            r = run(n, args.group, args.settings, Path(tmp) / f"run{n}", args.profile)
            print(f"{r['jobs']} job(s), {r['sbatch']} sbatch, {args.settings} polling: "
                  f"{r['wall_s']:.1f} s wall, "
                  f"{r['wall_s'] / r['jobs']:.1f} s per step", flush=True)


if __name__ == "__main__":
    main()

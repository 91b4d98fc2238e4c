"""Checks of a run's jobs against the cluster they go to, before any job is submitted (the Snakefile's ``onstart``).

- a profile placeholder left unfilled (``slurm_partition: "<gpu-partition>"``) names the resource, the rules that
  would carry it and the file to edit;
- a job that asks for GPUs on a partition whose nodes have none (``sinfo -p <partition> -o %G``) names the rule and
  the partition;
- multi-node LAPT (``lapt.nodes`` > 1) on an executor other than SLURM names the key.

Torch-free; ``sinfo`` is only called for the partitions of GPU jobs, once each.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable, Iterable

PROFILE = "profiles/slurm/config.yaml"
PLACEHOLDER = re.compile(r"^<[^<>]+>$")
SNAKEMAKE_OWN = ("tmpdir", "_nodes", "_cores")  # resources Snakemake sets itself ("<TBD>" until a job runs)


def partition_gres(partition: str) -> str | None:
    """The generic resources of a partition's nodes as ``sinfo`` prints them (``gpu:a100:4``, ``(null)``), ``""``
    for a partition SLURM does not know, None without ``sinfo``."""
    if shutil.which("sinfo") is None:
        return None
    out = subprocess.run(["sinfo", "-h", "-p", partition, "-o", "%G"], capture_output=True, text=True, timeout=60)
    return " ".join(out.stdout.split()) if out.returncode == 0 else None


def check_submission(executor: str, jobs: Iterable[tuple[str, dict]], *, lapt_nodes: int = 1,
                     gres: Callable[[str], str | None] = partition_gres) -> list[str]:
    """Problems of the jobs ``(rule, resources)`` a run is about to submit with ``executor``; empty when none."""
    jobs = list(jobs)
    problems = []
    if lapt_nodes > 1 and executor != "slurm" and any(rule == "train_lapt" for rule, _ in jobs):
        problems.append(f"lapt.nodes: {lapt_nodes} nodes per LAPT job need the SLURM executor (snakemake --profile "
                        f"slurm), not {executor!r}; set lapt.nodes: 1 to train on this machine")
    if executor != "slurm":
        return problems
    unfilled: dict[tuple[str, str], list[str]] = {}
    for rule, resources in jobs:
        for key, value in resources.items():
            if key in SNAKEMAKE_OWN or not isinstance(value, str) or value == "<TBD>":  # Snakemake's, filled per job
                continue
            if PLACEHOLDER.match(value.strip("'\"")):
                unfilled.setdefault((key, value.strip("'\"")), []).append(rule)
    for (key, value), rules in sorted(unfilled.items()):
        names = sorted(set(rules))
        problems.append(f"{PROFILE}: {key} is still the placeholder {value!r} (rules {', '.join(names[:5])}"
                        + (", ..." if len(names) > 5 else "") + "): replace it with your cluster's value "
                        "(partitions: sinfo -s; accounts: sacctmgr show assoc user=$USER format=account)")
    cache: dict[str, str | None] = {}
    reported: set[tuple[str, str]] = set()
    for rule, resources in jobs:
        partition = str(resources.get("slurm_partition", "")).strip("'\"")
        if not _gpus(resources) or not partition or PLACEHOLDER.match(partition) or (rule, partition) in reported:
            continue
        if partition not in cache:
            cache[partition] = gres(partition)
        found = cache[partition]
        if found is None:  # no sinfo here: nothing to check against
            continue
        reported.add((rule, partition))
        if found == "":
            problems.append(f"{PROFILE}: rule {rule} goes to partition {partition!r}, which SLURM does not know "
                            "(sinfo -s lists the partitions)")
        elif "gpu" not in found.lower():
            problems.append(f"{PROFILE}: rule {rule} asks for {_gpus(resources)} GPU(s) on partition {partition!r}, "
                            f"whose nodes have none (sinfo -p {partition} -o %G: {found}); set its slurm_partition "
                            "to a GPU partition")
    return problems


def _gpus(resources: dict) -> int:
    """GPUs a job asks for: its ``gpu`` resource, or the count in a ``gres`` of ``gpu[:type]:N``."""
    gpu = resources.get("gpu") or 0
    if not gpu and "gpu" in str(resources.get("gres", "")):
        gpu = int(str(resources["gres"]).rsplit(":", 1)[-1]) if str(resources["gres"])[-1:].isdigit() else 1
    return int(gpu)

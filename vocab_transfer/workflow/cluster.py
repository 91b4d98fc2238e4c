"""Checks of a run against the cluster it goes to.

While the workflow is parsed (every call, ``-n`` included; rules/common.smk), :func:`check_profile` refuses a profile
placeholder left unfilled in the resources Snakemake was given (``default-resources``, ``set-resources``), naming the
key and the profile file. Before the first job is submitted (the Snakefile's ``onstart``), :func:`check_submission`
checks the jobs themselves:

- a placeholder in a job's resources (``slurm_partition: "<gpu-partition>"``; one from the profile is refused while
  parsing already) names the resource, the rules that would carry it and the file to edit;
- a job that asks for GPUs on a partition whose nodes have none (``sinfo -p <partition> -o %G``) names the rule and
  the partition;
- multi-node LAPT (``lapt.nodes`` > 1) on an executor other than SLURM names the key.

Torch-free; ``sinfo`` is only called for the partitions of GPU jobs, once each.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence

PROFILE = "profiles/slurm/config.yaml"
PLACEHOLDER = re.compile(r"^<[^<>]+>$")
SNAKEMAKE_OWN = ("tmpdir", "_nodes", "_cores")  # resources Snakemake sets itself ("<TBD>" until a job runs)


#: What to run to find the value of a placeholder's resource.
WHERE_TO_LOOK = {"slurm_partition": "partitions: sinfo -s",
                 "slurm_account": "accounts: sacctmgr show assoc user=$USER format=account,partition"}


def resource_values(resources) -> dict:
    """``{name: value as written}`` of Snakemake's parsed resources (``workflow.resource_settings.default_resources``
    or one rule's entry of ``overwrite_resources``); empty for None."""
    if resources is None:
        return {}
    return {name: getattr(r, "raw", r) for name, r in resources.items()}


def profile_file(argv: Sequence[str], environ: Mapping[str, str] = os.environ) -> str:
    """The file of the profile a Snakemake command line names (its last ``--profile``, else ``$SNAKEMAKE_PROFILE``),
    relative to the working directory where it lies below it; :data:`PROFILE` where none is named or found."""
    named = [a.split("=", 1)[1] for a in argv if a.startswith("--profile=")]
    named += [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--profile"]
    profile = named[-1] if named else environ.get("SNAKEMAKE_PROFILE")
    if not profile:
        return PROFILE
    try:
        from snakemake.cli import get_profile_dir

        found = get_profile_dir(profile)
    except Exception:  # an older or newer Snakemake: name the shipped profile
        found = None
    if found is None:
        return PROFILE
    path = os.path.realpath(found[1])
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def check_profile(default_resources: Mapping[str, object], set_resources: Mapping[str, Mapping[str, object]],
                  profile: str = PROFILE) -> list[str]:
    """Placeholders (``"<cpu-partition>"``) left in the resources a profile gives: ``default_resources`` (``{name:
    value}``) and ``set_resources`` (``{rule: {name: value}}``); one line per resource and placeholder, naming the
    key, the rules it applies to and ``profile``; empty when none is left."""
    found: dict[tuple[str, str], list[str]] = {}
    for section, rule, resources in [("default-resources", None, default_resources),
                                     *(("set-resources", r, res) for r, res in set_resources.items())]:
        for key, value in resources.items():
            value = value.strip("'\"") if isinstance(value, str) else value
            if key in SNAKEMAKE_OWN or not isinstance(value, str) or not PLACEHOLDER.match(value) or value == "<TBD>":
                continue
            found.setdefault((key, value), []).append(section if rule is None else rule)
    problems = []
    for (key, value), where in found.items():
        rules = [w for w in where if w != "default-resources"]
        scope = (["default-resources: every rule without its own"] if "default-resources" in where else []) + \
            ([f"set-resources: {', '.join(rules[:5])}" + (", ..." if len(rules) > 5 else "")] if rules else [])
        look = f" ({WHERE_TO_LOOK[key]})" if key in WHERE_TO_LOOK else ""
        problems.append(f"{profile}: {key} is still the placeholder {value!r} ({'; '.join(scope)}): replace it "
                        f"with your cluster's value{look}")
    return problems


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


#: Run settings for the single-node cluster of scripts/slurm (no slurmdbd, so job states come from squeue,
#: which keeps finished jobs for MinJobAge=600 s). Status polls run ten times as often as the shipped
#: profile's: its two intervals (seconds-between-status-checks, slurm-init-seconds-before-status-checks: 20 s)
#: divided by 10, so 2 s; the 10 s the plugin adds after each poll that sees no job finish, and its 180 s cap,
#: are its own and stay as they are. A job is noticed 2-12 s after it ends here while jobs end often, 20-30 s
#: on a cluster (docs/benchmarks.md).
LOCAL_RUN_SETTINGS = {"slurm-status-command": "squeue", "slurm-init-seconds-before-status-checks": 2,
                      "seconds-between-status-checks": 2, "slurm-keep-successful-logs": True, "latency-wait": 5}


def local_profile(shipped: str | os.PathLike, out_dir: str | os.PathLike, *, cpus: int = 2, mem_mb: int = 4000,
                  settings: Mapping[str, object] = LOCAL_RUN_SETTINGS) -> str:
    """The shipped profile (profiles/slurm/config.yaml) for the single-node cluster of scripts/slurm, written to
    ``out_dir``/config.yaml: its partition placeholders filled in with that cluster's ``cpu`` and ``gpu``, its
    accounts dropped (no accounting there), CPUs and memory per job capped at ``cpus`` / ``mem_mb``, and the run
    ``settings`` over its own. Everything else (retries, rules on the GPU partition, signals) stays the shipped
    profile's. Returns the folder."""
    from pathlib import Path

    import yaml

    text = Path(shipped).read_text()
    for placeholder, partition in {"<cpu-partition>": "cpu", "<gpu-partition>": "gpu"}.items():
        if placeholder not in text:
            raise ValueError(f"{shipped}: no placeholder {placeholder} to fill in")
        text = text.replace(placeholder, partition)
    profile = yaml.safe_load(text)  # anchors resolved, as Snakemake reads it
    for resources in [profile["default-resources"], *profile["set-resources"].values()]:
        resources.pop("slurm_account", None)
        if isinstance(resources.get("cpus_per_task"), int):
            resources["cpus_per_task"] = min(resources["cpus_per_task"], cpus)
        if isinstance(resources.get("mem_mb"), int):
            resources["mem_mb"] = min(resources["mem_mb"], mem_mb)
    profile.update(settings)
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    (Path(out_dir) / "config.yaml").write_text(yaml.safe_dump(profile, sort_keys=False))
    return str(out_dir)

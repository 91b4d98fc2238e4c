"""Checks of a run against the cluster it goes to.

While the workflow is parsed (every call, ``-n`` included; rules/common.smk), :func:`check_profile` refuses a
profile placeholder left unfilled in the resources Snakemake was given (``default-resources``,
``set-resources``), naming the key and the profile file. Before the first job is submitted (the Snakefile's
``onstart``), :func:`check_submission` checks the jobs themselves:

- a placeholder in a job's resources (``slurm_partition: "<gpu-partition>"``; one from the profile is refused
  while parsing already) names the resource, the rules that would carry it and the file to edit;
- a job that asks for GPUs on a partition whose nodes have none (``sinfo -p <partition> -o %G``) names the
  rule and the partition;
- on a cluster that enforces accounts (``scontrol show config``: ``AccountingStorageEnforce`` with
  ``associations``, ``limits``, ``qos`` or ``safe``), a job without ``slurm_account``, or with an account that
  ``sacctmgr show assoc`` does not list for the user, names the rules and the account;
- a job without GPUs on a partition where other jobs of the run ask for GPUs (not the default partition) names
  the rules and the partition;
- multi-node LAPT (``lapt.nodes`` > 1) on an executor other than SLURM names the key.

Torch-free; ``sinfo`` is only called for the partitions of GPU jobs, once each, ``scontrol``/``sacctmgr`` once
per check. :func:`local_profile` turns a profile (placeholders filled in or not) into one for the single-node
cluster of scripts/slurm, for the dress rehearsal (scripts/rehearse.sh).
"""

from __future__ import annotations

import functools
import getpass
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

PROFILE = "profiles/slurm/config.yaml"
PLACEHOLDER = re.compile(r"^<[^<>]+>$")
SNAKEMAKE_OWN = ("tmpdir", "_nodes", "_cores")  # resources Snakemake sets itself ("<TBD>" until a job runs)
#: What to run to find the value of a placeholder's resource.
WHERE_TO_LOOK = {"slurm_partition": "partitions: sinfo -s",
                 "slurm_account": "accounts: sacctmgr show assoc user=$USER format=account,partition"}


def _unquoted(value) -> str:
    return str(value).strip("'\"")


def _rules(rules: Iterable[str]) -> str:
    """The first five of ``rules``, sorted and without repeats (``...`` for the others)."""
    names = sorted(set(rules))
    return ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")


def resource_values(resources) -> dict:
    """``{name: value as written}`` of Snakemake's parsed resources
    (``workflow.resource_settings.default_resources`` or a rule's ``overwrite_resources``); '' for None."""
    return {} if resources is None else {name: getattr(r, "raw", r) for name, r in resources.items()}


def profile_file(argv: Sequence[str], environ: Mapping[str, str] = os.environ) -> str:
    """The file of the profile a Snakemake command line names (its last ``--profile``, else
    ``$SNAKEMAKE_PROFILE``), relative to the working directory where it lies below it; :data:`PROFILE` where
    none is named or found."""
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
    """Placeholders (``"<cpu-partition>"``) left in the resources a profile gives: ``default_resources``
    (``{name: value}``) and ``set_resources`` (``{rule: {name: value}}``); one line per resource and
    placeholder, naming the key, the rules it applies to and ``profile``; empty when none is left."""
    found: dict[tuple[str, str], list[str]] = {}
    for section, rule, resources in [("default-resources", None, default_resources),
                                     *(("set-resources", r, res) for r, res in set_resources.items())]:
        for key, value in resources.items():
            value = _unquoted(value) if isinstance(value, str) else value
            if key not in SNAKEMAKE_OWN and isinstance(value, str) and PLACEHOLDER.match(value) \
                    and value != "<TBD>":
                found.setdefault((key, value), []).append(section if rule is None else rule)
    problems = []
    for (key, value), where in found.items():
        rules = [w for w in where if w != "default-resources"]
        scope = ["default-resources: every rule without its own"] if "default-resources" in where else []
        if rules:
            scope.append(f"set-resources: {', '.join(rules[:5])}{', ...' if len(rules) > 5 else ''}")
        look = f" ({WHERE_TO_LOOK[key]})" if key in WHERE_TO_LOOK else ""
        problems.append(f"{profile}: {key} is still the placeholder {value!r} ({'; '.join(scope)}): replace "
                        f"it with your cluster's value{look}")
    return problems


def check_profile_filled(resource_settings, argv: Sequence[str]) -> str | None:
    """Why nothing may run yet, or None: :func:`check_profile` on the resources Snakemake was given
    (``workflow.resource_settings``: ``default_resources``, ``overwrite_resources``) and the profile ``argv``
    names. Called while the workflow is parsed, by rules/common.smk for one config and by rules/studies.smk
    for a composite (before it copies the per-rule settings to each study's rules)."""
    problems = check_profile(
        resource_values(resource_settings.default_resources),
        {rule: resource_values(r) for rule, r in resource_settings.overwrite_resources.items()},
        profile_file(argv))
    return ("nothing submitted: fill in the profile's placeholders first\n  " + "\n  ".join(problems)
            if problems else None)


def partition_gres(partition: str) -> str | None:
    """The generic resources of a partition's nodes as ``sinfo`` prints them (``gpu:a100:4``, ``(null)``),
    ``""`` for a partition SLURM does not know, None without ``sinfo``."""
    if shutil.which("sinfo") is None:
        return None
    out = subprocess.run(["sinfo", "-h", "-p", partition, "-o", "%G"], capture_output=True, text=True,
                         timeout=60)
    return " ".join(out.stdout.split()) if out.returncode == 0 else None


#: Values of ``AccountingStorageEnforce`` under which a job needs an account with an association (SLURM's
#: slurm.conf: ``limits``, ``qos`` and ``safe`` imply ``associations``).
ENFORCING = ("associations", "limits", "qos", "safe")


def cluster_accounts() -> tuple[str, set[str] | None] | None:
    """What the cluster here asks of a job's account: ``(AccountingStorageEnforce, accounts)``, the first as
    ``scontrol show config`` prints it (``none``, ``associations,limits``), the second the accounts ``sacctmgr
    show assoc`` lists for this user (None where it cannot say: without slurmdbd or ``scontrol``)."""
    if shutil.which("scontrol") is None:
        return None
    out = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        return None
    enforce = next((line.split("=", 1)[1].strip() for line in out.stdout.splitlines()
                    if line.split("=", 1)[0].strip() == "AccountingStorageEnforce"), "none")
    known = None
    if shutil.which("sacctmgr"):
        assoc = subprocess.run(["sacctmgr", "-n", "-P", "show", "assoc", f"user={getpass.getuser()}",
                                "format=account"], capture_output=True, text=True, timeout=60)
        if assoc.returncode == 0:
            known = {line.strip() for line in assoc.stdout.splitlines() if line.strip()}
    return enforce, known


def check_accounts(jobs: Iterable[tuple[str, dict]], enforce: str, known: set[str] | None) -> list[str]:
    """Problems of the jobs' ``slurm_account`` on a cluster whose ``AccountingStorageEnforce`` is ``enforce``
    and whose associations list the accounts ``known`` (None: not known): none: associations not enforced."""
    if not any(word in enforce.lower() for word in ENFORCING):
        return []
    missing: list[str] = []
    unknown: dict[str, list[str]] = {}
    for rule, resources in jobs:
        account = _unquoted(resources.get("slurm_account") or "")
        if not account:
            missing.append(rule)
        elif not PLACEHOLDER.match(account) and known is not None and account not in known:
            unknown.setdefault(account, []).append(rule)
    look = WHERE_TO_LOOK["slurm_account"]
    problems = []
    if missing:
        problems.append(f"{PROFILE}: rules {_rules(missing)} have no slurm_account, but this cluster "
                        f"enforces accounts (AccountingStorageEnforce={enforce}): set slurm_account under "
                        f"default-resources / set-resources ({look})")
    for account, rules in sorted(unknown.items()):
        problems.append(f"{PROFILE}: slurm_account {account!r} (rules {_rules(rules)}) has no association "
                        "for this user on this cluster (sacctmgr lists: "
                        f"{', '.join(sorted(known)) or 'none'}); replace it ({look})")
    return problems


def check_submission(executor: str, jobs: Iterable[tuple[str, dict]], *, lapt_nodes: int = 1,
                     gres: Callable[[str], str | None] = partition_gres,
                     accounts: Callable[[], tuple[str, set[str] | None] | None] = cluster_accounts,
                     default_partition: str | None = None) -> list[str]:
    """Problems of the jobs ``(rule, resources)`` a run is about to submit with ``executor``; empty when none.
    ``gres``: a partition's GPUs as ``sinfo`` prints them (:func:`partition_gres`); ``accounts``: the
    cluster's account enforcement and known accounts (:func:`cluster_accounts`). A job without GPUs on a
    partition other jobs of the run ask GPUs on (the GPU partition; not ``default_partition``, the
    default-resources' one, which may be a cluster's only partition) is one: sites refuse such jobs there."""
    jobs = list(jobs)
    problems = []
    if lapt_nodes > 1 and executor != "slurm" and any(rule == "train_lapt" for rule, _ in jobs):
        problems.append(f"lapt.nodes: {lapt_nodes} nodes per LAPT job need the SLURM executor (snakemake "
                        f"--profile slurm), not {executor!r}; set lapt.nodes: 1 to train on this machine")
    if executor != "slurm":
        return problems
    unfilled: dict[tuple[str, str], list[str]] = {}
    for rule, resources in jobs:
        for key, value in resources.items():
            # Snakemake's own are filled per job
            if key not in SNAKEMAKE_OWN and isinstance(value, str) and value != "<TBD>" \
                    and PLACEHOLDER.match(_unquoted(value)):
                unfilled.setdefault((key, _unquoted(value)), []).append(rule)
    for (key, value), rules in sorted(unfilled.items()):
        problems.append(f"{PROFILE}: {key} is still the placeholder {value!r} (rules {_rules(rules)}): "
                        "replace it with your cluster's value (partitions: sinfo -s; accounts: sacctmgr show "
                        "assoc user=$USER format=account)")
    gpu_partitions = {_unquoted(r.get("slurm_partition", "")) for _, r in jobs if _gpus(r)} - {""}
    gpuless: dict[str, set[str]] = {}
    for rule, resources in jobs:
        partition = _unquoted(resources.get("slurm_partition", ""))
        if not _gpus(resources) and partition in gpu_partitions and partition != default_partition:
            gpuless.setdefault(partition, set()).add(rule)
    for partition, rules in sorted(gpuless.items()):
        problems.append(f"{PROFILE}: rules {_rules(rules)} ask for no GPU on partition {partition!r}, "
                        "where other jobs ask for GPUs (a GPU partition, which sites refuse GPU-less jobs "
                        "on): give them a `gpu` resource of at least 1, or remove their entry from "
                        "set-resources to run them on the default partition")
    gres, reported = functools.cache(gres), set()
    for rule, resources in jobs:
        partition = _unquoted(resources.get("slurm_partition", ""))
        if (not _gpus(resources) or not partition or PLACEHOLDER.match(partition)
            or (rule, partition) in reported):
            continue
        found = gres(partition)
        if found is None:  # no sinfo here: nothing to check against
            continue
        reported.add((rule, partition))
        if found == "":
            problems.append(f"{PROFILE}: rule {rule} goes to partition {partition!r}, which SLURM does not "
                            "know (sinfo -s lists the partitions)")
        elif "gpu" not in found.lower():
            problems.append(f"{PROFILE}: rule {rule} asks for {_gpus(resources)} GPU(s) on partition "
                            f"{partition!r}, whose nodes have none (sinfo -p {partition} -o %G: {found}); "
                            "set its slurm_partition to a GPU partition")
    policy = accounts() if jobs else None
    if policy is not None:
        problems += check_accounts(jobs, *policy)
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
                      "seconds-between-status-checks": 2, "slurm-keep-successful-logs": True,
                      "latency-wait": 5}
#: The single-node cluster of scripts/slurm as :func:`local_profile` fills a profile in for it: its partitions
#: and the accounts its jobs carry (no slurmdbd: SLURM takes any account name), each ``(CPU jobs, GPU jobs)``.
LOCAL_PARTITIONS = ("cpu", "gpu")
LOCAL_ACCOUNTS = ("rehearsal-cpu", "rehearsal-gpu")


def gpu_type(gres: str | None) -> str | None:
    """The GPU type of what ``sinfo -o %G`` prints (``gpu:a100:4`` -> ``a100``); None: untyped or no GPUs."""
    for item in (gres or "").split(","):
        fields = item.split("(")[0].split(":")
        if fields[0] == "gpu" and len(fields) == 3:
            return fields[1]
    return None


def local_profile(shipped: str | os.PathLike, out_dir: str | os.PathLike, *,
                  cpus: int = 2, mem_mb: int = 4000, settings: Mapping[str, object] = LOCAL_RUN_SETTINGS,
                  signal_s: int | None = None,
                  local_gpu_type: str | None | Callable[[], str | None] = None) -> str:
    """The shipped profile (profiles/slurm/config.yaml, its placeholders filled in or not) for the single-node
    cluster of scripts/slurm, written to ``out_dir``/config.yaml. Whatever the partition and account keys hold
    becomes that cluster's: ``default-resources`` get the CPU partition and account of
    :data:`LOCAL_PARTITIONS` / :data:`LOCAL_ACCOUNTS`, a ``set-resources`` rule whose partition differs from
    the default one the GPU ones (the same as the default: the CPU ones). A ``gpu_model`` (and the type in a
    ``gres: gpu:<type>:N``) becomes the type of the local fake GPUs, ``local_gpu_type`` (a value or a
    function; None: ``sinfo -p gpu -o %G``), and is dropped where they have none. CPUs and memory per job are
    capped at ``cpus`` / ``mem_mb``; ``signal_s`` sets the lead of every ``--signal=TERM@<s>`` in
    ``slurm_extra``; the run ``settings`` go over the profile's own. Everything else (GPU counts, retries,
    rules on the GPU partition, signals) stays the profile's. Returns the folder; what was changed is listed
    at the top of the file."""
    import yaml

    profile = yaml.safe_load(Path(shipped).read_text())  # anchors resolved, as Snakemake reads it
    if not isinstance(profile, dict) or not isinstance(profile.get("default-resources"), dict):
        raise ValueError(f"{shipped}: no default-resources section to fill in")
    if callable(local_gpu_type) or local_gpu_type is None:
        local_gpu_type = (local_gpu_type or (lambda: gpu_type(partition_gres(LOCAL_PARTITIONS[1]))))()
    default = profile["default-resources"]
    cpu_partition = _unquoted(default.get("slurm_partition", ""))
    notes: set[str] = set()
    sections = [("default-resources", default), *((f"set-resources.{rule}", res) for rule, res in
                                                   (profile.get("set-resources") or {}).items())]
    for where, resources in sections:
        partition = _unquoted(resources.get("slurm_partition", cpu_partition))
        side = 0 if where == "default-resources" or partition == cpu_partition else 1
        for key, local in (("slurm_partition", LOCAL_PARTITIONS[side]),
                           ("slurm_account", LOCAL_ACCOUNTS[side]), ("gpu_model", local_gpu_type)):
            if key in resources and local:
                notes.add(f"{key} {resources[key]!r} -> {local!r}")
                resources[key] = local
        if "gpu_model" in resources and not local_gpu_type:
            notes.add(f"gpu_model {resources.pop('gpu_model')!r} dropped (the local GPUs have no type)")
        gres = str(resources.get("gres", ""))
        if re.fullmatch(r"gpu:[^:]+:\d+", gres):
            new = ":".join(filter(None, ("gpu", local_gpu_type, gres.rsplit(":", 1)[1])))
            notes.add(f"gres {gres!r} -> {new!r}")
            resources["gres"] = new
        if isinstance(resources.get("cpus_per_task"), int):
            resources["cpus_per_task"] = min(resources["cpus_per_task"], cpus)
        elif isinstance(resources.get("cpus_per_task"), str):  # an expression Snakemake evaluates per job
            # (`threads`): capped too, so that a bundle of 4-thread jobs fits the local node's CPUs
            notes.add(f"cpus_per_task {resources['cpus_per_task']} -> "
                      f"min({resources['cpus_per_task']}, {cpus})")
            resources["cpus_per_task"] = f"min({resources['cpus_per_task']}, {cpus})"
        if isinstance(resources.get("mem_mb"), int):
            resources["mem_mb"] = min(resources["mem_mb"], mem_mb)
        elif resources is not profile["default-resources"] and "mem_mb" not in resources:
            # a GPU rule asks what its model needs (workflow/resources.py), sized for the real models before
            # their download: the local node has a few GB
            notes.add(f"mem_mb of the GPU rules (from the work on a cluster) -> {mem_mb}")
            resources["mem_mb"] = mem_mb
        if signal_s is not None and isinstance(resources.get("slurm_extra"), str):
            extra = re.sub(r"(--signal=(?:B:)?[A-Z0-9]+@)\d+", rf"\g<1>{signal_s}", resources["slurm_extra"])
            if extra != resources["slurm_extra"]:
                notes.add(f"slurm_extra {resources['slurm_extra']} -> {extra}")
                resources["slurm_extra"] = extra
    profile.update(settings)
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    header = "".join(f"#   {note}\n" for note in sorted(notes))
    (Path(out_dir) / "config.yaml").write_text(
        f"# {shipped} for the single-node cluster of scripts/slurm "
        f"(vocab_transfer.workflow.cluster.local_profile):\n{header}"
        + yaml.safe_dump(profile, sort_keys=False))
    return str(out_dir)

"""The table of what every rule's jobs ask SLURM for in the composite config (configs/papers.yaml) with the
shipped profile (profiles/slurm/config.yaml, its placeholders filled with their names), as planned before any
data exists: jobs, threads, memory, time, GPUs, partition. It lives in docs/cluster.md between two markers.

    python scripts/requests_table.py            # print the table
    python scripts/requests_table.py --write    # write it into docs/cluster.md
    python scripts/requests_table.py --check    # exit 1 when docs/cluster.md holds another table

Plans the DAG as `snakemake -n` does (about 10 s); writes only .snakemake/ (and docs/cluster.md with --write).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import sys
from collections import defaultdict
from pathlib import Path

import yte

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "cluster.md"
PROFILE = REPO / "profiles" / "slurm" / "config.yaml"
CONFIG = Path("configs") / "papers.yaml"
BEGIN = "<!-- requests table: python scripts/requests_table.py --write -->"
END = "<!-- end of requests table -->"


def filled(value):
    """A profile value with its placeholder (``<gpu-partition>``) replaced by the name inside."""
    return re.sub(r"^<(.*)>$", r"\1", value) if isinstance(value, str) else value


def profile_resources() -> tuple[dict, dict]:
    """(default-resources, set-resources) of the shipped profile, placeholders filled."""
    with open(PROFILE) as f:
        profile = yte.process_yaml(f, require_use_yte=True)
    default = {k: filled(v) for k, v in profile["default-resources"].items()}
    per_rule = {rule: {k: filled(v) for k, v in spec.items() if k != "slurm_extra"}
                for rule, spec in profile["set-resources"].items()}
    return default, per_rule


def planned_jobs() -> list[tuple[str, bool, int, dict]]:
    """(rule, local, threads, resources) of every job of the composite's dry run, from the repository root."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import (
        ConfigSettings,
        DAGSettings,
        OutputSettings,
        ResourceSettings,
        WorkflowSettings,
    )

    default, per_rule = profile_resources()
    os.chdir(REPO)
    settings = ResourceSettings(cores=1024, default_resources=default, overwrite_resources=per_rule)
    with contextlib.redirect_stderr(io.StringIO()), SnakemakeApi(OutputSettings(quiet={"all"})) as api:
        workflow_api = api.workflow(settings, ConfigSettings(configfiles=[CONFIG]),
                                    snakefile=REPO / "Snakefile", workdir=REPO,
                                    workflow_settings=WorkflowSettings())
        workflow_api.dag(DAGSettings())
        wf = workflow_api._workflow
        wf._prepare_dag(forceall=False, ignore_incomplete=False, lock_warn_only=True)
        wf._build_dag()
        return [(job.rule.name, job.rule.name in wf._localrules, job.threads, dict(job.resources))
                for job in wf.dag.needrun_jobs() if not job.rule.norun]


def span(values) -> str:
    low, high = min(values), max(values)
    return f"{low:,}" if low == high else f"{low:,}–{high:,}"


def table() -> str:
    default, _ = profile_resources()
    rows, local = defaultdict(list), set()
    for rule, is_local, threads, resources in planned_jobs():
        if is_local:
            local.add(rule)
        else:
            rows[rule].append((threads, resources))
    lines = ["| rule | jobs | threads | mem_mb | runtime (min) | GPUs | nodes | partition |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    for rule in sorted(rows):
        jobs = rows[rule]
        partitions = {r.get("slurm_partition") for _, r in jobs}
        kind = "/".join(sorted("CPU" if p == default["slurm_partition"] else "GPU" for p in partitions))
        lines.append(f"| {rule} | {len(jobs):,} | {span([t for t, _ in jobs])} | "
                     f"{span([int(r['mem_mb']) for _, r in jobs])} | "
                     f"{span([int(r['runtime']) for _, r in jobs])} | "
                     f"{span([int(r.get('gpu', 0)) for _, r in jobs])} | "
                     f"{span([int(r.get('nodes', 1)) for _, r in jobs])} | {kind} |")
    lines += ["", f"Run on the login node (local rules, no request): {', '.join(sorted(local))}."]
    return "\n".join(lines) + "\n"


def splice(doc: str, body: str) -> str:
    start, end = doc.index(BEGIN) + len(BEGIN), doc.index(END)
    return doc[:start] + "\n\n" + body + "\n" + doc[end:]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", action="store_true", help="write the table into docs/cluster.md")
    group.add_argument("--check", action="store_true", help="exit 1 when docs/cluster.md holds another table")
    args = parser.parse_args(argv)
    body = table()
    doc = DOC.read_text()
    if args.write:
        DOC.write_text(splice(doc, body))
    elif args.check:
        if splice(doc, body) != doc:
            print(f"{DOC.relative_to(REPO)}: the requests table is not current; run python "
                  "scripts/requests_table.py --write", file=sys.stderr)
            return 1
    else:
        print(body, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())

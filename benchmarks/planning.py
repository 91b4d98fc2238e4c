"""Planning time: wall seconds of ``snakemake -n`` for every paper config, the demo config and a one-rule
Snakefile.

A user pays this on every call, also to rerun one target: Snakemake imports itself, parses the workflow (the
config checks and the plan, rules/common.smk), builds the DAG of every job the config asks for and prints it.
Each config is planned ``--runs`` times from scratch (a fresh process each); the table gives the median and
the range of the wall time, the median CPU time (user + system: less sensitive to other processes on a shared
machine) and the load average before the runs. The one-rule Snakefile is what Snakemake costs by itself.
Python's bytecode cache is on, as on a user's machine (``PYTHONDONTWRITEBYTECODE`` is dropped from the
measured processes' environment), and each place is planned once before its runs, so that every measured run
reads cached bytecode instead of compiling the modules it imports.

    python benchmarks/planning.py                          # every config, 3 runs each
    python benchmarks/planning.py --runs 5 --phases        # + where the time goes (import, parse, DAG,
                                                             the rest)
    python benchmarks/planning.py --repo ../other-checkout  # the same for another checkout (PYTHONPATH
                                                             set to it)
    python benchmarks/planning.py --no-slurm-probe         # see below
    python benchmarks/planning.py --target ""              # the whole grids only
    python benchmarks/planning.py --against ../before      # and another checkout, alternating run by run

A rerun of one target plans only what the target needs, but parses the whole workflow: ``--target`` (by
default ``make_init_table``, the init-loss table, a rule every config has) adds that dry run per config.

Snakemake's SLURM executor plugin runs ``scontrol show config`` when Snakemake starts; where the SLURM client
is installed but no controller answers, that waits for scontrol's timeout (9 s here) on every call.
``--no-slurm-probe`` puts an ``scontrol`` that fails at once first on the PATH of the measured processes, to
time the rest.

``--floor`` adds what Snakemake needs for the same DAG without this workflow: the config's jobs and the edges
between them (from ``snakemake -n --dag``) as one rule with a wildcard, one input function (a dict lookup) and
a ``touch`` each, no params, logs or benchmark files. What a config plans above that floor is the workflow's.

Writes ``benchmarks/out/planning.md`` (the table) and ``benchmarks/out/planning.csv`` (every run).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "out"
ONE_RULE = 'rule all:\n    output: "x"\n    shell: "touch {output}"\n'
# The floor (--floor): a config's DAG as one rule; dag.json maps each job to the jobs whose outputs it reads.
FLOOR = """import json
EDGES = json.load(open("dag.json"))  # not DAG: the Snakefile shares Snakemake's namespace
rule all:
    input: [f"o/{j}" for j in EDGES["all"]]
rule job:
    input: lambda w: [f"o/{j}" for j in EDGES["inputs"][w.job]]
    output: "o/{job}"
    shell: "touch {output}"
"""

# Run Snakemake's main with timestamps around its phases (--phases): the workflow's parse (the Snakefile and
# its includes), the DAG, and what follows in a dry run (the jobs printed). Reported on stderr as one "PHASES"
# line.
PHASES = r"""
import sys, time
t0 = time.perf_counter()
from snakemake.cli import main
import snakemake.workflow as W
t = {"import": time.perf_counter() - t0, "parse": 0.0, "dag": 0.0, "execute": 0.0}
depth = [0]
def timed(name, key, outer_only=False):
    f = getattr(W.Workflow, name)
    def g(*a, **k):
        depth[0] += 1
        s = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            depth[0] -= 1
            if not outer_only or depth[0] == 0:
                t[key] += time.perf_counter() - s
    setattr(W.Workflow, name, g)
timed("include", "parse", outer_only=True)
timed("_build_dag", "dag")
timed("execute", "execute")
import atexit
atexit.register(lambda: print("PHASES " + " ".join(f"{k}={v:.3f}" for k, v in t.items()), file=sys.stderr))
sys.argv = ["snakemake", *sys.argv[1:]]
main()
"""


def write_floor(folder: Path, cmd: list[str], cwd: Path, env: dict) -> int:
    """The DAG of ``cmd`` (a ``snakemake -n`` command) as the floor workflow in ``folder``; returns its
    edges."""
    dot = subprocess.run([*cmd, "--dag"], cwd=cwd, env=env, capture_output=True, text=True, check=True).stdout
    labels = dict(re.findall(r"^\s*(\d+)\[label = \"(\w+)", dot, re.M))
    edges = re.findall(r"^\s*(\d+) -> (\d+)", dot, re.M)
    inputs: dict[str, list[str]] = {n: [] for n in labels}
    for a, b in edges:
        inputs[b].append(a)
    root = [n for n, rule in labels.items() if rule == "all"]
    folder.mkdir(parents=True)
    (folder / "Snakefile").write_text(FLOOR)
    (folder / "dag.json").write_text(json.dumps({"all": [j for r in root for j in inputs[r]],
                                                 "inputs": {n: v for n, v in inputs.items()
                                                            if n not in root}}))
    return len(edges)


def paper_configs(repo: Path) -> list[str]:
    """config.yaml and every config of configs/ (overlays, in configs/overlays/, excluded)."""
    return ["config.yaml", *sorted(str(p.relative_to(repo)) for p in (repo / "configs").glob("*.yaml"))]


def plan_once(cmd: list[str], cwd: Path, env: dict) -> dict:
    """One ``snakemake -n`` in a fresh process: wall and CPU seconds, jobs planned, phases (if asked)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate()
    wall = time.perf_counter() - start
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{err[-2000:]}")
    text = out + err
    total = re.search(r"^total\s+(\d+)\s*$", text, re.M)
    phases = re.search(r"^PHASES (.*)$", err, re.M)
    return {"wall_s": wall, "jobs": int(total.group(1)) if total else 0,
            "phases": dict(kv.split("=") for kv in phases.group(1).split()) if phases else {}}


def summarize(label: str, rows: list[dict], load: float) -> dict:
    walls = [r["wall_s"] for r in rows]
    result = {"config": label, "jobs": rows[0]["jobs"], "median_s": statistics.median(walls),
              "min_s": min(walls), "max_s": max(walls), "cpu_s": statistics.median(r["cpu_s"] for r in rows),
              "load": load, "runs": rows}
    if rows[0]["phases"]:
        result["phases"] = {k: statistics.median(float(r["phases"][k]) for r in rows)
                            for k in rows[0]["phases"]}
    print(f"{label}: {result['median_s']:.2f} s (min {result['min_s']:.2f}, max {result['max_s']:.2f}), "
          f"CPU {result['cpu_s']:.2f} s, {result['jobs']} jobs, load {load:.2f}", flush=True)
    return result


def measure(label: str, cmd: list[str], cwd: Path, env: dict, runs: int,
            against: tuple[Path, dict] | None = None) -> dict:
    """``runs`` dry runs of ``cmd`` in ``cwd``; with ``against`` (another checkout and its environment), as
    many of the same command there, the two alternating (which goes first alternates too), under
    ``result["against"]``."""
    load = os.getloadavg()[0]
    places = [(cwd, env)] + ([against] if against else [])
    rows: list[list[dict]] = [[] for _ in places]
    for place in places:  # a warm-up: writes the bytecode cache the measured runs read
        plan_once(cmd, *place)
    for i in range(runs):
        for k in (range(len(places)) if i % 2 == 0 else reversed(range(len(places)))):
            before = os.times()
            row = plan_once(cmd, *places[k])
            after = os.times()
            row["cpu_s"] = ((after.children_user - before.children_user)
                            + (after.children_system - before.children_system))
            rows[k].append(row)
    result = summarize(label, rows[0], load)
    if against:
        result["against"] = summarize(f"{label} (--against)", rows[1], load)
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=3, help="runs per config (the table gives their median)")
    p.add_argument("--configs", nargs="*",
                   help="config files relative to --repo (default: config.yaml, configs/*.yaml)")
    p.add_argument("--repo", type=Path, default=ROOT, help="the checkout to plan (PYTHONPATH is set to it)")
    p.add_argument("--phases", action="store_true",
                   help="time Snakemake's phases too (import, parse, DAG, rest)")
    p.add_argument("--no-slurm-probe", action="store_true",
                   help="an scontrol that fails at once first on PATH (no SLURM controller wait at startup)")
    p.add_argument("--target", default="make_init_table",
                   help="also plan this one target per config ('': none)")
    p.add_argument("--floor", action="store_true",
                   help="also plan each config's DAG as one trivial rule (see above)")
    p.add_argument("--against", type=Path,
                   help="another checkout: each config is planned there too, alternating with "
                   "--repo run by run (a before/after pair measured in the same minutes)")
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args()

    repo = args.repo.resolve()
    env = {**os.environ, "PYTHONPATH": str(repo)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # a user's Python caches bytecode
    against = args.against.resolve() if args.against else None
    tmp = Path(tempfile.mkdtemp(prefix="planning-"))
    if args.no_slurm_probe:
        stub = tmp / "bin" / "scontrol"
        stub.parent.mkdir()
        stub.write_text("#!/bin/sh\nexit 1\n")
        stub.chmod(0o755)
        env["PATH"] = f"{stub.parent}{os.pathsep}{env['PATH']}"
    other = (against, {**env, "PYTHONPATH": str(against)}) if against else None
    snakemake = shutil.which("snakemake", path=str(Path(sys.executable).parent)) or shutil.which("snakemake")
    if args.phases:
        (tmp / "phases.py").write_text(PHASES)
        base = [sys.executable, str(tmp / "phases.py")]
    else:
        base = [snakemake]
    (tmp / "one_rule").mkdir()
    (tmp / "one_rule" / "Snakefile").write_text(ONE_RULE)

    results = [measure("one-rule Snakefile", [*base, "-n"], tmp / "one_rule", env, args.runs)]
    for config in args.configs or paper_configs(repo):
        # config.yaml is the embedded default: `snakemake -n` alone plans it; targets go before --configfile
        extra = [] if config == "config.yaml" else ["--configfile", config]
        results.append(measure(config, [*base, "-n", *extra], repo, env, args.runs, other))
        if args.target:
            target = measure(f"{config} {args.target}", [*base, "-n", args.target, *extra], repo, env,
                             args.runs)
            results[-1]["target"] = target
        if args.floor:
            folder = tmp / "floor" / config.replace("/", "_")
            edges = write_floor(folder, [snakemake, "-n", *extra], repo, env)
            results[-1]["floor"] = measure(f"{config} floor", [*base, "-n"], folder, env, args.runs)
            results[-1]["floor"]["edges"] = edges
    shutil.rmtree(tmp)

    cpu = (platform.processor() or platform.machine())
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    def at(checkout: Path) -> str:
        commit = (subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"],
                                 capture_output=True, text=True).stdout.strip()
                  if (checkout / ".git").exists() else "")
        return f"{checkout}{f' at {commit}' if commit else ''}"

    argv = " ".join(["python benchmarks/planning.py", *sys.argv[1:]])
    md = [f"Measured {time.strftime('%Y-%m-%d %H:%M')} on {cpu}, {os.cpu_count()} cores; Python "
          f"{platform.python_version()}, Snakemake {metadata.version('snakemake')}; {at(repo)}"
          f"{f'; --against {at(against)}' if against else ''}"
          f"{'; no SLURM probe' if args.no_slurm_probe else ''}. `{argv}`, {args.runs} runs each.", ""]
    head = "| config | jobs | `snakemake -n` median | range | CPU (median) | load before |"
    sep = "|---|---|---|---|---|---|"
    if args.target:
        head += f" `-n {args.target}`: jobs | median | CPU |"
        sep += "---|---|---|"
    if args.floor:
        head += " floor: jobs | edges | median |"
        sep += "---|---|---|"
    if args.phases:
        head += " import | parse | DAG | rest |"
        sep += "---|---|---|---|"
    if against:
        head += " `--against`: jobs | median | CPU |"
        sep += "---|---|---|"
    md += [head, sep]
    for r in results:
        row = (
            f"| {r['config']} | {r['jobs']:,} | {r['median_s']:.2f} s | {r['min_s']:.2f}–{r['max_s']:.2f} s "
            f"| {r['cpu_s']:.2f} s | {r['load']:.2f} |")
        if args.target:
            t = r.get("target")
            row += f" {t['jobs']:,} | {t['median_s']:.2f} s | {t['cpu_s']:.2f} s |" if t else " | | |"
        if args.floor:
            f = r.get("floor")
            row += f" {f['jobs']:,} | {f['edges']:,} | {f['median_s']:.2f} s |" if f else " | | |"
        if args.phases:
            ph = r.get("phases", {})
            rest = ph.get("execute", 0) - ph.get("dag", 0)
            row += (f" {ph.get('import', 0):.2f} | {ph.get('parse', 0):.2f} | {ph.get('dag', 0):.2f} | "
                    f"{rest:.2f} |")
        if against:
            a = r.get("against")
            row += f" {a['jobs']:,} | {a['median_s']:.2f} s | {a['cpu_s']:.2f} s |" if a else " | | |"
        md.append(row)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "planning.md").write_text("\n".join(md) + "\n")
    with (args.out / "planning.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["config", "run", "wall_s", "cpu_s", "jobs", "load_before"])
        for r in results:
            for one in (r, r.get("target"), r.get("floor"), r.get("against")):
                for i, run in enumerate(one["runs"] if one else []):
                    w.writerow([one["config"], i, f"{run['wall_s']:.3f}", f"{run['cpu_s']:.3f}", run["jobs"],
                                f"{one['load']:.2f}"])
    print("\n" + "\n".join(md))


if __name__ == "__main__":
    main()

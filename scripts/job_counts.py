"""The job and run counts the docs quote, from dry runs of the configs: the papers' table in docs/cluster.md
(what each paper config reproduces, its planned jobs, LAPT runs, fine-tunings and inits, its GPU budget) and
the grid details under it, both between markers that this script writes.

    python scripts/job_counts.py            # print the tables
    python scripts/job_counts.py --write    # write them into docs/cluster.md
    python scripts/job_counts.py --check    # exit 1 when docs/cluster.md holds other tables

Plans every config of :data:`PLANS` offline (``snakemake -n``, each in an empty working directory under a
temporary folder, all in one Python process: about 1 minute on 2 cores). tests/test_paper_configs.py builds
the same tables from its own dry runs and compares them with the page. Prose elsewhere names no counts: it
points here.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "cluster.md"
BEGIN = "<!-- job counts: python scripts/job_counts.py --write -->"
END = "<!-- end of job counts -->"

#: The papers' configs, planned whole.
PAPERS = ["focus", "wechsel", "wechsel_gpt2", "unks", "vocab_swap", "vocab_swap_recovery",
          "vocab_swap_frankenberta", "vocab_swap_frankenbert", "llm_mistral"]
#: name -> (config files, targets) of every dry run the tables count.
PLANS: dict[str, tuple[tuple[str, ...], list[str]]] = {
    **{name: ((f"configs/{name}.yaml",), []) for name in PAPERS},
    "demo": (("config.yaml",), []),
    "focus-de": (("configs/focus.yaml",), ["results/focus/export/xlmr/de/lapt/focus"]),
    "papers": (("configs/papers.yaml",), []),
    "rehearsal": (("configs/papers.yaml", "configs/overlays/rehearsal.yaml"), []),  # scripts/rehearse.sh
    "rehearsal-focus": (("configs/focus.yaml", "configs/overlays/rehearsal.yaml"), []),
    # tests/test_slurm.py: a table of each paper through SLURM
    "rehearsal-ci": (("configs/papers.yaml", "configs/overlays/rehearsal.yaml",
                      "tests/data/rehearsal_ci.yaml"),
                     ["results/focus/tables/paper/focus_table1.md",
                      "results/wechsel/tables/paper/wechsel_table6.md",
                      "results/unks/tables/paper/unks_table7.md",
                      "results/vocab_swap_frankenberta/tables/paper/vocab_swap_table9.md"]),
}

# Plans every config in ONE Python process (snakemake's CLI called once per config, each in its own working
# directory, its output redirected at the file-descriptor level): the imports (snakemake, torch, datasets)
# cost about 7 s of CPU, each DAG 1-2 s, so separate processes would take three times as long on 2 cores.
# Without `--quiet rules` the output lists every job with its wildcards (planned_jobs).
RUNNER = textwrap.dedent("""
    import json, os, sys, traceback
    from snakemake.cli import main

    snakefile, specs = sys.argv[1], json.loads(sys.argv[2])
    codes = {}
    for name, workdir, configs, output, targets in specs:
        os.chdir(workdir)
        os.environ["NETGUARD_LOG"] = output + ".network"  # read by tests/test_paper_configs.py's """
                         """network guard
        sys.stdout.flush(); sys.stderr.flush()
        fd, saved = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), (os.dup(1), os.dup(2))
        os.dup2(fd, 1); os.dup2(fd, 2)
        try:
            main(["--snakefile", snakefile, "-n", "--cores", "1", *targets, "--configfile", *configs])
            codes[name] = 0
        except SystemExit as e:
            codes[name] = e.code if isinstance(e.code, int) else 1
        except Exception:
            traceback.print_exc()
            codes[name] = 1
        finally:
            sys.stdout.flush(); sys.stderr.flush()
            os.dup2(saved[0], 1); os.dup2(saved[1], 2); os.close(fd)
    print(json.dumps(codes))
""")


def planned_jobs(output: str) -> list[tuple[str, dict[str, str]]]:
    """(rule, wildcards) of every job a dry run lists."""
    jobs = []
    for line in output.splitlines():
        if match := re.fullmatch(r"(?:local)?rule (\w+):", line):
            jobs.append((match.group(1), {}))
        elif jobs and (match := re.fullmatch(r"    wildcards: (.*)", line)):
            jobs[-1][1].update(pair.split("=", 1) for pair in match.group(1).split(", "))
    return jobs


class Plan:
    """A dry run's jobs, counted the ways the docs count them."""

    def __init__(self, planned: list[tuple[str, dict[str, str]]]):
        self.planned = planned

    def jobs(self, rule: str, **wildcards: str) -> list[dict[str, str]]:
        """The wildcards of the rule's jobs whose wildcards match the given regular expressions (whole
        values)."""
        return [w for r, w in self.planned
                if r == rule and all(re.fullmatch(pattern, w.get(k, "")) for k, pattern in wildcards.items())]

    def count(self, rule: str, **wildcards: str) -> int:
        return len(self.jobs(rule, **wildcards))

    def seeds(self, **wildcards: str) -> int:
        """Fine-tuning runs: a finetune job trains each seed its `seeds` wildcard names (1+2+3+4+5)."""
        return sum(len(w["seeds"].split("+")) for w in self.jobs("finetune", **wildcards))

    def distinct(self, rule: str, key: str, part=lambda v: v) -> int:
        """How many values (or parts of values) wildcard ``key`` takes in the rule's jobs."""
        return len({part(w[key]) for w in self.jobs(rule)})

    @property
    def total(self) -> int:
        return len(self.planned)

    @property
    def total_per_seed(self) -> int:
        """The jobs with a fine-tuning job per seed (`finetune.seeds_per_job: 1`)."""
        return self.total - self.count("finetune") + self.seeds()


def snapshot_grid(p: Plan) -> tuple[int, ...]:
    """vocab_swap's Figures 4/8: snapshot steps, runs, languages, seeds, and the snapshots kept."""
    jobs = p.jobs("finetune", ftmodel=".*-snapshots-.*")
    (seeds,) = {len(w["seeds"].split("+")) for w in jobs}
    return (len({w["ftmodel"].split("-snapshots-")[1] for w in jobs}),
            len({w["ftmodel"].split("-snapshots-")[0] for w in jobs}),
            len({w["task"].split("-")[0] for w in jobs}), seeds,
            len({(w["ftmodel"], w["task"].split("-")[0]) for w in jobs}))


UNKS_TABLE3 = r"(?!.*_(12ad|300|1k|10k|100k)$).*"  # LAPT runs of Tables 3a-b (not 12Ad, Table 8, Figure 3)
SWAPPED = r"(scratch|reinit|freq|align|dict)-(all|embed)-[0-9e-]+"  # vocab_swap's final models (no snapshot)
GPT2_TABLE2 = "wechsel|transinner|fullrand"

#: The papers' table: paper, config, what it reproduces (its grid's counts follow from the plan), GPU budget
#: (the derivation: docs/cluster.md, "How the budgets are derived").
PAPER_ROWS = [
    ("FOCUS", "focus", "Tables 2-4, Figure 2", "≈ 1,050 A100-h"),
    ("WECHSEL, RoBERTa", "wechsel",
     "Table 1 (WECHSEL, TransInner, FullRand; Score@25k and FullRand's Score@0 "
     "fine-tune snapshots; fine-tunings incl. CamemBERT, GBERT, BERT-Chinese and XLM-R), Figure 3 (snapshots "
     "at 50k-200k)", "≈ 1,640 A100-h"),
    ("WECHSEL, GPT-2", "wechsel_gpt2",
     "Table 2 (CLM runs incl. FullRand; perplexity at 0, 25k, 250k steps from "
     "the curves), Table 7 (k × τ at initialization), Figures 3-6 (75k-step runs)", "≈ 1,560 + ≤ 350 A100-h"),
    ("UNKs Everywhere", "unks",
     "zero-shot Tables 3a (NER) and 3b (DP, incl. bh, myv, am), per source language 5a-d "
     "(with the \"12Ad ✓\" rows) and 9a-d, Table 8, Figures 2-3",
     "≈ 1,200–1,750 A100-h (≈ 550–800 for Tables 3a-b "
     "alone)"),
    ("vocab swap, cross-lingual", "vocab_swap",
     "Tables 11-16 (XNLI and PAWS-X, incl. Scratch and the mBERT, German "
     "BERT and FlauBERT reference rows), Figures 4/8 (XNLI fine-tunings of LAPT snapshots) and 6",
     "≈ 490 A100-h"),
    ("vocab swap, recovery", "vocab_swap_recovery",
     "Tables 1, 4-8 and Figures 2/7 (runs on BERT's own vocabulary, "
     "GLUE)", "≈ 250 A100-h"),
    ("vocab swap, FrankenBERTa", "vocab_swap_frankenberta",
     "Tables 2 and 9 (roberta-base with bert-base-uncased's "
     "tokenizer; GLUE incl. bert-base-uncased and roberta-base)", "≈ 45 A100-h"),
    ("vocab swap, FrankenBERT", "vocab_swap_frankenbert", "Table 10 (bert-base-uncased with roberta-base's "
     "tokenizer; GLUE)", "≈ 45 A100-h"),
    ("FOCUS on Mistral-7B", "llm_mistral",
     "de, ar × {FOCUS, original vocabulary} × {pure, mixed bf16} + Arabic "
     "embeddings-first (1B tokens each), init-time table, lm-eval benchmarks of the source and of each init "
     "and LAPT export (Belebele, ARC, HellaSwag, MMLU in each language)", "≈ 1,240 A100-h"),
]

#: The grid details: (plan, what is counted, how). The budget derivations of docs/cluster.md multiply these.
DETAILS = [
    ("focus", "init-time table languages (Table 4)", lambda p: p.count("evaluate_init")),
    ("focus", "inits (Table 4 with those of Tables 2/3)", lambda p: p.count("init_embeddings")),
    ("focus", "LAPT runs (Tables 2/3)", lambda p: p.count("train_lapt")),
    ("focus", "fine-tunings (Tables 2/3)", lambda p: p.seeds()),
    ("focus", "of them XNLI", lambda p: p.seeds(task=".*-xnli")),
    ("focus", "of them GermEval14", lambda p: p.seeds(task="de-germeval14")),
    ("focus", "jobs with one fine-tuning job per seed (`finetune.seeds_per_job: 1`)",
     lambda p: p.total_per_seed),
    ("focus-de", "jobs of German FOCUS, CC100 German through LAPT to an export", lambda p: p.total),
    ("focus-de", "German inits of the init-time table", lambda p: p.count("init_embeddings")),
    ("wechsel", "LAPT runs (Table 1)", lambda p: p.count("train_lapt")),
    ("wechsel", "target languages", lambda p: p.distinct("train_lapt", "target")),
    ("wechsel", "fine-tunings of final models and references (Table 1)",
     lambda p: p.seeds(ftmodel="(?!.*-steps-).*")),
    ("wechsel", "fine-tunings of snapshots at 50k-200k (Figure 3)", lambda p: p.seeds(ftmodel=".*-steps-.*")),
    ("wechsel", "jobs with one fine-tuning job per seed", lambda p: p.total_per_seed),
    ("wechsel", "fine-tunings", lambda p: p.seeds()),
    ("wechsel_gpt2", "CLM runs of Table 2 (WECHSEL, TransInner, FullRand)",
     lambda p: p.count("train_lapt", run=GPT2_TABLE2)),
    ("wechsel_gpt2", "75k-step runs (Figures 3-6)",
     lambda p: p.count("train_lapt", run=f"(?!({GPT2_TABLE2})$).*")),
    ("unks", "LAPT runs", lambda p: p.count("train_lapt")),
    ("unks", "of them for Tables 3a-b", lambda p: p.count("train_lapt", run=UNKS_TABLE3)),
    ("unks", "of them new-vocabulary runs of Tables 3a-b",
     lambda p: p.count("train_lapt", run="(el|mf1|mf10_kmeans|mf10_neural)_(lex|rand)")),
    ("unks", "of them FMT embeddings", lambda p: p.count("train_lapt", run="fmt_.*")),
    ("unks", "of them MAD-X / MAD-X 2.0 adapters on mBERT's vocabulary", lambda p: p.count("train_lapt",
                                                                                           run="madx2?")),
    ("unks", "of them for the 12Ad rows", lambda p: p.count("train_lapt", run=".*_12ad")),
    ("unks", "of them for Table 8's 300-dimensional F", lambda p: p.count("train_lapt", run=".*_300")),
    ("unks", "of them for Figure 3's runs on less data",
     lambda p: p.count("train_lapt", run=".*_(1k|10k|100k)")),
    ("unks", "source languages",
     lambda p: p.distinct("train_source_task", "srctask", lambda v: v.split("-")[0])),
    ("unks", "source-side trainings", lambda p: p.count("train_source_task")),
    ("unks", "zero-shot cells (one job per task and row)", lambda p: p.count("evaluate_zero_shot")),
    ("unks", "seeds per zero-shot cell", lambda p: p.distinct("train_source_task", "seed")),
    ("unks", "source-side trainings a MAD-X 2.0 NER cell evaluates",
     lambda p: p.count("train_source_task", srctask=".*-ner", setup="madx2")),
    ("unks", "inits", lambda p: p.count("init_embeddings")),
    ("unks", "jobs", lambda p: p.total),
    ("vocab_swap", "LAPT runs incl. Scratch", lambda p: p.count("train_lapt")),
    ("vocab_swap", "fine-tunings of the swapped models (XNLI, PAWS-X)", lambda p: p.seeds(ftmodel=SWAPPED)),
    ("vocab_swap", "fine-tunings of the mBERT, German BERT and FlauBERT reference rows",
     lambda p: p.seeds(ftmodel="mbert|german-bert|flaubert")),
    ("vocab_swap", "XNLI fine-tunings of final models and references",
     lambda p: p.seeds(task=".*-xnli", ftmodel="(?!.*-snapshots-).*")),
    ("vocab_swap", "PAWS-X fine-tunings", lambda p: p.seeds(task=".*-pawsx")),
    ("vocab_swap", "XNLI fine-tunings of LAPT snapshots (Figures 4/8)",
     lambda p: p.seeds(ftmodel=".*-snapshots-.*")),
    *[("vocab_swap", f"{what} of Figures 4/8", lambda p, i=i: snapshot_grid(p)[i]) for i, what in enumerate(
        ("snapshot steps", "runs with snapshots", "languages", "seeds", "snapshots kept (run × language)"))],
    ("vocab_swap_recovery", "LAPT runs on BERT's own vocabulary", lambda p: p.count("train_lapt")),
    ("vocab_swap_recovery", "of them with a frozen body",
     lambda p: p.count("train_lapt", run=".*_(embed|word)_.*")),
    ("vocab_swap_recovery", "GLUE fine-tunings", lambda p: p.seeds()),
    ("vocab_swap_recovery", "of them MNLI", lambda p: p.seeds(task="mnli")),
    ("vocab_swap_recovery", "of them MRPC and STS-B", lambda p: p.seeds(task="mrpc|stsb")),
    *[(name, what, how) for name in ("vocab_swap_frankenberta", "vocab_swap_frankenbert") for what, how in (
        ("LAPT runs", lambda p: p.count("train_lapt")), ("GLUE fine-tunings", lambda p: p.seeds()),
        ("of them MNLI", lambda p: p.seeds(task="mnli")),
        ("of them MRPC and STS-B", lambda p: p.seeds(task="mrpc|stsb")))],
    ("llm_mistral", "LAPT runs of 1B tokens", lambda p: p.count("train_lapt")),
    ("llm_mistral", "of them in one stage", lambda p: p.count("train_lapt", run="(?!.*two_stage).*")),
    ("llm_mistral", "lm-eval benchmark jobs", lambda p: p.count("benchmark_model")),
    ("demo", "jobs of the demo (`config.yaml`)", lambda p: p.total),
    ("rehearsal", "jobs of the composite with the rehearsal overlay", lambda p: p.total),
    ("rehearsal-focus", "jobs of `bash scripts/rehearse.sh configs/focus.yaml`", lambda p: p.total),
    ("rehearsal-ci", "jobs of the rehearsal of tests/test_slurm.py (a table of each paper)",
     lambda p: p.total),
]


def shared(plans: dict[str, Plan]) -> tuple[int, int, int]:
    """(the composite's jobs, the nine configs' jobs one by one, the artifacts the composite plans once that
    they plan twice or more): one `all` job instead of nine is the rest of the difference."""
    alone = sum(plans[name].total for name in PAPERS)
    return plans["papers"].total, alone, alone - plans["papers"].total - (len(PAPERS) - 1)


def tables(plans: dict[str, Plan]) -> str:
    """The block between the markers: the papers' table and the grid details."""
    lines = ["| paper | command | reproduces | planned (dry run) | GPU budget |", "|---|---|---|---|---|"]
    for i, (paper, name, what, budget) in enumerate(PAPER_ROWS):
        p = plans[name]
        counts = [f"{p.total:,} jobs", f"{p.count('train_lapt'):,} LAPT runs"]
        counts += [f"{p.seeds():,} fine-tunings"] if p.seeds() else []
        counts += [f"{p.count('init_embeddings'):,} inits"] if p.count("init_embeddings") else []
        counts += ([f"{p.count('evaluate_zero_shot'):,} zero-shot cells"] if p.count("evaluate_zero_shot")
                   else [])
        counts += [f"{p.count('benchmark_model'):,} lm-eval jobs"] if p.count("benchmark_model") else []
        command = f"`{'snakemake --profile slurm' if i == 0 else '…'} --configfile configs/{name}.yaml`"
        lines.append(f"| {paper} | {command} | {what} | {', '.join(counts)} | {budget} |")
    composite, alone, once = shared(plans)
    lines += ["",
              "Grid details, as the dry runs count them (`finetune` jobs count one fine-tuning per seed):",
              "", "| config | counted | number |", "|---|---|---:|"]
    for name, what, how in DETAILS:
        lines.append(f"| {name} | {what} | {how(plans[name]):,} |")
    lines += [f"| papers | jobs of `configs/papers.yaml`, every paper in one DAG | {composite:,} |",
              f"| papers | jobs of the nine configs one by one | {alone:,} |",
              "| papers | artifacts the composite plans once that the configs plan twice "
              f"or more | {once:,} |"]
    return "\n".join(lines)


def plan_all(names=None) -> dict[str, Plan]:
    """Dry runs of :data:`PLANS` (or those named), each in an empty working directory."""
    names = list(names or PLANS)
    with tempfile.TemporaryDirectory() as root:
        specs = []
        for name in names:
            (Path(root) / name).mkdir()
            configs, targets = PLANS[name]
            specs.append([name, str(Path(root) / name), [str(REPO / c) for c in configs],
                          f"{root}/{name}.out", targets])
        proc = subprocess.run([sys.executable, "-c", RUNNER, str(REPO / "Snakefile"), json.dumps(specs)],
                              capture_output=True, text=True, cwd=root,
                              env={**os.environ, "HF_HUB_OFFLINE": "1"})
        if proc.returncode:
            raise SystemExit(proc.stderr[-3000:])
        codes = json.loads(proc.stdout.strip().splitlines()[-1])
        failed = [name for name in names if codes[name]]
        if failed:
            raise SystemExit(f"dry runs failed: {failed}\n"
                             + Path(f"{root}/{failed[0]}.out").read_text()[-3000:])
        return {name: Plan(planned_jobs(Path(f"{root}/{name}.out").read_text())) for name in names}


def block(text: str) -> str:
    return f"{BEGIN}\n{text}\n{END}"


def current(doc: str) -> str:
    if BEGIN not in doc or END not in doc:
        raise SystemExit(f"{DOC}: the markers {BEGIN!r} and {END!r} are missing")
    return doc[doc.index(BEGIN):doc.index(END) + len(END)]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="write the tables into docs/cluster.md")
    mode.add_argument("--check", action="store_true", help="exit 1 when docs/cluster.md holds other tables")
    args = parser.parse_args(argv)
    text = block(tables(plan_all()))
    doc = DOC.read_text()
    if args.write:
        DOC.write_text(doc.replace(current(doc), text))
        print(f"wrote the job counts into {DOC.relative_to(REPO)}")
    elif args.check:
        if current(doc) != text:
            print(f"{DOC.relative_to(REPO)}: the job counts differ from the plans; run python "
                  "scripts/job_counts.py --write", file=sys.stderr)
            return 1
        print("the job counts in docs/cluster.md are the planned ones")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

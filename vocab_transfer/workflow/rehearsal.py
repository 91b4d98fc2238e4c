"""A config in miniature (``rehearsal:``, configs/overlays/rehearsal.yaml): the same DAG, every rule, table
and figure of it, at a size that one CPU machine runs to the end.

:func:`shrink` rewrites a study config before it is checked; the grid (targets, methods, LAPT runs, tasks,
models, tables, figures) stays, apart from the fine-tuning seeds. What shrinks, with the section's keys
(:class:`~vocab_transfer.workflow.model.Rehearsal`):

- LAPT's main stage to ``steps`` optimizer steps, and every other step count of the study (runs' own steps
  and long phase, evaluation and checkpoint intervals, snapshots, fine-tuned snapshots, LAPT tables' and
  figures' steps, training sequences) by the same factor: a snapshot at 10% of the run stays at 10%;
- batches, sequence lengths and evaluation sizes of every trainer, init evaluation, probes and benchmarks to
  ``batch_size`` / ``seq_len`` and a few batches; fine-tuning to one epoch; precision to the CPU's; one CPU
  thread per trainer process;
- GPUs: as the paper's config requests them, at most ``gpus`` per job (LAPT on one node), so that a job asks
  SLURM for them as on the cluster and torchrun starts one process per GPU (on fake GPUs: the CPU, gloo);
- ``interrupt``: one LAPT run gets ``steps`` main-stage steps (intervals scaled along) and its job a time
  limit of ``runtime_min`` (:func:`interrupt_runtime`), so that the profile's signal stops it and a retry
  resumes it;
- target tokenizers to ``vocab_size`` tokens (extensions' ``top_tokens`` by the same share), fastText to 16
  dimensions and one epoch, factorizations and refinements to a few dimensions and steps.

Idempotent: a study shrunk twice (a composite checks each study, then its module again) is shrunk once.
"""

from __future__ import annotations

import argparse
import copy
import glob
import json
import os
import shlex
from pathlib import Path

from . import paths
from .config import check_config
from .model import Rehearsal
from .views import all_targets, lapt_run_targets, task_target

FASTTEXT = {"dim": 16, "epochs": 1, "threads": 1}
FASTTEXT_MIN_COUNT = 2
LAPT_EVAL_SEQUENCES = 8
EVAL_SEQUENCES = 32
EVAL_BATCH = 16
PROBE = {"max_train": 64, "max_test": 32}
BENCHMARK_LIMIT = 8
HELDOUT_DOCS = 100
RUNTIME_MIN = 20  # SLURM time limit of a shrunk trainer job (minutes)
METHOD_LIMITS = {"dim": 16, "neural_steps": 20, "max_iter": 50, "tokens": 2000, "window": 20}
DEP_MLP = {"arc_mlp_size": 32, "label_mlp_size": 16}
_SHRUNK: set[str] = set()  # the configs shrink returned in this process


def _key(config: dict) -> str:
    return json.dumps(config, sort_keys=True, default=str)


def shrink(config: dict) -> dict:
    """``config`` (a study's, as written) shrunk in place as its ``rehearsal`` section says; returned. A
    config without the section is returned unchanged."""
    spec = config.get("rehearsal")
    if not spec or _key(config) in _SHRUNK:  # already shrunk: a composite shrinks each study, then its module
        return config
    r = Rehearsal.parse(spec, "rehearsal")
    if r.targets is not None:
        cut_grid(config, r.targets)
    _tokenizers(config, r)
    for key in ("fasttext", "word_fasttext"):
        section = config.setdefault(key, {})
        section.update(FASTTEXT)
        section["min_count"] = min(section.get("min_count", FASTTEXT_MIN_COUNT), FASTTEXT_MIN_COUNT)
    split = config.setdefault("corpus_split", {})
    split["max_heldout_docs"] = min(split.get("max_heldout_docs", HELDOUT_DOCS), HELDOUT_DOCS)
    _evaluation(config.setdefault("eval", {}), r)
    scale = _lapt(config.get("lapt"), r)
    _interrupt(config.get("lapt"), r)
    _finetune(config.get("finetune"), r, scale)
    _zero_shot(config.get("zero_shot"), r)
    for entry in [*(config.get("tables") or {}).values(), *(config.get("figures") or {}).values()]:
        if entry.get("steps"):
            entry["steps"] = _steps(entry["steps"], scale)
        if entry.get("max_step") is not None:  # a figure's
            entry["max_step"] = scale(entry["max_step"])
    _SHRUNK.add(_key(config))
    return config


def _first_targets(cfg, n: int) -> list[str]:
    """The targets a grid cut keeps: the first each table and each figure of several languages or tasks reads
    (two for a scatter of tasks), the first figure's of those drawn per language or task (the others go with
    their language), then LAPT's and the init table's, up to ``n``."""
    targets = all_targets(cfg)
    task_of = {t: task_target(cfg, t) for t in cfg.finetune.tasks}

    def of_language(lang):
        return lang if lang in targets else next((t for t in targets if cfg.target_language(t) == lang), None)

    anchors = []
    for table in cfg.tables.values():
        tasks = table.tasks or [t for group in (table.groups or {}).values() for t in group] or list(task_of)
        if table.kind == "finetune" and tasks:
            anchors.append(task_of.get(tasks[0]))
        elif table.languages:
            anchors.append(of_language(table.languages[0]))
        elif table.kind == "init":
            anchors.append(cfg.target_names[0])
    # one file per language: the first stays
    single = [f for f in cfg.figures.values() if f.task or f.language]
    for figure in [*single[:1], *(f for f in cfg.figures.values() if f not in single)]:
        anchors += [task_of.get(t) for t in (figure.tasks or [])[:2]] + [task_of.get(figure.task)]
        anchors += [of_language(lang) for lang in [figure.language, *(figure.languages or [])[:1]] if lang]
    keep = [t for t in dict.fromkeys(anchors) if t]
    more = [t for t in dict.fromkeys([*(cfg.lapt.targets or []), *targets]) if t not in keep]
    return keep + more[:max(0, n - len(keep))]


def cut_grid(config: dict, n: int) -> None:
    """Keep the grid of at most ``n`` targets (more where the tables and figures need them,
    :func:`_first_targets`): every entry naming another target goes (targets, LAPT's, methods', tasks, models
    left without tasks, table columns, figures of one cut task or language, figure languages, benchmarks,
    pretrained tokenizers)."""
    cfg = check_config(copy.deepcopy(config))
    # zero-shot source languages stay: their LAPT runs train the source side of every zero-shot cell
    keep = _first_targets(cfg, n) + [s.language for s in cfg.zero_shot.sources.values()]
    languages = set(keep) | {cfg.target_language(t) for t in keep}
    config["targets"] = [t for t in config["targets"] if (t["name"] if isinstance(t, dict) else t) in keep]
    lapt = config.get("lapt") or {}
    for entry in [lapt, *(lapt.get("runs") or {}).values(), *config["methods"].values()]:
        if entry.get("targets"):
            entry["targets"] = [t for t in entry["targets"] if t in keep]
    ft = config.get("finetune") or {}
    tasks = [t for t in cfg.finetune.tasks if task_target(cfg, t) in keep]
    ft["tasks"] = {t: spec for t, spec in (ft.get("tasks") or {}).items() if t in tasks}
    for name, model in list((ft.get("models") or {}).items()):
        if model.get("tasks") is not None:
            model["tasks"] = [t for t in model["tasks"] if t in tasks]
            if not model["tasks"]:
                del ft["models"][name]
    models = set(ft.get("models") or ())
    for table in (config.get("tables") or {}).values():
        _cut_table(table, tasks, models, languages)
    for name, figure in list((config.get("figures") or {}).items()):
        if (figure.get("task") and figure["task"] not in tasks
                or figure.get("language") and figure["language"] not in languages):
            del config["figures"][name]  # a figure of a task or language cut (one file of a paper's figure)
            continue
        for key, kept in (("languages", languages), ("tasks", tasks)):
            if figure.get(key):
                figure[key] = [x for x in figure[key] if x in kept]
        if figure.get("series"):
            figure["series"] = {k: [m for m in v if m in models] for k, v in figure["series"].items()}
    bench = (config.get("eval") or {}).get("benchmarks") or {}
    if bench.get("tasks"):
        bench["tasks"] = {t: v for t, v in bench["tasks"].items() if t in keep}
    pretrained = (config.get("tokenizer") or {}).get("pretrained")
    if isinstance(pretrained, dict):
        config["tokenizer"]["pretrained"] = {t: v for t, v in pretrained.items() if t in keep}


def _cut_table(table: dict, tasks: list[str], models: set[str], languages: set[str]) -> None:
    """A table's columns and rows without the targets, tasks and models a grid cut removed."""
    if table.get("languages"):
        table["languages"] = [x for x in table["languages"] if x in languages]
    # the groups of tasks: a paper table's columns (groups), a probe table's (probes); a group left empty goes
    key = "groups" if table.get("kind", "finetune") == "finetune" else "probes"
    if table.get(key):
        table[key] = {k: kept for k, v in table[key].items() if (kept := [t for t in v if t in tasks])}
    if key == "probes":
        return
    if table.get("tasks"):
        table["tasks"] = [t for t in table["tasks"] if t in tasks]
    if table.get("rows"):
        table["rows"] = [m for m in table["rows"] if m in models]
    if table.get("grid"):
        table["grid"]["rows"] = {k: [m if m in models else None for m in v]
                                 for k, v in table["grid"]["rows"].items()}


def _steps(steps: list[int], scale) -> list[int]:
    return list(dict.fromkeys(scale(s) for s in steps))


def _cap(section: dict, limits, always=()) -> None:
    """Each ``(key, limit)`` of ``limits`` that ``section`` sets, or that ``always`` names, at most ``limit``
    (``limit`` where the section does not set it)."""
    for key, limit in limits:
        if section.get(key) is not None or key in always:
            section[key] = min(section.get(key, limit), limit)


def _tokenizers(config: dict, r) -> None:
    tokenizer = config.setdefault("tokenizer", {})
    written = tokenizer.get("vocab_size", r.vocab_size)
    share = r.vocab_size / max(written, r.vocab_size)
    tokenizer["vocab_size"] = min(written, r.vocab_size)
    tokenizer["threads"] = 1
    tokenizer.pop("max_docs", None)
    for target in config.get("targets") or []:
        if isinstance(target, dict) and "vocab_size" in target.get("tokenizer", {}):
            target["tokenizer"]["vocab_size"] = min(target["tokenizer"]["vocab_size"], r.vocab_size)
    for method in (config.get("methods") or {}).values():
        if method.get("top_tokens"):
            method["top_tokens"] = max(1, round(method["top_tokens"] * share))
        for key, limit in METHOD_LIMITS.items():
            if type(method.get(key)) is int:
                method[key] = min(method[key], limit)


def _evaluation(ev: dict, r) -> None:
    limits = {"seq_len": r.seq_len, "max_sequences": EVAL_SEQUENCES, "batch_size": EVAL_BATCH}
    _cap(ev, limits.items(), always=limits)
    ev["gpus"] = min(ev.get("gpus", 0), r.gpus)
    if "probe" in ev:
        ev["probe"].update({k: min(ev["probe"].get(k) or v, v) for k, v in PROBE.items()})
        ev["probe"]["seq_len"] = min(ev["probe"].get("seq_len", r.seq_len), r.seq_len)
    bench = ev.get("benchmarks")
    if bench:
        bench["limit"] = min(bench.get("limit") or BENCHMARK_LIMIT, BENCHMARK_LIMIT)
        bench["batch_size"] = min(bench.get("batch_size", r.batch_size), r.batch_size)


def _lapt(lapt: dict | None, r):
    """Shrink the LAPT section; return the step scaling of the study (step -> shrunk step)."""
    if not lapt:
        return lambda step: step
    training = lapt.setdefault("training", {})
    main = training.get("steps", 1000)
    factor = min(1.0, r.steps / main)

    def scale(step: int) -> int:
        return round(step * factor)

    for settings in (training, *(lapt.get("runs") or {}).values()):
        _lapt_settings(settings, r, scale, main=settings is training)
    _job_limits(lapt, r, nodes=1)
    return scale


def _job_limits(section: dict, r, **extra) -> None:
    """A trainer's section: at most ``r.gpus`` GPUs and :data:`RUNTIME_MIN` minutes per job (and ``extra``).
    A launcher written as a list of arguments (process counts, nodes, the cluster's rendezvous) goes:
    ``auto`` starts as many processes as the shrunk ``gpus``; a program alone (``python``) stays."""
    section.update(gpus=min(section.get("gpus", 0), r.gpus), **extra,
                   runtime_min=min(section.get("runtime_min", RUNTIME_MIN), RUNTIME_MIN))
    if isinstance(section.get("launcher"), list):
        section.pop("launcher")


def _interrupt(lapt: dict | None, r) -> None:
    """The run ``r.interrupt`` names: ``steps`` main-stage steps, evaluation and checkpoint intervals scaled
    along (no more evaluations than the shrunk run had), each step paced to last at least ``min_seconds /
    steps``."""
    stop = r.interrupt
    run = ((lapt or {}).get("runs") or {}).get(stop.run) if stop else None
    if run is None:
        return
    training = lapt.get("training") or {}
    before = run.get("steps", training.get("steps", 1))
    factor = max(1.0, stop.steps / before)
    for key in ("eval_every", "checkpoint_every"):
        run[key] = max(1, round(run.get(key, training.get(key, 1)) * factor))
    if run.get("long_steps"):
        run["long_steps"] = max(1, round(run["long_steps"] * factor))
    run["steps"] = stop.steps
    if stop.min_seconds:
        run["min_step_seconds"] = stop.min_seconds / stop.steps


def interrupt_runtime(cfg, run: str, target: str) -> int | None:
    """The time limit (minutes) of the LAPT job ``run`` on ``target`` where the config's
    ``rehearsal.interrupt`` names it (its ``target``, else the run's first), else None."""
    stop = cfg.rehearsal.interrupt if cfg.rehearsal else None
    if stop is None or stop.run != run or run not in cfg.lapt.runs:
        return None
    return stop.runtime_min if target == (stop.target or lapt_run_targets(cfg, run)[0]) else None


def _lapt_settings(s: dict, r, scale, main: bool) -> None:
    """LaptConfig keys (lapt.training, or a run's own) shrunk."""
    for key in ("steps", "long_steps", "train_sequences"):
        if s.get(key) or main and key == "steps":
            s[key] = max(1, scale(s.get(key, 1000)))
    for key in ("eval_every", "checkpoint_every"):
        if key in s or main:
            s[key] = max(1, scale(s.get(key, 100)))
    if s.get("snapshot_steps"):
        s["snapshot_steps"] = _steps(s["snapshot_steps"], scale)
    batches = ("batch_size", "micro_batch_size", "long_batch_size", "long_micro_batch_size")
    _cap(s, [*((k, r.batch_size) for k in batches), ("seq_len", r.seq_len), ("long_seq_len", 2 * r.seq_len),
             ("eval_sequences", LAPT_EVAL_SEQUENCES)],
         always=("batch_size", "seq_len", "eval_sequences") if main else ())
    if main:
        s["threads"] = 1
    for key in ("precision", "compile", "distributed"):
        s.pop(key, None)


def _training(s: dict | None, r, everything: bool = False) -> dict:
    """FinetuneConfig keys (fine-tuning or zero-shot, the section's or a task's own) shrunk; ``everything``:
    the section's, which also sets what the trainers default."""
    s = dict(s or {})
    if "epochs" in s or everything:
        s["epochs"] = min(s.get("epochs", 1), 1)
    _cap(s, [("batch_size", r.batch_size), ("micro_batch_size", r.batch_size), ("seq_len", r.seq_len),
             ("eval_batch_size", EVAL_BATCH), ("doc_stride", r.seq_len // 4),
             ("max_answer_tokens", r.seq_len // 4), *DEP_MLP.items()],
         always=("batch_size", "seq_len", "eval_batch_size") if everything else ())
    if everything:
        s["threads"] = 1
    s.pop("precision", None)
    return s


def _finetune(ft: dict | None, r, scale) -> None:
    if not ft:
        return
    ft["training"] = _training(ft.get("training"), r, everything=True)
    for task in (ft.get("tasks") or {}).values():
        if task.get("training"):
            task["training"] = _training(task["training"], r)
    for model in (ft.get("models") or {}).values():
        if model.get("step") is not None:
            model["step"] = scale(model["step"])
        if model.get("steps"):
            model["steps"] = _steps(model["steps"], scale)
    if ft.get("seeds"):
        ft["seeds"] = ft["seeds"][:r.seeds]
    _job_limits(ft, r)


def _zero_shot(zs: dict | None, r) -> None:
    if not zs:
        return
    zs["training"] = _training(zs.get("training"), r, everything=True)
    for source in (zs.get("sources") or {}).values():
        source["training"] = _training(source.get("training"), r)
    for setup in (zs.get("setups") or {}).values():
        setup["training"] = _training(setup.get("training"), r)
        setup["task_training"] = {t: _training(s, r) for t, s in (setup.get("task_training") or {}).items()}
    _job_limits(zs, r)


# ------------------------------------------------------------------------------------ mirrored downloads
def mirrored_downloads() -> list[str]:
    """The downloads in this working directory that a hub mirror served (their records say so): models,
    reference models, tokenizers, corpora, word vectors, dictionaries, task data. A run without ``hub_mirror``
    would take them for the real ones: a download's params are the same either way."""
    found = []
    for folder, record in [(paths.downloaded_model("*"), "origin.json"),
                           (paths.reference_model("*"), "origin.json"),
                           (paths.downloaded_tokenizer("*"), "origin.json"),
                           (paths.downloaded_corpus("*"), "fetch.json"),
                           (paths.task_data("*"), "origin.json")]:
        for path in sorted(glob.glob(os.path.join(folder, record))):
            data = json.loads(Path(path).read_text())
            if data.get("resolved_revision") == "mirror" or "hub_mirror" in data:
                found.append(os.path.dirname(path))
    for file in (paths.cc_word_vectors("*"), paths.muse_dictionary("*", "*")):
        head, tail = os.path.split(file)
        for path in sorted(glob.glob(os.path.join(head, f".{tail}.origin.json"))):
            if "mirror" in json.loads(Path(path).read_text()):
                found.append(os.path.join(head, os.path.basename(path)[1:-len(".origin.json")]))
    return found


def check_no_mirrored_downloads() -> str | None:
    """Why a run without ``hub_mirror`` must stop while parsing (:func:`mirrored_downloads`), or None. Checked
    by rules/common.smk for one config and by rules/studies.smk for a composite none of whose studies has a
    mirror."""
    mirrored = mirrored_downloads()
    if not mirrored:
        return None
    listed = " ".join(shlex.quote(p) for p in mirrored[:20]) + (" ..." if len(mirrored) > 20 else "")
    return (f"{len(mirrored)} downloads here came from a hub mirror (a rehearsal's miniatures), and a run "
            f"without hub_mirror would take them for the real ones: remove them first (rm -r {listed}), or "
            "rehearse in a directory of its own (scripts/rehearse.sh: rehearsal/)")


# ----------------------------------------------------------------------------------------------- the report
def planned_outputs(config: dict, base: str = ".") -> list[tuple[str, str, str]]:
    """(study, ``table`` or ``figure``, path) of every table and figure the config's ``all`` target plans: the
    init table, the fine-tuning and benchmark tables, the paper tables, LAPT curves and embedding
    correlations, the paper figures (as rule ``all`` of Snakefile lists them)."""
    from .studies import studies_of, study_plan

    out = []
    for name, study in studies_of(config, base).items():
        plan = study_plan(study)
        tables = [plan.paths.init_table("md"), *plan.finetune_outputs(), *plan.paper_table_outputs(),
                  *plan.benchmark_outputs()]
        figures = [*plan.lapt_outputs(), *plan.paper_figure_outputs()]
        out += [(name, "table", p) for p in tables] + [(name, "figure", p) for p in figures]
    return out


def parse_config_arguments(argv: list[str] | None, prog: str, description: str, **kwargs) -> tuple[dict, str]:
    """The arguments of the rehearsal's report commands: the config files (merged) and the workflow's folder.
    ``kwargs``: more of :class:`argparse.ArgumentParser`'s."""
    parser = argparse.ArgumentParser(prog=prog, description=description, **kwargs)
    parser.add_argument("configfiles", nargs="+",
                        help="config files, merged in order as --configfile merges them")
    parser.add_argument("--base", default=str(Path(os.path.abspath(__file__)).parents[2]),
                        help="the workflow's folder, where study config files are looked up "
                             "(default: this checkout)")
    args = parser.parse_args(argv)
    return merged_config(args.configfiles), args.base


def merged_config(configfiles) -> dict:
    """The config files merged in order, as Snakemake's --configfile merges them."""
    import yaml
    from snakemake.utils import update_config

    config: dict = {}
    for path in configfiles:
        with open(path) as f:
            update_config(config, yaml.safe_load(f) or {})
    return config


def main(argv: list[str] | None = None) -> int:
    """``python -m vocab_transfer.workflow.rehearsal CONFIG...``: every table and figure the merged config
    files plan, and whether it exists (in the working directory), then the provenance check of each table
    written (:func:`check_wiring`); exit status 1 if one is missing or a table's provenance has a problem."""
    config, base = parse_config_arguments(argv, "python -m vocab_transfer.workflow.rehearsal", main.__doc__)
    outputs = planned_outputs(config, base)
    for study, kind, path in outputs:
        print(f"{'ok     ' if os.path.exists(path) else 'MISSING'} {kind:6s} {study:26s} {path}")
    made = {k: [os.path.exists(p) for _, kind, p in outputs if kind == k] for k in ("table", "figure")}
    print(f"tables: {sum(made['table'])} of {len(made['table'])} written; figures: {sum(made['figure'])} of "
          f"{len(made['figure'])} written")
    wired = check_wiring([p for _, kind, p in outputs if kind == "table" and os.path.exists(p)])
    return 1 if not all(made["table"] + made["figure"]) or wired else 0


def check_wiring(tables: list[str]) -> int:
    """Print one line per table: ``ok`` and what its numbers were read from, or each problem of its
    provenance (:func:`vocab_transfer.report.provenance.check_table_provenance`: two rows that read one
    artifact, an artifact changed since, no provenance). Returns the number of tables with a problem."""
    from ..report.provenance import check_table_provenance, summary

    bad = 0
    for path in tables:
        problems = check_table_provenance(path)
        print(f"WIRING    {path}" if problems else f"wiring ok {path}: {summary(path)}")
        for problem in problems:
            print(f"          {problem}")
        bad += bool(problems)
    print(f"provenance: {len(tables) - bad} of {len(tables)} tables read each row from its own artifacts")
    return bad


if __name__ == "__main__":
    raise SystemExit(main())


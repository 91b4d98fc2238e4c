"""Several studies in one working directory and one DAG: ``snakemake --configfile configs/papers.yaml``.

A composite config names study configs (each with ``study: <name>``)::

    studies: [configs/focus.yaml, configs/wechsel.yaml, ...]
    lapt: {training: {steps: 100}}   # any other key: merged into every study, like a second --configfile

Each study runs as a Snakemake module of this workflow with its own config (rules/studies.smk): its rules are
``<study>_<rule>``, what it does not share lives under ``results/<study>/`` (:class:`~.paths.Paths`). What
studies share by name (:data:`~.paths.SHARED`: corpora, source models and their shards, task data, word
vectors, dictionaries, downloads) is built once, by the first study that needs it. :func:`check_shared`
refuses a composite in which one shared path would be built from two different specs (``corpora.de`` as CC100
in one study and OSCAR in another), naming both keys, before anything runs.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace as W

from ..typed import YamlError, load_yaml, refuse_any
from .config import ConfigError, check_config, fill_defaults
from .plan import Plan
from .plan.base import canonical
from .rehearsal import shrink
from .views import expand_snapshot_models


def load_studies(config: dict, base: str | Path = ".", rules: set[str] | None = None) -> dict[str, dict]:
    """The study configs of a composite ``config`` by study name, each merged with the composite's other keys
    and checked; :class:`ConfigError` names the file and key. A relative file name is looked up in the working
    directory, then in ``base`` (the workflow's folder: ``configs/focus.yaml`` from a run elsewhere).
    ``rules`` (a job's rules, ``<study>_<rule>``): only the studies they belong to are merged and checked."""
    from snakemake.utils import update_config  # lazy: the workflow has imported Snakemake, tests need not

    files = config.get("studies")
    refuse_any(not isinstance(files, list) or not files or not all(isinstance(f, str) for f in files),
               f"studies: a list of study config files (configs/focus.yaml, ...), got {files!r}")
    overlay = {k: v for k, v in config.items() if k != "studies"}
    studies: dict[str, dict] = {}
    for i, file in enumerate(files):
        path = Path(file) if Path(file).is_file() else Path(base) / file
        refuse_any(not path.is_file(), f"studies[{i}]: {file} is not a file (in the working directory or "
                   f"{base})")
        try:  # libyaml's parser; a key given twice or a tag is named with its line
            study = load_yaml(path.read_text(encoding="utf-8"), f"studies[{i}]: {file}")
        except YamlError as e:
            raise ConfigError(str(e)) from None
        refuse_any(not isinstance(study, dict), f"studies[{i}]: {file} is not a YAML mapping")
        name = study.get("study")
        refuse_any(not name, f"studies[{i}]: {file} has no 'study' key (the name of the folder of results "
                   "its own artifacts live in)")
        refuse_any(name in studies, f"studies[{i}]: {file} names study {name!r}, as an earlier file does")
        studies[name] = study
    wanted = {study_of_rule(rule, studies) for rule in rules or ()}
    wanted = set(studies) if not wanted or None in wanted else wanted  # the composite's own rules need all
    for file, (name, study) in zip(files, list(studies.items()), strict=True):
        if name not in wanted:
            del studies[name]
            continue
        update_config(study, copy.deepcopy(overlay))  # Snakemake's own merge of a second --configfile
        try:
            shrink(study)  # a rehearsal (vocab_transfer.workflow.rehearsal)
            check_config(study)
        except ConfigError as e:
            raise ConfigError(f"{file} (study {name}): {e}") from None
    return studies


def target_job_rules(argv: list[str]) -> list[str]:
    """The rule of each ``--target-jobs <rule>:<wildcards> ...`` of a Snakemake command line, in order: what a
    job (or a bundle of jobs) runs (the submitting run has them only in its DAG, set after the workflow is
    read)."""
    rules, taking = [], False
    for arg in argv:
        if arg.startswith("-"):
            taking = arg == "--target-jobs"
        elif taking:
            rules.append(arg.split(":", 1)[0])
    return rules


def job_rules(argv: list[str]) -> set[str]:
    return set(target_job_rules(argv))


_PARSING: list[str] = []  # the study whose module Snakemake parses now (rules/studies.smk)


@contextmanager
def parsing_study(name: str) -> Iterator[None]:
    """While Snakemake parses study ``name`` as a module of the composite (rules/studies.smk wraps its
    ``workflow.userule``): :func:`study_being_parsed` returns it."""
    _PARSING.append(name)
    try:
        yield
    finally:
        _PARSING.pop()


def study_being_parsed() -> str | None:
    """The study whose module is being parsed (rules/common.smk runs once per study in a composite), or None
    while the main workflow is: a single config, or the composite's own rules."""
    return _PARSING[-1] if _PARSING else None


def study_of_rule(rule: str, studies) -> str | None:
    """The study of a composite's rule ``<study>_<rule>`` (the longest study name that fits:
    ``vocab_swap_frankenbert`` before ``vocab_swap``), or None for the composite's own rules."""
    return max((s for s in studies if rule.startswith(f"{s}_")), key=len, default=None)


def share_rule_settings(resource_settings, studies) -> None:
    """Give each study's copy ``<study>_<rule>`` of a rule the per-rule settings a profile or command line
    gives ``<rule>`` (``set-resources``, ``set-threads``: train_lapt's GPU partition).

    Only public fields of Snakemake's ``workflow.resource_settings`` (``ResourceSettings``) are written:
    ``overwrite_resources`` and ``overwrite_threads`` (``--set-resources``, ``--set-threads``), each replaced
    by a mapping with the copies added, sharing the given values. Snakemake reads them by rule name when it
    defines a rule (and passes them on to a cluster job), so rules/studies.smk calls this before any rule
    exists; tests/test_named_targets.py checks it with the installed Snakemake."""
    studies = list(studies)
    for field in ("overwrite_resources", "overwrite_threads"):
        given = dict(getattr(resource_settings, field))
        copies = {f"{study}_{rule}": value for rule, value in given.items() for study in studies}
        setattr(resource_settings, field, {**copies, **given})


def studies_of(config: dict, base: str | Path = ".") -> dict[str, dict]:
    """The study configs of a config by study name: a composite's (:func:`load_studies`), or the config
    itself, shrunk (as load_studies shrinks each), under its ``study`` name ('' without)."""
    if "studies" in config:
        return load_studies(copy.deepcopy(config), base)
    return {config.get("study") or "": shrink(copy.deepcopy(config))}


def study_plan(study: dict):
    """The Plan of a study config as its module builds it (defaults filled in, snapshot models expanded), from
    a copy: the module gets the config as written."""
    config = fill_defaults(copy.deepcopy(study))
    if "finetune" in config:
        config["finetune"]["models"] = expand_snapshot_models(config)["finetune"].get("models", {})
    return Plan(config)


def shared_specs(plan) -> dict[str, tuple[str, str]]:
    """Every shared path a study may build (:data:`~.paths.SHARED`), with the key that defines it and the spec
    it is built from (the params of the job that builds it, and what those read by name)."""
    cfg, p, out = plan.cfg, plan.paths, {}
    corpus_specs = {c: canonical([plan.corpus_spec(W(corpus=c)), plan.written("corpus_filter"),
                                  plan.written("corpus_split"), cfg.seed]) for c in cfg.corpora}
    for c, spec in corpus_specs.items():
        out[p.corpus_stats(c).rsplit("/", 1)[0]] = (f"corpora.{c}", spec)
    for s, source in cfg.sources.items():
        if source.pretrain:
            spec = canonical([plan.pretrain_spec(W(source=s)), cfg.seed,
                              [corpus_specs.get(c) for c in source.pretrain.languages]])
        elif plan.source_model_dir(W(source=s)) == p.downloaded_model(s):
            spec = plan.source_hub_spec(W(source=s))
        else:  # a local folder: the user's own, read in place
            spec = canonical(source.model)
        out[plan.source_model_dir(W(source=s))] = (f"sources.{s}", spec)
        for c, corpus in corpus_specs.items():
            out[p.source_shards(s, c, "train").rsplit("/", 1)[0]] = (f"sources.{s} on corpora.{c}",
                                                                     canonical([spec, corpus]))
    for t in plan.task_names:
        where = f"finetune.tasks.{t}" if t in cfg.finetune.tasks else f"zero_shot.sources.{t}"
        out[p.task_data(t)] = (where, canonical([plan.task_spec(W(task=t)),
                                                 plan.finetune_task_type(W(task=t)), cfg.seed]))
    out |= {p.reference_model(m): (f"finetune.models.{m}", plan.reference_hub_spec(W(ftmodel=m)))
            for m, model in cfg.finetune.models.items() if model.pretrained}
    for lang in plan.languages:
        key = plan.word_key(lang)
        trained = key not in cfg.word_vectors
        if trained and key not in corpus_specs:
            continue
        where = f"word_vectors.{key}" if not trained else f"word_fasttext on corpora.{key}"
        spec = canonical([plan.word_vector_spec(W(lang=key)), corpus_specs.get(key) if trained else None])
        out[p.word_list(key).rsplit("/", 1)[0]] = (where, spec)
    for slang, by_target in cfg.dictionaries.items():
        out |= {p.dictionary(slang, lang): (f"dictionaries.{slang}.{lang}", plan.dictionary_params(W(
            slang=slang, lang=lang))) for lang in by_target}
    return out


def check_shared(plans: dict) -> None:
    """No shared path of two studies (``plans``: study name -> Plan) is built from different specs;
    :class:`ConfigError` names the path, both studies and their keys."""
    first: dict[str, tuple[str, str, str]] = {}
    for study, plan in plans.items():
        for path, (where, spec) in shared_specs(plan).items():
            other, other_where, other_spec = first.setdefault(path, (study, where, spec))
            if spec != other_spec:  # the message (both specs) only where they differ: this runs per path
                raise ConfigError(
                    f"{path}: study {other} builds it from {other_where} and study {study} from {where}, "
                    "which differ; what studies share by name must mean one thing: give one of them another "
                    f"name (a corpus that says what it is, such as cc100-de with language: de)\n  {other}: "
                    f"{other_spec}\n  {study}: {spec}")


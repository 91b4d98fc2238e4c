"""Checks of the workflow config between its sections, on the typed config
(:mod:`vocab_transfer.workflow.model`, which checks each key's type and bounds); run at parse time by
rules/common.smk. Each raises :class:`~..typed.ConfigError` naming the key. What the checks and the plan read
of the config beyond its keys (a LAPT run's languages, a model's tasks, a figure's runs) are the derived views
of :mod:`vocab_transfer.workflow.views`."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..data.dictionary import DICTIONARY_SOURCES
from ..data.sources import CORPUS_SOURCES
from ..data.tasks import check_spec
from ..data.tokenizer import load_tokenizer
from ..eval import benchmarks as lm_eval_tasks
from ..methods import Need, method_needs, method_params
from ..source_model import (
    TokenizerModelMismatch,
    check_architecture,
    check_tokenizer_matches,
    model_vocab_size,
    refuse_remote_code,
)
from ..training.settings import FinetuneConfig, selection_metric
from ..typed import ConfigError, YamlError, load_yaml
from . import paths
from .model import Config, Method, ModelError, SourceTokenizer, load
from .schema import fill_defaults  # noqa: F401 (the rules take it from here)
from .views import (
    all_targets,
    expand_snapshot_models,
    finetune_model_tasks,
    finetune_training,
    followed_sources,
    lapt_run_targets,
    local_model_dir,
    method_targets,
    sequence_lengths,
    several_families,
    source_is_masked,
    source_positions,
    source_role,
    target_users,
    task_target,
    zero_shot_training,
    zero_shot_trainings,
)


def _path_not_hub_id(name: str) -> bool:
    """A name that can only be a filesystem path: relative/absolute, or more slashes than a hub
    ``owner/repo``."""
    return name.startswith((".", "/")) or name.count("/") > 1


def _check_entry(value, known, where: str, section: str, list_known: bool = False) -> None:
    """:class:`ConfigError` at ``where`` unless ``value`` is an entry of ``known`` (the config's ``section``;
    ``list_known``: the message lists the entries)."""
    if value not in known:
        listed = f" (known: {sorted(known)})" if list_known else ""
        raise ConfigError(f"{where}: {value!r} is not an entry of {section}{listed}")


def check_configfiles(configfiles) -> None:
    """No config file is one of the workflow's own files (``results/...``, ``resources/...``): a target
    written after ``--configfile``, which takes every word after it as a config file (Snakemake fails itself,
    before the workflow is read, when the target does not exist or is no YAML or JSON; a JSON artifact reaches
    this check)."""
    files = [os.path.relpath(os.path.abspath(f)) for f in configfiles]
    own = [f for f in files if f.split(os.sep)[0] in (paths.RESULTS, paths.RESOURCES)]
    if own:
        configs = " ".join(f"--configfile {f}" for f in files if f not in own) or "--configfile <config>"
        raise ConfigError(f"--configfile {' '.join(own)}: a target, not a config file (Snakemake reads every "
                          "word after --configfile as a config file); name targets before --configfile "
                          f"(snakemake -n {' '.join(own)} {configs}) or end the config files with -- "
                          f"(snakemake -n {configs} -- {' '.join(own)})")
    # What Snakemake's loader lets through: a key given twice in one mapping (the last one wins), at any
    # depth. One libyaml parse of each file (a tag, which Snakemake's loader refuses itself, is named here for
    # a file it did read).
    for f in configfiles:
        try:
            text = Path(f).read_text(encoding="utf-8")
        except OSError:
            continue  # Snakemake names a config file it cannot read
        try:
            load_yaml(text, f"--configfile {f}")  # JSON is YAML too (flow style)
        except YamlError as e:
            if text.lstrip().startswith(("{", "[")) and "not valid YAML" in str(e):
                continue  # JSON that is no YAML (a tab in its indentation): Snakemake read it as JSON
            raise ConfigError(str(e)) from None


#: The longest file name that ext4, XFS and Lustre take (bytes), and the most the pipeline adds around a file
#: name when writing or deleting it (``.<name>.XXXXXXXX.deleted.tmp``: 22, ``.<name>.manifest.json.tmp``: 20).
FILE_NAME_BYTES, AFFIX_BYTES = 255, 22


def too_long(path: str) -> str | None:
    """The first file or folder name of ``path`` that, with the pipeline's temporary affixes, is longer than a
    file system allows (:data:`FILE_NAME_BYTES`); None when every one fits."""
    return next((part for part in path.split("/")
                 if len(part.encode()) + AFFIX_BYTES > FILE_NAME_BYTES), None)


def check_config(config: dict) -> Config:
    """The typed config (:func:`vocab_transfer.workflow.model.load`), or :class:`ConfigError` naming the first
    problem: a key that does not fit its section (misspelled key, wrong type, a bound), an unknown language,
    method or parameter, a rule between keys, or a local source model whose tokenizer does not match its
    embedding matrix."""
    try:
        cfg = load(expand_snapshot_models(config))
    except ModelError as e:
        raise ConfigError(str(e).removeprefix("config.")) from None
    for check in (check_corpora, check_targets, check_sources, check_methods, check_tokenizers,
                  check_corpus_settings, check_lapt, check_finetune, check_zero_shot, check_tables,
                  check_figures, check_benchmarks, check_dictionaries, check_sequence_lengths):
        check(cfg)
    return cfg


def check_corpora(cfg: Config) -> None:
    """``corpora``: each spec passes its source's check (``data.sources``: a hub corpus's language is one the
    hub has; a text corpus's files exist, hold text and can be read)."""
    for key, corpus in cfg.corpora.items():
        problem = CORPUS_SOURCES[corpus.source].problem(key, corpus)
        if problem:
            raise ConfigError(problem)


def check_targets(cfg: Config) -> None:
    """``targets``: each reads a corpus of ``corpora``; every target a section names (LAPT, tasks, methods) is
    one; each that trains its tokenizer has a ``vocab_size``."""
    corpora = cfg.corpora
    for i, name in enumerate(cfg.target_names):
        corpus = cfg.target_corpus(name)
        if corpus not in corpora:
            where = f"targets[{i}]" + (".corpus" if cfg.target(name).corpus else "")
            several = cfg.corpora_of_language(name)
            raise ConfigError(f"{where}: {corpus!r} has no entry under 'corpora' (known: {sorted(corpora)})"
                              + (f"; {several} are all in language {name!r}: name the target's corpus "
                                 f"({{name: {name}, corpus: {several[0]}}})" if several else ""))
    for i, name in enumerate(cfg.target_names):
        unknown = [s for s in cfg.target(name).sources or [] if s not in cfg.sources]
        if unknown:
            raise ConfigError(f"targets[{i}].sources: {unknown} are not entries of 'sources' (known: "
                              f"{sorted(cfg.sources)})")
    unpaired = [s for s in cfg.sources if not any(s in cfg.target_sources(t) for t in cfg.target_names)]
    if unpaired:
        raise ConfigError(f"targets: the sources {unpaired} are transferred to no target (each target's own "
                          "tokenizer.like names another source); list them under a target's sources "
                          f"({{name: {cfg.target_names[0]}, sources: [...]}})")
    targets = all_targets(cfg)
    for t in targets:
        if not cfg.is_target(t):
            raise ConfigError(f"{target_users(cfg, t)}: {t!r} is neither a target nor a corpora key "
                              f"(targets: {cfg.target_names}; corpora: {sorted(corpora)})")
    untrained = [t for t in targets if t not in cfg.tokenizer.pretrained
                 and cfg.target_tokenizer(t).vocab_size is None]
    if untrained:
        raise ConfigError(f"tokenizer.vocab_size: needed to train the tokenizers of {untrained} (targets "
                          "without a tokenizer.pretrained entry or their own tokenizer.vocab_size)")


def check_sources(cfg: Config) -> None:
    """``sources``: a recipe's languages have corpora; a local model folder exists, has no hub revision, and
    its tokenizer fits its embedding matrix."""
    for name, source in cfg.sources.items():
        # a hub source's `languages`: any codes
        for lang in source.pretrain.languages if source.pretrain else ():
            if lang not in cfg.corpora:
                raise ConfigError(f"sources.{name}: pretraining language {lang!r} has no entry under "
                                  f"'corpora' (known: {sorted(cfg.corpora)})")
        model = local_model_dir(source)
        if model is not None:
            if source.revision is not None:
                raise ConfigError(f"sources.{name}.revision: {source.model!r} is a local folder; a revision "
                                  "pins a hub id only")
            check_local_source(name, model, source.allow_padded_embeddings, source.trust_remote_code)
        elif source.model and _path_not_hub_id(source.model):
            raise ConfigError(f"sources.{name}.model: {source.model!r} is not a directory (nor a hub id)")


def check_methods(cfg: Config) -> None:
    """``methods``: the resources a method reads, and the devices it asks for (its kind and parameters are
    checked with its section: :meth:`~.model.Method.check`)."""
    for name, method in cfg.methods.items():
        check_method_resources(cfg, name, method)
        if method.kind == "wechsel" and method.params.get("subwords") == "fasttext":
            source_language = method.params.get("source_language", "en")
            for lang in [source_language, *map(cfg.target_language, method_targets(cfg, name))]:
                spec = cfg.word_vectors.get(lang)
                if spec is not None and spec.path and not spec.path.endswith(".bin"):
                    raise ConfigError(f"methods.{name}.subwords: fasttext needs the .bin model of {lang!r}, "
                                      f"but word_vectors.{lang}.path is {spec.path!r}")
        # factorize_source gets GPUs as LAPT does
        if method.params.get("device") == "cuda" and cfg.lapt.gpus == 0:
            raise ConfigError(f"methods.{name}.device: cuda needs a GPU, but this config's GPU jobs get none "
                              "(lapt.gpus: 0); set device: auto (the GPU where there is one) or lapt.gpus")


def check_tokenizers(cfg: Config) -> None:
    """``tokenizer`` and the targets' own: ``like`` names a source; a family without a mask token is refused
    where a masked LM is pretrained here; ``pretrained`` entries name targets and existing tokenizers. A
    target tokenizer without ``like`` and ``kind`` follows the one decoder source
    (:func:`~.views.followed_sources`); a decoder among several sources is refused where a ``config.json``
    tells (:func:`~.views.source_role`), naming ``tokenizer.like``."""
    # masked LMs; hub and local sources are known later
    mlm = [n for n, s in cfg.sources.items() if s.pretrain]
    roles = None
    for t in all_targets(cfg):
        tok = cfg.target_tokenizer(t)
        where = "tokenizer" if tok is cfg.tokenizer else f"targets[{cfg.target_names.index(t)}].tokenizer"
        if tok.like is not None:
            _check_entry(tok.like, cfg.sources, f"{where}.like", "'sources'", True)
        if len(cfg.sources) > 1 and followed_sources(cfg, t):
            roles = roles or {s: source_role(s, spec) for s, spec in cfg.sources.items()}
            if "causal" in roles.values():
                raise ConfigError(several_families(where, roles, t if where != "tokenizer" else None))
        if tok.kind in ("bpe", "byte_level") and mlm:
            raise ConfigError(f"{where}.kind: {tok.kind} tokenizers have no mask token, which the masked "
                              f"LM(s) {mlm} pretrained here need; use unigram or wordpiece")
    for lang, spec in cfg.tokenizer.pretrained.items():
        if not cfg.is_target(lang):
            raise ConfigError(f"tokenizer.pretrained.{lang}: {lang!r} is neither a target nor a corpora key")
        if isinstance(spec, SourceTokenizer):
            _check_entry(spec.source, cfg.sources, f"tokenizer.pretrained.{lang}.source", "'sources'", True)
        if isinstance(spec, str) and _path_not_hub_id(spec) and not Path(spec).is_dir():
            raise ConfigError(f"tokenizer.pretrained.{lang}: {spec!r} is not a directory (nor a hub id)")
        if isinstance(spec, str) and Path(spec).is_dir():
            check_tokenizer_folder(Path(spec), f"tokenizer.pretrained.{lang}")


def check_sequence_lengths(cfg: Config) -> None:
    """No sequence longer than a source's position table, where the table's size is known before any job runs
    (:func:`~.views.source_positions`): the job would fail in the model's forward pass, after its inputs were
    built."""
    limits = {name: n for name, source in cfg.sources.items() if (n := source_positions(source)) is not None}
    if not limits:
        return
    for key, tokens in sequence_lengths(cfg):
        for name, n in limits.items():
            if tokens > n:
                why = ("pretrained here on blocks of that length" if cfg.sources[name].pretrain
                       else "its position table")
                raise ConfigError(f"{key} is {tokens} tokens, but source {name!r} takes at most {n} ({why}): "
                                  f"lower it to {n} or less")


def check_dictionaries(cfg: Config) -> None:
    """``dictionaries``: each spec passes its source's check (``data.dictionary``: the key it reads; identical
    spellings need word vectors of both languages)."""
    for slang, by_target in cfg.dictionaries.items():
        for lang, spec in by_target.items():
            vectors = all(cfg.has_language(x) or x in cfg.word_vectors for x in (slang, lang))
            problem = DICTIONARY_SOURCES[spec.source].problem(f"dictionaries.{slang}.{lang}", spec, vectors)
            if problem:
                raise ConfigError(problem)


def check_base_init(cfg: Config, name: str) -> None:
    """A refining method's ``init`` names another methods entry, on the target's own tokenizer, and no chain
    of ``init`` returns to ``name``."""
    seen = [name]
    while True:
        spec = cfg.methods[seen[-1]]
        if Need.BASE_INIT not in method_needs(spec.kind, spec.params):
            break
        base = spec.params.get("init")
        if base is None:
            raise ConfigError(f"methods.{seen[-1]}.init: missing: kind {spec.kind!r} refines the rows "
                              "of another entry of 'methods'; name it (known: "
                              f"{sorted(set(cfg.methods) - {seen[-1]})})")
        _check_entry(base, cfg.methods, f"methods.{seen[-1]}.init", "'methods'", True)
        if base in seen:
            raise ConfigError(f"methods.{name}.init: the rows start from each other in a circle: "
                              f"{' -> '.join([*seen, base])}")
        seen.append(base)
    base = cfg.methods[cfg.methods[name].params["init"]]
    if Need.EXTENDED_TOKENIZER in method_needs(base.kind, base.params):
        raise ConfigError(f"methods.{name}.init: {cfg.methods[name].params['init']!r} extends the source "
                          "vocabulary (kind extend), whose rows belong to another tokenizer; refine a row of "
                          "the target's own tokenizer")


def check_method_resources(cfg: Config, name: str, method: Method) -> None:
    """Every artifact the method needs can be built: languages with corpora, dictionaries configured."""
    try:
        needs, p = method_needs(method.kind, method.params), method_params(method.kind, method.params)
    except ValueError as e:
        raise ConfigError(f"methods.{name}: {e}") from None
    if method.fasttext is not None and Need.TOKEN_VECTORS not in needs:
        raise ConfigError(f"methods.{name}.fasttext: a token-level fastText recipe applies to methods that "
                          f"read token-level fastText, and {method.kind!r} with these parameters reads none")
    for t in method.targets or []:
        if t not in cfg.target_names:
            raise ConfigError(f"methods.{name}.targets: {t!r} is not one of the config's "
                              f"targets {cfg.target_names}")
    if Need.SOURCE_TOKEN_VECTORS in needs and not cfg.has_language(p["source_language"]):
        raise ConfigError(f"methods.{name}: source_language {p['source_language']!r} is the language of no "
                          "corpus under 'corpora'")
    if Need.SOURCE_WORDS in needs and not (cfg.has_language(p["source_language"])
                                           or p["source_language"] in cfg.word_vectors):
        raise ConfigError(f"methods.{name}: source_language {p['source_language']!r} has neither a "
                          "corpus nor 'word_vectors'")
    if Need.LANGUAGE_TOKENIZER in needs and not cfg.is_target(p["restrict_source"]):
        raise ConfigError(f"methods.{name}: restrict_source {p['restrict_source']!r} is neither a "
                          "target nor a corpora key")
    if Need.BASE_INIT in needs:
        check_base_init(cfg, name)
    if Need.DICTIONARY in needs:
        have = cfg.dictionaries.get(p["source_language"], {})
        missing = [cfg.target_language(t) for t in method_targets(cfg, name)
                   if cfg.target_language(t) not in have]
        if missing:
            raise ConfigError(f"methods.{name}: no dictionary {p['source_language']} -> {missing} under "
                              "'dictionaries' (e.g. {source: freedict, name: ...} or {source: "
                              "identical}), or restrict the method with 'targets'")


TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "vocab.json", "spiece.model",
                   "sentencepiece.bpe.model", "tokenizer.model")


def check_tokenizer_folder(folder: Path, where: str) -> None:
    """A local tokenizer folder has a tokenizer's files and loads (a fast tokenizer: the pipeline reads its
    tokenizer.json); ConfigError naming the key and the folder otherwise."""
    if not any((folder / f).is_file() for f in TOKENIZER_FILES):
        raise ConfigError(f"{where}: {folder} has no tokenizer files (none of {list(TOKENIZER_FILES)})")
    try:
        tok = load_tokenizer(str(folder))
    except Exception as e:  # noqa: BLE001 - whatever transformers raises, the folder is the problem
        raise ConfigError(f"{where}: {folder} does not load as a tokenizer "
                          f"({type(e).__name__}: {e})") from None
    if not tok.is_fast:
        raise ConfigError(f"{where}: {folder} has no fast (tokenizers) implementation: the overlap and the "
                          "methods read its tokenizer.json")


def check_local_source(name: str, model_dir: Path, allow_padded: bool,
                       trust_remote_code: bool = False) -> None:
    """Compare the tokenizer's size with the embedding rows in ``config.json`` (no weights loaded); refuse a
    model that needs its repository's code or has no LM head transformers knows."""
    if not (model_dir / "config.json").is_file():
        raise ConfigError(f"sources.{name}.model: {model_dir} has no config.json (not a "
                          "save_pretrained folder)")
    try:
        model_config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    except (ValueError, OSError) as e:
        raise ConfigError(f"sources.{name}.model: {model_dir}/config.json is unreadable ({e})") from None
    missing = [k for k in ("model_type", "vocab_size")
               if not isinstance(model_config, dict) or k not in model_config]
    if missing:
        raise ConfigError(f"sources.{name}.model: {model_dir}/config.json lacks {missing} (the architecture "
                          "and the embedding rows the pipeline reads); save the model with save_pretrained")
    try:
        refuse_remote_code(model_dir, f"sources.{name}.model", trust_remote_code)
        if not trust_remote_code:
            check_architecture(model_dir, f"sources.{name}.model")
    except ValueError as e:
        raise ConfigError(str(e)) from None
    try:
        check_tokenizer_matches(len(load_tokenizer(str(model_dir))), model_vocab_size(model_dir), name=name,
                                allow_padded_embeddings=allow_padded)
    except TokenizerModelMismatch as e:
        raise ConfigError(str(e)) from None


def check_corpus_settings(cfg: Config) -> None:
    """Corpus filter and split settings that would leave nothing: a length window that no document fits, a
    held-out share of zero where init-time losses and LAPT curves are computed on held-out text."""
    f, split = cfg.corpus_filter, cfg.corpus_split
    if f.max_chars is not None and f.min_chars > f.max_chars:
        raise ConfigError(f"corpus_filter: min_chars {f.min_chars} is greater than max_chars {f.max_chars}: "
                          "every document would be dropped")
    if f.split_chars is not None and f.split_chars < f.min_chars:
        raise ConfigError(f"corpus_filter: split_chars {f.split_chars} is below min_chars {f.min_chars}: the "
                          "pieces of long documents would all be dropped as too short")
    if split.heldout_fraction == 0 and (cfg.methods or cfg.lapt.runs):
        raise ConfigError("corpus_split.heldout_fraction: 0 leaves no held-out text, which the init-time "
                          "loss (results/eval_init) and the LAPT curves are computed on; use e.g. 0.01")


def check_lapt(cfg: Config) -> None:
    """LAPT runs start from configured methods on languages with corpora, with valid LaptConfig fields."""
    runs = cfg.lapt.runs
    for name in runs:
        for t in lapt_run_targets(cfg, name):
            if not cfg.is_target(t):
                raise ConfigError(f"lapt: target {t!r} of run {name!r} is neither a target nor a corpora key")
    for name, run in runs.items():
        kinds = [k for k in ("method", "source") if getattr(run, k)]
        if len(kinds) != 1:
            raise ConfigError(f"lapt.runs.{name}: give exactly one of method (a new vocabulary: "
                              "an entry of 'methods') and source: true (the source model with its own "
                              f"vocabulary), got {kinds}")
        if run.method:
            _check_entry(run.method, cfg.methods, f"lapt.runs.{name}.method", "'methods'")
            check_method_language(cfg, run.method, lapt_run_targets(cfg, name), f"lapt.runs.{name}")
        settings = cfg.lapt_run_config(name)
        world = cfg.lapt.gpus * cfg.lapt.nodes or 1  # the processes the launcher starts (one on the CPU)
        for key in ("batch_size", "long_batch_size"):
            size = getattr(settings, key)
            if size and size % world:
                raise ConfigError(f"lapt.runs.{name}: {key} {size} is not divisible by the {world} GPUs of "
                                  f"the run (lapt.gpus {cfg.lapt.gpus} x lapt.nodes {cfg.lapt.nodes}): "
                                  "each GPU takes an equal share of a step's sequences (micro_batch_size "
                                  "then splits the share)")
        kind = cfg.methods[run.method].kind if run.method else None
        if settings.factorized and kind != "mf":
            raise ConfigError(f"lapt.runs.{name}: factorized: true trains the factors "
                              "of a kind: mf init, but "
                              + (f"method {run.method!r} is of kind {kind!r}" if kind
                                 else "the run has no init"))


def check_method_language(cfg: Config, method: str, langs: list[str], where: str) -> None:
    """A method can be used by LAPT or fine-tuning on any language with a corpus (its ``targets`` list only
    picks its cells of the init-loss table), unless it needs a dictionary that is not configured."""
    spec = cfg.methods[method]
    if Need.DICTIONARY in method_needs(spec.kind, spec.params):
        slang = method_params(spec.kind, spec.params)["source_language"]
        missing = [cfg.target_language(t) for t in langs
                   if cfg.target_language(t) not in cfg.dictionaries.get(slang, {})]
        if missing:
            raise ConfigError(f"{where}: method {method!r} needs a dictionary {slang} -> {missing}")


def check_finetune(cfg: Config) -> None:
    """Fine-tuned models exist in the config (LAPT runs on the task's language, methods, reference models),
    tasks have corpora and known loaders, and the training settings are FinetuneConfig fields with a metric
    the task reports."""
    ft = cfg.finetune
    for name, task in ft.tasks.items():
        where = f"finetune.tasks.{name}"
        if task.target is not None and not cfg.is_target(task.target):
            raise ConfigError(f"{where}.target: {task.target!r} is neither a target nor a corpora key")
        task_target(cfg, name)
        if task.dataset.get("test_only"):
            raise ConfigError(f"{where}.dataset.test_only: a task that is trained on needs its train split; "
                              "test-only data is for zero-shot targets (zero_shot: [...]), which read the "
                              "test split by themselves")
        try:
            check_spec({"task": task.task, **task.dataset})
            selection_metric(task.task, FinetuneConfig.parse(finetune_training(cfg, name)))
        except (TypeError, ValueError) as e:
            raise ConfigError(f"{where}: {e}") from None
    for mname, model in ft.models.items():
        where = f"finetune.models.{mname}"
        kinds = [k for k in ("lapt", "init", "source", "pretrained") if getattr(model, k)]
        if len(kinds) != 1:
            raise ConfigError(f"{where}: give exactly one of lapt, init, source, pretrained (got {kinds})")
        ref = model.pretrained
        if ref and _path_not_hub_id(ref) and not Path(ref).is_dir():
            raise ConfigError(f"{where}.pretrained: {ref!r} is not a directory (nor a hub id)")
        if model.revision is not None and not (ref and not Path(ref).is_dir()):
            raise ConfigError(f"{where}.revision: a hub revision pins pretrained: <hub id> only"
                              + (f" ({ref!r} is a local folder)" if ref else ""))
        if model.lapt:
            _check_entry(model.lapt, cfg.lapt.runs, f"{where}.lapt", "lapt.runs")
        if model.step is not None:
            if not model.lapt:
                raise ConfigError(f"{where}: step/steps (a LAPT snapshot) needs lapt: <run>")
            kept = cfg.lapt_run_config(model.lapt).snapshot_steps
            if model.step not in kept:
                raise ConfigError(f"{where}: LAPT run {model.lapt!r} keeps no snapshot of step {model.step} "
                                  f"(its snapshot_steps: {kept}); add the step to lapt.runs.{model.lapt}."
                                  "snapshot_steps (or lapt.training)")
        if model.init:
            _check_entry(model.init, cfg.methods, f"{where}.init", "'methods'")
        unknown = [t for t in model.tasks or [] if t not in ft.tasks]
        if unknown:
            raise ConfigError(f"{where}.tasks: {unknown} are not entries of finetune.tasks")
        for tname in finetune_model_tasks(cfg, mname):
            lang = task_target(cfg, tname)
            if model.init:
                check_method_language(cfg, model.init, [lang], where)
            if model.lapt and lang not in lapt_run_targets(cfg, model.lapt):
                raise ConfigError(f"{where}: LAPT run {model.lapt!r} is not trained on {lang!r} (task "
                                  f"{tname}); add it to lapt.targets or the run's targets")
    # a job's files are named by its seeds: seed1+2+3.history.parquet
    for tname in ft.tasks if ft.seeds else ():
        for group in ft.seed_groups(tname):
            name = too_long(paths.finetune_history("s", tname, "m", "+".join(map(str, group))))
            if name is not None:
                raise ConfigError(f"finetune.seeds: a job of task {tname} trains {len(group)} seeds "
                                  f"({group[0]} to {group[-1]}), and its files are "
                                  f"named by them ({name[:40]}..., {len(name)} characters): too long a file "
                                  "name; set finetune.seeds_per_job (fewer seeds a job)")


def check_labels(labels: dict[str, str], where: str, what: str) -> None:
    """Rows of a table have distinct labels (two rows labelled alike read as one result twice)."""
    seen: dict[str, list[str]] = {}
    for name, label in labels.items():
        seen.setdefault(label, []).append(name)
    for label, names in seen.items():
        if len(names) > 1:
            raise ConfigError(f"{where}: {names} are all labelled {label!r} (their {what} entries' label): "
                              "give each row its own label")


def check_tables(cfg: Config) -> None:
    """Paper tables name configured fine-tuned models, LAPT runs, methods, tasks and languages, as each kind's
    rules say (:meth:`vocab_transfer.workflow.table_kinds.TableSpec.check_against`)."""
    for name, spec in cfg.tables.items():
        spec.check_against(cfg, name)


def check_benchmarks(cfg: Config) -> None:
    """``eval.benchmarks`` names targets, methods entries and LAPT runs, a task folder that exists, tasks
    lm-eval knows (:func:`check_benchmark_tasks`), and no masked-LM source: none pretrained here, no local
    folder or downloaded hub model whose config.json is a masked LM (:func:`~.views.source_is_masked`;
    lm-eval's benchmarks score decoders)."""
    spec = cfg.eval.benchmarks
    if spec is None or not spec.tasks:
        return
    for t in spec.tasks:
        if t not in cfg.target_names:
            raise ConfigError(f"eval.benchmarks.tasks: {t!r} is not one of the config's "
                              f"targets {cfg.target_names}")
    for m in spec.methods or []:
        _check_entry(m, cfg.methods, "eval.benchmarks.methods", "'methods'")
    for r in spec.runs or []:
        if r not in cfg.lapt.runs:
            raise ConfigError(f"eval.benchmarks.runs: {r!r} is not a run of lapt.runs")
    if spec.include_path is not None and not Path(spec.include_path).is_dir():
        raise ConfigError(f"eval.benchmarks.include_path: {spec.include_path!r} is not a folder "
                          "(of lm-eval task YAMLs)")
    masked = [s for s, source in cfg.sources.items() if source.pretrain]
    if masked:
        raise ConfigError(f"eval.benchmarks: sources {masked} are masked LMs pretrained here; lm-eval's "
                          "benchmarks score decoder (causal) LMs")
    for name, source in cfg.sources.items():
        if source_is_masked(name, source):
            raise ConfigError(f"eval.benchmarks: source {name!r} ({source.model}) is a masked LM (its "
                              "config.json); lm-eval's benchmarks score decoder (causal) LMs: "
                              "leave eval.benchmarks out")
    check_benchmark_tasks(spec.tasks, spec.include_path)


def check_benchmark_tasks(tasks: dict[str, list[str]], include_path: str | None) -> None:
    """Each target's task names are tasks, groups or tags of lm-eval's registry (with ``include_path``'s tasks
    and a hub mirror's; close matches suggested) where lm-eval is installed (the registry is cached,
    :func:`~..eval.benchmarks.task_registry`). An offline run's hub datasets are refused by the download job,
    at once (:func:`~..eval.benchmarks.check_offline`): a dry run plans offline what a later run fetches."""
    registry = lm_eval_tasks.task_registry(include_path)
    if registry is None:
        return
    for target, names in tasks.items():
        unknown = lm_eval_tasks.unknown_tasks(names, registry)
        if unknown:
            raise ConfigError(f"eval.benchmarks.tasks.{target}: lm-eval knows no task, group or tag "
                              f"{', '.join(unknown)} (include_path: {include_path}); `lm_eval "
                              "--tasks list` lists them")


def check_figures(cfg: Config) -> None:
    """Paper figures (config ``figures``) name LAPT runs, models and tasks as each kind's rules say
    (:meth:`vocab_transfer.workflow.figure_kinds.FigureSpec.check_against`)."""
    for name, spec in cfg.figures.items():
        spec.check_against(cfg, name)


def check_zero_shot(cfg: Config) -> None:
    """Zero-shot transfer (unks-everywhere §4.3, App. A.1): source tasks and setups are well-formed, a
    zero-shot task names source tasks of its task type, and every model on a zero-shot task names a setup its
    target side fits: a task adapter (``adapter``) needs a target LAPT run of variant adapter whose language
    adapter has the settings of the setup's source-language run, ``fmt`` an ``embeddings_only`` run (or the
    source), ``full`` the source model; the setup's source-language run must have been trained on each source
    task's language."""
    sources, setups, tasks = cfg.zero_shot.sources, cfg.zero_shot.setups, cfg.finetune.tasks
    runs = cfg.lapt.runs
    clash = sorted(set(sources) & set(tasks))
    if clash:
        raise ConfigError(f"zero_shot.sources {clash}: the names are taken by finetune.tasks (one namespace: "
                          f"{paths.task_data('<name>')})")
    for name, src in sources.items():
        if src.dataset.get("test_only"):
            raise ConfigError(f"zero_shot.sources.{name}.dataset.test_only: the source "
                              "side trains on this task")
        try:
            check_spec({"task": src.task, **src.dataset})
        except ValueError as e:
            raise ConfigError(f"zero_shot.sources.{name}: {e}") from None
    for name, setup in setups.items():
        where = f"zero_shot.setups.{name}"
        if setup.variant != "adapter":
            extra = [k for k in ("lapt", "adapter") if setup.written(k)]
            if extra:
                raise ConfigError(f"{where}: {extra} apply to variant adapter, not {setup.variant!r}")
            continue
        run = setup.lapt
        if run not in runs:
            raise ConfigError(f"{where}.lapt: {run!r} is not an entry of lapt.runs (variant adapter stacks "
                              "the task adapter on that run's source-language adapter)")
        lapt = cfg.lapt_run_config(run)
        if not runs[run].source or lapt.variant != "adapter" or lapt.train_embeddings:
            raise ConfigError(f"{where}.lapt: run {run!r} must train MAD-X language adapters on the source "
                              "model's own vocabulary, which stays the source's: source: true, variant: "
                              "adapter, train_embeddings: false")
    for name, task in tasks.items():
        if task.zero_shot is None:
            if task.unseen_labels is not None:
                raise ConfigError(f"finetune.tasks.{name}.unseen_labels applies to zero-shot "
                                  "tasks (zero_shot: ...)")
            continue
        if task.seeds_per_job is not None:
            raise ConfigError(f"finetune.tasks.{name}.seeds_per_job applies to in-language fine-tuning; a "
                              "zero-shot task's cells are one job each (rule evaluate_zero_shot)")
        for s in task.zero_shot:
            _check_entry(s, sources, f"finetune.tasks.{name}.zero_shot", "zero_shot.sources")
            if sources[s].task != task.task:
                raise ConfigError(f"finetune.tasks.{name}.zero_shot: source task {s!r} is "
                                  f"{sources[s].task!r}, not {task.task!r}")
    for mname, model in cfg.finetune.models.items():
        where, setup = f"finetune.models.{mname}", model.zero_shot
        if setup is not None:
            _check_entry(setup, setups, f"{where}.zero_shot", "zero_shot.setups")
        zs_tasks = [t for t in finetune_model_tasks(cfg, mname) if tasks[t].zero_shot is not None]
        if zs_tasks and setup is None:
            raise ConfigError(f"{where}: tasks {zs_tasks} are zero-shot; name a zero_shot "
                              "setup (zero_shot: <setup>)")
        if not zs_tasks or setup is None:
            continue
        spec, run = setups[setup], model.lapt
        lapt = None if run is None else cfg.lapt_run_config(run)
        variant = lapt.variant if lapt else None
        if spec.variant == "full" and not model.source:
            raise ConfigError(f"{where}: setup {setup!r} (variant full) evaluates the fine-tuned source "
                              "model itself: the model must be {source: true}")
        if spec.variant == "fmt" and not (model.source or variant == "embeddings_only"):
            raise ConfigError(f"{where}: setup {setup!r} (variant fmt) swaps in embeddings learned against "
                              "the frozen transformer: the model must be a LAPT run of variant "
                              "embeddings_only (or the source)")
        if spec.variant == "adapter":
            if variant != "adapter":
                raise ConfigError(f"{where}: setup {setup!r} (variant adapter) swaps in the target's "
                                  "language adapter: the model must be a LAPT run of variant adapter")
            theirs = cfg.lapt_run_settings(spec.lapt).get("adapter", {})
            if lapt.adapter != cfg.lapt_run_config(spec.lapt).adapter:
                ours = cfg.lapt_run_settings(run).get("adapter", {})
                raise ConfigError(f"{where}: the language adapter of LAPT run {run!r} ({ours}) differs from "
                                  f"the source-side run {spec.lapt!r} of setup {setup!r} ({theirs})")
            for t in zs_tasks:
                for s in tasks[t].zero_shot:
                    if sources[s].language not in lapt_run_targets(cfg, spec.lapt):
                        raise ConfigError(f"{where}: setup {setup!r} needs LAPT run {spec.lapt!r} on "
                                          f"{sources[s].language!r} (source task {s}); add "
                                          "it to the run's targets")
    for s, setup in zero_shot_trainings(cfg):
        settings = FinetuneConfig.parse(zero_shot_training(cfg, setup, s),
                                        f"zero_shot (source task {s}, setup {setup})")
        if settings.train_language_adapter:
            raise ConfigError(f"zero_shot (setup {setup}): train_language_adapter must be false (the "
                              "source-language adapter is swapped at inference, so it stays fixed)")

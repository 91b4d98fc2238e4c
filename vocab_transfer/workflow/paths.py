"""The path grammar of ``results/`` and ``resources/``: one function per artifact.

Rules, input functions, scripts and the package take paths from here. Called with wildcard placeholders
(``corpus("{lang}", "train")``) a function gives a rule's readable output pattern; called with values it gives
the file. ``tests/test_paths.py`` checks that every rule's outputs are spelled by one of these functions. The
shape of every path (``<split>`` is ``train`` or ``heldout``)::

    results/corpus/<corpus>/<split>.parquet/part-NNNNN.parquet    cleaned documents
    results/corpus/<corpus>/stats.json                            what was read, kept and dropped
    results/tokenizers/<target>/                                  target tokenizer (+ training.json)
    results/shards/<target>/<split>/                              its corpus tokenized with it
    results/source/<source>/{tokenizer,model}/                    a source pretrained here
    results/source/<source>/pretrain_curve.{parquet,png}
    results/source_shards/<source>/<corpus>/<split>/              a corpus tokenized with a source's tokenizer
    results/fasttext/<target>/{vectors.safetensors,tokens.parquet}  token-level fastText (target tokenizer)
    results/fasttext/<target>/<preset>/{vectors.safetensors,tokens.parquet}  ... with a named recipe variant
    results/source_fasttext/<source>/<lang>/{vectors.safetensors,tokens.parquet}  ... (source tokenizer)
    results/word_vectors/<key>/{vectors.safetensors,words.parquet}    word-level vectors (key: a word_vectors
                                                                  key, the language of pretrained ones; else
                                                                  the corpus)
    results/dictionaries/<source lang>/<lang>.parquet             bilingual dictionary
    results/overlap/<source>/<target>.parquet                     vocabulary overlap
    results/factorized/<source>/<mf-key>.safetensors              Semi-NMF factors of a source matrix
    results/extended/<source>/<target>/<method>/tokenizer/        vocabulary-extension tokenizer
    results/extended/<source>/<target>/<method>/shards/<split>/   the target corpus tokenized with it
    results/init/<source>/<target>/<method>.{safetensors,provenance.parquet}   init artifact
    results/eval_init/heldout/<target>.safetensors                packed held-out blocks
    results/eval_init/heldout/<source>/<target>/<method>.safetensors  ... of an extension tokenizer
    results/eval_init/<source>/<target>.parquet                   init-time loss per method
    results/eval_init/<source>/probe/<task>/<method>.parquet      linear-probe accuracy at init
    results/lapt/<source>/<target>/<run>/{model/,curve.parquet,snapshots/,token_accuracy.parquet,checkpoints/}
    results/tasks/<task>/                                         downstream data
    results/finetune/<source>/<task>/<model>/seed<N>[+<N>...].{parquet,history.parquet,checkpoints/}
                                                                  a job's seeds
    results/source_task/<source>/<source task>/<setup>/seed<N>.{model/,parquet,history.parquet,checkpoints/}
    results/zeroshot/<source>/<task>/<model>.parquet              zero-shot: a row per seed and source task
    results/benchmarks/<target>/data.json                         the target's lm-eval tasks, datasets fetched
    results/benchmarks/<target>/<source>/{source,init,lapt}/<name>.parquet  lm-eval scores of one model
    results/tables/{init_mlm_loss,finetune}.{csv,md,html}, finetune_scores.parquet,
    results/tables/paper/<table>.{csv,md,html}, results/tables/benchmarks.{csv,md}
    results/figures/<kind>/<source>/<name>.{png,svg,csv}          kind: lapt_curves, embedding_correlation,
                                                                  lapt_finetune, token_accuracy
    results/export/<source>/<target>/{init/<method>,lapt/<run>}/  Hugging Face model folders with a model card
    results/export/<source>/<target>/{init,lapt}/<name>.pushed.json  the receipt of a push to the hub
    resources/models/<source>/, resources/corpora/<corpus>/, resources/tokenizers/<owner>--<name>/,
    resources/reference_models/<model>/, resources/benchmark_datasets/ (lm-eval's datasets cache),
    resources/word_vectors/cc.<lang>.300.bin,
    resources/dictionaries/<source lang>-<lang>.txt               downloads

A config with ``study: <name>`` (each paper config) keeps every artifact not shared by name (:data:`SHARED`:
corpora, source models, source shards, task data, word vectors, dictionaries, downloads) under
``results/<name>/`` instead (``results/focus/tokenizers/de``): :class:`Paths`.
"""

from __future__ import annotations

import functools
import inspect
import re
import string

RESULTS, RESOURCES = "results", "resources"


class PathError(ValueError):
    """A path that would leave results/ or resources/, or names a folder by ``.``, ``..`` or an empty name: a
    name of the config (or a language) that cannot be a folder, refused while the jobs are planned."""


_ROOTS = (f"{RESULTS}/", f"{RESOURCES}/")
_NOT_A_NAME = re.compile(r"(?:^|/)\.{0,2}(?:/|$)")  # an empty folder name, '.' or '..'


def _inside(fn):
    """``fn``, whose path is refused (:class:`PathError`) unless it lies under results/ or resources/ and
    every folder in it is a name (none is ``.``, ``..`` or empty)."""

    @functools.wraps(fn)
    def checked(*args, **kwargs):
        path = fn(*args, **kwargs)
        if not path.startswith(_ROOTS) or _NOT_A_NAME.search(path):
            shown = ", ".join(map(repr, (*args, *kwargs.values())))
            raise PathError(f"{fn.__name__}({shown}) gives {path!r}, which is refused: a path of the "
                            f"pipeline lies under {RESULTS}/ or {RESOURCES}/ and each of its folders "
                            "is a name, never '.', '..' or empty (a config name or language with a '/', "
                            "or one of '.' or '..')")
        return path

    return checked


def _from_template(name: str, root: str, template: str):
    """The path function ``name``: ``<root>/<template>``, its fields (in order) its parameters."""
    fields = dict.fromkeys(field for _, field, _, _ in string.Formatter().parse(template) if field)
    signature = inspect.Signature([inspect.Parameter(f, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                                   for f in fields])

    def path(*args, **kwargs):
        if kwargs or len(args) != len(fields):  # positional: the rules' calls, bound without inspect's cost
            try:
                args = signature.bind(*args, **kwargs).arguments.values()
            except TypeError as e:
                raise TypeError(f"{name}() {e}") from None
        return f"{root}/" + template.format_map(dict(zip(fields, args, strict=True)))

    path.__name__ = path.__qualname__ = name
    path.__signature__ = signature
    path.__doc__ = f"``{root}/{template}``"
    return path


def _extending(name: str, stem, suffix: str):
    """The path function ``name``: the path of ``stem`` (checked there, and named in its refusal) and
    ``suffix``."""

    def path(*args, **kwargs):
        return stem(*args, **kwargs) + suffix

    path.__name__ = path.__qualname__ = name
    path.__signature__ = inspect.signature(stem)
    path.__doc__ = f"{stem.__name__}(...) + ``{suffix}``"
    return path


#: Each path function's name and its path under results/ (its parameters: the fields, in order).
_UNDER_RESULTS = {
    # corpora, tokenizers, shards
    "corpus": "corpus/{corpus}/{split}.parquet",  # a parquet directory dataset (pandas.read_parquet reads it)
    "corpus_stats": "corpus/{corpus}/stats.json",
    "tokenizer": "tokenizers/{target}",  # a target's tokenizer folder (AutoTokenizer loads it)
    "shards": "shards/{target}/{split}",  # the target's corpus tokenized with it (data.shards)
    # the tokenizer of a source model pretrained by the pipeline (trained before the model exists)
    "source_tokenizer": "source/{source}/tokenizer",
    "source_model": "source/{source}/model",
    "pretrain_curve": "source/{source}/pretrain_curve.{ext}",
    "source_shards": "source_shards/{source}/{corpus}/{split}",  # a corpus split, source tokenizer
    "extended_tokenizer": "extended/{source}/{target}/{method}/tokenizer",
    "extended_shards": "extended/{source}/{target}/{method}/shards/{split}",
    # auxiliary vectors (fasttext_vectors, fasttext_tokens: below), dictionaries, overlap
    # token-level fastText of the source tokenizer on lang's corpus
    "source_fasttext_vectors": "source_fasttext/{source}/{lang}/vectors.safetensors",
    "source_fasttext_tokens": "source_fasttext/{source}/{lang}/tokens.parquet",
    "word_vectors": "word_vectors/{lang}/vectors.safetensors",  # word-level vectors ([n, dim])
    # the word-level fastText model of a language (.bin; WECHSEL with fastText subword information)
    "word_fasttext_model": "word_vectors/{lang}/fasttext.bin",
    "word_list": "word_vectors/{lang}/words.parquet",  # the words of word_vectors, most frequent first
    "dictionary": "dictionaries/{source_lang}/{lang}.parquet",
    "overlap": "overlap/{source}/{target}.parquet",
    # Semi-NMF factors of a source matrix shared by the MF methods with the same settings (key: mf-<hash>)
    "factors": "factorized/{source}/{key}.safetensors",
    # initialization and its evaluation
    "init": "init/{source}/{target}/{method}.safetensors",
    "provenance": "init/{source}/{target}/{method}.provenance.parquet",
    "heldout_blocks": "eval_init/heldout/{target}.safetensors",
    "extended_heldout_blocks": "eval_init/heldout/{source}/{target}/{method}.safetensors",
    "init_eval": "eval_init/{source}/{target}.parquet",
    "init_probe": "eval_init/{source}/probe/{task}/{method}.parquet",
    "lapt_run": "lapt/{source}/{target}/{run}",
    # benchmarks (benchmark: below) and exports
    # the lm-eval tasks of a target, their datasets fetched (rule download_benchmark_data): a record
    "benchmark_data": "benchmarks/{target}/data.json",
    # each benchmark score and the share of the source's score it keeps (csv, md)
    "benchmark_table": "tables/benchmarks.{ext}",
    "export_init": "export/{source}/{target}/init/{method}",  # a transferred model right after initialization
    "export_lapt": "export/{source}/{target}/lapt/{run}",
    # the receipt of an export uploaded to the hub (rule push_export): repository, url, commit, files
    "export_pushed": "export/{source}/{target}/{stage}/{name}.pushed.json",
    # downstream
    "task_data": "tasks/{task}",
    # the stem of a fine-tuning job's files; seeds: the job's seeds joined by '+' (1+2+3, or 1)
    "finetune_run": "finetune/{source}/{task}/{model}/seed{seeds}",
    "source_task": "source_task/{source}/{srctask}/{setup}/seed{seed}",  # a zero-shot source-side training
    # the source-side trainings a zero-shot task evaluates with the models of one setup: a JSON list of
    # {source_task, seed, trained, scores} (rule list_source_trainings; an input per cell of the task)
    "zeroshot_trainings": "zeroshot/{source}/{task}/{setup}.trainings.json",
    "zeroshot_scores": "zeroshot/{source}/{task}/{model}.parquet",
    # tables and figures
    "init_table": "tables/init_mlm_loss.{ext}",  # FOCUS Table 4 (csv, md, html)
    "finetune_table": "tables/finetune.{ext}",
    "finetune_scores_table": "tables/finetune_scores.parquet",
    "paper_table": "tables/paper/{table}.{ext}",
    # kind: lapt_curves and embedding_correlation (name: the target language), lapt_finetune and
    # token_accuracy (name: the config's figure); ext: png, svg, csv (histograms.png for the correlation
    # histograms)
    "figure": "figures/{kind}/{source}/{name}.{ext}",
}
#: ... and under resources/: downloads.
_UNDER_RESOURCES = {
    "downloaded_model": "models/{source}",
    # a hub corpus's data files, fetched before its corpus job (fetch.json: commit, files, sizes)
    "downloaded_corpus": "corpora/{corpus}",
    # an existing tokenizer named by hub id (tokenizer.pretrained), fetched before the job that copies it in
    # (repo: the hub id with '--' for '/')
    "downloaded_tokenizer": "tokenizers/{repo}",
    "reference_model": "reference_models/{model}",
    "cc_word_vectors": "word_vectors/cc.{lang}.300.bin",
    "muse_dictionary": "dictionaries/{source_lang}-{lang}.txt",
    # the Hugging Face datasets cache lm-eval's tasks load from: filled on the login node, read offline
    "benchmark_cache": "benchmark_datasets",
}
#: The files of a run's folder or stem: by the path function it extends, each one's name and suffix.
_EXTENDING = {
    "lapt_run": {"lapt_model": "/model", "lapt_curve": "/curve.parquet", "lapt_snapshots": "/snapshots",
                 "lapt_token_accuracy": "/token_accuracy.parquet", "lapt_checkpoints": "/checkpoints"},
    "finetune_run": {"finetune_scores": ".parquet",  # a row per seed
                     "finetune_history": ".history.parquet", "finetune_checkpoints": ".checkpoints"},
    "source_task": {"source_task_model": ".model", "source_task_scores": ".parquet",
                    "source_task_history": ".history.parquet", "source_task_checkpoints": ".checkpoints"},
}


@_inside
def fasttext_vectors(lang: str, preset: str | None = None) -> str:
    """Token-level fastText of the target tokenizer: ``vectors``, ``has_vector``, ``counts``; with ``preset``,
    trained with that variant of the ``fasttext`` recipe (``data.token_fasttext.FASTTEXT_PRESETS``)."""
    return f"{RESULTS}/fasttext/{lang}/{preset + '/' if preset else ''}vectors.safetensors"


@_inside
def fasttext_tokens(lang: str, preset: str | None = None) -> str:
    return f"{RESULTS}/fasttext/{lang}/{preset + '/' if preset else ''}tokens.parquet"


@_inside
def benchmark(source: str, target: str, stage: str, name: str) -> str:
    """lm-eval scores of one model on a target's tasks: ``stage`` source (``name`` the source), init (a
    method) or lapt (a run)."""
    return f"{RESULTS}/benchmarks/{target}/{source}/{stage}/{name}.parquet"


for _root, _table in ((RESULTS, _UNDER_RESULTS), (RESOURCES, _UNDER_RESOURCES)):
    for _name, _template in _table.items():
        globals()[_name] = _inside(_from_template(_name, _root, _template))
for _stem, _table in _EXTENDING.items():
    for _name, _suffix in _table.items():
        globals()[_name] = _extending(_name, globals()[_stem], _suffix)
# the module's functions are its paths (tests/test_paths.py calls each)
del _from_template, _extending, _inside, _root, _table, _name, _template, _stem, _suffix


# --- a study's own folder -----------------------------------------------------------------------------------
#: What is shared by name between the studies of one working directory (the corpora, source models, task data,
#: word vectors, dictionaries and downloads; ``configs/papers.yaml`` checks that one name means one spec):
#: every other artifact of a config with ``study: <name>`` lives under ``results/<name>/`` (its tokenizers,
#: inits, runs, tables), so two papers' targets of one language never meet.
SHARED = frozenset({
    "corpus", "corpus_stats", "source_tokenizer", "source_model", "pretrain_curve", "source_shards",
    "word_vectors", "word_fasttext_model", "word_list", "dictionary", "task_data", "downloaded_model",
    "downloaded_corpus", "downloaded_tokenizer", "reference_model",
    "cc_word_vectors", "muse_dictionary"})
#: Folders of results/ that a study's name cannot take.
RESERVED = frozenset({t.split("/")[0] for t in _UNDER_RESULTS.values()} | {"fasttext"})  # fasttext_vectors


class Paths:
    """This module's path functions for one study: those of :data:`SHARED` as they are, every other one under
    ``results/<study>/`` (``Paths(None)``: all as they are, the layout of a config without ``study``). The
    rules and the plan take their paths from the one of their config (``plan.paths``)."""

    def __init__(self, study: str | None = None):
        self.study = study
        self._root = f"{RESULTS}/{study}/" if study else None

    def __getattr__(self, name: str):
        fn = globals()[name]
        if self._root is None or name in SHARED or not callable(fn) or isinstance(fn, type):
            return fn
        root, head = self._root, f"{RESULTS}/"

        @functools.wraps(fn)
        def in_study(*args, **kwargs):
            path = fn(*args, **kwargs)
            return root + path[len(head):] if path.startswith(head) else path

        setattr(self, name, in_study)
        return in_study

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
import re

RESULTS, RESOURCES = "results", "resources"
SPLITS = ("train", "heldout")


# --- corpora, tokenizers, shards ----------------------------------------------------------------------------
def corpus(corpus: str, split: str) -> str:
    """A corpus split (``corpus``: a corpora key): a parquet directory dataset (read by
    ``pandas.read_parquet``)."""
    return f"{RESULTS}/corpus/{corpus}/{split}.parquet"


def corpus_stats(corpus: str) -> str:
    return f"{RESULTS}/corpus/{corpus}/stats.json"


def tokenizer(target: str) -> str:
    """A target's tokenizer folder (``AutoTokenizer`` loads it)."""
    return f"{RESULTS}/tokenizers/{target}"


def shards(target: str, split: str) -> str:
    """The target's corpus split tokenized with ``tokenizer(target)`` (:mod:`vocab_transfer.data.shards`)."""
    return f"{RESULTS}/shards/{target}/{split}"


def source_tokenizer(source: str) -> str:
    """The tokenizer of a source model pretrained by the pipeline (trained before the model exists)."""
    return f"{RESULTS}/source/{source}/tokenizer"


def source_model(source: str) -> str:
    return f"{RESULTS}/source/{source}/model"


def pretrain_curve(source: str, ext: str) -> str:
    return f"{RESULTS}/source/{source}/pretrain_curve.{ext}"


def source_shards(source: str, corpus: str, split: str) -> str:
    """``corpus(corpus, split)`` tokenized with the source model's tokenizer."""
    return f"{RESULTS}/source_shards/{source}/{corpus}/{split}"


def extended_tokenizer(source: str, target: str, method: str) -> str:
    return f"{RESULTS}/extended/{source}/{target}/{method}/tokenizer"


def extended_shards(source: str, target: str, method: str, split: str) -> str:
    return f"{RESULTS}/extended/{source}/{target}/{method}/shards/{split}"


# --- auxiliary vectors, dictionaries, overlap ---------------------------------------------------------------
def fasttext_vectors(lang: str, preset: str | None = None) -> str:
    """Token-level fastText of the target tokenizer: ``vectors``, ``has_vector``, ``counts``; with ``preset``,
    trained with that variant of the ``fasttext`` recipe (``data.token_fasttext.FASTTEXT_PRESETS``)."""
    return f"{RESULTS}/fasttext/{lang}/{preset + '/' if preset else ''}vectors.safetensors"


def fasttext_tokens(lang: str, preset: str | None = None) -> str:
    return f"{RESULTS}/fasttext/{lang}/{preset + '/' if preset else ''}tokens.parquet"


def source_fasttext_vectors(source: str, lang: str) -> str:
    """Token-level fastText of the source tokenizer on ``lang``'s corpus."""
    return f"{RESULTS}/source_fasttext/{source}/{lang}/vectors.safetensors"


def source_fasttext_tokens(source: str, lang: str) -> str:
    return f"{RESULTS}/source_fasttext/{source}/{lang}/tokens.parquet"


def word_vectors(lang: str) -> str:
    """Word-level vectors (``vectors`` [n, dim])."""
    return f"{RESULTS}/word_vectors/{lang}/vectors.safetensors"


def word_fasttext_model(lang: str) -> str:
    """The word-level fastText model of a language (``.bin``; WECHSEL with fastText subword information)."""
    return f"{RESULTS}/word_vectors/{lang}/fasttext.bin"


def word_list(lang: str) -> str:
    """The words of :func:`word_vectors` with their counts, most frequent first."""
    return f"{RESULTS}/word_vectors/{lang}/words.parquet"


def dictionary(source_lang: str, lang: str) -> str:
    return f"{RESULTS}/dictionaries/{source_lang}/{lang}.parquet"


def overlap(source: str, target: str) -> str:
    return f"{RESULTS}/overlap/{source}/{target}.parquet"


def factors(source: str, key: str) -> str:
    """Semi-NMF factors of a source matrix shared by the MF methods with the same settings (``key``:
    mf-<hash>)."""
    return f"{RESULTS}/factorized/{source}/{key}.safetensors"


# --- initialization and its evaluation ----------------------------------------------------------------------
def init(source: str, target: str, method: str) -> str:
    return f"{RESULTS}/init/{source}/{target}/{method}.safetensors"


def provenance(source: str, target: str, method: str) -> str:
    return f"{RESULTS}/init/{source}/{target}/{method}.provenance.parquet"


def heldout_blocks(target: str) -> str:
    return f"{RESULTS}/eval_init/heldout/{target}.safetensors"


def extended_heldout_blocks(source: str, target: str, method: str) -> str:
    return f"{RESULTS}/eval_init/heldout/{source}/{target}/{method}.safetensors"


def init_eval(source: str, target: str) -> str:
    return f"{RESULTS}/eval_init/{source}/{target}.parquet"


def init_probe(source: str, task: str, method: str) -> str:
    return f"{RESULTS}/eval_init/{source}/probe/{task}/{method}.parquet"


# --- LAPT ---------------------------------------------------------------------------------------------------
def lapt_run(source: str, target: str, run: str) -> str:
    return f"{RESULTS}/lapt/{source}/{target}/{run}"


def lapt_model(source: str, target: str, run: str) -> str:
    return f"{lapt_run(source, target, run)}/model"


def lapt_curve(source: str, target: str, run: str) -> str:
    return f"{lapt_run(source, target, run)}/curve.parquet"


def lapt_snapshots(source: str, target: str, run: str) -> str:
    return f"{lapt_run(source, target, run)}/snapshots"


def lapt_token_accuracy(source: str, target: str, run: str) -> str:
    return f"{lapt_run(source, target, run)}/token_accuracy.parquet"


def lapt_checkpoints(source: str, target: str, run: str) -> str:
    return f"{lapt_run(source, target, run)}/checkpoints"


# --- exports ------------------------------------------------------------------------------------------------
def benchmark_data(target: str) -> str:
    """The lm-eval tasks of a target, their datasets fetched (rule download_benchmark_data): a record."""
    return f"{RESULTS}/benchmarks/{target}/data.json"


def benchmark_cache() -> str:
    """The Hugging Face datasets cache lm-eval's tasks load from: filled on the login node, read offline."""
    return f"{RESOURCES}/benchmark_datasets"


def benchmark(source: str, target: str, stage: str, name: str) -> str:
    """lm-eval scores of one model on a target's tasks: ``stage`` source (``name`` the source), init (a
    method) or lapt (a run)."""
    return f"{RESULTS}/benchmarks/{target}/{source}/{stage}/{name}.parquet"


def benchmark_table(ext: str) -> str:
    """Each benchmark score and the share of the source's score it keeps (``csv``, ``md``)."""
    return f"{RESULTS}/tables/benchmarks.{ext}"


def export_init(source: str, target: str, method: str) -> str:
    """A transferred model right after initialization."""
    return f"{RESULTS}/export/{source}/{target}/init/{method}"


def export_lapt(source: str, target: str, run: str) -> str:
    return f"{RESULTS}/export/{source}/{target}/lapt/{run}"


def export_pushed(source: str, target: str, stage: str, name: str) -> str:
    """The receipt of an export uploaded to the hub (rule push_export): repository, url, commit, files."""
    return f"{RESULTS}/export/{source}/{target}/{stage}/{name}.pushed.json"


# --- downstream ---------------------------------------------------------------------------------------------
def task_data(task: str) -> str:
    return f"{RESULTS}/tasks/{task}"


def finetune_run(source: str, task: str, model: str, seeds: str | int) -> str:
    """The stem of a fine-tuning job's files: ``.parquet`` (its scores, a row per seed), ``.history.parquet``,
    ``.checkpoints/`` follow it; ``seeds``: the job's seeds joined by ``+`` (``1+2+3``, or ``1``)."""
    return f"{RESULTS}/finetune/{source}/{task}/{model}/seed{seeds}"


def finetune_scores(source: str, task: str, model: str, seeds: str | int) -> str:
    return f"{finetune_run(source, task, model, seeds)}.parquet"


def finetune_history(source: str, task: str, model: str, seeds: str | int) -> str:
    return f"{finetune_run(source, task, model, seeds)}.history.parquet"


def finetune_checkpoints(source: str, task: str, model: str, seeds: str | int) -> str:
    return f"{finetune_run(source, task, model, seeds)}.checkpoints"


def source_task(source: str, srctask: str, setup: str, seed: str | int) -> str:
    """The stem of a zero-shot source-side training's files."""
    return f"{RESULTS}/source_task/{source}/{srctask}/{setup}/seed{seed}"


def source_task_model(source: str, srctask: str, setup: str, seed: str | int) -> str:
    return f"{source_task(source, srctask, setup, seed)}.model"


def source_task_scores(source: str, srctask: str, setup: str, seed: str | int) -> str:
    return f"{source_task(source, srctask, setup, seed)}.parquet"


def source_task_history(source: str, srctask: str, setup: str, seed: str | int) -> str:
    return f"{source_task(source, srctask, setup, seed)}.history.parquet"


def source_task_checkpoints(source: str, srctask: str, setup: str, seed: str | int) -> str:
    return f"{source_task(source, srctask, setup, seed)}.checkpoints"


def zeroshot_trainings(source: str, task: str, setup: str) -> str:
    """The source-side trainings a zero-shot task evaluates with the models of one setup: a JSON list of
    ``{source_task, seed, trained, scores}`` (rule list_source_trainings; an input per cell of the task)."""
    return f"{RESULTS}/zeroshot/{source}/{task}/{setup}.trainings.json"


def zeroshot_scores(source: str, task: str, model: str) -> str:
    return f"{RESULTS}/zeroshot/{source}/{task}/{model}.parquet"


# --- tables and figures -------------------------------------------------------------------------------------
def init_table(ext: str) -> str:
    """FOCUS Table 4 (``csv``, ``md``, ``html``)."""
    return f"{RESULTS}/tables/init_mlm_loss.{ext}"


def finetune_table(ext: str) -> str:
    return f"{RESULTS}/tables/finetune.{ext}"


def finetune_scores_table() -> str:
    return f"{RESULTS}/tables/finetune_scores.parquet"


def paper_table(table: str, ext: str) -> str:
    return f"{RESULTS}/tables/paper/{table}.{ext}"


def figure(kind: str, source: str, name: str, ext: str) -> str:
    """``kind``: lapt_curves and embedding_correlation (``name``: the target language), lapt_finetune and
    token_accuracy (``name``: the config's figure); ``ext``: png, svg, csv (``histograms.png`` for the
    correlation histograms)."""
    return f"{RESULTS}/figures/{kind}/{source}/{name}.{ext}"


# --- downloads ----------------------------------------------------------------------------------------------
def downloaded_model(source: str) -> str:
    return f"{RESOURCES}/models/{source}"


def downloaded_corpus(corpus: str) -> str:
    """A hub corpus's data files, fetched before its corpus job (``fetch.json``: commit, files, sizes)."""
    return f"{RESOURCES}/corpora/{corpus}"


def downloaded_tokenizer(repo: str) -> str:
    """An existing tokenizer named by hub id (``tokenizer.pretrained``), fetched before the job that copies it
    in (``repo``: the hub id with ``--`` for ``/``)."""
    return f"{RESOURCES}/tokenizers/{repo}"


def reference_model(model: str) -> str:
    return f"{RESOURCES}/reference_models/{model}"


def cc_word_vectors(lang: str) -> str:
    return f"{RESOURCES}/word_vectors/cc.{lang}.300.bin"


def muse_dictionary(source_lang: str, lang: str) -> str:
    return f"{RESOURCES}/dictionaries/{source_lang}-{lang}.txt"


# --- every path stays inside results/ and resources/ --------------------------------------------------------
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


for _name, _fn in list(globals().items()):  # every path function of this module
    if callable(_fn) and getattr(_fn, "__module__", None) == __name__ and not _name.startswith("_") \
            and not isinstance(_fn, type):
        globals()[_name] = _inside(_fn)
del _inside, _name, _fn


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
RESERVED = frozenset({"corpus", "source", "source_shards", "word_vectors", "dictionaries", "tasks",
                      "tokenizers", "shards", "fasttext", "source_fasttext", "overlap", "factorized",
                      "extended", "init", "eval_init", "lapt", "finetune", "source_task", "zeroshot",
                      "tables", "figures", "export", "benchmarks"})


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

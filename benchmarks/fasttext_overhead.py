"""Token fastText inside the pipeline vs fastText alone: what rule train_fasttext adds, and what threads buy.

The rule turns the token shard into fastText's text input (``pretokenize``), trains fastText, reads the
vectors back and writes the artifacts, in a job process of its own (Python, torch, the tokenizer). This
benchmark runs the real rule through Snakemake on a run folder of ``benchmarks/corpus_scale.py`` (its
synthetic German corpus, tokenizer and shard), once per thread count, then trains fastText alone in a fresh
process on the same input file with the same settings (``fasttext.train_unsupervised``, the library the rule
calls; the file is written beforehand and not timed). The rule's log gives its own phases
(``pretokenized ... fastText trained in ... words/s``).

    python benchmarks/corpus_scale.py --sizes 100M        # once: the run folder (corpus, tokenizer, shards)
    python benchmarks/fasttext_overhead.py --run benchmarks/out/corpus_scale/100M --threads 1 2

Columns: the job's wall seconds (Snakemake's ``benchmark:``, startup included); its phases; fastText alone;
words/s as fastText counts them (tokens plus one end-of-line word per document, every epoch); the overhead,
(job - alone) / alone. Writes ``benchmarks/out/fasttext_overhead.{csv,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "out"
PHASES = re.compile(
    r"pretokenized (\d+) tokens in ([\d.]+) s; fastText trained in ([\d.]+) s \(([\d.]+) words/s")

ALONE = r"""
import json, sys, time
from fasttext import FastText
kw, path, seed = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])
args = dict(FastText.unsupervised_default, input=path, seed=seed, verbose=0, **kw)
a = FastText._build_args(args, set(kw) | {"input", "seed", "verbose"})
ft = FastText._FastText(args=a)
t = time.perf_counter()
FastText.fasttext.train(ft.f, a)
print(json.dumps({"seconds": time.perf_counter() - t}))
"""


def fasttext_args(spec: dict, threads: int) -> dict:
    """The keyword arguments the rule passes to fastText (``token_fasttext.train_token_fasttext``)."""
    return {"model": spec.get("model", "skipgram"), "dim": spec["dim"], "minCount": spec["min_count"],
            "epoch": spec["epochs"], "minn": spec.get("minn", 3), "maxn": spec.get("maxn", 6),
            "ws": spec.get("window", 5), "neg": spec.get("neg", 5), "thread": threads}


def run_rule(run: Path, config: dict, threads: int) -> dict:
    """Rerun rule train_fasttext in ``run`` with ``threads``; its seconds and logged phases."""
    cfg = {**config, "fasttext": {**config["fasttext"], "threads": threads}}
    path = run / f"config-fasttext-{threads}.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    # every job in a process of its own (no warm starts: a forked job's peak memory would include the
    # starter's imports, and its time would leave its own out)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "VOCAB_TRANSFER_WARM": "0"}
    cmd = ["snakemake", "--snakefile", str(ROOT / "Snakefile"), "--directory", str(run), "--configfile",
           str(path), "--cores", str(max(threads, 1)), "--forcerun", "train_fasttext", "--until",
           "train_fasttext", "results/fasttext/de/vectors.safetensors"]
    subprocess.run(cmd, check=True, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    job = pd.read_csv(run / "benchmarks/out/train_fasttext/de.tsv", sep="\t").iloc[-1]
    found = PHASES.findall((run / "logs/train_fasttext/de.log").read_text(errors="replace"))
    if not found:
        raise RuntimeError(f"no phase line in {run}/logs/train_fasttext/de.log")
    tokens, pre, ft, wps = found[-1]
    return {"job_s": float(job["s"]), "tokens": int(tokens), "pretokenize_s": float(pre),
            "fasttext_in_job_s": float(ft), "words_per_s_in_job": float(wps)}


def run_alone(run: Path, config: dict, threads: int, seed: int) -> dict:
    """fastText alone, in a fresh process, on the same input the rule writes."""
    from vocab_transfer.data.shards import open_shard
    from vocab_transfer.data.token_fasttext import _sampled, pretokenize
    from vocab_transfer.data.tokenizer import load_tokenizer

    spec = config["fasttext"]
    with tempfile.TemporaryDirectory() as tmp:
        text = Path(tmp) / "pretokenized.txt"
        info: dict = {}
        tokens = pretokenize(
            _sampled(open_shard(run / "results/shards/de/train"), spec.get("max_tokens"), seed),
            load_tokenizer(str(run / "results/tokenizers/de")), text, info=info)
        out = subprocess.run([sys.executable, "-c", ALONE, json.dumps(fasttext_args(spec, threads)),
                              str(text), str(seed)], check=True, capture_output=True, text=True)
    seconds = json.loads(out.stdout.strip().splitlines()[-1])["seconds"]
    return {"fasttext_alone_s": seconds,
            "words_per_s_alone": spec["epochs"] * (tokens + info["documents"]) / seconds}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run", type=Path, default=OUT / "corpus_scale" / "100M",
                   help="a run folder of benchmarks/corpus_scale.py")
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = p.parse_args()
    config = yaml.safe_load((args.run / "config.yaml").read_text())
    rows = []
    for threads in args.threads:
        row = {"threads": threads, **run_rule(args.run, config, threads),
               **run_alone(args.run, config, threads, config["seed"])}
        row["overhead_pct"] = 100 * (row["job_s"] - row["fasttext_alone_s"]) / row["fasttext_alone_s"]
        rows.append(row)
        print(row, file=sys.stderr)
    df = pd.DataFrame(rows).round(2)
    OUT.mkdir(parents=True, exist_ok=True)
    df.to_csv(OUT / "fasttext_overhead.csv", index=False)
    spec = config["fasttext"]
    head = (f"Measured {time.strftime('%Y-%m-%d %H:%M')} on {platform.processor() or platform.machine()}, "
            f"{os.cpu_count()} cores; run {args.run}; fastText dim {spec['dim']}, {spec['epochs']} epochs, "
            f"{spec.get('model', 'skipgram')}; `python benchmarks/fasttext_overhead.py --run {args.run} "
            f"--threads {' '.join(map(str, args.threads))}`.\n\n")
    (OUT / "fasttext_overhead.md").write_text(head + df.to_markdown(index=False) + "\n")
    print(head + df.to_markdown(index=False))


if __name__ == "__main__":
    main()

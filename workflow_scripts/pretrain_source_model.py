"""Pretrain the small XLM-R-architecture source MLM on its languages' token shards (rule
pretrain_source_model)."""

from vocab_transfer.warm import handoff

handoff()  # a local run's job continues forked from the run's starter (vocab_transfer/warm.py)

import json
import math
import shutil
from pathlib import Path

import torch

from vocab_transfer.data.shards import open_blocks
from vocab_transfer.data.tokenizer import load_tokenizer
from vocab_transfer.io import atomic_path, write_parquet
from vocab_transfer.report.plots import plot_curve
from vocab_transfer.source_model import build_xlmr_mlm
from vocab_transfer.training.pretrain import pretrain_mlm
from vocab_transfer.workflow.job import setup_job
from vocab_transfer.workflow.model import Pretrain


def main(tokenizer_dir, corpora, heldout_corpora, spec: Pretrain, seed, model_dir, curve_path, plot_path,
         log_path):
    train_cfg = spec.training
    log = setup_job(log_path, train_cfg.threads)
    tok = load_tokenizer(tokenizer_dir)
    seq_len = train_cfg.seq_len
    train = open_blocks(corpora, tok, seq_len, tokenizer_dir=tokenizer_dir)  # read block by block
    heldout = open_blocks(heldout_corpora, tok, seq_len, tokenizer_dir=tokenizer_dir)
    g = torch.Generator().manual_seed(seed)
    heldout = heldout[torch.randperm(len(heldout), generator=g)[: train_cfg.eval_sequences]]
    log.info("packed %d training and %d held-out sequences of %d tokens", len(train), len(heldout), seq_len)
    model = build_xlmr_mlm(tok, max_position_embeddings=seq_len, seed=seed, **spec.model.model_dump())
    log.info("model: %.2fM parameters", sum(p.numel() for p in model.parameters()) / 1e6)
    curve = pretrain_mlm(model, tok, train, heldout, seed=seed, steps=train_cfg.steps,
                         batch_size=train_cfg.batch_size, lr=train_cfg.lr,
                         warmup_ratio=train_cfg.warmup_ratio, weight_decay=train_cfg.weight_decay,
                         eval_every=train_cfg.eval_every)
    log.info("held-out MLM loss %.3f -> %.3f (ln |V| = %.3f)", curve.heldout_loss.iloc[0],
             curve.heldout_loss.iloc[-1], math.log(len(tok)))
    with atomic_path(model_dir, directory=True) as tmp:
        model.save_pretrained(str(tmp))
        # the tokenizer's own files: shards of either folder match both
        for f in Path(tokenizer_dir).iterdir():
            shutil.copy2(f, tmp / f.name)
    write_parquet(curve, curve_path)
    plot_curve(curve, plot_path, title=f"source MLM pretraining ({len(corpora)} languages)",
               hline=math.log(len(tok)))


main(snakemake.input.tokenizer, list(snakemake.input.corpora), list(snakemake.input.heldout),
     Pretrain.parse(json.loads(snakemake.params.spec), f"sources.{snakemake.wildcards.source}.pretrain"),
     snakemake.params.seed, snakemake.output.model, snakemake.output.curve, snakemake.output.plot,
     snakemake.log[0])

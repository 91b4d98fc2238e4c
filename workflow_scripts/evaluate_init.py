"""Held-out loss of the transferred model right after initialization, every method of one target
(rule evaluate_init): masked-LM loss for encoder sources, next-token (causal-LM) loss for decoder sources."""

from vocab_transfer.warm import handoff

handoff()  # a local run's job continues forked from the run's starter (vocab_transfer/warm.py)

import json

import pandas as pd

from vocab_transfer.data.tokenizer import load_tokenizer
from vocab_transfer.eval.mlm import init_eval_row
from vocab_transfer.init import swap_embeddings
from vocab_transfer.io import read_tensors, write_parquet
from vocab_transfer.source_model import is_causal_lm, load_source_model
from vocab_transfer.training.runtime import pick_device
from vocab_transfer.workflow.job import setup_job
from vocab_transfer.workflow.model import Eval


def tokenizer(cache, path):
    if path not in cache:
        cache[path] = load_tokenizer(path)
    return cache[path]


def main(inputs, methods, spec: Eval, wildcards, out_path, log_path, threads):
    log = setup_job(log_path, threads)
    source = load_source_model(inputs["model"])
    # a job given a GPU (eval.gpus: 1) evaluates there; each method's rows are copied in
    source.to(pick_device())
    log.info("evaluating on %s", source.device)
    objective = "clm" if is_causal_lm(source) else "mlm"
    tokenizers = {}  # most methods share the target tokenizer: load each folder once
    rows = []
    for m in methods:
        # the one loaded model, its per-token tensors overwritten for each method (every row of each is
        # replaced): no copy of the model per method
        model = swap_embeddings(source, inputs[f"embeddings__{m}"])
        result = init_eval_row(model, read_tensors(inputs[f"blocks__{m}"])["input_ids"],
                               tokenizer(tokenizers, inputs[f"tokenizer__{m}"]), objective=objective,
                               seed=spec.seed, mask_prob=spec.mask_prob, batch_size=spec.batch_size)
        log.info("%s %s %s: %s", wildcards["source"], wildcards["target"], m, result)
        rows.append({**wildcards, "method": m, **result})
    write_parquet(pd.DataFrame(rows), out_path)


main(dict(snakemake.input.items()), list(snakemake.params.methods),
     Eval.parse(json.loads(snakemake.params.spec), "eval"),
     {k: snakemake.wildcards[k] for k in ("source", "target")}, snakemake.output.result, snakemake.log[0],
     snakemake.threads)

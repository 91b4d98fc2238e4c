"""Masked-LM loss of the transferred model right after initialization (rule evaluate_init)."""

import json

import pandas as pd

from vocab_transfer.init import load_transferred_model
from vocab_transfer.io import read_tensors, write_parquet
from vocab_transfer.mlm import mlm_loss
from vocab_transfer.tokenizer import load_tokenizer
from vocab_transfer.workflow import setup_job


def main(model_dir, tokenizer_dir, emb_path, blocks_path, spec, wildcards, out_path, log_path, threads):
    log = setup_job(log_path, threads)
    tok = load_tokenizer(tokenizer_dir)
    model = load_transferred_model(model_dir, emb_path)
    result = mlm_loss(model, read_tensors(blocks_path)["input_ids"], tok, seed=spec["seed"],
                      mask_prob=spec["mask_prob"], batch_size=spec["batch_size"], progress=True)
    log.info("%s: %s", dict(wildcards), result)
    write_parquet(pd.DataFrame([{**wildcards, **result}]), out_path)


main(snakemake.input.model, snakemake.input.tokenizer, snakemake.input.embeddings, snakemake.input.blocks,
     json.loads(snakemake.params.spec), {k: snakemake.wildcards[k] for k in ("source", "target", "method")},
     snakemake.output.result, snakemake.log[0], snakemake.threads)

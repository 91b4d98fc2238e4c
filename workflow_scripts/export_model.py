"""A transferred model as a Hugging Face model folder with a model card (rules export_init_model,
export_lapt_model)."""

from vocab_transfer.warm import handoff

handoff()  # a local run's job continues forked from the run's starter (vocab_transfer/warm.py)

import json
from pathlib import Path

import pandas as pd

from vocab_transfer.data.tokenizer import load_tokenizer
from vocab_transfer.export import CardInfo, export_folder, export_init, model_card, source_license
from vocab_transfer.source_model import is_causal_lm, remote_code_allowed
from vocab_transfer.workflow.job import setup_job


def read_json(path):
    return json.loads(Path(path).read_text()) if Path(path).is_file() else {}


def main(inputs, card, command, out_dir, log_path):
    log = setup_job(log_path)
    from transformers import AutoConfig

    tokenizer_dir = inputs.get("tokenizer", inputs["model"])
    tok = load_tokenizer(tokenizer_dir)
    config = AutoConfig.from_pretrained(inputs["model"],
                                        trust_remote_code=remote_code_allowed(inputs["model"]))
    info = CardInfo(**card, causal=is_causal_lm(config),
                    tokenizer_type=f"{type(tok).__name__} ({type(tok.backend_tokenizer.model).__name__})"
                    if tok.is_fast else type(tok).__name__, vocab_size=len(tok),
                    tokenizer_info=read_json(Path(tokenizer_dir) / "training.json"),
                    corpus_stats=read_json(inputs["stats"]), command=command,
                    license=source_license(inputs.get("source", inputs["model"])))
    if "eval" in inputs:
        rows = pd.read_parquet(inputs["eval"])
        rows = rows[rows["method"] == card["method"]]
        info.init_loss = rows.iloc[0].to_dict() if len(rows) else None
    if "curve" in inputs:
        info.curve = pd.read_parquet(inputs["curve"],
                                     columns=["step", "samples", "seq_len", "train_loss", "heldout_loss"])
    text = model_card(info)
    if "embeddings" in inputs:
        export_init(inputs["model"], inputs["embeddings"], tokenizer_dir, out_dir, text)
    else:
        export_folder(inputs["model"], out_dir, text)
    log.info("exported %s -> %s (%d tokens)", card["method"], out_dir, len(tok))


main(dict(snakemake.input.items()), json.loads(snakemake.params.card), snakemake.params.command,
     snakemake.output.model, snakemake.log[0])

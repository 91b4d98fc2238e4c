"""Glue between artifacts and methods: load inputs, run a method, split matrix into embeddings + bias."""

from __future__ import annotations

import json
from collections.abc import Mapping

import pandas as pd
import torch
from transformers import PreTrainedModel

from .io import read_tensors
from .methods import TransferInputs, run_method
from .source_model import (
    check_tokenizer_matches,
    embedding_matrix,
    has_output_bias,
    load_source_model,
    transferred_model,
)
from .token_fasttext import TokenVectors
from .tokenizer import load_tokenizer


def initialize(paths: Mapping[str, str], method: dict, *, seed: int) -> tuple[dict[str, torch.Tensor], pd.DataFrame]:
    """Run ``method`` (``{"kind": ..., **params}``) on the artifacts in ``paths``.

    ``paths`` has ``model`` (source save_pretrained dir), ``tokenizer`` (target), ``overlap`` and,
    for methods that need them, ``vectors``. Returns the tensors to save (``embeddings`` and, if the
    source has an MLM output bias, ``output_bias``) and the per-token provenance table.
    """
    model = load_source_model(paths["model"])
    source_tok, target_tok = load_tokenizer(paths["model"]), load_tokenizer(paths["tokenizer"])
    check_tokenizer_matches(len(source_tok), model.get_input_embeddings().weight.shape[0], name=paths["model"],
                            allow_padded_embeddings=True)
    aux = None
    if "vectors" in paths:
        t = read_tensors(paths["vectors"])
        aux = TokenVectors(t["vectors"], t["has_vector"], t["counts"])
        if len(aux.vectors) != len(target_tok):
            raise ValueError(f"{paths['vectors']} has {len(aux.vectors)} rows, target tokenizer {len(target_tok)}")
    params = {k: v for k, v in method.items() if k != "kind"}
    inputs = TransferInputs(source_matrix=embedding_matrix(model), target_vocab_size=len(target_tok),
                            overlap=pd.read_parquet(paths["overlap"]), aux=aux)
    result = run_method(method["kind"], inputs, seed=seed, **params)
    d = model.get_input_embeddings().weight.shape[1]
    tensors = {"embeddings": result.matrix[:, :d].contiguous()}
    if has_output_bias(model):
        tensors["output_bias"] = result.matrix[:, d].contiguous()
    provenance = pd.DataFrame({"target_id": range(len(target_tok)),
                               "token": target_tok.convert_ids_to_tokens(list(range(len(target_tok)))),
                               "provenance": result.provenance.astype(str), "n_sources": result.n_sources})
    return tensors, provenance


def load_transferred_model(model_dir: str, embeddings_path: str) -> PreTrainedModel:
    """The source model with its vocabulary swapped for the initialized target embeddings."""
    tensors = read_tensors(embeddings_path)
    return transferred_model(load_source_model(model_dir), tensors["embeddings"], tensors.get("output_bias"))


def init_metadata(path: str) -> dict:
    """The method config and seed stored in an init artifact's safetensors metadata."""
    from safetensors import safe_open

    with safe_open(path, "pt") as f:
        meta = f.metadata() or {}
    return {"method": json.loads(meta.get("method", "{}")), "seed": int(meta.get("seed", -1))}

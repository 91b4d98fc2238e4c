"""Glue between artifacts and methods: load inputs, run a method, split matrix into embeddings + bias."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import pandas as pd
import torch

from .data.token_fasttext import TokenVectors
from .data.tokenizer import load_tokenizer
from .data.word_vectors import WordVectors
from .io import read_parquet, read_tensors
from .methods import NEED_INPUTS, Need, TransferInputs, method_config, method_needs, run_method
from .source_model import (
    check_tokenizer_matches,
    load_source_model,
    pad_rows,
    padding_multiple,
    read_embedding_rows,
    source_layout,
    transferred_model,
)

if TYPE_CHECKING:
    from transformers import PreTrainedModel

def _token_vectors(path: str, n: int) -> TokenVectors:
    t = read_tensors(path)
    aux = TokenVectors(t["vectors"], t["has_vector"], t["counts"])
    if len(aux.vectors) != n:
        raise ValueError(f"{path} has {len(aux.vectors)} rows, but its tokenizer has {n} tokens")
    return aux


def _fasttext_model(path: str):
    import fasttext

    return fasttext.load_model(path)


def _source_vectors(paths: Mapping[str, str], source_tok) -> dict[str, Any]:
    return {"source_aux": _token_vectors(paths["source_vectors"], len(source_tok))}


#: How each need's artifacts (the inputs in vocab_transfer.methods.NEED_INPUTS) become TransferInputs fields:
#: ``loader(paths, source_tokenizer, target_tokenizer) -> {field: value}``.
LOADERS: dict[Need, Callable[[Mapping[str, str], Any, Any], dict[str, Any]]] = {
    Need.TOKEN_VECTORS: lambda p, s, t: {"aux": _token_vectors(p["vectors"], len(t))},
    Need.SOURCE_TOKEN_VECTORS: lambda p, s, t: _source_vectors(p, s),
    Need.TARGET_WORDS: lambda p, s, t: {"target_words": read_word_vectors(p["target_word_vectors"],
                                                                          p["target_word_list"])},
    Need.SOURCE_WORDS: lambda p, s, t: {"source_words": read_word_vectors(p["source_word_vectors"],
                                                                          p["source_word_list"])},
    Need.WORD_MODELS: lambda p, s, t: {"source_word_model": _fasttext_model(p["source_word_model"]),
                                       "target_word_model": _fasttext_model(p["target_word_model"])},
    Need.DICTIONARY: lambda p, s, t: {"dictionary": read_parquet(p["dictionary"], kind="dictionary")},
    Need.TOKENIZERS: lambda p, s, t: {"source_tokenizer": s, "target_tokenizer": t},
    Need.LANGUAGE_TOKENIZER: lambda p, s, t: {"language_tokenizer": load_tokenizer(p["language_tokenizer"])},
    Need.EXTENDED_TOKENIZER: lambda p, s, t: {},  # the method reads it via the tokenizers; the table's rows
    Need.FACTORS: lambda p, s, t: {"source_factors": read_tensors(p["factors"])},
    Need.SOURCE_TOKEN_VECTORS_TARGET: lambda p, s, t: _source_vectors(p, s),  # the same, target's corpus
    Need.BASE_INIT: lambda p, s, t: {"base_init": read_tensors(p["base_init"]),
                                     "base_provenance": read_parquet(p["base_provenance"],
                                                                     kind="provenance")},
    Need.TRAIN_TEXT: lambda p, s, t: {"train_text": p["train_text"]},
}


def initialize(paths: Mapping[str, str], method: dict, *, seed: int, checkpoint_dir: str | None = None,
               track_dir: str | None = None) -> tuple[dict[str, torch.Tensor], pd.DataFrame]:
    """Run ``method`` (``{"kind": ..., **params}``) on the artifacts in ``paths``.

    ``paths`` has ``model`` (source save_pretrained dir), ``tokenizer`` (target), ``overlap`` and the inputs
    of each need the method declares (:func:`vocab_transfer.methods.method_needs`; names in
    :data:`vocab_transfer.methods.NEED_INPUTS`), loaded by :data:`LOADERS`. A method that trains (Token
    Distillation) keeps its state in ``checkpoint_dir`` and resumes from it, and writes its live curves in
    ``track_dir``. Returns the tensors to save (``embeddings``; ``output_embeddings`` for a source with an
    untied LM head, unless the method's ``output_rows`` is ``copy_input``; ``output_bias`` if the source has
    an MLM output bias; a method's extra tensors) and the per-token provenance table.
    """
    rows = read_embedding_rows(paths["model"])  # the embedding tensors only, not the model
    source_tok, target_tok = load_tokenizer(paths["model"]), load_tokenizer(paths["tokenizer"])
    source_rows = rows.input.shape[0]
    if target_tok.mask_token is None and not source_layout(paths["model"]).causal:
        raise ValueError(f"the target tokenizer {paths['tokenizer']} has no mask token, which the masked LM "
                         f"{paths['model']} is trained and evaluated with: train it as unigram or wordpiece "
                         "(tokenizer.kind) or like the source (tokenizer.like)")
    check_tokenizer_matches(len(source_tok), source_rows, name=paths["model"], allow_padded_embeddings=True)
    params = method_config(method)
    # an untied head's rows are transferred with the input rows (the same weights), unless the method copies
    # the new input rows into the head (`output_rows: copy_input`)
    transfer_output = method.get("output_rows", "transfer") == "transfer"
    if (not transfer_output and Need.FACTORS in method_needs(method["kind"], params)
        and rows.output is not None):
        raise ValueError(f"{method['kind']} reads Semi-NMF factors of the source's input and output rows "
                         "together; output_rows: copy_input does not fit them")
    opt = {"source_tokenizer": source_tok, "target_tokenizer": target_tok}
    for need in method_needs(method["kind"], params):
        missing = [k for k in NEED_INPUTS[need] if k not in paths]
        if missing:
            raise ValueError(f"{method['kind']} needs {need.value}: inputs {missing} are missing")
        opt.update(LOADERS[need](paths, source_tok, target_tok))
    # padded embedding matrices (allow_padded_embeddings) keep only the rows of real tokens
    source_matrix, rows = rows.matrix(output_rows=transfer_output)[: len(source_tok)], rows.layout()
    inputs = TransferInputs(source_matrix=source_matrix, target_vocab_size=len(target_tok),
                            overlap=read_parquet(paths["overlap"], kind="overlap"),
                            target_tokens=target_tok.convert_ids_to_tokens(list(range(len(target_tok)))),
                            source_tokens=source_tok.convert_ids_to_tokens(list(range(len(source_tok)))),
                            source_model_dir=paths["model"], checkpoint_dir=checkpoint_dir,
                            track_dir=track_dir, bias_columns=0 if rows.bias is None else 1, **opt)
    result = run_method(method["kind"], inputs, seed=seed, **params)
    table_tok = load_tokenizer(paths["extended_tokenizer"]) if "extended_tokenizer" in paths else target_tok
    if result.matrix.shape[0] != len(table_tok):
        raise ValueError(f"{method['kind']} returned {result.matrix.shape[0]} rows for a "
                         f"{len(table_tok)}-token tokenizer")
    # a source padded past its tokenizer (Qwen, Phi-3) pads the new rows by the same rule
    tensors = pad_rows(rows.split(result.matrix), padding_multiple(source_rows, len(source_tok)))
    clash = set(result.extra) & set(tensors)
    if clash:
        raise ValueError(f"extra tensors {sorted(clash)} clash with the embedding keys")
    tensors.update({k: v.contiguous() for k, v in result.extra.items()})
    n = len(table_tok)
    provenance = pd.DataFrame({"target_id": range(n),
                               "token": table_tok.convert_ids_to_tokens(list(range(n))),
                               "provenance": result.provenance.astype(str), "n_sources": result.n_sources})
    if result.nearest is not None:  # WECHSEL Table 6: each combined row's most similar source token
        nearest = result.nearest.astype("int64")
        provenance["nearest_source_id"] = nearest
        provenance["nearest_source_token"] = [inputs.source_tokens[i] if i >= 0 else None for i in nearest]
    return tensors, provenance


def read_word_vectors(vectors_path: str, words_path: str) -> WordVectors:
    """Word vectors saved by rule build_word_vectors: ``vectors.safetensors`` + ``words.parquet``."""
    words = read_parquet(words_path, kind="words")
    vectors = read_tensors(vectors_path)["vectors"]
    if len(words) != len(vectors):
        raise ValueError(f"{words_path} lists {len(words)} words, {vectors_path} has {len(vectors)} vectors")
    return WordVectors(words["word"].tolist(), vectors, words["count"].to_numpy())


def load_transferred_model(model_dir: str, embeddings_path: str) -> PreTrainedModel:
    """The source model with its vocabulary swapped for the initialized target embeddings."""
    return swap_embeddings(load_source_model(model_dir), embeddings_path)


def swap_embeddings(source: PreTrainedModel, embeddings_path: str) -> PreTrainedModel:
    """A loaded source model with its vocabulary swapped for an init artifact's rows (and output bias)."""
    tensors = read_tensors(embeddings_path)
    return transferred_model(source, tensors["embeddings"], tensors.get("output_bias"),
                             tensors.get("output_embeddings"))


def init_metadata(path: str) -> dict:
    """The method config and seed stored in an init artifact's safetensors metadata."""
    from safetensors import safe_open

    with safe_open(path, "pt") as f:
        meta = f.metadata() or {}
    return {"method": json.loads(meta.get("method", "{}")), "seed": int(meta.get("seed", -1))}

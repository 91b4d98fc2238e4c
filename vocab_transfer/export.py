"""Transferred models as Hugging Face model folders: weights (``save_pretrained``), the target tokenizer and a
``README.md`` model card (rules ``export_init_model`` and ``export_lapt_model``; ``snakemake export`` writes all).

An init export is the source model with the method's embeddings (and output bias) swapped in, exactly the model
the init-time loss was measured on; a LAPT export is the run's final model. Both load with ``AutoModelForMaskedLM``
(``AutoModelForCausalLM`` for decoders) and ``AutoTokenizer``. The card (:func:`model_card`) says where the model
comes from: source model, method and its parameters, target tokenizer, corpus and its size, the init-time held-out
loss, the LAPT steps and curve, and the command that rebuilds the folder.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .io import atomic_path

CARD = "README.md"

# The paper of each method kind (vocab_transfer.methods), for the card.
REFERENCES = {
    "focus": "Dobler & de Melo (2023), FOCUS: Effective Embedding Initialization for Monolingual Specialization of "
             "Multilingual Models, EMNLP",
    "wechsel": "Minixhofer, Paischer & Rekabsaz (2022), WECHSEL: Effective initialization of subword embeddings for "
               "cross-lingual transfer of monolingual language models, NAACL",
    "fvt": "Gee, Zugarini, Rigutini & Torroni (2022), Fast Vocabulary Transfer for Language Model Compression, "
           "EMNLP Industry Track",
    "el": "Pfeiffer, Vulić, Gurevych & Ruder (2021), UNKs Everywhere: Adapting Multilingual Language Models to New "
          "Scripts, EMNLP",
    "mf": "Pfeiffer, Vulić, Gurevych & Ruder (2021), UNKs Everywhere: Adapting Multilingual Language Models to New "
          "Scripts, EMNLP",
}
for _kind in ("reinit_embed", "freq_match", "dict_match", "align_match", "permute", "keep"):
    REFERENCES[_kind] = "How to Do a Vocab Swap? A Study of Embedding Replacement for Pre-trained Transformers (2022)"
for _kind in ("random", "random_normal", "extend"):
    REFERENCES[_kind] = "baselines of Dobler & de Melo (2023), FOCUS, §3.1"


@dataclass
class CardInfo:
    """What a model card says; every field is read from the pipeline's own artifacts."""

    source: str  # the source's name in the config
    source_model: str  # hub id or folder of the source model
    target: str  # language
    method: str  # the methods entry (row name)
    kind: str  # its registered kind
    params: dict = field(default_factory=dict)
    causal: bool = False
    tokenizer_type: str = ""
    vocab_size: int = 0
    tokenizer_info: dict = field(default_factory=dict)  # results/tokenizers/<lang>/training.json
    corpus_stats: dict = field(default_factory=dict)  # results/corpus/<lang>/stats.json
    init_loss: dict | None = None  # the method's row of results/eval_init/<source>/<target>.parquet
    lapt_run: str | None = None
    lapt_settings: dict = field(default_factory=dict)
    curve: pd.DataFrame | None = None  # results/lapt/.../curve.parquet
    command: str = ""  # the snakemake command that rebuilds the folder


def model_card(info: CardInfo) -> str:
    """The ``README.md`` of an exported model folder: Hub metadata (YAML front matter) and the provenance."""
    hub = not (info.source_model.startswith((".", "/")) or info.source_model.count("/") != 1)
    what = f"LAPT run `{info.lapt_run}`" if info.lapt_run else "right after initialization"
    front = ["---", "library_name: transformers", f"language: [{info.target}]",
             f"pipeline_tag: {'text-generation' if info.causal else 'fill-mask'}",
             f"tags: [vocabulary-transfer, {info.kind}" + (", lapt]" if info.lapt_run else "]")]
    if hub:
        front.append(f"base_model: {info.source_model}")
    front.append("---")
    params = ", ".join(f"`{k}: {v}`" for k, v in sorted(info.params.items())) or "defaults"
    stats = info.corpus_stats
    source_docs = stats.get("source", {})
    rows = [
        ("source model", f"`{info.source_model}` (config source `{info.source}`)"),
        ("method", f"`{info.method}`: kind `{info.kind}`, {params}"
                   + (f"; {REFERENCES[info.kind]}" if info.kind in REFERENCES else "")),
        ("target tokenizer", f"{info.tokenizer_type}, {info.vocab_size:,} tokens"
                             + (f", trained on {info.tokenizer_info['sample_docs']:,} documents (seed "
                                f"{info.tokenizer_info.get('seed')}, sha256 `{info.tokenizer_info.get('sha256', '')[:12]}`)"
                                if "sample_docs" in info.tokenizer_info else
                                f", existing tokenizer `{info.tokenizer_info['pretrained']}`"
                                if "pretrained" in info.tokenizer_info else "")),
        ("corpus", f"{info.target}: `{stats.get('spec', {}).get('source', '?')}`"
                   + (f" ({source_docs.get('origin')})" if source_docs.get("origin") else "")
                   + f", {stats.get('train_docs', 0):,} training documents ({stats.get('train_bytes', 0) / 1e6:,.1f} MB),"
                     f" {stats.get('heldout_docs', 0):,} held out"),
    ]
    if info.init_loss:
        bpb = info.init_loss.get("bits_per_byte")
        rows.append(("init-time held-out loss",
                     f"{info.init_loss['mlm_loss']:.4f} ({info.init_loss['objective']}, perplexity "
                     f"{info.init_loss['perplexity']:.1f}, {int(info.init_loss['masked_tokens']):,} scored tokens"
                     + (f"; {bpb:.4f} bits per byte" if bpb is not None and bpb == bpb else "") + ")"))
    if info.lapt_run and info.curve is not None and len(info.curve):
        last = info.curve.iloc[-1]
        rows.append(("LAPT", f"run `{info.lapt_run}`: {int(last['step']):,} steps, {int(last['samples']):,} sequences "
                             f"of {int(last['seq_len'])} tokens; final held-out loss {last['heldout_loss']:.4f}"))
    lines = [*front, "", f"# {info.source} → {info.target}: {info.method} ({what})", "",
             f"The model `{info.source_model}` with its vocabulary replaced by a {info.target} tokenizer, its new "
             f"embeddings initialized by `{info.kind}`" + (f" and then trained on {info.target} text (LAPT)."
                                                          if info.lapt_run else "."),
             "", "| | |", "|---|---|", *(f"| {k} | {v} |" for k, v in rows), ""]
    if info.lapt_run and info.curve is not None and len(info.curve):
        lines += ["## LAPT curve", "", "| step | sequences | train loss | held-out loss |", "|---:|---:|---:|---:|"]
        lines += [f"| {int(r.step):,} | {int(r.samples):,} | {r.train_loss:.4f} | {r.heldout_loss:.4f} |"
                  for r in info.curve.itertuples()]
        if info.lapt_settings:
            lines += ["", "Settings: " + ", ".join(f"`{k}: {v}`" for k, v in sorted(info.lapt_settings.items()))]
        lines.append("")
    auto = "AutoModelForCausalLM" if info.causal else "AutoModelForMaskedLM"
    lines += ["## Use", "", "```python", f"from transformers import {auto}, AutoTokenizer", "",
              f'model = {auto}.from_pretrained("<this folder>")', 'tokenizer = AutoTokenizer.from_pretrained("<this folder>")',
              "```", "", "## Reproduce", "", "From the repository root of the vocabulary-transfer workflow:", "",
              "```bash", info.command, "```", ""]
    return "\n".join(lines)


def export_init(source_dir: str, embeddings: str, tokenizer_dir: str, out_dir: str, card: str) -> None:
    """The source model with an init artifact's rows swapped in, the target tokenizer and ``card``, written
    atomically into ``out_dir``."""
    from .data.tokenizer import load_tokenizer
    from .init import swap_embeddings
    from .source_model import load_source_model

    model = swap_embeddings(load_source_model(source_dir), embeddings)
    tokenizer = load_tokenizer(tokenizer_dir)
    with atomic_path(out_dir, directory=True) as tmp:
        model.save_pretrained(str(tmp))
        tokenizer.save_pretrained(str(tmp))
        (Path(tmp) / CARD).write_text(card)


def export_folder(model_dir: str, out_dir: str, card: str) -> None:
    """A ``save_pretrained`` folder (a LAPT model with its tokenizer) with ``card``, copied atomically into
    ``out_dir``. A copy, not hard links: a link changes the source files' ctime, which Snakemake reads as an update
    of the LAPT model and reruns what depends on it."""
    with atomic_path(out_dir, directory=True) as tmp:
        for f in Path(model_dir).iterdir():
            if f.is_file() and f.name != CARD:
                shutil.copy2(f, Path(tmp) / f.name)
        (Path(tmp) / CARD).write_text(card)

"""Transferred models as Hugging Face model folders: weights (``save_pretrained``), the target tokenizer and a
``README.md`` model card (rules ``export_init_model``, ``export_lapt_model``; ``snakemake export``: all).

An init export is the source model with the method's embeddings (and output bias) swapped in, exactly the
model the init-time loss was measured on, written without loading the model (:func:`export_init`: a 7B
decoder in the memory of its embedding matrices); a LAPT export is the run's final model. Both load with
``AutoModelForMaskedLM`` (``AutoModelForCausalLM`` for decoders) and ``AutoTokenizer``. The card
(:func:`model_card`) says where the model comes from: source model, method and parameters, target tokenizer,
corpus and its size, the init-time held-out loss, the LAPT steps and curve, and the command that rebuilds it.
"""

from __future__ import annotations

import errno
import json
import math
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from .data.tokenizer import load_tokenizer, set_extra_special_tokens
from .io import atomic_path
from .source_model import ROLES, check_artifact_fits, embedding_tensor_names, safetensors_files

if TYPE_CHECKING:
    import torch

CARD = "README.md"
CONFIGS = ("config.json", "generation_config.json")  # rewritten for the target (retarget_special_ids)
#: Model types whose position ids count from ``pad_token_id`` (RoBERTa's), which therefore keeps the source's.
POSITION_PAD_TYPES = ("roberta", "xlm-roberta", "camembert")
SPECIAL_IDS = ("bos_token_id", "eos_token_id", "pad_token_id")  # set in every retargeted config
CHUNK = 64 * 2**20  # bytes copied per system call where the kernel cannot copy a range itself

# The paper of each method kind (vocab_transfer.methods), for the card.
REFERENCES = {
    "focus": "Dobler & de Melo (2023), FOCUS: Effective Embedding Initialization for Monolingual "
             "Specialization of Multilingual Models, EMNLP",
    "wechsel": "Minixhofer, Paischer & Rekabsaz (2022), WECHSEL: Effective initialization of subword "
               "embeddings for cross-lingual transfer of monolingual language models, NAACL",
    "fvt": "Gee, Zugarini, Rigutini & Torroni (2022), Fast Vocabulary Transfer for Language Model "
           "Compression, EMNLP Industry Track",
    **dict.fromkeys(("el", "mf"), "Pfeiffer, Vulić, Gurevych & Ruder (2021), UNKs Everywhere: Adapting "
                                  "Multilingual Language Models to New Scripts, EMNLP"),
    **dict.fromkeys(("reinit_embed", "freq_match", "dict_match", "align_match", "permute", "keep"),
                    "How to Do a Vocab Swap? A Study of Embedding Replacement for Pre-trained Transformers "
                    "(2022)"),
    **dict.fromkeys(("random", "random_normal", "extend"),
                    "baselines of Dobler & de Melo (2023), FOCUS, §3.1"),
}


@dataclass
class CardInfo:
    """What a model card says; every field is read from the pipeline's own artifacts."""

    source: str  # the source's name in the config
    source_model: str  # hub id or folder of the source model
    target: str  # the target's name
    method: str  # the methods entry (row name)
    kind: str  # its registered kind
    params: dict = field(default_factory=dict)
    causal: bool = False
    tokenizer_type: str = ""
    vocab_size: int = 0
    tokenizer_info: dict = field(default_factory=dict)  # results/tokenizers/<target>/training.json
    corpus_stats: dict = field(default_factory=dict)  # results/corpus/<corpus>/stats.json
    init_loss: dict | None = None  # the method's row of results/eval_init/<source>/<target>.parquet
    lapt_run: str | None = None
    lapt_settings: dict = field(default_factory=dict)
    curve: pd.DataFrame | None = None  # results/lapt/.../curve.parquet
    command: str = ""  # the snakemake command that rebuilds the folder
    language: str = ""  # the target's language where its name is not one (de for de-bpe32k)
    license: str | None = None  # the source's, from its own card (:func:`source_license`); None: not known

    @property
    def lapt_curve(self) -> pd.DataFrame | None:
        """The curve of a LAPT model, where it has rows."""
        return self.curve if self.lapt_run and self.curve is not None and len(self.curve) else None


def source_license(source_dir: str | os.PathLike) -> str | None:
    """The ``license`` of a source model folder's own card (``README.md`` front matter, which the hub download
    fetches), or None (no card, or none named: a model pretrained here)."""
    from huggingface_hub.repocard import metadata_load

    path = Path(source_dir) / CARD
    if not path.is_file():
        return None
    try:
        found = (metadata_load(path) or {}).get("license")
    except Exception:  # a card whose front matter is no YAML mapping names no license either
        return None
    return str(found) if found else None


def card_datasets(info: CardInfo) -> list[str]:
    """The hub datasets the target's text came from (``cc100`` -> ``statmt/cc100``, or the spec's own
    ``dataset``); a corpus not on the hub (Bible translations, local text) is named in the card's table."""
    from .data.sources import HUB_SOURCES

    spec = info.corpus_stats.get("spec", {})
    source = spec.get("source")
    return [spec.get("dataset") or HUB_SOURCES[source].dataset] if source in HUB_SOURCES else []


def _finite(value) -> bool:
    return value is not None and math.isfinite(float(value))


def card_results(info: CardInfo) -> list:
    """The card's ``model-index`` entries (``huggingface_hub.EvalResult``): the init-time held-out loss (and
    its perplexity and bits per byte) and, for a LAPT model, the final held-out loss of its curve, each on the
    target's held-out text."""
    from huggingface_hub import EvalResult

    datasets = card_datasets(info)
    spec = info.corpus_stats.get("spec", {})
    common = {"task_type": "text-generation" if info.causal else "fill-mask",
              "dataset_type": datasets[0] if datasets else str(spec.get("source", info.target)),
              "dataset_name": f"{info.language or info.target} held-out text "
                              f"({spec.get('source', 'corpus')})",
              "dataset_split": "held-out"}
    if spec.get("lang") or spec.get("name"):
        common["dataset_config"] = str(spec.get("lang") or spec.get("name"))
    out = []
    if info.init_loss and not info.lapt_run:
        loss = info.init_loss
        metrics = [("loss", loss.get("mlm_loss"), f"held-out {loss.get('objective', 'mlm')} loss"),
                   ("perplexity", loss.get("perplexity"), "held-out perplexity"),
                   ("bits_per_byte", loss.get("bits_per_byte"), "held-out bits per byte")]
        out += [EvalResult(metric_type=kind, metric_value=float(value), metric_name=f"init-time {name}",
                           **common) for kind, value, name in metrics if _finite(value)]
    last = info.lapt_curve.iloc[-1] if info.lapt_curve is not None else None
    if last is not None and _finite(last["heldout_loss"]):
        out.append(EvalResult(metric_type="loss", metric_value=float(last["heldout_loss"]), **common,
                              metric_name=f"held-out loss after LAPT ({int(last['step'])} steps)"))
    return out


def model_card(info: CardInfo) -> str:
    """The ``README.md`` of an exported model folder: Hub metadata (YAML front matter written by
    ``huggingface_hub``'s ``ModelCardData``; ``base_model`` only for a hub source) and the provenance."""
    from huggingface_hub import ModelCardData

    hub = not (info.source_model.startswith((".", "/")) or info.source_model.count("/") != 1)
    results = card_results(info)
    metadata = ModelCardData(
        library_name="transformers", language=[info.language or info.target], license=info.license,
        pipeline_tag="text-generation" if info.causal else "fill-mask",
        tags=["vocabulary-transfer", info.kind, *(["lapt"] if info.lapt_run else [])],
        datasets=card_datasets(info) or None, base_model=info.source_model if hub else None,
        model_name=f"{info.source}-{info.target}-{info.lapt_run or info.method}" if results else None,
        eval_results=results or None).to_yaml()
    what = f"LAPT run `{info.lapt_run}`" if info.lapt_run else "right after initialization"
    params = ", ".join(f"`{k}: {v}`" for k, v in sorted(info.params.items())) or "defaults"
    stats, tok, curve = info.corpus_stats, info.tokenizer_info, info.lapt_curve
    origin = stats.get("source", {}).get("origin")
    rows = [
        ("source model", f"`{info.source_model}` (config source `{info.source}`)"
                         + (f", license `{info.license}`" if info.license else "")),
        ("method", f"`{info.method}`: kind `{info.kind}`, {params}"
                   + (f"; {REFERENCES[info.kind]}" if info.kind in REFERENCES else "")),
        ("target tokenizer", f"{info.tokenizer_type}, {info.vocab_size:,} tokens"
                             + (f", trained on {tok['sample_docs']:,} documents (seed {tok.get('seed')}, "
                                f"sha256 `{tok.get('sha256', '')[:12]}`)" if "sample_docs" in tok else
                                f", existing tokenizer `{tok['pretrained']}`" if "pretrained" in tok
                                else "")),
        ("corpus", f"{info.target}: `{stats.get('spec', {}).get('source', '?')}`"
                   + (f" ({origin})" if origin else "")
                   + f", {stats.get('train_docs', 0):,} training documents "
                     f"({stats.get('train_bytes', 0) / 1e6:,.1f} MB), {stats.get('heldout_docs', 0):,} "
                     "held out"),
    ]
    if loss := info.init_loss:
        bpb = loss.get("bits_per_byte")
        rows.append(("init-time held-out loss",
                     f"{loss['mlm_loss']:.4f} ({loss['objective']}, perplexity {loss['perplexity']:.1f}, "
                     f"{int(loss['masked_tokens']):,} scored tokens"
                     + (f"; {bpb:.4f} bits per byte" if bpb is not None and bpb == bpb else "") + ")"))
    if curve is not None:
        last = curve.iloc[-1]
        rows.append(("LAPT", f"run `{info.lapt_run}`: {int(last['step']):,} steps, {int(last['samples']):,} "
                             f"sequences of {int(last['seq_len'])} tokens; final held-out loss "
                             f"{last['heldout_loss']:.4f}"))
    lines = ["---", metadata.rstrip("\n"), "---", "",
             f"# {info.source} → {info.target}: {info.method} ({what})", "",
             f"The model `{info.source_model}` with its vocabulary replaced by a {info.target} tokenizer, "
             f"its new embeddings initialized by `{info.kind}`"
             + (f" and then trained on {info.target} text (LAPT)." if info.lapt_run else "."),
             "", "| | |", "|---|---|", *(f"| {k} | {v} |" for k, v in rows), ""]
    if curve is not None:
        lines += ["## LAPT curve", "", "| step | sequences | train loss | held-out loss |",
                  "|---:|---:|---:|---:|",
                  *(f"| {int(r.step):,} | {int(r.samples):,} | {r.train_loss:.4f} | {r.heldout_loss:.4f} |"
                    for r in curve.itertuples())]
        if info.lapt_settings:
            settings = ", ".join(f"`{k}: {v}`" for k, v in sorted(info.lapt_settings.items()))
            lines += ["", f"Settings: {settings}"]
        lines.append("")
    auto = "AutoModelForCausalLM" if info.causal else "AutoModelForMaskedLM"
    lines += ["## Use", "", "```python", f"from transformers import {auto}, AutoTokenizer", "",
              f'model = {auto}.from_pretrained("<this folder>")',
              'tokenizer = AutoTokenizer.from_pretrained("<this folder>")',
              "```", "", "## Reproduce", "", "From the repository root of the vocabulary-transfer workflow:",
              "", "```bash", info.command, "```", ""]
    return "\n".join(lines)


def retarget_special_ids(config: dict, tokenizer, *, model_type: str | None = None) -> dict:
    """``config`` (the dict of a ``config.json`` or ``generation_config.json``) with the target tokenizer's
    special-token ids: ``bos_token_id``, ``eos_token_id`` and ``pad_token_id`` (None where the tokenizer has
    no such token; a list of eos ids, as Llama 3 has, becomes the target's one-element list), and where the
    config has them ``sep_token_id``, ``cls_token_id`` and ``decoder_start_token_id`` (the target's id of
    whichever of bos, eos and pad the source's was). ``model_type`` (default: the config's) in
    :data:`POSITION_PAD_TYPES` keeps the source's ``pad_token_id``: the position ids count from it, and the
    pipeline measured and trained the model with it."""
    ids = {k: getattr(tokenizer, k, None) for k in (*SPECIAL_IDS, "sep_token_id", "cls_token_id")}
    new = {**config, **{k: v for k, v in ids.items() if k in SPECIAL_IDS or k in config}}
    if isinstance(config.get("eos_token_id"), list):
        new["eos_token_id"] = None if ids["eos_token_id"] is None else [ids["eos_token_id"]]
    if config.get("decoder_start_token_id") is not None:
        role = next((k for k in SPECIAL_IDS if config.get(k) == config["decoder_start_token_id"]), None)
        new["decoder_start_token_id"] = ids[role] if role else None
    if (model_type or config.get("model_type")) in POSITION_PAD_TYPES and "pad_token_id" in config:
        new["pad_token_id"] = config["pad_token_id"]
    return new


def retarget_configs(source: str | os.PathLike, dest: str | os.PathLike, tokenizer,
                     vocab_size: int | None = None) -> None:
    """Write ``config.json`` (and ``generation_config.json`` where ``source`` has one) of the folder
    ``source`` into ``dest`` (may be the same folder) with the tokenizer's special-token ids
    (:func:`retarget_special_ids`) and ``vocab_size`` (when given)."""
    source, dest = Path(source), Path(dest)
    configs = {name: json.loads((source / name).read_text()) for name in CONFIGS
               if name == CONFIGS[0] or (source / name).is_file()}  # a missing config.json raises
    model_type = configs[CONFIGS[0]].get("model_type")
    for name, config in configs.items():
        config = retarget_special_ids(config, tokenizer, model_type=model_type)
        if vocab_size is not None and name == CONFIGS[0]:
            config["vocab_size"] = vocab_size
        (dest / name).write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


def link_or_copy(src: str | os.PathLike, dst: str | os.PathLike) -> None:
    """Hard-link ``src`` as ``dst``, or copy it where a link is not possible (another file system). A link
    leaves the source file's mtime as it is (its ctime changes), and Snakemake reads only the mtime (9.27,
    measured on a DAG whose rule linked an upstream output's file): nothing downstream of it reruns."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def read_header(path: str | os.PathLike) -> tuple[dict, int]:
    """The JSON header of a safetensors file and the offset at which its data begins."""
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        return json.loads(f.read(n)), 8 + n


def _write_all(fd: int, data: memoryview) -> None:
    while data:
        data = data[os.write(fd, data):]


def _copy_range(src: int, dst: int, offset: int, count: int) -> None:
    """Append ``count`` bytes of ``src`` from ``offset`` to ``dst``: in the kernel where it can
    (``copy_file_range``, which file systems with shared extents turn into a reflink), else through one
    ``CHUNK`` buffer at a time."""
    while count:
        try:
            n = os.copy_file_range(src, dst, min(count, CHUNK), offset)
        except (AttributeError, OSError) as e:  # no such call (not Linux), or not between these files
            if isinstance(e, OSError) and e.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL,
                                                          errno.EOPNOTSUPP):
                raise
            n = os.write(dst, os.pread(src, min(count, CHUNK), offset))
        if n == 0:
            raise OSError(f"short read at byte {offset}: the file was truncated while being copied")
        offset, count = offset + n, count - n


def _data_size(entry: dict) -> int:
    """Bytes of a safetensors header entry's tensor."""
    return entry["data_offsets"][1] - entry["data_offsets"][0]


def rewrite_safetensors(src: str | os.PathLike, dst: str | os.PathLike, new: dict[str, torch.Tensor]) -> int:
    """Write the safetensors file ``src`` as ``dst`` with the tensors of ``new`` in place of those of the same
    name (their shape, the source's dtype), and return its data size. The other tensors' bytes are copied as
    ranges of the file, so memory does not grow with the file. The header is the format's: its length as 8
    bytes little-endian, then JSON (``__metadata__`` kept, ``dtype``, ``shape``, ``data_offsets`` relative to
    the data) padded with spaces to a multiple of 8 bytes; tensors follow contiguously, those with wider
    elements first (as ``safetensors`` orders them), so each tensor stays aligned to its element size."""
    import torch

    dtypes = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}
    header, start = read_header(src)
    meta = header.pop("__metadata__", None)
    order = sorted(header, key=lambda k: (-_data_size(header[k]) / max(1, math.prod(header[k]["shape"])),
                                          header[k]["data_offsets"][0]))  # bytes per element, descending
    entries, offset = {}, 0
    for name in order:
        entry = header[name]
        size = _data_size(entry)
        if name in new:
            if entry["dtype"] not in dtypes:
                raise ValueError(f"{src}: {name} is {entry['dtype']}, not a floating-point dtype of "
                                 f"{sorted(dtypes)}")
            entry = {"dtype": entry["dtype"], "shape": list(new[name].shape)}
            size = new[name].numel() * dtypes[entry["dtype"]].itemsize
        entries[name] = {**entry, "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps({**({"__metadata__": meta} if meta is not None else {}), **entries},
                      separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    fin, fout = os.open(src, os.O_RDONLY), os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    try:
        _write_all(fout, memoryview(len(text).to_bytes(8, "little") + text))
        for name in order:
            if name in new:
                rows = new[name].to(dtypes[header[name]["dtype"]]).contiguous()
                _write_all(fout, memoryview(rows.view(-1).view(torch.uint8).numpy()))
            else:
                _copy_range(fin, fout, start + header[name]["data_offsets"][0], _data_size(header[name]))
    finally:
        os.close(fin)
        os.close(fout)
    return offset


def source_extra_special_tokens(source_dir: str | os.PathLike) -> list[str]:
    """The extra special tokens the source model's tokenizer lists (``extra_special_tokens``, or
    ``additional_special_tokens`` as transformers 4 wrote them, in ``tokenizer_config.json`` or
    ``special_tokens_map.json``), read without loading the tokenizer; [] where the folder has none."""
    out: list[str] = []
    for name in ("tokenizer_config.json", "special_tokens_map.json"):
        try:
            config = json.loads((Path(source_dir) / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        for key in ("extra_special_tokens", "additional_special_tokens"):
            value = config.get(key) if isinstance(config, dict) else None
            value = list(value.values()) if isinstance(value, dict) else value or []
            out += [t["content"] if isinstance(t, dict) else str(t) for t in value]
    return list(dict.fromkeys(out))


def keep_source_specials(tokenizer, source_dir: str | os.PathLike) -> None:
    """List the source's extra special tokens (:func:`source_extra_special_tokens`) that the target
    ``tokenizer`` has among its added tokens as its own extra special tokens too, so that the export's
    ``tokenizer_config.json`` names them with the target's ids."""
    added = {t.content for t in tokenizer.added_tokens_decoder.values()}
    set_extra_special_tokens(tokenizer, [t for t in source_extra_special_tokens(source_dir) if t in added])


def export_init(source_dir: str, embeddings: str, tokenizer_dir: str, out_dir: str, card: str) -> None:
    """The source model with an init artifact's rows swapped in, the target tokenizer and ``card``, written
    atomically into ``out_dir``, without loading the model.

    The tensors of the input embeddings, an untied LM head and its output bias are named by the architecture
    built on the meta device (:func:`~.source_model.embedding_tensor_names`); the safetensors files with one
    of them are rewritten (:func:`rewrite_safetensors`), the others hard-linked to the source's
    (:func:`link_or_copy`: save a changed model into a new folder, since writing over one in place would
    change the source model too). A tied model keeps what its source stores (one tensor, or each stored name
    of it) with the new rows; an untied head without ``output_embeddings`` in the artifact (``output_rows:
    copy_input``) gets the new input rows. The configs are retargeted (:func:`retarget_configs`); the source's
    tokenizer and other files are not copied. A source with pickle weights only (``pytorch_model.bin``)
    raises FileNotFoundError with the command that converts it."""
    from safetensors import safe_open

    source = Path(source_dir)
    files, index = safetensors_files(source)
    names, arch = embedding_tensor_names(source)
    with safe_open(embeddings, "pt") as art:
        keys = set(art.keys())
        check_artifact_fits(keys, bias="bias" in names, untied="output" in names, arch=arch)
        if "bias" in names and "output_bias" not in keys:
            raise ValueError(f"{arch}'s LM head has an output bias, but the init artifact has none")
        key = {"input": "embeddings", "output": "output_embeddings" if "output_embeddings" in keys
               else "embeddings", "bias": "output_bias"}
        artifact_key = {n: key[role] for role, ns in names.items() for n in ns}
        vocab_size = art.get_slice("embeddings").get_shape()[0]
        headers = {f: read_header(source / f)[0] for f in files}
        found = {n for h in headers.values() for n in h if n in artifact_key}
        for role, ns in names.items():
            if not found & set(ns):
                raise KeyError(f"{source}: no safetensors tensor named {ns} (the {ROLES[role]} of {arch})")
        tokenizer = load_tokenizer(tokenizer_dir)
        with atomic_path(out_dir, directory=True) as tmp:
            sizes = {}
            for f, header in headers.items():
                changed = {n: art.get_tensor(artifact_key[n]) for n in header if n in artifact_key}
                for n, t in changed.items():
                    if list(t.shape[1:]) != header[n]["shape"][1:]:
                        raise ValueError(f"the init artifact's {artifact_key[n]} {list(t.shape)} does not "
                                         f"fit the source's {n} {header[n]['shape']}")
                if changed:
                    sizes[f] = rewrite_safetensors(source / f, tmp / f, changed)
                else:
                    link_or_copy(source / f, tmp / f)
                    sizes[f] = sum(_data_size(e) for n, e in header.items() if n != "__metadata__")
            if index is not None:
                meta = index.get("metadata", {})
                meta["total_size"] = sum(sizes.values())
                if "total_parameters" in meta:
                    meta["total_parameters"] = sum(math.prod(e["shape"]) for f in files
                                                   for e in read_header(tmp / f)[0].values() if "shape" in e)
                (tmp / "model.safetensors.index.json").write_text(
                    json.dumps({**index, "metadata": meta}, indent=2, sort_keys=True) + "\n")
            retarget_configs(source, tmp, tokenizer, vocab_size=vocab_size)
            keep_source_specials(tokenizer, source)
            tokenizer.save_pretrained(str(tmp))
            (tmp / CARD).write_text(card)


def export_folder(model_dir: str, out_dir: str, card: str) -> None:
    """A ``save_pretrained`` folder (a LAPT model with its tokenizer) with ``card``, written atomically into
    ``out_dir``: the safetensors files hard-linked (:func:`link_or_copy`), the configs retargeted to the
    folder's tokenizer (:func:`retarget_configs`; LAPT models saved before it carry the source's ids), other
    files copied."""
    tokenizer = load_tokenizer(model_dir)
    with atomic_path(out_dir, directory=True) as tmp:
        for f in Path(model_dir).iterdir():
            if f.is_file() and f.name != CARD and f.name not in CONFIGS and not f.name.startswith("."):
                (link_or_copy if f.suffix == ".safetensors" else shutil.copy2)(f, Path(tmp) / f.name)
        retarget_configs(model_dir, tmp, tokenizer)
        (Path(tmp) / CARD).write_text(card)


#: The environment variable a push reads its token from (huggingface_hub's name); never a config key or file.
TOKEN_ENV = "HF_TOKEN"


def repo_name_problem(repo_id: str) -> str | None:
    """Why ``repo_id`` names no hub model repository (huggingface_hub's rules, and a user or organization in
    front), or None. ``export.push.repo`` is checked with it at parse time, a push before sending anything."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(repo_id)
    except HFValidationError as e:
        return str(e)
    return None if "/" in repo_id else "write it as <user or organization>/<name>"


def check_push(folder: str | os.PathLike, repo_id: str, token: str | None) -> None:
    """What a push needs, checked before anything is sent: a token in :data:`TOKEN_ENV`, a valid repository
    name, and a complete export folder (``config.json``, weights, and a card whose Hub metadata
    huggingface_hub reads)."""
    from huggingface_hub import ModelCard, constants

    if constants.is_offline_mode():
        raise PermissionError(f"pushing {folder} to {repo_id}: HF_HUB_OFFLINE is set, which keeps "
                              "huggingface_hub off the network; unset it for the push (it runs on the login "
                              "node)")
    if not token:
        raise PermissionError(f"pushing {folder} to {repo_id}: no token in ${TOKEN_ENV}; create a write "
                              f"token at https://huggingface.co/settings/tokens and export {TOKEN_ENV}=... "
                              "on the machine that pushes (it is never read from a config or file)")
    if problem := repo_name_problem(repo_id):
        raise ValueError(f"repository name {repo_id!r}: {problem}")
    folder = Path(folder)
    missing = [n for n in ("config.json", CARD) if not (folder / n).is_file()]
    if not folder.is_dir() or missing or not any(folder.glob("*.safetensors")):
        raise FileNotFoundError(f"{folder} is not a finished export (missing: "
                                f"{missing or ['*.safetensors']}); build it first (snakemake export)")
    ModelCard((folder / CARD).read_text(encoding="utf-8"))  # its YAML front matter parses


def card_with_scores(folder: str | os.PathLike, scores: pd.DataFrame) -> str:
    """The export's card with its lm-eval scores (a ``benchmark_model`` parquet: task, metric, value) added to
    the ``model-index`` (task type ``text-generation``, the lm-eval task as the dataset)."""
    from huggingface_hub import EvalResult, ModelCard

    card = ModelCard((Path(folder) / CARD).read_text(encoding="utf-8"))
    card.data.eval_results = list(card.data.eval_results or []) + [
        EvalResult(task_type="text-generation", dataset_type=row.task, dataset_name=f"{row.task} (lm-eval)",
                   metric_type=row.metric, metric_value=float(row.value),
                   metric_name=f"{row.metric}, {int(row.num_fewshot)}-shot, {int(row.samples)} samples")
        for row in scores.itertuples() if math.isfinite(float(row.value))]
    card.data.model_name = card.data.model_name or Path(folder).name
    return str(card)


def push_export(folder: str | os.PathLike, repo_id: str, *, private: bool = True, endpoint: str | None = None,
                card: str | None = None) -> dict:
    """Upload an export folder to hub repository ``repo_id`` (created where missing, ``private`` as asked) in
    one commit (with ``card``, that text as ``README.md`` instead of the folder's), the token from
    :data:`TOKEN_ENV`. The folder is read, never changed. Returns the receipt: repository, url, commit,
    privacy and the files sent with their sizes."""
    from huggingface_hub import CommitOperationAdd, HfApi, ModelCard

    token = os.environ.get(TOKEN_ENV)
    check_push(folder, repo_id, token)
    if card is not None:
        ModelCard(card)  # its YAML front matter parses
    api = HfApi(endpoint=endpoint, token=token)
    url = api.create_repo(repo_id, private=private, exist_ok=True, repo_type="model")
    files = {p.relative_to(folder).as_posix(): p.stat().st_size for p in sorted(Path(folder).rglob("*"))
             if p.is_file() and not p.name.startswith(".")}
    message = f"Upload {Path(folder).name} (vocabulary transfer)"
    if card is None:
        commit = api.upload_folder(folder_path=str(folder), repo_id=repo_id, repo_type="model",
                                   commit_message=message, ignore_patterns=[".*"])
    else:
        operations = [CommitOperationAdd(path_in_repo=name, path_or_fileobj=str(Path(folder) / name))
                      for name in files if name != CARD]
        operations.append(CommitOperationAdd(path_in_repo=CARD, path_or_fileobj=card.encode("utf-8")))
        commit = api.create_commit(repo_id=repo_id, repo_type="model", operations=operations,
                                   commit_message=message)
        files[CARD] = len(card.encode("utf-8"))
    return {"repo": repo_id, "url": str(url), "commit": commit.oid, "private": private, "files": files}

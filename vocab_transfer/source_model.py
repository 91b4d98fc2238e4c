"""Source models: a hub/local masked LM or decoder-only causal LM (WECHSEL's GPT-2), or a small
XLM-R-architecture MLM pretrained by the pipeline."""

from __future__ import annotations

import fnmatch
import json
import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from . import lazy
from .artifacts import ORIGIN_FILE
from .io import atomic_path, resumable_dir

torch = lazy.module("torch")

if TYPE_CHECKING:  # transformers' model classes are imported where a model is built: the import costs seconds
    from transformers import PretrainedConfig, PreTrainedModel, PreTrainedTokenizerBase, XLMRobertaForMaskedLM

log = logging.getLogger(__name__)

#: Class-name endings of causal-LM heads (``GPT2LMHeadModel``, ``LlamaForCausalLM``, ``BertLMHeadModel``).
CAUSAL_LM_SUFFIXES = ("ForCausalLM", "LMHeadModel")


class TokenizerModelMismatch(ValueError):
    """The tokenizer has ids that the model's embedding matrix has no row for (or vice versa)."""


def build_xlmr_mlm(tokenizer: PreTrainedTokenizerBase, *, hidden_size: int, num_layers: int, num_heads: int,
                   intermediate_size: int, max_position_embeddings: int, seed: int, dropout: float = 0.1,
                   ) -> XLMRobertaForMaskedLM:
    """A freshly initialized XLM-R-architecture masked LM sized by the arguments (seeded)."""
    from transformers import XLMRobertaConfig, XLMRobertaForMaskedLM

    config = XLMRobertaConfig(
        vocab_size=len(tokenizer), hidden_size=hidden_size, num_hidden_layers=num_layers,
        num_attention_heads=num_heads, intermediate_size=intermediate_size,
        max_position_embeddings=max_position_embeddings + 2,  # XLM-R offsets positions by pad_id + 1
        pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id, hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout, tie_word_embeddings=True)
    torch.manual_seed(seed)
    return XLMRobertaForMaskedLM(config)


def mlm_head(model: PreTrainedModel):
    """The MLM head, transform included: RoBERTa/XLM-R's ``lm_head``, BERT's ``cls``; None for others."""
    return getattr(model, "lm_head", None) or getattr(model, "cls", None)


def masked_lm_loss(model: PreTrainedModel, inputs: torch.Tensor, labels: torch.Tensor, *,
                   positions: torch.Tensor | None = None) -> torch.Tensor:
    """MLM cross-entropy (``model(input_ids, labels=labels).loss``'s value) with the LM head run on the
    labelled (≈15%) positions only for RoBERTa/XLM-R (``lm_head``) and BERT (``cls``) heads; others take the
    full path. ``positions`` (flat indices of the labelled tokens) avoids the sync of a boolean index."""
    if mlm_head(model) is None:
        return model(input_ids=inputs, labels=labels).loss
    logits, targets = masked_lm_logits(model, inputs, labels, positions=positions)
    return torch.nn.functional.cross_entropy(logits.float(), targets)


def masked_lm_logits(model: PreTrainedModel, inputs: torch.Tensor, labels: torch.Tensor, *,
                     positions: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``(logits [n, V], labels [n])`` of the ``n`` labelled positions (row-major), the LM head run on those
    positions only where the head allows it (:func:`masked_lm_loss`'s cross-entropy is taken on these)."""
    head = mlm_head(model)
    if head is None:
        keep = labels != -100
        return model(input_ids=inputs).logits[keep], labels[keep]
    hidden = model.base_model(input_ids=inputs).last_hidden_state
    if positions is None:
        keep = labels != -100
        return head(hidden[keep]), labels[keep]
    return head(hidden.flatten(0, 1).index_select(0, positions)), labels.flatten().index_select(0, positions)


def mask_tokens(input_ids: torch.Tensor, *, mask_token_id: int, vocab_size: int, special_ids,
                generator: torch.Generator, mask_prob: float = 0.15) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT masking: choose ``mask_prob`` of the non-special positions; of those 80% → ``<mask>``,
    10% → a random token, 10% unchanged. Labels are -100 elsewhere. Same generator state, same masks."""
    labels = input_ids.clone()
    special = torch.isin(input_ids, torch.as_tensor(list(special_ids)))
    probs = torch.full(input_ids.shape, mask_prob).masked_fill(special, 0.0)
    chosen = torch.bernoulli(probs, generator=generator).bool()
    labels[~chosen] = -100
    inputs = input_ids.clone()
    replace = torch.bernoulli(torch.full(input_ids.shape, 0.8), generator=generator).bool() & chosen
    inputs[replace] = mask_token_id
    rand = torch.bernoulli(torch.full(input_ids.shape, 0.5), generator=generator).bool() & chosen & ~replace
    inputs[rand] = torch.randint(vocab_size, input_ids.shape, generator=generator)[rand]
    return inputs, labels


def is_causal_lm(model_or_config: PreTrainedModel | PretrainedConfig) -> bool:
    """Whether a model (or the config it was saved with) is a decoder-only causal LM; the first rule that
    applies decides: (1) a model instance: its class name ends in ``ForCausalLM`` / ``LMHeadModel`` → causal,
    in ``ForMaskedLM`` → masked (the class it was loaded as wins over the saved config); (2) encoder-decoder
    configs (T5, BART) are not decoders; (3) ``config.architectures``: an entry ending in ``ForCausalLM`` /
    ``LMHeadModel`` → causal, ``ForMaskedLM`` → masked; (4) a config flagged ``is_decoder`` (BERT-family
    models saved as decoders) → causal; (5) else the ``model_type``: causal iff transformers has a causal-LM
    and no masked-LM class for it (gpt2, llama, ...; bert, roberta, or types with neither, stay masked
    LMs)."""
    if isinstance(model_or_config, torch.nn.Module):
        name = type(model_or_config).__name__
        if name.endswith((*CAUSAL_LM_SUFFIXES, "ForMaskedLM")):
            return not name.endswith("ForMaskedLM")
        model_or_config = model_or_config.config
    return is_causal_config(model_or_config)


def is_causal_config(config) -> bool:
    """:func:`is_causal_lm` of a config (rules 2-5): a ``PretrainedConfig``, or any object with its attributes
    (``config.json``'s keys, as parse-time checks read it without torch)."""
    if getattr(config, "is_encoder_decoder", False):
        return False
    architectures = getattr(config, "architectures", None) or []
    if any(a.endswith(CAUSAL_LM_SUFFIXES) for a in architectures):
        return True
    if any(a.endswith("ForMaskedLM") for a in architectures):
        return False
    if getattr(config, "is_decoder", False):
        return True
    from transformers.models.auto import modeling_auto as auto

    model_type = getattr(config, "model_type", "")
    return (model_type in auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
            and model_type not in auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES)


ROBERTA_TYPES = ("roberta", "xlm-roberta", "camembert")  # position ids start after padding_idx


def max_sequence_length(model) -> int:
    """Tokens a sequence may have: the position table's size (RoBERTa/XLM-R reserve padding_idx + 1 rows)."""
    return position_limit(model.config.to_dict()) or 10**9


def position_limit(config: dict) -> int | None:
    """Tokens a sequence may have, from a model's ``config.json`` as a dict: its position table's size, less
    the padding_idx + 1 rows RoBERTa/XLM-R reserve; None when the config states none."""
    n = config.get("max_position_embeddings") or config.get("n_positions")
    if not isinstance(n, int):
        return None
    return n - (config.get("pad_token_id") or 0) - 1 if config.get("model_type") in ROBERTA_TYPES else n


def hub_download_patterns(files: list[str]) -> list[str]:
    """The files of a hub model repository to fetch: configs, tokenizer files, ``README.md`` (its license, for
    the exports' cards) and the safetensors weights, else ``pytorch_model*.bin`` (e.g.
    ``flaubert/flaubert_base_cased``); never TF, Flax, ONNX or training state."""
    weights = "*.safetensors" if any(f.endswith(".safetensors") for f in files) else "pytorch_model*.bin"
    if weights.endswith(".bin") and not any(f.split("/")[-1].startswith("pytorch_model") for f in files):
        raise FileNotFoundError("no model weights (*.safetensors or pytorch_model*.bin) "
                                f"among {sorted(files)}")
    return ["*.json", "*.txt", "*.model", "*.jinja", "README.md", weights]


def remote_code(model_dir: str | Path) -> list[str]:
    """The classes a model folder asks transformers to import from its own Python files (``auto_map`` of
    ``config.json`` and ``tokenizer_config.json``): repository code, which the pipeline never runs."""
    found = []
    for name in ("config.json", "tokenizer_config.json"):
        path = Path(model_dir) / name
        if path.is_file():
            found += [f"{name}: {v if isinstance(v, str) else v[0] or v[-1]}"
                      for v in (json.loads(path.read_text(encoding="utf-8")).get("auto_map") or {}).values()]
    return found


#: The environment variable listing (``os.pathsep``) the model folders whose own code may run: those of the
#: sources with ``trust_remote_code: true``, set by rules/common.smk at parse time; jobs inherit it.
TRUSTED_ENV = "VOCAB_TRANSFER_TRUST_REMOTE_CODE"


def remote_code_allowed(model_dir: str | Path) -> bool:
    """Whether the config allows ``model_dir``'s own code (its folder listed in :data:`TRUSTED_ENV`)."""
    trusted = [Path(p).resolve() for p in os.environ.get(TRUSTED_ENV, "").split(os.pathsep) if p]
    return Path(model_dir).resolve() in trusted


def refuse_remote_code(model_dir: str | Path, what: str, allowed: bool = False) -> None:
    """Raise where :func:`remote_code` finds any and the config does not allow it for this model."""
    found = remote_code(model_dir)
    if found and not allowed:
        import transformers

        raise ValueError(f"{what}: {model_dir} needs code from the model's repository ({'; '.join(found)}), "
                         "which the pipeline runs only where the config allows it for that model "
                         "(sources.<name>.trust_remote_code: true); without it, only architectures built "
                         f"into transformers {transformers.__version__} load")


def download_hub_model(repo: str, revision: str | None, out_dir: str | Path, weights: bool = True) -> dict:
    """Download hub model ``repo`` at ``revision`` (None: the default branch) into ``out_dir``, atomically and
    resumably, the file list and files (:func:`hub_download_patterns`) at the commit it resolves to (a moving
    branch cannot mix commits). Returns the origin written to ``origin.json``."""
    from huggingface_hub import HfApi, snapshot_download

    from . import mirror

    if mirror.root():  # a hub mirror (vocab_transfer.mirror): the repository's folder, copied
        local, commit = mirror.repo(repo), mirror.COMMIT
        listed = sorted(p.relative_to(local).as_posix() for p in local.rglob("*") if p.is_file())
    else:
        api = HfApi()
        commit = api.model_info(repo, revision=revision).sha
        if not commit:
            raise RuntimeError(f"the hub gave no commit for {repo} at revision {revision or 'main'}")
        listed = api.list_repo_files(repo, revision=commit)
    patterns = hub_download_patterns(listed)
    patterns = patterns if weights else patterns[:-1]  # a tokenizer alone (tokenizer.pretrained): no weights
    with resumable_dir(out_dir) as tmp:  # a killed download resumes in <out_dir>.partial
        if mirror.root():
            for name in listed:
                if "/" not in name and any(fnmatch.fnmatch(name, p) for p in patterns):
                    shutil.copyfile(local / name, tmp / name)
        else:
            snapshot_download(repo, revision=commit, local_dir=str(tmp), allow_patterns=patterns)
        try:
            refuse_remote_code(tmp, f"hub model {repo}@{commit}", remote_code_allowed(out_dir))
        except ValueError:
            shutil.rmtree(tmp)  # refused content is not resumed
            raise
        files = sorted(p.relative_to(tmp).as_posix() for p in tmp.rglob("*")
                       if p.is_file() and p.relative_to(tmp).parts[0] != ".cache")  # hub client's records
        origin = {"repo": repo, "revision": revision, "resolved_revision": commit, "files": files}
        (tmp / ORIGIN_FILE).write_text(json.dumps(origin, indent=1) + "\n", encoding="utf-8")
    return origin


def load_source_model(path: str) -> PreTrainedModel:
    """A source model saved with ``save_pretrained`` (or a hub id): ``AutoModelForCausalLM`` when its config
    is a decoder (:func:`is_causal_lm`), else ``AutoModelForMaskedLM``."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForMaskedLM

    trust = remote_code_allowed(path)
    auto = AutoModelForCausalLM if is_causal_lm(AutoConfig.from_pretrained(path, trust_remote_code=trust)) \
        else AutoModelForMaskedLM
    return auto.from_pretrained(path, trust_remote_code=trust)


def model_vocab_size(model_dir: str | Path) -> int:
    """Rows of the embedding matrix, read from ``config.json`` without loading weights."""
    return int(json.loads((Path(model_dir) / "config.json").read_text())["vocab_size"])


def check_tokenizer_matches(tokenizer_len: int, embedding_rows: int, *, name: str,
                            allow_padded_embeddings: bool = False) -> None:
    """Raise :class:`TokenizerModelMismatch` unless every token id has exactly one embedding row; a matrix
    padded beyond the tokenizer (e.g. to a multiple of 64) passes with ``allow_padded_embeddings``."""
    if tokenizer_len > embedding_rows or (tokenizer_len < embedding_rows and not allow_padded_embeddings):
        raise TokenizerModelMismatch(
            f"source {name!r}: tokenizer has {tokenizer_len} tokens but the model's embedding matrix has "
            f"{embedding_rows} rows; the tokenizer does not belong to this model"
            + ("" if tokenizer_len > embedding_rows
               else " (set allow_padded_embeddings: true if the matrix is padded on purpose)"))


def embedding_matrix(model: PreTrainedModel, *, output_rows: bool = True) -> torch.Tensor:
    """The rows an init method transfers, one per token: the input embeddings, an untied head's output
    embeddings (e.g. Llama; not with ``output_rows=False``), the output bias as the last column: one matrix,
    so a method's weights apply to all the columns; :meth:`EmbeddingRows.split` parts it."""
    return EmbeddingRows.of(model).matrix(output_rows=output_rows)


def has_untied_output(model: PreTrainedModel) -> bool:
    """Whether the LM head has an output matrix of its own (not the input embeddings' tensor)."""
    out = model.get_output_embeddings()
    return out is not None and out.weight is not model.get_input_embeddings().weight


@dataclass(frozen=True)
class EmbeddingRows:
    """A source model's per-token rows, read from its safetensors files without loading the model
    (:func:`read_embedding_rows`): the input embeddings, an untied LM head's own matrix, the output bias."""

    input: torch.Tensor
    output: torch.Tensor | None = None
    bias: torch.Tensor | None = None

    @classmethod
    def of(cls, model: PreTrainedModel) -> EmbeddingRows:
        """The rows of a loaded model (:func:`read_embedding_rows` reads them from its files instead)."""
        out = model.get_output_embeddings()
        bias = getattr(out, "bias", None)
        return cls(model.get_input_embeddings().weight.detach(),
                   out.weight.detach() if has_untied_output(model) else None,
                   bias.detach() if bias is not None else None)

    def layout(self) -> EmbeddingRows:
        """The same blocks with no rows (empty tensors): what :meth:`split` needs, without holding the
        matrices once :meth:`matrix` has copied them."""
        return EmbeddingRows(*(None if t is None else t.new_empty((0, *t.shape[1:]))
                               for t in (self.input, self.output, self.bias)))

    def matrix(self, *, output_rows: bool = True) -> torch.Tensor:
        """``[input | output | bias]`` as :func:`embedding_matrix` lays it out."""
        parts = [self.input, *([self.output] if output_rows and self.output is not None else []),
                 *([self.bias[:, None]] if self.bias is not None else [])]
        return torch.cat(parts, 1) if len(parts) > 1 else self.input.clone()

    def split(self, matrix: torch.Tensor) -> dict[str, torch.Tensor]:
        """The init artifact's tensors from a method's rows laid out as :meth:`matrix`'s: ``embeddings``,
        ``output_embeddings`` (an untied head, when the matrix has its columns) and ``output_bias``."""
        d, bias = self.input.shape[1], self.bias is not None
        width = matrix.shape[1] - d - int(bias)
        if width not in (0, d) or (width and self.output is None):
            raise ValueError(f"a {matrix.shape[1]}-column matrix does not fit the source's embeddings ({d} "
                             f"columns{', an untied head' if self.output is not None else ''}"
                             f"{', an output bias' if bias else ''})")
        tensors = {"embeddings": matrix[:, :d].contiguous()}
        if width:
            tensors["output_embeddings"] = matrix[:, d:2 * d].contiguous()
        if bias:
            tensors["output_bias"] = matrix[:, -1].contiguous()
        return tensors


def padding_multiple(rows: int, tokens: int, largest: int = 1024) -> int:
    """The multiple a source's embedding rows are padded to: 1 where they fit its tokenizer, else the largest
    power of two up to ``largest`` dividing the row count (Qwen2.5: 151,936 rows for 151,665 tokens, 128)."""
    if rows <= tokens:
        return 1
    multiple = 1
    while multiple < largest and rows % (multiple * 2) == 0:
        multiple *= 2
    return multiple


def pad_rows(tensors: dict[str, torch.Tensor], multiple: int) -> dict[str, torch.Tensor]:
    """Init tensors with their rows padded up to a multiple of ``multiple`` (the source's padding rule), each
    padding row the mean of the real ones: rows no token id reaches, as in the source."""
    n = next(iter(tensors.values())).shape[0]
    extra = -n % multiple
    if not extra:
        return tensors
    return {k: torch.cat([v, v.float().mean(0, keepdim=True).to(v.dtype).expand(extra, *v.shape[1:])])
            for k, v in tensors.items()}


def check_architecture(model_dir: str | Path, what: str) -> None:
    """Raise unless transformers has a causal-LM or masked-LM class for the ``model_type`` in ``config.json``:
    the classes whose input embeddings and LM head the pipeline transfers (T5's or an encoder's have none)."""
    from transformers.models.auto import modeling_auto as auto

    kind = json.loads((Path(model_dir) / "config.json").read_text(encoding="utf-8")).get("model_type")
    if (kind not in auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
            and kind not in auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES):
        import transformers

        raise ValueError(f"{what}: {model_dir} is a {kind!r} model, for which transformers "
                         f"{transformers.__version__} has no causal-LM or masked-LM class; the pipeline "
                         "transfers the input embeddings and LM head of such models only (an encoder-decoder "
                         "such as T5, or a model saved without its LM head, has none)")


def _meta_model(model_dir: Path) -> PreTrainedModel:
    """The architecture of a saved model built on the meta device (no memory or weights): its tensor names."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForMaskedLM

    trust = remote_code_allowed(model_dir)
    refuse_remote_code(model_dir, "source model", trust)
    if not trust:
        check_architecture(model_dir, "source model")
    config = AutoConfig.from_pretrained(model_dir, trust_remote_code=trust)
    auto = AutoModelForCausalLM if is_causal_lm(config) else AutoModelForMaskedLM
    with torch.device("meta"):
        return auto.from_config(config, trust_remote_code=trust)


#: The safetensors weights of a ``save_pretrained`` folder: one file, or shards named by an index.
SAFETENSORS, SAFETENSORS_INDEX = "model.safetensors", "model.safetensors.index.json"


def safetensors_files(model_dir: str | Path) -> tuple[list[str], dict | None]:
    """The safetensors files of a model folder and its index (None for one ``model.safetensors``);
    FileNotFoundError, with the command that converts them, for pickle weights only."""
    model_dir = Path(model_dir)
    index = model_dir / SAFETENSORS_INDEX
    if index.exists():
        index = json.loads(index.read_text())
        return sorted(set(index["weight_map"].values())), index
    if (model_dir / SAFETENSORS).is_file():
        return [SAFETENSORS], None
    pickled = sorted(p.name for p in model_dir.glob("pytorch_model*.bin"))
    hint = (f"; it has only pickle weights ({', '.join(pickled)}): convert them with `python -c \"from "
            f"transformers import AutoModel; AutoModel.from_pretrained('{model_dir}').save_pretrained("
            f"'{model_dir}', safe_serialization=True)\"`") if pickled else ""
    raise FileNotFoundError(f"{model_dir}: no {SAFETENSORS} and no {SAFETENSORS_INDEX}{hint}")


def _read_named(model_dir: Path, names: list[str], what: str, arch: str) -> torch.Tensor:
    """The first of ``names`` (one parameter's names; tied parameters have several) found in the safetensors
    file or the shard that ``model.safetensors.index.json`` names, memory-mapped."""
    from safetensors import safe_open

    files, index = safetensors_files(model_dir)
    for name in names:
        file = model_dir / (index["weight_map"].get(name, "") if index is not None else files[0])
        if not file.is_file():
            continue
        with safe_open(file, "pt") as f:
            if name in f.keys():
                return f.get_tensor(name)
    raise KeyError(f"{model_dir}: no safetensors tensor named {names} (the {what} of {arch}); save the "
                   "model with safetensors")


def _names(model: PreTrainedModel, param: torch.nn.Parameter) -> list[str]:
    return [n for n, p in model.named_parameters(remove_duplicate=False) if p is param]


#: What each role of :func:`embedding_tensor_names` is, for messages.
ROLES = {"input": "input embeddings", "output": "output embeddings", "bias": "output bias"}


@dataclass(frozen=True)
class SourceLayout:
    """What a saved model's architecture says about its per-token rows: the tensor names of each of the
    :data:`ROLES` (a tied head's among ``input``'s), its class name and whether it is a causal decoder."""

    names: dict[str, list[str]]
    arch: str
    causal: bool


#: Where :func:`source_layout` keeps what it found (default ``~/.cache/vocab_transfer/layouts``).
LAYOUT_CACHE_ENV = "VOCAB_TRANSFER_LAYOUT_CACHE"


def _layout_cache(model_dir: Path) -> Path | None:
    """The layout cache file of a model folder, keyed by its ``config.json`` bytes and the transformers
    version; None for a model with its own code (which may change) or where no cache is wanted."""
    import hashlib

    import transformers

    root = os.environ.get(LAYOUT_CACHE_ENV, str(Path.home() / ".cache" / "vocab_transfer" / "layouts"))
    config = model_dir / "config.json"
    if not root or not config.is_file() or remote_code(model_dir):
        return None
    key = hashlib.sha256(config.read_bytes() + f"\0transformers {transformers.__version__}".encode())
    return Path(root) / f"{key.hexdigest()[:32]}.json"


def source_layout(model_dir: str | Path) -> SourceLayout:
    """The :class:`SourceLayout` of a saved model, from its architecture on the meta device. Building that
    imports transformers' model code (about 3 s of a job's start on 2 CPU cores), so the result, a function of
    ``config.json`` and the transformers version only, is cached (:data:`LAYOUT_CACHE_ENV`)."""
    model_dir = Path(model_dir)
    cache = _layout_cache(model_dir)
    if cache is not None and cache.is_file():
        try:
            d = json.loads(cache.read_text(encoding="utf-8"))
            return SourceLayout({k: list(v) for k, v in d["names"].items()}, d["arch"], bool(d["causal"]))
        except (OSError, ValueError, KeyError, TypeError):
            pass  # unreadable: built again below and rewritten
    model = _meta_model(model_dir)
    inp = model.get_input_embeddings().weight
    names = {"input": _names(model, inp)}
    out = model.get_output_embeddings()
    if out is not None and out.weight is not inp:
        names["output"] = _names(model, out.weight)
    if getattr(out, "bias", None) is not None:
        names["bias"] = _names(model, out.bias)
    layout = SourceLayout(names, type(model).__name__, is_causal_lm(model))
    if cache is not None:
        try:
            with atomic_path(cache, checksum=False) as tmp:
                tmp.write_text(json.dumps({"names": names, "arch": layout.arch, "causal": layout.causal}),
                               encoding="utf-8")
        except OSError as e:  # a read-only home: the layout is built again next time
            log.debug("layout cache %s not written: %s", cache, e)
    return layout


def embedding_tensor_names(model_dir: str | Path) -> tuple[dict[str, list[str]], str]:
    """The tensor names of a saved model's per-token rows by role (:data:`ROLES`; ``input`` with a tied head's
    names) and the architecture's class name (:func:`source_layout`)."""
    layout = source_layout(model_dir)
    return layout.names, layout.arch


def read_embedding_rows(model_dir: str | Path) -> EmbeddingRows:
    """The input embeddings, an untied head's matrix and the output bias of a model saved as safetensors (a
    file or shards), read by name without loading the model: a 7B model's matrices cost their own size."""
    names, arch = embedding_tensor_names(model_dir)
    return EmbeddingRows(**{role: _read_named(Path(model_dir), n, ROLES[role], arch)
                            for role, n in names.items()})


def read_input_embeddings(model_dir: str | Path) -> torch.Tensor:
    """The input embeddings of a model saved as safetensors, read without loading it."""
    names, arch = embedding_tensor_names(model_dir)
    return _read_named(Path(model_dir), names["input"], ROLES["input"], arch)


def has_output_bias(model: PreTrainedModel) -> bool:
    return getattr(model.get_output_embeddings(), "bias", None) is not None


def check_artifact_fits(keys: set[str], *, bias: bool, untied: bool, arch: str) -> None:
    """Raise where an init artifact's tensors (``keys``) do not fit a source's LM head: an ``output_bias`` for
    a head without bias, ``output_embeddings`` for a head tied to the input embeddings."""
    if "output_bias" in keys and not bias:
        raise ValueError(f"the init artifact has an output bias, but {arch}'s LM head has none (was it "
                         "initialized for another source model?)")
    if "output_embeddings" in keys and not untied:
        raise ValueError(f"the init artifact has output embeddings, but {arch}'s LM head is tied to its "
                         "input embeddings (was it initialized for another source model?)")


def transferred_model(source: PreTrainedModel, embeddings: torch.Tensor, bias: torch.Tensor | None,
                      output: torch.Tensor | None = None) -> PreTrainedModel:
    """Swap the vocabulary of ``source`` in place (FOCUS §3.1: the other layers stay the source's): new input
    embeddings (tied output embeddings) and output bias (None: none, as GPT-2's); an untied output matrix
    (e.g. Llama) gets ``output``, else a copy of the input embeddings (``output_rows: copy_input``)."""
    untied = has_untied_output(source)
    check_artifact_fits({k for k, t in (("output_bias", bias),
                                        ("output_embeddings", output)) if t is not None},
                        bias=has_output_bias(source), untied=untied, arch=type(source).__name__)
    source.resize_token_embeddings(embeddings.shape[0], mean_resizing=False)
    with torch.no_grad():
        source.get_input_embeddings().weight.copy_(embeddings)
        out = source.get_output_embeddings()
        if bias is not None:
            out.bias.copy_(bias)
        if untied:
            out.weight.copy_(embeddings if output is None else output)
    return source

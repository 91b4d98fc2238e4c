"""MAD-X language adapters (Pfeiffer et al., 2020b) for BERT-style encoders (BERT, RoBERTa, XLM-R), trained
jointly with the new embeddings while the rest of the model stays frozen (unks-everywhere §4.3).

- Bottleneck adapter in layer l (unks-everywhere §2, eq. 1): ``A_l(h_l, r_l) = U_l(GeLU(D_l(h_l))) + r_l``
  at the Pfeiffer position: ``r_l`` is the feed-forward output, ``h_l = LN_l(r_l + x_l)`` the output of the
  layer's own layer norm, and the layer returns ``LN_l(A_l + x_l)`` (the same, frozen, LN).
- Invertible adapter (MAD-X §3): a NICE coupling (Dinh et al., 2015) on the embedding output, its inverse on
  the input of the (tied) output embeddings.
- MAD-X 2.0 (unks-everywhere §4.1): no adapter in the last layer.

Up-projections start at zero, so attaching an adapter leaves the model's outputs unchanged. Adapters are
submodules (in ``state_dict`` while attached: checkpoints round-trip) that patch the forward of the modules
they sit in; ``strip_language_adapter`` removes them, so ``save_pretrained`` writes the plain model.
``save_language_adapter`` / ``load_language_adapter`` keep them beside it, keyed relative to
``model.base_model`` so that a task model (e.g. sequence classification) loads what a masked LM trained.

Implemented here because the ``adapters`` library (1.3.0) pins ``transformers~=4.57`` and does not import
with transformers 5 / huggingface_hub 1.x.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from torch import nn

ADAPTER_FILE, CONFIG_FILE = "language_adapter.safetensors", "language_adapter.json"
ACTIVATIONS = {"gelu": nn.GELU, "relu": nn.ReLU, "silu": nn.SiLU, "tanh": nn.Tanh}


@dataclass
class AdapterConfig:
    reduction_factor: int = 2  # hidden size / bottleneck size (MAD-X language adapters: 2)
    non_linearity: str = "gelu"  # eq. 1
    invertible: bool = True  # MAD-X invertible adapter (its coupling functions also use reduction 2)
    skip_last_layer: bool = True  # MAD-X 2.0: no adapter in the last layer
    init_scale: float = 0.02  # std of the down-projections; up-projections start at zero (identity)

    def __post_init__(self) -> None:
        if self.non_linearity not in ACTIVATIONS:
            raise ValueError(f"adapter: non_linearity must be one of {list(ACTIVATIONS)}, not {self.non_linearity!r}")
        if self.reduction_factor < 1 or self.init_scale < 0:
            raise ValueError(f"adapter: reduction_factor must be >= 1 and init_scale >= 0, not {self}")

    @classmethod
    def from_dict(cls, d: dict) -> AdapterConfig:
        names = {f.name for f in dataclasses.fields(cls)}
        if set(d) - names:
            raise ValueError(f"adapter: unknown key(s) {sorted(set(d) - names)}; known: {sorted(names)}")
        return cls(**d)


def _bottleneck(d_in: int, d_out: int, cfg: AdapterConfig, g: torch.Generator) -> nn.Sequential:
    """Linear(d_in → d_in / reduction) → non-linearity → Linear(→ d_out), the last one zero-initialized."""
    mid = max(1, d_in // cfg.reduction_factor)
    seq = nn.Sequential(nn.Linear(d_in, mid), ACTIVATIONS[cfg.non_linearity](), nn.Linear(mid, d_out))
    with torch.no_grad():
        seq[0].weight.normal_(0.0, cfg.init_scale, generator=g)
        for t in (seq[0].bias, seq[2].weight, seq[2].bias):
            t.zero_()
    return seq


class BottleneckAdapter(nn.Module):
    """Eq. 1: ``A(h, r) = U(act(D(h))) + r``; ``down`` is D, ``up`` is U (zero-initialized)."""

    def __init__(self, hidden: int, cfg: AdapterConfig, g: torch.Generator):
        super().__init__()
        self.config = cfg
        self.down, self.act, self.up = _bottleneck(hidden, hidden, cfg, g)

    def forward(self, h: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
        return self.up(self.act(self.down(h))) + r

    def output_forward(self, output: nn.Module, hidden_states: torch.Tensor, input_tensor: torch.Tensor
                       ) -> torch.Tensor:
        """``BertOutput.forward`` with the adapter at the Pfeiffer position: ``LN(A(LN(r + x), r) + x)``."""
        r = output.dropout(output.dense(hidden_states))
        return output.LayerNorm(self(output.LayerNorm(r + input_tensor), r) + input_tensor)


class InvertibleAdapter(nn.Module):
    """NICE coupling: ``y1 = x1 + F(x2)``, ``y2 = x2 + G(y1)`` on the two halves of the last dimension;
    ``inverse=True`` undoes it exactly (up to rounding). F and G are bottlenecks with reduction 2."""

    def __init__(self, dim: int, cfg: AdapterConfig, g: torch.Generator):
        super().__init__()
        self.config, self.split = cfg, dim // 2
        half = dataclasses.replace(cfg, reduction_factor=2)
        self.F = _bottleneck(dim - self.split, self.split, half, g)
        self.G = _bottleneck(self.split, dim - self.split, half, g)

    def forward(self, x: torch.Tensor, inverse: bool = False) -> torch.Tensor:
        x1, x2 = x[..., : self.split], x[..., self.split:]
        if not inverse:
            y1 = x1 + self.F(x2)
            return torch.cat([y1, x2 + self.G(y1)], -1)
        y2 = x2 - self.G(x1)
        return torch.cat([x1 - self.F(y2), y2], -1)

    def embed(self, embeddings: nn.Module, *args, **kwargs) -> torch.Tensor:
        return self(type(embeddings).forward(embeddings, *args, **kwargs))

    def decode(self, decoder: nn.Module, x: torch.Tensor) -> torch.Tensor:
        return type(decoder).forward(decoder, self(x, inverse=True))


ADAPTERS = (BottleneckAdapter, InvertibleAdapter)


def _layer_outputs(model: nn.Module) -> list[nn.Module]:
    """``encoder.layer[i].output`` of a BERT-style encoder; NotImplementedError for anything else."""
    base = getattr(model, "base_model", model)
    layers = getattr(getattr(base, "encoder", None), "layer", None) or []
    outputs = [getattr(layer, "output", None) for layer in layers]
    if not outputs or not hasattr(base, "embeddings") or not all(
            all(hasattr(o, a) for a in ("dense", "dropout", "LayerNorm")) for o in outputs):
        raise NotImplementedError(
            f"language adapters are implemented for BERT-style encoders (base_model.encoder.layer[i].output with "
            f"dense, dropout, LayerNorm: BERT, RoBERTa, XLM-R), not for {type(model).__name__} "
            f"(model_type {getattr(getattr(model, 'config', None), 'model_type', None)!r})")
    return outputs


def _adapter_parameters(module: nn.Module) -> dict[str, nn.Parameter]:
    return {f"{name}.{p_name}": p for name, m in module.named_modules() if isinstance(m, ADAPTERS)
            for p_name, p in m.named_parameters()}


def adapter_parameter_names(model: nn.Module) -> set[str]:
    """Names (as in ``model.named_parameters()``) of the attached adapters' parameters; empty if none."""
    return set(_adapter_parameters(model))


def add_language_adapter(model: nn.Module, cfg: AdapterConfig | None = None, *, seed: int = 0) -> None:
    """Attach a MAD-X language adapter (seeded; the global RNG is left alone). The model's outputs do not
    change until the adapter is trained (zero up-projections)."""
    cfg = cfg or AdapterConfig()
    outputs = _layer_outputs(model)
    if adapter_parameter_names(model):
        raise ValueError(f"{type(model).__name__} already has a language adapter")
    g = torch.Generator().manual_seed(seed)
    ref = outputs[0].dense.weight
    with torch.random.fork_rng(devices=[]):  # nn.Linear's default init would draw from the global RNG
        for output in outputs[: len(outputs) - int(cfg.skip_last_layer)]:
            output.language_adapter = BottleneckAdapter(output.dense.out_features, cfg, g).to(ref.device, ref.dtype)
            output.forward = partial(output.language_adapter.output_forward, output)
        if cfg.invertible:
            base, emb_in = model.base_model, model.get_input_embeddings()
            inv = InvertibleAdapter(emb_in.embedding_dim, cfg, g).to(ref.device, ref.dtype)
            base.invertible_adapter = inv
            base.embeddings.forward = partial(inv.embed, base.embeddings)
            decoder = model.get_output_embeddings()  # None for task models: the input side only, as in MAD-X
            if decoder is not None:
                decoder.forward = partial(inv.decode, decoder)


def strip_language_adapter(model: nn.Module) -> None:
    """Remove the adapter modules and restore the original forwards (``save_pretrained`` then writes the
    plain model)."""
    for m in list(model.modules()):
        for name, child in list(m.named_children()):
            if isinstance(child, ADAPTERS):
                delattr(m, name)
        fwd = m.__dict__.get("forward")
        if isinstance(fwd, partial) and isinstance(getattr(fwd.func, "__self__", None), ADAPTERS):
            del m.forward


def save_language_adapter(model: nn.Module, folder: str | os.PathLike) -> None:
    """Write ``language_adapter.safetensors`` (keys relative to ``model.base_model``) and
    ``language_adapter.json`` (the AdapterConfig and where the adapters sit) into ``folder``."""
    params = _adapter_parameters(model.base_model)
    if not params:
        raise ValueError(f"{type(model).__name__} has no language adapter to save")
    cfg = next(m.config for m in model.modules() if isinstance(m, ADAPTERS))
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    save_file({k: p.detach().cpu().contiguous() for k, p in params.items()}, folder / ADAPTER_FILE)
    outputs = _layer_outputs(model)
    meta = {"config": dataclasses.asdict(cfg), "model_type": getattr(model.config, "model_type", None),
            "hidden_size": outputs[0].dense.out_features, "num_layers": len(outputs),
            "layers": [i for i, o in enumerate(outputs) if hasattr(o, "language_adapter")],
            "parameters": sum(p.numel() for p in params.values())}
    (folder / CONFIG_FILE).write_text(json.dumps(meta, indent=2) + "\n")


def load_language_adapter(model: nn.Module, folder: str | os.PathLike) -> bool:
    """Attach (unless attached) and load the adapter saved in ``folder``; False if it holds none."""
    folder = Path(folder)
    if not (folder / CONFIG_FILE).is_file():
        return False
    if not adapter_parameter_names(model):
        add_language_adapter(model, AdapterConfig.from_dict(json.loads((folder / CONFIG_FILE).read_text())["config"]))
    state = load_file(folder / ADAPTER_FILE)
    expected = set(_adapter_parameters(model.base_model))
    if set(state) != expected:
        raise ValueError(f"{folder / ADAPTER_FILE} does not fit {type(model).__name__}'s adapter: missing "
                         f"{sorted(expected - set(state))[:5]}, unexpected {sorted(set(state) - expected)[:5]}")
    model.base_model.load_state_dict(state, strict=False)  # shapes are checked; the base weights stay
    return True

"""MAD-X adapters (Pfeiffer et al., 2020b) for BERT-style encoders (BERT, RoBERTa, XLM-R): language adapters,
trained jointly with the new embeddings while the rest of the model stays frozen (unks-everywhere §4.3), and
task adapters stacked on them (unks-everywhere §2, §4.1: trained on source-language task data with the model
and the language adapter frozen; at inference the language adapter is swapped for the target's).

- Bottleneck adapter in layer l (unks-everywhere §2, eq. 1): ``A_l(h_l, r_l) = U_l(GeLU(D_l(h_l))) + r_l`` at
  the Pfeiffer position: ``r_l`` is the feed-forward output, ``h_l = LN_l(r_l + x_l)`` the output of the
  layer's own layer norm, and the layer returns ``LN_l(A_l + x_l)`` (the same, frozen, LN).
- Invertible adapter (MAD-X §3): a NICE coupling (Dinh et al., 2015) on the embedding output, its inverse on
  the input of the (tied) output embeddings.
- MAD-X 2.0 (unks-everywhere §4.1): no language adapter in the last layer.
- Task adapter in layer l (MAD-X §3.3): a bottleneck stacked on the language adapter as the ``adapters``
  library's ``Stack(language, task)`` does (:func:`adapter_stack_forward`); by default reduction factor 16, no
  invertible part, every layer (:class:`.settings.TaskAdapter`).

Up-projections start at zero, so attaching an adapter leaves the model's outputs unchanged. Adapters are
submodules (in ``state_dict`` while attached: checkpoints round-trip) that patch the forward of the modules
they sit in (slot names ``language_adapter``, ``invertible_adapter``, ``task_adapter``); stripping them
restores the plain model for ``save_pretrained``. Each kind is saved and loaded separately beside it
(``language_adapter.*``, ``task_adapter.*``), keyed relative to ``model.base_model`` so that a task model
loads what a masked LM trained.

Implemented here because the ``adapters`` library (1.3.0) pins ``transformers~=4.57`` and does not import with
transformers 5 / huggingface_hub 1.x."""

from __future__ import annotations

import json
import os
from functools import partial
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from torch import nn

from .settings import NON_LINEARITIES, AdapterConfig, task_adapter_config

FILES = {kind: (f"{kind}_adapter.safetensors", f"{kind}_adapter.json") for kind in ("language", "task")}
ACTIVATIONS = {"gelu": nn.GELU, "relu": nn.ReLU, "silu": nn.SiLU, "tanh": nn.Tanh}
assert tuple(ACTIVATIONS) == NON_LINEARITIES
SLOTS = {"language": ("language_adapter", "invertible_adapter"), "task": ("task_adapter",)}  # attribute names
LAYER_SLOTS = ("language_adapter", "task_adapter")  # per layer, in stacking order (MAD-X: language then task)


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


def adapter_stack_forward(output: nn.Module, hidden_states: torch.Tensor,
                          input_tensor: torch.Tensor) -> torch.Tensor:
    """``BertOutput.forward`` with the layer's adapters at the Pfeiffer position, stacked (``LAYER_SLOTS``
    order): ``a = r`` (the feed-forward output), then ``a = A(LN(a + x), a)`` per attached adapter, and the
    layer returns ``LN(a + x)``. One adapter: ``LN(A(LN(r + x), r) + x)``; language + task: the ``adapters``
    library's ``Stack``, whose every member takes the previous one's output as input and residual."""
    a = output.dropout(output.dense(hidden_states))
    for slot in LAYER_SLOTS:
        adapter = output._modules.get(slot)
        if adapter is not None:
            a = adapter(output.LayerNorm(a + input_tensor), a)
    return output.LayerNorm(a + input_tensor)


class InvertibleAdapter(nn.Module):
    """NICE coupling: ``y1 = x1 + F(x2)``, ``y2 = x2 + G(y1)`` on the two halves of the last dimension;
    ``inverse=True`` undoes it exactly (up to rounding). F and G are bottlenecks with reduction 2."""

    def __init__(self, dim: int, cfg: AdapterConfig, g: torch.Generator):
        super().__init__()
        self.config, self.split = cfg, dim // 2
        half = cfg.model_copy(update={"reduction_factor": 2})
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
            "language adapters are implemented for BERT-style encoders (base_model.encoder.layer[i].output "
            f"with dense, dropout, LayerNorm: BERT, RoBERTa, XLM-R), not for {type(model).__name__} "
            f"(model_type {getattr(getattr(model, 'config', None), 'model_type', None)!r})")
    return outputs


def _slots(kind: str) -> tuple[str, ...]:
    slots = {**SLOTS, "all": SLOTS["language"] + SLOTS["task"]}
    if kind not in slots:
        raise ValueError(f"adapter kind must be one of {list(slots)}, not {kind!r}")
    return slots[kind]


def _adapter_modules(module: nn.Module, kind: str) -> dict[str, nn.Module]:
    slots = _slots(kind)
    return {name: m for name, m in module.named_modules() if isinstance(m, ADAPTERS)
            and name.rsplit(".", 1)[-1] in slots}


def _adapter_parameters(module: nn.Module, kind: str) -> dict[str, nn.Parameter]:
    return {f"{name}.{p_name}": p for name, m in _adapter_modules(module, kind).items()
            for p_name, p in m.named_parameters()}


def adapter_parameter_names(model: nn.Module, kind: str = "language") -> set[str]:
    """Names (as in ``model.named_parameters()``) of the attached adapters' parameters of ``kind``
    (``language``: language and invertible adapters, ``task``, or ``all``); empty if none."""
    return set(_adapter_parameters(model, kind))


def attached_adapter_config(model: nn.Module, kind: str = "language") -> dict | None:
    """The AdapterConfig (as a dict) of the attached adapter of ``kind``; None if none is attached."""
    modules = _adapter_modules(model, kind)
    return next(iter(modules.values())).config.model_dump() if modules else None


def task_adapter_parameter_names(model: nn.Module) -> set[str]:
    """Names of the attached task adapter's parameters; empty if none."""
    return adapter_parameter_names(model, "task")


def _attach(model: nn.Module, cfg: AdapterConfig, seed: int, kind: str) -> None:
    """Attach the adapters of ``kind`` (seeded; the global RNG, which nn.Linear's default init would draw
    from, is left alone). The model's outputs do not change until they are trained (zero up-projections)."""
    outputs = _layer_outputs(model)
    if adapter_parameter_names(model, kind):
        raise ValueError(f"{type(model).__name__} already has a {kind} adapter")
    g = torch.Generator().manual_seed(seed)
    ref = outputs[0].dense.weight
    with torch.random.fork_rng(devices=[]):
        for output in outputs[: len(outputs) - int(cfg.skip_last_layer)]:
            setattr(output, SLOTS[kind][0], BottleneckAdapter(output.dense.out_features, cfg, g)
                    .to(ref.device, ref.dtype))
            if "forward" not in output.__dict__:
                output.forward = partial(adapter_stack_forward, output)
        if cfg.invertible:
            base, emb_in = model.base_model, model.get_input_embeddings()
            inv = InvertibleAdapter(emb_in.embedding_dim, cfg, g).to(ref.device, ref.dtype)
            base.invertible_adapter = inv
            base.embeddings.forward = partial(inv.embed, base.embeddings)
            decoder = model.get_output_embeddings()  # None for task models: the input side only, as in MAD-X
            if decoder is not None:
                decoder.forward = partial(inv.decode, decoder)


def add_language_adapter(model: nn.Module, cfg: AdapterConfig | None = None, *, seed: int = 0) -> None:
    """Attach a MAD-X language adapter (:func:`_attach`)."""
    _attach(model, cfg or AdapterConfig(), seed, "language")


def add_task_adapter(model: nn.Module, cfg: AdapterConfig | None = None, *, seed: int = 0) -> None:
    """Attach a MAD-X task adapter (default: ``task_adapter_config()``), stacked on any language adapter."""
    cfg = cfg or task_adapter_config()
    if cfg.invertible:
        raise ValueError("task adapter: invertible must be false")
    _attach(model, cfg, seed, "task")


def _strip(model: nn.Module, kind: str) -> None:
    """Remove the adapters of ``kind``, restoring a module's forward where no adapter of its remains (a
    language adapter stays attached when the task adapter is removed, and vice versa)."""
    slots = _slots(kind)
    for m in list(model.modules()):
        for name in slots:
            if isinstance(m._modules.get(name), ADAPTERS):
                delattr(m, name)
    for m in model.modules():
        fwd = m.__dict__.get("forward")
        if not isinstance(fwd, partial):
            continue
        if fwd.func is adapter_stack_forward and not any(s in m._modules for s in LAYER_SLOTS):
            del m.forward
        elif (isinstance(getattr(fwd.func, "__self__", None), InvertibleAdapter)
              and "invertible_adapter" in slots):
            del m.forward


def _save(model: nn.Module, folder: str | os.PathLike, kind: str) -> None:
    """Write ``<kind>_adapter.safetensors`` (keys relative to ``model.base_model``) and
    ``<kind>_adapter.json`` (the AdapterConfig and where the adapters sit) into ``folder``."""
    params = _adapter_parameters(model.base_model, kind)
    if not params:
        raise ValueError(f"{type(model).__name__} has no {kind} adapter to save")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tensors, config = FILES[kind]
    save_file({k: p.detach().cpu().contiguous() for k, p in params.items()}, folder / tensors)
    outputs = _layer_outputs(model)
    meta = {"config": attached_adapter_config(model, kind),
            "model_type": getattr(model.config, "model_type", None),
            "hidden_size": outputs[0].dense.out_features, "num_layers": len(outputs),
            "layers": [i for i, o in enumerate(outputs) if hasattr(o, SLOTS[kind][0])],
            "parameters": sum(p.numel() for p in params.values())}
    (folder / config).write_text(json.dumps(meta, indent=2) + "\n")


def _load(model: nn.Module, folder: str | os.PathLike, kind: str) -> bool:
    """Attach (unless attached) and load the ``kind`` adapter saved in ``folder``; False if it holds none."""
    folder = Path(folder)
    tensors, config = FILES[kind]
    if not (folder / config).is_file():
        return False
    if not adapter_parameter_names(model, kind):
        saved = AdapterConfig.parse(json.loads((folder / config).read_text())["config"])
        (add_language_adapter if kind == "language" else add_task_adapter)(model, saved)
    state = load_file(folder / tensors)
    expected = set(_adapter_parameters(model.base_model, kind))
    if set(state) != expected:
        raise ValueError(f"{folder / tensors} does not fit {type(model).__name__}'s {kind} adapter: missing "
                         f"{sorted(expected - set(state))[:5]}, unexpected "
                         f"{sorted(set(state) - expected)[:5]}")
    model.base_model.load_state_dict(state, strict=False)  # shapes are checked; the base weights stay
    return True


strip_language_adapter = partial(_strip, kind="language")
strip_task_adapter = partial(_strip, kind="task")
save_language_adapter = partial(_save, kind="language")
save_task_adapter = partial(_save, kind="task")
load_language_adapter = partial(_load, kind="language")
load_task_adapter = partial(_load, kind="task")

"""The trainers' settings as typed dataclasses, without the trainers: checking a config's ``lapt``, ``finetune`` and
adapter settings (``vocab_transfer.workflow.config``, at parse time) imports neither torch nor the training code.

:class:`LaptConfig` (:mod:`.lapt`), :class:`FinetuneConfig` and the task metrics (:mod:`.finetune`, :mod:`.zeroshot`),
:class:`AdapterConfig` (:mod:`.adapters`).
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field

from ..data.tasks import MRPC_LABELS, PAWSX_LABELS
from ..typed import ModelError, check_value

NON_LINEARITIES = ("gelu", "relu", "silu", "tanh")  # adapters.ACTIVATIONS implements them
ZERO_SHOT_VARIANTS = ("adapter", "fmt", "full")  # how zeroshot trains the source side (zeroshot.VARIANTS)
UNSEEN_LABELS = ("error", "wrong")  # zero-shot test labels the source task lacks: stop, or count as errors


def _from_dict(cls, d: dict, what: str):
    """``cls(**d)``, naming the keys of ``d`` that are not fields of the dataclass ``cls`` and the values that do not
    have their field's type (``lr: "5e-5"`` is a string to YAML: it needs a dot, ``5.0e-5``)."""
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = set(d) - names
    if unknown:
        raise ValueError(f"{what}: unknown key(s) {sorted(unknown)}; known: {sorted(names)}")
    hints = typing.get_type_hints(cls)
    for key, value in d.items():
        try:
            check_value(hints[key], value, key)
        except ModelError:
            raise ValueError(f"{what}: {key} must be {_type_name(hints[key])}, not {value!r}") from None
    return cls(**d)


def _type_name(hint) -> str:
    return str(hint).replace("typing.", "") if typing.get_origin(hint) else getattr(hint, "__name__", str(hint))

# MAD-X task adapters: AdapterHub's Pfeiffer configuration (reduction factor 16), in every layer, no invertible
# part (that belongs to the language); the non-linearity stays eq. 1's GeLU. unks-everywhere is silent on them.
TASK_ADAPTER_DEFAULTS = {"reduction_factor": 16, "invertible": False, "skip_last_layer": False}


@dataclass
class AdapterConfig:
    reduction_factor: int = 2  # hidden size / bottleneck size (MAD-X language adapters: 2)
    non_linearity: str = "gelu"  # eq. 1
    invertible: bool = True  # MAD-X invertible adapter (its coupling functions also use reduction 2)
    skip_last_layer: bool = True  # MAD-X 2.0: no adapter in the last layer
    init_scale: float = 0.02  # std of the down-projections; up-projections start at zero (identity)

    def __post_init__(self) -> None:
        if self.non_linearity not in NON_LINEARITIES:
            raise ValueError(f"adapter: non_linearity must be one of {list(NON_LINEARITIES)}, not {self.non_linearity!r}")
        if self.reduction_factor < 1 or self.init_scale < 0:
            raise ValueError(f"adapter: reduction_factor must be >= 1 and init_scale >= 0, not {self}")

    @classmethod
    def from_dict(cls, d: dict) -> AdapterConfig:
        return _from_dict(cls, d, "adapter")


def task_adapter_config(d: dict | None = None) -> AdapterConfig:
    """A task adapter's AdapterConfig: ``TASK_ADAPTER_DEFAULTS`` overridden by ``d``; an invertible part is refused
    (MAD-X's invertible adapter is language-specific and sits in the language adapter)."""
    cfg = AdapterConfig.from_dict({**TASK_ADAPTER_DEFAULTS, **(d or {})})
    if cfg.invertible:
        raise ValueError("task adapter: invertible must be false (MAD-X's invertible adapter belongs to the language "
                         "adapter)")
    return cfg


VARIANTS = ("full", "two_stage", "embeddings_only", "embedding_layers", "freeze_body", "adapter")
REINIT = ("none", "embedding_layers", "all")  # what LaptConfig.reinit re-initializes (reinitialize)
PRECISIONS = ("auto", "bf16", "fp16", "fp32", "bf16_pure")  # runtime.autocast_factory, runtime.param_dtype
PACKINGS = ("stream", "documents")  # how LAPT blocks are packed (lapt.document_positions)


@dataclass
class LaptConfig:
    objective: str = "auto"  # auto: from the model (clm for decoders, WECHSEL's GPT-2; mlm otherwise) | mlm | clm
    steps: int = 1000  # optimizer steps of the main stage
    batch_size: int = 128  # sequences per optimizer step, over all devices (kept when GPUs change)
    micro_batch_size: int | None = None  # sequences per device and forward pass (None: all of a device's share)
    seq_len: int = 256
    long_steps: int = 0  # the run's last long_steps optimizer steps use long_seq_len blocks (vocab-swap: 10k at 512)
    long_seq_len: int | None = None
    long_batch_size: int | None = None  # sequences per step in the long phase (default batch_size; vocab-swap: 48)
    long_micro_batch_size: int | None = None  # per device and forward pass in the long phase (default: the tokens of
                                              # a short-phase micro batch, micro_batch_size * seq_len // long_seq_len)
    lr: float = 5e-5
    warmup_ratio: float = 0.1
    schedule: str = "constant"  # after warmup: constant (FOCUS) | linear decay to 0 (WECHSEL)
    betas: list[float] = field(default_factory=lambda: [0.9, 0.999])
    eps: float = 1e-8
    weight_decay: float = 0.0
    clip_norm: float = 1.0
    mask_prob: float = 0.15
    precision: str = "auto"  # auto (bf16 on GPUs that have it, else fp16 + scaler; fp32 on CPU) | bf16 | fp16 | fp32
                             # | bf16_pure (weights, gradients and AdamW states in bf16, no autocast; LAPT only)
    packing: str = "stream"  # stream: blocks cut from the concatenated documents | documents: no attention across
                             # documents in a block, positions restart at each (causal LMs)
    distributed: str = "ddp"  # ddp: every process holds the model | fsdp: parameters, gradients and optimizer
                              # states sharded over the processes (FSDP2 fully_shard, one unit per layer)
    eval_every: int = 100  # steps between held-out evaluations
    eval_sequences: int = 64
    checkpoint_every: int = 100
    keep_checkpoints: int = 2
    variant: str = "full"  # full | two_stage | embeddings_only | embedding_layers | freeze_body | adapter
    reinit: str = "none"  # none | embedding_layers | all: re-initialized before training (REINIT)
    adapter: dict = field(default_factory=dict)  # variant adapter: AdapterConfig fields (default MAD-X 2.0)
    train_embeddings: bool = True  # variant adapter: train the embeddings with the adapters (false: adapters only)
    embedding_stage_ratio: float = 0.2
    factorized: bool = False  # UNKs MF rows: train the init artifact's factors F' (and Z, G), not F'G (§3.3)
    freeze_up_projection: bool = False  # factorized: G stays fixed ("G only needs to be pretrained once", §3.3)
    seed: int = 0
    threads: int | None = None  # CPU threads (None: torch's default)
    snapshot_steps: list[int] = field(default_factory=list)  # global steps whose model is kept (vocab-swap Figs 4/8)
    token_accuracy_top: int = 0  # per-token held-out accuracy of the N most frequent tokens (Figure 6); 0: off
    gradient_checkpointing: bool = False  # recompute layer activations in the backward pass (large models, memory)
    compile: bool = False  # torch.compile each transformer layer (GPU speed; see runtime.compile_layers)
    train_sequences: int | None = None  # train on the first N sequences of the corpus only (UNKs Figure 3); None: all

    def __post_init__(self) -> None:
        allowed = {"objective": ("auto", "mlm", "clm"), "schedule": ("constant", "linear"),
                   "precision": PRECISIONS, "packing": PACKINGS, "distributed": ("ddp", "fsdp"),
                   "variant": VARIANTS, "reinit": REINIT}
        for key, values in allowed.items():
            if getattr(self, key) not in values:
                raise ValueError(f"LAPT config: {key} must be one of {list(values)}, not {getattr(self, key)!r}")
        AdapterConfig.from_dict(self.adapter)
        if not 0 <= self.warmup_ratio <= 1:
            raise ValueError(f"LAPT config: warmup_ratio must be in [0, 1] (the share of a stage's steps that warm "
                             f"up), not {self.warmup_ratio!r}")
        for key in ("steps", "batch_size", "seq_len", "eval_every", "eval_sequences", "checkpoint_every"):
            if not getattr(self, key) > 0:
                raise ValueError(f"LAPT config: {key} must be a positive integer, not {getattr(self, key)!r}")
        total = self.total_steps()
        bad = [s for s in self.snapshot_steps if not isinstance(s, int) or isinstance(s, bool) or not 0 <= s <= total]
        if bad or len(set(self.snapshot_steps)) != len(self.snapshot_steps):
            raise ValueError(f"LAPT config: snapshot_steps must be distinct optimizer steps in 0..{total} (the run's "
                             f"global steps; 0: the model before training), not {self.snapshot_steps}")
        if not isinstance(self.long_steps, int) or not 0 <= self.long_steps <= total:
            raise ValueError(f"LAPT config: long_steps must be an integer in 0..{total} (the run's last steps), "
                             f"not {self.long_steps!r}")
        if self.long_steps and not (isinstance(self.long_seq_len, int) and self.long_seq_len > 0):
            raise ValueError(f"LAPT config: long_steps {self.long_steps} needs long_seq_len (the phase's block length), "
                             f"not {self.long_seq_len!r}")
        if self.train_sequences is not None and not (isinstance(self.train_sequences, int)
                                                     and not isinstance(self.train_sequences, bool)
                                                     and self.train_sequences > 0):
            raise ValueError(f"LAPT config: train_sequences must be a positive int (sequences of the training corpus), "
                             f"not {self.train_sequences!r}")
        if not isinstance(self.token_accuracy_top, int) or self.token_accuracy_top < 0:
            raise ValueError(f"LAPT config: token_accuracy_top must be an integer >= 0, not {self.token_accuracy_top!r}")
        if self.distributed == "fsdp" and (self.variant == "adapter" or self.factorized):
            raise ValueError("LAPT config: distributed: fsdp shards plain models; variant adapter and factorized "
                             "embeddings train with distributed: ddp")
        if not self.train_embeddings and self.variant != "adapter":
            raise ValueError(f"LAPT config: train_embeddings: false applies to variant 'adapter' (MAD-X language "
                             f"adapters for the source's own vocabulary), not {self.variant!r}")

    @classmethod
    def from_dict(cls, d: dict) -> LaptConfig:
        return _from_dict(cls, d, "LAPT config")

    def stages(self) -> list[tuple[int, str]]:
        """(steps, trainable) per stage: trainable is ``embeddings``, ``embedding_layers``, ``adapter`` (and
        embeddings), ``adapter_only`` or ``all`` (see ``set_trainable``)."""
        k = round(self.embedding_stage_ratio * self.steps)
        return {"full": [(self.steps, "all")],
                "two_stage": [(k, "embeddings"), (self.steps, "all")],
                "embeddings_only": [(self.steps, "embeddings")],
                "embedding_layers": [(self.steps, "embedding_layers")],
                "freeze_body": [(k, "embeddings"), (self.steps - k, "all")],
                "adapter": [(self.steps, "adapter" if self.train_embeddings else "adapter_only")]}[self.variant]

    def total_steps(self) -> int:
        return sum(n for n, _ in self.stages())

    def long_start(self) -> int:
        """The last global step before the long phase (the run's total steps without one)."""
        return self.total_steps() - self.long_steps

    def is_long(self, step: int) -> bool:
        """Whether global optimizer step ``step`` (1-based; an evaluation after it) is in the long phase."""
        return self.long_steps > 0 and step > self.long_start()

    def phase_batch(self, step: int) -> tuple[int, int | None]:
        """(batch_size, micro_batch_size) of global step ``step``."""
        if self.is_long(step):  # default micro batch: as many tokens per forward pass as in the short phase
            micro = self.long_micro_batch_size or (self.micro_batch_size and max(
                1, self.micro_batch_size * self.seq_len // self.long_seq_len))
            return self.long_batch_size or self.batch_size, micro
        return self.batch_size, self.micro_batch_size

    def samples_at(self, step: int) -> int:
        """Sequences seen after ``step`` global steps (the long phase's steps count its batch size)."""
        long = max(0, step - self.long_start()) if self.long_steps else 0
        return (step - long) * self.batch_size + long * (self.long_batch_size or self.batch_size)

    def eval_steps(self) -> list[int]:
        """The global steps at which the held-out loss is recorded: each stage's start, every ``eval_every`` steps
        of the stage, its end (a two-stage boundary appears once here, twice in the curve), and the last step
        before a long phase (``long_steps``: the short blocks' loss where the phase switches)."""
        steps, first = set(), 0
        for n, _ in self.stages():
            steps |= {first, first + n} | set(range(first + self.eval_every, first + n, self.eval_every))
            first += n
        if self.long_steps:
            steps.add(self.long_start())
        return sorted(steps)


METRICS = {"ner": "f1", "pos": "accuracy", "dep": "las", "nli": "accuracy", "sts": "pearson", "qa": "f1"}
# What each task type reports (the first is its default selection metric, METRICS); nli's f1 needs a positive class.
TASK_METRICS = {"ner": ("f1", "precision", "recall"), "pos": ("accuracy",), "dep": ("las", "uas"),
                "nli": ("accuracy", "f1"), "sts": ("pearson", "spearman"), "qa": ("f1", "exact_match")}


@dataclass
class FinetuneConfig:
    epochs: float = 3.0
    lr: float = 2e-5
    warmup_ratio: float = 0.1
    batch_size: int = 32
    micro_batch_size: int | None = None  # sequences per forward pass (None: the whole batch)
    seq_len: int = 256
    doc_stride: int = 128  # QA: tokens shared by consecutive windows of a long context
    max_answer_tokens: int = 30  # QA: longest predicted span
    betas: list[float] = field(default_factory=lambda: [0.9, 0.999])
    eps: float = 1e-8
    weight_decay: float = 0.0
    clip_norm: float = 1.0
    eval_fraction: float = 0.05  # evaluate on dev every 5% of the training steps (FOCUS Table 6)
    eval_batch_size: int = 64
    group_by_length: bool = False  # batches of similar length (less padding; HF Trainer's option)
    precision: str = "auto"
    threads: int | None = None
    save_model: bool = False  # keep the selected model (save_pretrained) next to the scores
    train_language_adapter: bool = False  # MAD-X keeps a LAPT language adapter fixed during task training
    arc_mlp_size: int = 500  # dep: width of the arc MLPs (Dozat & Manning 2017, Table 2)
    label_mlp_size: int = 100  # dep: width of the relation MLPs (ibid.)
    mlp_dropout: float = 0.33  # dep: dropout on the MLP outputs (ibid.)
    metric: str | None = None  # dev selection and table metric (None: the task's, METRICS); one of TASK_METRICS
    positive_label: str | None = None  # nli f1: the positive class (None: the 2nd of two labels, MRPC's equivalent)

    def __post_init__(self) -> None:
        if not 0 <= self.warmup_ratio <= 1:
            raise ValueError(f"fine-tuning config: warmup_ratio must be in [0, 1] (the share of the steps that warm "
                             f"up), not {self.warmup_ratio!r}")
        if not 0 < self.eval_fraction <= 1:
            raise ValueError(f"fine-tuning config: eval_fraction must be in (0, 1] (the share of the steps between "
                             f"dev evaluations), not {self.eval_fraction!r}")
        for key in ("epochs", "batch_size", "seq_len", "eval_batch_size"):
            if not getattr(self, key) > 0:
                raise ValueError(f"fine-tuning config: {key} must be positive, not {getattr(self, key)!r}")

    @classmethod
    def from_dict(cls, d: dict) -> FinetuneConfig:
        return _from_dict(cls, d, "fine-tuning config")


def selection_metric(task: str, cfg: FinetuneConfig, labels: list[str] | None = None) -> str:
    """The metric that selects the checkpoint (and that tables show): ``cfg.metric`` or the task's default.

    ValueError naming the choices if the task does not report it; for ``nli`` with ``f1`` (binary F1 of the
    positive class, GLUE MRPC), also if ``labels`` (when given) have no positive class: ``positive_label`` not
    among them, or more than two labels and no ``positive_label``."""
    metric = cfg.metric or METRICS[task]
    if metric not in TASK_METRICS[task]:
        raise ValueError(f"fine-tuning config: metric {metric!r} is not reported for task {task!r}; choose one of "
                         f"{list(TASK_METRICS[task])}")
    if cfg.positive_label is not None and task != "nli":
        raise ValueError(f"fine-tuning config: positive_label applies to task nli (binary F1), not {task!r}")
    if labels is not None and task == "nli" and metric == "f1":
        positive_class(labels, cfg.positive_label)
    return metric


def positive_class(labels: list[str], positive_label: str | None) -> str:
    """The positive class of binary F1: ``positive_label``, else the hub's label 1 of a known binary inventory
    (MRPC's equivalent, PAWS-X's paraphrase), whatever the order of ``labels``; any other label pair needs an
    explicit ``positive_label`` (an order-dependent guess would silently score the other class)."""
    if positive_label is not None:
        if positive_label not in labels:
            raise ValueError(f"positive_label {positive_label!r} is not one of the labels {labels}")
        return positive_label
    for inventory in (MRPC_LABELS, PAWSX_LABELS):
        if sorted(labels) == sorted(inventory):
            return inventory[1]
    raise ValueError(f"binary F1 needs a positive_label for the labels {labels} (known pairs: {list(MRPC_LABELS)}, "
                     f"{list(PAWSX_LABELS)})")

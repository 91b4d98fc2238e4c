"""The trainers' settings as typed dataclasses, without the trainers: checking a config's ``lapt``, ``finetune`` and
adapter settings (``vocab_transfer.workflow.config``, at parse time) imports neither torch nor the training code.

:class:`LaptConfig` (:mod:`.lapt`), :class:`FinetuneConfig` and the task metrics (:mod:`.finetune`, :mod:`.zeroshot`),
:class:`AdapterConfig` (:mod:`.adapters`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar, Literal

from ..data.tasks import MRPC_LABELS, PAWSX_LABELS
from ..typed import ModelError, Seed, check_value, default, type_hints

NON_LINEARITIES = ("gelu", "relu", "silu", "tanh")  # adapters.ACTIVATIONS implements them
ZERO_SHOT_VARIANTS = ("adapter", "fmt", "full")  # how zeroshot trains the source side (zeroshot.VARIANTS)
UNSEEN_LABELS = ("error", "wrong")  # zero-shot test labels the source task lacks: stop, or count as errors


def _from_dict(cls, d: dict, what: str):
    """``cls(**d)``, naming the keys of ``d`` that are not fields of the dataclass ``cls``; the values are checked by
    the class's ``__post_init__`` (:func:`check_fields`)."""
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = set(d) - names
    if unknown:
        raise ValueError(f"{what}: unknown key(s) {sorted(unknown)}; known: {sorted(names)}")
    return cls(**d)


def check_fields(settings, what: str) -> None:
    """Every field of the dataclass ``settings`` fits its type and the bounds in its metadata (one check for a dict
    from a config and for settings built in code: each bound is written once, on its field), or ValueError naming
    ``what`` and the key (``LAPT config: lr: nan is not a finite number``; a string where a number belongs: YAML
    reads ``5e-5`` without a dot as one, write ``5.0e-5``)."""
    hints = type_hints(type(settings), True)
    for f in dataclasses.fields(settings):
        value = getattr(settings, f.name)
        try:
            check_value(hints[f.name], value, f.name, f.metadata)
        except ModelError as e:
            raise ValueError(f"{what}: {e}{_number_hint(value)}") from None


def _number_hint(value) -> str:
    """A hint for a number that arrived as a string (YAML 1.1 reads ``5e-5``, without a dot, as one)."""
    try:
        float(value) if isinstance(value, str) else None
    except ValueError:
        return ""
    return " (YAML reads a number without a dot as a string: write 5.0e-5)" if isinstance(value, str) else ""


# MAD-X task adapters: AdapterHub's Pfeiffer configuration (reduction factor 16), in every layer, no invertible
# part (that belongs to the language); the non-linearity stays eq. 1's GeLU. unks-everywhere is silent on them.
TASK_ADAPTER_DEFAULTS = {"reduction_factor": 16, "invertible": False, "skip_last_layer": False}


@dataclass
class AdapterConfig:
    """A MAD-X adapter (vocab_transfer.training.adapters); as ``lapt.training.adapter``: a language adapter, whose
    defaults are MAD-X 2.0's."""

    FILL: ClassVar[bool] = True  # a LAPT adapter's keys are filled in (vocab_transfer.workflow.schema)

    reduction_factor: int = default(2, ge=1, doc=(
        "hidden size / adapter bottleneck size (MAD-X language adapters: 2)"))
    non_linearity: Literal[NON_LINEARITIES] = default("gelu", doc=(  # type: ignore[valid-type]
        "activation between down- and up-projection (UNKs Everywhere eq. 1: GeLU)"))
    invertible: bool = default(True, doc=(
        "MAD-X invertible adapter: NICE coupling on the embedding output, inverse before the LM head"))
    skip_last_layer: bool = default(True, doc=(
        "MAD-X 2.0: no adapter in the last layer (UNKs Everywhere §4.1)"))
    init_scale: float = default(0.02, ge=0, doc=(
        "std of the down-projections at init; up-projections start at zero (model unchanged)"))

    def __post_init__(self) -> None:
        check_fields(self, "adapter")

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
    """Language-adaptive pretraining (vocab_transfer.training.lapt): the keys of ``lapt.training`` and of each
    ``lapt.runs`` entry (whose keys replace ``lapt.training``'s)."""

    objective: Literal["auto", "mlm", "clm"] = default("auto", doc=(
        "auto: from the model (clm for decoders, WECHSEL's GPT-2; mlm otherwise) | mlm | clm"))
    steps: int = default(1000, ge=1, doc="optimizer steps of the main stage")
    batch_size: int = default(128, ge=1, doc=(
        "sequences per optimizer step, over all devices (kept when GPUs change)"))
    micro_batch_size: int | None = default(None, ge=1, doc=(
        "sequences per device and forward pass (null: all of a device's share)"))
    seq_len: int = default(256, ge=8, doc="tokens per packed block incl. special tokens")
    long_steps: int = default(0, ge=0, doc=(
        "the run's last long_steps optimizer steps train on blocks of long_seq_len tokens (BERT's schedule "
        "in vocab-swap §3.1/§3.3: the last 10k steps at 512)"))
    long_seq_len: int | None = default(None, ge=8, doc="block length of the long phase (vocab-swap: 512)")
    long_batch_size: int | None = default(None, ge=1, doc=(
        "sequences per step in the long phase (default batch_size; vocab-swap App. A.1: 48 at 512 tokens, "
        "256 at 128)"))
    long_micro_batch_size: int | None = default(None, ge=1, doc=(
        "per device and forward pass in the long phase (default micro_batch_size)"))
    lr: float = default(5e-5, gt=0, doc="peak learning rate (AdamW)")
    warmup_ratio: float = default(0.1, ge=0, le=1, doc="share of each stage's steps with a linear warmup")
    schedule: Literal["constant", "linear"] = default("constant", doc="after warmup: constant (FOCUS) | linear decay to 0 (WECHSEL)")
    betas: list[float] = default([0.9, 0.999], min_items=2, max_items=2, items={"ge": 0, "lt": 1}, doc="AdamW betas")
    eps: float = default(1e-8, gt=0, doc="AdamW epsilon")
    weight_decay: float = default(0.0, ge=0, doc="AdamW weight decay")
    clip_norm: float = default(1.0, gt=0, doc="gradient norm clipping")
    mask_prob: float = default(0.15, gt=0, lt=1, doc="share of tokens masked (masked LMs)")
    precision: Literal[PRECISIONS] = default("auto", doc=(  # type: ignore[valid-type]
        "auto = bf16 autocast "
        "on GPUs that have it, else fp16 with a gradient scaler, fp32 on the CPU; bf16 / fp16 = mixed "
        "precision (fp32 weights, gradients and AdamW states); fp32; bf16_pure = weights, gradients and "
        "AdamW states in bf16, no autocast, the saved model in bf16 (half the memory of mixed precision; "
        "updates below bf16's resolution are lost)"))
    packing: Literal[PACKINGS] = default("stream", doc=(  # type: ignore[valid-type]
        "stream = blocks cut from the concatenated documents, attention across "
        "them; documents = the same blocks, but each token attends only to its own document and positions "
        "restart at each (from the token shard's document index; causal LMs)"))
    distributed: Literal["ddp", "fsdp"] = default("ddp", doc=(
        "with several processes: ddp = a full replica per GPU; fsdp = parameters, "
        "gradients and optimizer states sharded over the GPUs (FSDP2, one unit per transformer layer; "
        "checkpoints and the output hold the full model)"))
    eval_every: int = default(100, ge=1, doc="steps between held-out evaluations")
    eval_sequences: int = default(64, ge=1, doc="held-out blocks per evaluation")
    checkpoint_every: int = default(100, ge=1, doc=(
        "optimizer steps between checkpoints (a killed or timed-out job resumes from the last)"))
    keep_checkpoints: int = default(2, ge=1, doc="checkpoints kept on disk")
    variant: Literal[VARIANTS] = default("full", doc=(  # type: ignore[valid-type]
        "what is trained: full"
        " (all), two_stage (embeddings first, FOCUS §3.1), embeddings_only (word embeddings and output bias:"
        " vocab-swap 'Word Embed Only'), embedding_layers (the whole embedding block: word, position, "
        "token-type embeddings, LayerNorm, and the output bias: vocab-swap 'Embed Grad' / 'Embed Layers', "
        "§2.2), freeze_body (WECHSEL §5.4.2), adapter (MAD-X language adapters and the embeddings, the rest "
        "frozen: UNKs Everywhere §4.3)"))
    reinit: Literal[REINIT] = default("none", doc=(  # type: ignore[valid-type]
        "re-initialize with "
        "the model's own initializer before training (seeded): embedding_layers = position, token-type "
        "embeddings and embedding LayerNorm (vocab-swap 'Embed Layers', Figure 2); all = every weight but "
        "the init method's word embeddings and output bias (vocab-swap 'Scratch', §3.1)"))
    adapter: dict = default({}, settings=AdapterConfig, doc=(
        "variant adapter: vocab_transfer.training.settings.AdapterConfig (defaults: MAD-X 2.0 language "
        "adapter)"))
    train_embeddings: bool = default(True, doc=(
        "variant adapter: train the embeddings with the adapters; false: the adapters only, MAD-X with the "
        "source's own vocabulary (UNKs Everywhere §4.1)"))
    embedding_stage_ratio: float = default(0.2, ge=0, le=1, doc=(
        "variants two_stage and freeze_body: the share of the steps that trains the embeddings only"))
    factorized: bool = default(False, doc=(
        "train a kind: mf "
        "init in factorized form: F' (and G, cluster logits Z) instead of the flat F'G (UNKs Everywhere "
        "§3.3); the output also holds the trained factors"))
    freeze_up_projection: bool = default(False, doc=(
        "factorized: keep the up-projections G fixed (UNKs §3.3: G only needs to"
        " be pretrained once)"))
    seed: Seed = default(0, doc="seed of the masks, the data order and re-initialization")
    threads: int | None = default(None, ge=1, doc="CPU threads (null: torch's default)")
    snapshot_steps: list[int] = default([], fill=True, unique=True, items={"ge": 0}, doc=(
        "global optimizer steps at which the model is kept (save_pretrained + tokenizer) in the run's folder "
        "under snapshots/step-XXXXXXXX/, e.g. to fine-tune at points of the run"
        " (vocab-swap Figures 4/8; finetune.models entries with `steps`); 0 = the model as training starts, "
        "after `reinit` (WECHSEL Table 1's FullRand Score@0)"))
    token_accuracy_top: int = default(0, fill=True, ge=0, doc=(
        "at every evaluation, record the held-out MLM accuracy of each of the N most frequent non-special "
        "tokens of the training corpus in results/lapt/.../token_accuracy.parquet (vocab-swap Figure 6: "
        "1000); 0: off"))
    gradient_checkpointing: bool = default(False, doc=(
        "recompute layer activations in the backward pass (large models, memory)"))
    compile: bool = default(False, doc=(
        "torch.compile each transformer layer (GPU speed; see runtime.compile_layers)"))
    train_sequences: int | None = default(None, ge=1, doc=(
        "train on the first N sequences of the corpus only (UNKs Figure 3); None: all"))

    def __post_init__(self) -> None:
        check_fields(self, "LAPT config")
        AdapterConfig.from_dict(self.adapter)
        total = self.total_steps()
        if any(s > total for s in self.snapshot_steps):
            raise ValueError(f"LAPT config: snapshot_steps must be distinct optimizer steps in 0..{total} (the run's "
                             f"global steps; 0: the model before training), not {self.snapshot_steps}")
        if self.long_steps > total:
            raise ValueError(f"LAPT config: long_steps must be an integer in 0..{total} (the run's last steps), "
                             f"not {self.long_steps!r}")
        if self.long_steps and self.long_seq_len is None:
            raise ValueError(f"LAPT config: long_steps {self.long_steps} needs long_seq_len (the phase's block length)")
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
    """Fine-tuning and zero-shot source-task training (vocab_transfer.training.finetune, .zeroshot): the keys of
    ``finetune.training``, a task's ``training`` (over them), and the zero-shot sections' ``training``."""

    epochs: float = default(3.0, gt=0, doc="passes over the training split")
    lr: float = default(2e-5, gt=0, doc="peak learning rate (AdamW)")
    warmup_ratio: float = default(0.1, ge=0, le=1, doc="share of the steps with a linear warmup (then linear decay)")
    batch_size: int = default(32, ge=1, doc="sequences (or sentence pairs) per optimizer step")
    micro_batch_size: int | None = default(None, ge=1, doc="sequences per forward pass (null: the whole batch)")
    seq_len: int = default(256, ge=8, doc="tokens per sequence")
    doc_stride: int = default(128, ge=1, doc="QA: tokens shared by consecutive windows of a long context")
    max_answer_tokens: int = default(30, ge=1, doc="QA: longest predicted span")
    betas: list[float] = default([0.9, 0.999], min_items=2, max_items=2, items={"ge": 0, "lt": 1}, doc="AdamW betas")
    eps: float = default(1e-8, gt=0, doc="AdamW epsilon")
    weight_decay: float = default(0.0, ge=0, doc="AdamW weight decay")
    clip_norm: float = default(1.0, gt=0, doc="gradient norm clipping")
    eval_fraction: float = default(0.05, gt=0, le=1, doc="evaluate on dev every 5% of the training steps (FOCUS Table 6)")
    eval_batch_size: int = default(64, ge=1, doc="sequences per forward pass in dev and test evaluation")
    group_by_length: bool = default(False, doc=(
        "batches of similar length (less padding; HF Trainer's option)"))
    precision: Literal[PRECISIONS[:4]] = default("auto", doc=(  # type: ignore[valid-type]  (bf16_pure: LAPT only)
        "auto (bf16 on GPUs that have it, else fp16 with a gradient scaler; fp32 on the CPU), bf16, fp16 or "
        "fp32"))
    threads: int | None = default(None, ge=1, doc="CPU threads (null: torch's default)")
    save_model: bool = default(False, doc="keep the selected model (save_pretrained) next to the scores")
    train_language_adapter: bool = default(False, doc=(
        "MAD-X keeps a LAPT language adapter fixed during task training"))
    arc_mlp_size: int = default(500, ge=1, doc="dep: width of the arc MLPs (Dozat & Manning 2017, Table 2)")
    label_mlp_size: int = default(100, ge=1, doc="dep: width of the relation MLPs (ibid.)")
    mlp_dropout: float = default(0.33, ge=0, lt=1, doc="dep: dropout on the MLP outputs (ibid.)")
    metric: str | None = default(None, doc=(
        "dev selection and table metric (null: the task's); one of TASK_METRICS"))
    positive_label: str | None = default(None, doc=(
        "nli f1: the positive class (None: the 2nd of two labels, MRPC's equivalent)"))

    def __post_init__(self) -> None:
        check_fields(self, "fine-tuning config")

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

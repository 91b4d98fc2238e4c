"""The trainers' settings as typed sections of the config model, without the trainers: checking a config's
``lapt``, ``finetune`` and adapter settings (``vocab_transfer.workflow.config``, at parse time) imports
neither torch nor the training code, and the trainers parse their params into the same classes.

:class:`LaptConfig` (:mod:`.lapt`; ``lapt.training`` and each ``lapt.runs`` entry hold :class:`LaptSettings`),
:class:`FinetuneConfig` and the task metrics (:mod:`.finetune`, :mod:`.zeroshot`), :class:`AdapterConfig` and
:class:`TaskAdapter` (:mod:`.adapters`)."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from ..data.tasks import MRPC_LABELS, PAWSX_LABELS
from ..tracking import DEFAULT_REPORT_TO, ReportTo
from ..typed import ModelError, Number, Section, Seed, UniqueList

NON_LINEARITIES = ("gelu", "relu", "silu", "tanh")  # adapters.ACTIVATIONS implements them
ZERO_SHOT_VARIANTS = ("adapter", "fmt", "full")  # how zeroshot trains the source side (zeroshot.VARIANTS)
UNSEEN_LABELS = ("error", "wrong")  # zero-shot test labels the source task lacks: stop, or count as errors
ReductionFactor = Annotated[int, Field(ge=1)]  # hidden size / adapter bottleneck size
Betas = Annotated[list[Annotated[Number, Field(ge=0, lt=1)]], Field(min_length=2, max_length=2)]  # AdamW's


REPORT_TO_DOC = ("live training curves while it runs: tensorboard (event files in the run's results folder, "
                 "`tensorboard --logdir results`), wandb (Weights & Biases; WANDB_MODE=offline without "
                 "internet), both, or [] (none); the DAG's figures come from the artifacts either way")


class AdapterConfig(Section):
    """A MAD-X adapter (vocab_transfer.training.adapters); as ``lapt.training.adapter``: a language adapter,
    whose defaults are MAD-X 2.0's."""

    FILL: ClassVar[bool] = True  # a LAPT adapter's keys are filled in (vocab_transfer.workflow.schema)
    WHERE: ClassVar[str] = "adapter"

    reduction_factor: ReductionFactor = Field(2, description=(
        "hidden size / adapter bottleneck size (MAD-X language adapters: 2)"))
    non_linearity: Literal[NON_LINEARITIES] = Field("gelu", description=(  # type: ignore[valid-type]
        "activation between down- and up-projection (UNKs Everywhere eq. 1: GeLU)"))
    invertible: bool = Field(True, description=(
        "MAD-X invertible adapter: NICE coupling on the embedding output, inverse before the LM head"))
    skip_last_layer: bool = Field(True, description=(
        "MAD-X 2.0: no adapter in the last layer (UNKs Everywhere §4.1)"))
    init_scale: Number = Field(0.02, ge=0, description=(
        "std of the down-projections at init; up-projections start at zero (model unchanged)"))


class TaskAdapter(AdapterConfig):
    """``zero_shot.setups.<name>.adapter``: a MAD-X task adapter, AdapterHub's Pfeiffer configuration
    (reduction factor 16) in every layer, without the invertible part (MAD-X's invertible adapter is
    language-specific and sits in the language adapter); the non-linearity stays eq. 1's GeLU."""

    WHERE: ClassVar[str] = "task adapter"

    reduction_factor: ReductionFactor = Field(16, description=(
        "hidden size / bottleneck (AdapterHub's Pfeiffer task adapters: 16)"))
    invertible: bool = Field(False, description=(
        "task adapters have no invertible part (the language adapter's): false"))
    skip_last_layer: bool = Field(False, description="true: no task adapter in the last layer")

    def check(self, where: str) -> None:
        if self.invertible:
            raise ModelError(f"{where}.invertible: must be false (MAD-X's invertible adapter belongs to the "
                             "language adapter)")


def task_adapter_config(d: dict | None = None) -> TaskAdapter:
    """A task adapter's settings: :class:`TaskAdapter`'s defaults overridden by ``d``."""
    return TaskAdapter.parse(d or {})


VARIANTS = ("full", "two_stage", "embeddings_only", "embedding_layers", "freeze_body", "adapter")
REINIT = ("none", "embedding_layers", "all")  # what LaptConfig.reinit re-initializes (reinitialize)
PRECISIONS = ("auto", "bf16", "fp16", "fp32", "bf16_pure")  # runtime.autocast_factory, runtime.param_dtype
PACKINGS = ("stream", "documents")  # how LAPT blocks are packed (lapt.document_positions)


class TrainerSettings:
    """What the settings of a trainer (LAPT, fine-tuning, zero-shot) do besides holding its keys: come from
    the trainer's command line, and build its optimizer from ``lr``, ``betas``, ``eps``, ``weight_decay``."""

    @classmethod
    def from_cli(cls, args):
        """The start of a trainer's CLI: logging to stderr and ``args.log``, then the settings ``args.config``
        gives (JSON, or ``@file.json``) and their thread count."""
        import json
        from pathlib import Path

        import torch

        from .runtime import setup_logging

        setup_logging(args.log)
        text = args.config
        cfg = cls.parse(json.loads(Path(text[1:]).read_text() if text.startswith("@") else text))
        if cfg.threads:
            torch.set_num_threads(cfg.threads)
        return cfg

    def adamw(self, params, device=None):
        """AdamW over ``params`` with these settings; the fused CUDA kernel on a GPU ``device``."""
        import torch

        return torch.optim.AdamW(params, lr=self.lr, betas=tuple(self.betas), eps=self.eps,
                                 weight_decay=self.weight_decay,
                                 fused=device is not None and device.type == "cuda")


class LaptSettings(TrainerSettings, Section):
    """The keys of ``lapt.training`` and of each ``lapt.runs`` entry (whose keys replace ``lapt.training``'s),
    each checked against its type and bounds; :class:`LaptConfig` holds them merged, with the rules between
    them."""

    FILL: ClassVar[tuple[str, ...]] = ("snapshot_steps", "token_accuracy_top")
    WHERE: ClassVar[str] = "lapt.training"

    objective: Literal["auto", "mlm", "clm"] = Field("auto", description=(
        "auto: from the model (clm for decoders, WECHSEL's GPT-2; mlm otherwise) | mlm | clm"))
    steps: int = Field(1000, ge=1, description="optimizer steps of the main stage")
    batch_size: int = Field(128, ge=1, description=(
        "sequences per optimizer step, over all devices (kept when GPUs change)"))
    micro_batch_size: int | None = Field(None, ge=1, description=(
        "sequences per device and forward pass (null: all of a device's share)"))
    seq_len: int = Field(256, ge=8, description="tokens per packed block incl. special tokens")
    long_steps: int = Field(0, ge=0, description=(
        "the run's last long_steps optimizer steps train on blocks of long_seq_len tokens (BERT's schedule "
        "in vocab-swap §3.1/§3.3: the last 10k steps at 512)"))
    long_seq_len: int | None = Field(None, ge=8, description=(
        "block length of the long phase (vocab-swap: 512)"))
    long_batch_size: int | None = Field(None, ge=1, description=(
        "sequences per step in the long phase (default batch_size; vocab-swap App. A.1: 48 at 512 tokens, "
        "256 at 128)"))
    long_micro_batch_size: int | None = Field(None, ge=1, description=(
        "per device and forward pass in the long phase (default micro_batch_size)"))
    lr: Number = Field(5e-5, gt=0, description="peak learning rate (AdamW)")
    warmup_ratio: Number = Field(0.1, ge=0, le=1, description=(
        "share of each stage's steps with a linear warmup"))
    schedule: Literal["constant", "linear"] = Field("constant", description=(
        "after warmup: constant (FOCUS) | linear decay to 0 (WECHSEL)"))
    betas: Betas = Field([0.9, 0.999], description="AdamW betas")
    eps: Number = Field(1e-8, gt=0, description="AdamW epsilon")
    weight_decay: Number = Field(0.0, ge=0, description="AdamW weight decay")
    clip_norm: Number = Field(1.0, gt=0, description="gradient norm clipping")
    mask_prob: Number = Field(0.15, gt=0, lt=1, description="share of tokens masked (masked LMs)")
    precision: Literal[PRECISIONS] = Field("auto", description=(  # type: ignore[valid-type]
        "auto = bf16 autocast on GPUs that have it, else fp16 with a gradient scaler, fp32 on the CPU; bf16 "
        "/ fp16 = mixed precision (fp32 weights, gradients and AdamW states); fp32; bf16_pure = weights, "
        "gradients and AdamW states in bf16, no autocast, the saved model in bf16 (half the memory of mixed "
        "precision; updates below bf16's resolution are lost)"))
    packing: Literal[PACKINGS] = Field("stream", description=(  # type: ignore[valid-type]
        "stream = blocks cut from the concatenated documents, attention across "
        "them; documents = the same blocks, but each token attends only to its own document and positions "
        "restart at each (from the token shard's document index; causal LMs)"))
    distributed: Literal["ddp", "fsdp"] = Field("ddp", description=(
        "with several processes: ddp = a full replica per GPU; fsdp = parameters, "
        "gradients and optimizer states sharded over the GPUs (FSDP2, one unit per transformer layer; "
        "checkpoints and the output hold the full model)"))
    eval_every: int = Field(100, ge=1, description="steps between held-out evaluations")
    eval_sequences: int = Field(64, ge=1, description="held-out blocks per evaluation")
    checkpoint_every: int = Field(100, ge=1, description=(
        "optimizer steps between checkpoints (a killed or timed-out job resumes from the last)"))
    keep_checkpoints: int = Field(2, ge=1, description="checkpoints kept on disk")
    min_step_seconds: Number = Field(0, ge=0, description=(
        "the least time an optimizer step takes: a faster step is followed by a pause (0: none). The tensors "
        "do not depend on it; a rehearsal's interrupted job (rehearsal.interrupt.min_seconds) is paced so "
        "that its work outlasts its time limit on any machine"))
    variant: Literal[VARIANTS] = Field("full", description=(  # type: ignore[valid-type]
        "what is trained: full (all), two_stage (embeddings first, FOCUS §3.1), embeddings_only (word "
        "embeddings and output bias: vocab-swap 'Word Embed Only'), embedding_layers (the whole embedding "
        "block: word, position, token-type embeddings, LayerNorm, and the output bias: vocab-swap 'Embed "
        "Grad' / 'Embed Layers', §2.2), freeze_body (WECHSEL §5.4.2), adapter (MAD-X language adapters and "
        "the embeddings, the rest frozen: UNKs Everywhere §4.3)"))
    reinit: Literal[REINIT] = Field("none", description=(  # type: ignore[valid-type]
        "re-initialize with the model's own initializer before training (seeded): embedding_layers = "
        "position, token-type embeddings and embedding LayerNorm (vocab-swap 'Embed Layers', Figure 2); all "
        "= every weight but the init method's word embeddings and output bias (vocab-swap 'Scratch', §3.1)"))
    adapter: AdapterConfig = Field(default_factory=AdapterConfig, description=(
        "variant adapter: vocab_transfer.training.settings.AdapterConfig (defaults: MAD-X 2.0 language "
        "adapter)"))
    train_embeddings: bool = Field(True, description=(
        "variant adapter: train the embeddings with the adapters; false: the adapters only, MAD-X with the "
        "source's own vocabulary (UNKs Everywhere §4.1)"))
    embedding_stage_ratio: Number = Field(0.2, ge=0, le=1, description=(
        "variants two_stage and freeze_body: the share of the steps that trains the embeddings only"))
    factorized: bool = Field(False, description=(
        "train a kind: mf init in factorized form: F' (and G, cluster logits Z) instead of the flat F'G "
        "(UNKs Everywhere §3.3); the output also holds the trained factors"))
    freeze_up_projection: bool = Field(False, description=(
        "factorized: keep the up-projections G fixed (UNKs §3.3: G only needs to be pretrained once)"))
    seed: Seed = Field(0, description="seed of the masks, the data order and re-initialization")
    threads: int | None = Field(None, ge=1, description="CPU threads (null: torch's default)")
    snapshot_steps: UniqueList[Annotated[int, Field(ge=0)]] = Field(default_factory=list, description=(
        "global optimizer steps at which the model is kept (save_pretrained + tokenizer) in the run's folder "
        "under snapshots/step-XXXXXXXX/, e.g. to fine-tune at points of the run"
        " (vocab-swap Figures 4/8; finetune.models entries with `steps`); 0 = the model as training starts, "
        "after `reinit` (WECHSEL Table 1's FullRand Score@0)"))
    token_accuracy_top: int = Field(0, ge=0, description=(
        "at every evaluation, record the held-out MLM accuracy of each of the N most frequent non-special "
        "tokens of the training corpus in results/lapt/.../token_accuracy.parquet (vocab-swap Figure 6: "
        "1000); 0: off"))
    gradient_checkpointing: bool = Field(False, description=(
        "recompute layer activations in the backward pass (large models, memory)"))
    compile: bool = Field(False, description=(
        "torch.compile each transformer layer (GPU speed; see runtime.compile_layers)"))
    train_sequences: int | None = Field(None, ge=1, description=(
        "train on the first N sequences of the corpus only (UNKs Figure 3); None: all"))
    report_to: ReportTo = Field(list(DEFAULT_REPORT_TO), description=REPORT_TO_DOC)


class LaptConfig(LaptSettings):
    """Language-adaptive pretraining (vocab_transfer.training.lapt): a run's settings, ``lapt.training``'s
    keys with the run's own over them, and the rules between the keys."""

    WHERE: ClassVar[str] = "lapt"

    def check(self, where: str) -> None:
        total = self.total_steps()
        if any(s > total for s in self.snapshot_steps):
            raise ModelError(f"{where}.snapshot_steps: must be distinct optimizer steps in 0..{total} (the "
                             f"run's global steps; 0: the model before training), not {self.snapshot_steps}")
        if self.long_steps > total:
            raise ModelError(f"{where}.long_steps: must be an integer in 0..{total} (the run's last steps), "
                             f"not {self.long_steps!r}")
        if self.long_steps and self.long_seq_len is None:
            raise ModelError(f"{where}.long_steps: {self.long_steps} needs long_seq_len (the phase's block "
                             "length)")
        if self.distributed == "fsdp" and (self.variant == "adapter" or self.factorized):
            raise ModelError(f"{where}.distributed: fsdp shards plain models; variant adapter and factorized "
                             "embeddings train with distributed: ddp")
        if not self.train_embeddings and self.variant != "adapter":
            raise ModelError(f"{where}.train_embeddings: false applies to variant 'adapter' (MAD-X language "
                             f"adapters for the source's own vocabulary), not {self.variant!r}")

    def stages(self) -> list[tuple[int, str]]:
        """(steps, trainable) per stage: trainable is ``embeddings``, ``embedding_layers``, ``adapter`` (and
        embeddings), ``adapter_only`` or ``all`` (see ``set_trainable``)."""
        k = round(self.embedding_stage_ratio * self.steps)
        return {"full": [(self.steps, "all")],
                "two_stage": [(k, "embeddings"), (self.steps, "all")],
                "embeddings_only": [(self.steps, "embeddings")],
                "embedding_layers": [(self.steps, "embedding_layers")],
                "freeze_body": [(k, "embeddings"), (self.steps - k, "all")],
                "adapter": [(self.steps,
                             "adapter" if self.train_embeddings else "adapter_only")]}[self.variant]

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
        """The global steps at which the held-out loss is recorded: each stage's start, every ``eval_every``
        steps of the stage, its end (a two-stage boundary appears once here, twice in the curve), and the last
        step before a long phase (``long_steps``: the short blocks' loss where the phase switches)."""
        steps, first = set(), 0
        for n, _ in self.stages():
            steps |= {first, first + n} | set(range(first + self.eval_every, first + n, self.eval_every))
            first += n
        if self.long_steps:
            steps.add(self.long_start())
        return sorted(steps)


#: What each task type reports; nli's f1 needs a positive class.
TASK_METRICS = {"ner": ("f1", "precision", "recall"), "pos": ("accuracy",), "dep": ("las", "uas"),
                "nli": ("accuracy", "f1"), "sts": ("pearson", "spearman"), "qa": ("f1", "exact_match")}
#: Each task type's default selection (and table) metric: the first it reports.
METRICS = {task: metrics[0] for task, metrics in TASK_METRICS.items()}


class FinetuneConfig(TrainerSettings, Section):
    """Fine-tuning and zero-shot source-task training (vocab_transfer.training.finetune, .zeroshot): the keys
    of ``finetune.training``, a task's ``training`` (over them), and the zero-shot sections' ``training``."""

    WHERE: ClassVar[str] = "finetune.training"

    epochs: Number = Field(3.0, gt=0, description="passes over the training split")
    lr: Number = Field(2e-5, gt=0, description="peak learning rate (AdamW)")
    warmup_ratio: Number = Field(0.1, ge=0, le=1, description=(
        "share of the steps with a linear warmup (then linear decay)"))
    batch_size: int = Field(32, ge=1, description="sequences (or sentence pairs) per optimizer step")
    micro_batch_size: int | None = Field(None, ge=1, description=(
        "sequences per forward pass (null: the whole batch)"))
    seq_len: int = Field(256, ge=8, description="tokens per sequence")
    doc_stride: int = Field(128, ge=1, description=(
        "QA: tokens shared by consecutive windows of a long context"))
    max_answer_tokens: int = Field(30, ge=1, description="QA: longest predicted span")
    betas: Betas = Field([0.9, 0.999], description="AdamW betas")
    eps: Number = Field(1e-8, gt=0, description="AdamW epsilon")
    weight_decay: Number = Field(0.0, ge=0, description="AdamW weight decay")
    clip_norm: Number = Field(1.0, gt=0, description="gradient norm clipping")
    eval_fraction: Number = Field(0.05, gt=0, le=1, description=(
        "evaluate on dev every 5% of the training steps (FOCUS Table 6)"))
    eval_batch_size: int = Field(64, ge=1, description=(
        "sequences per forward pass in dev and test evaluation"))
    group_by_length: bool = Field(False, description=(
        "batches of similar length (less padding; HF Trainer's option)"))
    # bf16_pure: LAPT only
    precision: Literal[PRECISIONS[:4]] = Field("auto", description=(  # type: ignore[valid-type]
        "auto (bf16 on GPUs that have it, else fp16 with a gradient scaler; fp32 on the CPU), bf16, fp16 or "
        "fp32"))
    threads: int | None = Field(None, ge=1, description="CPU threads (null: torch's default)")
    report_to: ReportTo = Field(list(DEFAULT_REPORT_TO), description=REPORT_TO_DOC)
    save_model: bool = Field(False, description=(
        "keep the selected model (save_pretrained) next to the scores"))
    train_language_adapter: bool = Field(False, description=(
        "MAD-X keeps a LAPT language adapter fixed during task training"))
    arc_mlp_size: int = Field(500, ge=1, description=(
        "dep: width of the arc MLPs (Dozat & Manning 2017, Table 2)"))
    label_mlp_size: int = Field(100, ge=1, description="dep: width of the relation MLPs (ibid.)")
    mlp_dropout: Number = Field(0.33, ge=0, lt=1, description="dep: dropout on the MLP outputs (ibid.)")
    metric: str | None = Field(None, description=(
        "dev selection and table metric (null: the task's); one of TASK_METRICS"))
    positive_label: str | None = Field(None, description=(
        "nli f1: the positive class (None: the 2nd of two labels, MRPC's equivalent)"))


def selection_metric(task: str, cfg: FinetuneConfig, labels: list[str] | None = None) -> str:
    """The metric that selects the checkpoint (and that tables show): ``cfg.metric`` or the task's default.

    ValueError naming the choices if the task does not report it; for ``nli`` with ``f1`` (binary F1 of the
    positive class, GLUE MRPC), also if ``labels`` (when given) have no positive class: ``positive_label`` not
    among them, or more than two labels and no ``positive_label``."""
    metric = cfg.metric or METRICS[task]
    if metric not in TASK_METRICS[task]:
        raise ValueError(f"fine-tuning config: metric {metric!r} is not reported for task {task!r}; choose "
                         f"one of {list(TASK_METRICS[task])}")
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
    raise ValueError(f"binary F1 needs a positive_label for the labels {labels} (known pairs: "
                     f"{list(MRPC_LABELS)}, {list(PAWSX_LABELS)})")

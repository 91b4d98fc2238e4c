"""Zero-shot cross-lingual transfer (unks-everywhere §2, §4.1-4.3, App. A.1; docs/training.md): a task is
trained once on source-language data with the source model's own vocabulary, then evaluated on a target
language's test set with the target's embeddings (and language adapter) swapped in. A resumable CLI (CPU or a
GPU), two commands:

    python -m vocab_transfer.training.zeroshot train --model results/lapt/mbert/en/madx2/model --task ner \\
        --data results/tasks/en-ner --seed 1 --variant adapter --output results/source_task/.../seed1.model \\
        --scores results/source_task/.../seed1.parquet
    python -m vocab_transfer.training.zeroshot evaluate --target results/lapt/mbert/am/el_lex/model \\
        --task ner --data results/tasks/am-ner \\
        --from en-ner 1 results/source_task/.../seed1.model .../seed1.parquet \\
        --from en-ner 2 results/source_task/.../seed2.model .../seed2.parquet \\
        --output results/zeroshot/mbert/am-ner/el-lex.parquet

Training variants (``--variant``, ``VARIANTS``): ``adapter`` (MAD-X, §2, §4.1): a task adapter in every layer,
stacked on the source-language adapter of ``--model`` (a LAPT output of variant ``adapter``), trained with the
task head, the rest frozen; zero-shot, the target's LAPT output (its embeddings and language adapter on the
same frozen transformer) gets the task adapter and head (§4.3). ``fmt`` (full model transfer, App. A.1, after
Artetxe et al. 2020): the transformer and the head train with the embedding layer frozen; zero-shot, the
target's word embeddings (LAPT variant ``embeddings_only``) replace the source's. ``full`` (§4.1's "mBERT"
row): everything trains; zero-shot, the same model on the target's test set with the source's tokenizer.

``train`` is ``vocab_transfer.training.finetune.finetune`` (selection on the source-language dev set,
resumable). ``evaluate`` scores one target under every source-side training given (``--from <source task>
<seed> <trained> <scores>``, repeated, or ``--trainings <list.json>``): the target and its test split are read
once and each training swapped in, reseeded, so every row (one per seed and source task, in the order given,
with the source's dev and test scores) is what evaluating that training alone gives;
``vocab_transfer.report.tables`` averages a cell over seeds and source languages (Table 3). Mismatches stop
the job naming them: the target's transformer (per-parameter fingerprints, ``body_fingerprint``), tokenizer
size, language adapter settings, task type, and target labels the source side never saw (unless
``--unseen-labels wrong``, which scores them as errors)."""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import time
from pathlib import Path

import pandas as pd
import torch
from safetensors.torch import load_file, save_file

from ..artifacts import input_records, recorded_reads
from ..data.tasks import check_columns
from ..data.tokenizer import load_tokenizer
from ..io import atomic_path, remove_tree, write_parquet
from ..memory import keep_freed_memory
from ..source_model import check_tokenizer_matches
from . import adapters
from .finetune import (
    BiaffineParser,
    dataset_labels,
    evaluate,
    finetune,
    fit_to_model,
    load_task_model,
    read_task_data,
    task_encoder,
    task_labels,
)
from .runtime import Progress, autocast_factory
from .settings import METRICS, UNSEEN_LABELS, ZERO_SHOT_VARIANTS, FinetuneConfig

log = logging.getLogger(__name__)
VARIANTS, UNSEEN = ZERO_SHOT_VARIANTS, UNSEEN_LABELS
META_FILE, HEAD_FILE = "zero_shot.json", "task_head.safetensors"


# ------------------------------------------------------------------------------------------ model parts
def adapter_host(model) -> torch.nn.Module:
    """The module the adapters attach to: a ``BiaffineParser``'s encoder, else the (HF) task model itself."""
    return model.encoder if isinstance(model, BiaffineParser) else model


def head_state_dict(model) -> dict[str, torch.Tensor]:
    """The task head: every tensor outside the transformer (HF: ``classifier.*``; parser: MLPs, biaffines)."""
    if isinstance(model, BiaffineParser):
        return model.head_state_dict()
    prefix = model.base_model_prefix + "."
    return {k: v for k, v in model.state_dict().items() if not k.startswith(prefix)}


def body_fingerprint(model) -> dict[str, str]:
    """Per transformer parameter but the word embeddings and adapters, the first 16 hex digits of its bytes'
    sha256: what LAPT of variant ``adapter`` / ``embeddings_only`` leaves untouched, so a target fits a
    source-side training only if its fingerprint is the one that training started from."""
    base = adapter_host(model).base_model
    skip, emb = adapters.adapter_parameter_names(base, "all"), base.get_input_embeddings().weight
    return {name: hashlib.sha256(p.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes())
            .hexdigest()[:16] for name, p in base.named_parameters() if name not in skip and p is not emb}


def prepare_source_model(model, variant: str, task_adapter: dict | None = None, *, seed: int) -> int:
    """Set what the source-side training updates (``VARIANTS``); with ``adapter``, first attach the task
    adapter (``adapters.task_adapter_config(task_adapter)``, seeded); returns how many parameters train."""
    if variant not in VARIANTS:
        raise ValueError(f"zero-shot variant must be one of {list(VARIANTS)}, not {variant!r}")
    if task_adapter and variant != "adapter":
        raise ValueError(f"task adapter settings {task_adapter} apply to variant adapter, not {variant!r}")
    host = adapter_host(model)
    has_language = bool(adapters.adapter_parameter_names(host))
    frozen: set[int] = set()  # full: everything trains
    if variant == "adapter":  # the task adapter and the head train
        if not has_language:
            raise ValueError("variant adapter stacks the task adapter on the source-language adapter, but "
                             "the model has none: give the output of a LAPT run of variant adapter on the "
                             "source language (MAD-X, unks-everywhere §4.1)")
        adapters.add_task_adapter(host, adapters.task_adapter_config(task_adapter), seed=seed)
        task = adapters.task_adapter_parameter_names(host)
        frozen = {id(p) for p in host.base_model.parameters()} - {id(p) for n, p in host.named_parameters()
                                                                  if n in task}
    elif has_language:
        raise ValueError(f"variant {variant} trains no language adapter, but the model has one (a LAPT "
                         "output of variant adapter): give the source model itself")
    elif variant == "fmt":  # App. A.1: the embedding layer stays frozen
        frozen = {id(p) for p in host.base_model.embeddings.parameters()}
    for p in model.parameters():
        p.requires_grad_(id(p) not in frozen)
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def save_source_task(model, tokenizer, folder: str | Path, meta: dict) -> None:
    """Write the source-side training atomically: ``zero_shot.json`` (``meta``: task, variant, labels, the
    transformer's starting fingerprint, the language adapter's settings), the tokenizer, and the task adapter
    (``task_adapter.*``) and ``task_head.safetensors`` (variant ``adapter``) or the whole task model."""
    with atomic_path(folder, directory=True) as tmp:
        if meta["variant"] == "adapter":
            adapters.save_task_adapter(adapter_host(model), tmp)
            save_file({k: v.detach().cpu().contiguous()
                       for k, v in head_state_dict(model).items()}, tmp / HEAD_FILE)
        else:
            model.save_pretrained(tmp)
        tokenizer.save_pretrained(str(tmp))
        (tmp / META_FILE).write_text(json.dumps(meta, ensure_ascii=False, indent=1) + "\n")


def read_source_task(folder: str | Path) -> dict:
    path = Path(folder) / META_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{folder}: no {META_FILE} (not written by `python -m "
                                "vocab_transfer.training.zeroshot train`)")
    return json.loads(path.read_text())


class ZeroShotTarget:
    """The target side of zero-shot evaluations (a LAPT output, or the source model), read once for any number
    of source-side trainings: its task model (one per label set, the latest kept), the transformer's
    fingerprint, the language adapter's settings and (variant ``full``) its vocabulary."""

    def __init__(self, target: str | Path, task: str):
        self.target, self.task = str(target), task
        self._key = self._model = self._body = self._adapter = self._vocab = None

    def task_model(self, labels: list[str], sizes: dict):
        """The target's task model for ``labels`` (and parser ``sizes``), built once per label set."""
        key = json.dumps([list(labels), sizes], sort_keys=True)
        if key != self._key:
            self._key, self._model = None, None  # free the previous one first
            self._model = load_task_model(self.task, self.target, labels, **sizes)
            self._key = key
            if self._body is None:  # the heads differ per label set, the transformer does not
                self._body = body_fingerprint(self._model)
                self._adapter = adapters.attached_adapter_config(adapter_host(self._model))
        return self._model

    def model(self, trained: str | Path):
        """The task model of a source-side training (``trained``) with the target's embeddings and language
        adapter (the module docstring has each variant); ``adapter`` reuses the target's task model, its
        earlier task adapter removed and every head tensor overwritten, so no earlier call shows. ValueError
        for a task, transformer, adapter or vocabulary mismatch."""
        meta, task, target = read_source_task(trained), self.task, self.target
        if meta["task"] != task:
            raise ValueError(f"{trained} was trained for task {meta['task']!r}, not {task!r}")
        labels, sizes = meta["labels"], meta.get("parser") or {}
        target_model = self.task_model(labels, sizes)
        found, expected = self._body, meta["body"]
        if found != expected:
            differ = sorted(n for n in set(found) | set(expected) if found.get(n) != expected.get(n))
            raise ValueError(f"the transformer of {target} is not the one {trained} was trained on: "
                             f"{len(differ)} of {len(expected)} parameters differ ({', '.join(differ[:3])}"
                             f"{', ...' if len(differ) > 3 else ''}). Zero-shot transfer swaps embeddings "
                             "(and language adapters) on a shared frozen transformer: the target's LAPT run "
                             "must be of variant adapter or embeddings_only and start from the same source")
        theirs, ours = self._adapter, meta["language_adapter"]
        if meta["variant"] == "adapter":
            if theirs is None:
                raise ValueError(f"{target} has no language adapter, but {trained} trained a task adapter "
                                 "stacked on one (MAD-X): the target's LAPT run must be of variant adapter")
            if theirs != ours:
                differ = {k: (ours.get(k), theirs.get(k)) for k in set(ours) | set(theirs)
                          if ours.get(k) != theirs.get(k)}
                raise ValueError(f"the language adapter of {target} differs from the source-side one of "
                                 f"{trained} in (source, target) {differ}: train both LAPT runs with the "
                                 "same adapter settings (e.g. both MAD-X 2.0: skip_last_layer true)")
            host = adapter_host(target_model)
            if adapters.task_adapter_parameter_names(host):
                adapters.strip_task_adapter(host)  # an earlier training's; this one's is attached anew
            adapters.load_task_adapter(host, trained)
            head = load_file(Path(trained) / HEAD_FILE)
            if set(head) != set(head_state_dict(target_model)):
                raise ValueError(f"{Path(trained) / HEAD_FILE} does not fit the {task} head: "
                                 f"keys {sorted(head)[:5]}")
            target_model.load_state_dict(head, strict=False)
            return target_model
        if theirs is not None:
            raise ValueError(f"{target} has a language adapter, but variant {meta['variant']} trains without "
                             "one: the target must come from a LAPT run of variant embeddings_only (fmt) "
                             "or be the source (full)")
        model = load_task_model(task, str(trained), labels, **sizes)
        if meta["variant"] == "fmt":  # App. A.1: the target's matrix replaces the (frozen) source embeddings
            rows = adapter_host(target_model).get_input_embeddings().weight.detach()
            host = adapter_host(model)
            host.resize_token_embeddings(rows.shape[0], mean_resizing=False)
            with torch.no_grad():
                host.get_input_embeddings().weight.copy_(rows)
        else:  # full: the source's own vocabulary, trained embeddings kept
            ours_vocab = load_tokenizer(str(trained)).get_vocab()
            theirs_vocab = self._vocab = self._vocab or load_tokenizer(self.target).get_vocab()  # read once
            if ours_vocab != theirs_vocab:
                raise ValueError("variant full keeps the source's trained embeddings, so the target must use "
                                 f"the source's tokenizer; {target}'s vocabulary ({len(theirs_vocab)} "
                                 f"tokens) differs from the one of {trained} ({len(ours_vocab)} tokens)")
            rows = adapter_host(model).get_input_embeddings().weight.shape[0]
            check_tokenizer_matches(len(theirs_vocab), rows, name=str(trained))
        return model


def load_zero_shot_model(trained: str | Path, target: str, task: str):
    """:meth:`ZeroShotTarget.model` with the target read afresh (the class reads it once for many)."""
    return ZeroShotTarget(target, task).model(trained)


# ------------------------------------------------------------------------------------------ evaluation
def unseen_labels(task: str, df: pd.DataFrame, labels: list[str]) -> list[str]:
    """Labels of ``df`` outside ``labels`` (the source-side model's label set)."""
    if task == "qa":
        return []
    return sorted(set(task_labels(task, {"train": df})) - set(labels))  # the labels found in df


def evaluate_zero_shot(model, tokenizer, task: str, test: pd.DataFrame,
                       labels: list[str], cfg: FinetuneConfig, *, unseen: str = "error",
                       encoded: dict | None = None) -> dict[str, float]:
    """Test scores of ``model`` on the target's ``test`` split (``finetune.evaluate``'s metrics); a target
    label the model cannot predict stops the job (``unseen="error"``) or counts as an error (``"wrong"``).
    ``encoded``: a dict keeping the encoded split between calls (keyed by what the encoding depends on)."""
    if unseen not in UNSEEN:
        raise ValueError(f"unseen labels: one of {list(UNSEEN)}, not {unseen!r}")
    extra = unseen_labels(task, test, labels)
    if extra and unseen == "error":
        raise ValueError(f"label set mismatch: the target test set has label(s) {extra} that the source "
                         f"task's model was not trained on (its labels: {labels}); set `unseen_labels: "
                         "wrong` on the zero-shot task to score them as errors")
    if extra:
        log.warning("target labels %s are not in the source label set: scored as errors", extra)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    autocast, _ = autocast_factory(cfg.precision, device)
    cfg = fit_to_model(cfg, model)
    model.to(device)
    labels = labels + extra  # the unseen ones scored as errors
    key = json.dumps([labels, cfg.seq_len, cfg.doc_stride, getattr(model.config, "type_vocab_size", 1) > 1])
    encoded = {} if encoded is None else encoded
    if key not in encoded:
        encoded[key] = task_encoder(task, tokenizer, labels, cfg, model)(test, False)
    return evaluate(model, task, encoded[key], test, labels, cfg, tokenizer.pad_token_id, device, autocast)


# ------------------------------------------------------------------------------------------------ CLI
def train_main(args) -> None:
    cfg = FinetuneConfig.from_cli(args)
    if cfg.train_language_adapter:
        raise ValueError("zero-shot transfer swaps the language adapter at inference, so the source-side one "
                         "stays fixed: train_language_adapter must be false")
    reads = input_records({"model": args.model, "tokenizer": args.tokenizer, "data": args.data})
    data = read_task_data(args.data, args.task)
    labels = dataset_labels(args.task, data, args.data)
    tokenizer = load_tokenizer(args.tokenizer or args.model)
    torch.manual_seed(args.seed)  # the new task head
    model = load_task_model(args.task, args.model, labels, arc_mlp_size=cfg.arc_mlp_size,
                            label_mlp_size=cfg.label_mlp_size, mlp_dropout=cfg.mlp_dropout)
    host = adapter_host(model)
    check_tokenizer_matches(len(tokenizer), host.get_input_embeddings().weight.shape[0], name=args.model)
    meta = {"task": args.task, "variant": args.variant, "labels": labels, "body": body_fingerprint(model),
            "language_adapter": adapters.attached_adapter_config(host), "vocab_size": len(tokenizer),
            "parser": model.sizes if isinstance(model, BiaffineParser) else None,
            "source_model": str(args.model)}
    n = prepare_source_model(model, args.variant, json.loads(args.adapter), seed=args.seed)
    log.info("variant %s: %d of %d parameters train", args.variant, n,
             sum(p.numel() for p in model.parameters()))
    checkpoints = args.checkpoints or f"{args.output}.checkpoints"
    scores, history = finetune(model, tokenizer, args.task, data, labels, cfg, seed=args.seed,
                               checkpoint_dir=checkpoints)
    meta["task_adapter"] = adapters.attached_adapter_config(host, "task")
    row = {**json.loads(args.meta), "task": args.task, "seed": args.seed, "variant": args.variant,
           "trainable_parameters": n, **scores, "n_train": len(data["train"]), "n_dev": len(data["dev"]),
           "n_test": len(data["test"])}
    with recorded_reads(reads, evaluated="model"):
        write_parquet(history, args.history or str(Path(args.scores).with_suffix("")) + ".history.parquet")
        save_source_task(model, tokenizer, args.output, meta)
        write_parquet(pd.DataFrame([row]), args.scores)
    remove_tree(checkpoints)  # whole or gone if killed meanwhile


def parse_sources(sources: list[list[str]]) -> list[tuple[int, str, str, str]]:
    """``--from NAME SEED TRAINED SCORES`` entries as (seed, name, trained, scores); ValueError for a seed
    that is not an integer or a (seed, source task) given twice."""
    out = []
    for name, seed, trained, scores in sources:
        try:
            n = int(seed)
        except ValueError:
            raise ValueError(f"--from {name} {seed} ...: the seed must be an integer, not {seed!r}") from None
        if any(o[:2] == (n, name) for o in out):
            raise ValueError(f"--from {name} {n} is given twice")
        out.append((n, name, trained, scores))
    return out


def read_trainings(path: str) -> list[list[str]]:
    """The ``--trainings`` list as ``--from`` entries; ValueError naming the file and an incomplete entry."""
    entries = json.loads(Path(path).read_text())
    if not isinstance(entries, list) or not entries:
        raise ValueError(f"--trainings {path}: expected a non-empty JSON list of source-side trainings")
    out = []
    for i, t in enumerate(entries):
        missing = [k for k in ("source_task", "seed", "trained", "scores")
                   if not isinstance(t, dict) or k not in t]
        if missing:
            raise ValueError(f"--trainings {path}: entry {i} lacks {', '.join(missing)}")
        out.append([t["source_task"], str(t["seed"]), t["trained"], t["scores"]])
    return out


def evaluate_main(args) -> None:
    cfg = FinetuneConfig.from_cli(args)
    sources = parse_sources(args.sources or read_trainings(args.trainings))
    path = Path(args.data) / "test.parquet"
    if not path.is_file():
        raise FileNotFoundError(f"{args.data}: no test.parquet (rule prepare_task)")
    # the target is what the scores are of; each source-side training (its folder) a shared reference
    reads = input_records({"target": args.target, "tokenizer": args.tokenizer, "data": args.data,
                           "trainings": args.trainings,
                           **{f"trained:{name}:{seed}": trained for seed, name, trained, _ in sources}})
    test = pd.read_parquet(path)
    check_columns(args.task, test)
    tokenizer = load_tokenizer(args.tokenizer or args.target)
    target, encoded, meta = ZeroShotTarget(args.target, args.task), {}, json.loads(args.meta)
    metas = [read_source_task(trained) for _, _, trained, _ in sources]  # all trainings exist before any runs
    # trainings with the same label set next to each other, so the target's task model is built once per set
    first: dict[str, int] = {}
    keys = [first.setdefault(json.dumps([m["labels"], m.get("parser")], sort_keys=True), i)
            for i, m in enumerate(metas)]
    order = sorted(range(len(sources)), key=lambda i: keys[i])
    rows: list[dict | None] = [None] * len(sources)
    progress = Progress(0, len(sources), unit="evaluations")
    log.info("zero-shot %s (%s): %d evaluations (seeds %s x source tasks %s), %d test sentences", args.target,
             args.task, len(sources), sorted({n for n, *_ in sources}),
             list(dict.fromkeys(s for _, s, *_ in sources)), len(test))
    for done, i in enumerate(order, start=1):
        seed, name, trained, scores_path = sources[i]
        t0 = time.time()
        torch.manual_seed(seed)  # as a job of this seed alone: no earlier evaluation's RNG use carries over
        model = target.model(trained)
        check_tokenizer_matches(len(tokenizer), adapter_host(model).get_input_embeddings().weight.shape[0],
                                name=args.target)
        labels = metas[i]["labels"]
        scores = evaluate_zero_shot(model, tokenizer, args.task, test, labels, cfg, unseen=args.unseen_labels,
                                    encoded=encoded)
        del model  # fmt, full: the trained model, freed before the next is loaded
        src = pd.read_parquet(scores_path).iloc[0].to_dict()
        metric = src["metric"]
        rows[i] = {**meta, "task": args.task, "seed": seed, "zero_shot": True, "source_task": name,
                   "source_language": src.get("source_language"), "setup": src.get("setup"),
                   **{k: src[k] for k in ("variant", "metric", "selected_step", "steps")},
                   **{k: v for k, v in src.items() if k.startswith("dev_")},
                   **{f"source_{k}": v for k, v in src.items() if k.startswith("test_")},
                   **{f"test_{k}": v for k, v in scores.items()},
                   "n_train": src["n_train"], "n_dev": src["n_dev"], "n_test": len(test)}
        log.info("zero-shot %d/%d: %s seed %d -> %s (%s): test %s %.4f (source test %.4f), %d sentences in "
                 "%.1f s; %s", done, len(sources), name, seed, args.target, src["variant"], metric,
                 scores[metric], src[f"test_{metric}"], len(test), time.time() - t0, progress(done))
    with recorded_reads(reads, evaluated="target"):
        write_parquet(pd.DataFrame(rows), args.output)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train",
                       help="task training on source-language data (once per source task, variant, seed)")
    add = t.add_argument
    add("--model", required=True,
        help="source-side model: LAPT output with a language adapter (adapter), else the source model")
    add("--tokenizer", help="tokenizer folder (default: the model folder)")
    add("--variant", required=True, choices=VARIANTS)
    add("--adapter", default="{}", help="variant adapter: task adapter settings (AdapterConfig JSON)")
    add("--output", required=True, help="folder: task adapter + head (adapter) or task model, zero_shot.json")
    add("--scores", required=True, help="source dev/test scores parquet (one row)")
    add("--history", help="dev curve parquet (default: <scores stem>.history.parquet)")
    add("--checkpoints", help="checkpoint folder (default: <output>.checkpoints)")
    add("--seed", type=int, required=True)
    e = sub.add_parser("evaluate",
                       help="zero-shot evaluation on a target test set (one row per seed and source task)")
    add = e.add_argument
    add("--target", required=True, help="target model: LAPT output (embeddings, language adapter) or source")
    add("--tokenizer", help="target tokenizer folder (default: the target folder)")
    given = e.add_mutually_exclusive_group(required=True)
    given.add_argument("--from", dest="sources", nargs=4, action="append",
                       metavar=("NAME", "SEED", "TRAINED", "SCORES"),
                       help="a source-side training: source task, seed, trained folder, scores parquet "
                            "(repeat: one per seed and source task)")
    given.add_argument("--trainings",
                       help="JSON list of the source-side trainings instead of --from: objects with "
                            "source_task, seed, trained, scores (rule list_source_trainings)")
    add("--output", required=True, help="scores parquet (one row per source-side training, with its seed)")
    add("--unseen-labels", choices=UNSEEN, default="error",
        help="target labels outside the source label set: stop (error) or score as errors (wrong)")
    for q in (t, e):
        q.add_argument("--task", required=True, choices=sorted(METRICS))
        q.add_argument("--data", required=True, help="folder with train/dev/test.parquet (rule prepare_task)")
        q.add_argument("--meta", default="{}", help="JSON object of columns added to the scores rows")
        q.add_argument("--config", default="{}", help="FinetuneConfig as JSON, or @file.json")
        q.add_argument("--log", help="log file")
    args = p.parse_args(argv)
    (train_main if args.command == "train" else evaluate_main)(args)


if __name__ == "__main__":  # a trainer job's process (a test may call main() in its own)
    keep_freed_memory()
    main()

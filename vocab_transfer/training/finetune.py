"""Fine-tuning and evaluation on downstream tasks: a resumable CLI for CPU or one GPU (docs/training.md,
Fine-tuning; the keys: :class:`~.settings.FinetuneConfig`).

    python -m vocab_transfer.training.finetune --model results/lapt/demo-xlmr/he/focus/model \\
        --data results/tasks/he-ner --task ner --seed 1 2 \\
        --output results/finetune/demo-xlmr/he-ner/focus-lapt/seed1+2.parquet --config '{"epochs": 2}'

``--seed`` takes one or more seeds: a run each, one after another, each from a fresh copy of the model (the
same scores as a job of its own), with the task data read and encoded once; the scores have a row per seed,
the history a ``seed`` column. Tasks (``--task``): ``ner`` and ``pos`` (token classification, a word's first
sub-token labelled), ``dep`` (a deep biaffine parser on the encoder: ``BiaffineParser``), ``nli``
(sequence-pair classification), ``sts`` (sentence-pair regression, GLUE STS-B) and ``qa`` (extractive, sliding
windows). ``--data``: ``train/dev/test.parquet`` (:mod:`vocab_transfer.data.tasks`) and optional extra test
sets ``test_<name>.parquet`` (MNLI's mismatched one), scored with the selected checkpoint too. The model: a
``save_pretrained`` folder (a LAPT output, with its MAD-X language adapter if any), a hub id, or a source
model plus an init artifact (``--embeddings``: fine-tuned right after the vocabulary swap, as vocab-swap
does).

Defaults follow FOCUS Table 6: AdamW β = (0.9, 0.999), ε = 1e-8, linear schedule with 10% warmup, gradient
clipping 1.0, evaluation on dev every 5% of the steps; the checkpoint with the best dev score is evaluated on
test. Metrics, as fractions: span F1 (seqeval) for NER, accuracy for POS and NLI (plus the positive class's F1
for two labels: MRPC's), UAS and LAS (selection by LAS) for parsing, Pearson and Spearman for STS (selection
by Pearson); SQuAD F1/EM in % for QA; ``metric`` picks another selection metric (vocab-swap Tables 2, 4, 10).
Every evaluation writes a checkpoint in the seed's folder of ``--checkpoints``, from which a rerun ends
bit-identical (data order and dropout are functions of the seed and the step); a finished seed's results stay
there (``finished.json``) until every seed is done. SIGUSR1 / SIGTERM checkpoint at the next step and exit
75."""

from __future__ import annotations

import argparse
import collections
import json
import logging
import math
import re
import string
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from ..artifacts import input_records, recorded_reads
from ..checkpointing import check_checkpoint
from ..data.tasks import check_columns, check_heads, is_split
from ..data.tokenizer import load_tokenizer
from ..io import atomic_path, read_tensors, remove_tree, write_parquet
from ..memory import keep_freed_memory
from ..source_model import check_tokenizer_matches, max_sequence_length, remote_code_allowed
from ..tracking import Tracker
from .adapters import adapter_parameter_names, load_language_adapter, save_language_adapter
from .cpu_dropout import use_fast_dropout
from .runtime import (
    Checkpoints,
    Progress,
    StopSignals,
    autocast_factory,
    check_settings,
    checkpoint_settings,
    grad_scaler,
    linear_schedule,
    optimizer_step,
    pick_device,
)
from .settings import METRICS, FinetuneConfig, positive_class, selection_metric

log = logging.getLogger(__name__)
RESUME_FREE = ("threads", "micro_batch_size", "save_model", "report_to")  # fields a resumed run may change
PARSER_HEAD, PARSER_CONFIG = "parser_head.safetensors", "parser_head.json"


# ------------------------------------------------------------------------------------------- encoding
def read_task_data(folder: str | Path, task: str) -> dict[str, pd.DataFrame]:
    """``train``, ``dev``, ``test`` and extra evaluation sets ``test_<name>`` (sorted) of a task folder."""
    folder = Path(folder)
    missing = [f"{s}.parquet" for s in ("train", "dev", "test") if not (folder / f"{s}.parquet").exists()]
    if missing:
        raise FileNotFoundError(f"{folder}: no {', '.join(missing)} (rule prepare_task)")
    extra = sorted(p.stem for p in folder.glob("test_*.parquet") if is_split(p.stem))
    data = {s: pd.read_parquet(folder / f"{s}.parquet") for s in ("train", "dev", "test", *extra)}
    for df in data.values():
        check_columns(task, df)
    return data


def task_labels(task: str, data: dict[str, pd.DataFrame], labels: list[str] | None = None) -> list[str]:
    """The label set (from train unless given); a dev/test label outside it is an error, not a silent skip.
    QA and STS have none (``[]``)."""
    if task in ("qa", "sts"):
        return []
    column = {"ner": "tags", "pos": "tags", "dep": "deprels"}.get(task, "label")
    seen = lambda df: (set(df[column]) if column == "label"  # noqa: E731
                       else {str(t) for seq in df[column] for t in seq})
    if labels is None:
        found = seen(data["train"])
        labels = sorted(found, key=lambda t: (t != "O", t[2:], t)) if task == "ner" else sorted(found)
    for split, df in data.items():
        extra = seen(df) - set(labels)
        if extra:
            raise ValueError(f"label set mismatch: {split} has label(s) {sorted(extra)} that are not in the "
                             f"model's label set {labels}")
    return labels


def encode_tokens(df: pd.DataFrame, tokenizer, labels: list[str], seq_len: int) -> list[dict]:
    """Token classification: the first sub-token of each word carries its label, the rest -100."""
    index = {t: i for i, t in enumerate(labels)}
    enc = tokenizer([list(t) for t in df["tokens"]], is_split_into_words=True,
                    truncation=True, max_length=seq_len)
    out = []
    for i, tags in enumerate(df["tags"]):
        words = enc.word_ids(i)
        y = [index[tags[w]] if w is not None and w != v else -100
             for w, v in zip(words, [None, *words[:-1]], strict=True)]
        out.append({"input_ids": enc["input_ids"][i], "labels": y})
    return out


def encode_dep(df: pd.DataFrame, tokenizer, labels: list[str], seq_len: int) -> list[dict]:
    """Dependency parsing: a word is its first sub-token, the root position 0 (``<s>``/``[CLS]``, as in Glavaš
    & Vulić 2021). Per position ``heads`` (the gold head's position) and ``labels`` (the relation id), -100
    off word starts and where truncation cut the head; ``words``: each word's position (-1: cut, wrong)."""
    index = {t: i for i, t in enumerate(labels)}
    enc = tokenizer([list(t) for t in df["tokens"]], is_split_into_words=True,
                    truncation=True, max_length=seq_len)
    out = []
    for i, (id_, heads, rels) in enumerate(zip(df["id"], df["heads"], df["deprels"], strict=True)):
        check_heads(df["tokens"].iloc[i], heads, rels, f"dep sentence {id_}")
        word_ids, ids = enc.word_ids(i), enc["input_ids"][i]
        if word_ids[0] is not None:
            raise ValueError("dep: the tokenizer must start every sequence with a special token (<s>, "
                             f"[CLS]): it stands for the root; sentence {id_} starts with word {word_ids[0]}")
        first = {w: pos for pos, w in reversed(list(enumerate(word_ids))) if w is not None}  # its first pos
        words = [first.get(w, -1) for w in range(len(heads))]
        head_pos, y = [-100] * len(ids), [-100] * len(ids)
        for w, pos in enumerate(words):
            target = 0 if heads[w] == 0 else words[heads[w] - 1]
            if pos >= 0 and target >= 0:
                head_pos[pos], y[pos] = target, index[rels[w]]
        out.append({"input_ids": ids, "heads": head_pos, "labels": y, "words": words})
    return out


def encode_pairs(df: pd.DataFrame, tokenizer, labels: list[str], seq_len: int, *, token_types: bool = False
                 ) -> list[dict]:
    """Sentence pairs: ``nli`` (premise, hypothesis -> label id), or ``sts`` for ``labels=None`` (sentence1,
    sentence2 -> score); ``token_types`` keeps the segment ids (BERT, as HF run_glue feeds them)."""
    if labels is None:
        first, second, y = df["sentence1"].tolist(), df["sentence2"].tolist(), [float(v) for v in df["score"]]
    else:
        index = {t: i for i, t in enumerate(labels)}
        first, second, y = df["premise"].tolist(), df["hypothesis"].tolist(), [index[v] for v in df["label"]]
    enc = tokenizer(first, second, truncation=True, max_length=seq_len)
    types = enc.get("token_type_ids") if token_types else None
    return [{"input_ids": ids, "labels": label, **({"token_type_ids": types[i]} if types is not None else {})}
            for i, (ids, label) in enumerate(zip(enc["input_ids"], y, strict=True))]


def encode_qa(df: pd.DataFrame, tokenizer, seq_len: int, stride: int, *, train: bool) -> list[dict]:
    """Sliding windows over the context (HF run_qa.py): each window is labelled with the answer's token
    span, or with the start token (0) when the answer is not inside it."""
    if stride >= seq_len // 2:  # the window must hold the question, the specials and more than the overlap
        log.warning("doc_stride %d is too long for seq_len %d: using %d", stride, seq_len, seq_len // 4)
        stride = seq_len // 4
    enc = tokenizer(df["question"].tolist(), df["context"].tolist(), truncation="only_second",
                    max_length=seq_len, stride=stride, return_overflowing_tokens=True,
                    return_offsets_mapping=True)
    out = []
    for w, ids in enumerate(enc["input_ids"]):
        ex = enc["overflow_to_sample_mapping"][w]
        seq = enc.sequence_ids(w)
        offsets = [o if s == 1 else None for o, s in zip(enc["offset_mapping"][w], seq, strict=True)]
        item = {"input_ids": ids, "example": ex, "offsets": offsets}
        if train:
            answers = df["answers"].iloc[ex]
            start_char = int(answers["answer_start"][0])
            end_char = start_char + len(answers["text"][0])
            ctx = [i for i, o in enumerate(offsets) if o is not None]
            s = e = 0
            if ctx and offsets[ctx[0]][0] <= start_char and offsets[ctx[-1]][1] >= end_char:
                s = next(i for i in ctx if offsets[i][1] > start_char)
                e = next(i for i in reversed(ctx) if offsets[i][0] < end_char)
            item["start_positions"], item["end_positions"] = s, e
        out.append(item)
    return out


def collate(items: list[dict], pad_id: int) -> dict[str, torch.Tensor]:
    lengths = torch.tensor([len(it["input_ids"]) for it in items])
    n = int(lengths.max())

    def padded(key: str, fill: int) -> torch.Tensor:
        out = torch.full((len(items), n), fill, dtype=torch.long)
        for i, it in enumerate(items):
            out[i, : len(it[key])] = torch.tensor(it[key])
        return out

    batch = {"input_ids": padded("input_ids", pad_id),
             "attention_mask": (torch.arange(n) < lengths[:, None]).long()}
    if "token_type_ids" in items[0]:  # segment ids of sentence pairs, padded with 0
        batch["token_type_ids"] = padded("token_type_ids", 0)
    for key in ("labels", "heads", "start_positions", "end_positions"):  # per position or per sequence
        if key in items[0]:
            batch[key] = (padded(key, -100) if isinstance(items[0][key], list)
                          else torch.tensor([it[key] for it in items]))
    if "words" in items[0]:  # dep: the word starts, i.e. the candidate heads besides the root
        batch["word_mask"] = torch.zeros((len(items), n), dtype=torch.bool)
        for i, it in enumerate(items):
            batch["word_mask"][i, [p for p in it["words"] if p >= 0]] = True
    return batch


def epoch_order(lengths: list[int], batch_size: int, seed: int, group_by_length: bool) -> list[int]:
    """A seeded permutation of the items; ``group_by_length`` (HF Trainer's option) sorts each run of 50
    batches by length and shuffles the batches: the same items per epoch, about half the padding."""
    g = torch.Generator().manual_seed(seed)
    order = torch.randperm(len(lengths), generator=g).tolist()
    if not group_by_length:
        return order
    mega = 50 * batch_size
    order = [i for k in range(0, len(order), mega) for i in sorted(order[k:k + mega],
                                                                   key=lambda i: -lengths[i])]
    batches = [order[k:k + batch_size] for k in range(0, len(order), batch_size)]
    return [i for b in torch.randperm(len(batches), generator=g).tolist() for i in batches[b]]


# -------------------------------------------------------------------------------------------- metrics
def span_f1(gold: list[list[str]], pred: list[list[str]]) -> dict[str, float]:
    from seqeval.metrics import f1_score, precision_score, recall_score

    # zero_division: no predicted entity gives precision 0, not a warning
    return {name: float(score(gold, pred, zero_division=0)) for name, score in
            (("f1", f1_score), ("precision", precision_score), ("recall", recall_score))}


def attachment_scores(gold_heads: list[list[int]], gold_rels: list[list[str]], pred_heads: list[list[int]],
                      pred_rels: list[list[str | None]]) -> dict[str, float]:
    """UAS and LAS as fractions of all words (punctuation included, as in the CoNLL 2018 shared task): a word
    is attached if its predicted head is the gold one, and labelled-attached if its relation matches too."""
    pairs = [(gh == ph, gh == ph and gr == pr)
             for g_h, g_r, p_h, p_r in zip(gold_heads, gold_rels, pred_heads, pred_rels, strict=True)
             for gh, gr, ph, pr in zip(g_h, g_r, p_h, p_r, strict=True)]
    if not pairs:
        return {"uas": 0.0, "las": 0.0}
    return {"uas": float(np.mean([u for u, _ in pairs])), "las": float(np.mean([la for _, la in pairs]))}


def binary_f1(gold: list[str], pred: list[str], positive: str) -> dict[str, float]:
    """F1, precision and recall of the ``positive`` class (GLUE MRPC's F1, sklearn's ``f1_score`` with
    ``pos_label``); 0 where undefined (no positive predicted or none in gold)."""
    tp = sum(g == p == positive for g, p in zip(gold, pred, strict=True))
    n_pred, n_gold = sum(p == positive for p in pred), sum(g == positive for g in gold)
    precision, recall = (tp / n_pred if n_pred else 0.0), (tp / n_gold if n_gold else 0.0)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"f1": f1, "precision": precision, "recall": recall}


def correlations(gold: list[float], pred: list[float]) -> dict[str, float]:
    """Pearson and Spearman correlation (ties averaged) of predicted and gold scores, GLUE STS-B's metrics; 0
    where undefined (constant predictions, as from a fresh head), so that selection still compares numbers."""
    def pearson(a: np.ndarray, b: np.ndarray) -> float:
        a, b = a - a.mean(), b - b.mean()
        norm = math.sqrt(float((a * a).sum() * (b * b).sum()))
        return float((a * b).sum() / norm) if norm > 0 else 0.0

    g, p = np.asarray(gold, dtype=np.float64), np.asarray(pred, dtype=np.float64)
    rank = lambda x: pd.Series(x).rank(method="average").to_numpy()  # noqa: E731
    return {"pearson": pearson(g, p), "spearman": pearson(rank(g), rank(p))}


def _normalize_answer(s: str) -> str:
    """SQuAD v1.1 evaluation script: lower case, no punctuation, articles or extra whitespace."""
    s = "".join(ch for ch in s.lower() if ch not in set(string.punctuation))
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", s).split())


def squad_scores(gold: list[list[str]], pred: list[str]) -> dict[str, float]:
    """SQuAD F1 and exact match in %, each the max over the gold answers."""
    def f1(p: list[str], g: list[str]) -> float:
        same = sum((collections.Counter(p) & collections.Counter(g)).values())
        return 2 * same / (len(p) + len(g)) if same else float(p == g)  # 1 where both are empty

    pairs = [(_normalize_answer(p).split(), [_normalize_answer(g).split() for g in gs])
             for gs, p in zip(gold, pred, strict=True)]
    return {"f1": 100 * float(np.mean([max(f1(p, g) for g in gs) for p, gs in pairs])),
            "exact_match": 100 * float(np.mean([max(float(p == g) for g in gs) for p, gs in pairs]))}


# ------------------------------------------------------------------------------------------ the model
@dataclass
class ParserOutput:
    """What ``BiaffineParser.forward`` returns (``loss`` only when gold heads are given)."""

    loss: torch.Tensor | None  # mean over the words with a gold head in the sequence: arc + relation CE
    arc_logits: torch.Tensor  # [batch, dependent, head]; -1e9 where the head cannot be (padding, itself)
    label_logits: torch.Tensor  # [batch, dependent, label] at the gold heads (training) or the predicted ones


class BiaffineParser(torch.nn.Module):
    """Deep biaffine dependency parser (Dozat & Manning 2017) on a transformer encoder, the variant of Glavaš
    & Vulić (2021) that UNKs Everywhere trains (§4, Table 3b): the encoder replaces the BiLSTM, a word is its
    first sub-token, position 0 (``<s>``/``[CLS]``) is the root.

    With ``h_i`` the encoder output at word i and one-layer MLPs (ReLU, our choice; dropout ``mlp_dropout``):
    arc score ``s_ij = a_j^T U a'_i + a_j^T u`` with ``a = MLP_arc-head(h)``, ``a' = MLP_arc-dep(h)`` (D&M eq.
    for arcs: the second term is the head's prior); relation scores ``r_j^T U_l r'_i + W_l (r'_i ⊕ r_j) +
    b_l`` for the pair (dependent i, head j), one per label l. The biaffine weights start at zero (uniform
    arcs). Loss: cross-entropy over the candidate heads (root and the sentence's words, never the word itself)
    plus cross-entropy over the relations at the gold head. Decoding: the per-word argmax head, then the
    argmax relation at that head; no tree constraint (no Chu-Liu-Edmonds), so a prediction may have cycles or
    several roots. ``save_pretrained`` writes the encoder and ``parser_head.safetensors`` / ``.json``."""

    def __init__(self, encoder, labels: list[str], arc_mlp_size: int = 500, label_mlp_size: int = 100,
                 mlp_dropout: float = 0.33):
        super().__init__()
        hidden = encoder.config.hidden_size
        self.encoder, self.labels = encoder, list(labels)
        self.sizes = {"arc_mlp_size": arc_mlp_size, "label_mlp_size": label_mlp_size,
                      "mlp_dropout": mlp_dropout}

        def mlp(size: int) -> torch.nn.Sequential:
            return torch.nn.Sequential(torch.nn.Linear(hidden, size), torch.nn.ReLU(),
                                       torch.nn.Dropout(mlp_dropout))

        self.arc_dep, self.arc_head = mlp(arc_mlp_size), mlp(arc_mlp_size)
        self.label_dep, self.label_head = mlp(label_mlp_size), mlp(label_mlp_size)
        self.arc_weight = torch.nn.Parameter(torch.zeros(arc_mlp_size, arc_mlp_size))  # U
        self.arc_bias = torch.nn.Parameter(torch.zeros(arc_mlp_size))  # u: the head prior
        # U_l
        self.label_weight = torch.nn.Parameter(torch.zeros(len(labels), label_mlp_size, label_mlp_size))
        self.label_linear = torch.nn.Linear(2 * label_mlp_size, len(labels))  # W_l, b_l

    @property
    def config(self):
        return self.encoder.config

    def get_input_embeddings(self) -> torch.nn.Module:
        return self.encoder.get_input_embeddings()

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, word_mask: torch.Tensor,
                heads: torch.Tensor | None = None, labels: torch.Tensor | None = None) -> ParserOutput:
        h = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        dep, head = self.arc_dep(h), self.arc_head(h)
        arc = (torch.einsum("bjx,xy,biy->bij", head, self.arc_weight, dep)
               + (head @ self.arc_bias)[:, None, :]).float()
        candidate = word_mask.clone()
        candidate[:, 0] = True
        allowed = candidate[:, None, :] & ~torch.eye(input_ids.shape[1], dtype=torch.bool, device=arc.device)
        arc = arc.masked_fill(~allowed, -1e9)
        at = (heads if heads is not None else arc.argmax(-1)).clamp(min=0)
        r_dep, r_head = self.label_dep(h), self.label_head(h)
        r_head = r_head.gather(1, at[..., None].expand(-1, -1, r_head.shape[-1]))
        rel = (torch.einsum("bix,lxy,biy->bil", r_head, self.label_weight, r_dep)
               + self.label_linear(torch.cat([r_dep, r_head], -1))).float()
        loss = None
        if heads is not None:
            ce = torch.nn.functional.cross_entropy
            words = (heads != -100).sum().clamp(min=1)
            loss = (ce(arc.flatten(0, 1), heads.flatten(), ignore_index=-100, reduction="sum")
                    + ce(rel.flatten(0, 1), labels.flatten(), ignore_index=-100, reduction="sum")) / words
        return ParserOutput(loss, arc, rel)

    def head_state_dict(self) -> dict[str, torch.Tensor]:
        return {k: v for k, v in self.state_dict().items() if not k.startswith("encoder.")}

    def save_pretrained(self, folder: str | Path) -> None:
        """The encoder (without adapter weights), its language adapter if any, and ``parser_head.safetensors``
        / ``.json`` (labels, sizes): what ``load_task_model("dep", folder, labels)`` loads."""
        from safetensors.torch import save_file

        folder = Path(folder)
        adapter = adapter_parameter_names(self.encoder)
        self.encoder.save_pretrained(folder, state_dict={k: v for k, v in self.encoder.state_dict().items()
                                                         if k not in adapter})
        if adapter:
            save_language_adapter(self.encoder, folder)
        save_file({k: v.detach().cpu().contiguous()
                   for k, v in self.head_state_dict().items()}, folder / PARSER_HEAD)
        (folder / PARSER_CONFIG).write_text(json.dumps({"labels": self.labels, **self.sizes},
                                                       ensure_ascii=False, indent=2) + "\n")


def load_task_model(task: str, model: str, labels: list[str], *, embeddings: str | None = None,
                    train_language_adapter: bool = False, arc_mlp_size: int = 500, label_mlp_size: int = 100,
                    mlp_dropout: float = 0.33):
    """A task model from a ``save_pretrained`` folder or hub id (``embeddings``: an init artifact's rows
    swapped in), with the MAD-X language adapter LAPT saved, frozen unless ``train_language_adapter``.
    ``dep``: a ``BiaffineParser`` (MLP sizes as given) on ``AutoModel``, with the trained head a folder holds
    (``parser_head.*``); ``sts``: one output, regression (MSE loss, HF run_glue's STS-B setup)."""
    import transformers as hf

    token, sequence = hf.AutoModelForTokenClassification, hf.AutoModelForSequenceClassification
    cls = {"ner": token, "pos": token, "dep": hf.AutoModel, "nli": sequence, "sts": sequence,
           "qa": hf.AutoModelForQuestionAnswering}[task]
    kwargs = {} if task in ("qa", "dep") else {"num_labels": len(labels), "id2label": dict(enumerate(labels)),
                                               "label2id": {t: i for i, t in enumerate(labels)}}
    if task == "sts":
        kwargs = {"num_labels": 1, "problem_type": "regression"}
    m = cls.from_pretrained(model, trust_remote_code=remote_code_allowed(model), **kwargs)
    if task == "dep" and getattr(m, "pooler", None) is not None:
        m.pooler = None  # unused by the parser (BERT/XLM-R skip a None pooler)
    if embeddings:
        rows = read_tensors(embeddings)["embeddings"]
        m.resize_token_embeddings(rows.shape[0], mean_resizing=False)
        with torch.no_grad():
            m.get_input_embeddings().weight.copy_(rows)
    elif Path(model).is_dir() and load_language_adapter(m, model):
        frozen = adapter_parameter_names(m) if not train_language_adapter else set()
        for n, p in m.named_parameters():
            p.requires_grad_(n not in frozen)
        log.info("attached the MAD-X language adapter saved in %s (%s)", model,
                 "trained" if train_language_adapter else "frozen")
    if task == "dep":
        sizes = {"arc_mlp_size": arc_mlp_size, "label_mlp_size": label_mlp_size, "mlp_dropout": mlp_dropout}
        saved = Path(model) / PARSER_CONFIG
        meta = json.loads(saved.read_text()) if saved.is_file() else None
        if meta is not None and meta["labels"] != list(labels):
            raise ValueError(f"{saved}: the saved parser's labels {meta['labels']} "
                             f"differ from {list(labels)}")
        m = BiaffineParser(m, labels, **({k: meta[k] for k in sizes} if meta else sizes))
        if meta is not None:
            from safetensors.torch import load_file

            head = load_file(Path(model) / PARSER_HEAD)
            if set(head) != set(m.head_state_dict()):
                raise ValueError(f"{Path(model) / PARSER_HEAD} does not fit the parser "
                                 f"head: keys {sorted(head)}")
            m.load_state_dict(head, strict=False)  # the head only: the encoder is loaded already
            log.info("loaded the parser head saved in %s", model)
    return m


@torch.no_grad()
def evaluate(model, task: str, items: list[dict], df: pd.DataFrame, labels: list[str], cfg: FinetuneConfig,
             pad_id: int, device, autocast) -> dict[str, float]:
    model.eval()
    starts, ends, preds = [], [], []
    for b in range(0, len(items), cfg.eval_batch_size):
        chunk = items[b: b + cfg.eval_batch_size]
        keys = ("input_ids", "words") if task == "dep" else ("input_ids", "token_type_ids")
        batch = collate([{k: it[k] for k in keys if k in it} for it in chunk], pad_id)
        with autocast():
            out = model(**{k: v.to(device) for k, v in batch.items()})
        if task == "dep":  # (head position, relation id) per word; (-1, -1) for words cut by truncation
            heads, rels = out.arc_logits.argmax(-1).cpu(), out.label_logits.argmax(-1).cpu()
            preds += [[(int(heads[i, p]), int(rels[i, p])) if p >= 0 else (-1, -1) for p in it["words"]]
                      for i, it in enumerate(chunk)]
        elif task == "qa":
            starts += list(out.start_logits.float().cpu().numpy())
            ends += list(out.end_logits.float().cpu().numpy())
        elif task == "sts":
            preds += out.logits.float()[:, 0].cpu().tolist()
        else:
            preds += list(out.logits.float().argmax(-1).cpu().numpy())
    model.train()
    if task == "dep":
        pred_heads, pred_rels = [], []
        for it, pred in zip(items, preds, strict=True):
            word_of = {0: 0} | {p: w + 1 for w, p in enumerate(it["words"]) if p >= 0}
            pred_heads.append([word_of[h] if h >= 0 else -1 for h, _ in pred])
            pred_rels.append([labels[r] if r >= 0 else None for _, r in pred])
        return attachment_scores([list(h) for h in df["heads"]], [list(r) for r in df["deprels"]], pred_heads,
                                 pred_rels)
    if task == "sts":
        return correlations(df["score"].tolist(), preds)
    if task == "nli":
        gold = [labels.index(y) for y in df["label"]]
        scores = {"accuracy": float(np.mean(np.array(preds) == np.array(gold)))}
        if len(labels) == 2 or cfg.positive_label is not None:  # binary F1 of the positive class (MRPC)
            scores["f1"] = binary_f1(list(df["label"]), [labels[k] for k in preds],
                                     positive_class(labels, cfg.positive_label))["f1"]
        return scores
    if task in ("ner", "pos"):
        gold_tags, pred_tags = [list(tags) for tags in df["tags"]], []
        for it, p, tags in zip(items, preds, gold_tags, strict=True):
            pred = [labels[k] for k, y in zip(p, it["labels"], strict=False) if y != -100]
            pred_tags.append(pred + ["O" if task == "ner" else "X"] * (len(tags) - len(pred)))  # cut words
        if task == "ner":
            return span_f1(gold_tags, pred_tags)
        flat = [(g == p) for gs, ps in zip(gold_tags, pred_tags, strict=True)
                for g, p in zip(gs, ps, strict=True)]
        return {"accuracy": float(np.mean(flat))}
    best: dict[int, tuple[float, str]] = {}
    for it, s, e in zip(items, starts, ends, strict=True):
        ctx = df["context"].iloc[it["example"]]
        n = len(it["input_ids"])
        cand_s, cand_e = (np.argsort(x[:n])[::-1][:20] for x in (s, e))  # the 20 best starts and ends
        for i in cand_s:
            for j in cand_e:
                if (it["offsets"][i] is None or it["offsets"][j] is None or j < i
                    or j - i + 1 > cfg.max_answer_tokens):
                    continue
                score = float(s[i] + e[j])
                if it["example"] not in best or score > best[it["example"]][0]:
                    best[it["example"]] = (score, ctx[it["offsets"][i][0]: it["offsets"][j][1]])
    pred_text = [best.get(k, (0.0, ""))[1] for k in range(len(df))]
    return squad_scores([list(a["text"]) for a in df["answers"]], pred_text)


# ------------------------------------------------------------------------------------------- training
def fit_to_model(cfg: FinetuneConfig, model) -> FinetuneConfig:
    """``cfg`` with ``seq_len`` (and ``doc_stride``) cut to the model's position table."""
    limit = max_sequence_length(model)
    if cfg.seq_len <= limit:
        return cfg
    log.warning("seq_len %d is longer than the model's %d positions: using %d", cfg.seq_len, limit, limit)
    return cfg.model_copy(update={"seq_len": limit, "doc_stride": min(cfg.doc_stride, limit // 2)})


def task_encoder(task: str, tokenizer, labels: list[str], cfg: FinetuneConfig, model
                 ) -> Callable[[pd.DataFrame, bool], list[dict]]:
    """``encode(df, train)``: a split's items as fine-tuning trains and evaluates on them (the zero-shot
    evaluation's too, so target items match the source side's training, BERT segment ids included)."""
    types = getattr(model.config, "type_vocab_size", 1) > 1  # BERT: pair segment ids; RoBERTa/XLM-R: none
    return {"qa": lambda df, train: encode_qa(df, tokenizer, cfg.seq_len, cfg.doc_stride, train=train),
            "nli": lambda df, train: encode_pairs(df, tokenizer, labels, cfg.seq_len, token_types=types),
            "sts": lambda df, train: encode_pairs(df, tokenizer, None, cfg.seq_len, token_types=types),
            "dep": lambda df, train: encode_dep(df, tokenizer, labels, cfg.seq_len)}.get(
        task, lambda df, train: encode_tokens(df, tokenizer, labels, cfg.seq_len))


def dataset_labels(task: str, data: dict[str, pd.DataFrame], folder: str | Path, given: str | None = None
                   ) -> list[str]:
    """The label set: ``given`` (a JSON list), else the task folder's ``labels.json`` (the dataset's
    inventory, rule prepare_task), else the train split's (:func:`task_labels`, which checks every split)."""
    path = Path(folder) / "labels.json"
    labels = json.loads(given) if given else json.loads(path.read_text()) or None if path.exists() else None
    return task_labels(task, data, labels)


def _remembered(enc: Callable, memo: dict) -> Callable:
    """``enc`` that returns the items it encoded before for the same split (by identity) and mode."""
    def encode(df: pd.DataFrame, train: bool) -> list[dict]:
        key = (id(df), train)
        if key not in memo:
            memo[key] = (df, enc(df, train))  # the frame is kept so that its id is not reused
        return memo[key][1]
    return encode


def finetune(model, tokenizer, task: str, data: dict[str, pd.DataFrame], labels: list[str],
             cfg: FinetuneConfig, *, seed: int, checkpoint_dir: str | Path, stop_after: int | None = None,
             encoded: dict | None = None, track_dir: str | Path | None = None) -> tuple[dict, pd.DataFrame]:
    """Train on ``train``, select on ``dev`` (``selection_metric``), score on ``test`` and any ``test_<name>``
    (as ``test_<name>_<metric>``): (scores, history). ``encoded``: a dict shared by one process's runs that
    keeps the splits' (seed-independent) items; ``track_dir``: the live curves' folder."""
    device = pick_device()
    autocast, amp_dtype = autocast_factory(cfg.precision, device)
    model.to(device).train()
    use_fast_dropout(model, device)
    cfg = fit_to_model(cfg, model)
    pad = tokenizer.pad_token_id
    metric = selection_metric(task, cfg, labels)
    enc = task_encoder(task, tokenizer, labels, cfg, model)
    if encoded is not None:
        enc = _remembered(enc, encoded)
    train_items, dev_items = enc(data["train"], True), enc(data["dev"], False)
    steps_per_epoch = math.ceil(len(train_items) / cfg.batch_size)
    total = max(1, math.ceil(cfg.epochs * steps_per_epoch))
    eval_every = max(1, round(cfg.eval_fraction * total))
    log.info("%s: %d train / %d dev items, %d steps of %d (%.1f epochs), dev every %d steps", task,
             len(train_items), len(dev_items), total, cfg.batch_size, cfg.epochs, eval_every)

    params = [p for p in model.parameters() if p.requires_grad]
    opt = cfg.adamw(params)
    sched = linear_schedule(opt, total, cfg.warmup_ratio)
    scaler = grad_scaler(amp_dtype)
    ckpt = Checkpoints(checkpoint_dir, keep=1, what="fine-tuning")  # best.pt beside step-*: selected weights
    best_path = Path(checkpoint_dir) / "best.pt"
    step, history, best, running = 0, [], {"step": -1, "score": -math.inf}, []
    settings = checkpoint_settings(cfg, RESUME_FREE, task=task, seed=seed, labels=list(labels or []))
    resume, state = ckpt.resume(settings)
    if resume is not None:
        step, history, best = state["step"], state["history"], state["best"]
        running = state.get("running", [])
        ckpt.restore_model(resume, model, device)
        ckpt.restore_optimizer(resume, opt, sched, scaler, device)
        log.info("resuming from %s at step %d of %d", resume, step, total)
    tracker = Tracker(cfg.report_to if track_dir is not None else [], track_dir or ".",
                      name=f"{task} seed {seed}", config=settings,
                      start_step=step + 1 if resume is not None else 0)
    with StopSignals() as stop, tracker:
        progress = Progress(step, total)
        micro = cfg.micro_batch_size or cfg.batch_size
        lengths, order = [len(it["input_ids"]) for it in train_items], None
        while step < total:
            epoch, pos = divmod(step, steps_per_epoch)
            if pos == 0 or order is None:
                order = epoch_order(lengths, cfg.batch_size, seed * 7919 + epoch, cfg.group_by_length)
            rows = order[pos * cfg.batch_size:(pos + 1) * cfg.batch_size]
            step += 1
            torch.manual_seed(seed * 1_000_003 + step)  # dropout: a function of the seed and the step
            loss_sum = 0.0
            for part in range(math.ceil(len(rows) / micro)):
                batch = collate([train_items[r] for r in rows[part * micro:(part + 1) * micro]], pad)
                batch = {k: v.to(device) for k, v in batch.items()}
                with autocast():
                    loss = model(**batch).loss * len(rows[part * micro:(part + 1) * micro]) / len(rows)
                (scaler.scale(loss) if scaler else loss).backward()
                loss_sum += float(loss.detach())
            norm = optimizer_step(params, opt, sched, scaler, cfg.clip_norm)
            running.append(loss_sum)
            if step % eval_every == 0 or step == total:
                scores = evaluate(model, task, dev_items, data["dev"], labels, cfg, pad, device, autocast)
                improved = scores[metric] > best["score"]
                if improved:
                    best = {"step": step, "score": scores[metric]}
                history.append({"step": step, "epoch": step / steps_per_epoch,
                                "train_loss": float(np.mean(running)),
                                **{f"dev_{k}": v for k, v in scores.items()}})
                running = []
                log.info("step %d/%d loss %.4f dev %s %.4f%s (%s)", step, total, history[-1]["train_loss"],
                         metric, scores[metric], " *" if improved else "", progress(step))
                if tracker.report_to:
                    tracker.log(step, {
                        "train/loss": history[-1]["train_loss"], "train/lr": sched.get_last_lr()[0],
                        "train/grad_norm": float(norm), "train/steps_per_s": progress.rate(step),
                        **{f"dev/{k}": v for k, v in scores.items() if isinstance(v, (int, float))}})
                if improved:
                    with atomic_path(best_path) as tmp:
                        torch.save(model.state_dict(), tmp)
            if (step % eval_every == 0 or stop.received or step == stop_after) and step < total:
                ckpt.save(step, model, opt, sched, scaler, {"step": step, "history": history, "best": best,
                                                            "running": running, "config": settings})
            if stop.received and step < total:  # a signal in the last step: the run ends instead
                stop.exit(step)
            if step == stop_after:
                return {}, pd.DataFrame(history)
        check_checkpoint(best_path, "fine-tuning", best_path.parent)  # its manifest beside it, before reading
        model.load_state_dict(torch.load(best_path, map_location=device, weights_only=True))
        extra = sorted(s for s in data if s.startswith("test_"))
        tests = {s: evaluate(model, task, enc(data[s], False), data[s], labels, cfg, pad, device, autocast)
                 for s in ("test", *extra)}
        selected = next(h for h in history if h["step"] == best["step"])
        scores = {"selected_step": best["step"], "steps": total, "metric": metric,
                  **{k: v for k, v in selected.items() if k.startswith("dev_")},
                  **{f"{s}_{k}": v for s, test in tests.items() for k, v in test.items()},
                  "extra_test_sets": ",".join(s[len("test_"):] for s in extra)}
        log.info("selected step %d: dev %s %.4f; %s", best["step"], metric, best["score"],
                 ", ".join(f"{s} {metric} {t[metric]:.4f}" for s, t in tests.items()))
        return scores, pd.DataFrame(history)


def input_stamp(*paths: str | None) -> list:
    """Size and modification time of each input file (a folder: of its files; a hub id: the id), which says in
    a finished seed's record which model and data it was trained on."""
    out = []
    for path in filter(None, paths):
        p = Path(path)
        files = sorted(f for f in p.iterdir() if f.is_file()) if p.is_dir() else [p] if p.is_file() else []
        out.append([path, [[f.name, f.stat().st_size, f.stat().st_mtime_ns] for f in files]])
    return out


def finished_run(folder: Path, settings: dict) -> tuple[dict, pd.DataFrame] | None:
    """The scores and history of the seed's run in ``folder`` (``finished.json``), or None, also if made from
    other inputs; other settings raise ValueError as :meth:`Checkpoints.resume` does."""
    path = folder / "finished.json"
    if not path.is_file():
        return None
    done = json.loads(path.read_text())
    if done["settings"].get("inputs") != settings.get("inputs"):
        log.warning("%s was trained on other inputs (the model or the data changed since): training again",
                    path)
        return None
    check_settings(settings, done["settings"], f"fine-tuning run {path} was finished", folder)
    return done["scores"], pd.DataFrame(done["history"])


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add = p.add_argument
    add("--model", required=True, help="save_pretrained folder (LAPT output, source model) or hub id")
    add("--embeddings", help="init artifact: fine-tune the source model right after the vocabulary swap")
    add("--tokenizer", help="tokenizer folder (default: the model folder)")
    add("--task", required=True, choices=sorted(METRICS))
    add("--data", required=True, help="folder with train/dev/test.parquet (rule prepare_task)")
    add("--seed", type=int, nargs="+", required=True, help="one run per seed, in this order")
    add("--output", required=True, help="scores parquet (a row per seed)")
    add("--history", help="dev curves parquet, a seed column (default: <output stem>.history.parquet)")
    add("--checkpoints", help="checkpoint folder, a seed<N>/ per seed (default: <output>.checkpoints)")
    add("--labels", help="JSON list: the label set (default: <data>/labels.json, else the train split's)")
    add("--meta", default="{}", help="JSON object of columns added to the scores rows")
    add("--config", default="{}", help="FinetuneConfig as JSON, or @file.json")
    add("--log", help="log file")
    args = p.parse_args(argv)
    if len(set(args.seed)) < len(args.seed):
        p.error(f"--seed {' '.join(map(str, args.seed))}: a seed is repeated")
    cfg = FinetuneConfig.from_cli(args)
    if cfg.save_model and len(args.seed) > 1:
        p.error(f"save_model keeps one fine-tuned model per output: give one --seed, not {len(args.seed)}")

    # what the scores are of, recorded in what the job writes (vocab_transfer.report.provenance follows it)
    reads = input_records({"model": args.model, "embeddings": args.embeddings, "tokenizer": args.tokenizer,
                           "data": args.data})
    data = read_task_data(args.data, args.task)
    labels = dataset_labels(args.task, data, args.data, args.labels)
    tokenizer = load_tokenizer(args.tokenizer or args.model)
    checkpoints = Path(args.checkpoints or f"{args.output}.checkpoints")
    stamp = input_stamp(args.model, args.embeddings, args.tokenizer, args.data)
    rows, histories, encoded, model = [], [], {}, None
    for i, seed in enumerate(args.seed):
        folder = checkpoints / f"seed{seed}"
        settings = checkpoint_settings(cfg, RESUME_FREE, task=args.task, seed=seed, labels=list(labels or []),
                                       inputs=stamp)
        done = None if cfg.save_model else finished_run(folder, settings)  # save_model needs the model
        if done is not None:
            log.info("seed %d (%d of %d): finished before, kept from %s", seed, i + 1, len(args.seed), folder)
            scores, history = done
        else:
            log.info("seed %d (%d of %d)", seed, i + 1, len(args.seed))
            torch.manual_seed(seed)  # the new classification head
            model = None  # the previous seed's model goes before the next one is loaded
            model = load_task_model(args.task, args.model, labels, embeddings=args.embeddings,
                                    train_language_adapter=cfg.train_language_adapter,
                                    arc_mlp_size=cfg.arc_mlp_size, label_mlp_size=cfg.label_mlp_size,
                                    mlp_dropout=cfg.mlp_dropout)
            check_tokenizer_matches(len(tokenizer), model.get_input_embeddings().weight.shape[0],
                                    name=args.embeddings or args.model)
            scores, history = finetune(model, tokenizer, args.task, data, labels, cfg, seed=seed,
                                       checkpoint_dir=folder, encoded=encoded,
                                       track_dir=Path(args.output).parent / "live" / f"seed{seed}")
            with atomic_path(folder / "finished.json") as tmp:
                tmp.write_text(json.dumps({"settings": settings, "scores": scores,
                                           "history": history.to_dict(orient="records")}))
        rows.append({**json.loads(args.meta), "task": args.task, "seed": seed, **scores,
                     "n_train": len(data["train"]), "n_dev": len(data["dev"]), "n_test": len(data["test"])})
        histories.append(history.assign(seed=seed))
    with recorded_reads(reads, evaluated="embeddings" if args.embeddings else "model"):
        write_parquet(pd.concat(histories, ignore_index=True),
                      args.history or str(Path(args.output).with_suffix("")) + ".history.parquet")
        if cfg.save_model:
            with atomic_path(str(Path(args.output).with_suffix("")) + ".model", directory=True) as tmp:
                model.save_pretrained(str(tmp))
                tokenizer.save_pretrained(str(tmp))
        write_parquet(pd.DataFrame(rows), args.output)
    remove_tree(checkpoints)  # whole or gone if killed meanwhile


if __name__ == "__main__":  # a trainer job's process (a test may call main() in its own)
    keep_freed_memory()
    main()

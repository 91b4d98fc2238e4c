"""Linear probes of the last hidden state right after initialization (WECHSEL App. A, Tables 7-8's NLI and POS
columns): how much of a downstream task a transferred model's frozen representations already encode.

Features, as WECHSEL describes them:

- **NLI** (task ``nli``): the mean of the premise's token representations concatenated with the mean of the
  hypothesis's (each sentence encoded on its own, special tokens left out of the mean);
- **token tasks** (``pos``, ``ner``): the mean of the representations of each word's tokens, one example per
  word (words cut off by ``seq_len`` are left out and counted).

The probe is a multinomial logistic regression on features standardized with the training set's mean and
standard deviation, fitted by full-batch L-BFGS from zero weights with an L2 penalty (deterministic: no random
start, no batches). Only the probe is trained; the model stays as initialized. The score is test accuracy,
reported with the share of the commonest training label on the test set (``majority``: what a probe that
learned nothing scores).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .. import lazy

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

np = lazy.module("numpy")
pd = lazy.module("pandas")
torch = lazy.module("torch")
tqdm = lazy.module("tqdm")

log = logging.getLogger(__name__)

#: task types a probe reads (vocab_transfer.data.tasks.TASK_TYPES): sentence pairs and word tags
PROBE_TASKS = ("nli", "pos", "ner")


def _hidden(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, ids: list[list[int]], batch_size: int,
            desc: str):
    """``(indices, last hidden states [batch, longest, dim])`` of the sequences ``ids``, right-padded, in
    batches of similar length (longest first): less padding, same result."""
    order = np.argsort(-np.asarray([len(s) for s in ids]), kind="stable")
    device = next(model.parameters()).device
    for batch in tqdm.tqdm([order[i:i + batch_size] for i in range(0, len(ids), batch_size)], desc=desc,
                           mininterval=10):
        inputs = torch.full((len(batch), max(len(ids[i]) for i in batch)), tokenizer.pad_token_id or 0,
                            dtype=torch.long)
        mask = torch.zeros_like(inputs)
        for row, i in enumerate(batch):
            inputs[row, :len(ids[i])], mask[row, :len(ids[i])] = torch.tensor(ids[i]), 1
        with torch.no_grad():
            hidden = model.base_model(input_ids=inputs.to(device), attention_mask=mask.to(device))
        yield batch, hidden.last_hidden_state.float().cpu()


def sentence_means(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, texts: Sequence[str], *,
                   seq_len: int, batch_size: int, desc: str = "sentences") -> torch.Tensor:
    """``[n, dim]``: each text's mean token vector (special tokens left out unless it has no other)."""
    enc = tokenizer(list(texts), truncation=True, max_length=seq_len, return_special_tokens_mask=True)
    ids, special = enc["input_ids"], enc["special_tokens_mask"]
    out = torch.zeros(len(ids), model.config.hidden_size)
    for batch, hidden in _hidden(model, tokenizer, ids, batch_size, desc):
        for row, i in enumerate(batch):
            keep = torch.tensor([not s for s in special[i]], dtype=torch.bool)
            out[i] = hidden[row, :len(special[i])][keep if keep.any() else torch.ones_like(keep)].mean(0)
    return out


def word_means(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase,
               sentences: Sequence[Sequence[str]], *, seq_len: int,
               batch_size: int, desc: str = "words") -> tuple[torch.Tensor, list[tuple[int, int]]]:
    """``([n_words, dim], [(sentence, word)])``: each word's mean token representation, for the words that fit
    in ``seq_len`` tokens, with their positions."""
    enc = tokenizer([list(s) for s in sentences], is_split_into_words=True,
                    truncation=True, max_length=seq_len)
    ids = enc["input_ids"]
    feats, where = [], []
    for batch, hidden in _hidden(model, tokenizer, ids, batch_size, desc):
        for row, i in enumerate(batch):
            words = enc.word_ids(int(i))
            present = sorted({w for w in words if w is not None})
            if not present:
                continue
            slot = {w: j for j, w in enumerate(present)}  # specials and padding go to the extra last slot
            index = torch.tensor([slot.get(w, len(present)) for w in words])
            sums = (torch.zeros(len(present) + 1, hidden.shape[-1])
                    .index_add_(0, index, hidden[row, :len(words)]))
            counts = torch.bincount(index, minlength=len(present) + 1).unsqueeze(1)
            feats.append(sums[:-1] / counts[:-1])
            where += [(int(i), w) for w in present]
    order = sorted(range(len(where)), key=where.__getitem__)  # sentence order, whatever the batching
    return (torch.cat(feats)[order] if feats else torch.zeros(0, model.config.hidden_size),
            [where[j] for j in order])


def task_features(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, df: pd.DataFrame, task: str, *,
                  seq_len: int, batch_size: int) -> tuple[torch.Tensor, list[str], int]:
    """``(features, labels, words_left_out)`` of one split in the task schema (vocab_transfer.data.tasks)."""
    if task == "nli":
        means = [sentence_means(model, tokenizer, df[c].tolist(), seq_len=seq_len, batch_size=batch_size,
                                desc=d) for c, d in (("premise", "premises"), ("hypothesis", "hypotheses"))]
        return torch.cat(means, 1), [str(x) for x in df["label"]], 0
    if task in ("pos", "ner"):
        sentences = [list(t) for t in df["tokens"]]
        feats, where = word_means(model, tokenizer, sentences, seq_len=seq_len, batch_size=batch_size)
        tags = [list(t) for t in df["tags"]]
        return feats, [str(tags[s][w]) for s, w in where], sum(len(s) for s in sentences) - len(where)
    raise ValueError(f"task {task!r} has no linear probe (probes read {', '.join(PROBE_TASKS)})")


def fit_probe(x: torch.Tensor, y: torch.Tensor, n_classes: int, *, l2: float, max_iter: int
              ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(weight, bias, mean, std)``: an L2-penalized multinomial logistic fit on standardized ``x``."""
    x = x.double()
    mean, std = x.mean(0), x.std(0).clamp_min(1e-6)
    xs = (x - mean) / std
    weight = torch.zeros(x.shape[1], n_classes, dtype=torch.float64, requires_grad=True)
    bias = torch.zeros(n_classes, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([weight, bias], lr=1, max_iter=max_iter, history_size=20,
                            line_search_fn="strong_wolfe", tolerance_grad=1e-7, tolerance_change=1e-10)

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(xs @ weight + bias, y) + l2 * weight.pow(2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    return weight.detach(), bias.detach(), mean, std


def predict(probe: tuple[torch.Tensor, ...], x: torch.Tensor) -> torch.Tensor:
    weight, bias, mean, std = probe
    return (((x.double() - mean) / std) @ weight + bias).argmax(1)


def probe_accuracy(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, train: pd.DataFrame,
                   test: pd.DataFrame, task: str, *, labels: Sequence[str], seq_len: int, batch_size: int,
                   l2: float, max_iter: int) -> dict:
    """Fit a probe on ``train`` and score it on ``test``: accuracy and the counts behind it."""
    model.eval()
    index = {label: i for i, label in enumerate(labels)}
    (x_train, y_train, cut_train), (x_test, y_test, cut_test) = (
        task_features(model, tokenizer, df, task, seq_len=seq_len, batch_size=batch_size)
        for df in (train, test))
    unknown = sorted({y for y in y_train + y_test if y not in index})
    if unknown:
        raise ValueError(f"labels {unknown[:5]} are not in the task's label list {list(labels)[:10]}")
    probe = fit_probe(x_train, torch.tensor([index[y] for y in y_train]),
                      len(labels), l2=l2, max_iter=max_iter)
    correct = (predict(probe, x_test) == torch.tensor([index[y] for y in y_test])).sum().item()
    most = max(sorted(set(y_train)), key=y_train.count)  # baseline: predict the commonest training label
    return {"accuracy": correct / max(len(y_test), 1), "majority": y_test.count(most) / max(len(y_test), 1),
            "train_items": len(y_train), "test_items": len(y_test),
            "train_examples": len(train), "test_examples": len(test), "words_left_out": cut_train + cut_test,
            "features": x_train.shape[1]}

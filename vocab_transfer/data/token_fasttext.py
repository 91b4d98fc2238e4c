"""Token-level fastText auxiliary embeddings (FOCUS §2 "auxiliary embeddings X", Appendix B).

The target corpus is pre-tokenized with the *target* tokenizer and fastText is trained on the
token sequences, so every target token that occurs at least ``min_count`` times gets a vector.
In the pipeline the token ids come from the corpus's token shard (:mod:`vocab_transfer.data.shards`), written
to fastText's input file one batch of documents at a time; a list of texts is tokenized here instead.

fastText trains in one call of its C++ library, which has no checkpoints: a job killed or signalled (SIGTERM)
during the training starts it over on its rerun.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import lazy
from .shards import Shard, encoder, open_shard
from .tokenizer import sample_positions

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

np = lazy.module("numpy")
torch = lazy.module("torch")

#: Named variants of the token-level fastText recipe: the ``fasttext`` keys a FOCUS method's ``fasttext:
#: <name>`` overrides (vocab_transfer.methods.focus.init_focus). ``deepfocus``: what the authors' package
#: trains (CBOW, 10 negatives; deepfocus.fasttext_embs.train_fasttext), where the paper says "mostly default
#: hyper-parameters".
FASTTEXT_PRESETS: dict[str, dict[str, Any]] = {"deepfocus": {"model": "cbow", "neg": 10}}


@dataclass
class TokenVectors:
    """Auxiliary vectors indexed by target token id."""

    vectors: torch.Tensor  # [V, dim] float32; zero rows where ``has_vector`` is False
    has_vector: torch.Tensor  # [V] bool: token reached fastText's minCount (and is not special)
    counts: torch.Tensor  # [V] int64: occurrences in the pre-tokenized corpus


def _encoded(texts: Iterable[str], tokenizer: PreTrainedTokenizerBase, counts: np.ndarray,
             batch_size: int = 1000) -> Iterator[np.ndarray]:
    """Token ids of each text (no special tokens), counted into ``counts`` batch by batch."""
    encode, batch = encoder(tokenizer), []
    for text in [*texts, None]:
        if text is not None:
            batch.append(text)
        if batch and (text is None or len(batch) == batch_size):
            ids = [np.asarray(x, dtype=np.int64) for x in encode(batch)]
            if ids:
                counts += np.bincount(np.concatenate(ids), minlength=len(counts))
            yield from ids
            batch = []


def _sampled(shard: Shard, max_tokens: int | None, seed: int) -> Iterator[np.ndarray]:
    """The shard's documents, or a seeded uniform sample of them with about ``max_tokens`` tokens."""
    if max_tokens is None or max_tokens >= shard.n_tokens:
        yield from shard.iter_docs()
        return

    k = max(1, round(shard.n_docs * max_tokens / shard.n_tokens))
    keep = sample_positions(shard.n_docs, k, seed)
    j = 0
    for i, ids in enumerate(shard.iter_docs()):
        if j < len(keep) and keep[j] == i:
            j += 1
            yield ids


def pretokenize(docs: Iterable[np.ndarray], tokenizer: PreTrainedTokenizerBase, path: str | os.PathLike,
                log_every: float = 30.0, info: dict | None = None) -> int:
    """Write one line of space-separated tokens per document (fastText's input); returns the tokens written
    (``info`` receives ``documents`` too)."""
    vocab = np.asarray(tokenizer.convert_ids_to_tokens(list(range(len(tokenizer)))), dtype=object)
    n = i = 0
    t0 = last = time.time()
    with open(path, "w", encoding="utf-8") as f:
        for i, ids in enumerate(docs, start=1):
            f.write(" ".join(vocab[ids].tolist()) + "\n")
            n += len(ids)
            if time.time() - last > log_every:
                last = time.time()
                print(f"pretokenize: {i:,} documents, {n:,} tokens ({n / (last - t0) / 1e6:.2f} M tokens/s)",
                      file=sys.stderr)
    if info is not None:
        info["documents"] = i
    return n


def train_token_fasttext(corpus: Shard | str | os.PathLike | Iterable[str],
                         tokenizer: PreTrainedTokenizerBase, *, dim: int = 300, min_count: int = 10,
                         epochs: int = 3, model: str = "skipgram", minn: int = 3, maxn: int = 6,
                         window: int = 5, neg: int = 5, threads: int = 1, seed: int = 0, verbose: int = 0,
                         max_tokens: int | None = None, workdir: str | None = None,
                         timings: dict | None = None) -> TokenVectors:
    """Train fastText on the target-tokenized corpus (paper: dim 300, minCount 10, 3 epochs; skipgram with
    fastText's other defaults, ``neg`` 5; the ``deepfocus`` package trains CBOW with ``neg`` 10).

    ``corpus`` is a token shard (a :class:`~vocab_transfer.data.shards.Shard` or its folder, tokenized with
    ``tokenizer``) or an iterable of texts. ``max_tokens`` (shards only) trains on a seeded uniform sample of
    documents holding about that many tokens instead of the whole corpus (the papers train on all of it; the
    returned ``counts`` are still the whole corpus's). ``verbose=2`` prints fastText's own progress line
    (words/s, loss, ETA) to stderr. With ``threads=1`` fastText is deterministic for a fixed ``seed``; more
    threads are faster but Hogwild updates make the vectors vary from run to run.

    ``timings`` receives where the time went: ``pretokenize_s`` (token ids to fastText's text input),
    ``fasttext_s`` (fastText's own training), ``vectors_s`` (reading the vectors back), the ``tokens`` and
    ``documents`` written and ``words_per_s``: the words fastText processed per second, counted as fastText
    counts them (tokens plus one end-of-line word per document, every epoch).
    """
    info = timings if timings is not None else {}
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        path = os.path.join(tmp, "pretokenized.txt")
        if isinstance(corpus, (str, Path)):
            corpus = open_shard(corpus)
        t0 = time.perf_counter()
        if isinstance(corpus, Shard):
            counts = corpus.counts()
            info["tokens"] = pretokenize(_sampled(corpus, max_tokens, seed), tokenizer, path, info=info)
        else:
            counts = np.zeros(len(tokenizer), dtype=np.int64)
            info["tokens"] = pretokenize(_encoded(corpus, tokenizer, counts), tokenizer, path, info=info)
        t1 = time.perf_counter()
        ft = train_unsupervised(input=path, model=model, dim=dim, minCount=min_count, epoch=epochs, minn=minn,
                                 maxn=maxn, ws=window, neg=neg, thread=threads, seed=seed, verbose=verbose)
        t2 = time.perf_counter()
    vectors = token_vectors(ft, tokenizer, counts)
    info.update(pretokenize_s=t1 - t0, fasttext_s=t2 - t1, vectors_s=time.perf_counter() - t2,
                words_per_s=epochs * (info["tokens"] + info["documents"]) / max(t2 - t1, 1e-9))
    return vectors


def token_vectors(ft, tokenizer: PreTrainedTokenizerBase, counts: np.ndarray | None = None) -> TokenVectors:
    """The vectors of a fastText model trained on ``tokenizer``'s token strings, indexed by token id.

    A token has a vector iff it is a word of the model (reached ``minCount``) and is not a special token:
    fastText's own ``</s>`` is its end-of-line marker, not the tokenizer's ``</s>``. ``counts``: 0 by default.
    """
    vocab = tokenizer.get_vocab()
    special = set(tokenizer.all_special_ids)
    vectors = torch.zeros(len(tokenizer), ft.get_dimension())
    has_vector = torch.zeros(len(tokenizer), dtype=torch.bool)
    for word in ft.words:
        idx = vocab.get(word)
        if idx is not None and idx not in special:
            vectors[idx] = torch.from_numpy(ft.get_word_vector(word).copy())
            has_vector[idx] = True
    counts = np.zeros(len(tokenizer), dtype=np.int64) if counts is None else counts
    return TokenVectors(vectors, has_vector, torch.from_numpy(counts))


def train_unsupervised(**kwargs):
    """``fasttext.train_unsupervised`` plus the ``seed`` argument its Python wrapper does not pass on."""
    from fasttext import FastText  # the fasttext-numpy2 wheel

    args = dict(FastText.unsupervised_default, **kwargs)
    a = FastText._build_args(args, set(kwargs))
    ft = FastText._FastText(args=a)
    FastText.fasttext.train(ft.f, a)
    ft.set_args(ft.f.getArgs())
    return ft

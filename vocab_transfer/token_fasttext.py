"""Token-level fastText auxiliary embeddings (FOCUS §2 "auxiliary embeddings X", Appendix B).

The target corpus is pre-tokenized with the *target* tokenizer and fastText is trained on the
token sequences, so every target token that occurs at least ``min_count`` times gets a vector.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import torch
from tqdm import tqdm
from transformers import PreTrainedTokenizerBase


@dataclass
class TokenVectors:
    """Auxiliary vectors indexed by target token id."""

    vectors: torch.Tensor  # [V, dim] float32; zero rows where ``has_vector`` is False
    has_vector: torch.Tensor  # [V] bool: token reached fastText's minCount (and is not special)
    counts: torch.Tensor  # [V] int64: occurrences in the pre-tokenized corpus


def pretokenize(texts: Iterable[str], tokenizer: PreTrainedTokenizerBase, path: str,
                batch_size: int = 1000) -> np.ndarray:
    """Write one line of space-separated target tokens per document; return per-id token counts."""
    counts = np.zeros(len(tokenizer), dtype=np.int64)
    texts = list(texts)
    with open(path, "w", encoding="utf-8") as f:
        for i in tqdm(range(0, len(texts), batch_size), desc="pretokenize", mininterval=5, unit="batch"):
            for ids in tokenizer(texts[i:i + batch_size], add_special_tokens=False)["input_ids"]:
                counts += np.bincount(ids, minlength=len(counts))
                f.write(" ".join(tokenizer.convert_ids_to_tokens(ids)) + "\n")
    return counts


def train_token_fasttext(texts: Iterable[str], tokenizer: PreTrainedTokenizerBase, *, dim: int = 300,
                         min_count: int = 10, epochs: int = 3, model: str = "skipgram", minn: int = 3,
                         maxn: int = 6, window: int = 5, threads: int = 1, seed: int = 0, verbose: int = 0,
                         workdir: str | None = None) -> TokenVectors:
    """Train fastText on the target-tokenized corpus (paper: dim 300, minCount 10, 3 epochs).

    ``verbose=2`` prints fastText's own progress line (words/s, loss, ETA) to stderr.
    With ``threads=1`` fastText is deterministic for a fixed ``seed``; more threads are faster
    but Hogwild updates make the vectors vary from run to run.
    """
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        path = os.path.join(tmp, "pretokenized.txt")
        counts = pretokenize(texts, tokenizer, path)
        ft = _train_unsupervised(input=path, model=model, dim=dim, minCount=min_count, epoch=epochs, minn=minn,
                                 maxn=maxn, ws=window, thread=threads, seed=seed, verbose=verbose)
    vocab = tokenizer.get_vocab()
    special = set(tokenizer.all_special_ids)
    vectors = torch.zeros(len(tokenizer), dim)
    has_vector = torch.zeros(len(tokenizer), dtype=torch.bool)
    for word in ft.words:  # fastText's own "</s>" (its line-end marker) is skipped with the specials
        idx = vocab.get(word)
        if idx is not None and idx not in special:
            vectors[idx] = torch.from_numpy(ft.get_word_vector(word).copy())
            has_vector[idx] = True
    return TokenVectors(vectors, has_vector, torch.from_numpy(counts))


def _train_unsupervised(**kwargs):
    """``fasttext.train_unsupervised`` plus the ``seed`` argument its Python wrapper does not pass on."""
    from fasttext import FastText  # the fasttext-numpy2 wheel

    args = dict(FastText.unsupervised_default, **kwargs)
    a = FastText._build_args(args, set(kwargs))
    ft = FastText._FastText(args=a)
    FastText.fasttext.train(ft.f, a)
    ft.set_args(ft.f.getArgs())
    return ft

"""Word-level static embeddings and their mapping to subword tokens (WECHSEL §3.1).

- :func:`train_word_fasttext` trains word-level fastText on a corpus (offline default);
- :func:`read_fasttext_vectors` reads pretrained fastText vectors (``.bin`` or ``.vec``, e.g. the
  ``cc.<lang>.300`` files WECHSEL and FOCUS use on clusters);
- :func:`tokenize_flatten_reduce` turns word vectors into subword-token vectors (WECHSEL eq. 1,
  Figure 2), used by WECHSEL and by FOCUS's "Word-fastText" row (FOCUS Table 4).
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .. import lazy
from ..io import atomic_path
from .token_fasttext import train_unsupervised

np = lazy.module("numpy")
torch = lazy.module("torch")
tqdm = lazy.module("tqdm")


@dataclass
class WordVectors:
    """Word-level static embeddings (fastText) of one language, most frequent word first."""

    words: list[str]  # [n]
    vectors: torch.Tensor  # [n, dim] float32
    counts: np.ndarray  # [n] int64 corpus frequency (or a wordfreq-derived pseudo-count)


#: Words: runs of letters/digits/marks joined by inner apostrophes or hyphens; other symbols alone.
WORD_RE = re.compile(r"[\w\u0300-\u036f\u064b-\u065f]+(?:['’\-][\w\u0300-\u036f\u064b-\u065f]+)*|[^\w\s]")


def word_tokenize(text: str) -> list[str]:
    """Split text into words the way fastText's released vectors roughly see it (case kept)."""
    return WORD_RE.findall(text)


def train_word_fasttext(texts: Iterable[str], *, dim: int = 300, min_count: int = 5, epochs: int = 5,
                        model: str = "skipgram", minn: int = 3, maxn: int = 6, window: int = 5, neg: int = 5,
                        threads: int = 1, bucket: int = 2000000, max_words: int | None = None, seed: int = 0,
                        verbose: int = 0, workdir: str | None = None,
                        model_path: str | os.PathLike | None = None) -> WordVectors:
    """Word-level fastText on ``texts``; words (``min_count`` or more occurrences) most frequent first.
    ``counts`` are the corpus frequencies WECHSEL's tokenize-flatten-reduce weights by (the paper uses the
    frequencies shipped with the fastText vectors, which are counts on their corpus). ``threads=1`` gives
    bit-identical vectors for a fixed ``seed``. ``model_path``: also save the fastText model (its character
    n-grams give vectors of any string: WECHSEL's fastText subword information, App. D)."""
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        path = os.path.join(tmp, "words.txt")
        with open(path, "w", encoding="utf-8") as f:
            for text in tqdm.tqdm(texts, desc="word-tokenize", mininterval=5, unit="doc"):
                f.write(" ".join(word_tokenize(text)) + "\n")
        ft = train_unsupervised(input=path, model=model, dim=dim, minCount=min_count, epoch=epochs, minn=minn,
                                 maxn=maxn, ws=window, neg=neg, thread=threads, seed=seed, verbose=verbose,
                                 bucket=bucket)
    if model_path is not None:
        with atomic_path(model_path) as tmp:
            ft.save_model(str(tmp))
    return from_fasttext_model(ft, max_words)


def from_fasttext_model(ft, max_words: int | None = None) -> WordVectors:
    """The words of a fastText model with their vectors (``get_word_vector``) and counts, most frequent first.
    fastText's own ``</s>`` (its end-of-line marker, counted once per line) is kept, as the ``wechsel``
    package keeps it: it is a word of the model like any other, and tokenize-flatten-reduce maps it to the
    tokens ``"</s>"`` and ``" </s>"`` tokenize to."""
    words, freqs = ft.get_words(include_freq=True)
    order = sorted(range(len(words))[: max_words or None], key=lambda i: (-int(freqs[i]), words[i]))
    words = [words[i] for i in order]
    vectors = torch.from_numpy(np.stack([ft.get_word_vector(w) for w in words]).astype(np.float32))
    return WordVectors(words, vectors, np.asarray([freqs[i] for i in order], dtype=np.int64))


def read_fasttext_vectors(path: str | os.PathLike, *, max_words: int | None = None, lang: str | None = None
                          ) -> WordVectors:
    """Pretrained fastText vectors: a ``.bin`` model (frequencies included) or a ``.vec`` text file. ``.vec``
    files carry no frequencies; their words are sorted by frequency, so counts are taken from ``wordfreq``
    for ``lang`` when it knows the language, else a Zipf law on the rank (count ∝ 1/rank) — a choice of ours,
    written to the log by the caller."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"word vectors {path} not found")
    if path.suffix == ".bin":
        import fasttext

        return from_fasttext_model(fasttext.load_model(str(path)), max_words)
    words, rows = [], []
    with open(path, encoding="utf-8", errors="replace") as f:
        n, dim = (int(x) for x in f.readline().split())
        for line in tqdm.tqdm(f, total=min(n, max_words or n), desc="read .vec", mininterval=5):
            parts = line.rstrip("\n").rsplit(" ", dim)
            if len(parts) != dim + 1:
                continue
            words.append(parts[0])
            rows.append(np.asarray(parts[1:], dtype=np.float32))
            if max_words and len(words) >= max_words:
                break
    return WordVectors(words, torch.from_numpy(np.stack(rows)), zipf_counts(words, lang))


class FasttextCcVectors:
    """``word_vectors.<lang>: {source: fasttext_cc}``: fastText's 300-d Common Crawl vectors
    ``cc.<lang>.300.bin``, downloaded from :attr:`url` on the login node (rule download_word_vectors; cluster
    only) and read like a ``path`` (:func:`read_fasttext_vectors`)."""

    name, url = "fasttext_cc", "https://dl.fbaipublicfiles.com/fasttext/vectors-crawl/cc.{lang}.300.bin.gz"

    def file(self, lang: str, paths) -> str:
        """Where the download lands (``paths``: vocab_transfer.workflow.paths)."""
        return paths.cc_word_vectors(lang)


#: The sources of pretrained word vectors by config value (``word_vectors.<lang>.source``).
WORD_VECTOR_SOURCES = {s.name: s for s in (FasttextCcVectors(),)}


def zipf_counts(words: list[str], lang: str | None) -> np.ndarray:
    """Pseudo-counts for frequency-sorted words: wordfreq frequencies (× 1e9) if available, else 1e9/rank."""
    ranks = 1e9 / np.arange(1, len(words) + 1)
    if lang is None:
        return ranks.astype(np.int64)
    try:
        from wordfreq import word_frequency

        freq = np.array([word_frequency(w, lang) for w in words]) * 1e9
    except (ImportError, LookupError, ValueError):
        return ranks.astype(np.int64)
    return np.where(freq > 0, freq, ranks).astype(np.int64)


def fasttext_subword_vectors(model, tokenizer, vocab_size: int | None = None, *, skip_special: bool = True
                             ) -> tuple[torch.Tensor, torch.Tensor]:
    """Subword embeddings from fastText's subword information (WECHSEL App. D): each token's decoded text
    (word marker stripped, as the ``wechsel`` package: ``tokenizer.decode(i).strip()``) is embedded as an
    out-of-vocabulary word, i.e. from its character n-grams. fastText returns zeros for a string it cannot
    decompose: those tokens get ``has_vector = False``, and so do special tokens with ``skip_special``.
    Returns ``(U [V, dim] float32, has_vector [V] bool)``."""
    vocab_size = vocab_size or len(tokenizer)
    special = set(getattr(tokenizer, "all_special_ids", [])) if skip_special else set()
    out = np.zeros((vocab_size, model.get_dimension()), dtype=np.float32)
    for i in tqdm.tqdm(range(min(vocab_size, len(tokenizer))), desc="fastText subwords", mininterval=5):
        if i not in special:
            out[i] = model.get_word_vector(tokenizer.decode([i]).strip())
    vectors = torch.from_numpy(out)
    return vectors, vectors.norm(dim=1) > 0


def tokenize_flatten_reduce(words: WordVectors, tokenizer, vocab_size: int | None = None,
                            batch_size: int = 10_000, *, skip_special: bool = True
                            ) -> tuple[torch.Tensor, torch.Tensor]:
    """Subword embeddings from word embeddings (WECHSEL §3.1, eq. 1, Figure 2): **tokenize** every word
    (without special tokens; the word alone and preceded by a space, as the WECHSEL reference code does:
    byte-level BPE marks word starts only after a space), **flatten** to (token, word) pairs, and **reduce**
    each token's words to their frequency-weighted mean ``u_x = Σ w_v f_v / Σ f_v``. As in WECHSEL's code, a
    word counts once for each of its two tokenizations that contains the token (twice where both do, as for
    most SentencePiece pieces). Tokens in no word get a zero vector and ``has_vector = False``. With
    ``skip_special`` (default) special tokens a word tokenizes to (``<unk>``, ``</s>`` for the word ``</s>``)
    get no vector; ``skip_special=False`` keeps them, as the ``wechsel`` package does. Returns ``(U [V, dim]
    float32, has_vector [V] bool)``; no Python loop over tokens (one ``index_add_`` per batch of words)."""
    vocab_size = vocab_size or len(tokenizer)
    dim = words.vectors.shape[1]
    num = torch.zeros(vocab_size, dim, dtype=torch.float64)
    den = torch.zeros(vocab_size, dtype=torch.float64)
    f = torch.as_tensor(words.counts, dtype=torch.float64).clamp(min=1)
    special = set(getattr(tokenizer, "all_special_ids", [])) if skip_special else set()
    for start in tqdm.tqdm(range(0, len(words.words), batch_size),
                           desc="tokenize-flatten-reduce", mininterval=5):
        batch = words.words[start:start + batch_size]
        ids = tokenizer(batch + [" " + w for w in batch], add_special_tokens=False)["input_ids"]
        lengths = [len(x) for x in ids]
        word_idx = np.repeat(np.tile(np.arange(start, start + len(batch)), 2), lengths)
        variant = np.repeat(np.arange(2).repeat(len(batch)), lengths)
        tok = np.fromiter((t for x in ids for t in x), dtype=np.int64, count=len(word_idx))
        # (token, word) per tokenization
        pairs = np.unique(np.stack([tok, word_idx, variant], 1), axis=0)[:, :2]
        pairs = pairs[~np.isin(pairs[:, 0], list(special))] if special else pairs
        t, w = torch.from_numpy(pairs[:, 0]), torch.from_numpy(pairs[:, 1])
        num.index_add_(0, t, words.vectors[w].double() * f[w, None])
        den.index_add_(0, t, f[w])
    has = den > 0
    u = torch.zeros(vocab_size, dim)
    u[has] = (num[has] / den[has, None]).float()
    return u, has

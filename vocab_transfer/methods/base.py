"""Shared types of the initialization methods."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import lazy
from ..data.token_fasttext import TokenVectors
from ..data.word_vectors import WordVectors

np = lazy.module("numpy")
pd = lazy.module("pandas")
torch = lazy.module("torch")
tqdm = lazy.module("tqdm")

#: Provenance labels of a target row, written to ``<method>.provenance.parquet``.
SPECIAL, COPIED, COMBINED, MAPPED, RANDOM = "special", "copied", "combined", "mapped", "random"


@dataclass
class TransferInputs:
    """Everything a method may read; the workflow loads only what the method declares it needs (each comment
    names the :class:`~.registry.Need` that fills a field).

    ``source_matrix`` is the source input-embedding matrix, with the MLM head's output bias as
    an extra last column when the source model has one (so every row-wise combination applies to
    a token's embedding and its bias alike; see docs/methods.md, "Output bias").
    """

    source_matrix: torch.Tensor  # [V_s, d(+1)]
    target_vocab_size: int
    overlap: pd.DataFrame  # columns of vocab_transfer.methods.overlap.OVERLAP_SCHEMA
    target_tokens: list[str] = field(default_factory=list)  # raw target vocabulary, by id
    source_tokens: list[str] = field(default_factory=list)  # raw source vocabulary, by id
    aux: TokenVectors | None = None  # fasttext: target-token fastText and ``counts``, target corpus
    # source_fasttext: source-token fastText and ``counts`` on the `source_language` corpus;
    # source_fasttext_target: the same on the target's own corpus
    source_aux: TokenVectors | None = None
    target_words: WordVectors | None = None  # target_words, source_words: word-level fastText
    source_words: WordVectors | None = None
    # word_fasttext_models: both languages' word-level ``fasttext`` models, for vectors of any string from its
    # character n-grams (WECHSEL App. D)
    source_word_model: Any = None
    target_word_model: Any = None
    dictionary: pd.DataFrame | None = None  # dictionary: ``source_word`` -> ``target_word``
    source_tokenizer: Any = None  # tokenizers (tokenize-flatten-reduce, vocabulary extension)
    target_tokenizer: Any = None
    language_tokenizer: Any = None  # language_tokenizer: trained on the source-language corpus (WECHSEL_EN)
    source_factors: dict[str, torch.Tensor] | None = None  # factorization: F, G (, Z), rule factorize_source
    # base_init: the tensors and provenance table of the init artifact a refining method starts from
    base_init: dict[str, torch.Tensor] | None = None
    base_provenance: pd.DataFrame | None = None
    train_text: str | None = None  # train_text: the target corpus's training split (corpus parquet, streamed)
    # the source model's folder (methods that run the model itself: Token Distillation), and a folder for the
    # state of a method that trains, so that a killed job resumes (kept out of the job's outputs)
    source_model_dir: str | None = None
    checkpoint_dir: str | None = None
    track_dir: str | None = None  # live curves of a method that trains (`report_to`: vocab_transfer.tracking)
    # how many of source_matrix's last columns are the MLM head's output bias (0 or 1)
    bias_columns: int = 0


@dataclass
class EmbeddingInit:
    """A method's result: one row per target token, and where each row came from."""

    matrix: torch.Tensor  # [V_t, d(+1)]
    provenance: np.ndarray  # [V_t] str, one of the labels above
    n_sources: np.ndarray  # [V_t] int: source rows combined into this row (0 for random rows)
    # further tensors saved next to ``embeddings`` in the init artifact (UNKs MF: the factors ``mf_F``,
    # ``mf_G``, ...); keys must not clash with ``embeddings`` / ``output_bias``
    extra: dict[str, torch.Tensor] = field(default_factory=dict)
    # [V_t] int: the most similar source token of a combined row (WECHSEL Table 6), else -1; None: unrecorded
    nearest: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = self.matrix.shape[0]
        if len(self.provenance) != n or len(self.n_sources) != n:
            raise ValueError("provenance and n_sources must have one entry per target token")


def normal_like(source: torch.Tensor, n: int, generator: torch.Generator) -> torch.Tensor:
    """``n`` rows from N(mean, std) per dimension of ``source`` (FOCUS App. B, WECHSEL §3, FOCUS fn. 9)."""
    mean, std = column_mean_std(source)
    return mean + std * torch.randn(n, source.shape[1], generator=generator, dtype=source.dtype)


def column_mean_std(x: torch.Tensor, chunk_rows: int = 2048) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-column mean and (unbiased) std from float32 chunk sums accumulated in float64: no full-size
    temporary (``x.std(0)`` copies a 250k × 768 matrix) and 10x faster than it on 2 cores."""
    n = x.shape[0]
    total = torch.zeros(x.shape[1], dtype=torch.float64)
    total_sq = torch.zeros_like(total)
    for chunk in x.split(chunk_rows):
        total += chunk.sum(0).double()
        total_sq += (chunk * chunk).sum(0).double()
    mean = total / n
    std = ((total_sq - n * mean**2) / max(n - 1, 1)).clamp(min=0).sqrt()
    return mean.to(x.dtype), std.to(x.dtype)


def specials(overlap: pd.DataFrame) -> pd.DataFrame:
    """The overlap's special tokens, matched by role."""
    return overlap[overlap["match"] == "special"]


def provenance_of(kind: torch.Tensor, overlap: pd.DataFrame | None = None) -> np.ndarray:
    """Provenance labels from the int8 ``kind`` codes that FOCUS, WECHSEL and Align Match return
    (0 copied / 1 combined / 2 random), with the special tokens of ``overlap`` (if given) marked special."""
    provenance = np.array([COPIED, COMBINED, RANDOM], dtype=object)[kind.numpy()]
    if overlap is not None:
        provenance[specials(overlap)["target_id"].to_numpy()] = SPECIAL
    return provenance


def overlap_ids(overlap: pd.DataFrame) -> tuple[torch.Tensor, torch.Tensor]:
    """``(target ids, source ids)`` of the overlap's rows, as long tensors."""
    return (torch.tensor(overlap["target_id"].to_numpy(), dtype=torch.long),
            torch.tensor(overlap["source_id"].to_numpy(), dtype=torch.long))


def labels(n: int, label: str = RANDOM, n_sources: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(provenance, n_sources)`` of ``n`` rows that all came the same way."""
    return np.full(n, label, dtype=object), np.full(n, n_sources, dtype=np.int64)


def copy_rows(matrix: torch.Tensor | None, provenance: np.ndarray, n_sources: np.ndarray,
              source: torch.Tensor, overlap: pd.DataFrame) -> None:
    """Copy the source rows of overlapping tokens (FOCUS eq. 1) in place; ``matrix=None``: labels only."""
    t, s = overlap_ids(overlap)
    if matrix is not None:
        matrix[t] = source[s]
    provenance[t.numpy()] = np.where(overlap["match"].to_numpy() == "special", SPECIAL, COPIED)
    n_sources[t.numpy()] = 1


def copied_start(source: torch.Tensor,
                 n: int, overlap: pd.DataFrame) -> tuple[torch.Tensor, np.ndarray, np.ndarray]:
    """The start of a method that fills the tokens outside the overlap: an ``[n, d]`` matrix with the
    overlapping tokens' source rows copied (:func:`copy_rows`), zeros elsewhere, their provenance (``RANDOM``
    for the rest) and ``n_sources``."""
    matrix = torch.zeros(n, source.shape[1], dtype=source.dtype)
    provenance, n_sources = labels(n)
    copy_rows(matrix, provenance, n_sources, source, overlap)
    return matrix, provenance, n_sources


def anchored_start(inputs: TransferInputs, overlap: pd.DataFrame) -> tuple:
    """:func:`copied_start` of ``overlap``, the anchors (target ids, source ids: the overlapping tokens with a
    token-level fastText vector) and the ids of the tokens to combine (the others with a vector; none when
    there is no anchor)."""
    has = inputs.aux.has_vector
    matrix, provenance, n_sources = copied_start(inputs.source_matrix, inputs.target_vocab_size, overlap)
    ov_t, ov_s = overlap_ids(overlap)
    todo = torch.from_numpy(np.flatnonzero(provenance == RANDOM))
    rows = todo[has[todo]] if has[ov_t].any() else todo[:0]
    return matrix, provenance, n_sources, ov_t[has[ov_t]], ov_s[has[ov_t]], rows


def fill_random(matrix: torch.Tensor, random: np.ndarray, source: torch.Tensor, seed: int) -> None:
    """Draw the rows where ``random`` is true (provenance ``RANDOM``, kind code 2), in id order, from
    :func:`normal_like` of ``source``."""
    if random.dtype != bool:
        raise TypeError(f"fill_random takes a boolean mask of the rows to draw, not {random.dtype} values")
    rand = torch.from_numpy(np.flatnonzero(random))
    matrix[rand] = normal_like(source, len(rand), torch.Generator().manual_seed(seed))


def batched(rows: torch.Tensor, size: int, desc: str, progress: bool = True):
    """``rows`` in slices of ``size``, with a progress bar (``desc``) when ``progress``."""
    for start in tqdm.tqdm(range(0, len(rows), size), desc=desc, disable=not progress, mininterval=5):
        yield rows[start:start + size]

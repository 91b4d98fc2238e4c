"""FVT, Fast Vocabulary Transfer (Gee et al. 2022, "Fast Vocabulary Transfer for Language Model Compression").

A target token that the source vocabulary also has keeps its source row (the overlap, specials by role); every
other target token is tokenized with the *source* tokenizer and gets the mean of the source rows of those
pieces (with the output bias, as every method here). It needs no auxiliary embeddings: the source tokenizer is
the whole bridge. FOCUS §5 discusses it as a cheaper alternative.
"""

from __future__ import annotations

from .. import lazy
from ..data.tokenizer import canonicalize_vocab
from .base import COMBINED, RANDOM, EmbeddingInit, TransferInputs, copied_start, fill_random
from .neighbours import mix_rows
from .registry import Need, register

np = lazy.module("numpy")
torch = lazy.module("torch")


def source_pieces(texts: list[str], bow: list[bool], source_tokenizer) -> list[list[int]]:
    """Source-tokenizer ids of each target token's surface text. A word-initial target token is tokenized as a
    word start: as is when the source tokenizer marks a word start itself (SentencePiece's "▁"), else after a
    space (byte-level BPE's "Ġ"). A word-internal piece is tokenized alone, so it becomes a word start too, as
    in FVT's own code (which strips WordPiece's "##")."""
    plain = source_tokenizer(texts, add_special_tokens=False)["input_ids"]
    source_bow = np.array([t.bow for t in canonicalize_vocab(source_tokenizer)], dtype=bool)
    redo = [i for i, (ids, b) in enumerate(zip(plain, bow, strict=True)) if b and ids
            and not source_bow[ids[0]]]
    if redo:
        spaced = source_tokenizer([" " + texts[i] for i in redo], add_special_tokens=False)["input_ids"]
        for i, ids in zip(redo, spaced, strict=True):
            plain[i] = ids
    return plain


@register("fvt", frozenset({Need.TOKENIZERS}))
def init_fvt(inputs: TransferInputs, *, seed: int) -> EmbeddingInit:
    """Config adapter: ``kind: fvt`` (the module docstring; pieces: :func:`source_pieces`). A token whose text
    gives no piece (an empty surface) is drawn from N(mean, std) of the source matrix, seeded."""
    n, source = inputs.target_vocab_size, inputs.source_matrix
    matrix, provenance, n_sources = copied_start(source, n, inputs.overlap)
    todo = np.flatnonzero(provenance == RANDOM)
    canon = canonicalize_vocab(inputs.target_tokenizer)
    pieces = source_pieces([canon[i].text for i in todo], [canon[i].bow for i in todo],
                           inputs.source_tokenizer)
    pieces = [[p for p in ids if p < source.shape[0]] for ids in pieces]  # never a padded row
    have = np.array([len(ids) > 0 for ids in pieces], dtype=bool)
    if have.any():
        rows, kept = todo[have], [ids for ids in pieces if ids]
        idx = torch.zeros(len(rows), max(map(len, kept)), dtype=torch.long)
        w = torch.zeros(len(rows), idx.shape[1], dtype=torch.float64)
        for r, ids in enumerate(kept):
            idx[r, : len(ids)] = torch.tensor(ids)
            w[r, : len(ids)] = 1.0 / len(ids)  # a piece repeated in a token counts as often as it occurs
        matrix[torch.from_numpy(rows)] = mix_rows(w, idx, source)
        provenance[rows], n_sources[rows] = COMBINED, [len(set(ids)) for ids in kept]
    fill_random(matrix, provenance == RANDOM, source, seed)
    return EmbeddingInit(matrix, provenance, n_sources)

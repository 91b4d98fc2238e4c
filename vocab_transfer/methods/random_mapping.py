"""Random: random mapping of source rows to target tokens (Zoph et al. 2016; FOCUS §3.1 "Random")."""

from __future__ import annotations

from .. import lazy
from .base import MAPPED, EmbeddingInit, TransferInputs, copy_rows, labels, specials
from .registry import register

np = lazy.module("numpy")
torch = lazy.module("torch")


def random_mapping_init(source: torch.Tensor, target_vocab_size: int, special_target_ids: np.ndarray,
                        special_source_ids: np.ndarray, *, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Give every non-special target token the row of a random, distinct non-special source token (drawn
    without replacement while the source has enough rows, with replacement beyond that).

    Special tokens are copied by role (``<mask>`` → ``<mask>``); the paper leaves this open and a random
    ``<mask>`` row would measure a broken mask, not the initialization. Returns ``(matrix [V_t, d],
    source_id_per_target [V_t])``."""
    g = torch.Generator().manual_seed(seed)
    rows = torch.empty(target_vocab_size, dtype=torch.long)
    rows[torch.tensor(np.array(special_target_ids), dtype=torch.long)] = torch.tensor(
        np.array(special_source_ids), dtype=torch.long)
    free_t = np.setdiff1d(np.arange(target_vocab_size), special_target_ids)
    pool = torch.as_tensor(np.setdiff1d(np.arange(source.shape[0]), special_source_ids))
    rows[free_t] = pool[torch.randperm(len(pool), generator=g)[: len(free_t)] if len(pool) >= len(free_t)
                        else torch.randint(len(pool), (len(free_t),), generator=g)]
    return source[rows].clone(), rows


@register("random")
def init_random(inputs: TransferInputs, *, seed: int) -> EmbeddingInit:
    """Config adapter: ``kind: random``."""
    n, special = inputs.target_vocab_size, specials(inputs.overlap)
    matrix, _ = random_mapping_init(inputs.source_matrix, n, special["target_id"].to_numpy(),
                                    special["source_id"].to_numpy(), seed=seed)
    provenance, n_sources = labels(n, MAPPED, 1)
    copy_rows(matrix, provenance, n_sources, inputs.source_matrix, special)
    return EmbeddingInit(matrix, provenance, n_sources)

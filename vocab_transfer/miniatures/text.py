"""Text of a language for the rehearsal's miniatures: sentences sampled from the language's word frequencies
(``wordfreq``'s most frequent words in their script, Zipf-distributed by rank), or, for a language wordfreq
lacks, from pseudo-words of syllables seeded by the language code. Deterministic for a language and seed."""

from __future__ import annotations

import functools
import random
import zlib

# wordfreq's codes for languages the configs name otherwise
WORDFREQ_CODES = {"tl": "fil", "no": "nb", "sr": "sh", "hr": "sh", "bs": "sh"}
SYLLABLES = [c + v for c in "bdfghklmnprstvwyz" for v in "aeiou"] + list("aeiou")


@functools.cache
def vocabulary(lang: str, size: int = 3000) -> tuple[tuple[str, ...], tuple[float, ...]]:
    """(words, weights) of ``lang``: wordfreq's ``size`` most frequent words, or pseudo-words, with Zipf
    weights by rank."""
    import wordfreq

    code = WORDFREQ_CODES.get(lang, lang.split("_")[0].split("-")[0])
    if code in wordfreq.available_languages():
        words = [w for w in wordfreq.top_n_list(code, size) if w.strip()]
    else:
        rng = random.Random(zlib.crc32(lang.encode()))
        lengths = (1, 2, 2, 3, 3, 4)  # syllables per pseudo-word
        words = list(dict.fromkeys("".join(rng.choice(SYLLABLES) for _ in range(rng.choice(lengths)))
                                   for _ in range(size * 2)))[:size]
    return tuple(words), tuple(1.0 / (rank + 1) for rank in range(len(words)))  # Zipf by rank


def sentences(lang: str, n: int, seed: int = 0, min_words: int = 4, max_words: int = 24) -> list[str]:
    """``n`` sentences of ``lang``, each ``min_words`` to ``max_words`` words ending with a full stop."""
    words, weights = vocabulary(lang)
    rng = random.Random(zlib.crc32(f"{lang}/{seed}".encode()))
    return [" ".join(rng.choices(words, weights, k=rng.randint(min_words, max_words))).capitalize() + "."
            for _ in range(n)]

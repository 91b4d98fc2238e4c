"""Miniatures of every hub resource a config names, written as a hub mirror (:mod:`vocab_transfer.mirror`), so
that the config's real download rules, loaders and jobs run offline on them.

:func:`hub_resources` reads what a config (a study, or a composite) fetches from the hub, from the plans the
workflow builds; :func:`build_mirror` writes one miniature of each: a model repository per hub model (the same
architecture at width 32 with random weights, and a few thousand tokens of the same tokenizer family trained
on the study's languages, :data:`FAMILIES`), a dataset repository per hub corpus in its own file layout and
compression (:func:`write_corpus`), task look-alikes (:mod:`.tasks`), fastText ``cc.<lang>.300.bin.gz`` (300
dimensions in name only) and MUSE dictionaries under the URLs the download rules fetch, and lm-eval tasks of
the config's benchmark names (multiple choice on local files).

Text comes from :mod:`.text`. Everything is seeded and written without time stamps (gzip time 0 and no name;
zstd, xz and parquet with fixed settings; fastText on one thread; WordPiece trained in a fixed order,
:func:`vocab_transfer.data.tokenizer.train_like`): the same config builds the same bytes.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import lzma
import multiprocessing
import os
import random
import shutil
import tempfile
import uuid
from dataclasses import dataclass, field
from functools import partial
from itertools import accumulate
from pathlib import Path
from types import SimpleNamespace as W

from ..data.dictionary import DICTIONARY_SOURCES, MuseDictionary
from ..data.word_vectors import FasttextCcVectors
from ..mirror import LM_EVAL_TASKS, url_file
from . import text

#: a hub model's miniature, from a word of its id (the first that matches): (word, transformers model type,
#: tokenizer family); FlauBERT's BPE has no fast implementation, so its miniature has a WordPiece tokenizer
FAMILIES: list[tuple[str, str, str]] = [
    ("xlm-roberta", "xlm-roberta", "unigram"), ("camembert", "camembert", "unigram"),
    ("flaubert", "flaubert", "wordpiece"), ("roberta", "roberta", "byte_level"),
    ("gpt2", "gpt2", "byte_level"), ("mistral", "mistral", "bpe"), ("llama", "llama", "bpe"),
    ("bert", "bert", "wordpiece")]
MUSE_URL, CC_URL = MuseDictionary.url, FasttextCcVectors.url


@dataclass
class Resources:
    """What a config fetches from the hub: model repositories (id -> languages their tokenizer covers),
    corpora (dataset id -> {config name or data_dir: language}), task specs, word-vector languages,
    dictionaries."""

    models: dict[str, set[str]] = field(default_factory=dict)
    corpora: dict[str, dict[tuple[str, str], str]] = field(default_factory=dict)
    tasks: dict[str, dict] = field(default_factory=dict)
    word_vectors: set[str] = field(default_factory=set)
    dictionaries: set[tuple[str, str]] = field(default_factory=set)
    benchmarks: dict[str, str] = field(default_factory=dict)  # lm-eval task -> language


CHECKOUT = Path(__file__).resolve().parents[2]  # where composites' studies are found after the cwd


def hub_resources(config: dict, base: str | Path = CHECKOUT) -> Resources:
    """Every hub resource the studies of ``config`` fetch, read from their plans."""
    from ..data.fetch import needs_fetch
    from ..data.sources import hub_arguments
    from ..workflow.studies import studies_of, study_plan

    out = Resources()
    for study in studies_of(config, base).values():
        plan = study_plan(study)
        cfg, langs = plan.cfg, {c.language or name for name, c in plan.cfg.corpora.items()} | {"en"}
        for repo in [*(source.model for s, source in cfg.sources.items() if not source.pretrain
                       and plan.source_model_dir(W(source=s)) == plan.paths.downloaded_model(s)),
                     *(m.pretrained for m in cfg.finetune.models.values()
                       if m.pretrained and not os.path.isdir(m.pretrained)), *plan.hub_tokenizers.values()]:
            out.models.setdefault(repo, set()).update(langs)
        for name, corpus in plan.config["corpora"].items():
            if needs_fetch(corpus):
                args = hub_arguments(corpus)
                key = (("data_dir", args["data_dir"]) if args.get("data_dir")
                       else ("name", args.get("name") or ""))
                out.corpora.setdefault(args["path"], {})[key] = cfg.corpora[name].language or name
        for spec in ({"task": e.task, **e.dataset} for e in map(plan.task_entry, plan.task_names)):
            if not spec.get("data_files"):
                out.tasks[json.dumps(spec, sort_keys=True)] = spec
        out.word_vectors |= {lang for lang, v in cfg.word_vectors.items() if v.source is not None}
        out.dictionaries |= {(slang, lang) for slang, by in cfg.dictionaries.items()
                             for lang, d in by.items() if DICTIONARY_SOURCES[d.source].url}
        if not cfg.eval.benchmarks.include_path:
            for target, names in cfg.eval.benchmarks.tasks.items():
                out.benchmarks |= {name: cfg.target_language(target) for name in names}
    return out


# ----------------------------------------------------------------------------------------------------- models
def family(repo: str) -> tuple[str, str]:
    """(transformers model type, tokenizer family) of hub model ``repo`` (:data:`FAMILIES`)."""
    name = repo.lower()
    for word, model_type, kind in FAMILIES:
        if word in name:
            return model_type, kind
    raise ValueError(f"{repo}: no miniature for this architecture; known: "
                     f"{', '.join(w for w, *_ in FAMILIES)} (vocab_transfer.miniatures.build.FAMILIES)")


def miniature_tokenizer(kind: str, texts: list[str], vocab_size: int):
    """A tokenizer of family ``kind`` laid out like its usual model's, trained on ``texts``;
    ``byte_level_mlm`` is RoBERTa's (byte-level BPE with ``<s> <pad> </s> <unk>`` first and ``<mask>``, ``<s>
    A </s>``)."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    from ..data.tokenizer import template_tokenizer, train_like, train_unigram_tokenizer

    if kind == "unigram":
        return train_unigram_tokenizer(texts, vocab_size, num_threads=1)
    if kind != "byte_level_mlm":
        return train_like(template_tokenizer(kind), texts, vocab_size)
    specials = {"bos_token": "<s>", "pad_token": "<pad>", "eos_token": "</s>", "unk_token": "<unk>",
                "mask_token": "<mask>"}
    backend = Tokenizer(models.BPE(vocab={}, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    backend.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials.values()])
    backend.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0), trim_offsets=False)
    return train_like(PreTrainedTokenizerFast(tokenizer_object=backend, **specials), texts, vocab_size)


def model_config(model_type: str, tokenizer):
    """A transformers config of ``model_type`` at the miniature's width, sized for ``tokenizer``."""
    from transformers import AutoConfig

    ids = {f"{k}_id": getattr(tokenizer, f"{k}_id") for k in ("pad_token", "bos_token", "eos_token")}
    ids = {k: v for k, v in ids.items() if v is not None}
    h, n, heads, inner = 32, 2, 2, 64  # width, layers, attention heads, feed-forward width
    dims = dict(hidden_size=h, num_hidden_layers=n, num_attention_heads=heads, intermediate_size=inner)
    if model_type == "gpt2":
        kw = dict(n_embd=h, n_layer=n, n_head=heads, n_positions=1024, **ids)
    elif model_type in ("mistral", "llama"):
        kw = dict(dims, num_key_value_heads=1, max_position_embeddings=4096, tie_word_embeddings=False, **ids)
    elif model_type == "flaubert":
        kw = dict(emb_dim=h, n_layers=n, n_heads=heads, max_position_embeddings=512,
                  pad_index=tokenizer.pad_token_id, unk_index=tokenizer.unk_token_id,
                  mask_index=tokenizer.mask_token_id)
    else:  # XLM-R, CamemBERT and RoBERTa offset positions by the pad id + 1
        offset = 2 if model_type in ("xlm-roberta", "camembert", "roberta") else 0
        kw = dict(dims, max_position_embeddings=512 + offset, **ids)
    return AutoConfig.for_model(model_type, vocab_size=len(tokenizer), **kw)


#: The licenses the hub cards of these models name, written into their miniatures' cards (read by the exports'
#: cards: vocab_transfer.export.source_license); a model not listed gets a card without one.
MODEL_LICENSES = {"FacebookAI/xlm-roberta-base": "mit", "FacebookAI/xlm-roberta-large": "mit",
                  "FacebookAI/roberta-base": "mit", "google-bert/bert-base-uncased": "apache-2.0",
                  "google-bert/bert-base-multilingual-cased": "apache-2.0", "openai-community/gpt2": "mit",
                  "mistralai/Mistral-7B-v0.1": "apache-2.0"}


def write_model(root: Path, repo: str, languages: set[str], *, vocab_size: int = 3000, seed: int = 0) -> Path:
    """A miniature of hub model ``repo`` in the mirror: tokenizer (trained on ``languages``), config, weights
    and a card (``README.md``, with the real model's license where :data:`MODEL_LICENSES` has it)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM

    from ..data.tokenizer import save_tokenizer

    model_type, kind = family(repo)
    texts = [s for lang in sorted(languages) for s in text.sentences(lang, 1500, seed)]
    tokenizer = miniature_tokenizer("byte_level_mlm" if model_type == "roberta" else kind, texts, vocab_size)
    config = model_config(model_type, tokenizer)
    torch.manual_seed(seed)
    auto = AutoModelForCausalLM if model_type in ("gpt2", "mistral", "llama") else AutoModelForMaskedLM
    model = auto.from_config(config)
    out = root / repo
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    save_tokenizer(tokenizer, tmp)
    license = f"license: {MODEL_LICENSES[repo]}\n" if repo in MODEL_LICENSES else ""
    (tmp / "README.md").write_text(f"---\n{license}library_name: transformers\n---\n# {repo} (a miniature)\n")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out


# ---------------------------------------------------------------------------------------------------- corpora
def _documents(lang: str, n: int, seed: int) -> list[list[str]]:
    """``n`` documents of 1-4 sentences."""
    sents, ends = text.sentences(lang, n * 3, seed), [0, *accumulate(1 + d % 4 for d in range(n))]
    return [sents[a:b] for a, b in zip(ends, ends[1:], strict=False)]


def _halves(rows: list) -> tuple[list, list]:
    half = (len(rows) + 1) // 2
    return rows[:half], rows[half:]


def _atomic(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return path


def _jsonl_bytes(rows) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")


def gzip_bytes(data: bytes) -> bytes:
    """gzip of ``data`` with no file name and time 0 in its header: the same bytes every time."""
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0) as g:
        g.write(data)
    return buf.getvalue()


def xz_bytes(data: bytes) -> bytes:
    """xz (preset 6, CRC-64 check, one stream) of ``data``, as ``xz`` writes it by default."""
    return lzma.compress(data, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64, preset=6)


def zstd_bytes(data: bytes) -> bytes:
    """zstd (level 3, one frame with content size and checksum, no worker threads) of ``data``."""
    import zstandard

    return zstandard.ZstdCompressor(level=3, write_checksum=True,
                                    write_content_size=True, threads=0).compress(data)


def _parquet(path: Path, rows: list[dict]) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), buf)
    return _atomic(path, buf.getvalue())


def _card(configs: list[tuple[str, list[tuple[str, str]]]], title: str) -> str:
    """A dataset card whose configurations pick their files: [(config name, [(split, path pattern)])]."""
    lines = ["---", "configs:"]
    for name, splits in configs:
        lines += [f"- config_name: {name}", "  data_files:"]
        for split, pattern in splits:
            lines += [f"  - split: {split}", f"    path: {pattern}"]
    return "\n".join([*lines, "---", f"# {title} (a miniature for the rehearsal)", ""])


def _uuid(*parts) -> str:
    return f"<urn:uuid:{uuid.UUID(bytes=hashlib.sha1('/'.join(map(str, parts)).encode()).digest()[:16])}>"


#: OSCAR 23.01 quality warnings dealt to every 50th document or so; the reader drops header, footer, noisy
OSCAR_WARNINGS = {7: ["short_sentences"], 19: ["header"], 31: ["tiny"], 43: ["noisy"], 47: ["footer"]}


def _oscar(out: Path, data_dir: str, lang: str, documents: list[list[str]]) -> list[Path]:
    """OSCAR 23.01 (oscar-corpus/OSCAR-2301): ``<lang>_meta/<lang>_meta_part_<k>.jsonl.zst`` (zstd JSON lines,
    a record per document: ``content``, ``warc_headers``, ``metadata`` with the identification, harmful
    perplexity, TLSH hash, quality warnings, categories and per-line identifications) and
    ``<lang>_meta/checksum.sha256``."""
    written, sums = [], []
    for part, chunk in enumerate(_halves(documents), 1):
        rows = []
        for i, doc in enumerate(chunk):
            content = "\n".join(doc)
            rows.append({"content": content, "warc_headers": {
                "warc-record-id": _uuid(data_dir, part, i),
                "warc-date": f"2022-11-{26 + i % 4:02d}T{i % 24:02d}:15:0{i % 10}Z",
                "content-type": "text/plain", "content-length": str(len(content.encode("utf-8"))),
                "warc-type": "conversion", "warc-identified-content-language": lang,
                "warc-refers-to": _uuid(data_dir, part, i, "refers"),
                "warc-target-uri": f"https://example.org/{lang}/{part}/{i}",
                "warc-block-digest": "sha1:" + hashlib.sha1(content.encode()).hexdigest().upper()[:32]},
                "metadata": {"identification": {"label": lang, "prob": round(0.7 + (i % 30) / 100, 6)},
                    "harmful_pp": round(100.0 + i % 997, 3),
                    "tlsh": "tlsh:" + hashlib.sha256(content.encode()).hexdigest().upper()[:70],
                    "quality_warnings": OSCAR_WARNINGS.get(i % 50), "categories": None,
                    "sentence_identifications": [{"label": lang, "prob": round(0.8 + (i + k) % 20 / 100, 6)}
                                                 for k, _ in enumerate(doc)]}})
        name, data = f"{data_dir}_part_{part}.jsonl.zst", zstd_bytes(_jsonl_bytes(rows))
        written.append(_atomic(out / data_dir / name, data))
        sums.append(f"{hashlib.sha256(data).hexdigest()}  {name}\n")
    written.append(_atomic(out / data_dir / "checksum.sha256", "".join(sums).encode()))
    return written


def _cc100(out: Path, name: str, documents: list[list[str]]) -> tuple[list[Path], tuple]:
    """CC-100 as data.statmt.org/cc-100 has it: ``<lang>.txt.xz``, a line per paragraph, an empty line after
    each document; the card's configuration ``<lang>`` picks it."""
    text = "".join(line + "\n" for doc in documents for line in (*doc, ""))
    return ([_atomic(out / f"{name}.txt.xz", xz_bytes(text.encode("utf-8")))],
            (name, [("train", f"{name}.txt.xz")]))


C4_ENGLISH = ("en", "en.noblocklist", "en.noclean", "realnewslike")  # allenai/c4's English: <name>/c4-train.*


def _c4(out: Path, name: str, documents: list[list[str]]) -> tuple[list[Path], tuple]:
    """mC4 as allenai/c4 has it: ``multilingual/c4-<lang>.tfrecord-<k>-of-<n>.json.gz`` and
    ``multilingual/c4-<lang>-validation.tfrecord-<k>-of-<n>.json.gz`` (gzip JSON lines ``text``,
    ``timestamp``, ``url``; here two of the train shards and one validation shard) with the card's
    configuration ``<lang>`` (C4 English: ``<config>/c4-train.<k>-of-01024.json.gz``)."""
    rows = [{"text": "\n".join(d), "timestamp": f"2019-04-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:00Z",
             "url": f"https://example.org/{name}/{i}"} for i, d in enumerate(documents)]
    held = max(1, len(rows) // 20)
    train, valid, tag = ((f"{name}/c4-train", f"{name}/c4-validation", "") if name in C4_ENGLISH
                         else (f"multilingual/c4-{name}", f"multilingual/c4-{name}-validation", "tfrecord-"))
    shards = [*((f"{train}.{tag}{k:05d}-of-01024.json.gz", c) for k, c in enumerate(_halves(rows[:-held]))),
              (f"{valid}.{tag}00000-of-00008.json.gz", rows[-held:])]
    return ([_atomic(out / path, gzip_bytes(_jsonl_bytes(chunk))) for path, chunk in shards],
            (name, [("train", f"{train}.*.json.gz"), ("validation", f"{valid}.*.json.gz")]))


def _wikipedia(out: Path, name: str, documents: list[list[str]]) -> tuple[list[Path], tuple]:
    """Wikipedia as wikimedia/wikipedia has it: ``<date>.<lang>/train-<k>-of-<n>.parquet`` with ``id``,
    ``url``, ``title``, ``text``, and the card's configuration ``<date>.<lang>``."""
    lang = name.split(".", 1)[-1]
    rows = [{"id": str(1000 + i), "url": f"https://{lang}.wikipedia.org/wiki?curid={1000 + i}",
             "title": d[0].split()[0].strip(".").title(), "text": "\n\n".join(d)}
            for i, d in enumerate(documents)]
    files = [_parquet(out / name / f"train-{k:05d}-of-00002.parquet", c) for k, c in enumerate(_halves(rows))]
    return files, (name, [("train", f"{name}/train-*")])


def _jsonl_config(out: Path, name: str, documents: list[list[str]]) -> tuple[list[Path], tuple]:
    """Any other hub corpus: ``<config>/train-<k>.jsonl`` rows ``id``, ``text``, ``url``."""
    rows = [{"id": f"{name}-{i}", "text": "\n".join(d), "url": f"https://example.org/{name}/{i}"}
            for i, d in enumerate(documents)]
    files = [_atomic(out / name / f"train-{k:05d}.jsonl", _jsonl_bytes(c))
             for k, c in enumerate(_halves(rows))]
    return files, (name, [("train", f"{name}/train-*.jsonl")])


#: The version of the corpora's file layout recorded in ``rehearsal.json``: 2, each hub corpus's own files and
#: compression (1, JSON lines for every corpus, is written again)
CORPUS_LAYOUT = 2
#: How a hub corpus repository lays out a configuration's files, by a word of its id (the first that matches)
LAYOUTS = [("cc100", _cc100), ("allenai/c4", _c4), ("wikipedia", _wikipedia)]
OSCAR_SCRIPT = ('"""The loading script of oscar-corpus/OSCAR-2301 stands here in the hub repository. The '
                'pipeline never\nruns it (datasets >= 4 refuses loading scripts): it reads the '
                '<lang>_meta/*.jsonl.zst files by name."""\n')


def write_corpus(root: Path, repo: str, configs: dict[tuple[str, str], str], *, docs: int = 1500,
                 seed: int = 0) -> list[Path]:
    """A hub dataset repository with one miniature corpus per config name (or ``data_dir``), in the file
    layout, compression and record format of the hub corpus of that repository (OSCAR 23.01, CC-100, mC4,
    Wikipedia; JSON lines otherwise), and a dataset card listing the configs; returns the files written."""
    out = root / repo
    written, cards = [], []
    for (how, value), lang in sorted(configs.items()):
        documents = _documents(lang, docs, seed)
        if how == "data_dir":  # OSCAR 23.01: <lang>_meta/<lang>_meta_part_<k>.jsonl.zst, no configurations
            written += _oscar(out, value, lang, documents)
            continue
        files, card = next((f for word, f in LAYOUTS if word in repo), _jsonl_config)(out, value, documents)
        written += files
        cards.append(card)
    if cards:
        written.append(_atomic(out / "README.md", _card(cards, repo).encode()))
    elif "OSCAR" in repo:  # the hub repository's card (no configurations) and loading script
        card = f"---\npretty_name: {repo}\n---\n# {repo} (a miniature)\n"
        written += [_atomic(out / "README.md", card.encode()),
                    _atomic(out / f"{repo.split('/')[-1]}.py", OSCAR_SCRIPT.encode())]
    return written


# --------------------------------------------------------------------------------- word vectors, dictionaries
def _train_vectors(corpus: str, out: str, dim: int) -> None:
    import fasttext

    # one thread, whose random generator fastText seeds with its fixed seed (0; the Python binding takes none)
    fasttext.train_unsupervised(corpus, model="skipgram", dim=dim, minCount=2, epoch=3, thread=1,
                                bucket=50000, lr=0.01, verbose=0).save_model(out)


def write_word_vectors(root: Path, lang: str, *, dim: int = 32, seed: int = 0) -> Path:
    """fastText ``cc.<lang>.300.bin.gz`` trained on the language's text, in a process of its own: a second
    training in one process may read what the first left in memory (vocab_transfer.memory), here even NaNs."""
    path = url_file(root, CC_URL.format(lang=lang))
    with tempfile.TemporaryDirectory() as tmp:
        corpus, model = Path(tmp) / "text.txt", Path(tmp) / "cc.bin"
        corpus.write_text("\n".join(text.sentences(lang, 4000, seed)), encoding="utf-8")
        job = multiprocessing.get_context("spawn").Process(target=_train_vectors,
                                                           args=(str(corpus), str(model), dim))
        job.start()
        job.join()
        if job.exitcode:
            raise RuntimeError(f"fastText on the {lang} miniature text failed (exit code {job.exitcode})")
        _atomic(path, gzip_bytes(model.read_bytes()))
    return path


def write_dictionary(root: Path, slang: str, lang: str, pairs: int = 1500) -> Path:
    """A MUSE-style dictionary ``<slang>-<lang>.txt``: the languages' words paired by frequency rank."""
    path = url_file(root, MUSE_URL.format(slang=slang, lang=lang))
    src, tgt = text.vocabulary(slang)[0], text.vocabulary(lang)[0]
    pairs_text = "".join(f"{s} {t}\n" for s, t in zip(src[:pairs], tgt[:pairs], strict=False))
    return _atomic(path, pairs_text.encode())


BENCHMARK_YAML = """task: {name}
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: multiple_choice
doc_to_text: "{{{{context}}}}"
doc_to_choice: "{{{{choices}}}}"
doc_to_target: "{{{{label}}}}"
target_delimiter: " "
metric_list:
""" + "".join(f"  - metric: {m}\n    aggregation: mean\n    higher_is_better: true\n"
              for m in ("acc", "acc_norm"))


def write_choice_task(folder: Path, name: str, halves: list[tuple[str, str]], *, data: str | None = None,
                      seed: int = 0) -> Path:
    """The lm-eval multiple-choice task ``name`` (``folder/name.yaml`` on ``folder/name.jsonl``): for each
    (context, ending) of ``halves``, the choices are its own ending and three others', at a seeded position.
    ``data``: the data file as the YAML names it (default: its absolute path; a relative one is read from the
    working directory)."""
    rng, rows, n = random.Random(seed), [], len(halves)
    for i, (context, ending) in enumerate(halves):
        others = [halves[j][1] for j in rng.sample([j for j in range(n) if j != i], 3)]
        label = rng.randrange(4)
        rows.append({"context": context, "choices": [*others[:label], ending, *others[label:]],
                     "label": label})
    path = _atomic(Path(folder) / f"{name}.jsonl", _jsonl_bytes(rows))
    yaml_path = path.with_suffix(".yaml")
    yaml_path.write_text(BENCHMARK_YAML.format(name=name, data=data or path.resolve()), encoding="utf-8")
    return yaml_path


def write_benchmark(root: Path, name: str, lang: str, n: int = 24, seed: int = 0) -> Path:
    """An lm-eval task ``name`` on local files (``<mirror>/lm_eval_tasks/``): ``n`` sentences of ``lang`` cut
    in two (:func:`write_choice_task`)."""
    halves = [(" ".join(w[:len(w) // 2]), " ".join(w[len(w) // 2:]))
              for w in (s.split() for s in text.sentences(lang, n, seed, min_words=6, max_words=12))]
    return write_choice_task(root / LM_EVAL_TASKS, name, halves, seed=seed)


# ----------------------------------------------------------------------------------------------------- mirror
def build_mirror(config: dict, root: str | Path, *, progress=print,
                 resources: Resources | None = None) -> dict:
    """Write a miniature of every hub resource ``config`` names into the mirror ``root``; returns what it
    holds, by kind. ``<root>/rehearsal.json`` records each miniature's spec and files, and a miniature whose
    files are all there is kept if its spec is unchanged or, for a model's languages and a corpus's configs,
    covers what ``config`` needs; one that does not cover them is written again for both, so that configs
    sharing a mirror do not rewrite each other's miniatures (delete the folder to rebuild everything).
    ``resources``: what to write instead of what ``config`` names (:func:`hub_resources`)."""
    from .tasks import write_task

    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    manifest = root / "rehearsal.json"
    before = json.loads(manifest.read_text(encoding="utf-8")).get("files", {}) if manifest.is_file() else {}
    res = resources if resources is not None else hub_resources(config)
    done: dict[str, list] = {kind: [] for kind in vars(res)}  # Resources' fields: models, corpora, ...
    files: dict[str, dict] = {}
    steps, kept = sum(map(len, vars(res).values())), 0

    def build(kind: str, key: str, spec, write, *, there: Path | None = None, grows: bool = False,
              layout: int | None = None) -> None:
        """Keep miniature ``key`` of ``kind`` as the manifest has it, or write it with ``write(spec)`` (its
        paths). ``grows``: ``spec`` is a list, and a recorded superset covers it. ``there``: a file that
        stands for the miniature where the manifest has no entry for it (a model or word vectors, slow to
        make). ``layout``: the version of the miniature's file layout; one of another is rewritten."""
        nonlocal kept
        spec, entry = json.loads(json.dumps(spec, sort_keys=True)), before.get(f"{kind}:{key}")
        if entry is None and there is not None and there.exists():
            entry = {"spec": spec, "files": [str(there.relative_to(root))]}
        whole = bool(entry and entry["files"] and all((root / f).exists() for f in entry["files"])
                     and entry.get("layout") == layout)
        had = {json.dumps(x): x for x in entry["spec"]} if whole and grows else {}
        if whole and (entry["spec"] == spec or grows and all(json.dumps(x) in had for x in spec)):
            files[f"{kind}:{key}"], kept, how = entry, kept + 1, "kept"
        else:
            if had:  # what the mirror had, and what config needs
                spec = sorted({**had, **{json.dumps(x): x for x in spec}}.values())
            paths = write(spec)
            paths = [paths] if isinstance(paths, (str, Path)) else paths
            files[f"{kind}:{key}"] = {"spec": spec, "files": [str(Path(x).relative_to(root)) for x in paths],
                                      **({"layout": layout} if layout is not None else {})}
            how = "written"
        done[kind].append(key)
        progress(f"[{sum(map(len, done.values()))}/{steps}] {kind}: {key} ({how})")

    for repo, languages in sorted(res.models.items()):
        build("models", repo, sorted(languages), partial(write_model, root, repo),
              there=root / repo / "config.json", grows=True)
    for repo, configs in sorted(res.corpora.items()):
        build("corpora", repo, sorted([*k, lang] for k, lang in configs.items()),
              partial(_corpus, root, repo), layout=CORPUS_LAYOUT, grows=True)
    for key, spec in sorted(res.tasks.items()):
        build("tasks", key, spec, partial(write_task, root))
    for lang in sorted(res.word_vectors):
        build("word_vectors", lang, lang, partial(write_word_vectors, root),
              there=url_file(root, CC_URL.format(lang=lang)))
    for slang, lang in sorted(res.dictionaries):
        build("dictionaries", f"{slang}-{lang}", [slang, lang], lambda spec: write_dictionary(root, *spec))
    for name, lang in sorted(res.benchmarks.items()):
        build("benchmarks", name, lang, partial(_benchmark, root, name))
    _atomic(manifest, (json.dumps({"made": done, "files": files}, indent=1) + "\n").encode())
    progress(f"{kept} of {steps} miniatures kept from an earlier build")
    return done


def _corpus(root: Path, repo: str, spec: list) -> list[Path]:
    for _, value, _ in spec:  # what the JSON-lines layout before CORPUS_LAYOUT 2 wrote for every hub corpus
        for old in (*(f"{value}_part_{k}.jsonl" for k in (1, 2)), *(f"train-{k:05d}.jsonl" for k in (0, 1))):
            (root / repo / value / old).unlink(missing_ok=True)
    return write_corpus(root, repo, {(how, value): lang for how, value, lang in spec})


def _benchmark(root: Path, name: str, lang: str) -> tuple[Path, Path]:
    return (yaml_path := write_benchmark(root, name, lang)), yaml_path.with_suffix(".jsonl")

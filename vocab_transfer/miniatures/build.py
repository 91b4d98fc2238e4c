"""Miniatures of every hub resource a config names, written as a hub mirror (:mod:`vocab_transfer.mirror`), so that
the config's real download rules, loaders and jobs run offline on them.

:func:`hub_resources` reads what a config (a study, or a composite of studies) fetches from the hub, from the same
plans the workflow builds; :func:`build_mirror` writes one miniature of each:

- a model repository per hub model (sources, reference models, ``tokenizer.pretrained``): the same architecture as
  the real one, a few thousand tokens of the same tokenizer family (XLM-R/CamemBERT: Unigram; BERT: WordPiece;
  RoBERTa/GPT-2: byte-level BPE; Mistral/Llama: SentencePiece-style BPE with byte fallback), trained here on the
  study's languages, and random weights of width 32 (:data:`FAMILIES`);
- a dataset repository per hub corpus in its layout: CC100 (one line per row, empty rows between documents), OSCAR
  23.01 (``<lang>_meta/*.jsonl`` rows with ``content`` and quality warnings), mC4 and Wikipedia (a config per
  language, ``text`` rows), with a dataset card that picks the files as the hub's does;
- task look-alikes in the hub's parquet-export layout (:mod:`.tasks`);
- fastText ``cc.<lang>.300.bin.gz`` (trained here, 300 dimensions in name only) and MUSE dictionaries, under the URLs
  the download rules fetch;
- lm-eval tasks of the same names as the config's benchmarks, multiple choice on local files.

Text comes from :mod:`.text`. Everything is seeded: the same config builds the same files.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from types import SimpleNamespace as W

from . import text

#: a hub model's miniature, from a word of its id (the first that matches): (word, transformers model type, tokenizer
#: family); FlauBERT's BPE has no fast implementation, so its miniature has a WordPiece tokenizer
FAMILIES: list[tuple[str, str, str]] = [
    ("xlm-roberta", "xlm-roberta", "unigram"),
    ("camembert", "camembert", "unigram"),
    ("flaubert", "flaubert", "wordpiece"),
    ("roberta", "roberta", "byte_level"),
    ("gpt2", "gpt2", "byte_level"),
    ("mistral", "mistral", "bpe"),
    ("llama", "llama", "bpe"),
    ("bert", "bert", "wordpiece"),
]
WIDTH = dict(hidden_size=32, num_layers=2, num_heads=2, intermediate_size=64)
MUSE_URL = "https://dl.fbaipublicfiles.com/arrival/dictionaries/{slang}-{lang}.txt"
CC_URL = "https://dl.fbaipublicfiles.com/fasttext/vectors-crawl/cc.{lang}.300.bin.gz"


@dataclass
class Resources:
    """What a config fetches from the hub: model repositories (id -> languages their tokenizer covers), corpora
    (dataset id -> {config name or data_dir: language}), task specs, word-vector languages, dictionary pairs."""

    models: dict[str, set[str]] = field(default_factory=dict)
    corpora: dict[str, dict[tuple[str, str], str]] = field(default_factory=dict)
    tasks: dict[str, dict] = field(default_factory=dict)
    word_vectors: set[str] = field(default_factory=set)
    dictionaries: set[tuple[str, str]] = field(default_factory=set)
    benchmarks: dict[str, str] = field(default_factory=dict)  # lm-eval task -> language


CHECKOUT = Path(__file__).resolve().parents[2]  # where a composite's study files are looked up after the working dir


def hub_resources(config: dict, base: str | Path = CHECKOUT) -> Resources:
    """Every hub resource the studies of ``config`` fetch, read from their plans."""
    from ..data.fetch import needs_fetch
    from ..data.sources import hub_arguments
    from ..workflow.studies import studies_of, study_plan

    out = Resources()
    for study in studies_of(config, base).values():
        plan = study_plan(study)
        cfg, langs = plan.cfg, {c.language or name for name, c in plan.cfg.corpora.items()} | {"en"}
        for s, source in cfg.sources.items():
            if not source.pretrain and plan.source_model_dir(W(source=s)) == plan.paths.downloaded_model(s):
                out.models.setdefault(source.model, set()).update(langs)
        for model in cfg.finetune.models.values():
            if model.pretrained and not os.path.isdir(model.pretrained):
                out.models.setdefault(model.pretrained, set()).update(langs)
        for repo in plan.hub_tokenizers.values():
            out.models.setdefault(repo, set()).update(langs)
        for name, corpus in plan.config["corpora"].items():
            if needs_fetch(corpus):
                args = hub_arguments(corpus)
                key = ("data_dir", args["data_dir"]) if args.get("data_dir") else ("name", args.get("name") or "")
                out.corpora.setdefault(args["path"], {})[key] = cfg.corpora[name].language or name
        for t in plan.task_names:
            entry = plan.task_entry(t)
            spec = {"task": entry.task, **entry.dataset}
            if not spec.get("data_files"):
                out.tasks[json.dumps(spec, sort_keys=True)] = spec
        out.word_vectors |= {lang for lang, v in cfg.word_vectors.items() if v.source == "fasttext_cc"}
        out.dictionaries |= {(slang, lang) for slang, by in cfg.dictionaries.items()
                             for lang, d in by.items() if d.source == "muse"}
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
    raise ValueError(f"{repo}: no miniature for this architecture; known: {', '.join(w for w, *_ in FAMILIES)} "
                     "(vocab_transfer.miniatures.build.FAMILIES)")


def miniature_tokenizer(kind: str, texts: list[str], vocab_size: int):
    """A tokenizer of family ``kind`` laid out like its usual model's, trained on ``texts``; ``byte_level_mlm`` is
    RoBERTa's (byte-level BPE with ``<s> <pad> </s> <unk>`` first and ``<mask>``, ``<s> A </s>``)."""
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
    h, n, heads, inner = (WIDTH[k] for k in ("hidden_size", "num_layers", "num_heads", "intermediate_size"))
    if model_type == "gpt2":
        return AutoConfig.for_model("gpt2", vocab_size=len(tokenizer), n_embd=h, n_layer=n, n_head=heads,
                                    n_positions=1024, **ids)
    if model_type in ("mistral", "llama"):
        return AutoConfig.for_model(model_type, vocab_size=len(tokenizer), hidden_size=h, num_hidden_layers=n,
                                    num_attention_heads=heads, num_key_value_heads=1, intermediate_size=inner,
                                    max_position_embeddings=4096, tie_word_embeddings=False, **ids)
    if model_type == "flaubert":
        return AutoConfig.for_model("flaubert", vocab_size=len(tokenizer), emb_dim=h, n_layers=n, n_heads=heads,
                                    max_position_embeddings=512, pad_index=tokenizer.pad_token_id,
                                    unk_index=tokenizer.unk_token_id, mask_index=tokenizer.mask_token_id)
    offset = 2 if model_type in ("xlm-roberta", "camembert", "roberta") else 0  # positions offset by pad id + 1
    return AutoConfig.for_model(model_type, vocab_size=len(tokenizer), hidden_size=h, num_hidden_layers=n,
                                num_attention_heads=heads, intermediate_size=inner,
                                max_position_embeddings=512 + offset, **ids)


def write_model(root: Path, repo: str, languages: set[str], *, vocab_size: int = 3000, seed: int = 0) -> Path:
    """A miniature of hub model ``repo`` in the mirror: tokenizer (trained on ``languages``), config, weights."""
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM

    from ..data.tokenizer import save_tokenizer

    model_type, kind = family(repo)
    if model_type in ("roberta",):
        kind = "byte_level_mlm"
    texts = [s for lang in sorted(languages) for s in text.sentences(lang, 1500, seed)]
    tokenizer = miniature_tokenizer(kind, texts, vocab_size)
    config = model_config(model_type, tokenizer)
    torch.manual_seed(seed)
    auto = AutoModelForCausalLM if model_type in ("gpt2", "mistral", "llama") else AutoModelForMaskedLM
    model = auto.from_config(config)
    out = root / repo
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    save_tokenizer(tokenizer, tmp)
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out


# ---------------------------------------------------------------------------------------------------- corpora
def _documents(lang: str, n: int, seed: int) -> list[list[str]]:
    """``n`` documents of 1-4 sentences."""
    sents = text.sentences(lang, n * 3, seed)
    out, i = [], 0
    for d in range(n):
        k = 1 + d % 4
        out.append(sents[i:i + k])
        i += k
    return out


def _jsonl(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    os.replace(tmp, path)


def write_corpus(root: Path, repo: str, configs: dict[tuple[str, str], str], *, docs: int = 1500,
                 seed: int = 0) -> Path:
    """A hub dataset repository with one miniature corpus per config name (or ``data_dir``), rows as the hub corpus
    of that repository has them, and a dataset card listing the configs."""
    out = root / repo
    cards = []
    for (how, value), lang in sorted(configs.items()):
        documents = _documents(lang, docs, seed)
        if how == "data_dir":  # OSCAR 23.01: <lang>_meta/<lang>_meta_part_<k>.jsonl, rows {content, metadata}
            half = len(documents) // 2
            for part, chunk in enumerate((documents[:half], documents[half:]), 1):
                _jsonl(out / value / f"{value}_part_{part}.jsonl",
                       ({"content": "\n".join(d), "warc_headers": {"warc-record-id": f"{value}-{part}-{i}"},
                         "metadata": {"quality_warnings": ["short_sentences"] if i % 50 == 7 else None}}
                        for i, d in enumerate(chunk)))
            continue
        if "cc100" in repo:  # one line per row, an empty row after each document
            rows = [{"id": str(i), "text": line} for i, line in
                    enumerate(x for d in documents for x in (*d, ""))]
        else:  # mC4 / Wikipedia: a document per row
            rows = [{"id": f"{value}-{i}", "text": "\n".join(d), "url": f"https://example.org/{value}/{i}"}
                    for i, d in enumerate(documents)]
        half = len(rows) // 2
        for part, chunk in enumerate((rows[:half], rows[half:])):
            _jsonl(out / value / f"train-{part:05d}.jsonl", chunk)
        cards.append(f"- config_name: {value}\n  data_files:\n  - split: train\n    path: {value}/train-*.jsonl\n")
    if cards:
        (out / "README.md").write_text("---\nconfigs:\n" + "".join(cards) + "---\n# a miniature for the rehearsal\n",
                                       encoding="utf-8")
    return out


# ---------------------------------------------------------------------------------- word vectors, dictionaries
def _url_file(root: Path, url: str) -> Path:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    path = root / "urls" / parts.netloc / parts.path.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _train_vectors(corpus: str, out: str, dim: int) -> None:
    import fasttext

    fasttext.train_unsupervised(corpus, model="skipgram", dim=dim, minCount=2, epoch=3, thread=1, bucket=50000,
                                lr=0.01, verbose=0).save_model(out)


def write_word_vectors(root: Path, lang: str, *, dim: int = 32, seed: int = 0) -> Path:
    """fastText ``cc.<lang>.300.bin.gz`` trained on the language's text, in a process of its own: a second training
    in one process may read what the first left in memory (vocab_transfer.memory), here even NaNs."""
    import multiprocessing
    import tempfile

    path = _url_file(root, CC_URL.format(lang=lang))
    with tempfile.TemporaryDirectory() as tmp:
        corpus, model = Path(tmp) / "text.txt", Path(tmp) / "cc.bin"
        corpus.write_text("\n".join(text.sentences(lang, 4000, seed)), encoding="utf-8")
        job = multiprocessing.get_context("spawn").Process(target=_train_vectors, args=(str(corpus), str(model), dim))
        job.start()
        job.join()
        if job.exitcode:
            raise RuntimeError(f"fastText on the {lang} miniature text failed (exit code {job.exitcode})")
        with open(model, "rb") as f, gzip.GzipFile(path.with_name(path.name + ".tmp"), "wb", mtime=0) as g:
            shutil.copyfileobj(f, g)
    os.replace(path.with_name(path.name + ".tmp"), path)
    return path


def write_dictionary(root: Path, slang: str, lang: str, pairs: int = 1500) -> Path:
    """A MUSE-style dictionary ``<slang>-<lang>.txt``: the languages' words paired by frequency rank."""
    path = _url_file(root, MUSE_URL.format(slang=slang, lang=lang))
    src, tgt = text.vocabulary(slang)[0], text.vocabulary(lang)[0]
    path.write_text("".join(f"{s} {t}\n" for s, t in zip(src[:pairs], tgt[:pairs], strict=False)), encoding="utf-8")
    return path


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
  - metric: acc
    aggregation: mean
    higher_is_better: true
  - metric: acc_norm
    aggregation: mean
    higher_is_better: true
"""


def write_choice_task(folder: Path, name: str, halves: list[tuple[str, str]], *, data: str | None = None,
                      seed: int = 0) -> Path:
    """The lm-eval multiple-choice task ``name`` (``folder/name.yaml`` on ``folder/name.jsonl``): for each (context,
    ending) of ``halves``, the choices are its own ending and three others', at a seeded position. ``data``: the
    data file as the YAML names it (default: its absolute path; a relative one is read from the working directory)."""
    import random

    rng, rows, n = random.Random(seed), [], len(halves)
    for i, (context, ending) in enumerate(halves):
        others = [halves[j][1] for j in rng.sample([j for j in range(n) if j != i], 3)]
        label = rng.randrange(4)
        rows.append({"context": context, "choices": others[:label] + [ending] + others[label:], "label": label})
    path = Path(folder) / f"{name}.jsonl"
    _jsonl(path, rows)
    yaml_path = path.with_suffix(".yaml")
    yaml_path.write_text(BENCHMARK_YAML.format(name=name, data=data or path.resolve()), encoding="utf-8")
    return yaml_path


def write_benchmark(root: Path, name: str, lang: str, n: int = 24, seed: int = 0) -> Path:
    """An lm-eval task ``name`` on local files (``<mirror>/lm_eval_tasks/``): ``n`` sentences of ``lang`` cut in
    two (:func:`write_choice_task`)."""
    from ..mirror import LM_EVAL_TASKS

    halves = [(" ".join(w[:len(w) // 2]), " ".join(w[len(w) // 2:]))
              for w in (s.split() for s in text.sentences(lang, n, seed, min_words=6, max_words=12))]
    return write_choice_task(root / LM_EVAL_TASKS, name, halves, seed=seed)


# ----------------------------------------------------------------------------------------------------- mirror
def build_mirror(config: dict, root: str | Path, *, progress=print) -> dict:
    """Write a miniature of every hub resource ``config`` names into the mirror ``root``; returns what it holds, by
    kind. ``<root>/rehearsal.json`` records each miniature's spec and files, and a miniature whose files are all
    there is kept if its spec is unchanged or, for a model's languages and a corpus's configs, covers what
    ``config`` needs; one that does not cover them is written again for both, so that configs sharing a mirror
    do not rewrite each other's miniatures (delete the folder to rebuild everything)."""
    from .tasks import write_task

    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    manifest = root / "rehearsal.json"
    before = json.loads(manifest.read_text(encoding="utf-8")).get("files", {}) if manifest.is_file() else {}
    res = hub_resources(config)
    done = {"models": [], "corpora": [], "tasks": [], "word_vectors": [], "dictionaries": [], "benchmarks": []}
    files: dict[str, dict] = {}
    steps = sum(map(len, (res.models, res.corpora, res.tasks, res.word_vectors, res.dictionaries, res.benchmarks)))
    kept = 0

    def build(kind: str, key: str, spec, write, *, there: Path | None = None, grows: bool = False) -> None:
        """Keep miniature ``key`` of ``kind`` as the manifest has it, or write it with ``write(spec)`` (its paths).
        ``grows``: ``spec`` is a list, and a recorded superset covers it. ``there``: a file that stands for the
        miniature where the manifest has no entry for it (a model or word vectors, slow to make)."""
        nonlocal kept
        spec, entry = json.loads(json.dumps(spec, sort_keys=True)), before.get(f"{kind}:{key}")
        if entry is None and there is not None and there.exists():
            entry = {"spec": spec, "files": [str(there.relative_to(root))]}
        whole = bool(entry and entry["files"] and all((root / f).exists() for f in entry["files"]))
        had = {json.dumps(x): x for x in entry["spec"]} if whole and grows else {}
        if whole and (entry["spec"] == spec or grows and all(json.dumps(x) in had for x in spec)):
            files[f"{kind}:{key}"], kept, how = entry, kept + 1, "kept"
        else:
            if had:  # what the mirror had, and what config needs
                spec = sorted({**had, **{json.dumps(x): x for x in spec}}.values())
            paths = write(spec)
            paths = [paths] if isinstance(paths, (str, Path)) else paths
            files[f"{kind}:{key}"] = {"spec": spec, "files": [str(Path(x).relative_to(root)) for x in paths]}
            how = "written"
        done[kind].append(key)
        progress(f"[{sum(map(len, done.values()))}/{steps}] {kind}: {key} ({how})")

    for repo, languages in sorted(res.models.items()):
        build("models", repo, sorted(languages), partial(write_model, root, repo), there=root / repo / "config.json",
              grows=True)
    for repo, configs in sorted(res.corpora.items()):
        build("corpora", repo, sorted([*k, lang] for k, lang in configs.items()), partial(_corpus, root, repo),
              grows=True)
    for key, spec in sorted(res.tasks.items()):
        build("tasks", key, spec, partial(write_task, root))
    for lang in sorted(res.word_vectors):
        build("word_vectors", lang, lang, partial(write_word_vectors, root),
              there=_url_file(root, CC_URL.format(lang=lang)))
    for slang, lang in sorted(res.dictionaries):
        build("dictionaries", f"{slang}-{lang}", [slang, lang], partial(_dictionary, root))
    for name, lang in sorted(res.benchmarks.items()):
        build("benchmarks", name, lang, partial(_benchmark, root, name))
    tmp = manifest.with_name(manifest.name + ".tmp")
    tmp.write_text(json.dumps({"made": done, "files": files}, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, manifest)
    progress(f"{kept} of {steps} miniatures kept from an earlier build")
    return done


def _corpus(root: Path, repo: str, spec: list) -> Path:
    return write_corpus(root, repo, {(how, value): lang for how, value, lang in spec})


def _dictionary(root: Path, spec: list) -> Path:
    return write_dictionary(root, *spec)


def _benchmark(root: Path, name: str, lang: str) -> tuple[Path, Path]:
    yaml_path = write_benchmark(root, name, lang)
    return yaml_path, yaml_path.with_suffix(".jsonl")

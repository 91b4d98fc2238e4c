"""One transfer in one call: ``vocab_transfer.transfer(...)`` and ``vocab-transfer transfer ...``.

A transfer writes the config of a one-target study (the source model, the target tokenizer or the size of one
to train, the corpus, one method and its parameters) and runs the workflow's own DAG on it up to the exported
model (rule ``export_init_model``), in a working directory of its own. So the tensors and the model card are
the DAG's, bit for bit, a rerun with the same arguments does nothing, and a changed parameter reruns only what
it changes. A 7B decoder takes the DAG's out-of-core path (the model is never loaded).

```python
from vocab_transfer import transfer
folder = transfer("FacebookAI/xlm-roberta-base", 50000, method="focus", corpus="sw.txt.gz", out="xlmr-sw")
```

The DAG, and so this call, runs from a checkout of the repository (the package installed from it, as
``scripts/setup_env.sh`` does): the Snakefile, rules and scripts live there, not in the package.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from .typed import SEED_MAX, VOCAB_SIZE_MAX, ModelError, Seed, VocabSize, YamlError, check_value, load_yaml

REPO = Path(os.environ.get("VOCAB_TRANSFER_ROOT") or Path(__file__).resolve().parents[1])
SOURCE, TARGET = "source", "target"
#: The rules whose model folders ``--out`` copies, and so replaces (:func:`check_out`).
EXPORT_RULES = ("export_init_model", "export_lapt_model")
EVAL_SEQ_LEN = 256  # the config's default eval.seq_len (FOCUS Table 4)


def _hub_id(value: str) -> bool:
    """``value`` is a valid hub repository id (``name`` or ``org/name``)."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(value)
    except HFValidationError:
        return False
    return True


def _folder_or_hub_id(name: str, value) -> str:
    """``value`` as the config names it: an existing folder (absolute) or a hub id, else ValueError."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} {value!r}: give a folder or a hub id")
    if Path(value).is_dir():
        return str(Path(value).resolve())
    if Path(value).exists():
        raise ValueError(f"{name} {value!r}: a file; give a folder (a Hugging Face model or tokenizer "
                         "folder) or a hub id")
    if not _hub_id(value):
        raise ValueError(f"{name} {value!r}: no such folder, and not a hub id (org/name: letters, digits, "
                         "'-', '_', '.')")
    return value


def _vocab_size(tokenizer) -> int | None:
    """The vocabulary size that ``tokenizer`` gives (an int, or a string of digits with an optional sign),
    else None; ValueError when it is out of range."""
    if isinstance(tokenizer, bool):
        raise ValueError(f"tokenizer {tokenizer!r}: give a folder, a hub id or a vocabulary size")
    digits = isinstance(tokenizer, str) and re.fullmatch(r"\s*[+-]?\d+\s*", tokenizer)
    if isinstance(tokenizer, int) or digits:
        try:  # the config's own bounds of a vocabulary size (typed.VocabSize)
            return check_value(VocabSize, int(tokenizer), "tokenizer")
        except ModelError:
            raise ValueError(f"tokenizer {tokenizer!r}: a vocabulary size must be from 100 (the special "
                             f"tokens and the alphabet) to {VOCAB_SIZE_MAX} (2**24)") from None
    return None


SOURCE_CORPUS = "--source-corpus PATH (text in the method's source_language, a file or folder)"


def _method_parameters(method: str) -> str:
    """``method``'s keyword parameters with their defaults, as ``--help`` lists them."""
    from .methods.registry import keyword_parameters

    return ", ".join(f"{n}={p.default!r}" if p.default is not p.empty else f"{n} (required)"
                     for n, p in keyword_parameters(method).items()) or "no parameters"


def _check_params(method: str, params: dict) -> None:
    """``params`` (``--param``) are parameters of ``method`` with values of their types and bounds; ValueError
    naming the parameter and listing the method's parameters."""
    from .methods import METHODS
    from .methods.registry import keyword_parameters, method_needs
    from .workflow.model import check_parameters

    problem = None
    if unknown := sorted(set(params) - set(keyword_parameters(method))):
        problem = f"unknown parameter(s) {unknown}"
    else:
        try:
            check_parameters(METHODS[method].fn, params, "--param")
            method_needs(method, params)  # parameters that do not go together (ValueError naming them)
        except (ModelError, ValueError) as e:
            problem = str(e).removeprefix("--param: ").replace("--param.", "--param ")
    if problem is not None:  # the listing is built only here
        raise ValueError(f"method {method}: {problem}; its parameters (--param NAME=VALUE): "
                         f"{_method_parameters(method)}")


def _base_method(method: str, params: dict) -> str | None:
    """The kind whose rows a refining method (one that reads :attr:`Need.BASE_INIT`: Token Distillation, the
    embedding-only LM) refines: its ``init`` parameter, checked; None for a method that builds rows itself."""
    from .methods import METHODS
    from .methods.registry import Need, method_needs

    if Need.BASE_INIT not in method_needs(method, params):
        return None
    base = params.get("init")
    base_needs = _needs_or_empty(base) if base in METHODS else frozenset()
    if base not in METHODS or base == method:
        problem = "--param init must name the method whose rows it refines, e.g. init=focus"
    elif Need.BASE_INIT in base_needs:
        problem = (f"init={base} refines another method's rows itself, which a one-call transfer does not "
                   "chain; name a method that builds rows, e.g. init=focus")
    elif Need.EXTENDED_TOKENIZER in base_needs:
        problem = (f"init={base} extends the source vocabulary, whose rows belong to another tokenizer; name "
                   "a method of the target's own tokenizer")
    else:
        return base
    builders = [k for k in sorted(METHODS)
                if not _needs_or_empty(k) & {Need.BASE_INIT, Need.EXTENDED_TOKENIZER}]
    raise ValueError(f"method {method}: {problem} (one of: {', '.join(builders)})")


def _needs_or_empty(kind: str) -> frozenset:
    """What ``kind`` reads with its defaults (a bad default choice: nothing)."""
    from .methods.registry import method_needs

    try:
        return method_needs(kind, {})
    except ValueError:
        return frozenset()


def transfer_config(source: str, tokenizer: str | int, method: str, corpus: str, *, seed: int = 0,
                    language: str | None = None, source_corpus: str | None = None,
                    word_vectors: dict[str, str] | None = None, dictionary: str | None = None,
                    **params) -> dict:
    """The config of one transfer: source model ``source`` (hub id or folder), target tokenizer ``tokenizer``
    (a folder or hub id of an existing one, or the vocabulary size of one trained on the corpus in the
    source's family and layout), method ``method`` (a registered kind) with ``params``, on the text of
    ``corpus`` (a text file or folder, plain or compressed) in ``language`` (default: one named ``target``).

    The inputs a method reads besides the corpus: ``source_corpus``, text in the method's ``source_language``
    (its token-level fastText for Align/Freq Match, its word vectors for WECHSEL); ``word_vectors``, language
    -> fastText file (``word_vectors.<lang>``); ``dictionary``, a file of word pairs from ``source_language``
    to ``language``, or ``"identical"``. A method missing one, or an input the method does not read, is a
    ValueError naming the option. The evaluation's blocks, and a refining method's sequences unless ``params``
    set ``seq_len``, are no longer than the source's positions (a local folder, or a hub id in the hub's cache
    or already downloaded to this working directory)."""
    from .methods import METHODS
    from .methods.registry import Need, method_needs, method_params

    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; known: {', '.join(sorted(METHODS))}")
    _check_params(method, params)
    base = _base_method(method, params)
    methods = {method: {"kind": method, **params}}
    needs = set(method_needs(method, params))
    if base is not None:  # a refining method starts from the rows of another kind, with that kind's defaults
        methods[base] = {"kind": base}
        needs |= method_needs(base, {})
    try:  # the config's own bounds of a seed (typed.Seed)
        check_value(Seed, seed, "seed")
    except ModelError:
        raise ValueError(f"seed {seed!r}: an integer from 0 to {SEED_MAX} (2**32 - 1)") from None
    size = _vocab_size(tokenizer)
    pretrained = None if size is not None else _folder_or_hub_id("tokenizer", tokenizer)
    model = _folder_or_hub_id("source", source)
    corpus_spec = {"source": "text", "path": str(Path(corpus).resolve())}
    config = {
        "seed": seed,
        "corpora": {TARGET: {**corpus_spec, "language": language} if language else corpus_spec},
        "sources": {SOURCE: {"model": model}},
        "targets": [TARGET],
        "tokenizer": {"vocab_size": size, "like": SOURCE} if size is not None else
                     {"pretrained": {TARGET: pretrained}},
        "methods": methods,
    }
    # a refinement reads its base method's inputs too, with the base's defaults (its source_language)
    p = {**(method_params(base, {}) if base is not None else {}), **method_params(method, params)}
    config.update(_method_inputs(method, p, needs, language or TARGET, source_corpus, word_vectors or {},
                                 dictionary))
    if source_corpus is not None:
        slang = p["source_language"]
        config["corpora"][slang] = {"source": "text", "path": str(Path(source_corpus).resolve()),
                                    "language": slang}
    positions = _positions(model)
    if positions is not None and positions < EVAL_SEQ_LEN:  # the evaluation's blocks fit the source
        config["eval"] = {"seq_len": positions}
    if base is not None and positions is not None and "seq_len" not in params:
        default = method_params(method, params).get("seq_len")
        if isinstance(default, int) and positions < default:  # so do the refinement's sequences
            methods[method]["seq_len"] = positions
    if Need.EXTENDED_TOKENIZER in needs:
        for what, folder in (("source", model), ("--tokenizer", pretrained)):
            kind = _tokenizer_model(folder) if folder else None
            if kind is not None and kind != "Unigram":
                raise ValueError(f"method {method} extends SentencePiece Unigram tokenizers only, and the "
                                 f"{what} tokenizer ({folder}) is {kind}; choose another method")
    if Need.LANGUAGE_TOKENIZER in needs:
        raise ValueError(f"method {method}: restrict_source names a second target or corpus, which a "
                         "one-call transfer does not have; leave restrict_source out, or write a config with "
                         "both (docs/configuration.md), check it with `vocab-transfer check CONFIG` and run "
                         "`snakemake --cores all export --configfile CONFIG`")
    return config


def _tokenizer_model(folder: str) -> str | None:
    """The model type of a local tokenizer folder's ``tokenizer.json`` (``Unigram``, ``BPE``, ``WordPiece``),
    or None (a hub id, or no such file)."""
    try:
        return json.loads((Path(folder) / "tokenizer.json").read_text(encoding="utf-8"))["model"]["type"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _method_inputs(method: str, p: dict, needs: set, lang: str, source_corpus: str | None,
                   word_vectors: dict[str, str], dictionary: str | None) -> dict:
    """The config sections (``word_vectors``, ``dictionaries``) of the inputs ``method`` (parameters ``p``,
    reading ``needs``) reads besides the corpus; ValueError naming the option when one it needs is missing, or
    one it does not read is given."""
    from .methods.registry import Need

    slang = p.get("source_language")
    words = {Need.SOURCE_WORDS, Need.WORD_MODELS}
    for given, reads, option in ((source_corpus, words | {Need.SOURCE_TOKEN_VECTORS}, "--source-corpus"),
                                 (word_vectors, words | {Need.TARGET_WORDS}, "--word-vectors"),
                                 (dictionary, {Need.DICTIONARY}, "--dictionary")):
        if given and not needs & reads:
            raise ValueError(f"{option}: method {method} with these parameters reads no "
                             f"{'text in a source language' if option == '--source-corpus' else option[2:]}; "
                             "leave it out")
    if source_corpus is not None and not Path(source_corpus).exists():
        raise ValueError(f"--source-corpus {source_corpus!r}: no such file or folder")
    out: dict = {}
    for wlang, path in word_vectors.items():
        if wlang not in (slang, lang):
            raise ValueError(f"--word-vectors {wlang}={path}: {method} reads word vectors of "
                             f"{' and '.join(repr(x) for x in dict.fromkeys((slang, lang)) if x)} (the "
                             f"source_language and --language{'' if lang != TARGET else ', default target'})")
        if not isinstance(path, (str, os.PathLike)) or not Path(path).is_file():
            raise ValueError(f"--word-vectors {wlang}={path}: no such file (a fastText .bin model or .vec "
                             "text file)")
        out.setdefault("word_vectors", {})[wlang] = {"path": str(Path(path).resolve())}
    if Need.SOURCE_TOKEN_VECTORS in needs and source_corpus is None:
        raise ValueError(f"method {method} reads token-level fastText of the source tokenizer on text in its "
                         f"source_language {slang!r}: give {SOURCE_CORPUS} (or --param source_language=... "
                         "for another language)")
    if needs & words and source_corpus is None and slang not in word_vectors:
        raise ValueError(f"method {method} reads word vectors of its source_language {slang!r}: give "
                         f"--word-vectors {slang}=PATH (a fastText .bin or "
                         f".vec{'; .bin with subwords=fasttext' if Need.WORD_MODELS in needs else ''}) or "
                         f"{SOURCE_CORPUS} to train them")
    if Need.DICTIONARY not in needs:
        return out
    if dictionary is None:
        raise ValueError(f"method {method} reads a bilingual dictionary from its source_language {slang!r} "
                         f"to the corpus's language ({lang!r}{', --language' if lang == TARGET else ''}): "
                         "give --dictionary PATH (one 'source target' word pair per line) or --dictionary "
                         "identical (identically spelled words of both languages' word vectors)")
    if dictionary == "identical":
        if source_corpus is None and slang not in word_vectors:
            raise ValueError("--dictionary identical pairs words spelled alike in the word vectors of both "
                             f"languages: give --word-vectors {slang}=PATH or --source-corpus PATH (text in "
                             f"{slang}), or a dictionary file")
        spec = {"source": "identical"}
    elif Path(dictionary).is_file():
        spec = {"source": "file", "path": str(Path(dictionary).resolve())}
    else:
        raise ValueError(f"--dictionary {dictionary!r}: no such file; give a file of 'source target' word "
                         "pairs (one a line) or 'identical'")
    return {**out, "dictionaries": {slang: {lang: spec}}}


def _positions(model: str, work: Path | None = None) -> int | None:
    """Tokens a sequence of the source model ``model`` may have: from the ``config.json`` of a local folder,
    of a hub id in the hub's local cache (nothing is downloaded) or already downloaded to the working
    directory ``work``; None where none is found."""
    from .source_model import position_limit

    config = Path(model) / "config.json"
    if not config.is_file():
        config = None
        if work is not None and (work / "resources" / "models" / SOURCE / "config.json").is_file():
            config = work / "resources" / "models" / SOURCE / "config.json"
        elif _hub_id(model):
            from huggingface_hub import try_to_load_from_cache

            cached = try_to_load_from_cache(model, "config.json")
            config = Path(cached) if isinstance(cached, str) else None
    try:
        return position_limit(json.loads(config.read_text(encoding="utf-8"))) if config else None
    except (ValueError, OSError):
        return None


#: Seconds per 1,000 target tokens of a refinement on 2 CPU cores (docs/benchmarks.md,
#: ``benchmarks/refine_speed.py``, batch 16 x 128): (hidden size, layers) -> (token_distillation,
#: embedding_lm).
REFINE_CPU = {(192, 4): (1.45, 1.34), (768, 12): (23.1, 13.0)}
#: Seconds per 1M target tokens on one H200 for an XLM-R-base-shaped model (h768, 12 layers;
#: docs/benchmarks.md): token_distillation at batch 32 x 128, embedding_lm at batch 128 x 128; no other model
#: size was measured.
REFINE_GPU_H768 = {"token_distillation": 83.0, "embedding_lm": 31.8}


def _duration(seconds: float) -> str:
    """``seconds`` as ``1 h 05 min``, ``12 min``, ``40 s`` or ``0.4 s``."""
    if seconds < 9.95:
        return f"{seconds:.1f} s"
    seconds = int(round(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"
    return f"{seconds // 60} min" if seconds >= 120 else f"{seconds} s"


def refinement_budget(config: dict, method: str) -> str | None:
    """The budget of a refining method (the ``tokens`` of Token Distillation or the embedding-only LM) and its
    expected time on 2 CPU cores and on a GPU (:data:`REFINE_CPU`, :data:`REFINE_GPU_H768`); None for a method
    that trains nothing. For a source of another size than the two measured on the CPU, the figure is an
    estimate, and says so: above the smaller one, the seconds per token scaled as the power of the
    non-embedding parameters (12 * layers * hidden**2) that joins the two measurements; below it, the smaller
    one's figure as an upper bound (tokenizing each batch twice costs as much as the small model's steps).
    A GPU figure exists only for the h768, 12-layer shape."""
    import math

    from .methods.registry import method_params

    spec = config["methods"][method]
    kind = spec["kind"]
    if kind not in REFINE_GPU_H768:
        return None
    p = method_params(kind, {k: v for k, v in spec.items() if k != "kind"})
    tokens, which = p["tokens"], 0 if kind == "token_distillation" else 1
    (h1, n1), (h2, n2) = REFINE_CPU
    t1, t2 = (x[which] * tokens / 1000 for x in REFINE_CPU.values())  # seconds at the two measured sizes
    shape = _shape(config["sources"][SOURCE]["model"])
    head = (f"{kind} trains on {tokens:,} target tokens (--param tokens=N), batch {p['batch_size']} x "
            f"{p['seq_len']}")
    if shape is None:
        cpu = (f"on 2 CPU cores {_duration(t1)} for a model of hidden size {h1} with {n1} layers, "
               f"{_duration(t2)} for one of {h2} with {n2} (measured); this source's size is known once it "
               "is downloaded")
    elif shape in REFINE_CPU:
        cpu = f"on 2 CPU cores about {_duration(t1 if shape == (h1, n1) else t2)} (measured for this size)"
    else:
        h, n = shape
        size1, size2, size = 12 * n1 * h1 ** 2, 12 * n2 * h2 ** 2, 12 * n * h ** 2
        if size <= size1:
            cpu = (f"on 2 CPU cores at most about {_duration(t1)} (an estimate: the figure measured for "
                   f"hidden size {h1} with {n1} layers, a larger model than this one's {h} with {n})")
        else:
            per = t1 * (size / size1) ** (math.log(t2 / t1) / math.log(size2 / size1))
            cpu = (f"on 2 CPU cores about {_duration(per)} (an estimate for hidden size {h} with {n} layers, "
                   f"scaled from the figures measured for {h1}/{n1} and {h2}/{n2})")
    gpu_time = _duration(REFINE_GPU_H768[kind] * tokens / 1e6)
    gpu = (f"on a GPU not measured for this size (a model of hidden size 768 with 12 layers took {gpu_time} "
           "on an H200)") if shape != (768, 12) else f"on an H200 about {gpu_time} (measured for this size)"
    return f"{head}: {cpu}; {gpu}; figures of docs/benchmarks.md"


def _shape(model: str) -> tuple[int, int] | None:
    """(hidden size, layers) of a local source model folder, else None."""
    try:
        config = json.loads((Path(model) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    h = config.get("hidden_size") or config.get("n_embd") or config.get("d_model")
    n = config.get("num_hidden_layers") or config.get("n_layer") or config.get("num_layers")
    return (h, n) if isinstance(h, int) and isinstance(n, int) else None


class DagProgress:
    """Snakemake's output, read line by line as it streams, told as one-line updates: the jobs to run, each
    job as it starts and ends (its rule and wildcards, the steps done and left, the time so far and an
    estimate of the time to go, at the pace of the steps done so far), a refinement's own progress lines, and
    the jobs that failed with the log each names (:meth:`failure`)."""

    BLOCK = re.compile(r"^(?:(?:local)?rule|Error in rule) (\w+):$")  # a job's or error's fields follow
    STEPS = re.compile(r"^(\d+) of (\d+) steps \(\d+%\) done")
    FINISHED = re.compile(r"^Finished jobid: (\d+) \(Rule: (\w+)\)")
    FIELD = re.compile(r"^ {4}(\w+): (.*)$")
    REFINE = re.compile(r"\b(?:distill|lm) step \d+: loss (\S+), (\d+)/(\d+) tokens, (\d+) tokens/s, ETA "
                        r"(\d+) s")

    def __init__(self, write=None) -> None:
        self.write = write  # a callable taking one line, or None: silent
        self.start, self.total, self.done = time.monotonic(), None, 0
        self.block: dict | None = None  # the job (or error) whose indented fields are being read
        self.jobs: dict[str, dict] = {}  # jobid -> {"rule", "wildcards", "log", "start"}
        self.errors, self.locked = [], False

    def say(self, text: str) -> None:
        if self.write is not None:
            self.write(f"vocab-transfer: {text}")

    def feed(self, line: str) -> None:
        line = line.rstrip("\n")
        field = self.FIELD.match(line)
        if self.block is not None and field:
            self.block[field.group(1)] = field.group(2)
            return
        self.finish()
        if m := self.BLOCK.match(line):
            self.block = {"rule": m.group(1), "kind": "error" if line.startswith("Error") else "job"}
        elif m := self.STEPS.match(line):
            self.done, self.total = int(m.group(1)), int(m.group(2))
        elif m := self.FINISHED.match(line):
            self._finished(m.group(1), m.group(2))
        elif m := self.REFINE.search(line):
            loss, seen, tokens, rate, eta = m.groups()
            self.say(f"  refining: {int(seen):,} of {int(tokens):,} tokens, {int(rate):,} tokens/s, loss "
                     f"{loss}, about {_duration(int(eta))} to go")
        elif line.startswith("total") and self.total is None and line.split()[-1].isdigit():
            self.total = int(line.split()[-1])  # the last row of the "Job stats" table
            self.say(f"{self.total} job(s) to run")
        elif line.startswith("Nothing to be done"):
            self.say("nothing to run: every file is up to date")
        elif "Directory cannot be locked" in line or "LockException" in line:
            self.locked = True

    def finish(self) -> None:
        """Close the job or error block being read, if any."""
        if self.block is None:
            return
        block, self.block = self.block, None
        if block["kind"] == "error":
            started = self.jobs.get(block.get("jobid", "?"), {})
            self.errors.append({**block, "wildcards": block.get("wildcards") or started.get("wildcards")})
            return
        block["start"] = time.monotonic()
        self.jobs[block.get("jobid", "?")] = block
        self.say(f"[{self.done}/{self.total or '?'}] {self._name(block)} started")

    def _finished(self, jobid: str, rule: str) -> None:
        job = self.jobs.pop(jobid, {"rule": rule})
        done = self.done + 1  # the "N of M steps" line follows
        elapsed = time.monotonic() - self.start
        left = (self.total - done) if self.total else None
        eta = f", about {_duration(elapsed / done * left)} to go" if left else ""
        took = f" in {_duration(time.monotonic() - job['start'])}" if "start" in job else ""
        self.say(f"[{done}/{self.total or '?'}] {self._name(job)} done{took}; "
                 f"{left if left is not None else '?'} left, {_duration(elapsed)} so far{eta}")

    @staticmethod
    def _name(job: dict) -> str:
        wildcards = job.get("wildcards")
        return f"{job['rule']} ({wildcards})" if wildcards else job["rule"]

    def failure(self, work: Path, output: Path) -> str:
        """What went wrong: each failed job with its log's path and the end of its log (:func:`log_tail`), or,
        where no job failed (the plan itself), the end of Snakemake's output from its first error line; then
        where Snakemake's whole output is."""
        parts = [f"another run holds the working directory {work} (its lock is in {work}/.snakemake/locks): "
                 f"{_unlock_hint(work)}"] if self.locked else []
        for error in self.errors:
            named = error.get("log", "").split(" (check log file")[0]
            logs = [x.strip() for x in named.split(",") if x.strip()]
            if not logs:
                parts.append(f"job {self._name(error)} failed; it has no log: see Snakemake's output")
            for log in logs:
                path = work / log
                last = _exception_line(path)
                parts.append(f"job {self._name(error)} failed{': ' + last if last else ''}\nits log {path} "
                             f"ends:\n{log_tail(path)}")
        if not parts:
            parts.append("Snakemake stopped before a job ran; its output ends:\n" + _output_error(output))
        parts.append(f"Snakemake's whole output: {output}")
        return "\n".join(parts)


def _unlock_hint(work: Path) -> str:
    """What to do about the Snakemake lock of the working directory ``work``."""
    return (f"wait for it, or, if no run is left (a killed one), remove the lock with `snakemake --unlock "
            f"--directory {work} --snakefile {REPO / 'Snakefile'} --configfile {work / 'transfer.yaml'}`")


def log_tail(path: Path, lines: int = 30) -> str:
    """The end of a job's log, whole lines, indented: from its last ``Traceback`` where there is one, at most
    ``lines`` lines (a longer traceback keeps its first line and its end)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as e:
        return f"    (cannot read it: {e.strerror})"
    if not any(line.strip() for line in text):
        return "    (empty)"
    tracebacks = [i for i, line in enumerate(text) if line.startswith("Traceback (most recent call last)")]
    shown = text[tracebacks[-1] if tracebacks else max(len(text) - lines, 0):]
    if len(shown) > lines:
        head = [shown[0], f"  ... ({len(shown) - lines + 1} lines)"] if tracebacks else []
        shown = head + shown[-(lines - len(head)):]
    return "\n".join("    " + line for line in shown)


def _exception_line(path: Path) -> str | None:
    """The line of a job's log that names the exception that ended the job (the last unindented ``Name:
    message`` line after its last ``Traceback``), or None."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    tracebacks = [i for i, line in enumerate(text) if line.startswith("Traceback (most recent call last)")]
    exception = re.compile(r"^[\w.]+(Error|Exception|Exit|Interrupt)\b")
    found = [line for line in text[tracebacks[-1] + 1:] if exception.match(line)] if tracebacks else []
    return found[-1] if found else None


def _output_error(output: Path, lines: int = 30) -> str:
    """The end of Snakemake's output (``output``) from its first line that starts an error report, whole
    lines."""
    try:
        text = output.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as e:
        return f"    (cannot read {output}: {e.strerror})"
    starts = [i for i, line in enumerate(text) if re.match(r"^(\w*Error|Error|Exception|Traceback)", line)]
    shown = text[starts[0]:] if starts else text
    return "\n".join("    " + line for line in shown[-lines:])


def check_workdir(work: Path) -> None:
    """``work`` may be the working directory of a transfer: a new or empty folder, or an earlier transfer's
    (with its ``transfer.yaml``; methods may share one); else, so that the DAG never writes among a user's
    files, and while a run holds it (a Snakemake lock), ValueError naming it."""
    if work.exists() and not work.is_dir():
        raise ValueError(f"--workdir {work}: an existing file; name a new folder")
    if work == REPO.resolve() or work in REPO.resolve().parents:
        raise ValueError(f"--workdir {work}: the repository's checkout or a folder above it; name a new "
                         "folder")
    if work.is_dir() and any(work.iterdir()) and not (work / "transfer.yaml").is_file():
        sample = sorted(p.name for p in work.iterdir())[:3]
        raise ValueError(f"--workdir {work}: a folder with files ({', '.join(map(repr, sample))}) that no "
                         "transfer used as its working directory; name a new or empty folder, or an earlier "
                         "transfer's")
    locks = work / ".snakemake" / "locks"
    if locks.is_dir() and any(locks.iterdir()):
        raise ValueError(f"--workdir {work}: another run holds it (a lock in {locks}): {_unlock_hint(work)}")


def transfer(source: str, tokenizer: str | int, method: str = "focus", *, corpus: str, out: str | None = None,
             workdir: str | None = None, seed: int = 0, cores: int | None = None, language: str | None = None,
             source_corpus: str | None = None, word_vectors: dict[str, str] | None = None,
             dictionary: str | None = None, quiet: bool = False, **params) -> Path:
    """Transfer ``source`` to ``tokenizer`` with ``method`` (:func:`transfer_config`) and return the exported
    Hugging Face model folder (with its tokenizer and model card): ``out`` (a copy, written only once the DAG
    succeeded) if given, else the DAG's folder under ``workdir`` (default ``vocab-transfer-<method>``;
    :func:`check_workdir`). The arguments and the whole config (the workflow's parse-time checks) are checked
    before the DAG runs. Unless ``quiet``, a refinement's budget (:func:`refinement_budget`) and the DAG's
    progress go to stderr; Snakemake's whole output to ``<workdir>/transfer.log``. Raises :class:`ValueError`
    for a bad argument and :class:`RuntimeError` naming the failed job, its log and the log's end."""
    from .io import atomic_path
    from .workflow.config import ConfigError, check_config

    work = Path(workdir or f"vocab-transfer-{method}").resolve()
    dest = check_out(out, work) if out is not None else None
    check_workdir(work)
    if cores is not None and (isinstance(cores, bool) or not isinstance(cores, int) or cores < 1):
        raise ValueError(f"cores {cores!r}: at least 1")
    if not isinstance(corpus, (str, os.PathLike)) or not Path(corpus).exists():
        raise ValueError(f"corpus {corpus!r}: no such file or folder")
    config = transfer_config(source, tokenizer, method, corpus, seed=seed, language=language,
                             source_corpus=source_corpus, word_vectors=word_vectors, dictionary=dictionary,
                             **params)
    positions = _positions(config["sources"][SOURCE]["model"], work)
    if positions is not None and positions < config.get("eval", {}).get("seq_len", EVAL_SEQ_LEN):
        config["eval"] = {"seq_len": positions}  # a hub model downloaded by an earlier run in this directory
    try:
        check_config(config)
    except ConfigError as e:
        raise ValueError(f"the transfer's config: {e}") from None
    progress = DagProgress(None if quiet else (lambda line: print(line, file=sys.stderr, flush=True)))
    if budget := refinement_budget(config, method):
        progress.say(budget)
    work.mkdir(parents=True, exist_ok=True)
    with atomic_path(work / "transfer.yaml", checksum=False) as tmp:
        tmp.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    exported = work / "results" / "export" / SOURCE / TARGET / "init" / method
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory",
           str(work), "--cores", str(cores or os.cpu_count() or 1), str(exported.relative_to(work)),
           "--configfile", str(work / "transfer.yaml")]
    output = work / "transfer.log"
    progress.say(f"{method} in {work} (Snakemake's output: {output})")
    returncode = run_streamed(cmd, output, progress.feed)
    progress.finish()
    if returncode != 0:
        raise RuntimeError(f"the transfer's DAG failed (exit status {returncode}).\n"
                           f"{progress.failure(work, output)}")
    if dest is None:
        return exported
    replace_folder(exported, check_out(out, work))  # again: what is there now, after the DAG's hours
    return Path(out)


def run_streamed(cmd: list[str], output: Path, feed) -> int:
    """Run ``cmd`` with its stdout and stderr, line by line, written to ``output`` and given to ``feed``; its
    exit status. An interrupt (Ctrl-C) is passed on to the command, which stops its jobs, and then raised."""
    with open(output, "w", encoding="utf-8") as log, subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
            bufsize=1) as proc:
        try:
            for line in proc.stdout:
                log.write(line)
                log.flush()
                feed(line)
            return proc.wait()
        except KeyboardInterrupt:
            proc.send_signal(signal.SIGINT)
            proc.wait()
            raise


def check_out(out: str | os.PathLike, work: Path) -> Path:
    """Where ``out`` (``--out``) may be written, as an absolute path; ValueError naming it when writing there
    could delete what this command did not write. A new or empty folder, or an unchanged export
    (:func:`is_export`: the export's manifest and only the files it lists), is fine."""
    given = Path(out)
    if given.is_symlink():
        raise ValueError(f"--out {out}: a symbolic link (to {os.readlink(given)}); name a new folder, not a "
                         "link")
    path = given.parent.resolve() / given.name if given.name not in ("", ".", "..") else given.resolve()
    if path.exists() and not path.is_dir():
        raise ValueError(f"--out {out}: an existing file, not a folder; name a new folder")
    for place, what in ((Path.cwd().resolve(), "the current directory"),
                        (Path.home().resolve(), "your home folder"),
                        (REPO.resolve(), "the repository's checkout")):
        if path == place or path in place.parents:
            above = " or a folder above it" if path != place else ""
            raise ValueError(f"--out {out}: {what}{above} ({path}); name a new folder for the model")
    if path == work or path in work.parents or work in path.parents:
        raise ValueError(f"--out {out}: the working directory of the run ({work}) or a folder inside or "
                         "above it; name a folder outside it")
    if path.is_dir() and any(path.iterdir()) and (problem := is_export(path)):
        raise ValueError(f"--out {out}: a folder with files ({path}), {problem}; it is left as it is: name a "
                         "new or empty folder, or remove them yourself")
    return path


def is_export(folder: Path) -> str | None:
    """None if ``folder`` is a model folder exported by the workflow (the manifest of rule export_init_model
    or export_lapt_model, with config.json) holding only the files its manifest lists, unchanged; else what it
    is."""
    from .artifacts import check_manifest, read_manifest

    record = read_manifest(folder)
    files = (record or {}).get("files")
    if not isinstance(files, dict) or record.get("rule") not in EXPORT_RULES or "config.json" not in files:
        names = sorted(p.name for p in folder.iterdir())
        return (f"not a model folder this command exported (it holds {', '.join(map(repr, names[:3]))}"
                f"{', ...)' if len(names) > 3 else ')'}")
    changed = check_manifest(folder)
    return f"an exported model folder changed since ({'; '.join(changed[:3])})" if changed else None


def replace_folder(src: Path, dest: Path) -> None:
    """Copy the folder ``src`` to ``dest``, replacing the folder there (checked by :func:`check_out`) in one
    step: a copy beside ``dest`` (removed if copying fails, ``dest`` untouched) is swapped with it
    (:func:`_exchange`). Symbolic links in ``src`` are copied as the files they point to."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.vocab-transfer-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        shutil.copytree(src, tmp)
        if dest.is_dir() and not dest.is_symlink():
            _exchange(tmp, dest)  # tmp now holds the old folder
        else:
            os.rename(tmp, dest)
    finally:
        if tmp.is_dir() and not tmp.is_symlink():
            shutil.rmtree(tmp)


def _exchange(a: Path, b: Path) -> None:
    """Swap the folders ``a`` and ``b`` in one step (Linux ``renameat2(RENAME_EXCHANGE)``); where that is
    missing, with two renames, the first undone if the second fails."""
    import ctypes

    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        renameat2 = None
    if renameat2 is not None:
        renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
        at_fdcwd, rename_exchange = -100, 2
        if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
            return
        err = ctypes.get_errno()
        if err not in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
            raise OSError(err, os.strerror(err), str(b))
    aside = b.with_name(f"{a.name}.old")
    os.rename(b, aside)
    try:
        os.rename(a, b)
    except BaseException:
        os.rename(aside, b)
        raise
    os.rename(aside, a)


def method_inputs_help(kind: str) -> str | None:
    """What a one-call transfer with method ``kind`` (its default parameters) must be given besides the
    corpus, as options; None where nothing."""
    from .methods.registry import Need, keyword_parameters, method_params

    needs, slang = _needs_or_empty(kind), method_params(kind, {}).get("source_language")
    wanted = [f"--param {n}=VALUE" for n, q in keyword_parameters(kind).items()
              if q.default is q.empty and n != "init"]
    if Need.BASE_INIT in needs:
        wanted.append("--param init=METHOD (the method whose rows it refines, e.g. focus)")
    if Need.SOURCE_TOKEN_VECTORS in needs:
        wanted.append(f"--source-corpus PATH (text in source_language, default {slang})")
    if needs & {Need.SOURCE_WORDS, Need.WORD_MODELS}:
        wanted.append(f"--word-vectors {slang}=PATH or --source-corpus PATH")
    if Need.DICTIONARY in needs:
        wanted.append("--dictionary PATH or --dictionary identical")
    return "; ".join(wanted) or None


def methods_help() -> str:
    """Every registered method, its keyword parameters with their defaults (the registry's own signatures) and
    the inputs it must be given (:func:`method_inputs_help`)."""
    from .methods import METHODS

    lines = ["methods (--method) and their parameters (--param NAME=VALUE, a YAML value):"]
    for kind in sorted(METHODS):
        lines.append(f"  {kind}: {_method_parameters(kind)}")
        if inputs := method_inputs_help(kind):
            lines.append(f"      needs {inputs}")
    lines += [
        "",
        "A method's inputs besides the corpus: --source-corpus (text in its source_language: Align and",
        "Freq Match train token-level fastText of the source tokenizer on it, WECHSEL word vectors),",
        "--word-vectors LANG=PATH (fastText word vectors of a language instead of training them),",
        "--dictionary (word pairs from source_language to --language). WECHSEL's restrict_source names a",
        "second target and needs a config file: write one (docs/configuration.md), check it with",
        "`vocab-transfer check CONFIG`, then run `snakemake --cores all export --configfile CONFIG` from",
        "the checkout.",
        "",
        "Progress goes to stderr, one line a job (--quiet: none), and Snakemake's whole output to",
        "WORKDIR/transfer.log; a failed job is named with its log and the end of it. Several methods may",
        "share one --workdir: the corpus, tokenizer and fastText jobs then run once.",
    ]
    return "\n".join(lines)


def check_configs(configfiles: list[str]) -> int:
    """``vocab-transfer check``: each config file read strictly (:func:`vocab_transfer.typed.load_yaml`),
    merged as Snakemake merges ``--configfile`` files, and checked as the workflow checks it at parse time (a
    composite's studies are each read strictly; their checks run in ``snakemake -n``). Prints the first
    problem and returns 1, else 0."""
    from snakemake.utils import update_config

    from .workflow.config import ConfigError, check_config, check_configfiles

    config: dict = {}
    try:
        check_configfiles(configfiles)
        for f in configfiles:
            update_config(config, load_yaml(Path(f).read_text(encoding="utf-8"), f))
        for study in config.get("studies") or ():
            load_yaml(Path(study).read_text(encoding="utf-8"), study)
        if "studies" not in config:
            check_config(config)
    except (ConfigError, YamlError, OSError) as e:
        print(f"vocab-transfer: {e}", file=sys.stderr)
        return 1
    print(f"{' '.join(configfiles)}: ok" + (" (the studies' own checks: snakemake -n)"
                                            if "studies" in config else ""))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="vocab-transfer", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Transfer a pretrained language model to a new tokenizer (the workflow's "
                    "DAG, for one target).")
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("transfer", formatter_class=parser.formatter_class, epilog=methods_help(),
                       help="transfer one model to one tokenizer and save it as a Hugging Face model folder")
    t.add_argument("--source", required=True, help="the source model: a hub id or a folder")
    t.add_argument("--tokenizer", required=True,
                   help="the target tokenizer: a folder or hub id, or a vocabulary size to train one on the "
                        "corpus (in the source tokenizer's family and layout)")
    t.add_argument("--method", default="focus", help="a registered method (below; default focus)")
    t.add_argument("--corpus", required=True,
                   help="target-language text: a file or folder, plain or compressed")
    t.add_argument("--out", required=True, help="where the model folder goes")
    t.add_argument("--param", action="append", default=[], metavar="NAME=VALUE", help="a method parameter")
    t.add_argument("--language", help="the corpus's language code (word vectors, dictionaries; default: "
                                      "target)")
    t.add_argument("--source-corpus", metavar="PATH",
                   help="text in the method's source_language (Align/Freq Match; WECHSEL's source word "
                        "vectors)")
    t.add_argument("--word-vectors", action="append", default=[], metavar="LANG=PATH",
                   help="fastText word vectors (.bin or .vec) of a language, instead of training them "
                        "(WECHSEL)")
    t.add_argument("--dictionary", metavar="PATH",
                   help="word pairs from source_language to --language, one 'source target' pair a line, or "
                        "'identical' (identically spelled words; WECHSEL, Dict Match)")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--workdir", help="the DAG's working directory (default vocab-transfer-<method>): new, "
                                     "empty or an earlier transfer's; keep it to rerun only what an argument "
                                     "changes, and share it between methods")
    t.add_argument("--cores", type=int, help="cores for the DAG's jobs (default: all)")
    t.add_argument("--quiet", action="store_true", help="no progress lines on stderr (errors only)")
    c = sub.add_parser("check", help="check config files before a run: a key given twice or a YAML tag named "
                                     "with its line (Snakemake's own loader reports either as 'not valid "
                                     "JSON or YAML'), then every parse-time check of the workflow")
    c.add_argument("configfiles", nargs="+", metavar="CONFIG", help="the files a run passes to --configfile")
    args = parser.parse_args(argv)
    if args.command == "check":
        return check_configs(args.configfiles)
    params, vectors = {}, {}
    for item in args.param:
        name, sep, value = item.partition("=")
        if not sep:
            parser.error(f"--param {item!r}: write NAME=VALUE")
        try:
            params[name] = load_yaml(value, f"--param {name}")
        except YamlError as e:
            print(f"vocab-transfer: {e}", file=sys.stderr)
            return 2
    for item in args.word_vectors:
        lang, sep, path = item.partition("=")
        if not sep or not lang or not path:
            parser.error(f"--word-vectors {item!r}: write LANG=PATH")
        vectors[lang] = path
    try:
        folder = transfer(args.source, args.tokenizer, args.method, corpus=args.corpus, out=args.out,
                          workdir=args.workdir, seed=args.seed, cores=args.cores, language=args.language,
                          source_corpus=args.source_corpus, word_vectors=vectors, dictionary=args.dictionary,
                          quiet=args.quiet, **params)
    except (ValueError, RuntimeError, OSError) as e:
        print(f"vocab-transfer: {e}", file=sys.stderr)
        return 1
    print(json.dumps({"model": str(folder)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

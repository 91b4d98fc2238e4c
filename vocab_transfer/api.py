"""One transfer in one call: ``vocab_transfer.transfer(...)`` and ``vocab-transfer transfer ...``.

A transfer writes the config of a one-target study (the source model, the target tokenizer or the size of one to
train, the corpus, one method and its parameters) and runs the workflow's own DAG on it up to the exported model
(rule ``export_init_model``), in a working directory of its own. So the tensors are the DAG's, bit for bit, the
model folder has the DAG's model card, a rerun with the same arguments does nothing, and a changed parameter reruns
only what it changes. A 7B decoder takes the DAG's out-of-core path (its embedding matrices are read and written
without loading the model).

```python
from vocab_transfer import transfer
folder = transfer("FacebookAI/xlm-roberta-base", 50000, method="focus", corpus="sw.txt.gz", out="xlmr-sw")
```

The DAG, and so this call, runs from a checkout of the repository (the package installed from it, as
``scripts/setup_env.sh`` does): the Snakefile, rules and scripts live there, not in the package.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(os.environ.get("VOCAB_TRANSFER_ROOT") or Path(__file__).resolve().parents[1])
SOURCE, TARGET = "source", "target"


def transfer_config(source: str, tokenizer: str | int, method: str, corpus: str, *, seed: int = 0,
                    language: str | None = None, **params) -> dict:
    """The config of one transfer: source model ``source`` (hub id or folder), target tokenizer ``tokenizer`` (a
    folder or hub id of an existing one, or the vocabulary size of one trained on the corpus in the source's family
    and layout), method ``method`` (a registered kind) with ``params``, on the text of ``corpus`` (a file or folder
    of text, plain or compressed)."""
    from .methods import METHODS
    from .methods.registry import keyword_parameters

    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; known: {', '.join(sorted(METHODS))}")
    unknown = sorted(set(params) - set(keyword_parameters(method)))
    if unknown:
        raise ValueError(f"method {method}: unknown parameter(s) {unknown}; accepted: "
                         f"{sorted(keyword_parameters(method))}")
    methods = {method: {"kind": method, **params}}
    if "init" in keyword_parameters(method):  # a refining method (Token Distillation) starts from another kind's rows
        base = params.get("init")
        if base not in METHODS or base == method:
            raise ValueError(f"method {method}: init must name the method whose rows it refines, e.g. init=focus "
                             f"(known: {', '.join(sorted(METHODS))})")
        methods[base] = {"kind": base}
    trained = isinstance(tokenizer, int) or (isinstance(tokenizer, str) and tokenizer.isdigit())
    corpus_spec = {"source": "text", "path": str(Path(corpus).resolve())}
    if language:
        corpus_spec["language"] = language
    return {
        "seed": seed,
        "corpora": {TARGET: corpus_spec},
        "sources": {SOURCE: {"model": str(Path(source).resolve()) if Path(source).is_dir() else source}},
        "targets": [TARGET],
        "tokenizer": {"vocab_size": int(tokenizer), "like": SOURCE} if trained else
                     {"pretrained": {TARGET: str(Path(tokenizer).resolve()) if Path(tokenizer).is_dir() else tokenizer}},
        "methods": methods,
    }


def transfer(source: str, tokenizer: str | int, method: str = "focus", *, corpus: str, out: str | None = None,
             workdir: str | None = None, seed: int = 0, cores: int | None = None, language: str | None = None,
             **params) -> Path:
    """Transfer ``source`` to ``tokenizer`` with ``method`` (:func:`transfer_config`) and return the exported Hugging
    Face model folder (with its tokenizer and model card): ``out`` (a copy) if given, else the DAG's folder under
    ``workdir`` (default ``vocab-transfer-<method>``). Raises :class:`RuntimeError` with the end of Snakemake's log
    when a job fails."""
    config = transfer_config(source, tokenizer, method, corpus, seed=seed, language=language, **params)
    work = Path(workdir or f"vocab-transfer-{method}").resolve()
    work.mkdir(parents=True, exist_ok=True)
    (work / "transfer.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    exported = work / "results" / "export" / SOURCE / TARGET / "init" / method
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(work),
           "--cores", str(cores or os.cpu_count() or 1), str(exported.relative_to(work)),
           "--configfile", str(work / "transfer.yaml")]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"the transfer's DAG failed ({' '.join(cmd)}):\n{(proc.stdout + proc.stderr)[-4000:]}")
    if out is None:
        return exported
    if Path(out).exists():
        shutil.rmtree(out)
    shutil.copytree(exported, out)
    return Path(out)


def methods_help() -> str:
    """Every registered method and its keyword parameters with their defaults (the registry's own signatures)."""
    from .methods import METHODS
    from .methods.registry import keyword_parameters

    lines = ["methods (--method) and their parameters (--param NAME=VALUE, a YAML value):"]
    for kind in sorted(METHODS):
        params = ", ".join(f"{n}={p.default!r}" if p.default is not p.empty else f"{n} (required)"
                           for n, p in keyword_parameters(kind).items())
        lines.append(f"  {kind}: {params or 'no parameters'}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="vocab-transfer", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Transfer a pretrained language model to a new tokenizer (the workflow's DAG, for one target).")
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("transfer", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=methods_help(),
                       help="transfer one model to one tokenizer and save it as a Hugging Face model folder")
    t.add_argument("--source", required=True, help="the source model: a hub id or a folder")
    t.add_argument("--tokenizer", required=True,
                   help="the target tokenizer: a folder or hub id, or a vocabulary size to train one on the corpus "
                        "(in the source tokenizer's family and layout)")
    t.add_argument("--method", default="focus", help="a registered method (below; default focus)")
    t.add_argument("--corpus", required=True, help="target-language text: a file or folder, plain or compressed")
    t.add_argument("--out", required=True, help="where the model folder goes")
    t.add_argument("--param", action="append", default=[], metavar="NAME=VALUE", help="a method parameter")
    t.add_argument("--language", help="the corpus's language code (word vectors, dictionaries)")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--workdir", help="the DAG's working directory (default vocab-transfer-<method>); keep it to "
                                     "rerun only what an argument changes")
    t.add_argument("--cores", type=int, help="cores for the DAG's jobs (default: all)")
    args = parser.parse_args(argv)
    params = {}
    for item in args.param:
        name, sep, value = item.partition("=")
        if not sep:
            parser.error(f"--param {item!r}: write NAME=VALUE")
        params[name] = yaml.safe_load(value)
    try:
        folder = transfer(args.source, args.tokenizer, args.method, corpus=args.corpus, out=args.out,
                          workdir=args.workdir, seed=args.seed, cores=args.cores, language=args.language, **params)
    except (ValueError, RuntimeError) as e:
        print(f"vocab-transfer: {e}", file=sys.stderr)
        return 1
    print(json.dumps({"model": str(folder)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

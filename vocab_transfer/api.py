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
import errno
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from .typed import (
    SEED_MAX,
    VOCAB_SIZE_MAX,
    ModelError,
    Seed,
    VocabSize,
    YamlError,
    check_value,
    load_yaml,
)

REPO = Path(os.environ.get("VOCAB_TRANSFER_ROOT") or Path(__file__).resolve().parents[1])
SOURCE, TARGET = "source", "target"
#: The rules whose model folders ``--out`` copies, and so replaces (:func:`check_out`).
EXPORT_RULES = ("export_init_model", "export_lapt_model")


def _hub_id(value: str) -> bool:
    """``value`` is a syntactically valid hub repository id (``name`` or ``org/name``)."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(value)
    except HFValidationError:
        return False
    return True


def _folder_or_hub_id(name: str, value) -> str:
    """``value`` as the config names it: an existing folder (absolute) or a hub id; ValueError naming
    ``name``."""
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
            raise ValueError(f"tokenizer {tokenizer!r}: a vocabulary size must be from 100 (the special tokens and "
                             f"the alphabet) to {VOCAB_SIZE_MAX} (2**24)") from None
    return None


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
    try:  # the config's own bounds of a seed (typed.Seed)
        check_value(Seed, seed, "seed")
    except ModelError:
        raise ValueError(f"seed {seed!r}: an integer from 0 to {SEED_MAX} (2**32 - 1)") from None
    size = _vocab_size(tokenizer)
    pretrained = None if size is not None else _folder_or_hub_id("tokenizer", tokenizer)
    model = _folder_or_hub_id("source", source)
    corpus_spec = {"source": "text", "path": str(Path(corpus).resolve())}
    if language:
        corpus_spec["language"] = language
    config = {
        "seed": seed,
        "corpora": {TARGET: corpus_spec},
        "sources": {SOURCE: {"model": model}},
        "targets": [TARGET],
        "tokenizer": {"vocab_size": size, "like": SOURCE} if size is not None else
                     {"pretrained": {TARGET: pretrained}},
        "methods": methods,
    }
    positions = _positions(model)
    if positions is not None and positions < EVAL_SEQ_LEN:  # the evaluation's blocks fit the source
        config["eval"] = {"seq_len": positions}
    return config


EVAL_SEQ_LEN = 256  # the config's default eval.seq_len (FOCUS Table 4)


def _positions(model: str) -> int | None:
    """Tokens a sequence of the source model folder ``model`` may have (None for a hub id)."""
    from .source_model import position_limit

    config = Path(model) / "config.json"
    if not config.is_file():
        return None
    try:
        return position_limit(json.loads(config.read_text(encoding="utf-8")))
    except (ValueError, OSError):
        return None


def transfer(source: str, tokenizer: str | int, method: str = "focus", *, corpus: str, out: str | None = None,
             workdir: str | None = None, seed: int = 0, cores: int | None = None, language: str | None = None,
             **params) -> Path:
    """Transfer ``source`` to ``tokenizer`` with ``method`` (:func:`transfer_config`) and return the exported
    Hugging Face model folder (with its tokenizer and model card): ``out`` (a copy) if given, else the DAG's
    folder under ``workdir`` (default ``vocab-transfer-<method>``). The arguments are checked before the DAG
    runs (:func:`check_out` for ``out``); ``out`` is written only once the DAG succeeded, by
    :func:`replace_folder`. Raises :class:`ValueError` for a bad argument and :class:`RuntimeError` with the
    end of Snakemake's log when a job fails."""
    work = Path(workdir or f"vocab-transfer-{method}").resolve()
    dest = check_out(out, work) if out is not None else None
    if cores is not None and (isinstance(cores, bool) or not isinstance(cores, int) or cores < 1):
        raise ValueError(f"cores {cores!r}: at least 1")
    if not isinstance(corpus, (str, os.PathLike)) or not Path(corpus).exists():
        raise ValueError(f"corpus {corpus!r}: no such file or folder")
    config = transfer_config(source, tokenizer, method, corpus, seed=seed, language=language, **params)
    work.mkdir(parents=True, exist_ok=True)
    (work / "transfer.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    exported = work / "results" / "export" / SOURCE / TARGET / "init" / method
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(work),
           "--cores", str(cores or os.cpu_count() or 1), str(exported.relative_to(work)),
           "--configfile", str(work / "transfer.yaml")]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"the transfer's DAG failed ({' '.join(cmd)}):\n{(proc.stdout + proc.stderr)[-4000:]}")
    if dest is None:
        return exported
    replace_folder(exported, check_out(out, work))  # again: what is there now, after the DAG's minutes or hours
    return Path(out)


def check_out(out: str | os.PathLike, work: Path) -> Path:
    """Where ``out`` (``--out``) may be written, as an absolute path; ValueError naming it when writing there
    could delete what this command did not write: an existing file or symbolic link, the current directory,
    the home folder, the repository or a folder above one of them, the working directory ``work`` or a folder
    inside or above it, and a folder with files that is not a model folder exported here, unchanged
    (:func:`is_export`: it holds the export's manifest and only the files it lists). A new or empty folder, or
    an unchanged export, is fine."""
    given = Path(out)
    if given.is_symlink():
        raise ValueError(f"--out {out}: a symbolic link (to {os.readlink(given)}); name a new folder, not a "
                         "link")
    path = given.parent.resolve() / given.name if given.name not in ("", ".", "..") else given.resolve()
    if path.exists() and not path.is_dir():
        raise ValueError(f"--out {out}: an existing file, not a folder; name a new folder")

    def at_or_above(place: Path) -> bool:
        return path == place or path in place.parents

    for place, what in ((Path.cwd().resolve(), "the current directory"),
                        (Path.home().resolve(), "your home folder"),
                        (REPO.resolve(), "the repository's checkout")):
        if at_or_above(place):
            above = " or a folder above it" if path != place else ""
            raise ValueError(f"--out {out}: {what}{above} ({path}); name a new folder for the model")
    if at_or_above(work) or work in path.parents:
        raise ValueError(f"--out {out}: the working directory of the run ({work}) or a folder inside or "
                         "above it; name a folder outside it")
    if path.is_dir() and any(path.iterdir()):
        problem = is_export(path)
        if problem:
            raise ValueError(f"--out {out}: a folder with files ({path}), {problem}; it is left as it is: "
                             "name a new or empty folder, or remove them yourself")
    return path


def is_export(folder: Path) -> str | None:
    """None if ``folder`` is a model folder exported by the workflow (the manifest of rule export_init_model
    or export_lapt_model, with config.json) holding only the files its manifest lists, unchanged; else what it
    is."""
    from .artifacts import check_manifest, read_manifest

    record = read_manifest(folder)
    files = (record or {}).get("files")
    if not isinstance(files, dict) or record.get("rule") not in EXPORT_RULES or "config.json" not in files:
        sample = sorted(p.name for p in folder.iterdir())[:3]
        return f"not a model folder this command exported (it holds {', '.join(map(repr, sample))}" + \
            (", ...)" if len(list(folder.iterdir())) > 3 else ")")
    changed = check_manifest(folder)
    if changed:
        return f"an exported model folder changed since ({'; '.join(changed[:3])})"
    return None


def replace_folder(src: Path, dest: Path) -> None:
    """Copy the folder ``src`` to ``dest``, replacing the folder there (checked by :func:`check_out`) in one
    step: the copy is made in a temporary folder beside ``dest`` (removed if the copy fails, ``dest``
    untouched), then swapped with ``dest`` (:func:`_exchange`) and the old folder removed. Symbolic links in
    ``src`` are copied as the files they point to; nothing outside ``dest``'s temporary siblings is
    removed."""
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


def check_configs(configfiles: list[str]) -> int:
    """``vocab-transfer check``: each config file read strictly (:func:`vocab_transfer.typed.load_yaml`), merged as
    Snakemake merges ``--configfile`` files, and checked as the workflow checks it at parse time (a composite's
    studies are each read strictly; their checks run in ``snakemake -n``). Prints the first problem and returns 1,
    else 0."""
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
    print(f"{' '.join(configfiles)}: ok" + (" (the studies' own checks: snakemake -n)" if "studies" in config else ""))
    return 0


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
    c = sub.add_parser("check", help="check config files before a run: a key given twice or a YAML tag named with "
                                     "its line (Snakemake's own loader reports either as 'not valid JSON or YAML'), "
                                     "then every parse-time check of the workflow")
    c.add_argument("configfiles", nargs="+", metavar="CONFIG", help="the files a run passes to --configfile")
    args = parser.parse_args(argv)
    if args.command == "check":
        return check_configs(args.configfiles)
    params = {}
    for item in args.param:
        name, sep, value = item.partition("=")
        if not sep:
            parser.error(f"--param {item!r}: write NAME=VALUE")
        try:
            params[name] = load_yaml(value, f"--param {name}")
        except YamlError as e:
            print(f"vocab-transfer: {e}", file=sys.stderr)
            return 2
    try:
        folder = transfer(args.source, args.tokenizer, args.method, corpus=args.corpus, out=args.out,
                          workdir=args.workdir, seed=args.seed, cores=args.cores, language=args.language, **params)
    except (ValueError, RuntimeError, OSError) as e:
        print(f"vocab-transfer: {e}", file=sys.stderr)
        return 1
    print(json.dumps({"model": str(folder)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Artifact metadata and checks: what made an artifact, from which inputs, and whether it is still whole and current.

Every parquet and safetensors artifact written through :mod:`vocab_transfer.io` carries a ``vocab_transfer`` entry in
its file metadata (:func:`artifact_metadata`): the producing rule and wildcards, a hash of the job's params (the
config sections that shaped it), a fingerprint of each input (and, for a model folder downloaded from the hub, its
``origin.json``: the repo and the commit it resolved to), the library versions and the time. A job started by
Snakemake checks its inputs before it reads them (:func:`verify_inputs`, from ``setup_job``): an input that is cut
short or unreadable, or one made from an older version of another input of the same job (an overlap computed with a
tokenizer that has since changed) stops the job with the file and the command that rebuilds it.

``python -m vocab_transfer.artifacts [results] [--deep]`` checks every artifact under ``results/`` and lists what is
corrupt or stale; ``--deep`` also reads every row group and tensor (a truncation inside a file whose footer
survived). Exit status 1 when something is.

A fingerprint is the SHA-256 of a file's content for files up to 64 MiB (tokenizers, overlaps, init tensors), and of
its size, first and last MiB beyond that (corpora, shards, model weights: cheap at 20 GB, and any rewrite that
changes the length or either end changes it); a folder's is the fingerprint of its sorted file list.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from functools import cache
from pathlib import Path

KEY = "vocab_transfer"
FULL_HASH_LIMIT = 64 << 20
EDGE = 1 << 20
VERSIONED = ("vocab_transfer", "torch", "transformers", "tokenizers", "sentencepiece", "numpy", "pandas", "pyarrow",
             "safetensors", "fasttext-numpy2", "snakemake")


#: The file in which a model folder downloaded from the hub records its origin
#: (:func:`vocab_transfer.source_model.download_hub_model`): repo, requested and resolved revision, files.
ORIGIN_FILE = "origin.json"


def model_origin(path: str | os.PathLike) -> dict | None:
    """The ``origin.json`` of a downloaded hub model folder (None for any other path)."""
    path = Path(path) / ORIGIN_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


class ArtifactError(RuntimeError):
    """An input artifact that is damaged, or older than another input it was made from."""


def fingerprint(path: str | os.PathLike) -> str:
    """A content fingerprint of a file or folder (module docstring); ``"missing"`` if it does not exist."""
    path = Path(path)
    if path.is_dir():
        h = hashlib.sha256()
        for f in sorted(p for p in path.rglob("*") if p.is_file()):
            h.update(f"{f.relative_to(path)}\0{fingerprint(f)}\n".encode())
        return "dir:" + h.hexdigest()
    if not path.is_file():
        return "missing"
    size, h = path.stat().st_size, hashlib.sha256()
    with open(path, "rb") as f:
        if size <= FULL_HASH_LIMIT:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
            return "sha256:" + h.hexdigest()
        h.update(f"{size}\0".encode())
        h.update(f.read(EDGE))
        f.seek(size - EDGE)
        h.update(f.read(EDGE))
    return f"edges:{size}:" + h.hexdigest()


@cache
def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in VERSIONED:
        try:
            out[name] = version(name.replace("_", "-"))
        except PackageNotFoundError:
            pass
    return out


_job: dict | None = None  # the Snakemake job of this process (set_job), its metadata computed once


def snakemake_job() -> object | None:
    """The ``snakemake`` object of a script run by Snakemake's ``script:`` directive, if this process is one."""
    main = sys.modules.get("__main__")
    return getattr(main, "snakemake", None)


def set_job(job: object | None = None) -> None:
    """Record the Snakemake job this process runs (``snakemake`` of a ``script:``; default: found in ``__main__``)."""
    global _job
    job = job if job is not None else snakemake_job()
    if job is None:
        _job = None
        return
    params = {k: v for k, v in job.params.items()} if hasattr(job.params, "items") else {}
    _job = {"rule": job.rule, "wildcards": dict(job.wildcards.items()),
            "params_sha256": hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest(),
            "input_paths": sorted({str(p) for p in job.input})}


def _reset_for_tests() -> None:
    global _job
    _job = None


def artifact_metadata() -> dict:
    """The metadata of an artifact written now: rule, wildcards, params hash and input fingerprints of the job (none
    outside Snakemake), the origin of each input that is a downloaded hub model (``origins``: its ``origin.json``),
    library versions and the time."""
    meta: dict = {"versions": versions(), "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    if _job is not None:
        if "inputs" not in _job:
            _job["inputs"] = {p: fingerprint(p) for p in _job["input_paths"]}
            _job["origins"] = {p: o for p in _job["input_paths"] if (o := model_origin(p)) is not None}
        meta.update({k: _job[k] for k in ("rule", "wildcards", "params_sha256", "inputs")})
        if _job["origins"]:
            meta["origins"] = _job["origins"]
    return meta


def read_metadata(path: str | os.PathLike) -> dict | None:
    """The ``vocab_transfer`` metadata of a parquet or safetensors artifact (None if it has none)."""
    path = Path(path)
    if not path.is_file():  # a folder (a parquet dataset, a model): its files carry their own
        return None
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        raw = (pq.read_schema(path).metadata or {}).get(KEY.encode())
    elif path.suffix == ".safetensors":
        raw = (safetensors_header(path).get("__metadata__") or {}).get(KEY)
    else:
        return None
    return json.loads(raw) if raw else None


def safetensors_header(path: str | os.PathLike) -> dict:
    """The JSON header of a safetensors file, checked against the file's size (a cut-short file fails)."""
    path = Path(path)
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise ArtifactError(f"{path}: {size} bytes, too short for a safetensors file")
        n = int.from_bytes(head, "little")
        if n > size - 8:
            raise ArtifactError(f"{path}: its header claims {n} bytes, the file has {size}")
        header = json.loads(f.read(n))
    end = max((v["data_offsets"][1] for k, v in header.items() if k != "__metadata__"), default=0)
    if 8 + n + end != size:
        raise ArtifactError(f"{path}: {size} bytes, its header describes {8 + n + end} (cut short or padded)")
    return header


def tensor_checksums(path: str | os.PathLike) -> dict[str, str]:
    """SHA-256 of each tensor's raw data in a safetensors file, by tensor name (the dtype and shape hashed in too),
    without the header: two files of the same tensors compare equal whatever their metadata (versions, paths, time)
    says."""
    path = Path(path)
    header = safetensors_header(path)
    out = {}
    with open(path, "rb") as f:
        start = 8 + int.from_bytes(f.read(8), "little")
        for name in sorted(k for k in header if k != "__metadata__"):
            spec = header[name]
            begin, end = spec["data_offsets"]
            f.seek(start + begin)
            h = hashlib.sha256(f"{spec['dtype']}{spec['shape']}\0".encode())
            h.update(f.read(end - begin))
            out[name] = h.hexdigest()
    return out


def check_readable(path: str | os.PathLike, deep: bool = False) -> None:
    """ArtifactError unless ``path`` opens as its format says (parquet footer / safetensors header and size; with
    ``deep`` every row group / tensor read)."""
    path = Path(path)
    try:
        if path.suffix == ".parquet":
            import pyarrow.parquet as pq

            f = pq.ParquetFile(path)
            if deep:
                for i in range(f.num_row_groups):
                    f.read_row_group(i)
        elif path.suffix == ".safetensors":
            safetensors_header(path)
            if deep:
                from safetensors import safe_open

                with safe_open(str(path), "np") as f:
                    for k in f.keys():
                        f.get_tensor(k)
        elif path.suffix == ".json":
            json.loads(path.read_text(encoding="utf-8"))
    except ArtifactError:
        raise
    except Exception as e:  # noqa: BLE001 - any reader error means the file is not what it claims
        raise ArtifactError(f"{path}: unreadable {path.suffix[1:]} ({type(e).__name__}: {e})") from e


def rerun_hint(path: str | os.PathLike) -> str:
    return f"rebuild it with: snakemake --force {path} (and your --configfile)"


def stale_inputs(path: str | os.PathLike, meta: dict | None = None, among: set[str] | None = None,
                 current: dict[str, str] | None = None) -> list[str]:
    """The inputs recorded in ``path``'s metadata whose content has changed since (only those in ``among``);
    ``current`` caches fingerprints across calls."""
    meta = meta if meta is not None else read_metadata(path)
    current = {} if current is None else current
    out = []
    for inp, then in ((meta or {}).get("inputs") or {}).items():
        if (among is None or inp in among) and Path(inp).exists():
            if inp not in current:
                current[inp] = fingerprint(inp)
            if current[inp] != then:
                out.append(inp)
    return out


def verify_inputs(paths, deep: bool = False) -> None:
    """Check a job's input artifacts before it reads them: each parquet/safetensors/JSON file opens, and none was made
    from an older version of another input of the same job. Raises :class:`ArtifactError` naming the file and the
    command that rebuilds it."""
    paths = [str(p) for p in paths]
    files = []
    for p in paths:
        path = Path(p)
        files += [f for f in path.rglob("*") if f.is_file()] if path.is_dir() else [path]
    for f in files:
        if f.suffix in (".parquet", ".safetensors", ".json") and f.is_file():
            try:
                check_readable(f, deep)
            except ArtifactError as e:
                raise ArtifactError(f"{e}; {rerun_hint(f)}") from None
    among, current = set(paths), {}
    for p in paths:
        if Path(p).suffix in (".parquet", ".safetensors") and Path(p).is_file():
            stale = stale_inputs(p, among=among, current=current)
            if stale:
                raise ArtifactError(f"{p} was made from an older version of {stale} (changed since); "
                                    f"{rerun_hint(p)}")


def scan(root: str | os.PathLike, deep: bool = False) -> list[dict]:
    """One record per artifact file under ``root``: ``path``, ``status`` (ok / corrupt / stale / no metadata),
    ``detail``."""
    out, current = [], {}
    for f in sorted(Path(root).rglob("*")):
        if not f.is_file() or f.suffix not in (".parquet", ".safetensors", ".json") or f.name.startswith("."):
            continue
        try:
            check_readable(f, deep)
        except ArtifactError as e:
            out.append({"path": str(f), "status": "corrupt", "detail": str(e)})
            continue
        meta = read_metadata(f) if f.suffix != ".json" else None
        if f.suffix != ".json" and meta is None:
            out.append({"path": str(f), "status": "no metadata", "detail": ""})
            continue
        stale = stale_inputs(f, meta, current=current) if meta else []
        out.append({"path": str(f), "status": "stale" if stale else "ok",
                    "detail": f"inputs changed since: {stale}" if stale else (meta or {}).get("rule", "")})
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m vocab_transfer.artifacts", description=__doc__.split("\n\n")[0])
    p.add_argument("root", nargs="?", default="results", help="folder to check (default: results)")
    p.add_argument("--deep", action="store_true", help="read every row group and tensor too")
    args = p.parse_args(argv)
    records = scan(args.root, args.deep)
    counts: dict[str, int] = {}
    for r in records:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
        if r["status"] in ("corrupt", "stale"):
            print(f"{r['status'].upper():8} {r['path']}: {r['detail']}; {rerun_hint(r['path'])}")
    print(f"{len(records)} artifacts under {args.root}: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    return 1 if counts.get("corrupt") or counts.get("stale") else 0


if __name__ == "__main__":
    sys.exit(main())

"""Artifact metadata and checks: what made an artifact, from which inputs, whether it is whole and current.

Every parquet and safetensors artifact written through :mod:`vocab_transfer.io` carries a ``vocab_transfer``
entry in its file metadata (:func:`artifact_metadata`): the producing rule and wildcards, a hash of the job's
params (the config sections that shaped it), a fingerprint of each input (and, for a model folder downloaded
from the hub, its ``origin.json``: the repo and the commit it resolved to), the library versions and the time.
A job started by Snakemake checks its inputs before it reads them (:func:`verify_inputs`, from ``setup_job``):
an input that is cut short or unreadable, or one made from an older version of another input of the same job
(an overlap made with a tokenizer since changed) stops the job with the file and the command to rebuild it.

``python -m vocab_transfer.artifacts [results] [--deep]`` checks every artifact under ``results/`` and lists
what is corrupt, stale or changed since it was written; ``--deep`` also reads every row group and tensor (a
truncation inside a file whose footer survived) and hashes every file listed in a manifest. Exit status 1 when
something is, or when a pipeline artifact has lost its manifest (below).

Every artifact also checksums itself when it is written (:func:`write_manifest`, from
:func:`vocab_transfer.io.atomic_path`): a folder holds ``.manifest.json`` with the size, modification time and
xxh3-128 hash of each of its files; a file has a hidden sidecar ``.<name>.manifest.json`` beside it. The input
check compares an input against its manifest cheaply (a file whose size and time are as recorded is trusted;
any other is hashed again), ``--deep`` hashes every file; a file changed, added or removed since the artifact
was written stops the job (:func:`check_manifest`). The manifest also records the rule and config files of the
job that wrote it, so the rebuild hint is a command that runs (:func:`rerun_hint`).

A manifest cannot be switched off by deleting it: an artifact of a kind the pipeline writes with one, found
without one, is an error for the jobs that read it and for the check (status ``no manifest``,
:func:`missing_manifest`). That is a parquet or safetensors file whose ``vocab_transfer`` metadata says the
pipeline wrote it, a folder holding such files, and any parquet/safetensors file or folder in the workflow's
own ``results/`` tree (:func:`results_owned`: an attacker may strip the metadata too), except training
checkpoints (:data:`UNMANIFESTED_DIRS`), which only the run that wrote them reads. A user's own model folder
or corpus outside ``results/`` (no manifest, no metadata) is read as it is.

A fingerprint is the SHA-256 of a file's content for files up to 64 MiB (tokenizers, overlaps, init tensors),
and of its size, first and last MiB beyond that (corpora, shards, model weights: cheap at 20 GB, and any
rewrite that changes the length or either end changes it); a folder's: that of its sorted file list.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shlex
import sys
import time
from collections import Counter
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from . import lazy

xxhash = lazy.module("xxhash")  # compiled: jobs that write or check artifacts import it, planning not

KEY = "vocab_transfer"
MANIFEST = ".manifest.json"  # a folder artifact's own checksums; a file's: .<name>.manifest.json beside it
#: Files of a folder artifact that its manifest leaves out: the manifest and the marker Snakemake adds.
UNLISTED = (MANIFEST, ".snakemake_timestamp")
#: The environment variable that tells jobs how to call the workflow again (rules/common.smk: rerun_words):
#: JSON ``{"snakemake": [words before the targets], "configfiles": [its --configfile arguments]}``.
RERUN_ENV = "VOCAB_TRANSFER_RERUN"
#: The workflow's results tree, relative to the folder it runs in (vocab_transfer.workflow.paths.RESULTS).
RESULTS_DIR = "results"
#: Folders of the results tree whose files have no manifest by design: training checkpoints, which only their
#: run reads (LAPT's ``checkpoints/``, fine-tuning's ``seed<N>.checkpoints/``, Token Distillation's
#: ``<method>.safetensors.checkpoint/``): a folder called so, or whose name ends so.
UNMANIFESTED_DIRS = ("checkpoints", ".checkpoints", ".checkpoint")
#: The file kinds the pipeline always writes with a manifest (:func:`vocab_transfer.io.atomic_path`).
MANIFESTED_SUFFIXES = (".parquet", ".safetensors")
#: The largest safetensors header read (10,000 tensors need about 1 MB; safetensors refuses 100 MB).
MAX_HEADER = 16 << 20
FULL_HASH_LIMIT = 64 << 20
EDGE = 1 << 20
VERSIONED = ("vocab_transfer", "torch", "transformers", "tokenizers", "sentencepiece", "numpy", "pandas",
             "pyarrow", "safetensors", "fasttext-numpy2", "snakemake")
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
    size = path.stat().st_size
    with open(path, "rb") as f:
        if size <= FULL_HASH_LIMIT:
            return "sha256:" + hashlib.file_digest(f, "sha256").hexdigest()
        h = hashlib.sha256(f"{size}\0".encode())
        h.update(f.read(EDGE))
        f.seek(size - EDGE)
        h.update(f.read(EDGE))
    return f"edges:{size}:" + h.hexdigest()


@cache
def versions() -> dict[str, str]:
    out = {}
    for name in VERSIONED:
        with contextlib.suppress(PackageNotFoundError):
            out[name] = version(name.replace("_", "-"))
    return out


_job: dict | None = None  # the Snakemake job of this process (set_job), its metadata computed once
_reads: dict | None = None  # what a trainer read, recorded in what it writes (recorded_reads)


def snakemake_job() -> object | None:
    """The ``snakemake`` object of a script run by a ``script:`` directive, if this process is one."""
    return getattr(sys.modules.get("__main__"), "snakemake", None)


def set_job(job: object | None = None) -> None:
    """Record the Snakemake job of this process (``snakemake`` of a ``script:``; default: ``__main__``'s)."""
    global _job
    job = job if job is not None else snakemake_job()
    if job is None:
        _job = None
        return
    params = json.dumps(dict(job.params.items()) if hasattr(job.params, "items") else {}, sort_keys=True,
                        default=str)
    _job = {"rule": job.rule, "wildcards": dict(job.wildcards.items()),
            "params_sha256": hashlib.sha256(params.encode()).hexdigest(),
            "input_paths": sorted({str(p) for p in job.input})}


def _reset_for_tests() -> None:
    global _job
    _job = None


def artifact_metadata() -> dict:
    """The metadata of an artifact written now: rule, wildcards, params hash and input fingerprints of the job
    (none outside Snakemake), the origin of each input that is a downloaded hub model (``origins``: its
    ``origin.json``), library versions and the time."""
    meta: dict = {"versions": versions(), "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    if _job is not None:
        if "inputs" not in _job:
            _job["inputs"] = {p: fingerprint(p) for p in _job["input_paths"]}
            _job["origins"] = {p: o for p in _job["input_paths"] if (o := model_origin(p)) is not None}
        meta.update({k: _job[k] for k in ("rule", "wildcards", "params_sha256", "inputs")})
        if _job["origins"]:
            meta["origins"] = _job["origins"]
    return meta | (_reads or {})


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
        if n > MAX_HEADER:
            raise ArtifactError(f"{path}: its header claims {n:,} bytes, more than the {MAX_HEADER:,} a "
                                "safetensors file of tensors needs (a damaged or crafted file)")
        try:
            header = json.loads(f.read(n))
            end = max((int(v["data_offsets"][1])
                       for k, v in header.items() if k != "__metadata__"), default=0)
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as e:
            raise ArtifactError(f"{path}: its safetensors header is not valid "
                                f"({type(e).__name__}: {e})") from None
    if 8 + n + end != size:
        raise ArtifactError(f"{path}: {size} bytes, its header describes {8 + n + end} (cut short or padded)")
    return header


def tensor_checksums(path: str | os.PathLike) -> dict[str, str]:
    """SHA-256 of each tensor's raw data in a safetensors file, by tensor name (the dtype and shape hashed in
    too), without the header: two files of the same tensors compare equal whatever their metadata (versions,
    paths, time) says."""
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


def hash_file(path: str | os.PathLike) -> str:
    """xxh3-128 of a file's bytes (about 10 GB/s from the page cache: the cost is reading the file)."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, xxhash.xxh3_128).hexdigest()


def sidecar(path: str | os.PathLike) -> Path:
    """Where a file artifact's manifest lives: ``.<name>.manifest.json`` beside it."""
    path = Path(path)
    return path.with_name(f".{path.name}{MANIFEST}")


def manifest_path(path: str | os.PathLike) -> Path:
    path = Path(path)
    return path / MANIFEST if path.is_dir() else sidecar(path)


def _entry(f: Path) -> dict:
    st = f.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "xxh3_128": hash_file(f)}


def _listed(folder: Path) -> list[Path]:
    return sorted(f for f in folder.rglob("*") if f.is_file()
                  and f.relative_to(folder).as_posix() not in UNLISTED)


def _job_origin() -> dict:
    """The manifest's record of the job that writes an artifact: its rule, and how to call the workflow again
    (``rerun``, from :data:`RERUN_ENV`). For a run outside the repository root (``--directory``), the run
    directory is recorded (``directory``), the config files inside it relative to it, and the job's outputs
    relative to it (``outputs``): :func:`rerun_hint` finds the run directory from where the artifact is now (a
    copied or moved run)."""
    out = {"rule": _job["rule"]} if _job else {}
    if RERUN_ENV in os.environ:  # run by the workflow: how to call it again (no config files: config.yaml)
        rerun = json.loads(os.environ[RERUN_ENV])
        words = rerun.get("snakemake", [])
        if "--directory" in words[:-1]:
            run = os.path.abspath(words[words.index("--directory") + 1])
            inside = lambda p: os.path.relpath(os.path.abspath(p), run)  # noqa: E731
            rerun["directory"] = run
            rerun["configfiles"] = [c if inside(c).startswith("..") else inside(c)
                                    for c in rerun.get("configfiles", [])]
            job = snakemake_job()
            if job is not None:
                rerun["outputs"] = [o for o in map(inside, job.output) if not o.startswith("..")]
        out["rerun"] = rerun
    return out


def write_manifest(written: str | os.PathLike) -> dict | None:
    """Record the checksums of an artifact just written at ``written``, after its last byte and before it is
    moved onto its path (a rename keeps the modification times recorded): a folder gets ``.manifest.json``
    inside it (moved with it); a file's record is returned, for :func:`write_sidecar` once it is in place."""
    written = Path(written)
    record = {"format": 1, **_job_origin(), **(_reads or {})}
    if written.is_dir():
        record["files"] = {f.relative_to(written).as_posix(): _entry(f) for f in _listed(written)}
        (written / MANIFEST).write_text(json.dumps(record, indent=0), encoding="utf-8")
        return None
    return record | {"files": {"": _entry(written)}}


def write_sidecar(record: dict, path: str | os.PathLike) -> None:
    """Write a file artifact's manifest beside it, atomically (a temporary file that is removed if the write
    fails, e.g. on a full disk)."""
    side = sidecar(path)
    tmp = side.with_name(side.name + ".tmp")
    try:
        tmp.write_text(json.dumps(record, indent=0), encoding="utf-8")
        os.replace(tmp, side)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def read_manifest(path: str | os.PathLike) -> dict | None:
    """The manifest of an artifact (None if it has none, or if it is unreadable: then :func:`check_manifest`
    says so)."""
    m = manifest_path(path)
    if not m.is_file():
        return None
    with contextlib.suppress(ValueError, OSError):
        return json.loads(m.read_text(encoding="utf-8"))
    return {"files": None}


def check_manifest(path: str | os.PathLike, deep: bool = False) -> list[str]:
    """What changed in an artifact since it was written, by its manifest: files changed (a different size, or
    a different hash where the time differs or ``deep``), added or removed; [] when nothing did or there is no
    manifest (whether one is required: :func:`missing_manifest`)."""
    path = Path(path)
    record = read_manifest(path)
    if record is None:
        return []
    if not isinstance(record.get("files"), dict):
        return [f"its manifest {manifest_path(path)} is unreadable"]
    problems = []
    for rel, then in record["files"].items():
        f = path / rel if rel else path
        if not f.is_file():
            problems.append(f"{f} was removed")
            continue
        st = f.stat()
        if st.st_size != then["size"]:
            problems.append(f"{f} changed ({then['size']} bytes when written, {st.st_size} now)")
        elif (deep or st.st_mtime_ns != then["mtime_ns"]) and hash_file(f) != then["xxh3_128"]:
            problems.append(f"{f} changed (same size, other content)")
    if path.is_dir():
        problems += [f"{f} was added" for f in _listed(path)
                     if f.relative_to(path).as_posix() not in record["files"]]
    return problems


def artifact_checksum(path: str | os.PathLike, deep: bool = False) -> str:
    """The content checksum of an artifact: ``xxh3_128:<hex>`` for a file, the hash its manifest recorded (a
    file whose size or time differ from the manifest's is hashed again), ``xxh3_128-tree:<hex>`` for a folder
    (the hash of its files' sorted names and hashes; a folder inside a folder artifact, such as a LAPT
    snapshot's step, from that artifact's manifest), and :func:`fingerprint` for an artifact without a
    manifest; ``deep``: hash every file again, trusting no manifest."""
    path = Path(path)
    root = path if read_manifest(path) is not None else artifact_root(path)
    record = read_manifest(root)
    files = record.get("files") if record else None
    if not isinstance(files, dict):
        return fingerprint(path)
    inner = "" if root == path else path.relative_to(root).as_posix()

    def xxh3(rel: str, f: Path) -> str:
        then, st = files.get(rel), f.stat()
        if not deep and then and then.get("size") == st.st_size and then.get("mtime_ns") == st.st_mtime_ns:
            return then["xxh3_128"]
        return hash_file(f)

    if not path.is_dir():
        return "xxh3_128:" + xxh3(inner, path)
    h = xxhash.xxh3_128()
    for f in _listed(path):
        rel = f.relative_to(path).as_posix()
        h.update(f"{rel}\0{xxh3(f'{inner}/{rel}' if inner else rel, f)}\n".encode())
    return "xxh3_128-tree:" + h.hexdigest()


#: What a trainer read, in the metadata (and manifest) of each artifact it writes (:func:`recorded_reads`):
#: its inputs by name, ``{name: {"path": ..., "checksum": ...}}``.
READS = "reads"
#: The name of the read whose model an artifact's numbers are of (a fine-tuning or zero-shot score file: the
#: LAPT output, init artifact or source model it fine-tuned or evaluated).
EVALUATED = "evaluated"
#: The name of the read a training started from (a LAPT output: the init artifact, or the model it continued).
STARTED_FROM = "started_from"


def input_records(paths: dict[str, str | os.PathLike | None]) -> dict[str, dict]:
    """What a job reads, for :func:`recorded_reads`: ``{name: {"path": the path as given, "checksum":
    artifact_checksum(path)}}`` for each name with a path (None for one that is not a path here: a hub id)."""
    return {name: {"path": str(p), "checksum": artifact_checksum(p) if Path(p).exists() else None}
            for name, p in paths.items() if p}


@contextlib.contextmanager
def recorded_reads(reads: dict[str, dict], *, evaluated: str | None = None, started_from: str | None = None):
    """Within the block, every artifact written records what the job read (``reads``, of
    :func:`input_records`) in its metadata (:func:`artifact_metadata`) and manifest, with ``evaluated`` /
    ``started_from`` naming the read its numbers are of / its training started from (:data:`EVALUATED`,
    :data:`STARTED_FROM`)."""
    global _reads
    for name in filter(None, (evaluated, started_from)):
        if name not in reads:
            raise ValueError(f"{name!r} is not one of the reads recorded ({sorted(reads)})")
    before = _reads
    _reads = {READS: reads, **({EVALUATED: evaluated} if evaluated else {}),
              **({STARTED_FROM: started_from} if started_from else {})}
    try:
        yield
    finally:
        _reads = before


def recorded_inputs(path: str | os.PathLike) -> dict:
    """What the job that wrote ``path`` recorded it read (:func:`recorded_reads`: ``reads`` and ``evaluated``
    or ``started_from``): from a parquet or safetensors file's metadata, else from its manifest, else from
    that of the nearest folder artifact it lies in that has a record (a LAPT snapshot's step, staged with a
    manifest of its own while the run trained, in the run's ``snapshots/``); {} where nothing was recorded."""
    path = Path(path)
    records = [lambda: read_metadata(path) if path.is_file() else None, lambda: read_manifest(path)]
    records += [lambda p=p: read_manifest(p) for p in path.parents if (p / MANIFEST).is_file()]
    for record in records:
        record = record() or {}
        if isinstance(record.get(READS), dict):
            return {k: record[k] for k in (READS, EVALUATED, STARTED_FROM) if k in record}
    return {}


def artifact_root(path: str | os.PathLike) -> Path:
    """The artifact a file belongs to: the nearest folder above it with a manifest (a corpus part's split
    folder, a tokenizer file's tokenizer folder), else the file. A rebuild names it: the rule's output."""
    path = Path(path)
    for parent in [path, *path.parents]:
        if parent.is_dir() and (parent / MANIFEST).is_file():
            return parent
    return path


def results_owned(path: str | os.PathLike, results: str | os.PathLike | None = None) -> bool:
    """Whether ``path`` lies in the workflow's results tree (``results``, default :data:`RESULTS_DIR` of the
    folder the workflow runs in), outside a training checkpoint folder (:data:`UNMANIFESTED_DIRS`). The path's
    own location counts, not where a link in it points."""
    here = Path(os.path.abspath(path))
    base = Path(os.path.abspath(results if results is not None else RESULTS_DIR))
    if here != base and base not in here.parents:
        return False
    return not any(map(_checkpoint, here.relative_to(base).parts))


def _checkpoint(name: str) -> bool:
    return name == UNMANIFESTED_DIRS[0] or name.endswith(UNMANIFESTED_DIRS[1:])


def pipeline_written(path: str | os.PathLike) -> bool:
    """Whether a parquet or safetensors file carries the pipeline's ``vocab_transfer`` metadata (one it cannot
    read does not: :func:`check_readable` reports that)."""
    try:
        return read_metadata(path) is not None
    except Exception:  # noqa: BLE001 - an unreadable file is reported as corrupt, not here
        return False


def _covered(f: Path) -> bool:
    """Whether a manifest lists ``f``: its sidecar, or a folder above it with ``.manifest.json``."""
    return sidecar(f).is_file() or artifact_root(f) != f


def _uncovered(path: Path, owned: bool) -> list[Path]:
    """The files of ``path`` (itself, or a folder's) that no manifest lists and that need one:
    parquet/safetensors files, and in the results tree (``owned``) a folder's every file (a file:
    parquet/safetensors/JSON)."""
    if path.is_dir():
        files = (f for f in path.rglob("*") if f.is_file() and f.name not in UNLISTED
                 and not f.name.endswith(MANIFEST) and not any(map(_checkpoint, f.relative_to(path).parts)))
        files = (f for f in files if owned or f.suffix in MANIFESTED_SUFFIXES)
    else:
        files = iter([path] if path.suffix in MANIFESTED_SUFFIXES + ((".json",) if owned else ()) else [])
    return sorted(f for f in files if not _covered(f))


def missing_manifest(path: str | os.PathLike, owned: bool | None = None) -> str | None:
    """Why ``path`` (a file or folder) should have a manifest and has none, or None: it has one (its own, or a
    folder above it has ``.manifest.json``; a folder's files may each be covered by their own), or it is not
    of a kind the pipeline writes with one. Of such a kind: a parquet/safetensors file with the pipeline's
    metadata (a folder: one holding such a file), and in the results tree (``owned``, default
    :func:`results_owned`) any parquet, safetensors or JSON file and any folder of files."""
    path = Path(path)
    if not path.exists() or (path.is_dir() and (path / MANIFEST).is_file()) or _covered(path):
        return None
    owned = results_owned(path) if owned is None else owned
    files = _uncovered(path, owned)
    if not files:
        return None
    written = next((f for f in files if f.suffix in MANIFESTED_SUFFIXES and pipeline_written(f)), None)
    where = f"no manifest ({manifest_path(path)} is missing)"
    if written is not None:
        return (f"{path} has {where}, though {'it' if written == path else written} was written by the "
                "pipeline: its checksums are gone, so whether its content changed since cannot be checked")
    if owned:
        return (f"{path} has {where} and no pipeline metadata, though it is in the results tree, where every "
                "artifact is written with a "
                f"manifest{'' if files == [path] else f' ({files[0]} is listed by none)'}")
    return None


def check_readable(path: str | os.PathLike, deep: bool = False) -> None:
    """ArtifactError unless ``path`` opens as its format says (parquet footer / safetensors header and size;
    with ``deep`` every row group / tensor read)."""
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
    """The command that rebuilds the artifact ``path`` belongs to (its rule's output), as the run that wrote
    it was called (from its manifest: the config files, and ``--snakefile``/``--directory`` for a run made
    outside the repository root); else "snakemake --force <path> (and your --configfile)". A run directory
    copied or moved since is named where it is now: the directory above the artifact's path as the job wrote
    it (its ``outputs``), or above its ``results/``/``resources/`` folder; the config files inside it with
    it."""
    def run_directory(root: Path, then: Path, outputs: list[str]) -> Path:
        """Where the run directory ``then`` is now: above the one of the job's ``outputs`` that ``root``'s
        path ends with, else ``then`` if it holds ``root``, else above the nearest results/ or resources/
        above ``root``."""
        for o in outputs:
            parts = Path(o).parts
            if parts and root.parts[-len(parts):] == parts and len(root.parts) > len(parts):
                return Path(*root.parts[:-len(parts)])
        if then == root or then in root.parents:
            return then
        return next((p.parent for p in root.parents if p.name in ("results", "resources")), then)

    root = artifact_root(path)
    rerun = (read_manifest(root) or {}).get("rerun")
    if not rerun:
        return f"rebuild it with: snakemake --force {shlex.quote(str(root))} (and your --configfile)"
    words, configfiles = list(rerun["snakemake"]), list(rerun["configfiles"] or [])
    target = str(root)
    if "--directory" in words[:-1]:
        i = words.index("--directory") + 1
        then = rerun.get("directory") or words[i]
        now = run_directory(Path(os.path.abspath(root)), Path(then), rerun.get("outputs") or [])
        words[i] = str(now)
        configfiles = [str(now / c) if not os.path.isabs(c) else
                       str(now / os.path.relpath(c, then)) if c.startswith(os.path.join(then, "")) else c
                       for c in configfiles]
        with contextlib.suppress(ValueError):
            # a target is read inside --directory
            target = Path(os.path.abspath(root)).relative_to(now).as_posix()
    return "rebuild it with: " + shlex.join([*words, "--force", target,
                                             *(["--configfile", *configfiles] if configfiles else [])])


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
    """Check a job's input artifacts before it reads them: each parquet/safetensors/JSON file opens, and none
    was made from an older version of another input of the same job, and none changed since it was written
    (:func:`check_manifest`) or lost the manifest a pipeline artifact has (:func:`missing_manifest`). Raises
    :class:`ArtifactError` naming the file and the command that rebuilds it."""
    paths = [str(p) for p in paths]
    for p in paths:
        missing = missing_manifest(p)
        if missing:
            raise ArtifactError(f"{missing}; {rerun_hint(p)}")
        root = artifact_root(p)  # a file inside a folder artifact: the folder's manifest lists it
        changed = check_manifest(p if read_manifest(p) is not None or root == Path(p) else root, deep)
        if changed:
            raise ArtifactError(f"{p} changed after it was written: {'; '.join(changed[:3])}"
                                f"{f' (and {len(changed) - 3} more)' if len(changed) > 3 else ''}; "
                                f"{rerun_hint(p)}")
    for f in [f for p in map(Path, paths) for f in (p.rglob("*") if p.is_dir() else [p])]:
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
    """One record per artifact under ``root``: ``path``, ``status`` (ok / corrupt / stale / changed / no
    manifest / no metadata), ``detail``. Files are read as their format says; every manifest (folder or
    sidecar) is compared with what it lists (``deep``: every file hashed again); a parquet/safetensors file
    that no manifest covers is ``no manifest`` when it carries the pipeline's metadata or lies in a results
    tree (:func:`missing_manifest`: ``root`` or a folder above it is called ``results``)."""
    out, current, root = [], {}, Path(root)
    owned = RESULTS_DIR in Path(os.path.abspath(root)).parts
    for m in sorted(root.rglob(f"*{MANIFEST}")):
        artifact = m.parent if m.name == MANIFEST else m.with_name(m.name[1:-len(MANIFEST)])
        if not artifact.exists():
            continue  # the sidecar of a file a rerun is about to write again
        changed = check_manifest(artifact, deep)
        if changed:
            out.append({"path": str(artifact), "status": "changed", "detail": "; ".join(changed[:3])})
    for f in sorted(root.rglob("*")):
        if not f.is_file() or f.suffix not in (".parquet", ".safetensors", ".json") or f.name.startswith("."):
            continue
        try:
            check_readable(f, deep)
        except ArtifactError as e:
            out.append({"path": str(f), "status": "corrupt", "detail": str(e)})
            continue
        if not f.name.endswith(MANIFEST):
            missing = missing_manifest(f, owned and results_owned(f, root))
            if missing:
                out.append({"path": str(f), "status": "no manifest", "detail": missing})
                continue
        meta = read_metadata(f) if f.suffix != ".json" else None
        if f.suffix != ".json" and meta is None:
            out.append({"path": str(f), "status": "no metadata", "detail": ""})
            continue
        stale = stale_inputs(f, meta, current=current) if meta else []
        out.append({"path": str(f), "status": "stale" if stale else "ok",
                    "detail": f"inputs changed since: {stale}" if stale else (meta or {}).get("rule", "")})
    return out


#: The statuses of :func:`scan` that make the check fail (exit status 1).
ERRORS = ("corrupt", "stale", "changed", "no manifest")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m vocab_transfer.artifacts",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("root", nargs="?", default="results", help="folder to check (default: results)")
    p.add_argument("--deep", action="store_true", help="read every row group and tensor, and hash every file")
    args = p.parse_args(argv)
    records = scan(args.root, args.deep)
    counts = Counter(r["status"] for r in records)
    for r in records:
        if r["status"] in ERRORS:
            print(f"{r['status'].upper():8} {r['path']}: {r['detail']}; {rerun_hint(r['path'])}")
    print(f"{len(records)} artifacts under {args.root}: "
          + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    return 1 if any(counts.get(s) for s in ERRORS) else 0


if __name__ == "__main__":
    sys.exit(main())

"""Artifact I/O: atomic writers (a killed job never leaves a half-written file that a rerun would trust) and
:class:`ArrayFile`, a reader of flat arrays in files by ``os.pread`` slices."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from . import lazy
from .artifacts import (
    KEY,
    ArtifactError,
    artifact_metadata,
    safetensors_header,
    write_manifest,
    write_sidecar,
)

np = lazy.module("numpy")
pd = lazy.module("pandas")
pa = lazy.module("pyarrow")
pq = lazy.module("pyarrow.parquet")

if TYPE_CHECKING:  # torch is imported where tensors are written: corpus and shard jobs never load it
    import torch


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, *, directory: bool = False, checksum: bool = True) -> Iterator[Path]:
    """Yield a temporary sibling of ``path``; move it onto ``path`` only if the block succeeds, else remove
    it. A full file system (whatever the writer raised) becomes ``OSError(ENOSPC)`` naming ``path`` and the
    bytes free. With ``checksum`` the artifact records its own checksums before the move
    (:func:`vocab_transfer.artifacts.write_manifest`; checkpoints too, checked before they are read)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if directory:
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
        tmp.chmod(0o777 & ~_umask())  # mkdtemp's 0700 would hide shared results from other users
    else:
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
        tmp = Path(name)
    try:
        yield tmp
        if not directory:  # as a plain open() would create it (mkstemp, or a writer that replaced it: 0600)
            tmp.chmod(0o666 & ~_umask())
        record = write_manifest(tmp) if checksum else None  # a folder's goes inside it; a file's is returned
        if directory and path.is_symlink():  # the link goes, never what it points to
            path.unlink()
        elif directory and path.exists():
            remove_tree(path)
        os.replace(tmp, path)
        if record is not None:  # a file's sidecar, after the file: a kill in between leaves it without one
            write_sidecar(record, path)
    except BaseException as e:
        shutil.rmtree(tmp, ignore_errors=True) if tmp.is_dir() else tmp.unlink(missing_ok=True)
        if _disk_full(e):  # writers name neither file (pyarrow) nor raise OSError at all (safetensors)
            raise OSError(e.errno if isinstance(e, OSError) and e.errno else errno.ENOSPC,
                          f"no space left on the device while writing {path} ({_free_bytes(path.parent)} "
                          f"bytes free there); the partial file was removed ({type(e).__name__}: "
                          f"{e})", str(path)) from e
        raise


@contextlib.contextmanager
def resumable_dir(path: str | os.PathLike) -> Iterator[Path]:
    """Yield ``<path>.partial``, a folder that outlives a failed or killed attempt (a download resumes in it),
    and move its files onto ``path`` atomically (:func:`atomic_path`, manifest included) only if the block
    succeeds. The hub client's own bookkeeping (``.cache``) stays behind with the folder's removal."""
    path = Path(path)
    partial = path.with_name(path.name + ".partial")
    partial.mkdir(parents=True, exist_ok=True)
    yield partial
    shutil.rmtree(partial / ".cache", ignore_errors=True)
    with atomic_path(path, directory=True) as tmp:
        for entry in partial.iterdir():
            os.replace(entry, tmp / entry.name)
    partial.rmdir()


def fetch_url(url: str, path: str | os.PathLike, log=print) -> dict:
    """Download ``url`` into ``<path>.partial``, resuming what an interrupted attempt left there (an HTTP
    range request; a server that ignores it sends the whole file again), and check the size the server
    announced. Returns what identifies the download (``url``, ``etag``, ``last_modified``, ``bytes``,
    ``sha256``); the caller moves or decodes the partial file into place and removes it."""
    import http.client
    import urllib.error
    import urllib.request

    from . import mirror

    partial = Path(path).with_name(Path(path).name + ".partial")
    if mirror.root():  # a hub mirror (vocab_transfer.mirror): the file's copy there
        copy = mirror.url_path(url)
        shutil.copyfile(copy, partial)
        log(f"{url}: copied from the hub mirror ({copy}, {copy.stat().st_size / 1e6:.1f} MB)")
        return {"url": url, "mirror": str(copy), "etag": None, "last_modified": None,
                "bytes": partial.stat().st_size, "sha256": sha256_file(partial)}
    have = partial.stat().st_size if partial.exists() else 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={have}-"} if have else {})
    try:
        response = urllib.request.urlopen(request, timeout=60)
    except urllib.error.HTTPError as e:
        if e.code != 416 or not have:  # 416: nothing left after `have` bytes, the file is whole
            raise
        response, headers, total = None, e.headers, have
    if response is not None:
        with response:
            headers = response.headers
            resumed = have and response.status == 206
            length = headers.get("Content-Length")
            total = (have if resumed else 0) + int(length) if length is not None else None
            log(f"{url}: {'resuming at ' + str(have) + ' bytes' if resumed else 'downloading'}"
                + (f", {total / 1e6:.1f} MB in all" if total else ""))
            with open(partial, "ab" if resumed else "wb") as f:
                try:
                    while block := response.read(1 << 20):
                        f.write(block)
                except (http.client.IncompleteRead, ConnectionError, TimeoutError) as e:  # a lost connection
                    f.write(getattr(e, "partial", b"") or b"")  # keep what arrived: the next try resumes
                    log(f"{url}: the connection broke ({type(e).__name__})")
    size = partial.stat().st_size
    if total is not None and size != total:
        raise OSError(f"{url}: {size} of {total} bytes arrived; run again to resume from {partial}")
    return {"url": url, "etag": headers.get("ETag"), "last_modified": headers.get("Last-Modified"),
            "bytes": size, "sha256": sha256_file(partial)}


def sha256_file(path: str | os.PathLike) -> str:
    """The SHA-256 of a file's bytes (hex), as the hub and download pages list it."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _disk_full(e: BaseException) -> bool:
    """Whether a writer's error means the file system is full (or the user's quota is): an OSError with ENOSPC
    / EDQUOT, or a library's error saying so (safetensors: ``No space left on device (os error 28)``)."""
    said = ("No space left on device", "Disk quota exceeded", f"os error {errno.ENOSPC})")
    return (isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT)
            or isinstance(e, Exception) and any(s in str(e) for s in said))


def _free_bytes(folder: Path) -> int | str:
    try:
        return shutil.disk_usage(folder).free
    except OSError:
        return "unknown"


class UnsafePathError(OSError):
    """A folder of a run's own (checkpoints) that is, or holds, a symbolic link, or that lies outside the
    folder it belongs to: nothing is written into it or deleted from it, since that would reach files outside
    the run."""


def refuse_links(path: str | os.PathLike, within: str | os.PathLike | None = None, what: str = "folder",
                 inside: bool = True) -> Path:
    """``path`` (which need not exist yet), unless it or (``inside``) anything under it is a symbolic link,
    or, with ``within``, it is not under ``within`` or a folder between ``within`` and it is a link
    (``within`` itself and the folders above it may be links: a results folder on scratch storage). Else
    :class:`UnsafePathError` naming the link and ``what`` the folder holds."""
    path = Path(path)
    chain = [path]
    if within is not None:
        within = Path(within)
        parts = path.relative_to(within).parts if path.is_relative_to(within) else ("..",)
        if ".." in parts:
            raise UnsafePathError(f"{what} {path} is not under {within}: it is neither written nor deleted")
        chain = [within.joinpath(*parts[:i + 1]) for i in range(len(parts))]
    links = [p for p in chain if p.is_symlink()]
    if inside and not links and path.is_dir():
        for folder, dirs, files in os.walk(path):  # os.walk lists a link to a folder but never enters it
            links += [Path(folder) / name for name in dirs + files if (Path(folder) / name).is_symlink()]
    if links:
        raise UnsafePathError(f"{what} {path}: {links[0]} is a symbolic link (to {os.readlink(links[0])}); "
                              f"nothing is written or deleted through a link: remove the link (what it "
                              f"points to is left as it is), or make {path} a real folder")
    return path


def remove_tree(path: str | os.PathLike, within: str | os.PathLike | None = None) -> None:
    """Delete a folder (a run's checkpoints) so that a process killed midway leaves it whole or not at all: it
    is renamed to a hidden temporary sibling first (which nothing resumes from), then deleted. A ``path`` that
    is a symbolic link, or (with ``within``) not under ``within`` or reached through a link below it, raises
    :class:`UnsafePathError` and nothing is deleted; links inside the folder are deleted, never followed."""
    path = Path(path)
    if path.is_symlink() or within is not None:
        refuse_links(path, within, what="folder to delete", inside=False)
    if not path.exists():
        return
    aside = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".deleted.tmp", dir=path.parent))
    os.replace(path, aside)
    shutil.rmtree(aside, ignore_errors=True)


class ArrayFile:
    """A flat array in a file (raw, or ``.npy`` after its header), read by ``os.pread`` slices: unlike a
    memory map, reads are not charged to the job's resident memory: a 20 GB shard costs only the slice."""

    def __init__(self, path: Path, dtype: np.dtype, offset: int = 0, length: int | None = None):
        self.path, self.dtype, self.offset = path, np.dtype(dtype), offset
        self.length = (path.stat().st_size - offset) // self.dtype.itemsize if length is None else length
        self._fd: int | None = None

    @classmethod
    def npy(cls, path: Path) -> ArrayFile:
        fmt = np.lib.format
        with open(path, "rb") as f:
            read = fmt.read_array_header_1_0 if fmt.read_magic(f) == (1, 0) else fmt.read_array_header_2_0
            shape, fortran, dtype = read(f)
            if len(shape) != 1 or fortran:
                raise ValueError(f"{path}: expected a flat array, found shape {shape}")
            return cls(path, dtype, f.tell(), shape[0])

    def __len__(self) -> int:
        return self.length

    def __getstate__(self) -> dict:  # picklable (DataLoader workers): the descriptor is reopened
        return {**self.__dict__, "_fd": None}

    def read(self, start: int, stop: int) -> np.ndarray:
        """Elements ``start:stop`` (clipped to the array) as a new array."""
        start, stop = max(0, start), min(stop, self.length)
        if stop <= start:
            return np.zeros(0, dtype=self.dtype)
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDONLY)
        size = self.dtype.itemsize
        buf = os.pread(self._fd, (stop - start) * size, self.offset + start * size)
        if len(buf) != (stop - start) * size:
            raise OSError(f"{self.path}: short read at element {start} (the file was truncated while in use)")
        return np.frombuffer(buf, dtype=self.dtype)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def write_parquet(df: pd.DataFrame, path: str | os.PathLike, schema: pa.Schema | None = None) -> None:
    """Write ``df`` as parquet (with an explicit ``schema`` when given), atomically, with the artifact's
    metadata (:func:`vocab_transfer.artifacts.artifact_metadata`) in the file's key-value metadata."""
    table = pa.Table.from_pandas(df, schema=schema, preserve_index=False)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                           KEY.encode(): json.dumps(artifact_metadata()).encode()})
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)


def write_tensors(tensors: dict[str, torch.Tensor], path: str | os.PathLike,
                  metadata: dict[str, str] | None = None) -> None:
    """Write named tensors as safetensors, atomically, with the artifact's metadata
    (:func:`vocab_transfer.artifacts.artifact_metadata`) in the header's ``__metadata__``."""
    from safetensors.torch import save_file

    metadata = {**(metadata or {}), KEY: json.dumps(artifact_metadata())}
    with atomic_path(path) as tmp:
        save_file({k: v.contiguous() for k, v in tensors.items()}, str(tmp), metadata=metadata)


def read_tensors(path: str | os.PathLike) -> dict[str, torch.Tensor]:
    """The named tensors of a safetensors file. Its header is checked first
    (:func:`vocab_transfer.artifacts.safetensors_header`: an absurd header length, a size that does not match,
    a header that is not JSON), and any reader error becomes an
    :class:`~vocab_transfer.artifacts.ArtifactError` naming the file."""
    from safetensors.torch import load_file

    safetensors_header(path)
    try:
        return load_file(str(path))
    except Exception as e:  # noqa: BLE001 - the reader's errors do not name the file
        raise ArtifactError(f"{path}: unreadable safetensors ({type(e).__name__}: {e})") from e


def require_columns(path: str | os.PathLike, names: list[str], wanted, error: type[Exception] = ArtifactError
                    ) -> None:
    """Raise ``error`` naming ``path``, the columns of ``wanted`` it lacks and the columns it has, unless
    ``names`` (its columns) has them all: the one schema check of the pipeline's parquet readers."""
    missing = [c for c in wanted if c not in names]
    if missing:
        raise error(f"{path}: no column(s) {missing} (its columns: {list(names)}; expected {list(wanted)}): "
                    "not the table this step reads; rebuild it, or give the file of that kind")


#: The columns each of the pipeline's parquet kinds has (at least), checked by :func:`read_parquet` before a
#: step reads one: the overlap table (vocab_transfer.methods.overlap.OVERLAP_SCHEMA, the columns the methods
#: read), an init artifact's provenance table (``<method>.provenance.parquet``), a bilingual dictionary, a
#: word list (``words.parquet``) and a corpus split.
TABLE_COLUMNS: dict[str, tuple[str, ...]] = {
    "overlap": ("target_id", "source_id", "target_token", "source_token", "match"),
    "provenance": ("target_id", "token", "provenance", "n_sources"),
    "dictionary": ("source_word", "target_word"), "words": ("word", "count"), "corpus": ("doc_id", "text")}


def read_parquet(path: str | os.PathLike, columns=None, *, kind: str | None = None) -> pd.DataFrame:
    """A parquet table (a file or directory dataset) as a DataFrame, after checking that it has the columns of
    its ``kind`` (:data:`TABLE_COLUMNS`) and ``columns`` (:func:`require_columns`: an error naming the file
    and the columns it lacks); only ``columns`` are read when given. An unreadable footer, or a folder without
    parquet files, raises :class:`~vocab_transfer.artifacts.ArtifactError` naming it."""
    folder = Path(path)  # a file, or a directory dataset read by its first part's footer
    first = folder if not folder.is_dir() else next(iter(sorted(folder.glob("*.parquet"))), None)
    if first is None:
        raise ArtifactError(f"{folder}: a parquet dataset folder without .parquet files")
    try:
        names = pq.read_schema(first).names
    except Exception as e:  # noqa: BLE001 - pyarrow's errors do not always name the file
        raise ArtifactError(f"{first}: unreadable parquet ({type(e).__name__}: {e})") from e
    wanted = TABLE_COLUMNS[kind] if kind is not None else ()
    require_columns(path, names, [*wanted, *(c for c in columns or () if c not in wanted)])
    return pd.read_parquet(path, columns=list(columns) if columns is not None else None)


def write_text(text: str, path: str | os.PathLike) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")

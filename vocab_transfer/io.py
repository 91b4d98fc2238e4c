"""Atomic artifact writers: a killed job never leaves a half-written file that a rerun would trust."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

if TYPE_CHECKING:  # torch is imported where tensors are written: corpus and shard jobs never load it
    import torch


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, *, directory: bool = False) -> Iterator[Path]:
    """Yield a temporary sibling of ``path``; move it onto ``path`` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if directory:
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
        tmp.chmod(0o777 & ~_umask())  # mkdtemp's 0700 would hide shared results from other users
    else:
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
        tmp = Path(name)
        tmp.chmod(0o666 & ~_umask())  # as a plain open() would create it (mkstemp: 0600)
    try:
        yield tmp
        if directory and path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True) if tmp.is_dir() else tmp.unlink(missing_ok=True)
        raise


def write_parquet(df: pd.DataFrame, path: str | os.PathLike, schema: pa.Schema | None = None) -> None:
    """Write ``df`` as parquet (with an explicit ``schema`` when given), atomically."""
    table = pa.Table.from_pandas(df, schema=schema, preserve_index=False)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)


def write_tensors(tensors: dict[str, torch.Tensor], path: str | os.PathLike,
                  metadata: dict[str, str] | None = None) -> None:
    """Write named tensors as safetensors, atomically."""
    from safetensors.torch import save_file

    with atomic_path(path) as tmp:
        save_file({k: v.contiguous() for k, v in tensors.items()}, str(tmp), metadata=metadata)


def read_tensors(path: str | os.PathLike) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(path))


def write_text(text: str, path: str | os.PathLike) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")

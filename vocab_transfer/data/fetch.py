"""Hub corpora fetched before any job reads them (rule download_corpus, on the login node: compute nodes of
many clusters have no internet).

:func:`fetch_hub_corpus` resolves a corpus spec (``corpora.<name>``: cc100, oscar, mc4 or any hub dataset with
``dataset`` / ``name`` / ``data_dir``) to the data files of its split at one commit, downloads them into
``resources/corpora/<name>/`` and records what it fetched in ``fetch.json``: the repository, the requested
revision, the commit, and every file with its size (and SHA-256 where the hub keeps one). Files are fetched in
the order the stream reads them; with a byte cap (``max_bytes``, else ``corpus_filter.max_bytes``) it stops
once the compressed files it has hold that many bytes (their text holds more). A killed fetch resumes: the
files land in ``resources/corpora/<name>.partial/`` first (the hub client resumes a half-downloaded file
there, a finished one is not refetched), and the folder goes into place once each file has its size and hash.

A hub mirror (:mod:`vocab_transfer.mirror`: ``<mirror>/<owner>/<name>/``, the dataset card included) serves
the files instead of the hub: air-gapped sites, the rehearsal and the tests, which run this on local files.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

from .. import mirror as hub_mirror
from ..io import resumable_dir, sha256_file
from ..mirror import MIRROR_ENV  # noqa: F401 - the variable's name, as tests and users know it here
from .sources import HUB_SOURCES, hub_arguments

FETCH_FILE = "fetch.json"


def needs_fetch(spec: dict) -> bool:
    """Whether a corpus spec reads a hub repository (not a local folder or local ``data_files``) and asks to
    be fetched (``fetch``, default true; false streams it in the corpus job instead)."""
    if spec.get("source") not in HUB_SOURCES or not spec.get("fetch", True):
        return False
    if spec.get("data_files") and not spec.get("dataset"):
        return False
    return not os.path.exists(hub_arguments(spec)["path"])


def _relative(file: str, repo_root: str) -> str:
    """A resolved data file (``hf://datasets/<repo>@<commit>/<path>`` or a path under a local copy) as a path
    in the repository."""
    if file.startswith("hf://"):
        return file.split("@", 1)[1].split("/", 1)[1] if "@" in file else file.split("/", 4)[4]
    return Path(file).resolve().relative_to(Path(repo_root).resolve()).as_posix()


#: What a data file of a corpus read from a repository's ``data_dir`` may be called, and the ``datasets``
#: builder that reads it (compressed files stream through ``datasets``' zstd, gzip and xz file systems).
DATA_SUFFIXES: dict[str, str] = {
    ".jsonl.zst": "json", ".jsonl.gz": "json", ".jsonl.xz": "json", ".jsonl": "json", ".json.gz": "json",
    ".json": "json", ".parquet": "parquet", ".txt.zst": "text", ".txt.xz": "text",
    ".txt.gz": "text", ".txt": "text",
}


def natural_key(path: str) -> list:
    """Sort key of a file name with its numbers compared as numbers: ``part_2`` before ``part_10``."""
    return [(int(x), "") if x.isdigit() else (-1, x) for x in re.split(r"(\d+)", path)]


def listed_files(root: str | Path, data_dir: str, commit: str | None = None) -> list[str]:
    """The data files (:data:`DATA_SUFFIXES`) under ``data_dir`` of a dataset repository, in reading order
    (numbers compared as numbers, as OSCAR 23.01 numbers its parts ``<lang>_meta_part_<k>.jsonl.zst``): of the
    local copy ``root`` (a mirror's, a clone), else of hub repository ``root`` at ``commit``. Listed, not read
    through the dataset card, so that what else the repository holds (a loading script, which ``datasets`` >=
    4 refuses to open; ``checksum.sha256`` files) does not matter. ValueError when there is none."""
    prefix = data_dir.strip("/") + "/"
    if os.path.isdir(root):
        names = [p.relative_to(root).as_posix() for p in Path(root, prefix).rglob("*") if p.is_file()]
    else:
        from huggingface_hub import HfApi

        names = HfApi().list_repo_files(str(root), repo_type="dataset", revision=commit)
    files = sorted((f for f in names if f.startswith(prefix)
                    and f.endswith(tuple(DATA_SUFFIXES))), key=natural_key)
    if not files:
        raise ValueError(f"{root}: no data files under {prefix} (files ending {', '.join(DATA_SUFFIXES)})")
    return files


def builder_of(files: list[str]) -> str:
    """The ``datasets`` builder (json, parquet, text) that reads ``files``; ValueError for a mix."""
    kinds = {next(b for s, b in DATA_SUFFIXES.items() if f.endswith(s)) for f in files}
    if len(kinds) != 1:
        raise ValueError(f"data files of more than one format ({', '.join(sorted(kinds))}): {files[:5]}")
    return kinds.pop()


def data_files(spec: dict) -> tuple[str, str, list[str]]:
    """(repository, commit, the split's data files in reading order) of a hub corpus spec, at the commit the
    revision resolves to: a ``data_dir``'s files as listed (:func:`listed_files`), else those of the dataset
    card's configuration (``datasets.load_dataset_builder``)."""
    import datasets

    args = hub_arguments(spec)
    repo, split = args["path"], args.get("split", "train")
    mirror = hub_mirror.root()
    if mirror:
        root, commit = str(hub_mirror.repo(repo)), hub_mirror.COMMIT
    else:
        from huggingface_hub import HfApi

        root, commit = repo, HfApi().dataset_info(repo, revision=args.get("revision")).sha
    if args.get("data_dir") and not args.get("name"):
        if split != "train":
            raise ValueError(f"{repo}: the files under data_dir {args['data_dir']!r} are one split, "
                             f"train, not {split!r}")
        return repo, commit, listed_files(root, args["data_dir"], None if mirror else commit)
    kwargs = {k: args[k] for k in ("name", "data_dir") if args.get(k)}
    builder = datasets.load_dataset_builder(root, revision=None if mirror else commit, **kwargs)
    files = builder.config.data_files.get(split) if builder.config.data_files else None
    if not files:
        raise ValueError(f"{repo}: no data files for split {split!r} ({kwargs or 'default configuration'})")
    return repo, commit, [_relative(str(f), root) for f in files]


def fetch_hub_corpus(spec: dict, out_dir: str | Path, max_bytes: int | None = None,
                     log: Callable[[str], None] = print) -> dict:
    """Fetch a hub corpus's data files into ``out_dir`` (resuming a killed one); returns ``fetch.json``."""
    repo, commit, files = data_files(spec)
    mirror = hub_mirror.root()
    if mirror:
        source = hub_mirror.repo(repo)
        infos = {f: {"size": (source / f).stat().st_size} for f in files}
    else:
        from huggingface_hub import HfApi

        infos = {p.path: {"size": p.size, **({"sha256": p.lfs.sha256} if p.lfs else {})}
                 for p in HfApi().get_paths_info(repo, files, repo_type="dataset", revision=commit)}
    chosen, total = [], 0
    for f in files:
        if max_bytes is not None and total >= max_bytes:
            break
        chosen.append(f)
        total += infos[f]["size"]
    log(f"{repo}@{commit}: {len(chosen)} of {len(files)} files, {total / 1e9:.2f} GB"
        + (f" (enough for the {max_bytes / 1e9:.2f} GB cap)" if len(chosen) < len(files) else ""))
    with resumable_dir(out_dir) as partial:
        for i, f in enumerate(chosen, 1):
            target, want = partial / f, infos[f]
            if not (target.is_file() and target.stat().st_size == want["size"]):
                if mirror:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(source / f, target)
                else:
                    from huggingface_hub import hf_hub_download

                    hf_hub_download(repo, f, repo_type="dataset", revision=commit, local_dir=partial)
            size = target.stat().st_size
            if size != want["size"]:
                raise OSError(f"{repo}/{f}: fetched {size} bytes, the hub lists "
                              f"{want['size']}; run again to resume")
            if "sha256" in want and sha256_file(target) != want["sha256"]:
                target.unlink()
                raise OSError(f"{repo}/{f}: SHA-256 differs from the hub's; the file was removed, run again")
            log(f"[{i}/{len(chosen)}] {f} ({size / 1e6:.1f} MB)")
        record = {"repo": repo, "revision": hub_arguments(spec).get("revision"), "resolved_revision": commit,
                  "files": [{"path": f, **infos[f]} for f in chosen], "bytes": total,
                  "complete": len(chosen) == len(files)}
        (partial / FETCH_FILE).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return record


def fetched_arguments(folder: str | Path) -> dict:
    """``datasets.load_dataset`` arguments that stream a fetched corpus from its folder (files in order)."""
    record = json.loads((Path(folder) / FETCH_FILE).read_text())
    return {"path": str(folder), "data_files": [f["path"] for f in record["files"]], "split": "train"}

"""Hub corpora fetched before any job reads them (rule download_corpus, on the login node: compute nodes of many
clusters have no internet).

:func:`fetch_hub_corpus` resolves a corpus spec (``corpora.<name>``: cc100, oscar, mc4 or any hub dataset with
``dataset`` / ``name`` / ``data_dir``) to the data files of its split at one commit, downloads them into
``resources/corpora/<name>/`` and records what it fetched in ``fetch.json``: the repository, the requested revision,
the commit, and every file with its size (and SHA-256 where the hub keeps one). Files are fetched in the order the
stream reads them; with a byte cap (``max_bytes``, else ``corpus_filter.max_bytes``) it stops once the compressed
files it has hold that many bytes (their text holds more). A killed fetch resumes: the files land in
``resources/corpora/<name>.partial/`` first (the hub client resumes a half-downloaded file there, a finished one is
not fetched again), and the folder moves into place only when every file has its size and hash.

A hub mirror (:mod:`vocab_transfer.mirror`: ``<mirror>/<owner>/<name>/``, the dataset card included) serves the
files instead of the hub: air-gapped sites, the rehearsal and the tests, which run this code on local files.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from .. import mirror as hub_mirror
from ..io import resumable_dir, sha256_file
from ..mirror import MIRROR_ENV  # noqa: F401 - the variable's name, as tests and users know it here
from .sources import hub_arguments

FETCH_FILE = "fetch.json"


def needs_fetch(spec: dict) -> bool:
    """Whether a corpus spec reads a hub repository (not a local folder or local ``data_files``) and asks to be
    fetched (``fetch``, default true; false streams it in the corpus job instead)."""
    from .sources import HUB_DATASETS

    if spec.get("source") not in HUB_DATASETS or not spec.get("fetch", True):
        return False
    if spec.get("data_files") and not spec.get("dataset"):
        return False
    return not os.path.exists(hub_arguments(spec)["path"])


def _relative(file: str, repo_root: str) -> str:
    """A resolved data file (``hf://datasets/<repo>@<commit>/<path>`` or a path under a local copy) as a path in the
    repository."""
    if file.startswith("hf://"):
        return file.split("@", 1)[1].split("/", 1)[1] if "@" in file else file.split("/", 4)[4]
    return Path(file).resolve().relative_to(Path(repo_root).resolve()).as_posix()


def data_files(spec: dict) -> tuple[str, str, list[str]]:
    """(repository, commit, the split's data files in reading order) of a hub corpus spec: from the dataset card's
    configuration (``datasets.load_dataset_builder``), at the commit the revision resolves to."""
    import datasets

    args = hub_arguments(spec)
    repo, split = args["path"], args.get("split", "train")
    mirror = hub_mirror.root()
    if mirror:
        root, commit = str(hub_mirror.repo(repo)), hub_mirror.COMMIT
    else:
        from huggingface_hub import HfApi

        root, commit = repo, HfApi().dataset_info(repo, revision=args.get("revision")).sha
    kwargs = {k: args[k] for k in ("name", "data_dir") if args.get(k)}
    builder = datasets.load_dataset_builder(root, revision=None if mirror else commit, **kwargs)
    files = builder.config.data_files.get(split) if builder.config.data_files else None
    if not files:
        raise ValueError(f"{repo}: no data files for split {split!r} ({kwargs or 'default configuration'})")
    return repo, commit, [_relative(str(f), root) for f in files]


def fetch_hub_corpus(spec: dict, out_dir: str | Path, max_bytes: int | None = None,
                     log: Callable[[str], None] = print) -> dict:
    """Fetch a hub corpus's data files into ``out_dir`` (resuming a killed fetch) and return its ``fetch.json``."""
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
                raise OSError(f"{repo}/{f}: fetched {size} bytes, the hub lists {want['size']}; run again to resume")
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
    """``datasets.load_dataset`` arguments that stream a fetched corpus from its folder (its files, in order)."""
    record = json.loads((Path(folder) / FETCH_FILE).read_text())
    return {"path": str(folder), "data_files": [f["path"] for f in record["files"]], "split": "train"}

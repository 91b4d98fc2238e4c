"""A local mirror of the hub and of the download URLs: login-node downloads read it, not the network.

``VOCAB_TRANSFER_HUB_MIRROR`` (or the config key ``hub_mirror``, which sets it for the run) names a folder
laid out as the hub:

- ``<mirror>/<owner>/<name>/``: a model or dataset repository, its files as in the repository (models: config,
  tokenizer files, weights; corpora: the data files, compressed as on the hub, and the dataset card that picks
  them, :mod:`vocab_transfer.data.fetch`; docs/data.md lists each corpus's files);
- ``<mirror>/<owner>/<name>/<config>/<split>/*.parquet``: a task dataset as the hub's parquet export lays it
  out (``default`` for a dataset without configs; :mod:`vocab_transfer.data.tasks`);
- ``<mirror>/lm_eval_tasks/``: lm-eval task YAMLs on local files, which take precedence over the harness's
  tasks of the same names (:func:`vocab_transfer.eval.benchmarks.task_manager`);
- ``<mirror>/urls/<host>/<path>``: a file downloaded by URL (fastText ``cc.<lang>.300.bin.gz``, MUSE
  dictionaries; :func:`vocab_transfer.io.fetch_url`).

Sites that keep a copy of the hub on a shared file system point it there; the rehearsal
(``scripts/rehearse.sh``) points it at miniatures built here (:mod:`vocab_transfer.miniatures`). A mirror has
no commits: what was fetched from it is recorded with the revision ``mirror``.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

MIRROR_ENV = "VOCAB_TRANSFER_HUB_MIRROR"
LM_EVAL_TASKS = "lm_eval_tasks"
ORIGIN_FILE = "origin.json"  # beside task data a mirror served: {"hub_mirror": <folder>}
COMMIT = "mirror"  # the resolved revision recorded for what a mirror served


def root() -> Path | None:
    """The mirror folder, or None when downloads go to the network."""
    value = os.environ.get(MIRROR_ENV)
    return Path(value) if value else None


def repo(repo_id: str) -> Path:
    """The folder of hub repository ``repo_id`` in the mirror; FileNotFoundError names both if missing."""
    folder = root() / repo_id
    if not folder.is_dir():
        raise FileNotFoundError(f"{repo_id}: not in the hub mirror {root()} ({MIRROR_ENV}); "
                                f"expected the folder {folder}")
    return folder


def url_file(mirror: Path, url: str) -> Path:
    """Where the mirror folder ``mirror`` keeps the file at ``url``: ``<mirror>/urls/<host>/<path>``."""
    parts = urlsplit(url)
    return mirror / "urls" / parts.netloc / parts.path.lstrip("/")


def url_path(url: str) -> Path:
    """The mirror's copy of the file at ``url`` (:func:`url_file`)."""
    path = url_file(root(), url)
    if not path.is_file():
        raise FileNotFoundError(f"{url}: not in the hub mirror {root()} ({MIRROR_ENV}); "
                                f"expected the file {path}")
    return path

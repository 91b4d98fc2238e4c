"""Download one file named in the config on the login node (rules download_word_vectors, download_dictionary).

Only runs when the config asks for a hub resource. The download resumes what an interrupted attempt left in
``<file>.partial`` and is checked against the size the server announces (:func:`vocab_transfer.io.fetch_url`);
``.gz`` URLs are then decompressed, and the file is written atomically, so an interrupted download leaves
nothing a rerun would trust. ``.<file>.origin.json`` beside it records the URL, the server's ETag and date,
the bytes and the SHA-256 of what was downloaded.
"""

from vocab_transfer.warm import handoff

handoff()  # a local run's job continues forked from the run's starter (vocab_transfer/warm.py)

import gzip
import json
import shutil
from pathlib import Path

from vocab_transfer.io import atomic_path, fetch_url
from vocab_transfer.workflow.job import setup_job


def main(url, out_path, log_path):
    log = setup_job(log_path)
    origin = fetch_url(url, out_path, log=log.info)
    partial = Path(out_path).with_name(Path(out_path).name + ".partial")
    with atomic_path(out_path) as tmp, open(partial, "rb") as raw, open(tmp, "wb") as f:
        shutil.copyfileobj(gzip.GzipFile(fileobj=raw) if url.endswith(".gz") else raw, f, 1 << 20)
    partial.unlink()
    Path(out_path).with_name(f".{Path(out_path).name}.origin.json").write_text(
        json.dumps(origin, indent=1) + "\n")
    log.info("wrote %s (%d bytes downloaded, sha256 %s)", out_path, origin["bytes"], origin["sha256"][:12])


main(snakemake.params.url, snakemake.output[0], snakemake.log[0])

"""Download one file named in the config (cluster only; rules download_word_vectors, download_dictionary).

Only runs when the config asks for a hub resource. ``.gz`` URLs are decompressed on the fly; the
file is written atomically, so an interrupted download leaves nothing a rerun would trust.
"""

from vocab_transfer.workflow.warm import handoff

handoff()  # local runs: the rest runs in a process forked from one that has done the imports

import gzip
import shutil
import urllib.request

from vocab_transfer.io import atomic_path
from vocab_transfer.workflow.job import setup_job


def main(url, out_path, log_path):
    log = setup_job(log_path)
    log.info("downloading %s", url)
    with urllib.request.urlopen(url, timeout=60) as response, atomic_path(out_path) as tmp, open(tmp, "wb") as f:
        shutil.copyfileobj(gzip.GzipFile(fileobj=response) if url.endswith(".gz") else response, f, 1 << 20)
    log.info("wrote %s", out_path)


main(snakemake.params.url, snakemake.output[0], snakemake.log[0])

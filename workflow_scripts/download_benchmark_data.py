"""Fetch the datasets of a target's lm-eval tasks into the benchmark datasets cache (rule
download_benchmark_data, a local rule: the login node has internet, the compute nodes may not)."""

from vocab_transfer.warm import handoff

handoff()  # a local run's job continues forked from the run's starter (vocab_transfer/warm.py)

import json

from vocab_transfer.eval.benchmarks import fetch, use_cache
from vocab_transfer.io import write_text
from vocab_transfer.workflow.job import setup_job


def main(spec, cache, out_path, log_path):
    log = setup_job(log_path)
    use_cache(cache, offline=False)
    info = fetch(spec["tasks"], spec["include_path"], cache=cache, limit=spec["limit"])
    write_text(json.dumps({"tasks": spec["tasks"], "fetched": info}, indent=1) + "\n", out_path)
    log.info("fetched %s", info)


main(json.loads(snakemake.params.spec), snakemake.params.cache, snakemake.output.data, snakemake.log[0])

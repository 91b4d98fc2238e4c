"""lm-eval benchmark scores of one model on a target's tasks (rule benchmark_model): the source model, an init
export or a LAPT export (vocab_transfer.eval.benchmarks)."""

from vocab_transfer.warm import handoff

handoff()  # a local run's job continues forked from the run's starter (vocab_transfer/warm.py)

import json

from vocab_transfer.eval.benchmarks import add_chance, evaluate, use_cache
from vocab_transfer.io import write_parquet
from vocab_transfer.workflow.job import setup_job


def main(model_dir, data_path, spec, cache, wildcards, seed, out_path, log_path, threads):
    log = setup_job(log_path, threads)
    use_cache(cache, offline=True)  # fetched on the login node (rule download_benchmark_data)
    scores = evaluate(model_dir, spec["tasks"], include_path=spec["include_path"],
                      num_fewshot=spec["num_fewshot"], limit=spec["limit"], batch_size=spec["batch_size"],
                      seed=seed)
    with open(data_path, encoding="utf-8") as f:  # each multiple-choice task's chance accuracy
        scores = add_chance(scores, json.load(f).get("fetched", {}))
    scores.insert(0, "source", wildcards.source)
    scores.insert(1, "target", wildcards.target)
    scores.insert(2, "stage", wildcards.stage)
    scores.insert(3, "name", wildcards.name)
    write_parquet(scores, out_path)
    log.info("%s\n%s", model_dir, scores.to_string(index=False))


main(snakemake.input.model, snakemake.input.data, json.loads(snakemake.params.spec), snakemake.params.cache,
     snakemake.wildcards, snakemake.params.seed, snakemake.output.scores, snakemake.log[0], snakemake.threads)

"""Initialize the target embedding matrix with one method (rule init_embeddings)."""

from vocab_transfer.warm import handoff

handoff()  # a local run's job continues forked from the run's starter (vocab_transfer/warm.py)

import json

from vocab_transfer.init import initialize
from vocab_transfer.io import write_parquet, write_tensors
from vocab_transfer.workflow.job import setup_job


def main(inputs, method, seed, emb_path, prov_path, log_path, threads):
    log = setup_job(log_path, threads)
    method = json.loads(method)
    # a method that trains its rows (refine_embeddings) keeps its state and its live curves beside the
    # artifact, out of the job's outputs
    stem = emb_path.removesuffix(".safetensors")
    tensors, provenance = initialize(inputs, method, seed=seed, checkpoint_dir=emb_path + ".checkpoint",
                                     track_dir=stem + ".live")
    log.info("%s: %s", method["kind"], provenance["provenance"].value_counts().to_dict())
    write_tensors(tensors, emb_path, metadata={"method": json.dumps(method), "seed": str(seed)})
    write_parquet(provenance, prov_path)


main(dict(snakemake.input.items()), snakemake.params.method, snakemake.params.seed,
     snakemake.output.embeddings, snakemake.output.provenance, snakemake.log[0], snakemake.threads)

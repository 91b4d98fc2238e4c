"""The source tokenizer extended with the most frequent target tokens it lacks (rule extend_tokenizer)."""

from vocab_transfer.warm import handoff

handoff()  # a local run's job continues forked from the run's starter (vocab_transfer/warm.py)

from vocab_transfer.data.tokenizer import load_tokenizer
from vocab_transfer.io import atomic_path, read_parquet, read_tensors
from vocab_transfer.methods.extension import extend_tokenizer, new_token_ids
from vocab_transfer.workflow.job import setup_job


def main(model_dir, tokenizer_dir, overlap_path, vectors_path, selection, out_dir, log_path):
    log = setup_job(log_path)
    source, target = load_tokenizer(model_dir), load_tokenizer(tokenizer_dir)
    overlap = read_parquet(overlap_path, kind="overlap")
    new = new_token_ids(overlap, read_tensors(vectors_path)["counts"].numpy(), **selection)
    tok = extend_tokenizer(source, target, new)
    log.info("extended %d source tokens by %d target tokens (%s)", len(source), len(new), selection)
    with atomic_path(out_dir, directory=True) as tmp:
        tok.save_pretrained(str(tmp))


main(snakemake.input.model, snakemake.input.tokenizer, snakemake.input.overlap, snakemake.input.vectors,
     dict(snakemake.params.selection), snakemake.output.tokenizer, snakemake.log[0])

"""Download a hub model into resources/ at the configured revision, recording the commit it resolved to in the
folder's origin.json (rules download_source_model and download_reference_model; runs only when the config
names a hub id)."""

from vocab_transfer.warm import handoff

handoff()  # a local run's job continues forked from the run's starter (vocab_transfer/warm.py)

from vocab_transfer.source_model import download_hub_model
from vocab_transfer.workflow.job import setup_job


def main(repo, revision, out_dir, log_path):
    log = setup_job(log_path)
    origin = download_hub_model(repo, revision, out_dir)
    log.info("downloaded %s at %s (commit %s, %d files) to %s", repo, revision or "the default branch",
             origin["resolved_revision"], len(origin["files"]), out_dir)


repo, _, revision = snakemake.params.repo.partition("@")  # plan.hub_spec: repo or repo@revision
main(repo, revision or None, snakemake.output.model, snakemake.log[0])

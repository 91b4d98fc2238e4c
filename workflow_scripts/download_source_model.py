"""Download a hub model into resources/ (rules download_source_model and download_reference_model; runs only
when the config names a hub id)."""

from vocab_transfer.io import atomic_path
from vocab_transfer.source_model import hub_download_patterns
from vocab_transfer.workflow.job import setup_job


def main(repo, out_dir, log_path):
    log = setup_job(log_path)
    from huggingface_hub import HfApi, snapshot_download

    patterns = hub_download_patterns(HfApi().list_repo_files(repo))
    with atomic_path(out_dir, directory=True) as tmp:
        snapshot_download(repo, local_dir=str(tmp), allow_patterns=patterns)
    log.info("downloaded %s to %s", repo, out_dir)


main(snakemake.params.repo, snakemake.output.model, snakemake.log[0])

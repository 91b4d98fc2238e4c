"""Load a downstream dataset into the common schema and write train/dev/test parquet, plus one parquet per
extra evaluation set (test_<name>: MNLI's mismatched validation set), and labels.json (rule prepare_task);
origin.json names the hub mirror that served the data, if one did."""

from vocab_transfer.warm import handoff

handoff()  # a local run's job continues forked from the run's starter (vocab_transfer/warm.py)

import json
from pathlib import Path

from vocab_transfer import mirror
from vocab_transfer.data.tasks import UNLABELLED, label_list, load_task
from vocab_transfer.io import atomic_path
from vocab_transfer.workflow.job import setup_job


def main(spec, task, seed, out, log_path):
    log = setup_job(log_path)
    ds = load_task(spec, seed=seed)
    with atomic_path(out, directory=True) as tmp:
        for split in ds:
            ds[split].to_pandas().to_parquet(Path(tmp) / f"{split}.parquet", index=False)
            log.info("%s: %d examples", split, len(ds[split]))
        labels = label_list(task, ds) if task not in UNLABELLED else []
        (Path(tmp) / "labels.json").write_text(json.dumps(labels, ensure_ascii=False))
        log.info("%d labels: %s", len(labels), labels)
        if mirror.root() and not spec.get("data_files"):  # what a hub mirror served (vocab_transfer.mirror)
            (Path(tmp) / mirror.ORIGIN_FILE).write_text(json.dumps({"hub_mirror": str(mirror.root())}) + "\n")


main(json.loads(snakemake.params.spec), snakemake.params.task, snakemake.params.seed, snakemake.output.data,
     snakemake.log[0])

"""Linear-probe accuracy of one method's transferred model right after initialization on one task (rule
probe_init; WECHSEL Tables 7-8's NLI and POS columns): the frozen model's last hidden states, a logistic
regression on top."""

from vocab_transfer.warm import handoff

handoff()  # a local run's job continues forked from the run's starter (vocab_transfer/warm.py)

import json

import pandas as pd

from vocab_transfer.data.tokenizer import load_tokenizer
from vocab_transfer.eval.probe import probe_accuracy
from vocab_transfer.init import load_transferred_model
from vocab_transfer.io import write_parquet
from vocab_transfer.source_model import max_sequence_length
from vocab_transfer.training.finetune import read_task_data
from vocab_transfer.training.runtime import pick_device
from vocab_transfer.workflow.job import setup_job
from vocab_transfer.workflow.model import Probe


def sample(df: pd.DataFrame, n: int | None, seed: int) -> pd.DataFrame:
    """A seeded sample of ``n`` rows in their original order (all rows when ``n`` is None or larger)."""
    return df if n is None or len(df) <= n else df.sample(n=n, random_state=seed).sort_index()


def main(inputs, spec: Probe, seed: int, task: str, wildcards, out_path, log_path, threads):
    log = setup_job(log_path, threads)
    model = load_transferred_model(inputs["model"], inputs["embeddings"])
    model.to(pick_device())
    data = read_task_data(inputs["data"], task)
    labels = json.load(open(f"{inputs['data']}/labels.json"))
    train, test = sample(data["train"], spec.max_train, seed), sample(data["test"], spec.max_test, seed)
    seq_len = min(spec.seq_len, max_sequence_length(model))
    result = probe_accuracy(model, load_tokenizer(inputs["tokenizer"]), train, test, task, labels=labels,
                            seq_len=seq_len, batch_size=spec.batch_size, l2=spec.l2, max_iter=spec.max_iter)
    log.info("%s %s %s: accuracy %.4f (%d train / %d test items)", wildcards["source"], wildcards["task"],
             wildcards["method"], result["accuracy"], result["train_items"], result["test_items"])
    write_parquet(pd.DataFrame([{**wildcards, "task_type": task, **result}]), out_path)


spec = json.loads(snakemake.params.spec)
main(dict(snakemake.input.items()), Probe.parse({k: v for k, v in spec.items() if k != "seed"}, "eval.probe"),
     spec["seed"], snakemake.params.task, {k: snakemake.wildcards[k] for k in ("source", "task", "method")},
     snakemake.output.result, snakemake.log[0], snakemake.threads)

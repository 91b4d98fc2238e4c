"""The word-level fastText model of one language as .bin (rule save_word_fasttext_model): trained as in
build_word_vectors (same settings and seed), or a copy of the pretrained .bin."""

from vocab_transfer.warm import handoff

handoff()  # a local run's job continues forked from the run's starter (vocab_transfer/warm.py)

import json
import shutil

from vocab_transfer.data.corpus import iter_texts
from vocab_transfer.data.word_vectors import train_word_fasttext
from vocab_transfer.io import atomic_path
from vocab_transfer.workflow.job import setup_job
from vocab_transfer.workflow.model import WordFastText


def main(inputs, params, model_path, log_path):
    log = setup_job(log_path, params.get("train", {}).get("threads", 1))
    if "pretrained" in inputs:
        if not str(inputs["pretrained"]).endswith(".bin"):
            raise ValueError(
                f"{inputs['pretrained']}: fastText subword information needs a .bin model, not a .vec "
                "file (word_vectors.<lang>.path)")
        with atomic_path(model_path) as tmp:
            shutil.copyfile(inputs["pretrained"], tmp)
        log.info("copied %s", inputs["pretrained"])
        return
    spec = WordFastText.parse(params["train"], "word_fasttext")
    wv = train_word_fasttext(iter_texts(inputs["corpus"]), seed=params.get("seed"), verbose=2,
                             model_path=model_path, **spec.model_dump())
    log.info("trained and saved the fastText model of %d words to %s", len(wv.words), model_path)


main(dict(snakemake.input.items()), json.loads(snakemake.params.spec), snakemake.output.model,
     snakemake.log[0])

"""A bilingual dictionary as a parquet of (source_word, target_word) pairs (rule build_dictionary)."""

from vocab_transfer.warm import handoff

handoff()  # a local run's job continues forked from the run's starter (vocab_transfer/warm.py)

import json

from vocab_transfer.data.dictionary import DICTIONARY_SOURCES
from vocab_transfer.io import write_parquet
from vocab_transfer.workflow.job import setup_job
from vocab_transfer.workflow.model import Dictionary


def main(inputs, spec: Dictionary, out_path, log_path):
    log = setup_job(log_path)
    pairs = DICTIONARY_SOURCES[spec.source].pairs(spec, inputs)
    log.info("%s dictionary: %d single-word pairs, %d source words", spec.source, len(pairs),
             pairs["source_word"].nunique())
    write_parquet(pairs, out_path)


main(dict(snakemake.input.items()),
     Dictionary.parse(json.loads(snakemake.params.spec),
                      f"dictionaries.{snakemake.wildcards.slang}.{snakemake.wildcards.lang}"),
     snakemake.output.pairs, snakemake.log[0])

# Bilingual dictionaries source language -> target language (WECHSEL's alignment seed, Dict Match).
# Input and params functions: vocab_transfer/workflow/plan/vectors.py (`plan.<name>`); the kinds of
# dictionary: vocab_transfer/data/dictionary.py (DICTIONARY_SOURCES).
from vocab_transfer.data.dictionary import MuseDictionary


# `localrule: True`: the download runs on the login node (compute nodes may have no internet).

rule build_dictionary:
    wildcard_constraints:
        slang=plan.dictionary_pattern("source"),
        lang=plan.dictionary_pattern("target"),
    input:
        unpack(plan.dictionary_inputs),
    output:
        pairs=paths.dictionary("{slang}", "{lang}"),
    params:
        spec=plan.dictionary_params,
    log:
        logs("build_dictionary/{slang}/{lang}.log"),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/build_dictionary.py"


# Cluster only (config `dictionaries: {en: {fr: {source: muse}}}`): MUSE's ground-truth dictionaries.
rule download_dictionary:
    localrule: True
    output:
        paths.muse_dictionary("{slang}", "{lang}"),
    params:
        url=MuseDictionary.url,
    log:
        logs("download_dictionary/{slang}-{lang}.log"),
    conda:
        "../envs/vocab-transfer.yaml"
    script:
        "../workflow_scripts/download_file.py"

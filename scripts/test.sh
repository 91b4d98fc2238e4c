#!/usr/bin/env bash
# README command 2: set up and run the test suite (what CI runs).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh --tests
. .venv/bin/activate
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
# A real single-node SLURM for the profile tests (tests/test_slurm.py); it must run before any snakemake
# call once the SLURM client is installed. Without root/apt the SLURM tests skip (or fail under CI=1).
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  bash scripts/slurm/start.sh --cpus 4   # installs slurm-wlm + munge if missing
  # the zstd tool writes the .zst corpora of tests/test_zstd.py
  command -v zstd >/dev/null || { apt-get update -qq && apt-get install -y -qq zstd >/dev/null; }
  # headless Chromium opens the `snakemake --report` HTML in tests/test_workflow.py
  if ! command -v chromium >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq chromium >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; }
  fi
fi
ruff check .
python -m pytest -q --durations=15 "$@"

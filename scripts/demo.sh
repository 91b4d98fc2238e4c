#!/usr/bin/env bash
# README command 1: set up, run the embedded offline demo end to end, print where the table is.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
. .venv/bin/activate
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
snakemake --cores all "$@"
echo
cat results/tables/init_mlm_loss.md
echo "Table 4 (init-time MLM loss): $(pwd)/results/tables/init_mlm_loss.csv and .md"

#!/usr/bin/env bash
# README command 2: set up and run the test suite (what CI runs).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh --tests
. .venv/bin/activate
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
# A real single-node SLURM for the profile tests (tests/test_slurm.py). A controller that answers
# already is used as it is: its config, daemons and jobs stay untouched. Otherwise
# scripts/slurm/start.sh starts one (installing slurm-wlm + munge if missing), and on exit this
# script stops what it started and puts /etc/slurm back as it found it: a slurm.conf left behind
# whose controller no longer runs makes every later `snakemake` wait 9 s (the SLURM executor
# plugin runs `scontrol show config` when it is imported; docs/development.md).
# Without root/apt the SLURM tests skip (or fail under CI=1).
SLURM_SAVED=""
restore_slurm() {  # stop the cluster this script started; /etc/slurm as it was before
  bash scripts/slurm/stop.sh >/dev/null 2>&1 || echo "scripts/slurm/stop.sh failed: stop SLURM by hand" >&2
  for f in slurm.conf gres.conf cgroup.conf; do
    if [ -e "$SLURM_SAVED/$f" ]; then cp -p "$SLURM_SAVED/$f" "/etc/slurm/$f"; else rm -f "/etc/slurm/$f"; fi
  done
  rm -rf "$SLURM_SAVED"
}
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  if command -v scontrol >/dev/null && timeout 5 scontrol ping 2>/dev/null | grep -q UP; then
    echo "SLURM: using the controller that is running (scontrol ping), as it is"
  else
    SLURM_SAVED=$(mktemp -d)
    for f in slurm.conf gres.conf cgroup.conf; do
      [ ! -e "/etc/slurm/$f" ] || cp -p "/etc/slurm/$f" "$SLURM_SAVED/"
    done
    trap restore_slurm EXIT
    # 8 CPUs and 8 fake GPUs typed a100 (as scripts/rehearse.sh types them): tests/test_slurm.py runs the rehearsal
    # and its workflows side by side, mostly waiting on sleeps and time limits; the rehearsal's LAPT and the GPU
    # bundles each ask for 2 GPUs in one job
    bash scripts/slurm/start.sh --cpus 8 --gpus 8 --gpu-type a100
  fi
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

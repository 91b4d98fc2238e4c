#!/usr/bin/env bash
# The dress rehearsal of the cluster command, offline on this machine: the papers' configs with
# configs/overlays/rehearsal.yaml (miniature hub resources, shrunk sizes and grids) through a real single-node SLURM
# (scripts/slurm) with the shipped profile (profiles/slurm, its placeholders filled in for that cluster).
#
# Usage: bash scripts/rehearse.sh [options] [CONFIG...] [-- SNAKEMAKE ARGS...]
#   CONFIG          config files (default: configs/papers.yaml, every paper); the overlay is added after them
#   --overlay FILE  the rehearsal overlay (default configs/overlays/rehearsal.yaml)
#   --cpus N        CPUs the local SLURM node advertises (default 8: small jobs side by side on few cores)
#   --gpus N        fake GPUs of the local SLURM node, typed a100 (default 8: two GPU bundles of 4 side by side)
#   --signal-s S    the profile's --signal=TERM@<s> lead before a job's time limit, scaled to the rehearsal's
#                   limits (default 90: the interrupted LAPT job's 3-minute limit, rehearsal.interrupt)
#   --local         run the jobs here (snakemake --cores all) instead of through SLURM
#   --directory DIR the working directory (default rehearsal/, ignored by git): its results/, resources/ and logs/
#                   never meet a real run's, whose downloads have the same params as the mirror's miniatures
# The profile keeps the shipped profile's requests (GPUs, GPU partition, gpu_model, accounts), whatever values its
# placeholders hold, with the local cluster's partitions, accounts and GPU type (workflow/cluster.py local_profile).
# Needs root for SLURM (scripts/slurm/start.sh installs and starts it). Reports the job count, the wall time and every
# table and figure planned against those written (DIR/logs/rehearsal/report.txt). Exit status: nonzero if a job
# failed or a table or figure is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

OVERLAY=configs/overlays/rehearsal.yaml CPUS=8 GPUS=8 SIGNAL_S=90 LOCAL=0 WORKDIR=rehearsal CONFIGS=() EXTRA=()
while [ $# -gt 0 ]; do
  case "$1" in
    --overlay) OVERLAY=$2; shift ;;
    --cpus) CPUS=$2; shift ;;
    --gpus) GPUS=$2; shift ;;
    --signal-s) SIGNAL_S=$2; shift ;;
    --local) LOCAL=1 ;;
    --directory) WORKDIR=$2; shift ;;
    --) shift; EXTRA=("$@"); break ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) CONFIGS+=("$1") ;;
  esac
  shift
done
[ ${#CONFIGS[@]} -gt 0 ] || CONFIGS=(configs/papers.yaml)

[ -d .venv ] || bash scripts/setup_env.sh
. .venv/bin/activate
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
REPO=$(pwd)
absolute() { case "$1" in /*) echo "$1" ;; *) echo "$REPO/$1" ;; esac; }
ABS=(); for c in "${CONFIGS[@]}"; do ABS+=("$(absolute "$c")"); done
CONFIGS=("${ABS[@]}") OVERLAY=$(absolute "$OVERLAY")   # the working directory is another
mkdir -p "$WORKDIR/logs/rehearsal"
cd "$WORKDIR"
say() { echo "[rehearse $(( SECONDS ))s] $*"; }

say "miniatures of every hub resource the configs name (python -m vocab_transfer.miniatures)"
python -m vocab_transfer.miniatures "${CONFIGS[@]}" "$OVERLAY" | tail -1

if [ "$LOCAL" = 1 ]; then
  RUN=(--cores all --keep-going --rerun-incomplete)  # as the profile does
else
  bash "$REPO/scripts/slurm/start.sh" --cpus "$CPUS" --gpus "$GPUS" --gpu-type a100
  PROFILE=logs/rehearsal/profile
  python -c 'import sys; from vocab_transfer.workflow.cluster import local_profile
local_profile(sys.argv[1], sys.argv[2], cpus=1, mem_mb=3000, signal_s=int(sys.argv[3]))' \
    "$REPO/profiles/slurm/config.yaml" "$PROFILE" "$SIGNAL_S"
  grep '^#   ' "$PROFILE/config.yaml" | sed 's/^#  /[rehearse] profile:/'
  RUN=(--profile "$PROFILE")
fi

say "snakemake ${RUN[*]} --configfile ${CONFIGS[*]} $OVERLAY ${EXTRA[*]}"
START=$SECONDS
set +e
snakemake --snakefile "$REPO/Snakefile" "${RUN[@]}" --configfile "${CONFIGS[@]}" "$OVERLAY" "${EXTRA[@]}" 2>&1 | tee logs/rehearsal/snakemake.log \
  | grep --line-buffered -E "steps \([0-9]+%\) done|^Error in rule|Nothing to be done"
STATUS=${PIPESTATUS[0]}
set -e
WALL=$(( SECONDS - START ))

set +e
{
  echo "configs: ${CONFIGS[*]} $OVERLAY"
  echo "executor: $([ "$LOCAL" = 1 ] && echo local || echo "slurm (scripts/slurm, $CPUS CPUs, profile $PROFILE)")"
  echo "wall time: ${WALL} s (snakemake exit status ${STATUS})"
  # the jobs run and failed, from the log (vocab_transfer/workflow/runlog.py): a job retried to success is not
  # failed; a run that ran none says why (a locked directory: what to do)
  python -m vocab_transfer.workflow.runlog logs/rehearsal/snakemake.log --status "$STATUS"
  python -m vocab_transfer.workflow.rehearsal --base "$REPO" "${CONFIGS[@]}" "$OVERLAY"
} > logs/rehearsal/report.txt
REPORT=$?
# the LAPT job of rehearsal.interrupt: signalled, checkpointed, retried, bit-identical (workflow/interrupted.py)
[ "$LOCAL" = 1 ] || python -m vocab_transfer.workflow.interrupted --base "$REPO" "${CONFIGS[@]}" "$OVERLAY" \
  >> logs/rehearsal/report.txt || REPORT=1
set -e
grep -v "^ok " logs/rehearsal/report.txt
say "report: $WORKDIR/logs/rehearsal/report.txt"
[ "$STATUS" = 0 ] && [ "$REPORT" = 0 ]

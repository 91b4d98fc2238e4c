#!/usr/bin/env bash
# Start a real single-node SLURM cluster on localhost: munged + slurmctld + slurmd, one node
# `localnode` in two partitions, `cpu` (the default) and `gpu`, with fake GPUs as GRES
# (`--gres=gpu:1` / `--gpus=1` are granted and CUDA_VISIBLE_DEVICES is set; there is no device).
# Used by the test suite (tests/test_slurm.py, profile tests/slurm/profile) and to try
# profiles/slurm on one machine. Needs root; installs the packages with install.sh if missing.
#
# Idempotent: daemons already up with the same config are left alone; a changed config
# restarts slurmctld and slurmd. Returns once `sinfo` shows the node usable (idle).
#
# Usage: sudo bash scripts/slurm/start.sh [options]
#   --gpus N        fake GPUs on the node (default 1; 0 = no GRES)
#   --gpu-type T    give the fake GPUs a type (GRES gpu:T:N): jobs may then ask for `--gpus=T:1` or
#                   `--gres=gpu:T:1` as a profile's gpu_model makes them, and untyped requests still fit
#                   (default: untyped, gpu:N)
#   --cpus N        CPUs the node advertises (default: the real count); more than the real
#                   count lets small test jobs run side by side
#   --mem-mb M      memory the node advertises in MB (default: the real amount)
#   --max-time T    MaxTime of both partitions (default 7-00:00:00; e.g. 5 = five minutes,
#                   to try what a short time limit does to a workflow)
#   --timeout S     seconds to wait for each daemon (default 60)
#   --restart       restart slurmctld and slurmd even if the config is unchanged
#   --force         overwrite an /etc/slurm/slurm.conf that this script did not write
# Logs: /var/log/slurm/{slurmctld,slurmd}.log. Stop with scripts/slurm/stop.sh.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
FAKE_GPUS=1 GPU_TYPE="" CPUS_OVERRIDE="" MEM_OVERRIDE="" MAX_TIME=7-00:00:00 TIMEOUT=60 RESTART=0 FORCE=0
NODE=localnode
ETC=/etc/slurm
RUNDIR=/run/local-slurm          # rendered configs and markers for what this script started
MARK="Managed by vocab-transfer scripts/slurm/start.sh"

while [ $# -gt 0 ]; do
  case "$1" in
    --gpus) FAKE_GPUS=$2; shift ;;
    --gpu-type) GPU_TYPE=$2; shift ;;
    --cpus) CPUS_OVERRIDE=$2; shift ;;
    --mem-mb) MEM_OVERRIDE=$2; shift ;;
    --max-time) MAX_TIME=$2; shift ;;
    --timeout) TIMEOUT=$2; shift ;;
    --restart) RESTART=1 ;;
    --force) FORCE=1 ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    *) echo "unknown option: $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

log() { echo "[slurm/start ${SECONDS}s] $*"; }
die() { echo "[slurm/start] ERROR: $*" >&2; exit 1; }
wait_for() {  # wait_for <seconds> <command...>: retry every 0.25 s until it succeeds
  local end=$(( $(date +%s) + $1 )); shift
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -ge "$end" ] && return 1
    sleep 0.25
  done
}
pid_alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

[ "$(id -u)" = 0 ] || die "must run as root (sudo bash $0)"
bash "$HERE/install.sh"
export PATH=$PATH:/usr/sbin:/sbin
mkdir -p "$RUNDIR"

# ---------------------------------------------------------------- munge
if [ ! -s /etc/munge/munge.key ]; then
  log "creating munge key"
  mkdir -p /etc/munge
  dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
fi
chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
if ! (munge -n | unmunge) >/dev/null 2>&1; then
  log "starting munged"
  mkdir -p /run/munge /var/log/munge /var/lib/munge
  chown munge:munge /run/munge /var/log/munge /var/lib/munge
  chmod 755 /run/munge
  runuser -u munge -- /usr/sbin/munged
  touch "$RUNDIR/munged.started"
  wait_for 20 sh -c 'munge -n | unmunge' || die "munged did not come up (see /var/log/munge/munged.log)"
fi

# ---------------------------------------------------------------- config
# Node geometry and memory exactly as slurmd detects them: a RealMemory above the detected
# one would drain the node. --cpus/--mem-mb override them (SlurmdParameters=config_overrides).
hw=$(slurmd -C | head -1)
get() { echo "$hw" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
NODE_HW="CPUs=$(get CPUs) Boards=$(get Boards) SocketsPerBoard=$(get SocketsPerBoard)"
NODE_HW+=" CoresPerSocket=$(get CoresPerSocket) ThreadsPerCore=$(get ThreadsPerCore)"
NODE_HW+=" RealMemory=${MEM_OVERRIDE:-$(get RealMemory)}"
SLURMD_PARAMS=""
if [ -n "$CPUS_OVERRIDE" ] || [ -n "$MEM_OVERRIDE" ]; then
  NODE_HW="CPUs=${CPUS_OVERRIDE:-$(get CPUs)} RealMemory=${MEM_OVERRIDE:-$(get RealMemory)}"
  SLURMD_PARAMS="SlurmdParameters=config_overrides"
fi

NODE_GRES=""
: > "$RUNDIR/gres.conf"
if [ "$FAKE_GPUS" -gt 0 ]; then
  [[ "$GPU_TYPE" =~ ^[A-Za-z0-9_.-]*$ ]] || die "--gpu-type $GPU_TYPE: letters, digits and _.- only"
  NODE_GRES="Gres=gpu:${GPU_TYPE:+$GPU_TYPE:}$FAKE_GPUS"
  # Dummy device files (the same device as /dev/null): SLURM only uses them to index the GPUs
  # and set CUDA_VISIBLE_DEVICES; nothing opens them.
  files=()
  for i in $(seq 0 $((FAKE_GPUS - 1))); do
    [ -e "/dev/fakegpu$i" ] || mknod "/dev/fakegpu$i" c 1 3 2>/dev/null || touch "/dev/fakegpu$i"
    files+=("/dev/fakegpu$i")
  done
  printf '# %s\nNodeName=%s Name=gpu%s File=%s\n' "$MARK" "$NODE" "${GPU_TYPE:+ Type=$GPU_TYPE}" \
    "$(IFS=,; echo "${files[*]}")" > "$RUNDIR/gres.conf"
fi
printf '# %s\nCgroupPlugin=autodetect\n' "$MARK" > "$RUNDIR/cgroup.conf"   # unused (no cgroup plugins)
sed -e "s#@NODE_HW@#$NODE_HW#" -e "s#@NODE_GRES@#$NODE_GRES#" -e "s#@SLURMD_PARAMS@#$SLURMD_PARAMS#" \
    -e "s#@MAX_TIME@#$MAX_TIME#" "$HERE/conf/slurm.conf.in" > "$RUNDIR/slurm.conf"

mkdir -p "$ETC"
if [ -e "$ETC/slurm.conf" ] && ! grep -q "$MARK" "$ETC/slurm.conf" && [ "$FORCE" = 0 ]; then
  die "$ETC/slurm.conf was not written by this script (a real cluster's config?); use --force to replace it"
fi
CHANGED=0
for f in slurm.conf gres.conf cgroup.conf; do
  cmp -s "$RUNDIR/$f" "$ETC/$f" || CHANGED=1
done
# Stop first, then write: stop.sh moves the configs this kit wrote aside
if [ "$RESTART" = 1 ] || { [ "$CHANGED" = 1 ] && { pid_alive /run/slurmctld.pid || pid_alive /run/slurmd.pid; }; }; then
  log "config changed or --restart: stopping the running SLURM daemons"
  KEEP_MUNGE=1 bash "$HERE/stop.sh" --keep-jobs >/dev/null 2>&1 || true
fi
for f in slurm.conf gres.conf cgroup.conf; do
  cmp -s "$RUNDIR/$f" "$ETC/$f" || install -m 644 "$RUNDIR/$f" "$ETC/$f"
done
mkdir -p /var/lib/slurm/slurmctld /var/lib/slurm/slurmd /var/log/slurm
chown slurm:slurm /var/lib/slurm /var/lib/slurm/slurmctld /var/log/slurm

# ---------------------------------------------------------------- daemons
if ! pid_alive /run/slurmctld.pid; then
  log "starting slurmctld"
  slurmctld
fi
wait_for "$TIMEOUT" sh -c 'scontrol ping | grep -q UP' \
  || die "slurmctld not responding (see /var/log/slurm/slurmctld.log)"
if ! pid_alive /run/slurmd.pid; then
  log "starting slurmd"
  slurmd -N "$NODE"
fi
node_ok() {
  local s
  s=$(sinfo -h -n "$NODE" -o %T 2>/dev/null | head -1)
  case "$s" in idle|mixed|allocated|completing) return 0 ;; esac
  case "$s" in down*|drain*) scontrol update nodename="$NODE" state=resume >/dev/null 2>&1 || true ;; esac
  return 1
}
wait_for "$TIMEOUT" node_ok \
  || { sinfo -N -l >&2 || true; die "node $NODE not idle after ${TIMEOUT}s (see /var/log/slurm/slurmd.log)"; }
log "ready: $(sinfo -h -o 'partition=%P avail=%a nodes=%D state=%T maxtime=%l') [$NODE_HW ${NODE_GRES:-no GRES}]"

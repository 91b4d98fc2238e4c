#!/usr/bin/env bash
# Stop the local SLURM cluster started by scripts/slurm/start.sh: cancel all jobs (unless
# --keep-jobs), stop slurmd and slurmctld, and stop munged only if start.sh started it; the configs start.sh
# wrote move to /run/local-slurm/ (a client would otherwise wait for the stopped controller).
# Needs root.
#
# Usage: sudo bash scripts/slurm/stop.sh [--keep-jobs] [--purge]
#   --purge  also delete the controller/node state and the SLURM logs
set -uo pipefail
export PATH=$PATH:/usr/sbin:/sbin
RUNDIR=/run/local-slurm
KEEP_JOBS=0 PURGE=0
for a in "$@"; do
  case "$a" in
    --keep-jobs) KEEP_JOBS=1 ;;
    --purge) PURGE=1 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "unknown option: $a" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "[slurm/stop] must run as root" >&2; exit 1; }

log() { echo "[slurm/stop] $*"; }
stop_pidfile() {  # stop_pidfile <name> <pidfile> [timeout seconds]
  local name=$1 pf=$2 t=${3:-15} pid
  [ -s "$pf" ] || return 0
  pid=$(cat "$pf")
  kill -0 "$pid" 2>/dev/null || { rm -f "$pf"; return 0; }
  log "stopping $name (pid $pid)"
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 1 $((t * 4))); do kill -0 "$pid" 2>/dev/null || { rm -f "$pf"; return 0; }; sleep 0.25; done
  log "$name did not exit; sending SIGKILL"
  kill -KILL "$pid" 2>/dev/null; rm -f "$pf"
}

if command -v scontrol >/dev/null && scontrol ping 2>/dev/null | grep -q UP; then
  if [ "$KEEP_JOBS" = 0 ]; then
    jobs=$(squeue -h -t PD,R,CG,S -o %A 2>/dev/null | sort -u | tr '\n' ' ')
    if [ -n "${jobs// }" ]; then
      log "cancelling jobs: $jobs"
      # shellcheck disable=SC2086
      scancel --full $jobs 2>/dev/null || true
      for _ in $(seq 1 60); do [ -z "$(squeue -h -t PD,R,CG,S -o %A 2>/dev/null)" ] && break; sleep 0.25; done
    fi
  fi
  log "scontrol shutdown"
  scontrol shutdown >/dev/null 2>&1 || true
fi
stop_pidfile slurmd /run/slurmd.pid
stop_pidfile slurmctld /run/slurmctld.pid

if [ -z "${KEEP_MUNGE:-}" ] && [ -e "$RUNDIR/munged.started" ]; then
  stop_pidfile munged /run/munge/munged.pid
  rm -f "$RUNDIR/munged.started"
fi
# The client programs (scontrol, and the slurm executor plugin, which runs `scontrol show config` whenever
# Snakemake starts) wait MessageTimeout for a controller that a slurm.conf names but that no longer runs: the
# config this kit wrote goes aside, so they fail at once. start.sh writes it again.
for f in slurm.conf gres.conf cgroup.conf; do
  if [ -e "/etc/slurm/$f" ] && grep -q "Managed by vocab-transfer scripts/slurm/start.sh" "/etc/slurm/$f"; then
    mkdir -p "$RUNDIR" && mv "/etc/slurm/$f" "$RUNDIR/$f.stopped"
  fi
done
if [ "$PURGE" = 1 ]; then
  log "purging state and logs"
  rm -rf /var/lib/slurm/slurmctld/* /var/lib/slurm/slurmd/* /var/log/slurm/*
fi
log "stopped"

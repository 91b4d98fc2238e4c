#!/usr/bin/env bash
# Install a single-node SLURM (Debian/Ubuntu packages slurm-wlm + munge) for the local test cluster.
# Idempotent: does nothing when slurmctld, slurmd, sbatch and munged are already there. Needs root.
# The Snakemake side (snakemake-executor-plugin-slurm) is the `slurm` extra of pyproject.toml:
#   pip install -e ".[slurm]"
# Next: scripts/slurm/start.sh
set -euo pipefail
export PATH=$PATH:/usr/sbin:/sbin
PKGS=(slurm-wlm munge)   # slurm-wlm pulls slurmctld, slurmd, slurm-client and the basic plugins

have_all() {
  local c
  for c in slurmctld slurmd sbatch squeue sinfo scontrol munged munge; do
    command -v "$c" >/dev/null 2>&1 || return 1
  done
}

if have_all; then
  echo "[slurm/install] already installed: $(slurmd -V)"
  exit 0
fi
[ "$(id -u)" = 0 ] || { echo "[slurm/install] must run as root (sudo bash $0)" >&2; exit 1; }
command -v apt-get >/dev/null || { echo "[slurm/install] needs apt-get; install ${PKGS[*]} by hand" >&2; exit 1; }

# Keep the packages' init scripts from starting daemons with a default config during the
# install (start.sh configures and starts them); only when no policy is set already.
POLICY=/usr/sbin/policy-rc.d
ADDED_POLICY=0
if [ ! -e "$POLICY" ]; then
  printf '#!/bin/sh\nexit 101\n' > "$POLICY" && chmod 755 "$POLICY" && ADDED_POLICY=1
fi
trap 'if [ "$ADDED_POLICY" = 1 ]; then rm -f "$POLICY"; fi' EXIT

export DEBIAN_FRONTEND=noninteractive
echo "[slurm/install] apt-get install ${PKGS[*]}"
apt-get install -y -q --no-install-recommends "${PKGS[@]}" >/dev/null \
  || { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends "${PKGS[@]}" >/dev/null; }
have_all || { echo "[slurm/install] SLURM commands still missing after apt-get install" >&2; exit 1; }
echo "[slurm/install] installed: $(slurmd -V)"

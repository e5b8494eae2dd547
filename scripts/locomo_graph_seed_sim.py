"""Graph neighbourhood from the hits, simulated on LoCoMo: does a turn gain from naming an
entity that one of the question's best hits names?

Neighbourhood evidence lifts the turn after a strong hit; this asks whether the graph's
edges would add to it for multi-hop questions. Each turn's entities stand in for what the
offline extractor reads: runs of capitalised words that do not open a sentence, the two
speakers, pronouns, months and weekdays left out. The `SEEDS` best hits of a question at or
above `RELEVANT` (as the engine's neighbourhood evidence takes them) each lift every other
turn of the conversation naming one of their entities, to `w × seed × specificity`
(specificity `1 / (1 + log2 mentions)`, the graph's rule) or by adding that to its score.
A turn outside the dumped top 50 enters with the lift alone. Prints recall@10 for every
(w, rule) and the figure chosen leave-one-conversation-out. Needs only numpy.

    muisti bench locomo --data ../shared/data/locomo-dev --dump /tmp/dump.jsonl
    $VENV/bin/python scripts/locomo_graph_seed_sim.py /tmp/dump.jsonl ../shared/data/locomo-dev
"""

import json
import math
import os
import re
import sys
from collections import defaultdict

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locomo_sim import report  # noqa: E402

SEEDS = 5
RELEVANT = 0.3
GRID = [(0.0, "raise")] + [(w, r) for w in (0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0) for r in ("raise", "add")]
NOT_NAMES = set(
    "I I'm I've I'll I'd Im Ive The A An And But So Oh Wow Yes No Hey Hi Thanks Thank "
    "January February March April May June July August September October November December "
    "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
)
NAME = re.compile(r"[A-Z][a-zA-Z'\-]+(?:\s+[A-Z][a-zA-Z'\-]+)*")


def entities(text, speakers):
    found = set()
    for m in NAME.finditer(text):
        before = text[: m.start()].rstrip()
        if not before or before[-1] in ".!?\"":
            continue  # opens a sentence: not known to be a name
        words = [w for w in m.group(0).split() if w not in NOT_NAMES and w not in speakers]
        if words:
            found.add(" ".join(words).lower())
    return found


def conversation_entities(path):
    d = json.load(open(path))
    c = d.get("conversation", d)
    speakers = {c.get("speaker_a", ""), c.get("speaker_b", "")}
    by_turn = {}
    for key, turns in c.items():
        if not key.startswith("session_") or not isinstance(turns, list):
            continue
        for t in turns:
            by_turn[t["dia_id"]] = entities(t.get("text", ""), speakers)
    mentions = defaultdict(set)
    for dia, es in by_turn.items():
        for e in es:
            mentions[e].add(dia)
    return by_turn, mentions


def recall10(q, conv, w, rule):
    by_turn, mentions = conv
    hits = q["hits"]
    scores = {h["dia"]: h["score"] for h in hits}
    lift = defaultdict(float)
    seeds = [h for h in hits if h["signals"]["relevance"] >= RELEVANT][:SEEDS]
    for s in seeds:
        r = s["signals"]["relevance"]
        for e in by_turn.get(s["dia"], ()):
            spec = 1.0 / (1.0 + math.log2(max(1, len(mentions[e]))))
            for dia in mentions[e]:
                if dia != s["dia"]:
                    lift[dia] = max(lift[dia], w * r * spec)
    final = dict(scores)
    for dia, l in lift.items():
        base = scores.get(dia, 0.0)
        final[dia] = max(base, l) if rule == "raise" else base + l
    order = {h["dia"]: i for i, h in enumerate(hits)}
    ranked = sorted(final, key=lambda d: (-final[d], order.get(d, 10**6), d))
    top = set(ranked[:10])
    return sum(e in top for e in q["evidence"]) / len(q["evidence"])


def main():
    questions = [json.loads(line) for line in open(sys.argv[1])]
    convs = {
        name[: -len(".json")]: conversation_entities(os.path.join(sys.argv[2], name))
        for name in os.listdir(sys.argv[2])
        if name.endswith(".json")
    }
    per = {
        g: np.array([recall10(q, convs[q["conversation"]], *g) for q in questions]) for g in GRID
    }
    report(per, GRID, questions, lambda g: f"w={g[0]} {g[1]}")


if __name__ == "__main__":
    main()

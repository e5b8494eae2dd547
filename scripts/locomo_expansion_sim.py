"""Lexical query expansion from the static model's neighbours, simulated on LoCoMo.

For each content word of a question, the built-in static model's nearest whole words
(cosine of their token vectors at least `t`, at most `k` of them, stemmed, not already in
the query) are added to the full-text query at weight `a`. The BM25 part of each of the
question's top 50 (`muisti bench locomo --dump FILE`) is recomputed as the engine computes
it (the tokenizer, BM25 with the context at half weight, Lucene's idf, the score divided by
the query's attainable score), checked against the engine's own lexical score, and the
candidates are ranked again with the expanded part in its place (turns outside the top 50
are not seen: an upper bound on what reranking gains, not on what retrieval would).
Prints recall@10 for every (a, k, t) and the figure chosen leave-one-conversation-out.

    muisti bench locomo --data ../shared/data/locomo-dev --dump /tmp/dump.jsonl
    $VENV/bin/python scripts/locomo_expansion_sim.py /tmp/dump.jsonl ../shared/data/locomo-dev

$VENV: numpy, model2vec and snowballstemmer.
"""

import json
import math
import os
import re
import sys
from collections import Counter

import numpy as np
import snowballstemmer
from model2vec import StaticModel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locomo_sim import report, turns  # noqa: E402

K1, B, CONTEXT_WEIGHT, LEXICAL_WEIGHT = 1.2, 0.75, 0.5, 0.9
GRID = [(0.0, 0, 1.0)] + [
    (a, k, t) for a in (0.1, 0.25, 0.5) for k in (1, 3) for t in (0.5, 0.6, 0.7)
]
STEM = snowballstemmer.stemmer("english")
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def stop_words():
    src = open(os.path.join(ROOT, "crates", "muisti-core", "src", "text.rs")).read()
    block = src[src.index("pub const STOP_WORDS") :]
    block = block[: block.index("];")]
    return set(re.findall(r'"([^"]+)"', block))


STOP = stop_words()


def words(text):
    return [w.lower() for w in re.split(r"[^\w]|_", text) if w]


def term(word):
    return word if word in STOP else STEM.stemWord(word)


def idf(n, df):
    return max(math.log(1.0 + (n - df + 0.5) / (df + 0.5)), 1e-6)


def bm25(terms, weights, doc, stats):
    """Sum over `terms` of weight x BM25 (content + half the context, one length)."""
    n, avgdl, df = stats
    content, context, length = doc
    norm = K1 * (1 - B + B * length / max(avgdl, 1e-6))
    total = 0.0
    for t, w in zip(terms, weights):
        f = content.get(t, 0) + CONTEXT_WEIGHT * context.get(t, 0)
        if f > 0:
            total += w * idf(n, df.get(t, 0)) * f * (K1 + 1) / (f + norm)
    return total


def main():
    dump, data_dir = sys.argv[1], sys.argv[2]
    questions = [json.loads(line) for line in open(dump)]
    texts = turns(data_dir)
    docs, stats = {}, {}
    for conv in {c for c, _ in texts}:
        df, total = Counter(), 0
        for (c, dia), (content, previous) in texts.items():
            if c != conv:
                continue
            a = Counter(term(w) for w in words(content))
            b = Counter(term(w) for w in words(previous or ""))
            length = sum(a.values()) + sum(b.values())
            docs[(c, dia)] = (a, b, length)
            df.update(set(a) | set(b))
            total += length
        n = sum(1 for c, _ in docs if c == conv)
        stats[conv] = (n, total / n, df)
    model = StaticModel.from_pretrained(os.path.join(ROOT, "crates", "muisti-embed", "model"))
    emb = model.embedding / np.linalg.norm(model.embedding, axis=1, keepdims=True)
    vocab = {t: i for i, t in enumerate(model.tokens)}
    whole = np.array(
        [t.isalpha() and len(t) >= 3 and t not in STOP for t in model.tokens], dtype=bool
    )

    nearest = {}

    def neighbours(word, k, t):
        i = vocab.get(word)
        if i is None or k == 0:
            return []
        if word not in nearest:
            sims = emb @ emb[i]
            sims[~whole] = -1
            sims[i] = -1
            best = np.argpartition(-sims, 10)[:10]
            nearest[word] = sorted(((float(sims[j]), model.tokens[j]) for j in best), reverse=True)
        return [tok for sim, tok in nearest[word] if sim >= t][:k]

    worst, checked, off = 0.0, 0, 0

    def recall10(q, a, k, t):
        nonlocal worst, checked, off
        conv = q["conversation"]
        content_words = sorted({w for w in words(q["question"]) if w not in STOP})
        terms = sorted({term(w) for w in content_words}) or sorted(
            {term(w) for w in words(q["question"])}
        )
        n, _, df = stats[conv]
        base_attainable = max(sum(idf(n, df.get(x, 0)) for x in terms), 1e-3)
        extra = []
        for w in content_words:
            for nb in neighbours(w, k, t):
                s = term(nb)
                if s not in terms and s not in extra:
                    extra.append(s)
        attainable = base_attainable + a * sum(idf(n, df.get(x, 0)) for x in extra)
        scored = []
        for i, h in enumerate(q["hits"]):
            doc = docs[(conv, h["dia"])]
            base = bm25(terms, [1.0] * len(terms), doc, stats[conv])
            old = base / base_attainable
            if "lexical_score" in h["signals"] and a == 0:
                gap = abs(old - h["signals"]["lexical_score"])
                worst, checked, off = max(worst, gap), checked + 1, off + (gap > 0.01)
            new = (base + bm25(extra, [a] * len(extra), doc, stats[conv])) / attainable
            boost = h["signals"]["boost"]
            delta = LEXICAL_WEIGHT * (min(new, 1.0) - min(old, 1.0))
            scored.append((h["score"] + boost * delta, -i, h["dia"]))
        scored.sort(reverse=True)
        top = {d for _, _, d in scored[:10]}
        return sum(e in top for e in q["evidence"]) / len(q["evidence"])

    per = {g: np.array([recall10(q, *g) for q in questions]) for g in GRID}
    print(
        f"lexical scores recomputed: {checked}, {off} more than 0.01 from the engine's "
        f"(largest {worst:.4f})"
    )
    report(per, GRID, questions, lambda g: f"a={g[0]} k={g[1]} t={g[2]}")


if __name__ == "__main__":
    main()

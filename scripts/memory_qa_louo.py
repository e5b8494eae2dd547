#!/usr/bin/env python3
"""Leave-one-user-out over recall settings on memory-qa (docs/recall.md).

Runs `muisti bench memory-qa --json` on each user's memories and questions alone, once per
setting of the grid (each setting: extra arguments to the bench), then for each user
chooses the setting with the best hit@1 + all@3 over the other users' questions and scores
it on that user. Prints each setting's plain figures and the left-out figure.

Usage: memory_qa_louo.py BIN DATA_DIR 'ARGS1' 'ARGS2' ... [--global 'ARGS']
  BIN: the muisti binary; DATA_DIR: the folder holding memory-qa-dev.jsonl;
  ARGSn: a setting's bench arguments, e.g. '--rerank 0.3 --rerank-trust 0.5';
  --global: arguments before `bench` for every run, e.g. '--reranker minilm'.
"""
import json
import shlex
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path


def main():
    args = sys.argv[1:]
    glob = []
    if "--global" in args:
        i = args.index("--global")
        glob = shlex.split(args[i + 1])
        del args[i : i + 2]
    binary, data, settings = args[0], Path(args[1]), args[2:]
    rows = [json.loads(l) for l in (data / "memory-qa-dev.jsonl").read_text().splitlines() if l.strip()]
    users = sorted({r["user"] for r in rows})
    # results[setting][user] = (n, hits@1, all@3)
    results = defaultdict(dict)
    with tempfile.TemporaryDirectory() as tmp:
        for u in users:
            d = Path(tmp) / u
            d.mkdir()
            (d / "memory-qa-dev.jsonl").write_text(
                "".join(json.dumps(r) + "\n" for r in rows if r["user"] == u)
            )
            for s in settings:
                out = subprocess.run(
                    [binary, *glob, "bench", "memory-qa", "--data", str(d), "--json", *shlex.split(s)],
                    check=True, capture_output=True, text=True,
                ).stdout
                a = json.loads(out[out.index("{"):])["figures"]["all"]
                results[s][u] = (a["n"], a["hit@1"] * a["n"], a["all@3"] * a["n"])
    total = sum(results[settings[0]][u][0] for u in users)
    for s in settings:
        h = sum(results[s][u][1] for u in users) / total
        a = sum(results[s][u][2] for u in users) / total
        print(f"plain  {s!r:45} hit@1 {h:.3f} all@3 {a:.3f}")
    held_h = held_a = 0.0
    chosen = defaultdict(int)
    for u in users:
        def score(s):
            return sum(results[s][v][1] + results[s][v][2] for v in users if v != u)
        best = max(settings, key=score)
        chosen[best] += 1
        held_h += results[best][u][1]
        held_a += results[best][u][2]
    print(f"left out (one user at a time): hit@1 {held_h / total:.3f} all@3 {held_a / total:.3f}; chosen {dict(chosen)}")


if __name__ == "__main__":
    main()

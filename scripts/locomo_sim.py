"""What the LoCoMo simulations share: the turns as `muisti bench locomo` writes them, and
the choice of a setting leave-one-conversation-out."""

import glob
import json
import os

import numpy as np


def turns(data_dir):
    """(conversation, dia id) -> (content, previous turn's content), as bench locomo writes."""
    out = {}
    for f in sorted(glob.glob(os.path.join(data_dir, "*.json"))):
        conv_id = os.path.basename(f)[: -len(".json")]
        doc = json.load(open(f))
        conv = doc.get("conversation", doc)
        sessions = sorted(
            (int(k.split("_")[1]), v)
            for k, v in conv.items()
            if k.startswith("session_") and isinstance(v, list)
        )
        for _, session in sessions:
            previous = None
            for t in session:
                content = f"{t['speaker']}: {t['text']}"
                if t.get("blip_caption"):
                    content += f" [shares {t['blip_caption']}]"
                out[(conv_id, t["dia_id"])] = (content, previous)
                previous = content
    return out


def held_out(per, grid, conv_of):
    """Leave-one-conversation-out: for each conversation, the setting best on the others
    (the first of the grid on ties) scores it. Returns per-question recall and the choices.
    `per` maps each setting to its per-question recall@10."""
    held = np.zeros(len(conv_of))
    chosen = []
    for c in sorted(set(conv_of)):
        train = conv_of != c
        best = max(grid, key=lambda g: (per[g][train].mean(), -grid.index(g)))
        chosen.append((str(c), best))
        held[~train] = per[best][~train]
    return held, chosen


def report(per, grid, questions, name):
    """Prints recall@10 of every setting (`name(g)` labels one), then the figure chosen
    leave-one-conversation-out, by category beside the plain setting (the grid's first)."""
    conv_of = np.array([q["conversation"] for q in questions])
    cat_of = np.array([q["category"] for q in questions])
    for g in grid:
        print(f"{name(g)}: recall@10 {per[g].mean():.4f}")
    held, chosen = held_out(per, grid, conv_of)
    print(f"held out: recall@10 {held.mean():.4f}; chosen {chosen}")
    for cat in sorted(set(cat_of)):
        print(
            f"  category {cat}: held out {held[cat_of == cat].mean():.3f}, "
            f"plain {per[grid[0]][cat_of == cat].mean():.3f}"
        )

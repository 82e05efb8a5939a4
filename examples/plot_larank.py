"""
One-pass k-best LaRank: F1 against the number of reprocess steps
================================================================

The shape of Mančev & Todorović's Fig. 3 ("k-Best Max-margin Approaches for
Sequence Labeling"): LaRank trained in a single pass over the data, for
k = 1, 2 and 5 best sequences per example and n_R = 0, 1, 5 and 10
kBV-Reprocess operations after each new example.  Each bar is the mean
held-out chunk F1 over several shuffling seeds (the order of the examples
and the random picks of the reprocess steps), with its standard deviation;
the right panel shows the training time of that one pass.

By default it runs in seconds on a chunking corpus the package generates;
``--conll2000`` uses CoNLL-2000 (train / test, found as the loaders find it).
"""
import argparse
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from sklstruct import LaRankTagger, feature_set  # noqa: E402
from sklstruct.datasets import load_conll2000, make_chunking_corpus  # noqa: E402
from sklstruct.metrics import chunk_f1_score  # noqa: E402

KS = (1, 2, 5)
N_R = (0, 1, 5, 10)


def data(conll2000):
    if conll2000:
        (Xtr, ytr), (Xte, yte) = load_conll2000("train"), load_conll2000("test")
    else:
        X, y = make_chunking_corpus(600, random_state=1)
        Xtr, ytr, Xte, yte = X[:300], y[:300], X[300:], y[300:]
    vec = feature_set("chunking")
    return vec.fit_transform(Xtr), ytr, vec.transform(Xte), yte


def run(Xtr, ytr, Xte, yte, seeds, C):
    """{(k, n_R): (F1 per seed, seconds per seed)}."""
    results = {}
    for k in KS:
        for n_r in N_R:
            f1s, times = [], []
            for seed in range(seeds):
                model = LaRankTagger(k=k, n_reprocess=n_r, C=C, max_iter=1, random_state=seed)
                tic = time.perf_counter()
                model.fit(Xtr, ytr)
                times.append(time.perf_counter() - tic)
                f1s.append(100 * chunk_f1_score(yte, model.predict(Xte)))
            results[k, n_r] = (np.array(f1s), np.array(times))
            print(f"k={k} n_R={n_r:2d}: F1 {np.mean(f1s):.2f} +- {np.std(f1s):.2f}, "
                  f"{np.mean(times):.2f} s")
    return results


def plot(results, out):
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    width = 0.8 / len(KS)
    x = np.arange(len(N_R))
    for i, k in enumerate(KS):
        f1 = [results[k, r][0] for r in N_R]
        sec = [results[k, r][1] for r in N_R]
        left.bar(x + i * width, [f.mean() for f in f1], width, yerr=[f.std() for f in f1],
                 capsize=3, label=f"k = {k}")
        right.bar(x + i * width, [s.mean() for s in sec], width, label=f"k = {k}")
    lows = [results[key][0].mean() - results[key][0].std() for key in results]
    highs = [results[key][0].mean() + results[key][0].std() for key in results]
    left.set_ylim(min(lows) - 0.5, max(highs) + 0.3)
    left.set(xlabel="n_R (reprocess steps per new example)", ylabel="chunk F1 (held-out)",
             title="one-pass LaRank: F1")
    right.set(xlabel="n_R (reprocess steps per new example)", ylabel="training time (s)",
              title="one-pass LaRank: time")
    for ax in (left, right):
        ax.set_xticks(x + width * (len(KS) - 1) / 2, [str(r) for r in N_R])
        ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    print(f"wrote {Path(out).name}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=(__doc__ or "").strip().splitlines()[0])
    parser.add_argument("--conll2000", action="store_true", help="use CoNLL-2000")
    parser.add_argument("--seeds", type=int, default=2, help="shuffling seeds per bar")
    parser.add_argument("--C", type=float, default=0.1)
    parser.add_argument("--out", default="larank.png")
    args = parser.parse_args(argv)
    plot(run(*data(args.conll2000), seeds=args.seeds, C=args.C), args.out)


if __name__ == "__main__":
    main()

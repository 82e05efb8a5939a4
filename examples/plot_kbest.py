"""
k-best learners: F1 and training time against k
===============================================

The shape of Mančev & Todorović's Table 1 ("k-Best Max-margin Approaches for
Sequence Labeling"): k-best passive-aggressive, k-best MIRA and k-best SDM
trained with k = 1, 2, 5, 10 best (loss-augmented) sequences per example;
held-out chunk F1 (left) and training time (right) against k.

By default it runs in seconds on a chunking corpus the package generates;
``--conll2000`` uses CoNLL-2000 (train / test, found as the loaders find it).
"""
import argparse
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from sklstruct import KBestMIRATagger, PassiveAggressiveTagger, SDMTagger, feature_set  # noqa: E402
from sklstruct.datasets import load_conll2000, make_chunking_corpus  # noqa: E402
from sklstruct.metrics import chunk_report  # noqa: E402

LEARNERS = {"PA": lambda k: PassiveAggressiveTagger(k=k, random_state=0),
            "MIRA": lambda k: KBestMIRATagger(k=k, C=0.1, random_state=0),
            "SDM": lambda k: SDMTagger(k=k, C=0.1, random_state=0)}


def data(conll2000):
    if conll2000:
        (Xtr, ytr), (Xte, yte) = load_conll2000("train"), load_conll2000("test")
    else:
        X, y = make_chunking_corpus(1000, random_state=1)
        Xtr, ytr, Xte, yte = X[:700], y[:700], X[700:], y[700:]
    vec = feature_set("chunking")
    return vec.fit_transform(Xtr), ytr, vec.transform(Xte), yte


def run(Xtr, ytr, Xte, yte, ks, epochs):
    rows = []
    for name, make in LEARNERS.items():
        for k in ks:
            model = make(k).set_params(max_iter=epochs)
            tic = time.perf_counter()
            model.fit(Xtr, ytr)
            seconds = time.perf_counter() - tic
            f1 = 100 * chunk_report(yte, model.predict(Xte)).f1
            rows.append((name, k, f1, seconds))
            print(f"{name} k={k}: F1 {f1:.2f}, {seconds:.2f} s")
    return rows


def plot(rows, out):
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for name in LEARNERS:
        mine = [r for r in rows if r[0] == name]
        left.plot([r[1] for r in mine], [r[2] for r in mine], marker="o", label=name)
        right.plot([r[1] for r in mine], [r[3] for r in mine], marker="o", label=name)
    left.set(xlabel="k", ylabel="chunk F1 (held-out)", xscale="log", title="F1 against k")
    right.set(xlabel="k", ylabel="training time (s)", xscale="log", title="time against k")
    for ax in (left, right):
        ax.set_xticks([1, 2, 5, 10], ["1", "2", "5", "10"])
        ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"wrote {Path(out).name}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--conll2000", action="store_true", help="use CoNLL-2000")
    parser.add_argument("--out", default="kbest.png")
    args = parser.parse_args(argv)
    rows = run(*data(args.conll2000), ks=[1, 2, 5, 10], epochs=10 if args.conll2000 else 3)
    plot(rows, args.out)


if __name__ == "__main__":
    main()

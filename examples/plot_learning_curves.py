"""
Learning curves: test F1 after each epoch, for every max-margin learner
=======================================================================

Each learner is trained one epoch at a time (``warm_start=True`` continues
where the previous call stopped) and scored on held-out sentences after each
epoch; the right panel shows the learned transition weights of the last
learner as a heat map (rows: the previous label, columns: the next).

By default it runs in seconds on a chunking corpus the package generates;
``--conll2000`` uses CoNLL-2000 (train / test, found as the loaders find it).
"""
import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from sklstruct import (KBestMIRATagger, LaRankTagger, M3NTagger,  # noqa: E402
                       PassiveAggressiveTagger, SDMTagger, StructuredPerceptronTagger,
                       SWVPTagger, feature_set)
from sklstruct.datasets import load_conll2000, make_chunking_corpus  # noqa: E402
from sklstruct.metrics import chunk_report  # noqa: E402

LEARNERS = {
    "perceptron": StructuredPerceptronTagger(random_state=0),
    "PA (k=1)": PassiveAggressiveTagger(random_state=0),
    "MIRA (k=5)": KBestMIRATagger(k=5, C=0.1, random_state=0),
    "SWVP": SWVPTagger(random_state=0),
    "SDM (k=2)": SDMTagger(k=2, C=0.1, random_state=0),
    "LaRank (k=2)": LaRankTagger(k=2, C=0.1, n_reprocess=2, random_state=0),
    "M3N, SGD (SMD)": M3NTagger(random_state=0),
}


def data(conll2000):
    if conll2000:
        (Xtr, ytr), (Xte, yte) = load_conll2000("train"), load_conll2000("test")
    else:
        X, y = make_chunking_corpus(1200, random_state=0)
        Xtr, ytr, Xte, yte = X[:800], y[:800], X[800:], y[800:]
    vec = feature_set("chunking")
    return vec.fit_transform(Xtr), ytr, vec.transform(Xte), yte


def curves(Xtr, ytr, Xte, yte, epochs):
    out = {}
    for name, learner in LEARNERS.items():
        learner.set_params(max_iter=1, warm_start=True)
        f1 = []
        for _ in range(epochs):
            learner.fit(Xtr, ytr)
            f1.append(100 * chunk_report(yte, learner.predict(Xte)).f1)
        out[name] = f1
        print(f"{name}: F1 {f1[-1]:.2f} after {epochs} epochs")
    return out, learner


def plot(results, last, out):
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5),
                                      gridspec_kw={"width_ratios": [1.2, 1]})
    for name, f1 in results.items():
        left.plot(np.arange(1, len(f1) + 1), f1, marker=".", label=name)
    left.set(xlabel="epoch", ylabel="chunk F1 (held-out)", title="F1 after each epoch")
    left.legend(fontsize=8)
    T = last.transition_coef_
    bound = np.abs(T).max() or 1.0
    image = right.imshow(T, cmap="RdBu_r", vmin=-bound, vmax=bound)
    labels = [str(c) for c in last.classes_]
    right.set_xticks(range(len(labels)), labels, rotation=90, fontsize=6)
    right.set_yticks(range(len(labels)), labels, fontsize=6)
    right.set(xlabel="next label", ylabel="previous label",
              title=f"transition weights ({type(last).__name__})")
    fig.colorbar(image, ax=right, shrink=0.8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"wrote {Path(out).name}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--conll2000", action="store_true", help="use CoNLL-2000")
    parser.add_argument("--epochs", type=int, default=None)
    parser.add_argument("--out", default="learning_curves.png")
    args = parser.parse_args(argv)
    Xtr, ytr, Xte, yte = data(args.conll2000)
    results, last = curves(Xtr, ytr, Xte, yte, args.epochs or (10 if args.conll2000 else 5))
    plot(results, last, args.out)


if __name__ == "__main__":
    main()

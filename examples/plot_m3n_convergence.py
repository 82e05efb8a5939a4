"""
M3N: SGD with stochastic meta-descent against SMO, and kernels by training size
===============================================================================

Two pictures in the shape of Yu & Lam's Figures 2 and 3 ("Accelerated Training
of Maximum Margin Markov Models for Sequence Labeling", COLING 2010):

* left and middle: the objective J of eq. 4 against training time, for
  ``M3NTagger`` trained by SGD (SMD step sizes) and by the paper's
  baseline, structured SMO on the factored dual, with the linear kernel and
  with the quadratic kernel (NP chunking on a subset);
* right: NP-chunk F1 and training time against the number of training
  sentences, for the linear and quadratic kernels.

By default it runs in seconds on a chunking corpus the package generates;
``--conll2000`` uses CoNLL-2000 (found as the loaders find it), and
``--from-json benchmarks/results/m3n.json`` draws the numbers of the
benchmark (``benchmarks/bench_m3n.py``) instead of running anything.
"""
import argparse
import json
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from sklstruct import M3NTagger, SequenceVectorizer  # noqa: E402
from sklstruct.datasets import load_conll2000, make_chunking_corpus  # noqa: E402
from sklstruct.metrics import chunk_report  # noqa: E402


def np_only(Y):
    return [np.array([lab if lab.endswith("-NP") else "O" for lab in y]) for y in Y]


def data(conll2000):
    if conll2000:
        (Xtr, ytr), (Xte, yte) = load_conll2000("train"), load_conll2000("test")
    else:
        X, y = make_chunking_corpus(1500, random_state=0)
        Xtr, ytr, Xte, yte = X[:1000], y[:1000], X[1000:], y[1000:]
    vec = SequenceVectorizer(["word", "pos", "shape", "is_title", "is_upper", "has_digit",
                              "has_hyphen"], window=3)
    return vec.fit_transform(Xtr), ytr, vec.transform(Xte), yte


def run_curves(Xtr, ytr, passes, kernel=None):
    curves = {}
    for name, params in [("M3N SGD (SMD)", {}), ("M3N structured SMO", {"solver": "smo"})]:
        model = M3NTagger(max_iter=passes, random_state=0, **params, **(kernel or {}))
        model.fit(Xtr, ytr)
        curves[name] = {"times": np.cumsum([h["seconds"] for h in model.history_]).tolist(),
                        "objective": model.objective_curve_.tolist()}
    return curves


def run_sizes(Xtr, ytr, Xte, yte, sizes, passes):
    rows = []
    ytr, yte = np_only(ytr), np_only(yte)
    for n in sizes:
        for name, params in [("linear kernel", {}),
                             ("quadratic kernel", {"kernel": "poly", "degree": 2})]:
            model = M3NTagger(max_iter=passes, random_state=0, **params)
            tic = time.perf_counter()
            model.fit(Xtr[:n], ytr[:n])
            rows.append({"name": name, "n": n, "train_s": time.perf_counter() - tic,
                         "f1": chunk_report(yte, model.predict(Xte)).f1})
    return rows


def plot(curves, quadratic, rows, out):
    fig, (left, middle, right) = plt.subplots(1, 3, figsize=(16, 4))
    for axis, these, title in [(left, curves, "linear kernel"),
                               (middle, quadratic, "quadratic kernel, NP task")]:
        for name, c in these.items():
            axis.plot(c["times"], c["objective"], marker=".", label=name)
        axis.set(xlabel="training time (s)", ylabel="objective J (eq. 4)", yscale="log",
                 title=f"SGD (SMD) against structured SMO, {title}")
        axis.legend()
    twin = right.twinx()
    for name in dict.fromkeys(r["name"] for r in rows):
        if "Nystroem" in name:
            continue
        mine = [r for r in rows if r["name"] == name]
        right.plot([r["n"] for r in mine], [100 * r["f1"] for r in mine], marker="o",
                   label=f"{name}: F1")
        twin.plot([r["n"] for r in mine], [r["train_s"] for r in mine], linestyle="--",
                  marker="x", label=f"{name}: time")
    right.set(xlabel="training sentences", ylabel="NP F1", xscale="log",
              title="kernels by training-set size")
    twin.set_ylabel("training time (s)")
    lines = right.get_legend_handles_labels()
    more = twin.get_legend_handles_labels()
    right.legend(lines[0] + more[0], lines[1] + more[1], fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"wrote {Path(out).name}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--conll2000", action="store_true", help="use CoNLL-2000")
    parser.add_argument("--from-json", help="plot a bench_m3n.py --json file")
    parser.add_argument("--out", default="m3n_convergence.png")
    args = parser.parse_args(argv)
    if args.from_json:
        results = json.load(open(args.from_json))
        curves, rows = results["linear"]["all chunks"], results["kernels"]
        quadratic = {name.replace(", quadratic", ""): c
                     for name, c in results["solvers"]["quadratic"].items()}
    else:
        Xtr, ytr, Xte, yte = data(args.conll2000)
        curves = run_curves(Xtr, ytr, 30 if args.conll2000 else 10)
        n = 500 if args.conll2000 else 200
        quadratic = run_curves(Xtr[:n], np_only(ytr[:n]), 20 if args.conll2000 else 8,
                               {"kernel": "poly", "degree": 2})
        sizes = [250, 500, 1000, 2000] if args.conll2000 else [100, 300, 1000]
        rows = run_sizes(Xtr, ytr, Xte, yte, sizes, 10 if args.conll2000 else 5)
    plot(curves, quadratic, rows, args.out)


if __name__ == "__main__":
    main()

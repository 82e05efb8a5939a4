"""
Confidence calibration: reliability diagrams and expected calibration error
===========================================================================

How far can a tagger's confidence be trusted?  Each tagger is trained on most
of the training sentences; its ``predict_marginals`` then gives every token
the probability of its predicted label, and ``predict_confidence`` every
sentence the probability of its whole predicted sequence.  The
tagger's scores ``s(y)`` are read as ``p(y | x) ~ exp(s(y) / T)``, by
forward-backward over all sequences: raw (``T = 1``: the CRF's own
probabilities, the softmax of the margins for the max-margin learners),
then with the temperature that ``calibrate`` fits on the held-out rest of
the training sentences, and, for comparison, with the temperature fitted
over the 20 best sequences only (``method="kbest"``).

The plot shows the reliability diagram of the token confidences (accuracy
against confidence in 15 bins: a calibrated model lies on the diagonal) and
the expected calibration error (ECE) of each setting.

By default it runs in seconds on a chunking corpus the package generates;
``--conll2000`` uses CoNLL-2000 (the last 10% of the training file for
calibration, the test file for evaluation).
"""
import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.calibration import calibration_curve  # noqa: E402

from sklstruct import (CRFTagger, PassiveAggressiveTagger, SDMTagger,  # noqa: E402
                       StructuredPerceptronTagger, feature_set)
from sklstruct.datasets import load_conll2000, make_chunking_corpus  # noqa: E402
from sklstruct.metrics import expected_calibration_error  # noqa: E402

LEARNERS = {"perceptron": lambda: StructuredPerceptronTagger(max_iter=10, random_state=0),
            "PA": lambda: PassiveAggressiveTagger(max_iter=10, random_state=0),
            "SDM (k=2)": lambda: SDMTagger(k=2, C=0.1, max_iter=10, random_state=0),
            "CRF": lambda: CRFTagger(C=1.0, max_iter=200)}
N_BINS = 15


def data(conll2000):
    """(train, calibration, test) pairs of feature matrices and labels."""
    if conll2000:
        (X, y), (Xte, yte) = load_conll2000("train"), load_conll2000("test")
    else:
        X, y = make_chunking_corpus(1000, random_state=1)
        X, y, Xte, yte = X[:800], y[:800], X[800:], y[800:]
    cut = int(0.9 * len(X)) if conll2000 else 600
    vec = feature_set("chunking")
    Xtr = vec.fit_transform(X[:cut])
    return ((Xtr, y[:cut]), (vec.transform(X[cut:]), y[cut:]),
            (vec.transform(Xte), yte))


def evaluate(model, X, y):
    """(token correct, token confidence, sentence correct, sentence confidence)."""
    pred = model.predict(X)
    marginals = model.predict_marginals(X)
    column = {label: j for j, label in enumerate(model.classes_)}
    conf = np.concatenate([m[np.arange(len(p)), [column[label] for label in p]]
                           for m, p in zip(marginals, pred)])
    correct = np.concatenate([np.asarray(p) == np.asarray(g) for p, g in zip(pred, y)])
    sent_correct = np.array([np.array_equal(p, g) for p, g in zip(pred, y)])
    return correct, conf, sent_correct, model.predict_confidence(X)


def run(train, calib, test):
    rows = []
    for name, make in LEARNERS.items():
        model = make().fit(*train)
        settings = [("raw (T=1)", None), ("calibrated", "forward_backward"),
                    ("calibrated, k-best", "kbest")]
        for label, method in settings:
            if method is not None:
                model.calibrate(*calib, method=method)
            correct, conf, s_correct, s_conf = evaluate(model, *test)
            T = model.calibration_["temperature"] if method else 1.0
            row = {"learner": name, "setting": label, "T": T, "correct": correct,
                   "confidence": conf,
                   "token_ece": expected_calibration_error(correct, conf, n_bins=N_BINS),
                   "sentence_ece": expected_calibration_error(s_correct, s_conf,
                                                              n_bins=N_BINS)}
            rows.append(row)
            print(f"{name:12s} {label:30s} T={T:8.3g}  token ECE {100 * row['token_ece']:5.2f}%"
                  f"  sentence ECE {100 * row['sentence_ece']:5.2f}%"
                  f"  (token accuracy {100 * correct.mean():.2f}%)")
    return rows


def plot(rows, out):
    names = list(LEARNERS)
    fig, axes = plt.subplots(1, len(names), figsize=(4 * len(names), 4), sharey=True)
    for ax, name in zip(axes, names):
        ax.plot([0, 1], [0, 1], color="grey", linestyle=":", label="perfect")
        for row in (r for r in rows if r["learner"] == name):
            acc, conf = calibration_curve(row["correct"], row["confidence"], n_bins=N_BINS)
            ax.plot(conf, acc, marker="o", markersize=3,
                    label=f"{row['setting']} (ECE {100 * row['token_ece']:.1f}%)")
        ax.set(title=name, xlabel="confidence of the predicted label",
               xlim=(0, 1), ylim=(0, 1))
        ax.legend(fontsize=7, loc="lower right")
    axes[0].set_ylabel("token accuracy")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    print(f"wrote {Path(out).name}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conll2000", action="store_true",
                        help="train, calibrate and test on CoNLL-2000 (minutes)")
    parser.add_argument("--out", default="calibration.png")
    args = parser.parse_args(argv)
    plot(run(*data(args.conll2000)), args.out)


if __name__ == "__main__":
    main()

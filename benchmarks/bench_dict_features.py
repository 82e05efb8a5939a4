"""sklearn-crfsuite's tutorial features three ways on CoNLL-2002 Spanish NER.

The features of sklearn-crfsuite's tutorial (``word2features``: the word in
lower case, its last 3 and 2 letters, upper-case, title-case and digit
flags, the POS tag and its first 2 letters, the same (but the suffixes) for
the previous and the next word, BOS/EOS), built as dicts:

* into python-crfsuite's L-BFGS CRF directly (c1 = 0, c2 = 1 / (2 C));
* through :class:`sklstruct.DictSequenceVectorizer` into ``CRFTagger(C)``;
* as :class:`sklstruct.SequenceVectorizer` templates with
  ``boundary="skip"`` and the ``is_first``/``is_last`` flags (the same
  features: BOS/EOS are those flags, and a neighbour beyond the sentence
  gives no feature) into ``CRFTagger(C)``.

All at most 100 L-BFGS iterations, observed states, one core, trained on
esp.train and scored on esp.testb.  The target of issue 16: the dict route
within 0.1 F1 of the template route.

Usage::

    python benchmarks/bench_dict_features.py [--data DIR] [--C 5] [--max-iter 100] [--out FILE]
"""
import argparse
import sys
import time
from pathlib import Path

from common import DEFAULT_DATA, in_child, report, run_crfsuite

from sklstruct import CRFTagger, DictSequenceVectorizer, SequenceVectorizer
from sklstruct.datasets import read_conll
from sklstruct.metrics import chunk_report

TEMPLATES = ["bias", "lower", "suffix3", "suffix2", "is_upper", "is_title", "is_digit", "pos",
             "prefix2(pos)", "is_first", "is_last"] + [f"{t}[{k}]" for k in (-1, 1)
                                for t in ("lower", "is_title", "is_upper", "pos",
                                          "prefix2(pos)")]


def word2features(sent, i):
    """sklearn-crfsuite's tutorial features of token i."""
    word, postag = sent[i]
    features = {"bias": 1.0, "word.lower()": word.lower(), "word[-3:]": word[-3:],
                "word[-2:]": word[-2:], "word.isupper()": word.isupper(),
                "word.istitle()": word.istitle(), "word.isdigit()": word.isdigit(),
                "postag": postag, "postag[:2]": postag[:2]}
    for side, j, edge in (("-1", i - 1, "BOS"), ("+1", i + 1, "EOS")):
        if 0 <= j < len(sent):
            w, p = sent[j]
            features.update({f"{side}:word.lower()": w.lower(),
                             f"{side}:word.istitle()": w.istitle(),
                             f"{side}:word.isupper()": w.isupper(),
                             f"{side}:postag": p, f"{side}:postag[:2]": p[:2]})
        else:
            features[edge] = True
    return features


def run_ours(X_train, y_train, X_test, y_test, model, queue):
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from threadpoolctl import threadpool_limits

    tic = time.perf_counter()
    with warnings.catch_warnings(), threadpool_limits(1):
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X_train, y_train)
    fit_s = time.perf_counter() - tic
    queue.put(dict(f1=chunk_report(y_test, model.predict(X_test)).f1, fit_s=fit_s,
                   iterations=model[-1].n_iter_, n_features=len(model[0].vocabulary_)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=DEFAULT_DATA)
    parser.add_argument("--C", type=float, default=5.0)
    parser.add_argument("--max-iter", type=int, default=100)
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    from sklearn.pipeline import make_pipeline

    esp = Path(args.data) / "conll2002"
    X, y = {}, {}
    for part in ("train", "testb"):
        X[part], y[part] = read_conll(esp / f"esp.{part}")
    dicts = {part: [[word2features(s, i) for i in range(len(s))] for s in X[part]]
             for part in X}
    rows = []
    crfsuite = in_child(run_crfsuite, {"attrs": dicts, "y": y}, "crfsuite", "lbfgs", {
        "c1": 0.0, "c2": 1.0 / (2 * args.C), "max_iterations": args.max_iter,
        "feature.possible_transitions": True}, "testb")
    rows.append(("python-crfsuite lbfgs, feature dicts", crfsuite["f1"], crfsuite["fit_s"],
                 crfsuite["iterations"], "-"))
    for name, vec, data in (
            ("CRFTagger via DictSequenceVectorizer, feature dicts", DictSequenceVectorizer(),
             dicts),
            ("CRFTagger via SequenceVectorizer, templates",
             SequenceVectorizer(TEMPLATES, boundary="skip"), X)):
        model = make_pipeline(vec, CRFTagger(C=args.C, max_iter=args.max_iter, n_jobs=1))
        r = in_child(run_ours, data["train"], y["train"], data["testb"], y["testb"], model)
        rows.append((name, r["f1"], r["fit_s"], r["iterations"], r["n_features"]))
        print(rows[-1], flush=True)
    lines = [f"C = {args.C} (CRFsuite c2 = {1 / (2 * args.C):g}, c1 = 0), at most "
             f"{args.max_iter} L-BFGS iterations, one core; esp.train -> esp.testb.", "",
             "| route | F1 | training s | iterations | attributes |", "|---|---|---|---|---|"]
    lines += [f"| {n} | {100 * f:.2f} | {s:.1f} | {i} | {a} |" for n, f, s, i, a in rows]
    diff = 100 * (rows[1][1] - rows[2][1])
    lines += ["", f"Dict route minus template route: {diff:+.2f} F1."]
    report("sklearn-crfsuite's tutorial features", "bench_dict_features.py", argv,
           "\n".join(lines) + "\n", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

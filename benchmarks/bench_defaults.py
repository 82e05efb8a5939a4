"""What a user gets with the defaults: SWVMTagger() against KBestMIRATagger().

Issue 31, item 2.  ``SWVMTagger``'s defaults are the configuration that the
5-fold protocol of ``bench_swvm.py`` chose on the development parts for both
corpora (aggressive, K = 5, C = 0.1; gamma "optimization" on CoNLL-2000,
"softmin" on Spanish, within 0.1 dev F1 of each other).  Here both learners
run with nothing but ``random_state=0`` on the standard splits: CoNLL-2000
(train.txt -> test.txt, ``feature_set("chunking")``) and CoNLL-2002 Spanish
(esp.train -> esp.testb, ``feature_set("ner")``), 10 epochs (the default).
Prints chunk F1 and fit seconds per learner.

``--part review`` (the rest of item 2): a default changed in the review of
every estimator's defaults against the benchmarks, measured old against new
on the same splits and features: ``SWVPTagger(k=1)`` (the old default)
against ``SWVPTagger()`` (k = 3, the configuration ``bench_swvm.py`` chose on
CoNLL-2000's dev parts, 1.2 dev F1 above k = 1 on Spanish).

Usage::

    python benchmarks/bench_defaults.py [--data DIR] [--out FILE] [--part swvm|review]
"""
import argparse
from pathlib import Path

import numpy as np
from common import DEFAULT_DATA, quiet_fit, report

from sklstruct import KBestMIRATagger, SWVMTagger, SWVPTagger
from sklstruct.datasets import read_conll
from sklstruct.features import feature_set
from sklstruct.metrics import chunk_f1_score

CORPORA = [("CoNLL-2000", "conll2000/train.txt", "conll2000/test.txt", "chunking"),
           ("CoNLL-2002 Spanish testb", "conll2002/esp.train", "conll2002/esp.testb", "ner")]



def load(data, train, test, preset):
    """(X, labels, X_test, labels_test) of one corpus, the features fitted on train."""
    tokens, labels = read_conll(Path(data) / train)
    tokens_test, labels_test = read_conll(Path(data) / test)
    vectorizer = feature_set(preset).fit(tokens, labels)
    return vectorizer.transform(tokens), labels, vectorizer.transform(tokens_test), labels_test


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=DEFAULT_DATA)
    parser.add_argument("--out")
    parser.add_argument("--part", choices=("swvm", "review"), default="swvm")
    parser.add_argument("--seeds", type=int, default=1,
                        help="--part review: random_state 0 .. seeds - 1, F1 averaged")
    args = parser.parse_args(argv)
    if args.part == "review":
        return review(args, argv)
    rows = ["| corpus | features | learner | chunk F1 | fit s |", "|---|---|---|---|---|"]
    verdicts = []
    for name, train, test, preset in CORPORA:
        X, labels, X_test, labels_test = load(args.data, train, test, preset)
        f1 = {}
        for learner in (SWVMTagger(random_state=0), KBestMIRATagger(random_state=0)):
            seconds = quiet_fit(learner, X, labels)
            f1[type(learner).__name__] = score = 100 * chunk_f1_score(
                labels_test, learner.predict(X_test))
            rows.append(f"| {name} | feature_set(\"{preset}\") | {type(learner).__name__}() | "
                        f"{score:.2f} | {seconds:.1f} |")
            print(rows[-1], flush=True)
        diff = f1["SWVMTagger"] - f1["KBestMIRATagger"]
        verdicts.append(f"* {name}: SWVMTagger() - KBestMIRATagger() = {diff:+.2f} "
                        f"(target >= 0: {'met' if diff >= 0 else 'not met'})")
    body = ("Both learners with their defaults and random_state=0.\n\n" + "\n".join(rows)
            + "\n\n" + "\n".join(verdicts) + "\n")
    report("The defaults: SWVMTagger() against KBestMIRATagger()", "bench_defaults.py", argv,
           body, args.out)


# (label, factory) pairs: the old default first, then the new one.
REVIEW = [("SWVPTagger(k=1)", lambda seed: SWVPTagger(k=1, random_state=seed)),
          ("SWVPTagger()", lambda seed: SWVPTagger(random_state=seed))]


def review(args, argv):
    rows = ["| corpus | features | learner | chunk F1 (mean) | per seed | fit s (mean) |",
            "|---|---|---|---|---|---|"]
    verdicts = []
    for name, train, test, preset in CORPORA:
        X, labels, X_test, labels_test = load(args.data, train, test, preset)
        f1 = []
        for label, factory in REVIEW:
            scores, seconds = [], []
            for seed in range(args.seeds):
                learner = factory(seed)
                seconds.append(quiet_fit(learner, X, labels))
                scores.append(100 * chunk_f1_score(labels_test, learner.predict(X_test)))
            f1.append(float(np.mean(scores)))
            per_seed = ", ".join(f"{v:.2f}" for v in scores)
            rows.append(f"| {name} | feature_set(\"{preset}\") | {label} | {f1[-1]:.2f} | "
                        f"{per_seed} | {np.mean(seconds):.1f} |")
            print(rows[-1], flush=True)
        verdicts.append(f"* {name}: {REVIEW[1][0]} - {REVIEW[0][0]} = {f1[1] - f1[0]:+.2f}")
    body = (f"Old default against new, random_state 0 .. {args.seeds - 1}, everything else "
            "default.\n\n"
            + "\n".join(rows) + "\n\n" + "\n".join(verdicts) + "\n")
    report("The defaults review: old default against new", "bench_defaults.py", argv, body,
           args.out)


if __name__ == "__main__":
    main()

"""Before/after check for changes that must not change behaviour (restructurings).

Fits every registered estimator (and the solver and order variants) on small
slices of CoNLL-2000 chunking, CoNLL-2002 Spanish NER and the Penn Treebank
sample, with fixed seeds, and writes one SHA-256 per learned array, per set of
predictions and per score.  Only the public API is used, so the same script runs
under the code before and after a change; two outputs are compared with
``compare``.

Usage::

    python benchmarks/check_identical.py run --out /tmp/before.json   # at the old commit
    python benchmarks/check_identical.py run --out /tmp/after.json    # at the new one
    python benchmarks/check_identical.py compare /tmp/before.json /tmp/after.json
"""
import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

DATA = Path(os.environ.get("SKLSTRUCT_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))

#: learned arrays compared, where an estimator has them
ATTRIBUTES = ("classes_", "coef_", "transition_coef_", "trigram_coef_", "start_coef_", "end_coef_",
              "intercept_", "dual_coef_", "alphas_", "support_vectors_")


def digest(value):
    """SHA-256 of an array, a list of arrays or a nested structure of numbers/strings."""
    h = hashlib.sha256()
    if isinstance(value, np.ndarray):
        value = np.ascontiguousarray(value)
        h.update(str((value.dtype.str, value.shape)).encode())
        h.update(value.tobytes() if value.dtype != object else repr(value.tolist()).encode())
    elif isinstance(value, (list, tuple)):
        for item in value:
            h.update(digest(item).encode())
    else:
        h.update(repr(value).encode())
    return h.hexdigest()[:16]


def fingerprint(est, X_test, y_test, marginals=False):
    out = {}
    for name in ATTRIBUTES:
        value = getattr(est, name, None)
        if isinstance(value, np.ndarray):
            out[name] = digest(value)
    pred = est.predict(X_test)
    out["predict"] = digest([np.asarray(p) for p in pred])
    out["score"] = repr(float(est.score(X_test, y_test)))
    if marginals:
        out["predict_marginals"] = digest([np.asarray(m) for m in est.predict_marginals(X_test)])
    return out


def run(args):
    import sklstruct as ss
    from sklstruct.datasets import read_conll

    results = {"sklstruct": ss.__file__}
    corpora = {"conll2000": (DATA / "conll2000/train.txt", DATA / "conll2000/test.txt"),
               "esp": (DATA / "conll2002/esp.train", DATA / "conll2002/esp.testb")}
    for corpus, (train, test) in corpora.items():
        Xtr, ytr = read_conll(train)
        Xte, yte = read_conll(test)
        Xtr, ytr, Xte, yte = Xtr[:args.n_train], ytr[:args.n_train], Xte[:args.n_test], yte[:args.n_test]
        vec = ss.feature_set("chunking" if corpus == "conll2000" else "ner")
        Ftr = vec.fit_transform(Xtr)
        Fte = vec.transform(Xte)
        results[f"{corpus}/features"] = {"train": digest([Ftr.matrix.data, Ftr.matrix.indices, Ftr.matrix.indptr, np.asarray(Ftr.offsets)]),
                                         "test": digest([Fte.matrix.data, Fte.matrix.indices, Fte.matrix.indptr, np.asarray(Fte.offsets)])}
        for name, est, marks in _configs():
            if corpus == "esp" and name not in ("perceptron", "pa", "crf_log", "m3n_sgd", "sdm"):
                continue
            n = 60 if marks.get("small") else len(ytr)
            tic = time.perf_counter()
            est.fit(Ftr[:n], ytr[:n])
            results[f"{corpus}/{name}"] = fingerprint(est, Fte, yte,
                                                      marginals=marks.get("marginals", False))
            print(f"{corpus}/{name}: {time.perf_counter() - tic:.1f}s", file=sys.stderr)
    results.update(parser_results())
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1, sort_keys=True)


def _configs():
    """(name, unfitted estimator, marks) of every configuration; marks:
    ``small`` (kernel M3N: fit on fewer sentences), ``marginals`` (compare
    ``predict_marginals`` too)."""
    import sklstruct as ss

    m3n = getattr(ss, "M3NTagger", None) or ss.M3NSGDTagger
    perceptron = ss.StructuredPerceptronTagger
    small = dict(max_iter=2, random_state=0)
    table = [
        ("perceptron", perceptron(max_iter=3, random_state=0), {}),
        ("perceptron_k3_order2", perceptron(max_iter=2, k=3, order=2, random_state=0), {}),
        ("pa", ss.PassiveAggressiveTagger(max_iter=3, random_state=0), {}),
        ("mira_k3", ss.KBestMIRATagger(max_iter=2, k=3, random_state=0), {}),
        ("sdm", ss.SDMTagger(max_iter=2, random_state=0), {}),
        ("larank", ss.LaRankTagger(max_iter=2, random_state=0), {}),
        ("swvp", ss.SWVPTagger(max_iter=2, random_state=0), {}),
        ("swvm", ss.SWVMTagger(max_iter=2, random_state=0), {}),
        ("m3n_sgd", m3n(max_iter=3, random_state=0), {}),
        ("m3n_sgd_avg", m3n(max_iter=3, average=True, random_state=0), {}),
        ("m3n_smo", m3n(solver="smo", **small), {}),
        ("m3n_working_set", m3n(solver="working_set", **small), {}),
        ("m3n_poly_sgd", m3n(kernel="poly", degree=2, **small), {"small": True}),
        ("m3n_poly_smo", m3n(kernel="poly", degree=2, solver="smo", **small), {"small": True}),
        ("m3n_tanh_sgd", m3n(kernel="tanh", gamma=0.1, **small), {"small": True}),
        ("crf_order2", ss.CRFTagger(order=2, max_iter=10), {}),
        ("boosting", ss.SequenceBoostingTagger(n_rounds=20), {}),
        ("mixing", ss.ParameterMixingTagger(perceptron(random_state=0), n_shards=2, max_iter=2), {}),
        ("constrained", ss.ConstrainedTagger(perceptron(max_iter=2, random_state=0)), {}),
    ]
    for loss in ("log", "exp", "pointwise_log", "pointwise_exp"):
        table.append((f"crf_{loss}", ss.CRFTagger(loss=loss, max_iter=15), {"marginals": True}))
    return table


def parser_results():
    import sklstruct as ss
    from sklstruct.datasets import load_treebank

    trees = [t for t in load_treebank(data_home=str(DATA)) if len(t.leaves()) <= 10]
    train, test = trees[:150], trees[150:220]
    out = {}
    for tagged in (False, True):
        X = [t.pos() if tagged else t.leaves() for t in train]
        X_test = [t.pos() if tagged else t.leaves() for t in test]
        configs = [("f1_1slack", ss.F1MaxMarginParser(C=10, max_iter=5)),
                   ("f1_nslack", ss.F1MaxMarginParser(C=10, max_iter=5, solver="n-slack")),
                   ("fp", ss.F1MaxMarginParser(C=10, max_iter=5, loss="fp")),
                   ("zero_one_nslack", ss.F1MaxMarginParser(C=1, max_iter=5, loss="zero_one", solver="n-slack")),
                   ("pcfg", ss.PCFGParser())]
        for name, est in configs:
            tic = time.perf_counter()
            est.fit(X, train)
            res = {"predict": digest([str(t) for t in est.predict(X_test)]),
                   "score": repr(float(est.score(X_test, test)))}
            for attr in ("coef_",):
                if isinstance(getattr(est, attr, None), np.ndarray):
                    res[attr] = digest(getattr(est, attr))
            out[f"treebank/{'tagged' if tagged else 'words'}/{name}"] = res
            print(f"treebank/{name}: {time.perf_counter() - tic:.1f}s", file=sys.stderr)
    return out


def compare(args):
    with open(args.before) as f:
        before = json.load(f)
    with open(args.after) as f:
        after = json.load(f)
    bad = 0
    for key in sorted(set(before) | set(after)):
        if key == "sklstruct":
            continue
        if before.get(key) != after.get(key):
            bad += 1
            print(f"DIFFERENT {key}:\n  before {before.get(key)}\n  after  {after.get(key)}")
    n = len(set(before) - {"sklstruct"})
    print(f"{n - bad} of {n} configurations identical")
    return 1 if bad else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="mode", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", required=True)
    r.add_argument("--n-train", type=int, default=500)
    r.add_argument("--n-test", type=int, default=300)
    c = sub.add_parser("compare")
    c.add_argument("before")
    c.add_argument("after")
    args = parser.parse_args()
    if args.mode == "run":
        run(args)
    else:
        sys.exit(compare(args))


if __name__ == "__main__":
    main()

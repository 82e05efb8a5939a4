"""sklearn-crfsuite's CoNLL-2002 tutorial: ``sklstruct.compat.CRF`` against
CRFsuite, and a CRFsuite model read by ``sklstruct.compat.from_crfsuite``.

The tutorial's features (``word2features``, see bench_dict_features.py) and
settings: ``CRF(algorithm="lbfgs", c1=0.1, c2=0.1, max_iterations=100,
all_possible_transitions=True)``, trained on esp.train, scored on
esp.testb.  CRFsuite runs as sklearn-crfsuite runs it (python-crfsuite's
``Trainer``: the sentences appended, then ``train``); each side in its own
forked child, one core, in the same run.  Training time is ``fit``'s wall
time, feature loading included on both sides.  F1: the tutorial's metric
(token-level F1 weighted over the labels but O, sklearn-crfsuite's
``flat_f1_score``) and the entity-level (CoNLL) F1.  Then the CRFsuite model
is read by ``from_crfsuite`` and its labels compared with CRFsuite's on every
test sentence.

Usage::

    python benchmarks/bench_compat.py [--data DIR] [--max-iter 100] [--out FILE]
"""
import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench_dict_features import word2features
from common import DEFAULT_DATA, in_child, report

from sklstruct.datasets import read_conll
from sklstruct.metrics import chunk_report

SETTINGS = {"c1": 0.1, "c2": 0.1, "all_possible_transitions": True}


def flat_f1(y_true, y_pred, labels):
    from sklearn.metrics import f1_score
    return f1_score(np.concatenate(y_true), np.concatenate(y_pred), average="weighted",
                    labels=labels, zero_division=0)


def scores(y_true, y_pred):
    labels = sorted({t for s in y_true for t in s} - {"O"})
    y_true = [list(s) for s in y_true]
    y_pred = [list(s) for s in y_pred]
    return {"flat_f1": flat_f1(y_true, y_pred, labels),
            "entity_f1": chunk_report(y_true, y_pred).f1}


def run_crfsuite(X, y, max_iter, path, queue):
    import pycrfsuite
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        tic = time.perf_counter()
        cpu = time.process_time()
        trainer = pycrfsuite.Trainer(algorithm="lbfgs", verbose=False)
        for xseq, yseq in zip(X["train"], y["train"]):
            trainer.append(xseq, yseq)
        trainer.set_params({"c1": SETTINGS["c1"], "c2": SETTINGS["c2"],
                            "max_iterations": max_iter, "feature.possible_transitions": True})
        trainer.train(path)
        fit_s, fit_cpu = time.perf_counter() - tic, time.process_time() - cpu
        tagger = pycrfsuite.Tagger()
        tagger.open(path)
        tic = time.perf_counter()
        pred = [tagger.tag(xseq) for xseq in X["testb"]]
        pred_s = time.perf_counter() - tic
    queue.put(dict(fit_s=fit_s, fit_cpu=fit_cpu, pred_s=pred_s, pred=pred,
                   iterations=len(trainer.logparser.iterations), **scores(y["testb"], pred)))


def run_ours(X, y, max_iter, queue):
    from threadpoolctl import threadpool_limits

    from sklstruct.compat import CRF

    with threadpool_limits(1):
        crf = CRF(algorithm="lbfgs", max_iterations=max_iter, **SETTINGS)
        tic = time.perf_counter()
        cpu = time.process_time()
        crf.fit(X["train"], y["train"])
        fit_s, fit_cpu = time.perf_counter() - tic, time.process_time() - cpu
        tic = time.perf_counter()
        pred = crf.predict(X["testb"])
        pred_s = time.perf_counter() - tic
    pred = [list(p) for p in pred]
    queue.put(dict(fit_s=fit_s, fit_cpu=fit_cpu, pred_s=pred_s, pred=pred,
                   iterations=len(crf.training_log_.iterations),
                   n_state=len(crf.state_features_), **scores(y["testb"], pred)))


def run_from_crfsuite(X, path, queue):
    from sklstruct.compat import from_crfsuite

    tic = time.perf_counter()
    crf = from_crfsuite(path)
    load_s = time.perf_counter() - tic
    queue.put(dict(load_s=load_s, pred=[list(p) for p in crf.predict(X["testb"])]))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=DEFAULT_DATA)
    parser.add_argument("--max-iter", type=int, default=100)
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    esp = Path(args.data) / "conll2002"
    X, y = {}, {}
    for part in ("train", "testb"):
        sents, labels = read_conll(esp / f"esp.{part}")
        X[part] = [[word2features(s, i) for i in range(len(s))] for s in sents]
        y[part] = [list(map(str, t)) for t in labels]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "tutorial.crfsuite")
        theirs = in_child(run_crfsuite, X, y, args.max_iter, path)
        ours = in_child(run_ours, X, y, args.max_iter)
        loaded = in_child(run_from_crfsuite, X, path)
    same = sum(a == b for a, b in zip(loaded["pred"], theirs["pred"]))
    agree = np.mean(np.concatenate(ours["pred"]) == np.concatenate(theirs["pred"]))
    rows = [("python-crfsuite (sklearn-crfsuite's CRF)", theirs),
            ("sklstruct.compat.CRF", ours)]
    lines = [f"c1 = {SETTINGS['c1']}, c2 = {SETTINGS['c2']}, max_iterations = {args.max_iter}, "
             "all_possible_transitions = True; esp.train -> esp.testb; one core each, "
             "each in its own child process, in one run.", "",
             "| model | flat F1 (tutorial) | entity F1 | fit s (wall) | fit s (CPU) | "
             "iterations | predict s |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {n} | {100 * r['flat_f1']:.2f} | {100 * r['entity_f1']:.2f} | "
              f"{r['fit_s']:.1f} | {r['fit_cpu']:.1f} | {r['iterations']} | {r['pred_s']:.2f} |"
              for n, r in rows]
    lines += ["",
              f"F1 difference (ours - CRFsuite): flat {100 * (ours['flat_f1'] - theirs['flat_f1']):+.2f}, "
              f"entity {100 * (ours['entity_f1'] - theirs['entity_f1']):+.2f} points; "
              f"training time ratio (ours / CRFsuite): wall {ours['fit_s'] / theirs['fit_s']:.2f}, "
              f"CPU {ours['fit_cpu'] / theirs['fit_cpu']:.2f}; "
              f"the two agree on {100 * agree:.2f}% of test tokens.",
              "",
              f"from_crfsuite: CRFsuite's model read in {loaded['load_s']:.1f} s predicts "
              f"CRFsuite's labels on {same} of {len(theirs['pred'])} test sentences."]
    report("sklearn-crfsuite's tutorial: sklstruct.compat.CRF and from_crfsuite",
           "bench_compat.py", argv, "\n".join(lines) + "\n", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

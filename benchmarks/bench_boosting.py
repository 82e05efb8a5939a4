"""Sequence boosting against the exp-loss CRF on Spanish NER (Altun, Johnson
& Hofmann, Table 3).

CoNLL-2002 Spanish (esp.train, scored on esp.testb), feature set S3 with a
window of one word either side (``feature_set("S3", window=1)``: the S2
attributes of the previous, current and next word), the same features for
every model:

* ``SequenceBoostingTagger()`` with its defaults (beyond the paper: Newton
  ranking of the exp-loss with the CRF's Gaussian prior, 5,000 features per
  round, a totally corrective step re-fitting every chosen weight after
  each round);
* Algorithm 2 as written (``selection="bound", step="bound",
  features_per_round=1, C=None, corrective_every=0``, with each feature's
  exact bounds), for contrast (``--paper-rounds``);
* ``CRFTagger(loss="exp")`` with its defaults, and with C = 0.5 and 500
  L-BFGS iterations (the configuration of ``bench_crf.py --part losses``).

Reported: conlleval phrase F1 (``chunk_report``), per-token F1 over the
non-O labels (a token counts as correct when its predicted label equals a
non-O gold label; precision over predicted non-O tokens, recall over gold
non-O tokens: what the paper's NER table most likely reports), training
seconds, and for boosting the number of updates and distinct features.
Every fit runs in its own forked process, one at a time.

Usage::

    python benchmarks/bench_boosting.py [--data DIR] [--sets S3] [--paper-rounds N]
        [--skip-crf] [--out FILE]
"""
import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from common import DEFAULT_DATA, in_child, load, report

from sklstruct import CRFTagger, SequenceBoostingTagger, feature_set
from sklstruct.metrics import chunk_report


def token_f1(y_true, y_pred, outside="O"):
    """Per-token F1 over the labels other than ``outside``."""
    t, p = np.concatenate(y_true), np.concatenate(y_pred)
    gold, pred = t != outside, p != outside
    correct = np.sum((t == p) & gold)
    precision = correct / max(pred.sum(), 1)
    recall = correct / max(gold.sum(), 1)
    return 0.0 if correct == 0 else 2 * precision * recall / (precision + recall)


def run(data, model, queue):
    from sklearn.exceptions import ConvergenceWarning
    from threadpoolctl import threadpool_limits

    tic = time.perf_counter()
    with warnings.catch_warnings(), threadpool_limits(1):
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(data["X"]["train"], data["y"]["train"])
    fit_s = time.perf_counter() - tic
    pred = model.predict(data["X"]["testb"])
    out = dict(chunk=chunk_report(data["y"]["testb"], pred).f1,
               token=token_f1(data["y"]["testb"], pred), fit_s=fit_s,
               n_iter=getattr(model, "n_iter_", None))
    if hasattr(model, "chosen_features_"):
        out["updates"] = len(model.chosen_features_)
        out["distinct"] = len({c[:3] for c in model.chosen_features_})
    queue.put(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=DEFAULT_DATA)
    parser.add_argument("--sets", nargs="+", choices=["S1", "S2", "S3"], default=["S3"])
    parser.add_argument("--paper-rounds", type=int, default=0,
                        help="also run Algorithm 2 as written for this many rounds")
    parser.add_argument("--skip-crf", action="store_true")
    parser.add_argument("--out", help="write the markdown here")
    args = parser.parse_args(argv)
    esp = Path(args.data) / "conll2002"
    sets = {"S1": feature_set("S1"), "S2": feature_set("S2"),
            "S3": feature_set("S3", window=1)}
    lines = ["CoNLL-2002 Spanish, train on esp.train (8,323 sentences), F1 on esp.testb; "
             "S3 = S2 attributes of the previous, current and next word.  Phrase F1: "
             "conlleval's; token F1: per token over the non-O labels.  One fit at a time, "
             "each in its own process, BLAS held to one thread.", "",
             "| features | model | phrase F1 | token F1 | training s | updates (distinct "
             "features) |", "|---|---|---|---|---|---|"]
    models = [("SequenceBoostingTagger()", SequenceBoostingTagger())]
    if args.paper_rounds:
        models.append((f"Algorithm 2 as written, {args.paper_rounds} rounds",
                       SequenceBoostingTagger(n_rounds=args.paper_rounds, features_per_round=1,
                                              selection="bound", step="bound", C=None,
                                              corrective_every=0)))
    if not args.skip_crf:
        models += [('CRFTagger(loss="exp")', CRFTagger(loss="exp")),
                   ('CRFTagger(loss="exp", C=0.5, max_iter=500)',
                    CRFTagger(loss="exp", C=0.5, max_iter=500))]
    for name in args.sets:
        data = load(esp / "esp.train", {"testb": esp / "esp.testb"}, sets[name])
        for label, model in models:
            r = in_child(run, data, model)
            extra = (f"{r['updates']} ({r['distinct']})" if "updates" in r
                     else f"{r['n_iter']} iterations")
            lines.append(f"| {name} ({data['n_features']} attributes) | {label} | "
                         f"{100 * r['chunk']:.2f} | {100 * r['token']:.2f} | {r['fit_s']:.0f} | "
                         f"{extra} |")
            print(lines[-1], flush=True)
    report("Sequence boosting", "bench_boosting.py", argv, "\n".join(lines) + "\n", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

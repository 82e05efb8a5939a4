"""The training losses of Table 1 of Bauer et al. (2017) by k-fold
cross-validation over the sentences of the Penn Treebank sample (issue 31,
item 3): more test sentences than one split gives.

Bauer, Nakajima, Goernitz and Mueller, "Optimizing for Measure of
Performance in Max-Margin Parsing" (arXiv:1709.01562, 2017), section 3.
Every sentence of at most ``--max-len`` tokens of files wsj_0001-0199 is
tested once: ``--folds`` folds (shuffled, seed 0), each loss trained on the
other folds with its C (``--C loss=value``, e.g. the C that
``bench_parser_losses.py`` chose on its dev split), ``(word, gold tag)``
input with the tags fixed.  Reports EVALB F1 per fold (mean and standard
deviation), the F1 of all held-out sentences pooled, and the paired Wilcoxon
signed-rank test over per-sentence F1 of all sentences
(``sklstruct.stats.wilcoxon_f1_test``).  One process, one thread; every
fold's counts are kept in ``--cache`` so that a stopped run resumes.

Usage::

    python benchmarks/bench_parser_cv.py --features rules --max-len 15
        --C zero_one=1 f1_binarized=100 f1=100 [--folds 10]
"""
import argparse
import json
import time
from pathlib import Path

import numpy as np
from common import DEFAULT_DATA
from sklearn.model_selection import KFold

from sklstruct import F1MaxMarginParser
from sklstruct.datasets import load_treebank
from sklstruct.stats import sentence_bracket_counts, wilcoxon_f1_test

LOSSES = {"zero_one": "0/1 (bin.)", "fp": "#FP (bin.)", "f1_binarized": "F1 (bin.)", "f1": "F1"}
FEATURES = {"rules": ("rules",), "rich": ("rules", "pcfg", "spans")}
HERE = Path(__file__).resolve().parent


def f1_of(counts):
    m, npred, ngold = np.asarray(counts).sum(axis=0)
    return 2 * m / (npred + ngold) if npred + ngold else 1.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=DEFAULT_DATA)
    ap.add_argument("--max-len", type=int, default=15)
    ap.add_argument("--folds", type=int, default=10)
    ap.add_argument("--features", default="rules", choices=list(FEATURES))
    ap.add_argument("--C", nargs="+", required=True, help="loss=C for every loss to run")
    ap.add_argument("--max-iter", type=int, default=200)
    ap.add_argument("--cache", default=str(HERE / "results" / "parser_cv.json"))
    ap.add_argument("--out", default=str(HERE / "results" / "parser_cv.md"))
    args = ap.parse_args()
    Cs = {k: float(v) for k, v in (a.split("=") for a in args.C)}

    trees, ids = load_treebank(args.data, return_file_ids=True)
    trees = [t for t, i in zip(trees, ids) if i <= 199 and len(t.leaves()) <= args.max_len]
    folds = list(KFold(args.folds, shuffle=True, random_state=0).split(np.arange(len(trees))))
    cache_path = Path(args.cache)
    cache = json.loads(cache_path.read_text()) if cache_path.exists() else {}
    counts = {}
    for loss, C in Cs.items():
        rows = np.zeros((len(trees), 3), dtype=np.int64)
        scored = np.zeros(len(trees), dtype=bool)
        for k, (train, test) in enumerate(folds):
            key = f"{args.max_len}|{args.folds}|{args.features}|{loss}|{C:g}|{k}"
            if key not in cache:
                est = F1MaxMarginParser(C=C, loss=loss, features=FEATURES[args.features],
                                        fixed_tags=True, max_iter=args.max_iter, n_jobs=1)
                tic = time.perf_counter()
                est.fit([trees[i].pos() for i in train], [trees[i] for i in train])
                fit_s = time.perf_counter() - tic
                gold = [trees[i] for i in test]
                c, s = sentence_bracket_counts(gold, est.predict([t.pos() for t in gold]),
                                               return_scored=True)
                cache[key] = {"counts": c.tolist(), "scored": s.tolist(), "fit_s": fit_s,
                              "converged": bool(est.converged_)}
                cache_path.write_text(json.dumps(cache))
                print(f"{args.features} {loss} C={C:g} fold {k}: F1 {100 * f1_of(c):.2f} "
                      f"({fit_s:.0f} s)", flush=True)
            rows[test] = cache[key]["counts"]
            scored[test] = cache[key]["scored"]
        counts[loss] = (rows, scored)

    lines = [f"# F1MaxMarginParser, {args.folds}-fold cross-validation, sentences <= "
             f"{args.max_len} tokens, features {args.features}", "",
             f"All {len(trees)} sentences of <= {args.max_len} tokens of files wsj_0001-0199, "
             f"{args.folds} folds (shuffled, seed 0); (word, gold tag) input, tags fixed; 1-slack, "
             "tol 0.01; C per loss as given.  EVALB (COLLINS.prm) F1.", "",
             "| training loss | C | F1 per fold: mean (sd) | min / max | pooled F1 |",
             "|---|---|---|---|---|"]
    per_fold = {}
    for loss, (rows, _) in counts.items():
        f = np.array([f1_of(rows[test]) for _, test in folds]) * 100
        per_fold[loss] = f
        lines.append(f"| {LOSSES[loss]} | {Cs[loss]:g} | {f.mean():.2f} ({f.std(ddof=1):.2f}) | "
                     f"{f.min():.2f} / {f.max():.2f} | {100 * f1_of(rows):.2f} |")
    if "f1" in counts:
        lines += ["", "F1 against each other loss: folds won, and the paired Wilcoxon "
                  "signed-rank test over the per-sentence F1 of all held-out sentences "
                  "(two-sided):", "",
                  "| F1 against | pooled F1 difference | folds F1 ahead | W | p |",
                  "|---|---|---|---|---|"]
        a, sa = counts["f1"]
        for loss, (b, sb) in counts.items():
            if loss == "f1":
                continue
            t = wilcoxon_f1_test(a, b, scored=sa & sb)
            lines.append(f"| {LOSSES[loss]} | {100 * (f1_of(a) - f1_of(b)):+.2f} | "
                         f"{int((per_fold['f1'] > per_fold[loss]).sum())} of {args.folds} | "
                         f"{t.statistic:.1f} | {t.pvalue:.3g} |")
    text = "\n".join(lines) + "\n"
    print(text)
    Path(args.out).write_text(text)


if __name__ == "__main__":
    main()

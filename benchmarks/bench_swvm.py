"""SWVM against k-best MIRA, SWVP and the structured perceptron: the protocol
of Appendix C of Ringel, Dror & Reichart, "The Structured Weighted Violation
MIRA" (arXiv:1705.04065), on CoNLL-2000 chunking and CoNLL-2002 Spanish NER.

Protocol (issue 12, item 6):

* the original splits of each corpus are unified (CoNLL-2000: train + test;
  CoNLL-2002 Spanish: train + testa + testb);
* 5 folds, each a random permutation of the unified sentences (fold ``f`` uses
  ``numpy.random.RandomState(seed + f)``) split 80% train / 10% dev / 10% test;
* features ``feature_set("swvm")`` (the 19 templates of Appendix B), fitted on
  each fold's training part only;
* models ``StructuredPerceptronTagger`` (CSP), ``KBestMIRATagger``,
  ``SWVPTagger`` and ``SWVMTagger``, all ``random_state=0`` and
  ``max_iter=--epochs``;
* each hyper-parameter configuration is trained on every fold's training part;
  the configuration of each algorithm with the best chunk F1 *averaged over
  the five dev parts* is chosen (Appendix C), and its test P/R/F1 are averaged
  over the folds (Table 1; the averaged F1 is not the harmonic mean of the
  averaged P and R);
* a paired t-test (``scipy.stats.ttest_rel``) on the five per-fold test F1 of
  SWVM against each other algorithm.  (The paper uses a per-fold test with
  K-Bonferroni replicability analysis, Appendix D; with one score per fold the
  paired t-test over folds is what can be computed here.)

The grid is a command-line option (``--ks``, ``--cs``, ``--gammas``,
``--variants``); the paper's full grid is ``--variants aggressive balanced
--ks 1 3 5`` (and a C grid for MIRA/SWVM, which the paper does not list).

Usage::

    python benchmarks/bench_swvm.py [--data DIR] [--corpus conll2000 conll2002_esp]
        [--epochs 10] [--folds 5] [--seed 0] [--ks 1 3] [--cs 0.1 1]
        [--gammas uniform softmin optimization wm] [--variants aggressive]
        [--cache-dir DIR] [--out FILE] [--report-only]

With several corpora they run in parallel, one process each.  Every fit's
result is appended to ``CACHE_DIR/<corpus>.jsonl`` as soon as it is known, so
an interrupted run can be rendered (as partial) with ``--report-only`` and is
resumed, not restarted, by running the same command again.
"""
import argparse
import json
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

from sklstruct import (
    KBestMIRATagger,
    StructuredPerceptronTagger,
    SWVMTagger,
    SWVPTagger,
    feature_set,
)
from sklstruct.datasets import read_conll
from sklstruct.metrics import chunk_report

DEFAULT_DATA = Path(os.environ.get(
    "SKLSTRUCT_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))

CORPORA = {
    "conll2000": ("CoNLL-2000 chunking", ["conll2000/train.txt", "conll2000/test.txt"]),
    "conll2002_esp": ("CoNLL-2002 Spanish NER",
                      ["conll2002/esp.train", "conll2002/esp.testa", "conll2002/esp.testb"]),
}
ALGORITHMS = ("SWVM", "MIRA", "SWVP", "CSP")


def configurations(args):
    """(algorithm, configuration label, parameters) of the grid."""
    variants = [v == "aggressive" for v in args.variants]
    out = [("CSP", "-", {})]
    for k in args.ks:
        for C in args.cs:
            out.append(("MIRA", f"k={k}, C={C:g}", {"k": k, "C": C}))
    for agg in variants:
        for gamma in args.gammas:
            for k in args.ks:
                out.append(("SWVP", f"{'agg.' if agg else 'bal.'}, {gamma}, k={k}",
                            {"k": k, "gamma": gamma, "aggressive": agg}))
                for C in args.cs:
                    out.append(("SWVM", f"{'agg.' if agg else 'bal.'}, {gamma}, k={k}, C={C:g}",
                                {"k": k, "C": C, "gamma": gamma, "aggressive": agg}))
    return out


def make(algorithm, params, epochs):
    cls = {"CSP": StructuredPerceptronTagger, "MIRA": KBestMIRATagger, "SWVP": SWVPTagger,
           "SWVM": SWVMTagger}[algorithm]
    return cls(max_iter=epochs, random_state=0, **params)


def load_unified(data, corpus):
    tokens, labels = [], []
    for rel in CORPORA[corpus][1]:
        t, y = read_conll(Path(data) / rel)
        tokens += t
        labels += y
    return tokens, labels


def folds(n, n_folds, seed):
    """Per fold: (train, dev, test) index arrays, 80/10/10 of a fresh permutation."""
    out = []
    for f in range(n_folds):
        perm = np.random.RandomState(seed + f).permutation(n)
        n_dev = n_test = round(0.1 * n)
        n_train = n - n_dev - n_test
        out.append((np.sort(perm[:n_train]), np.sort(perm[n_train:n_train + n_dev]),
                    np.sort(perm[n_train + n_dev:])))
    return out


def run_corpus(corpus, args):
    """Fit every configuration on every fold; append each result to the cache."""
    cache = Path(args.cache_dir) / f"{corpus}.jsonl"
    done = set()
    if cache.exists():
        for line in cache.read_text().splitlines():
            r = json.loads(line)
            done.add((r["fold"], r["algorithm"], r["config"]))
    tokens, labels = load_unified(args.data, corpus)
    grid = configurations(args)
    t0 = time.perf_counter()
    for f, (tr, dv, te) in enumerate(folds(len(tokens), args.folds, args.seed)):
        todo = [c for c in grid if (f, c[0], c[1]) not in done]
        if not todo:
            continue
        tic = time.perf_counter()
        vec = feature_set("swvm")
        Xtr = vec.fit_transform([tokens[i] for i in tr])
        Xdv = vec.transform([tokens[i] for i in dv])
        Xte = vec.transform([tokens[i] for i in te])
        feat_s = time.perf_counter() - tic
        ytr = [labels[i] for i in tr]
        ydv = [labels[i] for i in dv]
        yte = [labels[i] for i in te]
        for algorithm, label, params in todo:
            model = make(algorithm, params, args.epochs)
            tic = time.perf_counter()
            model.fit(Xtr, ytr)
            fit_s = time.perf_counter() - tic
            dev = chunk_report(ydv, model.predict(Xdv))
            test = chunk_report(yte, model.predict(Xte))
            rec = {"corpus": corpus, "fold": f, "algorithm": algorithm, "config": label, "params": params,
                       "epochs": args.epochs, "fit_s": fit_s, "feature_s": feat_s,
                       "n_train": len(tr), "n_dev": len(dv), "n_test": len(te),
                       "n_features": len(vec.vocabulary_),
                       "dev_p": dev.precision, "dev_r": dev.recall, "dev_f1": dev.f1,
                       "test_p": test.precision, "test_r": test.recall, "test_f1": test.f1}
            with open(cache, "a") as fh:
                fh.write(json.dumps(rec) + "\n")
            print(f"[{corpus} {time.perf_counter() - t0:7.0f}s] fold {f} {algorithm} {label}: "
                  f"dev F1 {100 * dev.f1:.2f}, test F1 {100 * test.f1:.2f}, fit {fit_s:.1f}s",
                  flush=True)


def report_corpus(corpus, args, records):
    title = CORPORA[corpus][0]
    grid = configurations(args)
    n_folds = args.folds
    expected = {(a, c) for a, c, _ in grid}
    # only the configurations of this command's grid (the cache may hold more)
    records = [r for r in records if (r["algorithm"], r["config"]) in expected
               and r["fold"] < n_folds]
    by = {}
    for r in records:
        by.setdefault((r["algorithm"], r["config"]), {})[r["fold"]] = r
    complete = {key: v for key, v in by.items() if len(v) == n_folds}
    partial = len(complete) < len(expected) or not expected <= set(complete)
    lines = [f"## {title}", ""]
    if records:
        r0 = records[0]
        sizes = sorted({(r["fold"], r["n_train"], r["n_dev"], r["n_test"], r["n_features"])
                        for r in records})
        lines.append(f"{r0['n_train'] + r0['n_dev'] + r0['n_test']} sentences (unified), "
                     f"per fold {r0['n_train']} train / {r0['n_dev']} dev / {r0['n_test']} "
                     f"test; features fitted per fold: "
                     + ", ".join(f"fold {s[0]}: {s[4]}" for s in sizes) + ".")
        lines.append("")
    if partial:
        lines.append(f"**PARTIAL**: {len(complete)} of {len(expected)} configurations have "
                     f"all {n_folds} folds; selection is among those only.")
        lines.append("")
    # selection by average dev F1 over the folds
    chosen = {}
    for alg in ALGORITHMS:
        cands = {c: v for (a, c), v in complete.items() if a == alg}
        if cands:
            chosen[alg] = max(cands, key=lambda c: np.mean([cands[c][f]["dev_f1"]
                                                             for f in range(n_folds)]))
    lines += ["### Test results (chosen configuration, averaged over folds; cf. Table 1)", "",
              ("| algorithm | chosen configuration | mean dev F1 | test P | test R | test F1 | "
              "F1 std | train s (mean per fit) | p vs SWVM (paired t) |"),
              "|---|---|---|---|---|---|---|---|---|"]
    summary = {}
    for alg in ALGORITHMS:
        if alg not in chosen:
            lines.append(f"| {alg} | (no complete configuration) | | | | | | | |")
            continue
        v = complete[(alg, chosen[alg])]
        rs = [v[f] for f in range(n_folds)]
        f1 = np.array([r["test_f1"] for r in rs])
        summary[alg] = f1
        p = "-"
        if alg != "SWVM" and "SWVM" in summary:
            p = f"{stats.ttest_rel(summary['SWVM'], f1).pvalue:.3g}"
        lines.append(f"| {alg} | {chosen[alg]} | {100 * np.mean([r['dev_f1'] for r in rs]):.2f} "
                     f"| {100 * np.mean([r['test_p'] for r in rs]):.2f} "
                     f"| {100 * np.mean([r['test_r'] for r in rs]):.2f} "
                     f"| {100 * f1.mean():.2f} | {100 * f1.std(ddof=1):.2f} "
                     f"| {np.mean([r['fit_s'] for r in rs]):.1f} | {p} |")
    lines.append("")
    if "SWVM" in summary:
        lines.append(f"Paired t-tests (scipy.stats.ttest_rel, two-sided, {n_folds - 1} d.o.f.) on the per-fold "
                     "test F1 of SWVM against each algorithm (mean difference in F1 points):")
        lines.append("")
        for alg in ("MIRA", "SWVP", "CSP"):
            if alg in summary:
                t = stats.ttest_rel(summary["SWVM"], summary[alg])
                d = 100 * (summary["SWVM"] - summary[alg]).mean()
                lines.append(f"* SWVM vs {alg}: {d:+.2f}, t = {t.statistic:.3f}, "
                             f"p = {t.pvalue:.3g}")
        lines.append("")
    lines += ["### Per-fold test F1 of the chosen configurations", "",
              "| algorithm | " + " | ".join(f"fold {f}" for f in range(n_folds)) + " |",
              "|---|" + "---|" * n_folds]
    for alg, f1 in summary.items():
        lines.append(f"| {alg} | " + " | ".join(f"{100 * x:.2f}" for x in f1) + " |")
    lines += ["", "### Whole grid: mean dev F1 / mean test F1 / mean training seconds per fit", "",
              "| algorithm | configuration | folds | mean dev F1 | mean test F1 | train s |",
              "|---|---|---|---|---|---|"]
    for (alg, conf), v in sorted(by.items(), key=lambda kv: (ALGORITHMS.index(kv[0][0]),
                                                             kv[0][1])):
        rs = list(v.values())
        mark = " **(chosen)**" if chosen.get(alg) == conf else ""
        lines.append(f"| {alg} | {conf}{mark} | {len(rs)} | "
                     f"{100 * np.mean([r['dev_f1'] for r in rs]):.2f} | "
                     f"{100 * np.mean([r['test_f1'] for r in rs]):.2f} | "
                     f"{np.mean([r['fit_s'] for r in rs]):.1f} |")
    lines.append("")
    total = sum(r["fit_s"] for r in records)
    lines.append(f"Total training time (all {len(records)} fits): {total:.0f} s.")
    return "\n".join(lines), partial, summary, chosen


def render(args, wall=None):
    argv = " ".join(sys.argv[1:]) if args.command_line is None else args.command_line
    parts = ["# SWVM vs MIRA, SWVP, CSP (Appendix C protocol of Ringel, Dror & Reichart)", "",
             f"Command: `python benchmarks/bench_swvm.py {argv}`", "",
             (f"Grid ({'the paper' if set(args.variants) == {'aggressive', 'balanced'} and {1, 3, 5} <= set(args.ks) else 'reduced; the paper'}'s is aggressive and balanced x setGamma x K in {{1, 3, 5}}, "
              f"plus C here): "
             f"variants {args.variants}; K in {args.ks}; gamma in {args.gammas} (SWVP, SWVM); "
             f"C in {args.cs} (MIRA, SWVM; SWVP and CSP have no C); {args.epochs} epochs; "
             f"all models random_state=0, other parameters default. "
             f"Folds: {args.folds}, fold f permuted with RandomState({args.seed} + f), "
             f"80/10/10 train/dev/test. Features: feature_set(\"swvm\") fitted on each fold's "
             f"train part. Selection: best F1 averaged over the {args.folds} dev parts. "
             f"F1 is chunk (entity) micro F1 in percent; averaged F1 is not the harmonic mean of "
             f"averaged P and R."), ""]
    if wall is not None:
        parts += [(f"Wall-clock time of the run: {wall:.0f} s"
                   + (" (corpora in parallel processes, 2 cores)." if len(args.corpus) > 1
                      else ".")), ""]
    verdicts = []
    any_partial = False
    for corpus in args.corpus:
        cache = Path(args.cache_dir) / f"{corpus}.jsonl"
        recs = [json.loads(x) for x in cache.read_text().splitlines()] if cache.exists() else []
        recs = [r for r in recs if r["epochs"] == args.epochs]
        text, partial, summary, _chosen = report_corpus(corpus, args, recs)
        any_partial |= partial
        parts += [text, ""]
        if "SWVM" in summary and "MIRA" in summary:
            d = summary["SWVM"].mean() - summary["MIRA"].mean()
            p = stats.ttest_rel(summary["SWVM"], summary["MIRA"]).pvalue
            verdicts.append(f"* {CORPORA[corpus][0]}: SWVM {100 * summary['SWVM'].mean():.2f} vs "
                            f"MIRA {100 * summary['MIRA'].mean():.2f} -> target (SWVM >= MIRA) "
                            f"{'met' if d >= 0 else 'NOT met'} (difference {100 * d:+.2f}, "
                            f"paired t-test p = {p:.3g})")
    parts += ["## The paper's numbers (Tables 1 and 2 of Ringel, Dror & Reichart), for reference", "",
              "| algorithm | CoNLL-2002 P / R / F1 | config | CoNLL-2000 P / R / F1 | config |",
              "|---|---|---|---|---|",
              ("| SWVM | 82.95 / 73.98 / 78.11 | agg., opt., K=3 | 93.37 / 93.05 / 93.21* "
              "| agg., opt., K=5 |"),
              "| MIRA | 79.92 / 74.45 / 76.87 | K=3 | 92.64 / 92.34 / 92.49 | K=3 |",
              ("| SWVP | 47.53 / 53.59 / 49.58 | agg., softmin, K=3 | 90.65 / 89.64 / 90.15 "
              "| agg., uniform, K=1 |"),
              "| CSP | 83.32 / 71.22 / 76.56 | - | 92.83 / 92.47 / 92.66 | - |", "",
              ("(Their folds, implementation (StructLearn) and epochs (up to 15) differ; * = significant by their "
              "replicability analysis.)"), ""]
    if verdicts:
        parts[6:6] = ["Target of issue 12 (SWVM's averaged test F1 at least MIRA's):", ""] + \
            verdicts + [""]
    if any_partial:
        parts[0] += " -- PARTIAL RESULTS"
    text = "\n".join(parts)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text + "\n")
    print(text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=DEFAULT_DATA)
    parser.add_argument("--corpus", nargs="+", choices=list(CORPORA), default=list(CORPORA))
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ks", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--cs", type=float, nargs="+", default=[0.1, 1.0])
    parser.add_argument("--gammas", nargs="+", default=["uniform", "softmin", "optimization", "wm"],
                        choices=["uniform", "wm", "softmin", "optimization"])
    parser.add_argument("--variants", nargs="+", default=["aggressive"],
                        choices=["aggressive", "balanced"])
    parser.add_argument("--cache-dir", default="/tmp/sklstruct_bench_swvm")
    parser.add_argument("--out", default="benchmarks/results/swvm.md")
    parser.add_argument("--report-only", action="store_true",
                        help="render the markdown from the cache without fitting")
    parser.add_argument("--command-line", default=None,
                        help="command line to print in the report (default: this one)")
    args = parser.parse_args(argv)
    Path(args.cache_dir).mkdir(parents=True, exist_ok=True)
    tic = time.perf_counter()
    if not args.report_only:
        if len(args.corpus) > 1:
            ctx = mp.get_context("fork")
            procs = [ctx.Process(target=run_corpus, args=(c, args)) for c in args.corpus]
            for p in procs:
                p.start()
            for p in procs:
                p.join()
        else:
            run_corpus(args.corpus[0], args)
    render(args, None if args.report_only else time.perf_counter() - tic)


if __name__ == "__main__":
    main()

"""Before/after timings for a behaviour-preserving change (a restructuring).

Times, in one process, the configurations of ``check_identical.py`` (every
registered estimator, the M3N solvers and kernels, the four CRF losses, order 2)
on a slice of CoNLL-2000, plus the feature transform and the parsers on the
treebank sample: each fit once, each predict as the median of ``--reps``.
``drive`` runs that alternately under two interpreters (BEFORE, AFTER, BEFORE,
AFTER, ...), each in a fresh process started outside the checkouts, and writes
a markdown table of the per-figure medians and the AFTER/BEFORE ratio (median
of the per-pair ratios).

Usage::

    python benchmarks/bench_restructure.py drive --before /path/venv_before/bin/python \\
        --after /path/venv_after/bin/python --pairs 3 --md benchmarks/results/restructure.md
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def timing(args):
    import sklstruct as ss
    from bench_datapath import median_time
    from check_identical import DATA, _configs
    from sklstruct.datasets import load_treebank, read_conll

    res = {"sklstruct": ss.__file__}
    Xtr, ytr = read_conll(DATA / "conll2000/train.txt")
    Xte, _ = read_conll(DATA / "conll2000/test.txt")
    Xtr, ytr = Xtr[:args.n_train], ytr[:args.n_train]
    vec = ss.feature_set("chunking")
    Ftr = vec.fit_transform(Xtr)
    res["transform(test)"] = median_time(lambda: vec.transform(Xte), args.reps)
    Fte = vec.transform(Xte)
    for name, est, marks in _configs():
        n = 150 if marks.get("small") else len(ytr)
        tic = time.perf_counter()
        est.fit(Ftr[:n], ytr[:n])
        res[f"{name} fit"] = time.perf_counter() - tic
        res[f"{name} predict(test)"] = median_time(lambda: est.predict(Fte), args.reps)
        print(name, file=sys.stderr)
    trees = [t for t in load_treebank(data_home=str(DATA)) if len(t.leaves()) <= 10]
    X = [t.leaves() for t in trees[:150]]
    for name, est in (("parser f1 1-slack", ss.F1MaxMarginParser(C=10, max_iter=10)),
                      ("pcfg", ss.PCFGParser())):
        tic = time.perf_counter()
        est.fit(X, trees[:150])
        res[f"{name} fit"] = time.perf_counter() - tic
        X_test = [t.leaves() for t in trees[150:250]]
        res[f"{name} predict"] = median_time(lambda: est.predict(X_test), args.reps)
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)


def drive(args):
    work = Path(tempfile.mkdtemp(prefix="restructure-"))
    runs = {"before": [], "after": []}
    for pair in range(args.pairs):
        for side in ("before", "after"):
            out = work / f"{side}{pair}.json"
            cmd = [getattr(args, side), str(Path(__file__).resolve()), "timing", "--out", str(out),
                   "--n-train", str(args.n_train), "--reps", str(args.reps)]
            env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
            subprocess.run(cmd, check=True, cwd=work, env=env, stderr=subprocess.DEVNULL)
            with open(out) as f:
                runs[side].append(json.load(f))
            print(f"pair {pair + 1} {side} done", file=sys.stderr)
    figures = [k for k in runs["before"][0] if k != "sklstruct"]
    lines = [f"# Before/after timings ({args.pairs} alternated pairs of processes)", "",
             f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
             f"CoNLL-2000 first {args.n_train} training sentences (kernel M3N: 150), full test set; "
             f"treebank: 150 sentences of <= 10 words.", "",
             f"before: `{runs['before'][0]['sklstruct']}`  ", f"after: `{runs['after'][0]['sklstruct']}`", "",
             "| figure | before (s) | after (s) | after/before (median of pairs) |",
             "|---|---:|---:|---:|"]
    for key in figures:
        b = np.array([r[key] for r in runs["before"]])
        a = np.array([r[key] for r in runs["after"]])
        lines.append(f"| {key} | {np.median(b):.4f} | {np.median(a):.4f} | {np.median(a / b):.3f} |")
    ratios = [np.median(np.array([r[k] for r in runs["after"]]) / np.array([r[k] for r in runs["before"]]))
              for k in figures]
    lines += ["", f"Geometric mean of the ratios: {float(np.exp(np.mean(np.log(ratios)))):.3f}", ""]
    text = "\n".join(lines)
    print(text)
    if args.md:
        Path(args.md).write_text(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="mode", required=True)
    t = sub.add_parser("timing")
    t.add_argument("--out", required=True)
    d = sub.add_parser("drive")
    d.add_argument("--before", required=True)
    d.add_argument("--after", required=True)
    d.add_argument("--pairs", type=int, default=3)
    d.add_argument("--md")
    for p in (t, d):
        p.add_argument("--n-train", type=int, default=2000)
        p.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    (timing if args.mode == "timing" else drive)(args)


if __name__ == "__main__":
    main()

"""CRFTagger beyond one thread: threads (n_jobs) and a Dask LocalCluster on bags.

On CoNLL-2000 chunking (``feature_set("chunking")``, vocabulary fitted on the
training file), log loss, 20 L-BFGS iterations (``--max-iter``):

* ``threads``: seconds per L-BFGS iteration of ``CRFTagger(n_jobs=1)`` and
  ``n_jobs=2`` in this process, fitted alternately ``--repeat`` times
  (medians), and whether the two models are identical (they must be);
* ``dask``: the serial fit on lists beside the fit on bags from
  ``read_conll_bag`` (features computed on the workers by the fitted
  vectorizer) on a LocalCluster of 2 workers x 1 thread, each in a fresh
  process: fit seconds (the cluster's start-up not counted), objective and
  its relative difference, the calling process's peak memory (ru_maxrss),
  and the bytes per objective evaluation that the design sends (theta to
  each worker, one gradient back, the tree's transfers; computed, not
  measured).

The vectorizer's vocabulary is fitted on the calling process from the
training file (a distributed vocabulary fit is not written yet), so the
client's peak includes that; the CRF's data stays on the workers.

Usage::

    python benchmarks/bench_distributed.py [--data DIR] [--part threads dask]
        [--max-iter 20] [--repeat 3] [--partitions 4] [--out FILE]
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from common import DEFAULT_DATA, report


def features(data):
    from sklstruct import feature_set
    from sklstruct.datasets import read_conll

    tokens, labels = read_conll(Path(data) / "conll2000" / "train.txt")
    vectorizer = feature_set("chunking").fit(tokens)
    return vectorizer, tokens, labels


def fit(model, X, y):
    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        tic = time.perf_counter()
        model.fit(X, y)
        return time.perf_counter() - tic


def part_threads(args):
    from sklstruct import CRFTagger

    vectorizer, tokens, labels = features(args.data)
    X = vectorizer.transform(tokens)
    per_iter, models = {1: [], 2: []}, {}
    for _ in range(args.repeat):
        for n_jobs in (1, 2):
            model = CRFTagger(max_iter=args.max_iter, n_jobs=n_jobs)
            seconds = fit(model, X, labels)
            per_iter[n_jobs].append(seconds / model.n_iter_)
            models[n_jobs] = model
    one, two = (float(np.median(per_iter[k])) for k in (1, 2))
    same = all(np.array_equal(getattr(models[1], a), getattr(models[2], a))
               for a in ("coef_", "transition_coef_", "start_coef_", "end_coef_"))
    rows = ["| n_jobs | s / iteration (median) | all runs | ratio to n_jobs=1 |",
            "|---|---|---|---|",
            f"| 1 | {one:.3f} | {', '.join(f'{s:.3f}' for s in per_iter[1])} | 1.00 |",
            f"| 2 | {two:.3f} | {', '.join(f'{s:.3f}' for s in per_iter[2])} | {two / one:.2f} |"]
    return ("## Threads: CRFTagger(n_jobs) per L-BFGS iteration\n\n"
            f"{args.max_iter} iterations, {args.repeat} alternating fits each; identical "
            f"models for n_jobs=1 and 2: {same}.  Target: n_jobs=2 <= 0.6x n_jobs=1.\n\n"
            + "\n".join(rows) + "\n")


def child(args):
    """One fit in this fresh process; prints a JSON line."""
    from sklstruct import CRFTagger

    vectorizer, tokens, labels = features(args.data)
    model = CRFTagger(max_iter=args.max_iter)
    out = {}
    if args.child == "serial":
        X = vectorizer.transform(tokens)
        del tokens
        out["seconds"] = fit(model, X, labels)
    else:
        from distributed import Client, LocalCluster

        from sklstruct.datasets import read_conll_bag

        del tokens, labels
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster):
            tok_bag, y = read_conll_bag(Path(args.data) / "conll2000" / "train.txt",
                                        partitions_per_file=args.partitions)
            X = tok_bag.map_partitions(vectorizer.transform)
            out["seconds"] = fit(model, X, y)
    n_theta = (len(model.classes_) + 2) * len(model.classes_) + int(
        np.count_nonzero(model.coef_))
    out.update(objective=model.objective_, n_iter=model.n_iter_, n_theta=n_theta,
               peak_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    print(json.dumps(out))


def part_dask(args):
    runs = {}
    for kind in ("serial", "dask"):
        cmd = [sys.executable, __file__, "--child", kind, "--data", str(args.data),
               "--max-iter", str(args.max_iter), "--partitions", str(args.partitions)]
        text = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        runs[kind] = json.loads(text.strip().splitlines()[-1])
    s, d = runs["serial"], runs["dask"]
    n_theta, P = d["n_theta"], args.partitions
    # theta to each of 2 workers, the summed gradient back, and at most P - 1
    # partial gradients between workers in the tree (an upper bound)
    per_eval = 8 * n_theta * (2 + 1 + (P - 1))
    rows = ["| fit | seconds | iterations | objective | client peak MB |", "|---|---|---|---|---|",
            f"| serial, lists | {s['seconds']:.1f} | {s['n_iter']} | {s['objective']:.10g} | "
            f"{s['peak_mb']:.0f} |",
            f"| LocalCluster 2x1, bags ({P} partitions) | {d['seconds']:.1f} | {d['n_iter']} | "
            f"{d['objective']:.10g} | {d['peak_mb']:.0f} |"]
    rel = abs(d["objective"] - s["objective"]) / abs(s["objective"])
    return ("## Dask: CRFTagger on bags beside the serial fit on lists\n\n"
            + "\n".join(rows) + "\n\n"
            f"Time ratio bags / serial: {d['seconds'] / s['seconds']:.2f} (target <= 0.7); "
            f"objective relative difference {rel:.2e} (target <= 1e-6); client peak "
            f"ratio {d['peak_mb'] / s['peak_mb']:.2f}.  Bytes per objective evaluation "
            f"(computed): at most {per_eval / 2**20:.1f} MiB ({n_theta} parameters).\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=DEFAULT_DATA)
    parser.add_argument("--part", nargs="+", default=["threads", "dask"],
                        choices=["threads", "dask"])
    parser.add_argument("--max-iter", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--child", choices=["serial", "dask"])
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    if args.child:
        return child(args)
    body = [f"Machine: {os.cpu_count()} CPUs (shared with other work while measured: "
            "timings are noisy).\n"]
    if "threads" in args.part:
        body.append(part_threads(args))
    if "dask" in args.part:
        body.append(part_dask(args))
    report("CRFTagger: threads and Dask", "bench_distributed.py", argv, "\n".join(body),
           args.out)


if __name__ == "__main__":
    main()

"""Iterative parameter mixing (ParameterMixingTagger) against serial training.

CoNLL-2000 chunking with the benchmarks' features (``feature_set("chunking")``),
the averaged perceptron and 1-best PA, 10 epochs: serial training, then 1, 2,
4 and 16 shards with ``n_jobs=2`` in threads (the epoch kernels release the
GIL) and on a Dask ``LocalCluster`` of 2 worker processes of 1 thread (the
shards as actors, dealt to the workers).  Reports chunk F1, wall-clock time
of ``fit`` and the weight rows that travelled per epoch (to and from the
shards) against the dense matrices (shards x features, both ways) that
mixing whole weight matrices would move.

Usage::

    python benchmarks/bench_mixing.py [--epochs 10] [--out benchmarks/results/mixing.md]
"""
import argparse
import contextlib
import os
import sys
import time

from common import DEFAULT_DATA, load_corpus, report
from joblib import parallel_config

from sklstruct import ParameterMixingTagger, PassiveAggressiveTagger, StructuredPerceptronTagger
from sklstruct.metrics import chunk_report


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=DEFAULT_DATA)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    data = load_corpus(args.data, "conll2000")
    X, y, X_test, y_test = data["X"]["train"], data["y"]["train"], data["X"]["test"], \
        data["y"]["test"]
    lines = ["| learner | training | shards | where | chunk F1 | fit s | vs serial "
             "| rows moved / epoch | vs dense |", "|---|---|---|---|---|---|---|---|---|"]
    with contextlib.ExitStack() as stack:
        import distributed
        cluster = stack.enter_context(distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None))
        stack.enter_context(distributed.Client(cluster))
        for name, learner in [("perceptron", StructuredPerceptronTagger(random_state=0)),
                              ("PA", PassiveAggressiveTagger(random_state=0))]:
            learner.set_params(max_iter=args.epochs)
            runs = [("serial", "-", "-", learner)]
            for shards in (1, 2, 4, 16):
                for where in ("threads", "dask"):
                    runs.append(("mixing", shards, where, ParameterMixingTagger(
                        learner, n_shards=shards, max_iter=args.epochs, n_jobs=2)))
            serial_s = None
            for training, shards, where, model in runs:
                tic = time.perf_counter()
                with parallel_config(backend="dask") if where == "dask" \
                        else contextlib.nullcontext():
                    model.fit(X, y)
                fit_s = time.perf_counter() - tic
                serial_s = serial_s or fit_s
                f1 = chunk_report(y_test, model.predict(X_test)).f1
                moved = dense = "-"
                if training == "mixing" and shards > 1:
                    rows = [h["rows_sent"] + h["rows_received"] for h in model.history_[1:]]
                    moved = f"{sum(rows) / len(rows):,.0f}"
                    dense = f"{sum(rows) / len(rows) / (2 * shards * X.n_features):.3f}"
                lines.append(f"| {name} | {training} | {shards} | {where} | {100 * f1:.2f} | "
                             f"{fit_s:.1f} | {fit_s / serial_s:.2f}x | {moved} | {dense} |")
                print(lines[-1], flush=True)
    body = (f"CoNLL-2000: {len(y)} training sentences, {data['n_features']} features, "
            f"{args.epochs} epochs; {os.cpu_count()} cores.\n\n" + "\n".join(lines) + "\n")
    report("Iterative parameter mixing against serial training", "bench_mixing.py", argv,
           body, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

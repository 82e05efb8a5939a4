"""Iterative parameter mixing (ParameterMixingTagger) against serial training.

CoNLL-2000 chunking with the benchmarks' features (``feature_set("chunking")``),
the averaged perceptron and 1-best PA, 10 epochs: serial training, then 1, 2
and 4 shards with ``n_jobs=2`` on the threading backend (the epoch kernels
release the GIL) and on loky processes.  Reports chunk F1 and wall-clock
time of ``fit``; the machine has 2 cores, so 4 shards run two at a time.

Usage::

    python benchmarks/bench_mixing.py [--epochs 10] [--out benchmarks/results/mixing.md]
"""
import argparse
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
    lines = ["| learner | training | shards | backend | chunk F1 | fit s | vs serial |",
             "|---|---|---|---|---|---|---|"]
    for name, learner in [("perceptron", StructuredPerceptronTagger(random_state=0)),
                          ("PA", PassiveAggressiveTagger(random_state=0))]:
        learner.set_params(max_iter=args.epochs)
        runs = [("serial", "-", "-", learner)]
        for shards in (1, 2, 4):
            for backend in ("threading", "loky"):
                runs.append(("mixing", shards, backend, ParameterMixingTagger(
                    learner, n_shards=shards, max_iter=args.epochs, n_jobs=2)))
        serial_s = None
        for training, shards, backend, model in runs:
            tic = time.perf_counter()
            if backend == "-":
                model.fit(X, y)
            else:
                with parallel_config(backend=backend):
                    model.fit(X, y)
            fit_s = time.perf_counter() - tic
            serial_s = serial_s or fit_s
            f1 = chunk_report(y_test, model.predict(X_test)).f1
            lines.append(f"| {name} | {training} | {shards} | {backend} | {100 * f1:.2f} | "
                         f"{fit_s:.1f} | {fit_s / serial_s:.2f}x |")
            print(lines[-1], flush=True)
    body = (f"CoNLL-2000: {len(y)} training sentences, {data['n_features']} features, "
            f"{args.epochs} epochs; 2 cores.\n\n" + "\n".join(lines) + "\n")
    report("Iterative parameter mixing against serial training", "bench_mixing.py", argv,
           body, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

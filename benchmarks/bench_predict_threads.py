"""Prediction with ``n_jobs`` threads against one thread.

CoNLL-2000 with the benchmarks' features (``feature_set("chunking")``), a PA
model (2 epochs); decoding (``_decode``: emission scores and Viterbi, no label
mapping) of the training set (211,727 tokens) and of the test set, with
``n_jobs=1`` and ``n_jobs=2``, runs alternated; medians and bests in tokens/s.

Usage::

    python benchmarks/bench_predict_threads.py [--repeats 9] [--out benchmarks/results/predict_threads.md]
"""
import argparse
import statistics
import sys
import time

from common import DEFAULT_DATA, load_corpus, report

from sklstruct import PassiveAggressiveTagger


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=DEFAULT_DATA)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    data = load_corpus(args.data, "conll2000")
    model = PassiveAggressiveTagger(max_iter=2, random_state=0)
    model.fit(data["X"]["train"], data["y"]["train"])
    lines = ["| sentences | tokens | n_jobs | median tokens/s | best tokens/s |",
             "|---|---|---|---|---|"]
    for part in ("train", "test"):
        X = data["X"][part]
        n = int(sum(X.lengths))
        times = {1: [], 2: []}
        for _ in range(args.repeats):
            for n_jobs in (1, 2):
                model.set_params(n_jobs=n_jobs)
                tic = time.perf_counter()
                model._decode(X)
                times[n_jobs].append(time.perf_counter() - tic)
        for n_jobs, t in times.items():
            lines.append(f"| {part} | {n:,} | {n_jobs} | {n / statistics.median(t):,.0f} | "
                         f"{n / min(t):,.0f} |")
            print(lines[-1], flush=True)
    report("Prediction in threads", "bench_predict_threads.py", argv,
           "2 cores.\n\n" + "\n".join(lines) + "\n", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

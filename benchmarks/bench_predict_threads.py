"""Prediction with ``n_jobs`` threads against one thread.

CoNLL-2000 and CoNLL-2002 Spanish NER with the benchmarks' features
(``feature_set("chunking")``, ``feature_set("ner")``), a PA model (2 epochs);
``predict`` (labels per sentence) on the training sets and on the test sets
(CoNLL-2000 test, Spanish testb), with ``n_jobs=1`` and ``n_jobs=2``, runs
alternated; medians and bests in tokens/s and the median of the per-round
speed-ups.  Beside each round, the machine's own two-thread speed-up on
cache-resident work that needs no memory traffic and holds no lock (SHA-256
of a 256 KB buffer, which releases the GIL): the ceiling the decoder's
speed-up is measured against.

Usage::

    python benchmarks/bench_predict_threads.py [--repeats 15] [--out benchmarks/results/predict_threads.md]
"""
import argparse
import hashlib
import statistics
import threading
import sys
import time

from common import DEFAULT_DATA, load_corpus, report

from sklstruct import PassiveAggressiveTagger


_BUFFER = b"x" * (256 << 10)


def _hashing():
    for _ in range(100):
        hashlib.sha256(_BUFFER).digest()


def machine_speedup():
    """One round of the machine's two-thread speed-up on pure computation."""
    tic = time.perf_counter()
    _hashing()
    _hashing()
    one = time.perf_counter() - tic
    tic = time.perf_counter()
    other = threading.Thread(target=_hashing)
    other.start()
    _hashing()
    other.join()
    return one / (time.perf_counter() - tic)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=DEFAULT_DATA)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    lines = ["| corpus | sentences | tokens | n_jobs | median tokens/s | best tokens/s | "
             "median speed-up | machine's median speed-up |", "|---|---|---|---|---|---|---|---|"]
    for corpus, parts in (("conll2000", ("train", "test")), ("esp", ("train", "testb"))):
        data = load_corpus(args.data, corpus)
        model = PassiveAggressiveTagger(max_iter=2, random_state=0)
        model.fit(data["X"]["train"], data["y"]["train"])
        for part in parts:
            X = data["X"][part]
            n = int(sum(X.lengths))
            times, machine = {1: [], 2: []}, []
            for _ in range(args.repeats):
                machine.append(machine_speedup())
                for n_jobs in (1, 2):
                    model.set_params(n_jobs=n_jobs)
                    tic = time.perf_counter()
                    model.predict(X)
                    times[n_jobs].append(time.perf_counter() - tic)
            ratio = statistics.median(a / b for a, b in zip(times[1], times[2]))
            for n_jobs, t in times.items():
                lines.append(f"| {corpus} | {part} | {n:,} | {n_jobs} | "
                             f"{n / statistics.median(t):,.0f} | {n / min(t):,.0f} | "
                             f"{ratio if n_jobs == 2 else 1.0:.2f}x | "
                             f"{statistics.median(machine) if n_jobs == 2 else 1.0:.2f}x |")
                print(lines[-1], flush=True)
    report("Prediction in threads", "bench_predict_threads.py", argv,
           "2 cores.\n\n" + "\n".join(lines) + "\n", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Training on more cores and more workers: CRFTagger and ParameterMixingTagger.

The issue's scaling target: on a machine with many cores, 16 threads or 16
Dask workers train at least 10x faster than one, on a corpus 10x CoNLL-2000
(the training file repeated ``--repeat-corpus`` times, each copy in its own
shuffled order), with F1 within 0.3.  Features: ``feature_set("chunking")``
with its vocabulary fitted on the training file (the copies add no words).

Parts (``--part``), each for every count in ``--workers``:

* ``crf-threads``: ``CRFTagger(max_iter=--crf-iter, n_jobs=k)``: seconds per
  L-BFGS iteration, whether the model equals ``n_jobs=1``'s (it must: the
  sums run in a fixed order), chunk F1 on test.txt;
* ``mixing-threads``: ``ParameterMixingTagger`` of the averaged perceptron,
  ``n_shards=k, n_jobs=k`` (one shard per thread: the wall-clock a user gets
  from k cores), and ``n_shards=max(k), n_jobs=k`` (the same model on
  more threads: the pure parallel speed-up);
* ``crf-dask`` / ``mixing-dask``: a ``LocalCluster`` of k worker processes of
  one thread; the corpus written to ``--files`` files, read by
  ``read_conll_bag`` on the workers, featurized there; the CRF's objective
  and gradient summed on the workers, the mixing shards resident there
  (``n_shards=None``: one per worker).  Cluster start-up is not counted.

Usage::

    python benchmarks/bench_scaling.py [--data DIR] [--workers 1 2] [--repeat-corpus 10]
        [--crf-iter 10] [--epochs 5] [--part crf-threads mixing-threads crf-dask mixing-dask]
        [--out FILE]
"""
import argparse
import os
import platform
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
from common import DEFAULT_DATA, quiet_fit, report


def machine():
    name = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{os.cpu_count()} CPUs ({name})"


def corpus(data, copies, seed=0):
    """The training sentences repeated ``copies`` times, each copy shuffled."""
    from sklstruct.datasets import read_conll

    tokens, labels = read_conll(Path(data) / "conll2000" / "train.txt")
    rng = np.random.default_rng(seed)
    order = np.concatenate([rng.permutation(len(tokens)) for _ in range(copies)])
    return tokens, [tokens[i] for i in order], [labels[i] for i in order]




def f1(model, X_test, y_test):
    from sklstruct.metrics import chunk_report

    return 100 * chunk_report(y_test, model.predict(X_test)).f1


def same_model(a, b):
    return all(np.array_equal(getattr(a, n), getattr(b, n))
               for n in ("coef_", "transition_coef_", "start_coef_", "end_coef_"))


def write_files(tokens, labels, directory, n_files):
    """The corpus as ``n_files`` CoNLL files of whole sentences."""
    cuts = np.linspace(0, len(tokens), n_files + 1).round().astype(int)
    paths = []
    for i, (a, b) in enumerate(zip(cuts[:-1], cuts[1:])):
        path = Path(directory) / f"part{i:03d}.txt"
        with open(path, "w") as out:
            for sent, tags in zip(tokens[a:b], labels[a:b]):
                out.write("\n".join(f"{w} {p} {t}" for (w, p), t in zip(sent, tags)))
                out.write("\n\n")
        paths.append(str(path))
    return paths


def emit(lines, row):
    lines.append(row)
    print(row, flush=True)


def part_crf_threads(args, setup, lines):
    from sklstruct import CRFTagger

    X, y, X_test, y_test = setup["X"], setup["y"], setup["X_test"], setup["y_test"]
    emit(lines, "\n## CRFTagger(n_jobs=k) on the large corpus\n")
    emit(lines, "| n_jobs | iterations | s / iteration | speed-up | same model as n_jobs=1 "
         "| chunk F1 |")
    emit(lines, "|---|---|---|---|---|---|")
    first = None
    for k in args.workers:
        model = CRFTagger(max_iter=args.crf_iter, n_jobs=k)
        seconds = quiet_fit(model, X, y) / model.n_iter_
        first = first or (seconds, model)
        emit(lines, f"| {k} | {model.n_iter_} | {seconds:.3f} | {first[0] / seconds:.2f}x | "
             f"{same_model(first[1], model)} | {f1(model, X_test, y_test):.2f} |")


def part_mixing_threads(args, setup, lines):
    from sklstruct import ParameterMixingTagger, StructuredPerceptronTagger

    X, y, X_test, y_test = setup["X"], setup["y"], setup["X_test"], setup["y_test"]
    most = max(args.workers)
    emit(lines, "\n## ParameterMixingTagger (averaged perceptron) in threads\n")
    emit(lines, "| shards | n_jobs | fit s | speed-up vs 1 shard, 1 thread | chunk F1 |")
    emit(lines, "|---|---|---|---|---|")
    base = None
    runs = [(k, k) for k in args.workers] + [(most, k) for k in args.workers if k != most]
    for shards, n_jobs in runs:
        model = ParameterMixingTagger(StructuredPerceptronTagger(random_state=0),
                                      n_shards=shards, max_iter=args.epochs, n_jobs=n_jobs)
        seconds = quiet_fit(model, X, y)
        base = base or seconds
        emit(lines, f"| {shards} | {n_jobs} | {seconds:.1f} | {base / seconds:.2f}x | "
             f"{f1(model, X_test, y_test):.2f} |")


def part_dask(args, setup, lines, which):
    import distributed

    from sklstruct import CRFTagger, ParameterMixingTagger, StructuredPerceptronTagger
    from sklstruct.datasets import read_conll_bag

    vectorizer, X_test, y_test = setup["vectorizer"], setup["X_test"], setup["y_test"]
    # the fitted vectorizer travels once in each partition's task: a few MB
    warnings.filterwarnings("ignore", message=".*large graph.*")
    title = {"crf-dask": f"CRFTagger(max_iter={args.crf_iter}) on bags",
             "mixing-dask": "ParameterMixingTagger (averaged perceptron, n_shards=None) on bags"}
    emit(lines, f"\n## {title[which]}: LocalCluster of k workers x 1 thread\n")
    emit(lines, "| workers | fit s | speed-up vs 1 worker | objective or epochs | chunk F1 |")
    emit(lines, "|---|---|---|---|---|")
    base = None
    for k in args.workers:
        with distributed.LocalCluster(n_workers=k, threads_per_worker=1, processes=True,
                                      dashboard_address=None) as cluster, \
                distributed.Client(cluster):
            tok_bag, y_bag = read_conll_bag(setup["paths"])
            X_bag = tok_bag.map_partitions(vectorizer.transform)
            if which == "crf-dask":
                model = CRFTagger(max_iter=args.crf_iter)
            else:
                model = ParameterMixingTagger(StructuredPerceptronTagger(random_state=0),
                                              n_shards=None, max_iter=args.epochs)
            seconds = quiet_fit(model, X_bag, y_bag)
        base = base or seconds
        extra = (f"{model.objective_:.10g}" if which == "crf-dask" else str(args.epochs))
        emit(lines, f"| {k} | {seconds:.1f} | {base / seconds:.2f}x | {extra} | "
             f"{f1(model, X_test, y_test):.2f} |")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=DEFAULT_DATA)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeat-corpus", type=int, default=10)
    parser.add_argument("--crf-iter", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--files", type=int, default=32)
    parser.add_argument("--part", nargs="+",
                        default=["crf-threads", "mixing-threads", "crf-dask", "mixing-dask"],
                        choices=["crf-threads", "mixing-threads", "crf-dask", "mixing-dask"])
    parser.add_argument("--out")
    args = parser.parse_args(argv)

    from sklstruct import feature_set
    from sklstruct.datasets import read_conll

    original, tokens, labels = corpus(args.data, args.repeat_corpus)
    vectorizer = feature_set("chunking").fit(original)
    tokens_test, y_test = read_conll(Path(args.data) / "conll2000" / "test.txt")
    setup = {"vectorizer": vectorizer, "y": labels, "X_test": vectorizer.transform(tokens_test),
             "y_test": y_test}
    lines = [f"Machine: {machine()}.  Corpus: CoNLL-2000's training file x "
             f"{args.repeat_corpus} ({len(tokens)} sentences, "
             f"{sum(map(len, tokens))} tokens), {vectorizer.n_features_out_} features."]
    print(lines[0], flush=True)
    if any(p.endswith("threads") for p in args.part):
        setup["X"] = vectorizer.transform(tokens)
    with tempfile.TemporaryDirectory() as tmp:
        if any(p.endswith("dask") for p in args.part):
            setup["paths"] = write_files(tokens, labels, tmp, args.files)
        del tokens
        for part in args.part:
            if part == "crf-threads":
                part_crf_threads(args, setup, lines)
            elif part == "mixing-threads":
                part_mixing_threads(args, setup, lines)
            else:
                part_dask(args, setup, lines, part)
            if args.out:   # what is measured so far survives a later time-out
                Path(args.out).write_text("\n".join(lines) + "\n")
    report("Training on more cores and workers", "bench_scaling.py", argv,
           "\n".join(lines) + "\n", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

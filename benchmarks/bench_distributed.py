"""CRFTagger beyond one thread: threads (n_jobs), a Dask LocalCluster on bags, the pipeline on bags.

On CoNLL-2000 chunking (``feature_set("chunking")``, vocabulary fitted on the
training file), log loss, 20 L-BFGS iterations (``--max-iter``):

* ``threads``: seconds per L-BFGS iteration of ``CRFTagger(n_jobs=1)`` and
  ``n_jobs=2`` in this process, fitted alternately ``--repeat`` times
  (medians), and whether the two models are identical (they must be);
* ``dask``: the serial fit on lists beside the fit on bags from
  ``read_conll_bag`` (features computed on the workers by the fitted
  vectorizer) on a LocalCluster of 2 workers x 1 thread, each in a fresh
  process, alternated ``--repeat`` times (medians): fit seconds (the
  cluster's start-up and the workers' imports not counted, as the serial
  process's are not), the CPU seconds the calling process and
  the workers spent in the fit, objective and its relative difference, the
  calling process's peak memory (VmHWM), and the bytes per objective
  evaluation that the design sends (theta to each worker, one partial
  gradient back from each; computed, not measured).

* ``pipeline``: the issue's first target: ``make_pipeline(feature_set("chunking"),
  CRFTagger(max_iter=20))`` fitted serially on lists read from the training
  file cut into 8 files, beside the same pipeline fitted on the bags of
  ``read_conll_bag`` over those 8 files on a LocalCluster of 2 workers x 1
  thread (the vocabulary counted on the workers, the features computed
  there), each in a fresh process, alternated ``--repeat`` times (medians):
  fit seconds, CPU seconds, chunk F1 on test.txt, and the calling process's
  and the workers' peak memory at the end of the fit;
  ``--memory-limit MB`` gives each worker that limit (Dask pauses a worker
  at 80% of it and restarts it at 95%: a fit that ends stayed within it).

The 1-minute load average is printed with each part: on a machine shared
with other work, two workers get less than two CPUs, and the ratios say so.

In the ``dask`` part the vectorizer's vocabulary is fitted in the calling
process from the training file, so the client's peak includes that; in
``pipeline`` nothing but the vocabulary and the model reaches it.

Usage::

    python benchmarks/bench_distributed.py [--data DIR] [--part threads dask]
        [--part threads dask pipeline] [--max-iter 20] [--repeat 3] [--partitions 4]
        [--memory-limit MB]
        [--out FILE]
"""
import argparse
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
from common import DEFAULT_DATA, quiet_fit, report


def features(data):
    from sklstruct import feature_set
    from sklstruct.datasets import read_conll

    tokens, labels = read_conll(Path(data) / "conll2000" / "train.txt")
    vectorizer = feature_set("chunking").fit(tokens)
    return vectorizer, tokens, labels




def part_threads(args):
    from sklstruct import CRFTagger

    vectorizer, tokens, labels = features(args.data)
    X = vectorizer.transform(tokens)
    per_iter, models, loads = {1: [], 2: []}, {}, []
    for _ in range(args.repeat):
        for n_jobs in (1, 2):
            loads.append(os.getloadavg()[0])
            model = CRFTagger(max_iter=args.max_iter, n_jobs=n_jobs)
            seconds = quiet_fit(model, X, labels)
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
            + "\n".join(rows) + "\n\n"
            + timing_note(loads, [b / a for a, b in zip(per_iter[1], per_iter[2])]) + "\n")


def peak_mb():
    """This process's peak resident memory, MB: VmHWM, which starts afresh
    at exec (ru_maxrss keeps the parent's peak across fork and exec, so a
    child would report the peak of the threads part run before it)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_seconds():
    """CPU seconds this process has used (user + system)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def warm_workers(client):
    """Import on the workers what a fit on bags runs there, before the timer
    starts, as the serial process has imported it before its own (a fresh
    worker process spends about 1 s of CPU importing scikit-learn, SciPy and
    sklstruct at its first task)."""
    import importlib

    for name in ("sklstruct", "sklstruct.datasets._conll_bag", "sklstruct.features._bags",
                 "sklstruct.learners._crf_dask"):
        client.run(importlib.import_module, name)


def timed_fit(model, X, y, client=None):
    """``(seconds, CPU seconds of this process, of the workers)`` of ``model.fit(X, y)``."""
    workers0 = sum(client.run(cpu_seconds).values()) if client else 0.0
    cpu0 = cpu_seconds()
    seconds = quiet_fit(model, X, y)
    cpu = cpu_seconds() - cpu0
    workers = sum(client.run(cpu_seconds).values()) - workers0 if client else 0.0
    return seconds, cpu, workers


def split_files(data, directory, n_files=8):
    """The training file cut into ``n_files`` files of whole sentences."""
    text = (Path(data) / "conll2000" / "train.txt").read_text()
    blocks = [b for b in text.split("\n\n") if b.strip()]
    cuts = np.linspace(0, len(blocks), n_files + 1).round().astype(int)
    paths = []
    for i, (a, b) in enumerate(zip(cuts[:-1], cuts[1:])):
        paths.append(Path(directory) / f"train{i}.txt")
        paths[-1].write_text("\n\n".join(blocks[a:b]) + "\n\n")
    return paths


def child_pipeline(args):
    """The pipeline's fit in this fresh process; prints a JSON line."""
    import tempfile

    from sklearn.pipeline import make_pipeline

    from sklstruct import CRFTagger, feature_set
    from sklstruct.datasets import read_conll, read_conll_bag
    from sklstruct.metrics import chunk_report

    model = make_pipeline(feature_set("chunking"), CRFTagger(max_iter=args.max_iter))
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        paths = split_files(args.data, tmp)
        if args.child == "pipeline-serial":
            tokens, labels = [], []
            for path in paths:
                t, lab = read_conll(path)
                tokens += t
                labels += lab
            out["seconds"], out["cpu"], out["workers_cpu"] = timed_fit(model, tokens, labels)
            del tokens, labels
            out["peak_mb"] = peak_mb()
        else:
            from distributed import Client, LocalCluster

            limit = f"{args.memory_limit}MB" if args.memory_limit else "auto"
            with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                              dashboard_address=None, memory_limit=limit) as cluster, \
                    Client(cluster) as client:
                warm_workers(client)
                X, y = read_conll_bag([str(p) for p in paths])
                out["seconds"], out["cpu"], out["workers_cpu"] = timed_fit(model, X, y, client)
                out["peak_mb"] = peak_mb()
                out["worker_peak_mb"] = sorted(client.run(peak_mb).values())
    X_test, y_test = read_conll(Path(args.data) / "conll2000" / "test.txt")
    out["f1"] = 100 * chunk_report(y_test, model.predict(X_test)).f1
    out["objective"] = model[-1].objective_
    print(json.dumps(out))


def alternated(args, kinds, extra=()):
    """Each child of ``kinds`` run in a fresh process, alternated
    ``args.repeat`` times: ``({kind: [runs]}, [1-minute load averages])``."""
    runs, loads = {kind: [] for kind in kinds}, []
    for _ in range(args.repeat):
        for kind in kinds:
            cmd = [sys.executable, __file__, "--child", kind, "--data", str(args.data),
                   "--max-iter", str(args.max_iter), *extra]
            loads.append(os.getloadavg()[0])
            text = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
            runs[kind].append(json.loads(text.strip().splitlines()[-1]))
    return runs, loads


def median_run(runs):
    """The run of median seconds, with the median and all of them."""
    ordered = sorted(runs, key=lambda r: r["seconds"])
    return dict(ordered[(len(ordered) - 1) // 2],
                all=", ".join(f"{r['seconds']:.1f}" for r in runs))


def timing_note(loads, ratios):
    return (f"Ratios of the alternated pairs: {', '.join(f'{r:.2f}' for r in ratios)}; "
            f"1-minute load average before each fit: {min(loads):.1f}-{max(loads):.1f} "
            f"on {os.cpu_count()} CPUs.")


def part_pipeline(args):
    kinds = ("pipeline-serial", "pipeline-dask")
    runs, loads = alternated(args, kinds, ["--memory-limit", str(args.memory_limit)])
    s, d = (median_run(runs[k]) for k in kinds)
    ratios = [b["seconds"] / a["seconds"] for a, b in zip(*(runs[k] for k in kinds))]
    rows = ["| fit | seconds (median) | all runs | CPU s: client + workers | chunk F1 | "
            "objective | client peak MB | workers' peak MB |",
            "|---|---|---|---|---|---|---|---|"]
    limit = f", memory_limit {args.memory_limit} MB each" if args.memory_limit else ""
    for name, r in (("serial, lists", s), (f"LocalCluster 2x1{limit}, bags of 8 files", d)):
        workers = ", ".join(f"{m:.0f}" for m in r.get("worker_peak_mb", [])) or "-"
        rows.append(f"| {name} | {r['seconds']:.1f} | {r['all']} | {r['cpu']:.1f} + "
                    f"{r['workers_cpu']:.1f} | {r['f1']:.2f} | {r['objective']:.10g} | "
                    f"{r['peak_mb']:.0f} | {workers} |")
    peak = np.median([r["peak_mb"] for r in runs[kinds[1]]]) / np.median(
        [r["peak_mb"] for r in runs[kinds[0]]])
    return ("## The pipeline on bags from 8 files beside the serial pipeline on lists\n\n"
            "``make_pipeline(feature_set(\"chunking\"), CRFTagger(max_iter="
            f"{args.max_iter}))``.\n\n" + "\n".join(rows) + "\n\n"
            f"Time ratio bags / serial (medians): {d['seconds'] / s['seconds']:.2f} (target "
            f"<= 0.7); F1 difference {d['f1'] - s['f1']:+.2f} (target within 0.3); client "
            f"peak ratio (medians) {peak:.2f} (target <= 0.5).  {timing_note(loads, ratios)}\n")


def child(args):
    """One fit in this fresh process; prints a JSON line."""
    if args.child.startswith("pipeline"):
        return child_pipeline(args)
    from sklstruct import CRFTagger

    vectorizer, tokens, labels = features(args.data)
    model = CRFTagger(max_iter=args.max_iter)
    out = {}
    if args.child == "serial":
        X = vectorizer.transform(tokens)
        del tokens
        out["seconds"], out["cpu"], out["workers_cpu"] = timed_fit(model, X, labels)
    else:
        from distributed import Client, LocalCluster

        from sklstruct.datasets import read_conll_bag

        del tokens, labels
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            tok_bag, y = read_conll_bag(Path(args.data) / "conll2000" / "train.txt",
                                        partitions_per_file=args.partitions)
            X = vectorizer.transform(tok_bag)      # (on the workers, partition by partition)
            warm_workers(client)
            out["seconds"], out["cpu"], out["workers_cpu"] = timed_fit(model, X, y, client)
    n_theta = (len(model.classes_) + 2) * len(model.classes_) + int(
        np.count_nonzero(model.coef_))
    # the L-BFGS iterations alone: from the first objective evaluation on
    # (the set-up before it, on bags the reading and featurizing, excluded)
    out.update(objective=model.objective_, n_iter=model.n_iter_, n_theta=n_theta,
               lbfgs_s=model.history_[-1]["seconds"], peak_mb=peak_mb())
    print(json.dumps(out))


def part_dask(args):
    kinds = ("serial", "dask")
    runs, loads = alternated(args, kinds, ["--partitions", str(args.partitions)])
    s, d = (median_run(runs[k]) for k in kinds)
    ratios = [b["seconds"] / a["seconds"] for a, b in zip(*(runs[k] for k in kinds))]
    n_theta, P = d["n_theta"], args.partitions
    # theta to each of the 2 workers, one partial gradient back from each
    # (their partitions are consecutive runs: nothing moves between workers)
    per_eval = 8 * n_theta * (2 + 2)
    lbfgs = {k: float(np.median([r["lbfgs_s"] for r in runs[k]])) for k in kinds}
    rows = ["| fit | seconds (median) | all runs | L-BFGS s (median) | CPU s: client + workers | "
            "iterations | objective | client peak MB |", "|---|---|---|---|---|---|---|---|"]
    for name, r, k in (("serial, lists", s, kinds[0]),
                       (f"LocalCluster 2x1, bags ({P} partitions)", d, kinds[1])):
        rows.append(f"| {name} | {r['seconds']:.1f} | {r['all']} | {lbfgs[k]:.2f} | "
                    f"{r['cpu']:.1f} + {r['workers_cpu']:.1f} | {r['n_iter']} | "
                    f"{r['objective']:.10g} | {r['peak_mb']:.0f} |")
    rel = abs(d["objective"] - s["objective"]) / abs(s["objective"])
    return ("## Dask: CRFTagger on bags beside the serial fit on lists\n\n"
            "The fit on bags includes reading the file and computing the features on "
            "the workers (the serial fit's features are computed before it); the L-BFGS "
            "column times the iterations alone (``history_[-1]['seconds']``).\n\n"
            + "\n".join(rows) + "\n\n"
            f"Time ratio bags / serial (medians): whole fit {d['seconds'] / s['seconds']:.2f}, "
            f"L-BFGS iterations {lbfgs['dask'] / lbfgs['serial']:.2f} (target "
            f"<= 0.7); objective relative difference {rel:.2e} (target <= 1e-6); client peak "
            f"ratio {d['peak_mb'] / s['peak_mb']:.2f}.  Bytes per objective evaluation "
            f"(computed): at most {per_eval / 2**20:.1f} MiB ({n_theta} parameters).  "
            f"{timing_note(loads, ratios)}\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=DEFAULT_DATA)
    parser.add_argument("--part", nargs="+", default=["threads", "dask", "pipeline"],
                        choices=["threads", "dask", "pipeline"])
    parser.add_argument("--max-iter", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--memory-limit", type=int, default=0,
                        help="pipeline part: each worker's memory limit, MB (0: Dask's default)")
    parser.add_argument("--child", choices=["serial", "dask", "pipeline-serial",
                                            "pipeline-dask"])
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    if args.child:
        return child(args)
    body = [f"Machine: {os.cpu_count()} CPUs, shared with other work while measured (the "
            "load averages are given with each part): timings are noisy.\n"]
    if "threads" in args.part:
        body.append(part_threads(args))
    if "dask" in args.part:
        body.append(part_dask(args))
    if "pipeline" in args.part:
        body.append(part_pipeline(args))
    report("CRFTagger: threads and Dask", "bench_distributed.py", argv, "\n".join(body),
           args.out)


if __name__ == "__main__":
    main()

"""Feature extraction benchmarks of :class:`sklstruct.SequenceVectorizer`.

Modes (subcommands); others add theirs beside ``speed``:

``speed``
    Issue 29, item 1: the compiled featurizer on CoNLL-2000 with the
    ``chunking`` preset, one process, these figures:

    * ``fit`` of the vectorizer on train.txt (s);
    * ``transform`` of test.txt alone, tokens/s, with ``n_jobs=1`` and
      ``n_jobs=-1``;
    * ``tagger.predict`` on the same features as a plain list of
      per-sentence CSR matrices, against the stacked form (target: at most
      1.2x);
    * end to end: ``pipeline.predict(raw test sentences)`` of the vectorizer
      and a fitted StructuredPerceptronTagger, against
      ``tagger.predict(prepared features)`` (target: at most 2.0x);
    * python-crfsuite end to end on the same templates written as attribute
      strings (a Python ``token -> features`` function as in CRFsuite's
      chunking example, then ``Tagger.tag`` per sentence; an averaged
      perceptron model), against our ``pipeline.predict``.

    Each time is the median of ``--reps`` runs in this process, in wall
    time or (``--clock cpu``, on a machine shared with other jobs) in the
    process's CPU time, which time lost to the other jobs does not inflate
    (every run so timed is single-threaded).  The times
    that a ratio compares (decoding, the list form, the pipeline; python-
    crfsuite's) are taken in rounds, one run of each per round, so that a
    change in the machine's load (a shared machine) weighs on both sides of
    a ratio alike.

Usage::

    python benchmarks/bench_features.py speed [--data DIR] [--reps 7] [--clock {wall,cpu}]
                                              [--out FILE]
"""
import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from common import DEFAULT_DATA, report

from sklstruct import StructuredPerceptronTagger, feature_set
from sklstruct.datasets import read_conll
from sklstruct.metrics import chunk_report
from sklearn.pipeline import make_pipeline


def chunking_attributes(sentence):
    """The ``chunking`` preset's features of each token as CRFsuite attribute
    strings (names as SequenceVectorizer gives them, BOS/EOS values)."""
    n = len(sentence)
    w = ["__BOS__"] * 2 + [t[0] for t in sentence] + ["__EOS__"] * 2
    p = ["__BOS__"] * 2 + [t[1] for t in sentence] + ["__EOS__"] * 2
    out = []
    for i in range(2, n + 2):
        out.append([
            "bias",
            f"word[-2]={w[i - 2]}", f"word[-1]={w[i - 1]}", f"word={w[i]}",
            f"word[+1]={w[i + 1]}", f"word[+2]={w[i + 2]}",
            f"pos[-2]={p[i - 2]}", f"pos[-1]={p[i - 1]}", f"pos={p[i]}",
            f"pos[+1]={p[i + 1]}", f"pos[+2]={p[i + 2]}",
            f"word[-1]|word={w[i - 1]}|{w[i]}", f"word|word[+1]={w[i]}|{w[i + 1]}",
            f"pos[-2]|pos[-1]={p[i - 2]}|{p[i - 1]}", f"pos[-1]|pos={p[i - 1]}|{p[i]}",
            f"pos|pos[+1]={p[i]}|{p[i + 1]}", f"pos[+1]|pos[+2]={p[i + 1]}|{p[i + 2]}",
            f"pos[-2]|pos[-1]|pos={p[i - 2]}|{p[i - 1]}|{p[i]}",
            f"pos[-1]|pos|pos[+1]={p[i - 1]}|{p[i]}|{p[i + 1]}",
            f"pos|pos[+1]|pos[+2]={p[i]}|{p[i + 1]}|{p[i + 2]}",
        ])
    return out


#: ``--clock``: wall time, or the process's CPU time (``time.process_time``),
#: which time lost to other processes on a shared machine does not inflate;
#: every run it is used for is single-threaded (n_jobs=1, CRFsuite).
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
_clock = time.perf_counter


def median_time(fn, reps):
    """The median time of ``reps`` calls of ``fn`` (on ``--clock``)."""
    return interleaved_medians([fn], reps)[0]


def interleaved_medians(fns, reps):
    """The median time of each function of ``fns``, run in ``reps`` rounds
    of one call each (the order rotating from round to round), on ``--clock``."""
    times = [[] for _ in fns]
    for r in range(reps):
        for k in range(len(fns)):
            i = (k + r) % len(fns)
            tic = _clock()
            fns[i]()
            times[i].append(_clock() - tic)
    return [float(np.median(t)) for t in times]


def _wall_time(fn):
    tic = time.perf_counter()
    fn()
    return time.perf_counter() - tic


def speed(args):
    global _clock
    _clock = CLOCKS[args.clock]
    root = Path(args.data) / "conll2000"
    X_train, y_train = read_conll(root / "train.txt")
    X_test, y_test = read_conll(root / "test.txt")
    n_test = sum(map(len, X_test))
    reps = args.reps
    rows = []

    vec = feature_set("chunking")
    fit_s = median_time(lambda: vec.fit(X_train), max(1, reps // 2))
    rows.append(("vectorizer fit (train, 211,727 tokens)", f"{fit_s * 1e3:.0f} ms", ""))
    Z_train = vec.transform(X_train)
    t1 = median_time(lambda: vec.transform(X_test), reps)
    rows.append(("transform test, n_jobs=1", f"{t1 * 1e3:.1f} ms",
                 f"{n_test / t1 / 1e6:.2f} M tokens/s"))
    vec.set_params(n_jobs=-1)
    # (threads: wall time whatever --clock says)
    tn = float(np.median([_wall_time(lambda: vec.transform(X_test)) for _ in range(reps)]))
    rows.append((f"transform test, n_jobs=-1 ({os.cpu_count()} CPUs)", f"{tn * 1e3:.1f} ms",
                 f"{n_test / tn / 1e6:.2f} M tokens/s"))
    vec.set_params(n_jobs=None)

    tagger = StructuredPerceptronTagger(max_iter=5, random_state=0).fit(Z_train, y_train)
    pipe = make_pipeline(vec, tagger)
    Z_test = vec.transform(X_test)
    # issue 29, item 2: the same features as a plain list of per-sentence CSR
    # matrices (the data contract), stacked and checked at each predict
    as_list = [Z_test.matrix[a:b] for a, b in zip(Z_test.offsets[:-1], Z_test.offsets[1:])]
    decode_s, list_s, pipe_s = interleaved_medians(
        [lambda: tagger.predict(Z_test), lambda: tagger.predict(as_list),
         lambda: pipe.predict(X_test)], reps)
    f1 = chunk_report(y_test, pipe.predict(X_test)).f1
    rows.append(("tagger.predict(prepared features)", f"{decode_s * 1e3:.1f} ms", ""))
    rows.append(("tagger.predict(list of per-sentence CSR)", f"{list_s * 1e3:.1f} ms",
                 f"{list_s / decode_s:.2f}x the stacked form (target <= 1.2x)"))
    rows.append(("pipeline.predict(raw sentences)", f"{pipe_s * 1e3:.1f} ms",
                 f"{pipe_s / decode_s:.2f}x the decoding (target <= 2.0x); F1 {100 * f1:.2f}"))

    try:
        import pycrfsuite
    except ImportError:
        pycrfsuite = None
    if pycrfsuite is not None:
        trainer = pycrfsuite.Trainer(algorithm="ap", verbose=False)
        for x, y in zip(X_train, y_train):
            trainer.append(chunking_attributes(x), list(y))
        trainer.set_params({"max_iterations": 5})
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "model.crfsuite")
            trainer.train(path)
            crf = pycrfsuite.Tagger()
            crf.open(path)
            feats_s = median_time(lambda: [chunking_attributes(x) for x in X_test], reps)
            attrs = [chunking_attributes(x) for x in X_test]
            tag_s = median_time(lambda: [crf.tag(a) for a in attrs], reps)
            # (our pipeline again, in the same rounds as CRFsuite's)
            e2e_s, pipe_again_s = interleaved_medians(
                [lambda: [crf.tag(chunking_attributes(x)) for x in X_test],
                 lambda: pipe.predict(X_test)], reps)
            crf_f1 = chunk_report(y_test, [crf.tag(a) for a in attrs]).f1
        rows.append(("python-crfsuite: features as strings (Python)", f"{feats_s * 1e3:.1f} ms",
                     ""))
        rows.append(("python-crfsuite: tag prepared features", f"{tag_s * 1e3:.1f} ms", ""))
        rows.append(("python-crfsuite end to end", f"{e2e_s * 1e3:.1f} ms",
                     f"ours end to end ({pipe_again_s * 1e3:.1f} ms, same rounds): "
                     f"{pipe_again_s / e2e_s:.2f}x its time, {e2e_s / pipe_again_s:.1f}x "
                     f"faster; F1 {100 * crf_f1:.2f}"))
    lines = ["| measurement | time | rate / ratio |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    body = (f"CoNLL-2000, `chunking` preset ({len(vec._instances)} template instances, "
            f"{vec.n_features_out_:,} features), {n_test:,} test tokens; medians of {reps} "
            f"runs; perceptron and CRFsuite averaged perceptron, 5 epochs; "
            f"{'wall' if args.clock == 'wall' else 'CPU (process)'} time"
            f"{'' if args.clock == 'wall' else ' except the threaded transform (wall)'}; "
            f"load average at the end {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs.\n\n"
            + "\n".join(lines) + "\n")
    report("Feature extraction speed (issue 29, item 1)", "bench_features.py", None, body,
           args.out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    p = sub.add_parser("speed", help="featurization speed, end to end ratios")
    p.add_argument("--data", default=DEFAULT_DATA)
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                   help="wall time, or CPU time (a machine shared with other jobs)")
    p.add_argument("--out")
    p.set_defaults(run=speed)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()

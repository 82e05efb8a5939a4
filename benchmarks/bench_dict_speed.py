"""DictSequenceVectorizer against scikit-learn's DictVectorizer on the same dicts.

The dicts are sklearn-crfsuite's tutorial features (``word2features`` of
bench_dict_features.py) of CoNLL-2002 Spanish NER.  Side by side in one run,
repeated (``--repeat``), each call timed alone:

* ``DictVectorizer`` on the list of all token dicts (the flattened corpus,
  built before the clock starts: DictVectorizer has no notion of sentences);
* :class:`sklstruct.DictSequenceVectorizer` on the sentences of dicts (its
  output: the stacked CSR matrix of every sentence);
* the implementation before its kernel, kept in the tests as the oracle
  (``tests/_oracles.OracleDictSequenceVectorizer``), unless ``--no-before``;

``fit_transform`` and ``transform`` (with the fitted vectorizer, on
esp.train and esp.testb).  The target of issue 29: DictSequenceVectorizer at
least as fast as DictVectorizer.  The outputs are checked identical to the
oracle's on the way.

Usage::

    python benchmarks/bench_dict_speed.py [--data DIR] [--repeat 5] [--no-before] [--out FILE]
"""
import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from bench_dict_features import word2features
from common import DEFAULT_DATA, report

from sklstruct import DictSequenceVectorizer
from sklstruct.datasets import read_conll

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # (for tests._oracles)


def timed(call):
    gc.collect()
    tic = time.perf_counter()
    result = call()
    return time.perf_counter() - tic, result


def check_same(expected, got):
    for name in ("indptr", "indices", "data"):
        a, b = getattr(expected.matrix, name), getattr(got.matrix, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name
    assert np.array_equal(expected.offsets, got.offsets)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=DEFAULT_DATA)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-before", action="store_true")
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    from sklearn.feature_extraction import DictVectorizer

    esp = Path(args.data) / "conll2002"
    sentences = {part: read_conll(esp / f"esp.{part}")[0] for part in ("train", "testb")}
    dicts = {part: [[word2features(s, i) for i in range(len(s))] for s in sents]
             for part, sents in sentences.items()}
    flat = {part: [token for s in d for token in s] for part, d in dicts.items()}
    routes = {"DictVectorizer, flattened dicts": (DictVectorizer, flat),
              "DictSequenceVectorizer": (DictSequenceVectorizer, dicts)}
    if not args.no_before:
        from tests._oracles import OracleDictSequenceVectorizer
        routes["DictSequenceVectorizer before the kernel"] = (OracleDictSequenceVectorizer,
                                                              dicts)
    steps = ("fit_transform esp.train", "transform esp.train", "transform esp.testb")
    times = {(route, step): [] for route in routes for step in steps}
    outputs = {}
    for rep in range(args.repeat):
        for route, (cls, data) in routes.items():       # interleaved: same conditions
            seconds, out = timed(lambda: cls().fit_transform(data["train"]))
            times[route, steps[0]].append(seconds)
            fitted = cls().fit(data["train"])
            for step, part in zip(steps[1:], ("train", "testb")):
                seconds, out_t = timed(lambda: fitted.transform(data[part]))
                times[route, step].append(seconds)
                outputs[route, part] = out_t
            outputs[route, "fit"] = out
        print(f"repetition {rep + 1}: " + ", ".join(
            f"{route} {times[route, steps[0]][-1]:.2f} s" for route in routes), flush=True)
    if not args.no_before:
        before = "DictSequenceVectorizer before the kernel"
        for key in ("fit", "train", "testb"):
            check_same(outputs[before, key], outputs["DictSequenceVectorizer", key])

    n_tokens = {part: len(f) for part, f in flat.items()}
    n_entries = outputs["DictSequenceVectorizer", "fit"].matrix.nnz
    lines = [f"CoNLL-2002 Spanish, sklearn-crfsuite's tutorial features: esp.train "
             f"{len(dicts['train']):,} sentences, {n_tokens['train']:,} tokens "
             f"({n_entries:,} nonzero features); esp.testb {n_tokens['testb']:,} tokens.  "
             f"Seconds, median (min) of {args.repeat} interleaved repetitions, one process; "
             "the ratio is to DictVectorizer's median in the same run.", "",
             "| route | " + " | ".join(steps) + " |", "|---" * (len(steps) + 1) + "|"]
    base = "DictVectorizer, flattened dicts"
    for route in routes:
        cells = []
        for step in steps:
            t = times[route, step]
            ratio = statistics.median(t) / statistics.median(times[base, step])
            cells.append(f"{statistics.median(t):.3f} ({min(t):.3f})"
                         + ("" if route == base else f", {ratio:.2f}x"))
        lines.append(f"| {route} | " + " | ".join(cells) + " |")
    if not args.no_before:
        lines += ["", "The outputs of DictSequenceVectorizer and of the implementation "
                  "before its kernel were checked identical (indptr, indices, data, offsets)."]
    report("DictSequenceVectorizer against DictVectorizer", "bench_dict_speed.py", argv,
           "\n".join(lines) + "\n", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

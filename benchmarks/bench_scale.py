"""Scale: prediction throughput against seqlearn and CRFsuite, and many labels against CRFsuite.

Section A, prediction throughput: a perceptron (10 epochs) on CoNLL-2000
(``feature_set("chunking")``, test set) and CoNLL-2002 Spanish NER
(``feature_set("ner")``, testb).  seqlearn's ``StructuredPerceptron`` is not
trained: it is given our weights (its predictions are checked against ours
token for token), so that only the prediction code differs.  CRFsuite's
``ap`` is trained for 10 iterations on the same attribute strings and tags in
this process.  sklstruct (``n_jobs=1`` and ``2``, full ``predict``), seqlearn
and CRFsuite run alternated, round after round, after one warm-up each.

Section B, many labels (exact Viterbi, with and without a tag dictionary): the perceptron
(5 epochs) against CRFsuite's ``ap`` (5 iterations) on the same
``feature_set("S3")`` attributes of the words, for the CoNLL-2000 POS tags, the
Penn Treebank sample's tags (first 3,000 sentences train, the rest test) and
synthetic label sets: the (POS, chunk) pair of each token of the first 4,000
CoNLL-2000 training sentences, the L-1 most frequent pairs kept and the others
mapped to ``OTHER``.  Seconds per epoch are medians over epochs; predict
times (test set, ``n_jobs=1``) alternated with CRFsuite's as in section A.

Speed ratios are medians of the per-round ratios, which a noisy machine
disturbs less than a ratio of medians.

Usage (needs ``pip install python-crfsuite`` and seqlearn 0.2, which no longer
imports on current scikit-learn as released: ``bash benchmarks/peers/build_seqlearn.sh``
installs it with ``benchmarks/peers/seqlearn-0.2-py311.patch``)::

    python benchmarks/bench_scale.py [--data DIR] [--repeats 7] [--throughput-repeats 21] [--labels 10 44 50 100 128 200]
                                     [--sections A B] [--quick] [--out benchmarks/results/scale.md]
"""
import argparse
import io
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
from common import DEFAULT_DATA, load, load_corpus, n_tokens, report, stolen, stolen_share

from sklstruct import ConstrainedTagger, StructuredPerceptronTagger, feature_set
from sklstruct.datasets import load_treebank, read_conll

#: sentences (train, test) of every data set with --quick
QUICK = (400, 200)


def subset(data, n_train, n_test):
    """Keep the first sentences of every part of a ``load`` result."""
    for part in data["y"]:
        n = n_train if part == "train" else n_test
        for key in ("X", "y", "tokens", "attrs"):
            data[key][part] = data[key][part][:n]
    return data


def crfsuite_ap(data, iterations):
    """Train CRFsuite's averaged perceptron on the attribute strings; return
    its tagger (which has read the whole model file) and the seconds of every
    iteration."""
    import pycrfsuite

    trainer = pycrfsuite.Trainer(algorithm="ap", verbose=False)
    for xseq, yseq in zip(data["attrs"]["train"], data["y"]["train"]):
        trainer.append(xseq, list(yseq))
    trainer.set_params({"max_iterations": iterations})
    tagger = pycrfsuite.Tagger()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.crfsuite")
        trainer.train(path)
        tagger.open(path)
    return tagger, [it["time"] for it in trainer.logparser.iterations]


def perceptron(data, epochs):
    model = StructuredPerceptronTagger(max_iter=epochs, random_state=0)
    return model.fit(data["X"]["train"], data["y"]["train"])


def accuracy(y_true, y_pred):
    return float(np.mean(np.concatenate(y_true) == np.concatenate(y_pred)))


def alternate(runs, repeats):
    """Seconds of every call of every ``runs`` function, round robin, after
    one warm-up call each."""
    for run in runs.values():
        run()
    times = {name: [] for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            tic = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - tic)
    return times


def speedup(times, fast, slow):
    """Median over rounds of time(slow) / time(fast)."""
    return statistics.median(s / f for f, s in zip(times[fast], times[slow]))


def seqlearn_twin(model, X):
    """seqlearn's StructuredPerceptron holding ``model``'s weights (fitted
    for one epoch on three sentences only to create its attributes)."""
    from seqlearn.perceptron import StructuredPerceptron

    rows = int(X.offsets[3])
    labels = model.classes_[np.arange(rows) % len(model.classes_)]
    twin = StructuredPerceptron(max_iter=1).fit(X.matrix[:rows], labels, X.lengths[:3])
    twin.coef_ = model.coef_  # (L, F), Fortran order: X @ coef_.T without a copy
    twin.intercept_init_ = model.start_coef_
    twin.intercept_trans_ = model.transition_coef_
    twin.intercept_final_ = model.end_coef_
    twin.classes_ = model.classes_
    return twin


def throughput(name, data, test, repeats):
    """Section A for one corpus: (rows of the tokens/s table, row of ratios)."""
    print(f"{name}: fitting sklstruct and CRFsuite", flush=True)
    model = perceptron(data, 10)
    tagger, _ = crfsuite_ap(data, 10)
    X, attrs, gold = data["X"][test], data["attrs"][test], data["y"][test]
    twin = seqlearn_twin(model, data["X"]["train"])
    ours = np.concatenate(model.set_params(n_jobs=1).predict(X))
    theirs = twin.predict(X.matrix, X.lengths)
    agree = float(np.mean(theirs == ours))
    if agree < 0.9999:
        raise AssertionError(f"{name}: seqlearn agrees with sklstruct on only "
                             f"{100 * agree:.3f}% of the tokens")
    small = model.astype("float32")
    runs = {"sklstruct n_jobs=1": lambda: model.set_params(n_jobs=1).predict(X),
            "sklstruct n_jobs=2": lambda: model.set_params(n_jobs=2).predict(X),
            "sklstruct float32": lambda: small.predict(X),
            "seqlearn": lambda: twin.predict(X.matrix, X.lengths),
            "CRFsuite ap": lambda: [tagger.tag(x) for x in attrs]}
    print(f"{name}: timing {repeats} rounds", flush=True)
    steal0, tic0 = stolen(), time.perf_counter()
    times = alternate(runs, repeats)
    steal = stolen_share(steal0, tic0)
    n = n_tokens(data, test)
    acc = {"sklstruct n_jobs=1": accuracy(gold, [ours]), "seqlearn": accuracy(gold, [theirs]),
           "sklstruct float32": accuracy(gold, small.predict(X)),
           "CRFsuite ap": accuracy(gold, runs["CRFsuite ap"]())}
    acc["sklstruct n_jobs=2"] = acc["sklstruct n_jobs=1"]
    rows = [f"| {name} | {n:,} | {system} | {n / statistics.median(t):,.0f} | "
            f"{n / min(t):,.0f} | {100 * acc[system]:.2f} |"
            for system, t in times.items()]
    one, two = "sklstruct n_jobs=1", "sklstruct n_jobs=2"
    same32 = float(np.mean(np.concatenate(small.predict(X)) == ours))
    ratios = (f"| {name} | {speedup(times, one, 'seqlearn'):.2f}x | "
              f"{speedup(times, two, 'seqlearn'):.2f}x | {speedup(times, two, one):.2f}x | "
              f"{speedup(times, one, 'CRFsuite ap'):.2f}x | {100 * agree:.4f}% | "
              f"{speedup(times, 'sklstruct float32', one):.2f}x | {100 * same32:.4f}% | "
              f"{steal:.1%} |")
    print("\n".join(rows + [ratios]), flush=True)
    return rows, ratios


def section_a(args):
    rows, ratios = [], []
    for name, corpus, test in (("CoNLL-2000", "conll2000", "test"),
                               ("CoNLL-2002 esp", "esp", "testb")):
        data = load_corpus(args.data, corpus)
        if args.quick:
            subset(data, *QUICK)
        r, ratio = throughput(name, data, test, args.throughput_repeats)
        rows += r
        ratios.append(ratio)
    return "\n".join([
        "## A. Prediction throughput\n",
        "Perceptron, 10 epochs; test sets (CoNLL-2002: testb).  seqlearn predicts with "
        "sklstruct's weights; accuracy is token accuracy against the gold labels.\n",
        "| corpus | tokens | system | median tokens/s | best tokens/s | accuracy % |",
        "|---|---|---|---|---|---|", *rows, "",
        f"Speed ratios (throughput), medians of the {args.throughput_repeats} per-round ratios; "
        "targets: n_jobs=1 / seqlearn >= 1.5x, n_jobs=2 / n_jobs=1 >= 1.7x (on an idle machine: the "
        "last column is the share of the rounds' CPU time the hypervisor gave to other "
        "guests).\n",
        "| corpus | n_jobs=1 / seqlearn | n_jobs=2 / seqlearn | n_jobs=2 / n_jobs=1 | "
        "n_jobs=1 / CRFsuite | seqlearn = sklstruct (tokens) | float32 / float64 | "
        "float32 = float64 (tokens) | CPU stolen by the host |",
        "|---|---|---|---|---|---|---|---|---|", *ratios, ""])


def words_data(train, test):
    """``load`` on (word, label) sentences: S3 features of the words only."""
    def conll(sentences):
        return io.StringIO("\n\n".join("\n".join(f"{w} {t}" for w, t in s)
                                       for s in sentences) + "\n")

    return load(conll(train), {"test": conll(test)}, feature_set("S3"))


def pos_sets(args):
    """(name, train sentences, test sentences) of (word, POS tag) pairs."""
    root = args.data / "conll2000"
    conll = [read_conll(root / f)[0] for f in ("train.txt", "test.txt")]
    trees = [[(w, t) for w, t in tree.pos() if t != "-NONE-"]
             for tree in load_treebank(args.data)]
    trees = [s for s in trees if s]
    return [("CoNLL-2000 POS", *conll), ("PTB sample POS", trees[:3000], trees[3000:])]


def pair_labels(args):
    """Data of the first 4,000 CoNLL-2000 training sentences (labels: the
    (POS, chunk) pairs) and a function giving the labels for L."""
    root = args.data / "conll2000"
    n_train, n_test = QUICK if args.quick else (4000, None)
    parts = [[s[:n] for s in read_conll(root / f)]
             for f, n in (("train.txt", n_train), ("test.txt", n_test))]
    pairs = [[[f"{p}|{c}" for (_, p), c in zip(s, l)] for s, l in zip(X, y)] for X, y in parts]
    data = words_data(*[[[(w, "_") for w, _ in s] for s in X] for X, _ in parts])
    ranked = [p for p, _ in Counter(p for s in pairs[0] for p in s).most_common()]

    def labels(L):
        keep = set(ranked[:L - 1]) if L - 1 < len(ranked) else set(ranked)
        return {part: [[p if p in keep else "OTHER" for p in s] for s in sentences]
                for part, sentences in zip(("train", "test"), pairs)}

    return data, len(ranked), labels


def many_labels(name, data, repeats, min_count):
    """Section B for one label set: a table row."""
    model = perceptron(data, 5)
    # trained and decoded with a tag dictionary
    restricted = ConstrainedTagger(StructuredPerceptronTagger(max_iter=5, random_state=0),
                                   label_dictionary=min_count)
    restricted.fit(data["X"]["train"], data["y"]["train"])
    tagger, iters = crfsuite_ap(data, 5)
    X, attrs = data["X"]["test"], data["attrs"]["test"]
    runs = {"ours": lambda: model.set_params(n_jobs=1).predict(X),
            "dict": lambda: restricted.predict(X),
            "crf": lambda: [tagger.tag(x) for x in attrs]}
    times = alternate(runs, repeats)
    epoch = {"ours": statistics.median(h["seconds"] for h in model.history_),
             "dict": statistics.median(h["seconds"] for h in restricted.estimator_.history_),
             "crf": statistics.median(iters)}
    pred = {k: statistics.median(t) for k, t in times.items()}
    n_train, n_test = n_tokens(data, "train"), n_tokens(data, "test")
    us = {k: 1e6 * epoch[k] / n_train for k in epoch}
    us_pred = {k: 1e6 * pred[k] / n_test for k in pred}
    acc = {k: 100 * accuracy(data["y"]["test"], run()) for k, run in runs.items()}
    row = (f"| {name} | {len(model.classes_)} | {n_train:,} | {n_test:,} | "
           f"{epoch['ours']:.3f} ({us['ours']:.1f}) | {epoch['crf']:.3f} ({us['crf']:.1f}) | "
           f"{epoch['ours'] / epoch['crf']:.2f} | {pred['ours']:.3f} ({us_pred['ours']:.1f}) | "
           f"{pred['crf']:.3f} ({us_pred['crf']:.1f}) | {speedup(times, 'crf', 'ours'):.2f} | "
           f"{epoch['dict']:.3f} ({us['dict']:.1f}) | {epoch['dict'] / epoch['crf']:.2f} | "
           f"{pred['dict']:.3f} ({us_pred['dict']:.1f}) | {speedup(times, 'crf', 'dict'):.2f} | "
           f"{acc['ours']:.2f} | {acc['dict']:.2f} | {acc['crf']:.2f} |")
    print(row, flush=True)
    return row


def section_b(args):
    rows = []
    for name, train, test in pos_sets(args):
        print(f"{name}: features", flush=True)
        if args.quick:
            train, test = train[:QUICK[0]], test[:QUICK[1]]
        data = words_data(train, test)
        rows.append(many_labels(name, data, args.repeats, args.dictionary))
    data, n_pairs, labels = pair_labels(args)
    for L in args.labels:
        print(f"(POS, chunk) pairs, L={L}", flush=True)
        rows.append(many_labels(f"pairs, L={L}", dict(data, y=labels(L)), args.repeats,
                                args.dictionary))
    n_train = len(data["y"]["train"])
    return "\n".join([
        "## B. Many labels\n",
        "Perceptron, 5 epochs, against CRFsuite `ap`, 5 iterations; S3 features of the words; "
        f"exact Viterbi.  The first {n_train:,} CoNLL-2000 training sentences hold "
        f"{n_pairs} distinct (POS, chunk) pairs; `pairs, L` keeps the L-1 most frequent and "
        "maps the others to OTHER (all of them when L-1 >= "
        f"{n_pairs}); the L column is the number of labels actually used.  s / epoch: median "
        "over epochs; predict: test set, n_jobs=1, median of "
        f"{args.repeats} rounds alternated with CRFsuite; (µs / token) in parentheses.  "
        "Ratios are ours / CRFsuite time (target <= 0.5 at 44 and 128 labels); the predict "
        "ratio is the median of the per-round ratios.  `dict`: the perceptron trained and "
        f"decoded with a tag dictionary (`ConstrainedTagger(label_dictionary={args.dictionary})"
        f"`: a word seen {args.dictionary} times or more takes only the labels it was seen "
        "with).\n",
        "| labels | L | train tokens | test tokens | s / epoch ours | s / epoch CRFsuite | "
        "epoch ratio | predict s ours | predict s CRFsuite | predict ratio | s / epoch dict | "
        "dict epoch ratio | predict s dict | dict predict ratio | accuracy % ours | "
        "accuracy % dict | accuracy % CRFsuite |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|", *rows, ""])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--repeats", type=int, default=7,
                        help="rounds of prediction timing in section B")
    parser.add_argument("--throughput-repeats", type=int, default=21,
                        help="rounds of section A (its ratios are medians over them)")
    parser.add_argument("--labels", type=int, nargs="+", default=[10, 44, 50, 100, 128, 200])
    parser.add_argument("--quick", action="store_true",
                        help=f"first {QUICK[0]} training and {QUICK[1]} test sentences only")
    parser.add_argument("--dictionary", type=int, default=5,
                        help="label_dictionary of the tag dictionary rows")
    parser.add_argument("--sections", nargs="+", choices=["A", "B"], default=["A", "B"])
    parser.add_argument("--out", help="also write the report (markdown) to this file")
    args = parser.parse_args(argv)
    tic = time.perf_counter()
    body = "\n".join({"A": section_a, "B": section_b}[s](args) for s in args.sections)
    body += f"\n{os.cpu_count()} cores; total run time {time.perf_counter() - tic:.0f} s.\n"
    report("Scale: throughput and many labels", "bench_scale.py", argv, body, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What the feature sets give: F1 of the plain and rich presets, with and
without Brown clusters, for the perceptron, the SWVM and the CRF.

Issue 29, items 4 and 5(b).  CoNLL-2000 (train.txt -> test.txt) and CoNLL-2002
Spanish NER (esp.train -> esp.testb, esp.testa reported as the development
score).  The clusters are :class:`sklstruct.BrownClusters` learned from the
training file's own words (no outside text, no test sentence) when the
features are fitted, through ``feature_set(name, clusters=n)`` (``min_count=3``).  The rich presets are measured without
and with the features they learn from the training labels
(``--label-features off on``: ``feature_set(name, label_dictionary=...,
gazetteer=...)``, a label dictionary and a gazetteer of the training chunks,
cross-fitted on the training sentences); the plain presets have none.  The
features are fitted with the labels (``fit_transform(X, y)``, as a Pipeline
does).  The learners run with the library's defaults (the perceptron with
``max_iter=10``), ``random_state=0``, as do the label features' folds.  Each
configuration prints one JSON line; ``--out`` writes the markdown table.

Development runs: ``--holdout N`` trains on all but the last N training
sentences and scores those instead of the test file (which is then not
read; ``--dev-only`` scores esp.testa in place of esp.testb, likewise;
``--folds K`` scores the predictions of K-fold cross-validation over the
training file, contiguous blocks, as one F1, each fold's beside it); a
learner may be given with parameters, ``crf:C=0.5`` or
``perceptron:order=2:random_state=1`` (Python literals), and
``scheme=IOBES`` trains it on IOBES labels and reads its predictions back as
IOB2; ``--min-freq`` sets the vectorizer's ``min_freq``; ``--add-templates``
adds templates to the presets' (candidate features); ``--embeddings`` adds
an :class:`sklstruct.EmbeddingFeatures` of the given parameters (a Python
dict literal, e.g. ``"{'train': 'fasttext', 'kmeans': [64, 256],
'train_params': {'min_count': 1}}"``: vectors learned from the training
file's words, ``random_state=0``).

Usage::

    python benchmarks/bench_features_accuracy.py [--data DIR] [--corpora conll2000 esp]
        [--presets plain rich] [--clusters 0 500] [--label-features off on]
        [--learners perceptron swvm crf crf:C=0.5 ...] [--holdout N] [--min-freq K]
        [--add-templates T ...] [--embeddings DICT] [--out FILE]
"""
import argparse
import ast
import json
import time
import warnings

from common import DEFAULT_DATA, feature_set_plus, report

from sklstruct import CRFTagger, EmbeddingFeatures, StructuredPerceptronTagger, SWVMTagger
from sklstruct.datasets import read_conll
from sklstruct.metrics import chunk_f1_score

CORPORA = {
    "conll2000": ("conll2000/train.txt", None, "conll2000/test.txt",
                  {"plain": "chunking", "rich": "chunking-rich"}),
    "esp": ("conll2002/esp.train", "conll2002/esp.testa", "conll2002/esp.testb",
            {"plain": "ner", "rich": "ner-rich"}),
}

LEARNERS = {
    "perceptron": lambda: StructuredPerceptronTagger(max_iter=10, random_state=0),
    "swvm": lambda: SWVMTagger(random_state=0),
    "crf": lambda: CRFTagger(),
}


def make_learner(spec):
    """``(model, scheme)`` of a learner spec: ``name[:key=value...]``."""
    name, *pairs = spec.split(":")
    params = {k: v if k == "scheme" else ast.literal_eval(v)
              for k, v in (p.split("=", 1) for p in pairs)}
    scheme = params.pop("scheme", "IOB2")
    return LEARNERS[name]().set_params(**params), scheme


def iob2_to_iobes(labels):
    """IOB2 labels as IOBES: a chunk's last token E- (S- if it has one)."""
    out = list(labels)
    for t, label in enumerate(out):
        if label != "O":
            ends = t + 1 == len(out) or out[t + 1] != "I-" + label[2:]
            if ends:
                out[t] = ("S-" if label[0] == "B" else "E-") + label[2:]
    return out


def iobes_to_iob2(labels):
    return [{"S": "B", "E": "I"}.get(label[0], label[0]) + label[1:] if label != "O" else label
            for label in labels]


def splits(data, corpus, holdout=0, dev_only=False, folds=0):
    """``(train, scored, dev)`` (each ``(X, y)``, ``dev`` or None) of each
    fit: the training file against the test file (and the development
    file), its last ``holdout`` sentences, the development file alone, or
    each of ``folds`` contiguous blocks of the training file against the
    others."""
    train, dev, test, _ = CORPORA[corpus]
    tr = read_conll(data / train)
    if folds:
        n = len(tr[0])
        cuts = [n * k // folds for k in range(folds + 1)]
        return [((tr[0][:a] + tr[0][b:], tr[1][:a] + tr[1][b:]), (tr[0][a:b], tr[1][a:b]), None)
                for a, b in zip(cuts[:-1], cuts[1:])]
    if holdout:
        return [((tr[0][:-holdout], tr[1][:-holdout]), (tr[0][-holdout:], tr[1][-holdout:]),
                 None)]
    if dev_only:
        if dev is None:
            raise SystemExit(f"--dev-only: {corpus} has no development file; hold training "
                             "sentences out with --holdout N or --folds K")
        return [(tr, read_conll(data / dev), None)]
    return [(tr, read_conll(data / test), read_conll(data / dev) if dev else None)]


def run(data, corpus, preset, n_clusters, label_features, learners, holdout=0, min_freq=1,
        added=(), dev_only=False, embeddings=None, folds=0):
    names = CORPORA[corpus][3]
    row = {"corpus": corpus, "preset": names[preset], "clusters": n_clusters,
           "label_features": label_features, "embeddings": embeddings}
    # each learner's predictions of the scored (and development) sentences of every fit,
    # scored together: with --folds, the F1 of the whole training file's predictions
    gold, gold_dev, pred, pred_dev = [], [], {n: [] for n in learners}, {n: [] for n in learners}
    fold_f1, fit_s, features_s = {n: [] for n in learners}, dict.fromkeys(learners, 0.0), 0.0
    for tr, te, dv in splits(data, corpus, holdout, dev_only, folds):
        # clusters=n: n Brown clusters learned at fit from the training words
        vectorizer = feature_set_plus(names[preset], added, clusters=n_clusters or None,
                                      label_dictionary=label_features,
                                      gazetteer=label_features, random_state=0,
                                      min_freq=min_freq,
                                      embeddings=(EmbeddingFeatures(**embeddings, random_state=0)
                                                  if embeddings else None))
        tic = time.perf_counter()
        X_train = vectorizer.fit_transform(tr[0], tr[1])
        features_s += time.perf_counter() - tic
        row["features"] = X_train.matrix.shape[1]
        X_test = vectorizer.transform(te[0])
        X_dev = vectorizer.transform(dv[0]) if dv else None
        gold += te[1]
        gold_dev += dv[1] if dv else []
        for name in learners:
            model, scheme = make_learner(name)
            iobes = scheme.upper() == "IOBES"
            back = iobes_to_iob2 if iobes else list
            tic = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")          # the CRF's ConvergenceWarning
                model.fit(X_train, [iob2_to_iobes(t) for t in tr[1]] if iobes else tr[1])
            fit_s[name] += time.perf_counter() - tic
            predicted = [back(p) for p in model.predict(X_test)]
            pred[name] += predicted
            fold_f1[name].append(round(100 * chunk_f1_score(te[1], predicted), 2))
            pred_dev[name] += [back(p) for p in model.predict(X_dev)] if dv else []
    row["features_s"] = round(features_s, 1)
    for name in learners:
        row[name] = {"test": round(100 * chunk_f1_score(gold, pred[name]), 2),
                     "dev": (round(100 * chunk_f1_score(gold_dev, pred_dev[name]), 2)
                             if gold_dev else None),
                     "fit_s": round(fit_s[name], 1)}
        if folds:
            row[name]["folds"] = fold_f1[name]
    print(json.dumps(row), flush=True)
    return row


def table(rows, learners):
    head = ("| corpus | preset | clusters | label features | features | "
            + " | ".join(learners) + " |")
    lines = [head, "|" + "---|" * (5 + len(learners))]
    for r in rows:
        cells = []
        for name in learners:
            s = r[name]
            dev = f" (dev {s['dev']:.2f})" if s["dev"] is not None else ""
            cells.append(f"{s['test']:.2f}{dev}")
        clusters = f"Brown, {r['clusters']}" if r["clusters"] else "-"
        label = "dictionary, gazetteer" if r["label_features"] else "-"
        lines.append(f"| {r['corpus']} | {r['preset']} | {clusters} | {label} | "
                     f"{r['features']:,} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=lambda p: __import__("pathlib").Path(p),
                        default=DEFAULT_DATA)
    parser.add_argument("--corpora", nargs="+", default=list(CORPORA), choices=list(CORPORA))
    parser.add_argument("--presets", nargs="+", default=["plain", "rich"],
                        choices=["plain", "rich"])
    parser.add_argument("--clusters", nargs="+", type=int, default=[0, 500])
    parser.add_argument("--label-features", nargs="+", default=["off", "on"],
                        choices=["off", "on"])
    parser.add_argument("--learners", nargs="+", default=list(LEARNERS),
                        help=f"{', '.join(LEARNERS)}, each optionally with :key=value...")
    parser.add_argument("--holdout", type=int, default=0)
    parser.add_argument("--min-freq", type=int, default=1)
    parser.add_argument("--folds", type=int, default=0,
                        help="K-fold cross-validation over the training file (contiguous "
                             "blocks; the test file is not read)")
    parser.add_argument("--dev-only", action="store_true",
                        help="score the development file (esp.testa) in place of the test "
                             "file, which is not read (CoNLL-2000 has none: --holdout)")
    parser.add_argument("--add-templates", nargs="+", default=[],
                        help="templates added to the presets' (development runs)")
    parser.add_argument("--embeddings", type=ast.literal_eval, default=None,
                        help="EmbeddingFeatures parameters, a dict literal (development runs)")
    parser.add_argument("--out")
    args = parser.parse_args()
    rows = [run(args.data, corpus, preset, c, on == "on", args.learners, args.holdout,
                args.min_freq, args.add_templates, args.dev_only, args.embeddings, args.folds)
            for corpus in args.corpora for preset in args.presets
            for on in (args.label_features if preset == "rich" else ["off"])
            for c in args.clusters]
    scored = (f"the training file, {args.folds}-fold cross-validation" if args.folds else
              f"the last {args.holdout} training sentences (trained on the others)"
              if args.holdout else "the development file (esp.testa)" if args.dev_only else
              "the test file (CoNLL-2002: esp.testb, with esp.testa in parentheses)")
    body = (f"Chunk F1 on {scored}; Brown clusters from the training file's words only "
            "(`min_count=3`); label features: the label dictionary and the gazetteer "
            "of the training labels, cross-fitted (5 folds).\n\n" + table(rows, args.learners) + "\n")
    report("Feature sets: plain and rich presets, with and without Brown clusters",
           "bench_features_accuracy.py", None, body, args.out)


if __name__ == "__main__":
    main()

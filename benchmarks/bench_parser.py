"""F1MaxMarginParser (the four losses of Table 1, the paper's and the richer
features) beside a PCFG, with gold and with predicted tags.

The max-margin parser of Bauer, Nakajima, Goernitz and Mueller, "Optimizing
for Measure of Performance in Max-Margin Parsing" (arXiv:1709.01562, 2017),
with the paper's rule-count features (``features=("rules",)``) and with the
PCFG log-probability and span features (``("rules", "pcfg", "spans")``,
Hall, Durrett and Klein 2014), beside a maximum-likelihood PCFG on the same
binarized grammar.

Data: the Penn Treebank sample (``$SKLSTRUCT_DATA/treebank/combined``),
preprocessed (function tags, null elements and X-over-X unaries removed),
sentences of at most 20 tokens.  Split by file number: train wsj_0001-0159,
dev wsj_0160-0179 (to choose C), test wsj_0180-0199.  The parsers train on
the first ``--n-train`` training sentences (file order), right factorization,
horizontal order 1, no parent annotation, and run to convergence (at most
``--max-iter`` inference passes).

Tags (``--tags``): ``gold`` gives ``(word, gold tag)`` pairs and keeps the
tags fixed (``fixed_tags=True``; the PCFG penalises other tags by
``log(1e-4)``); ``predicted`` gives words only and parses them with a tagger
(an averaged structured perceptron on word, affix and neighbour features,
trained on the training part's tags by the parser's ``fit``, ``tagger=``).

Reports on the test part P, R, F1 and exact match (EVALB/COLLINS.prm rules,
``sklstruct.parsing.parseval``), the dev F1 of every C tried, training time,
inference passes, seconds per sentence for parsing (plain CKY) and for one
loss-augmented inference (eq. 3) at sentence lengths 10, 15 and 20, and the
Wilcoxon signed-rank test of the paper on per-sentence test F1 between the
F1 and F1 (bin.) rows of one feature set.

Usage::

    python benchmarks/bench_parser.py [--data DIR] [--n-train 1401] [--max-iter 200]
        [--features rules rich] [--losses zero_one fp f1_binarized f1] [--tags gold predicted]
        [--C 0.3 1 3] [--solver 1-slack] [--n-jobs 2] [--out benchmarks/results/parser_features.md]
"""
import argparse
import platform
import time
from pathlib import Path

import numpy as np
from common import DEFAULT_DATA, in_child
from scipy.stats import wilcoxon
from sklearn.pipeline import make_pipeline

from sklstruct import (F1MaxMarginParser, PCFGParser, SequenceVectorizer,
                       StructuredPerceptronTagger)
from sklstruct.datasets import load_treebank
from sklstruct.parsing import parseval
from sklstruct.parsing.evalb import bracket_counts

LOSSES = {"zero_one": "0/1 (bin.)", "fp": "#FP (bin.)", "f1_binarized": "F1 (bin.)", "f1": "F1"}
FEATURES = {"rules": ("rules",), "rich": ("rules", "pcfg", "spans")}
LENGTHS = (10, 15, 20)
TAGGER_TEMPLATES = ["bias", "word", "lower", "suffix1", "suffix2", "suffix3", "prefix1",
                    "shape", "is_title", "has_digit", "has_hyphen", "lower[-1]", "lower[+1]",
                    "suffix2[-1]", "suffix2[+1]", "lower[-2]", "lower[+2]"]


def load(data_home, max_len):
    trees, ids = load_treebank(data_home, return_file_ids=True)
    keep = [i for i, t in enumerate(trees) if len(t.leaves()) <= max_len]
    parts = {"train": (1, 159), "dev": (160, 179), "test": (180, 199)}
    out = {name: [trees[i] for i in keep if lo <= ids[i] <= hi] for name, (lo, hi) in parts.items()}
    out["by_length"] = {L: [t for t in trees if len(t.leaves()) == L] for L in LENGTHS}
    return out


def tagger(data_home, source):
    """The tagger of the predicted-tags rows: unfitted (``source="treebank"``:
    the parser's fit trains it on the training trees' tags), or fitted on
    the POS column of CoNLL-2000's training file (WSJ sections 15-18, no
    overlap with the sample's files 0001-0199)."""
    est = make_pipeline(SequenceVectorizer(TAGGER_TEMPLATES),
                        StructuredPerceptronTagger(max_iter=10, random_state=0))
    if source == "treebank":
        return est
    from sklstruct.datasets import read_conll

    tokens, _ = read_conll(Path(data_home) / "conll2000" / "train.txt")
    return est.fit([[t[0] for t in s] for s in tokens], [[t[1] for t in s] for s in tokens])


def sentences(trees, tags):
    return [t.pos() if tags == "gold" else t.leaves() for t in trees]


def per_sentence_f1(gold, pred):
    """EVALB F1 of every sentence (None where EVALB skips it)."""
    out = []
    for g, p in zip(gold, pred):
        try:
            m, ng, npred = bracket_counts(g, p)
        except ValueError:
            out.append(None)
            continue
        out.append(1.0 if ng + npred == 0 else 2.0 * m / (ng + npred))
    return out


def timing(est, data, n_timing, tags):
    """Seconds per sentence: plain CKY parsing, and one loss-augmented
    inference with the trained weights (F1MaxMarginParser only)."""
    parse, aug = {}, {}
    for L in LENGTHS:
        trees = data["by_length"][L][:n_timing]
        X = sentences(trees, tags)
        tic = time.perf_counter()
        est.predict(X)
        parse[L] = (time.perf_counter() - tic) / len(X)
        aug[L] = None
        if isinstance(est, F1MaxMarginParser):
            prep = prepared(est, [t.pos() for t in trees], trees)
            m = len(prep["gold"])
            scores = est._current_scores()
            tic = time.perf_counter()
            for i in range(m):
                est._most_violated(i, prep, scores)
            aug[L] = (time.perf_counter() - tic) / m if m else None
    return parse, aug


def prepared(est, X, trees):
    """Loss-augmented inference data of timing sentences in the trained grammar
    (sentences whose gold tree uses a rule unseen in training are skipped)."""
    from sklstruct.parsing import binarize, preprocess
    from sklstruct.parsing.base import _int_tree

    g = est.compiled_
    kept, gold = [], []
    for tokens, tree in zip(X, trees):
        t = preprocess(tree, remove_self_unary=True)
        b = binarize(t, factor=est.factor, horizontal=est.horizontal, vertical=est.vertical)
        try:
            gold.append(g.decompose(_int_tree(b, est.grammar_.index), len(tokens)))
        except (KeyError, ValueError):
            continue
        kept.append(tokens)
    return est._training_data(kept, gold)


def run(est, data, n_train, n_timing, tags, queue):
    train = data["train"][:n_train]
    tic = time.perf_counter()
    est.fit(sentences(train, tags), train)
    fit_s = time.perf_counter() - tic
    pred = est.predict(sentences(data["test"], tags))
    out = dict(fit_s=fit_s, scores=parseval(data["test"], pred),
               per_sentence=per_sentence_f1(data["test"], pred),
               dev=parseval(data["dev"], est.predict(sentences(data["dev"], tags))),
               n_iter=getattr(est, "n_iter_", None), converged=getattr(est, "converged_", None),
               C=getattr(est, "C", None))
    out["parse"], out["aug"] = timing(est, data, n_timing, tags)
    if est.tagger_ is not None:
        gold_tags = [tag for t in data["test"] for _, tag in t.pos()]
        pred_tags = [tag for s in est.tagger_.predict([t.leaves() for t in data["test"]])
                     for tag in s]
        out["tag_accuracy"] = float(np.mean(np.array(gold_tags) == np.array(pred_tags)))
    queue.put(out)


def fmt(x):
    return "-" if x is None else f"{x:.3f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=DEFAULT_DATA)
    ap.add_argument("--n-train", type=int, default=1401)
    ap.add_argument("--max-iter", type=int, default=200)
    ap.add_argument("--features", nargs="+", default=["rules", "rich"], choices=list(FEATURES))
    ap.add_argument("--losses", nargs="+", default=list(LOSSES), choices=list(LOSSES))
    ap.add_argument("--tags", nargs="+", default=["gold", "predicted"],
                    choices=["gold", "predicted"])
    ap.add_argument("--C", type=float, nargs="+", default=[1.0],
                    help="several values: each row takes the one with the best dev F1")
    ap.add_argument("--tagger", default="conll2000", choices=["conll2000", "treebank"],
                    help="train the tagger of the predicted-tags rows on CoNLL-2000's POS "
                    "column (fitted before) or on the training trees (in the parser's fit)")
    ap.add_argument("--solver", default="1-slack", choices=["1-slack", "n-slack"])
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--n-timing", type=int, default=20)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    data = load(args.data, 20)
    n_train = min(args.n_train, len(data["train"]))
    header = [
        "# F1MaxMarginParser beside a PCFG on the Penn Treebank sample",
        "",
        f"Sentences of <= 20 tokens; train = files wsj_0001-0159 (the first {n_train} of "
        f"{len(data['train'])} sentences), dev = files wsj_0160-0179 ({len(data['dev'])} "
        f"sentences, to choose C among {', '.join(f'{c:g}' for c in args.C)}), test = files "
        f"wsj_0180-0199 ({len(data['test'])} sentences).  Gold tags: (word, tag) pairs, "
        "kept fixed; predicted tags: words only, tagged by the parser's `tagger`, an averaged "
        "perceptron " + ("trained on the POS column of CoNLL-2000's training file (WSJ sections "
                         "15-18)" if args.tagger == "conll2000" else "trained in `fit` on the "
                         "training trees' tags") + ", the tags then kept fixed as well.  Right factorization, horizontal order 1, no parent "
        f"annotation; solver {args.solver}, slack rescaling, tol 0.01, at most "
        f"{args.max_iter} inference passes, {args.n_jobs} thread(s).  Machine: "
        f"{platform.processor() or platform.machine()}, 2 cores.",
        "",
        "| features | training loss | tags | P | R | F1 | exact match | sentences scored | "
        "training s | passes (converged) | dev F1 by C | parse s/sentence at 10 / 15 / 20 "
        "tokens | loss-augmented inference s/sentence at 10 / 15 / 20 |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    rows, notes = [], []
    for tags in args.tags:
        kw = {"fixed_tags": True}
        if tags == "predicted":
            kw["tagger"] = tagger(args.data, args.tagger)
        pcfg = in_child(run, PCFGParser(tagger=kw.get("tagger")), data, n_train, args.n_timing,
                        tags)
        pcfg.update(features="-", loss="PCFG (max. likelihood)", tags=tags, dev_by_C="-")
        rows.append(pcfg)
        print("PCFG", tags, pcfg["scores"]["f1"], flush=True)
        for feat in args.features:
            for loss in args.losses:
                runs = []
                for C in args.C:
                    est = F1MaxMarginParser(C=C, loss=loss, features=FEATURES[feat],
                                            solver=args.solver, max_iter=args.max_iter,
                                            n_jobs=args.n_jobs, **kw)
                    r = in_child(run, est, data, n_train, args.n_timing, tags)
                    runs.append(r)
                    print(feat, loss, tags, f"C={C:g}", "dev", r["dev"]["f1"], "test",
                          r["scores"]["f1"], f"{r['fit_s']:.1f}s", r["n_iter"], flush=True)
                best = max(runs, key=lambda r: r["dev"]["f1"])
                best.update(features=feat, loss=LOSSES[loss], tags=tags, dev_by_C=", ".join(
                    f"{r['C']:g}: {100 * r['dev']['f1']:.2f}" for r in runs))
                best["name"] = (feat, loss, tags)
                rows.append(best)
    lines = list(header)
    for r in rows:
        s = r["scores"]
        it = "-" if r["n_iter"] is None else f"{r['n_iter']} ({'yes' if r['converged'] else 'no'})"
        C = "" if r.get("C") is None else f", C={r['C']:g}"
        lines.append(
            f"| {r['features']} | {r['loss']}{C} | {r['tags']} | {100 * s['precision']:.2f} | "
            f"{100 * s['recall']:.2f} | {100 * s['f1']:.2f} | {100 * s['exact_match']:.2f} | "
            f"{s['n_valid']} of {s['n_sentences']} | {r['fit_s']:.1f} | {it} | {r['dev_by_C']} | "
            + " / ".join(fmt(r["parse"][L]) for L in LENGTHS) + " | "
            + " / ".join(fmt(r["aug"][L]) for L in LENGTHS) + " |")
    accs = {r["tags"]: r["tag_accuracy"] for r in rows if "tag_accuracy" in r}
    if accs:
        notes.append(f"Tagging accuracy of the tagger on the test sentences: "
                     f"{100 * accs['predicted']:.2f}%.")
    by_name = {r["name"]: r for r in rows if "name" in r}
    for feat in args.features:
        for tags in args.tags:
            a, b = by_name.get((feat, "f1", tags)), by_name.get((feat, "f1_binarized", tags))
            if a is None or b is None:
                continue
            pairs = [(x, y) for x, y in zip(a["per_sentence"], b["per_sentence"])
                     if x is not None and y is not None]
            x, y = np.array(pairs).T
            diff = x - y
            if np.any(diff != 0):
                stat = wilcoxon(x, y, zero_method="wilcox")
                notes.append(
                    f"Wilcoxon signed-rank test, per-sentence test F1 of F1 against F1 (bin.) "
                    f"training ({feat} features, {tags} tags): {int(np.sum(diff > 0))} sentences "
                    f"better, {int(np.sum(diff < 0))} worse, {int(np.sum(diff == 0))} equal "
                    f"(not counted); W = {stat.statistic:.1f}, p = {stat.pvalue:.3g}.")
    lines += [""] + [n + "\n" for n in notes]
    lines += ["Sentences scored: EVALB (COLLINS.prm) excludes a sentence whose predicted tags "
              "disagree with the gold ones on which tokens are punctuation."]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()

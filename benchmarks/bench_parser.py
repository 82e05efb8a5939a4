"""F1MaxMarginParser (four losses, Table 1 of Bauer et al. 2017) beside a PCFG.

The max-margin parser with the four losses of Table 1 of Bauer, Nakajima,
Goernitz and Mueller, "Optimizing for Measure of Performance in Max-Margin
Parsing" (arXiv:1709.01562, 2017), beside a maximum-likelihood PCFG on the
same binarized grammar.

Data: the Penn Treebank sample (``$SKLSTRUCT_DATA/treebank/combined``),
preprocessed (function tags, null elements and X-over-X unaries removed),
sentences of at most 20 tokens.  Split by file number: train wsj_0001-0159,
dev wsj_0160-0179 (unused: C is fixed, not tuned), test wsj_0180-0199.  The
parsers train on the first ``--n-train`` training sentences (file order) and
are given the gold POS tags as ``(word, tag)`` pairs (``--words``: words
only), right factorization, horizontal order 1, no parent annotation; the
cutting-plane training runs to convergence (at most ``--max-iter``
iterations).

Reports on the test part P, R, F1 and exact match (EVALB/COLLINS.prm rules,
``sklstruct.parsing.parseval``), training time, cutting-plane iterations, and
seconds per sentence for parsing (plain CKY) and for one loss-augmented
inference (eq. 3) at sentence lengths 10, 15 and 20 (sentences of exactly that
length from the whole sample, up to ``--n-timing`` each); then the training time
of the ``f1`` loss for growing training sets, each run to convergence.

Usage::

    python benchmarks/bench_parser.py [--data DIR] [--n-train 200] [--max-iter 100] [--C 1 10 100]
        [--words] [--fixed-tags] [--n-jobs 2] [--growth 50 100] [--out benchmarks/results/parser.md]
"""
import argparse
import platform
import time
from pathlib import Path

import numpy as np
from common import DEFAULT_DATA, in_child

from sklstruct import F1MaxMarginParser, PCFGParser
from sklstruct.parsing import load_treebank, parseval

LOSSES = [("0/1 (bin.)", "zero_one"), ("#FP (bin.)", "fp"), ("F1 (bin.)", "f1_binarized"),
          ("F1", "f1")]
LENGTHS = (10, 15, 20)


def load(data_home, max_len):
    trees, ids = load_treebank(data_home, return_file_ids=True)
    keep = [i for i, t in enumerate(trees) if len(t.leaves()) <= max_len]
    parts = {"train": (1, 159), "dev": (160, 179), "test": (180, 199)}
    out = {name: [trees[i] for i in keep if lo <= ids[i] <= hi] for name, (lo, hi) in parts.items()}
    out["by_length"] = {L: [t for t in trees if len(t.leaves()) == L] for L in LENGTHS}
    return out


def sentences(trees, tagged):
    return [t.pos() if tagged else t.leaves() for t in trees]


def timing(est, data, n_timing, tagged):
    """Seconds per sentence: plain CKY parsing, and one loss-augmented
    inference with the trained weights (F1MaxMarginParser only)."""
    parse, aug = {}, {}
    for L in LENGTHS:
        trees = data["by_length"][L][:n_timing]
        if not trees:
            parse[L] = aug[L] = None
            continue
        X = sentences(trees, tagged)
        tic = time.perf_counter()
        est.predict(X)
        parse[L] = (time.perf_counter() - tic) / len(X)
        if isinstance(est, F1MaxMarginParser):
            prep = clone_prepared(est, X, trees)
            m = len(prep["gold"])
            scores = est._current_scores()
            tic = time.perf_counter()
            for i in range(m):
                est._most_violated(i, prep, scores)
            aug[L] = (time.perf_counter() - tic) / m if m else None
    return parse, aug


def clone_prepared(est, X, trees):
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


def run(name, est, data, n_train, n_timing, tagged, queue):
    train = data["train"][:n_train]
    X = sentences(train, tagged)
    tic = time.perf_counter()
    est.fit(X, train)
    fit_s = time.perf_counter() - tic
    test = data["test"]
    scores = parseval(test, est.predict(sentences(test, tagged)))
    dev = parseval(data["dev"], est.predict(sentences(data["dev"], tagged)))
    parse, aug = timing(est, data, n_timing, tagged)
    queue.put(dict(name=name, fit_s=fit_s, scores=scores, dev=dev, parse=parse, aug=aug,
                   C=getattr(est, "C", None),
                   n_iter=getattr(est, "n_iter_", None),
                   converged=getattr(est, "converged_", None),
                   n_constraints=(est.history_[-1]["constraints"] if hasattr(est, "history_")
                                  else None),
                   grammar=(len(est.grammar_.symbols), len(est.compiled_.binary),
                            len(est.compiled_.unary), est.compiled_.n_chains,
                            est.max_unary_chain_)))


def growth(data, sizes, args, queue):
    rows = []
    for n in sizes:
        train = data["train"][:n]
        est = F1MaxMarginParser(C=args.C[0], loss="f1", max_iter=args.max_iter, n_jobs=args.n_jobs,
                                fixed_tags=args.fixed_tags)
        tic = time.perf_counter()
        est.fit(sentences(train, not args.words), train)
        total = time.perf_counter() - tic
        lengths = np.array([len(t.leaves()) for t in train])
        rows.append(dict(n=n, mean_len=lengths.mean(), fit_s=total, n_iter=est.n_iter_,
                         converged=est.converged_, per_iter=[h["seconds"] for h in est.history_]))
    queue.put(rows)


def fmt(x):
    return "-" if x is None else f"{x:.3f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=DEFAULT_DATA)
    ap.add_argument("--n-train", type=int, default=200)
    ap.add_argument("--max-iter", type=int, default=100)
    ap.add_argument("--words", action="store_true", help="words only, no gold POS tags")
    ap.add_argument("--fixed-tags", action="store_true",
                    help="F1MaxMarginParser(fixed_tags=True): keep the given tags")
    ap.add_argument("--C", type=float, nargs="+", default=[10.0],
                    help="several values: each loss takes the one with the best dev F1")
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--n-timing", type=int, default=20)
    ap.add_argument("--growth", type=int, nargs="*", default=[50, 100])
    ap.add_argument("--losses", nargs="*", default=[loss for _, loss in LOSSES])
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    data = load(args.data, 20)
    n_train = min(args.n_train, len(data["train"]))
    lines = [
        "# F1MaxMarginParser (Bauer et al. 2017, Table 1) on the Penn Treebank sample",
        "",
        f"Sentences of <= 20 tokens; train = files wsj_0001-0159 ({len(data['train'])} "
        f"sentences, of which the first {n_train} are used), test = files wsj_0180-0199 "
        f"({len(data['test'])} sentences), dev = files wsj_0160-0179 "
        f"({len(data['dev'])} sentences).  "
        + ("Words only (no gold tags).  " if args.words else
           "Input: (word, gold POS tag) pairs"
           + (", kept fixed (fixed_tags=True).  " if args.fixed_tags else
              ", the tag a lexical feature.  "))
        + f"Binarization: right factorization, horizontal order 1, no parent "
        f"annotation.  "
        + (f"C = {args.C[0]:g} for every loss (not tuned)" if len(args.C) == 1 else
           "C chosen per loss by dev F1 among " + ", ".join(f"{c:g}" for c in args.C))
        + f", at most {args.max_iter} "
        f"cutting-plane iterations (n-slack, slack rescaling, tol 0.01), "
        f"{args.n_jobs} thread{'s' if args.n_jobs > 1 else ''} for the loss-augmented inference.  Machine: "
        f"{platform.processor() or platform.machine()}, 2 cores shared with other jobs.",
        "",
        "| training loss | P | R | F1 | exact match | sentences scored | training s | "
        "iterations (converged) | parse s/sentence at 10 / 15 / 20 tokens | "
        "loss-augmented inference s/sentence at 10 / 15 / 20 |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    tagged = not args.words
    rows = [in_child(run, "PCFG (max. likelihood)", PCFGParser(), data, n_train, args.n_timing,
                     tagged),
            in_child(run, "PCFG, all training sentences", PCFGParser(), data, len(data["train"]),
                     args.n_timing, tagged)]
    dev_lines = []
    for title, loss in LOSSES:
        if loss in args.losses:
            runs = []
            for C in args.C:
                est = F1MaxMarginParser(C=C, loss=loss, max_iter=args.max_iter,
                                        n_jobs=args.n_jobs, fixed_tags=args.fixed_tags)
                runs.append(in_child(run, title, est, data, n_train, args.n_timing, tagged))
                print(title, f"C={C:g}", "dev", runs[-1]["dev"]["f1"], "test",
                      runs[-1]["scores"]["f1"], runs[-1]["fit_s"], flush=True)
            best = max(runs, key=lambda r: r["dev"]["f1"])
            if len(runs) > 1:
                best["name"] = f"{title}, C={best['C']:g}"
                dev_lines.append(f"| {title} | " + " | ".join(
                    f"{100 * r['dev']['f1']:.2f} / {100 * r['scores']['f1']:.2f}" for r in runs)
                    + " |")
            rows.append(best)
    for r in rows:
        s = r["scores"]
        it = "-" if r["n_iter"] is None else f"{r['n_iter']} ({'yes' if r['converged'] else 'no'})"
        parse = " / ".join(fmt(r["parse"][L]) for L in LENGTHS)
        aug = " / ".join(fmt(r["aug"].get(L)) for L in LENGTHS)
        lines.append(f"| {r['name']} | {100 * s['precision']:.2f} | {100 * s['recall']:.2f} | "
                     f"{100 * s['f1']:.2f} | {100 * s['exact_match']:.2f} | "
                     f"{s['n_valid']} of {s['n_sentences']} | {r['fit_s']:.1f} | "
                     f"{it} | {parse} | {aug} |")
    lines += ["", "Sentences scored: EVALB (COLLINS.prm) excludes a sentence whose predicted "
              "tags disagree with the gold ones on which tokens are punctuation."]
    if dev_lines:
        lines += ["", "Dev / test F1 by C (the row above is the C with the best dev F1):", "",
                  "| training loss | " + " | ".join(f"C={c:g}" for c in args.C) + " |",
                  "|---|" + "---|" * len(args.C)] + dev_lines
    g = rows[0]["grammar"]
    lines += ["", f"Grammar from {n_train} sentences: {g[0]} symbols, {g[1]} binary rules, "
              f"{g[2]} unary rules, {g[3]} unary chains (identity included) of at most {g[4]} "
              "rules."]
    if args.growth:
        grow = in_child(growth, data, args.growth, args)
        lines += ["", "Training time of loss `f1` against the number of training sentences "
                  "(each run to convergence or the iteration cap; later iterations cost more "
                  "as the weights sharpen the (tp, fp) tables):", "",
                  "| sentences | mean length | fit s | iterations (converged) | "
                  "s per iteration (first incl. setup, last) |",
                  "|---|---|---|---|---|"]
        for r in grow:
            per = np.diff([0.0] + r["per_iter"])
            lines.append(f"| {r['n']} | {r['mean_len']:.1f} | {r['fit_s']:.1f} | "
                         f"{r['n_iter']} ({'yes' if r['converged'] else 'no'}) | "
                         f"{per[0]:.1f}, {per[-1]:.1f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()

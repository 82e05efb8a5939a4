"""The training losses of Table 1 of Bauer et al. (2017) at the target
configuration of issue 31: 0/1 (bin.), F1 (bin.) and F1 on the unbinarized
trees, with the paper's features and with the default ones.

Bauer, Nakajima, Goernitz and Mueller, "Optimizing for Measure of
Performance in Max-Margin Parsing" (arXiv:1709.01562, 2017), section 3:
C chosen per loss by cross-validation over {1, 10, ..., 10^5}, EVALB
precision / recall / F1 on the unbinarized test trees, and the paired
Wilcoxon signed-rank test over per-sentence F1.

Data: the Penn Treebank sample (``$SKLSTRUCT_DATA/treebank``), sentences of
at most ``--max-len`` tokens (default 15), ``(word, gold tag)`` input with the
tags kept fixed (``fixed_tags=True``).  Train = files wsj_0001-0159, test =
files wsj_0160-0199.  C is chosen per (features, loss) on a dev split of the
training files: fit on files 1-139, score EVALB F1 on files 140-159, for
every C of ``--C``; the best C is then refitted on all training files and
scored on the test files.  One process, one thread (``--n-jobs``): the
machine is shared.

Every fit's scores are kept in ``--cache`` (JSON, keyed by the run), so an
interrupted run resumes and ``--table-only`` rewrites the table.

Usage::

    python benchmarks/bench_parser_losses.py [--max-len 15] [--C 1 10 100 1000]
        [--features rules rich] [--losses zero_one f1_binarized f1]
        [--out benchmarks/results/parser_losses.md]
"""
import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np
from common import DEFAULT_DATA

from sklstruct import F1MaxMarginParser
from sklstruct.datasets import load_treebank
from sklstruct.parsing import parseval
from sklstruct.stats import sentence_bracket_counts, wilcoxon_f1_test

LOSSES = {"zero_one": "0/1 (bin.)", "fp": "#FP (bin.)", "f1_binarized": "F1 (bin.)", "f1": "F1"}
FEATURES = {"rules": ("rules",), "rich": ("rules", "pcfg", "spans")}
HERE = Path(__file__).resolve().parent


def load(data_home, max_len):
    trees, ids = load_treebank(data_home, return_file_ids=True)
    keep = [i for i, t in enumerate(trees) if len(t.leaves()) <= max_len]
    parts = {"inner": (1, 139), "dev": (140, 159), "train": (1, 159), "test": (160, 199)}
    return {name: [trees[i] for i in keep if lo <= ids[i] <= hi]
            for name, (lo, hi) in parts.items()}


def raw_span_labels(grammar):
    """The bracket labels of the "f1" loss before issue 31 (ADVP != PRT):
    ``--raw-spans`` replaces ``sklstruct.parsing.base._evalb_labels`` with
    this, to measure what the change did."""
    from sklstruct.parsing.base import _ROOT_LABELS

    base = np.asarray(grammar.base, dtype=np.int64)
    counted = base >= 0
    for s, b in enumerate(base):
        if b >= 0 and grammar.base_labels[b] in _ROOT_LABELS:
            counted[s] = False
    return base, counted


def fit_score(feat, loss, C, train, evaluate, args):
    if args.raw_spans:
        import sklstruct.parsing.base

        sklstruct.parsing.base._evalb_labels = raw_span_labels
    est = F1MaxMarginParser(C=C, loss=loss, features=FEATURES[feat], fixed_tags=True,
                            max_iter=args.max_iter, tol=args.tol, n_jobs=args.n_jobs)
    tic = time.perf_counter()
    est.fit([t.pos() for t in train], train)
    fit_s = time.perf_counter() - tic
    pred = est.predict([t.pos() for t in evaluate])
    counts, scored = sentence_bracket_counts(evaluate, pred, return_scored=True)
    s = parseval(evaluate, pred)
    return {"f1": s["f1"], "precision": s["precision"], "recall": s["recall"],
            "exact_match": s["exact_match"], "n_valid": s["n_valid"], "fit_s": fit_s,
            "n_iter": int(est.n_iter_), "converged": bool(est.converged_),
            "counts": counts.tolist(), "scored": scored.tolist()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=DEFAULT_DATA)
    ap.add_argument("--max-len", type=int, default=15)
    ap.add_argument("--max-iter", type=int, default=200)
    ap.add_argument("--features", nargs="+", default=["rules", "rich"], choices=list(FEATURES))
    ap.add_argument("--losses", nargs="+", default=["zero_one", "f1_binarized", "f1"],
                    choices=list(LOSSES))
    ap.add_argument("--C", type=float, nargs="+", default=[1.0, 10.0, 100.0, 1000.0])
    ap.add_argument("--n-train", type=int, default=None,
                    help="train the test fits on the first N training sentences (a learning "
                    "curve point; with one C)")
    ap.add_argument("--tol", type=float, default=0.01)
    ap.add_argument("--raw-spans", action="store_true",
                    help="train with the labels of the f1 loss before issue 31 (ADVP != PRT)")
    ap.add_argument("--n-jobs", type=int, default=1)
    ap.add_argument("--tag", default="", help="a label of the code version, kept in the cache key")
    ap.add_argument("--cache", default=str(HERE / "results" / "parser_losses.json"))
    ap.add_argument("--table-only", action="store_true")
    ap.add_argument("--out", default=str(HERE / "results" / "parser_losses.md"))
    args = ap.parse_args()

    data = load(args.data, args.max_len)
    cache_path = Path(args.cache)
    cache = json.loads(cache_path.read_text()) if cache_path.exists() else {}

    def get(feat, loss, C, split):
        key = f"{args.tag}|{args.max_len}|{feat}|{loss}|{C:g}|{split}"
        if args.tol != 0.01:
            key += f"|tol={args.tol:g}"
        if args.raw_spans:
            key += "|raw"
        if args.n_train is not None:
            key += f"|n={args.n_train}"
        if key not in cache:
            if args.table_only:
                return None
            train, ev = (data["inner"], data["dev"]) if split == "dev" else (
                data["train"][:args.n_train], data["test"])
            cache[key] = fit_score(feat, loss, C, train, ev, args)
            cache_path.write_text(json.dumps(cache))
            r = cache[key]
            print(f"{feat} {loss} C={C:g} {split}: F1 {100 * r['f1']:.2f} "
                  f"({r['fit_s']:.0f} s, {r['n_iter']} passes)", flush=True)
        return cache[key]

    rows = {}
    for feat in args.features:
        for loss in args.losses:
            if len(args.C) == 1:        # nothing to choose: no dev fit
                best, dev = args.C[0], {}
            else:
                dev = {C: get(feat, loss, C, "dev") for C in args.C}
                done = {C: r for C, r in dev.items() if r is not None}
                if not done:
                    continue
                best = max(done, key=lambda C: done[C]["f1"])
            rows[feat, loss] = (best, dev, get(feat, loss, best, "test"))

    lines = [
        f"# F1MaxMarginParser: the training losses of Table 1 (Bauer et al. 2017), "
        f"sentences <= {args.max_len} tokens",
        "",
        f"Penn Treebank sample, sentences of <= {args.max_len} tokens, (word, gold tag) input "
        f"with the tags fixed.  Train = files wsj_0001-0159 ({len(data['train'])} sentences), "
        f"test = files wsj_0160-0199 ({len(data['test'])} sentences).  C chosen per row on a "
        f"dev split of the training files (fit on files 1-139, {len(data['inner'])} sentences; "
        f"EVALB F1 on files 140-159, {len(data['dev'])} sentences) among "
        f"{', '.join(f'{c:g}' for c in args.C)}, then refitted on all training files.  "
        f"1-slack cutting planes, slack rescaling, tol {args.tol:g}, at most {args.max_iter} inference "
        f"passes, {args.n_jobs} thread(s); machine: {platform.machine()}, 2 cores shared with "
        "other jobs.  EVALB (COLLINS.prm) scores.",
        "",
        "| features | training loss | C (dev F1 by C) | P | R | F1 | exact match | "
        "training s | passes (converged) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for (feat, loss), (best, dev, r) in rows.items():
        if r is None:
            continue
        by_c = ", ".join(f"{C:g}: {100 * d['f1']:.2f}" for C, d in dev.items() if d)
        lines.append(
            f"| {feat} | {LOSSES[loss]} | {best:g} ({by_c or 'fixed'}) | {100 * r['precision']:.2f} | "
            f"{100 * r['recall']:.2f} | {100 * r['f1']:.2f} | {100 * r['exact_match']:.2f} | "
            f"{r['fit_s']:.0f} | {r['n_iter']} ({'yes' if r['converged'] else 'no'}) |")
    lines += ["", "Paired Wilcoxon signed-rank test over per-sentence test F1 "
              "(`sklstruct.stats.wilcoxon_f1_test`, two-sided; sentences EVALB scores for "
              "both), F1 against each other loss:", "",
              "| features | F1 against | F1 - other (points) | sentences better / worse / equal "
              "| W | p |", "|---|---|---|---|---|---|"]
    for feat in args.features:
        a = rows.get((feat, "f1"))
        if a is None or a[2] is None:
            continue
        for other in args.losses:
            b = rows.get((feat, other))
            if other == "f1" or b is None or b[2] is None:
                continue
            ca, cb = np.array(a[2]["counts"]), np.array(b[2]["counts"])
            sc = np.array(a[2]["scored"]) & np.array(b[2]["scored"])
            t = wilcoxon_f1_test(ca, cb, scored=sc)
            fa = np.where(ca[:, 1] + ca[:, 2] > 0, 2 * ca[:, 0] / np.maximum(ca[:, 1] + ca[:, 2], 1), 1)
            fb = np.where(cb[:, 1] + cb[:, 2] > 0, 2 * cb[:, 0] / np.maximum(cb[:, 1] + cb[:, 2], 1), 1)
            d = (fa - fb)[sc]
            lines.append(f"| {feat} | {LOSSES[other]} | "
                         f"{100 * (a[2]['f1'] - b[2]['f1']):+.2f} | {int((d > 0).sum())} / "
                         f"{int((d < 0).sum())} / {int((d == 0).sum())} | {t.statistic:.1f} | "
                         f"{t.pvalue:.3g} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()

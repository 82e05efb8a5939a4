"""k-best SDM and one-pass k-best LaRank beside the online learners (Mancev & Todorovic, Fig. 3, Table 1).

On CoNLL-2000 chunking (full train, official test) and CoNLL-2002 Spanish NER
(train; testa to choose C; testb for the score): SDM for k in {1, 2, 5, 10}
(``--epochs`` passes), LaRank in one pass for k in {1, 5} and n_R in
{0, 1, 5, 10} (mean and standard deviation over ``--seeds`` random seeds, as
the paper's Fig. 3), and 1-best PA and k-best MIRA (k = 1, 5) on the same
features for reference.  C is chosen per learner family among 0.01, 0.1, 1
by F1 on a development set: testa for Spanish; for CoNLL-2000 (which has
none) the last 1,000 training sentences, trained on the others.  Reports
chunk F1, training seconds (total and per pass), support vectors and
sequences held at the end, and peak memory; each model runs in its own
forked process.

Usage::

    python benchmarks/bench_dual.py [--data DIR] [--epochs 10] [--seeds 3] [--out-dir DIR]
"""
import argparse
import sys
import time

import numpy as np
from common import DEFAULT_DATA, in_child, load_corpus, n_tokens, peak_mb, rss_mb, write_tables

from sklstruct import KBestMIRATagger, LaRankTagger, PassiveAggressiveTagger, SDMTagger
from sklstruct.metrics import chunk_report

GRID = [0.01, 0.1, 1.0]


def fit_score(data, estimator, train, test, queue):
    """Fit on ``train`` (a slice of the training sentences or "all"), score on ``test``."""
    X, y = data["X"]["train"], data["y"]["train"]
    if train != "all":
        X, y = X[train], y[train]
    base = rss_mb()
    tic = time.perf_counter()
    estimator.fit(X, y)
    fit_s = time.perf_counter() - tic
    if isinstance(test, slice):
        X_test, y_test = data["X"]["train"][test], data["y"]["train"][test]
    else:
        X_test, y_test = data["X"][test], data["y"][test]
    f1 = chunk_report(y_test, estimator.predict(X_test)).f1
    queue.put(dict(f1=f1, fit_s=fit_s, passes=estimator.n_iter_,
                   pass_s=float(np.mean([h["seconds"] for h in estimator.history_])),
                   n_support=getattr(estimator, "n_support_", None),
                   n_sequences=(estimator._dual.n_sequences if hasattr(estimator, "_dual")
                                else None),
                   mem_mb=peak_mb() - base))


def choose_C(data, make, dev):
    """C among GRID by F1 on the development split ``dev`` = (train, test)."""
    scores = {C: in_child(fit_score, data, make(C), *dev)["f1"] for C in GRID}
    best = max(scores, key=scores.get)
    return best, scores


def run(data, title, test, dev, epochs, seeds):
    families = {
        "PA": lambda C: PassiveAggressiveTagger(k=1, C=C, max_iter=epochs, random_state=0),
        "MIRA": lambda C: KBestMIRATagger(k=1, C=C, max_iter=epochs, random_state=0),
        "SDM": lambda C: SDMTagger(k=1, C=C, max_iter=epochs, random_state=0),
        "LaRank": lambda C: LaRankTagger(k=1, n_reprocess=1, C=C, random_state=0),
    }
    chosen = {}
    for fam, make in families.items():
        chosen[fam], scores = choose_C(data, make, dev)
        print(f"  {fam}: dev F1 by C {({c: round(100 * f, 2) for c, f in scores.items()})} "
              f"-> C={chosen[fam]}", flush=True)
    configs = [(f"PA k=1 ({epochs} epochs)", PassiveAggressiveTagger(
                    k=1, C=chosen["PA"], max_iter=epochs, random_state=0), 1)]
    configs += [(f"MIRA k={k} ({epochs} epochs)", KBestMIRATagger(
                    k=k, C=chosen["MIRA"], max_iter=epochs, random_state=0), 1) for k in (1, 5)]
    configs += [(f"SDM k={k} ({epochs} passes)", SDMTagger(
                    k=k, C=chosen["SDM"], max_iter=epochs, random_state=0), 1)
                for k in (1, 2, 5, 10)]
    configs += [(f"LaRank k={k} n_R={r} (1 pass)", LaRankTagger(
                    k=k, n_reprocess=r, C=chosen["LaRank"], random_state=None), seeds)
                for k in (1, 5) for r in (0, 1, 5, 10)]
    rows = []
    for name, model, n_runs in configs:
        runs = []
        for seed in range(n_runs):
            if n_runs > 1:
                model.set_params(random_state=seed)
            runs.append(in_child(fit_score, data, model, "all", test))
        row = {key: runs[0][key] for key in runs[0]}
        f1s = np.array([r["f1"] for r in runs])
        row.update(name=name, f1=f1s.mean(), f1_std=f1s.std() if n_runs > 1 else None,
                   fit_s=float(np.mean([r["fit_s"] for r in runs])),
                   pass_s=float(np.mean([r["pass_s"] for r in runs])), runs=n_runs)
        rows.append(row)
        std = "" if row["f1_std"] is None else f" +- {100 * row['f1_std']:.2f}"
        print(f"  {name}: F1 {100 * row['f1']:.2f}{std}, {row['fit_s']:.1f} s", flush=True)
    header = (f"## {title}\n\n{len(data['y']['train'])} training sentences "
              f"({n_tokens(data, 'train')} tokens), {n_tokens(data, test)} {test} tokens, "
              f"{data['n_features']} features.  C per family (chosen on the development set): "
              + ", ".join(f"{fam} {C}" for fam, C in chosen.items()) + ".\n\n")
    lines = ["| model | chunk F1 | training s | s / pass | support vectors | sequences held "
             "| peak memory added (MB) |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        f1 = f"{100 * r['f1']:.2f}" + ("" if r["f1_std"] is None
                                        else f" +- {100 * r['f1_std']:.2f} ({r['runs']} seeds)")
        sv = "-" if r["n_support"] is None else f"{r['n_support']:,}"
        seqs = "-" if r["n_sequences"] is None else f"{r['n_sequences']:,}"
        lines.append(f"| {r['name']} | {f1} | {r['fit_s']:.1f} | {r['pass_s']:.3f} | {sv} | "
                     f"{seqs} | {r['mem_mb']:.0f} |")
    out = header + "\n".join(lines)
    print(out, flush=True)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=DEFAULT_DATA)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--corpus", choices=["conll2000", "conll2002_esp", "both"], default="both")
    parser.add_argument("--out-dir", help="write one markdown table per corpus here")
    args = parser.parse_args(argv)
    tables = {}
    if args.corpus in ("conll2000", "both"):
        data = load_corpus(args.data, "conll2000")
        n = len(data["y"]["train"])
        dev = (slice(0, n - 1000), slice(n - 1000, n))
        tables["conll2000"] = run(data, "CoNLL-2000 chunking", "test", dev, args.epochs,
                                  args.seeds)
        del data
    if args.corpus in ("conll2002_esp", "both"):
        data = load_corpus(args.data, "conll2002_esp")
        tables["conll2002_esp"] = run(data, "CoNLL-2002 Spanish NER (testb)", "testb",
                                      ("all", "testa"), args.epochs, args.seeds)
    write_tables(args.out_dir, "dual", tables)
    return 0


if __name__ == "__main__":
    sys.exit(main())

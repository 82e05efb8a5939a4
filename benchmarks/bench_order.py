"""First- against second-order chains: PA and k-best MIRA with ``order=1`` and
``order=2`` on CoNLL-2000 chunking and CoNLL-2002 Spanish NER.

Same features as ``bench_online.py`` (``common.load_corpus``: CRFsuite's
chunking templates on CoNLL-2000, spelling/POS templates on Spanish), full
training sets, scored on CoNLL-2000 test and Spanish testb; C = 1 on
CoNLL-2000 and 0.1 on Spanish (the values ``bench_online.py`` uses: 0.1 is its
choice on testa).  Each fit runs in its own forked process, ``--seeds``
shuffling seeds per configuration; reported: chunk F1 (mean and standard
deviation over seeds), seconds per epoch, the second-order epoch time as a
multiple of the first-order one (the target of issue 12: at most L, the
number of labels), and Viterbi decoding speed (``predict`` on prepared
features, tokens/s), whose cost per token grows from O(L^2) to O(L^3).

``--features swvm`` uses the templates of Ringel, Dror & Reichart
(Appendix B) instead, whose model is second order in the paper.

Usage::

    python benchmarks/bench_order.py [--data DIR] [--epochs 10] [--seeds 3]
        [--corpus conll2000 conll2002_esp] [--features default|swvm] [--out FILE]
"""
import argparse
import sys
from pathlib import Path

import numpy as np

from common import DEFAULT_DATA, in_child, load, load_corpus, report, run_estimator

from sklstruct import KBestMIRATagger, PassiveAggressiveTagger, feature_set

CORPORA = {"conll2000": ("CoNLL-2000 chunking", "test", 1.0),
           "conll2002_esp": ("CoNLL-2002 Spanish NER", "testb", 0.1)}


def learners(C, epochs, seed):
    for name, cls, k in [("PA k=1", PassiveAggressiveTagger, 1), ("MIRA k=5", KBestMIRATagger, 5)]:
        for order in (1, 2):
            yield name, order, cls(k=k, C=C, order=order, max_iter=epochs, random_state=seed)


def run(corpus, args):
    title, test, C = CORPORA[corpus]
    if args.features == "swvm":
        root = Path(args.data)
        train, tests = ((root / "conll2000" / "train.txt", {"test": root / "conll2000" / "test.txt"})
                        if corpus == "conll2000" else
                        (root / "conll2002" / "esp.train", {"testb": root / "conll2002" / "esp.testb"}))
        data = load(train, tests, feature_set("swvm"))
        title += ', feature_set("swvm")'
    else:
        data = load_corpus(args.data, corpus)
    L = len({label for seq in data["y"]["train"] for label in seq})
    rows = {}
    for seed in range(args.seeds):
        for name, order, model in learners(C, args.epochs, seed):
            r = in_child(run_estimator, data, f"{name} order {order}", model, test)
            rows.setdefault((name, order), []).append(r)
            print(f"[{corpus}] {name}, order {order}, seed {seed}: F1 {100 * r['f1']:.2f}, "
                  f"{r['epoch_s']:.3f} s/epoch, predict {r['pred_tps']:,.0f} tokens/s",
                  flush=True)
    lines = [f"## {title}", "",
             f"{len(data['y']['train'])} training sentences, {data['n_features']} features, "
             f"L = {L} labels, {args.epochs} epochs, C = {C}, {args.seeds} seeds; F1 on {test}.",
             "",
             "| learner | order | chunk F1 (mean) | F1 std | per seed | s / epoch | "
             "epoch vs order 1 | predict tokens/s | predict time vs order 1 |",
             "|---|---|---|---|---|---|---|---|---|"]
    summary = {}
    for (name, order), rs in rows.items():
        f1 = np.array([r["f1"] for r in rs]) * 100
        epoch = float(np.mean([r["epoch_s"] for r in rs]))
        tps = float(np.mean([r["pred_tps"] for r in rs]))
        summary[(name, order)] = (f1.mean(), epoch, tps)
        base = summary[(name, 1)]
        lines.append(f"| {name} | {order} | {f1.mean():.2f} | {f1.std():.2f} | "
                     + ", ".join(f"{v:.2f}" for v in f1)
                     + f" | {epoch:.3f} | {epoch / base[1]:.2f}x | {tps:,.0f} | "
                     f"{base[2] / tps:.2f}x |")
    lines.append("")
    for name in ("PA k=1", "MIRA k=5"):
        f1_1, e1, _ = summary[(name, 1)]
        f1_2, e2, _ = summary[(name, 2)]
        lines.append(f"* {name}: order 2 - order 1 = {f1_2 - f1_1:+.2f} F1; a second-order "
                     f"epoch costs {e2 / e1:.2f}x a first-order one (target: at most L = {L}: "
                     f"{'met' if e2 / e1 <= L else 'NOT met'}).")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=DEFAULT_DATA)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--corpus", nargs="+", choices=list(CORPORA), default=list(CORPORA))
    parser.add_argument("--features", choices=["default", "swvm"], default="default",
                        help="default: the features of bench_online.py; swvm: the 19 "
                             "word/POS templates of Ringel, Dror & Reichart, Appendix B")
    parser.add_argument("--out", help="write the markdown here")
    args = parser.parse_args(argv)
    report("Order 1 vs order 2", "bench_order.py", argv,
           "\n".join(run(corpus, args) for corpus in args.corpus), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

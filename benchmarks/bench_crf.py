"""CRFTagger beside python-crfsuite's L-BFGS CRF, and the four losses of
Altun, Johnson & Hofmann on Spanish NER.

Part 1 (``--part crfsuite``): on CoNLL-2000 chunking (train / test) and
CoNLL-2002 Spanish NER (train / testb), with the features of
``common.load_corpus``, the log-loss ``CRFTagger`` and CRFsuite's ``lbfgs``
on identical features and equal regularisation in the same run:

* identical features and models: the same attributes; with ``--states
  observed`` (default) both have weights for the (attribute, label) pairs
  seen in training only (CRFsuite's default, ``all_possible_states=False``),
  with ``possible`` for every pair (``feature.possible_states``,
  ``all_possible_states=True``); every transition in both
  (``feature.possible_transitions``);
* equal regularisation: CRFsuite minimises ``-LL + c2 ||w||^2``, ours
  ``C (-LL) + 1/2 ||w||^2``, the same minimiser when ``c2 = 1 / (2 C)``;
* the same budget: 100 L-BFGS iterations (``--max-iter``) each; CRFsuite also
  stops on its own criteria (epsilon, delta over 10 iterations).

Reported: chunk F1, training seconds, iterations, seconds per iteration.
Each fit runs in its own forked process.

Part ``order``: the log-loss CRFTagger with ``order=1`` and ``order=2`` on
the same corpora and features (F1, seconds per iteration).

Part 2 (``--part losses``): the four losses (and the averaged perceptron) on
Spanish NER with the feature sets S1, S2 and S3 (window 3) of section 4.2,
F1 on testb like Tables 2-3; part 3 (``--part boosting``) sequence boosting
on the same sets (Table 3).

Usage (needs ``pip install python-crfsuite`` for part 1)::

    python benchmarks/bench_crf.py [--data DIR] [--part crfsuite order losses boosting] [--C 0.5]
        [--max-iter 100] [--states observed possible] [--n-jobs 1 2] [--rounds 1000]
        [--out FILE]
"""
import argparse
import sys
import time
import warnings
from pathlib import Path


from common import DEFAULT_DATA, in_child, load, load_corpus, n_tokens, report, run_crfsuite

from sklstruct import (CRFTagger, SequenceBoostingTagger, StructuredPerceptronTagger,
                       feature_set)
from sklstruct.metrics import chunk_report


def run_ours(data, model, test, queue):
    """Fit and score in this (forked) process; with n_jobs=1 the BLAS calls of
    the optimiser are held to one thread too, so that it runs on one core like
    CRFsuite."""
    from sklearn.exceptions import ConvergenceWarning
    from threadpoolctl import threadpool_limits

    tic = time.perf_counter()
    with warnings.catch_warnings(), threadpool_limits(getattr(model, "n_jobs", None) or 1):
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(data["X"]["train"], data["y"]["train"])
    fit_s = time.perf_counter() - tic
    pred = model.predict(data["X"][test])
    iters = getattr(model, "n_iter_", None)
    queue.put(dict(f1=chunk_report(data["y"][test], pred).f1, fit_s=fit_s, iterations=iters,
                   objective=getattr(model, "objective_", float("nan"))))


def part_crfsuite(args):
    lines = ["## CRFTagger (log loss) beside CRFsuite's lbfgs", "",
             f"C = {args.C} for CRFTagger, c2 = 1 / (2 C) = {1 / (2 * args.C):g} for CRFsuite "
             f"(c1 = 0), at most {args.max_iter} L-BFGS iterations each, the same attributes.  "
             "'observed states': a weight only for the (attribute, label) pairs seen in "
             "training (CRFsuite's default and CRFTagger's, all_possible_states=False); "
             "'possible states': one for every pair (feature.possible_states, "
             "all_possible_states=True); both: every transition.  Objective: CRFsuite's "
             "reported loss, -LL + c2 ||w||^2, and ours divided by C, -LL + ||w||^2 / (2 C): "
             "the same function on the same model.", ""]
    for corpus, test in (("conll2000", "test"), ("conll2002_esp", "testb")):
        data = load_corpus(args.data, corpus)
        lines += [f"### {corpus}: {len(data['y']['train'])} training sentences "
                  f"({n_tokens(data, 'train')} tokens), {data['n_features']} attributes", "",
                  "| model | chunk F1 | training s | vs CRFsuite | iterations | s / iteration | "
                  "objective (CRFsuite's scale) |", "|---|---|---|---|---|---|---|"]
        for states in args.states:
            rows = [(f"python-crfsuite lbfgs ({states} states)", in_child(
                run_crfsuite, data, "crf", "lbfgs", {
                    "c1": 0.0, "c2": 1.0 / (2 * args.C), "max_iterations": args.max_iter,
                    "feature.possible_states": states == "possible",
                    "feature.possible_transitions": True}, test))]
            for n_jobs in args.n_jobs:
                rows.append((f"sklstruct CRFTagger ({states} states), n_jobs={n_jobs}", in_child(
                    run_ours, data, CRFTagger(C=args.C, max_iter=args.max_iter, n_jobs=n_jobs,
                                              all_possible_states=states == "possible"),
                    test)))
            ref = rows[0][1]
            for name, r in rows:
                obj = r["objective"] if name.startswith("python") else r["objective"] / args.C
                lines.append(f"| {name} | {100 * r['f1']:.2f} | {r['fit_s']:.1f} | "
                             f"{r['fit_s'] / ref['fit_s']:.2f}x | {r['iterations']} | "
                             f"{r['fit_s'] / max(r['iterations'], 1):.3f} | {obj:.1f} |")
                print(lines[-1], flush=True)
        lines.append("")
    return "\n".join(lines)


def part_order(args):
    lines = ["## CRFTagger, first- against second-order chain", "",
             f"Log loss, C = {args.C}, at most {args.max_iter} L-BFGS iterations, n_jobs = "
             f"{max(args.n_jobs)}, observed states; the features of part 1.  The second "
             "order adds label-trigram weights and runs forward-backward over label pairs "
             "(O(T L^3) per sentence against O(T L^2)).", "",
             "| corpus | labels | order | chunk F1 | training s | iterations | s / iteration | "
             "order 2 / order 1 per iteration |", "|---|---|---|---|---|---|---|---|"]
    for corpus, test in (("conll2000", "test"), ("conll2002_esp", "testb")):
        data = load_corpus(args.data, corpus)
        n_labels = len({t for s in data["y"]["train"] for t in s})
        per_it = {}
        for order in (1, 2):
            r = in_child(run_ours, data, CRFTagger(C=args.C, max_iter=args.max_iter, order=order,
                                                   n_jobs=max(args.n_jobs)), test)
            per_it[order] = r["fit_s"] / max(r["iterations"], 1)
            ratio = f"{per_it[2] / per_it[1]:.1f}x" if order == 2 else ""
            lines.append(f"| {corpus} | {n_labels} | {order} | {100 * r['f1']:.2f} | "
                         f"{r['fit_s']:.1f} | {r['iterations']} | {per_it[order]:.3f} | {ratio} |")
            print(lines[-1], flush=True)
    return "\n".join(lines) + "\n"


def feature_sets():
    """S1, S2 and S3 (window 3) of section 4.2."""
    return {"S1": feature_set("S1"), "S2": feature_set("S2"), "S3": feature_set("S3", window=1)}


def capped(data, max_length):
    """``data`` without the training sentences longer than ``max_length``
    tokens (None: all of them)."""
    if max_length is None:
        return data
    keep = [i for i, t in enumerate(data["y"]["train"]) if len(t) <= max_length]
    data = dict(data, X=dict(data["X"]), y=dict(data["y"]))
    data["X"]["train"] = [data["X"]["train"][i] for i in keep]
    data["y"]["train"] = [data["y"]["train"][i] for i in keep]
    return data


def length_note(args):
    return ("" if args.max_train_length is None else
            f"  Training sentences of at most {args.max_train_length} tokens only.")


def part_losses(args):
    esp = Path(args.data) / "conll2002"
    sets = {name: vec for name, vec in feature_sets().items() if name in args.sets}
    lines = ["## The four losses on CoNLL-2002 Spanish NER (testb F1; cf. Tables 2-3)", "",
             f"C = {args.C}, at most {args.max_iter} L-BFGS iterations; the averaged "
             "perceptron 10 epochs.  S3 uses a window of size 3 (previous, current, next "
             f"word), as in section 4.2.{length_note(args)}", "",
             "| features | log | exp | pointwise log | pointwise exp | perceptron |",
             "|---|---|---|---|---|---|"]
    for name, vec in sets.items():
        data = capped(load(esp / "esp.train", {"testb": esp / "esp.testb"}, vec),
                      args.max_train_length)
        f1 = []
        for loss in ("log", "exp", "pointwise_log", "pointwise_exp"):
            r = in_child(run_ours, data, CRFTagger(loss=loss, C=args.C, max_iter=args.max_iter,
                                                   n_jobs=max(args.n_jobs)), "testb")
            f1.append(f"{100 * r['f1']:.2f} ({r['fit_s']:.0f} s)")
            print(name, loss, f1[-1], flush=True)
        r = in_child(run_ours, data, StructuredPerceptronTagger(max_iter=10, random_state=0),
                     "testb")
        f1.append(f"{100 * r['f1']:.2f} ({r['fit_s']:.0f} s)")
        lines.append(f"| {name} ({data['n_features']} attributes) | " + " | ".join(f1) + " |")
        print(lines[-1], flush=True)
    return "\n".join(lines) + "\n"


def part_boosting(args):
    esp = Path(args.data) / "conll2002"
    sets = {name: vec for name, vec in feature_sets().items() if name in args.sets}
    lines = ["## Sequence boosting on CoNLL-2002 Spanish NER (testb F1; cf. Table 3)", "",
             f"SequenceBoostingTagger, {args.rounds} rounds (one feature updated per "
             f"round).{length_note(args)}",
             "", "| features | F1 | training s |", "|---|---|---|"]
    for name, vec in sets.items():
        data = capped(load(esp / "esp.train", {"testb": esp / "esp.testb"}, vec),
                      args.max_train_length)
        # the sequential algorithm of the caption (the defaults now add 5,000
        # features a round with a corrective step: bench_boosting.py)
        model = SequenceBoostingTagger(n_rounds=args.rounds, features_per_round=1,
                                       step="line_search", C=None, corrective_every=0)
        r = in_child(run_ours, data, model, "testb")
        lines.append(f"| {name} ({data['n_features']} attributes, {len(data['y']['train'])} "
                     f"sentences) | {100 * r['f1']:.2f} | {r['fit_s']:.0f} |")
        print(lines[-1], flush=True)
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=DEFAULT_DATA)
    parser.add_argument("--part", nargs="+",
                        choices=["crfsuite", "order", "losses", "boosting"],
                        default=["crfsuite", "order", "losses", "boosting"])
    parser.add_argument("--rounds", type=int, default=1000, help="boosting rounds")
    parser.add_argument("--C", type=float, default=0.5)
    parser.add_argument("--max-train-length", type=int,
                        help="parts losses/boosting: drop longer training sentences")
    parser.add_argument("--sets", nargs="+", choices=["S1", "S2", "S3"],
                        default=["S1", "S2", "S3"], help="feature sets of parts losses/boosting")
    parser.add_argument("--max-iter", type=int, default=100)
    parser.add_argument("--n-jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--states", nargs="+", choices=["observed", "possible"],
                        default=["observed"], help="the models compared (see part 1)")
    parser.add_argument("--out", help="write the markdown here")
    args = parser.parse_args(argv)
    body = ""
    if "crfsuite" in args.part:
        body += part_crfsuite(args) + "\n"
    if "order" in args.part:
        body += part_order(args) + "\n"
    if "losses" in args.part:
        body += part_losses(args) + "\n"
    if "boosting" in args.part:
        body += part_boosting(args)
    report("CRFTagger", "bench_crf.py", argv, body, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

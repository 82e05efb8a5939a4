"""k-best PA, restricted PA and k-best MIRA beside python-crfsuite's ``pa``.

On CoNLL-2000 chunking (full train, official test) and CoNLL-2002 Spanish NER
(train; testa to choose C; testb for the score), for k in {1, 2, 5, 10}, with
identical features for both libraries (see ``common.load``).  Reports chunk F1,
seconds per epoch, prediction tokens/s and peak memory; each model runs in its
own forked process.  The comparison the targets are about, 1-best PA against
CRFsuite's pa, is the mean over ``--seeds`` shuffling seeds for both libraries
(CRFsuite's rand() is seeded in each child); it also shows the
prediction-based PA (``loss_augmented=False``, CRFsuite's update rule).

Usage (needs ``pip install python-crfsuite``)::

    python benchmarks/bench_online.py [--data DIR] [--epochs 10] [--k 1 2 5 10] [--seeds 5]
        [--out-dir DIR]
"""
import argparse
import sys

from common import (DEFAULT_DATA, in_child, load_corpus, mean_row, n_tokens, run_crfsuite,
                    run_estimator, table, write_tables)

from sklstruct import KBestMIRATagger, PassiveAggressiveTagger

def learners(k, C, epochs):
    common = dict(k=k, C=C, max_iter=epochs, random_state=0)
    return [(f"sklstruct PA k={k}", PassiveAggressiveTagger(**common)),
            (f"sklstruct RPA k={k}", PassiveAggressiveTagger(restricted=True, **common)),
            (f"sklstruct MIRA k={k}", KBestMIRATagger(**common))]


def run(data, title, test, C, c_crf, ks, epochs, n_seeds, note=""):
    desc = (f"{len(data['y']['train'])} training sentences "
            f"({n_tokens(data, 'train')} tokens), {n_tokens(data, test)} {test} tokens, "
            f"{data['n_features']} features, {epochs} epochs, C={C} (CRFsuite c={c_crf}). "
            + note)
    print(f"\n## {title}: {desc}", flush=True)
    # the targets' comparison, 1-best PA against CRFsuite's pa, over seeds:
    # F1 moves by a few tenths with the shuffling order
    seeds = range(n_seeds)
    rows = [mean_row("python-crfsuite pa", [
                in_child(run_crfsuite, data, "crf", "pa",
                         {"max_iterations": epochs, "c": c_crf, "seed": s + 1}, test)
                for s in seeds]),
            mean_row("sklstruct PA k=1", [
                in_child(run_estimator, data, "pa", PassiveAggressiveTagger(
                    C=C, max_iter=epochs, random_state=s), test) for s in seeds]),
            mean_row("sklstruct PA k=1, prediction-based", [
                in_child(run_estimator, data, "pa", PassiveAggressiveTagger(
                    C=C, loss_augmented=False, max_iter=epochs, random_state=s), test)
                for s in seeds])]
    for r in rows:
        print(f"  {r['name']}: F1 {100 * r['f1']:.2f}, {r['epoch_s']:.3f} s/epoch", flush=True)
    reference = rows[0]["name"]
    for k in ks:
        for name, model in learners(k, C, epochs):
            rows.append(in_child(run_estimator, data, name, model, test))
            print(f"  {name}: F1 {100 * rows[-1]['f1']:.2f}, {rows[-1]['epoch_s']:.3f} s/epoch",
                  flush=True)
    out = f"## {title}\n\n{desc}\n\n" + table(rows, reference)
    print(out, flush=True)
    return out


def choose_C(data, grid, epochs):
    """C for our 1-best PA and c for CRFsuite's pa, each by F1 on testa."""
    ours = {C: in_child(run_estimator, data, "pa", PassiveAggressiveTagger(
        C=C, max_iter=epochs, random_state=0), "testa")["f1"] for C in grid}
    theirs = {c: in_child(run_crfsuite, data, "crf", "pa", {"max_iterations": epochs, "c": c},
                          "testa")["f1"] for c in grid}
    note = ("testa F1 by C: sklstruct PA "
            + ", ".join(f"{C:g}: {100 * f:.2f}" for C, f in ours.items()) + "; CRFsuite pa "
            + ", ".join(f"{c:g}: {100 * f:.2f}" for c, f in theirs.items()) + ".")
    print(note, flush=True)
    return max(ours, key=ours.get), max(theirs, key=theirs.get), note


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=DEFAULT_DATA)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--k", type=int, nargs="+", default=[1, 2, 5, 10])
    parser.add_argument("--seeds", type=int, default=5,
                        help="seeds for the 1-best PA vs CRFsuite pa comparison")
    parser.add_argument("--out-dir", help="write one markdown table per corpus here")
    args = parser.parse_args(argv)
    conll2000 = load_corpus(args.data, "conll2000")
    tables = {"conll2000": run(conll2000, "CoNLL-2000 chunking", "test", 1.0, 1.0, args.k,
                               args.epochs, args.seeds)}
    del conll2000
    conll2002 = load_corpus(args.data, "conll2002_esp")
    C, c_crf, note = choose_C(conll2002, [0.01, 0.03, 0.1, 0.3, 1.0], args.epochs)
    tables["conll2002_esp"] = run(conll2002, "CoNLL-2002 Spanish NER (testb)", "testb", C, c_crf,
                                  args.k, args.epochs, args.seeds, note)
    write_tables(args.out_dir, "online", tables)
    return 0


if __name__ == "__main__":
    sys.exit(main())

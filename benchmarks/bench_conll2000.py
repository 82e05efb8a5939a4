"""CoNLL-2000 chunking: sklstruct's perceptron beside python-crfsuite's averaged perceptron.

Both learners see identical features: the token attributes of
``feature_set("chunking")`` (CRFsuite's own chunking example templates), fed to
sklstruct as CSR matrices and to CRFsuite as the same attribute strings.  Each
model is trained and evaluated in a forked child process so that its peak
memory can be read on its own.

Usage (needs ``pip install python-crfsuite``)::

    python benchmarks/bench_conll2000.py [--data DIR] [--epochs 10] [--out results.md]

Reports chunk F1 on the official test set (conlleval), seconds per training
epoch, prediction tokens/s (also of the k=1 model stored in float32), the peak resident memory added while training
and predicting, and the size of the saved model: CRFsuite's model file
against the pickle of the fitted vectorizer and tagger together.
"""
import argparse
import sys
from pathlib import Path

from common import DEFAULT_DATA, in_child, load, n_tokens, run_crfsuite, run_estimator, table

from sklstruct import StructuredPerceptronTagger, feature_set


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=DEFAULT_DATA)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--k", type=int, nargs="+", default=[1, 5])
    parser.add_argument("--out", help="also write the table (markdown) to this file")
    args = parser.parse_args(argv)
    root = Path(args.data) / "conll2000"
    data = load(root / "train.txt", {"test": root / "test.txt"}, feature_set("chunking"))
    print(f"CoNLL-2000: {len(data['y']['train'])} training sentences "
          f"({n_tokens(data, 'train')} tokens), {len(data['y']['test'])} test sentences "
          f"({n_tokens(data, 'test')} tokens), {data['n_features']} features; "
          f"{args.epochs} epochs", flush=True)
    rows = [in_child(run_crfsuite, data, "python-crfsuite ap", "ap",
                     {"max_iterations": args.epochs}, "test")]
    for k in args.k:
        model = StructuredPerceptronTagger(k=k, max_iter=args.epochs, random_state=0)
        rows.append(in_child(run_estimator, data, f"sklstruct perceptron k={k}", model, "test"))
    # the k=1 model stored in float32 (astype): prediction speed, F1 and size
    model = StructuredPerceptronTagger(max_iter=args.epochs, random_state=0)
    rows.append(in_child(run_estimator, data, "sklstruct perceptron k=1, float32", model,
                         "test", dtype="float32"))
    out = table(rows, "python-crfsuite ap")
    print(out)
    if args.out:
        Path(args.out).write_text(out + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

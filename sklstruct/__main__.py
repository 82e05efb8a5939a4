"""Command line: ``sklstruct demo | train | tag | evaluate`` (also ``python -m sklstruct``)."""
import argparse
import ast
import sys
import time

import joblib
import numpy as np
import scipy.sparse as sp
from sklearn.linear_model import Perceptron
from sklearn.pipeline import make_pipeline

from . import __version__
from .datasets import make_chunking_corpus, read_conll, write_conll
from .features import SequenceVectorizer, feature_set
from .metrics import chunk_report, format_conlleval
from .larank import LaRankTagger
from .mira import KBestMIRATagger
from .passive_aggressive import PassiveAggressiveTagger
from .perceptron import StructuredPerceptronTagger
from .sdm import SDMTagger

#: Estimators the command line can train, by name.
ESTIMATORS = {
    "perceptron": StructuredPerceptronTagger,
    "pa": PassiveAggressiveTagger,
    "mira": KBestMIRATagger,
    "sdm": SDMTagger,
    "larank": LaRankTagger,
}

def _parse_params(pairs):
    params = {}
    for pair in pairs or ():
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise SystemExit(f"error: --param expects name=value; got {pair!r}")
        try:
            params[name] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            params[name] = value
    return params


def _make_features(args):
    if args.templates:
        templates = [t.strip() for t in args.templates.split(",") if t.strip()]
        return SequenceVectorizer(templates, window=args.window, min_freq=args.min_freq)
    return feature_set(args.features, window=args.window, min_freq=args.min_freq)


def cmd_demo(args):
    """Train on the embedded generated corpus and print F1 and timings, beside a
    unigram tagger (a linear classifier of each token's word and POS tag)."""
    X, y = make_chunking_corpus(args.n_sentences, random_state=args.random_state)
    n_train = int(0.8 * len(X))
    X_train, y_train, X_test, y_test = X[:n_train], y[:n_train], X[n_train:], y[n_train:]
    n_tokens = sum(len(s) for s in X_test)
    print(f"sklstruct {__version__} demo: generated chunking corpus, "
          f"{n_train} training and {len(X_test)} test sentences ({n_tokens} test tokens)")
    rows = []
    for k in args.k:
        features = feature_set("chunking")
        tagger = StructuredPerceptronTagger(k=k, max_iter=args.max_iter,
                                            random_state=args.random_state, verbose=args.verbose)
        tic = time.perf_counter()
        Xf = features.fit_transform(X_train)
        tagger.fit(Xf, y_train)
        fit_seconds = time.perf_counter() - tic
        Xt = features.transform(X_test)
        tic = time.perf_counter()
        y_pred = tagger.predict(Xt)
        predict_seconds = time.perf_counter() - tic
        report = chunk_report(y_test, y_pred)
        rows.append((f"perceptron k={k}", report, fit_seconds, predict_seconds))
    # a unigram tagger: each token classified on its own word and POS tag
    features = SequenceVectorizer(["bias", "word", "pos"])
    Xf = features.fit_transform(X_train)
    tic = time.perf_counter()
    flat = Perceptron(max_iter=args.max_iter, random_state=args.random_state, tol=None)
    flat.fit(sp.vstack(Xf), np.concatenate(y_train))
    fit_seconds = time.perf_counter() - tic
    Xt = sp.vstack(features.transform(X_test))
    tic = time.perf_counter()
    y_flat = flat.predict(Xt)
    predict_seconds = time.perf_counter() - tic
    y_flat = np.split(y_flat, np.cumsum([len(s) for s in X_test])[:-1])
    baseline = ("unigram perceptron", chunk_report(y_test, y_flat), fit_seconds,
                predict_seconds)
    print(f"\n{'model':<28}{'F1':>8}{'prec':>8}{'recall':>8}{'acc':>8}{'fit s':>9}{'tokens/s':>12}")
    for name, r, fit_s, pred_s in [baseline] + rows:
        print(f"{name:<28}{100 * r.f1:8.2f}{100 * r.precision:8.2f}"
              f"{100 * r.recall:8.2f}{100 * r.accuracy:8.2f}{fit_s:9.2f}{n_tokens / pred_s:12.0f}")
    print("\nconlleval report of the last model:")
    print(format_conlleval(rows[-1][1]), end="")
    return 0


def cmd_train(args):
    """Read a CoNLL file, fit a named estimator and save the model."""
    X, y = read_conll(args.train, target_column=args.target_column, encoding=args.encoding)
    estimator = ESTIMATORS[args.estimator]()
    try:
        estimator.set_params(**_parse_params(args.param))
    except ValueError as exc:
        raise SystemExit(f"error: {exc}")
    if args.verbose:
        estimator.set_params(verbose=args.verbose)
    model = make_pipeline(_make_features(args), estimator)
    tic = time.perf_counter()
    model.fit(X, y)
    seconds = time.perf_counter() - tic
    joblib.dump({"model": model, "n_columns": len(X[0][0]), "sklstruct_version": __version__},
                args.model)
    print(f"trained {args.estimator} on {len(X)} sentences ({sum(map(len, X))} tokens) "
          f"in {seconds:.2f} s; saved to {args.model}")
    return 0


def _load(path):
    saved = joblib.load(path)
    if not isinstance(saved, dict) or "model" not in saved:
        raise SystemExit(f"error: {path} is not a model saved by 'sklstruct train'")
    return saved


def _read_for_model(path, saved, encoding):
    """Tokens of a file, and its gold labels when it has one more column than training."""
    X, _ = read_conll(path, target_column=None, encoding=encoding)
    n_file, n_model = len(X[0][0]), saved["n_columns"]
    if n_file == n_model:
        return X, None
    if n_file == n_model + 1:
        return [[tok[:-1] for tok in s] for s in X], [[tok[-1] for tok in s] for s in X]
    raise SystemExit(f"error: {path} has {n_file} columns; the model expects {n_model} "
                     f"(tokens only) or {n_model + 1} (tokens and gold labels)")


def cmd_tag(args):
    """Label a CoNLL file with a saved model (gold column kept when present)."""
    saved = _load(args.model)
    X, y_gold = _read_for_model(args.input, saved, args.encoding)
    y_pred = saved["model"].predict(X)
    columns = (y_gold, y_pred) if y_gold is not None else (y_pred,)
    write_conll(args.output if args.output else sys.stdout, X, *columns)
    return 0


def cmd_evaluate(args):
    """conlleval report: of a saved model on a labelled file, or of the last two
    columns (gold, predicted) of a file, as conlleval itself reads it."""
    if args.model:
        saved = _load(args.model)
        X, y_gold = _read_for_model(args.input, saved, args.encoding)
        if y_gold is None:
            raise SystemExit(f"error: {args.input} has no gold label column to evaluate against")
        y_pred = saved["model"].predict(X)
    else:
        X, _ = read_conll(args.input, target_column=None, encoding=args.encoding)
        if len(X[0][0]) < 2:
            raise SystemExit(f"error: {args.input} needs at least two columns (gold, predicted)")
        y_gold = [[tok[-2] for tok in s] for s in X]
        y_pred = [[tok[-1] for tok in s] for s in X]
    print(format_conlleval(chunk_report(y_gold, y_pred)), end="")
    return 0


def build_parser():
    parser = argparse.ArgumentParser(
        prog="sklstruct",
        description="Structured max-margin learners for sequence labeling.")
    parser.add_argument("--version", action="version", version=f"sklstruct {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="train on the embedded generated corpus; print F1 and timings")
    demo.add_argument("--n-sentences", type=int, default=3000)
    demo.add_argument("--k", type=int, nargs="+", default=[1, 5], help="k values to compare")
    demo.add_argument("--max-iter", type=int, default=10)
    demo.add_argument("--random-state", type=int, default=0)
    demo.add_argument("--verbose", type=int, default=0)
    demo.set_defaults(func=cmd_demo)

    def io_options(p):
        p.add_argument("--encoding", default="utf-8", help="file encoding (older corpora: latin-1)")

    train = sub.add_parser("train", help="fit an estimator on a CoNLL file and save it")
    train.add_argument("train", help="CoNLL column file, labels in the last column")
    train.add_argument("--model", "-m", required=True, help="where to save the model")
    train.add_argument("--estimator", "-e", choices=sorted(ESTIMATORS), default="perceptron")
    train.add_argument("--param", "-p", action="append", metavar="NAME=VALUE",
                       help="estimator parameter, e.g. -p k=5 -p max_iter=20 (repeatable)")
    train.add_argument("--features", choices=["chunking", "S1", "S2", "S3"], default="chunking",
                       help="feature preset (chunking needs a POS column)")
    train.add_argument("--templates", help="comma-separated feature templates (overrides --features)")
    train.add_argument("--window", type=int, default=1, help="window for --templates and S3")
    train.add_argument("--min-freq", type=int, default=1)
    train.add_argument("--target-column", type=int, default=-1)
    train.add_argument("--verbose", "-v", type=int, default=0)
    io_options(train)
    train.set_defaults(func=cmd_train)

    tag = sub.add_parser("tag", help="label a CoNLL file with a saved model")
    tag.add_argument("model")
    tag.add_argument("input")
    tag.add_argument("--output", "-o", help="output file (default: standard output)")
    io_options(tag)
    tag.set_defaults(func=cmd_tag)

    evaluate = sub.add_parser("evaluate", help="print the conlleval report")
    evaluate.add_argument("input", help="labelled CoNLL file; without --model its last two "
                          "columns are gold and predicted labels")
    evaluate.add_argument("--model", "-m", help="tag the file with this saved model first")
    io_options(evaluate)
    evaluate.set_defaults(func=cmd_evaluate)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

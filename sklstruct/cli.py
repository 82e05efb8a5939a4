"""Command line: ``sklstruct demo | train | tag | evaluate | train-parser | parse`` (also
``python -m sklstruct``).

Every error is one line on standard error, ``sklstruct: error: ...``, and a
non-zero exit status:

* 2 -- usage errors: the command line cannot be parsed, or an option or
  estimator parameter has a bad value (found before any file is read, as
  :mod:`argparse` reports its own errors);
* 1 -- runtime errors: a file cannot be read or written, is not in the
  expected format, is not a model saved by ``sklstruct train``, or the data
  cannot be learned from or tagged.

:func:`main` returns 0 on success and raises :class:`SystemExit` with one of
these codes on failure (130 on Ctrl-C).
"""
import argparse
import ast
import codecs
import os
import sys
import textwrap
import time

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import Perceptron
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.utils.validation import check_is_fitted

from . import __version__
from ._registry import TAGGERS
from .datasets import make_chunking_corpus, read_conll, write_conll
from .features import PRESETS, SentenceFeatureUnion, SequenceVectorizer, feature_set
from .metrics import SCHEMES, chunk_report, format_conlleval
from .parsing import F1MaxMarginParser, PCFGParser, parseval, preprocess, read_ptb
from .serialization import load_model, model_info, save_model

#: The parsers of ``train-parser --parser``.
PARSERS = {"max-margin": F1MaxMarginParser, "pcfg": PCFGParser}

PROG = "sklstruct"

#: Exit status of usage errors (as argparse's) and of runtime errors.
USAGE_ERROR, RUNTIME_ERROR = 2, 1

#: Longest error message printed (a message may quote a token or a value).
_MAX_MESSAGE = 1000


class CommandError(Exception):
    """An error to report in one line, with its exit status."""

    def __init__(self, message, status=RUNTIME_ERROR):
        super().__init__(message)
        self.status = status


def _one_line(message):
    text = " ".join(str(message).split())
    return text if len(text) <= _MAX_MESSAGE else text[:_MAX_MESSAGE - 3] + "..."


def _fail(message, status):
    """Print ``sklstruct: error: message`` on one line and exit with ``status``."""
    sys.stderr.write(f"{PROG}: error: {_one_line(message)}\n")
    raise SystemExit(status)


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors on one line (usage goes with --help)."""

    def error(self, message):
        _fail(f"{message} (see '{self.prog} --help')", USAGE_ERROR)


# -- argument types ------------------------------------------------------------------------


def _int_at_least(low):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer; got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}; got {value}")
        return value

    parse.__name__ = f"integer >= {low}"
    return parse


def _encoding(text):
    try:
        codecs.lookup(text)
    except LookupError:
        raise argparse.ArgumentTypeError(f"unknown encoding {text!r}") from None
    return text


def _parse_params(pairs):
    params = {}
    for pair in pairs or ():
        name, sep, value = pair.partition("=")
        if not sep or not name.isidentifier():
            raise CommandError(f"--param expects NAME=VALUE; got {pair!r}", USAGE_ERROR)
        try:
            params[name] = ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            params[name] = value
    return params


def _check_params(model):
    """Check every step's parameters (and the templates) before any file is read."""
    try:
        for _, step in model.steps:
            if hasattr(step, "_parameter_constraints"):
                step._validate_params()
            if isinstance(step, SequenceVectorizer):
                step._prepare()
    except (ValueError, TypeError) as exc:
        raise CommandError(exc, USAGE_ERROR) from None


# -- files ---------------------------------------------------------------------------------


def _check_readable(path, what):
    if os.path.isdir(path):
        raise CommandError(f"{what} {path!r} is a directory, not a file")
    if not os.path.exists(path):
        raise CommandError(f"{what} {path!r} does not exist")


def _check_writable(path, what):
    """Fail now, not after the work, if ``path`` cannot be written."""
    if os.path.isdir(path):
        raise CommandError(f"{what} {path!r} is a directory, not a file")
    existed = os.path.exists(path)
    try:
        with open(path, "ab"):
            pass
    except OSError as exc:
        raise CommandError(f"cannot write {what} {path!r}: {exc.strerror or exc}") from None
    if not existed:
        os.remove(path)


def _same_file(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _read(path, what, **kwargs):
    _check_readable(path, what)
    try:
        return read_conll(path, **kwargs)
    except ValueError as exc:
        if _looks_like_a_model(path):
            raise CommandError(f"{what} {path!r} looks like a saved model, not a CoNLL file "
                               "(are the arguments swapped?)") from None
        raise CommandError(f"{exc} (the file encoding is set with --encoding)"
                           if "decode" in str(exc) else exc) from None


def _looks_like_a_model(path):
    """Whether a file starts like a pickle (protocol 2 or later), a zlib
    stream (``joblib.dump(compress=...)``, as ``train`` saved models before
    model files) or a zip archive (a model file, :func:`save_model`)."""
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError:
        return False
    return len(head) >= 2 and ((head[0] == 0x80 and 2 <= head[1] <= 5)
                               or (head[0] == 0x78 and head[1] in (0x01, 0x5E, 0x9C, 0xDA))
                               or head == b"PK\x03\x04")


def _write(what, path, write):
    try:
        write()
    except OSError as exc:
        raise CommandError(f"cannot write {what} {path!r}: {exc.strerror or exc}") from None


# -- models --------------------------------------------------------------------------------


def _save(path, model, **metadata):
    """Write ``model`` to a pickle-free model file (:func:`save_model`), with
    what the command line needs to read it back (``metadata``)."""
    metadata["sklstruct_version"] = __version__
    _write("model", path, lambda: save_model(model, path, metadata=metadata))


def _read_model(path, key, not_a_model):
    """The saved dict of a model file: ``{key: model, **metadata}`` from a
    pickle-free file, or the dict a joblib file of an older sklstruct holds
    (read with a warning: unpickling runs code stored in the file)."""
    _check_readable(path, "model")
    with open(path, "rb") as f:
        is_zip = f.read(4) == b"PK\x03\x04"
    if not is_zip:
        if _looks_like_a_model(path):
            sys.stderr.write(f"{PROG}: warning: {path!r} is a joblib/pickle model file of an "
                             "older sklstruct: loading it executes code stored in it, so use "
                             "only files you trust (train again to get a pickle-free "
                             "model file)\n")
        return _unpickle(path, not_a_model)
    try:
        info = model_info(path)
        model = load_model(path)
    except ValueError as exc:
        raise CommandError(f"{not_a_model}: {exc}") from None
    except MemoryError:
        raise CommandError(f"{not_a_model}: out of memory while loading it") from None
    return {**info["metadata"], key: model}     # (the file cannot replace the model)


def _load(path, argument="MODEL"):
    """The saved dict of ``sklstruct train``, checked: a fitted tagger pipeline."""
    not_a_model = (f"{path!r} is not a model saved by 'sklstruct train' (is {argument} "
                   "the right argument?)")
    saved = _read_model(path, "model", not_a_model)
    if not isinstance(saved, dict) or "model" not in saved:
        raise CommandError(f"{not_a_model}: it holds a {type(saved).__name__}")
    model, n_columns = saved["model"], saved.get("n_columns")
    tagger_classes = tuple(TAGGERS.values())
    if not (isinstance(model, Pipeline) and len(model.steps) == 2
            and isinstance(model[0], (SequenceVectorizer, SentenceFeatureUnion))
            and isinstance(model[-1], tagger_classes)):
        raise CommandError(f"{not_a_model}: its model is a {type(model).__name__}, not a "
                           "SequenceVectorizer (or SentenceFeatureUnion) + sklstruct tagger "
                           "pipeline")
    if isinstance(n_columns, bool) or not isinstance(n_columns, int) or n_columns < 1:
        raise CommandError(f"{not_a_model}: n_columns={n_columns!r} is not a positive int")
    try:
        # (a rich preset's features are a union of the templates and the
        # transformers learned from the training labels)
        check_is_fitted(model[0], "templates_" if isinstance(model[0], SequenceVectorizer)
                        else "transformers_")
        check_is_fitted(model[-1])
    except NotFittedError:
        raise CommandError(f"model {path!r} is not fitted") from None
    return saved


def _unpickle(path, not_a_model):
    """``joblib.load`` of a model file of an older sklstruct, any failure one
    line starting with ``not_a_model``."""
    import joblib

    try:
        return joblib.load(path)
    except MemoryError:
        raise CommandError(f"{not_a_model}: out of memory while loading it") from None
    except Exception as exc:  # unpickling a file that is not a model can raise anything
        raise CommandError(f"{not_a_model}: {type(exc).__name__}: {exc}") from None


def _check_output(output, *inputs):
    """Refuse an output file that is one of the ``(path, what)`` inputs, and
    one that cannot be written, before any work is done."""
    for path, what in inputs:
        if _same_file(path, output):
            raise CommandError(f"the output {output!r} is the {what} file; it "
                               "would be overwritten", USAGE_ERROR)
    _check_writable(output, "output")


def _read_for_model(path, saved, encoding, docstarts=None):
    """Tokens of a file, and its gold labels when it has one more column than
    training (``docstarts``: see :func:`read_conll`)."""
    X, _ = _read(path, "input", target_column=None, encoding=encoding, docstarts=docstarts)
    n_file, n_model = len(X[0][0]), saved["n_columns"]
    if n_file == n_model:
        return X, None
    if n_file == n_model + 1:
        return [[tok[:-1] for tok in s] for s in X], [[tok[-1] for tok in s] for s in X]
    raise CommandError(f"{path!r} has {n_file} columns; the model expects {n_model} "
                       f"(tokens only) or {n_model + 1} (tokens and gold labels)")


# -- commands ------------------------------------------------------------------------------


def cmd_demo(args):
    """Train on the embedded generated corpus and print F1 and timings, beside a
    unigram tagger (a linear classifier of each token's word and POS tag)."""
    perceptron = TAGGERS["perceptron"]
    taggers = [perceptron(k=k, max_iter=args.max_iter, random_state=args.random_state,
                          verbose=args.verbose) for k in args.k]
    for tagger in taggers:
        _check_params(make_pipeline(feature_set("chunking"), tagger))
    X, y = make_chunking_corpus(args.n_sentences, random_state=args.random_state)
    n_train = int(0.8 * len(X))
    X_train, y_train, X_test, y_test = X[:n_train], y[:n_train], X[n_train:], y[n_train:]
    if not X_train or not X_test:
        raise CommandError(f"--n-sentences {args.n_sentences} is too few to split into "
                           "training and test sentences", USAGE_ERROR)
    n_tokens = sum(len(s) for s in X_test)
    print(f"sklstruct {__version__} demo: generated chunking corpus, "
          f"{n_train} training and {len(X_test)} test sentences ({n_tokens} test tokens)")
    rows = []
    for k, tagger in zip(args.k, taggers):
        features = feature_set("chunking")
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
    flat.fit(sp.vstack(list(Xf)), np.concatenate(y_train))
    fit_seconds = time.perf_counter() - tic
    Xt = sp.vstack(list(features.transform(X_test)))
    tic = time.perf_counter()
    y_flat = flat.predict(Xt)
    predict_seconds = time.perf_counter() - tic
    y_flat = np.split(y_flat, np.cumsum([len(s) for s in X_test])[:-1])
    baseline = ("unigram perceptron", chunk_report(y_test, y_flat), fit_seconds,
                predict_seconds)
    print(f"\n{'model':<28}{'F1':>8}{'prec':>8}{'recall':>8}{'acc':>8}{'fit s':>9}"
          f"{'tokens/s':>12}")
    for name, r, fit_s, pred_s in [baseline] + rows:
        print(f"{name:<28}{100 * r.f1:8.2f}{100 * r.precision:8.2f}"
              f"{100 * r.recall:8.2f}{100 * r.accuracy:8.2f}{fit_s:9.2f}"
              f"{n_tokens / max(pred_s, 1e-9):12.0f}")
    print("\nconlleval report of the last model:")
    print(format_conlleval(rows[-1][1]), end="")
    return 0


#: The presets whose window is the --window option (the others fix their own).
_WINDOWED = [name for name, preset in PRESETS.items() if preset.window is None]


def _make_features(args):
    window = 1 if args.window is None else args.window
    if args.templates:
        templates = [t.strip() for t in args.templates.split(",") if t.strip()]
        if not templates:
            raise CommandError("--templates lists no template", USAGE_ERROR)
        return SequenceVectorizer(templates, window=window, min_freq=args.min_freq)
    if args.window is not None and PRESETS[args.features].window is not None:
        raise CommandError(f"--window applies to --templates and --features "
                           f"{' and '.join(_WINDOWED)} only; the {args.features!r} preset "
                           "has its own window", USAGE_ERROR)
    return feature_set(args.features, window=window, min_freq=args.min_freq)


def cmd_train(args):
    """Read a CoNLL file, fit a named estimator and save the model."""
    estimator = TAGGERS[args.estimator]()
    params = _parse_params(args.param)
    if "random_state" in estimator.get_params() and "random_state" not in params:
        params["random_state"] = args.random_state     # two identical runs: one model
    try:
        estimator.set_params(**params)
        if args.verbose:
            estimator.set_params(verbose=args.verbose)
    except ValueError as exc:
        raise CommandError(exc, USAGE_ERROR) from None
    model = make_pipeline(_make_features(args), estimator)
    _check_params(model)
    _check_readable(args.train, "training file")
    if _same_file(args.train, args.model):
        raise CommandError(f"the model path {args.model!r} is the training file; the model "
                           "would overwrite it", USAGE_ERROR)
    _check_writable(args.model, "model")
    X, y = _read(args.train, "training file", target_column=args.target_column,
                 encoding=args.encoding)
    tic = time.perf_counter()
    model.fit(X, y)
    seconds = time.perf_counter() - tic
    _save(args.model, model, n_columns=len(X[0][0]))
    print(f"trained {args.estimator} on {len(X)} sentences ({sum(map(len, X))} tokens) "
          f"in {seconds:.2f} s; saved to {args.model}")
    return 0


def _write_with_docstarts(out, n_sentences, docstarts, write_sentences):
    """Write sentences ``write_sentences(start, stop)`` to the stream ``out``
    with each ``-DOCSTART-`` line of the input back in its place (followed by
    a blank line, and labelled O in the predicted column, as CoNLL files have
    them)."""
    start = 0
    for index, fields in docstarts + [(n_sentences, None)]:
        if index > start:
            write_sentences(start, index)
            start = index
        if fields is not None:
            out.write(" ".join(fields + ("O",)) + "\n\n")


def _nbest_writer(out, X, y_gold, kbest, encoding):
    """CRF++'s n-best output (``crf_test -n``) of sentences start..stop: each
    of a sentence's k best label sequences as a block headed ``# RANK SCORE``
    (rank from 0, the score w.F(x, y)), the tokens (and gold labels) with
    that sequence as the last column."""
    def write(start, stop):
        for i in range(start, stop):
            seqs, scores = kbest[i]
            for rank, (seq, score) in enumerate(zip(seqs, scores)):
                out.write(f"# {rank} {score:.6f}\n")
                columns = ([y_gold[i]] if y_gold is not None else []) + [seq]
                write_conll(out, [X[i]], *[[c] for c in columns], encoding=encoding)
    return write


def cmd_tag(args):
    """Label a CoNLL file with a saved model (gold column kept when present)."""
    if args.output:
        _check_output(args.output, (args.model, "model"), (args.input, "input"))
    saved = _load(args.model)
    docstarts = []
    X, y_gold = _read_for_model(args.input, saved, args.encoding, docstarts)
    model = saved["model"]
    if args.nbest:
        kbest = model[-1].predict_kbest(model[0].transform(X), k=args.nbest)
        y_pred = [seqs[0] for seqs, _ in kbest]
    else:
        y_pred = model.predict(X)
    columns = (y_gold, y_pred) if y_gold is not None else (y_pred,)

    def write(out):
        if args.nbest:
            sentences = _nbest_writer(out, X, y_gold, kbest, args.encoding)
        else:
            def sentences(start, stop):
                write_conll(out, X[start:stop], *[c[start:stop] for c in columns],
                            encoding=args.encoding)
        _write_with_docstarts(out, len(X), docstarts, sentences)

    if args.output:
        def to_file():
            with open(args.output, "w", encoding=args.encoding, newline="\n") as out:
                write(out)
        _write("output", args.output, to_file)
    else:
        write(sys.stdout)
    return 0


def cmd_evaluate(args):
    """conlleval report: of a saved model on a labelled file, or of the last two
    columns (gold, predicted) of a file, as conlleval itself reads it."""
    docstarts = []
    if args.model:
        saved = _load(args.model, argument="--model")
        X, y_gold = _read_for_model(args.input, saved, args.encoding, docstarts)
        if y_gold is None:
            raise CommandError(f"{args.input!r} has no gold label column to evaluate against")
        y_pred = saved["model"].predict(X)
        # conlleval counts a -DOCSTART- line as a token; tag labels it O
        extra = [(fields[-1] if len(fields) > 1 else "O", "O") for _, fields in docstarts]
    else:
        X, _ = _read(args.input, "input", target_column=None, encoding=args.encoding,
                     docstarts=docstarts)
        if len(X[0][0]) < 2:
            raise CommandError(f"{args.input!r} needs at least two columns (gold, predicted)")
        y_gold = [[tok[-2] for tok in s] for s in X]
        y_pred = [[tok[-1] for tok in s] for s in X]
        # conlleval counts a -DOCSTART- line as a token with its last two fields
        extra = [(fields[-2], fields[-1]) if len(fields) > 2 else ("O", "O")
                 for _, fields in docstarts]
    # each as a one-token sentence: for conlleval an O token and a boundary end chunks alike
    y_gold = list(y_gold) + [[gold] for gold, _ in extra]
    y_pred = list(y_pred) + [[pred] for _, pred in extra]
    try:
        report = chunk_report(y_gold, y_pred, scheme=args.scheme)
    except ValueError as exc:           # a label outside the scheme, named with its place
        raise CommandError(str(exc)) from None
    print(format_conlleval(report), end="")
    return 0


# -- the parser ----------------------------------------------------------------------------


# -- parsing -------------------------------------------------------------------------------


def _read_trees(paths, encoding):
    """Trees of bracket files, preprocessed (function tags and empty elements
    removed), with the file each came from."""
    out = []
    for path in paths:
        _check_readable(path, "treebank file")
        try:
            trees = read_ptb(path, encoding=encoding)
        except ValueError as exc:
            if _looks_like_a_model(path):
                raise CommandError(f"treebank file {path!r} looks like a saved model, not "
                                   "bracketed trees (are the arguments swapped?)") from None
            raise CommandError(exc) from None
        for k, tree in enumerate(trees):
            try:
                out.append(preprocess(tree))
            except ValueError as exc:
                raise CommandError(f"{path!r}, tree {k + 1}: {exc}") from None
    return out


def _split_token(token, where):
    """``word/TAG`` (split at the last slash) -> (word, tag)."""
    word, sep, tag = token.rpartition("/")
    if not sep or not word or not tag:
        raise CommandError(f"{where}: token {token[:50]!r} is not word/TAG (the model was "
                           "trained on tagged input)")
    return word, tag


def cmd_train_parser(args):
    """Read bracketed trees, fit a parser and save it."""
    parser = PARSERS[args.parser]()
    try:
        parser.set_params(**_parse_params(args.param))
        if args.verbose and "verbose" in parser.get_params():
            parser.set_params(verbose=args.verbose)
        parser._validate_params()
    except (ValueError, TypeError) as exc:
        raise CommandError(exc, USAGE_ERROR) from None
    for path in args.trees:
        if _same_file(path, args.model):
            raise CommandError(f"the model path {args.model!r} is a treebank file; the model "
                               "would overwrite it", USAGE_ERROR)
    _check_writable(args.model, "model")
    trees = [t for t in _read_trees(args.trees, args.encoding)
             if 0 < len(t.leaves()) <= args.max_length]
    if not trees:
        raise CommandError(f"no tree of 1 to {args.max_length} words in {args.trees}")
    X = [t.leaves() for t in trees] if args.words else [t.pos() for t in trees]
    tic = time.perf_counter()
    parser.fit(X, trees)
    seconds = time.perf_counter() - tic
    _save(args.model, parser, input="words" if args.words else "tagged")
    print(f"trained {args.parser} on {len(trees)} trees of at most {args.max_length} words "
          f"in {seconds:.2f} s; saved to {args.model}")
    return 0


def _load_parser(path):
    """The saved dict of ``sklstruct train-parser``, checked."""
    not_a_model = f"{path!r} is not a model saved by 'sklstruct train-parser'"
    saved = _read_model(path, "parser", not_a_model)
    if (not isinstance(saved, dict) or not isinstance(saved.get("parser"), tuple(PARSERS.values()))
            or saved.get("input") not in ("words", "tagged")):
        raise CommandError(f"{not_a_model} (a tagger model is used with 'sklstruct tag')")
    try:
        check_is_fitted(saved["parser"], "w_binary_")
    except NotFittedError:
        raise CommandError(f"model {path!r} is not fitted") from None
    return saved


def cmd_parse(args):
    """Parse sentences (one per line) or the sentences of bracketed trees."""
    if args.output:
        _check_output(args.output, (args.model, "model"), (args.input, "input"))
    saved = _load_parser(args.model)
    parser, tagged = saved["parser"], saved["input"] == "tagged"
    gold = None
    if args.trees:
        gold = _read_trees([args.input], args.encoding)
        X = [t.pos() if tagged else t.leaves() for t in gold]
    else:
        text = _read_text(args.input, args.encoding)
        X = []
        for lineno, line in enumerate(text.splitlines(), 1):
            tokens = line.split()
            if not tokens:
                continue
            where = f"{args.input!r}, line {lineno}"
            if len(tokens) > parser.max_length:
                raise CommandError(f"{where}: {len(tokens)} tokens, more than the model's "
                                   f"max_length={parser.max_length}")
            X.append([_split_token(t, where) for t in tokens] if tagged else tokens)
    if not X:
        raise CommandError(f"{args.input!r} holds no sentence")
    pred = parser.predict(X)
    text = "".join(f"{t}\n" for t in pred)
    if args.output:
        _write("output", args.output, lambda: _write_text(args.output, text, args.encoding))
    else:
        sys.stdout.write(text)
    if gold is not None:
        s = parseval(gold, pred)
        print(f"P {100 * s['precision']:.2f}  R {100 * s['recall']:.2f}  "
              f"F1 {100 * s['f1']:.2f}  exact {100 * s['exact_match']:.2f}  "
              f"({s['n_valid']} of {s['n_sentences']} sentences scored)", file=sys.stderr)
    return 0


def _read_text(path, encoding):
    _check_readable(path, "input")
    try:
        with open(path, encoding=encoding) as f:
            return f.read()
    except UnicodeDecodeError as exc:
        raise CommandError(f"{path!r} is not {encoding} text ({exc.reason}); the file "
                           "encoding is set with --encoding") from None


def _write_text(path, text, encoding):
    with open(path, "w", encoding=encoding) as f:
        f.write(text)


def _train_epilog():
    """Estimators with their parameters and defaults, and the presets."""
    lines = ["estimators (-e NAME) and their parameters (-p NAME=VALUE), with defaults",
             "(random_state: --random-state unless given with -p):"]
    for name in sorted(TAGGERS):
        params = TAGGERS[name]().get_params()
        text = ", ".join(f"{key}={value!r}" for key, value in sorted(params.items()))
        lines.append(textwrap.fill(f"{name} ({TAGGERS[name].__name__}): {text}", width=79,
                                   initial_indent="  ", subsequent_indent="      "))
    lines.append("")
    lines.append("feature presets (--features NAME):")
    lines += [f"  {name}: {preset.description}" for name, preset in PRESETS.items()]
    return "\n".join(lines)


def build_parser():
    parser = _Parser(
        prog=PROG,
        description="Structured max-margin learners for sequence labeling.",
        epilog="Exit status: 0 on success, 2 for usage errors (bad options or parameter "
               "values), 1 for runtime errors (unreadable, malformed or unwritable files, "
               "a file that is not a model, data that cannot be learned from).")
    parser.add_argument("--version", action="version", version=f"sklstruct {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    demo = sub.add_parser("demo", help="train on the embedded generated corpus; print F1 and "
                          "timings")
    demo.add_argument("--n-sentences", type=_int_at_least(2), default=3000)
    demo.add_argument("--k", type=_int_at_least(1), nargs="+", default=[1, 5],
                      help="k values to compare")
    demo.add_argument("--max-iter", type=_int_at_least(1), default=10)
    demo.add_argument("--random-state", type=_int_at_least(0), default=0)
    demo.add_argument("--verbose", type=_int_at_least(0), default=0)
    demo.set_defaults(func=cmd_demo)

    def io_options(p):
        p.add_argument("--encoding", default="utf-8", type=_encoding,
                       help="file encoding (older corpora: latin-1)")

    train = sub.add_parser("train", help="fit an estimator on a CoNLL file and save it",
                           epilog=_train_epilog(),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    train.add_argument("train", help="CoNLL column file, labels in the last column")
    train.add_argument("--model", "-m", required=True,
                       help="where to save the model, a pickle-free model file (checked to "
                            "be writable before training)")
    train.add_argument("--estimator", "-e", choices=sorted(TAGGERS), default="perceptron")
    train.add_argument("--param", "-p", action="append", metavar="NAME=VALUE",
                       help="estimator parameter, e.g. -p k=5 -p max_iter=20 (repeatable)")
    train.add_argument("--features", choices=list(PRESETS),
                       default="chunking",
                       help="feature preset (listed below)")
    train.add_argument("--templates",
                       help="comma-separated feature templates (overrides --features)")
    train.add_argument("--window", type=_int_at_least(0), default=None,
                       help=f"window for --templates and {' and '.join(_WINDOWED)} "
                            "(default 1)")
    train.add_argument("--min-freq", type=_int_at_least(1), default=1)
    train.add_argument("--target-column", type=int, default=-1)
    train.add_argument("--random-state", type=_int_at_least(0), default=0,
                       help="seed of the estimators that shuffle or sample (default 0, so "
                            "that two identical runs give one model); -p random_state=... "
                            "overrides it")
    train.add_argument("--verbose", "-v", type=_int_at_least(0), default=0)
    io_options(train)
    train.set_defaults(func=cmd_train)

    tag = sub.add_parser(
        "tag", help="label a CoNLL file with a saved model",
        description="Label a CoNLL file with a model saved by 'sklstruct train'. A model "
                    "file is pickle-free (sklstruct.save_model: arrays and JSON; loading it "
                    "runs no code from it). Model files of older versions are joblib/pickle "
                    "files: they are still read, with a warning, as loading one executes "
                    "code stored in it; load only those you trust.")
    tag.add_argument("model", help="model saved by 'sklstruct train' (an older joblib "
                     "model executes code when loaded: use only trusted ones)")
    tag.add_argument("input", help="CoNLL file to label (with or without a gold column)")
    tag.add_argument("--output", "-o", help="output file (default: standard output)")
    tag.add_argument("--nbest", "-n", type=_int_at_least(1), default=None, metavar="K",
                     help="write each sentence's K best label sequences, each headed "
                          "'# RANK SCORE' (CRF++'s n-best format)")
    io_options(tag)
    tag.set_defaults(func=cmd_tag)

    evaluate = sub.add_parser(
        "evaluate", help="print the conlleval report",
        description="Print the conlleval report. With --model, tag the file with a model "
                    "saved by 'sklstruct train' first (an older joblib/pickle model file "
                    "executes code stored in it when loaded: use only trusted ones).")
    evaluate.add_argument("input", help="labelled CoNLL file; without --model its last two "
                          "columns are gold and predicted labels")
    evaluate.add_argument("--model", "-m", help="tag the file with this saved model first")
    evaluate.add_argument("--scheme", choices=sorted(SCHEMES), default=None,
                          help="count chunks by seqeval's strict rules for this tagging "
                               "scheme instead of conlleval's (needed for IOBES and BILOU)")
    io_options(evaluate)
    evaluate.set_defaults(func=cmd_evaluate)

    train_parser = sub.add_parser(
        "train-parser", help="fit a constituency parser on bracketed trees and save it",
        description="Fit a parser on Penn Treebank bracket files (function tags and empty "
                    "elements are removed first). Parameters of the max-margin parser: "
                    + ", ".join(f"{k}={v!r}" for k, v in
                                sorted(F1MaxMarginParser().get_params().items())
                                if k != "tagger") + ".")
    train_parser.add_argument("trees", nargs="+", help="bracketed tree files (.mrg)")
    train_parser.add_argument("--model", "-m", required=True,
                              help="where to save the model, a pickle-free model file")
    train_parser.add_argument("--parser", choices=sorted(PARSERS), default="max-margin")
    train_parser.add_argument("--param", "-p", action="append", metavar="NAME=VALUE",
                              help="parser parameter, e.g. -p C=10 -p loss=f1 (repeatable)")
    train_parser.add_argument("--words", action="store_true",
                              help="train on words only (default: word/tag pairs, so that "
                                   "'parse' takes word/TAG tokens)")
    train_parser.add_argument("--max-length", type=_int_at_least(1), default=40,
                              help="train on the trees of at most this many words "
                                   "(default 40)")
    train_parser.add_argument("--verbose", "-v", type=_int_at_least(0), default=0)
    io_options(train_parser)
    train_parser.set_defaults(func=cmd_train_parser)

    parse = sub.add_parser(
        "parse", help="parse sentences with a saved parser",
        description="Parse one sentence per line (tokens separated by spaces: words, or "
                    "word/TAG for a model trained on tagged trees), or with --trees the "
                    "sentences of a bracket file, whose PARSEVAL scores are then printed on "
                    "standard error. Loading a model executes code stored in it: use only "
                    "trusted files.")
    parse.add_argument("model", help="model saved by 'sklstruct train-parser'")
    parse.add_argument("input", help="sentences, one per line (or bracketed trees)")
    parse.add_argument("--trees", action="store_true",
                       help="the input holds bracketed gold trees: parse their sentences and "
                            "score the result")
    parse.add_argument("--output", "-o", help="output file (default: standard output)")
    io_options(parse)
    parse.set_defaults(func=cmd_parse)
    return parser


def main(argv=None):
    """Run the command line; returns 0, or raises SystemExit(1 or 2) after
    printing a one-line error on standard error."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except CommandError as exc:
        _fail(exc, exc.status)
    except BrokenPipeError:
        # the reader of standard output went away (e.g. '| head'): stop quietly
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        raise SystemExit(RUNTIME_ERROR) from None
    except OSError as exc:
        where = f"{exc.filename!r}: " if exc.filename else ""
        _fail(f"{where}{exc.strerror or exc}", RUNTIME_ERROR)
    except (ValueError, TypeError, NotFittedError, MemoryError) as exc:
        _fail(exc if str(exc) else type(exc).__name__, RUNTIME_ERROR)
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    except Exception as exc:  # noqa: BLE001 -- one line, whatever went wrong
        _fail(f"unexpected {type(exc).__name__}: {exc} (please report this)", RUNTIME_ERROR)

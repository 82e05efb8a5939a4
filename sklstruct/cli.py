"""Command line: ``sklstruct demo | train | tag | evaluate | train-parser | parse |
cluster`` (also ``python -m sklstruct``).

Every error is one line on standard error, ``sklstruct: error: ...``, and a
non-zero exit status:

* 2 -- usage errors: the command line cannot be parsed, or an option or
  estimator parameter has a bad value (found before any file is read, as
  :mod:`argparse` reports its own errors);
* 1 -- runtime errors: a file cannot be read or written, is not in the
  expected format, is not a model saved by ``sklstruct train``, or the data
  cannot be learned from or tagged.

:func:`main` returns 0 on success and raises :class:`SystemExit` with one of
these codes on failure (130 on Ctrl-C).  A warning is one line too,
``sklstruct: warning: ...``, without Python's file and source line.

On a terminal (standard error), ``train``, ``tag``, ``evaluate --model``,
``train-parser``, ``parse`` and ``cluster`` show a progress bar (tqdm's, an
optional dependency): the epochs, iterations or rounds of training, the
sentences tagged or parsed, the merges of the clustering; ``--quiet`` turns it off, and it is off when standard error
is not a terminal.  ``sklstruct --help`` imports none of the learners (nor
scikit-learn); each command imports what it uses.
"""
import ast
import os
import re
import sys
import time
import warnings

from . import __version__
from ._cli_parser import (COMMANDS, DEFAULT_ESTIMATOR, DEFAULT_FEATURES,  # noqa: F401
                          PROG, RUNTIME_ERROR, USAGE_ERROR, CommandError, _command_of, _fail,
                          _one_line, _parsers, _show_warning, _warn, _windowed, _word_only, build_parser)
from ._cli_progress import _bar, _fit_progress, _in_batches, _own_progress

# The heavy modules (scikit-learn, SciPy, the learners) are imported by the
# commands that use them, so that ``sklstruct --help`` starts at once.

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
    from .features import SequenceVectorizer

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
    from .datasets import read_conll

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
    from .serialization import save_model

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
        if not _looks_like_a_model(path):
            raise CommandError(f"{not_a_model}: it is "
                               + ("empty" if os.path.getsize(path) == 0 else
                                  "neither a model file nor a joblib model of an older "
                                  "sklstruct"))
        _warn(f"{path!r} is a joblib/pickle model file of an older sklstruct: loading it "
              "executes code stored in it, so use only files you trust (train again to get "
              "a pickle-free model file)")
        return _unpickle(path, not_a_model)
    from .serialization import load_model, model_info

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
    from sklearn.exceptions import NotFittedError
    from sklearn.pipeline import Pipeline
    from sklearn.utils.validation import check_is_fitted

    from ._registry import TAGGERS
    from .features import SentenceFeatureUnion, SequenceVectorizer

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
        detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        raise CommandError(f"{not_a_model}: reading it as a joblib model of an older "
                           f"sklstruct failed ({_one_line(detail)[:200]}): it is damaged, or "
                           "not a model") from None


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
    training (``docstarts``: see :func:`read_conll`).  A file of another
    column count is refused, and so is one whose token column holds the
    model's labels (a gold column where the model reads, e.g., POS tags)."""
    X, _ = _read(path, "input", target_column=None, encoding=encoding, docstarts=docstarts)
    n_file, n_model = len(X[0][0]), saved["n_columns"]
    expects = (f"the model was trained on {n_model} token column{'s' * (n_model > 1)} "
               f"and reads files of {n_model} (tokens only) or {n_model + 1} (tokens and "
               "gold labels) columns")
    if n_file == n_model:
        tokens, gold = X, None
    elif n_file == n_model + 1:
        tokens, gold = [[tok[:-1] for tok in s] for s in X], [[tok[-1] for tok in s] for s in X]
    else:
        raise CommandError(f"{path!r} has {n_file} column{'s' * (n_file > 1)}; {expects}")
    _check_not_labels(path, tokens, saved["model"], n_file, expects)
    return tokens, gold


def _check_not_labels(path, X, model, n_file, expects):
    """Refuse tokens whose column (after the word) holds the model's labels
    in nine tokens of ten or more: the file lacks a column the model reads
    and has its gold labels in its place."""
    labels = {str(label) for label in getattr(model[-1], "classes_", ())}
    sample = [tok for s in X[:500] for tok in s]
    for j in range(1, len(sample[0]) if sample else 0):
        values = [tok[j] for tok in sample]
        found = [v for v in values if v in labels]
        if len(found) >= 0.9 * len(values):
            examples = ", ".join(repr(v) for v in sorted(set(found))[:3])
            raise CommandError(
                f"{path!r} has {n_file} column{'s' * (n_file > 1)}, and its column {j + 1} "
                f"holds the model's labels ({examples}, ... in "
                f"{100 * len(found) / len(values):.0f}% of its tokens), not the token column "
                f"{j + 1} the model was trained on (e.g. POS tags): {expects}")


# -- commands ------------------------------------------------------------------------------


def cmd_demo(args):
    """Train on the embedded generated corpus and print F1 and timings, beside a
    unigram tagger (a linear classifier of each token's word and POS tag)."""
    import numpy as np
    import scipy.sparse as sp
    from sklearn.linear_model import Perceptron
    from sklearn.pipeline import make_pipeline

    from ._registry import TAGGERS
    from .datasets import make_chunking_corpus
    from .features import SequenceVectorizer, feature_set
    from .metrics import chunk_report, format_conlleval

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


def _make_features(args):
    from .features import PRESETS, SequenceVectorizer, feature_set

    window = 1 if args.window is None else args.window
    if args.templates:
        templates = [t.strip() for t in args.templates.split(",") if t.strip()]
        if not templates:
            raise CommandError("--templates lists no template", USAGE_ERROR)
        if args.clusters is None and re.search(r"\bcluster\d", args.templates):
            raise CommandError("--templates use clusterN atoms, which read word clusters: "
                               "give --clusters PATHS (a paths file, as 'sklstruct cluster' "
                               "writes)", USAGE_ERROR)
        return SequenceVectorizer(templates, window=window, min_freq=args.min_freq,
                                  clusters=_load_clusters(args.clusters))
    if args.window is not None and PRESETS[args.features].window is not None:
        raise CommandError(f"--window applies to --templates and --features "
                           f"{' and '.join(_windowed())} only; the {args.features!r} preset "
                           "has its own window", USAGE_ERROR)
    return feature_set(args.features, window=window, min_freq=args.min_freq,
                       clusters=_load_clusters(args.clusters))


def _load_clusters(path):
    """The BrownClusters of a paths file (``train --clusters``), or None."""
    if path is None:
        return None
    from .features import BrownClusters

    _check_readable(path, "clusters file")
    try:
        return BrownClusters.load(path)
    except ValueError as exc:
        raise CommandError(f"clusters file: {exc} (expected a paths file as 'sklstruct "
                           "cluster' writes)") from None


def _check_columns(args, X, n_file_columns):
    """Refuse a preset that reads a column (POS tags) the training tokens
    lack, suggesting the word-only presets (the rich presets use a POS
    column where there is one, and train without it)."""
    from .features import PRESETS, feature_set

    if args.templates or PRESETS[args.features].from_labels:
        return
    probe = feature_set(args.features, window=1 if args.window is None else args.window,
                        missing_columns="raise")
    try:
        probe.fit(X[:1])
    except ValueError as exc:
        if "no column" not in str(exc):
            return      # (fit reports it)
        n = len(X[0][0])
        default = " (the default)" if args.features == DEFAULT_FEATURES else ""
        raise CommandError(
            f"--features {args.features}{default} reads a column the tokens of "
            f"{args.train!r} lack ({exc}): the file has {n_file_columns} columns, {n} of "
            f"tokens and the labels; give a file with a POS column (word, POS, label), or "
            f"features of the word only: --features {'/'.join(_word_only())} (or "
            "--templates)") from None


def cmd_train(args):
    """Read a CoNLL file, fit a named estimator and save the model."""
    from sklearn.pipeline import make_pipeline

    from ._registry import TAGGERS

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
    _check_columns(args, X, len(X[0][0]) + 1)
    tic = time.perf_counter()
    with _fit_progress(args, estimator, f"{args.estimator}"):
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
    from .datasets import write_conll

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
    bar = _bar(args, len(X), "sentences", "tag")
    if args.nbest:
        kbest = _in_batches(lambda part: model[-1].predict_kbest(model[0].transform(part),
                                                                 k=args.nbest), X, bar)
        y_pred = [seqs[0] for seqs, _ in kbest]
    else:
        y_pred = _in_batches(model.predict, X, bar)
    columns = (y_gold, y_pred) if y_gold is not None else (y_pred,)
    from .datasets import write_conll

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
        y_pred = _in_batches(saved["model"].predict, X, _bar(args, len(X), "sentences", "tag"))
        # conlleval counts a -DOCSTART- line as a token; tag labels it O
        extra = [(fields[-1] if len(fields) > 1 else "O", "O") for _, fields in docstarts]
    else:
        X, _ = _read(args.input, "input", target_column=None, encoding=args.encoding,
                     docstarts=docstarts)
        if len(X[0][0]) < 2:
            raise CommandError(f"{args.input!r} needs at least two columns (gold, predicted)")
        y_gold = [[tok[-2] for tok in s] for s in X]
        y_pred = [[tok[-1] for tok in s] for s in X]
        _check_predicted_column(args.input, y_gold, y_pred, len(X[0][0]))
        # conlleval counts a -DOCSTART- line as a token with its last two fields
        extra = [(fields[-2], fields[-1]) if len(fields) > 2 else ("O", "O")
                 for _, fields in docstarts]
    from .metrics import chunk_report, format_conlleval

    # each as a one-token sentence: for conlleval an O token and a boundary end chunks alike
    y_gold = list(y_gold) + [[gold] for gold, _ in extra]
    y_pred = list(y_pred) + [[pred] for _, pred in extra]
    try:
        report = chunk_report(y_gold, y_pred, scheme=args.scheme)
    except ValueError as exc:           # a label outside the scheme, named with its place
        raise CommandError(str(exc)) from None
    print(format_conlleval(report), end="")
    return 0


def _check_predicted_column(path, y_gold, y_pred, n_columns):
    """evaluate reads the last two columns as gold and predicted labels:
    refuse a file whose two columns share no value (a file of tokens and
    gold labels, not yet tagged), and warn when they agree on fewer than one
    token in ten."""
    n_tokens = sum(map(len, y_gold))
    if not n_tokens:
        return
    gold = {v for s in y_gold for v in s}
    pred = {v for s in y_pred for v in s}
    hint = (f"evaluate reads the last two of the {n_columns} columns of {path!r} as gold and "
            "predicted labels: is there a predicted column? (tag the file first, or give "
            "--model to tag it)")
    if not gold & pred:
        examples = (", ".join(repr(v) for v in sorted(values)[:3]) for values in (gold, pred))
        raise CommandError(f"columns {n_columns - 1} ({next(examples)}, ...) and "
                           f"{n_columns} ({next(examples)}, ...) share no label; {hint}")
    same = sum(g == p for gs, ps in zip(y_gold, y_pred) for g, p in zip(gs, ps))
    if same < 0.1 * n_tokens:
        _warn(f"the last two columns agree on {same} of {n_tokens} tokens only; {hint}")


# -- parsing -------------------------------------------------------------------------------


def _read_trees(paths, encoding):
    """Trees of bracket files, preprocessed (function tags and empty elements
    removed), with the file each came from."""
    from .parsing import preprocess, read_ptb

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
    parser = _parsers()[args.parser]()
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
    with _fit_progress(args, parser, args.parser):
        parser.fit(X, trees)
    seconds = time.perf_counter() - tic
    _save(args.model, parser, input="words" if args.words else "tagged")
    print(f"trained {args.parser} on {len(trees)} trees of at most {args.max_length} words "
          f"in {seconds:.2f} s; saved to {args.model}")
    return 0


def _load_parser(path):
    """The saved dict of ``sklstruct train-parser``, checked."""
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    PARSERS = _parsers()
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
    pred = _in_batches(parser.predict, X, _bar(args, len(X), "sentences", "parse"))
    text = "".join(f"{t}\n" for t in pred)
    if args.output:
        _write("output", args.output, lambda: _write_text(args.output, text, args.encoding))
    else:
        sys.stdout.write(text)
    if gold is not None:
        from .parsing import parseval

        s = parseval(gold, pred)
        print(f"P {100 * s['precision']:.2f}  R {100 * s['recall']:.2f}  "
              f"F1 {100 * s['f1']:.2f}  exact {100 * s['exact_match']:.2f}  "
              f"({s['n_valid']} of {s['n_sentences']} sentences scored)", file=sys.stderr)
    return 0


# -- clustering ----------------------------------------------------------------------------


def _read_sentences(path, args):
    """The sentences of one input of ``cluster``: lines of whitespace-separated
    tokens (``--format text``), or the tokens of a CoNLL file (its first
    column is the word)."""
    if args.format == "conll":
        X, _ = _read(path, "input", target_column=None, encoding=args.encoding)
        return X
    return [tokens for tokens in map(str.split, _read_text(path, args.encoding).splitlines())
            if tokens]


def cmd_cluster(args):
    """Brown-cluster the words of text files and write wcluster's paths file."""
    from .features import BrownClusters

    brown = BrownClusters(n_clusters=args.n_clusters, min_count=args.min_count,
                          n_jobs=args.n_jobs, verbose=args.verbose)
    try:
        brown._validate_params()
    except (ValueError, TypeError) as exc:
        raise CommandError(exc, USAGE_ERROR) from None
    _check_output(args.output, *[(path, "input") for path in args.input])
    for path in args.input:
        _check_readable(path, "input")
    X = [s for path in args.input for s in _read_sentences(path, args)]
    if not X:
        raise CommandError(f"{' '.join(map(repr, args.input))}: no sentence to cluster (the "
                           "input is empty)")
    tic = time.perf_counter()
    try:
        with _own_progress(args, "cluster"):
            brown.fit(X)
    except ValueError as exc:       # (in the words of the command line)
        message = re.sub(r"^X(?:\[(\d+)\](?:\[(\d+)\])?)?", lambda m: "input" + "".join(
            f", {what} {int(i) + 1}" for what, i in zip(("sentence", "token"), m.groups())
            if i is not None), str(exc))
        raise CommandError(message.replace("min_count=", "--min-count ")
                           .replace("lower min_count", "lower --min-count")) from None
    seconds = time.perf_counter() - tic
    _write("paths file", args.output, lambda: brown.save(args.output))
    print(f"clustered {len(brown.vocabulary_)} words of {len(X)} sentences "
          f"({sum(map(len, X))} tokens) into {brown.n_clusters_} clusters (AMI "
          f"{brown.mutual_information_:.4f} bits) in {seconds:.2f} s; saved to {args.output}")
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


def main(argv=None):
    """Run the command line.

    Parameters
    ----------
    argv : list of str, default=None
        The arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    status : int
        0; a failure prints a one-line error on standard error and raises
        :class:`SystemExit` (2 for usage errors, 1 for runtime errors, 130
        when interrupted).  Warnings are printed as one line each
        (``sklstruct: warning: ...``).
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    command = _command_of(argv)
    try:
        parser = build_parser([command] if command else ())
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    args = parser.parse_args(argv)
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        return _run(args)


def _run(args):
    command = {"demo": cmd_demo, "train": cmd_train, "tag": cmd_tag, "evaluate": cmd_evaluate,
               "train-parser": cmd_train_parser, "parse": cmd_parse,
               "cluster": cmd_cluster}[args.command]
    try:
        return command(args)
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
    except (ValueError, TypeError, MemoryError) as exc:     # (NotFittedError is a ValueError)
        _fail(exc if str(exc) else type(exc).__name__, RUNTIME_ERROR)
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    except Exception as exc:  # noqa: BLE001 -- one line, whatever went wrong
        _fail(f"unexpected {type(exc).__name__}: {exc} (please report this)", RUNTIME_ERROR)

"""The command line's arguments (:mod:`sklstruct.cli`): the parser, its
one-line errors and warnings, and each command's options and help.

Only what ``sklstruct --help`` needs is imported here; a command's options
(whose help lists the estimators and their defaults) import the estimators
when that command is named (:func:`build_parser`).
"""
import argparse
import codecs
import re
import sys
import textwrap

from . import __version__

#: The commands, with their one-line help (``sklstruct --help`` lists them
#: without importing the commands' modules).
COMMANDS = {
    "demo": "train on the embedded generated corpus; print F1 and timings",
    "train": "fit an estimator on a CoNLL file and save it",
    "tag": "label a CoNLL file with a saved model",
    "evaluate": "print the conlleval report",
    "train-parser": "fit a constituency parser on bracketed trees and save it",
    "parse": "parse sentences with a saved parser",
    "cluster": "Brown-cluster the words of a text; write a wcluster paths file",
}

#: The defaults of ``train``: the estimator (a name of the registry) and the
#: feature preset (a name of :data:`sklstruct.features.PRESETS`).
DEFAULT_ESTIMATOR, DEFAULT_FEATURES = "perceptron", "chunking"

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


def _warn(message):
    """Print ``sklstruct: warning: message`` on one line of standard error
    (above a progress bar, when one is shown)."""
    line = f"{PROG}: warning: {_one_line(message)}"
    tqdm = sys.modules.get("tqdm")
    if tqdm is not None and getattr(tqdm, "tqdm", None) is not None:
        tqdm.tqdm.write(line, file=sys.stderr)
    else:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """:func:`warnings.showwarning` of the command line: one line, without
    the file and source line Python shows."""
    text = str(message)
    if category.__name__ == "ConvergenceWarning" and "max_iter" in text:
        text += " (-p max_iter=N)"
    _warn(text)


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


def _windowed():
    """The presets whose window is the --window option (the others fix their own)."""
    from .features import PRESETS

    return [name for name, preset in PRESETS.items() if preset.window is None]


def _word_only():
    """The presets that read the word column only."""
    from .features import PRESETS

    return [name for name, preset in PRESETS.items()
            if not any(re.search(r"\bpos\b|\bcol\d", t) for t in preset.templates)]


def _parsers():
    """The parsers of ``train-parser --parser``, by name."""
    from .parsing import F1MaxMarginParser, PCFGParser

    return {"max-margin": F1MaxMarginParser, "pcfg": PCFGParser}


def _train_epilog():
    """The defaults, the estimators with their parameters and defaults, and the presets."""
    from ._registry import TAGGERS
    from .features import PRESETS

    lines = textwrap.wrap(
        f"Defaults: -e {DEFAULT_ESTIMATOR} ({TAGGERS[DEFAULT_ESTIMATOR].__name__}) with "
        f"--features {DEFAULT_FEATURES} ({PRESETS[DEFAULT_FEATURES].description}). A file of "
        f"a word and a label column only needs features of the word: --features "
        f"{' / '.join(_word_only())}. Each estimator's parameters default to those of its "
        "Python class (sklstruct." + TAGGERS[DEFAULT_ESTIMATOR].__name__ + "() and the others "
        "below, their documented defaults); -p NAME=VALUE sets one.", width=79)
    lines += ["", "estimators (-e NAME) and their parameters (-p NAME=VALUE), with defaults",
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


def _io_options(p, verbose=False):
    """--encoding and --quiet (and --verbose for the training commands)."""
    if verbose:
        p.add_argument("--verbose", "-v", type=_int_at_least(0), default=0,
                       help="1: a line per epoch (iteration); 2: the learner's own progress")
    p.add_argument("--encoding", default="utf-8", type=_encoding,
                   help="file encoding (older corpora: latin-1)")
    p.add_argument("--quiet", "-q", action="store_true",
                   help="no progress bar (shown on a terminal, with tqdm installed)")


def _model_input_output(p, model_help, input_help):
    p.add_argument("model", help=model_help)
    p.add_argument("input", help=input_help)
    p.add_argument("--output", "-o", help="output file (default: standard output)")


def _add_demo(demo):
    demo.add_argument("--n-sentences", type=_int_at_least(2), default=3000)
    demo.add_argument("--k", type=_int_at_least(1), nargs="+", default=[1, 5],
                      help="k values to compare")
    demo.add_argument("--max-iter", type=_int_at_least(1), default=10)
    demo.add_argument("--random-state", type=_int_at_least(0), default=0)
    demo.add_argument("--verbose", type=_int_at_least(0), default=0)


def _add_train(train):
    from ._registry import TAGGERS
    from .features import PRESETS

    train.epilog = _train_epilog()
    train.formatter_class = argparse.RawDescriptionHelpFormatter
    train.description = ("Fit an estimator on a CoNLL file (tokens' columns, then the "
                         "labels) and save it. On a terminal, a progress bar shows the "
                         "epochs (iterations, rounds); --quiet turns it off.")
    train.add_argument("train", help="CoNLL column file, labels in the last column")
    train.add_argument("--model", "-m", required=True,
                       help="where to save the model, a pickle-free model file (checked to "
                            "be writable before training)")
    train.add_argument("--estimator", "-e", choices=sorted(TAGGERS), default=DEFAULT_ESTIMATOR,
                       help=f"the estimator (default: {DEFAULT_ESTIMATOR}; listed below)")
    train.add_argument("--param", "-p", action="append", metavar="NAME=VALUE",
                       help="estimator parameter, e.g. -p k=5 -p max_iter=20 (repeatable; "
                            "the defaults are listed below)")
    train.add_argument("--features", choices=list(PRESETS), default=DEFAULT_FEATURES,
                       help=f"feature preset (default: {DEFAULT_FEATURES}, which reads a POS "
                            "column; listed below)")
    train.add_argument("--templates",
                       help="comma-separated feature templates (overrides --features)")
    train.add_argument("--window", type=_int_at_least(0), default=None,
                       help=f"window for --templates and {' and '.join(_windowed())} "
                            "(default 1)")
    train.add_argument("--min-freq", type=_int_at_least(1), default=1)
    train.add_argument("--clusters", metavar="PATHS",
                       help="word clusters: a wcluster paths file (as 'sklstruct cluster' "
                            "writes); a preset then adds the 4, 6, 10 and 20-bit prefixes of "
                            "the cluster paths of the word and its neighbours, and --templates "
                            "may use clusterN atoms")
    train.add_argument("--target-column", type=int, default=-1)
    train.add_argument("--random-state", type=_int_at_least(0), default=0,
                       help="seed of the estimators that shuffle or sample (default 0, so "
                            "that two identical runs give one model); -p random_state=... "
                            "overrides it")
    _io_options(train, verbose=True)


def _add_tag(tag):
    tag.description = (
        "Label a CoNLL file with a model saved by 'sklstruct train'. A model file is "
        "pickle-free (sklstruct.save_model: arrays and JSON; loading it runs no code from "
        "it). Model files of older versions are joblib/pickle files: they are still read, "
        "with a warning, as loading one executes code stored in it; load only those you "
        "trust. The file has the model's token columns (its training file's, without the "
        "labels), and may have a gold label column after them. On a terminal, a progress "
        "bar shows the sentences tagged; --quiet turns it off.")
    _model_input_output(tag, "model saved by 'sklstruct train' (an older joblib model "
                        "executes code when loaded: use only trusted ones)",
                        "CoNLL file to label (with or without a gold column)")
    tag.add_argument("--nbest", "-n", type=_int_at_least(1), default=None, metavar="K",
                     help="write each sentence's K best label sequences, each headed "
                          "'# RANK SCORE' (CRF++'s n-best format)")
    _io_options(tag)


def _add_evaluate(evaluate):
    from .metrics import SCHEMES

    evaluate.description = (
        "Print the conlleval report. With --model, tag the file with a model saved by "
        "'sklstruct train' first (an older joblib/pickle model file executes code stored in "
        "it when loaded: use only trusted ones). Without it, the file's last two columns are "
        "the gold and the predicted labels.")
    evaluate.add_argument("input", help="labelled CoNLL file; without --model its last two "
                          "columns are gold and predicted labels")
    evaluate.add_argument("--model", "-m", help="tag the file with this saved model first")
    evaluate.add_argument("--scheme", choices=sorted(SCHEMES), default=None,
                          help="count chunks by seqeval's strict rules for this tagging "
                               "scheme instead of conlleval's (needed for IOBES and BILOU)")
    _io_options(evaluate)


def _add_train_parser(train_parser):
    from .parsing import F1MaxMarginParser

    train_parser.description = (
        "Fit a parser on Penn Treebank bracket files (function tags and empty elements are "
        "removed first). On a terminal, a progress bar shows the max-margin parser's "
        "iterations; --quiet turns it off. Parameters of the max-margin parser: "
        + ", ".join(f"{k}={v!r}" for k, v in sorted(F1MaxMarginParser().get_params().items())
                    if k != "tagger") + ".")
    train_parser.add_argument("trees", nargs="+", help="bracketed tree files (.mrg)")
    train_parser.add_argument("--model", "-m", required=True,
                              help="where to save the model, a pickle-free model file")
    train_parser.add_argument("--parser", choices=sorted(_parsers()), default="max-margin")
    train_parser.add_argument("--param", "-p", action="append", metavar="NAME=VALUE",
                              help="parser parameter, e.g. -p C=10 -p loss=f1 (repeatable)")
    train_parser.add_argument("--words", action="store_true",
                              help="train on words only (default: word/tag pairs, so that "
                                   "'parse' takes word/TAG tokens)")
    train_parser.add_argument("--max-length", type=_int_at_least(1), default=40,
                              help="train on the trees of at most this many words "
                                   "(default 40)")
    _io_options(train_parser, verbose=True)


def _add_parse(parse):
    parse.description = (
        "Parse one sentence per line (tokens separated by spaces: words, or word/TAG for a "
        "model trained on tagged trees), or with --trees the sentences of a bracket file, "
        "whose PARSEVAL scores are then printed on standard error. A model file is "
        "pickle-free; an older joblib model file executes code stored in it when loaded: "
        "use only trusted ones. On a terminal, a progress bar shows the sentences parsed; "
        "--quiet turns it off.")
    _model_input_output(parse, "model saved by 'sklstruct train-parser'",
                        "sentences, one per line (or bracketed trees)")
    parse.add_argument("--trees", action="store_true",
                       help="the input holds bracketed gold trees: parse their sentences and "
                            "score the result")
    _io_options(parse)


def _add_cluster(cluster):
    from .features import BrownClusters

    defaults = BrownClusters().get_params()
    cluster.description = (
        "Cluster the words of unlabelled text into a binary hierarchy (Brown et al. 1992; "
        "Liang's wcluster algorithm: sklstruct.BrownClusters) and write wcluster's paths file "
        "(one 'path<TAB>word<TAB>count' line per word, in UTF-8), which 'sklstruct train "
        "--clusters PATHS' reads. The input is plain text, one sentence per line, tokens "
        "separated by whitespace (--format text, the default, as 'parse' reads), or CoNLL "
        "column files whose first column is the word (--format conll, as 'train' and 'tag' "
        "read; blank lines separate sentences). No bigram crosses a sentence boundary. On a "
        "terminal, a progress bar shows the merges; --quiet turns it off.")
    cluster.add_argument("input", nargs="+", help="text (or CoNLL) files, read in turn")
    cluster.add_argument("--output", "-o", required=True,
                         help="where to write the paths file (checked to be writable first)")
    cluster.add_argument("--format", choices=["text", "conll"], default="text",
                         help="the input's format (default: text)")
    cluster.add_argument("--n-clusters", "-c", type=_int_at_least(1),
                         default=defaults["n_clusters"],
                         help=f"clusters (wcluster's --c; default {defaults['n_clusters']}); "
                              "memory grows as 32 * n_clusters**2 bytes")
    cluster.add_argument("--min-count", type=_int_at_least(1), default=defaults["min_count"],
                         help="leave out words occurring fewer times (wcluster's "
                              f"--min-occur; default {defaults['min_count']})")
    cluster.add_argument("--n-jobs", "-j", type=int, default=None,
                         help="threads (default 1; -1: all cores); the clusters do not "
                              "depend on it")
    cluster.add_argument("--verbose", "-v", type=_int_at_least(0), default=0,
                         help="1: a line every 1000 words added (or tenth of the "
                              "vocabulary: words, AMI, time)")
    _io_options(cluster)


#: The function that adds each command's arguments to its parser.
_BUILDERS = {"demo": _add_demo, "train": _add_train, "tag": _add_tag,
             "evaluate": _add_evaluate, "train-parser": _add_train_parser,
             "parse": _add_parse, "cluster": _add_cluster}


def build_parser(commands=None):
    """The argument parser.

    Parameters
    ----------
    commands : iterable of str, default=None
        The commands whose arguments are added (their help and defaults
        import the estimators); the others are listed by name and help only.
        None: all of them.

    Returns
    -------
    parser : argparse.ArgumentParser
    """
    commands = set(COMMANDS if commands is None else commands)
    parser = _Parser(
        prog=PROG,
        description="Structured max-margin learners for sequence labeling and parsing.",
        epilog="Exit status: 0 on success, 2 for usage errors (bad options or parameter "
               "values), 1 for runtime errors (unreadable, malformed or unwritable files, "
               "a file that is not a model, data that cannot be learned from).")
    parser.add_argument("--version", action="version", version=f"sklstruct {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, help_line in COMMANDS.items():
        command = sub.add_parser(name, help=help_line)
        if name in commands:
            _BUILDERS[name](command)
    return parser


def _command_of(argv):
    """The command named in ``argv`` (the first argument that is not an
    option: the top-level options take no value), or None."""
    for arg in argv:
        if arg == "--":
            break
        if not arg.startswith("-"):
            return arg if arg in COMMANDS else None
    return None

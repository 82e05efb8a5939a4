"""What the transformers that learn from the labels share: the labels and
their chunks read once, the cross-fitting folds, and the window of a token's
neighbours.

Features learned from ``y`` (a label dictionary, a gazetteer of the
training chunks) are cross-fitted on the training sentences, as
scikit-learn's :class:`~sklearn.preprocessing.TargetEncoder` does: the
sentences are split into ``cv`` folds and each fold's features come from
the other folds only, so that a training word does not see its own label
(a learner would then trust the feature more than it deserves on new text).
"""
from numbers import Integral

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from .._publish import publishes
from .._validation import InputTypeError, check_label_sequences
from ..chain import StackedSentences
from ..metrics import _END_TABLE, _PREFIX_CLASS, _PREFIXES, _START_TABLE, _split_tag
from ._base import _SentencesOut

#: Largest ``window`` (as the templates' offsets of SequenceVectorizer).
MAX_WINDOW = 1000


def read_labels(y, lengths, where):
    """The labels of all tokens: ``(codes, classes)``, ``classes`` sorted
    strings (numbers are written with ``str``), ``codes`` each token's index
    in it.  ``y`` is checked against the sentence lengths first."""
    if y is None:
        raise InputTypeError(f"{where}: y is required: the features are learned from the "
                             "labels of the training sentences (a list of label sequences, "
                             "one per sentence)")
    labels = check_label_sequences(y, lengths, "y", "X")
    if labels.dtype.kind == "S":
        labels = np.char.decode(labels, "utf-8", "backslashreplace")
    classes, codes = np.unique(labels.astype(str), return_inverse=True)
    return codes.astype(np.intp), classes.astype(object)


def label_types(classes):
    """The chunk type of each label (conlleval's reading: ``B-PER`` is
    ``PER``; ``O`` and labels without a hyphen are their own type)."""
    return np.array([t if (t := _split_tag(c)[1]) else c for c in classes], dtype=object)


def chunks(codes, classes, starts):
    """The chunks of the labels, as conlleval reads them (IOB1, IOB2 and
    IOBES alike; :func:`sklstruct.metrics.chunk_f1_score` counts the same
    chunks): ``(first, stop, type)`` arrays, token ``first`` to ``stop - 1``
    (in the flattened corpus), ``type`` an index into the returned names."""
    n = len(codes)
    parts = [_split_tag(c) for c in classes]
    type_names, type_of = np.unique(np.array([t for _, t in parts] + [""], dtype=object),
                                    return_inverse=True)
    outside = type_of[-1]
    prefix_of = np.array([_PREFIX_CLASS.get(p, len(_PREFIXES) - 1) for p, _ in parts]
                         + [_PREFIX_CLASS["O"]], dtype=np.intp)
    type_of = type_of[:-1]
    # the lines conlleval reads: an O line before each sentence and after the last
    line = np.full(n + len(starts), len(classes), dtype=np.intp)
    is_token = np.ones(len(line), dtype=bool)
    is_token[starts[:-1] + np.arange(len(starts) - 1)] = False
    is_token[-1] = False
    line[is_token] = codes
    prefix = prefix_of[line]
    types = np.append(type_of, outside)[line]
    key = (prefix[:-1], prefix[1:], (types[:-1] != types[1:]).astype(int))
    start = np.flatnonzero(_START_TABLE[key]) + 1        # lines where a chunk starts
    end = np.flatnonzero(_END_TABLE[key]) + 1            # lines before which one ended
    # conlleval never ends a chunk whose type has no hyphenated name ("NN"
    # after "-RRB-"), not even at a sentence's end: the next chunk's start
    # ends it here, so that no token is in two chunks (conlleval counts both
    # chunks), or else the last line (and the sentence's end clips each, below)
    end = np.append(end, len(line) - 1)
    stop = np.minimum(end[np.searchsorted(end, start, side="right")],
                      np.append(start[1:], len(line) - 1))
    token_of_line = np.cumsum(is_token) - 1
    first = token_of_line[start]
    # (a chunk ends at its sentence's end whatever its labels)
    sentence_stop = starts[np.searchsorted(starts, first, side="right")]
    stop = np.minimum(token_of_line[stop - 1] + 1, sentence_stop)
    return first, stop, types[start], type_names


def fold_of_sentences(n_sentences, cv, shuffle, random_state, where):
    """Each sentence's fold, as scikit-learn's KFold splits them."""
    if n_sentences < cv:
        raise ValueError(f"{where}: cv={cv} folds need at least {cv} sentences; X has "
                         f"{n_sentences}")
    order = np.arange(n_sentences)
    if shuffle:
        check_random_state(random_state).shuffle(order)
    fold = np.empty(n_sentences, dtype=np.intp)
    sizes = np.full(cv, n_sentences // cv)
    sizes[:n_sentences % cv] += 1
    fold[order] = np.repeat(np.arange(cv), sizes)
    return fold


def neighbours(rows, starts, lengths, window):
    """``rows`` (one row per token) beside the rows of the tokens up to
    ``window`` positions before and after, within the sentence: column
    block ``o + window`` holds the row of the token ``o`` away (none beyond
    the sentence)."""
    if window == 0:
        return rows.tocsr()
    n = rows.shape[0]
    sentence = np.repeat(np.arange(len(lengths)), lengths)
    position = np.arange(n) - starts[:-1][sentence]
    length = lengths[sentence]
    blocks = []
    for o in range(-window, window + 1):
        inside = np.flatnonzero((position + o >= 0) & (position + o < length))
        shift = sp.csr_matrix((np.ones(len(inside)), (inside, inside + o)), shape=(n, n))
        blocks.append(shift @ rows)
    return sp.hstack(blocks, format="csr")


def offset_name(offset):
    return "" if offset == 0 else f"[{offset:+d}]"


def check_window(window, name="window"):
    if isinstance(window, (bool, np.bool_)):
        raise InputTypeError(f"{name}={window!r} must be an int, not a bool")
    return int(window)


def as_int32_csr(matrix, where):
    """``matrix`` as a CSR matrix with 32-bit indices, sorted."""
    matrix = matrix.tocsr()
    if matrix.nnz >= 2**31 or matrix.shape[1] >= 2**31:
        raise ValueError(f"{where}: {matrix.shape[1]} columns and {matrix.nnz} nonzeros, more "
                         "than a CSR matrix with 32-bit indices holds; transform fewer "
                         "sentences at a time")
    matrix.indices = matrix.indices.astype(np.int32, copy=False)
    matrix.indptr = matrix.indptr.astype(np.int32, copy=False)
    matrix.sort_indices()
    matrix.data = matrix.data.astype(np.float64, copy=False)
    return matrix


class FromLabels(_SentencesOut, TransformerMixin, BaseEstimator):
    """What the transformers learned from the labels share: the parameters
    of the window and of the folds, ``fit`` and the cross-fitted
    ``fit_transform``, the output.

    A subclass gives ``_fit(X, y)`` (fit on all the sentences; it returns
    what ``_out_of_fold`` needs and the sentence offsets) and
    ``_out_of_fold(state, fold)`` (the unwindowed features of every token
    from the other folds' data, ``fold`` each sentence's fold).
    """

    _parameter_constraints = {
        "window": [Interval(Integral, 0, MAX_WINDOW, closed="both")],
        "min_count": [Interval(Integral, 1, None, closed="left")],
        "cv": [Interval(Integral, 2, None, closed="left")],
        "shuffle": ["boolean"],
        "random_state": ["random_state"],
    }

    @publishes
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Learn from the training sentences and their labels.

        Parameters
        ----------
        X : iterable of sentences
            A sentence is a non-empty sequence of tokens: strings,
            tuples/lists whose first element is the word, or dicts with key
            ``"word"``.
        y : list of label sequences
            One label per token (chunk labels such as ``B-PER``, ``I-PER``,
            ``O``); required.

        Returns
        -------
        self : object
        """
        self._fit(X, y)
        return self

    @publishes
    @_fit_context(prefer_skip_nested_validation=True)
    def fit_transform(self, X, y=None):
        """Fit on ``X``, ``y`` and give the cross-fitted features of ``X``.

        Each of ``cv`` folds of the sentences (scikit-learn's
        :class:`~sklearn.model_selection.KFold` folds, shuffled with
        ``random_state``) gets the features learned from the other folds
        (see the class description), so this is not
        ``fit(X, y).transform(X)``.

        Parameters
        ----------
        X : iterable of sentences
        y : list of label sequences

        Returns
        -------
        Xt : StackedSentences
            The out-of-fold features of ``X``.
        """
        state, starts = self._fit(X, y)
        fold = fold_of_sentences(len(starts) - 1, int(self.cv), self.shuffle,
                                 self.random_state, type(self).__name__)
        return self._output(self._out_of_fold(state, fold), starts)

    def _output(self, rows, starts):
        """The features of the tokens (``rows``) beside their neighbours'."""
        matrix = neighbours(sp.csr_matrix(rows), starts, np.diff(starts), self._window)
        matrix.eliminate_zeros()
        return StackedSentences._trusted(as_int32_csr(matrix, type(self).__name__),
                                         np.asarray(starts, dtype=np.int64))

    def get_feature_names_out(self, input_features=None):
        """The names of the output columns: the token's own features named
        as in the class description, and those of its neighbours with their
        offset (``lower[-1]:B-PER``, ``gaz[+1]:LOC:B``).

        Parameters
        ----------
        input_features : None
            Ignored (the input is tokens, not columns).

        Returns
        -------
        feature_names_out : ndarray of str objects
        """
        check_is_fitted(self, self._fitted_attribute)
        w = self._window
        return np.asarray([n for o in range(-w, w + 1) for n in self._names_at(o)],
                          dtype=object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.input_tags.two_d_array = False
        tags.target_tags.required = True
        tags.requires_fit = True
        return tags

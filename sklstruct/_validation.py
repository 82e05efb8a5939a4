"""Checks of user input, in one place and one message style.

Every error says where the problem is, then what is wrong, e.g.
``"X[3], token 2: feature value nan is not finite"`` or
``"y[4]: has 7 labels but X[4] has 6 tokens"``, and is a ``ValueError``, as
scikit-learn's own input checks raise.  Checks run before any state is touched and before any
compiled code sees the data, so a kernel with bounds checks off can never read
out of bounds.
"""
import math
import os
import reprlib
from collections.abc import Mapping, Set
from itertools import chain
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import Interval

from ._dask import is_bag


#: Largest ``k`` (best structures per example) accepted anywhere: far more
#: than a learner can use, and it bounds the k-best scratch (k x T labels).
MAX_K = 100_000

#: Largest absolute feature value accepted.  Products of a few such values
#: and the weights stay far from overflow (1e308); a larger value is almost
#: surely a bug upstream (scale the features).
MAX_ABS_FEATURE = 1e100

#: Largest slack weight / step cap ``C`` accepted (the dual variables sum to C).
MAX_C = 1e100

#: Largest iteration, sweep or step count (and example id) accepted: the
#: kernels count in C ints, and a count beyond that would run for days (an id
#: indexes per-example arrays as long as the largest id).
MAX_COUNT = 2**31 - 1


def _physical_memory():
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return 1 << 40


# Scratch allocations larger than the machine's memory are refused up front
# with a clear error rather than attempted (a size computed from hostile input
# could also wrap around).
MAX_ALLOC_BYTES = _physical_memory()


def check_alloc(what, *factors, remedy="use a smaller k or split long sentences"):
    """Raise MemoryError naming ``what`` and its ``remedy`` if the product of
    ``factors`` (a byte count) exceeds ``MAX_ALLOC_BYTES``; computed with Python
    integers, so it cannot wrap."""
    total = 1
    for f in factors:
        total *= int(f)
    if total > MAX_ALLOC_BYTES:
        raise MemoryError(f"{what} would need {total / 2**30:.1f} GiB, more than this "
                          f"machine's {MAX_ALLOC_BYTES / 2**30:.1f} GiB; {remedy}")
    return total


#: The ``n_jobs`` constraint of the estimators that run threads (joblib's
#: convention: None, a positive count, or -1, -2, ... for all CPUs but some).
N_JOBS_CONSTRAINT = [Interval(Integral, None, -1, closed="right"),
                     Interval(Integral, 1, None, closed="left"), None]

_repr = reprlib.Repr()
_repr.maxstring = _repr.maxother = 80
_repr.maxlist = _repr.maxtuple = _repr.maxdict = _repr.maxset = 8


def describe(value):
    """A short repr for messages (cut before it is built: a huge input stays cheap)."""
    return _repr.repr(value)


# -- lists of sentences -------------------------------------------------------------------

class InputTypeError(TypeError, ValueError):
    """The input is the wrong kind of object (a string where a list of
    sentences belongs, None where a label belongs...).

    A ``TypeError``, and a ``ValueError`` too, so that code written against
    scikit-learn's input checks, which raise ``ValueError``, catches it (as
    scikit-learn's own ``NotFittedError`` is both a ``ValueError`` and an
    ``AttributeError``).
    """


def _kind_of(obj):
    return "None" if obj is None else type(obj).__name__


def check_sentence_list(X, name="X", what="per-sentence feature matrices", item_ndim=2,
                        allow_empty=False, sized=True):
    """``X`` as a Python list of sentences.

    Raises unless ``X`` is a sequence (not a string, mapping, set, sparse
    matrix, or an array with fewer than ``item_ndim + 1`` dimensions: one
    sentence's item rather than a list of them) with at least one sentence
    (unless ``allow_empty``).  ``sized=False`` also takes an iterator (read
    once), as scikit-learn's text vectorizers do.
    """
    if sized and is_bag(X):
        # (an iterable X, sized=False, may be a bag: it is computed here as it is read)
        raise InputTypeError(
            f"{name}: got a dask Bag, where a list is needed ({name}.compute() brings one "
            "here).  What fits on bags, with a dask.distributed client active: CRFTagger, "
            "ParameterMixingTagger (around an online tagger), the vectorizers and a "
            "Pipeline of them; F1MaxMarginParser runs its passes on a cluster from lists "
            "inside joblib.parallel_config(backend='dask')")
    if X is None or isinstance(X, (str, bytes, Mapping, Set)) or sp.issparse(X) or (
            isinstance(X, np.ndarray) and X.ndim <= item_ndim and X.dtype != object):
        shape = f" of shape {X.shape}" if hasattr(X, "shape") else ""
        raise InputTypeError(f"{name}: expected a list of {what}; got {_kind_of(X)}{shape}"
                             + ("; wrap a single sentence in a list" if shape else ""))
    if not hasattr(X, "__iter__") or (sized and not hasattr(X, "__len__")):
        # a generator could be read once only; an int is no list at all
        raise InputTypeError(f"{name}: expected a list of {what}; got {_kind_of(X)}")
    X = list(X)
    if not X and not allow_empty:
        raise ValueError(f"{name}: contains no sentences")
    return X


def check_sentence(seq, where, what="tokens", allow_empty=False):
    """One sentence as a list: any sequence of items except a string, bytes,
    a mapping or a set (a string is one token, not a sentence; a set has no
    order); an array gives its rows."""
    if type(seq) in (list, tuple):      # the common case, none of the refused kinds
        if not seq and not allow_empty:
            raise ValueError(f"{where}: sentence is empty (0 {what})")
        return list(seq)
    if seq is None or isinstance(seq, (str, bytes, Mapping, Set)) or sp.issparse(seq) or (
            isinstance(seq, np.ndarray) and seq.ndim == 0):
        shape = f" of shape {seq.shape}" if hasattr(seq, "shape") else ""
        raise InputTypeError(f"{where}: expected a sequence of {what}; got "
                             f"{_kind_of(seq)}{shape} {describe(seq)}")
    try:
        items = list(seq)
    except TypeError:
        raise InputTypeError(f"{where}: expected a sequence of {what}; got "
                             f"{_kind_of(seq)} {describe(seq)}") from None
    if not items and not allow_empty:
        raise ValueError(f"{where}: sentence is empty (0 {what})")
    return items


def check_csr_sentence(x, where, n_features=None):
    """One sentence's feature matrix as a valid CSR matrix of float64.

    The structure of a sparse input (index pointers, indices, shape) is
    checked with NumPy before SciPy touches it: SciPy's own routines trust it
    and a malformed ``indptr`` corrupts memory.  Values must be real, finite
    and at most ``MAX_ABS_FEATURE`` in absolute value.
    """
    if sp.issparse(x):
        x = _checked_sparse(x, where)
    else:
        if isinstance(x, (str, bytes)) or x is None:
            raise InputTypeError(f"{where}: expected a 2-D feature matrix (n_tokens x "
                                 f"n_features); got {describe(x)}")
        try:
            x = np.asarray(x)
        except (TypeError, ValueError) as exc:
            raise InputTypeError(f"{where}: features are not a numeric matrix ({exc})") from None
        if x.dtype.kind not in "biuf":
            raise InputTypeError(f"{where}: features must be real numbers; got dtype {x.dtype}")
        if x.ndim != 2:
            raise ValueError(f"{where}: expected a 2-D feature matrix (n_tokens x n_features); "
                             f"got an array of shape {x.shape}")
        x = sp.csr_matrix(x.astype(np.float64, copy=False))
    if x.shape[0] == 0:
        raise ValueError(f"{where}: sentence is empty (0 tokens)")
    if x.shape[1] == 0:
        raise ValueError(f"{where}: has 0 features")
    if n_features is not None and x.shape[1] != n_features:
        raise ValueError(f"{where}: has {x.shape[1]} features; expected {n_features}")
    check_feature_values(x.data, lambda j: f"{where}, token "
                         f"{int(np.searchsorted(x.indptr, j, side='right')) - 1}")
    return x


def check_feature_values(data, where_of):
    """Feature values must be finite and moderate; ``where_of(j)`` names the
    place of entry ``j`` for the message."""
    bad = ~(np.abs(data) <= MAX_ABS_FEATURE)
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        kind = "is not finite" if not np.isfinite(data[j]) else \
            f"exceeds {MAX_ABS_FEATURE:g} in absolute value (scale the features)"
        raise ValueError(f"{where_of(j)}: feature value {data[j].item()!r} {kind}")


def _checked_sparse(x, where):
    """Check a SciPy sparse matrix's arrays, then convert it to CSR float64."""
    _check_sparse_structure(x, where)
    x = sp.csr_matrix(x, dtype=np.float64)
    x.sum_duplicates()
    return x


def _check_sparse_structure(x, where):
    """Check a SciPy sparse matrix's shape, dtype and index arrays (SciPy's
    own routines trust them) without converting or touching it."""
    if len(x.shape) != 2:
        raise ValueError(f"{where}: expected a 2-D feature matrix; got a sparse array of "
                         f"shape {x.shape}")
    if x.dtype.kind not in "biuf":
        raise InputTypeError(f"{where}: features must be real numbers; got dtype {x.dtype}")
    n_rows, n_cols = x.shape
    fmt = x.format
    if fmt in ("csr", "csc", "bsr"):
        if fmt == "bsr":
            br, bc = x.blocksize
            if br < 1 or bc < 1 or n_rows % br or n_cols % bc:
                raise ValueError(f"{where}: malformed sparse matrix (blocksize {x.blocksize} "
                                 f"does not divide shape {x.shape})")
            n_major, n_minor = n_rows // br, n_cols // bc
            n_data = len(x.data)
        else:
            n_major, n_minor = (n_rows, n_cols) if fmt == "csr" else (n_cols, n_rows)
            n_data = np.size(x.data)
        indptr, indices = np.asarray(x.indptr), np.asarray(x.indices)
        if indptr.ndim != 1 or indices.ndim != 1 or indptr.dtype.kind not in "iu" \
                or indices.dtype.kind not in "iu":
            raise ValueError(f"{where}: malformed sparse matrix (index arrays must be 1-D "
                             "integers)")
        if indptr.shape[0] != n_major + 1 or (indptr.size and indptr[0] != 0):
            raise ValueError(f"{where}: malformed sparse matrix (indptr must have "
                             f"{n_major + 1} entries starting at 0)")
        if np.any(np.diff(indptr) < 0):
            raise ValueError(f"{where}: malformed sparse matrix (indptr is not "
                             "non-decreasing)")
        if indptr[-1] > min(indices.shape[0], n_data):
            raise ValueError(f"{where}: malformed sparse matrix (indptr points past the "
                             f"{min(indices.shape[0], n_data)} stored entries)")
        used = indices[:indptr[-1]]
        if used.size and (used.min() < 0 or used.max() >= n_minor):
            raise ValueError(f"{where}: malformed sparse matrix (column indices outside "
                             f"[0, {n_minor}))" if fmt != "csc" else
                             f"{where}: malformed sparse matrix (row indices outside "
                             f"[0, {n_minor}))")
    elif fmt == "coo":
        coords = [np.asarray(c) for c in x.coords]
        data = np.asarray(x.data)
        if any(c.ndim != 1 or c.dtype.kind not in "iu" or c.shape != data.shape
               for c in coords):
            raise ValueError(f"{where}: malformed sparse matrix (COO coordinates and data "
                             "must be 1-D arrays of one length)")
        for c, size, axis in zip(coords, x.shape, ("row", "column")):
            if c.size and (c.min() < 0 or c.max() >= size):
                raise ValueError(f"{where}: malformed sparse matrix ({axis} indices outside "
                                 f"[0, {size}))")


# -- labels -------------------------------------------------------------------------------

def _label_kind(value):
    """'string', 'bytes' or 'number' for a label; None if it cannot be one."""
    return _kind_of_type(type(value))


def _kind_of_type(t):
    """:func:`_label_kind` for every value of type ``t``."""
    if issubclass(t, str):
        return "string"
    if issubclass(t, bytes):
        return "bytes"
    if issubclass(t, (Integral, Real, np.bool_)):
        return "number"
    return None


_KIND_OF_DTYPE = {"U": "string", "S": "bytes", "b": "number", "i": "number", "u": "number",
                  "f": "number"}


def _sequence_kinds(seq, where):
    """The label kinds of one sequence, checked element by element only when
    NumPy cannot tell (lists would be silently cast: ['a', 1] -> ['a', '1'])."""
    if isinstance(seq, np.ndarray) and seq.dtype.kind in _KIND_OF_DTYPE:
        return {_KIND_OF_DTYPE[seq.dtype.kind]: 0}
    kinds = {}
    for j, value in enumerate(seq):
        kind = _label_kind(value)
        if kind is None:
            raise InputTypeError(f"{where}[{j}]: label {describe(value)} of type "
                                 f"{type(value).__name__} is not a string or a number")
        if kind != "number" and value.endswith("\x00" if kind == "string" else b"\x00"):
            # NumPy's fixed-width strings drop trailing NULs: 'a\x00' would
            # become the class 'a'
            raise ValueError(f"{where}[{j}]: label {value!r} ends in a NUL character, "
                             "which NumPy strings drop (it would merge with "
                             f"{value.rstrip(value[-1:])!r}); remove it")
        kinds.setdefault(kind, j)
    return kinds


def _number_labels(parts, name):
    """The number labels of every sentence in one array that holds each
    exactly: the common dtype when the sentences share one, else int64 or
    uint64 for integers and float64 when there is a float, checked (int64
    and uint64 labels together, or integers beyond 2**53 beside floats,
    went through float64 and distinct labels merged)."""
    parts = [p for p in parts if len(p)]
    if not parts:
        return np.empty(0)
    if (all(isinstance(p, np.ndarray) and p.dtype.kind != "O" for p in parts)
            and len({p.dtype for p in parts}) == 1):
        return np.concatenate(parts)
    # (a list of Python ints and floats would become float64 in np.asarray)
    values = [v.item() if isinstance(v, np.generic) else v
              for p in parts for v in (p.tolist() if isinstance(p, np.ndarray) else p)]
    if all(isinstance(v, int) for v in values):
        for dtype in (np.int64, np.uint64):
            try:
                return np.array(values, dtype=dtype)
            except OverflowError:
                pass
        low, high = (-2**63, 2**63) if min(values) < 0 else (0, 2**64)
        big = next(v for v in values if not low <= v < high)
        raise ValueError(f"{name}: label {big} does not fit in an int64 or uint64 array "
                         "beside the others; use string labels")
    labels = np.array(values, dtype=np.float64)
    inexact = next((v for v in values if isinstance(v, int) and float(v) != v), None)
    if inexact is not None:
        raise ValueError(f"{name}: integer label {inexact} is beyond 2**53 and cannot be "
                         "held exactly beside float labels; use one number type, or string "
                         "labels")
    return labels


def _one_kind(parts):
    """The one label kind of all ``parts`` (label sequences), or None when
    there is none, more than one, a value that is no label, or a string
    ending in NUL; vectorized: the Python loops run over the distinct types
    and values, never over the tokens."""
    kinds, loose = set(), []
    for p in parts:
        if isinstance(p, np.ndarray) and p.dtype.kind in _KIND_OF_DTYPE:
            kinds.add(_KIND_OF_DTYPE[p.dtype.kind])
        elif len(p):
            loose.append(p)
    if loose:
        flat = list(chain.from_iterable(loose))
        kinds.update(_kind_of_type(t) for t in set(map(type, flat)))
        if kinds <= {"string", "bytes"} and any(
                v.endswith("\x00" if isinstance(v, str) else b"\x00") for v in set(flat)):
            return None
    return kinds.pop() if len(kinds) == 1 and None not in kinds else None


def _raise_first_kind_error(parts, name):
    """The error of the first label that :func:`_one_kind` refused, found
    label by label."""
    first = {}
    for i, seq in enumerate(parts):
        for kind, j in _sequence_kinds(seq, f"{name}[{i}]").items():
            first.setdefault(kind, (i, j))
        if len(first) > 1:
            (k1, (i1, j1)), (k2, (i2, j2)) = sorted(first.items(), key=lambda kv: kv[1])[:2]
            raise InputTypeError(f"{name}[{i2}][{j2}]: label is a {k2} but {name}[{i1}][{j1}] "
                                 f"is a {k1}; labels must be all strings or all numbers")
    raise ValueError(f"{name}: holds no labels")


def check_label_sequences(y, lengths, name="y", x_name="X"):
    """Check ``y`` (one label sequence per sentence, of the given lengths) and
    return all labels concatenated in one array.

    One rule for label types: all labels are strings, or all are bytes, or
    all are numbers (finite), within a sentence as across sentences; never
    None.  A sentence's labels may be any 1-D sequence.
    """
    if y is None:
        raise InputTypeError(f"{name}: is required (a list of label sequences, one per "
                             "sentence)")
    y = check_sentence_list(y, name, "label sequences", item_ndim=1)
    if len(y) != len(lengths):
        raise ValueError(f"{name}: has {len(y)} label sequences but {x_name} has "
                         f"{len(lengths)} sentences")
    parts = []
    for i, (seq, T) in enumerate(zip(y, lengths)):
        if not (isinstance(seq, np.ndarray) and seq.ndim == 1):
            seq = check_sentence(seq, f"{name}[{i}]", "labels", allow_empty=True)
        if len(seq) != T:
            raise ValueError(f"{name}[{i}]: has {len(seq)} labels but {x_name}[{i}] has {T} "
                             "tokens")
        parts.append(seq)
    kind = _one_kind(parts)
    if kind is None:           # something is wrong: find the first offending label
        _raise_first_kind_error(parts, name)
    if kind == "number":
        labels = _number_labels(parts, name)
        if labels.dtype.kind == "f" and not np.isfinite(labels).all():
            j = int(np.flatnonzero(~np.isfinite(labels))[0])
            i = int(np.searchsorted(np.cumsum(lengths), j, side="right"))
            raise ValueError(f"{name}[{i}]: label {labels[j].item()!r} is not finite")
        return labels
    labels = np.array(list(chain.from_iterable(parts)), dtype=object)
    return labels.astype(str if kind == "string" else bytes)


def check_classes(classes, name="classes"):
    """The sorted unique labels of a ``classes=`` argument (same type rules as
    y), and their kind ('string', 'bytes' or 'number')."""
    if not (isinstance(classes, np.ndarray) and classes.ndim == 1):
        classes = check_sentence(classes, name, "labels", allow_empty=True)
    if len(classes) == 0:
        raise ValueError(f"{name}: is empty; pass every label that can occur")
    kinds = _sequence_kinds(classes, name)
    if len(kinds) > 1:
        (k1, j1), (k2, j2) = sorted(kinds.items(), key=lambda kv: kv[1])[:2]
        raise InputTypeError(f"{name}[{j2}]: label is a {k2} but {name}[{j1}] is a {k1}; "
                             "labels must be all strings or all numbers")
    labels = check_label_sequences([classes], [len(classes)], name=name)
    return np.unique(labels), next(iter(kinds))


def check_k(k, name="k"):
    """``k`` as an int in [1, MAX_K]."""
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, Integral):
        raise InputTypeError(f"{name} must be an integer in [1, {MAX_K}]; got {describe(k)}")
    if not 1 <= k <= MAX_K:
        raise ValueError(f"{name} must be an integer in [1, {MAX_K}]; got {k}")
    return int(k)


def check_number(value, name, lo=None, hi=None, integer=False, lo_open=False):
    """``value`` as a float (an int with ``integer``) in ``[lo, hi]``
    (``(lo, hi]`` with ``lo_open``; None: unbounded), checked before any
    conversion: a bool, string, None, array or NaN would otherwise be parsed,
    truncated or compared False everywhere.  Raises ``InputTypeError`` for the
    wrong kind of object, ``ValueError`` for a number out of range, e.g.
    ``"tol must be a finite number >= 0; got nan"``."""
    def show(x):
        return str(x) if isinstance(x, Integral) else f"{x:g}"
    rule = "an integer" if integer else "a finite number"
    if lo is not None and hi is not None:
        rule += f" in {'(' if lo_open else '['}{show(lo)}, {show(hi)}]"
    elif lo is not None:
        rule += f" {'>' if lo_open else '>='} {show(lo)}"
    elif hi is not None:
        rule += f" <= {show(hi)}"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Integral if integer else Real):
        raise InputTypeError(f"{name} must be {rule}; got {describe(value)}")
    try:
        number = int(value) if integer else float(value)
    except OverflowError:       # an int beyond the float range (10**400)
        number = math.inf
    if not (math.isfinite(number) and (lo is None or (number > lo if lo_open else number >= lo))
            and (hi is None or number <= hi)):
        raise ValueError(f"{name} must be {rule}; got {describe(value)}")
    return number


def check_real_array(x, name, ndim, max_abs=math.inf, kinds="biuf"):
    """``x`` as a NumPy array of ``ndim`` dimensions of real numbers (dtype
    kinds ``kinds``: booleans too by default), each finite and at most
    ``max_abs`` in absolute value (not converted: the caller picks the
    dtype).  Strings, complex numbers, None, sparse matrices, masked arrays
    and ragged lists are refused: NumPy would parse ``'1'``, drop imaginary
    parts, ignore the mask or build an object array."""
    what = f"{name} must be a {ndim}-D array of real numbers"
    if x is None or isinstance(x, (str, bytes, np.ma.MaskedArray)) or sp.issparse(x):
        raise InputTypeError(f"{what}; got {describe(x)}")
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError, OverflowError) as exc:
        raise InputTypeError(f"{what} ({exc})") from None
    if arr.dtype.kind not in kinds:
        raise InputTypeError(f"{what}; got dtype {arr.dtype}")
    if arr.ndim != ndim:
        raise ValueError(f"{what}; got shape {arr.shape}")
    bad = ~(np.abs(arr) <= max_abs)
    if bad.any():
        where = np.unravel_index(int(np.flatnonzero(bad)[0]), arr.shape)
        value = arr[where].item()
        kind = "is not finite" if not math.isfinite(value) else \
            f"exceeds {max_abs:g} in absolute value (scale the problem)"
        raise ValueError(f"{name}[{', '.join(map(str, where))}] = {value!r} {kind}")
    return arr


def sentence_tags(tags, **input_tags):
    """The scikit-learn tags of an estimator of sentences (a tagger or a
    parser): X is a list of sentences, not a 2-D array; y, a list of label
    sequences or trees, is required and is not 1-D labels; ``input_tags``
    set the other input flags (``sparse``, ``string``)."""
    tags.input_tags.two_d_array = False
    for name, value in input_tags.items():
        setattr(tags.input_tags, name, value)
    tags.target_tags.required = True
    tags.target_tags.one_d_labels = False
    return tags

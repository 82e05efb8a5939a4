"""The linear-chain model: its data, parameter layout and a reference.

For a sentence with token features ``x`` (T x F) and a label sequence ``y``, the
joint feature map F(x, y) (Mancev & Todorovic, section 3) has three blocks:

* emission features: ``sum_t x_t (outer) e_{y_t}``, an F x L block;
* transition features: one count per label bigram ``(y_{t-1}, y_t)``, L x L;
* start and end features: ``e_{y_0}`` and ``e_{y_{T-1}}``;
* second-order chains only: one count per label trigram
  ``(y_{t-2}, y_{t-1}, y_t)``, L x L x L.

The weights ``w`` are laid out the same way: ``W`` (F x L, the transpose of the
estimators' ``coef_``) and the chain parameters ``P`` ((L + 2) x L: transitions,
start row, end row; second order appends the trigram scores as L * L more rows;
:func:`pack_chain` / :func:`unpack_chain`).  Then
``w.F(x, y)`` is :func:`sequence_score` of the emission scores ``E = x @ W``.

:class:`StackedSentences` is how the taggers hold a corpus: one CSR matrix of
all tokens plus sentence offsets, seen from outside as a list of per-sentence
matrices.  The plain NumPy functions here are the readable reference of the
model, used by the tests; the learners run the same computations in C
(:mod:`sklstruct._viterbi`, :mod:`sklstruct._chain`).
"""
from collections.abc import Sequence
from numbers import Integral

import numpy as np
import scipy.sparse as sp

from ._chain import FORBIDDEN_LABEL, ChainData, split_rows
from ._schemes import SCHEMES
from ._stacking import stack_csr
from ._validation import (MAX_ABS_FEATURE, check_csr_sentence, check_number, check_sentence_list,
                          describe)
from ._viterbi import (_check_labels, _real_array, chain_order, kbest_decode, sequence_score,
                       viterbi_decode)

__all__ = [
    "StackedSentences",
    "as_stacked",
    "emission_scores",
    "joint_feature",
    "pack_chain",
    "unpack_chain",
    "allowed_transitions",
    "restrict_scores",
    "sequence_score",
    "viterbi_decode",
    "kbest_decode",
]


class StackedSentences(Sequence):
    """Per-sentence feature matrices held as one stacked CSR matrix.

    To scikit-learn and to users it is a list of sentences: ``len``,
    iteration and ``X[i]`` (the CSR matrix of sentence ``i``) work as on a
    list; ``X[a:b]``, ``X[[i, j]]`` and boolean masks give a
    ``StackedSentences`` of those sentences, so splitters, ``_safe_indexing``,
    ``GridSearchCV`` and pickling keep the stacked form, and the taggers fit
    and predict on it without stacking again.  ``shape`` is
    ``(n_sentences,)``, as for a 1-D object array of sentences.

    :meth:`sklstruct.SequenceVectorizer.transform` returns one; plain lists
    of matrices are accepted everywhere too.

    Parameters
    ----------
    matrix : sparse matrix of shape (n_tokens, n_features)
        All tokens, sentence after sentence.
    offsets : array-like of int, shape (n_sentences + 1,)
        Sentence ``i`` is rows ``offsets[i]:offsets[i + 1]``; starts at 0 and
        ends at ``n_tokens``; every sentence has at least one token.
    keys : array-like of int, shape (n_tokens,), optional
        An integer key of each token's word (:class:`sklstruct.SequenceVectorizer`
        gives a stable 64-bit hash of it), kept through indexing; what a tag
        dictionary (:class:`sklstruct.ConstrainedTagger`) looks words up by.
    """

    def __init__(self, matrix, offsets, keys=None):
        if not sp.issparse(matrix):
            raise TypeError(f"matrix: expected a sparse matrix; got {type(matrix).__name__}")
        matrix = check_csr_sentence(matrix, "matrix") if matrix.shape[0] else matrix
        offsets = np.asarray(offsets)
        if offsets.ndim != 1 or offsets.dtype.kind not in "iu" or offsets.shape[0] < 2:
            raise ValueError("offsets: expected a 1-D integer array of n_sentences + 1 entries")
        offsets = offsets.astype(np.int64)
        if offsets[0] != 0 or offsets[-1] != matrix.shape[0] or np.any(np.diff(offsets) < 1):
            raise ValueError("offsets: must start at 0, end at the number of rows and "
                             "increase strictly (no empty sentence)")
        if keys is not None:
            keys = np.asarray(keys)
            if keys.shape != (matrix.shape[0],) or keys.dtype.kind not in "iu":
                raise ValueError(f"keys: expected one integer per token ({matrix.shape[0]},); "
                                 f"got shape {keys.shape} of {keys.dtype}")
            keys = keys.astype(np.int64)
        self._set(matrix, offsets, keys)

    def _set(self, matrix, offsets, keys=None):
        for a in (matrix.indptr, matrix.indices, matrix.data, offsets):
            a.flags.writeable = False
        self.matrix = matrix
        self.offsets = offsets
        self._key_source = keys if callable(keys) else _read_only(keys)
        self._data = None
        self._allowed = None

    @classmethod
    def _trusted(cls, matrix, offsets, keys=None):
        """Build from a canonical CSR float64 matrix, offsets and keys known
        valid; ``keys`` may also be a function that returns them (or None),
        called when they are first read."""
        self = cls.__new__(cls)
        self._set(matrix, offsets, keys)
        return self

    @property
    def keys(self):
        """The word key of each token (int64, read-only), or None.

        Computed when first read, when the maker deferred them: only a tag
        dictionary reads them, and keying every word cost a tenth of a
        prediction that never does.  (Two threads reading them at once both
        compute the same array.)
        """
        keys = self._key_source
        if callable(keys):
            keys = self._key_source = _read_only(keys())
        return keys

    def compact(self, min_width=0):
        """``(columns, sentences)``: the sorted columns the matrix uses, and
        the same sentences with their column indices renumbered into them,
        at least ``min_width`` columns wide (a learner's weights need a row).

        The renumbering keeps the order of the columns, so each row stays
        sorted and every sum a kernel takes over a row runs in the same
        order as on the global columns: a learner on the compact sentences
        computes what it would on all columns, bit for bit.  What a shard of
        a distributed fit holds (its weights shrink with its columns).
        """
        m = self.matrix
        used = np.zeros(m.shape[1], dtype=bool)
        used[m.indices] = True
        columns = np.flatnonzero(used)
        local = (np.cumsum(used, dtype=np.int64) - 1).astype(np.int32)
        renumbered = sp.csr_matrix((m.data, local[m.indices], m.indptr),
                                   shape=(m.shape[0], max(columns.size, min_width)))
        return columns, self._trusted(renumbered, self.offsets, self._key_source)

    def _keys(self, rows):
        """The keys of ``rows`` (a slice or row indices), or None."""
        return None if self.keys is None else self.keys[rows]

    # -- what the kernels read ---------------------------------------------------------

    @property
    def n_features(self):
        return self.matrix.shape[1]

    @property
    def lengths(self):
        return np.diff(self.offsets)

    @property
    def shape(self):
        return (len(self),)

    def chain_data(self):
        """The corpus as the C kernels read it (cached)."""
        if self._data is None:
            m = self.matrix
            self._data = ChainData(m.indptr, m.indices, m.data, self.offsets, m.shape[1],
                                   self._allowed)
        return self._data

    def _restricted(self, allowed):
        """The same sentences with a tag dictionary for the learners'
        decoding: token ``r`` may take only the labels
        ``alab[aptr[r]:aptr[r + 1]]`` (``allowed = (aptr, alab)``; see
        :class:`sklstruct._chain.ChainData`).  Indexing drops it."""
        new = self._trusted(self.matrix, self.offsets, self._key_source)
        new._allowed = allowed
        return new

    def split(self, per_token, start=0, stop=None):
        """Cut a per-token array into per-sentence arrays (views, 10x faster
        than ``np.split``: :func:`sklstruct._chain.split_rows`): of every
        sentence, or of sentences ``start:stop`` when ``per_token`` holds
        their rows only."""
        n = len(self)
        start = check_number(start, "start", 0, n, integer=True)
        stop = check_number(n if stop is None else stop, "stop", start, n, integer=True)
        per_token = np.asarray(per_token)
        rows = int(self.offsets[stop] - self.offsets[start])
        if per_token.ndim < 1 or per_token.shape[0] != rows:
            raise ValueError(f"per_token must have one row per token of sentences "
                             f"{start}:{stop} ({rows}); got shape {per_token.shape}")
        bounds = self.offsets[start:stop + 1]
        return split_rows(per_token, np.ascontiguousarray(bounds, dtype=np.int64))

    # -- the list face --------------------------------------------------------------------

    def __len__(self):
        return self.offsets.shape[0] - 1

    def __getitem__(self, key):
        if isinstance(key, tuple) and len(key) == 2 and key[1] is Ellipsis:
            key = key[0]          # sklearn's _safe_indexing asks for X[key, ...]
        n = len(self)
        if isinstance(key, Integral) and not isinstance(key, (bool, np.bool_)):
            i = int(key)
            if not -n <= i < n:
                raise IndexError(f"sentence index {i} out of range for {n} sentences")
            i %= n
            return self.matrix[self.offsets[i]:self.offsets[i + 1]]
        if isinstance(key, slice):
            idx = np.arange(n)[key]
            if idx.size and (key.step is None or key.step == 1):
                a, b = self.offsets[idx[0]], self.offsets[idx[-1] + 1]
                return self._trusted(self.matrix[a:b], self.offsets[idx[0]:idx[-1] + 2] - a,
                                     self._keys(slice(a, b)))
        else:
            idx = np.asarray(key)
            if idx.dtype == bool:
                if idx.shape != (n,):
                    raise IndexError(f"boolean index of shape {idx.shape} for {n} sentences")
                idx = np.flatnonzero(idx)
            elif idx.dtype.kind not in "iu" and idx.size:
                raise IndexError(f"sentences are indexed by integers, slices or boolean "
                                 f"masks; got {idx.dtype}")
            idx = idx.astype(np.intp).ravel()
            if idx.size and (idx.min() < -n or idx.max() >= n):
                raise IndexError(f"sentence index out of range for {n} sentences")
            idx %= max(n, 1)
        if idx.size == 0:
            raise IndexError("an empty selection of sentences is not a corpus")
        lengths = self.lengths[idx]
        offsets = np.zeros(idx.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        # rows of the chosen sentences, in order, without a Python loop
        rows = np.arange(offsets[-1]) - np.repeat(offsets[:-1] - self.offsets[idx], lengths)
        return self._trusted(self.matrix[rows], offsets, self._keys(rows))

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __repr__(self):
        return (f"<StackedSentences: {len(self)} sentences, {self.matrix.shape[0]} tokens, "
                f"{self.n_features} features>")

    def __getstate__(self):
        return {"matrix": self.matrix, "offsets": self.offsets, "keys": self.keys}

    def __setstate__(self, state):
        self._set(state["matrix"], state["offsets"], state["keys"])


def _read_only(array):
    if array is not None:
        array.flags.writeable = False
    return array


def as_stacked(X, n_features=None, name="X"):
    """``X`` as :class:`StackedSentences`, validated.

    A ``StackedSentences`` is used as it is (it was validated when made); a
    list of per-sentence matrices is stacked once: canonical int32/float64
    CSR matrices (the common case) checked in C as they are copied
    (:func:`sklstruct._stacking.stack_csr`), anything else (dense, other
    formats and dtypes, or a sentence that fails a check) sentence by
    sentence, with messages naming the sentence.  ``n_features``: the column
    count required.
    """
    if n_features is not None:
        n_features = check_number(n_features, "n_features", 0, integer=True)
    if isinstance(X, StackedSentences):
        if n_features is not None and X.n_features != n_features:
            raise ValueError(f"{name}: has {X.n_features} features; expected {n_features}")
        return X
    X = check_sentence_list(X, name)
    stacked = stack_csr(X, -1 if n_features is None else n_features, MAX_ABS_FEATURE)
    if isinstance(stacked, tuple):
        return StackedSentences._trusted(*stacked)
    # a sentence is not a canonical int32/float64 CSR matrix, or is invalid:
    # the general path checks every sentence and names the problem
    return _stack_checked(X, n_features, name)


def _stack_checked(X, n_features, name):
    """The general path of :func:`as_stacked`: each sentence of the list
    ``X`` checked (and converted) by ``check_csr_sentence``, then stacked."""
    blocks = []
    for i, x in enumerate(X):
        x = check_csr_sentence(x, f"{name}[{i}]", n_features)
        n_features = x.shape[1]
        blocks.append(x)
    lengths = np.fromiter((b.shape[0] for b in blocks), dtype=np.int64, count=len(blocks))
    offsets = np.zeros(len(blocks) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    matrix = sp.vstack(blocks, format="csr", dtype=np.float64)
    return StackedSentences._trusted(matrix, offsets)


# -- parameter layout ---------------------------------------------------------------------

def pack_chain(transitions, start, end, trigrams=None):
    """Stack transitions (L, L), start (L,) and end (L,) scores into P (L + 2, L);
    with ``trigrams`` (L, L, L), a second-order chain, P (L + 2 + L * L, L)
    whose row ``L + 2 + a * L + b`` is ``trigrams[a, b]``."""
    transitions = _real_array(transitions, "transitions")
    L = transitions.shape[0]
    parts = [("transitions", transitions, (L, L)), ("start", start, (L,)), ("end", end, (L,))]
    if trigrams is not None:
        parts.append(("trigrams", trigrams, (L, L, L)))
    blocks = []
    for name, value, shape in parts:
        value = _real_array(value, name, len(shape))
        if value.shape != shape or not L:
            raise ValueError(f"{name} must have shape {shape} (L = {L} labels, from "
                             f"transitions {transitions.shape}); got {value.shape}")
        blocks.append(value.reshape(-1, L))
    return np.ascontiguousarray(np.vstack(blocks))


def unpack_chain(P):
    """The inverse of :func:`pack_chain`: copies of (transitions, start, end,
    trigrams), ``trigrams`` of shape (L, L, L) or None for a first-order P."""
    P = _real_array(P, "P")
    if not P.shape[1]:
        raise ValueError(f"P must have one column per label; got shape {P.shape}")
    L = P.shape[1]
    chain_order(P, L)
    trigrams = P[L + 2:].reshape(L, L, L).copy() if P.shape[0] > L + 2 else None
    return P[:L].copy(), P[L].copy(), P[L + 1].copy(), trigrams


# -- restricted decoding ------------------------------------------------------------------

#: The score decoding gives a transition a constraint forbids, and (lower) a
#: label outside a token's tag dictionary: finite, so that sums and
#: differences stay numbers, and beyond any sum of learned weights, so that
#: the best sequence keeps to the restrictions whenever one does; when none
#: does, it breaks the fewest transition constraints.
#: (FORBIDDEN_LABEL, -1e200, comes from the learners' kernels, which score with it.)
FORBIDDEN_TRANSITION = -1e100

def allowed_transitions(scheme, labels):
    """Which label may follow which under a chunk tagging scheme.

    Parameters
    ----------
    scheme : {"IOB2", "IOBES", "BILOU"} (or "bio", the same as "IOB2")
        The rules of :data:`sklstruct._schemes.SCHEMES`.
        IOB2: ``I-X`` only after ``B-X`` or ``I-X``.  IOBES (BILOU with ``L``
        for ``E``, ``U`` for ``S``): ``I-X`` and ``E-X`` only after ``B-X`` or
        ``I-X``, which must be followed by one of them; a sentence starts
        and ends outside a chunk.
    labels : array-like of str
        Labels in the order of the model (``classes_``): ``"O"`` or a
        prefix of the scheme, ``"-"`` and a type (``"B-NP"``).

    Returns
    -------
    allowed : ndarray of bool, shape (n_labels + 2, n_labels)
        In the layout of :func:`pack_chain`: ``allowed[a, b]`` whether label
        ``b`` may follow label ``a``; row ``n_labels`` the labels that may
        start a sentence, row ``n_labels + 1`` those that may end one.
    """
    name = str(scheme).upper()
    name = "IOB2" if name == "BIO" else name
    known = sorted(n for n, rules in SCHEMES.items() if rules.transitions is not None)
    if name not in known:
        raise ValueError(f"constraints: unknown scheme {scheme!r}; expected one of "
                         f"{known} or 'bio'")
    letters, rules = SCHEMES[name].prefixes, SCHEMES[name].transitions
    if isinstance(labels, (str, bytes)) or np.ndim(labels) != 1 or not len(labels):
        raise ValueError(f"labels: expected a non-empty 1-D sequence of labels (classes_); "
                         f"got {describe(labels)}")
    parts = []
    for label in np.asarray(labels).tolist():
        label = label.decode("utf-8", "surrogateescape") if isinstance(label, bytes) \
            else str(label)
        prefix, _, kind = label.partition("-")
        if label != "O" and not (len(prefix) == 1 and prefix in letters and kind):
            raise ValueError(f"constraints={scheme!r}: label {label!r} is neither 'O' nor "
                             f"one of {', '.join(letters)} followed by '-' and a "
                             "type")
        parts.append(("O", "") if label == "O" else (prefix, kind))
    pre = np.array([p for p, _ in parts] + ["O"])        # the last: outside the sentence
    kind = np.array([k for _, k in parts] + [""])
    cont = np.isin(pre, list(rules.continues))
    opened = np.isin(pre, list(rules.opens))
    must = np.isin(pre, list(rules.must_continue))
    same = kind[:, None] == kind[None, :]
    ok = np.where(cont[None, :], opened[:, None] & same, ~must[:, None])
    L = len(parts)
    allowed = np.empty((L + 2, L), dtype=bool)
    allowed[:L] = ok[:L, :L]
    allowed[L] = ok[L, :L]           # after "outside": the first label
    allowed[L + 1] = ok[:L, L]       # before "outside": the last label
    return allowed


def restrict_scores(E, P, allowed_labels=None, allowed=None):
    """Emission and chain scores under which decoding keeps to restrictions.

    Every decoder (Viterbi, exact k-best, their loss-augmented forms,
    forward-backward) run on the returned scores searches only the label
    sequences that the restrictions allow, whenever one exists: a label
    outside a token's allowed set scores :data:`FORBIDDEN_LABEL`, a
    forbidden transition (or first or last label) :data:`FORBIDDEN_TRANSITION`.

    Parameters
    ----------
    E : ndarray of shape (T, L)
    P : ndarray of shape (L + 2, L) or (L + 2 + L * L, L)
    allowed_labels : ndarray of bool, shape (T, L), optional
        The labels each token may take (a tag dictionary).
    allowed : ndarray of bool, shape (L + 2, L), optional
        Allowed transitions, first and last labels (:func:`allowed_transitions`).

    Returns
    -------
    E, P : ndarray
        Copies with the forbidden scores (the inputs when no restriction).
    """
    P = _real_array(P, "P")
    L = P.shape[1]
    chain_order(P, L)
    if allowed_labels is not None:
        E = _real_array(E, "E")
        E = np.where(_bool_array(allowed_labels, "allowed_labels", (E.shape[0], L)), E,
                     FORBIDDEN_LABEL)
    if allowed is not None:
        P = P.copy()
        P[:L + 2][~_bool_array(allowed, "allowed", (L + 2, L))] = FORBIDDEN_TRANSITION
    return E, P


def _bool_array(a, name, shape):
    """``a`` as a boolean array of ``shape``: 0.5 or NaN would not say allowed
    or not, and a broadcast row would restrict every token alike."""
    arr = np.asarray(a)
    if arr.dtype != bool:
        raise TypeError(f"{name} must be a boolean array; got dtype {arr.dtype}")
    if arr.shape != shape:
        raise ValueError(f"{name} must have shape {shape}; got {arr.shape}")
    return arr


# -- the plain NumPy reference ------------------------------------------------------------

def emission_scores(x, W):
    """Emission scores ``E = x @ W`` of one sentence, as a dense (T, L) array."""
    W = _real_array(W, "W")
    if np.ndim(x) != 2 or x.shape[1] != W.shape[0]:
        raise ValueError(f"x (T, F) and W (F, L) must be 2-D with W's rows x's columns; "
                         f"got shapes {np.shape(x)} and {W.shape}")
    E = x @ W
    return np.ascontiguousarray(E.toarray() if sp.issparse(E) else E, dtype=np.float64)


def joint_feature(x, y, n_labels, order=1):
    """The joint feature vector F(x, y) as a pair ``(F_W, F_P)``.

    Parameters
    ----------
    x : sparse or dense matrix of shape (T, F)
        Token features of one sentence.
    y : array-like of shape (T,)
        Encoded labels in ``[0, n_labels)``.
    n_labels : int
    order : {1, 2}, default=1
        With 2, ``F_P`` also counts the label trigrams.

    Returns
    -------
    F_W : ndarray of shape (F, n_labels)
        Emission block: column ``l`` is the sum of the feature rows of the
        tokens labelled ``l`` (repeated features are counted with their
        multiplicity).
    F_P : ndarray of shape (n_labels + 2, n_labels), or (n_labels + 2 + n_labels ** 2, n_labels)
        Transition counts, then the start and end indicators (in the layout
        of :func:`pack_chain`), then with ``order=2`` the trigram counts.
    """
    if order not in (1, 2) or isinstance(order, (bool, np.bool_)):
        raise ValueError(f"order must be 1 or 2; got {describe(order)}")
    n_labels = check_number(n_labels, "n_labels", 1, integer=True)
    if np.ndim(x) != 2:
        raise ValueError(f"x must be a 2-D matrix (T, F); got shape {np.shape(x)}")
    y = _check_labels(y, x.shape[0], n_labels, "y").astype(np.intp)
    T = y.shape[0]
    if T == 0:
        raise ValueError("x and y: the sentence is empty")
    onehot = sp.csr_matrix((np.ones(T), (np.arange(T), y)), shape=(T, n_labels))
    F_W = np.asarray((sp.csr_matrix(x).T @ onehot).toarray())
    F_P = np.zeros((n_labels + 2 + (n_labels ** 2 if order == 2 else 0), n_labels))
    np.add.at(F_P, (y[:-1], y[1:]), 1.0)
    F_P[n_labels, y[0]] += 1.0
    F_P[n_labels + 1, y[-1]] += 1.0
    if order == 2:
        np.add.at(F_P, (n_labels + 2 + y[:-2] * n_labels + y[1:-1], y[2:]), 1.0)
    return F_W, F_P

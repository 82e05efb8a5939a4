# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The linear-chain model in C (first and second order), beside its decoding kernels.

``_viterbi.pyx`` decodes; this module holds the rest of the model that the
learners share, so that no learner kernel needs another learner's:

* :class:`ChainData`: the stacked CSR corpus (all sentences in one matrix plus
  sentence offsets), as the learners' kernels read it, and :func:`split_rows`,
  which cuts per-token results into per-sentence views;
* :class:`ChainWeights`: the weights ``w = (W, P)`` in the layout of the
  decoding kernels (``W`` (F, L) emission weights, ``P`` (L + 2, L): label
  transitions, start row, end row; a second-order chain appends the L * L
  rows of label-trigram scores) and both halves of lazy averaging: every
  update ``w += d`` made by :c:func:`add_difference` or :c:func:`apply_diff`
  also does ``u += c * d`` with ``c`` the number of examples seen before the
  current one, and :meth:`ChainWeights.averaged` returns ``w - u / c``, the
  average of the weights after each example (Daume III 2006, section 2.4.1);
* exact joint-feature differences ``dF(y) = F(x, y^n) - F(x, y)``
  (:c:func:`build_diff`), their norms and inner products (a ``KeyTable`` sums
  repeated keys first, so products are exact), margins ``w . dF(y)``
  (:c:func:`margin`), the costs ``L(y^n, y)`` (:c:func:`cost_of`);
* the k best (loss-augmented) candidates of one sentence under the current
  weights (:c:func:`decode_candidates`, Mancev & Todorovic eq. 12), in a
  per-pass :class:`Workspace`.
"""

import numpy as np

cimport numpy as cnp
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.ref cimport Py_INCREF, PyTypeObject
from libc.stdlib cimport malloc, free
from sklstruct._viterbi cimport (add_hamming, compute_emission, decode_best, kbest, kbest_alloc,
                                kbest_free, lattice_nodes, viterbi_allowed)

from sklstruct._viterbi import _check_allowed
from sklstruct._validation import check_alloc

cnp.import_array()

cdef extern from "numpy/arrayobject.h":
    # a new reference; steals a reference to descr
    object PyArray_NewFromDescr(PyTypeObject* subtype, cnp.PyArray_Descr* descr, int nd,
                                const cnp.npy_intp* dims, const cnp.npy_intp* strides,
                                void* data, int flags, object obj)
    # steals a reference to obj
    int PyArray_SetBaseObject(cnp.ndarray arr, object obj) except -1
    PyTypeObject PyArray_Type

#: The costs L(y^n, y), by name.
COSTS = {"hamming": COST_HAMMING, "zero_one": COST_ZERO_ONE}


def split_rows(cnp.ndarray arr not None, const long long[::1] bounds):
    """``[arr[b[i] - b[0]:b[i + 1] - b[0]] for i in range(len(b) - 1)]`` for
    ``b = bounds``: views of ``arr`` cut along its first axis.

    The same views as slicing in a Python loop, made 3x faster (0.12 ms
    instead of 0.38 ms for the 1,517 sentences of CoNLL-2002 Spanish testb).
    The views are made under the GIL, so while prediction's threads build
    their sentences' label arrays this way they hold up each other's
    decoding less.  ``bounds`` must be non-decreasing and within ``arr``'s
    rows (``ValueError`` otherwise).
    """
    cdef Py_ssize_t n = bounds.shape[0] - 1, i
    cdef int d, nd = cnp.PyArray_NDIM(arr)
    if n < 0:
        raise ValueError("split_rows: bounds must hold at least one value")
    if nd < 1:
        raise ValueError("split_rows: arr must have at least one dimension")
    cdef long long b0 = bounds[0], rows = cnp.PyArray_DIM(arr, 0)
    for i in range(n):
        if bounds[i + 1] < bounds[i] or bounds[i + 1] - b0 > rows:
            raise ValueError(f"split_rows: bounds[{i + 1}] = {bounds[i + 1]} is not within "
                             f"[{bounds[i]}, {b0 + rows}]")
    cdef cnp.npy_intp* dims = <cnp.npy_intp*>malloc(nd * sizeof(cnp.npy_intp))
    if dims == NULL:
        raise MemoryError()
    for d in range(nd):
        dims[d] = cnp.PyArray_DIM(arr, d)
    cdef cnp.npy_intp* strides = cnp.PyArray_STRIDES(arr)
    cdef char* data = <char*>cnp.PyArray_DATA(arr)
    cdef cnp.PyArray_Descr* descr = cnp.PyArray_DESCR(arr)
    cdef int flags = cnp.NPY_ARRAY_WRITEABLE if cnp.PyArray_ISWRITEABLE(arr) else 0
    cdef list out = PyList_New(n)
    cdef cnp.ndarray view
    try:
        for i in range(n):
            dims[0] = bounds[i + 1] - bounds[i]
            Py_INCREF(<object>descr)
            view = PyArray_NewFromDescr(&PyArray_Type, descr, nd, dims, strides,
                                        data + (bounds[i] - b0) * strides[0], flags, None)
            Py_INCREF(arr)
            PyArray_SetBaseObject(view, arr)
            Py_INCREF(view)                 # the list's reference
            PyList_SET_ITEM(out, i, view)
    finally:
        free(dims)
    return out

cdef class ChainData:
    """The stacked corpus as the kernels read it.

    Parameters
    ----------
    indptr : int64 array (n_rows + 1,)
    indices : int32 array
    data : float64 array
        The CSR matrix of all tokens, rows in sentence order; validated by the
        caller (:class:`sklstruct.chain.StackedSentences`).
    offsets : int64 array (n_sentences + 1,)
        Sentence ``s`` is rows ``offsets[s]:offsets[s + 1]``.
    n_features : int
    allowed : (aptr, alab) or None
        A tag dictionary: row ``r`` may take only the labels
        ``alab[aptr[r]:aptr[r + 1]]`` (ascending); the learners' candidates
        (:c:func:`decode_candidates`) are then the best allowed sequences.
    """

    def __cinit__(self, indptr, indices, data, offsets, Py_ssize_t n_features, allowed=None):
        self.indptr = np.ascontiguousarray(indptr, dtype=np.int64)
        self.indices = np.ascontiguousarray(indices, dtype=np.int32)
        self.data = np.ascontiguousarray(data, dtype=np.float64)
        self.offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        self.n_features = n_features
        cdef const long long[::1] ip = self.indptr
        cdef const int[::1] ix = self.indices
        cdef const double[::1] dt = self.data
        cdef const long long[::1] of = self.offsets
        cdef Py_ssize_t s, n = of.shape[0] - 1
        if n < 0 or ip.shape[0] != of[n] + 1 or ix.shape[0] != dt.shape[0] \
                or ip[ip.shape[0] - 1] != ix.shape[0]:
            raise ValueError("inconsistent stacked corpus arrays")
        self.c.indptr = &ip[0]
        self.c.indices = &ix[0] if ix.shape[0] > 0 else NULL
        self.c.data = &dt[0] if dt.shape[0] > 0 else NULL
        self.c.offsets = &of[0]
        self.c.n_sentences = n
        cdef const long long[::1] ap
        cdef const int[::1] al
        self.c.aptr = NULL
        self.c.alab = NULL
        self.allowed = None
        if allowed is not None:
            self.allowed = _check_allowed(allowed, of[n], 1 << 30)
            ap, al = self.allowed
            self.c.aptr = &ap[0]
            self.c.alab = &al[0] if al.shape[0] > 0 else NULL
        self.max_T = 0
        self.max_nnz = 0
        for s in range(n):
            self.max_T = max(self.max_T, of[s + 1] - of[s])
            self.max_nnz = max(self.max_nnz, ip[of[s + 1]] - ip[of[s]])

    @property
    def n_sentences(self):
        return self.c.n_sentences


cdef class ChainWeights:
    """The chain weights, their layout and lazy averaging.

    Parameters
    ----------
    n_features, n_labels : int
    average : bool
        Keep the accumulators of lazy averaging.
    order : {1, 2}, default=1
        The chain's order: 2 adds label-trigram scores.

    Attributes
    ----------
    W : ndarray of shape (n_features, n_labels)
        Emission weights (the transpose of the estimators' ``coef_``).
    P : ndarray of shape (n_labels + 2, n_labels), or (n_labels + 2 + n_labels ** 2, n_labels)
        Transitions ``P[a, b]`` (label a then b), then the start and end rows;
        with ``order=2`` then the trigram scores, ``P[L + 2 + a * L + b, c]``
        for the labels a, b, c at positions t - 2, t - 1, t.
    W_sum, P_sum : ndarrays of the same shapes, or None
        The averaging accumulators ``u``.
    n_seen : int
        The averaging clock: examples processed so far.
    """

    def __cinit__(self, Py_ssize_t n_features, Py_ssize_t n_labels, bint average=True,
                  int order=1):
        if n_features < 1 or n_labels < 1:
            raise ValueError(f"need n_features >= 1 and n_labels >= 1; got {n_features}, "
                             f"{n_labels}")
        if order not in (1, 2):
            raise ValueError(f"order must be 1 or 2; got {order}")
        cdef Py_ssize_t n_rows = n_labels + 2 + (n_labels * n_labels if order == 2 else 0)
        check_alloc(f"the weights ({n_features} features x {n_labels} labels)",
                    n_features + n_rows, n_labels, 8, 2 if average else 1,
                    remedy="use fewer feature columns (a hashing vectorizer's n_features)")
        self.order = order
        self.W = np.zeros((n_features, n_labels))
        self.P = np.zeros((n_rows, n_labels))
        self._W_sum = np.zeros_like(self.W) if average else None
        self._P_sum = np.zeros_like(self.P) if average else None
        self.sums_hold_average = False
        self.n_seen = 0

    cdef Weights* bind(self) except NULL:
        """The C view of the arrays, for one kernel call (the clock included)."""
        cdef double[:, ::1] W = self.W
        cdef double[:, ::1] P = self.P
        cdef double[:, ::1] Ws, Ps
        self.w.W = &W[0, 0]
        self.w.P = &P[0, 0]
        self.w.L = W.shape[1]
        self.w.order = self.order
        self.w.chain_base = <long long>W.shape[0] * W.shape[1]
        self.w.W_sum = NULL
        self.w.P_sum = NULL
        if self._W_sum is not None:
            Ws = self.W_sum
            Ps = self.P_sum
            self.w.W_sum = &Ws[0, 0]
            self.w.P_sum = &Ps[0, 0]
        self.w.n_seen = <double>self.n_seen
        return &self.w

    @property
    def n_features(self):
        return self.W.shape[0]

    @property
    def n_labels(self):
        return self.W.shape[1]

    @property
    def average(self):
        return self._W_sum is not None

    @property
    def W_sum(self):
        self._own_sums()
        return self._W_sum

    @property
    def P_sum(self):
        self._own_sums()
        return self._P_sum

    def _own_sums(self):
        """After ``averaged(inplace=True)``: the sums again, ``c (W - avg)``,
        in new arrays (the published average keeps its buffers).  Equal to
        the sums up to rounding, so that training continues; an estimator
        asked to continue (warm_start, partial_fit) never publishes in place
        and continues bit for bit."""
        if self.sums_hold_average:
            W_sum = np.subtract(self.W, self._W_sum)
            W_sum *= self.n_seen
            P_sum = np.subtract(self.P, self._P_sum)
            P_sum *= self.n_seen
            self._W_sum, self._P_sum = W_sum, P_sum
            self.sums_hold_average = False

    def averaged(self, inplace=False):
        """The weights to predict with: ``(W - W_sum / c, P - P_sum / c)``, the
        average of the weights after each of the ``c`` examples seen (the
        other half of the lazy trick of :c:func:`add_difference`); the raw
        weights without averaging or before any example.

        ``inplace=True`` writes the average over the sums and returns those
        arrays (sums_hold_average): no array of the size of W is allocated,
        so a fit's peak memory is the raw and summed weights only."""
        if self._W_sum is None or self.n_seen == 0:
            return self.W.copy(), self.P.copy()
        if self.sums_hold_average:       # (the published coef_ is a view of these)
            return ((self._W_sum, self._P_sum) if inplace
                    else (self._W_sum.copy(), self._P_sum.copy()))
        out = []
        for raw, acc in ((self.W, self._W_sum), (self.P, self._P_sum)):
            # W - W_sum / c into one array: no second temporary of W's size
            avg = acc if inplace else np.empty_like(acc)
            np.divide(acc, self.n_seen, out=avg)
            out.append(np.subtract(raw, avg, out=avg))
        self.sums_hold_average = bool(inplace)
        return tuple(out)

    def move_to(self, W, P, rows=None):
        """Move the raw weights to ``(W, P)`` as one update taken at the
        current clock: ``w += d, u += c d`` with ``d = (W, P) - w``, so that
        the average stays the average of the weights held after each
        example (the mixing of :class:`sklstruct.ParameterMixingTagger`).

        ``rows`` (distinct row indices of W): move those rows of W only, ``W``
        holding their new values; the other rows keep theirs."""
        rows = slice(None) if rows is None else rows
        for raw, acc, new, at in ((self.W, self.W_sum, W, rows), (self.P, self.P_sum, P, slice(None))):
            step = new - raw[at]
            raw[at] += step
            if acc is not None:
                acc[at] += self.n_seen * step

    def __reduce__(self):
        return (_rebuild_weights, (self.W, self.P, self._W_sum, self._P_sum, self.n_seen,
                                   self.order, self.sums_hold_average))


def _rebuild_weights(W, P, W_sum, P_sum, n_seen, order=1, sums_hold_average=False):
    cdef ChainWeights w = ChainWeights(W.shape[0], W.shape[1], W_sum is not None, order)
    w.W[...] = W
    w.P[...] = P
    if W_sum is not None:
        w._W_sum[...] = W_sum
        w._P_sum[...] = P_sum
    w.sums_hold_average = sums_hold_average
    w.n_seen = n_seen
    return w


# ---------------------------------------------------------------------------
# Margins and sparse updates
# ---------------------------------------------------------------------------

cdef double margin(Corpus* X, Py_ssize_t row0, Py_ssize_t T, const int* gold,
                   const int* path, Weights* w) noexcept nogil:
    """w . dF(path) = s(gold) - s(path) under the current weights, exactly."""
    cdef Py_ssize_t t, j, L = w.L
    cdef double d = 0.0
    cdef const double* P = w.P
    for t in range(T):
        if gold[t] != path[t]:
            for j in range(X.indptr[row0 + t], X.indptr[row0 + t + 1]):
                d += X.data[j] * (w.W[<Py_ssize_t>X.indices[j] * L + gold[t]]
                                  - w.W[<Py_ssize_t>X.indices[j] * L + path[t]])
    for t in range(1, T):
        d += P[gold[t - 1] * L + gold[t]] - P[path[t - 1] * L + path[t]]
    d += P[L * L + gold[0]] - P[L * L + path[0]]
    d += P[(L + 1) * L + gold[T - 1]] - P[(L + 1) * L + path[T - 1]]
    if w.order == 2:
        for t in range(2, T):
            if gold[t - 2] != path[t - 2] or gold[t - 1] != path[t - 1] or gold[t] != path[t]:
                d += P[_trigram(L, gold, t)] - P[_trigram(L, path, t)]
    return d


cdef inline Py_ssize_t _trigram(Py_ssize_t L, const int* y, Py_ssize_t t) noexcept nogil:
    """Index into P of the trigram score of (y[t-2], y[t-1], y[t])."""
    return (L + 2) * L + (y[t - 2] * L + y[t - 1]) * L + y[t]


cdef inline void _add(double* a, double* a_sum, Py_ssize_t i, double step,
                      double step_sum) noexcept nogil:
    """a[i] += step, and the averaging accumulator u[i] += c * step."""
    a[i] += step
    if a_sum != NULL:
        a_sum[i] += step_sum


cdef void add_difference(Corpus* X, Py_ssize_t row0, Py_ssize_t T, const int* gold,
                         const int* path, Weights* w, double step) noexcept nogil:
    """w += step * dF(path) = step * (F(x, gold) - F(x, path)), sparsely, without
    building dF (the perceptron's update)."""
    cdef Py_ssize_t t, j, f, L = w.L
    cdef double v, ss = step * w.n_seen
    for t in range(T):
        if gold[t] != path[t]:
            for j in range(X.indptr[row0 + t], X.indptr[row0 + t + 1]):
                v = X.data[j]
                f = <Py_ssize_t>X.indices[j] * L
                _add(w.W, w.W_sum, f + gold[t], step * v, ss * v)
                _add(w.W, w.W_sum, f + path[t], -step * v, -ss * v)
    for t in range(1, T):
        if gold[t - 1] != path[t - 1] or gold[t] != path[t]:
            _add(w.P, w.P_sum, gold[t - 1] * L + gold[t], step, ss)
            _add(w.P, w.P_sum, path[t - 1] * L + path[t], -step, -ss)
    if gold[0] != path[0]:
        _add(w.P, w.P_sum, L * L + gold[0], step, ss)
        _add(w.P, w.P_sum, L * L + path[0], -step, -ss)
    if gold[T - 1] != path[T - 1]:
        _add(w.P, w.P_sum, (L + 1) * L + gold[T - 1], step, ss)
        _add(w.P, w.P_sum, (L + 1) * L + path[T - 1], -step, -ss)
    if w.order == 2:
        for t in range(2, T):
            if gold[t - 2] != path[t - 2] or gold[t - 1] != path[t - 1] or gold[t] != path[t]:
                _add(w.P, w.P_sum, _trigram(L, gold, t), step, ss)
                _add(w.P, w.P_sum, _trigram(L, path, t), -step, -ss)


cdef bint same_path(const int* a, const int* b, Py_ssize_t T) noexcept nogil:
    cdef Py_ssize_t t
    for t in range(T):
        if a[t] != b[t]:
            return False
    return True


# ---------------------------------------------------------------------------
# Exact joint-feature differences dF(y) = F(x, gold) - F(x, y)
# ---------------------------------------------------------------------------

cdef Py_ssize_t diff_capacity(Py_ssize_t nnz, Py_ssize_t T) noexcept nogil:
    """Entries a Diff of a sentence with ``nnz`` stored features and T tokens
    may need before merging: two per feature, two per chain factor (T + 1
    bigram, start and end factors, T - 2 trigrams in a second-order chain)."""
    return 2 * nnz + 4 * T + 2


cdef Py_ssize_t template_capacity(Py_ssize_t nnz, Py_ssize_t T) noexcept nogil:
    """Entries the sum of the single-position differences dF(m^J), J = {i},
    of a sentence may need: per position two per feature, at most eight for
    its two transitions and the start or end label, and six for the three
    trigrams that contain it (second order)."""
    return 2 * nnz + 14 * T + 2


cdef inline Py_ssize_t _put(Entry* e, Py_ssize_t m, long long key, double val) noexcept nogil:
    e[m].key = key
    e[m].val = val
    return m + 1


cdef void build_diff(Corpus* X, Py_ssize_t row0, Py_ssize_t T, const int* gold,
                     const int* path, Weights* w, Diff* d) noexcept nogil:
    """dF(path) = F(x, gold) - F(x, path) as (key, value) entries in token
    order, only where the sequences differ.  A key may repeat (a feature
    present at several differing positions, a transition used twice): its
    values add up, in apply_diff as in the products of a KeyTable, so norms
    and inner products are exact.  d.e must hold diff_capacity(nnz(sentence),
    T) entries."""
    cdef Py_ssize_t t, j, m = 0, L = w.L
    cdef long long f, c = w.chain_base
    cdef Entry* e = d.e
    for t in range(T):
        if gold[t] != path[t]:
            for j in range(X.indptr[row0 + t], X.indptr[row0 + t + 1]):
                f = <long long>X.indices[j] * L
                m = _put(e, m, f + gold[t], X.data[j])
                m = _put(e, m, f + path[t], -X.data[j])
    for t in range(1, T):
        if gold[t - 1] != path[t - 1] or gold[t] != path[t]:
            m = _put(e, m, c + gold[t - 1] * L + gold[t], 1.0)
            m = _put(e, m, c + path[t - 1] * L + path[t], -1.0)
    if gold[0] != path[0]:
        m = _put(e, m, c + L * L + gold[0], 1.0)
        m = _put(e, m, c + L * L + path[0], -1.0)
    if gold[T - 1] != path[T - 1]:
        m = _put(e, m, c + (L + 1) * L + gold[T - 1], 1.0)
        m = _put(e, m, c + (L + 1) * L + path[T - 1], -1.0)
    if w.order == 2:
        for t in range(2, T):
            if gold[t - 2] != path[t - 2] or gold[t - 1] != path[t - 1] or gold[t] != path[t]:
                m = _put(e, m, c + _trigram(L, gold, t), 1.0)
                m = _put(e, m, c + _trigram(L, path, t), -1.0)
    d.n = m


cdef int table_init(KeyTable* h, Py_ssize_t capacity) noexcept nogil:
    """A table for up to ``capacity`` distinct keys; -1 if out of memory."""
    cdef Py_ssize_t i
    h.bits = 4
    while (1 << h.bits) < 2 * capacity:
        h.bits += 1
    h.keys = <long long*>malloc((1 << h.bits) * sizeof(long long))
    h.vals = <double*>malloc((1 << h.bits) * sizeof(double))
    h.used = <Py_ssize_t*>malloc(max(capacity, 1) * sizeof(Py_ssize_t))
    h.n_used = 0
    if h.keys == NULL or h.vals == NULL or h.used == NULL:
        return -1
    for i in range(1 << h.bits):
        h.keys[i] = -1
    return 0


cdef void table_free(KeyTable* h) noexcept nogil:
    free(h.keys)
    free(h.vals)
    free(h.used)
    h.keys = NULL
    h.vals = NULL
    h.used = NULL


cdef inline Py_ssize_t _slot(KeyTable* h, long long key) noexcept nogil:
    """Open addressing with linear probing from a Fibonacci hash of the key."""
    cdef Py_ssize_t i = <Py_ssize_t>((<unsigned long long>key * 0x9E3779B97F4A7C15ULL)
                                     >> (64 - h.bits))
    cdef Py_ssize_t mask = (1 << h.bits) - 1
    while h.keys[i] != -1 and h.keys[i] != key:
        i = (i + 1) & mask
    return i


cdef void table_load(KeyTable* h, Diff* d) noexcept nogil:
    """Hold dF in the (empty) table, repeated keys summed."""
    cdef Py_ssize_t i, slot
    for i in range(d.n):
        slot = _slot(h, d.e[i].key)
        if h.keys[slot] == -1:
            h.keys[slot] = d.e[i].key
            h.vals[slot] = 0.0
            h.used[h.n_used] = slot
            h.n_used += 1
        h.vals[slot] += d.e[i].val


cdef double table_dot(KeyTable* h, Diff* d) noexcept nogil:
    """Exact dF(held) . dF(d): d's repeated keys may stay unmerged."""
    cdef Py_ssize_t i, slot
    cdef double s = 0.0
    for i in range(d.n):
        slot = _slot(h, d.e[i].key)
        if h.keys[slot] != -1:
            s += d.e[i].val * h.vals[slot]
    return s


cdef void table_clear(KeyTable* h) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(h.n_used):
        h.keys[h.used[i]] = -1
    h.n_used = 0


cdef double table_sqnorm(KeyTable* h) noexcept nogil:
    """||dF(held)||^2 from the held values (repeated keys already summed)."""
    cdef Py_ssize_t i
    cdef double s = 0.0, v
    for i in range(h.n_used):
        v = h.vals[h.used[i]]
        s += v * v
    return s


cdef double diff_sqnorm(KeyTable* h, Diff* d) noexcept nogil:
    """||dF||^2, exactly (repeated features and positions summed first)."""
    cdef double s
    table_load(h, d)
    s = table_sqnorm(h)
    table_clear(h)
    return s


cdef void gram(KeyTable* h, Diff* diffs, Py_ssize_t m, double* G) noexcept nogil:
    """The exact Gram matrix G[a, b] = dF_a . dF_b of m diffs (m x m, C order)."""
    cdef Py_ssize_t a, b
    for a in range(m):
        table_load(h, &diffs[a])
        G[a * m + a] = table_sqnorm(h)
        for b in range(a + 1, m):
            G[a * m + b] = table_dot(h, &diffs[b])
            G[b * m + a] = G[a * m + b]
        table_clear(h)


cdef void apply_diff(Diff* d, Weights* w, double step) noexcept nogil:
    """w += step * dF, sparsely (and the averaging accumulators)."""
    cdef Py_ssize_t i
    cdef long long key
    cdef double v, ss = step * w.n_seen
    for i in range(d.n):
        key = d.e[i].key
        v = d.e[i].val
        if key < w.chain_base:
            _add(w.W, w.W_sum, key, step * v, ss * v)
        else:
            _add(w.P, w.P_sum, key - w.chain_base, step * v, ss * v)


cdef double diff_margin(Diff* d, Weights* w) noexcept nogil:
    """w . dF, from the entries of dF (repeated keys add up, so it is exact)."""
    cdef Py_ssize_t i
    cdef long long key
    cdef double s = 0.0
    for i in range(d.n):
        key = d.e[i].key
        if key < w.chain_base:
            s += d.e[i].val * w.W[key]
        else:
            s += d.e[i].val * w.P[key - w.chain_base]
    return s


cdef double cost_of(const int* gold, const int* path, Py_ssize_t T, int cost) noexcept nogil:
    """L(gold, path): Hamming distance or 0/1 loss."""
    cdef Py_ssize_t t, h = 0
    for t in range(T):
        h += gold[t] != path[t]
    if cost == COST_ZERO_ONE:
        return 1.0 if h > 0 else 0.0
    return <double>h


# ---------------------------------------------------------------------------
# Candidates: the k best (loss-augmented) sequences of one sentence
# ---------------------------------------------------------------------------

cdef Py_ssize_t candidates_needed(Py_ssize_t k, bint augmented, int cost) noexcept nogil:
    """Sequences the decoder must find for k candidates: the 0/1-augmented k
    best are among the k + 1 best by score."""
    return max(k, 1) + (1 if augmented and cost == COST_ZERO_ONE else 0)


cdef double best_sequence(Workspace ws, Corpus* X, Py_ssize_t row0, Py_ssize_t T, Weights* w,
                          int* out) noexcept nogil:
    """The best sequence of one sentence under the current weights into
    ``out`` (over the allowed labels when the corpus has them); its score."""
    cdef Py_ssize_t L = w.L
    compute_emission(X.indptr, X.indices, X.data, row0, T, w.W, L, ws.E)
    if X.aptr != NULL and w.order == 1:
        return viterbi_allowed(ws.E, T, L, w.P, X.aptr + row0, X.alab, ws.kb.delta, out)
    if X.aptr != NULL:
        _forbid_labels(ws.E, T, L, X.aptr + row0, X.alab)
    return decode_best(ws.E, T, L, w.P, w.order, ws.kb.delta, ws.kb.back, out)


cdef Py_ssize_t decode_candidates(Workspace ws, Corpus* X, Py_ssize_t row0, Py_ssize_t T,
                                  const int* gold, Weights* w, Py_ssize_t k, bint augmented,
                                  int cost) noexcept nogil:
    """The k best sequences of one sentence under the current weights, into
    ws.paths (best first; scores in ws.scores); returns how many exist.

    With ``augmented`` they are the loss-augmented best of eq. 12, argmax
    w.F(x, y) + L(y^n, y): Hamming cost is added to the emissions; the 0/1
    k best are the (k + 1) best by score re-ranked with the loss."""
    cdef Py_ssize_t n, K, L = w.L
    cdef bint zero_one = augmented and cost == COST_ZERO_ONE
    # (the chain's order is the decoder scratch's, allocated to w.order)
    compute_emission(X.indptr, X.indices, X.data, row0, T, w.W, L, ws.E)
    if augmented and not zero_one:
        add_hamming(ws.E, T, L, gold, 1.0)
    K = candidates_needed(k, augmented, cost)
    if X.aptr != NULL and K == 1 and w.order == 1:
        # the best allowed sequence, over each token's allowed labels only
        ws.scores[0] = viterbi_allowed(ws.E, T, L, w.P, X.aptr + row0, X.alab, ws.kb.delta,
                                       ws.paths)
        return 1
    if X.aptr != NULL:
        _forbid_labels(ws.E, T, L, X.aptr + row0, X.alab)
    n = kbest(ws.E, T, L, w.P, K, &ws.kb, ws.paths, ws.scores)
    if X.aptr != NULL:
        # fewer than K allowed sequences: the rest break the dictionary
        while n > 1 and ws.scores[n - 1] < _FORBIDDEN / 2:
            n -= 1
    if zero_one:
        n = _rerank_zero_one(ws.paths, ws.scores, n, T, gold, k, ws.tmp)
    return n


#: The score of a label outside its token's tag dictionary
#: (sklstruct.chain.FORBIDDEN_LABEL is this one).
cdef double _FORBIDDEN = -1e200
FORBIDDEN_LABEL = _FORBIDDEN


cdef void _forbid_labels(double* E, Py_ssize_t T, Py_ssize_t L, const long long* aptr,
                         const int* alab) noexcept nogil:
    """Score every label outside its token's allowed list FORBIDDEN_LABEL
    (the lists ascending: one merge per token)."""
    cdef Py_ssize_t t, l, i
    for t in range(T):
        if aptr[t + 1] - aptr[t] == L:
            continue
        i = aptr[t]
        for l in range(L):
            if i < aptr[t + 1] and alab[i] == l:
                i += 1
            else:
                E[t * L + l] = _FORBIDDEN


cdef Py_ssize_t _rerank_zero_one(int* paths, double* scores, Py_ssize_t n, Py_ssize_t T,
                                 const int* gold, Py_ssize_t k, int* row) noexcept nogil:
    """Turn the n best sequences by score into the (up to) k best by score + 0/1
    loss: every non-gold sequence gains 1, the gold one keeps its place value.
    Stable insertion sort of the n entries, then keep k."""
    cdef Py_ssize_t a, b, t
    cdef double sa
    for a in range(n):
        if not same_path(paths + a * T, gold, T):
            scores[a] += 1.0
    for a in range(1, n):
        sa = scores[a]
        for t in range(T):
            row[t] = paths[a * T + t]
        b = a - 1
        while b >= 0 and scores[b] < sa:
            scores[b + 1] = scores[b]
            for t in range(T):
                paths[(b + 1) * T + t] = paths[b * T + t]
            b -= 1
        scores[b + 1] = sa
        for t in range(T):
            paths[(b + 1) * T + t] = row[t]
    return n if n < k else k


cdef class Workspace:
    """Scratch buffers of one pass over a corpus, sized for its longest sentence.

    Parameters
    ----------
    data : ChainData
    L : int
        Number of labels.
    order : {1, 2}
        The chain's order (the decoder's lattice).
    K : int
        Sequences the decoder finds per sentence (see ``candidates_needed``).
    n_diffs : int
        Joint-feature differences held at once (and the size of their Gram
        matrix, ``G``, and of ``ell``, ``alpha``, ``grad``).
    templates : bool, default=False
        Size each difference for a sum of single-position differences
        (:c:func:`template_capacity`) rather than one full one.
    """

    def __cinit__(self, ChainData data, Py_ssize_t L, int order, Py_ssize_t K,
                  Py_ssize_t n_diffs, bint templates=False):
        cdef Py_ssize_t i, max_T = max(data.max_T, 1)
        cdef Py_ssize_t cap = (template_capacity(data.max_nnz, max_T) if templates
                               else diff_capacity(data.max_nnz, max_T))
        self.n_diffs = n_diffs
        self.diffs = NULL
        self.table.keys = NULL
        self.table.vals = NULL
        self.table.used = NULL
        check_alloc("the k-best scratch", K, lattice_nodes(max_T, L, order), 16)
        check_alloc("the joint-feature differences", n_diffs, cap, 16)
        check_alloc("the Gram matrix", n_diffs, n_diffs, 8)
        self.E = <double*>malloc(max_T * L * sizeof(double))
        if kbest_alloc(&self.kb, max_T, L, K, order) < 0:
            raise MemoryError()
        self.paths = <int*>malloc(K * max_T * sizeof(int))
        self.scores = <double*>malloc(K * sizeof(double))
        self.y_hat = <int*>malloc(max_T * sizeof(int))
        self.tmp = <int*>malloc(max_T * sizeof(int))
        self.tv = <double*>malloc(max_T * sizeof(double))
        self.tg = <double*>malloc(max_T * sizeof(double))
        self.G = <double*>malloc(n_diffs * n_diffs * sizeof(double))
        self.ell = <double*>malloc(n_diffs * sizeof(double))
        self.alpha = <double*>malloc(n_diffs * sizeof(double))
        self.grad = <double*>malloc(n_diffs * sizeof(double))
        if table_init(&self.table, cap) < 0:
            raise MemoryError()
        self.diffs = <Diff*>malloc(n_diffs * sizeof(Diff))
        if self.diffs != NULL:
            for i in range(n_diffs):
                self.diffs[i].e = NULL
                self.diffs[i].n = 0
            for i in range(n_diffs):
                self.diffs[i].e = <Entry*>malloc(cap * sizeof(Entry))
                if self.diffs[i].e == NULL:
                    raise MemoryError()
        if (self.E == NULL or self.paths == NULL
                or self.scores == NULL or self.y_hat == NULL or self.tmp == NULL
                or self.tv == NULL or self.tg == NULL
                or self.G == NULL or self.ell == NULL or self.alpha == NULL
                or self.grad == NULL or self.diffs == NULL):
            raise MemoryError()

    def __dealloc__(self):
        cdef Py_ssize_t i
        free(self.E); free(self.paths); free(self.scores)
        kbest_free(&self.kb)
        free(self.y_hat); free(self.tmp); free(self.tv); free(self.tg)
        free(self.G); free(self.ell)
        free(self.alpha); free(self.grad)
        table_free(&self.table)
        if self.diffs != NULL:
            for i in range(self.n_diffs):
                free(self.diffs[i].e)
            free(self.diffs)

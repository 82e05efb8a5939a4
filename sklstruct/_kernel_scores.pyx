# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Kernel emission scores over support tokens: the model of a kernel M3N
(Yu & Lam, eqs. 6-8), which its training and its prediction share.

The emission part of w is  s(x_t, y) = sum_{j in S} beta[j, y] k(x_t, x_j)
over support tokens j (training tokens that some step got wrong); the
chain part stays explicit.  A step on sentence i adds, for each token t
that y* gets wrong, alpha to beta[t, y_t] and -alpha to beta[t, y*_t]: the
kernel form of w += alpha dF.  The products <x_t, x_j> are gathered through
an inverted index of the training matrix (column f lists the rows holding
feature f) whose support rows are kept first in each column, so a query
touches only support tokens that share a feature with it; every other
support token contributes k(0) beta[j, y], summed once per label.

The trainers (``learners/_m3n_sgd.pyx``, ``learners/_m3n_smo.pyx``) update
the coefficients in a :class:`KernelState` and score through
:c:func:`kernel_rows`; prediction scores new tokens by
:func:`kernel_emissions`.
"""
import numpy as np

from libc.math cimport tanh

from sklstruct._chain cimport ChainData, Corpus

#: The kernels on support tokens, by name.
KERNELS = {"poly": KERNEL_POLY, "tanh": KERNEL_TANH}


cdef inline double _kval(Kernel* k, double z) noexcept nogil:
    cdef double u = k.gamma * z + k.coef0, p = 1.0
    cdef int i
    if k.kind == KERNEL_TANH:
        return tanh(u)
    for i in range(k.degree):
        p *= u
    return p


cdef class KernelFunction:
    """A kernel k(a, b) between token feature vectors (eqs. 6-8).

    Parameters
    ----------
    kernel : {"linear", "poly", "tanh"}
        "linear" is ``<a, b>`` (the token Gram matrix of an explicit model).
    gamma, coef0 : float
        ``(gamma <a, b> + coef0) ** degree`` or ``tanh(gamma <a, b> + coef0)``.
    degree : int
    """

    def __init__(self, str kernel, double gamma, double coef0, int degree):
        self.linear = kernel == "linear"
        if self.linear:
            kernel, gamma, coef0, degree = "poly", 1.0, 0.0, 1
        if kernel not in KERNELS:
            raise ValueError(f"unknown kernel {kernel!r}")
        self.k.kind = KERNELS[kernel]
        self.k.gamma = gamma
        self.k.coef0 = coef0
        self.k.degree = degree
        self.k.k0 = 0.0
        self.k.k0 = _kval(&self.k, 0.0)


cdef void promote(Index* ix, Corpus* X, Py_ssize_t r) noexcept nogil:
    """Make training row r a support token: move it to the head of its columns."""
    cdef long long e, e2, p, q
    cdef int f
    if ix.is_sup[r]:
        return
    ix.is_sup[r] = 1
    for e in range(X.indptr[r], X.indptr[r + 1]):
        f = X.indices[e]
        p = ix.pos[e]
        q = ix.colptr[f] + ix.n_sup[f]
        e2 = ix.slot_entry[q]
        ix.slot_entry[q] = e
        ix.slot_entry[p] = e2
        ix.pos[e] = q
        ix.pos[e2] = p
        ix.n_sup[f] += 1


cdef void kernel_rows(Index* ix, Kernel* k, Corpus* Q, Py_ssize_t row0, Py_ssize_t T,
                      const double* beta, const double* bsum, double* E,
                      const double* beta2, const double* bsum2, double* E2) noexcept nogil:
    """E[t, y] = sum_j beta[j, y] k(x_{row0 + t}, x_j) over the support tokens j
    for the T rows of Q from row0 (and E2 from beta2 when beta2 is not NULL)."""
    cdef Py_ssize_t t, y, i, n, L = ix.L
    cdef long long e, slot, e2, stop
    cdef int r
    cdef double x, kv
    for t in range(T):
        for y in range(L):
            E[t * L + y] = k.k0 * bsum[y]
            if beta2 != NULL:
                E2[t * L + y] = k.k0 * bsum2[y]
        n = 0
        for e in range(Q.indptr[row0 + t], Q.indptr[row0 + t + 1]):
            x = Q.data[e]
            slot = ix.colptr[Q.indices[e]]
            stop = slot + ix.n_sup[Q.indices[e]]
            while slot < stop:
                e2 = ix.slot_entry[slot]
                r = ix.row_of[e2]
                if not ix.mark[r]:
                    ix.mark[r] = 1
                    ix.touched[n] = r
                    n += 1
                ix.acc[r] += x * ix.train_data[e2]
                slot += 1
        for i in range(n):
            r = ix.touched[i]
            kv = _kval(k, ix.acc[r]) - k.k0
            for y in range(L):
                E[t * L + y] += kv * beta[r * L + y]
            if beta2 != NULL:
                for y in range(L):
                    E2[t * L + y] += kv * beta2[r * L + y]
            ix.acc[r] = 0.0
            ix.mark[r] = 0


cdef double _row_dot(Corpus* X, Py_ssize_t r, const double* buf) noexcept nogil:
    cdef long long e
    cdef double s = 0.0
    for e in range(X.indptr[r], X.indptr[r + 1]):
        s += X.data[e] * buf[X.indices[e]]
    return s


cdef void _scatter(Corpus* X, Py_ssize_t r, double* buf, double sign) noexcept nogil:
    cdef long long e
    for e in range(X.indptr[r], X.indptr[r + 1]):
        buf[X.indices[e]] += sign * X.data[e]


cdef double emission_sqnorm(const int* a, const int* b, Py_ssize_t T, const double* G,
                            Corpus* X, Kernel* k, Py_ssize_t row0, double* buf) noexcept nogil:
    """||sum_t k(x_t, .) (e_{a_t} - e_{b_t})||^2 over the tokens where the label
    sequences a and b differ: from the Gram matrix G of the sentence's tokens,
    or, G NULL, with the kernel values of those tokens computed here (buf: a
    zeroed scratch of n_features)."""
    cdef Py_ssize_t t, u
    cdef double s = 0.0, c
    for t in range(T):
        if a[t] == b[t]:
            continue
        if G == NULL:
            _scatter(X, row0 + t, buf, 1.0)
        for u in range(T):
            if a[u] == b[u]:
                continue
            c = (a[t] == a[u]) - (a[t] == b[u]) - (b[t] == a[u]) + (b[t] == b[u])
            if c != 0.0:
                s += c * (G[t * T + u] if G != NULL
                          else _kval(k, _row_dot(X, row0 + u, buf)))
        if G == NULL:
            _scatter(X, row0 + t, buf, -1.0)
    return s


cdef void token_gram(Corpus* X, Kernel* k, Py_ssize_t row0, Py_ssize_t T, double* buf,
                     double* G) noexcept nogil:
    """G[t, u] = k(x_t, x_u) over one sentence's tokens (T x T)."""
    cdef Py_ssize_t t, u
    for t in range(T):
        _scatter(X, row0 + t, buf, 1.0)
        for u in range(t, T):
            G[t * T + u] = _kval(k, _row_dot(X, row0 + u, buf))
            G[u * T + t] = G[t * T + u]
        _scatter(X, row0 + t, buf, -1.0)


cdef inline long long* _ptr64(long long[::1] a) noexcept:
    return &a[0] if a.shape[0] else NULL


cdef class KernelState:
    """Support tokens, their coefficients and the inverted index of one
    training set (see the module docstring); plain arrays, so it pickles.

    Parameters
    ----------
    matrix : CSR matrix, the stacked training corpus
    n_labels : int
    average, smd : bool
        Keep the averaging accumulators U / SMD's auxiliary coefficients V~.

    Attributes
    ----------
    beta : ndarray (n_rows, n_labels), the coefficients of W~ (zero off the support)
    beta_sum : ndarray or None, their averaging accumulators
    vco : ndarray or None, the coefficients of V~ (SMD)
    bsum, vsum : ndarray (n_labels,), column sums of beta and vco
    is_sup : int8 ndarray (n_rows,), 1 for the support tokens
    """
    def __init__(self, matrix=None, Py_ssize_t n_labels=0, bint average=False,
                 bint smd=False, state=None):
        if state is not None:
            for name, value in state.items():
                setattr(self, name, value)
        else:
            N, F = matrix.shape
            rows = np.repeat(np.arange(N, dtype=np.int32), np.diff(matrix.indptr))
            order = np.lexsort((rows, matrix.indices))       # CSR entries by (column, row)
            self.row_of = rows
            self.slot_entry = order.astype(np.int64)
            self.pos = np.empty_like(self.slot_entry)
            self.pos[order] = np.arange(order.shape[0], dtype=np.int64)
            self.colptr = np.concatenate(
                [[0], np.cumsum(np.bincount(matrix.indices, minlength=F))]).astype(np.int64)
            self.n_sup = np.zeros(F, dtype=np.int64)
            self.is_sup = np.zeros(N, dtype=np.int8)
            self.beta = np.zeros((N, n_labels))
            self.beta_sum = np.zeros((N, n_labels)) if average else None
            self.vco = np.zeros((N, n_labels)) if smd else None
            self.bsum = np.zeros(n_labels)
            self.vsum = np.zeros(n_labels)
        self.acc = np.zeros(self.is_sup.shape[0])
        self.mark = np.zeros(self.is_sup.shape[0], dtype=np.int8)
        self.touched = np.zeros(self.is_sup.shape[0], dtype=np.int32)
        self.buf = np.zeros(self.n_sup.shape[0])

    def _arrays(self):
        return {name: getattr(self, name) for name in
                ("colptr", "slot_entry", "pos", "n_sup", "row_of", "is_sup", "beta",
                 "beta_sum", "vco", "bsum", "vsum")}

    def __reduce__(self):
        return (KernelState, (None, 0, False, False, self._arrays()))

    def thread_copy(self):
        """The same state (arrays shared, not copied) with its own query
        scratch, for another thread's queries."""
        return KernelState(None, 0, False, False, self._arrays())

    @property
    def n_support(self):
        return int(np.count_nonzero(self.is_sup))

    cdef Index* bind(self, ChainData data) except NULL:
        cdef const long long[::1] colptr = self.colptr
        cdef long long[::1] slot_entry = self.slot_entry, pos = self.pos, n_sup = self.n_sup
        cdef const int[::1] row_of = self.row_of
        cdef signed char[::1] is_sup = self.is_sup
        cdef const double[::1] train_data = data.data
        cdef double[::1] acc = self.acc
        cdef signed char[::1] mark = self.mark
        cdef int[::1] touched = self.touched
        if (is_sup.shape[0] != data.c.offsets[data.c.n_sentences]
                or slot_entry.shape[0] != train_data.shape[0]):
            raise ValueError("the kernel state belongs to another training set")
        self.ix.colptr = &colptr[0]
        self.ix.slot_entry = _ptr64(slot_entry)
        self.ix.pos = _ptr64(pos)
        self.ix.n_sup = _ptr64(n_sup)
        self.ix.row_of = &row_of[0] if row_of.shape[0] else NULL
        self.ix.is_sup = <char*>&is_sup[0] if is_sup.shape[0] else NULL
        self.ix.train_data = &train_data[0] if train_data.shape[0] else NULL
        self.ix.acc = &acc[0] if acc.shape[0] else NULL
        self.ix.mark = <char*>&mark[0] if mark.shape[0] else NULL
        self.ix.touched = &touched[0] if touched.shape[0] else NULL
        self.ix.L = self.beta.shape[1]
        return &self.ix


cdef double* matrix_ptr(object a) except? NULL:
    """The data of a C-contiguous float64 2-D array, or NULL for None."""
    cdef double[:, ::1] m
    if a is None:
        return NULL
    m = a
    return &m[0, 0] if m.shape[0] and m.shape[1] else NULL


cdef double* vector_ptr(object a) except? NULL:
    cdef double[::1] m
    if a is None:
        return NULL
    m = a
    return &m[0] if m.shape[0] else NULL


def kernel_emissions(ChainData train, KernelState ks, coef, ChainData query,
                     KernelFunction kernel not None, coef2=None):
    """E[q, y] = sum_j coef[j, y] k(x_q, x_j) over the support tokens j of ``ks``
    for every row q of ``query`` (and E2 from ``coef2``): float64 (n_rows, L).

    ``train`` is the training set ``ks`` indexes (or the support vectors
    alone, for prediction) and ``coef`` its (n_rows, L) coefficients."""
    if kernel.linear:
        raise ValueError("the linear kernel has explicit weights, not support tokens")
    cdef Index* ix = ks.bind(train)
    cdef Py_ssize_t L = ks.beta.shape[1], n = query.c.offsets[query.c.n_sentences]
    coef = np.ascontiguousarray(coef, dtype=np.float64)
    csum = coef.sum(axis=0)
    E = np.zeros((n, L))
    cdef double* E2p = NULL
    cdef double* c2 = NULL
    cdef double* c2sum = NULL
    if coef2 is not None:
        coef2 = np.ascontiguousarray(coef2, dtype=np.float64)
        c2sum_arr = coef2.sum(axis=0)
        E2 = np.zeros((n, L))
        E2p = matrix_ptr(E2)
        c2 = matrix_ptr(coef2)
        c2sum = vector_ptr(c2sum_arr)
    cdef double* Ep = matrix_ptr(E)
    cdef double* cp = matrix_ptr(coef)
    cdef double* cs = vector_ptr(csum)
    if n:
        with nogil:
            kernel_rows(ix, &kernel.k, &query.c, 0, n, cp, cs, Ep, c2, c2sum, E2p)
    return (E, E2) if coef2 is not None else E

# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""One epoch of an online k-best learner over a stacked CSR corpus, in C.

For each sentence n (in the given order) the loop computes the emission
scores, finds the k best label sequences B^k_w (plain or loss-augmented), and
walks through them in order, updating the weights after each one as the
learner's rule says (paper 000, Algorithm 4): each test is made with the
weights left by the previous update.  Updates are sparse: only the rows of W
for the features of tokens whose label differs, and the differing transitions.

Averaging uses the usual lazy trick: with ``c`` the number of examples seen
before the current one, every update ``w += d`` also does ``u += c * d``; the
average of the weights after each example is then ``w - u / c``.
"""
import numpy as np

from libc.stdlib cimport malloc, free
from sklstruct._viterbi cimport compute_emission, viterbi, kbest

cdef enum:
    RULE_PERCEPTRON = 0

# The update rules, by name, for the Python side.
RULES = {"perceptron": RULE_PERCEPTRON}


cdef struct Corpus:
    const long long* indptr
    const int* indices
    const double* data


cdef struct Weights:
    double* W        # (F, L) emission weights
    double* P        # (L + 2, L) transitions, start, end
    double* W_sum    # averaging accumulators (NULL without averaging)
    double* P_sum
    Py_ssize_t L


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
    return d


cdef inline void _add(double* a, double* a_sum, Py_ssize_t i, double step,
                      double step_sum) noexcept nogil:
    a[i] += step
    if a_sum != NULL:
        a_sum[i] += step_sum


cdef void add_difference(Corpus* X, Py_ssize_t row0, Py_ssize_t T, const int* gold,
                         const int* path, Weights* w, double step,
                         double n_seen) noexcept nogil:
    """w += step * dF(path) = step * (F(x, gold) - F(x, path)), sparsely."""
    cdef Py_ssize_t t, j, f, L = w.L
    cdef double v, ss = step * n_seen
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


cdef bint same_path(const int* a, const int* b, Py_ssize_t T) noexcept nogil:
    cdef Py_ssize_t t
    for t in range(T):
        if a[t] != b[t]:
            return False
    return True


def online_epoch(const long long[::1] indptr, const int[::1] indices, const double[::1] data,
                 const long long[::1] offsets, const int[::1] y, const long long[::1] order,
                 double[:, ::1] W, double[:, ::1] P, W_sum, P_sum,
                 Py_ssize_t k, long long n_seen, int rule=RULE_PERCEPTRON):
    """Run one epoch of a k-best online learner (callers validate all arrays).

    Parameters
    ----------
    indptr, indices, data : the stacked CSR corpus
    offsets : int64 array (n_sentences + 1,), first row of each sentence
    y : int32 array, one encoded gold label per row
    order : int64 array, the sentence indices to visit, in order
    W, P : emission weights (F, L) and chain parameters (L + 2, L), updated in place
    W_sum, P_sum : averaging accumulators of the same shapes, or None
    k : number of best sequences per example
    n_seen : examples processed before this epoch (the averaging clock)
    rule : the update rule (0: k-best perceptron, eq. 36)

    Returns
    -------
    n_mistakes : sentences whose best sequence was not the gold one
    n_updates : sequences that triggered an update
    n_seen : the averaging clock after the epoch
    """
    cdef Py_ssize_t L = W.shape[1], n_sent = order.shape[0]
    cdef Py_ssize_t i, s, j, T, row0, n, max_T = 0
    cdef double[:, ::1] Ws, Ps
    cdef Weights w
    cdef Corpus X
    X.indptr = &indptr[0]
    X.indices = &indices[0] if indices.shape[0] > 0 else NULL
    X.data = &data[0] if data.shape[0] > 0 else NULL
    w.W = &W[0, 0]
    w.P = &P[0, 0]
    w.L = L
    w.W_sum = NULL
    w.P_sum = NULL
    if W_sum is not None:
        Ws = W_sum
        Ps = P_sum
        w.W_sum = &Ws[0, 0]
        w.P_sum = &Ps[0, 0]
    for i in range(n_sent):
        s = order[i]
        max_T = max(max_T, offsets[s + 1] - offsets[s])
    cdef Py_ssize_t K = max(k, 1)
    cdef double* E = <double*>malloc(max_T * L * sizeof(double))
    cdef double* delta = <double*>malloc(max_T * L * K * sizeof(double))
    cdef int* back = <int*>malloc(max_T * L * K * sizeof(int))
    cdef int* back_rank = <int*>malloc(max_T * L * K * sizeof(int))
    cdef int* cnt = <int*>malloc(max_T * L * sizeof(int))
    cdef int* heads = <int*>malloc(L * sizeof(int))
    cdef int* paths = <int*>malloc(K * max_T * sizeof(int))
    cdef double* scores = <double*>malloc(K * sizeof(double))
    if (E == NULL or delta == NULL or back == NULL or back_rank == NULL or cnt == NULL
            or heads == NULL or paths == NULL or scores == NULL):
        free(E); free(delta); free(back); free(back_rank); free(cnt); free(heads)
        free(paths); free(scores)
        raise MemoryError()
    cdef long long n_mistakes = 0, n_updates = 0
    cdef const int* gold
    cdef const int* path
    with nogil:
        for i in range(n_sent):
            s = order[i]
            row0 = offsets[s]
            T = offsets[s + 1] - row0
            gold = &y[row0]
            compute_emission(X.indptr, X.indices, X.data, row0, T, w.W, L, E)
            if K == 1:
                viterbi(E, T, L, w.P, delta, back, paths)
                n = 1
            else:
                n = kbest(E, T, L, w.P, K, delta, cnt, back, back_rank, heads, paths, scores)
            if not same_path(paths, gold, T):
                n_mistakes += 1
            for j in range(n):
                path = paths + j * T
                if same_path(path, gold, T):
                    continue
                # k-best perceptron (eq. 36): update when w.dF(y) <= 0, with the
                # weights left by the previous update of this example
                if rule == RULE_PERCEPTRON and margin(&X, row0, T, gold, path, &w) <= 0.0:
                    add_difference(&X, row0, T, gold, path, &w, 1.0, <double>n_seen)
                    n_updates += 1
            n_seen += 1
    free(E); free(delta); free(back); free(back_rank); free(cnt); free(heads)
    free(paths); free(scores)
    return n_mistakes, n_updates, n_seen

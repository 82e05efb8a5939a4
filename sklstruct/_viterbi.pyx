# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Decoding kernels for the first-order linear-chain model.

A label sequence ``y`` of a sentence with emission scores ``E`` (T x L) scores

    s(y) = P[L, y_0] + sum_t E[t, y_t] + sum_{t>0} P[y_{t-1}, y_t] + P[L+1, y_{T-1}]

where ``P`` packs the transition matrix (rows 0..L-1), the start scores (row L)
and the end scores (row L+1).  This is w.F(x, y) of Mancev & Todorovic (paper
000, section 3) for the chain joint feature map.

Kernels (``cdef ... nogil``) take raw pointers and trust their arguments; the
``def`` functions below validate shapes and values first and are what the rest
of the package and the tests call.  Loss-augmented decoding with the Hamming
cost (paper 000, eq. 12) is decoding on ``E + cost * [y_t != gold_t]``.
"""
import numpy as np

from libc.stdlib cimport malloc, free
from libc.string cimport memset
from libc.math cimport INFINITY


cdef void compute_emission(const long long* indptr, const int* indices, const double* data,
                           Py_ssize_t row0, Py_ssize_t T, const double* W, Py_ssize_t L,
                           double* E) noexcept nogil:
    """E[t, :] = X[row0 + t, :] @ W for t < T (sparse rows times dense weights)."""
    cdef Py_ssize_t t, j, l
    cdef double v
    cdef const double* w
    cdef double* e
    memset(E, 0, T * L * sizeof(double))
    for t in range(T):
        e = E + t * L
        for j in range(indptr[row0 + t], indptr[row0 + t + 1]):
            v = data[j]
            w = W + <Py_ssize_t>indices[j] * L
            for l in range(L):
                e[l] += v * w[l]


cdef void add_hamming(double* E, Py_ssize_t T, Py_ssize_t L, const int* gold,
                      double cost) noexcept nogil:
    """Add ``cost`` to every wrong label of every token (Hamming loss augmentation)."""
    cdef Py_ssize_t t, l
    for t in range(T):
        for l in range(L):
            if l != gold[t]:
                E[t * L + l] += cost


cdef double viterbi(const double* E, Py_ssize_t T, Py_ssize_t L, const double* P,
                    double* delta, int* back, int* path) noexcept nogil:
    """Best sequence into ``path``; returns its score.  delta, back: T*L scratch."""
    cdef Py_ssize_t t, y, yp
    cdef double best, s
    cdef int arg
    cdef const double* start = P + L * L
    cdef const double* end = P + (L + 1) * L
    for y in range(L):
        delta[y] = start[y] + E[y]
    for t in range(1, T):
        for y in range(L):
            best = delta[(t - 1) * L] + P[y]
            arg = 0
            for yp in range(1, L):
                s = delta[(t - 1) * L + yp] + P[yp * L + y]
                if s > best:
                    best = s
                    arg = <int>yp
            delta[t * L + y] = best + E[t * L + y]
            back[t * L + y] = arg
    best = delta[(T - 1) * L] + end[0]
    arg = 0
    for y in range(1, L):
        s = delta[(T - 1) * L + y] + end[y]
        if s > best:
            best = s
            arg = <int>y
    path[T - 1] = arg
    for t in range(T - 1, 0, -1):
        path[t - 1] = back[t * L + path[t]]
    return best


cdef inline void _backtrack(Py_ssize_t T, Py_ssize_t L, Py_ssize_t K, Py_ssize_t y,
                            Py_ssize_t r, const int* back_label, const int* back_rank,
                            int* path) noexcept nogil:
    cdef Py_ssize_t t, idx
    for t in range(T - 1, -1, -1):
        path[t] = <int>y
        if t > 0:
            idx = (t * L + y) * K + r
            y = back_label[idx]
            r = back_rank[idx]


cdef inline Py_ssize_t _top_k(const double* prev, const int* prev_cnt, Py_ssize_t L,
                              Py_ssize_t K, const double* trans, Py_ssize_t stride,
                              double* out_s, int* out_label, int* out_rank,
                              int* lists, int* taken, double* heads) noexcept nogil:
    """The K best of prev[y', r] + trans[y' * stride] over all predecessors y' and
    ranks r, best first, ties in (y', r) order.

    Every list prev[y', :] is sorted, so only the lists whose heads are among
    the K best heads can contribute: pick those (insertion into a sorted
    buffer of K, stable) and merge just them, K-way.  O(L + K^2) per state.
    Scratch: lists, taken (K ints), heads (K doubles).  Returns how many (<= K).
    """
    cdef Py_ssize_t yp, i, pos, m = 0, n = 0, best
    cdef double h
    # the K best heads, ties to the lower label (stable insertion)
    for yp in range(L):
        h = prev[yp * K] + trans[yp * stride]
        if m == K and h <= heads[K - 1]:
            continue
        pos = m if m < K else K - 1
        while pos > 0 and heads[pos - 1] < h:
            heads[pos] = heads[pos - 1]
            lists[pos] = lists[pos - 1]
            pos -= 1
        heads[pos] = h
        lists[pos] = <int>yp
        if m < K:
            m += 1
    # K-way merge of those lists; taken[i] counts what list i has given
    for i in range(m):
        taken[i] = 0
    while n < K:
        best = -1
        for i in range(m):
            if heads[i] != -INFINITY and (best < 0 or heads[i] > heads[best]
                                          or (heads[i] == heads[best] and lists[i] < lists[best])):
                best = i
        if best < 0:
            break
        yp = lists[best]
        out_s[n] = heads[best]
        out_label[n] = <int>yp
        out_rank[n] = taken[best]
        taken[best] += 1
        if taken[best] < prev_cnt[yp]:
            heads[best] = prev[yp * K + taken[best]] + trans[yp * stride]
        else:
            heads[best] = -INFINITY
        n += 1
    return n


cdef Py_ssize_t kbest(const double* E, Py_ssize_t T, Py_ssize_t L, const double* P,
                      Py_ssize_t K, double* delta, int* cnt, int* back_label,
                      int* back_rank, int* heads, double* cand, int* paths,
                      double* scores) noexcept nogil:
    """Exact k-best list Viterbi.

    delta[t, y, :] holds the K best scores of prefixes ending in label y at t,
    sorted, each a distinct prefix (its back-pointer pair (y', r) is unique);
    it is the top K of the predecessors' lists plus the transition (_top_k).
    Writes the n <= K best distinct sequences (best first) into paths (K*T)
    and scores, and returns n (smaller than K when fewer than K sequences
    exist).  Ties go to the lowest predecessor label, then rank.
    Scratch: delta, back_label, back_rank (T*L*K), cnt (T*L), heads (4*K ints),
    cand (K).  O(T L (L + K^2)) time.
    """
    cdef Py_ssize_t t, y, n, i, idx
    for y in range(L):
        delta[y * K] = P[L * L + y] + E[y]
        cnt[y] = 1
    for t in range(1, T):
        for y in range(L):
            idx = (t * L + y) * K
            n = _top_k(delta + (t - 1) * L * K, cnt + (t - 1) * L, L, K, P + y, L,
                       delta + idx, back_label + idx, back_rank + idx,
                       heads + 2 * K, heads + 3 * K, cand)
            for i in range(n):
                delta[idx + i] += E[t * L + y]
            cnt[t * L + y] = <int>n
    n = _top_k(delta + (T - 1) * L * K, cnt + (T - 1) * L, L, K, P + (L + 1) * L, 1,
               scores, heads, heads + K, heads + 2 * K, heads + 3 * K, cand)
    for i in range(n):
        _backtrack(T, L, K, heads[i], heads[K + i], back_label, back_rank, paths + i * T)
    return n


cdef double path_score(const double* E, Py_ssize_t T, Py_ssize_t L, const double* P,
                       const int* path) noexcept nogil:
    """Score s(path) of one label sequence."""
    cdef Py_ssize_t t
    cdef double s = P[L * L + path[0]] + P[(L + 1) * L + path[T - 1]]
    for t in range(T):
        s += E[t * L + path[t]]
    for t in range(1, T):
        s += P[path[t - 1] * L + path[t]]
    return s


# ---------------------------------------------------------------------------
# Validated Python entry points
# ---------------------------------------------------------------------------

def _check_chain(E, P, gold=None):
    E = np.ascontiguousarray(E, dtype=np.float64)
    P = np.ascontiguousarray(P, dtype=np.float64)
    if E.ndim != 2 or E.shape[0] < 1 or E.shape[1] < 1:
        raise ValueError(f"emission scores must be a non-empty 2-D array (T, L); got shape {E.shape}")
    L = E.shape[1]
    if P.shape != (L + 2, L):
        raise ValueError(f"chain parameters must have shape (L + 2, L) = {(L + 2, L)}; got {P.shape}")
    if not (np.isfinite(E).all() and np.isfinite(P).all()):
        raise ValueError("emission scores and chain parameters must be finite")
    if gold is not None:
        gold = np.ascontiguousarray(gold, dtype=np.int32)
        if gold.shape != (E.shape[0],):
            raise ValueError(f"gold labels must have shape ({E.shape[0]},); got {gold.shape}")
        if gold.size and (gold.min() < 0 or gold.max() >= L):
            raise ValueError(f"gold labels must lie in [0, {L}); got values outside")
    return E, P, gold


def _loss_augmented(E, P, gold, double cost):
    """Validated E and P; with ``cost != 0`` a copy of E with the Hamming cost
    added to every wrong label of every token (:c:func:`add_hamming`)."""
    E, P, gold = _check_chain(E, P, gold)
    if cost == 0.0:
        return E, P
    if gold is None:
        raise ValueError("loss-augmented decoding needs the gold labels")
    E = E.copy()
    cdef double[:, ::1] Ev = E
    cdef int[::1] gv = gold
    add_hamming(&Ev[0, 0], E.shape[0], E.shape[1], &gv[0], cost)
    return E, P


def pack_chain(transitions, start, end):
    """Stack transitions (L, L), start (L,) and end (L,) scores into P (L+2, L)."""
    return np.vstack([np.asarray(transitions, dtype=np.float64),
                      np.asarray(start, dtype=np.float64)[None, :],
                      np.asarray(end, dtype=np.float64)[None, :]])


def sequence_score(E, P, path):
    """Score of one label sequence ``path`` under emissions ``E`` and chain ``P``."""
    E, P, path = _check_chain(E, P, path)
    cdef double[:, ::1] Ev = E
    cdef double[:, ::1] Pv = P
    cdef int[::1] pv = path
    return path_score(&Ev[0, 0], E.shape[0], E.shape[1], &Pv[0, 0], &pv[0])


def viterbi_decode(E, P, gold=None, double cost=0.0):
    """Best label sequence and its score.

    Parameters
    ----------
    E : ndarray of shape (T, L)
        Emission scores.
    P : ndarray of shape (L + 2, L)
        Transitions, start and end scores (see :func:`pack_chain`).
    gold : array-like of shape (T,), optional
        With ``cost > 0``, decode loss-augmented: maximise
        s(y) + cost * Hamming(gold, y) (paper 000, eq. 12).
    cost : float, default=0
        Hamming cost per wrong token.

    Returns
    -------
    path : ndarray of shape (T,), int32
    score : float
        s(path), plus the Hamming cost term when loss-augmented.
    """
    E, P = _loss_augmented(E, P, gold, cost)
    cdef Py_ssize_t T = E.shape[0], L = E.shape[1]
    cdef double[:, ::1] Ev = E
    cdef double[:, ::1] Pv = P
    path = np.empty(T, dtype=np.int32)
    delta = np.empty((T, L), dtype=np.float64)
    back = np.empty((T, L), dtype=np.int32)
    cdef int[::1] pv = path
    cdef double[:, ::1] dv = delta
    cdef int[:, ::1] bv = back
    cdef double score
    with nogil:
        score = viterbi(&Ev[0, 0], T, L, &Pv[0, 0], &dv[0, 0], &bv[0, 0], &pv[0])
    return path, score


def kbest_decode(E, P, Py_ssize_t k, gold=None, double cost=0.0):
    """The ``k`` highest-scoring distinct label sequences, best first.

    Same parameters as :func:`viterbi_decode`, plus ``k >= 1``.  When fewer than
    ``k`` sequences exist (L**T < k) all of them are returned.

    Returns
    -------
    paths : ndarray of shape (n, T), int32, n = min(k, L**T)
    scores : ndarray of shape (n,), non-increasing
    """
    if k < 1:
        raise ValueError(f"k must be >= 1; got {k}")
    E, P = _loss_augmented(E, P, gold, cost)
    cdef Py_ssize_t T = E.shape[0], L = E.shape[1]
    cdef double[:, ::1] Ev = E
    cdef double[:, ::1] Pv = P
    delta = np.empty(T * L * k, dtype=np.float64)
    cnt = np.empty(T * L, dtype=np.int32)
    bl = np.empty(T * L * k, dtype=np.int32)
    br = np.empty(T * L * k, dtype=np.int32)
    heads = np.empty(4 * k, dtype=np.int32)
    cand = np.empty(k, dtype=np.float64)
    paths = np.empty((k, T), dtype=np.int32)
    scores = np.empty(k, dtype=np.float64)
    cdef double[::1] dv = delta
    cdef int[::1] cv = cnt, blv = bl, brv = br, hv = heads
    cdef int[:, ::1] pv = paths
    cdef double[::1] sv = scores, candv = cand
    cdef Py_ssize_t n
    with nogil:
        n = kbest(&Ev[0, 0], T, L, &Pv[0, 0], k, &dv[0], &cv[0], &blv[0], &brv[0],
                  &hv[0], &candv[0], &pv[0, 0], &sv[0])
    return paths[:n].copy(), scores[:n].copy()


def decode_corpus(const long long[::1] indptr, const int[::1] indices, const double[::1] data,
                  const long long[::1] offsets, const double[:, ::1] W, const double[:, ::1] P):
    """Viterbi labels of every sentence of a stacked CSR corpus (no validation:
    callers pass arrays checked by :mod:`sklstruct.base`).

    Returns an int32 array with one label per token (row of the stacked matrix).
    """
    cdef Py_ssize_t n_sent = offsets.shape[0] - 1
    cdef Py_ssize_t L = W.shape[1]
    cdef Py_ssize_t s, T, row0, max_T = 0
    for s in range(n_sent):
        max_T = max(max_T, offsets[s + 1] - offsets[s])
    out = np.empty(offsets[n_sent], dtype=np.int32)
    cdef int[::1] ov = out
    if n_sent == 0 or max_T == 0:
        return out
    cdef double* E = <double*>malloc(max_T * L * sizeof(double))
    cdef double* delta = <double*>malloc(max_T * L * sizeof(double))
    cdef int* back = <int*>malloc(max_T * L * sizeof(int))
    if E == NULL or delta == NULL or back == NULL:
        free(E); free(delta); free(back)
        raise MemoryError()
    with nogil:
        for s in range(n_sent):
            row0 = offsets[s]
            T = offsets[s + 1] - row0
            if T == 0:
                continue
            compute_emission(&indptr[0], &indices[0], &data[0], row0, T, &W[0, 0], L, E)
            viterbi(E, T, L, &P[0, 0], delta, back, &ov[row0])
    free(E); free(delta); free(back)
    return out

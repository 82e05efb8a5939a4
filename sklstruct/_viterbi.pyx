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
cost (Mancev & Todorovic, eq. 12) is decoding on ``E + cost * [y_t != gold_t]``.
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


# ---------------------------------------------------------------------------
# Exact k-best: Viterbi forward, then lazy best-first enumeration backwards
# ---------------------------------------------------------------------------
#
# The lattice has a node v = t * L + y for every label y at position t, and an
# end node v = T * L after the last position.  Rank 0 of every node is its
# Viterbi prefix (delta, back).  Ranks r >= 1 of a node are found only when
# asked for, by the recursive enumeration algorithm of Jimenez & Marzal
# (2003, "Computing the K shortest paths: a new algorithm and an experimental
# comparison"): node v keeps a set of candidate prefixes (y', j), "rank j of
# (t-1, y') followed by y", holding at first every predecessor's rank 0 except
# the one of v's own rank 0; the next rank of v is the best candidate; after
# taking (y', j) the candidate (y', j + 1) enters, which needs rank j + 1 of
# (t-1, y') and so on down, one node per position.  A set holds at most one
# candidate per predecessor label, so at most L, and a linear scan finds the
# best: most sets give only one or two ranks, so building a priority queue
# would cost more than it saves.  Each new sequence at the end node costs
# O(T L), with at most one new set per position, so O(T L^2 + K T L) in all
# instead of the O(T L (L + K^2)) of k-best lists at every node.  Like the
# forward-Viterbi, backward-A* search that Mancev & Todorovic (section 5) uses, it runs
# one Viterbi pass and then extends only what the next sequence needs; both
# are exact, so they find the same k best (this one in the tie order below).


cdef int kbest_alloc(KBestScratch* s, Py_ssize_t max_T, Py_ssize_t L,
                     Py_ssize_t K) noexcept nogil:
    """Scratch for :c:func:`kbest` on sentences of up to max_T tokens, L labels
    and up to K sequences; -1 when out of memory (free with kbest_free)."""
    cdef Py_ssize_t n_nodes = max(max_T, 1) * L + 1
    s.K = max(K, 1)
    if s.K > (<Py_ssize_t>1 << 40) // n_nodes:
        return -1          # the rank tables would not fit in memory (or would wrap)
    s.cap = L
    # a new sequence at the end node starts at most one set per position
    s.max_sets = max(min((s.K - 1) * (max(max_T, 1) + 1), n_nodes), 1)
    s.delta = <double*>malloc(n_nodes * sizeof(double))
    s.back = <int*>malloc(n_nodes * sizeof(int))
    s.cnt = <int*>malloc(n_nodes * sizeof(int))
    s.set_of = <int*>malloc(n_nodes * sizeof(int))
    s.stack = <int*>malloc((max(max_T, 1) + 1) * sizeof(int))
    s.rscore = <double*>malloc(n_nodes * s.K * sizeof(double))
    s.rlabel = <int*>malloc(n_nodes * s.K * sizeof(int))
    s.rrank = <int*>malloc(n_nodes * s.K * sizeof(int))
    s.ckey = <double*>malloc(s.max_sets * s.cap * sizeof(double))
    s.clabel = <int*>malloc(s.max_sets * s.cap * sizeof(int))
    s.crank = <int*>malloc(s.max_sets * s.cap * sizeof(int))
    s.csize = <int*>malloc(s.max_sets * sizeof(int))
    if (s.delta == NULL or s.back == NULL or s.cnt == NULL or s.set_of == NULL
            or s.stack == NULL or s.rscore == NULL or s.rlabel == NULL or s.rrank == NULL
            or s.ckey == NULL or s.clabel == NULL or s.crank == NULL or s.csize == NULL):
        return -1
    return 0


cdef void kbest_free(KBestScratch* s) noexcept nogil:
    free(s.delta); free(s.back); free(s.cnt); free(s.set_of); free(s.stack)
    free(s.rscore); free(s.rlabel); free(s.rrank)
    free(s.ckey); free(s.clabel); free(s.crank); free(s.csize)
    s.delta = NULL; s.back = NULL; s.cnt = NULL; s.set_of = NULL; s.stack = NULL
    s.rscore = NULL; s.rlabel = NULL; s.rrank = NULL
    s.ckey = NULL; s.clabel = NULL; s.crank = NULL; s.csize = NULL


cdef inline double _rank_score(KBestScratch* s, Py_ssize_t v, Py_ssize_t r) noexcept nogil:
    return s.delta[v] if r == 0 else s.rscore[v * s.K + r]


cdef inline double _trans(const double* P, Py_ssize_t L, Py_ssize_t yp, Py_ssize_t y,
                          bint at_end) noexcept nogil:
    """Score of the arc from label yp into label y, or into the end node."""
    return P[(L + 1) * L + yp] if at_end else P[yp * L + y]


cdef void _start_set(KBestScratch* s, const double* P, Py_ssize_t L, Py_ssize_t t,
                     Py_ssize_t y, Py_ssize_t v, bint at_end) noexcept nogil:
    """Candidate set of node v (label y at position t >= 1, or the end node):
    rank 0 of every predecessor except the one v's own rank 0 came from."""
    cdef Py_ssize_t c = s.n_sets, yp, n = 0
    cdef Py_ssize_t used = s.rlabel[v * s.K] if at_end else s.back[v]
    cdef double* key = s.ckey + c * s.cap
    cdef int* lab = s.clabel + c * s.cap
    cdef int* rk = s.crank + c * s.cap
    cdef const double* prev = s.delta + (t - 1) * L
    s.n_sets += 1
    s.set_of[v] = <int>c
    for yp in range(L):
        if yp != used:
            key[n] = prev[yp] + _trans(P, L, yp, y, at_end)
            lab[n] = <int>yp
            rk[n] = 0
            n += 1
    s.csize[c] = <int>n


cdef inline Py_ssize_t _last_pred(KBestScratch* s, Py_ssize_t v, Py_ssize_t end, Py_ssize_t L,
                                  Py_ssize_t* yp, Py_ssize_t* j) noexcept nogil:
    """Predecessor node of the last rank found at node v (position >= 1 or the
    end node); its label and rank into yp and j."""
    cdef Py_ssize_t r = s.cnt[v] - 1
    if r == 0 and v != end:
        yp[0] = s.back[v]
        j[0] = 0
    else:
        yp[0] = s.rlabel[v * s.K + r]
        j[0] = s.rrank[v * s.K + r]
    return (v // L - 1) * L + yp[0]


cdef bint _next_rank(KBestScratch* s, const double* E, Py_ssize_t T, Py_ssize_t L,
                     const double* P) noexcept nogil:
    """Find the next rank of the end node (iterative form of the recursion:
    first walk down while the successor candidate is still unknown, then find
    the new ranks bottom up).  False when no further sequence exists."""
    cdef Py_ssize_t K = s.K, end = T * L, depth = 0, d, v, u, t, y, r, j, yp, c, n, i, best
    cdef double* key
    cdef int* lab
    cdef int* rk
    cdef bint at_end
    v = end
    while True:
        s.stack[depth] = <int>v
        depth += 1
        if s.set_of[v] == -2 or v < L:
            break
        u = _last_pred(s, v, end, L, &yp, &j)
        if j + 1 < s.cnt[u] or s.set_of[u] == -2:
            break
        v = u
    for d in range(depth - 1, -1, -1):
        v = s.stack[d]
        if s.set_of[v] == -2:
            continue
        if v < L:  # position 0: a prefix of one label has no alternative
            s.set_of[v] = -2
            continue
        at_end = v == end
        t = v // L
        y = v - t * L
        r = s.cnt[v]
        if s.set_of[v] == -1:
            _start_set(s, P, L, t, y, v, at_end)
        c = s.set_of[v]
        key = s.ckey + c * s.cap
        lab = s.clabel + c * s.cap
        rk = s.crank + c * s.cap
        n = s.csize[c]
        # the successor of the candidate taken last
        u = _last_pred(s, v, end, L, &yp, &j)
        if j + 1 < s.cnt[u]:
            key[n] = _rank_score(s, u, j + 1) + _trans(P, L, yp, y, at_end)
            lab[n] = <int>yp
            rk[n] = <int>(j + 1)
            n += 1
        if n == 0:
            s.csize[c] = 0
            s.set_of[v] = -2
            continue
        # the best candidate, ties to the lower predecessor label (labels are
        # distinct within a set), becomes rank r of v
        best = 0
        for i in range(1, n):
            if key[i] > key[best] or (key[i] == key[best] and lab[i] < lab[best]):
                best = i
        s.rscore[v * K + r] = key[best] if at_end else key[best] + E[v]
        s.rlabel[v * K + r] = lab[best]
        s.rrank[v * K + r] = rk[best]
        s.cnt[v] = <int>(r + 1)
        n -= 1
        key[best] = key[n]
        lab[best] = lab[n]
        rk[best] = rk[n]
        s.csize[c] = <int>n
    return s.set_of[end] != -2


cdef Py_ssize_t kbest(const double* E, Py_ssize_t T, Py_ssize_t L, const double* P,
                      Py_ssize_t K, KBestScratch* s, int* paths, double* scores) noexcept nogil:
    """Exact k-best Viterbi: the n = min(K, L**T) best distinct sequences, best
    first, into paths (K*T) and scores; returns n.

    Order: by score, ties to the lower label at the last position, then to the
    earlier of the two prefixes in the order of that label's node, and so on
    backwards; with exact arithmetic this puts equal-score sequences in
    increasing lexicographic order of the reversed sequences (y_{T-1}, ...,
    y_0).  Scores are computed as ((prefix + transition) + emission), the same
    operations as :c:func:`viterbi`, whose result is the first sequence.
    ``s`` comes from kbest_alloc(max_T >= T, L, K' >= K).
    """
    cdef Py_ssize_t v, t, n, end = T * L, y, r, K1 = min(K, s.K)
    scores[0] = viterbi(E, T, L, P, s.delta, s.back, paths)
    if K1 == 1:
        return 1
    for v in range(end + 1):
        s.cnt[v] = 1
        s.set_of[v] = -1
    s.n_sets = 0
    s.rscore[end * s.K] = scores[0]
    s.rlabel[end * s.K] = paths[T - 1]
    s.rrank[end * s.K] = 0
    n = 1
    while n < K1 and _next_rank(s, E, T, L, P):
        scores[n] = s.rscore[end * s.K + n]
        y = s.rlabel[end * s.K + n]
        r = s.rrank[end * s.K + n]
        for t in range(T - 1, -1, -1):
            paths[n * T + t] = <int>y
            if t == 0:
                break
            v = t * L + y
            if r == 0:  # from here on the Viterbi prefix of (t, y)
                y = s.back[v]
            else:
                y = s.rlabel[v * s.K + r]
                r = s.rrank[v * s.K + r]
        n += 1
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
        Transitions, start and end scores (see :func:`sklstruct.chain.pack_chain`).
    gold : array-like of shape (T,), optional
        With ``cost > 0``, decode loss-augmented: maximise
        s(y) + cost * Hamming(gold, y) (Mancev & Todorovic, eq. 12).
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
    ``k`` sequences exist (L**T < k) all of them are returned.  Exact: Viterbi,
    then the lazy best-first enumeration of Jimenez & Marzal (see
    :c:func:`kbest`), O(T L^2 + k T L).  Sequences of equal score
    come in increasing lexicographic order of the reversed sequence (lower last
    label first), as the first one comes from :func:`viterbi_decode`.

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
    paths = np.empty((k, T), dtype=np.int32)
    scores = np.empty(k, dtype=np.float64)
    cdef int[:, ::1] pv = paths
    cdef double[::1] sv = scores
    cdef KBestScratch s
    cdef int status
    cdef Py_ssize_t n
    with nogil:
        status = kbest_alloc(&s, T, L, k)
        if status == 0:
            n = kbest(&Ev[0, 0], T, L, &Pv[0, 0], k, &s, &pv[0, 0], &sv[0])
        kbest_free(&s)
    if status != 0:
        raise MemoryError()
    return paths[:n].copy(), scores[:n].copy()


def decode_corpus(const long long[::1] indptr, const int[::1] indices, const double[::1] data,
                  const long long[::1] offsets, const double[:, ::1] W, const double[:, ::1] P):
    """Viterbi labels of every sentence of a stacked CSR corpus (no validation:
    callers pass arrays checked by :func:`sklstruct.chain.as_stacked`).

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

# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Decoding kernels for the linear-chain model, first and second order.

A label sequence ``y`` of a sentence with emission scores ``E`` (T x L) scores

    s(y) = P[L, y_0] + sum_t E[t, y_t] + sum_{t>0} P[y_{t-1}, y_t] + P[L+1, y_{T-1}]
           [+ sum_{t>1} Q[y_{t-2}, y_{t-1}, y_t]]

where ``P`` packs the transition matrix (rows 0..L-1), the start scores (row L)
and the end scores (row L+1), and a second-order chain appends the label
trigram scores ``Q`` as L * L more rows (row L + 2 + a * L + b holds
Q[a, b, :]).  This is w.F(x, y) of Mancev & Todorovic ("k-Best Max-margin
Approaches for Sequence Labeling", section 3) for the chain joint feature map.

This module decodes (Viterbi, exact k-best, the emission scores); sums over
the sequences (forward-backward, marginals) are in
:mod:`sklstruct._forward_backward` and :mod:`sklstruct._conditioned`, the C
helpers in ``sklstruct/src/chain_simd.h``.  Kernels (``cdef ... nogil``) take
raw pointers and trust their arguments; the ``def`` functions below validate
shapes and values first and are what the rest of the package and the tests
call.  Loss-augmented decoding with the Hamming
cost (Mancev & Todorovic, eq. 12) is decoding on ``E + cost * [y_t != gold_t]``.
"""
from numbers import Real

import numpy as np

from sklstruct._validation import check_alloc, check_k, check_real_array, describe

from libc.stdlib cimport malloc, free
from libc.math cimport INFINITY, isfinite
from cython cimport floating


cdef extern from "chain_simd.h":
    # the C helpers (sklstruct/src/chain_simd.h): emissions and a Viterbi step
    void _emission "sklstruct_emission"(const long long* indptr, const int* indices,
                                        const double* data, Py_ssize_t row0, Py_ssize_t T,
                                        const double* W, Py_ssize_t L, double* E) noexcept nogil
    void _emission_f32 "sklstruct_emission_f32"(const long long* indptr, const int* indices,
                                                const double* data, Py_ssize_t row0,
                                                Py_ssize_t T, const float* W, Py_ssize_t L,
                                                double* E) noexcept nogil
    int _emission_checked "sklstruct_emission_checked"(
        const long long* indptr, const int* indices, const double* data, Py_ssize_t T,
        Py_ssize_t n_cols, double max_abs, const double* W, Py_ssize_t L,
        double* E) noexcept nogil
    int _emission_checked_f32 "sklstruct_emission_checked_f32"(
        const long long* indptr, const int* indices, const double* data, Py_ssize_t T,
        Py_ssize_t n_cols, double max_abs, const float* W, Py_ssize_t L,
        double* E) noexcept nogil
    void _viterbi_step "sklstruct_viterbi_step"(const double* prev, const double* P,
                                                double* cur, int* bk,
                                                Py_ssize_t L) noexcept nogil
    void _viterbi_max "sklstruct_viterbi_max"(const double* prev, const double* P,
                                              double* cur, Py_ssize_t L) noexcept nogil


cdef void compute_emission(const long long* indptr, const int* indices, const double* data,
                           Py_ssize_t row0, Py_ssize_t T, const double* W, Py_ssize_t L,
                           double* E) noexcept nogil:
    """E[t, :] = X[row0 + t, :] @ W for t < T (sparse rows times dense weights)."""
    _emission(indptr, indices, data, row0, T, W, L, E)


cdef bint compute_emission_checked(const long long* indptr, const int* indices,
                                   const double* data, Py_ssize_t T, Py_ssize_t n_cols,
                                   double max_abs, const double* W, Py_ssize_t L,
                                   double* E) noexcept nogil:
    """:c:func:`compute_emission` of rows ``indptr[0]..[T]`` that nothing has
    checked, each entry checked as it is read (see chain_simd.h); False at
    the first that fails."""
    return _emission_checked(indptr, indices, data, T, n_cols, max_abs, W, L, E)


cdef bint compute_emission_checked_f32(const long long* indptr, const int* indices,
                                       const double* data, Py_ssize_t T, Py_ssize_t n_cols,
                                       double max_abs, const float* W, Py_ssize_t L,
                                       double* E) noexcept nogil:
    return _emission_checked_f32(indptr, indices, data, T, n_cols, max_abs, W, L, E)


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
    """Best sequence into ``path``; returns its score.  delta: T*L scratch;
    back: T*L scratch for every node's back-pointer (what k-best reads), or
    NULL: then the forward pass only takes maxima and the back-pointers of
    the path are found again going back (:c:func:`_backtrack`), which is
    faster and gives the same path."""
    cdef Py_ssize_t t, y
    cdef double best, s
    cdef int arg
    cdef const double* start = P + L * L
    cdef const double* end = P + (L + 1) * L
    cdef double* cur
    for y in range(L):
        delta[y] = start[y] + E[y]
    for t in range(1, T):
        cur = delta + t * L
        if back == NULL:
            _viterbi_max(delta + (t - 1) * L, P, cur, L)
        else:
            _viterbi_step(delta + (t - 1) * L, P, cur, back + t * L, L)
        for y in range(L):
            cur[y] += E[t * L + y]
    best = delta[(T - 1) * L] + end[0]
    arg = 0
    for y in range(1, L):
        s = delta[(T - 1) * L + y] + end[y]
        if s > best:
            best = s
            arg = <int>y
    path[T - 1] = arg
    if back == NULL:
        _backtrack(delta, T, L, P, NULL, NULL, path)
    else:
        for t in range(T - 1, 0, -1):
            path[t - 1] = back[t * L + path[t]]
    return best


cdef void _backtrack(const double* delta, Py_ssize_t T, Py_ssize_t L, const double* P,
                     const long long* aptr, const int* alab, int* path) noexcept nogil:
    """path[t - 1] for t = T - 1 .. 1 from path[T - 1]: the lowest label y'
    (among the allowed ``alab[aptr[t - 1]:aptr[t]]``, or all when aptr is
    NULL) maximising delta[t - 1, y'] + P[y', path[t]].  The same sums the
    forward pass compared, in the same order, so the same back-pointers."""
    cdef Py_ssize_t t, i, yp, lo, hi
    cdef double best, s
    cdef int y, arg
    for t in range(T - 1, 0, -1):
        y = path[t]
        if aptr != NULL:
            lo, hi = aptr[t - 1], aptr[t]
            arg = alab[lo]
        else:
            lo, hi = 0, L
            arg = 0
        best = delta[(t - 1) * L + arg] + P[arg * L + y]
        for i in range(lo + 1, hi):
            yp = alab[i] if aptr != NULL else i
            s = delta[(t - 1) * L + yp] + P[yp * L + y]
            if s > best:
                best = s
                arg = <int>yp
        path[t - 1] = arg


cdef double viterbi_allowed(const double* E, Py_ssize_t T, Py_ssize_t L, const double* P,
                            const long long* aptr, const int* alab,
                            double* delta, int* path) noexcept nogil:
    """Viterbi over the labels allowed at each token (a tag dictionary):
    token t may take only the labels ``alab[aptr[t]:aptr[t + 1]]`` (strictly
    ascending, at least one).  The best allowed sequence into ``path``; returns
    its score.  delta: T*L scratch.

    Time is the sum over t of |A_{t-1}| |A_t| instead of T L^2; between two
    tokens that allow every label it is the vectorised step of
    :c:func:`viterbi`.  Ties go to the lower predecessor, as in
    :c:func:`viterbi`, so the result is Viterbi's on E with every disallowed
    label scored -inf whenever some allowed sequence has a finite score.
    """
    cdef Py_ssize_t t, i, j, y, yp
    cdef double best, s
    cdef int arg
    cdef bint full, prev_full
    cdef const double* start = P + L * L
    cdef const double* end = P + (L + 1) * L
    cdef double* cur
    cdef double* prev
    for i in range(aptr[0], aptr[1]):
        y = alab[i]
        delta[y] = start[y] + E[y]
    prev_full = aptr[1] - aptr[0] == L
    for t in range(1, T):
        cur = delta + t * L
        prev = cur - L
        full = aptr[t + 1] - aptr[t] == L
        if full and prev_full:
            _viterbi_max(prev, P, cur, L)
            for y in range(L):
                cur[y] += E[t * L + y]
        else:
            for i in range(aptr[t], aptr[t + 1]):
                y = alab[i]
                j = aptr[t - 1]
                best = prev[alab[j]] + P[alab[j] * L + y]
                for j in range(aptr[t - 1] + 1, aptr[t]):
                    yp = alab[j]
                    s = prev[yp] + P[yp * L + y]
                    if s > best:
                        best = s
                cur[y] = best + E[t * L + y]
        prev_full = full
    i = aptr[T - 1]
    arg = alab[i]
    best = delta[(T - 1) * L + arg] + end[arg]
    for i in range(aptr[T - 1] + 1, aptr[T]):
        y = alab[i]
        s = delta[(T - 1) * L + y] + end[y]
        if s > best:
            best = s
            arg = <int>y
    path[T - 1] = arg
    _backtrack(delta, T, L, P, aptr, alab, path)
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


cdef Py_ssize_t lattice_nodes(Py_ssize_t T, Py_ssize_t L, int order) noexcept nogil:
    """Nodes of the decoding lattice of a T-token sentence: T positions of
    S = L ** order states (position 0 uses the first L) plus the end node."""
    return max(T, 1) * (L * L if order == 2 else L) + 1


cdef int kbest_alloc(KBestScratch* s, Py_ssize_t max_T, Py_ssize_t L,
                     Py_ssize_t K, int order) noexcept nogil:
    """Scratch for :c:func:`kbest` on chains of ``order`` with up to max_T
    tokens, L labels and up to K sequences (also the delta/back scratch of
    :c:func:`decode_best`); -1 when out of memory (free with kbest_free)."""
    cdef Py_ssize_t n_nodes = lattice_nodes(max_T, L, order)
    s.L = L
    s.order = order
    s.S = L * L if order == 2 else L
    s.K = max(K, 1)
    s.cstart = NULL
    if s.K > (<Py_ssize_t>1 << 40) // n_nodes:
        return -1          # the rank tables would not fit in memory (or would wrap)
    # a new sequence at the end node starts at most one set per position; a
    # set holds at most one candidate per predecessor: L, or S at the end node
    s.max_sets = max(min((s.K - 1) * (max(max_T, 1) + 1), n_nodes), 1)
    s.max_slots = s.max_sets * L + s.S
    s.delta = <double*>malloc(n_nodes * sizeof(double))
    s.back = <int*>malloc(n_nodes * sizeof(int))
    s.cnt = <int*>malloc(n_nodes * sizeof(int))
    s.set_of = <int*>malloc(n_nodes * sizeof(int))
    s.stack = <int*>malloc((max(max_T, 1) + 1) * sizeof(int))
    s.rscore = <double*>malloc(n_nodes * s.K * sizeof(double))
    s.rlabel = <int*>malloc(n_nodes * s.K * sizeof(int))
    s.rrank = <int*>malloc(n_nodes * s.K * sizeof(int))
    s.ckey = <double*>malloc(s.max_slots * sizeof(double))
    s.clabel = <int*>malloc(s.max_slots * sizeof(int))
    s.crank = <int*>malloc(s.max_slots * sizeof(int))
    s.csize = <int*>malloc(s.max_sets * sizeof(int))
    s.cstart = <Py_ssize_t*>malloc(s.max_sets * sizeof(Py_ssize_t))
    if (s.delta == NULL or s.back == NULL or s.cnt == NULL or s.set_of == NULL
            or s.stack == NULL or s.rscore == NULL or s.rlabel == NULL or s.rrank == NULL
            or s.ckey == NULL or s.clabel == NULL or s.crank == NULL or s.csize == NULL
            or s.cstart == NULL):
        return -1
    return 0


cdef void kbest_free(KBestScratch* s) noexcept nogil:
    free(s.delta); free(s.back); free(s.cnt); free(s.set_of); free(s.stack)
    free(s.rscore); free(s.rlabel); free(s.rrank)
    free(s.ckey); free(s.clabel); free(s.crank); free(s.csize); free(s.cstart)
    s.delta = NULL; s.back = NULL; s.cnt = NULL; s.set_of = NULL; s.stack = NULL
    s.rscore = NULL; s.rlabel = NULL; s.rrank = NULL
    s.ckey = NULL; s.clabel = NULL; s.crank = NULL; s.csize = NULL; s.cstart = NULL


# The lattice seen by the enumeration.  A node v at position t = v // S has
# predecessors numbered x = 0, 1, ... (its "labels"): first order, x = y_{t-1}
# (node (t-1) * L + x); second order, node (t, a, b) has x = y_{t-2}
# (node (t-1) * S + x * L + a).  The end node's predecessors are the states of
# the last position, x in [0, S) (first order, or a sentence of one token:
# x in [0, L)).  Nodes with a single prefix (position 0; second order also
# position 1) are "fixed": they have one rank only.

cdef inline bint _fixed(KBestScratch* s, Py_ssize_t v, Py_ssize_t end) noexcept nogil:
    return v != end and v // s.S < s.order


cdef inline Py_ssize_t _degree(KBestScratch* s, Py_ssize_t v, Py_ssize_t end) noexcept nogil:
    if v == end and s.order == 2 and s.T > 1:
        return s.S
    return s.L


cdef inline Py_ssize_t _pred(KBestScratch* s, Py_ssize_t t, Py_ssize_t st,
                             Py_ssize_t x) noexcept nogil:
    """Predecessor x of the node at position t >= 1 in state st (the end
    node: t = T, st = 0).  Position and state are passed, not recomputed
    from the node index, to keep divisions out of the candidate loops."""
    if s.order == 1:
        return (t - 1) * s.L + x
    if t == s.T:                                   # the end node
        return x if s.T == 1 else (t - 1) * s.S + x
    if t == 1:                                     # (1, a, b): from (0, a)
        return st // s.L
    return (t - 1) * s.S + x * s.L + st // s.L


cdef inline double _extend(KBestScratch* s, double prev, Py_ssize_t t, Py_ssize_t st,
                           Py_ssize_t x, bint at_end) noexcept nogil:
    """The score of a prefix ending at predecessor x of the node (t, st),
    extended into it (before its emission): the same operations as the
    Viterbi recursions."""
    cdef Py_ssize_t L = s.L
    cdef const double* P = s.P
    if s.order == 1:
        return prev + (P[(L + 1) * L + x] if at_end else P[x * L + st])
    if at_end:
        return prev + P[(L + 1) * L + x % L]
    if t == 1:
        return prev + P[st]
    return (prev + P[(L + 2) * L + (x * L + st // L) * L + st % L]) + P[st]


cdef inline double _rank_score(KBestScratch* s, Py_ssize_t v, Py_ssize_t r) noexcept nogil:
    return s.delta[v] if r == 0 else s.rscore[v * s.K + r]


cdef void _start_set(KBestScratch* s, Py_ssize_t v, Py_ssize_t t, Py_ssize_t st, bint at_end,
                     Py_ssize_t end) noexcept nogil:
    """Candidate set of node v = (t, st) (not fixed, or the end node): rank 0
    of every predecessor except the one v's own rank 0 came from."""
    cdef Py_ssize_t c = s.n_sets, x, n = 0, deg = _degree(s, v, end)
    cdef Py_ssize_t used = s.rlabel[v * s.K] if at_end else s.back[v]
    cdef double* key = s.ckey + s.n_slots
    cdef int* lab = s.clabel + s.n_slots
    cdef int* rk = s.crank + s.n_slots
    cdef const double* prev
    cdef const double* arc
    cdef Py_ssize_t stride
    s.cstart[c] = s.n_slots
    s.n_slots += deg
    s.n_sets += 1
    s.set_of[v] = <int>c
    if s.order == 1:
        # the common case without the general lattice's index arithmetic:
        # prev[x] + arc[x * stride], the same sums as _extend
        prev = s.delta + (t - 1) * s.L
        arc = s.P + ((s.L + 1) * s.L if at_end else st)
        stride = 1 if at_end else s.L
        for x in range(deg):
            if x != used:
                key[n] = prev[x] + arc[x * stride]
                lab[n] = <int>x
                rk[n] = 0
                n += 1
    else:
        for x in range(deg):
            if x != used:
                key[n] = _extend(s, s.delta[_pred(s, t, st, x)], t, st, x, at_end)
                lab[n] = <int>x
                rk[n] = 0
                n += 1
    s.csize[c] = <int>n


cdef inline Py_ssize_t _last_pred(KBestScratch* s, Py_ssize_t v, Py_ssize_t end,
                                  Py_ssize_t* x, Py_ssize_t* j) noexcept nogil:
    """Predecessor node of the last rank found at node v (not fixed, or the
    end node); its number and rank into x and j."""
    cdef Py_ssize_t r = s.cnt[v] - 1
    if r == 0 and v != end:
        x[0] = s.back[v]
        j[0] = 0
    else:
        x[0] = s.rlabel[v * s.K + r]
        j[0] = s.rrank[v * s.K + r]
    cdef Py_ssize_t t = v // s.S
    return _pred(s, t, v - t * s.S, x[0])


cdef bint _next_rank(KBestScratch* s) noexcept nogil:
    """Find the next rank of the end node (iterative form of the recursion:
    first walk down while the successor candidate is still unknown, then find
    the new ranks bottom up).  False when no further sequence exists."""
    cdef Py_ssize_t K = s.K, end = s.T * s.S, depth = 0, d, v, u, r, j, x, c, n, i, best, t, st
    cdef double* key
    cdef int* lab
    cdef int* rk
    cdef bint at_end
    v = end
    while True:
        s.stack[depth] = <int>v
        depth += 1
        if s.set_of[v] == -2 or _fixed(s, v, end):
            break
        u = _last_pred(s, v, end, &x, &j)
        if j + 1 < s.cnt[u] or s.set_of[u] == -2:
            break
        v = u
    for d in range(depth - 1, -1, -1):
        v = s.stack[d]
        if s.set_of[v] == -2:
            continue
        if _fixed(s, v, end):  # a prefix with no alternative
            s.set_of[v] = -2
            continue
        at_end = v == end
        t = v // s.S
        st = v - t * s.S
        r = s.cnt[v]
        if s.set_of[v] == -1:
            _start_set(s, v, t, st, at_end, end)
        c = s.set_of[v]
        key = s.ckey + s.cstart[c]
        lab = s.clabel + s.cstart[c]
        rk = s.crank + s.cstart[c]
        n = s.csize[c]
        # the successor of the candidate taken last
        u = _last_pred(s, v, end, &x, &j)
        if j + 1 < s.cnt[u]:
            key[n] = _extend(s, _rank_score(s, u, j + 1), t, st, x, at_end)
            lab[n] = <int>x
            rk[n] = <int>(j + 1)
            n += 1
        if n == 0:
            s.csize[c] = 0
            s.set_of[v] = -2
            continue
        # the best candidate, ties to the lower predecessor number (distinct
        # within a set), becomes rank r of v
        best = 0
        for i in range(1, n):
            if key[i] > key[best] or (key[i] == key[best] and lab[i] < lab[best]):
                best = i
        s.rscore[v * K + r] = key[best] if at_end else key[best] + s.E[t * s.L + st % s.L]
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

    The chain's order is the scratch's (``kbest_alloc``).  First order: by
    score, ties to the lower label at the last position, then to the earlier
    of the two prefixes in the order of that label's node, and so on
    backwards; with exact arithmetic this puts equal-score sequences in
    increasing lexicographic order of the reversed sequences (y_{T-1}, ...,
    y_0).  Scores are computed with the same operations as
    :c:func:`decode_best`, whose result is the first sequence.  ``s`` comes
    from kbest_alloc(max_T >= T, L, K' >= K, order).
    """
    cdef Py_ssize_t v, u, t, st, n, x, r, end = T * s.S, K1 = min(K, s.K)
    s.T = T
    s.E = E
    s.P = P
    # the Viterbi pass with every node's back-pointer: rank 0 of every node
    scores[0] = (viterbi2(E, T, L, P, s.delta, s.back, paths) if s.order == 2
                 else viterbi(E, T, L, P, s.delta, s.back, paths))
    if K1 == 1:
        return 1
    for v in range(end + 1):
        s.cnt[v] = 1
        s.set_of[v] = -1
    s.n_sets = 0
    s.n_slots = 0
    s.rscore[end * s.K] = scores[0]
    # the end node's rank 0 came from the last state of the Viterbi path
    s.rlabel[end * s.K] = (paths[T - 2] * L + paths[T - 1] if s.order == 2 and T > 1
                           else paths[T - 1])
    s.rrank[end * s.K] = 0
    n = 1
    while n < K1 and _next_rank(s):
        scores[n] = s.rscore[end * s.K + n]
        x = s.rlabel[end * s.K + n]
        r = s.rrank[end * s.K + n]
        u = _pred(s, T, 0, x)
        while True:
            t = u // s.S
            st = u - t * s.S
            paths[n * T + t] = <int>(st % L)
            if t == 0:
                break
            if _fixed(s, u, end):       # second order, position 1: from (0, a)
                u = _pred(s, t, st, 0)
                continue
            if r == 0:  # from here on the Viterbi prefix of u
                x = s.back[u]
            else:
                x = s.rlabel[u * s.K + r]
                r = s.rrank[u * s.K + r]
            u = _pred(s, t, st, x)
        n += 1
    return n


cdef double viterbi2(const double* E, Py_ssize_t T, Py_ssize_t L, const double* P,
                     double* delta, int* back, int* path) noexcept nogil:
    """Best sequence of a second-order chain into ``path``; returns its score.

    States are label pairs: delta[t * L*L + a * L + b] is the best prefix
    score with y_{t-1} = a, y_t = b (t >= 1; delta[b] at t = 0), and
    back[...] the best y_{t-2}:

        delta[t, b, c] = max_a (delta[t-1, a, b] + Q[a, b, c]) + P[b, c] + E[t, c]

    O(T L^3) time; delta, back: lattice_nodes(T, L, 2) scratch.  Ties go to the
    lower y_{t-2}, and at the end to the lower (y_{T-2}, y_{T-1}) pair.
    """
    cdef Py_ssize_t t, a, b, c, S = L * L, arg_x = 0
    cdef double best, sc, d
    cdef const double* start = P + L * L
    cdef const double* end = P + (L + 1) * L
    cdef const double* Q = P + (L + 2) * L
    cdef const double* q
    cdef double* cur
    cdef int* bk
    if T == 1:
        return viterbi(E, T, L, P, delta, back, path)
    for b in range(L):
        delta[b] = start[b] + E[b]
    for a in range(L):
        for b in range(L):
            delta[S + a * L + b] = (delta[a] + P[a * L + b]) + E[L + b]
            back[S + a * L + b] = 0
    for t in range(2, T):
        for b in range(L):
            cur = delta + t * S + b * L
            bk = back + t * S + b * L
            for c in range(L):
                cur[c] = -INFINITY
                bk[c] = 0
            for a in range(L):
                d = delta[(t - 1) * S + a * L + b]
                q = Q + (a * L + b) * L
                for c in range(L):
                    sc = d + q[c]
                    if sc > cur[c]:
                        cur[c] = sc
                        bk[c] = <int>a
            for c in range(L):
                cur[c] = (cur[c] + P[b * L + c]) + E[t * L + c]
    best = -INFINITY
    for a in range(S):
        sc = delta[(T - 1) * S + a] + end[a % L]
        if sc > best or a == 0:
            best = sc
            arg_x = a
    path[T - 2] = <int>(arg_x // L)
    path[T - 1] = <int>(arg_x % L)
    for t in range(T - 1, 1, -1):
        path[t - 2] = back[t * S + path[t - 1] * L + path[t]]
    return best


cdef double decode_best(const double* E, Py_ssize_t T, Py_ssize_t L, const double* P, int order,
                        double* delta, int* back, int* path) noexcept nogil:
    """The best sequence of a chain of ``order`` (1 or 2); delta and back
    hold lattice_nodes(T, L, order) entries (back is not written at first
    order: see :c:func:`viterbi`)."""
    if order == 2:
        return viterbi2(E, T, L, P, delta, back, path)
    return viterbi(E, T, L, P, delta, NULL, path)


cdef double path_score(const double* E, Py_ssize_t T, Py_ssize_t L, const double* P,
                       int order, const int* path) noexcept nogil:
    """Score s(path) of one label sequence (trigram scores too when order == 2)."""
    cdef Py_ssize_t t
    cdef double s = P[L * L + path[0]] + P[(L + 1) * L + path[T - 1]]
    for t in range(T):
        s += E[t * L + path[t]]
    for t in range(1, T):
        s += P[path[t - 1] * L + path[t]]
    if order == 2:
        for t in range(2, T):
            s += P[(L + 2) * L + (path[t - 2] * L + path[t - 1]) * L + path[t]]
    return s


# ---------------------------------------------------------------------------
# Validated Python entry points
# ---------------------------------------------------------------------------

def chain_order(P, L):
    """The order of the chain parameters ``P``: 1 for shape (L + 2, L), 2 for
    (L + 2 + L * L, L) (trigram rows appended)."""
    if P.ndim == 2 and P.shape[1] == L:
        if P.shape[0] == L + 2:
            return 1
        if P.shape[0] == L + 2 + L * L:
            return 2
    raise ValueError(f"chain parameters must have shape (L + 2, L) = {(L + 2, L)} (first "
                     f"order) or (L + 2 + L * L, L) = {(L + 2 + L * L, L)} (second order); "
                     f"got {P.shape}")


def _check_labels(labels, Py_ssize_t T, Py_ssize_t L, name):
    """``labels`` as a contiguous int32 array of T label codes in [0, L): an
    integer array-like (a float or boolean one is refused, not cast)."""
    if labels is None:
        raise TypeError(f"{name} must be an array of {T} integer labels; got None")
    arr = np.asarray(labels)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integer labels; got dtype {arr.dtype}")
    if arr.shape != (T,):
        raise ValueError(f"{name} must have shape ({T},); got {arr.shape}")
    if T and (arr.min() < 0 or arr.max() >= L):
        raise ValueError(f"{name} must lie in [0, {L}); got values outside")
    return np.ascontiguousarray(arr, dtype=np.int32)


def _real_array(a, name, ndim=2):
    """``a`` as a contiguous float64 array of ``ndim`` dimensions of finite
    real numbers (booleans refused too: a mask is not scores)."""
    return np.ascontiguousarray(check_real_array(a, name, ndim, kinds="iuf"),
                                dtype=np.float64)


def _check_cost(cost):
    """``cost`` as a finite float."""
    if isinstance(cost, (bool, np.bool_)) or not isinstance(cost, Real):
        raise TypeError(f"cost must be a real number; got {type(cost).__name__}")
    try:
        value = float(cost)
    except OverflowError:
        value = np.inf
    if not isfinite(value):
        raise ValueError(f"cost must be finite; got {describe(cost)}")
    return value


def _check_result(scores):
    """Refuse decoded scores that overflowed float64 (finite inputs near
    1e308 add up to infinity, and a ranking of infinities means nothing)."""
    if not np.isfinite(scores).all():
        raise ValueError("the sequence scores overflow float64: the emission scores, chain "
                         "parameters or cost are too large; scale them down")
    return scores


def _check_chain(E, P, gold=None):
    E = _real_array(E, "emission scores E")
    P = _real_array(P, "chain parameters P")
    if E.ndim != 2 or E.shape[0] < 1 or E.shape[1] < 1:
        raise ValueError(f"emission scores must be a non-empty 2-D array (T, L); got shape {E.shape}")
    L = E.shape[1]
    chain_order(P, L)
    if gold is not None:
        gold = _check_labels(gold, E.shape[0], L, "gold labels")
    return E, P, gold


def _loss_augmented(E, P, gold, cost_):
    """Validated E and P; with ``cost != 0`` a copy of E with the Hamming cost
    added to every wrong label of every token (:c:func:`add_hamming`)."""
    cdef double cost = _check_cost(cost_)
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
    E, P, _ = _check_chain(E, P)
    path = _check_labels(path, E.shape[0], E.shape[1], "path")
    cdef double[:, ::1] Ev = E
    cdef double[:, ::1] Pv = P
    cdef int[::1] pv = path
    return float(_check_result(path_score(&Ev[0, 0], E.shape[0], E.shape[1], &Pv[0, 0],
                                          chain_order(P, E.shape[1]), &pv[0])))


def viterbi_decode(E, P, gold=None, cost=0.0):
    """Best label sequence and its score.

    Parameters
    ----------
    E : ndarray of shape (T, L)
        Emission scores.
    P : ndarray of shape (L + 2, L) or (L + 2 + L * L, L)
        Transitions, start and end scores, and for a second-order chain the
        trigram scores (see :func:`sklstruct.chain.pack_chain`).  Second
        order decodes over label pairs in O(T L^3).
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
    cdef int order = chain_order(P, L)
    cdef double[:, ::1] Ev = E
    cdef double[:, ::1] Pv = P
    check_alloc("the Viterbi scratch", lattice_nodes(T, L, order), 12,
                remedy="split long sentences")
    path = np.empty(T, dtype=np.int32)
    delta = np.empty(lattice_nodes(T, L, order), dtype=np.float64)
    back = np.empty(lattice_nodes(T, L, order), dtype=np.int32)
    cdef int[::1] pv = path
    cdef double[::1] dv = delta
    cdef int[::1] bv = back
    cdef double score
    with nogil:
        score = decode_best(&Ev[0, 0], T, L, &Pv[0, 0], order, &dv[0], &bv[0], &pv[0])
    return path, float(_check_result(score))


def kbest_decode(E, P, k, gold=None, cost=0.0):
    """The ``k`` highest-scoring distinct label sequences, best first.

    Same parameters as :func:`viterbi_decode`, plus ``k >= 1``.  When fewer than
    ``k`` sequences exist (L**T < k) all of them are returned.  Exact: Viterbi,
    then the lazy best-first enumeration of Jimenez & Marzal (see
    :c:func:`kbest`), O(T L^2 + k T L); second order (``P`` with trigram
    rows) O(T L^3 + k T L^2).  First order: sequences of equal score
    come in increasing lexicographic order of the reversed sequence (lower last
    label first), as the first one comes from :func:`viterbi_decode`.

    Returns
    -------
    paths : ndarray of shape (n, T), int32, n = min(k, L**T)
    scores : ndarray of shape (n,), non-increasing
    """
    cdef Py_ssize_t kk = check_k(k)
    E, P = _loss_augmented(E, P, gold, cost)
    cdef Py_ssize_t T = E.shape[0], L = E.shape[1]
    cdef int order = chain_order(P, L)
    cdef double[:, ::1] Ev = E
    cdef double[:, ::1] Pv = P
    paths = np.empty((kk, T), dtype=np.int32)
    scores = np.empty(kk, dtype=np.float64)
    cdef int[:, ::1] pv = paths
    cdef double[::1] sv = scores
    cdef KBestScratch s
    cdef int status
    cdef Py_ssize_t n
    with nogil:
        status = kbest_alloc(&s, T, L, kk, order)
        if status == 0:
            n = kbest(&Ev[0, 0], T, L, &Pv[0, 0], kk, &s, &pv[0, 0], &sv[0])
        kbest_free(&s)
    if status != 0:
        raise MemoryError(f"the k-best scratch for {T} tokens, {L} labels, order {order} and "
                          f"k={k} does not fit in memory; use a smaller k or split long "
                          "sentences")
    return paths[:n].copy(), _check_result(scores[:n].copy())


def decode_corpus(const long long[::1] indptr, const int[::1] indices, const double[::1] data,
                  const long long[::1] offsets, const floating[:, ::1] W, const double[:, ::1] P,
                  int order=1, out=None, allowed=None):
    """Viterbi labels of every sentence of a stacked CSR corpus (no validation:
    callers pass arrays checked by :func:`sklstruct.chain.as_stacked`).

    ``offsets`` may be a slice of the corpus' offsets (a block of its
    sentences): the labels of rows ``offsets[0]:offsets[-1]`` are written,
    into ``out`` (int32, one entry per row of the corpus) when given, so that
    threads decoding disjoint blocks fill one array.

    ``allowed``: None, or ``(aptr, alab)`` (int64, int32), the labels each
    row of the corpus may take, ``alab[aptr[r]:aptr[r + 1]]``, strictly
    ascending, at least one per row (first order only): decoding is then
    :c:func:`viterbi_allowed`'s, checked here.

    Returns ``out`` or a new int32 array with one label per row up to
    ``offsets[-1]``.
    """
    cdef Py_ssize_t n_sent = offsets.shape[0] - 1
    cdef Py_ssize_t L = W.shape[1]
    cdef Py_ssize_t s, T, row0, max_T = 0
    if order not in (1, 2) or P.shape[0] != L + 2 + (L * L if order == 2 else 0) \
            or P.shape[1] != L:
        raise ValueError(f"chain parameters of shape {tuple(P.shape)[:2]} do not fit a chain of "
                         f"order {order} over {L} labels")
    for s in range(n_sent):
        max_T = max(max_T, offsets[s + 1] - offsets[s])
    if out is None:
        out = np.empty(offsets[n_sent], dtype=np.int32)
    cdef int[::1] ov = out
    if ov.shape[0] < offsets[n_sent]:
        raise ValueError(f"out has {ov.shape[0]} rows; the sentences need {offsets[n_sent]}")
    if n_sent == 0 or max_T == 0:
        return out
    cdef const long long[::1] aptr
    cdef const int[::1] alab
    cdef bint restricted = allowed is not None
    if restricted:
        aptr, alab = _check_allowed(allowed, offsets[n_sent], L, offsets[0])
        if order != 1:
            raise ValueError("allowed labels per token are decoded by first-order Viterbi "
                             "only; mask the emission scores of a second-order chain")
    cdef Py_ssize_t n_nodes = lattice_nodes(max_T, L, order)
    # the first sentence whose best score is not finite (huge weights times
    # huge features overflow): its labels would be arbitrary
    cdef Py_ssize_t overflow = -1
    cdef double best
    cdef double* E = <double*>malloc(max_T * L * sizeof(double))
    cdef double* delta = <double*>malloc(n_nodes * sizeof(double))
    cdef int* back = <int*>malloc(n_nodes * sizeof(int))
    if E == NULL or delta == NULL or back == NULL:
        free(E); free(delta); free(back)
        raise MemoryError()
    with nogil:
        for s in range(n_sent):
            row0 = offsets[s]
            T = offsets[s + 1] - row0
            if T == 0:
                continue
            if floating is double:
                compute_emission(&indptr[0], &indices[0], &data[0], row0, T, &W[0, 0], L, E)
            else:
                _emission_f32(&indptr[0], &indices[0], &data[0], row0, T, &W[0, 0], L, E)
            if restricted:
                best = viterbi_allowed(E, T, L, &P[0, 0], &aptr[row0], &alab[0], delta,
                                       &ov[row0])
            else:
                best = decode_best(E, T, L, &P[0, 0], order, delta, back, &ov[row0])
            if overflow < 0 and not isfinite(best):
                overflow = s
    free(E); free(delta); free(back)
    if overflow >= 0:
        raise ValueError(f"the sequence scores of the sentence of token rows "
                         f"{offsets[overflow]}:{offsets[overflow + 1]} overflow float64 (the "
                         "weights times the features); scale the features down")
    return out


def _check_allowed(allowed, Py_ssize_t n_rows, Py_ssize_t L, Py_ssize_t first_row=0):
    """Validated (aptr, alab) of :func:`decode_corpus`'s ``allowed`` for the
    rows ``first_row:n_rows``: integer arrays, no cast that changes a value."""
    aptr, alab = (np.asarray(a) for a in allowed)
    if aptr.dtype.kind not in "iu" or alab.dtype.kind not in "iu" or aptr.ndim != 1 \
            or alab.ndim != 1:
        raise ValueError("allowed: expected (aptr, alab), two 1-D integer arrays")
    if aptr.shape[0] < n_rows + 1 or aptr[0] != 0:
        raise ValueError(f"allowed: aptr must start at 0 and have an entry per row and one "
                         f"more ({n_rows + 1})")
    ptr = aptr[first_row:n_rows + 1]
    start, stop = int(aptr[first_row]), int(aptr[n_rows])
    if stop > alab.shape[0] or ptr.min() < 0:
        raise ValueError(f"allowed: aptr points outside the {alab.shape[0]} labels")
    counts = np.diff(ptr)
    if counts.size and counts.min() < 1:
        raise ValueError(f"allowed: row {first_row + int(np.argmin(counts))} allows no label")
    labs = alab[start:stop]
    if labs.size and (labs.min() < 0 or labs.max() >= L):
        raise ValueError(f"allowed: labels must lie in [0, {L})")
    # strictly ascending within each row: a step down may only start a row
    down = np.flatnonzero(np.diff(labs) <= 0) + 1
    if not np.isin(down, ptr[1:ptr.shape[0] - 1] - start).all():
        raise ValueError("allowed: the labels of a row must be strictly ascending")
    return (np.ascontiguousarray(aptr, dtype=np.int64),
            np.ascontiguousarray(alab, dtype=np.int32))

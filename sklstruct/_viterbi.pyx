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

Kernels (``cdef ... nogil``) take raw pointers and trust their arguments; the
``def`` functions below validate shapes and values first and are what the rest
of the package and the tests call.  Loss-augmented decoding with the Hamming
cost (Mancev & Todorovic, eq. 12) is decoding on ``E + cost * [y_t != gold_t]``.
"""
import numpy as np

from libc.stdlib cimport calloc, malloc, free
from libc.string cimport memset
from libc.math cimport INFINITY, NAN, exp, fmin, log
from cython cimport floating


cdef extern from *:
    """
    /* E[t, :] = X[row0 + t, :] @ W for t < T, W of doubles or (a model
       stored in float32) floats, E in doubles.  The rows of W a sentence
       reads are scattered over a matrix larger than the caches, so the row
       PF features ahead is prefetched while this one is added. */
    #if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
    #define SKLSTRUCT_CLONES __attribute__((target_clones("avx2", "default")))
    #else
    #define SKLSTRUCT_CLONES
    #endif
    #if defined(__GNUC__) || defined(__clang__)
    #define SKLSTRUCT_PREFETCH(p) __builtin_prefetch(p)
    #define SKLSTRUCT_RESTRICT __restrict__
    #else
    #define SKLSTRUCT_PREFETCH(p) ((void)0)
    #define SKLSTRUCT_RESTRICT
    #endif
    #define SKLSTRUCT_EMISSION(NAME, WTYPE)                                              \
    SKLSTRUCT_CLONES                                                                     \
    static void NAME(const long long *indptr, const int *indices, const double *data,   \
                     Py_ssize_t row0, Py_ssize_t T, const WTYPE *W, Py_ssize_t L,       \
                     double *E) {                                                        \
        enum { PF = 16 };                                                                \
        const long long j0 = indptr[row0], j1 = indptr[row0 + T];                        \
        const Py_ssize_t row_bytes = L * (Py_ssize_t)sizeof(WTYPE);                      \
        for (Py_ssize_t t = 0; t < T * L; t++) E[t] = 0.0;                               \
        for (long long j = j0; j < j0 + PF && j < j1; j++) {                             \
            const char *p = (const char *)(W + (Py_ssize_t)indices[j] * L);             \
            for (Py_ssize_t b = 0; b < row_bytes; b += 64) SKLSTRUCT_PREFETCH(p + b);  \
        }                                                                                \
        for (Py_ssize_t t = 0; t < T; t++) {                                             \
            double *SKLSTRUCT_RESTRICT e = E + t * L;                                    \
            for (long long j = indptr[row0 + t]; j < indptr[row0 + t + 1]; j++) {        \
                if (j + PF < j1) {                                                       \
                    const char *p = (const char *)(W + (Py_ssize_t)indices[j + PF] * L); \
                    for (Py_ssize_t b = 0; b < row_bytes; b += 64)                       \
                        SKLSTRUCT_PREFETCH(p + b);                                       \
                }                                                                        \
                const double v = data[j];                                                \
                const WTYPE *SKLSTRUCT_RESTRICT w = W + (Py_ssize_t)indices[j] * L;      \
                for (Py_ssize_t l = 0; l < L; l++) e[l] += v * (double)w[l];             \
            }                                                                            \
        }                                                                                \
    }
    SKLSTRUCT_EMISSION(sklstruct_emission, double)
    SKLSTRUCT_EMISSION(sklstruct_emission_f32, float)
    """
    void _emission "sklstruct_emission"(const long long* indptr, const int* indices,
                                        const double* data, Py_ssize_t row0, Py_ssize_t T,
                                        const double* W, Py_ssize_t L, double* E) noexcept nogil
    void _emission_f32 "sklstruct_emission_f32"(const long long* indptr, const int* indices,
                                                const double* data, Py_ssize_t row0,
                                                Py_ssize_t T, const float* W, Py_ssize_t L,
                                                double* E) noexcept nogil


cdef void compute_emission(const long long* indptr, const int* indices, const double* data,
                           Py_ssize_t row0, Py_ssize_t T, const double* W, Py_ssize_t L,
                           double* E) noexcept nogil:
    """E[t, :] = X[row0 + t, :] @ W for t < T (sparse rows times dense weights)."""
    _emission(indptr, indices, data, row0, T, W, L, E)


cdef void add_hamming(double* E, Py_ssize_t T, Py_ssize_t L, const int* gold,
                      double cost) noexcept nogil:
    """Add ``cost`` to every wrong label of every token (Hamming loss augmentation)."""
    cdef Py_ssize_t t, l
    for t in range(T):
        for l in range(L):
            if l != gold[t]:
                E[t * L + l] += cost


cdef extern from *:
    """
    /* One step of first-order Viterbi: cur[y] = max over yp of prev[yp] +
       P[yp, y], bk[y] the smallest yp reaching it (yp ascends, only a strictly
       greater score replaces), with the max over predecessors in the outer
       loop so that the inner loop runs over contiguous rows.
       Written in C with selects (Cython would emit an if/else for each) so
       that GCC vectorises it: on x86-64 it needs blend instructions, so an
       AVX2 clone is chosen at load time where the CPU has them, and
       no-trapping-math (FP exceptions only; results are unchanged) lets
       the selects be if-converted. */
    #if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
    __attribute__((optimize("no-trapping-math"), target_clones("avx2", "default")))
    #endif
    static void sklstruct_viterbi_step(const double *prev, const double *P, double *cur,
                                       int *bk, Py_ssize_t L) {
        for (Py_ssize_t y = 0; y < L; y++) {
            cur[y] = prev[0] + P[y];
            bk[y] = 0;
        }
        for (Py_ssize_t yp = 1; yp < L; yp++) {
            const double d = prev[yp];
            const double *row = P + yp * L;
            for (Py_ssize_t y = 0; y < L; y++) {
                double c = cur[y];
                int b = bk[y];
                double s = d + row[y];
                cur[y] = s > c ? s : c;
                bk[y] = s > c ? (int)yp : b;
            }
        }
    }

    /* The same maximum without back-pointers: one add and one max per
       entry (vmaxpd; `s > c ? s : c` is its exact semantics). */
    #if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
    __attribute__((target_clones("avx2", "default")))
    #endif
    static void sklstruct_viterbi_max(const double *prev, const double *P, double *cur,
                                      Py_ssize_t L) {
        for (Py_ssize_t y = 0; y < L; y++)
            cur[y] = prev[0] + P[y];
        for (Py_ssize_t yp = 1; yp < L; yp++) {
            const double d = prev[yp];
            const double *row = P + yp * L;
            for (Py_ssize_t y = 0; y < L; y++) {
                double s = d + row[y];
                cur[y] = s > cur[y] ? s : cur[y];
            }
        }
    }
    """
    void _viterbi_step "sklstruct_viterbi_step"(const double* prev, const double* P,
                                                double* cur, int* bk,
                                                Py_ssize_t L) noexcept nogil
    void _viterbi_max "sklstruct_viterbi_max"(const double* prev, const double* P,
                                              double* cur, Py_ssize_t L) noexcept nogil


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
# Forward-backward (first order), in log space
# ---------------------------------------------------------------------------
#
# With s(y) the score above, P(y | x) = exp(s(y)) / Z.  In log space
#
#     alpha[t, b] = E[t, b] + log sum_a exp(alpha[t-1, a] + P[a, b]),  alpha[0, b] = start[b] + E[0, b]
#     beta[t, a]  = log sum_b exp(P[a, b] + E[t+1, b] + beta[t+1, b]), beta[T-1, a] = end[a]
#
# and log Z = log sum_b exp(alpha[t, b] + beta[t, b]) for any t; every sum is
# taken relative to its largest term, so nothing overflows however long the
# sentence or large the scores.


cdef inline double _lse_row(const double* v, Py_ssize_t n) noexcept nogil:
    """log sum_i exp(v[i])."""
    cdef Py_ssize_t i
    cdef double m = v[0], acc = 0.0
    for i in range(1, n):
        if v[i] > m:
            m = v[i]
    if m == -INFINITY:
        return m
    for i in range(n):
        acc += exp(v[i] - m)
    return m + log(acc)


cdef inline double _prob(double log_p) noexcept nogil:
    """exp(log_p) for a log-probability: capped at 1, since with scores of
    huge magnitude the rounding of log-space differences alone could exceed 0."""
    return exp(fmin(log_p, 0.0))


cdef inline double _max_row(const double* v, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    cdef double m = v[0]
    for i in range(1, n):
        if v[i] > m:
            m = v[i]
    return m


# Sums below 1e-280 (of terms scaled to at most 1) are recomputed exactly:
# the fast path multiplies exponentials of shifted scores, and a product of
# two tiny factors could underflow where the exact log-sum-exp does not.
cdef double TINY = 1e-280


cdef double forward_backward(const double* E, Py_ssize_t T, Py_ssize_t L, const double* P,
                             double* alpha, double* beta) noexcept nogil:
    """Fill alpha (T * L) and beta ((T + 3 + L) * L: rows T and up are
    scratch) and return log Z, for a first-order chain.

    Each recursion step is a matrix-vector product in scaled probability
    space, exp(alpha[t-1] - max) times exp(P - max P), with the results
    stored as logs: L exponentials and logarithms per position instead of
    L^2, and every value exact in log space; a sum that underflows the
    scaled product is taken exactly by log-sum-exp instead."""
    cdef Py_ssize_t t, a, b
    cdef double* v = beta + T * L
    cdef double* eP = beta + (T + 1) * L
    cdef double* tmp = eP + L * L
    cdef const double* start = P + L * L
    cdef const double* end = P + (L + 1) * L
    cdef double pmax = _max_row(P, L * L), m, acc
    for a in range(L * L):
        eP[a] = exp(P[a] - pmax)
    for b in range(L):
        alpha[b] = start[b] + E[b]
    for t in range(1, T):
        m = _max_row(alpha + (t - 1) * L, L)
        for a in range(L):
            v[a] = exp(alpha[(t - 1) * L + a] - m)
        for b in range(L):
            acc = 0.0
            for a in range(L):
                acc += v[a] * eP[a * L + b]
            if acc > TINY:
                alpha[t * L + b] = E[t * L + b] + (m + pmax + log(acc))
            else:
                for a in range(L):
                    tmp[a] = alpha[(t - 1) * L + a] + P[a * L + b]
                alpha[t * L + b] = E[t * L + b] + _lse_row(tmp, L)
    for a in range(L):
        beta[(T - 1) * L + a] = end[a]
    for t in range(T - 2, -1, -1):
        for b in range(L):
            tmp[b] = E[(t + 1) * L + b] + beta[(t + 1) * L + b]
        m = _max_row(tmp, L)
        for b in range(L):
            v[b] = exp(tmp[b] - m)
        for a in range(L):
            acc = 0.0
            for b in range(L):
                acc += eP[a * L + b] * v[b]
            if acc > TINY:
                beta[t * L + a] = m + pmax + log(acc)
            else:
                for b in range(L):
                    tmp[L + b] = P[a * L + b] + E[(t + 1) * L + b] + beta[(t + 1) * L + b]
                beta[t * L + a] = _lse_row(tmp + L, L)
    for b in range(L):
        tmp[b] = alpha[(T - 1) * L + b] + end[b]
    return _lse_row(tmp, L)


cdef void add_marginals(const double* E, Py_ssize_t T, Py_ssize_t L, const double* P,
                        const double* alpha, const double* beta, double log_z, double weight,
                        double* node, double* chain) noexcept nogil:
    """node[t, b] += weight * P(y_t = b | x) (T * L), and in the layout of P
    (chain: (L + 2) * L) weight times the expected transition counts
    sum_t P(y_{t-1} = a, y_t = b | x), start P(y_0 = b | x) and end
    P(y_{T-1} = b | x): ``weight`` times E[F(x, y)] of the chain blocks.
    ``beta`` as left by :c:func:`forward_backward` (its scratch holds
    exp(P - max P)); the edge marginals are products of scaled exponentials,
    L per position, taken exactly where the scale could overflow."""
    cdef Py_ssize_t t, a, b
    cdef double* v = <double*>(beta + T * L)
    cdef const double* eP = beta + (T + 1) * L
    cdef double* r = <double*>(eP + L * L)
    cdef double pmax = _max_row(P, L * L), m1, m2, k
    for t in range(T):
        for b in range(L):
            node[t * L + b] += weight * _prob(alpha[t * L + b] + beta[t * L + b] - log_z)
    for b in range(L):
        chain[L * L + b] += weight * _prob(alpha[b] + beta[b] - log_z)
        chain[(L + 1) * L + b] += weight * _prob(alpha[(T - 1) * L + b]
                                                 + beta[(T - 1) * L + b] - log_z)
    for t in range(1, T):
        # xi[a, b] = exp(alpha[t-1, a] + P[a, b] + E[t, b] + beta[t, b] - log Z)
        m1 = _max_row(alpha + (t - 1) * L, L)
        for b in range(L):
            r[b] = E[t * L + b] + beta[t * L + b]
        m2 = _max_row(r, L)
        k = m1 + m2 + pmax - log_z
        if k < 700.0:
            k = weight * exp(k)
            for a in range(L):
                v[a] = k * exp(alpha[(t - 1) * L + a] - m1)
            for b in range(L):
                r[b] = exp(r[b] - m2)
            for a in range(L):
                for b in range(L):
                    chain[a * L + b] += v[a] * eP[a * L + b] * r[b]
        else:
            for a in range(L):
                for b in range(L):
                    chain[a * L + b] += weight * _prob(alpha[(t - 1) * L + a] + P[a * L + b]
                                                       + r[b] - log_z)


# The fast path (Rabiner's scaling, CRFsuite's way): the recursions run on
# probabilities normalised to sum 1 at each position, with exp(E[t] - max E[t])
# and exp(P - max P) as factors, so a position costs L exponentials and one
# logarithm instead of the log-space path's ~7 L.  It is taken only when the
# scores' spread is small enough that nothing can underflow: with r the
# largest spread (max - min) of the transition, start or end scores and R
# that of an emission row, a normalised forward or backward entry is at
# least e^-(r + R) / L and every product formed from them at least
# e^-3(r + R) / L^2; r + R <= SCALED_RANGE = 200 keeps all of them normal
# doubles, so every term is kept with full relative precision.  Otherwise
# (weights of a few hundred, or the huge scores of the tests) the caller
# takes the log-space path (forward_backward_any does).
cdef double SCALED_RANGE = 200.0


cdef void scaled_transitions(const double* P, Py_ssize_t L, double* out) noexcept nogil:
    """out[:L*L] = exp(P - max P) of the transitions, then exp(start - max)
    and exp(end - max) (L each), then the three maxima and the largest of
    the three spreads: (L + 2) * L + 4 doubles, computed once per weight
    vector."""
    cdef Py_ssize_t a, i, n
    cdef const double* block
    cdef double m, lo, spread = 0.0
    for i in range(3):
        block = P + (L * L if i > 0 else 0) + (L if i == 2 else 0)
        n = L * L if i == 0 else L
        m = _max_row(block, n)
        lo = m
        for a in range(n):
            lo = fmin(lo, block[a])
        out[(L + 2) * L + i] = m
        if spread == spread and not (m - lo <= spread):     # a NaN stays
            spread = m - lo
    out[(L + 2) * L + 3] = spread
    for a in range(L * L):
        out[a] = exp(P[a] - out[(L + 2) * L])
    for a in range(L):
        out[L * L + a] = exp(P[L * L + a] - out[(L + 2) * L + 1])
        out[(L + 1) * L + a] = exp(P[(L + 1) * L + a] - out[(L + 2) * L + 2])


cdef double forward_backward_scaled(const double* E, Py_ssize_t T, Py_ssize_t L,
                                    const double* eTr, double* ea, double* eb, double* eE,
                                    double* norm) noexcept nogil:
    """Scaled forward-backward: ea[t] and eb[t] (T * L each) proportional to
    exp(alpha[t]) and exp(beta[t]) and summing to 1, eE[t, b] =
    exp(E[t, b] - max E[t]), norm[t] the forward normaliser of position t.
    Returns log Z, or NaN where the scores' spread exceeds SCALED_RANGE
    (or a normaliser falls below TINY, which that excludes)."""
    cdef Py_ssize_t t, a, b
    cdef const double* eP = eTr
    cdef const double* eS = eTr + L * L
    cdef const double* eEnd = eTr + (L + 1) * L
    cdef double pmax = eTr[(L + 2) * L], m, s, acc, log_z, lo
    cdef double* row
    for t in range(T):
        m = _max_row(E + t * L, L)
        lo = m
        for b in range(L):
            lo = fmin(lo, E[t * L + b])
        if not (eTr[(L + 2) * L + 3] + (m - lo) <= SCALED_RANGE):
            return NAN
    for t in range(T):
        m = _max_row(E + t * L, L)
        row = ea + t * L
        for b in range(L):
            eE[t * L + b] = exp(E[t * L + b] - m)
        if t == 0:
            for b in range(L):
                row[b] = eS[b] * eE[b]
            log_z = eTr[(L + 2) * L + 1] + m
        else:
            for b in range(L):
                row[b] = 0.0
            for a in range(L):                       # row += ea[t-1, a] * eP[a, :]
                acc = ea[(t - 1) * L + a]
                for b in range(L):
                    row[b] += acc * eP[a * L + b]
            for b in range(L):
                row[b] *= eE[t * L + b]
            log_z += pmax + m
        s = 0.0
        for b in range(L):
            s += row[b]
        if not (s > TINY):
            return NAN
        norm[t] = s
        s = 1.0 / s
        for b in range(L):
            row[b] *= s
        log_z += log(norm[t])
    acc = 0.0
    for b in range(L):
        acc += ea[(T - 1) * L + b] * eEnd[b]
    if not (acc > TINY):
        return NAN
    log_z += eTr[(L + 2) * L + 2] + log(acc)
    s = 0.0
    for b in range(L):
        s += eEnd[b]
    for b in range(L):
        eb[(T - 1) * L + b] = eEnd[b] / s
    for t in range(T - 2, -1, -1):
        row = eb + t * L
        for b in range(L):                           # (scratch: the next row's factor)
            norm[T + b] = eE[(t + 1) * L + b] * eb[(t + 1) * L + b]
        s = 0.0
        for a in range(L):
            acc = 0.0
            for b in range(L):
                acc += eP[a * L + b] * norm[T + b]
            row[a] = acc
            s += acc
        if not (s > TINY):
            return NAN
        s = 1.0 / s
        for a in range(L):
            row[a] *= s
    return log_z


cdef void add_marginals_scaled(Py_ssize_t T, Py_ssize_t L, const double* eTr,
                               const double* ea, const double* eb, const double* eE,
                               const double* norm, double weight, double* node,
                               double* chain) noexcept nogil:
    """What :c:func:`add_marginals` adds, from the scaled recursions: the node
    marginal is ea[t] * eb[t] normalised, and the edge marginal
    ea[t-1, a] eP[a, b] eE[t, b] eb[t, b] sums to norm[t] * (ea[t] . eb[t])
    over (a, b): no exponential at all."""
    cdef Py_ssize_t t, a, b
    cdef const double* eP = eTr
    cdef double d, k, v
    cdef double* r = <double*>(norm + T)             # L scratch
    for t in range(T):
        d = 0.0
        for b in range(L):
            d += ea[t * L + b] * eb[t * L + b]
        k = weight / d
        for b in range(L):
            v = k * ea[t * L + b] * eb[t * L + b]
            node[t * L + b] += v
            if t == 0:
                chain[L * L + b] += v
            if t == T - 1:
                chain[(L + 1) * L + b] += v
        if t == 0:
            continue
        k = k / norm[t]
        for b in range(L):
            r[b] = k * eE[t * L + b] * eb[t * L + b]
        for a in range(L):
            v = ea[(t - 1) * L + a]
            for b in range(L):
                chain[a * L + b] += v * eP[a * L + b] * r[b]


cdef double forward_backward_any(const double* E, Py_ssize_t T, Py_ssize_t L, const double* P,
                                 const double* eTr, double* alpha, double* beta, double* eE,
                                 double* norm, bint* scaled) noexcept nogil:
    """log Z by the scaled path where it is exact, else by
    :c:func:`forward_backward` (``*scaled`` says which filled alpha and
    beta); buffers as for both (norm: T + L)."""
    cdef double log_z = forward_backward_scaled(E, T, L, eTr, alpha, beta, eE, norm)
    scaled[0] = log_z == log_z
    if not scaled[0]:
        log_z = forward_backward(E, T, L, P, alpha, beta)
    return log_z


cdef void add_marginals_any(const double* E, Py_ssize_t T, Py_ssize_t L, const double* P,
                            const double* eTr, const double* alpha, const double* beta,
                            const double* eE, const double* norm, bint scaled, double log_z,
                            double weight, double* node, double* chain) noexcept nogil:
    """add_marginals after :c:func:`forward_backward_any`."""
    if scaled:
        add_marginals_scaled(T, L, eTr, alpha, beta, eE, norm, weight, node, chain)
    else:
        add_marginals(E, T, L, P, alpha, beta, log_z, weight, node, chain)


cdef inline void _alpha_factors(const double* E, const double* alpha, Py_ssize_t L,
                                Py_ssize_t t, double pmax, double* u, double* v) noexcept nogil:
    """d alpha[t, b] / d alpha[t-1, a] = u[a] exp(P[a, b] - max P) v[b]."""
    cdef Py_ssize_t a
    cdef double m = _max_row(alpha + (t - 1) * L, L)
    for a in range(L):
        u[a] = exp(alpha[(t - 1) * L + a] - m)
        v[a] = exp(E[t * L + a] - alpha[t * L + a] + m + pmax)


cdef inline void _beta_factors(const double* E, const double* beta, Py_ssize_t L,
                               Py_ssize_t t, double pmax, double* x, double* y) noexcept nogil:
    """d beta[t-1, a] / d beta[t, b] = y[a] exp(P[a, b] - max P) x[b]."""
    cdef Py_ssize_t a
    cdef double m = -INFINITY
    for a in range(L):
        m = max(m, E[t * L + a] + beta[t * L + a])
    for a in range(L):
        x[a] = exp(E[t * L + a] + beta[t * L + a] - m)
        y[a] = exp(m + pmax - beta[(t - 1) * L + a])


cdef inline double _d_alpha(bint fast, const double* u, const double* v, const double* eP,
                            const double* E, const double* P, const double* alpha,
                            Py_ssize_t L, Py_ssize_t t, Py_ssize_t a,
                            Py_ssize_t b) noexcept nogil:
    """d alpha[t, b] / d alpha[t-1, a]: from step t's row factors (``fast``)
    or exactly in log space."""
    if fast:
        return u[a] * eP[a * L + b] * v[b]
    return _prob(alpha[(t - 1) * L + a] + P[a * L + b] + E[t * L + b] - alpha[t * L + b])


cdef inline double _d_beta(bint fast, const double* x, const double* y, const double* eP,
                           const double* E, const double* P, const double* beta,
                           Py_ssize_t L, Py_ssize_t t, Py_ssize_t a,
                           Py_ssize_t b) noexcept nogil:
    """d beta[t-1, a] / d beta[t, b]: from step t's row factors (``fast``)
    or exactly in log space."""
    if fast:
        return y[a] * eP[a * L + b] * x[b]
    return _prob(P[a * L + b] + E[t * L + b] + beta[t * L + b] - beta[(t - 1) * L + a])


cdef void add_conditioned(const double* E, Py_ssize_t T, Py_ssize_t L, const double* P,
                          const double* alpha, const double* beta, const int* gold,
                          const double* c, double* abar, double* bbar,
                          double* node, double* chain, const double* eTr,
                          double* tmp) noexcept nogil:
    """Add sum_t c[t] E[F | x, y_t = gold[t]] of the chain blocks (node: T * L
    per-token label expectations, chain: the layout of P), the conditioned
    expectations the pointwise losses need (Altun, Johnson & Hofmann,
    section 4.1), in O(T L^2): the gradient of
    G = sum_t c[t] (alpha[t, gold[t]] + beta[t, gold[t]]) = sum_t c[t] log Z_t,
    Z_t the sum over the sequences with y_t = gold[t], by reverse-mode
    differentiation of the two recursions.  abar, bbar: T * L scratch.

    ``abar[t, b]`` gathers the terms with the conditioning position t' >= t
    (through d alpha[t', .] / d alpha[t, b] = P(y_t = b | y_{t'}, prefix)),
    ``bbar[t, a]`` those with t' <= t (through beta).

    Those derivatives are products u[a] exp(P[a, b] - max P) v[b] of row
    factors (:c:func:`_alpha_factors`, :c:func:`_beta_factors`; 2 L
    exponentials per position instead of L^2) when ``eTr`` (from
    :c:func:`scaled_transitions`; NULL: never) shows a spread of the
    transition scores within SCALED_RANGE: the factor that is not at most 1
    is then at most e^SCALED_RANGE, so a factor lost to underflow drops less
    than 1e-220 of a term.  tmp: 4 L."""
    cdef Py_ssize_t t, a, b
    cdef double w, acc
    cdef bint fast = eTr != NULL and eTr[(L + 2) * L + 3] <= SCALED_RANGE
    cdef const double* eP = eTr
    cdef double pmax = eTr[(L + 2) * L] if fast else 0.0
    cdef double* u = tmp
    cdef double* v = tmp + L
    cdef double* x = tmp + 2 * L
    cdef double* y = tmp + 3 * L
    # adjoint of alpha, from the last position back
    for t in range(T - 1, -1, -1):
        for a in range(L):
            abar[t * L + a] = 0.0
        abar[t * L + gold[t]] += c[t]
        if t + 1 < T:
            if fast:
                _alpha_factors(E, alpha, L, t + 1, pmax, u, v)
            for a in range(L):
                acc = 0.0
                for b in range(L):
                    w = _d_alpha(fast, u, v, eP, E, P, alpha, L, t + 1, a, b)
                    acc += abar[(t + 1) * L + b] * w
                abar[t * L + a] += acc
    # adjoint of beta, from the first position on
    for t in range(T):
        for b in range(L):
            bbar[t * L + b] = 0.0
        bbar[t * L + gold[t]] += c[t]
        if t > 0:
            if fast:
                _beta_factors(E, beta, L, t, pmax, x, y)
            for a in range(L):
                for b in range(L):
                    w = _d_beta(fast, x, y, eP, E, P, beta, L, t, a, b)
                    bbar[t * L + b] += bbar[(t - 1) * L + a] * w
    # node expectations: abar (t' >= t) plus what beta carries from t' < t;
    # edges (t-1, t): from alpha's side (t' >= t) and beta's (t' <= t-1)
    for b in range(L):
        node[b] += abar[b]
        chain[L * L + b] += abar[b]
        chain[(L + 1) * L + b] += bbar[(T - 1) * L + b]
    for t in range(1, T):
        for b in range(L):
            node[t * L + b] += abar[t * L + b]
        if fast:
            _alpha_factors(E, alpha, L, t, pmax, u, v)
            _beta_factors(E, beta, L, t, pmax, x, y)
        for a in range(L):
            for b in range(L):
                chain[a * L + b] += abar[t * L + b] * _d_alpha(fast, u, v, eP, E, P, alpha, L,
                                                               t, a, b)
                w = _d_beta(fast, x, y, eP, E, P, beta, L, t, a, b)
                chain[a * L + b] += bbar[(t - 1) * L + a] * w
                node[t * L + b] += bbar[(t - 1) * L + a] * w


# ---------------------------------------------------------------------------
# Forward-backward (second order), in log space
# ---------------------------------------------------------------------------
#
# The states are label pairs (a, b) = (y_{t-1}, y_t) for t >= 1, single labels
# at position 0; Q[a, b, c] are the trigram scores (P's rows L + 2 on).
#
#   A[0, b]    = start[b] + E[0, b]                  (stored in alpha[0, 0, :])
#   A[1, a, b] = A[0, a] + P[a, b] + E[1, b]
#   A[t, b, c] = E[t, c] + P[b, c] + log sum_a exp(A[t-1, a, b] + Q[a, b, c])    (t >= 2)
#   B[T-1, a, b] = end[b]
#   B[t, a, b] = log sum_c exp(Q[a, b, c] + P[b, c] + E[t+1, c] + B[t+1, b, c])  (1 <= t < T-1)
#   B[0, a]    = log sum_b exp(P[a, b] + E[1, b] + B[1, a, b])  (end[a] if T = 1; in beta[0, 0, :])
#
# and log Z = log sum_a exp(A[0, a] + B[0, a]).  O(T L^3): each step is, for
# each b, a product of the scaled exp(A[t-1, ., b] - max) with exp(Q - max Q)
# as in the first-order log-space path (L^2 exponentials and logarithms
# per position, not L^3), exact by log-sum-exp where the scaled sum underflows.

cdef inline double _max_strided(const double* v, Py_ssize_t n, Py_ssize_t stride) noexcept nogil:
    """max of v[0], v[stride], ..., v[(n - 1) * stride] (-inf if n = 0): over
    a of A[t, a, b], a column of the pair states."""
    cdef Py_ssize_t i
    cdef double m = -INFINITY
    for i in range(n):
        if v[i * stride] > m:
            m = v[i * stride]
    return m


cdef void scaled_trigrams(const double* P, Py_ssize_t L, double* out) noexcept nogil:
    """out[:L^3] = exp(Q - max Q) for the trigram scores Q of P, out[L^3] = max Q."""
    cdef Py_ssize_t i, n = L * L * L
    cdef const double* Q = P + (L + 2) * L
    cdef double m = _max_row(Q, n)
    for i in range(n):
        out[i] = exp(Q[i] - m)
    out[n] = m


cdef double forward_backward2(const double* E, Py_ssize_t T, Py_ssize_t L, const double* P,
                              const double* eQ, double* alpha, double* beta,
                              double* tmp) noexcept nogil:
    """Fill alpha and beta (T * L * L each, A and B above) and return log Z
    of a second-order chain; eQ from :c:func:`scaled_trigrams`; tmp: 3 L."""
    cdef Py_ssize_t t, a, b, c, LL = L * L
    cdef const double* Q = P + (L + 2) * L
    cdef double qmax = eQ[L * L * L], m, va
    cdef double* v = tmp
    cdef double* acc = tmp + L
    cdef double* r = tmp + 2 * L
    for b in range(L):
        alpha[b] = P[L * L + b] + E[b]
    if T > 1:
        for a in range(L):
            for b in range(L):
                alpha[LL + a * L + b] = alpha[a] + P[a * L + b] + E[L + b]
    for t in range(2, T):
        for b in range(L):
            m = _max_strided(alpha + (t - 1) * LL + b, L, L)
            for c in range(L):
                acc[c] = 0.0
            if m > -INFINITY:
                for a in range(L):
                    va = exp(alpha[(t - 1) * LL + a * L + b] - m)
                    for c in range(L):
                        acc[c] += va * eQ[(a * L + b) * L + c]
            for c in range(L):
                if acc[c] > TINY:
                    alpha[t * LL + b * L + c] = (E[t * L + c] + P[b * L + c] + m + qmax
                                                 + log(acc[c]))
                else:
                    for a in range(L):
                        r[a] = alpha[(t - 1) * LL + a * L + b] + Q[(a * L + b) * L + c]
                    alpha[t * LL + b * L + c] = E[t * L + c] + P[b * L + c] + _lse_row(r, L)
    if T == 1:
        for a in range(L):
            beta[a] = P[(L + 1) * L + a]
    else:
        for a in range(L):
            for b in range(L):
                beta[(T - 1) * LL + a * L + b] = P[(L + 1) * L + b]
        for t in range(T - 2, 0, -1):
            for b in range(L):
                for c in range(L):
                    r[c] = P[b * L + c] + E[(t + 1) * L + c] + beta[(t + 1) * LL + b * L + c]
                m = _max_row(r, L)
                for c in range(L):
                    v[c] = exp(r[c] - m) if m > -INFINITY else 0.0
                for a in range(L):
                    va = 0.0
                    for c in range(L):
                        va += eQ[(a * L + b) * L + c] * v[c]
                    if va > TINY:
                        beta[t * LL + a * L + b] = m + qmax + log(va)
                    else:
                        for c in range(L):
                            acc[c] = Q[(a * L + b) * L + c] + r[c]
                        beta[t * LL + a * L + b] = _lse_row(acc, L)
        for a in range(L):
            for b in range(L):
                r[b] = P[a * L + b] + E[L + b] + beta[LL + a * L + b]
            beta[a] = _lse_row(r, L)
    for a in range(L):
        r[a] = alpha[a] + beta[a]
    return _lse_row(r, L)


cdef double log_marginal2(const double* alpha, const double* beta, Py_ssize_t T,
                          Py_ssize_t L, Py_ssize_t t, int b, double* tmp) noexcept nogil:
    """log sum of exp(s(y)) over the sequences with y_t = b (second order,
    after :c:func:`forward_backward2`; tmp: L)."""
    cdef Py_ssize_t a, LL = L * L
    if t == 0:
        return alpha[b] + beta[b]
    for a in range(L):
        tmp[a] = alpha[t * LL + a * L + b] + beta[t * LL + a * L + b]
    return _lse_row(tmp, L)


cdef void add_marginals2(const double* E, Py_ssize_t T, Py_ssize_t L, const double* P,
                         const double* eQ, const double* alpha, const double* beta,
                         double log_z, double weight, double* node, double* chain,
                         double* tmp) noexcept nogil:
    """:c:func:`add_marginals` for a second-order chain: node (T * L) and, in
    the layout of P ((L + 2 + L * L) * L), weight times the expected
    transition, start, end and trigram counts; tmp: 3 L."""
    cdef Py_ssize_t t, a, b, c, LL = L * L
    cdef const double* Q = P + (L + 2) * L
    cdef double* tri = chain + (L + 2) * L
    cdef double qmax = eQ[L * L * L], p, m1, m2, k
    cdef double* u = tmp
    cdef double* r = tmp + L
    for b in range(L):
        p = weight * _prob(alpha[b] + beta[b] - log_z)
        node[b] += p
        chain[L * L + b] += p
        if T == 1:
            chain[(L + 1) * L + b] += p
    for t in range(1, T):
        for a in range(L):
            for b in range(L):
                p = weight * _prob(alpha[t * LL + a * L + b] + beta[t * LL + a * L + b] - log_z)
                node[t * L + b] += p
                chain[a * L + b] += p
                if t == T - 1:
                    chain[(L + 1) * L + b] += p
    for t in range(2, T):
        # xi[a, b, c] = exp(A[t-1, a, b] + Q[a, b, c] + P[b, c] + E[t, c] + B[t, b, c] - log Z)
        for b in range(L):
            m1 = _max_strided(alpha + (t - 1) * LL + b, L, L)
            for c in range(L):
                r[c] = P[b * L + c] + E[t * L + c] + beta[t * LL + b * L + c]
            m2 = _max_row(r, L)
            if m1 == -INFINITY or m2 == -INFINITY:
                continue
            k = m1 + m2 + qmax - log_z
            if k < 700.0:
                k = weight * exp(k)
                for a in range(L):
                    u[a] = k * exp(alpha[(t - 1) * LL + a * L + b] - m1)
                for c in range(L):
                    r[L + c] = exp(r[c] - m2)
                for a in range(L):
                    for c in range(L):
                        tri[(a * L + b) * L + c] += u[a] * eQ[(a * L + b) * L + c] * r[L + c]
            else:
                for a in range(L):
                    for c in range(L):
                        tri[(a * L + b) * L + c] += weight * _prob(
                            alpha[(t - 1) * LL + a * L + b] + Q[(a * L + b) * L + c] + r[c]
                            - log_z)


cdef void add_conditioned2(const double* E, Py_ssize_t T, Py_ssize_t L, const double* P,
                           const double* alpha, const double* beta, const int* gold,
                           const double* c, double* abar, double* bbar, double* node,
                           double* chain, double* tmp) noexcept nogil:
    """:c:func:`add_conditioned` for a second-order chain (after
    :c:func:`forward_backward2`): add sum_t c[t] E[F | x, y_t = gold[t]], the
    gradient of sum_t c[t] log Z_t, by reverse-mode differentiation of the
    two pair-state recursions; O(T L^3).  abar, bbar: T * L * L; tmp: L.

    log Z_t = log sum_a exp(A[t, a, g] + B[t, a, g]) (A[0, g] + B[0, g] at
    t = 0), so its adjoint enters A[t, ., g] and B[t, ., g] with the weights
    rho(a) = P(y_{t-1} = a | x, y_t = g).  abar runs from the last position
    back (through pi(a | b, c) = d A[t, b, c] / d A[t-1, a, b]), bbar from
    the first on (through sigma(c | a, b) = d B[t, a, b] / d B[t+1, b, c]);
    each step's increments are also the gradient of the scores it uses."""
    cdef Py_ssize_t t, a, b, k, LL = L * L, g
    cdef const double* Q = P + (L + 2) * L
    cdef double* tri = chain + (L + 2) * L
    cdef double lz, w, inc
    memset(abar, 0, T * LL * sizeof(double))
    memset(bbar, 0, T * LL * sizeof(double))
    # direct terms: d (c[t] log Z_t) / d A[t, .] and / d B[t, .]
    for t in range(T):
        g = gold[t]
        if t == 0:
            abar[g] += c[0]
            bbar[g] += c[0]
            continue
        for a in range(L):
            tmp[a] = alpha[t * LL + a * L + g] + beta[t * LL + a * L + g]
        lz = _lse_row(tmp, L)
        for a in range(L):
            w = c[t] * _prob(tmp[a] - lz)
            abar[t * LL + a * L + g] += w
            bbar[t * LL + a * L + g] += w
    # alpha's adjoint, back from the last position; A's own scores
    for t in range(T - 1, 0, -1):
        for b in range(L):
            for k in range(L):          # the state (b, k) at t, k = y_t
                w = abar[t * LL + b * L + k]
                if w == 0.0:
                    continue
                node[t * L + k] += w
                chain[b * L + k] += w
                if t == 1:
                    abar[b] += w         # A[1, b, k] = A[0, b] + P[b, k] + E[1, k]
                    continue
                for a in range(L):
                    inc = w * _prob(alpha[(t - 1) * LL + a * L + b] + Q[(a * L + b) * L + k]
                                    + P[b * L + k] + E[t * L + k] - alpha[t * LL + b * L + k])
                    abar[(t - 1) * LL + a * L + b] += inc
                    tri[(a * L + b) * L + k] += inc
    for b in range(L):
        node[b] += abar[b]
        chain[L * L + b] += abar[b]
    # beta's adjoint, on from the first position; B's own scores
    if T == 1:
        for a in range(L):
            chain[(L + 1) * L + a] += bbar[a]
        return
    for a in range(L):                   # B[0, a] = lse_b P[a, b] + E[1, b] + B[1, a, b]
        if bbar[a] == 0.0:
            continue
        for b in range(L):
            inc = bbar[a] * _prob(P[a * L + b] + E[L + b] + beta[LL + a * L + b] - beta[a])
            bbar[LL + a * L + b] += inc
            chain[a * L + b] += inc
            node[L + b] += inc
    for t in range(1, T - 1):
        for a in range(L):
            for b in range(L):
                w = bbar[t * LL + a * L + b]
                if w == 0.0:
                    continue
                for k in range(L):
                    inc = w * _prob(Q[(a * L + b) * L + k] + P[b * L + k] + E[(t + 1) * L + k]
                                    + beta[(t + 1) * LL + b * L + k] - beta[t * LL + a * L + b])
                    bbar[(t + 1) * LL + b * L + k] += inc
                    tri[(a * L + b) * L + k] += inc
                    chain[b * L + k] += inc
                    node[(t + 1) * L + k] += inc
    for a in range(L):
        for b in range(L):
            chain[(L + 1) * L + b] += bbar[(T - 1) * LL + a * L + b]


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


def _check_chain(E, P, gold=None):
    E = np.ascontiguousarray(E, dtype=np.float64)
    P = np.ascontiguousarray(P, dtype=np.float64)
    if E.ndim != 2 or E.shape[0] < 1 or E.shape[1] < 1:
        raise ValueError(f"emission scores must be a non-empty 2-D array (T, L); got shape {E.shape}")
    L = E.shape[1]
    chain_order(P, L)
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
    return path_score(&Ev[0, 0], E.shape[0], E.shape[1], &Pv[0, 0], chain_order(P, E.shape[1]),
                      &pv[0])


def viterbi_decode(E, P, gold=None, double cost=0.0):
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
    path = np.empty(T, dtype=np.int32)
    delta = np.empty(lattice_nodes(T, L, order), dtype=np.float64)
    back = np.empty(lattice_nodes(T, L, order), dtype=np.int32)
    cdef int[::1] pv = path
    cdef double[::1] dv = delta
    cdef int[::1] bv = back
    cdef double score
    with nogil:
        score = decode_best(&Ev[0, 0], T, L, &Pv[0, 0], order, &dv[0], &bv[0], &pv[0])
    return path, score


def kbest_decode(E, P, Py_ssize_t k, gold=None, double cost=0.0):
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
    if k < 1:
        raise ValueError(f"k must be >= 1; got {k}")
    E, P = _loss_augmented(E, P, gold, cost)
    cdef Py_ssize_t T = E.shape[0], L = E.shape[1]
    cdef int order = chain_order(P, L)
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
        status = kbest_alloc(&s, T, L, k, order)
        if status == 0:
            n = kbest(&Ev[0, 0], T, L, &Pv[0, 0], k, &s, &pv[0, 0], &sv[0])
        kbest_free(&s)
    if status != 0:
        raise MemoryError(f"the k-best scratch for {T} tokens, {L} labels, order {order} and "
                          f"k={k} does not fit in memory; use a smaller k or split long "
                          "sentences")
    return paths[:n].copy(), scores[:n].copy()


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
                viterbi_allowed(E, T, L, &P[0, 0], &aptr[row0], &alab[0], delta, &ov[row0])
            else:
                decode_best(E, T, L, &P[0, 0], order, delta, back, &ov[row0])
    free(E); free(delta); free(back)
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


def chain_marginals(E, P, _return_path=False):
    """log Z, the label marginals and the expected chain counts of a
    first- or second-order chain, by forward-backward: first order scaled
    where that is exact, else in log space (``_return_path=True`` also
    returns whether the scaled path was taken, for the tests).

    Parameters
    ----------
    E : ndarray of shape (T, L)
    P : ndarray of shape (L + 2, L) or (L + 2 + L * L, L)

    Returns
    -------
    log_z : float
        log of the sum of exp(s(y)) over all label sequences.
    node : ndarray of shape (T, L)
        P(y_t = b | x).
    chain : ndarray of the shape of P
        Expected transition counts sum_t P(y_{t-1} = a, y_t = b | x), then
        P(y_0 = b | x) and P(y_{T-1} = b | x) (then, second order, the
        expected trigram counts): E[F(x, y)] for the chain block of
        :func:`sklstruct.chain.joint_feature`.
    """
    E, P, _ = _check_chain(E, P)
    cdef Py_ssize_t T = E.shape[0], L = E.shape[1]
    cdef int order = chain_order(P, L)
    cdef Py_ssize_t S = L if order == 1 else L * L
    alpha = np.empty((T, S))
    beta = np.empty((T + 3 + L, S))
    eE = np.empty((T, L))
    norm = np.empty(T + 3 * L)
    eTr = np.empty((L + 2) * L + 4 if order == 1 else L * L * L + 1)
    node = np.zeros((T, L))
    chain = np.zeros(P.shape)
    cdef double[:, ::1] Ev = E, Pv = P, av = alpha, bv = beta, nv = node, cv = chain, ev = eE
    cdef double[::1] zv = norm, tv = eTr
    cdef double log_z
    cdef bint scaled = False
    with nogil:
        if order == 2:
            scaled_trigrams(&Pv[0, 0], L, &tv[0])
            log_z = forward_backward2(&Ev[0, 0], T, L, &Pv[0, 0], &tv[0], &av[0, 0], &bv[0, 0],
                                      &zv[0])
            add_marginals2(&Ev[0, 0], T, L, &Pv[0, 0], &tv[0], &av[0, 0], &bv[0, 0], log_z,
                           1.0, &nv[0, 0], &cv[0, 0], &zv[0])
        else:
            scaled_transitions(&Pv[0, 0], L, &tv[0])
            log_z = forward_backward_any(&Ev[0, 0], T, L, &Pv[0, 0], &tv[0], &av[0, 0],
                                         &bv[0, 0], &ev[0, 0], &zv[0], &scaled)
            add_marginals_any(&Ev[0, 0], T, L, &Pv[0, 0], &tv[0], &av[0, 0], &bv[0, 0],
                              &ev[0, 0], &zv[0], scaled, log_z, 1.0, &nv[0, 0], &cv[0, 0])
    if _return_path:
        return log_z, node, chain, bool(scaled)
    return log_z, node, chain


def corpus_marginals(const double[:, ::1] E, const double[:, ::1] P,
                     const long long[::1] offsets, double[:, ::1] out, double[::1] log_z):
    """Forward-backward over a block of sentences: ``out`` (rows
    ``offsets[0]:offsets[-1]``) gets every token's label marginals
    P(y_t = . | x) and ``log_z[s]`` the log partition function of sentence
    ``s`` (0 for an empty one), for emission scores ``E`` of the whole
    corpus (one row per token) and first- or second-order ``P``.

    No validation beyond the shapes (callers pass finite scores of a checked
    corpus).  ``offsets`` may be a slice of the corpus' offsets and
    ``log_z`` the matching slice of a per-sentence array, so that threads
    filling disjoint blocks of sentences share both outputs.  The GIL is
    released.
    """
    cdef Py_ssize_t L = E.shape[1], n_sent = offsets.shape[0] - 1
    cdef int order = chain_order(np.asarray(P), L)
    cdef Py_ssize_t S = L if order == 1 else L * L
    cdef Py_ssize_t s, T, row0, max_T = 0
    if out.shape[1] != L or out.shape[0] < offsets[n_sent] or E.shape[0] < offsets[n_sent]:
        raise ValueError(f"E {tuple(E.shape)[:2]} and out {tuple(out.shape)[:2]} must have "
                         f"{offsets[n_sent]} rows of {L} labels")
    if log_z.shape[0] != n_sent:
        raise ValueError(f"log_z has {log_z.shape[0]} entries for {n_sent} sentences")
    for s in range(n_sent):
        max_T = max(max_T, offsets[s + 1] - offsets[s])
    if max_T == 0:
        log_z[:] = 0.0
        return
    cdef double* alpha = <double*>malloc(max_T * S * sizeof(double))
    cdef double* beta = <double*>malloc((max_T + 3 + L) * S * sizeof(double))
    cdef double* eE = <double*>malloc(max_T * L * sizeof(double))
    cdef double* norm = <double*>malloc((max_T + 4 * L) * sizeof(double))
    cdef double* eTr = <double*>malloc(((L + 2) * L + 4 if order == 1 else L * L * L + 1)
                                       * sizeof(double))
    # (the expected chain counts, which the marginals' kernels add up: unused)
    cdef double* chain = <double*>calloc(P.shape[0] * L, sizeof(double))
    cdef bint scaled = False
    if (alpha == NULL or beta == NULL or eE == NULL or norm == NULL or eTr == NULL
            or chain == NULL):
        free(alpha); free(beta); free(eE); free(norm); free(eTr); free(chain)
        raise MemoryError()
    with nogil:
        if order == 2:
            scaled_trigrams(&P[0, 0], L, eTr)
        else:
            scaled_transitions(&P[0, 0], L, eTr)
        for s in range(n_sent):
            row0 = offsets[s]
            T = offsets[s + 1] - row0
            if T == 0:
                log_z[s] = 0.0
                continue
            memset(&out[row0, 0], 0, T * L * sizeof(double))
            if order == 2:
                log_z[s] = forward_backward2(&E[row0, 0], T, L, &P[0, 0], eTr, alpha, beta,
                                             norm)
                add_marginals2(&E[row0, 0], T, L, &P[0, 0], eTr, alpha, beta, log_z[s],
                               1.0, &out[row0, 0], chain, norm)
            else:
                log_z[s] = forward_backward_any(&E[row0, 0], T, L, &P[0, 0], eTr, alpha,
                                                beta, eE, norm, &scaled)
                add_marginals_any(&E[row0, 0], T, L, &P[0, 0], eTr, alpha, beta, eE, norm,
                                  scaled, log_z[s], 1.0, &out[row0, 0], chain)
    free(alpha); free(beta); free(eE); free(norm); free(eTr); free(chain)


def conditioned_expectations(E, P, gold, c=None, bint scaled=True):
    """sum_t c[t] E[F(x, y) | x, y_t = gold[t]] of the chain blocks, the
    expectations of the pointwise losses of Altun, Johnson & Hofmann
    (section 4.1), in O(T L^2) (first order) or O(T L^3) (second).

    ``scaled=False`` keeps the first-order sweeps from the factored fast
    path even where it is exact (for the tests).

    Returns
    -------
    node : ndarray of shape (T, L)
        sum_t' c[t'] P(y_t = b | x, y_t' = gold[t']).
    chain : ndarray of the shape of P
        The same weighted sum of the expected transition, start and end
        (and trigram) counts.
    log_zt : ndarray of shape (T,)
        log sum over the sequences with y_t = gold[t] of exp(s(y)).
    """
    E, P, gold = _check_chain(E, P, gold)
    if gold is None:
        raise ValueError("conditioned expectations need the gold labels")
    cdef Py_ssize_t T = E.shape[0], L = E.shape[1], t
    cdef int order = chain_order(P, L)
    cdef Py_ssize_t S = L if order == 1 else L * L
    c = np.ones(T) if c is None else np.ascontiguousarray(c, dtype=np.float64)
    if c.shape != (T,) or not np.isfinite(c).all():
        raise ValueError(f"c must be {T} finite weights")
    alpha = np.empty((T, S))
    beta = np.empty((T + 3 + L, S))
    abar = np.empty((T, S))
    bbar = np.empty((T, S))
    tmp = np.empty(4 * L + (L * L * L + 1 if order == 2 else (L + 2) * L + 4))
    node = np.zeros((T, L))
    chain = np.zeros(P.shape)
    log_zt = np.empty(T)
    cdef double[:, ::1] Ev = E, Pv = P, av = alpha, bv = beta, nv = node, cv = chain
    cdef double[:, ::1] abv = abar, bbv = bbar
    cdef double[::1] cw = c, tv = tmp, zt = log_zt
    cdef int[::1] gv = gold
    with nogil:
        if order == 2:
            scaled_trigrams(&Pv[0, 0], L, &tv[4 * L])
            forward_backward2(&Ev[0, 0], T, L, &Pv[0, 0], &tv[4 * L], &av[0, 0], &bv[0, 0],
                              &tv[0])
            add_conditioned2(&Ev[0, 0], T, L, &Pv[0, 0], &av[0, 0], &bv[0, 0], &gv[0], &cw[0],
                             &abv[0, 0], &bbv[0, 0], &nv[0, 0], &cv[0, 0], &tv[0])
            for t in range(T):
                zt[t] = log_marginal2(&av[0, 0], &bv[0, 0], T, L, t, gv[t], &tv[0])
        else:
            scaled_transitions(&Pv[0, 0], L, &tv[4 * L])
            forward_backward(&Ev[0, 0], T, L, &Pv[0, 0], &av[0, 0], &bv[0, 0])
            add_conditioned(&Ev[0, 0], T, L, &Pv[0, 0], &av[0, 0], &bv[0, 0], &gv[0], &cw[0],
                            &abv[0, 0], &bbv[0, 0], &nv[0, 0], &cv[0, 0],
                            &tv[4 * L] if scaled else NULL, &tv[0])
            for t in range(T):
                zt[t] = av[t, gv[t]] + bv[t, gv[t]]
    return node, chain, log_zt

# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Forward-backward for the linear-chain model, first and second order: log Z
and the label and transition marginals (the expectations conditioned on one
position's label, which differentiate these recursions, are in
:mod:`sklstruct._conditioned`).

The chain and its score s(y) are those of :mod:`sklstruct._viterbi`, which
decodes them; here P(y | x) = exp(s(y)) / Z.  Kernels (``cdef ... nogil``)
take a :c:type:`Lattice` (one sentence: E, P, T, L, order) and an
:c:type:`FBWork` (the named buffers, :c:func:`fb_alloc`), and trust them;
each public kernel dispatches on the order (and, first order, on the
scaled or log-space path).  The ``def`` functions at the end validate their
arguments and are what the rest of the package and the tests call.
"""
import numpy as np

from libc.stdlib cimport calloc, malloc, free
from libc.string cimport memset
from libc.math cimport INFINITY, NAN, exp, fmin, log

from sklstruct._viterbi import _check_chain, chain_order


# ---------------------------------------------------------------------------
# Buffers and dispatch
# ---------------------------------------------------------------------------

cdef int fb_alloc(FBWork* w, Py_ssize_t max_T, Py_ssize_t L, int order,
                  bint adjoints) noexcept nogil:
    """Buffers for sentences of up to ``max_T`` tokens (``adjoints``: also
    abar and bbar, for :func:`sklstruct._conditioned.add_conditioned`); 0,
    or -1 (then every pointer is NULL) where memory is short."""
    cdef Py_ssize_t S = L if order == 1 else L * L, n = max(max_T, 1)
    w.eTr = <double*>malloc(((L + 2) * L + 4 if order == 1 else L * L * L + 1) * sizeof(double))
    w.alpha = <double*>malloc(n * S * sizeof(double))
    w.beta = <double*>malloc(n * S * sizeof(double))
    w.eE = <double*>malloc(n * L * sizeof(double))
    w.norm = <double*>malloc(n * sizeof(double))
    w.eP = <double*>malloc(L * L * sizeof(double))
    w.row = <double*>malloc(4 * L * sizeof(double))
    w.abar = <double*>malloc(n * S * sizeof(double)) if adjoints else NULL
    w.bbar = <double*>malloc(n * S * sizeof(double)) if adjoints else NULL
    w.scaled = w.factored = False
    if (w.eTr == NULL or w.alpha == NULL or w.beta == NULL or w.eE == NULL or w.norm == NULL
            or w.eP == NULL or w.row == NULL
            or (adjoints and (w.abar == NULL or w.bbar == NULL))):
        fb_free(w)
        return -1
    return 0


cdef void fb_free(FBWork* w) noexcept nogil:
    free(w.eTr); free(w.alpha); free(w.beta); free(w.eE); free(w.norm); free(w.eP)
    free(w.row); free(w.abar); free(w.bbar)
    w.eTr = w.alpha = w.beta = w.eE = w.norm = w.eP = w.row = w.abar = w.bbar = NULL


cdef void fb_prepare(FBWork* w, const double* P, Py_ssize_t L, int order) noexcept nogil:
    """w.eTr from the chain parameters P, once per weight vector: the scaled
    transitions (:c:func:`_scaled_transitions`) or trigrams
    (:c:func:`_scaled_trigrams`); and w.factored."""
    if order == 2:
        _scaled_trigrams(P, L, w.eTr)
        w.factored = False
    else:
        _scaled_transitions(P, L, w.eTr)
        w.factored = w.eTr[(L + 2) * L + 3] <= SCALED_RANGE


cdef double forward_backward(const Lattice* lat, FBWork* w, bint exact) noexcept nogil:
    """Fill w.alpha and w.beta and return log Z: second order in log space
    (:c:func:`_forward_backward2`); first order on the scaled path where it
    is exact (:c:func:`_forward_backward_scaled`) unless ``exact``, else in
    log space (:c:func:`_forward_backward1`).  w.scaled says which path ran:
    :c:func:`log_marginal` and :func:`sklstruct._conditioned.add_conditioned`
    need the log-space alpha and beta (``exact``)."""
    cdef double log_z
    w.scaled = False
    if lat.order == 2:
        return _forward_backward2(lat, w)
    if not exact:
        log_z = _forward_backward_scaled(lat, w)
        w.scaled = log_z == log_z
        if w.scaled:
            return log_z
    return _forward_backward1(lat, w)


cdef void add_marginals(const Lattice* lat, FBWork* w, double log_z, double weight,
                        double* node, double* chain) noexcept nogil:
    """node[t, b] += weight * P(y_t = b | x) (T * L), and in the layout of P
    weight times the expected transition, start and end (and trigram)
    counts: ``weight`` times E[F(x, y)] of the chain blocks, after
    :c:func:`forward_backward`."""
    if lat.order == 2:
        _add_marginals2(lat, w, log_z, weight, node, chain)
    elif w.scaled:
        _add_marginals_scaled(lat, w, weight, node, chain)
    else:
        _add_marginals1(lat, w, log_z, weight, node, chain)


cdef double log_marginal(const Lattice* lat, FBWork* w, Py_ssize_t t, int b) noexcept nogil:
    """log sum of exp(s(y)) over the sequences with y_t = b, after
    :c:func:`forward_backward` in log space (``exact``)."""
    if lat.order == 2:
        return _log_marginal2(lat, w, t, b)
    return w.alpha[t * lat.L + b] + w.beta[t * lat.L + b]


# ---------------------------------------------------------------------------
# Forward-backward (first order), in log space
# ---------------------------------------------------------------------------
#
# With s(y) the score of a sequence (sklstruct/_viterbi.pyx), P(y | x) =
# exp(s(y)) / Z.  In log space
#
#     alpha[t, b] = E[t, b] + log sum_a exp(alpha[t-1, a] + P[a, b]),  alpha[0, b] = start[b] + E[0, b]
#     beta[t, a]  = log sum_b exp(P[a, b] + E[t+1, b] + beta[t+1, b]), beta[T-1, a] = end[a]
#
# and log Z = log sum_b exp(alpha[t, b] + beta[t, b]) for any t; every sum is
# taken relative to its largest term, so nothing overflows however long the
# sentence or large the scores.


# Sums below 1e-280 (of terms scaled to at most 1) are recomputed exactly:
# the fast path multiplies exponentials of shifted scores, and a product of
# two tiny factors could underflow where the exact log-sum-exp does not.
cdef double TINY = 1e-280


cdef double _forward_backward1(const Lattice* lat, FBWork* w) noexcept nogil:
    """Fill w.alpha and w.beta (T * L each; w.eP: exp(P - max P), which
    :c:func:`_add_marginals1` reads) and return log Z, for a first-order
    chain.

    Each recursion step is a matrix-vector product in scaled probability
    space, exp(alpha[t-1] - max) times exp(P - max P), with the results
    stored as logs: L exponentials and logarithms per position instead of
    L^2, and every value exact in log space; a sum that underflows the
    scaled product is taken exactly by log-sum-exp instead."""
    cdef Py_ssize_t t, a, b, T = lat.T, L = lat.L
    cdef const double* E = lat.E
    cdef const double* P = lat.P
    cdef double* alpha = w.alpha
    cdef double* beta = w.beta
    cdef double* v = w.row
    cdef double* eP = w.eP
    cdef double* tmp = w.row + L
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


cdef void _add_marginals1(const Lattice* lat, FBWork* w, double log_z, double weight,
                          double* node, double* chain) noexcept nogil:
    """node[t, b] += weight * P(y_t = b | x) (T * L), and in the layout of P
    (chain: (L + 2) * L) weight times the expected transition counts
    sum_t P(y_{t-1} = a, y_t = b | x), start P(y_0 = b | x) and end
    P(y_{T-1} = b | x): ``weight`` times E[F(x, y)] of the chain blocks.
    After :c:func:`_forward_backward1` (w.eP holds exp(P - max P)); the
    edge marginals are products of scaled exponentials, L per position,
    taken exactly where the scale could overflow."""
    cdef Py_ssize_t t, a, b, T = lat.T, L = lat.L
    cdef const double* E = lat.E
    cdef const double* P = lat.P
    cdef const double* alpha = w.alpha
    cdef const double* beta = w.beta
    cdef double* v = w.row
    cdef const double* eP = w.eP
    cdef double* r = w.row + L
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
# takes the log-space path (:c:func:`forward_backward` does).
cdef double SCALED_RANGE = 200.0


cdef void _scaled_transitions(const double* P, Py_ssize_t L, double* out) noexcept nogil:
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


cdef double _forward_backward_scaled(const Lattice* lat, FBWork* w) noexcept nogil:
    """Scaled forward-backward: ea[t] and eb[t] (w.alpha and w.beta, T * L
    each) proportional to exp(alpha[t]) and exp(beta[t]) and summing to 1,
    w.eE[t, b] = exp(E[t, b] - max E[t]), w.norm[t] the forward normaliser
    of position t.  Returns log Z, or NaN where the scores' spread exceeds
    SCALED_RANGE (or a normaliser falls below TINY, which that excludes)."""
    cdef Py_ssize_t t, a, b, T = lat.T, L = lat.L
    cdef const double* E = lat.E
    cdef const double* eTr = w.eTr
    cdef double* ea = w.alpha
    cdef double* eb = w.beta
    cdef double* eE = w.eE
    cdef double* norm = w.norm
    cdef double* nxt = w.row                         # the next row's factor
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
        for b in range(L):
            nxt[b] = eE[(t + 1) * L + b] * eb[(t + 1) * L + b]
        s = 0.0
        for a in range(L):
            acc = 0.0
            for b in range(L):
                acc += eP[a * L + b] * nxt[b]
            row[a] = acc
            s += acc
        if not (s > TINY):
            return NAN
        s = 1.0 / s
        for a in range(L):
            row[a] *= s
    return log_z


cdef void _add_marginals_scaled(const Lattice* lat, FBWork* w, double weight, double* node,
                                double* chain) noexcept nogil:
    """What :c:func:`_add_marginals1` adds, from the scaled recursions: the node
    marginal is ea[t] * eb[t] normalised, and the edge marginal
    ea[t-1, a] eP[a, b] eE[t, b] eb[t, b] sums to norm[t] * (ea[t] . eb[t])
    over (a, b): no exponential at all."""
    cdef Py_ssize_t t, a, b, T = lat.T, L = lat.L
    cdef const double* eP = w.eTr
    cdef const double* ea = w.alpha
    cdef const double* eb = w.beta
    cdef const double* eE = w.eE
    cdef const double* norm = w.norm
    cdef double d, k, v
    cdef double* r = w.row
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


cdef void _scaled_trigrams(const double* P, Py_ssize_t L, double* out) noexcept nogil:
    """out[:L^3] = exp(Q - max Q) for the trigram scores Q of P, out[L^3] = max Q."""
    cdef Py_ssize_t i, n = L * L * L
    cdef const double* Q = P + (L + 2) * L
    cdef double m = _max_row(Q, n)
    for i in range(n):
        out[i] = exp(Q[i] - m)
    out[n] = m


cdef double _forward_backward2(const Lattice* lat, FBWork* w) noexcept nogil:
    """Fill w.alpha and w.beta (T * L * L each, A and B above) and return
    log Z of a second-order chain (w.eTr from :c:func:`_scaled_trigrams`)."""
    cdef Py_ssize_t t, a, b, c, T = lat.T, L = lat.L, LL = L * L
    cdef const double* E = lat.E
    cdef const double* P = lat.P
    cdef const double* eQ = w.eTr
    cdef double* alpha = w.alpha
    cdef double* beta = w.beta
    cdef double* tmp = w.row
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


cdef double _log_marginal2(const Lattice* lat, FBWork* w, Py_ssize_t t, int b) noexcept nogil:
    """log sum of exp(s(y)) over the sequences with y_t = b (second order,
    after :c:func:`_forward_backward2`)."""
    cdef Py_ssize_t a, L = lat.L, LL = L * L
    cdef const double* alpha = w.alpha
    cdef const double* beta = w.beta
    cdef double* tmp = w.row
    if t == 0:
        return alpha[b] + beta[b]
    for a in range(L):
        tmp[a] = alpha[t * LL + a * L + b] + beta[t * LL + a * L + b]
    return _lse_row(tmp, L)


cdef void _add_marginals2(const Lattice* lat, FBWork* w, double log_z, double weight,
                          double* node, double* chain) noexcept nogil:
    """:c:func:`_add_marginals1` for a second-order chain: node (T * L) and,
    in the layout of P ((L + 2 + L * L) * L), weight times the expected
    transition, start, end and trigram counts."""
    cdef Py_ssize_t t, a, b, c, T = lat.T, L = lat.L, LL = L * L
    cdef const double* E = lat.E
    cdef const double* P = lat.P
    cdef const double* eQ = w.eTr
    cdef const double* alpha = w.alpha
    cdef const double* beta = w.beta
    cdef double* tmp = w.row
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


# ---------------------------------------------------------------------------
# Validated Python entry points
# ---------------------------------------------------------------------------

cdef Lattice _lattice(const double[:, ::1] E, const double[:, ::1] P, int order):
    cdef Lattice lat
    lat.E = &E[0, 0]
    lat.P = &P[0, 0]
    lat.T = E.shape[0]
    lat.L = E.shape[1]
    lat.order = order
    return lat


def _chain_marginals(E, P):
    """:func:`chain_marginals`, and whether the scaled path ran."""
    E, P, _ = _check_chain(E, P)
    cdef Py_ssize_t T = E.shape[0], L = E.shape[1]
    cdef Lattice lat = _lattice(E, P, chain_order(P, L))
    node = np.zeros((T, L))
    chain = np.zeros(P.shape)
    cdef double[:, ::1] nv = node, cv = chain
    cdef double log_z
    cdef FBWork w
    if fb_alloc(&w, T, L, lat.order, False) != 0:
        raise MemoryError()
    with nogil:
        fb_prepare(&w, lat.P, L, lat.order)
        log_z = forward_backward(&lat, &w, False)
        add_marginals(&lat, &w, log_z, 1.0, &nv[0, 0], &cv[0, 0])
    scaled = bool(w.scaled)
    fb_free(&w)
    return log_z, node, chain, scaled


def chain_marginals(E, P):
    """log Z, the label marginals and the expected chain counts of a
    first- or second-order chain, by forward-backward: first order scaled
    where that is exact, else in log space.

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
    return _chain_marginals(E, P)[:3]


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
    cdef Py_ssize_t s, row0, max_T = 0
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
    cdef Lattice lat
    lat.P = &P[0, 0]
    lat.L = L
    lat.order = order
    cdef FBWork w
    # (the expected chain counts, which the marginals' kernels add up: unused)
    cdef double* chain = <double*>calloc(P.shape[0] * L, sizeof(double))
    if chain == NULL or fb_alloc(&w, max_T, L, order, False) != 0:
        free(chain)
        raise MemoryError()
    with nogil:
        fb_prepare(&w, lat.P, L, order)
        for s in range(n_sent):
            row0 = offsets[s]
            lat.T = offsets[s + 1] - row0
            if lat.T == 0:
                log_z[s] = 0.0
                continue
            lat.E = &E[row0, 0]
            memset(&out[row0, 0], 0, lat.T * L * sizeof(double))
            log_z[s] = forward_backward(&lat, &w, False)
            add_marginals(&lat, &w, log_z[s], 1.0, &out[row0, 0], chain)
    fb_free(&w)
    free(chain)


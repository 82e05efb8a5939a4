# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Expectations of the chain conditioned on one position's label, first and
second order: sum_t c[t] E[F(x, y) | x, y_t = gold[t]] of the chain blocks,
what the gradients of the pointwise losses of Altun, Johnson & Hofmann
("Investigating Loss Functions and Optimization Methods for Discriminative
Learning of Label Sequences", section 4.1) are made of.

They are the gradient of G = sum_t c[t] log Z_t (Z_t the sum over the
sequences with y_t = gold[t]), taken by reverse-mode differentiation of the
forward and backward recursions of :mod:`sklstruct._forward_backward`, whose
:c:type:`Lattice` and :c:type:`FBWork` the kernels take (after
``forward_backward(lat, w, exact=True)``, into buffers allocated with
adjoints); O(T L^2) per sentence (first order) or O(T L^3) (second).
"""
import numpy as np

from libc.math cimport INFINITY, exp
from libc.string cimport memset

from sklstruct._forward_backward cimport (FBWork, Lattice, _lse_row, _max_row, _prob,
                                          fb_alloc, fb_free, fb_prepare, forward_backward,
                                          log_marginal)

from sklstruct._viterbi import _check_chain, chain_order


cdef void add_conditioned(const Lattice* lat, FBWork* w, const int* gold, const double* c,
                          double* node, double* chain) noexcept nogil:
    """Add sum_t c[t] E[F | x, y_t = gold[t]] of the chain blocks (node: T * L,
    chain: the layout of P); first order with the factored derivatives where
    w.factored allows them."""
    if lat.order == 2:
        _add_conditioned2(lat, w, gold, c, node, chain)
    else:
        _add_conditioned1(lat, w, gold, c, node, chain)


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


cdef void _add_conditioned1(const Lattice* lat, FBWork* w, const int* gold, const double* c,
                            double* node, double* chain) noexcept nogil:
    """Add sum_t c[t] E[F | x, y_t = gold[t]] of the chain blocks (node: T * L
    per-token label expectations, chain: the layout of P), the conditioned
    expectations the pointwise losses need (Altun, Johnson & Hofmann,
    section 4.1), in O(T L^2): the gradient of
    G = sum_t c[t] (alpha[t, gold[t]] + beta[t, gold[t]]) = sum_t c[t] log Z_t,
    Z_t the sum over the sequences with y_t = gold[t], by reverse-mode
    differentiation of the two recursions, after :c:func:`_forward_backward1`.

    ``abar[t, b]`` gathers the terms with the conditioning position t' >= t
    (through d alpha[t', .] / d alpha[t, b] = P(y_t = b | y_{t'}, prefix)),
    ``bbar[t, a]`` those with t' <= t (through beta).

    Those derivatives are products u[a] exp(P[a, b] - max P) v[b] of row
    factors (:c:func:`_alpha_factors`, :c:func:`_beta_factors`; 2 L
    exponentials per position instead of L^2) when w.factored, which
    :c:func:`fb_prepare` sets where w.eTr shows a spread of the
    transition scores within SCALED_RANGE: the factor that is not at most 1
    is then at most e^SCALED_RANGE, so a factor lost to underflow drops less
    than 1e-220 of a term."""
    cdef Py_ssize_t t, a, b, T = lat.T, L = lat.L
    cdef const double* E = lat.E
    cdef const double* P = lat.P
    cdef const double* alpha = w.alpha
    cdef const double* beta = w.beta
    cdef double* abar = w.abar
    cdef double* bbar = w.bbar
    cdef double wt, acc
    cdef const double* eP = w.eTr
    cdef bint fast = w.factored
    cdef double pmax = w.eTr[(L + 2) * L] if fast else 0.0
    cdef double* u = w.row
    cdef double* v = w.row + L
    cdef double* x = w.row + 2 * L
    cdef double* y = w.row + 3 * L
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
                    wt = _d_alpha(fast, u, v, eP, E, P, alpha, L, t + 1, a, b)
                    acc += abar[(t + 1) * L + b] * wt
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
                    wt = _d_beta(fast, x, y, eP, E, P, beta, L, t, a, b)
                    bbar[t * L + b] += bbar[(t - 1) * L + a] * wt
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
                wt = _d_beta(fast, x, y, eP, E, P, beta, L, t, a, b)
                chain[a * L + b] += bbar[(t - 1) * L + a] * wt
                node[t * L + b] += bbar[(t - 1) * L + a] * wt


cdef void _add_conditioned2(const Lattice* lat, FBWork* w, const int* gold, const double* c,
                            double* node, double* chain) noexcept nogil:
    """:c:func:`_add_conditioned1` for a second-order chain (after
    :c:func:`_forward_backward2`): add sum_t c[t] E[F | x, y_t = gold[t]], the
    gradient of sum_t c[t] log Z_t, by reverse-mode differentiation of the
    two pair-state recursions; O(T L^3).

    log Z_t = log sum_a exp(A[t, a, g] + B[t, a, g]) (A[0, g] + B[0, g] at
    t = 0), so its adjoint enters A[t, ., g] and B[t, ., g] with the weights
    rho(a) = P(y_{t-1} = a | x, y_t = g).  abar runs from the last position
    back (through pi(a | b, c) = d A[t, b, c] / d A[t-1, a, b]), bbar from
    the first on (through sigma(c | a, b) = d B[t, a, b] / d B[t+1, b, c]);
    each step's increments are also the gradient of the scores it uses."""
    cdef Py_ssize_t t, a, b, k, T = lat.T, L = lat.L, LL = L * L, g
    cdef const double* E = lat.E
    cdef const double* P = lat.P
    cdef const double* alpha = w.alpha
    cdef const double* beta = w.beta
    cdef double* abar = w.abar
    cdef double* bbar = w.bbar
    cdef double* tmp = w.row
    cdef const double* Q = P + (L + 2) * L
    cdef double* tri = chain + (L + 2) * L
    cdef double lz, wt, inc
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
            wt = c[t] * _prob(tmp[a] - lz)
            abar[t * LL + a * L + g] += wt
            bbar[t * LL + a * L + g] += wt
    # alpha's adjoint, back from the last position; A's own scores
    for t in range(T - 1, 0, -1):
        for b in range(L):
            for k in range(L):          # the state (b, k) at t, k = y_t
                wt = abar[t * LL + b * L + k]
                if wt == 0.0:
                    continue
                node[t * L + k] += wt
                chain[b * L + k] += wt
                if t == 1:
                    abar[b] += wt         # A[1, b, k] = A[0, b] + P[b, k] + E[1, k]
                    continue
                for a in range(L):
                    inc = wt * _prob(alpha[(t - 1) * LL + a * L + b] + Q[(a * L + b) * L + k]
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
                wt = bbar[t * LL + a * L + b]
                if wt == 0.0:
                    continue
                for k in range(L):
                    inc = wt * _prob(Q[(a * L + b) * L + k] + P[b * L + k] + E[(t + 1) * L + k]
                                    + beta[(t + 1) * LL + b * L + k] - beta[t * LL + a * L + b])
                    bbar[(t + 1) * LL + b * L + k] += inc
                    tri[(a * L + b) * L + k] += inc
                    chain[b * L + k] += inc
                    node[(t + 1) * L + k] += inc
    for a in range(L):
        for b in range(L):
            chain[(L + 1) * L + b] += bbar[(T - 1) * LL + a * L + b]


def _conditioned(E, P, gold, c, bint factored):
    """:func:`conditioned_expectations`; ``factored=False`` keeps the
    first-order sweeps from the factored derivatives even where they are
    exact."""
    E, P, gold = _check_chain(E, P, gold)
    if gold is None:
        raise ValueError("conditioned expectations need the gold labels")
    cdef Py_ssize_t T = E.shape[0], L = E.shape[1], t
    cdef Lattice lat
    cdef double[:, ::1] Ev = E, Pv = P
    lat.E, lat.P, lat.T, lat.L, lat.order = &Ev[0, 0], &Pv[0, 0], T, L, chain_order(P, L)
    c = np.ones(T) if c is None else np.ascontiguousarray(c, dtype=np.float64)
    if c.shape != (T,) or not np.isfinite(c).all():
        raise ValueError(f"c must be {T} finite weights")
    node = np.zeros((T, L))
    chain = np.zeros(P.shape)
    log_zt = np.empty(T)
    cdef double[:, ::1] nv = node, cv = chain
    cdef double[::1] cw = c, zt = log_zt
    cdef int[::1] gv = gold
    cdef FBWork w
    if fb_alloc(&w, T, L, lat.order, True) != 0:
        raise MemoryError()
    with nogil:
        fb_prepare(&w, lat.P, L, lat.order)
        w.factored = w.factored and factored
        forward_backward(&lat, &w, True)
        add_conditioned(&lat, &w, &gv[0], &cw[0], &nv[0, 0], &cv[0, 0])
        for t in range(T):
            zt[t] = log_marginal(&lat, &w, t, gv[t])
    fb_free(&w)
    return node, chain, log_zt


def conditioned_expectations(E, P, gold, c=None):
    """sum_t c[t] E[F(x, y) | x, y_t = gold[t]] of the chain blocks, the
    expectations of the pointwise losses of Altun, Johnson & Hofmann
    (section 4.1), in O(T L^2) (first order) or O(T L^3) (second).

    Parameters
    ----------
    E : ndarray of shape (T, L)
    P : ndarray of shape (L + 2, L) or (L + 2 + L * L, L)
    gold : array-like of shape (T,)
        The label each position is conditioned on.
    c : array-like of shape (T,), optional
        Weights of the positions (default: all 1).

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
    return _conditioned(E, P, gold, c, True)

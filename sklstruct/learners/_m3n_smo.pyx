# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Structured SMO on the factored dual of the M3N (Taskar, Guestrin & Koller,
"Max-Margin Markov Networks"; the baseline of Yu & Lam, eq. 5).

The dual variables alpha_i(y) of eq. 5 (one per label sequence, summing to
C) are held by their marginals: node marginals m_i[t, l] and edge marginals
e_i[t, a, b] (labels a at t - 1 and b at t).  The dual depends on alpha
only through them, and on a chain every non-negative, consistent set of
marginals summing to C is that of some alpha >= 0 (for instance the
max-entropy one), whose support can hold every path through positive
marginals.  The node marginals are held as the emission coefficients
beta[r, l] = C [l = y_r] - m[r, l] of each training token r (w = sum alpha dF = C F(gold) - sum alpha
F(y)), so that a kernel model's emission score of label l at a token x is
sum_r beta[r, l] k(x, x_r), and an explicit one's weights are W = X' beta.

An SMO step on example i moves mass delta from the sequence y through
positive marginals of lowest loss-augmented score g(y) = H(y) + w . F(x_i, y) to
the sequence y' of highest g (the pair that violates the KKT conditions
most): the dual gains delta (g(y') - g(y)) - delta^2 / 2 ||F(y) - F(y')||^2,
maximised at delta = gap / ||F(y) - F(y')||^2, clipped so that no marginal
the move decreases falls below 0.
Only example i's coefficients change, so its emission scores are updated
through the Gram matrix of its own tokens, and the steps on it repeat until
its gap is at most tol (or max_steps).
"""
import numpy as np

from libc.math cimport INFINITY

from sklstruct._chain cimport (ChainData, ChainWeights, Corpus, Diff, Weights, Workspace,
                               apply_diff, build_diff, diff_sqnorm, same_path)
from sklstruct._kernel_scores cimport (Index, KernelFunction, KernelState, emission_sqnorm,
                                       kernel_rows, matrix_ptr, promote, token_gram,
                                       vector_ptr)
from sklstruct._viterbi cimport add_hamming, compute_emission, decode_best

#: What _support_argmin returns when no path runs through positive marginals.
cdef double _NO_PATH = 1e300


cdef double _support_argmin(const double* A, Py_ssize_t T, Py_ssize_t L, const double* P,
                            const double* beta, const int* gold, double C,
                            const double* edge, double thr, double* delta, int* back,
                            int* path) noexcept nogil:
    """min g(y) = sum_t A[t, y_t] + the chain scores of P over the paths whose
    node marginals C [l = gold_t] - beta[t, l] and edge marginals edge[t, a, b]
    all exceed thr; the path into ``path``.  Returns _NO_PATH if there is none."""
    cdef double INF = _NO_PATH, best, v, m
    cdef Py_ssize_t t, a, b, LL = L * L
    cdef int arg
    for b in range(L):
        m = C * (gold[0] == b) - beta[b]
        delta[b] = A[b] + P[L * L + b] if m > thr else INF
    for t in range(1, T):
        for b in range(L):
            best = INF
            arg = -1
            m = C * (gold[t] == b) - beta[t * L + b]
            if m > thr:
                for a in range(L):
                    if delta[(t - 1) * L + a] < INF and edge[t * LL + a * L + b] > thr:
                        v = delta[(t - 1) * L + a] + P[a * L + b]
                        if v < best:
                            best = v
                            arg = a
            delta[t * L + b] = best + A[t * L + b] if arg >= 0 else INF
            back[t * L + b] = arg
    best = INF
    arg = -1
    for b in range(L):
        if delta[(T - 1) * L + b] < INF:
            v = delta[(T - 1) * L + b] + P[(L + 1) * L + b]
            if v < best:
                best = v
                arg = b
    if arg < 0:
        return INF
    path[T - 1] = arg
    for t in range(T - 1, 0, -1):
        path[t - 1] = back[t * L + path[t]]
    return best


cdef double _step_bound(const int* ya, const int* yb, Py_ssize_t T, Py_ssize_t L,
                        const double* beta, const int* gold, double C,
                        const double* edge) noexcept nogil:
    """The largest mass that can move from path ya to path yb: the smallest
    marginal the move decreases (nodes where they differ, edges where their
    label pairs differ).  Any non-negative, consistent marginals of a chain
    are those of some alpha >= 0, so this is the exact bound."""
    cdef double bound = 1e300, m
    cdef Py_ssize_t t
    for t in range(T):
        if ya[t] != yb[t]:
            m = C * (gold[t] == ya[t]) - beta[t * L + ya[t]]
            if m < bound:
                bound = m
        if t and (ya[t - 1] != yb[t - 1] or ya[t] != yb[t]):
            m = edge[t * L * L + ya[t - 1] * L + ya[t]]
            if m < bound:
                bound = m
    return bound



def factored_smo_epoch(ChainData data, const int[::1] y, const long long[::1] order,
                       double[:, ::1] beta, double[:, :, ::1] edge, KernelState ks,
                       ChainWeights weights, ChainData chain, double C, double tol,
                       long long max_steps, KernelFunction kernel not None):
    """One pass of structured SMO over the examples in ``order`` (callers
    validate all arguments; first-order chains only).

    Parameters
    ----------
    data : ChainData, the training set
    y : int32 gold codes, one per row
    order : int64 sentence indices, in visiting order
    beta : (n_rows, L) emission coefficients C [l = y_r] - m[r, l], updated in place
    edge : (n_rows, L, L) edge marginals (row r: labels at r - 1 and r; the
        first row of each sentence unused), updated in place
    ks : KernelState whose ``beta`` is ``beta`` (a kernel model), or None (an
        explicit model: ``weights.W`` = X' beta is updated)
    weights : ChainWeights: W (explicit model) and the chain parameters P
    chain : ``data`` without its features (the chain part of dF)
    C : the dual variables' sum per example
    tol : an example's steps stop when its KKT gap g(y') - g(y) is at most tol
    max_steps : cap on the steps per example and visit
    kernel : KernelFunction, the linear one for an explicit model

    Returns
    -------
    n_mistakes : sentences whose loss-augmented best was not gold (first step)
    n_steps : SMO steps taken
    max_gap : the largest KKT gap met (first step of each visit)
    n_overflow : visits stopped because a kernel value or a bound was not finite
    """
    cdef Weights* w = weights.bind()
    cdef Index* ix = NULL
    if not kernel.linear:
        if ks is None:
            raise ValueError("a kernel model needs its KernelState")
        ix = ks.bind(data)
    cdef Py_ssize_t L = weights.n_labels, N = data.c.offsets[data.c.n_sentences]
    if (beta.shape[0] != N or beta.shape[1] != L or edge.shape[0] != N
            or edge.shape[1] != L or edge.shape[2] != L or y.shape[0] != N):
        raise ValueError("beta, edge and y must match the training set")
    if weights.order != 1:
        raise ValueError("structured SMO is implemented for first-order chains")
    cdef Py_ssize_t max_T = max(data.max_T, 1)
    cdef Workspace ws = Workspace(data, L, 1, 1, 1)
    scratch = np.zeros(max_T * L * 2 + max_T * max_T + data.n_features)
    cdef double* A = vector_ptr(scratch)
    cdef double* delta2 = A + max_T * L
    cdef double* G = delta2 + max_T * L
    cdef double* buf = G + max_T * max_T
    ints = np.zeros(max_T * (L + 1), dtype=np.int32)
    cdef int[::1] ints_v = ints
    cdef int* back2 = &ints_v[0]
    cdef int* ysup = back2 + max_T * L
    cdef double* bp = &beta[0, 0] if N and L else NULL
    cdef double* ep = &edge[0, 0, 0] if N and L else NULL
    cdef double* bsum = vector_ptr(ks.bsum) if ix != NULL else NULL
    cdef Diff* D = &ws.diffs[0]
    cdef Corpus* X = &data.c
    cdef Corpus* Z = &chain.c
    cdef Py_ssize_t i, t, u, T, row0, r, step, n_sent = order.shape[0]
    cdef long long n_mistakes = 0, n_steps = 0, n_overflow = 0, e
    cdef double g_hi, g_lo, gap, sq, d, a_y, f, max_gap = 0.0
    cdef double thr = 1e-10 * C
    cdef const int* gold
    cdef const int* yh
    cdef int ya, yb
    with nogil:
        for i in range(n_sent):
            row0 = X.offsets[order[i]]
            T = X.offsets[order[i] + 1] - row0
            gold = &y[row0]
            if ix != NULL:
                kernel_rows(ix, &kernel.k, X, row0, T, bp, bsum, ws.E, NULL, NULL, NULL)
            else:
                compute_emission(X.indptr, X.indices, X.data, row0, T, w.W, L, ws.E)
            for step in range(max_steps):
                for u in range(T * L):
                    A[u] = ws.E[u]
                add_hamming(A, T, L, gold, 1.0)
                g_hi = decode_best(A, T, L, w.P, 1, ws.kb.delta, ws.kb.back, ws.y_hat)
                g_lo = _support_argmin(A, T, L, w.P, bp + row0 * L, gold, C,
                                       ep + row0 * L * L, thr, delta2, back2, ysup)
                gap = g_hi - g_lo
                yh = ws.y_hat
                if step == 0:
                    if not same_path(yh, gold, T):
                        n_mistakes += 1
                    if g_lo < _NO_PATH and gap > max_gap:
                        max_gap = gap
                if g_lo >= _NO_PATH or not gap > tol:
                    break
                if step == 0:
                    # the Gram matrix of the sentence's tokens, only when it takes a step
                    token_gram(X, &kernel.k, row0, T, buf, G)
                # ||F(ysup) - F(y')||^2: emissions through G, the chain part exactly
                build_diff(Z, row0, T, ysup, yh, w, D)
                sq = (emission_sqnorm(ysup, yh, T, G, X, &kernel.k, row0, buf)
                      + diff_sqnorm(&ws.table, D))
                a_y = _step_bound(ysup, yh, T, L, bp + row0 * L, gold, C, ep + row0 * L * L)
                if not (sq < INFINITY and a_y < INFINITY):
                    n_overflow += 1          # kernel values overflowed: Python raises
                    break
                # the exact step gap / sq, clipped at a_y (sq <= 0: an indefinite
                # kernel such as tanh, the dual rises all the way to the bound)
                d = a_y if (sq <= 0.0 or gap >= a_y * sq) else gap / sq
                if not d > 0.0:
                    break
                n_steps += 1
                # move d from ysup to y': beta, W or the support, E, the edges, P
                for t in range(T):
                    ya = ysup[t]
                    yb = yh[t]
                    if ya == yb:
                        continue
                    r = row0 + t
                    bp[r * L + ya] += d
                    bp[r * L + yb] -= d
                    if ix != NULL:
                        promote(ix, X, r)
                        bsum[ya] += d
                        bsum[yb] -= d
                    else:
                        for e in range(X.indptr[r], X.indptr[r + 1]):
                            f = d * X.data[e]
                            w.W[X.indices[e] * L + ya] += f
                            w.W[X.indices[e] * L + yb] -= f
                    for u in range(T):
                        ws.E[u * L + ya] += d * G[u * T + t]
                        ws.E[u * L + yb] -= d * G[u * T + t]
                for t in range(1, T):
                    if ysup[t - 1] == yh[t - 1] and ysup[t] == yh[t]:
                        continue
                    r = row0 + t
                    ep[r * L * L + ysup[t - 1] * L + ysup[t]] -= d
                    ep[r * L * L + yh[t - 1] * L + yh[t]] += d
                apply_diff(D, w, d)
    return n_mistakes, n_steps, max_gap, n_overflow

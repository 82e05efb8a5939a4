# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The CRF family's kernel: one pass of forward-backward over a range of
sentences, giving what the four losses of Altun, Johnson & Hofmann and their
gradients (section 4.1) are made of.

For each sentence (first- or second-order chain): E = X W, log Z and the
marginals (:mod:`sklstruct._viterbi`),
``d = log Z - s(gold)`` (so P(gold | x) = exp(-d)) and, per token,
``e_t = log Z - log Z_t`` (P(gold_t | x) = exp(-e_t)).  With ``grad``, the
sentence adds to the gradient's chain blocks and writes its tokens' emission
coefficients (the gradient's emission block is then X^T times them, one
sparse product in the caller):

    node_w[s] * E[F | x] - gold_w[s] * F(x, gold) + sum_t cond_c[t] E[F | x, y_t = gold_t]

Sentences write disjoint rows, and the chain blocks of BLOCK consecutive
sentences go to their own slot, so any split of the blocks over threads sums
the same numbers in the same order: results do not depend on ``n_jobs``.
"""
import numpy as np

from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memset

from sklstruct._chain cimport ChainData
from sklstruct._viterbi cimport (add_conditioned, add_conditioned2, add_marginals2,
                                add_marginals_any,
                                compute_emission, forward_backward, forward_backward2,
                                forward_backward_any, log_marginal2, path_score,
                                scaled_transitions, scaled_trigrams)

cdef enum:
    _BLOCK = 256

#: Sentences whose chain gradients share one accumulator slot.
BLOCK = _BLOCK


cdef struct Scratch:
    int order          # of the chain: 1, or 2 (label pairs as states, S = L^2)
    double* E          # (max_T, L) emission scores
    double* alpha      # (max_T, S)
    double* beta       # (max_T + 3 + L, S): forward_backward's beta and scratch
    double* abar       # (max_T, S) adjoints of the conditioned expectations,
    double* bbar       # or (abar) exp(E - max E) on the scaled path
    double* norm       # (max_T + 4 L) the scaled path's normalisers, scratch
    double* eTr        # exp of the transitions ((L + 2) L + 4) or of the
                       # trigram scores (L^3 + 1), once per pass


cdef void _free(Scratch* w) noexcept nogil:
    free(w.E); free(w.alpha); free(w.beta); free(w.abar); free(w.bbar); free(w.norm)
    free(w.eTr)


cdef Scratch _alloc(ChainData data, Py_ssize_t s0, Py_ssize_t s1, const double[:, ::1] P) except *:
    """Scratch for the longest of sentences s0 <= s < s1 (E NULL if none),
    with the scaled transitions (first order) or trigrams (second) of P."""
    cdef Py_ssize_t L = P.shape[1]
    cdef Scratch w
    w.order = 2 if P.shape[0] == L + 2 + L * L else 1
    cdef Py_ssize_t s, max_T = 0, S = L if w.order == 1 else L * L
    cdef Py_ssize_t n_tr = (L + 2) * L + 4 if w.order == 1 else L * L * L + 1
    for s in range(s0, s1):
        max_T = max(max_T, data.c.offsets[s + 1] - data.c.offsets[s])
    w.E = w.alpha = w.beta = w.abar = w.bbar = w.norm = w.eTr = NULL
    if max_T == 0:
        return w
    w.E = <double*>malloc(max_T * L * sizeof(double))
    w.alpha = <double*>malloc(max_T * S * sizeof(double))
    w.beta = <double*>malloc((max_T + 3 + L) * S * sizeof(double))
    w.abar = <double*>malloc(max_T * S * sizeof(double))
    w.bbar = <double*>malloc(max_T * S * sizeof(double))
    w.norm = <double*>malloc((max_T + 4 * L) * sizeof(double))
    w.eTr = <double*>malloc(n_tr * sizeof(double))
    if (w.E == NULL or w.alpha == NULL or w.beta == NULL or w.abar == NULL or w.bbar == NULL
            or w.norm == NULL or w.eTr == NULL):
        _free(&w)
        raise MemoryError()
    if w.order == 1:
        scaled_transitions(&P[0, 0], L, w.eTr)
    else:
        scaled_trigrams(&P[0, 0], L, w.eTr)
    return w


cdef inline double _sentence(ChainData data, const double* W, const double* P, Py_ssize_t L,
                             Py_ssize_t row0, Py_ssize_t T, Scratch* w, bint exact,
                             bint* scaled) noexcept nogil:
    """E = X W of one sentence, then forward-backward (in log space if
    ``exact`` or second order, else scaled where that is exact); returns
    log Z."""
    compute_emission(data.c.indptr, data.c.indices, data.c.data, row0, T, W, L, w.E)
    if w.order == 2:
        scaled[0] = False
        return forward_backward2(w.E, T, L, P, w.eTr, w.alpha, w.beta, w.norm)
    if exact:
        scaled[0] = False
        return forward_backward(w.E, T, L, P, w.alpha, w.beta)
    return forward_backward_any(w.E, T, L, P, w.eTr, w.alpha, w.beta, w.abar, w.norm, scaled)


cdef inline void _marginals(Scratch* w, const double* P, Py_ssize_t L, Py_ssize_t T,
                            bint scaled, double log_z, double weight, double* node,
                            double* chain) noexcept nogil:
    """weight * E[F | x] of the chain blocks after :c:func:`_sentence`."""
    if w.order == 2:
        add_marginals2(w.E, T, L, P, w.eTr, w.alpha, w.beta, log_z, weight, node, chain, w.norm)
    else:
        add_marginals_any(w.E, T, L, P, w.eTr, w.alpha, w.beta, w.abar, w.norm, scaled, log_z,
                          weight, node, chain)


def crf_pass(ChainData data, const int[::1] y, const double[::1] W, const double[:, ::1] P,
             Py_ssize_t s0, Py_ssize_t s1, double[::1] sent_val, double[::1] tok_val=None,
             bint grad=False, const double[::1] node_w=None, const double[::1] gold_w=None,
             const double[::1] cond_c=None, double[:, ::1] node_out=None,
             double[:, :, ::1] chain_out=None, Py_ssize_t block=_BLOCK):
    """Forward-backward over sentences s0 <= s < s1 (callers validate; the
    GIL is released).  W: the emission weights (F, L), raveled.

    Writes ``sent_val[s] = log Z - s(gold)`` and, per token row r,
    ``tok_val[r] = log Z - log Z_t`` (if ``tok_val`` is not None); with
    ``grad``, ``node_out[r, :]`` (the token's emission coefficients) and adds
    the sentence's chain gradient to
    ``chain_out[s // block]`` (``block=1``: one slot per sentence);
    ``cond_c`` (per token) may be None.  Forward-backward runs on the
    scaled path (:c:func:`sklstruct._viterbi.forward_backward_any`) unless
    the per-token values or the conditioned expectations, which need the
    log-space alpha and beta, are asked for.
    """
    if block < 1:
        raise ValueError("block must be >= 1")
    cdef Py_ssize_t L = P.shape[1], s, t, row0, T, g
    cdef const double* wp = NULL if W.shape[0] == 0 else &W[0]
    cdef bint cond = cond_c is not None, tokens = tok_val is not None
    cdef bint exact = cond or tokens, scaled
    cdef double log_z, w
    cdef Scratch sc = _alloc(data, s0, s1, P)
    cdef double* node
    cdef double* chain
    if sc.E == NULL:
        return
    with nogil:
        for s in range(s0, s1):
            row0 = data.c.offsets[s]
            T = data.c.offsets[s + 1] - row0
            log_z = _sentence(data, wp, &P[0, 0], L, row0, T, &sc, exact, &scaled)
            sent_val[s] = log_z - path_score(sc.E, T, L, &P[0, 0], sc.order, &y[row0])
            if tokens:
                for t in range(T):
                    if sc.order == 2:
                        tok_val[row0 + t] = log_z - log_marginal2(sc.alpha, sc.beta, T, L, t,
                                                                  y[row0 + t], sc.norm)
                    else:
                        tok_val[row0 + t] = log_z - (sc.alpha[t * L + y[row0 + t]]
                                                     + sc.beta[t * L + y[row0 + t]])
            if not grad:
                continue
            node = &node_out[row0, 0]
            chain = &chain_out[s // block, 0, 0]
            memset(node, 0, T * L * sizeof(double))
            if node_w[s] != 0.0:
                _marginals(&sc, &P[0, 0], L, T, scaled, log_z, node_w[s], node, chain)
            if cond and sc.order == 2:
                add_conditioned2(sc.E, T, L, &P[0, 0], sc.alpha, sc.beta, &y[row0],
                                 &cond_c[row0], sc.abar, sc.bbar, node, chain, sc.norm)
            elif cond:
                add_conditioned(sc.E, T, L, &P[0, 0], sc.alpha, sc.beta, &y[row0], &cond_c[row0],
                                sc.abar, sc.bbar, node, chain, sc.eTr, sc.norm)
            w = gold_w[s]
            if w != 0.0:
                for t in range(T):
                    g = y[row0 + t]
                    node[t * L + g] -= w
                    if t > 0:
                        chain[y[row0 + t - 1] * L + g] -= w
                    if t > 1 and sc.order == 2:
                        chain[(L + 2 + y[row0 + t - 2] * L + y[row0 + t - 1]) * L + g] -= w
                chain[L * L + y[row0]] -= w
                chain[(L + 1) * L + y[row0 + T - 1]] -= w
    _free(&sc)


def emission_gradient(ChainData data, const double[:, ::1] node, double[:, ::1] out):
    """out = X^T node (F, L) for the stacked corpus X, into a buffer the
    caller keeps: scipy's product allocates its dense (F, L) result on every
    call, tens of MB whose page faults cost as much as the product (GIL
    released; one thread, so the order of the sums is fixed)."""
    cdef Py_ssize_t r, j, l, L = out.shape[1], n_rows = data.c.offsets[data.c.n_sentences]
    cdef double v
    cdef const double* row
    cdef double* g
    if out.shape[0] == 0 or L == 0:
        return
    with nogil:
        memset(&out[0, 0], 0, out.shape[0] * L * sizeof(double))
        for r in range(n_rows):
            row = &node[r, 0]
            for j in range(data.c.indptr[r], data.c.indptr[r + 1]):
                v = data.c.data[j]
                g = &out[data.c.indices[j], 0]
                for l in range(L):
                    g[l] += v * row[l]

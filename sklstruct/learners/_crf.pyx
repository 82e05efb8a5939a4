# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The CRF family's kernel: one pass of forward-backward over a range of
sentences, giving what the four losses of Altun, Johnson & Hofmann and their
gradients (section 4.1) are made of.

For each sentence (first- or second-order chain): E = X W, log Z and the
marginals (:mod:`sklstruct._forward_backward`, :mod:`sklstruct._conditioned`),
``d = log Z - s(gold)`` (so P(gold | x) = exp(-d)) and, per token,
``e_t = log Z - log Z_t`` (P(gold_t | x) = exp(-e_t)).  With ``grad``, the
sentence adds to the gradient's chain blocks and writes its tokens' emission
coefficients (the gradient's emission block is then X^T times them:
:func:`emission_gradient`, in threads over features):

    node_w[s] * E[F | x] - gold_w[s] * F(x, gold) + sum_t cond_c[t] E[F | x, y_t = gold_t]

with the weights a loss chooses (:mod:`sklstruct.learners._crf_losses`).

Sentences write disjoint rows, and the chain blocks of BLOCK consecutive
sentences go to their own slot, so any split of the blocks over threads sums
the same numbers in the same order: results do not depend on ``n_jobs``.
"""
cimport cython
import numpy as np
from libc.stdlib cimport free, malloc
from libc.string cimport memset

from sklstruct._chain cimport ChainData, Corpus
from sklstruct._conditioned cimport add_conditioned
from sklstruct._forward_backward cimport (FBWork, Lattice, add_marginals, fb_alloc, fb_free,
                                          fb_prepare, forward_backward, log_marginal)
from sklstruct._viterbi cimport compute_emission, path_score

cdef enum:
    _BLOCK = 256

#: Sentences whose chain gradients share one accumulator slot.
BLOCK = _BLOCK


cdef class CRFGradient:
    """Where :func:`crf_pass` adds the gradient, and with which weights.

    Parameters
    ----------
    node_w : ndarray of shape (n_sentences,)
        Weight of each sentence's E[F | x].
    gold_w : ndarray of shape (n_sentences,)
        Weight of each sentence's -F(x, gold).
    cond_c : ndarray of shape (n_tokens,) or None
        Weights c[t] of E[F | x, y_t = gold_t] (the pointwise losses).
    node : ndarray of shape (n_tokens, L)
        Receives every token's emission coefficients.
    chain : ndarray of shape (n_slots, P.shape[0], L)
        Sentence s adds its chain gradient to ``chain[s // block]``.
    block : int, default=BLOCK
        Sentences per slot of ``chain`` (1: one slot per sentence).
    """
    cdef const double[::1] node_w
    cdef const double[::1] gold_w
    cdef const double[::1] cond_c
    cdef double[:, ::1] node
    cdef double[:, :, ::1] chain
    cdef Py_ssize_t block

    def __init__(self, const double[::1] node_w, const double[::1] gold_w,
                 const double[::1] cond_c, double[:, ::1] node, double[:, :, ::1] chain,
                 Py_ssize_t block=_BLOCK):
        if block < 1:
            raise ValueError("block must be >= 1")
        self.node_w, self.gold_w, self.cond_c = node_w, gold_w, cond_c
        self.node, self.chain, self.block = node, chain, block


cdef struct Pass:
    # one crf_pass: the corpus, its weights and its outputs, as raw pointers
    const Corpus* corpus     # the stacked sentences (borrowed from a ChainData)
    const int* y             # gold labels, one per token row
    const double* W          # (F, L) emission weights (NULL if F = 0)
    const double* P          # chain parameters
    Py_ssize_t L
    int order
    double* sent_val         # (n_sentences) log Z - s(gold)
    double* tok_val          # (n_tokens) log Z - log Z_t, or NULL
    const double* node_w     # the gradient (NULL node_w: none), see CRFGradient
    const double* gold_w
    const double* cond_c     # or NULL
    double* node
    double* chain
    Py_ssize_t chain_stride  # doubles per slot of chain
    Py_ssize_t block


cdef void _gradient(const Pass* p, const Lattice* lat, FBWork* w, Py_ssize_t s,
                    Py_ssize_t row0, double log_z) noexcept nogil:
    """Sentence s's emission coefficients and chain gradient, after
    forward-backward on it:
    node_w[s] E[F | x] - gold_w[s] F(x, gold) + sum_t cond_c[t] E[F | x, y_t = gold_t]."""
    cdef Py_ssize_t t, L = p.L, T = lat.T, g
    cdef const int* y = p.y + row0
    cdef double* node = p.node + row0 * L
    cdef double* chain = p.chain + (s // p.block) * p.chain_stride
    cdef double wg = p.gold_w[s]
    memset(node, 0, T * L * sizeof(double))
    if p.node_w[s] != 0.0:
        add_marginals(lat, w, log_z, p.node_w[s], node, chain)
    if p.cond_c != NULL:
        add_conditioned(lat, w, y, p.cond_c + row0, node, chain)
    if wg != 0.0:
        for t in range(T):
            g = y[t]
            node[t * L + g] -= wg
            if t > 0:
                chain[y[t - 1] * L + g] -= wg
            if t > 1 and p.order == 2:
                chain[(L + 2 + y[t - 2] * L + y[t - 1]) * L + g] -= wg
        chain[L * L + y[0]] -= wg
        chain[(L + 1) * L + y[T - 1]] -= wg


cdef void _run_pass(const Pass* p, Py_ssize_t s0, Py_ssize_t s1, FBWork* w,
                    double* E) noexcept nogil:
    """Forward-backward on sentences s0 <= s < s1: in log space where the
    per-token values or the conditioned expectations (which need its alpha
    and beta) are asked for, else scaled where that is exact."""
    cdef const Corpus* c = p.corpus
    cdef bint exact = p.cond_c != NULL or p.tok_val != NULL
    cdef Py_ssize_t s, t, row0, L = p.L
    cdef double log_z
    cdef Lattice lat
    lat.E, lat.P, lat.L, lat.order = E, p.P, L, p.order
    for s in range(s0, s1):
        row0 = c.offsets[s]
        lat.T = c.offsets[s + 1] - row0
        compute_emission(c.indptr, c.indices, c.data, row0, lat.T, p.W, L, E)
        log_z = forward_backward(&lat, w, exact)
        p.sent_val[s] = log_z - path_score(E, lat.T, L, p.P, p.order, p.y + row0)
        if p.tok_val != NULL:
            for t in range(lat.T):
                p.tok_val[row0 + t] = log_z - log_marginal(&lat, w, t, p.y[row0 + t])
        if p.node_w != NULL:
            _gradient(p, &lat, w, s, row0, log_z)


def crf_pass(ChainData data not None, const int[::1] y, const double[::1] W, const double[:, ::1] P,
             Py_ssize_t s0, Py_ssize_t s1, double[::1] sent_val, double[::1] tok_val=None,
             CRFGradient grad=None):
    """Forward-backward over sentences s0 <= s < s1 (callers validate; the
    GIL is released).  W: the emission weights (F, L), raveled.

    Writes ``sent_val[s] = log Z - s(gold)`` and, per token row r,
    ``tok_val[r] = log Z - log Z_t`` (if ``tok_val`` is not None); with
    ``grad`` (a :class:`CRFGradient`), its ``node[r, :]`` (the token's
    emission coefficients) and adds the sentence's chain gradient to its
    ``chain[s // block]``.  Forward-backward runs on the scaled path
    (:c:func:`sklstruct._forward_backward.forward_backward`) unless the
    per-token values or the conditioned expectations, which need the
    log-space alpha and beta, are asked for.
    """
    cdef Py_ssize_t L = P.shape[1], s, max_T = 0
    cdef Pass p
    p.corpus = &data.c
    p.y, p.P, p.L = &y[0], &P[0, 0], L
    p.W = NULL
    if W.shape[0] != 0:
        p.W = &W[0]
    p.order = 2 if P.shape[0] == L + 2 + L * L else 1
    p.sent_val = &sent_val[0]
    p.tok_val = NULL if tok_val is None else &tok_val[0]
    p.node_w = p.gold_w = p.cond_c = NULL
    p.node = p.chain = NULL
    if grad is not None:
        p.node_w, p.gold_w, p.block = &grad.node_w[0], &grad.gold_w[0], grad.block
        if grad.cond_c is not None:
            p.cond_c = &grad.cond_c[0]
        p.node, p.chain = &grad.node[0, 0], &grad.chain[0, 0, 0]
        p.chain_stride = grad.chain.shape[1] * grad.chain.shape[2]
    for s in range(s0, s1):
        max_T = max(max_T, data.c.offsets[s + 1] - data.c.offsets[s])
    if max_T == 0:
        return
    cdef FBWork w
    cdef double* E = <double*>malloc(max_T * L * sizeof(double))
    if E == NULL or fb_alloc(&w, max_T, L, p.order, p.cond_c != NULL) != 0:
        free(E)
        raise MemoryError()
    with nogil:
        fb_prepare(&w, p.P, L, p.order)
        _run_pass(&p, s0, s1, &w, E)
    fb_free(&w)
    free(E)


cdef inline Py_ssize_t _first_at(const int* idx, Py_ssize_t j0, Py_ssize_t j1,
                                 Py_ssize_t f0) noexcept nogil:
    """The first j in [j0, j1) with idx[j] >= f0 (j1 if none), idx sorted there."""
    cdef Py_ssize_t mid
    while j0 < j1:
        mid = (j0 + j1) >> 1
        if idx[mid] < f0:
            j0 = mid + 1
        else:
            j1 = mid
    return j0


def row_starts(ChainData data not None, Py_ssize_t f0):
    """For each row r of the stacked corpus X, the offset in the row (from
    ``indptr[r]``) of its first entry whose column is >= f0: where
    :func:`emission_gradient` starts reading the row for the features from
    f0 on, found once (GIL released) rather than by bisection in every call."""
    cdef Py_ssize_t r, n_rows = data.c.offsets[data.c.n_sentences]
    out = np.empty(n_rows, dtype=np.int32)
    cdef int[::1] lo = out
    with nogil:
        for r in range(n_rows):
            lo[r] = <int>(_first_at(data.c.indices, data.c.indptr[r], data.c.indptr[r + 1], f0)
                          - data.c.indptr[r])
    return out


@cython.auto_pickle(False)           # (a state set by unpickling would skip the checks)
cdef class StateLayout:
    """The emission weights a CRF learns (without ``all_possible_states``):
    for each feature f, the labels ``label[ptr[f]:ptr[f + 1]]`` whose weights
    it has, at those positions of the compact gradient that
    :func:`emission_gradient` writes.  Checked once here (the kernel then
    trusts it): ``ptr`` starts at 0, never decreases and ends at
    ``len(label)``, each label is in [0, n_labels).

    Why: a CRF learns only the (feature, label) pairs seen in training, 6% of
    F x L on CoNLL-2000; computing the whole product X^T node into a buffer
    of F x L and then picking those entries did 2.5x the multiplications
    needed and held a buffer of 60 MB.  The product is bound by its random
    accesses (one per nonzero of X), not by the multiplications: it runs
    only about 6% faster, and a serial fit's peak is 45 MB lower.
    """
    cdef bint _made
    cdef const long long[::1] _ptr          # (private copies: the kernel trusts them)
    cdef const int[::1] _label
    cdef readonly Py_ssize_t n_features, n_states, n_labels

    def __init__(self, ptr, label, Py_ssize_t n_labels):
        if self._made:
            raise RuntimeError("StateLayout: already made (a kernel may be reading it)")
        self._made = True
        ptr = np.array(ptr, dtype=np.int64)          # (copies: nobody else may change them)
        label = np.array(label, dtype=np.int32)
        if ptr.ndim != 1 or label.ndim != 1 or ptr.shape[0] < 1:
            raise ValueError("StateLayout: ptr and label must be 1-D, ptr not empty")
        if ptr[0] != 0 or ptr[ptr.shape[0] - 1] != label.shape[0] or (np.diff(ptr) < 0).any():
            raise ValueError("StateLayout: ptr must start at 0, never decrease and end at "
                             "len(label)")
        if label.shape[0] and (label.min() < 0 or label.max() >= n_labels):
            raise ValueError(f"StateLayout: labels must be in [0, {n_labels})")
        self._ptr, self._label = ptr, label
        self.n_features, self.n_states, self.n_labels = ptr.shape[0] - 1, label.shape[0], n_labels

    @property
    def ptr(self):
        """A copy of ``ptr``."""
        return np.array(self._ptr)

    @property
    def label(self):
        """A copy of ``label``."""
        return np.array(self._label)

    @classmethod
    def of_states(cls, states, Py_ssize_t n_features, Py_ssize_t n_labels):
        """The layout of sorted flat indices ``f * n_labels + l``, in their order."""
        states = np.asarray(states, dtype=np.int64)
        ptr = np.searchsorted(states // n_labels, np.arange(n_features + 1))
        return cls(ptr, states % n_labels, n_labels)


def emission_gradient(ChainData data not None, const double[:, ::1] node, Py_ssize_t f0,
                      Py_ssize_t f1, double[::1] G, const int[::1] starts=None,
                      StateLayout layout=None):
    """The gradient's emission block X^T node for the features f0 <= f < f1,
    for the stacked corpus X (GIL released): without ``layout``, rows f0:f1
    of G (F, L) raveled; with it, the entries ``layout.ptr[f0]:layout.ptr[f1]``
    of the compact G (those of the learned (feature, label) pairs only).

    One call computes all of its features' entries, each summed over X's
    rows in ascending order: any split of the features over threads gives
    the same bits, and the compact entries are the bits of the full
    product's.  Each call reads all of X's rows but only its columns'
    entries (a row's column indices are sorted, so they are one run).
    ``starts`` (:func:`row_starts` of f0) says where each row's run begins;
    without it the call finds it by bisection, which cost about as much as
    the product itself once the features were cut into eight ranges.  Any
    ``starts`` is safe: an entry outside [f0, f1) is never added.
    Measured on CoNLL-2000, this scatter by rows ran about 2x faster than
    the same product gathered by columns from a transposed copy (whose
    random reads of ``node`` did not overlap as these writes do).
    """
    cdef Py_ssize_t r, j, j0, j1, l, k, f, g0, L = node.shape[1]
    cdef Py_ssize_t n_rows = data.c.offsets[data.c.n_sentences]
    cdef double v
    cdef const double* row
    cdef double* g
    cdef const int* idx = data.c.indices
    cdef bint given = starts is not None, compact = layout is not None
    cdef const long long* ptr = NULL
    cdef const int* lab = NULL
    cdef const long long[::1] ptr_view
    cdef const int[::1] lab_view
    if not 0 <= f0 <= f1 <= data.n_features:
        raise ValueError("emission_gradient: f0:f1 must be within the features")
    if node.shape[0] != n_rows:
        raise ValueError("emission_gradient: node must have a row per token")
    if compact:
        if layout.n_features != data.n_features or layout.n_labels != L \
                or G.shape[0] != layout.n_states:
            raise ValueError("emission_gradient: the layout must have the data's features "
                             "and node's labels, G an entry per state")
        ptr_view, lab_view = layout._ptr, layout._label     # (held for the call)
        if layout.n_states:
            ptr, lab = &ptr_view[0], &lab_view[0]
    elif (G.shape[0] != 0 if L == 0 else
          G.shape[0] % L != 0 or G.shape[0] // L != data.n_features):
        # (compared by division: n_features * L could wrap around)
        raise ValueError("emission_gradient: G must have a row per feature of node's labels")
    if given and starts.shape[0] != n_rows:
        raise ValueError("emission_gradient: starts must have a row per token")
    if f1 == f0 or L == 0 or (compact and layout.n_states == 0):
        return
    with nogil:
        if compact:
            g0 = ptr[f0]
            memset(&G[g0], 0, (ptr[f1] - g0) * sizeof(double))
        else:
            memset(&G[f0 * L], 0, (f1 - f0) * L * sizeof(double))
        for r in range(n_rows):
            j0, j1 = data.c.indptr[r], data.c.indptr[r + 1]
            # the row's entries with f0 <= column < f1: a contiguous run,
            # from the first column >= f0
            if given:
                if 0 <= starts[r] <= j1 - j0:
                    j0 = j0 + starts[r]
            else:
                j0 = _first_at(idx, j0, j1, f0)
            row = &node[r, 0]
            for j in range(j0, j1):
                f = idx[j]
                if f >= f1:
                    break
                if f < f0:
                    continue
                v = data.c.data[j]
                if compact:
                    for k in range(ptr[f], ptr[f + 1]):
                        G[k] += v * row[lab[k]]
                else:
                    g = &G[f * L]
                    for l in range(L):
                        g[l] += v * row[l]

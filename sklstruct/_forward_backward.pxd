# Declarations of the chain's forward-backward kernels (log Z, marginals, the
# conditioned expectations), shared with the learners' Cython loops.  Array
# layouts as in _viterbi.pxd: E (T, L), P (L + 2, L) or, second order,
# (L + 2 + L * L, L); S = L (first order) or L * L (second) states per position.
# The conditioned expectations (_conditioned.pyx) use the same structs.

from libc.math cimport INFINITY, exp, fmin, log

cdef struct Lattice:
    # one sentence's chain: what every kernel reads and none writes
    const double* E          # (T, L) emission scores
    const double* P          # chain parameters
    Py_ssize_t T             # tokens (>= 1)
    Py_ssize_t L             # labels
    int order                # 1 or 2

cdef struct FBWork:
    # the kernels' buffers, for sentences of up to max_T tokens (fb_alloc)
    double* eTr              # exp of the chain parameters (fb_prepare, once per P):
                             # first order (L + 2) L + 4 doubles, second L^3 + 1
    double* alpha            # (max_T, S) forward: log space, or the scaled path's rows
    double* beta             # (max_T, S) backward, likewise
    double* eE               # (max_T, L) scaled path: exp(E[t] - max E[t])
    double* norm             # (max_T) scaled path: the forward normalisers
    double* eP               # (L, L) log-space path: exp(P - max P) of the transitions
    double* row              # (4 L) per-position scratch
    double* abar             # (max_T, S) adjoints of the conditioned expectations
    double* bbar             # (max_T, S) (NULL unless allocated with adjoints)
    bint scaled              # set by forward_backward: the scaled path filled alpha, beta
    bint factored            # set by fb_prepare: the first-order conditioned expectations
                             # may use factored derivatives (the transitions' spread allows)

cdef int fb_alloc(FBWork* w, Py_ssize_t max_T, Py_ssize_t L, int order,
                  bint adjoints) noexcept nogil
cdef void fb_free(FBWork* w) noexcept nogil
cdef void fb_prepare(FBWork* w, const double* P, Py_ssize_t L, int order) noexcept nogil

cdef double forward_backward(const Lattice* lat, FBWork* w, bint exact) noexcept nogil
cdef void add_marginals(const Lattice* lat, FBWork* w, double log_z, double weight,
                        double* node, double* chain) noexcept nogil
cdef double log_marginal(const Lattice* lat, FBWork* w, Py_ssize_t t, int b) noexcept nogil

# log-space helpers shared by both modules (inline, so defined here)
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

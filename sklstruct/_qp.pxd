# The quadratic program every max-margin learner of sklstruct solves, once (see _qp.pyx).

ctypedef const double* (*ColumnFn)(void* ctx, Py_ssize_t j) noexcept nogil


cdef struct SimplexQP:
    # min_a 1/2 a'Ga - ell'a  s.t.  a >= 0, sum(a) = const (alpha must be feasible)
    Py_ssize_t m
    double* alpha        # (m) the variables, updated in place
    double* grad         # (m) G alpha - ell at alpha, kept up to date
    ColumnFn column      # column(ctx, j): column j of G (m values, exact); NULL = no memory
    void* ctx


cdef Py_ssize_t simplex_smo(SimplexQP* qp, double tol, double kappa, bint support_only,
                            Py_ssize_t max_steps, double* gain) noexcept nogil

cdef struct DenseGram:
    # ctx of dense_column: a C-contiguous symmetric (m, m) matrix
    const double* G
    Py_ssize_t m


cdef const double* dense_column(void* ctx, Py_ssize_t j) noexcept nogil

# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The quadratic program of sklstruct's max-margin learners, solved once.

Every max-margin learner here (k-best MIRA, SDM, LaRank, the parser's
structural SVM) reduces to problems of one shape: for one example,

    min_a  1/2 a'G a - ell'a    s.t.  a >= 0,  sum(a) = C,                 (*)

where ``G`` is the Gram matrix of the joint-feature differences dF of the
example's candidate structures and ``ell`` their costs minus the current
margins (Mancev & Todorovic, eqs. 4-5 and 19; an inequality ``sum(a) <= C``
becomes (*) with one more variable whose column of ``G`` is zero, as the
gold structure (dF = 0, cost 0) is in the sequence learners).

:c:func:`simplex_smo` solves (*) by sequential minimal optimisation: it takes
the maximum violating pair (Mancev & Todorovic eq. 18; Keerthi et al. 2001)
``up = argmin_i g_i`` and ``down = argmax_{a_i > kappa} g_i`` of the gradient
``g = G a - ell``, stops when ``g_down - g_up <= tol`` (eq. 17), and otherwise
moves ``delta = min(a_down, (g_down - g_up) / q)`` with
``q = ||dF_up - dF_down||^2`` from ``down`` to ``up`` (eq. 20).  Each step is
the exact minimiser along its direction clipped to the feasible set, so the
objective never increases; the decrease of each step,
``delta (g_down - g_up) - delta^2 q / 2``, is added to ``gain``.

Columns of ``G`` are asked for through a callback, so a caller may compute
them lazily (the dual learners build a column only for the sequences a step
touches) or hand over a dense matrix (:c:func:`dense_column`).
"""
import numpy as np


cdef Py_ssize_t simplex_smo(SimplexQP* qp, double tol, double kappa, bint support_only,
                            Py_ssize_t max_steps, double* gain) noexcept nogil:
    """Run SMO on (*) from the feasible ``qp.alpha`` until the maximum
    violation is at most ``tol`` or ``max_steps`` steps were taken.

    ``kappa``: a variable gives up mass only if it exceeds kappa (the
    kappa-tau conditions of LaRank, Bordes et al. 2007).  ``support_only``:
    only variables already > 0 may receive mass.  Returns the number of
    steps, or -1 if a column could not be computed (out of memory)."""
    cdef Py_ssize_t i, up, down, steps = 0, m = qp.m
    cdef double* a = qp.alpha
    cdef double* g = qp.grad
    cdef const double* cu
    cdef const double* cd
    cdef double gap, q, delta
    while steps < max_steps:
        up = -1
        down = -1
        for i in range(m):
            if (not support_only or a[i] > 0.0) and (up < 0 or g[i] < g[up]):
                up = i
            if a[i] > kappa and (down < 0 or g[i] > g[down]):
                down = i
        if down < 0 or up < 0:
            break
        gap = g[down] - g[up]
        if gap <= tol:
            break
        cu = qp.column(qp.ctx, up)
        cd = qp.column(qp.ctx, down)
        if cu == NULL or cd == NULL:
            return -1
        q = cu[up] + cd[down] - 2.0 * cu[down]
        delta = a[down]
        if q > 0.0 and gap / q < delta:
            delta = gap / q
        a[up] += delta
        a[down] -= delta
        for i in range(m):
            g[i] += delta * (cu[i] - cd[i])
        gain[0] += delta * gap - 0.5 * delta * delta * q
        steps += 1
    return steps


cdef const double* dense_column(void* ctx, Py_ssize_t j) noexcept nogil:
    """Column callback over a dense C-contiguous symmetric (m, m) matrix
    (``ctx`` points to a ``DenseGram``): row j equals column j."""
    cdef DenseGram* d = <DenseGram*>ctx
    return d.G + j * d.m


def solve_simplex_qp(G, ell, alpha, double tol=1e-10, double kappa=0.0,
                     bint support_only=False, Py_ssize_t max_steps=100000):
    """Solve (*) from a feasible start ``alpha`` (its sum is kept), for tests
    and Python callers.  ``G`` must be symmetric positive semi-definite.

    Returns
    -------
    alpha : ndarray of shape (m,)
    grad : ndarray of shape (m,), ``G alpha - ell`` at the solution
    steps : int
    gain : float, the decrease of the objective
    """
    G = np.ascontiguousarray(G, dtype=np.float64)
    ell = np.ascontiguousarray(ell, dtype=np.float64).ravel()
    alpha = np.array(alpha, dtype=np.float64).ravel()
    m = ell.shape[0]
    if G.shape != (m, m) or alpha.shape[0] != m or m < 1:
        raise ValueError(f"G must be (m, m) and ell, alpha (m,) with m >= 1; got G {G.shape}, "
                         f"ell {ell.shape}, alpha {alpha.shape}")
    if not (np.isfinite(G).all() and np.isfinite(ell).all() and np.isfinite(alpha).all()):
        raise ValueError("G, ell and alpha must be finite")
    if (alpha < 0).any():
        raise ValueError("alpha must be feasible (alpha >= 0)")
    if max_steps < 0:
        raise ValueError("max_steps must be >= 0")
    grad = G @ alpha - ell
    cdef double[:, ::1] Gv = G
    cdef double[::1] av = alpha, gv = grad
    cdef DenseGram dense
    cdef SimplexQP qp
    cdef double gain = 0.0
    cdef Py_ssize_t steps
    dense.G = &Gv[0, 0]
    dense.m = m
    qp.m = m
    qp.alpha = &av[0]
    qp.grad = &gv[0]
    qp.column = dense_column
    qp.ctx = &dense
    with nogil:
        steps = simplex_smo(&qp, tol, kappa, support_only, max_steps, &gain)
    return alpha, grad, steps, gain

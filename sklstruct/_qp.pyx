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

:func:`block_smo` solves the n-slack working-set dual of the parser (one
inequality ``sum <= cap`` per example, :class:`sklstruct.qp.WorkingSetQP`) by
running :c:func:`simplex_smo` on one example's block at a time.
"""
import numpy as np

from libc.stdlib cimport free, malloc

from ._validation import (MAX_ABS_FEATURE, MAX_C, MAX_COUNT, InputTypeError, check_number,
                          check_real_array, describe)


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


def solve_simplex_qp(G, ell, alpha, tol=1e-10, kappa=0.0, support_only=False,
                     max_steps=100000):
    """Solve (*) from a feasible start ``alpha`` (its sum is kept), for tests
    and Python callers.  ``G`` must be symmetric positive semi-definite.

    Every argument is checked before any work (``ValueError`` or
    ``TypeError`` naming it): ``G`` (m, m) real, finite, symmetric and
    positive semi-definite (up to a relative 1e-8: a Cholesky factorisation,
    O(m^3), a fraction of a solve's time up to m ~ 1000, a quarter of the
    cost of ``eigvalsh``) and
    ``ell`` (m,) with entries at most ``MAX_ABS_FEATURE`` = 1e100 in absolute
    value, ``alpha`` (m,) finite, >= 0 and summing to at most ``MAX_C`` =
    1e100 (so that no gradient or step can overflow), ``tol`` and ``kappa``
    finite and >= 0, ``support_only`` a bool, ``max_steps`` an int in
    [0, 2**31 - 1].  Internal callers with inputs known valid use
    :func:`_solve_simplex_qp_unchecked`.

    Returns
    -------
    alpha : ndarray of shape (m,)
    grad : ndarray of shape (m,), ``G alpha - ell`` at the solution
    steps : int
    gain : float, the decrease of the objective
    """
    ell = check_real_array(ell, "ell", 1, MAX_ABS_FEATURE)
    G = check_real_array(G, "G", 2, MAX_ABS_FEATURE)
    alpha = check_real_array(alpha, "alpha", 1)
    m = ell.shape[0]
    if G.shape != (m, m) or alpha.shape[0] != m or m < 1:
        raise ValueError(f"G must be (m, m) and ell, alpha (m,) with m >= 1; got G {G.shape}, "
                         f"ell {ell.shape}, alpha {alpha.shape}")
    if (alpha < 0).any():
        j = int(np.argmax(alpha < 0))
        raise ValueError(f"alpha must be feasible (alpha >= 0); got alpha[{j}] = {alpha[j]!r}")
    if alpha.sum() > MAX_C:
        raise ValueError(f"alpha sums to {alpha.sum():g}; at most {MAX_C:g} is accepted "
                         "(scale the problem)")
    tol = check_number(tol, "tol", lo=0)
    kappa = check_number(kappa, "kappa", lo=0)
    if not isinstance(support_only, (bool, np.bool_)):
        raise InputTypeError(f"support_only must be a bool; got {describe(support_only)}")
    max_steps = check_number(max_steps, "max_steps", lo=0, hi=MAX_COUNT, integer=True)
    G = np.ascontiguousarray(G, dtype=np.float64)
    scale = np.abs(G).max()
    asym = np.abs(G - G.T)
    if asym.max() > 1e-8 * scale:
        i, j = np.unravel_index(int(np.argmax(asym)), asym.shape)
        raise ValueError(f"G must be symmetric; G[{i}, {j}] = {G[i, j]!r} but G[{j}, {i}] = "
                         f"{G[j, i]!r}")
    if scale > 0:
        # PSD up to rounding: G + 1e-8 max|G| I is positive definite
        try:
            np.linalg.cholesky(G + 1e-8 * scale * np.eye(m))
        except np.linalg.LinAlgError:
            raise ValueError("G must be positive semi-definite; its smallest eigenvalue is "
                             f"{np.linalg.eigvalsh(G)[0]:g}") from None
    return _solve_simplex_qp_unchecked(G, np.ascontiguousarray(ell, dtype=np.float64),
                                       np.array(alpha, dtype=np.float64), tol, kappa,
                                       support_only, max_steps)


def _solve_simplex_qp_unchecked(G, ell, alpha, double tol=1e-10, double kappa=0.0,
                                bint support_only=False, Py_ssize_t max_steps=100000):
    """:func:`solve_simplex_qp` without its checks, for internal callers whose
    inputs are valid by construction (float64 arrays, ``G`` C-contiguous
    symmetric PSD, all finite, ``alpha`` feasible and updated in place)."""
    grad = G @ alpha - ell
    cdef double[:, ::1] Gv = G
    cdef double[::1] av = alpha, gv = grad
    cdef DenseGram dense
    cdef SimplexQP qp
    cdef double gain = 0.0
    cdef Py_ssize_t steps, m = av.shape[0]
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


# -- many simplices: the n-slack working-set dual -------------------------------------

cdef double block_gap(const double* alpha, const double* grad, const long long* idx,
                      Py_ssize_t nb, double slack) noexcept nogil:
    """The maximum violation ``g_down - g_up`` of (*) on one block plus its
    slack variable (gradient 0), with ``g = -grad`` (as simplex_smo picks its
    pair with kappa = 0)."""
    cdef Py_ssize_t t
    cdef double up = 0.0, down, g
    cdef bint any_down = slack > 0.0
    down = 0.0
    for t in range(nb):
        g = -grad[idx[t]]
        if g < up:
            up = g
        if alpha[idx[t]] > 0.0 and (not any_down or g > down):
            down = g
            any_down = True
    return down - up if any_down else 0.0


cdef struct BlockDual:
    # the working-set dual of block_smo (validated by it)
    const double* K          # Gram matrix, row stride ld (its top-left m x m block is used)
    Py_ssize_t ld
    const double* b
    double* alpha            # (m) updated in place
    double* grad             # (m) b - K alpha, kept up to date
    Py_ssize_t m
    const long long* ptr     # (n_blocks + 1) offsets into idx
    const long long* idx     # the constraints of every block
    Py_ssize_t n_blocks
    Py_ssize_t max_nb        # the largest block
    double cap               # bound on every block's sum


cdef int block_sweeps(BlockDual* p, double tol, int max_sweeps,
                      double* worst_out) noexcept nogil:
    """The loop of :func:`block_smo` (inputs validated).  Returns the number of
    sweeps, or -1 when out of memory."""
    cdef const double* K = p.K
    cdef Py_ssize_t ld = p.ld, m = p.m, n_blocks = p.n_blocks
    cdef const double* b = p.b
    cdef double* alpha = p.alpha
    cdef double* grad = p.grad
    cdef const long long* ptr = p.ptr
    cdef const long long* idx = p.idx
    cdef double cap = p.cap
    cdef Py_ssize_t w = p.max_nb + 1, e, t, u, nb, r, c
    cdef double* G = <double*>malloc(w * w * sizeof(double))
    cdef double* a = <double*>malloc(w * sizeof(double))
    cdef double* g = <double*>malloc(w * sizeof(double))
    cdef const long long* bi
    cdef const double* row
    cdef double worst = 0.0, viol, slack, eps = 1e-12 * cap, d, acc, gain
    cdef int sweep = 0
    cdef DenseGram dense
    cdef SimplexQP qp
    if G == NULL or a == NULL or g == NULL:
        free(G)
        free(a)
        free(g)
        return -1
    dense.G = G
    qp.alpha = a
    qp.grad = g
    qp.column = dense_column
    qp.ctx = &dense
    for sweep in range(1, max_sweeps + 1):
        worst = 0.0
        for e in range(n_blocks):
            bi = idx + ptr[e]
            nb = ptr[e + 1] - ptr[e]
            slack = cap
            for t in range(nb):
                slack -= alpha[bi[t]]
            if slack <= eps:
                slack = 0.0
            viol = block_gap(alpha, grad, bi, nb, slack)
            if viol > worst:
                worst = viol
            if viol <= tol:
                continue
            # variable 0: the slack (zero row and column, gradient 0); 1..nb: the block
            dense.m = nb + 1
            qp.m = nb + 1
            for u in range(nb + 1):
                G[u] = 0.0
                G[u * (nb + 1)] = 0.0
            for t in range(nb):
                row = K + bi[t] * ld
                for u in range(nb):
                    G[(t + 1) * (nb + 1) + u + 1] = row[bi[u]]
                a[t + 1] = alpha[bi[t]]
                g[t + 1] = -grad[bi[t]]
            a[0] = slack
            g[0] = 0.0
            gain = 0.0
            simplex_smo(&qp, tol, 0.0, False, 2 * nb + 5, &gain)
            # the block's move, to every constraint's gradient: grad -= K[:, block] d
            for t in range(nb):
                d = a[t + 1] - alpha[bi[t]]
                if d != 0.0:
                    alpha[bi[t]] = a[t + 1]
                    row = K + bi[t] * ld
                    for r in range(m):
                        grad[r] -= d * row[r]
        if worst <= tol:
            break
        # refresh the gradient against rounding drift
        for r in range(m):
            acc = b[r]
            row = K + r * ld
            for c in range(m):
                acc -= row[c] * alpha[c]
            grad[r] = acc
    free(G)
    free(a)
    free(g)
    worst_out[0] = worst
    return sweep


def block_smo(double[:, ::1] K, double[::1] b, double[::1] alpha, double[::1] grad,
              long long[::1] block_ptr, long long[::1] block_idx, double cap, double tol,
              int max_sweeps):
    """Solve the working-set dual of the n-slack structural SVM in place::

        max_{alpha >= 0} b . alpha - 1/2 alpha' K alpha
        s.t. sum_{k in block e} alpha_k <= cap   for every block (example) e,

    keeping ``grad = b - K alpha`` up to date (``K`` symmetric PSD, ``alpha``
    feasible; ``K`` may be a larger buffer whose top-left ``m x m`` block is
    used, so that a growing working set need not copy it).  A block with its slack variable ``cap - sum_e alpha`` (a zero
    row and column of G, gradient 0) is a problem (*) with ``G`` the block's
    submatrix of ``K`` and ``ell = b - K[block, others] alpha_others``; each
    sweep runs :c:func:`simplex_smo` (at most ``2 nb + 5`` steps) on every block
    whose violation exceeds ``tol`` and passes the block's move to the other
    gradients.  Every step minimises exactly along its direction, so the dual
    never decreases.  Sweeps stop when no block's violation exceeds ``tol``;
    between sweeps the gradient is recomputed exactly (rounding drift).

    ``block_idx[block_ptr[e]:block_ptr[e + 1]]`` are the constraints of block
    ``e``; every constraint must be in exactly one block.

    Returns (sweeps, the worst block violation of the last sweep).
    """
    cdef Py_ssize_t m = b.shape[0]
    cdef Py_ssize_t n_blocks = block_ptr.shape[0] - 1
    cdef double worst = 0.0
    cdef int sweeps
    cdef BlockDual dual
    if K.shape[0] < m or K.shape[1] < m or alpha.shape[0] != m or grad.shape[0] != m:
        raise ValueError("K, b, alpha and grad have inconsistent shapes")
    if block_ptr.shape[0] < 1 or block_ptr[0] != 0 or block_ptr[n_blocks] != block_idx.shape[0]:
        raise ValueError("block_ptr is not a valid offset array")
    seen = np.zeros(m, dtype=np.int64)
    ai = np.asarray(block_idx)
    if ai.size and (ai.min() < 0 or ai.max() >= m):
        raise ValueError("block index out of range")
    np.add.at(seen, ai, 1)
    sizes = np.diff(np.asarray(block_ptr))
    if np.any(seen != 1) or np.any(sizes < 0):
        raise ValueError("every constraint must belong to exactly one block")
    if not cap > 0:
        raise ValueError("cap must be > 0")
    if max_sweeps < 1:
        raise ValueError("max_sweeps must be >= 1")
    if m == 0:
        return 0, 0.0
    dual.K = &K[0, 0]
    dual.ld = K.shape[1]
    dual.b = &b[0]
    dual.alpha = &alpha[0]
    dual.grad = &grad[0]
    dual.m = m
    dual.ptr = &block_ptr[0]
    dual.idx = &block_idx[0]
    dual.n_blocks = n_blocks
    dual.max_nb = int(sizes.max())
    dual.cap = cap
    with nogil:
        sweeps = block_sweeps(&dual, tol, max_sweeps, &worst)
    if sweeps < 0:
        raise MemoryError("block_smo: no memory for a block's Gram matrix")
    return sweeps, worst

# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""SMO-style block coordinate ascent for the dual of the n-slack structural
SVM working set (see :mod:`sklstruct.parsing._qp` for the problem)::

    max_{alpha >= 0} b . alpha - 1/2 alpha' K alpha,
    s.t. sum_{k in block e} alpha_k <= cap   for every block (example) e.

``grad = b - K alpha`` is kept up to date.  One step on a block either raises
the most violating coordinate alone (the block's box has room), lowers an
active coordinate with negative gradient alone, or moves mass between the
block's most and least violating active coordinates; each step is the exact
maximiser of the dual along its direction, clipped to the feasible set, so the
dual never decreases.
"""
import numpy as np

from libc.math cimport fabs


cdef double block_step(double[:, ::1] K, double* alpha, double* grad, Py_ssize_t m,
                       const long long* idx, Py_ssize_t nb, double cap,
                       double tol) noexcept nogil:
    """One step on one block; returns the block's KKT violation before it."""
    cdef Py_ssize_t t, k = -1, j = -1, r
    cdef double room = cap, viol = 0.0, step, curv, gk = 0.0, gj = 0.0
    cdef double eps = 1e-12 * cap
    for t in range(nb):
        r = idx[t]
        room -= alpha[r]
        if k < 0 or grad[r] > gk:
            k = r
            gk = grad[r]
        if alpha[r] > 0 and (j < 0 or grad[r] < gj):
            j = r
            gj = grad[r]
    if room > eps and gk > viol:
        viol = gk
    if j >= 0:
        if gk - gj > viol:
            viol = gk - gj
        if -gj > viol:
            viol = -gj
    if viol <= tol:
        return viol
    if room > eps and gk >= viol:
        step = gk / (K[k, k] if K[k, k] > 1e-12 else 1e-12)
        if step > room:
            step = room
        alpha[k] += step
        for r in range(m):
            grad[r] -= step * K[r, k]
    elif j >= 0 and -gj >= viol:
        step = gj / (K[j, j] if K[j, j] > 1e-12 else 1e-12)
        if step < -alpha[j]:
            step = -alpha[j]
        alpha[j] += step
        for r in range(m):
            grad[r] -= step * K[r, j]
        if alpha[j] < 1e-15 * cap:
            alpha[j] = 0.0
    else:
        curv = K[k, k] + K[j, j] - 2 * K[k, j]
        step = (gk - gj) / (curv if curv > 1e-12 else 1e-12)
        if step > alpha[j]:
            step = alpha[j]
        alpha[k] += step
        alpha[j] -= step
        for r in range(m):
            grad[r] -= step * (K[r, k] - K[r, j])
        if alpha[j] < 1e-15 * cap:
            alpha[j] = 0.0
    return viol


def smo(double[:, ::1] K, double[::1] b, double[::1] alpha, double[::1] grad,
        long long[::1] block_ptr, long long[::1] block_idx, double cap, double tol,
        int max_sweeps):
    """Solve in place; returns (sweeps, final worst KKT violation).

    ``block_idx[block_ptr[e]:block_ptr[e + 1]]`` are the constraints of block
    ``e``; every constraint must be in exactly one block.
    """
    cdef Py_ssize_t m = b.shape[0]
    cdef Py_ssize_t n_blocks = block_ptr.shape[0] - 1
    cdef Py_ssize_t e, t, s, nb, r, c
    cdef double worst = 0.0, v, acc
    cdef int sweep = 0
    if K.shape[0] != m or K.shape[1] != m or alpha.shape[0] != m or grad.shape[0] != m:
        raise ValueError("K, b, alpha and grad have inconsistent shapes")
    if block_ptr.shape[0] < 1 or block_ptr[0] != 0 or block_ptr[n_blocks] != block_idx.shape[0]:
        raise ValueError("block_ptr is not a valid offset array")
    seen = np.zeros(m, dtype=np.int64)
    ai = np.asarray(block_idx)
    if ai.size and (ai.min() < 0 or ai.max() >= m):
        raise ValueError("block index out of range")
    np.add.at(seen, ai, 1)
    if np.any(seen != 1) or np.any(np.diff(np.asarray(block_ptr)) < 0):
        raise ValueError("every constraint must belong to exactly one block")
    if cap <= 0:
        raise ValueError("cap must be > 0")
    if m == 0:
        return 0, 0.0
    with nogil:
        for sweep in range(1, max_sweeps + 1):
            worst = 0.0
            for e in range(n_blocks):
                nb = block_ptr[e + 1] - block_ptr[e]
                for s in range(2 * nb + 5):
                    v = block_step(K, &alpha[0], &grad[0], m, &block_idx[block_ptr[e]], nb,
                                   cap, tol)
                    if v > worst:
                        worst = v
                    if v <= tol:
                        break
            if worst <= tol:
                break
            # refresh the gradient against rounding drift
            for r in range(m):
                acc = b[r]
                for c in range(m):
                    acc -= K[r, c] * alpha[c]
                grad[r] = acc
    return sweep, worst

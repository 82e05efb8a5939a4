"""The quadratic programs of sklstruct's max-margin learners, their Python face
(the solvers are in :mod:`sklstruct._qp`).

:func:`solve_simplex_qp` solves one example's problem
``min_a 1/2 a'Ga - ell'a  s.t.  a >= 0, sum(a) = C`` (dense ``G``).

:class:`WorkingSetQP` is the n-slack structural SVM over a working set of
constraints (Tsochantaridis et al. 2005, slack rescaling), as the parser uses
it (:class:`~sklstruct.parsing.F1MaxMarginParser`, Bauer et al. 2017, eq. 2).
With slack rescaling a constraint ``(i, y)`` reads
``Delta * w.dPsi >= Delta - xi_i``: a margin constraint on the vector
``a = Delta * (Psi(x_i, y_i*) - Psi(x_i, y))`` with offset ``b = Delta``.  Over a
working set of such constraints the primal

    min_{w, xi >= 0}  1/2 ||w||^2 + (C / n) sum_i xi_i
    s.t.  a_k . w >= b_k - xi_{i(k)}

has the dual

    max_{alpha >= 0}  b . alpha - 1/2 alpha' K alpha,
    s.t.  sum_{k in i} alpha_k <= C / n   for every example i,

with ``K = A A'`` and ``w = A' alpha``.  :class:`WorkingSetQP` solves it by
block coordinate ascent, one example's constraints at a time, each block by
the shared SMO (:func:`sklstruct._qp.block_smo`).  Every step maximises the
dual exactly along its direction, so the dual never decreases.

References
----------
.. [1] I. Tsochantaridis, T. Joachims, T. Hofmann and Y. Altun, "Large Margin
   Methods for Structured and Interdependent Output Variables", Journal of
   Machine Learning Research 6, 2005.
.. [2] A. Bauer, S. Nakajima, N. Goernitz and K.-R. Mueller, "Optimizing for
   Measure of Performance in Max-Margin Parsing", arXiv:1709.01562, 2017.
"""
import numpy as np
import scipy.sparse as sp

from ._qp import block_smo, solve_simplex_qp

__all__ = ["WorkingSetQP", "solve_simplex_qp"]


class WorkingSetQP:
    """Working set of slack-rescaled constraints and the solver of its dual.

    Parameters
    ----------
    n_features : int
        Dimension of ``w``.
    cap : float
        ``C / n``: the bound of every example's dual variables.
    """

    def __init__(self, n_features, cap):
        if cap <= 0:
            raise ValueError("cap (C / n) must be > 0")
        self.n_features = int(n_features)
        self.cap = float(cap)
        self.rows = sp.csr_matrix((0, self.n_features))
        self.b = np.zeros(0)
        self.example = np.zeros(0, dtype=np.int64)
        self.alpha = np.zeros(0)
        self.K = np.zeros((0, 0))
        self.grad = np.zeros(0)   # b - K alpha
        self.idle = np.zeros(0, dtype=np.int64)

    @property
    def n_constraints(self):
        return len(self.b)

    def add(self, rows, b, example):
        """Add constraints: ``rows`` (m, d) sparse ``a_k``, offsets ``b``,
        example ids."""
        rows = sp.csr_matrix(rows, dtype=np.float64)
        b = np.asarray(b, dtype=np.float64).ravel()
        example = np.asarray(example, dtype=np.int64).ravel()
        if rows.shape[1] != self.n_features or rows.shape[0] != len(b) or len(b) != len(example):
            raise ValueError("constraint rows, offsets and example ids do not match")
        cross = np.asarray((rows @ self.rows.T).todense()).reshape(len(b), self.n_constraints)
        new = np.asarray((rows @ rows.T).todense())
        m = self.n_constraints
        K = np.empty((m + len(b), m + len(b)))
        K[:m, :m] = self.K
        K[m:, :m] = cross
        K[:m, m:] = cross.T
        K[m:, m:] = new
        self.K = K
        self.rows = sp.vstack([self.rows, rows], format="csr")
        self.grad = np.concatenate([self.grad, b - cross @ self.alpha])
        self.b = np.concatenate([self.b, b])
        self.example = np.concatenate([self.example, example])
        self.alpha = np.concatenate([self.alpha, np.zeros(len(b))])
        self.idle = np.concatenate([self.idle, np.zeros(len(b), dtype=np.int64)])

    def remove_idle(self, patience):
        """Drop constraints whose dual variable stayed 0 for ``patience``
        solves (they do not change the solution)."""
        keep = self.idle < patience
        if keep.all():
            return 0
        idx = np.flatnonzero(keep)
        self.K = self.K[np.ix_(idx, idx)]
        self.rows = self.rows[idx]
        for name in ("b", "example", "alpha", "grad", "idle"):
            setattr(self, name, getattr(self, name)[idx])
        return int((~keep).sum())

    # -- solving ------------------------------------------------------------

    def w(self):
        return np.asarray(self.rows.T @ self.alpha).ravel()

    def dual(self):
        return float(self.b @ self.alpha - 0.5 * self.alpha @ self.K @ self.alpha)

    def primal(self):
        """Primal objective of the working set at ``w = A' alpha``."""
        xi = self.slacks()
        return float(0.5 * self.alpha @ self.K @ self.alpha + self.cap * xi.sum())

    def slacks(self):
        """Working-set slack of every example seen: ``max(0, max_k b_k - a_k.w)``."""
        if not self.n_constraints:
            return np.zeros(0)
        xi = np.zeros(self.example.max() + 1)
        np.maximum.at(xi, self.example, self.grad)
        return xi

    def solve(self, tol=1e-6, max_sweeps=1000):
        """Block coordinate ascent (:func:`~sklstruct._qp.block_smo`) until every example's
        KKT violation is at most ``tol``.  Returns the number of sweeps."""
        if not self.n_constraints:
            return 0
        order = np.argsort(self.example, kind="stable").astype(np.int64)
        starts = np.flatnonzero(np.diff(self.example[order])) + 1
        ptr = np.concatenate([[0], starts, [len(order)]]).astype(np.int64)
        self.K = np.ascontiguousarray(self.K)
        sweeps, _ = block_smo(self.K, self.b, self.alpha, self.grad, ptr, order, self.cap, float(tol),
                        int(max_sweeps))
        self.idle = np.where(self.alpha > 0, 0, self.idle + 1)
        return sweeps

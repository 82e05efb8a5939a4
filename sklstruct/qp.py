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

With ``gram="dense"`` the whole Gram matrix ``K`` is kept (fast sweeps,
memory quadratic in the number of constraints: 1.2 GB at 11,393 constraints
of the parser's 0/1 fit).  With ``gram="blocks"`` only ``w = A' alpha`` and
each example's own Gram block ``A_i A_i'`` are kept: the gradient of a block
is ``b_i - A_i w``, computed when the block is visited, so memory grows with
the constraints themselves (their sparse rows), not with their number
squared.

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
    gram : {"dense", "blocks", "auto"}, default="dense"
        Keep the whole Gram matrix, or only ``w`` and each example's block
        (see the module documentation); ``"auto"``: dense until the working
        set exceeds ``max_dense`` constraints, blocks from then on.
    max_dense : int, default=8192
        With ``gram="auto"``: the largest working set kept with a dense
        Gram matrix (8192 constraints: 512 MB).
    """

    def __init__(self, n_features, cap, gram="dense", max_dense=8192):
        if cap <= 0:
            raise ValueError("cap (C / n) must be > 0")
        if gram not in ("dense", "blocks", "auto"):
            raise ValueError(f"gram must be 'dense', 'blocks' or 'auto'; got {gram!r}")
        self.gram = gram
        self.max_dense = int(max_dense)
        self._mode = "blocks" if gram == "blocks" else "dense"
        self._w = np.zeros(int(n_features))
        self._blocks = {}       # example -> (row ids, rows, Gram block), gram="blocks"
        self.n_features = int(n_features)
        self.cap = float(cap)
        self.rows = sp.csr_matrix((0, self.n_features))
        self.b = np.zeros(0)
        self.example = np.zeros(0, dtype=np.int64)
        self.alpha = np.zeros(0)
        self._Kbuf = np.zeros((0, 0))   # K is its top-left block (gram="dense")
        self.grad = np.zeros(0)   # b - K alpha
        self.idle = np.zeros(0, dtype=np.int64)

    @property
    def n_constraints(self):
        return len(self.b)

    @property
    def K(self):
        """The Gram matrix of the working set (empty with ``gram="blocks"``)."""
        m = self.n_constraints if self._mode == "dense" else 0
        return self._Kbuf[:m, :m]

    def add(self, rows, b, example):
        """Add constraints: ``rows`` (m, d) sparse ``a_k``, offsets ``b``,
        example ids."""
        rows = sp.csr_matrix(rows, dtype=np.float64)
        b = np.asarray(b, dtype=np.float64).ravel()
        example = np.asarray(example, dtype=np.int64).ravel()
        if rows.shape[1] != self.n_features or rows.shape[0] != len(b) or len(b) != len(example):
            raise ValueError("constraint rows, offsets and example ids do not match")
        if self.gram == "auto" and self._mode == "dense" and (
                self.n_constraints + len(b) > self.max_dense):
            # from here on: w and per-example blocks instead of K
            self._w = self.w()
            self._Kbuf = np.zeros((0, 0))
            self.grad = np.zeros(0)
            self._mode = "blocks"
        if self._mode == "blocks":
            self.rows = sp.vstack([self.rows, rows], format="csr")
            self.b = np.concatenate([self.b, b])
            self.example = np.concatenate([self.example, example])
            self.alpha = np.concatenate([self.alpha, np.zeros(len(b))])
            self.idle = np.concatenate([self.idle, np.zeros(len(b), dtype=np.int64)])
            for e in np.unique(example):
                self._blocks.pop(int(e), None)
            return
        if len(b) <= 8:
            # a few rows (the 1-slack solver adds one): products with their
            # dense copies cost nnz(A) per row, where a sparse product would
            # transpose all of A
            D = rows.toarray()
            cross = np.asarray(self.rows @ D.T).T.reshape(len(b), self.n_constraints)
            new = np.asarray(rows @ D.T)
        else:
            cross = np.asarray((rows @ self.rows.T).todense()).reshape(len(b),
                                                                    self.n_constraints)
            new = np.asarray((rows @ rows.T).todense())
        m, k = self.n_constraints, len(b)
        if m + k > self._Kbuf.shape[0]:
            # grow the buffer geometrically: an addition copies K only when
            # the capacity doubles, not every time
            grown = np.empty((max(2 * self._Kbuf.shape[0], m + k, 64),) * 2)
            grown[:m, :m] = self._Kbuf[:m, :m]
            self._Kbuf = grown
        K = self._Kbuf
        K[m:m + k, :m] = cross
        K[:m, m:m + k] = cross.T
        K[m:m + k, m:m + k] = new
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
        self.rows = self.rows[idx]
        names = ["b", "example", "alpha", "idle"]
        if self._mode == "dense":
            self._Kbuf[:len(idx), :len(idx)] = self._Kbuf[np.ix_(idx, idx)]
            names.append("grad")
        for name in names:
            setattr(self, name, getattr(self, name)[idx])
        self._blocks = {}
        return int((~keep).sum())

    # -- solving ------------------------------------------------------------

    def w(self):
        if self._mode == "blocks":
            return self._w.copy()
        return np.asarray(self.rows.T @ self.alpha).ravel()

    def _norm2(self):
        """``||w||^2 = alpha' K alpha``."""
        if self._mode == "blocks":
            return float(self._w @ self._w)
        return float(self.alpha @ self.K @ self.alpha)

    def dual(self):
        return float(self.b @ self.alpha) - 0.5 * self._norm2()

    def primal(self):
        """Primal objective of the working set at ``w = A' alpha``."""
        return 0.5 * self._norm2() + self.cap * float(self.slacks().sum())

    def slacks(self):
        """Working-set slack of every example seen: ``max(0, max_k b_k - a_k.w)``."""
        if not self.n_constraints:
            return np.zeros(0)
        grad = self.b - self.rows @ self._w if self._mode == "blocks" else self.grad
        xi = np.zeros(self.example.max() + 1)
        np.maximum.at(xi, self.example, grad)
        return xi

    def solve(self, tol=1e-6, max_sweeps=1000):
        """Block coordinate ascent (:func:`~sklstruct._qp.block_smo`) until every example's
        KKT violation is at most ``tol``.  Returns the number of sweeps."""
        if not self.n_constraints:
            return 0
        if self._mode == "blocks":
            return self._solve_blocks(float(tol), int(max_sweeps))
        order = np.argsort(self.example, kind="stable").astype(np.int64)
        starts = np.flatnonzero(np.diff(self.example[order])) + 1
        ptr = np.concatenate([[0], starts, [len(order)]]).astype(np.int64)
        sweeps, _ = block_smo(self._Kbuf, self.b, self.alpha, self.grad, ptr, order, self.cap, float(tol),
                        int(max_sweeps))
        self.idle = np.where(self.alpha > 0, 0, self.idle + 1)
        return sweeps

    def _block(self, e, idx):
        """Rows and Gram block of example ``e`` (cached until it changes)."""
        got = self._blocks.get(e)
        if got is None or len(got[0]) != len(idx):
            rows = self.rows[idx]
            got = (idx, rows, np.asarray((rows @ rows.T).todense()))
            self._blocks[e] = got
        return got[1], got[2]

    def _solve_blocks(self, tol, max_sweeps):
        """Block coordinate ascent without the full Gram matrix: each block's
        problem (with one more variable, the unused part of ``cap``, whose
        row is zero) by :func:`~sklstruct._qp.solve_simplex_qp`, then
        ``w += A_i' (alpha_new - alpha_old)``."""
        order = np.argsort(self.example, kind="stable")
        bounds = np.flatnonzero(np.r_[True, np.diff(self.example[order]) != 0, True])
        groups = [(int(self.example[order[lo]]), order[lo:hi])
                  for lo, hi in zip(bounds[:-1], bounds[1:])]
        sweeps = 0
        for sweeps in range(1, max_sweeps + 1):
            worst = 0.0
            for e, idx in groups:
                rows, G = self._block(e, idx)
                a = self.alpha[idx]
                g = self.b[idx] - rows @ self._w
                free = self.cap - a.sum()
                active = g[a > 0]
                down = min(active.min() if len(active) else np.inf,
                           0.0 if free > 1e-12 * self.cap else np.inf)
                viol = max(g.max(), 0.0) - down
                if viol <= tol:
                    continue
                worst = max(worst, viol)
                m = len(idx)
                G_aug = np.zeros((m + 1, m + 1))
                G_aug[1:, 1:] = G
                ell = np.concatenate([[0.0], g + G @ a])
                start = np.concatenate([[max(free, 0.0)], a])
                new = solve_simplex_qp(G_aug, ell, start, tol=0.1 * tol)[0][1:]
                self._w += rows.T @ (new - a)
                self.alpha[idx] = new
            if worst <= tol:
                break
        self.idle = np.where(self.alpha > 0, 0, self.idle + 1)
        return sweeps

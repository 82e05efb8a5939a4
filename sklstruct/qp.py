"""The quadratic programs of sklstruct's max-margin learners, their Python face
(the solvers are in :mod:`sklstruct._qp`).

:func:`solve_simplex_qp` solves one example's problem
``min_a 1/2 a'Ga - ell'a  s.t.  a >= 0, sum(a) = C`` (dense ``G``).

:class:`WorkingSetQP` is the n-slack structural SVM over a working set of
constraints (Tsochantaridis et al. 2005, slack rescaling), and
:class:`CuttingPlane` the n-slack and 1-slack cutting-plane training of any
structural SVM over it, given an oracle for the most violated constraints (the
parser's, :class:`~sklstruct.parsing.F1MaxMarginParser`, Bauer et al. 2017,
eq. 2, is loss-augmented CKY).
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
import time

import numpy as np
import scipy.sparse as sp

from ._progress import report
from ._qp import _solve_simplex_qp_unchecked, block_smo, solve_simplex_qp
from ._validation import (MAX_ABS_FEATURE, MAX_C, MAX_COUNT, InputTypeError,
                          _check_sparse_structure, check_number, check_real_array, describe)

__all__ = ["CuttingPlane", "WorkingSetQP", "solve_simplex_qp"]


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
    n_examples : int or None, default=None
        Number of examples, if known: example ids must be below it.  Without
        it ids must be below ``2**31 - 1`` (the slacks are an array as long as
        the largest id).

    Every argument of the constructor and of :meth:`add`, :meth:`solve` and
    :meth:`remove_idle` is checked before any work; a wrong one raises a
    ``ValueError`` or ``TypeError`` naming it.
    """

    def __init__(self, n_features, cap, gram="dense", max_dense=8192, n_examples=None):
        n_features = check_number(n_features, "n_features", lo=1, integer=True)
        cap = check_number(cap, "cap (C / n)", lo=0, hi=MAX_C, lo_open=True)
        if gram not in ("dense", "blocks", "auto"):
            raise ValueError(f"gram must be 'dense', 'blocks' or 'auto'; got {gram!r}")
        max_dense = check_number(max_dense, "max_dense", lo=0, integer=True)
        if n_examples is not None:
            n_examples = check_number(n_examples, "n_examples", lo=1, hi=MAX_COUNT,
                                      integer=True)
        self.gram = gram
        self.max_dense = max_dense
        self.n_examples = n_examples
        self._mode = "blocks" if gram == "blocks" else "dense"
        self._w = np.zeros(n_features)
        self._blocks = {}       # example -> (row ids, rows, Gram block), gram="blocks"
        self.n_features = n_features
        self.cap = cap
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
        """Add constraints: ``rows`` (m, d) sparse or dense ``a_k``, offsets
        ``b`` (m,), example ids (m,), all finite (rows and offsets at most
        1e100 in absolute value), ids integers in ``[0, n_examples)``."""
        rows, b, example = self._checked_constraints(rows, b, example)
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

    def _checked_constraints(self, rows, b, example):
        """The arguments of :meth:`add` as CSR float64 rows, float64 offsets
        and int64 ids, or an error naming the argument."""
        if sp.issparse(rows):
            # the structure first (SciPy trusts it); not normalised, so that
            # the sums over the rows keep their order
            _check_sparse_structure(rows, "rows")
            rows = sp.csr_matrix(rows, dtype=np.float64)
            check_real_array(rows.data, "rows.data", 1, MAX_ABS_FEATURE)
        else:
            rows = sp.csr_matrix(check_real_array(rows, "rows", 2, MAX_ABS_FEATURE),
                                 dtype=np.float64)
        if rows.shape[1] != self.n_features:
            raise ValueError(f"rows has {rows.shape[1]} columns; expected n_features = "
                             f"{self.n_features}")
        b = check_real_array(b, "b", 1, MAX_ABS_FEATURE).astype(np.float64, copy=False)
        ids = check_real_array(example, "example", 1)
        if ids.size and ids.dtype.kind not in "iu":
            # a float id would be truncated, a bool taken for 0 or 1
            raise InputTypeError(f"example ids must be integers; got dtype {ids.dtype}")
        bound = MAX_COUNT if self.n_examples is None else self.n_examples - 1
        if ids.size and (ids.min() < 0 or ids.max() > bound):
            bad = ids[(ids < 0) | (ids > bound)][0]
            why = "n_examples - 1" if self.n_examples is not None else \
                "2**31 - 1: the slacks are an array as long as the largest id"
            raise ValueError(f"example ids must be in [0, {bound}] ({why}); got {bad}")
        if not rows.shape[0] == len(b) == len(ids):
            raise ValueError(f"rows, b and example must have one entry per constraint; got "
                             f"{rows.shape[0]} rows, {len(b)} offsets, {len(ids)} ids")
        return rows, b, ids.astype(np.int64, copy=False)

    def remove_idle(self, patience):
        """Drop constraints whose dual variable stayed 0 for ``patience``
        solves (they do not change the solution); ``patience`` an int >= 1."""
        patience = check_number(patience, "patience", lo=1, hi=MAX_COUNT, integer=True)
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
        KKT violation is at most ``tol`` (a finite number >= 0), for at most
        ``max_sweeps`` sweeps (an int >= 1).  Returns the number of sweeps."""
        tol = check_number(tol, "tol", lo=0)
        max_sweeps = check_number(max_sweeps, "max_sweeps", lo=1, hi=MAX_COUNT, integer=True)
        if not self.n_constraints:
            return 0
        if self._mode == "blocks":
            return self._solve_blocks(tol, max_sweeps)
        order = np.argsort(self.example, kind="stable").astype(np.int64)
        starts = np.flatnonzero(np.diff(self.example[order])) + 1
        ptr = np.concatenate([[0], starts, [len(order)]]).astype(np.int64)
        sweeps, _ = block_smo(self._Kbuf, self.b, self.alpha, self.grad, ptr, order, self.cap,
                              tol, max_sweeps)
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
        row is zero) by :func:`~sklstruct._qp.solve_simplex_qp` (unchecked:
        the block is a Gram matrix of checked rows), then
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
                new = _solve_simplex_qp_unchecked(G_aug, ell, start, tol=0.1 * tol)[0][1:]
                self._w += rows.T @ (new - a)
                self.alpha[idx] = new
            if worst <= tol:
                break
        self.idle = np.where(self.alpha > 0, 0, self.idle + 1)
        return sweeps


class CuttingPlane:
    """Cutting-plane training of a structural SVM with slack rescaling.

    Solves (Tsochantaridis et al. 2005 [1]_, slack rescaling)::

        min_{w, xi >= 0}  1/2 ||w - w0||^2 + C/n sum_i xi_i
        s.t.  Delta(y_i, y) w.(Psi(x_i, y_i) - Psi(x_i, y)) >= Delta(y_i, y) - xi_i
              for every example i and output y,

    for any structured output, through an oracle that finds every example's
    most violated constraint.  Every iteration asks the oracle for the
    outputs maximising ``Delta(y_i, y) (1 - w.dPsi)`` at the current ``w``,
    adds the constraints that violate by more than ``tol``, and re-solves the
    dual of the working set (:class:`WorkingSetQP`, in the variable
    ``u = w - w0``).  Training stops when no constraint is violated by more
    than ``tol`` (or after ``max_iter`` oracle passes).

    Parameters
    ----------
    C : float
        Regularization constant.
    solver : {"1-slack", "n-slack"}, default="1-slack"
        ``"n-slack"`` [1]_ adds one constraint per violating example and
        re-solves the QP over all of them; ``"1-slack"`` (Joachims, Finley
        and Yu 2009 [2]_, Algorithm 4 and its caching variant) adds one
        constraint per iteration, the average of every example's most
        violated one, so the working set and its Gram matrix stay small, and
        takes further constraints from a cache of the last ``cache_size``
        outputs found per example while they violate by more than ``tol``
        (no oracle call; at most ``max_cached`` such iterations in a row).
        Both stop within ``tol`` of the same optimum.
    max_iter : int, default=30
        Maximum number of oracle passes (the 1-slack solver's cached
        iterations are not counted).
    tol : float, default=0.01
        A constraint is added when it violates by more than ``tol``.
    qp_tol : float, default=1e-6
        KKT tolerance of the working-set QP.
    gram : {"dense", "blocks", "auto"}, default="auto"
        How the n-slack QP keeps its Gram matrix (:class:`WorkingSetQP`):
        dense (fast sweeps) up to 8192 constraints (512 MB), then only ``w``
        and per-example blocks (memory linear in the constraints).
    cache_size : int, default=10
        Outputs kept per example in the 1-slack cache.
    max_cached : int, default=20
        Cached 1-slack iterations between two oracle passes, at most.  The
        cache holds outputs found at earlier weights; a long run of cached
        constraints fits those while a fresh oracle pass would find others.
    verbose : int, default=0
        Print one line per iteration.
    name : str, default="CuttingPlane"
        Prefix of the printed lines (the estimator).

    Attributes
    ----------
    w_ : ndarray
        The weights ``w = w0 + u``.
    n_iter_ : int
        Oracle passes.
    converged_ : bool
    history_ : list of dict
        Per iteration: ``iteration``, ``violated``, ``constraints``, ``dual``,
        ``primal`` (upper bound at the previous ``w``; NaN for a cached
        1-slack iteration), ``cached``, ``seconds``.
    qp_ : WorkingSetQP
        The working set at the end.

    Notes
    -----
    The oracle is any object with three methods:

    * ``most_violated(w)``: a list with one pair ``(y, value)`` per example:
      the output ``y`` maximising ``Delta(y_i, y) (1 - w.dPsi)`` and that
      value, or ``(None, value)`` where no output has a positive value (the
      value is then at most 0; it enters the primal bound of the history);
    * ``loss(i, y)``: ``Delta(y_i, y)``;
    * ``feature_difference(i, y)``: ``Psi(x_i, y_i) - Psi(x_i, y)`` as a
      (1, n_features) sparse row.

    References
    ----------
    .. [1] I. Tsochantaridis, T. Joachims, T. Hofmann and Y. Altun, "Large
       Margin Methods for Structured and Interdependent Output Variables",
       Journal of Machine Learning Research 6, 1453-1484, 2005.
    .. [2] T. Joachims, T. Finley and C.-N. J. Yu, "Cutting-Plane Training of
       Structural SVMs", Machine Learning 77(1), 27-59, 2009.
    """

    def __init__(self, C, *, solver="1-slack", max_iter=30, tol=0.01, qp_tol=1e-6,
                 gram="auto", cache_size=10, max_cached=20, verbose=0, name="CuttingPlane"):
        if solver not in ("1-slack", "n-slack"):
            raise ValueError(f"solver must be '1-slack' or 'n-slack'; got {solver!r}")
        if gram not in ("dense", "blocks", "auto"):
            raise ValueError(f"gram must be 'dense', 'blocks' or 'auto'; got {gram!r}")
        self.C = check_number(C, "C", lo=0, hi=MAX_C, lo_open=True)
        self.solver = solver
        self.max_iter = check_number(max_iter, "max_iter", lo=1, hi=MAX_COUNT, integer=True)
        self.tol = check_number(tol, "tol", lo=0)
        self.qp_tol = check_number(qp_tol, "qp_tol", lo=0)
        self.gram = gram
        # (cache_size=0 would keep every output: del lst[:-0] deletes nothing)
        self.cache_size = check_number(cache_size, "cache_size", lo=1, hi=MAX_COUNT,
                                       integer=True)
        self.max_cached = check_number(max_cached, "max_cached", lo=0, hi=MAX_COUNT,
                                       integer=True)
        self.verbose = verbose
        self.name = name

    def fit(self, oracle, n_samples, w0, start=None):
        """Train from ``w = w0``.

        Parameters
        ----------
        oracle : object
            ``most_violated``, ``loss`` and ``feature_difference`` (see Notes).
        n_samples : int
            Number of examples ``n`` (``most_violated`` must return one
            output per example).
        w0 : ndarray of shape (n_features,)
            The centre of the regularizer (and the first ``w``), finite.
        start : float or None, default=None
            ``time.perf_counter()`` at which the ``seconds`` of the history
            start (None: now).

        Returns
        -------
        self

        Raises ``ValueError`` or ``TypeError`` naming the argument for a
        wrong one (before any work), and naming the example for an oracle
        output that is not finite, of the wrong shape, or not one per example.
        """
        missing = [m for m in ("most_violated", "loss", "feature_difference")
                   if not callable(getattr(oracle, m, None))]
        if missing:
            raise InputTypeError(f"oracle must have the methods most_violated, loss and "
                                 f"feature_difference; {describe(oracle)} lacks "
                                 f"{', '.join(missing)}")
        n_samples = check_number(n_samples, "n_samples", lo=1, hi=MAX_COUNT, integer=True)
        w0 = check_real_array(w0, "w0", 1)
        if not len(w0):
            raise ValueError("w0 must have at least one feature; got shape (0,)")
        if start is not None:
            start = check_number(start, "start")
        self._start = time.perf_counter() if start is None else start
        self._w0 = np.asarray(w0, dtype=np.float64)
        self.w_ = self._w0.copy()
        self.history_ = []
        self.converged_ = False
        solve = self._one_slack if self.solver == "1-slack" else self._n_slack
        self.n_iter_ = solve(oracle, n_samples)
        if self.verbose:
            last = self.history_[-1] if self.history_ else {}
            how = ("converged: no constraint violated by more than tol" if self.converged_
                   else "stopped at max_iter without converging")
            print(f"-- [{self.name}] {how} after {self.n_iter_} oracle passes "
                  f"(dual {last.get('dual', float('nan')):.6g}, "
                  f"{time.perf_counter() - self._start:.3f} s)", flush=True)
        return self

    def _most_violated(self, oracle, n):
        """The oracle's outputs at ``w_`` and their values, checked: one per
        example, finite values (a NaN would stop training as converged)."""
        found = list(oracle.most_violated(self.w_))
        if len(found) != n:
            raise ValueError(f"oracle.most_violated returned {len(found)} outputs; expected one "
                             f"per example (n_samples = {n})")
        for i, pair in enumerate(found):
            if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
                raise InputTypeError(f"oracle.most_violated: the output of example {i} must be "
                                     f"a pair (y, value); got {describe(pair)}")
        values = np.array([check_number(v, f"oracle.most_violated: the value of example {i}")
                           for i, (_, v) in enumerate(found)])
        return found, values

    def _constraint(self, oracle, i, y):
        """``Delta`` and ``Delta * dPsi`` of example ``i``'s output ``y``, checked:
        a finite loss >= 0, a finite (1, n_features) feature difference."""
        d = check_number(oracle.loss(i, y), f"oracle.loss of example {i}", lo=0)
        row = oracle.feature_difference(i, y)
        where = f"oracle.feature_difference of example {i}"
        if sp.issparse(row):
            _check_sparse_structure(row, where)
            check_real_array(row.data, f"{where}: data", 1)
        else:
            row = check_real_array(row, where, 2)
        if row.shape != (1, len(self._w0)):
            raise ValueError(f"{where} has shape {row.shape}; expected (1, {len(self._w0)}), "
                             "the shape of w0 as a row")
        return d, d * row

    def _primal(self, values):
        """The primal objective at the current weights, from every example's
        most violated value ``Delta (1 - w.dPsi)`` (an upper bound on the
        optimum)."""
        u = self.w_ - self._w0
        return 0.5 * float(u @ u) + self.C / len(values) * float(values.sum())

    def _log(self, it, violated, primal, cached=False):
        qp = self.qp_
        entry = {"iteration": it, "violated": violated, "constraints": qp.n_constraints,
                 "dual": qp.dual(), "primal": primal, "cached": cached,
                 "seconds": time.perf_counter() - self._start}
        self.history_.append(entry)
        fields = [("violated", violated), ("working set", qp.n_constraints),
                  ("dual", entry["dual"])]
        # a pass over the cache calls no oracle, so it has no primal bound
        fields.append(("from", "the cache") if cached else ("primal <=", primal))
        report(self.verbose, f"[{self.name}] Iteration", it, fields, entry["seconds"])

    def _solve(self, patience):
        """Re-solve the working set; ``w = w0 + u``."""
        self.qp_.solve(tol=self.qp_tol)
        self.qp_.remove_idle(patience=patience)
        self.w_ = self._w0 + self.qp_.w()

    def _n_slack(self, oracle, n):
        """n-slack cutting planes: one constraint per violating example."""
        w0 = self._w0
        qp = self.qp_ = WorkingSetQP(len(w0), self.C / n, gram=self.gram, n_examples=n)
        for it in range(1, self.max_iter + 1):
            found, values = self._most_violated(oracle, n)
            xi = np.zeros(n)
            ws = qp.slacks()
            xi[:len(ws)] = ws
            primal = self._primal(values)
            new = [(i, y) for i, (y, v) in enumerate(found)
                   if y is not None and v > xi[i] + self.tol]
            if new:
                deltas, rows = zip(*(self._constraint(oracle, i, y) for i, y in new))
                rows = sp.vstack(rows, format="csr")
                deltas = np.array(deltas)
                # Delta (w0 + u) . dPsi >= Delta - xi  <=>  u . a >= Delta - a . w0
                qp.add(rows, deltas - rows @ w0, [i for i, _ in new])
                self._solve(patience=20)
            self._log(it, len(new), primal)
            if not new:
                self.converged_ = True
                break
        return it

    def _one_slack(self, oracle, n):
        """1-slack cutting planes with a cache of the outputs the oracle
        returned.  Returns the number of oracle passes."""
        self.qp_ = WorkingSetQP(len(self._w0), self.C, n_examples=1)
        cache = {}        # example -> list of (Delta * dPsi row, Delta), newest last
        stacked = None
        passes = it = cached_run = 0
        while passes < self.max_iter:
            it += 1
            xi = float(self.qp_.slacks().max(initial=0.0))
            if stacked is not None and cached_run < self.max_cached:
                # the most violated constraint over the cached outputs: per
                # example the cached output of largest Delta (1 - w.dPsi) > 0
                rows, deltas, ex = stacked
                margin = deltas - rows @ self.w_
                order = np.lexsort((-margin, ex))
                first = order[np.r_[True, np.diff(ex[order]) != 0]]
                sel = first[margin[first] > 0]
                if margin[sel].sum() / n > xi + self.tol:
                    self._add_one_slack(rows, sel, deltas, n)
                    self._log(it, len(sel), float("nan"), cached=True)
                    cached_run += 1
                    continue
            cached_run = 0
            passes += 1
            found, values = self._most_violated(oracle, n)
            primal = self._primal(values)
            viol = []
            for i, (y, _) in enumerate(found):
                if y is not None:
                    d, row = self._constraint(oracle, i, y)
                    viol.append((i, row, d))
            for i, row, d in viol:
                cache.setdefault(i, []).append((row, d))
                del cache[i][:-self.cache_size]
            if viol:
                items = [(i, row, d) for i, lst in cache.items() for row, d in lst]
                stacked = (sp.vstack([row for _, row, _ in items], format="csr"),
                           np.array([d for _, _, d in items]),
                           np.array([i for i, _, _ in items]))
            violated = values.sum() / n > xi + self.tol
            if violated:
                self._add_one_slack(sp.vstack([row for _, row, _ in viol], format="csr"),
                                    np.arange(len(viol)), np.array([d for _, _, d in viol]), n)
            self._log(it, len(viol), primal)
            if not violated:
                self.converged_ = True
                break
        return passes

    def _add_one_slack(self, rows, sel, deltas, n):
        """Add the 1-slack constraint ``(1/n) sum_i Delta_i (w0 + u).dPsi_i >=
        (1/n) sum_i Delta_i - xi`` of the outputs ``sel`` (rows of ``rows``,
        ``Delta * dPsi``) and re-solve.  The sum is a sparse product, so its
        cost is that of the selected rows, not of the weight vector."""
        pick = sp.csr_matrix((np.full(len(sel), 1.0 / n), (np.zeros(len(sel), dtype=np.int64),
                                                           sel)), shape=(1, rows.shape[0]))
        a = (pick @ rows).tocsr()
        b = float(deltas[sel].sum()) / n
        self.qp_.add(a, [b - float((a @ self._w0)[0])], [0])
        self._solve(patience=50)

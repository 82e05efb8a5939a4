"""The learner families of the chain weights: online learners and dual
coordinate learners, each a :class:`._base.ChainLearner` whose pass is one
call of its Cython kernel (``_online.pyx``, ``_dual.pyx``)."""
from numbers import Integral, Real

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from .._publish import publishes
from .._chain import COSTS
from .._progress import progress_line
from .._validation import MAX_C
from ._base import ChainLearner, check_same_dual, new_dual
from ._dual import dual_epoch
from ._online import online_epoch


class OnlineLearner(ChainLearner):
    """Online learners: each example updates the weights by the estimator's
    rule (``_update_params()["rule"]``, a function of ``learners/_online.pyx``)."""

    def _epoch(self, data, codes, order, rng):
        mistakes, updates = online_epoch(data, codes, order, self._weights, k=int(self.k),
                                         **self._update_params())
        return {"mistakes": mistakes, "updates": updates}

    def _describe(self, r):
        share = 100.0 * r["mistakes"] / r["sentences"]
        return progress_line("Epoch", r["epoch"], [
            ("mistakes", f"{r['mistakes']}/{r['sentences']} ({share:.2f}%)"),
            ("updates", r["updates"])], r["seconds"])

    @publishes
    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, classes=None):
        """One epoch over the given sentences, continuing from the current weights.

        Parameters
        ----------
        X : list of {sparse matrix, ndarray} of shape (n_tokens_i, n_features)
        y : list of array-like of shape (n_tokens_i,)
        classes : array-like, optional
            All labels that will ever occur.  Needed on the first call only if
            later batches contain labels the first batch lacks; on later calls
            it must be the same set (or None), as in scikit-learn.

        Returns
        -------
        self : object
        """
        # (scikit-learn's _fit_context validates the parameters on the first
        # call only: a set_params between calls would reach the kernels)
        self._validate_params()
        self._check_resumable()
        self._train(X, y, 1, hasattr(self, "_weights"), classes)
        self._resumable = True
        return self


class DualLearner(ChainLearner):
    """Passes of a dual coordinate learner over working sets of sequences
    (Mancev & Todorovic, sections 3, 4.2 and 4.3): k-best SDM and LaRank.  The
    state (``DualState`` in ``learners/_dual.pyx``) keeps every example's
    working set S_n, its dual variables and costs, and the weights stay equal
    to ``sum lambda dF`` (eq. 6) throughout."""

    _parameter_constraints = {
        **ChainLearner._parameter_constraints,
        "C": [Interval(Real, 0, MAX_C, closed="right")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "kappa": [Interval(Real, 0, None, closed="left")],
        "max_smo_iter": [Interval(Integral, 1, None, closed="left")],
        "cost": [StrOptions(set(COSTS))],
    }

    #: Beyond every learner's: the dual variables and working sets, and the
    #: cost their sequences were added with.
    _TRAINING_STATE = ChainLearner._TRAINING_STATE + ("_dual", "_dual_cost")

    def _new_state(self, data, codes):
        if self.kappa >= self.C:
            raise ValueError(f"kappa={self.kappa} must be smaller than C={self.C}: no dual "
                             "variable could exceed kappa, so SMO would never take a step")
        return {**new_dual(self, data, codes), "_dual_cost": self.cost}

    def _check_warm(self, data, codes):
        check_same_dual(self, data, codes)
        if self._dual_cost != self.cost:
            raise ValueError(f"cost: cannot change cost from {self._dual_cost!r} to "
                             f"{self.cost!r} when continuing training (the working sets "
                             "hold the costs of the old one); refit")

    def _epoch(self, data, codes, order, rng):
        params = self._update_params()
        if params.get("n_reprocess", 0) > 0:
            # the random picks of support patterns, drawn after the order so
            # that a learner without them visits examples like the online ones
            self._dual.seed(int(rng.randint(1, 2**62)))
        bar = getattr(self, "_bar", None)
        # with a progress bar the pass runs in pieces of the order, which
        # visits the examples exactly as one call does (the state, the weights'
        # averaging clock and the random picks live in self._dual and weights)
        pieces = [order] if bar is None else np.array_split(order, min(len(order), 100))
        mistakes = steps = 0
        for piece in pieces:
            m, s, _ = dual_epoch(
                self._dual, data, np.ascontiguousarray(piece), self._weights, int(self.k),
                cost=COSTS[self.cost], tol=float(self.tol), kappa=float(self.kappa),
                max_smo_steps=int(self.max_smo_iter), **params)
            mistakes, steps = mistakes + m, steps + s
            if bar is not None:
                bar.update(len(piece))
        self.n_support_ = self._dual.n_support
        self.dual_objective_ = self._dual.objective
        return {"mistakes": mistakes, "smo_steps": steps,
                "dual_objective": self._dual.objective, "n_support": self._dual.n_support,
                "n_sequences": self._dual.n_sequences}

    def _describe(self, r):
        return progress_line("Pass", r["epoch"], [
            ("dual objective", r["dual_objective"]),
            ("support vectors", f"{r['n_support']} ({r['n_sequences']} sequences held)"),
            ("mistakes", f"{r['mistakes']}/{r['sentences']}"), ("SMO steps", r["smo_steps"])],
            r["seconds"])

"""Max-margin Markov networks trained by stochastic gradient descent with
stochastic meta-descent step sizes (Yu & Lam, sections 2-3), or by SMO on
the dual (the paper's baseline)."""
import math
import time
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._chain import COSTS, ChainWeights
from .._validation import MAX_C
from ..chain import as_stacked
from ._base import ChainLearner, check_same_dual, new_dual
from ._dual import dual_epoch
from ._m3n import SCHEDULES, STATE_FIELDS, hinge_losses, new_state, sgd_epoch


class M3NSGDTagger(ChainLearner):
    """Max-margin Markov network (M3N) for a linear chain, trained by SGD.

    Minimises the regularised structured hinge loss (Yu & Lam, eqs. 4 and
    9-11)::

        J(w) = 1/2 ||w||^2 + C sum_i max_y [H(y_i, y) - w . (F(x_i, y_i) - F(x_i, y))]

    with H the Hamming distance, one random sentence at a time.  Each step
    finds the loss-augmented best sequence y* by Viterbi and moves ``w``
    against the subgradient of ``f_i(w) = lam/2 ||w||^2 + l_i(w)``,
    ``lam = 1 / (n C)`` (the mean of the f_i is J / (n C)).  With
    ``learning_rate="smd"`` the step size is adapted by stochastic
    meta-descent (eqs. 17-18, Fig. 1): ``eta <- eta max(1/2, 1 - mu g . v)``
    with the auxiliary vector ``v <- lambda v - eta (g + lambda H v)``.  The
    hinge part is piecewise linear, so the Hessian of f_i is ``lam I`` and
    the Hessian-vector products are exact.  Updates are sparse: w and v are
    held with scalar factors (see ``learners/_m3n.pyx``), so a step costs the
    features of the tokens y* gets wrong, and the epoch runs in Cython
    without the GIL.

    ``solver="smo"`` optimises the same problem through its dual (eq. 5):
    each example's dual variables sum to C and its working set collects
    its loss-augmented best sequences; SMO (the shared code of
    :class:`~sklstruct.SDMTagger` with ``k=1``) runs on the working set of
    each example visited.  It is the cutting-plane form of the structured
    SMO baseline; Taskar's factored (marginal) dual variables are not
    used.

    Parameters
    ----------
    C : float, default=1.0
        Weight of the hinge losses against 1/2 ||w||^2 (eq. 4).
    solver : {"sgd", "smo"}, default="sgd"
    learning_rate : {"smd", "optimal", "constant", "invscaling"}, default="smd"
        Step sizes of ``solver="sgd"``: "smd" adapts them (eqs. 17-18) from
        ``eta0``; "optimal" is ``1 / (lam (t0 + t))`` with scikit-learn's
        heuristic t0 (as in ``SGDClassifier``); "constant" is ``eta0``;
        "invscaling" is ``eta0 / t ** power_t``.  Every step size is capped at
        ``1 / (2 lam)``, where the step would overshoot the regulariser.
    eta0 : float, default=0.03
        Initial ("smd") or constant step size.
    mu : float, default=1e-4
        SMD's meta-learning rate.
    smd_lambda : float, default=0.99
        SMD's decay factor lambda, in [0, 1]: the time scale of the
        dependence of w on past step sizes.
    power_t : float, default=0.5
        Exponent of "invscaling".
    max_iter : int, default=20
        Passes over the training sentences.
    tol : float, default=1e-3
        ``solver="smo"``: the KKT tolerance of SMO on each working set.
    max_smo_iter : int, default=1000
        ``solver="smo"``: cap on SMO steps per visit.
    average : bool, default=False
        Predict with the average of the iterates (Polyak-Ruppert averaging;
        kept lazily, at no cost per step beyond the update itself).
    shuffle : bool, default=True
        Visit the sentences in a new random order each pass.
    random_state : int, RandomState instance or None, default=None
    verbose : int, default=0
        Print the objective J, the step sizes, mistakes and time of each pass.
    warm_start : bool, default=False
        Let ``fit`` continue from the current weights and step size (SGD; any
        data) or dual variables (SMO; the same training set).
    order : {1, 2}, default=1
        Order of the linear chain (see :class:`~sklstruct.StructuredPerceptronTagger`).

    Attributes
    ----------
    classes_ : ndarray of labels
    coef_ : ndarray of shape (n_labels, n_features)
    transition_coef_ : ndarray of shape (n_labels, n_labels)
    start_coef_, end_coef_ : ndarray of shape (n_labels,)
    trigram_coef_ : ndarray of shape (n_labels, n_labels, n_labels) or None
    n_features_in_ : int
    n_iter_ : int
    objective_curve_ : ndarray of shape (n_iter_,)
        J(w) of eq. 4 for the weights predicted with, after each pass.
    eta_ : float
        The step size reached (``solver="sgd"``).
    dual_objective_ : float
        ``solver="smo"``: the dual objective of eq. 5, a lower bound on J.
    history_ : list of dict
        Per pass: objective, mean hinge loss met during the pass, step-size
        range, mistakes, updates (``smo_steps`` for SMO), seconds (training
        only) and objective_seconds (the extra pass that evaluates J).

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklstruct import M3NSGDTagger, SequenceVectorizer
    >>> from sklstruct.datasets import make_chunking_corpus
    >>> X, y = make_chunking_corpus(300, random_state=0)
    >>> model = make_pipeline(SequenceVectorizer(templates=("word", "pos"), window=1),
    ...                       M3NSGDTagger(max_iter=5, random_state=0))
    >>> model.fit(X, y).score(X, y) > 0.9
    True

    References
    ----------
    .. [1] X. Yu and W. Lam, "Accelerated Training of Maximum Margin Markov
       Models for Sequence Labeling: A Case Study of NP Chunking", COLING 2010
       (eqs. 4-5, 9-11 and 15-18, Figure 1).
    .. [2] N. N. Schraudolph, "Local Gain Adaptation in Stochastic Gradient
       Descent", ICANN 1999 (stochastic meta-descent).
    .. [3] B. Taskar, C. Guestrin and D. Koller, "Max-Margin Markov Networks",
       NIPS 2003.
    .. [4] L. Bottou, "Stochastic Learning", Advanced Lectures on Machine
       Learning, 2004 (the "optimal" schedule).
    """

    _parameter_constraints = {
        **ChainLearner._parameter_constraints,
        "C": [Interval(Real, 0, MAX_C, closed="right")],
        "solver": [StrOptions({"sgd", "smo"})],
        "learning_rate": [StrOptions(set(SCHEDULES))],
        "eta0": [Interval(Real, 0, 1e6, closed="neither")],
        "mu": [Interval(Real, 0, 1e6, closed="left")],
        "smd_lambda": [Interval(Real, 0, 1, closed="both")],
        "power_t": [Interval(Real, 0, 10, closed="both")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "max_smo_iter": [Interval(Integral, 1, None, closed="left")],
    }
    _parameter_constraints.pop("k")

    def __init__(self, C=1.0, solver="sgd", learning_rate="smd", eta0=0.03, mu=1e-4,
                 smd_lambda=0.99, power_t=0.5, max_iter=20, tol=1e-3, max_smo_iter=1000,
                 average=False, shuffle=True, random_state=None, verbose=0,
                 warm_start=False, order=1):
        self.C = C
        self.solver = solver
        self.learning_rate = learning_rate
        self.eta0 = eta0
        self.mu = mu
        self.smd_lambda = smd_lambda
        self.power_t = power_t
        self.max_iter = max_iter
        self.tol = tol
        self.max_smo_iter = max_smo_iter
        self.average = average
        self.shuffle = shuffle
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.order = order

    # -- state ---------------------------------------------------------------------
    def _new_state(self, data, codes):
        state = {"_solver": self.solver, "objective_curve_": np.zeros(0)}
        if self.solver == "smo":
            state.update(new_dual(self, data, codes))
        else:
            W = self._weights
            state.update(_sgd=new_state(float(self.eta0)),
                         _aux=ChainWeights(W.n_features, W.n_labels, False, W.order))
        return state

    def _check_warm(self, data, codes):
        if self._solver != self.solver:
            raise ValueError(f"solver: cannot change solver from {self._solver!r} to "
                             f"{self.solver!r} when continuing training; refit")
        if self.solver == "smo":
            check_same_dual(self, data, codes)

    # -- one pass ------------------------------------------------------------------
    def _epoch(self, data, codes, order, rng):
        if self.solver == "smo":
            mistakes, steps, _ = dual_epoch(
                self._dual, data, order, self._weights, 1, cost=COSTS["hamming"],
                tol=float(self.tol), kappa=0.0, max_smo_steps=int(self.max_smo_iter))
            self.dual_objective_ = self._dual.objective
            record = {"mistakes": mistakes, "smo_steps": steps,
                      "dual_objective": self._dual.objective}
        else:
            record = self._sgd_epoch(data, codes, order)
        return record

    def _sgd_epoch(self, data, codes, order):
        n, C = data.n_sentences, float(self.C)
        lam = 1.0 / (n * C)
        s = self._sgd
        W, P = self._weights.W, self._weights.P
        # exact ||w||^2 and W~ . V~ at the start of each pass (no drift)
        s[STATE_FIELDS.index("wsq")] = s[0] ** 2 * (np.vdot(W, W) + np.vdot(P, P))
        s[STATE_FIELDS.index("wv")] = (np.vdot(W, self._aux.W) + np.vdot(P, self._aux.P))
        typw = math.sqrt(1.0 / math.sqrt(lam))
        mistakes, updates, hinge, lo, hi = sgd_epoch(
            data, codes, order, self._weights, self._aux, s, self.learning_rate, lam,
            float(self.eta0), float(self.mu), float(self.smd_lambda), float(self.power_t),
            1.0 / (typw * lam), 0.5 / lam)
        self.eta_ = float(s[STATE_FIELDS.index("eta")])
        return {"mistakes": mistakes, "updates": updates, "mean_hinge": hinge / n,
                "eta_min": lo, "eta_max": hi}

    def _after_epoch(self, data, codes):
        tic = time.perf_counter()
        model, scale = self._model()
        objective = self._objective(data, codes, model, scale)
        self.objective_curve_ = np.append(self.objective_curve_, objective)
        return {"objective": objective, "objective_seconds": time.perf_counter() - tic}

    def _describe(self, r):
        steps = (f"SMO steps {r['smo_steps']}" if "smo_steps" in r else
                 f"eta {r['eta_min']:.3g}..{r['eta_max']:.3g}, updates {r['updates']}")
        return (f"-- Epoch {r['epoch']}: objective {r['objective']:.6g}, {steps}, "
                f"mistakes {r['mistakes']}/{r['sentences']}, {r['seconds']:.3f} s "
                f"(+{r['objective_seconds']:.3f} s for the objective)")

    # -- the weights ---------------------------------------------------------------
    def _model(self):
        """(ChainWeights, scale): the weights to predict with, w = scale * weights."""
        if self._solver == "smo":
            if not self._weights.average:
                return self._weights, 1.0
            W, P = self._weights.averaged()
        else:
            s = dict(zip(STATE_FIELDS, self._sgd))
            if not (self._weights.average and s["n_avg"] > 0):
                return self._weights, s["a"]
            W = (s["A"] * self._weights.W - self._weights.W_sum) / s["n_avg"]
            P = (s["A"] * self._weights.P - self._weights.P_sum) / s["n_avg"]
        model = ChainWeights(W.shape[0], W.shape[1], False, self._weights.order)
        model.W[...] = W
        model.P[...] = P
        return model, 1.0

    def objective(self, X, y):
        """J(w) of eq. 4 on (X, y) for the weights predicted with:
        ``1/2 ||w||^2 + C sum_i l_i(w)``."""
        check_is_fitted(self)
        data = as_stacked(X, self.n_features_in_)
        codes = self._encode(y, data, self.classes_)
        model, scale = self._model()
        return self._objective(data.chain_data(), codes, model, scale)

    def _objective(self, chain_data, codes, model, scale):
        sq = scale ** 2 * (np.vdot(model.W, model.W) + np.vdot(model.P, model.P))
        return 0.5 * sq + float(self.C) * float(hinge_losses(chain_data, codes, model,
                                                             scale).sum())

    def _prediction_weights(self):
        model, scale = self._model()
        return scale * model.W, scale * model.P

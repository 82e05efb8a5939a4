"""Conditional random fields with the four losses of Altun, Johnson & Hofmann."""
import time
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions

from .._publish import publishes
from .._progress import report
from .._validation import MAX_C, N_JOBS_CONSTRAINT
from ..chain import as_stacked, pack_chain
from .._dask import is_bag
from ..optimize import lbfgs, owlqn
from ._base import ChainTagger
from ._crf_losses import LOSSES
from ._crf_shard import CRFShard, seen_states


class CRFTagger(ChainTagger):
    """Linear-chain conditional random field trained with one of four losses.

    ``P(y | x) = exp(w . F(x, y)) / Z(x)`` over the chain of the other
    taggers (emission, transition, start and end weights; with ``order=2``
    label-trigram weights too).  The losses of Altun, Johnson & Hofmann
    (section 3.3), summed over the training sentences:

    * ``"log"``: ``-log P(y | x)`` (eq. 1, maximum likelihood);
    * ``"exp"``: ``1 / P(y | x) - 1`` (eq. 2);
    * ``"pointwise_log"``: ``-sum_t log P(y_t | x)``;
    * ``"pointwise_exp"``: ``sum_t 1 / P(y_t | x)``;

    (one class each in ``sklstruct/learners/_crf_losses.py``) with a
    Gaussian prior, or an elastic-net (Gaussian and Laplacian) one, named and
    scaled as in scikit-learn's ``LogisticRegression``: the objective is

        C * sum(loss) + (1 - l1_ratio) / 2 ||w||_2^2 + l1_ratio ||w||_1.

    Without the L1 term it is minimised by L-BFGS
    (:func:`sklstruct.optimize.lbfgs`, with scipy's Wolfe line search); with
    it (``l1_ratio > 0``, log losses) by OWL-QN
    (:func:`sklstruct.optimize.owlqn`, Andrew & Gao 2007, the method of
    CRFsuite's ``c1``), which sets weights exactly to zero.  CRFsuite's
    ``c1 * ||w||_1 + c2 * ||w||_2^2 + sum(loss)`` is the same objective
    divided by ``C`` with ``C = 1 / (c1 + 2 c2)`` and
    ``l1_ratio = c1 / (c1 + 2 c2)``.  Both use the exact gradients of
    section 4.1
    (eqs. 3-4 and the pointwise ones, whose expectations conditioned on one
    position's label come from one extra backward-and-forward sweep, so
    every loss costs O(T L^2) per sentence).  Forward-backward never
    overflows: it runs on probabilities rescaled at each position (one
    exponential per label and token) where the scores' spread makes that
    exact, and in log space otherwise.  The exp losses grow like ``L ** T``
    when the model is poor, beyond floating point for long sentences, so for them
    L-BFGS minimises ``log(1 + C * sum(loss) + 1/2 ||w||^2)``, which has the
    same minimiser and is computed from log-space terms only; ``objective_``
    reports that logarithm.

    Parameters
    ----------
    loss : {"log", "exp", "pointwise_log", "pointwise_exp"}, default="log"
        The standard CRF; on Spanish NER (S3 features, 500 iterations)
        ``"pointwise_exp"`` scored more (77.40 against 76.58) at 3.6x the
        time (``benchmarks/results/crf_losses.md``).
    C : float, default=1.0
        Inverse regularisation strength (larger: weaker prior).  Not tuned
        by a dev search; supported by the benchmarks: C = 1 scores 93.57 on
        CoNLL-2000 and 78.98 on Spanish testb (``features_accuracy.md``, the
        same presets, 100 iterations), against 93.62 and 78.47 with the
        C = 0.5 (CRFsuite's c2 = 1) of ``crf.md``.
    l1_ratio : float in [0, 1], default=0.0
        The L1 share of the prior (the elastic-net mixing of
        ``LogisticRegression``): 0 is the Gaussian prior, 1 pure L1.  Above 0
        the model is fitted by OWL-QN and is sparse; the exp losses take only
        0 (their objective is a logarithm, see above).  Not tuned here (0:
        the Gaussian prior of the CRFsuite comparison).
    all_possible_states : bool, default=False
        As in sklearn-crfsuite (CRFsuite's ``feature.possible_states``):
        False gives weights only to the (feature, label) pairs seen together
        in training, the others staying 0 in ``coef_`` (CRFsuite's default
        model: on CoNLL-2000 about 7x fewer weights, so each L-BFGS iteration
        costs less and the model is sparse); True learns every pair (an
        unseen pair can then get a negative weight).  Transitions are always
        all learned (L^2 of them).  CRFsuite's default, chosen for speed;
        not compared for F1 at equal iterations here.
    order : {1, 2}, default=1
        Order of the linear chain: 2 adds label-trigram weights
        (``trigram_coef_``); forward-backward (and the pointwise losses'
        conditioned expectations) then run over label pairs in log space,
        O(T L^3) per sentence.
    max_iter : int, default=1000
        L-BFGS iterations at most: a cap, the fit normally stops earlier on
        ``delta`` (on the benchmark corpora and features after 227
        iterations on CoNLL-2000 and 369 on CoNLL-2002 Spanish; at 100, the
        former default and the budget of the CRFsuite comparison,
        ``crf.md``, the objective was still 2.3% and 17% above where it
        ends); the exp losses need about 500 (``crf_losses.md``).
    tol : float, default=1e-5
        L-BFGS stops when the largest gradient component is below ``tol``
        (scipy's ``gtol``).  Not tuned here (``delta`` stops the benchmark
        fits first).
    delta : float, default=1e-5
        L-BFGS also stops when the objective fell by less than ``delta``
        (relative) over the last ``period`` iterations: CRFsuite's
        ``delta`` and ``period`` and their defaults, by which the models of
        both libraries converge alike; 0 turns it off.
    period : int, default=10
        The iterations over which ``delta`` is measured.
    n_jobs : int or None, default=None
        Threads over blocks of sentences for the objective and gradient
        (and over ranges of features for its emission block), for
        ``predict_marginals`` and for ``predict``, ``predict_kbest`` and
        ``score`` (the kernels release the GIL).  The blocks
        and their order do not depend on ``n_jobs``, so neither does the
        result.  None means 1 unless in a ``joblib.parallel_config``
        context; -1 means all CPUs.
    verbose : int, default=0
        Print the iteration, objective, gradient norm and time.
    warm_start : bool, default=False
        Start ``fit`` from the current weights (same labels and features).

    Attributes
    ----------
    classes_, coef_, transition_coef_, start_coef_, end_coef_, n_features_in_
        As for :class:`~sklstruct.StructuredPerceptronTagger` (``trigram_coef_``
        is None unless ``order=2``).
    n_iter_ : int
        L-BFGS iterations of the last fit.
    objective_ : float
        Final objective (its logarithm for the exp losses, see above).
    history_ : list of dict
        Per iteration: ``iteration``, ``objective``, ``grad_norm``, ``seconds``.

    References
    ----------
    .. [1] Y. Altun, M. Johnson and T. Hofmann, "Investigating Loss Functions
       and Optimization Methods for Discriminative Learning of Label
       Sequences", EMNLP 2003.
    .. [2] J. Lafferty, A. McCallum and F. Pereira, "Conditional Random
       Fields: Probabilistic Models for Segmenting and Labeling Sequence
       Data", ICML 2001.
    .. [3] S. Kakade, Y. W. Teh and S. Roweis, "An Alternate Objective
       Function for Markovian Fields", ICML 2002.
    .. [4] G. Andrew and J. Gao, "Scalable Training of L1-Regularized
       Log-Linear Models", ICML 2007.
    """

    _parameter_constraints = {
        "loss": [StrOptions(set(LOSSES))],
        "C": [Interval(Real, 0, MAX_C, closed="right")],
        "l1_ratio": [Interval(Real, 0, 1, closed="both")],
        "all_possible_states": ["boolean"],
        "order": [Interval(Integral, 1, 2, closed="both")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "delta": [Interval(Real, 0, None, closed="left")],
        "period": [Interval(Integral, 1, None, closed="left")],
        "n_jobs": N_JOBS_CONSTRAINT,
        "verbose": ["verbose"],
        "warm_start": ["boolean"],
    }

    def __init__(self, loss="log", C=1.0, l1_ratio=0.0, all_possible_states=False, order=1,
                 max_iter=1000, tol=1e-5, delta=1e-5, period=10, n_jobs=None, verbose=0,
                 warm_start=False):
        self.loss = loss
        self.C = C
        self.l1_ratio = l1_ratio
        self.all_possible_states = all_possible_states
        self.order = order
        self.max_iter = max_iter
        self.tol = tol
        self.delta = delta
        self.period = period
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.warm_start = warm_start

    # -- the objective ----------------------------------------------------------------
    def _objective(self, theta, shards, meta):
        """(value, gradient) of the objective at theta: the emission weights
        (all of W (F, L) raveled, or those of the observed states), then P
        raveled.  ``shards`` computes the values and the loss's gradient over
        the training sentences (a :class:`._crf_shard.CRFShard`, or the
        partitions of Dask bags); ``meta`` has their count, ``lengths`` and
        ``offsets``, from which the loss weighs them."""
        C, loss = float(self.C), LOSSES[self.loss]
        l2 = 1.0 - float(self.l1_ratio)      # the L1 term is OWL-QN's (see _minimise)
        reg = 0.5 * l2 * float(theta @ theta)
        if loss.values_first:               # values first, then the gradient with their weights
            v = shards.values(theta, loss.pointwise)
            value, scale = loss.value(v, C, reg)
            _, grad = shards.values(theta, loss.pointwise, loss.weights(C, meta, v, reg))
        else:
            v, grad = shards.values(theta, loss.pointwise, loss.weights(C, meta))
            value, scale = loss.value(v, C, reg)
        if l2:
            grad += (scale * l2) * theta
        return value, grad

    def _n_chain(self, L):
        return L + 2 + (L * L if self.order == 2 else 0)

    def _states(self, seen, W_warm=None):
        """The emission weights learned: None (all, ``all_possible_states``)
        or sorted flat indices into W (F, L): the (feature, label) pairs
        ``seen`` in training (sorted and distinct) and, warm, the nonzero ones
        of ``W_warm``."""
        if self.all_possible_states:
            return None
        if W_warm is not None:
            seen = np.union1d(seen, np.flatnonzero(W_warm))
        return seen                     # (sorted and distinct already)

    def _local_problem(self, X, y, warm):
        """(shards, meta, classes, n_features, states) of a fit on lists."""
        if warm:
            data = as_stacked(X, self.n_features_in_)
            codes = self._encode(y, data, self.classes_)
            classes = self.classes_
        else:
            data = as_stacked(X)
            classes, codes = self._labels(y, data)
        L = len(classes)
        states = None
        if not self.all_possible_states:
            states = self._states(seen_states(data, codes, L), self.coef_.T if warm else None)
        shard = CRFShard(data, codes, L, self._n_chain(L), states, n_jobs=self.n_jobs)
        return shard, data, classes, data.n_features, states

    def _chain_states(self, data, codes, n_labels):
        """The chain weights learned, as sorted flat indices into the packed
        chain P (:func:`sklstruct.chain.pack_chain`), the others staying 0;
        None (here) learns them all.  A subclass may learn fewer (CRFsuite's
        model: the label bigrams seen in training, no start or end weights)."""
        return None

    def _optimizer_options(self):
        """Keyword arguments of the optimiser's stopping tests."""
        return {"gtol": float(self.tol), "ftol": 64 * np.finfo(float).eps,
                "past": int(self.period) if self.delta > 0 else 0, "delta": float(self.delta)}

    @staticmethod
    def _full_theta(theta, n_features, n_labels, states):
        """theta in the layout [W (F, L) raveled, P raveled]."""
        if states is None:
            return theta
        W = np.zeros(n_features * n_labels)
        W[states] = theta[:len(states)]
        return np.concatenate([W, theta[len(states):]])

    # -- fitting --------------------------------------------------------------------------
    @publishes
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Minimise the regularised loss over the sentences by L-BFGS.

        With ``dask.bag`` collections (and an active ``dask.distributed``
        client) the objective is summed over the partitions on the workers
        that hold them; the model is the serial one to rounding (see the
        user guide's page on Dask).

        Parameters
        ----------
        X : list of {sparse matrix, ndarray} of shape (n_tokens_i, n_features), or dask.bag.Bag
        y : list of array-like of shape (n_tokens_i,), or dask.bag.Bag
            A bag must have the partitions of ``X``.

        Returns
        -------
        self : object
        """
        warm = self.warm_start and hasattr(self, "coef_")
        fitted = 2 if getattr(self, "trigram_coef_", None) is not None else 1
        if warm and fitted != self.order:
            raise ValueError(f"order: cannot change order from {fitted} to {self.order} when "
                             "continuing training; refit")
        if self.l1_ratio > 0 and LOSSES[self.loss].values_first:
            raise ValueError(f"l1_ratio: the {self.loss!r} loss takes only l1_ratio=0 (its "
                             f"objective is a logarithm); got {self.l1_ratio!r}")
        chain = None
        if is_bag(X) or is_bag(y):
            from ._crf_dask import bag_problem       # dask is optional: imported when used
            shards, meta, classes, F, states = bag_problem(self, X, y, warm)
        else:
            shards, meta, classes, F, states = self._local_problem(X, y, warm)
            chain = self._chain_states(shards.data, shards.codes, len(classes))
        try:
            return self._minimise(shards, meta, classes, F, states, warm, chain)
        finally:
            if hasattr(shards, "close"):
                shards.close()

    def _minimise(self, shards, meta, classes, F, states, warm, chain=None):
        """L-BFGS (OWL-QN with an L1 term) from zero (or, warm, the current
        weights) on the objective over ``shards``; publishes the result.
        ``chain``: the chain weights learned (:meth:`_chain_states`)."""
        L = len(classes)
        n_w = F * L if states is None else len(states)
        n_p = self._n_chain(L) * L
        if warm:
            W0 = self.coef_.T.reshape(-1)
            P0 = pack_chain(self.transition_coef_, self.start_coef_, self.end_coef_,
                            self.trigram_coef_).ravel()
            theta0 = np.concatenate([W0 if states is None else W0[states],
                                     P0 if chain is None else P0[chain]])
        else:
            theta0 = np.zeros(n_w + (n_p if chain is None else len(chain)))
        history, tic = [], time.perf_counter()
        last = {}

        def full(theta):
            """theta with every chain weight (those not learned at 0)."""
            if chain is None:
                return theta
            P = np.zeros(n_p)
            P[chain] = theta[n_w:]
            return np.concatenate([theta[:n_w], P])

        def fun(theta):
            value, grad = self._objective(full(theta), shards, meta)
            if chain is not None:
                grad = np.concatenate([grad[:n_w], grad[n_w:][chain]])
            if not (np.isfinite(value) and np.isfinite(grad).all()):
                raise ValueError("the objective or its gradient is not finite; scale the "
                                 "features down or lower C")
            last.update(value=value, grad_norm=float(np.linalg.norm(grad)))
            return value, grad

        l1 = float(self.l1_ratio)

        def callback(theta):
            value = last["value"] + (l1 * float(np.abs(theta).sum()) if l1 else 0.0)
            record = {"iteration": len(history) + 1, "objective": value,
                      "grad_norm": last["grad_norm"], "seconds": time.perf_counter() - tic}
            history.append(record)
            report(self.verbose, "Iteration", record["iteration"],
                   [("objective", record["objective"]),
                    ("gradient norm", f"{record['grad_norm']:.3g}")], record["seconds"])

        if l1 > 0:
            result = owlqn(fun, theta0, l1, max_iter=int(self.max_iter), callback=callback,
                           **self._optimizer_options())
        else:
            result = lbfgs(fun, theta0, max_iter=int(self.max_iter), callback=callback,
                           **self._optimizer_options())
        if not result.success:
            hint = ("increase max_iter" if result.nit >= self.max_iter
                    else "the line search failed: scale the features (or C) down")
            warnings.warn(f"L-BFGS stopped after {result.nit} iterations without converging "
                          f"({result.message}); {hint}", ConvergenceWarning)
        self._set_theta(full(result.x), classes, F, states)
        self.n_iter_ = int(result.nit)
        self.objective_ = float(result.fun)
        self.history_ = history
        return self

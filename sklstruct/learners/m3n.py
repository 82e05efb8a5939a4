"""Max-margin Markov networks trained by stochastic gradient descent with
stochastic meta-descent step sizes (Yu & Lam, sections 2-3), or by SMO on
the dual (the paper's baseline).  The solvers are strategies in
``_m3n_solvers.py``."""
import inspect
import threading
import time
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._docstrings import fill_doc
from .._progress import progress_line
from .._chain import ChainData, ChainWeights
from .._publish import Cache, reads_model
from .._kernel_scores import KERNELS, KernelFunction, KernelState, kernel_emissions
from .._validation import MAX_C
from ..chain import as_stacked, pack_chain, unpack_chain
from ._base import ChainLearner, _identity, check_same_training_set
from ._m3n_sgd import SCHEDULES, hinge_losses
from ._m3n_solvers import rows_of, solver_for


@fill_doc
class M3NTagger(ChainLearner):
    """Max-margin Markov network (M3N) for a linear chain, trained by SGD or on its dual.

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
    held with scalar factors (see ``learners/_m3n_sgd.pyx``), so a step costs the
    features of the tokens y* gets wrong, and the epoch runs in Cython
    without the GIL.

    ``solver="smo"`` optimises the same problem through its dual (eq. 5)
    by the paper's baseline, the structured SMO of Taskar et al.: the dual
    variables alpha_i(y) of each example (one per label sequence, summing to
    C) are held by their node and edge marginals (on a chain, any
    non-negative consistent marginals are those of some alpha_i >= 0).  A
    step moves mass from the sequence through positive marginals with the
    lowest loss-augmented score to the loss-augmented best one (the pair
    that violates the KKT conditions most), by the exact line search of the
    dual, clipped where a marginal it decreases reaches 0.  The
    steps on one example repeat until its gap is at most ``tol``; each
    updates its tokens' scores through the Gram matrix of its own tokens.
    It supports every kernel, first-order chains, and holds n_tokens x
    n_labels^2 edge marginals (CoNLL-2000: 0.8 GB).
    ``solver="working_set"`` solves the same dual by the n-slack
    working-set method of :class:`~sklstruct.SDMTagger` with ``k=1``: each
    example's working set collects its loss-augmented best sequences, and
    SMO runs on it (explicit dual variables; linear kernel, either order).

    Kernels (eqs. 6-8) act between the feature vectors of two tokens:
    ``kernel="poly"`` is ``(gamma <a, b> + coef0) ** degree`` and ``"tanh"``
    is ``tanh(gamma <a, b> + coef0)``; the transitions stay explicit.  The
    emission score of label y at a token is ``sum_j dual_coef_[j, y] k(x,
    x_j)`` over the support tokens ``support_vectors_`` (the training tokens
    some step got wrong), so training and prediction cost time in proportion
    to the support set, per token.  ``kernel="linear"`` keeps an explicit
    weight matrix instead and costs only the token's features.  Which to use:
    an exact kernel while the support stays in the thousands (up to a few
    thousand training sentences); beyond that, an explicit approximation
    per token in a Pipeline, ``TokenTransformer(Nystroem(...))`` or
    ``TokenTransformer(PolynomialCountSketch(...))`` before the linear
    model, whose cost does not grow with the data but whose kernel is only
    approximated (measured in ``benchmarks/bench_m3n.py``).

    Parameters
    ----------
    C : float, default=1.0
        Weight of the hinge losses against 1/2 ||w||^2 (eq. 4).  Not tuned
        here: every M3N benchmark runs C = 1 (``benchmarks/results/m3n_*.md``).
    solver : {"sgd", "smo", "working_set"}, default="sgd"
        Stochastic gradient descent (the paper's method), structured SMO on
        the factored dual (its baseline), or the working-set dual method.
        The paper's method, and the best chunk F1 of the three on CoNLL-2000
        (93.07 against 92.48 and 92.44, in the least time;
        ``m3n_linear.md``), though not the lowest objective.
    learning_rate : {"smd", "optimal", "constant", "invscaling"}, default="smd"
        Step sizes of ``solver="sgd"``: "smd" adapts them (eqs. 17-18) from
        ``eta0``; "optimal" is ``1 / (lam (t0 + t))`` with scikit-learn's
        heuristic t0 (as in ``SGDClassifier``); "constant" is ``eta0``;
        "invscaling" is ``eta0 / t ** power_t``.  Every step size is capped at
        ``1 / (2 lam)``, where the step would overshoot the regulariser.
    eta0 : float, default=0.03
        Initial ("smd") or constant step size.  Not tuned here beyond the
        step-size search on 1,000 CoNLL-2000 sentences described on the
        benchmarks page (no setting closed the gap to SMO's objective).
    mu : float, default=1e-4
        SMD's meta-learning rate.  From the benchmarks: on CoNLL-2000
        ``mu=1e-4`` gives 93.07 chunk F1 against 92.82 for ``mu=3e-5``,
        whose objective is lower (``m3n_linear.md``).
    smd_lambda : float, default=0.99
        SMD's decay factor lambda, in (0, 1]: the time scale of the
        dependence of w on past step sizes.  0 (no memory) is refused: the
        scaled form of the SMD vector ``v = b V + c w`` divides by ``b``, which
        lambda multiplies at every step.  Not tuned here.
    power_t : float, default=0.5
        Exponent of "invscaling" (scikit-learn's ``SGDClassifier`` default).
    kernel : {"linear", "poly", "tanh"}, default="linear"
        The linear kernel is the fast one: the quadratic kernel adds 0.5-0.8
        NP F1 at 400x-2,500x the training time (1,000-4,000 sentences,
        ``m3n_kernels.md``).
    degree : int, default=2
        Degree of "poly".
    gamma : float, default=1.0
        The scale s of eqs. 7-8.
    coef0 : float, default=1.0
        The offset r of eqs. 7-8.  The defaults give the quadratic kernel
        ``(<a, b> + 1) ** 2`` of the paper's Tables 2-3; its neural kernel is
        ``kernel="tanh", gamma=0.1, coef0=0``.
    max_iter : int, default=20
        Passes over the training sentences.  Not tuned here: the kernel
        benchmarks run 20 passes, the linear ones 100.
    tol : float, default=1e-3
        The dual solvers' KKT tolerance on each example: its steps stop when
        the loss-augmented scores of the sequences it may move mass between
        differ by at most ``tol``.  Not tuned here.
    max_smo_iter : int or None, default=None
        The dual solvers' cap on SMO steps per example and visit; None is 3
        for ``solver="smo"`` (of 1, 2, 3, 10, 30 and 1000, the cap that
        lowered the objective fastest in time on 1,000 CoNLL-2000 sentences: more steps on
        one example zig-zag between sequences of nearly equal scores) and
        1000 for ``solver="working_set"``.
    average : bool, default=False
        Predict with the average of the iterates (Polyak-Ruppert averaging;
        kept lazily, at no cost per step beyond the update itself), with
        ``solver="sgd"``; the working-set dual averages its weights over the
        examples visited, as :class:`~sklstruct.SDMTagger` does;
        ``solver="smo"`` refuses it (it predicts with the weights of its dual
        variables).
    shuffle : bool, default=True
        Visit the sentences in a new random order each pass.
    random_state : int, RandomState instance or None, default=None
    verbose : int, default=0
        Print the objective J, the step sizes, mistakes and time of each pass.
    warm_start : bool, default=False
        Let ``fit`` continue from the current weights and step size (SGD; any
        data) or dual variables (the dual solvers; the same training set and
        C).
    {order}

    {n_jobs}

    Attributes
    ----------
    classes_ : ndarray of labels
    coef_ : ndarray of shape (n_labels, n_features)
        Linear kernel only.
    support_vectors_ : sparse matrix of shape (n_support, n_features)
        Other kernels: the support tokens' feature vectors.
    dual_coef_ : ndarray of shape (n_support, n_labels)
        Other kernels: their coefficients per label.
    support_ : ndarray of shape (n_support,)
        Other kernels: their rows in the stacked training tokens.
    n_support_ : int
        Other kernels: the number of support tokens.
    transition_coef_ : ndarray of shape (n_labels, n_labels)
    start_coef_, end_coef_ : ndarray of shape (n_labels,)
    trigram_coef_ : ndarray of shape (n_labels, n_labels, n_labels) or None
    n_features_in_ : int
    n_iter_ : int
    objective_curve_ : ndarray of shape (n_iter,)
        J(w) of eq. 4 for the weights predicted with, after each pass.
    eta_ : float
        The step size reached (``solver="sgd"``).
    dual_objective_ : float
        The dual solvers: the dual objective of eq. 5, a lower bound on J.
    kkt_gap_ : float
        ``solver="smo"``: the largest KKT gap met in the last pass (0 at the
        optimum).
    history_ : list of dict
        Per pass: objective, mean hinge loss met during the pass, step-size
        range, mistakes, updates (``smo_steps`` for SMO), seconds (training
        only) and objective_seconds (the extra pass that evaluates J).

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklstruct import M3NTagger, SequenceVectorizer
    >>> from sklstruct.datasets import make_chunking_corpus
    >>> X, y = make_chunking_corpus(300, random_state=0)
    >>> model = make_pipeline(SequenceVectorizer(templates=("word", "pos"), window=1),
    ...                       M3NTagger(max_iter=5, random_state=0))
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
       NIPS 2003 (the factored dual and structured SMO).
    .. [4] L. Bottou, "Stochastic Learning", Advanced Lectures on Machine
       Learning, 2004 (the "optimal" schedule).
    """

    _parameter_constraints = {
        **ChainLearner._parameter_constraints,
        "C": [Interval(Real, 0, MAX_C, closed="right")],
        "solver": [StrOptions({"sgd", "smo", "working_set"})],
        "learning_rate": [StrOptions(set(SCHEDULES))],
        "eta0": [Interval(Real, 0, 1e6, closed="neither")],
        "mu": [Interval(Real, 0, 1e6, closed="left")],
        "smd_lambda": [Interval(Real, 0, 1, closed="right")],
        "power_t": [Interval(Real, 0, 10, closed="both")],
        "kernel": [StrOptions({"linear", *KERNELS})],
        "degree": [Interval(Integral, 1, 10, closed="both")],
        "gamma": [Interval(Real, 0, 1e6, closed="neither")],
        "coef0": [Interval(Real, -1e6, 1e6, closed="both")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "max_smo_iter": [Interval(Integral, 1, 10**9, closed="both"), None],
    }
    _parameter_constraints.pop("k")

    #: The solvers' state (see ``learners/_m3n_solvers.py``) beyond the base's.
    _TRAINING_STATE = ChainLearner._TRAINING_STATE + (
        "_solver", "_sgd", "_aux", "_smd", "_support", "_support_vectors", "_beta", "_edge",
        "_C", "_dual", "_train_labels", "_train_lengths")

    def __init__(self, C=1.0, solver="sgd", learning_rate="smd", eta0=0.03, mu=1e-4,
                 smd_lambda=0.99, power_t=0.5, kernel="linear", degree=2, gamma=1.0,
                 coef0=1.0, max_iter=20, tol=1e-3, max_smo_iter=None, average=False,
                 shuffle=True, random_state=None, verbose=0, warm_start=False, order=1, n_jobs=None):
        self.C = C
        self.solver = solver
        self.learning_rate = learning_rate
        self.eta0 = eta0
        self.mu = mu
        self.smd_lambda = smd_lambda
        self.power_t = power_t
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.max_iter = max_iter
        self.tol = tol
        self.max_smo_iter = max_smo_iter
        self.average = average
        self.shuffle = shuffle
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.order = order
        self.n_jobs = n_jobs

    # -- state ---------------------------------------------------------------------
    def _kernel_params(self):
        """(kernel, gamma, coef0, degree) of the parameters; the fitted model
        keeps its own in ``_kernel``, which training (checked equal when
        continuing), prediction and the objective use."""
        return (self.kernel, float(self.gamma), float(self.coef0), int(self.degree))

    def _weight_features(self, data):
        return 1 if self.kernel != "linear" else data.n_features

    def _new_state(self, data, codes):
        solver = solver_for(self.solver, self.kernel)
        for name in ("kkt_gap_", "dual_objective_", "eta_"):
            self.__dict__.pop(name, None)       # of an earlier fit with another solver
        return {"_solver": solver, "_kernel": self._kernel_params(),
                "objective_curve_": np.zeros(0), **solver.new_state(self, data, codes)}

    def _check_warm(self, data, codes):
        if self._solver.name != self.solver:
            raise ValueError(f"solver: cannot change solver from {self._solver.name!r} to "
                             f"{self.solver!r} when continuing training; refit")
        if self._kernel != self._kernel_params():
            raise ValueError(f"kernel: cannot change the kernel from {self._kernel} to "
                             f"{self._kernel_params()} when continuing training; refit")
        self._solver.check_warm(self, data, codes)

    # -- one pass ------------------------------------------------------------------
    def _epoch(self, data, codes, order, rng):
        return self._solver.epoch(self, data, codes, order)

    def _after_epoch(self, data, codes):
        tic = time.perf_counter()
        sq, hinge = self._objective_parts(data, codes)
        objective = 0.5 * sq + float(self.C) * hinge
        if not np.isfinite(objective):
            raise ValueError("training produced non-finite weights or scores (objective "
                             f"{objective}); scale the features down, lower gamma or degree, "
                             "or lower eta0")
        self.objective_curve_ = np.append(self.objective_curve_, objective)
        record = {"objective": objective, "objective_seconds": time.perf_counter() - tic}
        record.update(self._solver.after_epoch(self, codes, sq))
        return record

    def _describe(self, r):
        if "smo_steps" in r:
            fields = [("SMO steps", r["smo_steps"])]
            if "kkt_gap" in r:
                fields.append(("KKT gap", f"{r['kkt_gap']:.3g}"))
        else:
            fields = [("eta", f"{r['eta_min']:.3g}..{r['eta_max']:.3g}"), ("updates", r["updates"])]
        if "n_support" in r:
            fields.append(("support tokens", r["n_support"]))
        fields = [("objective", r["objective"])] + fields + [
            ("mistakes", f"{r['mistakes']}/{r['sentences']}"),
            ("objective seconds", f"{r['objective_seconds']:.3f}")]
        return progress_line("Epoch", r["epoch"], fields, r["seconds"])

    # -- the weights ---------------------------------------------------------------
    def _model(self):
        """(W or support coefficients, P): the weights to predict with.  W is
        (n_features, L) for the linear kernel; with another kernel it is the
        (n_training_tokens, L) coefficients of the support tokens."""
        return self._solver.weights(self)

    @reads_model
    def objective(self, X, y):
        """J(w) of eq. 4 on (X, y) for the weights predicted with:
        ``1/2 ||w||^2 + C sum_i l_i(w)`` (for a kernel model, on its training set
        only)."""
        check_is_fitted(self)
        self._check_resumable()
        data = as_stacked(X, self.n_features_in_)
        codes = self._encode(y, data, self.classes_)
        if self._kernel[0] != "linear":
            check_same_training_set(self, data, codes, "the objective of a kernel model")
        sq, hinge = self._objective_parts(data.chain_data(), codes)
        return 0.5 * sq + float(self.C) * hinge

    def _objective_parts(self, data, codes):
        """(||w||^2, sum_i l_i(w)) for the weights predicted with."""
        W, P = self._model()
        if self._kernel[0] == "linear":
            E = None
            sq = np.vdot(W, W)
        else:
            E = kernel_emissions(data, self._support, W, data, KernelFunction(*self._kernel))
            sq = np.vdot(W, E)
        return (float(sq + np.vdot(P, P)),
                float(_hinge_losses(data, codes, W, P, E, self._weights.order).sum()))

    def _prediction_weights(self, final=False):
        return self._model()

    def _publish(self, final=False):
        # never in place: the objective reads the sums after fit
        if self._kernel[0] == "linear":
            return super()._publish()
        beta, P = self._model()
        rows = np.flatnonzero(self._support.is_sup)
        if not (np.isfinite(beta).all() and np.isfinite(P).all()):
            raise ValueError("training produced non-finite weights; scale the features "
                             "down, lower gamma or eta0")
        self._new_weights()
        self.support_ = rows
        self.support_vectors_ = self._support_vectors
        self.dual_coef_ = beta[rows]
        self.n_support_ = len(rows)
        (self.transition_coef_, self.start_coef_, self.end_coef_,
         self.trigram_coef_) = unpack_chain(P)
        # the support index, built by the first prediction of this model (a
        # pickle or a copy keeps an empty cache)
        self._index = Cache()

    # -- prediction with support tokens --------------------------------------------
    def _support_index(self):
        """(ChainData of the support vectors, KernelState with all of them in
        the index), built once per fitted model."""
        def build():
            sv = self.support_vectors_
            data = ChainData(sv.indptr, sv.indices, sv.data, [0, sv.shape[0]], sv.shape[1])
            ks = KernelState(sv, len(self.classes_), False, False)
            ks.n_sup[:] = np.diff(ks.colptr)
            ks.is_sup[:] = 1
            return data, ks
        return self._index.get(build)

    def _emissions(self, data):
        if self._kernel[0] == "linear":
            return super()._emissions(data)
        P = pack_chain(self.transition_coef_, self.start_coef_, self.end_coef_,
                       self.trigram_coef_)
        if self.n_support_ == 0:
            return np.zeros((data.matrix.shape[0], len(self.classes_))), P
        sv_data, ks = self._support_index()
        c, offsets = data.chain_data(), data.offsets
        E = np.empty((offsets[-1], len(self.classes_)))
        ranges = self._prediction_blocks(offsets)
        scratch = threading.local()
        kernel = KernelFunction(*self._kernel)

        def block(a, b):
            # each thread of each call its own scratch (the index arrays are
            # shared, read only): the cached index's own scratch would be shared
            # by callers' threads predicting at once, with the GIL released
            mine = getattr(scratch, "ks", None)
            if mine is None:
                mine = scratch.ks = ks.thread_copy()
            E[offsets[a]:offsets[b]] = kernel_emissions(
                sv_data, mine, self.dual_coef_, rows_of(c, slice(offsets[a], offsets[b])),
                kernel)
        self._run(block, ranges)
        return E, P

    def _decode(self, data, then=None):
        if self._kernel[0] == "linear":
            return super()._decode(data, then)
        return self._decode_emissions(*self._emissions(data), data.offsets, then)


class M3NSGDTagger(M3NTagger):
    """Deprecated alias of :class:`M3NTagger` (the same parameters and model).

    It was named when SGD was its only solver; it trains by structured SMO
    and the working-set dual too (``solver=``).  Constructing it warns
    (``FutureWarning``); the alias will be removed.
    """

    def __init__(self, *args, **kwargs):
        warnings.warn("M3NSGDTagger is deprecated in favour of M3NTagger, the same "
                      "estimator (solver= picks 'sgd', 'smo' or 'working_set'); the alias "
                      "will be removed", FutureWarning, stacklevel=2)
        super().__init__(*args, **kwargs)

    # get_params and clone read the parameters from the signature
    __init__.__signature__ = inspect.signature(M3NTagger.__init__)


def _hinge_losses(data, codes, W, P, E, order):
    """Per-sentence hinge losses for explicit weights W, or for the emission
    scores E of every token (kernel models: decoded as the identity matrix's
    rows times W = E)."""
    if E is not None:
        W, data = E, ChainData(*_identity(E.shape[0]), data.offsets, E.shape[0])
    model = ChainWeights(W.shape[0], W.shape[1], False, order)
    model.W[...] = W
    model.P[...] = P
    return hinge_losses(data, codes, model)

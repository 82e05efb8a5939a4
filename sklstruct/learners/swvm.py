"""The structured weighted violation MIRA (Ringel, Dror & Reichart, Figure 1)."""
from numbers import Integral, Real

from sklearn.utils._param_validation import Interval, StrOptions

from .._docstrings import fill_doc
from .._chain import COSTS
from .._validation import MAX_C
from ._families import OnlineLearner
from ._online import GAMMAS


@fill_doc
class SWVMTagger(OnlineLearner):
    """Structured weighted violation MIRA (SWVM) for a linear chain.

    k-best MIRA whose constraint for each of the ``k`` best sequences ``y*``
    by score (Figure 1) uses the gamma-weighted sum of the single-position
    template differences of :class:`~sklstruct.SWVPTagger` instead of
    ``dF(y*)``::

        min_w 1/2 ||w - w_t||^2 + C xi
        s.t.  w . sum_J gamma(m^J) [F(x, y) - F(x, m^J)] >= L(y, y*) - xi

    for the k sequences, solved exactly (to ``tol``) by the shared SMO as
    :class:`~sklstruct.KBestMIRATagger` solves its own; the gammas are set
    by ``gamma`` and ``aggressive`` as for SWVP.  With one differing position
    the constraint is MIRA's.

    Parameters
    ----------
    k : int, default=5
        Best sequences (constraints) per example.
    C : float, default=0.1
        Slack weight: bounds the total step of an example.
    gamma : {"uniform", "wm", "softmin", "optimization"}, default="optimization"
        The SETGAMMA function (section 3).
    aggressive : bool, default=True
        Drop non-violating templates before weighting.

        The defaults of ``k``, ``C``, ``gamma`` and ``aggressive`` are the
        configuration that the 5-fold protocol of the paper's Appendix C
        chose on development data for both CoNLL-2000 and CoNLL-2002
        Spanish (``benchmarks/bench_swvm.py``: aggressive, K = 5, C = 0.1;
        "optimization" on CoNLL-2000, "softmin" within 0.1 dev F1 of it on
        Spanish); with them ``SWVMTagger()`` is ahead of
        ``KBestMIRATagger()`` on both (``benchmarks/bench_defaults.py``).
    tol : float, default=1e-6
        KKT tolerance of the per-example solver.  Not tuned here.
    max_smo_iter : int, default=1000
        Cap on the solver's steps per example.  Not tuned here.
    cost : {"hamming", "zero_one"}, default="hamming"
        The cost ``L(y, y*)``; the paper's (Hamming) loss, not tuned here.
    max_iter, average, shuffle, random_state, verbose, warm_start
        As for :class:`~sklstruct.KBestMIRATagger` (averaging as in
        Algorithm 2, line 8).

    {order}

    {n_jobs}

    Attributes
    ----------
    classes_, coef_, transition_coef_, start_coef_, end_coef_, n_features_in_, n_iter_, history_
        As for :class:`~sklstruct.KBestMIRATagger`.

    References
    ----------
    .. [1] T. Ringel, R. Dror and R. Reichart, "The Structured Weighted
       Violation MIRA", arXiv:1705.04065, 2017.
    .. [2] R. Dror and R. Reichart, "The Structured Weighted Violations
       Perceptron Algorithm", EMNLP 2016.
    .. [3] K. Crammer, R. McDonald and F. Pereira, "Scalable Large-Margin Online
       Learning for Structured Classification", NIPS Workshop on Learning With
       Structured Outputs, 2005.
    """

    _parameter_constraints = {
        **OnlineLearner._parameter_constraints,
        "C": [Interval(Real, 0, MAX_C, closed="right")],
        "gamma": [StrOptions(set(GAMMAS))],
        "aggressive": ["boolean"],
        "tol": [Interval(Real, 0, None, closed="left")],
        "max_smo_iter": [Interval(Integral, 1, None, closed="left")],
        "cost": [StrOptions(set(COSTS))],
    }

    def __init__(self, k=5, C=0.1, gamma="optimization", aggressive=True, tol=1e-6,
                 max_smo_iter=1000, cost="hamming", max_iter=10, average=True, shuffle=True,
                 random_state=None, verbose=0, warm_start=False, order=1, n_jobs=None):
        self.k = k
        self.C = C
        self.gamma = gamma
        self.aggressive = aggressive
        self.tol = tol
        self.max_smo_iter = max_smo_iter
        self.cost = cost
        self.max_iter = max_iter
        self.average = average
        self.shuffle = shuffle
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.order = order
        self.n_jobs = n_jobs

    def _update_params(self):
        return {"rule": "swvm", "C": float(self.C), "gamma": self.gamma,
                "aggressive": bool(self.aggressive), "cost": COSTS[self.cost],
                "tol": float(self.tol), "max_smo_steps": int(self.max_smo_iter)}

"""k-best passive-aggressive and restricted PA (Mancev & Todorovic, section 4.4, eqs. 24-28)."""
from numbers import Real

from sklearn.utils._param_validation import Interval, StrOptions

from .._docstrings import fill_doc
from .._chain import COSTS
from .._validation import MAX_C
from ._families import OnlineLearner


@fill_doc
class PassiveAggressiveTagger(OnlineLearner):
    """k-best passive-aggressive (PA) and restricted PA (RPA) for a linear chain.

    For each sentence, take its ``k`` loss-augmented best sequences
    ``B^k_w`` (eq. 12: the largest ``w.F(x, y) + L(y^n, y)``) and, for each in
    turn, apply the closed-form PA step with the weights left by the previous
    one (Mancev & Todorovic, *k-Best Max-margin Approaches for Sequence
    Labeling*, eqs. 24-25)::

        w <- w + delta dF(y),   delta = min(max(0, l(w; y)) / ||dF(y)||^2, C),
        l(w; y) = L(y^n, y) - w . dF(y).

    With ``restricted=True`` a sequence is updated only if it is in
    ``A_w`` (eq. 27): its loss is at least that of the prediction
    ``y_hat = argmax w.F(x, y)``, recomputed after every change (eq. 28,
    Algorithm 4); this is the variant with the prediction-loss bound of
    Corollary 1.  ``k=1`` is the classic 1-best PA (eq. 21).  Squared norms
    ``||dF||^2`` are exact: repeated features and label differences at several
    positions are summed before squaring.

    With ``loss_augmented=False`` the k sequences are the plain k best by
    score instead (the prediction-based PA of Crammer et al. 2006, section 8,
    which CRFsuite's ``pa`` trainer uses): fewer updates per epoch, often
    faster to converge; the default follows the paper's eq. 12.

    Parameters
    ----------
    k : int, default=1
        Number of loss-augmented best sequences per example.
    C : float, default=1.0
        Cap on each step (aggressiveness).
    restricted : bool, default=False
        Restricted PA (RPA, eq. 28).
    cost : {"hamming", "zero_one"}, default="hamming"
        The cost ``L(y^n, y)``: number of wrong tokens, or 1 for any wrong sequence.
    loss_augmented : bool, default=True
        Update on the loss-augmented k best (eq. 12) or, if False, on the k
        best by score.
    max_iter : int, default=10
        Number of epochs.
    average : bool, default=True
        Predict with the average of the weights after every example.
    shuffle : bool, default=True
        Visit the sentences in a new random order each epoch.
    random_state : int, RandomState instance or None, default=None
    verbose : int, default=0
        Print violations, updates and time after each epoch.
    warm_start : bool, default=False
        Let ``fit`` continue from the current weights.

    {order}

    {n_jobs}

    Attributes
    ----------
    classes_, coef_, transition_coef_, start_coef_, end_coef_, n_features_in_, n_iter_
        As for :class:`~sklstruct.StructuredPerceptronTagger`.
    history_ : list of dict
        Per epoch: ``mistakes`` (sentences whose loss-augmented best sequence
        was not the gold one), ``updates`` (non-zero steps), ``seconds``.

    References
    ----------
    .. [1] D. Mančev and B. Todorović, "k-Best Max-margin Approaches for Sequence
       Labeling", Computer Science and Information Systems 12(2):465-486, 2015.
    .. [2] K. Crammer, O. Dekel, J. Keshet, S. Shalev-Shwartz and Y. Singer,
       "Online Passive-Aggressive Algorithms", Journal of Machine Learning
       Research 7:551-585, 2006.
    """

    _parameter_constraints = {
        **OnlineLearner._parameter_constraints,
        "C": [Interval(Real, 0, MAX_C, closed="right")],
        "restricted": ["boolean"],
        "loss_augmented": ["boolean"],
        "cost": [StrOptions(set(COSTS))],
    }

    def __init__(self, k=1, C=1.0, restricted=False, cost="hamming", loss_augmented=True,
                 max_iter=10, average=True, shuffle=True, random_state=None, verbose=0,
                 warm_start=False, order=1, n_jobs=None):
        self.k = k
        self.C = C
        self.restricted = restricted
        self.cost = cost
        self.loss_augmented = loss_augmented
        self.max_iter = max_iter
        self.average = average
        self.shuffle = shuffle
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.order = order
        self.n_jobs = n_jobs

    def _update_params(self):
        return {"rule": "rpa" if self.restricted else "pa", "C": float(self.C),
                "cost": COSTS[self.cost], "augment": bool(self.loss_augmented)}

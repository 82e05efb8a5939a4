"""k-best sequential dual method (Mancev & Todorovic, section 4.2, Algorithm 2)."""
from numbers import Integral

from sklearn.utils._param_validation import Interval

from .._docstrings import fill_doc
from ._families import DualLearner


@fill_doc
class SDMTagger(DualLearner):
    """k-best SDM: dual coordinate ascent over persistent working sets.

    Optimises the N-slack structural SVM dual (Mancev & Todorovic, eqs. 4-6) one
    example at a time (Algorithm 2).  At each visit of example n, its ``k``
    loss-augmented best sequences under the current weights (eq. 12) join its
    working set S_n, which keeps every sequence seen so far across epochs;
    then SMO runs on S_n until its KKT conditions hold to ``tol`` (eq. 17):
    each step takes the maximum violating pair (eq. 18) by the gradient of
    eq. 19 and moves the clipped amount of eq. 20 of dual mass between them.
    The weights always equal ``sum_{n,y} lambda_{n,y} dF_n(y)`` (eq. 6).
    With ``k=1`` the first epoch equals 1-best PA (eq. 21) and for any k it
    equals the first epoch of k-best MIRA (end of section 4.2).

    Parameters
    ----------
    k : int, default=1
        Sequences added to each working set per visit.  Chosen for time:
        k = 10 scores more (CoNLL-2000 93.74 against 93.69, Spanish testb
        77.81 against 76.91) at 4.7-6.6x the training time
        (``benchmarks/results/dual_*.md``).
    C : float, default=1.0
        Slack weight: each example's dual variables sum to C (eq. 5).  The
        development data chose C = 1 on CoNLL-2000 and C = 0.1 on Spanish
        (``dual_*.md``).
    tol : float, default=1e-6
        KKT tolerance tau of eq. 17.  Not tuned here.
    kappa : float, default=0.0
        A sequence can give up dual mass only if its lambda exceeds kappa
        (the kappa-tau approximate KKT conditions of section 4.3, eqs. 17-18,
        as in LaRank); must be smaller than ``C``.  Not tuned here (0: the
        exact KKT conditions).
    max_smo_iter : int, default=1000
        Cap on SMO steps per visit.  Not tuned here.
    max_working_set : int or None, default=None
        Cap on the number of sequences a working set holds (gold included).
        A full set makes room by dropping its oldest sequence whose lambda is
        0; if every sequence carries weight, the new ones are not added.
        ``None``: no cap (memory grows with the sequences found).
    cost : {"hamming", "zero_one"}, default="hamming"
        The cost L(y^n, y) that scales the margin.  The paper's (Hamming)
        loss; not tuned here.
    max_iter : int, default=10
        Passes over the training data.  Not tuned here (the 10 passes of
        the benchmarks).
    average : bool, default=True
        Predict with the weights averaged over all examples visited.
    shuffle : bool, default=True
        Visit the examples in a new random order each pass.
    random_state : int, RandomState instance or None, default=None
    verbose : int, default=0
        Print the dual objective, support vectors and time of each pass.
    warm_start : bool, default=False
        Continue the optimisation (working sets and weights) on the same
        training set instead of starting over.

    {order}

    {n_jobs}

    Attributes
    ----------
    classes_ : ndarray of labels
    coef_ : ndarray of shape (n_labels, n_features)
    transition_coef_ : ndarray of shape (n_labels, n_labels)
    start_coef_, end_coef_ : ndarray of shape (n_labels,)
    n_features_in_ : int
    n_iter_ : int
    n_support_ : int
        Pairs (example, sequence) with a positive dual variable.
    dual_objective_ : float
        ``sum lambda L - 1/2 ||w||^2`` (minus eq. 4) at the end of training.
    history_ : list of dict
        Per pass: mistakes, SMO steps, dual objective, support vectors,
        sequences held, seconds.

    References
    ----------
    .. [1] D. Mančev and B. Todorović, "k-Best Max-margin Approaches for Sequence
       Labeling", Computer Science and Information Systems 12(2):465-486, 2015.
    .. [2] B. Taskar, C. Guestrin and D. Koller, "Max-Margin Markov Networks",
       NIPS 2003 (the structural SVM dual).
    """

    _parameter_constraints = {
        **DualLearner._parameter_constraints,
        "max_working_set": [Interval(Integral, 2, None, closed="left"), None],
    }

    def __init__(self, k=1, C=1.0, tol=1e-6, kappa=0.0, max_smo_iter=1000,
                 max_working_set=None, cost="hamming", max_iter=10, average=True, shuffle=True,
                 random_state=None, verbose=0, warm_start=False, order=1, n_jobs=None):
        self.k = k
        self.C = C
        self.tol = tol
        self.kappa = kappa
        self.max_smo_iter = max_smo_iter
        self.max_working_set = max_working_set
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
        return {"n_reprocess": 0, "prune": False,
                "max_size": 0 if self.max_working_set is None else int(self.max_working_set)}

"""Sequence boosting (Altun, Johnson & Hofmann, section 5.2, Algorithm 2)."""
import time
import warnings
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from scipy.special import logsumexp
from sklearn.base import _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions

from .._publish import publishes
from .._progress import report
from .._validation import MAX_C, N_JOBS_CONSTRAINT
from ..chain import as_stacked, pack_chain
from ..optimize import convex_line_search as line_search
from ._base import ChainTagger
from ._boosting import boost_pass, tilted_moments
from ._crf_shard import CRFShard
from .crf import CRFTagger

#: Line-search evaluations (forward passes over the feature's sentences) at
#: most (:func:`sklstruct.optimize.convex_line_search`'s default).
MAX_EVALS = 40
#: Sentences whose exp-loss is below e^-CUT times the largest are negligible:
#: the line search leaves them out, and their forward-backward waits (they are
#: marked stale, with an upper bound on their loss) until they may matter.
CUT = 40.0
#: A token's weighted statistics are updated in G and H once they moved by
#: more than this fraction of its sentence's weight (they stay that exact).
ROW_TOL = 1e-6
#: The ranking per cost (``selection="newton_per_cost"``) divides a feature's
#: gain by the tokens its update runs forward-backward on plus this many (the
#: fixed cost of an update, in tokens).
OVERHEAD_TOKENS = 3000.0


class SequenceBoostingTagger(ChainTagger):
    """Boosting for label sequences: the CRF's weights chosen by the exp-loss's gradient.

    Algorithm 2 of Altun, Johnson & Hofmann (section 5.2; Altun, Hofmann &
    Johnson 2002) minimises the sequential exp-loss ``sum_i 1 / P(y^i | x^i)
    - 1`` (their eq. 2) one feature at a time.  With the distribution over
    examples ``D(i) = (1/P_i - 1) / sum_j (1/P_j - 1)`` (eq. 5) every feature
    k gets (Algorithm 2, lines 4-5)

        r_k = sum_i D(i) / u_k^d * (u_k^max + (E[F_k | x^i] - F_k(x^i, y^i)) / (P_i - 1))
        dtheta_k = log(-r_k u_k^min / ((1 - r_k) u_k^max)) / u_k^d

    where ``u_k^max`` / ``u_k^min`` bound ``F_k(x, y) - F_k(x, y^i)`` over
    every example and sequence (``u_k^d = u_k^max - u_k^min``); the feature
    whose step most lowers the bound ``r e^{dtheta u^min} + (1 - r)
    e^{dtheta u^max}`` of the loss's factor is updated (line 7).  The
    features are the CRF's: every (attribute, label) emission weight, every
    transition and the start and end weights.  ``selection="bound",
    step="bound"`` is this algorithm, with each feature's own exact bounds
    (an emission's from the sentences that hold its attribute; a transition's
    from the closed form of its most frequent count in a sentence of T
    tokens, ``T - 1`` for (a, a), ``T // 2`` for (a, b)).

    Why the algorithm as written learns so slowly: ``u`` is a maximum over
    the corpus, so the longest sentence sets it for every frequent feature
    (a transition's ``u^max`` is about ``T_max - 1``, a thousand on CoNLL-2002
    Spanish), and every step is ``O(1 / u^d)``: tiny.  And at ``theta = 0``
    the exp-loss of a sentence is ``L^T``, so D puts all its mass on the
    longest sentence for the first many rounds.  The paper notes the first
    (section 6: the bound is loose, the updates conservative).

    Beyond the paper (the defaults: ``selection="newton"``, ``C=1``, a
    corrective step after every round, ``step="joint"``):

    * ``step="line_search"``: the chosen feature's step minimises the true
      exp-loss along that coordinate exactly.  ``l_i(delta) = log(1 /
      P_i)`` is convex in delta (a log-partition function minus a linear
      term), and so is ``log sum_i exp(l_i)``; a safeguarded Newton method
      minimises it with exact first and second derivatives (the tilted
      model's mean and variance of ``F_k``, from one forward pass per
      evaluation over the sentences that hold the feature).  A feature whose
      loss falls for ever (one never seen with its label in the gold
      sequences: the paper's step is infinite there) stops where the slope
      of the log-loss falls below ``smoothing``.
    * ``selection="newton"`` (the default): the feature chosen is the one
      whose Newton step on the exp-loss promises the largest decrease,
      ``G_k^2 / (2 H_k)``, with ``G_k`` the gradient (eq. 4) and ``H_k =
      sum_i sum_t (1 / P_i) E[(f_k(x, y, t) - f_k(x, y^i, t))^2]`` the
      diagonal of the second moment (exact for a feature that fires at
      most once per sentence).  It does not depend on the corpus-wide
      ranges ``u``.
    * ``selection="newton_per_cost"``: the same decrease per unit of
      work, divided by the tokens of the sentences that hold the
      feature (what its update runs forward-backward on) plus a fixed cost
      of 3,000 tokens: greedy in training time rather than in rounds.  On
      CoNLL-2002 Spanish (S3) it reaches in 3 minutes the F1 that ranking by
      the decrease alone reaches in 15 (with ``step="line_search"``).
    * ``features_per_round``: the best few features of a round's ranking are
      updated one after the other, each with its own exact line search
      (with ``step="joint"``: added together, see below).
    * ``learning_rate``: each step is shrunk by this factor (Friedman's
      shrinkage).
    * ``C``: the Gaussian prior of :class:`~sklstruct.CRFTagger`.  The
      learner minimises ``C sum_i (1 / P_i - 1) + ||theta||^2 / 2``, the
      objective of ``CRFTagger(loss="exp", C=C)`` (whose L-BFGS minimises
      its logarithm), rather than the exp-loss alone: the Newton ranking
      reads the gradient ``C G_k + theta_k`` and curvature ``C H_k + 1``,
      the line search minimises the regularised objective along the
      coordinate (its minimum is finite for every feature), and the
      corrective step below minimises it.  Without it (``C=None``, the
      paper) a feature seen with one label only steps to where the slope
      has fallen by ``smoothing`` (weights of 30 and more: on CoNLL-2002
      Spanish the former sequential defaults ended at ``||theta||^2`` = 1.3
      million against the CRF's 11 thousand), AdaBoost's overfitting of
      rare features.
    * The totally corrective step (``corrective_every``): every so many
      rounds the weights of all emission features chosen so far and every
      chain weight (transitions, start, end) are re-optimised jointly on
      that objective, restricted to them, by the CRF's L-BFGS
      (``corrective_iter`` iterations; after the last round to the CRF's
      convergence), from the current weights.  This is the totally
      corrective update of boosting (Warmuth, Liao & Rätsch 2006; Shalev-
      Shwartz & Singer 2010), or grafting (Perkins, Lacker & Theiler 2003):
      gradient-based feature selection with the weights of the active set
      re-fitted, as in the feature induction for CRFs of McCallum (2003).
      The paper's sequential steps re-visit the same features many times
      (its section 6: "the same features are selected many times"); here
      a chosen feature's weight is settled jointly with the others.
    * ``step="joint"`` (the default): a round adds the ``features_per_round``
      emission features not yet chosen with the largest Newton decrease
      and leaves their weights (and every other) to the corrective step
      run after each round: the rounds' line searches, one forward-backward
      per feature, are what made the sequential algorithm slow.  With the
      defaults, 20 rounds of 5,000 features: the model is the exp-loss CRF
      restricted to the 100,000 (attribute, label) pairs boosting chose
      (of 848,376 on Spanish S3), any pair being a candidate (the CRF's
      default learns only pairs seen in training).

    Forward-backward keeps, per sentence, ``1 / P_i``, the marginals and the
    weighted expectations; after an update it reruns only on the sentences
    where the feature fires (all of them after a transition, start or end
    feature), and the gradient is updated by the difference, as the paper
    suggests.  Everything is stored on the scale ``e^-M`` with ``M`` the
    largest ``log(1 / P_i)``, so a 1,000-token sentence at ``theta = 0``
    (``9^1000``) does not overflow; a sentence whose loss is below
    ``e^-40`` times the largest waits (its loss bounded from above by its
    last value plus each step times the feature's count in it) until that
    bound comes within ``e^-40``.  Where an emission feature fires at one
    token of a sentence the line search reads that sentence's loss along the
    step in closed form from the stored marginal; elsewhere it runs a forward
    pass carrying the first two moments of the feature's count.

    Parameters
    ----------
    n_rounds : int, default=20
        Rounds at most; a round ranks every feature once and updates
        ``features_per_round`` of them.  The default with the defaults
        below: see ``features_per_round``.
    features_per_round : int, default=5000
        Features updated per round (the best of the ranking, in order; with
        ``step="joint"`` the best not chosen before).  1 is Algorithm 2.
        The defaults (20 rounds of 5,000, ``step="joint"``, a corrective
        step after each round) were chosen on a dev split of the CoNLL-2002
        Spanish training data (its first 80% of sentences for training, the
        last 20% to score; S3 features, window 1; phrase F1, loaded 2-core
        machine; corrective steps of 10 iterations): 20 x 5,000 73.32 in
        327 s, 40 x 2,000 73.21 in 364 s, against ``CRFTagger(loss="exp")``
        72.94 in 311 s; the former sequential line-search defaults (2,500
        rounds of 10 updates, ranking per cost, no prior, no corrective
        step) 67.34 in 581 s; the same with a final corrective step (C = 1)
        over their 17,000 chosen features 70.52; with a corrective step
        every 250 rounds 70.59 in 726 s; with the prior on the line search
        too and a corrective step every 250 (100) rounds, 1,500 (1,000)
        rounds: 68.30 (66.98).
        F1 grew with the number of distinct features chosen (7,000: 67;
        17,000: 70.5; 100,000: 73.3), which the sequential steps add slowly.
    selection : {"newton", "newton_per_cost", "bound"}, default="newton"
        How features are ranked: the Newton decrease ``G^2 / (2 H)`` of the
        objective (with the prior: see ``C``), alone or per token of work
        (both beyond the paper), or Algorithm 2's bound (line 7, the
        exp-loss alone).  ``"newton"``: the choice of the dev runs above.
    step : {"joint", "line_search", "bound"}, default="joint"
        The step: none of its own, the corrective step after each round
        setting every weight (beyond the paper; needs ``corrective_every``
        and a Newton selection), an exact line search on the objective
        (beyond the paper) or Algorithm 2's line 5.
    learning_rate : float in (0, 1], default=1.0
        Factor applied to every step of ``"line_search"`` or ``"bound"``.
    tol : float, default=1e-6
        Stop when the best feature's estimated decrease of the objective
        (Newton's, or the bound's guaranteed one) is below ``tol`` times the
        objective.
    smoothing : float in (0, 1), default=0.05
        One-sided features: with ``step="bound"`` the step that brings the
        bound to ``(1 + smoothing)`` times its infimum (the paper's step is
        infinite); with the line search, the slope of the log-loss at which
        the step stops.
    corrective_every : int, default=1
        Rounds between totally corrective steps; 0: none (the weights are
        the updates' alone).  When positive a last corrective step runs to
        convergence after the last round.  The default: every round, as
        ``step="joint"`` needs.
    corrective_iter : int, default=30
        L-BFGS iterations of each corrective step but the last (which runs
        to ``CRFTagger``'s stopping rule, at most its ``max_iter``).  30:
        on the dev split above (S3) 73.37 in 361 s against 10 iterations'
        73.32; with S1 features (the same split) 62.54 against 23.12: with
        10 iterations the exp-loss stays dominated by a few long sentences
        through all 20 rounds, so that the ranking sees only their features
        (100 rounds of 10 iterations: 62.72, in 439 s).
    C : float or None, default=1.0
        Inverse strength of the Gaussian prior (larger: weaker), as
        ``CRFTagger``'s ``C``; None: the exp-loss alone (the paper).  The
        default is ``CRFTagger``'s, so that boosting and
        ``CRFTagger(loss="exp")`` minimise one objective (the first over the
        features it chooses).  Not tuned further.
    verbose : int, default=0
        1: print every 100th round's feature, step and loss; 2: every round.
    n_jobs : int or None, default=None
        Threads for the corrective step's passes (as ``CRFTagger``'s) and
        for ``predict``, ``predict_kbest`` and ``score`` (blocks of
        sentences decoded without the GIL; ``None`` is 1, -1 all cores).
        Neither the model nor its predictions depend on it.

    Attributes
    ----------
    classes_, coef_, transition_coef_, start_coef_, end_coef_, n_features_in_
        As for :class:`~sklstruct.CRFTagger`.
    chosen_features_ : list of tuple
        Per update: ``(kind, attribute or previous label, label, step)`` with
        ``kind`` in {"emission", "transition", "start", "end"}; the
        attribute is a column of X, labels are in ``classes_``.
    history_ : list of dict
        Per update (with ``step="joint"``: per round, the update being the
        round's corrective step): ``round``, ``bound`` (with ranking by the
        bound: the factor of the loss it guarantees; else 1 minus the
        Newton estimate of the relative decrease), ``log_loss_before`` (log
        of the exp-loss before the update), ``log_loss_after``,
        ``sentences`` (re-run), ``evals`` (line-search passes), ``seconds``.
        The exp-loss is tracked without the prior.
    corrective_history_ : list of dict
        Per corrective step: ``round`` (after which it ran), ``features``
        (emission features in it), ``iterations`` (L-BFGS), ``objective``
        (the log of the objective after it, as ``CRFTagger.objective_``),
        ``seconds`` (since the fit began).
    n_iter_ : int
        Rounds run.

    References
    ----------
    .. [1] Y. Altun, M. Johnson and T. Hofmann, "Investigating Loss Functions
       and Optimization Methods for Discriminative Learning of Label
       Sequences", EMNLP 2003.
    .. [2] Y. Altun, T. Hofmann and M. Johnson, "Discriminative Learning for
       Label Sequences via Boosting", NIPS 2002.
    .. [3] R. E. Schapire and Y. Singer, "Improved Boosting Algorithms Using
       Confidence-rated Predictions", Machine Learning 37(3), 1999.
    .. [4] J. H. Friedman, "Greedy Function Approximation: A Gradient Boosting
       Machine", Annals of Statistics 29(5), 2001.
    .. [5] M. K. Warmuth, J. Liao and G. Rätsch, "Totally Corrective Boosting
       Algorithms that Maximize the Margin", ICML 2006.
    .. [6] S. Shalev-Shwartz and Y. Singer, "On the Equivalence of Weak
       Learnability and Linear Separability: New Relaxations and Efficient
       Boosting Algorithms", Machine Learning 80(2-3), 2010.
    .. [7] S. Perkins, K. Lacker and J. Theiler, "Grafting: Fast, Incremental
       Feature Selection by Gradient Descent in Function Space", JMLR 3,
       2003.
    .. [8] A. McCallum, "Efficiently Inducing Features of Conditional Random
       Fields", UAI 2003.
    """

    _parameter_constraints = {
        "n_rounds": [Interval(Integral, 1, None, closed="left")],
        "features_per_round": [Interval(Integral, 1, None, closed="left")],
        "selection": [StrOptions({"newton_per_cost", "newton", "bound"})],
        "step": [StrOptions({"line_search", "bound", "joint"})],
        "learning_rate": [Interval(Real, 0, 1, closed="right")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "smoothing": [Interval(Real, 0, 1, closed="neither")],
        "corrective_every": [Interval(Integral, 0, None, closed="left")],
        "corrective_iter": [Interval(Integral, 1, None, closed="left")],
        "C": [Interval(Real, 0, MAX_C, closed="right"), None],
        "verbose": ["verbose"],
        "n_jobs": N_JOBS_CONSTRAINT,
    }

    def __init__(self, n_rounds=20, features_per_round=5000, selection="newton", step="joint",
                 learning_rate=1.0, tol=1e-6, smoothing=0.05, corrective_every=1,
                 corrective_iter=30, C=1.0, verbose=0, n_jobs=None):
        self.n_rounds = n_rounds
        self.features_per_round = features_per_round
        self.selection = selection
        self.step = step
        self.learning_rate = learning_rate
        self.tol = tol
        self.smoothing = smoothing
        self.corrective_every = corrective_every
        self.corrective_iter = corrective_iter
        self.C = C
        self.verbose = verbose
        self.n_jobs = n_jobs

    # -- the bounds u^max, u^min -----------------------------------------------------------
    @staticmethod
    def _bounds(data, codes, L):
        """u^max and u^min of every feature, in the layout of theta."""
        X = data.matrix
        n_sent, n_tok = len(data), X.shape[0]
        sent = np.repeat(np.arange(n_sent), data.lengths)
        pos, neg = X.maximum(0).tocsr(), (-X).maximum(0).tocsr()
        F = X.shape[1]
        umax_W, umin_W = np.zeros((F, L)), np.zeros((F, L))
        for label in range(L):
            gold = (codes == label).astype(float)
            A = sp.csr_matrix((gold, (sent, np.arange(n_tok))), shape=(n_sent, n_tok))
            B = sp.csr_matrix((1.0 - gold, (sent, np.arange(n_tok))), shape=(n_sent, n_tok))
            # max over y of sum_t x_t ([y_t = l] - [g_t = l]), per sentence
            umax_W[:, label] = (A @ neg + B @ pos).max(axis=0).toarray().ravel()
            umin_W[:, label] = -(A @ pos + B @ neg).max(axis=0).toarray().ravel()
        # transitions: count_y(a, b) - count_gold(a, b); a sequence of T
        # tokens holds (a, a) at most T - 1 times and (a, b) at most T // 2
        umax_P, umin_P = np.zeros((L + 2, L)), np.zeros((L + 2, L))
        T = data.lengths
        pair = SequenceBoostingTagger._gold_counts(data, codes, L)
        most = np.where(np.eye(L, dtype=bool).ravel()[None, :], (T - 1)[:, None],
                        (T // 2)[:, None])
        umax_P[:L] = (most - pair[:, :L].reshape(n_sent, L * L)).max(axis=0).reshape(L, L)
        umin_P[:L] = (-pair[:, :L]).min(axis=0)
        # start and end: [y_0 = l] - [g_0 = l] (the same at the last token)
        for row in (L, L + 1):
            seen = pair[:, row].sum(axis=0)
            umax_P[row] = (seen < n_sent).astype(float)        # some sentence starts otherwise
            umin_P[row] = -(seen > 0).astype(float)
        return np.concatenate([umax_W.ravel(), umax_P.ravel()]), \
            np.concatenate([umin_W.ravel(), umin_P.ravel()])

    @staticmethod
    def _gold_counts(data, codes, L):
        """F(x^i, y^i) of the chain features, per sentence: (n, L + 2, L)."""
        n_sent, n_tok = len(data), data.offsets[-1]
        sent = np.repeat(np.arange(n_sent), data.lengths)
        starts, ends = data.offsets[:-1], data.offsets[1:] - 1
        inner = np.ones(n_tok, dtype=bool)
        inner[starts] = False
        inner = np.flatnonzero(inner)
        out = np.zeros((n_sent, (L + 2) * L))
        np.add.at(out, (sent[inner], codes[inner - 1] * L + codes[inner]), 1.0)
        out[np.arange(n_sent), L * L + codes[starts]] += 1.0
        out[np.arange(n_sent), (L + 1) * L + codes[ends]] += 1.0
        return out.reshape(n_sent, L + 2, L)

    # -- the state: 1 / P_i and the weighted statistics --------------------------------------
    @staticmethod
    def _weighted(st, S, rows, w):
        """The weighted statistics of sentences S (rows: theirs) with weights
        w = e^(d - M): per token [w (mu - gold), w (mu + gold - 2 mu gold)],
        per sentence w (E[F] - F(gold)) and w (E[F] + F(gold) - 2 P(gold
        bigrams)) of the chain features."""
        L = st["L"]
        wt = np.repeat(w, st["data"].lengths[S])[:, None]
        mu, onehot = st["mu"][rows], st["onehot"][rows]
        node = np.empty((len(rows), 2 * L))
        node[:, :L] = wt * (mu - onehot)
        node[:, L:] = wt * (mu + onehot - 2.0 * mu * onehot)
        gold, chainE = st["gold"][S], st["chainE"][S]
        cg = w[:, None, None] * (chainE - gold)
        ch = w[:, None, None] * (chainE + gold - 2.0 * st["goldpair"][S])
        return node, cg, ch

    def _refresh(self, st, S):
        """Forward-backward on sentences S (int64, sorted); update the stored
        weighted statistics, the gradient G and the second moments H, all on
        the scale e^-M."""
        data, L, F = st["data"], st["L"], st["F"]
        full = len(S) == st["n"]
        boost_pass(st["cd"], st["codes"], st["W"].reshape(-1), st["P"], S, st["d"], st["mu"],
                   st["chainE"], st["goldpair"])
        d = st["d"]
        st["dub"][S] = d[S]
        st["stale"][S] = False
        top = float(d.max())
        if full or top > st["M"] or top < st["M"] - 20.0:
            # a new scale (e^-M with M the largest log(1 / P_i)): everything
            # weighted afresh from the unweighted statistics, G and H summed
            # anew (no drift, and nothing over- or underflows on the way)
            self._rebuild(st, top)
        else:
            w = np.exp(d[S] - st["M"])
            rows = st["rows_of"](S)
            node, cg, ch = self._weighted(st, S, rows, w)
            delta = node - st["node"][rows]
            # rows whose statistics moved by less than ROW_TOL of their
            # sentence's weight keep their stored values (G and H hold those):
            # far from the feature the marginals barely move
            moved = np.abs(delta).max(axis=1) > ROW_TOL * np.repeat(w, data.lengths[S])
            rows, node, delta = rows[moved], node[moved], delta[moved]
            X = data.matrix[rows]
            GW, HW = st["G"][:F * L].reshape(F, L), st["H"][:F * L].reshape(F, L)
            if st["binary"]:
                GH = np.asarray(X.T @ delta)
                GW += GH[:, :L]
                HW += GH[:, L:]
            else:
                GW += np.asarray(X.T @ delta[:, :L])
                HW += np.asarray(X.multiply(X).T @ delta[:, L:])
            st["G"][F * L:] += (cg - st["cg"][S]).sum(axis=0).ravel()
            st["H"][F * L:] += (ch - st["ch"][S]).sum(axis=0).ravel()
            st["node"][rows] = node
            st["cg"][S], st["ch"][S], st["w"][S] = cg, ch, w
        M = st["M"]
        # Z = sum_i (1 / P_i - 1) e^-M, without cancellation for d near 0
        st["Z"] = float(np.sum(np.where(d < 1.0, np.expm1(np.minimum(d, 1.0)) * np.exp(-M),
                                        np.maximum(st["w"] - np.exp(-M), 0.0))))

    def _rebuild(self, st, M):
        """Weigh every sentence on the scale e^-M and sum G and H anew; a
        sentence whose loss is below e^-CUT times the largest weighs 0."""
        F, L = st["F"], st["L"]
        st["M"] = M
        d = st["d"]
        live = np.flatnonzero(d >= M - CUT)
        w = np.zeros(st["n"])
        w[live] = np.exp(d[live] - M)
        st["w"] = w
        st["node"][:] = 0.0
        st["cg"][:] = 0.0
        st["ch"][:] = 0.0
        full = len(live) == st["n"]
        rows = st["all_rows"] if full else st["rows_of"](live)
        node, st["cg"][live], st["ch"][live] = self._weighted(st, live, rows, w[live])
        st["node"][rows] = node
        X = st["data"].matrix if full else st["data"].matrix[rows]
        if st["binary"]:
            GH = np.asarray(X.T @ node)
            st["G"][:F * L], st["H"][:F * L] = GH[:, :L].ravel(), GH[:, L:].ravel()
        else:
            st["G"][:F * L] = np.asarray(X.T @ node[:, :L]).ravel()
            st["H"][:F * L] = np.asarray(X.multiply(X).T @ node[:, L:]).ravel()
        st["G"][F * L:] = st["cg"].sum(axis=0).ravel()
        st["H"][F * L:] = st["ch"].sum(axis=0).ravel()

    def _apply(self, st, S):
        """After a step of a feature firing in S (``dub`` already raised by
        the step times the feature's count in each sentence): forward-backward
        on the sentences of S that may matter; the others (whose loss, even
        so bounded, is below e^-CUT times the largest) are marked stale, and
        are run once their bound comes within e^-CUT.  Returns how many ran."""
        late = st["dub"][S] < st["M"] - CUT
        st["stale"][S[late]] = True
        now = S[~late]
        if len(now):
            self._refresh(st, now)
        while True:
            wake = np.flatnonzero(st["stale"] & (st["dub"] >= st["M"] - CUT))
            if not len(wake):
                break
            self._refresh(st, wake)
        return len(now)

    # -- one update ---------------------------------------------------------------------------
    def _feature(self, st, k):
        """(sentences where feature k fires, its coefficient rows, the
        kernel's spec of it, its largest count in each of those sentences)."""
        F, L = st["F"], st["L"]
        if k < F * L:
            a, label = divmod(k, L)
            csc = st["csc"]
            rows = csc.indices[csc.indptr[a]:csc.indptr[a + 1]]
            vals = csc.data[csc.indptr[a]:csc.indptr[a + 1]]
            S, first, where = np.unique(st["sent_of_row"][rows], return_index=True,
                                        return_inverse=True)
            where = where.ravel()
            count = np.bincount(where, np.abs(vals), minlength=len(S))
            n_rows = np.bincount(where, minlength=len(S))
            return S.astype(np.int64), (rows, vals, rows[first], vals[first], n_rows), \
                (label, -1, -1), count
        prow, pcol = divmod(k - F * L, L)
        if prow < L:
            S = st["multi"]
            return S, None, (-1, prow, pcol), (st["data"].lengths[S] - 1).astype(float)
        return st["all"], None, (-1, prow, pcol), np.ones(st["n"])

    def _fresh(self, st, S):
        """Forward-backward on the stale sentences among S."""
        late = S[st["stale"][S]]
        if len(late):
            self._refresh(st, late)

    def _search(self, st, k, S, coef_rows, spec, count):
        """The exact line search of feature k on the exp-loss of S, from the
        diagonal Newton step.

        Sentences whose loss stays below e^-CUT times that of the others at
        the step found (bounded by their loss now plus the step times the
        feature's count in them) weigh nothing in it and are left out; the
        search is redone while that leaves out one it should not.  Where an
        emission feature fires at one token t of a sentence, ``1 / P(gold)``
        along the step is known in closed form from the marginal mu of its
        label at t: ``l(delta) = d + log(1 - mu + mu e^(delta x)) - delta x
        [gold_t = label]``; the other sentences take a tilted forward pass.
        """
        coef = st["coef"]
        dub = st["dub"][S]
        use = dub >= dub.max() - CUT
        self._fresh(st, S[use])
        w = np.exp(st["d"][S[use]] - st["M"])
        sw = float(w.sum())
        slope = st["G"][k] / sw if sw > 0 else None
        start = scale = None
        # the prior (C): the search minimises log(e^(A - M) + lam (theta_k +
        # delta)^2 / 2), A the log exp-loss of S, lam = e^-M / C (0: no prior)
        lam, t0 = self._prior(st), float(st["theta"][k])
        if slope is not None:
            curv = st["H"][k] / sw - slope * slope
            curv = curv if curv > 0 else st["H"][k] / sw
            if lam > 0:
                u0 = np.logaddexp(np.log(sw), np.log(0.5 * lam) + 2 * np.log(abs(t0))) \
                    if t0 else np.log(sw)
                pa, pr = sw * np.exp(-u0), lam * np.exp(-u0)
                slope, curv = pa * slope + pr * t0, pa * (curv + slope * slope) + pr
                curv -= slope * slope
                curv = curv if curv > 0 else pa * st["H"][k] / sw + pr
            start = -slope / curv if curv > 0 else np.sign(-slope)
        last = {}
        if coef_rows is not None:
            coef[coef_rows[0]] = coef_rows[1]
        W, P = st["W"].reshape(-1), st["P"]
        n_evals = 0
        try:
            while True:
                if coef_rows is None:
                    single = np.zeros(len(S), dtype=bool)
                else:
                    single = coef_rows[4] == 1
                multi = S[use & ~single]
                one = use & single
                out = np.empty((len(multi), 3))
                if one.any():
                    r, x = coef_rows[2][one], coef_rows[3][one]
                    mu = np.clip(st["mu"][r, spec[0]], 0.0, 1.0)
                    g = st["onehot"][r, spec[0]]
                    d0 = st["d"][S[one]]
                    with np.errstate(divide="ignore"):
                        lmu, l1 = np.log(mu), np.log1p(-mu)

                def evaluate(delta):
                    parts = []
                    if len(multi):
                        tilted_moments(st["cd"], st["codes"], W, P, multi, coef, spec[0],
                                       spec[1], spec[2], delta, out)
                        parts.append(out)
                    if one.any():
                        A = np.logaddexp(l1, lmu + delta * x)
                        q = np.exp(lmu + delta * x - A)
                        parts.append(np.column_stack([d0 + A - delta * x * g, x * (q - g),
                                                      x * x * q * (1.0 - q)]))
                    o = parts[0] if len(parts) == 1 else np.concatenate(parts)
                    ell, d1, d2 = o[:, 0], o[:, 1], o[:, 2]
                    h = logsumexp(ell)
                    p = np.exp(ell - h)
                    g_ = float(p @ d1)
                    c = float(p @ (d2 + d1 * d1)) - g_ * g_
                    last["h"] = float(h)
                    if lam > 0:
                        t = t0 + delta
                        u = h - st["M"]
                        if t:
                            u = np.logaddexp(u, np.log(0.5 * lam) + 2 * np.log(abs(t)))
                        pa, pr = np.exp(h - st["M"] - u), lam * np.exp(-u)
                        c = pa * (c + g_ * g_) + pr
                        g_ = pa * g_ + pr * t
                        return float(u), g_, max(c - g_ * g_, 0.0)
                    return float(h), g_, max(c, 0.0)

                delta, h, n = line_search(evaluate, float(self.smoothing), start=start,
                                          slope=slope, scale=scale)
                n_evals += n
                h = last.get("h") if h is not None else float(logsumexp(st["d"][S[use]]))
                more = ~use & (dub + abs(delta) * count >= h - CUT)
                if not more.any():
                    return delta, n_evals
                use |= more
                self._fresh(st, S[more])
                dub = st["dub"][S]
                scale = slope if slope is not None else scale
                start, slope = delta, None
                if n_evals > 4 * MAX_EVALS:
                    return delta, n_evals
        finally:
            if coef_rows is not None:
                coef[coef_rows[0]] = 0.0

    @publishes
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Run boosting rounds from zero weights until ``n_rounds`` or ``tol``.

        Parameters
        ----------
        X : list of {sparse matrix, ndarray} of shape (n_tokens_i, n_features)
        y : list of array-like of shape (n_tokens_i,)

        Returns
        -------
        self : object
        """
        data = as_stacked(X)
        classes, codes = self._labels(y, data)
        F, L, n_sent = data.n_features, len(classes), len(data)
        n_tok = int(data.offsets[-1])
        theta = np.zeros(F * L + (L + 2) * L)
        need_bounds = self.selection == "bound" or self.step == "bound"
        if need_bounds:
            umax, umin = self._bounds(data, codes, L)
            usable = (umin < 0) | (umax > 0)
            ud = np.where(usable, umax - umin, 1.0)
        eps = float(self.smoothing)
        offsets = data.offsets

        def rows_of(S):
            lengths = offsets[S + 1] - offsets[S]
            starts = np.repeat(offsets[S] - np.concatenate([[0], np.cumsum(lengths)[:-1]]),
                               lengths)
            return np.arange(lengths.sum()) + starts

        onehot = np.zeros((n_tok, L))
        onehot[np.arange(n_tok), codes] = 1.0
        Xm = data.matrix
        st = {"data": data, "cd": data.chain_data(), "codes": codes, "L": L, "F": F,
              "n": n_sent, "W": theta[:F * L].reshape(F, L), "P": theta[F * L:].reshape(L + 2, L),
              "rows_of": rows_of, "M": 0.0, "G": np.zeros_like(theta),
              "H": np.zeros_like(theta), "node": np.zeros((n_tok, 2 * L)),
              "cg": np.zeros((n_sent, L + 2, L)), "ch": np.zeros((n_sent, L + 2, L)),
              "w": np.ones(n_sent), "d": np.zeros(n_sent), "Z": 0.0,
              "mu": np.zeros((n_tok, L)), "chainE": np.zeros((n_sent, L + 2, L)),
              "goldpair": np.zeros((n_sent, L + 2, L)), "onehot": onehot,
              "gold": self._gold_counts(data, codes, L),
              "binary": bool(np.all((Xm.data == 0) | (Xm.data == 1))),
              "csc": Xm.tocsc(), "sent_of_row": np.repeat(np.arange(n_sent), data.lengths),
              "coef": np.zeros(n_tok), "all": np.arange(n_sent, dtype=np.int64),
              "multi": np.flatnonzero(data.lengths > 1).astype(np.int64),
              "all_rows": np.arange(n_tok), "dub": np.zeros(n_sent),
              "stale": np.zeros(n_sent, dtype=bool), "theta": theta}
        if self.selection == "newton_per_cost":
            # tokens a feature's forward-backward runs on: the sentences holding it
            inc = sp.csr_matrix((np.ones(Xm.nnz), Xm.indices, Xm.indptr), shape=Xm.shape)
            sent_att = sp.csr_matrix((np.ones(n_tok), (st["sent_of_row"], np.arange(n_tok))),
                                     shape=(n_sent, n_tok)) @ inc
            sent_att.data[:] = 1.0
            per_att = np.asarray(sent_att.T @ data.lengths.astype(float)).ravel()
            st["cost"] = np.concatenate([np.repeat(per_att, L),
                                         np.full((L + 2) * L, float(n_tok))])
        self._refresh(st, st["all"])
        chosen, history, tic = [], [], time.perf_counter()
        n_iter = 0
        m = int(self.features_per_round)
        picked = np.zeros(F * L, dtype=bool)          # the emission features chosen so far
        every = int(self.corrective_every)
        joint = self.step == "joint"
        if joint and (not every or self.selection == "bound"):
            raise ValueError("step='joint' takes its steps from the corrective step: it needs "
                             "corrective_every >= 1 and a Newton selection; got "
                             f"corrective_every={every}, selection={self.selection!r}")
        corrective = []
        for rnd in range(self.n_rounds):
            Z = st["Z"]
            if not Z > 0:
                break                                      # every example is certain
            G, H = st["G"], st["H"]
            if self.selection != "bound":
                lam = self._prior(st)
                if lam > 0:
                    # the objective C (exp-loss) + ||theta||^2 / 2 on the scale e^-M / C
                    G, H = G + lam * theta, H + lam
                    Z = Z + 0.5 * lam * float(theta @ theta)
                ok = (H > 0) & (G != 0)
                gain = np.zeros_like(theta)
                gain[ok] = G[ok] ** 2 / H[ok] / (2.0 * Z)        # relative decrease
                gain[~np.isfinite(gain)] = 0.0
                if joint:
                    # the corrective step sets the weights: only new emission features
                    # are candidates (the stopping test reads every feature's)
                    best_joint = float(gain.max())
                    gain[F * L:] = 0.0
                    gain[:F * L][picked] = 0.0
                ranked_gain = gain if self.selection == "newton" else \
                    gain / (st["cost"] + OVERHEAD_TOKENS)
            else:
                # r_k and the step of every feature (Algorithm 2, lines 4-5)
                r, bstep, bound = self._bound_steps(G / Z, umax, umin, ud, usable, eps)
                ranked_gain = np.where(np.isfinite(bound), 1.0 - bound, 0.0)
            n_pick = min(m, int(np.count_nonzero(ranked_gain > 0)))
            if n_pick == 0 and not joint:
                break
            # (joint, none new: the round's corrective step still lowers the
            # loss of the sentences that dominate it, and the next round's
            # ranking sees the features of the others)
            top = np.argpartition(-ranked_gain, n_pick - 1)[:n_pick] if n_pick else \
                np.zeros(0, dtype=np.int64)
            top = top[np.argsort(-ranked_gain[top], kind="stable")]
            estimate = ranked_gain if self.selection == "bound" else gain
            best = best_joint if joint else float(estimate.max())
            if best < self.tol:
                break
            n_iter += 1
            if joint:
                # the round's step is the corrective step below
                history.append({"round": rnd + 1, "bound": 1.0 - best,
                                "log_loss_before": float(st["M"] + np.log(st["Z"])),
                                "log_loss_after": np.nan, "sentences": n_sent, "evals": 0,
                                "seconds": time.perf_counter() - tic})
                picked[top] = True
                chosen += [("emission", int(k // L), classes[k % L], 0.0) for k in top]
                top = []
            for k in top:
                k = int(k)
                log_loss = st["M"] + np.log(st["Z"])
                S, coef_rows, spec, count = self._feature(st, k)
                evals = 0
                if self.step == "line_search":
                    delta, evals = self._search(st, k, S, coef_rows, spec, count)
                else:
                    if self.selection == "bound" and k in top[:1]:
                        delta = bstep[k]
                    else:
                        _, s1, _ = self._bound_steps(st["G"][k:k + 1] / st["Z"],
                                                      umax[k:k + 1], umin[k:k + 1], ud[k:k + 1],
                                                      usable[k:k + 1], eps)
                        delta = s1[0]
                    if not np.isfinite(delta):
                        continue
                delta *= float(self.learning_rate)
                if delta == 0.0:
                    continue
                theta[k] += delta                            # W and P are views of theta
                if k < F * L:
                    picked[k] = True
                # forward-backward on S, or on the part of it that matters now
                # (the others are stale, their loss bounded by dub)
                st["dub"][S] += abs(delta) * count
                n_run = self._apply(st, S)
                after = st["M"] + np.log(st["Z"]) if st["Z"] > 0 else -np.inf
                if k < F * L:
                    a, label = divmod(k, L)
                    chosen.append(("emission", int(a), classes[label], float(delta)))
                else:
                    row, label = divmod(k - F * L, L)
                    kind, prev = (("transition", classes[row]) if row < L
                                  else ("start" if row == L else "end", None))
                    chosen.append((kind, prev, classes[label], float(delta)))
                history.append({"round": rnd + 1, "bound": float(1.0 - estimate[k]),
                                "log_loss_before": float(log_loss),
                                "log_loss_after": float(after), "sentences": int(n_run),
                                "evals": int(evals), "seconds": time.perf_counter() - tic})
                if not st["Z"] > 0:
                    break
            if every and n_iter % every == 0 and n_iter < self.n_rounds and st["Z"] > 0:
                corrective.append(self._corrective(theta, picked, data, codes, classes,
                                                   int(self.corrective_iter), rnd + 1, tic))
                self._after_corrective(st, history, joint)
            if self.verbose and history and (self.verbose > 1 or rnd == 0
                                             or (rnd + 1) % 100 == 0):
                last = history[-1]
                report(self.verbose, "Round", rnd + 1, [
                    ("feature", f"{chosen[-1][0]} {chosen[-1][1:3]}"),
                    ("step", f"{chosen[-1][3]:+.4g}"), ("bound", last["bound"]),
                    ("log exp-loss", last["log_loss_after"]), ("sentences", last["sentences"])],
                    last["seconds"])
        if every:
            # the last corrective step runs to the CRF's convergence
            corrective.append(self._corrective(theta, picked, data, codes, classes, None,
                                               n_iter, tic))
            if joint:
                self._after_corrective(st, history, joint)
        self._set_theta(theta, classes, F)
        self.chosen_features_ = chosen
        self.history_ = history
        self.corrective_history_ = corrective
        self.n_iter_ = n_iter
        return self

    def _after_corrective(self, st, history, joint):
        """Forward-backward on every sentence at the corrected weights; with
        ``step="joint"`` the round's record gets the exp-loss it ends at."""
        self._refresh(st, st["all"])
        if joint and history and np.isnan(history[-1]["log_loss_after"]):
            history[-1]["log_loss_after"] = float(st["M"] + np.log(st["Z"])) \
                if st["Z"] > 0 else -np.inf

    def _prior(self, st):
        """The Gaussian prior's weight on the scale of the stored statistics,
        ``e^-M / C`` (0 without one)."""
        return 0.0 if self.C is None else float(np.exp(-st["M"]) / self.C)

    def _corrective(self, theta, picked, data, codes, classes, max_iter, rnd, tic):
        """The totally corrective step: the weights of the emission features
        chosen so far (``picked``) and every chain weight re-optimised
        jointly, in place in ``theta``, on the objective of
        ``CRFTagger(loss="exp", C=self.C)`` restricted to them (its L-BFGS,
        from theta; ``max_iter`` iterations, None: the CRF's own stopping
        rule and cap).  Returns the step's record for
        ``corrective_history_``."""
        F, L = data.n_features, len(classes)
        states = np.flatnonzero(picked)
        crf = CRFTagger(loss="exp", C=MAX_C if self.C is None else float(self.C),
                        n_jobs=self.n_jobs)
        if max_iter is not None:
            crf.set_params(max_iter=max_iter)
        crf._set_theta(theta, classes, F)
        shard = CRFShard(data, codes, L, L + 2, states, n_jobs=self.n_jobs)
        with warnings.catch_warnings():
            if max_iter is not None:             # a few iterations: not meant to converge
                warnings.simplefilter("ignore", ConvergenceWarning)
            crf._minimise(shard, data, classes, F, states, warm=True)
        theta[:F * L] = crf.coef_.T.ravel()
        theta[F * L:] = pack_chain(crf.transition_coef_, crf.start_coef_,
                                   crf.end_coef_).ravel()
        record = {"round": int(rnd), "features": int(len(states)),
                  "iterations": int(crf.n_iter_), "objective": float(crf.objective_),
                  "seconds": time.perf_counter() - tic}
        report(self.verbose, "Corrective step", len(states),
               [("L-BFGS iterations", record["iterations"]),
                ("log objective", record["objective"])], record["seconds"])
        return record

    @staticmethod
    def _bound_steps(GZ, umax, umin, ud, usable, eps):
        """Algorithm 2, lines 4, 5 and 7's bound, for features with the
        gradient G / Z: (r, step, bound); bound is inf where no step is."""
        r = (umax - GZ) / ud
        ok = usable & (r > 0) & (r < 1)
        step = np.zeros_like(r)
        both = ok & (umin < 0) & (umax > 0)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            step[both] = np.log(-r[both] * umin[both] / ((1 - r[both]) * umax[both])) / ud[both]
        # one-sided features: the bound falls to r (or 1 - r) only at an
        # infinite step; take the step that gets within a factor
        # (1 + smoothing) of it (in the spirit of Schapire & Singer's smoothing)
        up = ok & (umin == 0)
        # (no step where the bound at 0 is already within that factor)
        step[up] = np.minimum(np.log(eps * r[up] / (1 - r[up])) / umax[up], 0.0)
        down = ok & (umax == 0)
        step[down] = np.maximum(np.log(eps * (1 - r[down]) / r[down]) / umin[down], 0.0)
        # a bound u of subnormal size makes log(...) / u overflow: no finite
        # step reaches r, so such a feature is not a candidate
        ok &= np.isfinite(step) & (step != 0)
        bound = np.full_like(r, np.inf)
        # r e^(step u^min) + (1 - r) e^(step u^max), in log space
        bound[ok] = np.exp(np.logaddexp(np.log(r[ok]) + step[ok] * umin[ok],
                                        np.log1p(-r[ok]) + step[ok] * umax[ok]))
        return r, step, bound

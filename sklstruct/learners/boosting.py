"""Sequence boosting (Altun, Johnson & Hofmann, section 5.2, Algorithm 2)."""
import time
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval

from .._publish import publishes
from .._progress import report
from .._validation import N_JOBS_CONSTRAINT
from ..chain import as_stacked
from ._base import ChainTagger
from ._crf import CRFGradient, crf_pass


def _rescale(state, M):
    """Move the stored per-sentence weights e^(d - M) and their expectations
    to the scale e^-M; returns the factor applied."""
    factor = np.exp(state["M"] - M)
    for key in ("node", "chain", "w"):
        state[key] *= factor
    state["M"] = M
    return factor


class SequenceBoostingTagger(ChainTagger):
    """Boosting for label sequences: one weight of the CRF updated per round.

    Algorithm 2 of Altun, Johnson & Hofmann (section 5.2; Altun, Hofmann &
    Johnson 2002) minimises an upper bound of the sequential exp-loss
    ``sum_i 1 / P(y^i | x^i) - 1`` (their eq. 2).  Each round, with the
    distribution over examples ``D(i) = (1/P_i - 1) / sum_j (1/P_j - 1)``
    (eq. 5), every feature k gets

        r_k = sum_i D(i) / u_k^d * (u_k^max + (E[F_k | x^i] - F_k(x^i, y^i)) / (P_i - 1))
        dtheta_k = log(-r_k u_k^min / ((1 - r_k) u_k^max)) / u_k^d

    where ``u_k^max`` / ``u_k^min`` bound ``F_k(x, y) - F_k(x, y^i)`` over
    every example and sequence (``u_k^d = u_k^max - u_k^min``), and the
    feature whose step most lowers the bound ``r e^{dtheta u^min} +
    (1 - r) e^{dtheta u^max}`` (a factor below 1 of the loss) is updated.
    The features are the CRF's: every (attribute, label) emission weight,
    every transition and the start and end weights.  A one-sided feature
    (``u_k^min = 0``: it can only count more in a wrong sequence, such as an
    attribute never seen with a label; or ``u_k^max = 0``) would need an
    infinite step to reach its bound, ``r_k`` (or ``1 - r_k``); it takes the
    finite step that brings the bound to ``(1 + smoothing)`` times that, in
    the spirit of the smoothing of Schapire & Singer (1999).  This is not in
    the paper's Algorithm 2, which leaves the case open.

    As the paper suggests, forward-backward runs each round only on the
    sentences that hold the feature chosen last (all sentences after a
    transition, start or end feature); the expectations of the others are
    kept, scaled with the loss so that nothing overflows.

    Parameters
    ----------
    n_rounds : int, default=100
        Boosting rounds (features updated, with repetition).
    smoothing : float in (0, 1), default=0.01
        How close a one-sided feature's step gets to its (infinite) optimum.
    verbose : int, default=0
        Print each round's feature, step and loss.

    n_jobs : int or None, default=None
        Threads for ``predict``, ``predict_kbest`` and ``score`` (blocks of
        sentences decoded without the GIL; ``None`` is 1, -1 all cores).
        Predictions do not depend on it.

    Attributes
    ----------
    classes_, coef_, transition_coef_, start_coef_, end_coef_, n_features_in_
        As for :class:`~sklstruct.CRFTagger`.
    chosen_features_ : list of tuple
        Per round: ``(kind, attribute or previous label, label, step)`` with
        ``kind`` in {"emission", "transition", "start", "end"}; the
        attribute is a column of X, labels are in ``classes_``.
    history_ : list of dict
        Per round: ``round``, ``bound`` (the factor of the step's bound),
        ``log_loss_before`` (log of the exp-loss before the step),
        ``sentences`` (re-decoded), ``seconds``.

    References
    ----------
    .. [1] Y. Altun, M. Johnson and T. Hofmann, "Investigating Loss Functions
       and Optimization Methods for Discriminative Learning of Label
       Sequences", EMNLP 2003.
    .. [2] Y. Altun, T. Hofmann and M. Johnson, "Discriminative Learning for
       Label Sequences via Boosting", NIPS 2002.
    .. [3] R. E. Schapire and Y. Singer, "Improved Boosting Algorithms Using
       Confidence-rated Predictions", Machine Learning 37(3), 1999.
    """

    _parameter_constraints = {
        "n_rounds": [Interval(Integral, 1, None, closed="left")],
        "smoothing": [Interval(Real, 0, 1, closed="neither")],
        "verbose": ["verbose"],
        "n_jobs": N_JOBS_CONSTRAINT,
    }

    def __init__(self, n_rounds=100, smoothing=0.01, verbose=0, n_jobs=None):
        self.n_rounds = n_rounds
        self.n_jobs = n_jobs
        self.smoothing = smoothing
        self.verbose = verbose

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
        # transitions: count_y(a, b) - count_gold(a, b); a sequence holds the
        # bigram at most T - 1 times (a == b) or T // 2 times, and avoids it
        umax_P, umin_P = np.zeros((L + 2, L)), np.zeros((L + 2, L))
        T = data.lengths
        starts, ends = data.offsets[:-1], data.offsets[1:] - 1
        inner = np.setdiff1d(np.arange(n_tok), starts)       # rows with a predecessor
        pair = np.zeros((n_sent, L * L))
        np.add.at(pair, (sent[inner], codes[inner - 1] * L + codes[inner]), 1.0)
        most = np.where(np.eye(L, dtype=bool).ravel()[None, :], (T - 1)[:, None],
                        (T // 2)[:, None])
        umax_P[:L] = (most - pair).max(axis=0).reshape(L, L)
        umin_P[:L] = (-pair).min(axis=0).reshape(L, L)
        # start and end: [y_0 = l] - [g_0 = l] (the same at the last token)
        for row, idx in ((L, starts), (L + 1, ends)):
            seen = np.bincount(codes[idx], minlength=L)
            umax_P[row] = (seen < n_sent).astype(float)        # some sentence starts otherwise
            umin_P[row] = -(seen > 0).astype(float)
        return np.concatenate([umax_W.ravel(), umax_P.ravel()]), \
            np.concatenate([umin_W.ravel(), umin_P.ravel()])

    # -- one pass over some sentences --------------------------------------------------------
    def _refresh(self, state, S):
        """Forward-backward on sentences S; update the stored weighted
        expectations, the gradient G and the normaliser Z (scaled by e^-M)."""
        data, codes, W, P = state["data"], state["codes"], state["W"], state["P"]
        sub = data[S] if len(S) < len(data) else data
        rows = state["rows_of"](S)
        sub_codes = np.ascontiguousarray(codes[rows])
        c = sub.chain_data()
        n, L = len(sub), P.shape[1]
        d = np.empty(n)
        crf_pass(c, sub_codes, W.reshape(-1), P, 0, n, d)
        if d.max() > state["M"]:                          # rescale what is stored
            state["G"] *= _rescale(state, float(d.max()))
        M = state["M"]
        w = np.exp(d - M)
        node = np.empty((rows.shape[0], L))
        chain = np.zeros((n, L + 2, L))
        crf_pass(c, sub_codes, W.reshape(-1), P, 0, n, d, None,
                 CRFGradient(w, w, None, node, chain, 1))
        F = W.shape[0]
        delta_node = node - state["node"][rows]
        state["G"][:F * L] += np.asarray(sub.matrix.T @ delta_node).ravel()
        state["G"][F * L:] += (chain - state["chain"][S]).sum(axis=0).ravel()
        state["node"][rows] = node
        state["chain"][S] = chain
        state["w"][S] = w
        state["d"][S] = d
        top = float(state["d"].max())
        if top < M - 20.0:
            # the loss fell by e^20 since the scale was set: rescale, and sum
            # G afresh so that rounding left from the larger scale is gone
            _rescale(state, top)
            M = top
            state["G"][:F * L] = np.asarray(data.matrix.T @ state["node"]).ravel()
            state["G"][F * L:] = state["chain"].sum(axis=0).ravel()
        # Z = sum_i (1 / P_i - 1) e^-M, from the stored weights (no drift)
        state["Z"] = float(np.sum(state["w"]) - len(state["w"]) * np.exp(-M))

    @publishes
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Run ``n_rounds`` rounds of Algorithm 2 from zero weights.

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
        theta = np.zeros(F * L + (L + 2) * L)
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

        # stored per sentence: w = e^(d - M) and its expectations, all as for
        # a certain example (d = 0: P = 1, no loss) until first computed
        state = {"data": data, "codes": codes, "W": theta[:F * L].reshape(F, L),
                 "P": theta[F * L:].reshape(L + 2, L), "rows_of": rows_of, "M": 0.0,
                 "G": np.zeros_like(theta), "node": np.zeros((data.offsets[-1], L)),
                 "chain": np.zeros((n_sent, L + 2, L)), "w": np.ones(n_sent),
                 "Z": 0.0, "d": np.zeros(n_sent)}
        self._refresh(state, np.arange(n_sent))
        by_column = data.matrix.tocsc()
        sent_of_row = np.repeat(np.arange(n_sent), data.lengths)
        chosen, history, tic = [], [], time.perf_counter()
        for rnd in range(self.n_rounds):
            Z = state["Z"]
            if not Z > 0:
                break                                      # every example is certain
            # r_k and the step of every feature (eq. 5 and Algorithm 2, lines 4-5)
            r = (umax - state["G"] / Z) / ud
            ok = usable & (r > 0) & (r < 1)
            if not ok.any():
                break
            step = np.zeros_like(theta)
            both = ok & (umin < 0) & (umax > 0)
            step[both] = np.log(-r[both] * umin[both]
                                / ((1 - r[both]) * umax[both])) / ud[both]
            # one-sided features: the bound falls to r (or 1 - r) only at an
            # infinite step; take the step that gets within a factor
            # (1 + smoothing) of it
            up = ok & (umin == 0)
            step[up] = np.log(eps * r[up] / (1 - r[up])) / umax[up]
            down = ok & (umax == 0)
            step[down] = np.log(eps * (1 - r[down]) / r[down]) / -umin[down]
            # a bound u of subnormal size (feature values near 5e-324) makes
            # log(...) / u overflow: no finite step reaches r, so such a
            # feature is not a candidate (an infinite weight would make NaN)
            ok &= np.isfinite(step)
            if not ok.any():
                break
            # r e^(step u^min) + (1 - r) e^(step u^max), in log space: a large
            # step times a term near 0 would otherwise give inf * 0
            bound = np.full_like(theta, np.inf)
            bound[ok] = np.exp(np.logaddexp(np.log(r[ok]) + step[ok] * umin[ok],
                                            np.log1p(-r[ok]) + step[ok] * umax[ok]))
            k = int(np.argmin(bound))
            log_loss = state["M"] + np.log(Z)
            theta[k] += step[k]                 # W and P are views of theta
            if k < F * L:
                a, label = divmod(k, L)
                S = np.unique(sent_of_row[by_column.indices[by_column.indptr[a]:
                                                            by_column.indptr[a + 1]]])
                chosen.append(("emission", int(a), classes[label], float(step[k])))
            else:
                row, label = divmod(k - F * L, L)
                kind, prev = (("transition", classes[row]) if row < L
                              else ("start" if row == L else "end", None))
                S = np.arange(n_sent)
                chosen.append((kind, prev, classes[label], float(step[k])))
            self._refresh(state, S)
            history.append({"round": rnd + 1, "bound": float(bound[k]),
                            "log_loss_before": float(log_loss), "sentences": int(len(S)),
                            "seconds": time.perf_counter() - tic})
            report(self.verbose, "Round", rnd + 1, [
                ("feature", f"{chosen[-1][0]} {chosen[-1][1:3]}"), ("step", f"{step[k]:+.4g}"),
                ("bound", f"{bound[k]:.6f}"), ("log exp-loss", float(log_loss)),
                ("sentences", len(S))], history[-1]["seconds"])
        self._set_theta(theta, classes, F)
        self.chosen_features_ = chosen
        self.history_ = history
        self.n_iter_ = len(history)
        return self

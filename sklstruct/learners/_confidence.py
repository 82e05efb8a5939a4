"""Confidence of a chain tagger's predictions: label marginals and sentence
probabilities at a temperature, and the temperature fitted on held-out data.

A tagger scores a label sequence ``s(y) = w.F(x, y)``; at temperature ``T``
it is read as the distribution ``p_T(y | x) ~ exp(s(y) / T)``, either

* over all sequences (``"forward_backward"``): exact for the tempered
  model, the CRF's own distribution at ``T = 1``;
* or over the ``k`` best sequences only (``"kbest"``): a label that none of
  the ``k`` sequences gives a token has probability 0 there, whatever ``T``.

:func:`fit_temperature` chooses ``T`` minimising the mean negative log
probability of the gold labels of held-out tokens (temperature scaling, Guo,
Pleiss, Sun and Weinberger 2017, applied to structured marginals).
:class:`ConfidenceMixin` gives a chain tagger ``calibrate``,
``predict_marginals`` and ``predict_confidence`` on top of them.
"""
import numpy as np
from scipy.optimize import minimize_scalar
from sklearn.utils.validation import check_is_fitted

from .._publish import publishes, reads_model
from .._forward_backward import corpus_marginals
from .._validation import check_k
from ..chain import FORBIDDEN_TRANSITION, as_stacked

METHODS = ("kbest", "forward_backward")

#: Probability floor of the log loss: a gold label outside every one of the k
#: best sequences costs -log(1e-12) whatever the temperature.
_FLOOR = 1e-12

#: The grid of log10(T) searched before the bounded refinement: 0.2 decades
#: from 1e-4 to 1e6, so T = 1 is on it and the fitted loss is never above it.
_GRID = np.linspace(-4.0, 6.0, 51)


class KBestLists:
    """The ``k`` best sequences of every sentence, laid out to turn scores into
    marginals at any temperature with a few vectorised operations.

    Attributes
    ----------
    scores : ndarray (n_paths,)
        The scores of all sentences' sequences, sentence after sentence,
        best first within a sentence.
    starts : ndarray (n_sentences,)
        Index in ``scores`` of each sentence's best sequence.
    group : ndarray (n_paths,)
        Position in ``starts`` of each sequence's sentence.
    cells, owner : ndarray
        For every (sequence, token): the flat index ``row * L + label`` of the
        label the sequence gives the token, and the sequence.
    """

    def __init__(self, tagger, E, P, offsets, k):
        L = P.shape[1]
        lists = tagger._kbest_codes(E, P, offsets, k)
        self.n_cells = int(offsets[-1]) * L
        sizes = np.array([len(s) for _, s in lists], dtype=np.int64)
        self.scores = np.concatenate([s for _, s in lists])
        self.starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        self.group = np.repeat(np.arange(len(lists)), sizes)
        self.cells = np.concatenate([((a + np.arange(paths.shape[1])) * L + paths).ravel()
                                     for a, (paths, _) in zip(offsets[:-1], lists)])
        self.owner = np.concatenate([np.repeat(start + np.arange(len(paths)), paths.shape[1])
                                     for start, (paths, _) in zip(self.starts, lists)])

    def weights(self, temperature):
        """softmax(scores / T) within each sentence."""
        z = self.scores / temperature
        z = z - np.maximum.reduceat(z, self.starts)[self.group]
        e = np.exp(z)
        return e / np.add.reduceat(e, self.starts)[self.group]

    def marginals(self, temperature):
        """(n_tokens * L,) flat token marginals at ``temperature``."""
        w = self.weights(temperature)
        return np.bincount(self.cells, weights=w[self.owner], minlength=self.n_cells)

    def best_probability(self, temperature):
        """p_T of each sentence's best sequence."""
        return self.weights(temperature)[self.starts]


#: How far a row of marginals may sum from 1 before prediction refuses it:
#: forward-backward adds up scores in float64, so scores near 1e14 keep
#: no digit of the differences that make the probabilities.
_SUM_TOLERANCE = 1e-3


def tempered_marginals(tagger, E, P, offsets, temperature, strict=True):
    """(marginals (n_tokens, L), log Z (n_sentences,)) of ``exp(s(y) / T)`` over
    all sequences, by forward-backward in ``tagger``'s threads.

    Rows are normalised to sum to 1.  Raise ValueError for a sentence that no
    label sequence keeps to a ConstrainedTagger's restrictions (every
    sequence scores a forbidden score: its distribution is undefined) and,
    ``strict``, for one whose rows summed further than ``_SUM_TOLERANCE``
    from 1 (scores too large for float64 to tell apart); not ``strict``
    (calibrate trying extreme temperatures), such rows are only normalised.
    """
    E = np.ascontiguousarray(E / temperature)
    P = np.ascontiguousarray(P / temperature)
    out = np.empty(E.shape)
    log_z = np.zeros(len(offsets) - 1)
    tagger._run(lambda a, b: corpus_marginals(E, P, offsets[a:b + 1], out, log_z[a:b]),
                tagger._prediction_blocks(offsets))
    broken = np.flatnonzero(log_z * temperature < FORBIDDEN_TRANSITION / 2)
    if broken.size:
        raise ValueError(
            f"X[{broken[0]}]: no label sequence keeps to the tagger's restrictions "
            "(transition constraints, tag dictionary), so its label distribution is "
            "undefined (predict gives the sequence breaking the fewest); leave such "
            "sentences out or loosen the restrictions")
    sums = out.sum(axis=1)
    if strict:
        off = np.flatnonzero(np.abs(sums - 1.0) > _SUM_TOLERANCE)
        if off.size:
            s = int(np.searchsorted(offsets, off[0], side="right")) - 1
            raise ValueError(
                f"X[{s}]: the label marginals lost their precision (a row sums to "
                f"{sums[off[0]]:.6g}): the model's scores reach "
                f"{np.abs(E).max() * temperature:.3g}, beyond what float64 can turn "
                "into probabilities; scale the features down")
    out /= np.where(sums > 0, sums, np.inf)[:, None]
    out[sums <= 0] = 1.0 / out.shape[1]
    return out, log_z


def check_scores(E, P):
    """Refuse scores that no temperature can turn into probabilities."""
    if not (np.isfinite(E).all() and np.isfinite(P).all()):
        raise ValueError("the model's scores are not finite on X: check X for NaN or "
                         "infinite features")


def fit_temperature(tagger, E, P, offsets, gold, method, k):
    """The temperature minimising the mean log loss of the gold labels
    ``gold`` (codes, one per token; -1 for a label the model does not know),
    with the loss at it and at T = 1."""
    L = P.shape[1]
    known = gold >= 0        # (-1: a label the model does not know, probability 0)
    cells = np.flatnonzero(known) * L + gold[known]
    floor = np.count_nonzero(~known) * -np.log(_FLOOR)
    if method == "kbest":
        lists = KBestLists(tagger, E, P, offsets, k)

        def marginals(log10_t):
            return lists.marginals(10.0 ** log10_t)
    else:
        def marginals(log10_t):
            return tempered_marginals(tagger, E, P, offsets, 10.0 ** log10_t,
                                      strict=False)[0].ravel()

    def loss(log10_t):
        p = marginals(log10_t)[cells]
        return float((floor - np.log(np.maximum(p, _FLOOR)).sum()) / len(gold))

    values = np.array([loss(g) for g in _GRID])
    at_1 = float(values[_GRID.tolist().index(0.0)])
    if values.max() - values.min() <= 1e-12 * (1.0 + abs(at_1)):
        return 1.0, at_1, at_1          # nothing to fit: the scores are left as they are
    # among equal losses, the temperature closest to 1
    ties = np.flatnonzero(values == values.min())
    best = int(ties[np.argmin(np.abs(_GRID[ties]))])
    lo, hi = _GRID[max(best - 1, 0)], _GRID[min(best + 1, len(_GRID) - 1)]
    x, fx = _GRID[best], values[best]
    if hi > lo:
        res = minimize_scalar(loss, bounds=(lo, hi), method="bounded",
                              options={"xatol": 1e-3})
        if res.fun < fx:
            x, fx = float(res.x), float(res.fun)
    return float(10.0 ** x), float(fx), at_1


def sentence_probability(tagger, E, P, offsets, method, k, temperature):
    """p_T of the best sequence of every sentence."""
    if method == "kbest":
        return KBestLists(tagger, E, P, offsets, k).best_probability(temperature)
    _, log_z = tempered_marginals(tagger, E, P, offsets, temperature)
    best = np.array([scores[0] for _, scores in tagger._kbest_codes(E, P, offsets, 1)])
    return np.exp(best / temperature - log_z)


class ConfidenceMixin:
    """Calibration, label marginals and sentence confidence of a chain tagger.

    For :class:`._base.ChainTagger`: it reads the tagger's ``_emissions``,
    ``_encode``, ``_kbest_codes`` and its threads (``_run``,
    ``_prediction_blocks``); ``calibrate`` sets ``calibration_``.
    """

    def _confidence_setting(self):
        """(method, k, temperature) of the current calibration, or the default
        (forward-backward at T = 1; see :mod:`._confidence`)."""
        cal = getattr(self, "calibration_", None)
        if cal is None:
            return "forward_backward", 20, 1.0
        return cal["method"], cal["k"], cal["temperature"]

    def _scores(self, X):
        """(data, E, P): the stacked X and its finite emission and chain scores."""
        check_is_fitted(self)
        data = as_stacked(X, self.n_features_in_)
        E, P = self._emissions(data)
        E = np.ascontiguousarray(E, dtype=np.float64)
        check_scores(E, P)
        return data, E, P

    @publishes
    def calibrate(self, X, y, method="forward_backward", k=20):
        """Fit the temperature of :meth:`predict_marginals` and
        :meth:`predict_confidence` on held-out sentences.

        The tagger's scores ``s(y) = w.F(x, y)`` are read as the distribution
        ``p(y | x) ~ exp(s(y) / T)``.  ``calibrate`` chooses ``T`` minimising the
        mean negative log probability of the gold labels of the tokens of
        ``(X, y)`` (temperature scaling [1]_ of the structured marginals), so
        that a label given probability 0.8 is right about 80% of the time.
        Use sentences the tagger was not trained on.

        Parameters
        ----------
        X : list of {sparse matrix, ndarray} of shape (n_tokens_i, n_features)
            Held-out sentences.
        y : list of array-like of shape (n_tokens_i,)
            Their gold labels.  A label not seen in training (probability 0
            at every temperature) counts in ``log_loss`` as probability
            1e-12 and does not move the temperature.
        method : {"forward_backward", "kbest"}, default="forward_backward"
            ``"forward_backward"``: the distribution over all sequences,
            exact for the tempered model.  ``"kbest"``: over the ``k`` best
            sequences only, an estimate in which a label that none of them
            gives a token has probability 0.  On CoNLL-2000 test (perceptron,
            PA and k-best SDM trained on 90% of the training file, calibrated
            on the rest) the token-level expected calibration error was
            0.9-1.0% with ``"forward_backward"`` and 1.7-2.1% with
            ``"kbest"`` (3.9%, 53% and 72% uncalibrated): a token on which
            all of the k best sequences agree gets probability 1 at every
            temperature.
        k : int, default=20
            Sequences per sentence of ``"kbest"``.

        Returns
        -------
        self : object
            With ``calibration_``: a dict of ``method``, ``k``,
            ``temperature`` and the mean log loss of the held-out gold labels
            at it (``log_loss``) and at ``T = 1`` (``log_loss_at_1``).

        References
        ----------
        .. [1] C. Guo, G. Pleiss, Y. Sun and K. Q. Weinberger, "On Calibration
           of Modern Neural Networks", ICML 2017.
        """
        if method not in METHODS:
            raise ValueError(f"method: must be one of {list(METHODS)}; got {method!r}")
        k = check_k(k)
        data, E, P = self._scores(X)
        # a label the model does not know costs the same at every temperature
        gold = self._encode(y, data, self.classes_, unseen=-1)
        temperature, loss, loss_1 = fit_temperature(self, E, P, data.offsets, gold, method, k)
        self.calibration_ = {"method": method, "k": k, "temperature": temperature,
                             "log_loss": loss, "log_loss_at_1": loss_1}
        return self

    @reads_model
    def predict_marginals(self, X):
        """Per-token label probabilities ``P(y_t = label | x)``.

        Forward-backward over all sequences of ``p(y | x) ~ exp(s(y) / T)``,
        ``s(y) = w.F(x, y)`` the tagger's score, at ``T = 1`` until
        :meth:`calibrate` fits a temperature on held-out sentences (then with
        its method, ``k`` and temperature).  For :class:`~sklstruct.CRFTagger`
        at ``T = 1`` these are the model's own probabilities; for the
        max-margin learners, whose scores are margins, not log-probabilities,
        they are an estimate that is only meaningful once calibrated (on
        CoNLL-2000 the fitted T was 7 for the perceptron, 0.3-0.4 for PA and
        k-best SDM).

        Parameters
        ----------
        X : list of {sparse matrix, ndarray} of shape (n_tokens_i, n_features)

        Returns
        -------
        marginals : list of ndarray of shape (n_tokens_i, n_classes)
            Columns in the order of ``classes_``; rows sum to 1.
            (sklearn-crfsuite's ``predict_marginals`` gives the same
            numbers for an uncalibrated CRF, as lists of dicts.)

        Raises
        ------
        ValueError
            For a sentence whose scores are too large for float64 to turn
            into probabilities (rows would sum further than 1e-3 from 1:
            scale the features down), or that no label sequence of a
            :class:`~sklstruct.ConstrainedTagger` keeps to its restrictions.
        """
        method, k, temperature = self._confidence_setting()
        data, E, P = self._scores(X)
        if method == "kbest":
            out = KBestLists(self, E, P, data.offsets, k).marginals(temperature)
            out = out.reshape(E.shape)
        else:
            out, _ = tempered_marginals(self, E, P, data.offsets, temperature)
        # (normalised rows: a value may pass 1 by a rounding error)
        return data.split(np.clip(out, 0.0, 1.0, out=out))

    @reads_model
    def predict_confidence(self, X):
        """The probability of each sentence's predicted label sequence (that of
        :meth:`predict`), under the distribution of :meth:`predict_marginals`.

        Parameters
        ----------
        X : list of {sparse matrix, ndarray} of shape (n_tokens_i, n_features)

        Returns
        -------
        confidence : ndarray of shape (n_sentences,)
            In [0, 1]; it underflows to 0 for a long sentence whose best
            sequence is one of very many likely ones.
        """
        method, k, temperature = self._confidence_setting()
        data, E, P = self._scores(X)
        return np.clip(sentence_probability(self, E, P, data.offsets, method, k, temperature),
                       0.0, 1.0)

"""CRFsuite's model in sklstruct's terms: its feature set, its vocabulary of
attribute names, and the learners of ``CRF(algorithm=...)``.

CRFsuite's linear chain (Okazaki's ``crf1d``) differs from the chain of
sklstruct's taggers in two ways, which these learners reproduce so that the
weights are CRFsuite's: a state feature is an (attribute, label) pair seen in
training (``feature.possible_states=1`` gives every pair), with more than
``feature.minfreq`` occurrences, and a transition feature a label bigram seen
in training (``feature.possible_transitions=1`` gives all); there are no
start or end weights.  Everything else (decoding, marginals) is the shared
chain model's.
"""
import time

import numpy as np
import scipy.sparse as sp

from .._progress import report
from .._viterbi import viterbi_decode
from ..chain import StackedSentences, as_stacked, pack_chain
from ..features._dict import DictSequenceVectorizer, _check_sentence, _item_features
from ..features._dict_kernel import FeatureWalk
from .._validation import MAX_ABS_FEATURE, check_sentence_list
from ..learners._base import ChainTagger
from ..learners._crf_shard import CRFShard
from ..learners.crf import CRFTagger


class Fitted:
    """What a fitted :class:`CRF` holds: the vectorizer, the tagger, the
    labels in CRFsuite's order (of first appearance) and each column's
    CRFsuite attribute name."""

    def __init__(self, vectorizer, tagger, labels, attributes):
        self.vectorizer = vectorizer
        self.tagger = tagger
        self.labels = list(labels)
        self.attributes = np.asarray(attributes, dtype=object)

    def predict_codes(self, X):
        return self.tagger.predict(self.vectorizer.transform(X))


# -- attributes --------------------------------------------------------------------------------
def _decoded(item, where):
    """``item`` (a token's features) with bytes keys and values decoded as
    UTF-8, as python-crfsuite reads them."""
    def text(s):
        try:
            return s.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"{where}: feature {s[:40]!r} is bytes that are not UTF-8 "
                             "text") from None
    if isinstance(item, dict):
        return {text(k) if isinstance(k, bytes) else k:
                text(v) if isinstance(v, bytes) else
                _decoded(v, where) if isinstance(v, (dict, list, tuple, set)) else v
                for k, v in item.items()}
    if isinstance(item, (list, tuple, set)):
        return [text(k) if isinstance(k, bytes) else k for k in item]
    return item


def _token_features(token, where):
    """The general path of the walk, taking bytes as python-crfsuite does."""
    return _item_features(_decoded(token, where), "", where, {})


class CRFsuiteDicts(DictSequenceVectorizer):
    """:class:`~sklstruct.DictSequenceVectorizer` that also takes bytes keys
    and values (UTF-8, as python-crfsuite), and whose vocabulary may give
    several names one column (a model read from a ``.crfsuite`` file: see
    :func:`crfsuite_vocabulary`)."""

    def _walk(self, X, names, fitting, store):
        sentences = check_sentence_list(X, "X", "sentences of feature dicts", item_ndim=1)
        walk = FeatureWalk(names, fitting, store, _token_features, _check_sentence,
                           MAX_ABS_FEATURE)
        walk.walk(sentences)
        return walk

    def _stack(self, walk, perm=None):
        data = super()._stack(walk, perm)
        n = getattr(self, "n_columns_", None)
        if n is None or n == data.n_features:
            return data
        m = data.matrix
        return StackedSentences(sp.csr_matrix((m.data, m.indices, m.indptr),
                                              shape=(m.shape[0], n)), data.offsets)


def crfsuite_name(name):
    """CRFsuite's name of a vectorizer column: ``key=value`` (a string
    value) is CRFsuite's ``key:value``.  The first ``=`` is taken as the
    separator, so a numeric feature whose key holds ``=`` is misnamed."""
    return name.replace("=", ":", 1)


def crfsuite_vocabulary(attributes):
    """The vectorizer names that mean each CRFsuite attribute: the name
    itself (a numeric feature) and each reading of one of its ``:`` as the
    key/value separator (``key=value``).  Returns name -> column."""
    vocabulary = {}
    for col, attr in enumerate(attributes):
        vocabulary.setdefault(attr, col)
        start = attr.find(":")
        while start >= 0:
            vocabulary.setdefault(attr[:start] + "=" + attr[start + 1:], col)
            start = attr.find(":", start + 1)
    return vocabulary


# -- CRFsuite's feature set --------------------------------------------------------------------
def _token_rows(data):
    m = data.matrix
    return m, np.repeat(np.arange(m.shape[0]), np.diff(m.indptr))


def crfsuite_states(data, codes, n_labels, min_freq=0.0, possible=False):
    """Sorted flat indices into W (F, L) of CRFsuite's state features: the
    (attribute, label) pairs that occur in training with a frequency (sum of
    values) of at least ``min_freq`` (CRFsuite's test); None (every pair)
    with ``possible``."""
    if possible:
        return None
    m, rows = _token_rows(data)
    ids = m.indices.astype(np.int64) * n_labels + codes[rows]
    seen = np.unique(ids)
    if min_freq <= 0 and not (m.data < 0).any():
        return seen
    freq = np.bincount(ids, weights=m.data, minlength=m.shape[1] * n_labels)
    return seen[freq[seen] >= min_freq]


def crfsuite_transitions(data, codes, n_labels, min_freq=0.0, possible=False):
    """Sorted flat indices into the transitions (L, L) of CRFsuite's
    transition features: the label bigrams seen in training (at least
    ``min_freq`` times), or all with ``possible``."""
    L = n_labels
    if possible:
        return np.arange(L * L, dtype=np.int64)
    inner = np.ones(len(codes), dtype=bool)
    inner[np.asarray(data.offsets[:-1], dtype=np.int64)] = False
    inner = inner[1:]
    pairs = codes[:-1][inner].astype(np.int64) * L + codes[1:][inner]
    count = np.bincount(pairs, minlength=L * L)
    return np.flatnonzero((count > 0) & (count >= min_freq))


class CRFsuiteLBFGS(CRFTagger):
    """:class:`~sklstruct.CRFTagger` on CRFsuite's feature set, with
    liblbfgs's stopping tests.  The settings that are not CRFTagger's are
    set by :class:`sklstruct.compat.CRF` on the instance: ``min_freq_``,
    ``possible_transitions_``, ``options_`` (keyword arguments of the
    optimiser)."""

    min_freq_ = 0.0
    possible_transitions_ = False
    options_ = None

    def _local_problem(self, X, y, warm):
        if warm:
            raise ValueError("warm_start: not available on CRFsuite's model")
        data = as_stacked(X)
        classes, codes = self._labels(y, data)
        L = len(classes)
        states = crfsuite_states(data, codes, L, self.min_freq_, self.all_possible_states)
        shard = CRFShard(data, codes, L, self._n_chain(L), states, n_jobs=self.n_jobs)
        return shard, data, classes, data.n_features, states

    def _chain_states(self, data, codes, n_labels):
        return crfsuite_transitions(data, codes, n_labels, self.min_freq_,
                                    self.possible_transitions_)

    def _optimizer_options(self):
        return dict(self.options_) if self.options_ else super()._optimizer_options()


# -- CRFsuite's online learners ------------------------------------------------------------------
class CRFsuiteOnline(ChainTagger):
    """CRFsuite's online trainers on its feature set: averaged perceptron
    (``"ap"``), passive-aggressive (``"pa"``, types 0, I and II of Crammer et
    al. 2006) and AROW (``"arow"``, Crammer, Kulesza & Dredze 2009), as
    CRFsuite implements them.

    For each sentence (shuffled each epoch) the Viterbi path ``y'`` is
    decoded; if it has ``d > 0`` wrong labels, with ``delta`` the
    difference of the feature counts of the gold path and of ``y'``
    (restricted to the model's features) and ``l = s(y') - s(gold) + e``:

    * ``ap``: ``w += delta``;
    * ``pa``: ``e = sqrt(d)`` (``error_sensitive``) or 1,
      ``w += tau delta`` with ``tau = l / ||delta||^2`` (type 0),
      ``min(c, l / ||delta||^2)`` (type I) or ``l / (||delta||^2 + 1/(2c))``
      (type II);
    * ``arow``: ``e = d``, a diagonal covariance ``S`` (from ``variance``),
      ``alpha = l / (gamma + sum_k S_k delta_k^2)``,
      ``w += alpha S delta`` and ``1/S_k += delta_k^2 / gamma``.

    ``ap`` and ``pa`` (with ``averaging``) predict with the average of the
    weights over all steps.  An epoch stops the training when its loss per
    sentence (``pa``, ``arow``; for ``ap`` the sentences' error rates) is
    below ``epsilon``.  An epoch without errors ends training too (the
    average is then that of all ``max_iter`` epochs, as if they had run).

    The sentences run in a Python loop (each decoded and updated by NumPy
    and the Viterbi kernel): this is for compatibility, not speed; the
    native online taggers (:class:`~sklstruct.StructuredPerceptronTagger`,
    :class:`~sklstruct.PassiveAggressiveTagger`) run in Cython.

    References
    ----------
    .. [1] M. Collins, "Discriminative Training Methods for Hidden Markov
       Models: Theory and Experiments with Perceptron Algorithms", EMNLP 2002.
    .. [2] K. Crammer, O. Dekel, J. Keshet, S. Shalev-Shwartz and Y. Singer,
       "Online Passive-Aggressive Algorithms", JMLR 7, 2006.
    .. [3] K. Crammer, A. Kulesza and M. Dredze, "Adaptive Regularization of
       Weight Vectors", NIPS 2009.
    .. [4] N. Okazaki, "CRFsuite: a fast implementation of Conditional Random
       Fields (CRFs)", 2007.
    """

    def __init__(self, algorithm="ap", max_iter=100, epsilon=0.0, pa_type=1, c=1.0,
                 error_sensitive=True, averaging=True, variance=1.0, gamma=1.0, min_freq=0.0,
                 all_possible_states=False, all_possible_transitions=False, verbose=0):
        self.algorithm = algorithm
        self.max_iter = max_iter
        self.epsilon = epsilon
        self.pa_type = pa_type
        self.c = c
        self.error_sensitive = error_sensitive
        self.averaging = averaging
        self.variance = variance
        self.gamma = gamma
        self.min_freq = min_freq
        self.all_possible_states = all_possible_states
        self.all_possible_transitions = all_possible_transitions
        self.verbose = verbose

    def _step(self, delta, ids, cost, d):
        """The step size of the update (and, AROW, the covariance update)."""
        if self.algorithm == "ap":
            return 1.0
        norm2 = float(delta @ delta)
        if self.algorithm == "pa":
            if self.pa_type == 0:
                return cost / norm2
            if self.pa_type == 1:
                return min(self.c, cost / norm2)
            return cost / (norm2 + 0.5 / self.c)
        S = self._cov[ids]
        return cost / (self.gamma + float(S @ (delta * delta)))

    def fit(self, X, y):
        data = as_stacked(X)
        classes, codes = self._labels(y, data)
        F, L = data.n_features, len(classes)
        # CRFsuite numbers the labels in order of first appearance, and its
        # Viterbi breaks ties towards the lower number: train in that order
        _, first = np.unique(codes, return_index=True)
        rank = np.empty(L, dtype=np.int32)
        rank[np.argsort(first)] = np.arange(L, dtype=np.int32)
        codes = rank[codes]
        n_w = F * L
        feature = np.zeros(n_w + L * L, dtype=bool)
        states = crfsuite_states(data, codes, L, self.min_freq, self.all_possible_states)
        feature[:n_w] = True if states is None else False
        if states is not None:
            feature[states] = True
        feature[n_w + crfsuite_transitions(data, codes, L, self.min_freq,
                                           self.all_possible_transitions)] = True
        w = np.zeros(n_w + L * L)
        ws = np.zeros_like(w)                     # sum of c_k * step_k * delta_k (averaging)
        self._cov = np.full_like(w, float(self.variance))
        m = data.matrix
        offsets = np.asarray(data.offsets, dtype=np.int64)
        rng = np.random.RandomState(0)
        zero2 = np.zeros((2, L))
        count, history, tic = 1, [], time.perf_counter()
        average = self.algorithm == "ap" or (self.algorithm == "pa" and self.averaging)
        for epoch in range(int(self.max_iter)):
            loss, errors = 0.0, 0
            W, T = w[:n_w].reshape(F, L), w[n_w:].reshape(L, L)
            P = np.vstack([T, zero2])
            for i in rng.permutation(len(data)):
                a, b = offsets[i], offsets[i + 1]
                x = m[a:b]
                gold = codes[a:b]
                E = np.asarray(x @ W)
                pred, score = viterbi_decode(E, P)
                d = int(np.count_nonzero(pred != gold))
                if not d:
                    count += 1
                    continue
                errors += d
                ids, delta = self._delta(x, gold, pred, F, L, feature)
                if not len(ids):
                    count += 1
                    continue
                s_gold = float(E[np.arange(b - a), gold].sum() + T[gold[:-1], gold[1:]].sum())
                extra = (float(d) if self.algorithm == "arow" else
                         np.sqrt(d) if self.error_sensitive else 1.0)
                cost = float(score) - s_gold + extra
                step = self._step(delta, ids, cost, d)
                if self.algorithm == "arow":
                    S = self._cov[ids]
                    w[ids] += step * S * delta
                    self._cov[ids] = 1.0 / (1.0 / S + delta * delta / self.gamma)
                else:
                    w[ids] += step * delta
                    ws[ids] += (step * count) * delta
                loss += cost if self.algorithm != "ap" else d / (b - a)
                count += 1
            rate = loss / len(data)
            record = {"iteration": epoch + 1, "loss": loss, "errors": errors,
                      "seconds": time.perf_counter() - tic}
            history.append(record)
            report(self.verbose, "Epoch", epoch + 1,
                   [("loss", f"{loss:.4g}"), ("wrong tokens", errors)], record["seconds"])
            if rate < self.epsilon:
                break
            if errors == 0:
                # nothing changes any more but the count of the averages: skip to the end
                count += len(data) * (int(self.max_iter) - epoch - 1)
                break
        del self._cov
        final = w - ws / count if average else w
        W = np.ascontiguousarray(final[:n_w].reshape(F, L)[:, rank])
        A = final[n_w:].reshape(L, L)[np.ix_(rank, rank)]
        self.classes_ = classes
        self.n_features_in_ = F
        self._set_weights(W, pack_chain(A, np.zeros(L), np.zeros(L)))
        self.n_iter_ = len(history)
        self.history_ = history
        return self

    @staticmethod
    def _delta(x, gold, pred, F, L, feature):
        """(feature ids, gold counts - predicted counts) over the model's
        features where they differ, for one sentence."""
        rows = np.repeat(np.arange(x.shape[0]), np.diff(x.indptr))
        cols = x.indices.astype(np.int64) * L
        ids = np.concatenate([cols + gold[rows], cols + pred[rows],
                              F * L + gold[:-1].astype(np.int64) * L + gold[1:],
                              F * L + pred[:-1].astype(np.int64) * L + pred[1:]])
        ones = np.ones(len(gold) - 1)
        values = np.concatenate([x.data, -x.data, ones, -ones])
        keep = feature[ids]
        ids, inverse = np.unique(ids[keep], return_inverse=True)
        delta = np.bincount(inverse, weights=values[keep], minlength=len(ids))
        nonzero = delta != 0
        return ids[nonzero], delta[nonzero]


"""Shared estimator machinery for the sequence taggers.

``BaseSequenceTagger`` owns the data contract (a list of per-sentence feature
matrices and a list of label sequences), validation, label encoding,
prediction and scoring.  ``BaseOnlineTagger`` adds what every online learner
shares: epochs, shuffling, lazy parameter averaging, ``verbose`` progress,
``warm_start`` and ``partial_fit``.  A learner only says which update rule its
Cython epoch applies.
"""
import time
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ._dual import DualState, dual_epoch
from ._online import COSTS, online_epoch
from ._viterbi import decode_corpus, kbest_decode, pack_chain


class StackedCorpus:
    """Sentences stacked into one CSR matrix plus sentence offsets.

    Attributes
    ----------
    indptr, indices, data : ndarrays (int64, int32, float64)
        The stacked CSR matrix, ready for the Cython kernels.
    offsets : ndarray of shape (n_sentences + 1,), int64
        Sentence ``i`` is rows ``offsets[i]:offsets[i + 1]``.
    n_features : int
    """

    def __init__(self, X, n_features=None):
        if isinstance(X, str) or sp.issparse(X) or (isinstance(X, np.ndarray) and X.ndim < 3):
            raise ValueError(
                "X must be a list of per-sentence feature matrices (n_tokens x n_features); "
                f"got a single {type(X).__name__}"
            )
        try:
            n_sentences = len(X)
        except TypeError:
            raise ValueError(f"X must be a list of per-sentence feature matrices; got {type(X).__name__}")
        if n_sentences == 0:
            raise ValueError("X contains no sentences")
        blocks = []
        for i, x in enumerate(X):
            if sp.issparse(x):
                x = x.tocsr()
            else:
                try:
                    x = np.asarray(x, dtype=np.float64)
                except (TypeError, ValueError) as exc:
                    raise ValueError(f"sentence {i}: features are not numeric ({exc})") from None
                if x.ndim != 2:
                    raise ValueError(
                        f"sentence {i}: expected a 2-D feature matrix (n_tokens x n_features); "
                        f"got an array of shape {x.shape}"
                    )
                x = sp.csr_matrix(x)
            if x.shape[0] == 0:
                raise ValueError(f"sentence {i} is empty (0 tokens)")
            if n_features is None:
                n_features = x.shape[1]
            elif x.shape[1] != n_features:
                raise ValueError(f"sentence {i} has {x.shape[1]} features; expected {n_features}")
            blocks.append(x)
        if n_features == 0:
            raise ValueError("X has 0 features")
        stacked = sp.vstack(blocks, format="csr", dtype=np.float64)
        stacked.sum_duplicates()
        lengths = np.fromiter((b.shape[0] for b in blocks), dtype=np.int64, count=n_sentences)
        self.offsets = np.zeros(n_sentences + 1, dtype=np.int64)
        np.cumsum(lengths, out=self.offsets[1:])
        self.lengths = lengths
        self.n_features = n_features
        self.indptr = stacked.indptr.astype(np.int64)
        self.indices = stacked.indices.astype(np.int32)
        self.data = np.ascontiguousarray(stacked.data, dtype=np.float64)
        bad = ~np.isfinite(self.data)
        if bad.any():
            row = np.searchsorted(self.indptr, np.flatnonzero(bad)[0], side="right") - 1
            i = np.searchsorted(self.offsets, row, side="right") - 1
            raise ValueError(
                f"sentence {i}, token {row - self.offsets[i]}: feature values must be finite "
                "(found NaN or infinity)"
            )
        if self.indices.size and (self.indices.min() < 0 or self.indices.max() >= n_features):
            raise ValueError("X has malformed sparse rows: column indices outside [0, n_features)")

    @property
    def n_sentences(self):
        return self.offsets.shape[0] - 1

    def split(self, labels):
        """Split a per-token array into per-sentence arrays."""
        return np.split(labels, self.offsets[1:-1])


def _concat_labels(y, lengths):
    """Check y against the sentence lengths and concatenate it into one array."""
    if y is None:
        raise ValueError("y is required: a list of label sequences, one per sentence")
    if isinstance(y, str):
        raise ValueError("y must be a list of label sequences; got a string")
    try:
        n = len(y)
    except TypeError:
        raise ValueError(f"y must be a list of label sequences; got {type(y).__name__}")
    if n != len(lengths):
        raise ValueError(f"X has {len(lengths)} sentences but y has {n} label sequences")
    parts = []
    for i, (yi, T) in enumerate(zip(y, lengths)):
        if isinstance(yi, str):
            raise ValueError(f"y[{i}] must be a sequence of labels; got the string {yi!r}")
        yi = np.asarray(yi)
        if yi.ndim != 1:
            raise ValueError(f"y[{i}] must be a 1-D sequence of labels; got shape {yi.shape}")
        if yi.shape[0] != T:
            raise ValueError(f"sentence {i} has {T} tokens but y[{i}] has {yi.shape[0]} labels")
        parts.append(yi)
    textual = [p.dtype.kind in "USO" for p in parts]
    if any(textual) and not all(textual):
        i = textual.index(not textual[0])
        raise ValueError(f"labels must be all strings or all numbers; y[0] and y[{i}] differ")
    try:
        labels = np.concatenate(parts)
        np.unique(labels[:2])
    except TypeError as exc:
        raise ValueError(f"labels must be all strings or all numbers ({exc})") from None
    if labels.dtype.kind == "f" and not np.isfinite(labels).all():
        raise ValueError("labels must not be NaN or infinite")
    if labels.dtype.kind == "O":
        kinds = {type(v) for v in labels}
        if len(kinds) > 1:
            raise ValueError(f"labels must be of one type; got {sorted(k.__name__ for k in kinds)}")
    return labels


class BaseSequenceTagger(BaseEstimator):
    """Base class of the linear-chain taggers: data contract, prediction, scoring.

    Subclasses set the learned attributes ``classes_``, ``coef_`` (n_labels x
    n_features), ``transition_coef_`` (n_labels x n_labels, from row label to
    column label), ``start_coef_`` and ``end_coef_`` (n_labels,) and
    ``n_features_in_``.
    """

    # -- data -----------------------------------------------------------------
    def _stack(self, X, reset):
        corpus = StackedCorpus(X, None if reset else self.n_features_in_)
        if reset:
            self.n_features_in_ = corpus.n_features
        return corpus

    def _encode(self, y, corpus, reset):
        labels = _concat_labels(y, corpus.lengths)
        if reset:
            self.classes_ = np.unique(labels)
        codes = np.searchsorted(self.classes_, labels)
        codes = np.clip(codes, 0, len(self.classes_) - 1)
        unseen = self.classes_[codes] != labels
        if unseen.any():
            raise ValueError(
                f"labels {sorted(set(labels[unseen].tolist()))[:10]} were not seen in the first "
                "fit; pass every label with partial_fit(..., classes=...) on the first call"
            )
        return codes.astype(np.int32)

    def _chain_params(self):
        return np.ascontiguousarray(pack_chain(self.transition_coef_, self.start_coef_, self.end_coef_))

    # -- prediction -----------------------------------------------------------
    def predict(self, X):
        """Most likely label sequence of each sentence (Viterbi).

        Parameters
        ----------
        X : list of {sparse matrix, ndarray} of shape (n_tokens_i, n_features)

        Returns
        -------
        y_pred : list of ndarray of shape (n_tokens_i,)
            The labels, in the type of ``classes_``.
        """
        check_is_fitted(self)
        corpus = self._stack(X, reset=False)
        W = np.ascontiguousarray(self.coef_.T, dtype=np.float64)
        codes = decode_corpus(corpus.indptr, corpus.indices, corpus.data, corpus.offsets, W,
                              self._chain_params())
        return corpus.split(self.classes_[codes])

    def predict_kbest(self, X, k=5):
        """The ``k`` best label sequences of each sentence, with their scores.

        Parameters
        ----------
        X : list of {sparse matrix, ndarray} of shape (n_tokens_i, n_features)
        k : int, default=5

        Returns
        -------
        result : list of (sequences, scores)
            For each sentence, a list of up to ``k`` label arrays, best first,
            and an ndarray of their scores w.F(x, y).
        """
        check_is_fitted(self)
        if not isinstance(k, Integral) or k < 1:
            raise ValueError(f"k must be an integer >= 1; got {k!r}")
        corpus = self._stack(X, reset=False)
        P = self._chain_params()
        result = []
        for i in range(corpus.n_sentences):
            rows = slice(corpus.indptr[corpus.offsets[i]], corpus.indptr[corpus.offsets[i + 1]])
            x = sp.csr_matrix(
                (corpus.data[rows], corpus.indices[rows],
                 corpus.indptr[corpus.offsets[i]:corpus.offsets[i + 1] + 1] - rows.start),
                shape=(corpus.lengths[i], corpus.n_features),
            )
            E = np.asarray(x @ self.coef_.T)
            paths, scores = kbest_decode(E, P, k)
            result.append(([self.classes_[p] for p in paths], scores))
        return result

    def score(self, X, y):
        """Token accuracy of ``predict(X)`` against ``y`` (sklearn's classifier
        convention, counted over tokens).  Use :mod:`sklstruct.metrics` scorers
        for chunk F1."""
        y_pred = self.predict(X)
        corpus_lengths = [len(p) for p in y_pred]
        y_true = _concat_labels(y, corpus_lengths)
        return float(np.mean(np.concatenate(y_pred) == y_true))


class BaseLinearChainLearner(BaseSequenceTagger):
    """What every learner of the linear-chain weights shares: the raw and
    lazily averaged weights, publishing them as ``coef_`` etc., ``fit`` with
    ``warm_start``.  Subclasses define ``_run_epochs`` (and may use
    ``_start`` to set up their own state)."""

    _parameter_constraints = {
        "k": [Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "average": ["boolean"],
        "shuffle": ["boolean"],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "warm_start": ["boolean"],
    }

    # -- state ----------------------------------------------------------------
    def _init_state(self, n_features, n_labels):
        self._W = np.zeros((n_features, n_labels))
        self._P = np.zeros((n_labels + 2, n_labels))
        self._W_sum = np.zeros_like(self._W) if self.average else None
        self._P_sum = np.zeros_like(self._P) if self.average else None
        self._n_seen = 0
        self.n_iter_ = 0
        self.history_ = []

    def _publish(self):
        """Expose the (averaged) weights as the public learned attributes."""
        W, P = self._W, self._P
        if self._W_sum is not None and self._n_seen > 0:
            W = W - self._W_sum / self._n_seen
            P = P - self._P_sum / self._n_seen
        L = P.shape[1]
        self.coef_ = np.array(W.T)
        self.transition_coef_ = P[:L].copy()
        self.start_coef_ = P[L].copy()
        self.end_coef_ = P[L + 1].copy()

    def _compatible_state(self, corpus):
        if self._W.shape[0] != corpus.n_features:
            raise ValueError(f"X has {corpus.n_features} features, but the model was fit with "
                             f"{self._W.shape[0]}")
        if (self._W_sum is not None) != bool(self.average):
            raise ValueError("cannot change `average` when continuing training; refit instead")

    # -- public API -----------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Train for ``max_iter`` epochs over the sentences.

        Parameters
        ----------
        X : list of {sparse matrix, ndarray} of shape (n_tokens_i, n_features)
            Token features of each sentence (see :class:`sklstruct.SequenceVectorizer`).
        y : list of array-like of shape (n_tokens_i,)
            Label sequences; labels may be strings or integers.

        Returns
        -------
        self : object
        """
        warm = self.warm_start and hasattr(self, "_W")
        corpus = self._stack(X, reset=not warm)
        if warm:
            codes = self._encode(y, corpus, reset=False)
            self._compatible_state(corpus)
        else:
            codes = self._encode(y, corpus, reset=True)
            self._init_state(corpus.n_features, len(self.classes_))
        if not warm:
            self._rng = check_random_state(self.random_state)
        self._start(corpus, codes, warm)
        self._run_epochs(corpus, codes, self.max_iter, self._rng)
        return self

    def _start(self, corpus, codes, warm):
        """Hook run by ``fit`` before the epochs (learner-specific state)."""


class BaseOnlineTagger(BaseLinearChainLearner):
    """Epoch loop shared by the online k-best learners (paper 000, Algorithm 4).

    Subclasses define ``_rule`` (the update rule code of ``_online.pyx``) and
    their ``__init__`` parameters.
    """

    def _rule_params(self):
        """Keyword arguments of ``online_epoch`` for this learner's update rule."""
        return {"rule": self._rule}

    def _run_epochs(self, corpus, y, n_epochs, rng):
        n = corpus.n_sentences
        for _ in range(n_epochs):
            order = rng.permutation(n) if self.shuffle else np.arange(n)
            tic = time.perf_counter()
            mistakes, updates, self._n_seen = online_epoch(
                corpus.indptr, corpus.indices, corpus.data, corpus.offsets, y,
                order.astype(np.int64), self._W, self._P, self._W_sum, self._P_sum,
                self.k, self._n_seen, **self._rule_params(),
            )
            seconds = time.perf_counter() - tic
            self.n_iter_ += 1
            self.history_.append(
                {"epoch": self.n_iter_, "mistakes": mistakes, "updates": updates,
                 "sentences": n, "seconds": seconds}
            )
            if self.verbose:
                print(f"-- Epoch {self.n_iter_}: mistakes {mistakes}/{n} "
                      f"({100.0 * mistakes / n:.2f}%), updates {updates}, {seconds:.3f} s",
                      flush=True)
        self._publish()

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, classes=None):
        """One epoch over the given sentences, continuing from the current weights.

        Parameters
        ----------
        X : list of {sparse matrix, ndarray} of shape (n_tokens_i, n_features)
        y : list of array-like of shape (n_tokens_i,)
        classes : array-like, optional
            All labels that will ever occur.  Needed on the first call only if
            later batches contain labels the first batch lacks.

        Returns
        -------
        self : object
        """
        first = not hasattr(self, "_W")
        corpus = self._stack(X, reset=first)
        if first:
            if classes is not None:
                self.classes_ = np.unique(np.asarray(classes))
                codes = self._encode(y, corpus, reset=False)
            else:
                codes = self._encode(y, corpus, reset=True)
            self._init_state(corpus.n_features, len(self.classes_))
            self._rng = check_random_state(self.random_state)
        else:
            codes = self._encode(y, corpus, reset=False)
            self._compatible_state(corpus)
        self._run_epochs(corpus, codes, 1, self._rng)
        return self


class BaseDualTagger(BaseLinearChainLearner):
    """Passes of a dual coordinate learner over working sets of sequences
    (paper 000, sections 3, 4.2 and 4.3): the shared machinery of k-best SDM
    and k-best LaRank.  The state (``DualState`` in ``_dual.pyx``) keeps every
    example's working set S_n, its dual variables and costs, and the weights
    stay equal to ``sum lambda dF`` (eq. 6) throughout.

    Subclasses set their ``__init__`` parameters and ``_schedule()``: the
    keyword arguments of ``dual_epoch`` that make the learner what it is.
    """

    _parameter_constraints = {
        **BaseLinearChainLearner._parameter_constraints,
        "C": [Interval(Real, 0, None, closed="neither")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "kappa": [Interval(Real, 0, None, closed="left")],
        "max_smo_iter": [Interval(Integral, 1, None, closed="left")],
        "cost": [StrOptions(set(COSTS))],
    }

    def _schedule(self):
        raise NotImplementedError

    def _start(self, corpus, codes, warm):
        if warm:
            same = (self._dual.n_examples == corpus.n_sentences
                    and np.array_equal(self._train_labels, codes)
                    and np.array_equal(self._train_lengths, corpus.lengths))
            if not same:
                raise ValueError("warm_start continues the dual optimisation of the same "
                                 "training set; X and y differ from the previous fit")
            if self._dual.C != float(self.C):
                raise ValueError(f"cannot change C from {self._dual.C} to {self.C} when "
                                 "continuing training (the dual variables sum to C); refit")
            if self._dual_cost != self.cost:
                raise ValueError(f"cannot change cost from {self._dual_cost!r} to "
                                 f"{self.cost!r} when continuing training (the working sets "
                                 "hold the costs of the old one); refit")
            return
        if self.kappa >= self.C:
            raise ValueError(f"kappa={self.kappa} must be smaller than C={self.C}: no dual "
                             "variable could exceed kappa, so SMO would never take a step")
        self._dual = DualState(corpus.offsets, codes, float(self.C))
        self._dual_cost = self.cost
        self._train_labels = codes
        self._train_lengths = corpus.lengths

    def _run_epochs(self, corpus, y, n_epochs, rng):
        n = corpus.n_sentences
        for _ in range(n_epochs):
            order = rng.permutation(n) if self.shuffle else np.arange(n)
            schedule = self._schedule()
            if schedule.get("n_reprocess", 0) > 0:
                # the random picks of support patterns, drawn after the order so
                # that a learner without them visits examples like the online ones
                self._dual.seed(int(rng.randint(1, 2**62)))
            tic = time.perf_counter()
            mistakes, steps, self._n_seen, _ = dual_epoch(
                self._dual, corpus.indptr, corpus.indices, corpus.data, corpus.offsets,
                order.astype(np.int64), self._W, self._P, self._W_sum, self._P_sum,
                self.k, self._n_seen, cost=COSTS[self.cost], tol=float(self.tol),
                kappa=float(self.kappa), max_smo_steps=int(self.max_smo_iter), **schedule,
            )
            seconds = time.perf_counter() - tic
            self.n_iter_ += 1
            record = {"epoch": self.n_iter_, "mistakes": mistakes, "smo_steps": steps,
                      "dual_objective": self._dual.objective,
                      "n_support": self._dual.n_support,
                      "n_sequences": self._dual.n_sequences, "sentences": n,
                      "seconds": seconds}
            self.history_.append(record)
            if self.verbose:
                print(f"-- Pass {self.n_iter_}: dual objective {record['dual_objective']:.6g}, "
                      f"support vectors {record['n_support']} "
                      f"({record['n_sequences']} sequences held), mistakes {mistakes}/{n}, "
                      f"SMO steps {steps}, {seconds:.3f} s", flush=True)
        self.n_support_ = self._dual.n_support
        self.dual_objective_ = self._dual.objective
        self._publish()

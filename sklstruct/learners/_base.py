"""What every learner of the linear-chain model shares.

:class:`ChainTagger` is the model's estimator face: the data contract (a list
of per-sentence feature matrices, a list of label sequences), label encoding,
``predict``, ``predict_kbest`` and ``score``.  :class:`ChainLearner` adds the
one training loop: ``fit`` (with ``warm_start``), ``partial_fit``, epochs,
shuffling, ``verbose`` progress and ``history_``; the weights, their layout and
lazy averaging live in :class:`sklstruct._chain.ChainWeights`.

A learner family (online, dual) implements ``_epoch``, one pass over the
examples in a given order with its Cython kernel; an estimator names its
update rule and the rule's parameters in ``_update_params()``.  State is only
assigned once every check has passed, so a failed call leaves the estimator
as it was.
"""
import copy
import math
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._chain import COSTS, ChainWeights, check_alloc
from .._validation import (MAX_C, MAX_K, N_JOBS_CONSTRAINT, check_classes, check_k,
                           check_label_sequences, n_threads, sentence_tags)
from .._viterbi import chain_order, decode_corpus, kbest_decode
from ..chain import as_stacked, pack_chain, unpack_chain
from ._confidence import (METHODS, KBestLists, check_scores, fit_temperature,
                          sentence_probability, tempered_marginals)
from ._dual import DualState, dual_epoch
from ._online import online_epoch


#: Tokens per range of prediction's threads, at least (the smallest ranges,
#: at the end, take a tenth of a millisecond to decode), and per thread.
_MIN_RANGE_TOKENS = 2048


_POOL = {"executor": None, "lock": threading.Lock()}
_POOL_PREFIX = "sklstruct-blocks"


def _submit(worker, n):
    """Futures of ``n`` calls of ``worker()`` run by the process's thread
    pool for the taggers' blocks, which has at least ``n`` threads.  The pool
    is kept from call to call: joblib's threading backend starts one at every
    call, 12 ms on this 2-core machine, more than decoding a test set takes.
    Submitting under the lock: a pool replaced by a larger one is shut down
    only after its callers have submitted (its queued work still runs)."""
    with _POOL["lock"]:
        executor = _POOL["executor"]
        if executor is None or executor._max_workers < n:
            if executor is not None:
                executor.shutdown(wait=False)
            executor = _POOL["executor"] = ThreadPoolExecutor(
                n, thread_name_prefix=_POOL_PREFIX)
        return [executor.submit(worker) for _ in range(n)]


def _forget_pool():
    # a forked child has the pool object but not its threads
    _POOL["executor"] = None
    _POOL["lock"] = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _identity(n):
    """(indptr, indices, data) of the n x n identity: decoding it with W = E
    decodes the emission scores E themselves."""
    return (np.arange(n + 1, dtype=np.int64), np.arange(n, dtype=np.int32), np.ones(n))


def _kind(labels):
    return {"U": "string", "S": "bytes"}.get(labels.dtype.kind, "number")


def new_dual(estimator, data, codes):
    """The state of a fresh dual optimisation (eq. 5) of ``estimator.C``."""
    return {"_dual": DualState(data.offsets, codes, float(estimator.C)),
            "_train_labels": codes, "_train_lengths": data.lengths}


def check_same_training_set(estimator, data, codes, what="the dual optimisation"):
    """Raise unless (data, codes) has the labels and sentence lengths that
    ``estimator`` was trained on (``_train_labels``, ``_train_lengths``)."""
    same = (np.array_equal(estimator._train_labels, codes)
            and np.array_equal(estimator._train_lengths, data.lengths))
    if not same:
        raise ValueError(f"warm_start continues {what} of the same training set; X and y "
                         "differ from the previous fit")


def check_same_dual(estimator, data, codes, fitted_C=None):
    """Raise unless warm-started dual optimisation can continue on (data, codes):
    the same training set, and the same C as the dual variables sum to
    (``fitted_C``; by default that of ``estimator._dual``)."""
    fitted_C = estimator._dual.C if fitted_C is None else fitted_C
    check_same_training_set(estimator, data, codes)
    if fitted_C != float(estimator.C):
        raise ValueError(f"C: cannot change C from {fitted_C} to {estimator.C} when "
                         "continuing training (the dual variables sum to C); refit")


class ChainTagger(BaseEstimator):
    """The linear-chain tagger: prediction and scoring from learned weights.

    Subclasses set the learned attributes ``classes_``, ``coef_`` (n_labels x
    n_features), ``transition_coef_`` (n_labels x n_labels, from row label to
    column label), ``start_coef_`` and ``end_coef_`` (n_labels,),
    ``trigram_coef_`` (n_labels x n_labels x n_labels, second-order chains;
    None for first order) and ``n_features_in_``.
    """

    def __getstate__(self):
        # the emission weights are mostly zeros (every feature gets a weight
        # for every label): pickled as a sparse matrix when that is smaller
        state = dict(super().__getstate__())
        coef = state.get("coef_")
        if (isinstance(coef, np.ndarray) and coef.ndim == 2
                and 3 * np.count_nonzero(coef) < coef.size):
            state["coef_"] = sp.csr_matrix(coef)
            state["_coef_pickled_sparse"] = True
        return state

    def __setstate__(self, state):
        if state.pop("_coef_pickled_sparse", False):
            # Fortran order, as fit leaves it: coef_.T is then the C-contiguous
            # W the decoders read, without a copy at every predict
            state["coef_"] = state["coef_"].toarray(order="F")
        super().__setstate__(state)

    def __sklearn_tags__(self):
        # X is a list of sentences (one sparse or dense matrix of token
        # features each), y a list of label sequences: no 2-D array in, not
        # a classifier (scikit-learn would stratify folds on y)
        return sentence_tags(super().__sklearn_tags__(), sparse=True)

    def _encode(self, y, data, classes, unseen=None):
        """Labels of ``y`` as int32 codes into ``classes`` (sorted), or raise
        naming labels that are not in it (``unseen``: their code instead)."""
        labels = check_label_sequences(y, data.lengths)
        if classes is None:
            return labels
        if _kind(labels) != _kind(classes):
            raise ValueError(f"y: labels are {_kind(labels)}s but the classes are "
                            f"{_kind(classes)}s")
        codes = np.clip(np.searchsorted(classes, labels), 0, len(classes) - 1)
        missing = classes[codes] != labels
        if unseen is not None:
            codes[missing] = unseen
        elif missing.any():
            raise ValueError(
                f"y: labels {sorted(set(labels[missing].tolist()))[:10]} were not seen in "
                f"training (the model knows {len(classes)} classes); pass every label "
                "with partial_fit(..., classes=...) on the first call, or refit")
        return codes.astype(np.int32)

    def _labels(self, y, data, classes=None):
        """(classes, codes) for a fresh fit: the sorted labels of ``y`` (or
        of ``classes=``, validated) and the int32 codes of ``y`` into them."""
        if classes is not None:
            classes, _ = check_classes(classes)
            return classes, self._encode(y, data, classes)
        classes, codes = np.unique(self._encode(y, data, None), return_inverse=True)
        return classes, codes.astype(np.int32)

    def _new_weights(self):
        """Forget what belonged to the weights being replaced (a temperature
        fitted by :meth:`calibrate`)."""
        self.__dict__.pop("calibration_", None)

    def _set_theta(self, theta, classes, n_features):
        """Publish a weight vector laid out as [W.ravel(), P.ravel()] (the CRF
        and boosting; P with trigram rows for a second-order chain) as the
        learned attributes."""
        F, L = n_features, len(classes)
        self._new_weights()
        self.classes_ = classes
        self.n_features_in_ = F
        self.coef_ = theta[:F * L].reshape(F, L).T.copy()
        (self.transition_coef_, self.start_coef_, self.end_coef_,
         self.trigram_coef_) = unpack_chain(theta[F * L:].reshape(-1, L))

    def _set_weights(self, W, P):
        """Publish W (F, L) and P (packed chain) as coef_ and the chain
        attributes, refusing non-finite weights."""
        # min and max carry any NaN or infinity without a temporary the size
        # of W (np.isfinite(W) was the last 7 MB of a CoNLL-2000 fit's peak)
        if not all(np.isfinite(f(a)) for a in (W, P) for f in (np.min, np.max)):
            raise ValueError("training produced non-finite weights; scale the features "
                             "down or lower C")
        self._new_weights()
        self.coef_ = W.T
        (self.transition_coef_, self.start_coef_, self.end_coef_,
         self.trigram_coef_) = unpack_chain(P)

    def _decoding_weights(self):
        """(W (F, L), P (L + 2, L)), C-contiguous, from the public attributes;
        W in float32 for a model stored so (:meth:`astype`), else float64."""
        dtype = np.float32 if self.coef_.dtype == np.float32 else np.float64
        return (np.ascontiguousarray(self.coef_.T, dtype=dtype),
                pack_chain(self.transition_coef_, self.start_coef_, self.end_coef_,
                           getattr(self, "trigram_coef_", None)))

    def astype(self, dtype):
        """A copy of the fitted tagger with its emission weights stored as ``dtype``.

        ``astype(np.float32)`` halves the memory of ``coef_`` (n_labels x
        n_features; pickled sparse, it halves its values) and speeds up the
        emission scores, which prediction reads from memory row by row;
        they are still added up in float64, as are the transition weights.
        Predictions can differ from the float64 model's only where two
        sequences' scores are within float32 rounding of each other (on
        CoNLL-2000 and Spanish NER test sets they were the same labels:
        ``benchmarks/bench_scale.py``).  The copy keeps no training state
        (raw and summed weights, dual variables): the online, dual and M3N
        learners refuse to continue training it; a CRF with
        ``warm_start=True`` starts from its weights, as from any fitted CRF.

        Parameters
        ----------
        dtype : {np.float32, np.float64, "float32", "float64"}

        Returns
        -------
        tagger : a new estimator of the same class
        """
        check_is_fitted(self)
        dtype = np.dtype(dtype)
        if dtype not in (np.float32, np.float64):
            raise ValueError(f"dtype: expected float32 or float64; got {dtype}")
        if not hasattr(self, "coef_"):
            raise ValueError(f"{type(self).__name__} with this kernel has no explicit "
                             "emission weights (coef_) to store in another dtype")
        new = copy.copy(self)
        for name in getattr(self, "_TRAINING_STATE", ()):
            new.__dict__.pop(name, None)
        new._resumable = False
        for name, value in list(new.__dict__.items()):
            if isinstance(value, (np.ndarray, list, dict)):
                new.__dict__[name] = copy.deepcopy(value)
        # Fortran order as fit leaves it: coef_.T is the C-contiguous W decoding reads
        new.coef_ = np.array(self.coef_, dtype=dtype, order="F")
        return new

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
        data = as_stacked(X, self.n_features_in_)
        result = [None] * len(data)
        offsets = data.offsets

        def labels(codes, a, b):
            # each thread turns the codes of its own sentences into labels,
            # beside the other threads' decoding
            result[a:b] = data.split(self.classes_.take(codes[offsets[a]:offsets[b]]), a, b)
        self._decode(data, then=labels)
        return result

    # -- threads over blocks of sentences -----------------------------------------
    def _blocks(self, block, n_sentences):
        """(start, stop) sentence ranges of whole blocks of ``block`` sentences,
        one range per thread of ``n_jobs``."""
        n_blocks = -(-n_sentences // block)
        n_jobs = n_threads(getattr(self, "n_jobs", None), n_blocks)
        cuts = np.linspace(0, n_blocks, n_jobs + 1).round().astype(int) * block
        return [(int(a), int(min(b, n_sentences))) for a, b in zip(cuts[:-1], cuts[1:])
                if a < min(b, n_sentences)]

    def _prediction_blocks(self, offsets):
        """(start, stop) sentence ranges for prediction's threads, of the
        sentences whose rows start at ``offsets`` (n_sentences + 1).

        One range when one thread does the work (``n_jobs``, at most one
        thread per ``_MIN_RANGE_TOKENS`` tokens).  For k threads, ranges of
        decreasing size, as OpenMP's "guided" schedule: each takes 1 / (2k)
        of the tokens not yet in a range, at least ``_MIN_RANGE_TOKENS``, each
        cut at the next sentence.  The threads take the next range as they finish
        one (:meth:`_run`), so a thread on a slower CPU (a virtual CPU whose
        host is busy) takes fewer and the threads finish together: with two
        threads, 2-8% less time than equal shares on this machine.  Results
        do not depend on the cuts."""
        n, total = len(offsets) - 1, int(offsets[-1])
        k = n_threads(getattr(self, "n_jobs", None), -(-total // _MIN_RANGE_TOKENS))
        if k <= 1:
            return [(0, n)] if n else []
        cuts, done = [], 0
        while done < total:
            done += max((total - done) // (2 * k), _MIN_RANGE_TOKENS)
            cuts.append(done)
        bounds = np.unique(np.r_[0, np.searchsorted(offsets, cuts[:-1]), n]).tolist()
        return list(zip(bounds[:-1], bounds[1:]))

    def _run(self, fn, ranges):
        """[fn(start, stop) for each range], in threads when there are
        several (the kernels release the GIL): the calling thread and
        ``n_jobs`` - 1 of a pool kept for the process (see :func:`_submit`)
        each take the next range not yet taken until none is left.  After an
        error no range is started and the error is raised once the ranges
        running have finished."""
        k = n_threads(getattr(self, "n_jobs", None), len(ranges))
        if k <= 1 or threading.current_thread().name.startswith(_POOL_PREFIX):
            # (inside a pool thread, waiting for the pool could deadlock)
            return [fn(a, b) for a, b in ranges]
        results = [None] * len(ranges)
        todo = iter(enumerate(ranges))      # next() on it is atomic under the GIL
        failed = []

        def worker():
            for i, (a, b) in todo:
                if failed:
                    return
                try:
                    results[i] = fn(a, b)
                except BaseException:
                    failed.append(True)
                    raise

        futures = _submit(worker, k - 1)
        try:
            worker()
        finally:
            wait(futures)            # no range left running on an error
        for f in futures:
            f.result()
        return results

    def _decode(self, data, then=None):
        """The Viterbi label codes of every token of ``data`` (StackedSentences),
        sentence blocks decoded in ``n_jobs`` threads into one array
        (``then``: see :meth:`_viterbi`)."""
        c = data.chain_data()
        W, P = self._decoding_weights()
        return self._viterbi(c.indptr, c.indices, c.data, c.offsets, W, P, then=then)

    def _viterbi(self, indptr, indices, values, offsets, W, P, allowed=None, then=None):
        """decode_corpus over blocks of sentences in ``n_jobs`` threads
        (``allowed``: the labels each row may take, see decode_corpus);
        ``then(codes, start, stop)``, if given, runs in the thread of each
        block of sentences once they are decoded."""
        order = chain_order(P, W.shape[1])
        out = np.empty(offsets[-1], dtype=np.int32)

        def block(a, b):
            decode_corpus(indptr, indices, values, offsets[a:b + 1], W, P, order, out, allowed)
            if then is not None:
                then(out, a, b)
        self._run(block, self._prediction_blocks(offsets))
        return out

    def _decode_emissions(self, E, P, offsets, then=None):
        """Viterbi codes of emission scores E (n_tokens, n_labels) given as
        they are: decode_corpus on the identity matrix with W = E."""
        return self._viterbi(*_identity(E.shape[0]), offsets,
                             np.ascontiguousarray(E, dtype=np.float64), P, then=then)

    def _emissions(self, data):
        """(E, P): the emission scores of every token (n_tokens, n_labels) and
        the packed chain parameters."""
        W, P = self._decoding_weights()
        return np.asarray(data.matrix @ W), P

    def predict_kbest(self, X, k=5):
        """The ``k`` best label sequences of each sentence, with their scores.

        Parameters
        ----------
        X : list of {sparse matrix, ndarray} of shape (n_tokens_i, n_features)
        k : int, default=5
            At most ``sklstruct._validation.MAX_K``; a sentence with fewer
            than ``k`` possible sequences gives all of them.

        Returns
        -------
        result : list of (sequences, scores)
            For each sentence, a list of up to ``k`` label arrays, best first,
            and an ndarray of their scores w.F(x, y).
        """
        check_is_fitted(self)
        k = check_k(k)
        data = as_stacked(X, self.n_features_in_)
        E, P = self._emissions(data)
        return [([self.classes_[p] for p in paths], scores)
                for paths, scores in self._kbest_codes(E, P, data.offsets, k)]

    def _kbest_codes(self, E, P, offsets, k):
        """(paths (k_s, T_s) int32 label codes, scores (k_s,)) of every
        sentence, by exact k-best Viterbi in ``n_jobs`` threads."""
        L = P.shape[1]
        check_alloc("the k-best scratch", k,
                    int(np.diff(offsets).max()) * L ** chain_order(P, L) + 1, 16)

        def block(first, stop):
            result = []
            for a, b in zip(offsets[first:stop], offsets[first + 1:stop + 1]):
                # no more sequences than exist: L ** T may be smaller than k
                k_s = k if (b - a) * math.log(L) >= math.log(k) else L ** int(b - a)
                paths, scores = kbest_decode(E[a:b], P, k_s)
                result.append((np.asarray(paths, dtype=np.int32), scores))
            return result
        return [r for part in self._run(block, self._prediction_blocks(offsets))
                for r in part]

    # -- confidence ------------------------------------------------------------------
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
        """
        method, k, temperature = self._confidence_setting()
        data, E, P = self._scores(X)
        if method == "kbest":
            out = KBestLists(self, E, P, data.offsets, k).marginals(temperature)
            out = out.reshape(E.shape)
        else:
            out, _ = tempered_marginals(self, E, P, data.offsets, temperature)
        # sums of probabilities may pass 1 by a rounding error
        return data.split(np.clip(out, 0.0, 1.0, out=out))

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

    def score(self, X, y):
        """Token accuracy of ``predict(X)`` against ``y`` (sklearn's classifier
        convention, counted over tokens).  Use :mod:`sklstruct.metrics` scorers
        for chunk F1."""
        check_is_fitted(self)
        data = as_stacked(X, self.n_features_in_)
        y_true = check_label_sequences(y, data.lengths)
        return float(np.mean(np.concatenate(self.predict(data)) == y_true))


class ChainLearner(ChainTagger):
    """The training loop of every learner of the chain weights.

    Families define ``_new_state(data, codes)`` (optional), ``_check_warm``
    (optional), ``_epoch(data, codes, order, rng)`` returning a dict of what
    the pass did, ``_after_epoch(data, codes)`` (optional, untimed) and
    ``_describe(record)`` for ``verbose``.
    """

    _parameter_constraints = {
        "k": [Interval(Integral, 1, MAX_K, closed="both")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "average": ["boolean"],
        "shuffle": ["boolean"],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "warm_start": ["boolean"],
        "order": [Interval(Integral, 1, 2, closed="both")],
        "n_jobs": N_JOBS_CONSTRAINT,
    }

    #: What training keeps beyond the published weights: needed to continue
    #: training, not to predict.  A pickle keeps it only when the estimator
    #: will continue (``warm_start=True``, or trained by ``partial_fit``).
    _TRAINING_STATE = ("_weights", "_rng", "_dual", "_dual_cost", "_train_labels",
                       "_train_lengths", "_sgd", "_aux", "_support", "_support_vectors",
                       "_solver", "_beta", "_edge", "_C")

    def __getstate__(self):
        state = super().__getstate__()
        if not (self.warm_start or state.get("_resumable", False)):
            for name in self._TRAINING_STATE:
                state.pop(name, None)
        return state

    def __copy__(self):
        # a copy in memory keeps everything (pickling is what drops the state)
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        return new

    def __deepcopy__(self, memo):
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        new.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return new

    def _check_resumable(self):
        """Raise if the model was unpickled without its training state."""
        if hasattr(self, "classes_") and not hasattr(self, "_weights"):
            raise ValueError(
                "this model has no training state (the raw and summed weights): it was "
                "pickled (saved, or sent to another process), and a pickle keeps the state "
                "only for an estimator with warm_start=True or trained by partial_fit, or "
                "it was made by astype; it can predict but not continue training: set "
                "warm_start=True before fitting (and saving) to continue later, or refit")

    # -- hooks of a learner family ------------------------------------------------
    def _new_state(self, data, codes):
        """Learner state beyond the weights, for a fresh start (dict of
        attributes); ``self._weights`` and ``self.classes_`` are already set."""
        return {}

    def _weight_features(self, data):
        """Rows of the explicit emission weights W (a kernel model keeps none)."""
        return data.n_features

    def _check_warm(self, data, codes):
        """Raise if training cannot continue from the current state on this data."""

    def _epoch(self, data, codes, order, rng):
        raise NotImplementedError

    def _describe(self, record):
        raise NotImplementedError

    def _after_epoch(self, data, codes):
        """What to record after a pass beyond the pass itself, outside its
        timing (dict; none by default)."""
        return {}

    # -- the loop -------------------------------------------------------------------
    def _prepare(self, X, y, continuing, classes=None):
        """Validate everything; return (data, codes, classes) without touching self."""
        if continuing:
            if classes is not None:
                given, _ = check_classes(classes)
                if not (given.shape == self.classes_.shape
                        and _kind(given) == _kind(self.classes_)
                        and np.all(given == self.classes_)):
                    raise ValueError(f"classes: {given.tolist()[:10]} is not the same as on the "
                                     f"first call to partial_fit, {self.classes_.tolist()[:10]}; "
                                     "refit to change the label set")
            data = as_stacked(X, self.n_features_in_)
            codes = self._encode(y, data, self.classes_)
            if self._weights.average != bool(self.average):
                raise ValueError("average: cannot change average when continuing training; "
                                 "refit")
            if self._weights.order != self.order:
                raise ValueError(f"order: cannot change order from {self._weights.order} to "
                                 f"{self.order} when continuing training; refit")
            self._check_warm(data, codes)
            return data, codes, self.classes_
        data = as_stacked(X)
        classes, codes = self._labels(y, data, classes)
        return data, codes, classes

    def _train(self, X, y, n_epochs, continuing, classes=None, final=False):
        data, codes, classes = self._prepare(X, y, continuing, classes)
        return self._train_encoded(data, codes, classes, n_epochs, continuing, final=final)

    def _train_encoded(self, data, codes, classes, n_epochs, continuing, publish=True,
                       final=False):
        """The loop of :meth:`_train` on validated data (StackedSentences) and
        label codes; ``publish=False`` leaves the public weights for a later
        :meth:`_publish` (a caller running epochs one at a time); ``final``:
        publish for a fit that was not asked to continue (see
        :meth:`_prediction_weights`)."""
        saved = dict(self.__dict__)
        try:
            if not continuing:
                for name in self._TRAINING_STATE:      # of an earlier fit
                    self.__dict__.pop(name, None)
                weights = ChainWeights(self._weight_features(data), len(classes),
                                       bool(self.average), int(self.order))
                state = {"_weights": weights, "_rng": check_random_state(self.random_state),
                         "classes_": classes, "n_features_in_": data.n_features,
                         "n_iter_": 0, "history_": []}
                self.__dict__.update(state)
                self.__dict__.update(self._new_state(data, codes))
            chain_data = data.chain_data()
            if chain_data.allowed is not None and chain_data.allowed[1].size \
                    and chain_data.allowed[1].max() >= len(classes):
                raise ValueError(f"allowed labels must lie in [0, {len(classes)})")
            for _ in range(n_epochs):
                n = len(data)
                order = (self._rng.permutation(n) if self.shuffle
                         else np.arange(n)).astype(np.int64)
                tic = time.perf_counter()
                record = self._epoch(chain_data, codes, order, self._rng)
                self.n_iter_ += 1
                record = {"epoch": self.n_iter_, **record, "sentences": n,
                          "seconds": time.perf_counter() - tic}
                record.update(self._after_epoch(chain_data, codes))
                self.history_.append(record)
                if self.verbose:
                    print(self._describe(record), flush=True)
            if publish:
                self._publish(final)
        except BaseException:
            # A fresh start is undone whole.  Continued training fails before
            # its first update (validation, allocation), or, interrupted or
            # diverging, keeps the public weights of the last completed call
            # (same shapes as classes_ and n_features_in_) while history_ and
            # n_iter_ count the epochs that ran.
            if not continuing:
                self.__dict__.clear()
                self.__dict__.update(saved)
            raise
        return self

    def _prediction_weights(self, final=False):
        """(W, P) to predict with: the averaged weights (or the raw ones);
        ``final``: a fit that will not continue, averaged in place."""
        return self._weights.averaged(inplace=final)

    def _publish(self, final=False):
        """Expose the weights to predict with as the public learned attributes."""
        self._set_weights(*self._prediction_weights(final))

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Train for ``max_iter`` epochs over the sentences.

        Parameters
        ----------
        X : list of {sparse matrix, ndarray} of shape (n_tokens_i, n_features)
            Token features of each sentence (see :class:`sklstruct.SequenceVectorizer`).
        y : list of array-like of shape (n_tokens_i,)
            Label sequences; labels may be strings or numbers (one kind).

        Returns
        -------
        self : object
        """
        if self.warm_start:
            self._check_resumable()
        self._train(X, y, self.max_iter, self.warm_start and hasattr(self, "_weights"),
                    final=not self.warm_start)
        self._resumable = False
        return self


class OnlineLearner(ChainLearner):
    """Online learners: each example updates the weights by the estimator's
    rule (``_update_params()["rule"]``, a function of ``learners/_online.pyx``)."""

    def _epoch(self, data, codes, order, rng):
        mistakes, updates = online_epoch(data, codes, order, self._weights, k=int(self.k),
                                         **self._update_params())
        return {"mistakes": mistakes, "updates": updates}

    def _describe(self, r):
        return (f"-- Epoch {r['epoch']}: mistakes {r['mistakes']}/{r['sentences']} "
                f"({100.0 * r['mistakes'] / r['sentences']:.2f}%), updates {r['updates']}, "
                f"{r['seconds']:.3f} s")

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, classes=None):
        """One epoch over the given sentences, continuing from the current weights.

        Parameters
        ----------
        X : list of {sparse matrix, ndarray} of shape (n_tokens_i, n_features)
        y : list of array-like of shape (n_tokens_i,)
        classes : array-like, optional
            All labels that will ever occur.  Needed on the first call only if
            later batches contain labels the first batch lacks; on later calls
            it must be the same set (or None), as in scikit-learn.

        Returns
        -------
        self : object
        """
        self._check_resumable()
        self._train(X, y, 1, hasattr(self, "_weights"), classes)
        self._resumable = True
        return self


class DualLearner(ChainLearner):
    """Passes of a dual coordinate learner over working sets of sequences
    (Mancev & Todorovic, sections 3, 4.2 and 4.3): k-best SDM and LaRank.  The
    state (``DualState`` in ``learners/_dual.pyx``) keeps every example's
    working set S_n, its dual variables and costs, and the weights stay equal
    to ``sum lambda dF`` (eq. 6) throughout."""

    _parameter_constraints = {
        **ChainLearner._parameter_constraints,
        "C": [Interval(Real, 0, MAX_C, closed="right")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "kappa": [Interval(Real, 0, None, closed="left")],
        "max_smo_iter": [Interval(Integral, 1, None, closed="left")],
        "cost": [StrOptions(set(COSTS))],
    }

    def _new_state(self, data, codes):
        if self.kappa >= self.C:
            raise ValueError(f"kappa={self.kappa} must be smaller than C={self.C}: no dual "
                             "variable could exceed kappa, so SMO would never take a step")
        return {**new_dual(self, data, codes), "_dual_cost": self.cost}

    def _check_warm(self, data, codes):
        check_same_dual(self, data, codes)
        if self._dual_cost != self.cost:
            raise ValueError(f"cost: cannot change cost from {self._dual_cost!r} to "
                             f"{self.cost!r} when continuing training (the working sets "
                             "hold the costs of the old one); refit")

    def _epoch(self, data, codes, order, rng):
        params = self._update_params()
        if params.get("n_reprocess", 0) > 0:
            # the random picks of support patterns, drawn after the order so
            # that a learner without them visits examples like the online ones
            self._dual.seed(int(rng.randint(1, 2**62)))
        mistakes, steps, _ = dual_epoch(
            self._dual, data, order, self._weights, int(self.k), cost=COSTS[self.cost],
            tol=float(self.tol), kappa=float(self.kappa), max_smo_steps=int(self.max_smo_iter),
            **params)
        self.n_support_ = self._dual.n_support
        self.dual_objective_ = self._dual.objective
        return {"mistakes": mistakes, "smo_steps": steps,
                "dual_objective": self._dual.objective, "n_support": self._dual.n_support,
                "n_sequences": self._dual.n_sequences}

    def _describe(self, r):
        return (f"-- Pass {r['epoch']}: dual objective {r['dual_objective']:.6g}, "
                f"support vectors {r['n_support']} ({r['n_sequences']} sequences held), "
                f"mistakes {r['mistakes']}/{r['sentences']}, SMO steps {r['smo_steps']}, "
                f"{r['seconds']:.3f} s")

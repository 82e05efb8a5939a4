"""What every learner of the linear-chain model shares.

:class:`ChainTagger` is the model's estimator face: the data contract (a list
of per-sentence feature matrices, a list of label sequences), label encoding,
``predict``, ``predict_kbest`` and ``score`` (calibration, marginals and
confidence come from :class:`._confidence.ConfidenceMixin`; the threads over
sentences from :mod:`sklstruct._parallel`).  :class:`ChainLearner` adds the
one training loop: ``fit`` (with ``warm_start``), epochs, shuffling,
``verbose`` progress and ``history_``; the weights, their layout and lazy
averaging live in :class:`sklstruct._chain.ChainWeights`.

A learner family (:mod:`._families`: online, dual) implements ``_epoch``, one
pass over the examples in a given order with its Cython kernel; an estimator
names its update rule and the rule's parameters in ``_update_params()``.
State is only assigned once every check has passed, so a failed call leaves
the estimator as it was.
"""
import copy
import math
import time
from numbers import Integral

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from .._dask import is_bag, map_bag
from .._publish import publishes, reads_model
from .._chain import ChainWeights, split_rows
from .._parallel import block_ranges, guided_ranges, run
from .._progress import progress_bar
from .._stacking import CsrParts, csr_parts, decode_parts
from .._validation import (MAX_ABS_FEATURE, MAX_K, N_JOBS_CONSTRAINT, check_alloc,
                           check_classes, check_k, check_label_sequences, sentence_tags)
from .._viterbi import chain_order, decode_corpus, kbest_decode
from ..chain import as_stacked, pack_chain, unpack_chain
from ._confidence import ConfidenceMixin
from ._dual import DualState


def _identity(n):
    """(indptr, indices, data) of the n x n identity: decoding it with W = E
    decodes the emission scores E themselves."""
    return (np.arange(n + 1, dtype=np.int64), np.arange(n, dtype=np.int32), np.ones(n))


def _kind(labels):
    return {"U": "string", "S": "bytes"}.get(labels.dtype.kind, "number")


def new_dual(estimator, data, codes):
    """The state of a fresh dual optimisation (eq. 5) of ``estimator.C``: of
    the dual learners (:mod:`._families`) and M3N's working-set solver."""
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


class ChainTagger(ConfidenceMixin, BaseEstimator):
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

    def _set_theta(self, theta, classes, n_features, states=None):
        """Publish a weight vector laid out as [W.ravel(), P.ravel()] (the CRF
        and boosting; P with trigram rows for a second-order chain) as the
        learned attributes.  ``states``: W is given only at these sorted flat
        indices ``f * L + l`` (the rest 0), and ``coef_`` is filled from them
        directly (no dense W beside it: a third of the end-of-fit peak on
        CoNLL-2000)."""
        F, L = n_features, len(classes)
        n_w = F * L if states is None else len(states)
        self._new_weights()
        self.classes_ = classes
        self.n_features_in_ = F
        if states is None:
            self.coef_ = theta[:n_w].reshape(F, L).T.copy()
        else:
            self.coef_ = np.zeros((L, F))
            self.coef_.reshape(-1)[(states % L) * F + states // L] = theta[:n_w]
        (self.transition_coef_, self.start_coef_, self.end_coef_,
         self.trigram_coef_) = unpack_chain(theta[n_w:].reshape(-1, L))

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
                           self.trigram_coef_))

    @reads_model
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
        top = float(np.abs(self.coef_).max(initial=0.0))
        if top > np.finfo(dtype).max:
            # the copy would hold inf weights and predict other labels, silently
            raise ValueError(f"dtype: the largest emission weight, {top:.3g}, is beyond "
                             f"{dtype}'s range ({np.finfo(dtype).max:.3g}); keep float64")
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

    @reads_model
    def predict(self, X):
        """Most likely label sequence of each sentence (Viterbi).

        Parameters
        ----------
        X : list of {sparse matrix, ndarray} of shape (n_tokens_i, n_features)
            Or a ``dask.bag`` of them (with a ``dask.distributed`` client).

        Returns
        -------
        y_pred : list of ndarray of shape (n_tokens_i,)
            The labels, in the type of ``classes_``; for a bag, the bag of
            them, computed on the workers.
        """
        check_is_fitted(self)
        if is_bag(X):
            return map_bag(self, X, "predict")
        result = self._predict_in_place(X)
        if result is not None:
            return result
        data = as_stacked(X, self.n_features_in_)
        result = [None] * len(data)
        offsets = data.offsets

        def labels(codes, a, b):
            # each thread turns the codes of its own sentences into labels,
            # beside the other threads' decoding
            result[a:b] = data.split(self.classes_.take(codes[offsets[a]:offsets[b]]), a, b)
        self._decode(data, then=labels)
        return result

    def _predict_in_place(self, X):
        """:meth:`predict` of a list of canonical CSR sentences (what the
        vectorizers give), each checked and decoded where it lies
        (:func:`sklstruct._stacking.decode_parts`) rather than stacked first:
        the list form then costs little more than the stacked one.  None
        when ``X`` is anything else or a sentence fails a check: the caller
        then stacks ``X`` (:func:`sklstruct.chain.as_stacked`), which names
        the problem."""
        if type(X) is not list or not X or type(self)._decode is not ChainTagger._decode:
            return None
        parts = csr_parts(X, self.n_features_in_)
        if not isinstance(parts, CsrParts):
            return None
        W, P = self._decoding_weights()
        _check_weight_rows(W, parts.n_features)
        order = chain_order(P, W.shape[1])
        offsets = parts.offsets
        out = np.empty(offsets[-1], dtype=np.int32)
        result = [None] * len(X)
        failed = []

        def block(a, b):
            if decode_parts(parts, a, b, W, P, order, out, MAX_ABS_FEATURE) >= 0:
                failed.append(a)
            else:
                result[a:b] = split_rows(self.classes_.take(out[offsets[a]:offsets[b]]),
                                         offsets[a:b + 1])
        self._run(block, self._prediction_blocks(offsets))
        return None if failed else result

    # -- threads over blocks of sentences (sklstruct._parallel) ----------------------
    def _blocks(self, block, n_sentences):
        """(start, stop) sentence ranges of whole blocks of ``block`` sentences,
        one range per thread of ``n_jobs``."""
        return block_ranges(getattr(self, "n_jobs", None), block, n_sentences)

    def _prediction_blocks(self, offsets):
        """(start, stop) sentence ranges for prediction's threads, of the
        sentences whose rows start at ``offsets`` (n_sentences + 1): see
        :func:`sklstruct._parallel.guided_ranges`."""
        return guided_ranges(getattr(self, "n_jobs", None), offsets)

    def _run(self, fn, ranges):
        """[fn(start, stop) for each range], in ``n_jobs`` threads: see
        :func:`sklstruct._parallel.run`."""
        return run(getattr(self, "n_jobs", None), fn, ranges)

    def _decode(self, data, then=None):
        """The Viterbi label codes of every token of ``data`` (StackedSentences),
        sentence blocks decoded in ``n_jobs`` threads into one array
        (``then``: see :meth:`_viterbi`)."""
        c = data.chain_data()
        W, P = self._decoding_weights()
        return self._viterbi(c.indptr, c.indices, c.data, c.offsets, W, P, c.n_features,
                             then=then)

    def _viterbi(self, indptr, indices, values, offsets, W, P, n_columns, allowed=None,
                 then=None):
        """decode_corpus over blocks of sentences in ``n_jobs`` threads
        (``allowed``: the labels each row may take, see decode_corpus);
        ``then(codes, start, stop)``, if given, runs in the thread of each
        block of sentences once they are decoded.  ``n_columns``: the
        columns the rows were validated against, which W must have."""
        _check_weight_rows(W, n_columns)
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
                             np.ascontiguousarray(E, dtype=np.float64), P, E.shape[0],
                             then=then)

    def _emissions(self, data):
        """(E, P): the emission scores of every token (n_tokens, n_labels) and
        the packed chain parameters."""
        W, P = self._decoding_weights()
        return np.asarray(data.matrix @ W), P

    @reads_model
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


    @reads_model
    def score(self, X, y):
        """Token accuracy of ``predict(X)`` against ``y`` (sklearn's classifier
        convention, counted over tokens).  Use :mod:`sklstruct.metrics` scorers
        for chunk F1."""
        check_is_fitted(self)
        data = as_stacked(X, self.n_features_in_)
        y_true = check_label_sequences(y, data.lengths)
        return float(np.mean(np.concatenate(self.predict(data)) == y_true))


def _check_weight_rows(W, n_columns):
    """RuntimeError unless the weights W have a row per column of the data.

    The rows were checked against ``n_features_in_``, W read from ``coef_``
    later: a fit in another thread may have replaced one of them (the
    kernels read W at the rows' column indices, unchecked)."""
    if W.shape[0] != n_columns:
        raise RuntimeError(f"the weights have {W.shape[0]} feature rows but the data "
                           f"{n_columns} columns: was the model refitted while it "
                           "predicted?")


class ChainLearner(ChainTagger):
    """The training loop of every learner of the chain weights.

    Families (:mod:`._families`) define ``_new_state(data, codes)``
    (optional), ``_check_warm`` (optional), ``_epoch(data, codes, order, rng)``
    returning a dict of what the pass did, ``_after_epoch(data, codes)``
    (optional, untimed) and ``_describe(record)``, the ``verbose`` line of a
    pass (:func:`sklstruct._progress.progress_line`).
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
    #: Each family adds its own (``ChainLearner._TRAINING_STATE + (...)``).
    _TRAINING_STATE = ("_weights", "_rng", "_train_labels", "_train_lengths")

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
        :meth:`_prediction_weights`).

        fit and partial_fit run it on a working copy (``@publishes``): a
        failure publishes nothing.  Continued training updates its training
        state (the raw weights, the dual variables) in place, so a
        continuation interrupted part way keeps the model and counters of the
        last completed call but has moved that state on by the examples
        seen."""
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
        n = len(data)
        # verbose >= 2: a bar of the sentences visited, which a family's
        # _epoch may advance as it goes (self._bar), the epochs' lines above it
        bar = progress_bar(self.verbose, n_epochs * n, "sentences", type(self).__name__)
        try:
            for _ in range(n_epochs):
                order = (self._rng.permutation(n) if self.shuffle
                         else np.arange(n)).astype(np.int64)
                tic = time.perf_counter()
                self._bar, counted = bar, bar.n if bar is not None else 0
                record = self._epoch(chain_data, codes, order, self._rng)
                self.n_iter_ += 1
                record = {"epoch": self.n_iter_, **record, "sentences": n,
                          "seconds": time.perf_counter() - tic}
                record.update(self._after_epoch(chain_data, codes))
                self.history_.append(record)
                if bar is not None:
                    bar.update(counted + n - bar.n)    # what _epoch did not count
                    bar.write(self._describe(record))
                elif self.verbose:
                    print(self._describe(record), flush=True)
        finally:
            self.__dict__.pop("_bar", None)
            if bar is not None:
                bar.close()
        if publish:
            self._publish(final)
        return self

    def _prediction_weights(self, final=False):
        """(W, P) to predict with: the averaged weights (or the raw ones);
        ``final``: a fit that will not continue, averaged in place."""
        return self._weights.averaged(inplace=final)

    def _publish(self, final=False):
        """Expose the weights to predict with as the public learned attributes."""
        self._set_weights(*self._prediction_weights(final))

    @publishes
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

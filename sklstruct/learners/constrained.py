"""Restricted decoding over any tagger: transition constraints and a tag dictionary."""
import copy
import warnings
from numbers import Integral

import numpy as np
from sklearn.base import _fit_context, clone
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._publish import publishes, reads_model
from .._validation import N_JOBS_CONSTRAINT
from .._viterbi import chain_order
from ..chain import FORBIDDEN_TRANSITION, allowed_transitions, as_stacked, restrict_scores
from ._base import ChainTagger


def _delegate(name):
    """A read-only attribute of the wrapped tagger (not stored twice)."""
    def get(self):
        try:
            return getattr(self.__dict__["estimator_"], name)
        except KeyError:
            raise AttributeError(name) from None
    return property(get, doc=f"``estimator_.{name}``.")


def _allowed_lists(dictionary, keys, L):
    """(aptr, alab) of tokens with word ``keys``: the dictionary's labels of
    a word in it, every label otherwise."""
    words, indptr, labels = dictionary
    n = keys.shape[0]
    pos = np.searchsorted(words, keys)
    found = pos < len(words)
    found[found] = words[pos[found]] == keys[found]
    pos = np.where(found, pos, 0)
    if len(words):
        counts = np.where(found, indptr[pos + 1] - indptr[pos], L)
        start = np.where(found, indptr[pos], len(labels))
    else:
        counts, start = np.full(n, L), np.zeros(n, dtype=np.int64)
    source = np.concatenate([labels, np.arange(L, dtype=np.int32)])
    aptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=aptr[1:])
    alab = source[np.repeat(start - aptr[:-1], counts) + np.arange(aptr[-1])]
    return aptr, alab.astype(np.int32)


class ConstrainedTagger(ChainTagger):
    """Decode a tagger's model under exact search restrictions: transition
    constraints and a tag dictionary.

    ``fit`` learns the restrictions from the training data and trains a
    clone of ``estimator``.  With a tag dictionary, the learners whose
    training decodes through the shared k-best candidates (perceptron, PA,
    RPA, MIRA, SWVP, SWVM, SDM, LaRank, and M3N with ``solver="working_set"``)
    search only the allowed labels in training too, so that the model
    learns for the search it will make and training is faster at many
    labels (the gold labels are always allowed); the CRF, M3N trained by SGD or structured SMO,
    boosting and the shards of :class:`ParameterMixingTagger` train on all
    labels.  Transition constraints apply to
    prediction only.  Prediction searches only the label sequences the
    restrictions allow: ``predict`` and ``score``
    (Viterbi), ``predict_kbest`` (exact k-best), ``predict_marginals``,
    ``predict_confidence`` and ``calibrate`` (forward-backward or k-best).
    Each returns exactly what the unrestricted decoder would return if the
    sequences outside the restrictions did not exist.

    * ``constraints``: which label may follow which.  With a chunk scheme
      (``"bio"``/``"IOB2"``, ``"IOBES"``, ``"BILOU"``) an ``I-X`` label comes
      only after ``B-X`` or ``I-X``, and so on (see
      :func:`sklstruct.chain.allowed_transitions`); or a boolean matrix.
    * ``label_dictionary``: a tag dictionary, as POS taggers use.  A word
      seen at least ``label_dictionary`` times in training may only take the
      labels it was seen with; rarer and unseen words keep every label.
      Words are known by the keys :class:`sklstruct.SequenceVectorizer`
      gives each token (a hash of its word), so ``X`` must come from it.
      With a first-order chain, Viterbi then runs over the allowed labels
      only, in time ``sum_t |A_{t-1}| |A_t|`` instead of ``T L^2``.

    When the two together allow no sequence of a sentence (a word seen only
    as ``I-NP`` after one seen only as ``O``), the sequence breaking the
    fewest constraints is returned, keeping to the dictionary.

    Parameters
    ----------
    estimator : tagger
        An unfitted sklstruct tagger (any learner; second-order chains too).
    constraints : {"bio", "IOB2", "IOBES", "BILOU"} or array-like of bool or None, default=None
        A scheme, or ``allowed[a, b]`` whether label ``classes_[b]`` may
        follow ``classes_[a]``: of shape (n_labels, n_labels), or (n_labels +
        2, n_labels) with the labels that may start and end a sentence as
        its last two rows.
    label_dictionary : int or None, default=None
        The minimum count of a word in training for the tag dictionary to
        restrict it; None: no dictionary (it needs X with word keys).  With
        44 to 200 labels, 5 raised the perceptron's accuracy by 0.04-0.36
        and cut its time per epoch (``benchmarks/results/scale.md``).
    n_jobs : int or None, default=None
        Threads for prediction (blocks of sentences; results do not depend
        on it).

    Attributes
    ----------
    estimator_ : the fitted clone of ``estimator``
    classes_ : ndarray of shape (n_labels,)
    n_features_in_ : int
    coef_, transition_coef_, start_coef_, end_coef_, trigram_coef_
        The wrapped tagger's weights (``estimator_``'s attributes).
    allowed_transitions_ : ndarray of bool of shape (n_labels + 2, n_labels) or None
        The constraints in the layout of :func:`sklstruct.chain.pack_chain`.
    n_dictionary_words_ : int
        Words the tag dictionary restricts (0 without one).

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklstruct import (ConstrainedTagger, SequenceVectorizer,
    ...                        StructuredPerceptronTagger)
    >>> from sklstruct.datasets import make_chunking_corpus
    >>> X, y = make_chunking_corpus(300, random_state=0)
    >>> model = make_pipeline(
    ...     SequenceVectorizer(templates=("word", "pos"), window=1),
    ...     ConstrainedTagger(StructuredPerceptronTagger(max_iter=5, random_state=0),
    ...                       constraints="bio", label_dictionary=2))
    >>> model.fit(X, y).score(X, y) > 0.9
    True

    References
    ----------
    .. [1] A. Ratnaparkhi, "A Maximum Entropy Model for Part-of-Speech
       Tagging", EMNLP 1996 (the tag dictionary).
    .. [2] L. A. Ramshaw and M. P. Marcus, "Text Chunking using
       Transformation-Based Learning", Third Workshop on Very Large Corpora,
       1995 (the IOB chunk tags).
    .. [3] L. Ratinov and D. Roth, "Design Challenges and Misconceptions in
       Named Entity Recognition", CoNLL 2009 (BILOU).
    """

    _parameter_constraints = {
        "estimator": [HasMethods(["fit", "predict"])],
        "constraints": [None, StrOptions({"bio", "IOB2", "IOBES", "BILOU", "iob2", "iobes",
                                          "bilou"}), "array-like"],
        "label_dictionary": [None, Interval(Integral, 1, None, closed="left")],
        "n_jobs": N_JOBS_CONSTRAINT,
    }

    coef_ = _delegate("coef_")
    transition_coef_ = _delegate("transition_coef_")
    start_coef_ = _delegate("start_coef_")
    end_coef_ = _delegate("end_coef_")
    trigram_coef_ = _delegate("trigram_coef_")

    def __init__(self, estimator, constraints=None, label_dictionary=None, n_jobs=None):
        self.estimator = estimator
        self.constraints = constraints
        self.label_dictionary = label_dictionary
        self.n_jobs = n_jobs

    @publishes
    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y):
        """Fit a clone of ``estimator`` on (X, y) and learn the restrictions.

        Parameters
        ----------
        X : list of {sparse matrix, ndarray} of shape (n_tokens_i, n_features)
            With ``label_dictionary``, the output of a
            :class:`sklstruct.SequenceVectorizer` (it carries the words' keys).
        y : list of array-like of shape (n_tokens_i,)

        Returns
        -------
        self : object
        """
        if not isinstance(self.estimator, ChainTagger):
            raise TypeError("estimator: expected an sklstruct tagger; got "
                            f"{type(self.estimator).__name__}")
        if isinstance(self.estimator, ConstrainedTagger):
            raise TypeError("estimator: a ConstrainedTagger inside another; give both "
                            "restrictions to one")
        data = as_stacked(X)
        if self.label_dictionary is not None and data.keys is None:
            raise ValueError("label_dictionary: X has no word keys; make X with "
                             "sklstruct.SequenceVectorizer (its tokens need a word)")
        classes, codes = self._labels(y, data)
        allowed = self._transitions(classes)
        if allowed is not None:
            self._warn_broken(allowed, codes, data.offsets, classes)
        dictionary = (self._dictionary(data.keys, codes, len(classes))
                      if self.label_dictionary is not None else None)
        train = data
        if dictionary is not None:
            # the learners that decode through the shared candidates search
            # the allowed labels in training too (the gold ones always are)
            train = data._restricted(_allowed_lists(dictionary, data.keys, len(classes)))
        estimator = clone(self.estimator).fit(train, y)
        if not np.array_equal(estimator.classes_, classes):
            raise ValueError("estimator: its classes_ differ from the sorted labels of y")
        self.__dict__.pop("calibration_", None)
        self.estimator_ = estimator
        self.classes_ = classes
        self.n_features_in_ = data.n_features
        self.allowed_transitions_ = allowed
        self._word_labels = dictionary
        self.n_dictionary_words_ = 0 if dictionary is None else len(dictionary[0])
        return self

    # -- learning the restrictions --------------------------------------------------
    def _transitions(self, classes):
        L = len(classes)
        if self.constraints is None:
            return None
        if isinstance(self.constraints, str):
            return allowed_transitions(self.constraints, classes)
        allowed = np.asarray(self.constraints)
        if allowed.dtype != bool or allowed.shape not in ((L, L), (L + 2, L)):
            raise ValueError(f"constraints: expected a boolean matrix of shape ({L}, {L}) or "
                             f"({L + 2}, {L}) for the {L} labels; got {allowed.dtype} of "
                             f"shape {allowed.shape}")
        if allowed.shape == (L, L):
            allowed = np.vstack([allowed, np.ones((2, L), dtype=bool)])
        return allowed.copy()

    def _warn_broken(self, allowed, codes, offsets, classes):
        L = len(classes)
        first, last = offsets[:-1], offsets[1:] - 1
        inner = np.ones(codes.shape[0], dtype=bool)
        inner[first] = False                        # a pair (t-1, t) within a sentence
        t = np.flatnonzero(inner)
        broken = (np.count_nonzero(~allowed[codes[t - 1], codes[t]])
                  + np.count_nonzero(~allowed[L, codes[first]])
                  + np.count_nonzero(~allowed[L + 1, codes[last]]))
        if broken:
            warnings.warn(f"constraints: {broken} label transitions (or first or last "
                          "labels) of the training sentences break the constraints; "
                          "predictions never will", UserWarning, stacklevel=3)

    def _dictionary(self, keys, codes, L):
        """(sorted word keys, indptr, labels): the labels seen with each word
        seen at least ``label_dictionary`` times, ascending."""
        words, word, count = np.unique(keys, return_inverse=True, return_counts=True)
        kept = np.flatnonzero(count >= self.label_dictionary)
        renumber = np.full(len(words), -1, dtype=np.int64)
        renumber[kept] = np.arange(len(kept))
        rows = renumber[word]
        pairs = np.unique(rows[rows >= 0] * L + codes[rows >= 0])
        indptr = np.searchsorted(pairs // L, np.arange(len(kept) + 1)).astype(np.int64)
        return words[kept], indptr, (pairs % L).astype(np.int32)

    # -- restricted decoding ----------------------------------------------------------
    def _allowed_lists(self, data):
        """(aptr, alab): the labels each token of ``data`` may take, ascending."""
        if self._word_labels is None:
            return None
        if data.keys is None:
            raise ValueError("X has no word keys for the tag dictionary; make X with the "
                             "sklstruct.SequenceVectorizer that made the training X")
        return _allowed_lists(self._word_labels, data.keys, len(self.classes_))

    def _label_mask(self, data):
        """(n_tokens, n_labels) bool: the labels each token may take, or None."""
        lists = self._allowed_lists(data)
        if lists is None:
            return None
        aptr, alab = lists
        mask = np.zeros((data.matrix.shape[0], len(self.classes_)), dtype=bool)
        mask[np.repeat(np.arange(len(aptr) - 1), np.diff(aptr)), alab] = True
        return mask

    def _emissions(self, data):
        check_is_fitted(self)
        E, P = self.estimator_._emissions(data)
        return restrict_scores(E, P, self._label_mask(data), self.allowed_transitions_)

    def _decode(self, data, then=None):
        check_is_fitted(self)
        est = self.estimator_
        if hasattr(est, "coef_"):
            W, P = est._decoding_weights()
            _, P = restrict_scores(None, P, None, self.allowed_transitions_)
            if self._word_labels is None or chain_order(P, W.shape[1]) == 1:
                c = data.chain_data()
                return self._viterbi(c.indptr, c.indices, c.data, c.offsets, W, P,
                                     c.n_features, allowed=self._allowed_lists(data),
                                     then=then)
        # a kernel model or a second-order chain: the masked emission scores
        return self._decode_emissions(*self._emissions(data), data.offsets, then)

    @reads_model
    def astype(self, dtype):
        """A copy whose wrapped tagger stores its emission weights as ``dtype``
        (see :meth:`sklstruct.StructuredPerceptronTagger.astype`).

        Parameters
        ----------
        dtype : {np.float32, np.float64, "float32", "float64"}

        Returns
        -------
        tagger : ConstrainedTagger
        """
        check_is_fitted(self)
        new = copy.copy(self)
        new.estimator_ = self.estimator_.astype(dtype)
        return new

    def _kbest_codes(self, E, P, offsets, k):
        # the sequences outside the restrictions, when fewer than k are inside:
        # dropped (the best one is kept when no sequence keeps to them)
        out = []
        for paths, scores in super()._kbest_codes(E, P, offsets, k):
            keep = max(1, int(np.count_nonzero(scores > FORBIDDEN_TRANSITION / 2)))
            out.append((paths[:keep], scores[:keep]))
        return out

"""LabelDictionaryFeatures: which labels a token's word took in the training
data, as features of the token and of its neighbours, cross-fitted on the
training sentences."""
import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted

from .._publish import reads_model
from .._validation import InputTypeError, describe
from ._crossfit import FromLabels, check_window, label_types, offset_name, read_labels
from ._sequence import SequenceVectorizer


class LabelDictionaryFeatures(FromLabels):
    """Label-dictionary features: the labels each word took in training.

    :meth:`fit` counts, for every value of each key template (by default the
    lower-cased word), how often the training tokens with that value took
    each label; each token then gets, for each key and each label (or label
    type, see ``labels``), the fraction of the training occurrences of its
    key that had that label, and the same features of its neighbours up to
    ``window`` tokens away.  A word seen as ``B-PER`` 8 times and ``B-ORG``
    twice gives ``lower:B-PER=0.8`` and ``lower:B-ORG=0.2``; a word unseen
    in training (or seen fewer than ``min_count`` times) gives none.  This
    is the label (or tag) dictionary of feature-based taggers: Ratshaparkhi's
    tag dictionary, the "word's most frequent tag" features of chunkers and
    NER systems (e.g. Ratinov & Roth 2009).

    **Cross-fitting.**  :meth:`fit_transform` (which a
    :class:`~sklearn.pipeline.Pipeline` calls on the training data) does not
    give the training tokens the dictionary it learned from them: every
    training word would then find its own label, and the learner would trust
    the feature more than it deserves on new text.  As scikit-learn's
    :class:`~sklearn.preprocessing.TargetEncoder`, it splits the sentences
    into ``cv`` folds and gives each fold the dictionary of the other folds
    (a word met in one fold only gets no feature there).  So
    ``fit(X, y).transform(X)`` differs from ``fit_transform(X, y)``: the
    first is the full dictionary's features of ``X``, the second the
    out-of-fold ones; :meth:`transform` of new sentences always uses the
    dictionary of all the training data.

    Parameters
    ----------
    keys : list or tuple of str, default=("lower",)
        Templates of :class:`~sklstruct.SequenceVectorizer` (without
        offsets) whose value is the dictionary's key: ``"lower"`` (the
        lower-cased word), ``"word"``, ``"shape"``, ``"suffix3"``,
        ``"lower|pos"`` (the word with its POS tag)...  Each key gives its
        own features.  A key reading a column the tokens lack (``pos`` of
        plain words) is left out at fit; :attr:`keys_` lists those kept.
    labels : {"label", "type", "both"}, default="label"
        What the features count: the labels themselves (``B-PER``), their
        chunk types (``PER``: conlleval's reading, ``O`` stays ``O``), or
        both.
    window : int, default=1
        Also give the features of the tokens up to ``window`` positions
        before and after each token.
    min_count : int, default=1
        A key seen fewer times than this in the (out-of-fold) training data
        gives no feature.
    cv : int, default=5
        Folds of the cross-fitting of :meth:`fit_transform` (at least 2).
    shuffle : bool, default=True
        Shuffle the sentences before splitting them into folds.
    random_state : int, RandomState instance or None, default=None
        Seeds the shuffling of the folds (with ``shuffle``); same seed,
        same folds.

    Attributes
    ----------
    keys_ : list of str
        The key templates kept (see ``keys``).
    classes_ : ndarray of str objects
        What the features count: the labels, their types, or both (the
        types after the labels).
    counts_ : scipy.sparse.csr_matrix of shape (n_values, n_classes)
        How often each key value took each of :attr:`classes_` in the
        training data; rows in the order of :attr:`vectorizer_`'s columns.
    vectorizer_ : SequenceVectorizer
        The fitted vectorizer of the key values.
    n_features_out_ : int
        Number of output columns.

    See Also
    --------
    GazetteerFeatures : The training chunks' strings, matched in new sentences.
    sklstruct.features.feature_set : The rich presets include both.

    Notes
    -----
    The counts are one sparse product of the tokens' key indicators (the
    compiled featurizer's output) and their label indicators; the features
    of a set of sentences are one product of their key indicators with the
    normalized counts, and the neighbours' one product with a shift matrix:
    no Python loop over tokens.

    References
    ----------
    Ratinov, L. and Roth, D. (2009). Design challenges and misconceptions in
    named entity recognition. In *Proceedings of the Thirteenth Conference
    on Computational Natural Language Learning (CoNLL)*, 147-155.

    Micci-Barreca, D. (2001). A preprocessing scheme for high-cardinality
    categorical attributes in classification and prediction problems.
    *ACM SIGKDD Explorations Newsletter*, 3(1), 27-32.

    Examples
    --------
    >>> from sklstruct.features import LabelDictionaryFeatures
    >>> X = [["Rome", "is", "big"], ["Paris", "is", "Paris"]]
    >>> y = [["B-LOC", "O", "O"], ["B-LOC", "O", "B-PER"]]
    >>> ld = LabelDictionaryFeatures(window=0).fit(X, y)
    >>> ld.transform([["paris", "is"]])[0].toarray()
    array([[0.5, 0.5, 0. ],
           [0. , 0. , 1. ]])
    >>> ld.get_feature_names_out().tolist()
    ['lower:B-LOC', 'lower:B-PER', 'lower:O']
    """

    _parameter_constraints = {
        "keys": [list, tuple],
        "labels": [StrOptions({"label", "type", "both"})],
        **FromLabels._parameter_constraints,
    }

    def __init__(self, keys=("lower",), *, labels="label", window=1, min_count=1, cv=5,
                 shuffle=True, random_state=None):
        self.keys = keys
        self.labels = labels
        self.window = window
        self.min_count = min_count
        self.cv = cv
        self.shuffle = shuffle
        self.random_state = random_state

    # -- fit ------------------------------------------------------------------------

    def _check_keys(self):
        keys = list(self.keys)
        if not keys:
            raise ValueError("keys: give at least one key template (e.g. 'lower')")
        for i, key in enumerate(keys):
            if not isinstance(key, str):
                raise InputTypeError(f"keys[{i}]: expected a template string such as "
                                     f"'lower'; got {describe(key)}")
            if "[" in key or key == "bias":
                raise ValueError(f"keys[{i}]={key!r}: a key is a template of the token "
                                 "itself, without an offset and not 'bias' (window gives "
                                 "the neighbours' features)")
        if len(set(keys)) != len(keys):
            raise ValueError(f"keys: {keys} gives a key twice")
        return keys

    def _keys_and_labels(self, X, y):
        """The fitted key vectorizer, the key indicators of X, the label
        indicators of y, and the sentence offsets."""
        keys = self._check_keys()
        check_window(self.window)
        vectorizer = SequenceVectorizer(keys, window=0, missing_columns="drop")
        try:
            W = vectorizer.fit_transform(X)
        except ValueError as exc:
            if "no template" in str(exc).lower() or "templates" in str(exc):
                raise ValueError(f"keys: {keys}: none of them can be read from the tokens "
                                 f"({exc})") from None
            raise
        starts = np.asarray(W.offsets, dtype=np.intp)
        codes, classes = read_labels(y, np.diff(starts), type(self).__name__)
        columns = []
        if self.labels in ("label", "both"):
            columns.append((codes, classes))
        if self.labels in ("type", "both"):
            type_names, type_of = np.unique(label_types(classes), return_inverse=True)
            if self.labels == "both":
                # a type that is a label too (O) would only repeat it
                keep = ~np.isin(type_names, classes)
                renumber = np.cumsum(keep) - 1
                type_names = type_names[keep]
                token_type = np.where(keep[type_of], renumber[type_of], -1)[codes]
            else:
                token_type = type_of[codes]
            columns.append((token_type, type_names.astype(object)))
        n = len(codes)
        blocks, names = [], []
        for c, names_c in columns:
            rows = np.flatnonzero(c >= 0)
            blocks.append(sp.csr_matrix((np.ones(len(rows)), (rows, c[rows])),
                                        shape=(n, len(names_c))))
            names.extend(names_c.tolist())
        T = sp.hstack(blocks, format="csr")
        self._n_first = blocks[0].shape[1]
        return vectorizer, W.matrix.tocsr(), T, starts, np.asarray(names, dtype=object)

    def _layout(self, counts):
        """``counts`` (key value x class) as the matrix that maps a token's
        key indicators to its features: each value's fractions in the block
        of its key template; values seen fewer than min_count times give
        nothing."""
        counts = sp.csr_matrix(counts)
        # the occurrences of each value: the sum of its first block (labels,
        # or types), every token having one label and one type
        total = np.asarray(counts[:, :self._n_first].sum(axis=1)).ravel()
        scale = np.where(total >= self.min_count, 1.0 / np.maximum(total, 1), 0.0)
        fractions = sp.diags(scale) @ counts
        fractions = fractions.tocoo()
        n_classes = counts.shape[1]
        cols = self._key_of_value[fractions.row] * n_classes + fractions.col
        layout = sp.csr_matrix((fractions.data, (fractions.row, cols)),
                               shape=(counts.shape[0], len(self.keys_) * n_classes))
        layout.eliminate_zeros()
        return layout

    def _key_of(self, vectorizer):
        """The key template of each column of the key vectorizer."""
        index = {t: i for i, t in enumerate(vectorizer.templates_)}
        key_of = np.empty(vectorizer.n_features_out_, dtype=np.intp)
        for name, col in vectorizer.vocabulary_.items():
            template = name.split("=", 1)[0]
            key_of[col] = index[template]
        return key_of

    def _fit(self, X, y):
        vectorizer, W, T, starts, classes = self._keys_and_labels(X, y)
        self.vectorizer_ = vectorizer
        self.keys_ = list(vectorizer.templates_)
        self.classes_ = classes
        self._key_of_value = self._key_of(vectorizer)
        self._window = check_window(self.window)
        self.counts_ = (W.T @ T).tocsr()
        self._layout_ = self._layout(self.counts_)
        self.n_features_out_ = (2 * self._window + 1) * len(self.keys_) * len(classes)
        return (W, T, starts), starts

    def _out_of_fold(self, state, fold):
        W, T, starts = state
        token_fold = np.repeat(fold, np.diff(starts))
        rows, order = [], []
        for f in range(int(self.cv)):
            inside = np.flatnonzero(token_fold == f)
            W_f = W[inside]
            rows.append(W_f @ self._layout(self.counts_ - W_f.T @ T[inside]))
            order.append(inside)
        R = sp.vstack(rows, format="csr")
        return R[np.argsort(np.concatenate(order), kind="stable")]

    @reads_model
    def transform(self, X):
        """The label-dictionary features of every token (the dictionary of
        all the training data).

        Parameters
        ----------
        X : iterable of sentences

        Returns
        -------
        Xt : StackedSentences
            One float64 CSR row per token: for each offset ``-window ..
            window``, each key of :attr:`keys_` and each of
            :attr:`classes_`, the fraction of the key value's training
            occurrences with that class.
        """
        check_is_fitted(self, "counts_")
        W = self.vectorizer_.transform(X)
        starts = np.asarray(W.offsets, dtype=np.intp)
        return self._output(W.matrix.tocsr() @ self._layout_, starts)

    _fitted_attribute = "counts_"

    def _names_at(self, o):
        """The names of the columns of the token ``o`` positions away."""
        return [f"{key}{offset_name(o)}:{c}" for key in self.keys_ for c in self.classes_]


__all__ = ["LabelDictionaryFeatures"]

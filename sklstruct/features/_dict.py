"""DictSequenceVectorizer: sentences of feature dicts (the input of
sklearn-crfsuite and python-crfsuite) to the taggers' input."""
from collections.abc import Mapping
from numbers import Integral

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.utils.validation import check_is_fitted

from .._publish import publishes, reads_model
from .._validation import MAX_ABS_FEATURE, check_sentence_list
from ..chain import StackedSentences
from ._base import _SentencesOut


#: Deepest nesting of dicts and lists in a token's features: python-crfsuite's
#: formats nest a level or two; deeper is a structure that contains itself.
_MAX_DEPTH = 100


def _item_features(item, prefix, where, out, depth=0):
    """Add the (name, value) attributes of one token's features to ``out``,
    named as python-crfsuite names them (see :class:`DictSequenceVectorizer`)."""
    if depth > _MAX_DEPTH:
        raise ValueError(f"{where}: features nested deeper than {_MAX_DEPTH} levels (under "
                         f"{prefix[:60]!r}...): a dict or list that contains itself?")
    if isinstance(item, Mapping):
        for key, value in item.items():
            name = prefix + str(key)
            if isinstance(value, str):
                out[f"{name}={value}"] = out.get(f"{name}={value}", 0.0) + 1.0
            elif isinstance(value, (bool, np.bool_, Integral, float, np.floating)):
                try:
                    value = float(value)
                except OverflowError:
                    raise ValueError(f"{where}: feature {name!r} has an integer value too "
                                     "large for a float") from None
                if not np.isfinite(value) or abs(value) > MAX_ABS_FEATURE:
                    raise ValueError(f"{where}: feature {name!r} has the value {value}; "
                                     f"values must be finite and at most {MAX_ABS_FEATURE:g} "
                                     "in absolute value (scale the features)")
                out[name] = out.get(name, 0.0) + value
            elif isinstance(value, (Mapping, list, tuple, set, frozenset)):
                _item_features(value, name + ":", where, out, depth + 1)
            else:
                raise TypeError(f"{where}: feature {name!r} has a value of type "
                                f"{type(value).__name__}; expected str, a number, a bool, a "
                                "dict or a list of str")
    elif isinstance(item, (list, tuple, set, frozenset)):
        for key in item:
            if not isinstance(key, str):
                raise TypeError(f"{where}: a feature list holds a {type(key).__name__}; "
                                "expected str")
            out[prefix + key] = out.get(prefix + key, 0.0) + 1.0
    else:
        raise TypeError(f"{where}: expected a dict (or list) of features; got "
                        f"{type(item).__name__}")
    return out


class DictSequenceVectorizer(_SentencesOut, TransformerMixin, BaseEstimator):
    """Sentences of feature dicts, as sklearn-crfsuite takes them, to the
    taggers' input.

    Each sentence is a list of tokens, each token a dict of features exactly
    as for sklearn-crfsuite's ``CRF.fit`` (python-crfsuite's ``ItemSequence``
    formats): ``{"key": "value"}`` is the attribute ``key=value`` with value
    1; ``{"key": 1.5}`` the attribute ``key`` with value 1.5 (real-valued
    features, such as word-embedding dimensions, flow through as they are);
    ``{"key": True}`` value 1 (``False``: 0, left out); a nested dict or a
    list of strings prefixes its keys with ``key:``; a token may also be a
    plain list of attribute names.  Keys may hold any characters and vary
    from token to token.  Switching from sklearn-crfsuite is then::

        model = make_pipeline(DictSequenceVectorizer(), CRFTagger())
        model.fit(X_train, y_train)          # the same sent2features output

    Attributes are indexed by :class:`sklearn.feature_extraction.DictVectorizer`
    (the attribute names are built here, so that they are CRFsuite's);
    attributes not seen in ``fit`` are ignored by ``transform``.

    Parameters
    ----------
    sort : bool, default=True
        Sort the attribute names (the column order), as ``DictVectorizer``.

    Attributes
    ----------
    vocabulary_ : dict of str to int
        Attribute name to column.
    n_features_out_ : int
    """

    _parameter_constraints = {"sort": ["boolean"]}

    def __init__(self, sort=True):
        self.sort = sort

    def _items(self, X):
        """Every token's attributes, and the sentence offsets."""
        sentences = check_sentence_list(X, "X", "sentences of feature dicts", item_ndim=1)
        items, offsets = [], [0]
        for i, sentence in enumerate(sentences):
            if isinstance(sentence, (str, Mapping)) or not hasattr(sentence, "__len__"):
                raise TypeError(f"X[{i}]: expected a list of token feature dicts; got "
                                f"{type(sentence).__name__}")
            if len(sentence) == 0:
                raise ValueError(f"X[{i}]: the sentence is empty")
            items.extend(_item_features(token, "", f"X[{i}][{t}]", {})
                         for t, token in enumerate(sentence))
            offsets.append(len(items))
        return items, np.array(offsets, dtype=np.int64)

    @publishes
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Learn the attribute vocabulary.

        Parameters
        ----------
        X : list of list of dict
        y : ignored

        Returns
        -------
        self
        """
        self._fit_items(self._items(X)[0])
        return self

    def _fit_items(self, items):
        from sklearn.feature_extraction import DictVectorizer

        if not any(items):
            raise ValueError("X: no token has a feature (every dict is empty); nothing to "
                             "learn a vocabulary from")
        vectorizer = DictVectorizer(sort=self.sort).fit(items)
        self.vectorizer_ = vectorizer
        self.vocabulary_ = vectorizer.vocabulary_
        self.n_features_out_ = len(vectorizer.vocabulary_)

    @publishes
    def fit_transform(self, X, y=None):
        """:meth:`fit` then :meth:`transform`, reading the dicts once."""
        self._validate_params()
        items, offsets = self._items(X)
        self._fit_items(items)
        return self._stack(items, offsets)

    @reads_model
    def transform(self, X):
        """The feature matrices of the sentences.

        Parameters
        ----------
        X : list of list of dict

        Returns
        -------
        Xt : StackedSentences
            One ``(n_tokens, n_features_out_)`` CSR matrix per sentence, held
            stacked (see :class:`sklstruct.chain.StackedSentences`).
        """
        check_is_fitted(self, "vectorizer_")
        return self._stack(*self._items(X))

    def _stack(self, items, offsets):
        matrix = sp.csr_matrix(self.vectorizer_.transform(items), dtype=np.float64)
        matrix.eliminate_zeros()
        matrix.sort_indices()
        return StackedSentences(matrix, offsets)

    @reads_model
    def get_feature_names_out(self, input_features=None):
        """Attribute names of the output columns (CRFsuite's attribute names)."""
        check_is_fitted(self, "vectorizer_")
        return self.vectorizer_.get_feature_names_out().astype(object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.dict = True
        tags.input_tags.two_d_array = False
        return tags

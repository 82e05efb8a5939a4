"""DictSequenceVectorizer: sentences of feature dicts (the input of
sklearn-crfsuite and python-crfsuite) to the taggers' input.

The tokens are read by one walk in C (``_dict_kernel.FeatureWalk``; its
docstring says why it is a kernel and how it finds a column without building
names): flat dicts of str keys and str, float, int or bool values, the
common case, are read there; any other token goes to :func:`_item_features`
below, the general path, which names every problem.  Both give the columns
and values that scikit-learn's ``DictVectorizer`` gave when it indexed the
per-token dicts of names (the implementation before the kernel, kept in the
tests as the oracle the kernel must match exactly).
"""
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
from ._dict_kernel import FeatureWalk


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


def _token_features(token, where):
    """The general path of the walk: one token's attributes as a dict."""
    return _item_features(token, "", where, {})


def _check_sentence(sentence, i):
    """Raise unless sentence ``X[i]`` is a non-empty sequence (the walk asks
    for any sentence that is not a non-empty list)."""
    if isinstance(sentence, (str, Mapping)) or not hasattr(sentence, "__len__"):
        raise TypeError(f"X[{i}]: expected a list of token feature dicts; got "
                        f"{type(sentence).__name__}")
    if len(sentence) == 0:
        raise ValueError(f"X[{i}]: the sentence is empty")


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

    Attributes are indexed as :class:`sklearn.feature_extraction.DictVectorizer`
    indexes them (the attribute names are CRFsuite's; the columns, sorted or in
    order of first appearance, and the values are the same), in one pass in C
    over the common case, flat dicts of strings and numbers; attributes not
    seen in ``fit`` are ignored by ``transform``.  Repeated attributes of a
    token (``{"a=b": "c", "a": "b=c"}``) add up; zero values are left out.

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

    def _walk(self, X, names, fitting, store):
        """Read every token once (see ``_dict_kernel``): the walk holds the
        names (``names`` grows when ``fitting``) and, if ``store``, the entries."""
        sentences = check_sentence_list(X, "X", "sentences of feature dicts", item_ndim=1)
        walk = FeatureWalk(names, fitting, store, _token_features, _check_sentence,
                           MAX_ABS_FEATURE)
        walk.walk(sentences)
        return walk

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
        names = {}
        self._fit_names(names, self._walk(X, names, True, False).name_list)
        return self

    def _fit_names(self, names, name_list):
        """Set the vocabulary from the names in order of first appearance
        (``names`` maps them to that order); the map from that order to the
        columns (None: the same)."""
        from sklearn.feature_extraction import DictVectorizer

        if not name_list:
            raise ValueError("X: no token has a feature (every dict is empty); nothing to "
                             "learn a vocabulary from")
        perm = None
        if self.sort:
            feature_names = sorted(name_list)
            names = {name: col for col, name in enumerate(feature_names)}
            perm = np.fromiter(map(names.__getitem__, name_list), np.int64, len(name_list))
        else:
            feature_names = name_list
        # ``vectorizer_`` stays a DictVectorizer fitted to the same names (it
        # costs two references), as before the kernel: code that reads it, and
        # models pickled before, keep working.
        vectorizer = DictVectorizer(sort=self.sort)
        vectorizer.feature_names_ = feature_names
        vectorizer.vocabulary_ = names
        self.vectorizer_ = vectorizer
        self.vocabulary_ = names
        self.n_features_out_ = len(names)
        return perm

    @publishes
    def fit_transform(self, X, y=None):
        """:meth:`fit` then :meth:`transform`, reading the dicts once."""
        self._validate_params()
        names = {}
        walk = self._walk(X, names, True, True)
        return self._stack(walk, self._fit_names(names, walk.name_list))

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
        return self._stack(self._walk(X, self.vocabulary_, False, True))

    def _stack(self, walk, perm=None):
        indptr, indices, data, offsets = walk.csr(perm)
        # Built as DictVectorizer built it, a sparse array then a csr_matrix,
        # so that the index arrays have the dtype they had (SciPy keeps a
        # sparse array's int64 indices, where csr_matrix would narrow them)
        matrix = sp.csr_matrix(sp.csr_array((data, indices, indptr),
                                            shape=(len(indptr) - 1, len(self.vocabulary_))))
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

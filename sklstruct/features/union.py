"""SentenceFeatureUnion: the per-token features of several sentence
transformers side by side."""
import warnings
from numbers import Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import TransformerMixin, _fit_context, clone
from sklearn.utils import Bunch
from sklearn.utils.metaestimators import _BaseComposition
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.parallel import Parallel, delayed
from sklearn.utils.validation import check_is_fitted

from .._publish import publishes, reads_model
from .._validation import N_JOBS_CONSTRAINT, InputTypeError, check_sentence_list, describe
from ..chain import StackedSentences, as_stacked
from ._base import _SentencesOut


def _fit_one(transformer, X, y, fit_transform):
    if fit_transform:
        return transformer, transformer.fit_transform(X, y)
    return transformer.fit(X, y), None


def _needs_y(transformer):
    """Whether the transformer learns from the labels (its tags say so)."""
    try:
        return bool(transformer.__sklearn_tags__().target_tags.required)
    except AttributeError:
        return False


class SentenceFeatureUnion(_SentencesOut, TransformerMixin, _BaseComposition):
    """Concatenate the per-token features of several sentence transformers.

    Each transformer maps the same sentences to per-token feature matrices
    (a :class:`~sklstruct.chain.StackedSentences` or a list of matrices);
    this puts their columns side by side, token by token, in the order of
    ``transformer_list``, as scikit-learn's
    :class:`~sklearn.pipeline.FeatureUnion` does for tables.  A typical use
    gives a tagger both indicator features and word embeddings::

        make_pipeline(
            SentenceFeatureUnion([("words", SequenceVectorizer(["word", "shape"])),
                                  ("emb", EmbeddingFeatures(vectors))]),
            StructuredPerceptronTagger())

    Every transformer must give the same number of sentences and of tokens
    in each sentence; the output keeps those sentences and the word keys of
    the first transformer whose output has them (see
    :attr:`sklstruct.chain.StackedSentences.keys`).

    Parameters
    ----------
    transformer_list : list of (str, transformer)
        The transformers, by name; a transformer may be ``"drop"``.  Their
        parameters are reachable as ``name__param`` (``get_params``,
        ``set_params``, grid searches).  They are cloned at fit.
    n_jobs : int, default=None
        Transformers fitted and run at the same time, in threads (joblib's
        convention; None is 1).
    transformer_weights : dict of str to float, default=None
        Multiplies the features of the named transformers (1 for the
        others).
    unlabeled : {"warn", "skip", "raise"}, default="warn"
        What :meth:`fit` and :meth:`fit_transform` without ``y`` do with a
        transformer that learns from the labels
        (:class:`LabelDictionaryFeatures`, :class:`GazetteerFeatures`:
        those whose tags say ``target_tags.required``): leave it out of
        :attr:`transformers_` with a warning, leave it out silently, or
        raise.  A :class:`~sklearn.pipeline.Pipeline` passes ``y``, so
        there they are always fitted.

    Attributes
    ----------
    transformers_ : list of (str, transformer)
        The fitted clones (``"drop"`` entries left out).
    named_transformers_ : Bunch
        The same, by name.
    skipped_ : list of str
        The transformers left out because they need ``y`` and the union
        was fitted without it (see ``unlabeled``).
    """

    _parameter_constraints = {
        "transformer_list": [list],
        "n_jobs": N_JOBS_CONSTRAINT,
        "transformer_weights": [dict, None],
        "unlabeled": [StrOptions({"warn", "skip", "raise"})],
    }

    def __init__(self, transformer_list, *, n_jobs=None, transformer_weights=None,
                 unlabeled="warn"):
        self.transformer_list = transformer_list
        self.n_jobs = n_jobs
        self.transformer_weights = transformer_weights
        self.unlabeled = unlabeled

    def get_params(self, deep=True):
        """Parameters of the union and, with ``deep``, of its transformers
        (``name__param``)."""
        return self._get_params("transformer_list", deep=deep)

    def set_params(self, **params):
        """Set parameters of the union, or of its transformers
        (``name__param``, or ``name`` to replace one)."""
        self._set_params("transformer_list", **params)
        return self

    def _checked_list(self):
        """The (name, transformer) pairs that are not dropped."""
        items = self.transformer_list
        for i, item in enumerate(items):
            if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)):
                raise InputTypeError(f"transformer_list[{i}]: expected a (name, transformer) "
                                     f"tuple; got {describe(item)}")
        names = [name for name, _ in items]
        self._validate_names(names)
        kept = []
        for name, t in items:
            if isinstance(t, str) and t == "drop":
                continue
            if isinstance(t, type) or not (hasattr(t, "fit") and hasattr(t, "transform")):
                raise InputTypeError(f"transformer_list: {name!r} is not a transformer "
                                     f"instance with fit and transform (or 'drop'); got "
                                     f"{describe(t)}")
            kept.append((name, t))
        if not kept:
            raise ValueError("transformer_list: no transformer (all are dropped or the list "
                             "is empty)")
        weights = self.transformer_weights or {}
        for name, w in weights.items():
            if name not in names:
                raise ValueError(f"transformer_weights: {name!r} is not a transformer's name "
                                 f"(names: {names})")
            if isinstance(w, bool) or not isinstance(w, Real) or not np.isfinite(w):
                raise InputTypeError(f"transformer_weights[{name!r}]: expected a finite "
                                     f"number; got {describe(w)}")
        return kept

    def _labeled(self, items, y):
        """``items`` less those that need ``y`` when there is none (see
        ``unlabeled``), and the names left out."""
        if y is not None:
            return items, []
        needs = [name for name, t in items if _needs_y(t)]
        if not needs:
            return items, []
        if self.unlabeled == "raise":
            raise ValueError(f"transformers {needs} learn from the labels: fit with y (a "
                             "list of label sequences), or set unlabeled='skip'")
        kept = [(name, t) for name, t in items if name not in needs]
        if not kept:
            raise ValueError(f"transformer_list: every transformer ({needs}) learns from "
                             "the labels, and no y was given")
        if self.unlabeled == "warn":
            warnings.warn(f"SentenceFeatureUnion fitted without y: transformers {needs} "
                          "learn from the labels and are left out (fit with y, as a "
                          "Pipeline does, to have their features)", UserWarning,
                          stacklevel=4)
        return kept, needs

    def _run(self, items, X, y, fit_transform):
        if len(items) == 1 or self.n_jobs in (None, 1):
            return [_fit_one(clone(t), X, y, fit_transform) for _, t in items]
        return Parallel(n_jobs=self.n_jobs, prefer="threads")(
            delayed(_fit_one)(clone(t), X, y, fit_transform) for _, t in items)

    @staticmethod
    def _sentences(X):
        """X read once, so that every transformer sees the same sentences
        (an iterator would be spent by the first)."""
        if isinstance(X, StackedSentences):
            return X
        return check_sentence_list(X, "X", "sentences (sequences of tokens)", item_ndim=1,
                                   sized=False)

    @publishes
    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y=None):
        """Fit every transformer on ``X``.

        Parameters
        ----------
        X : iterable of sentences
            What the transformers take.
        y : list of label sequences, optional
            Passed to the transformers' ``fit``.

        Returns
        -------
        self : SentenceFeatureUnion
        """
        items, skipped = self._labeled(self._checked_list(), y)
        fitted = self._run(items, self._sentences(X), y, fit_transform=False)
        self._set_fitted(items, [t for t, _ in fitted], skipped)
        return self

    @publishes
    @_fit_context(prefer_skip_nested_validation=False)
    def fit_transform(self, X, y=None):
        """Fit every transformer on ``X`` and return the union of their
        features (each transformer's own ``fit_transform``: the
        cross-fitted features of the transformers that learn from ``y``,
        not ``fit(X, y).transform(X)``).

        Returns
        -------
        Xt : StackedSentences
        """
        items, skipped = self._labeled(self._checked_list(), y)
        fitted = self._run(items, self._sentences(X), y, fit_transform=True)
        self._set_fitted(items, [t for t, _ in fitted], skipped)
        return self._union([out for _, out in fitted])

    def _set_fitted(self, items, transformers, skipped):
        self.skipped_ = list(skipped)
        self.transformers_ = [(name, t) for (name, _), t in zip(items, transformers)]
        self.named_transformers_ = Bunch(**dict(self.transformers_))
        self._weights = dict(self.transformer_weights or {})

    @reads_model
    def transform(self, X):
        """The features of every transformer, side by side.

        Parameters
        ----------
        X : iterable of sentences

        Returns
        -------
        Xt : StackedSentences
            Columns of ``transformers_[0]``, then of ``transformers_[1]``...
        """
        check_is_fitted(self, "transformers_")
        X = self._sentences(X)
        if len(self.transformers_) == 1 or self.n_jobs in (None, 1):
            outs = [t.transform(X) for _, t in self.transformers_]
        else:
            outs = Parallel(n_jobs=self.n_jobs, prefer="threads")(
                delayed(t.transform)(X) for _, t in self.transformers_)
        return self._union(outs)

    def _union(self, outs):
        parts = []
        first = None
        for (name, _), out in zip(self.transformers_, outs):
            data = as_stacked(out, name=f"the output of transformer {name!r}")
            if first is None:
                first = (name, data)
            else:
                self._check_same_sentences(first, (name, data))
            parts.append(data)
        keys = next((d.keys for d in parts if d.keys is not None), None)
        weights = [self._weights.get(name, 1.0) for name, _ in self.transformers_]
        blocks = [d.matrix if w == 1.0 else d.matrix * float(w)
                  for d, w in zip(parts, weights)]
        matrix = sp.hstack(blocks, format="csr", dtype=np.float64)
        if matrix.indices.dtype != np.int32 or matrix.indptr.dtype != np.int32:
            if matrix.nnz >= 2**31 or matrix.shape[1] >= 2**31:
                raise ValueError(f"the union has {matrix.shape[1]} columns and {matrix.nnz} "
                                 "nonzeros, more than a CSR matrix with 32-bit indices "
                                 "holds; transform fewer sentences at a time")
            matrix.indices = matrix.indices.astype(np.int32)
            matrix.indptr = matrix.indptr.astype(np.int32)
        matrix.sort_indices()
        return StackedSentences._trusted(matrix, first[1].offsets, keys)

    @staticmethod
    def _check_same_sentences(a, b):
        (name_a, da), (name_b, db) = a, b
        if len(da) != len(db):
            raise ValueError(f"transformer {name_b!r} gave {len(db)} sentences, but "
                             f"transformer {name_a!r} gave {len(da)}: every transformer "
                             "must give one feature matrix per sentence")
        differ = np.flatnonzero(da.lengths != db.lengths)
        if differ.size:
            i = int(differ[0])
            raise ValueError(f"X[{i}]: transformer {name_b!r} gave {int(db.lengths[i])} "
                             f"tokens, but transformer {name_a!r} gave "
                             f"{int(da.lengths[i])}: every transformer must give one row "
                             "per token")

    def get_feature_names_out(self, input_features=None):
        """``name__feature`` for every output column.

        Parameters
        ----------
        input_features : None
            Ignored.

        Returns
        -------
        feature_names_out : ndarray of str objects
        """
        check_is_fitted(self, "transformers_")
        names = []
        for name, t in self.transformers_:
            if not hasattr(t, "get_feature_names_out"):
                raise AttributeError(f"transformer {name!r} ({type(t).__name__}) does not "
                                     "provide get_feature_names_out")
            names += [f"{name}__{f}" for f in t.get_feature_names_out()]
        return np.asarray(names, dtype=object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.input_tags.two_d_array = False
        tags.requires_fit = True
        return tags

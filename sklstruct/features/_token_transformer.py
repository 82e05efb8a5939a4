"""TokenTransformer: a scikit-learn transformer applied to every token of
every sentence."""
import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.utils.validation import check_is_fitted

from .._publish import publishes, reads_model
from ..chain import StackedSentences, as_stacked
from ._base import _SentencesOut


class TokenTransformer(_SentencesOut, TransformerMixin, BaseEstimator):
    """Apply a scikit-learn transformer to the feature vector of every token.

    Sentences are lists of per-token feature matrices; this fits
    ``transformer`` on all training tokens at once (rows of the stacked
    matrix) and maps every token of every sentence through it, keeping the
    sentences.  Its main use is an explicit kernel approximation in front of
    a linear tagger, for example
    ``TokenTransformer(Nystroem(kernel="poly", degree=2, coef0=1, gamma=1,
    n_components=2000))`` or ``PolynomialCountSketch``, followed by
    ``M3NTagger(kernel="linear")``: training and prediction then cost what
    the linear model costs, whatever the number of support tokens, at the
    price of an approximate kernel (see :class:`~sklstruct.M3NTagger`).
    Dense outputs are stored as CSR matrices.

    :func:`~sklstruct.save_model` stores it (pickle-free) around
    scikit-learn's ``Nystroem``, ``RBFSampler``, ``PolynomialCountSketch``,
    ``MaxAbsScaler``, ``StandardScaler``, ``Normalizer`` and
    ``TruncatedSVD`` and Pipelines of them, as their parameters and arrays;
    it refuses any other transformer, and one that holds a Python function
    (``FunctionTransformer``, a callable ``kernel``): pickle those.

    Parameters
    ----------
    transformer : estimator with ``fit`` and ``transform``
        Cloned before fitting; it receives a sparse (n_tokens, n_features)
        matrix.

    Attributes
    ----------
    transformer_ : the fitted clone
    n_features_in_ : int
    """

    def __init__(self, transformer):
        self.transformer = transformer

    @publishes
    def fit(self, X, y=None):
        """Fit the transformer on the tokens of all sentences of ``X``."""
        if not (hasattr(self.transformer, "fit") and hasattr(self.transformer, "transform")):
            raise TypeError("transformer: expected an estimator with fit and transform; got "
                            f"{type(self.transformer).__name__}")
        data = as_stacked(X)
        self.transformer_ = clone(self.transformer).fit(data.matrix)
        self.n_features_in_ = data.n_features
        return self

    @reads_model
    def transform(self, X):
        """The sentences of ``X`` with every token mapped by the transformer.

        Returns
        -------
        Xt : StackedSentences
        """
        check_is_fitted(self)
        data = as_stacked(X, self.n_features_in_)
        return StackedSentences(self._checked(self.transformer_.transform(data.matrix), data),
                                data.offsets, data.keys)

    def _checked(self, Z, data):
        """The transformer's output as a CSR matrix of one finite row per
        token; what is wrong is said of the transformer and of X's sentences,
        not of the stacked matrix it was given."""
        name = f"transformer {type(self.transformer_).__name__}"
        n_tokens = data.matrix.shape[0]
        if not sp.issparse(Z) and np.ndim(Z) != 2:
            raise ValueError(f"{name} returned an array of {np.ndim(Z)} dimension(s) for "
                             f"{n_tokens} tokens; expected a matrix with one row per token")
        try:
            Z = sp.csr_matrix(Z, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{name} returned values that are not real numbers ({exc})") from None
        if Z.shape[0] != n_tokens:
            raise ValueError(f"{name} returned {Z.shape[0]} rows for {n_tokens} tokens; "
                             "expected one row per token")
        bad = np.flatnonzero(~np.isfinite(Z.data))
        if bad.size:
            row = int(np.searchsorted(Z.indptr, bad[0], side="right") - 1)
            i = int(np.searchsorted(data.offsets, row, side="right") - 1)
            raise ValueError(f"{name} returned a non-finite value for X[{i}], token "
                             f"{row - int(data.offsets[i])}")
        return Z

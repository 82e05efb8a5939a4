"""TokenTransformer: a scikit-learn transformer applied to every token of
every sentence."""
import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.utils.validation import check_is_fitted

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

    def fit(self, X, y=None):
        """Fit the transformer on the tokens of all sentences of ``X``."""
        if not (hasattr(self.transformer, "fit") and hasattr(self.transformer, "transform")):
            raise TypeError("transformer: expected an estimator with fit and transform; got "
                            f"{type(self.transformer).__name__}")
        data = as_stacked(X)
        self.transformer_ = clone(self.transformer).fit(data.matrix)
        self.n_features_in_ = data.n_features
        return self

    def transform(self, X):
        """The sentences of ``X`` with every token mapped by the transformer.

        Returns
        -------
        Xt : StackedSentences
        """
        check_is_fitted(self)
        data = as_stacked(X, self.n_features_in_)
        Z = self.transformer_.transform(data.matrix)
        Z = sp.csr_matrix(Z, dtype=np.float64)
        return StackedSentences(Z, data.offsets, data.keys)

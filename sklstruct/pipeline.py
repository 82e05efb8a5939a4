"""A scikit-learn Pipeline that also passes on the tagger's own methods.

scikit-learn's :class:`~sklearn.pipeline.Pipeline` forwards ``predict``,
``score`` and the like to its last step, but not the methods it does not
know: a vectorizer followed by a tagger had no ``predict_marginals``,
``predict_confidence``, ``predict_kbest`` or ``calibrate``, though
sklearn-crfsuite's ``CRF`` has the first of them.  :class:`Pipeline` (and
:func:`make_pipeline`) transform the sentences with every step but the last,
then call the last step's method, which exists only where the last step has
it (``available_if``, as scikit-learn does for ``predict_proba``).
"""
from sklearn import pipeline as _sk
from sklearn.utils.metaestimators import available_if

__all__ = ["Pipeline", "make_pipeline"]


def _final_has(name):
    """``available_if`` check: the last step has method ``name``."""
    def check(self):
        final = self._final_estimator
        return final == "passthrough" or hasattr(final, name)
    return check


class Pipeline(_sk.Pipeline):
    """:class:`sklearn.pipeline.Pipeline` with the tagger's methods.

    Besides everything scikit-learn's Pipeline does, it has the methods of
    its last step that scikit-learn's does not forward, each applied to the
    sentences as transformed by the steps before it:

    * ``predict_marginals(X)``, ``predict_confidence(X)``: per-token label
      probabilities and each predicted label's probability
      (:meth:`sklstruct.CRFTagger.predict_marginals`);
    * ``predict_kbest(X, k=5)``: the k best label sequences;
    * ``calibrate(X, y, ...)``: fits the tagger's temperature on held-out
      sentences (the vectorizer is not refitted); returns the pipeline.

    Parameters
    ----------
    steps, memory, verbose
        As for :class:`sklearn.pipeline.Pipeline` (and its other parameters,
        where the installed scikit-learn has them).

    See Also
    --------
    make_pipeline : the same, naming the steps.

    Examples
    --------
    >>> from sklstruct import CRFTagger, feature_set, make_pipeline
    >>> X = [[("He", "PRP"), ("runs", "VBZ")], [("She", "PRP"), ("walks", "VBZ")]]
    >>> y = [["B-NP", "B-VP"], ["B-NP", "B-VP"]]
    >>> model = make_pipeline(feature_set("chunking"), CRFTagger(max_iter=20)).fit(X, y)
    >>> [p.shape for p in model.predict_marginals(X)]
    [(2, 2), (2, 2)]
    """

    def _transformed(self, X):
        for _, _, transformer in self._iter(with_final=False):
            X = transformer.transform(X)
        return X

    @available_if(_final_has("predict_marginals"))
    def predict_marginals(self, X):
        """Per-token label probabilities of the last step on the transformed
        sentences (its ``predict_marginals``)."""
        return self._final_estimator.predict_marginals(self._transformed(X))

    @available_if(_final_has("predict_confidence"))
    def predict_confidence(self, X):
        """The last step's ``predict_confidence`` on the transformed sentences."""
        return self._final_estimator.predict_confidence(self._transformed(X))

    @available_if(_final_has("predict_kbest"))
    def predict_kbest(self, X, k=5):
        """The last step's ``predict_kbest`` on the transformed sentences."""
        return self._final_estimator.predict_kbest(self._transformed(X), k=k)

    @available_if(_final_has("calibrate"))
    def calibrate(self, X, y, **params):
        """The last step's ``calibrate`` on the transformed held-out sentences
        (the steps before it are not refitted); returns the pipeline."""
        self._final_estimator.calibrate(self._transformed(X), y, **params)
        return self


def make_pipeline(*steps, **kwargs):
    """:func:`sklearn.pipeline.make_pipeline` returning a sklstruct :class:`Pipeline`.

    Parameters
    ----------
    *steps : estimators
    **kwargs
        As for :func:`sklearn.pipeline.make_pipeline` (``memory``, ``verbose``).

    Returns
    -------
    pipeline : Pipeline
    """
    return Pipeline(**_sk.make_pipeline(*steps, **kwargs).get_params(deep=False))

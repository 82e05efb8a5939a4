"""Out-of-fold predictions for sentence outputs.

scikit-learn's ``cross_val_predict`` stacks the predictions of the folds into
one array, which label sequences of different lengths (or trees) are not.
:func:`cross_val_predict` here runs scikit-learn's own ``cross_validate``
(splitters, ``groups``, ``n_jobs``, fit parameters as there) and puts each
fold's predictions back in the order of the sentences.
"""
from sklearn.base import clone
from sklearn.model_selection import cross_validate
from sklearn.pipeline import Pipeline
from sklearn.utils import _safe_indexing

__all__ = ["cross_val_predict"]


def cross_val_predict(estimator, X, y, *, groups=None, cv=None, n_jobs=None, method="predict",
                      params=None):
    """Out-of-fold predictions, one per sentence, in the order of ``X``.

    Parameters
    ----------
    estimator : a tagger, a parser or a Pipeline ending in one
    X : list of sentences
    y : list of label sequences (or trees)
    groups : array-like of shape (n_sentences,), optional
        Group labels for a group splitter (e.g. one per document).
    cv : int, cross-validation generator or iterable, default=None
        As in scikit-learn (None: 5-fold ``KFold``; taggers are not
        classifiers, so folds are not stratified).
    n_jobs : int, default=None
        Folds fitted in parallel (scikit-learn's ``cross_validate``).
    method : str, default="predict"
        The method whose per-sentence results are collected, e.g.
        ``"predict_kbest"`` or ``"predict_marginals"`` (also at the end of a
        Pipeline).
    params : dict, optional
        Parameters passed to ``fit`` (and to the splitter), as in
        scikit-learn.

    Returns
    -------
    predictions : list
        ``predictions[i]`` is what ``method`` gave for sentence ``i`` from
        the model of the fold in which it was held out.

    Raises
    ------
    ValueError
        If a sentence is held out by no fold or by more than one (the
        splitter is not a partition).
    """
    _method(clone(estimator), method)
    result = cross_validate(estimator, X, y, groups=groups, cv=cv, n_jobs=n_jobs,
                            params=params, return_estimator=True, return_indices=True,
                            scoring=lambda *args: 0.0)
    out, seen = [None] * len(X), [0] * len(X)
    for model, test in zip(result["estimator"], result["indices"]["test"]):
        for i, pred in zip(test, _method(model, method)(_safe_indexing(X, test))):
            out[i] = pred
            seen[i] += 1
    if any(c != 1 for c in seen):
        bad = next(i for i, c in enumerate(seen) if c != 1)
        raise ValueError(f"cv: sentence {bad} is held out by {seen[bad]} folds; "
                         "cross_val_predict needs a partition (each sentence in one "
                         "test fold)")
    return out


def _method(model, method):
    """``model.method``; for a Pipeline whose last step has it (``predict_kbest``,
    ``predict_marginals``: scikit-learn's Pipeline does not forward them), the
    earlier steps' transform followed by it."""
    if hasattr(model, method):
        return getattr(model, method)
    if isinstance(model, Pipeline) and hasattr(model.steps[-1][1], method):
        final = getattr(model.steps[-1][1], method)
        return lambda X: final(model[:-1].transform(X))
    raise ValueError(f"method: {type(model).__name__} has no {method!r}")

"""What a fitted chain tagger learned: its weights with feature and label names.

For sklearn-crfsuite users: :func:`state_features` and
:func:`transition_features` give the dicts of its ``state_features_`` and
``transition_features_`` (``{(attribute, label): weight}`` and
``{(label_from, label_to): weight}``), so ``Counter(...).most_common(20)``
works as there; :func:`top_state_features` lists each label's largest
weights and :func:`format_weights` prints both as tables.

Each function takes a fitted tagger, or a fitted ``Pipeline`` ending in one,
whose first step's ``get_feature_names_out`` then names the features (a
:class:`~sklstruct.SequenceVectorizer` without hashing); without names a
feature is ``"x<column>"``.
"""
import numpy as np
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted

from ._publish import snapshot

__all__ = ["state_features", "transition_features", "top_state_features", "format_weights"]


def _tagger_and_names(model, feature_names):
    """The chain tagger and the feature names of ``model``."""
    if isinstance(model, Pipeline):
        tagger = model.steps[-1][1]
        if feature_names is None and len(model.steps) > 1:
            try:
                feature_names = model[:-1].get_feature_names_out()
            except (AttributeError, ValueError):       # no names (hashing, ...)
                feature_names = None
    else:
        tagger = model
    # the weights and labels of one model, should another thread refit it
    tagger = snapshot(tagger)
    check_is_fitted(tagger, "transition_coef_")
    if not hasattr(tagger, "coef_"):
        # a kernel M3N, or a meta-estimator around one (which has no ``kernel``)
        raise ValueError(f"{type(tagger).__name__} has no weight per feature (coef_): its "
                         "emission scores are a kernel expansion over support vectors; only "
                         "transition_features applies")
    n_features = tagger.coef_.shape[1]
    if feature_names is None:
        feature_names = [f"x{j}" for j in range(n_features)]
    if isinstance(feature_names, (str, bytes)):
        raise TypeError("feature_names: expected one name per feature column; got a string")
    # a generator or any iterable of names, as one 1-D array
    feature_names = np.asarray(list(feature_names), dtype=object)
    if feature_names.shape != (n_features,):
        raise ValueError(f"feature_names: {len(feature_names)} names for the tagger's "
                         f"{n_features} features")
    return tagger, feature_names


def state_features(model, feature_names=None):
    """Nonzero emission weights as ``{(feature name, label): weight}``
    (sklearn-crfsuite's ``state_features_``), largest magnitude first.

    Parameters
    ----------
    model : fitted chain tagger or Pipeline ending in one
    feature_names : array-like of str, optional
        One name per feature column (default: the pipeline's, or ``x<j>``).

    Returns
    -------
    dict
    """
    tagger, names = _tagger_and_names(model, feature_names)
    labels, cols = np.nonzero(tagger.coef_)
    weights = tagger.coef_[labels, cols]
    order = np.argsort(-np.abs(weights), kind="stable")
    return {(names[cols[i]], tagger.classes_[labels[i]]): float(weights[i]) for i in order}


def transition_features(model):
    """Transition weights as ``{(label_from, label_to): weight}``
    (sklearn-crfsuite's ``transition_features_``), in label order.

    Parameters
    ----------
    model : fitted chain tagger or Pipeline ending in one

    Returns
    -------
    dict
    """
    tagger = snapshot(model.steps[-1][1] if isinstance(model, Pipeline) else model)
    check_is_fitted(tagger, "transition_coef_")
    classes = tagger.classes_
    return {(classes[a], classes[b]): float(tagger.transition_coef_[a, b])
            for a in range(len(classes)) for b in range(len(classes))}


def top_state_features(model, feature_names=None, n=10):
    """Each label's ``n`` largest emission weights (and ``n`` most negative).

    Parameters
    ----------
    model : fitted chain tagger or Pipeline ending in one
    feature_names : array-like of str, optional
    n : int, default=10

    Returns
    -------
    dict
        ``{label: {"positive": [(name, weight), ...], "negative": [...]}}``,
        zero weights left out.
    """
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
        raise ValueError(f"n must be a positive integer; got {n!r}")
    tagger, names = _tagger_and_names(model, feature_names)
    out = {}
    for row, label in zip(tagger.coef_, tagger.classes_):
        order = np.argsort(-row, kind="stable")
        pos = [(names[j], float(row[j])) for j in order[:n] if row[j] > 0]
        neg = [(names[j], float(row[j])) for j in order[::-1][:n] if row[j] < 0]
        out[label] = {"positive": pos, "negative": neg}
    return out


def format_weights(model, feature_names=None, n=5):
    """The transition, start and end weights as a labelled table and each
    label's ``n`` largest emission weights, as text (parameters as for
    :func:`top_state_features`)."""
    tagger, names = _tagger_and_names(model, feature_names)
    labels = [str(c) for c in tagger.classes_]
    width = max(8, *(len(x) for x in labels))
    rows = ["transitions (row: from, column: to)",
            " " * width + " " + " ".join(f"{x:>{width}}" for x in labels)]
    for label, weights in zip(labels, tagger.transition_coef_):
        rows.append(f"{label:>{width}} " + " ".join(f"{w:>{width}.3f}" for w in weights))
    for name, weights in (("start", tagger.start_coef_), ("end", tagger.end_coef_)):
        rows.append(f"{name:>{width}} " + " ".join(f"{w:>{width}.3f}" for w in weights))
    rows.append("")
    rows.append(f"largest emission weights (top {n} per label)")
    for label, top in top_state_features(tagger, names, n).items():
        text = ", ".join(f"{name} {w:+.3f}" for name, w in top["positive"]) or "(none)"
        rows.append(f"{str(label):>{width}}: {text}")
    return "\n".join(rows) + "\n"

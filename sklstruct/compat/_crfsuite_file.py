"""Reading a CRFsuite model file (``.crfsuite``) into sklstruct."""
import numpy as np
from sklearn.feature_extraction import DictVectorizer

from ._model import CRFsuiteDicts, CRFsuiteLBFGS, Fitted, crfsuite_vocabulary


def fitted_from_crfsuite(path):
    """The :class:`~sklstruct.compat._crf.Fitted` model of a CRFsuite file:
    its weights read by python-crfsuite's ``Tagger.info()``, its attributes
    turned into the vectorizer names that give them (see
    :func:`~sklstruct.compat._model.crfsuite_vocabulary`)."""
    try:
        import pycrfsuite
    except ImportError as exc:                      # pragma: no cover
        raise ImportError("reading a .crfsuite model needs python-crfsuite "
                          "(pip install python-crfsuite)") from exc
    tagger = pycrfsuite.Tagger()
    try:
        tagger.open(str(path))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path!r} is not a CRFsuite model that python-crfsuite can open: "
                         f"{exc}") from None
    try:
        info = tagger.info()
        order = tagger.labels()
    finally:
        tagger.close()
    attributes = [None] * len(info.attributes)
    for name, i in info.attributes.items():
        attributes[int(i)] = name
    classes = np.array(sorted(order), dtype=object).astype(str)
    index = {label: i for i, label in enumerate(classes.tolist())}
    column = {name: i for i, name in enumerate(attributes)}
    L, F = len(classes), len(attributes)
    coef = np.zeros((L, F), order="F")
    if info.state_features:
        keys = list(info.state_features)
        rows = np.fromiter((index[label] for _, label in keys), np.int64, len(keys))
        cols = np.fromiter((column[attr] for attr, _ in keys), np.int64, len(keys))
        coef[rows, cols] = np.fromiter(info.state_features.values(), np.float64, len(keys))
    transitions = np.zeros((L, L))
    for (a, b), w in info.transitions.items():
        transitions[index[a], index[b]] = w
    model = CRFsuiteLBFGS()
    model.classes_ = classes
    model.n_features_in_ = F
    model.coef_ = coef
    model.transition_coef_ = transitions
    model.start_coef_ = np.zeros(L)
    model.end_coef_ = np.zeros(L)
    model.trigram_coef_ = None
    model.n_iter_ = 0
    model.history_ = []
    vectorizer = CRFsuiteDicts()
    vocabulary = crfsuite_vocabulary(attributes)
    inner = DictVectorizer()
    inner.feature_names_ = list(vocabulary)
    inner.vocabulary_ = vocabulary
    vectorizer.vectorizer_ = inner
    vectorizer.vocabulary_ = vocabulary
    vectorizer.n_features_out_ = F
    vectorizer.n_columns_ = F
    return Fitted(vectorizer, model, order, attributes)

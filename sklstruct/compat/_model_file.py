"""How sklstruct.compat's classes are stored in model files
(:func:`sklstruct.save_model`): registered with the format when
:mod:`sklstruct.compat` is imported, so that the format itself does not
import compat (whose ``CRF(model_filename=...)`` reads and writes model files)."""
import numpy as np

from .._serialization.classes import Rule, _fail, register
from ..learners._base import ChainTagger
from ._crf import CRF, TrainingLog
from ._model import CRFsuiteDicts, CRFsuiteLBFGS, CRFsuiteOnline, Fitted


def _check_compat_crf(obj, path):
    """:class:`sklstruct.compat.CRF`: its fitted model, and never the name of
    another file to read when it predicts (a model file names no other file)."""
    state = obj.__dict__.get("_state")
    if state is None and obj.model_filename is not None:
        _fail(path, "an unfitted CRF with a model_filename would read that file on "
                    "predicting; refused")
    if state is not None and not isinstance(state, Fitted):
        _fail(path, "_state must be the fitted model")
    log = obj.__dict__.get("_training_log")
    if log is not None and not isinstance(log, TrainingLog):
        _fail(path, "_training_log must be a training log")


def _check_compat_fitted(obj, path):
    tagger, vectorizer = obj.tagger, obj.vectorizer
    if not isinstance(tagger, ChainTagger) or not isinstance(vectorizer, CRFsuiteDicts):
        _fail(path, "a CRF's model is a CRFsuiteDicts vectorizer and a chain tagger")
    if vectorizer.n_features_out_ != tagger.n_features_in_:
        _fail(path, "the vectorizer's and the tagger's features differ")
    labels, attributes = obj.labels, obj.attributes
    if not isinstance(labels, list) or sorted(labels) != tagger.classes_.tolist():
        _fail(path, "labels must be the tagger's classes")
    if not isinstance(attributes, np.ndarray) or attributes.shape != (tagger.n_features_in_,) \
            or attributes.dtype != object:
        _fail(path, "attributes must name each column")


register("sklstruct.compat.CRF", CRF, Rule(
    private=("_state", "_training_log"), drop=("_cache", "_tagger"), check=_check_compat_crf,
    refuse=lambda crf: ("an unfitted CRF with a model_filename reads that file when it "
                        "predicts: fit it first" if crf.__dict__.get("_state") is None
                        and crf.model_filename is not None else None)))
register("sklstruct.compat.Fitted", Fitted, Rule(
    private=("vectorizer", "tagger", "labels", "attributes"), check=_check_compat_fitted))
register("sklstruct.compat.TrainingLog", TrainingLog, Rule(
    private=("iterations", "training_seconds", "featgen_num_features")))
register("sklstruct.compat.CRFsuiteDicts", CRFsuiteDicts)
register("sklstruct.compat.CRFsuiteLBFGS", CRFsuiteLBFGS)
register("sklstruct.compat.CRFsuiteOnline", CRFsuiteOnline)

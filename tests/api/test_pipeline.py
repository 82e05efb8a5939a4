"""sklstruct.Pipeline / make_pipeline: scikit-learn's Pipeline with the
tagger's own methods (predict_marginals, predict_confidence, predict_kbest,
calibrate) applied to the sentences the steps before it transform."""
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline as SkPipeline

from sklstruct import (CRFTagger, Pipeline, StructuredPerceptronTagger, feature_set,
                       make_pipeline)

X = [[("He", "PRP"), ("runs", "VBZ"), ("fast", "RB")],
     [("She", "PRP"), ("walks", "VBZ")],
     [("The", "DT"), ("dog", "NN"), ("barks", "VBZ")]]
y = [["B-NP", "B-VP", "B-ADVP"], ["B-NP", "B-VP"], ["B-NP", "I-NP", "B-VP"]]


def assert_same(a, b):
    """Equal nested lists / tuples / arrays."""
    if isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b)
        for u, v in zip(a, b):
            assert_same(u, v)
    else:
        np.testing.assert_array_equal(a, b)


@pytest.fixture(scope="module")
def fitted():
    return make_pipeline(feature_set("chunking"), CRFTagger(max_iter=30)).fit(X, y)


def test_make_pipeline_is_a_sklearn_pipeline_of_our_class(fitted):
    assert isinstance(fitted, Pipeline) and isinstance(fitted, SkPipeline)
    assert fitted.steps[-1][0] == "crftagger"
    assert isinstance(clone(fitted), Pipeline)


@pytest.mark.parametrize("method", ["predict_marginals", "predict_confidence", "predict_kbest"])
def test_methods_are_the_taggers_on_the_transformed_sentences(fitted, method):
    vectorizer, tagger = fitted[0], fitted[-1]
    assert_same(getattr(fitted, method)(X), getattr(tagger, method)(vectorizer.transform(X)))


def test_predict_kbest_passes_k(fitted):
    vectorizer, tagger = fitted[0], fitted[-1]
    got = fitted.predict_kbest(X, k=2)
    assert_same(got, tagger.predict_kbest(vectorizer.transform(X), k=2))
    assert_same(got, fitted.predict_kbest(X, 2))


def test_calibrate_fits_the_taggers_temperature_and_returns_the_pipeline():
    model = make_pipeline(feature_set("chunking"),
                          StructuredPerceptronTagger(max_iter=3, random_state=0)).fit(X, y)
    vocabulary = dict(model[0].transformer_list[0][1].vocabulary_) \
        if hasattr(model[0], "transformer_list") else None
    assert model.calibrate(X, y) is model
    assert model[-1].calibration_["method"] == "forward_backward"
    if vocabulary is not None:      # the vectorizer is not refitted
        assert model[0].transformer_list[0][1].vocabulary_ == vocabulary


def test_methods_exist_only_where_the_last_step_has_them():
    model = Pipeline([("clf", LogisticRegression())])
    for name in ("predict_marginals", "predict_confidence", "predict_kbest", "calibrate"):
        assert not hasattr(model, name)
    assert hasattr(make_pipeline(feature_set("chunking"), CRFTagger()), "predict_marginals")

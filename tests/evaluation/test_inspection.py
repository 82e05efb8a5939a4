"""sklstruct.inspection: the learned weights with their names."""
from collections import Counter

import numpy as np
import pytest
from sklearn.pipeline import make_pipeline

from sklstruct import SequenceVectorizer, StructuredPerceptronTagger
from sklstruct.datasets import make_chunking_corpus
from sklstruct.inspection import (format_weights, state_features, top_state_features,
                                  transition_features)


@pytest.fixture(scope="module")
def pipeline():
    X, y = make_chunking_corpus(200, random_state=0)
    return make_pipeline(SequenceVectorizer(["word", "pos"]),
                         StructuredPerceptronTagger(max_iter=3, random_state=0)).fit(X, y)


def test_state_and_transition_features_are_the_weights_by_name(pipeline):
    vec, tagger = pipeline[0], pipeline[-1]
    names = vec.get_feature_names_out()
    states = state_features(pipeline)
    assert len(states) == np.count_nonzero(tagger.coef_)
    (name, label), weight = next(iter(states.items()))     # the largest magnitude first
    assert abs(weight) == np.abs(tagger.coef_).max()
    row = list(tagger.classes_).index(label)
    assert tagger.coef_[row, list(names).index(name)] == weight
    trans = transition_features(pipeline)
    assert len(trans) == len(tagger.classes_) ** 2
    a, b = tagger.classes_[0], tagger.classes_[1]
    assert trans[(a, b)] == tagger.transition_coef_[0, 1]
    # sklearn-crfsuite users' idiom
    assert Counter(trans).most_common(1)[0][1] == tagger.transition_coef_.max()


def test_top_features_and_table(pipeline):
    tagger = pipeline[-1]
    top = top_state_features(pipeline, n=3)
    assert set(top) == set(tagger.classes_)
    for label, row in zip(tagger.classes_, tagger.coef_):
        weights = [w for _, w in top[label]["positive"]]
        assert weights == sorted(row[row > 0], reverse=True)[:3]
        assert all(w < 0 for _, w in top[label]["negative"])
    text = format_weights(pipeline, n=2)
    assert "transitions (row: from, column: to)" in text and "start" in text
    assert all(str(label) in text for label in tagger.classes_)
    # a bare tagger: columns named x<j>
    assert all(name.startswith("x") for name, _ in state_features(tagger))


def test_bad_arguments(pipeline):
    with pytest.raises(ValueError, match="feature_names: 2 names"):
        state_features(pipeline[-1], ["a", "b"])
    with pytest.raises(ValueError, match="n must be"):
        top_state_features(pipeline, n=0)
    with pytest.raises(Exception, match="not fitted"):
        transition_features(StructuredPerceptronTagger())


def test_feature_names_from_any_iterable_and_a_string_refused(pipeline):
    """A generator of names gave IndexError (a 0-d object array)."""
    tagger = pipeline[-1]
    n = tagger.coef_.shape[1]
    from_list = state_features(tagger, [f"f{j}" for j in range(n)])
    assert state_features(tagger, (f"f{j}" for j in range(n))) == from_list
    with pytest.raises(ValueError, match="2 names for the tagger's"):
        state_features(tagger, iter(["a", "b"]))
    with pytest.raises(TypeError, match="got a string"):
        state_features(tagger, "abc")


def test_a_kernel_model_inside_a_constrained_tagger_gets_the_clear_error():
    """The message read ``tagger.kernel``, which a ConstrainedTagger does not
    have: AttributeError while building the ValueError."""
    from sklstruct import ConstrainedTagger, M3NTagger

    X, y = make_chunking_corpus(20, random_state=0)
    vec = SequenceVectorizer(["word"])
    F = vec.fit_transform(X)
    model = ConstrainedTagger(M3NTagger(kernel="poly", max_iter=1, random_state=0)).fit(F, y)
    with pytest.raises(ValueError, match="no weight per feature"):
        state_features(model)
    assert transition_features(model)

"""Small models: a pickled tagger keeps what prediction needs (the emission
weights stored sparse when that is smaller, the training state only for an
estimator that will continue training), and predicts exactly as before."""
import pickle
import warnings

import numpy as np
import pytest
from _oracles import make

from sklstruct import M3NTagger, SequenceVectorizer, StructuredPerceptronTagger
from sklstruct._registry import META_TAGGERS, TAGGERS
from sklstruct.datasets import make_chunking_corpus
from sklstruct.learners._base import ChainLearner


@pytest.fixture(scope="module")
def corpus():
    X, y = make_chunking_corpus(300, random_state=4)
    vec = SequenceVectorizer(templates=("word", "pos"), window=1)
    return vec.fit_transform(X[:200]), y[:200], vec.transform(X[200:])


def round_trip(model):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pickle.loads(pickle.dumps(model))


@pytest.mark.parametrize("name", sorted({**TAGGERS, **META_TAGGERS}))
def test_a_pickled_tagger_predicts_the_same(corpus, name):
    Xtr, ytr, Xte = corpus
    cls = {**TAGGERS, **META_TAGGERS}[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = make(cls, max_iter=2, random_state=0).fit(Xtr, ytr)
    again = round_trip(model)
    assert isinstance(again.coef_, np.ndarray)
    np.testing.assert_array_equal(again.coef_, model.coef_)
    for a, b in zip(model.predict(Xte), again.predict(Xte)):
        np.testing.assert_array_equal(a, b)
    for (pa, sa), (pb, sb) in zip(model.predict_kbest(Xte[:20], k=3),
                                  again.predict_kbest(Xte[:20], k=3)):
        np.testing.assert_array_equal(sa, sb)
    if isinstance(model, ChainLearner):
        kept = [n for n in type(model)._TRAINING_STATE if hasattr(again, n)]
        assert kept == [], kept
        assert len(pickle.dumps(again)) < len(pickle.dumps(model.set_params(warm_start=True)))


def test_emission_weights_are_pickled_sparse(corpus):
    Xtr, ytr, _ = corpus
    model = StructuredPerceptronTagger(max_iter=2, random_state=0).fit(Xtr, ytr)
    assert 3 * np.count_nonzero(model.coef_) < model.coef_.size
    dense = model.coef_.nbytes
    assert len(pickle.dumps(model)) < 0.5 * dense
    # the object in memory is untouched by pickling
    assert isinstance(model.coef_, np.ndarray) and hasattr(model, "_weights")
    # restored in fit's layout, so that prediction reads coef_.T without a copy
    assert model.coef_.flags.f_contiguous
    assert round_trip(model).coef_.flags.f_contiguous


@pytest.mark.parametrize("how", ["warm_start", "partial_fit"])
def test_a_model_that_will_continue_keeps_its_training_state(corpus, how):
    """warm_start=True, or training by partial_fit, keeps the training state
    in the pickle: training continues exactly as it would have in memory."""
    Xtr, ytr, Xte = corpus
    model = StructuredPerceptronTagger(max_iter=2, random_state=0,
                                       warm_start=how == "warm_start")
    if how == "warm_start":
        model.fit(Xtr, ytr)
    else:
        model.partial_fit(Xtr, ytr).partial_fit(Xtr, ytr)
    again = round_trip(model)
    for m in (model, again):
        if how == "warm_start":
            m.fit(Xtr, ytr)
        else:
            m.partial_fit(Xtr, ytr)
    np.testing.assert_array_equal(model.coef_, again.coef_)


def test_copies_in_memory_keep_the_training_state(corpus):
    import copy

    Xtr, ytr, _ = corpus
    model = StructuredPerceptronTagger(max_iter=2, random_state=0).fit(Xtr, ytr)
    for dup in (copy.copy(model), copy.deepcopy(model)):
        dup.partial_fit(Xtr[:10], ytr[:10])
    deep = copy.deepcopy(model)
    assert deep._weights is not model._weights
    model.partial_fit(Xtr[:10], ytr[:10])
    deep.partial_fit(Xtr[:10], ytr[:10])
    np.testing.assert_array_equal(model.coef_, deep.coef_)


def test_a_mixture_pickles_as_its_model(corpus):
    from sklstruct import ParameterMixingTagger

    Xtr, ytr, Xte = corpus
    model = ParameterMixingTagger(StructuredPerceptronTagger(random_state=0), n_shards=4,
                                  max_iter=2).fit(Xtr, ytr)
    again = round_trip(model)
    assert not hasattr(again, "_weights")
    for a, b in zip(model.predict(Xte), again.predict(Xte)):
        np.testing.assert_array_equal(a, b)


def test_a_lean_model_refuses_to_continue_clearly(corpus):
    Xtr, ytr, _ = corpus
    model = round_trip(StructuredPerceptronTagger(max_iter=2, random_state=0).fit(Xtr, ytr))
    coef = model.coef_.copy()
    with pytest.raises(ValueError, match="training state"):
        model.partial_fit(Xtr, ytr)
    with pytest.raises(ValueError, match="training state"):
        model.set_params(warm_start=True).fit(Xtr, ytr)
    np.testing.assert_array_equal(model.coef_, coef)
    model.set_params(warm_start=False).fit(Xtr, ytr)      # a fresh fit is fine
    m3n = round_trip(M3NTagger(max_iter=1, random_state=0).fit(Xtr, ytr))
    with pytest.raises(ValueError, match="training state"):
        m3n.objective(Xtr, ytr)


def test_a_plain_fit_averages_in_place_and_can_still_continue(corpus):
    """fit without warm_start writes the average over the summed weights (no
    third array of W's size at the peak of memory): the same coef_ bit for
    bit as a fit asked to continue; training continued after it starts from
    sums recomputed from the raw weights and the average, equal up to
    rounding."""
    Xtr, ytr, Xte = corpus
    plain = StructuredPerceptronTagger(max_iter=2, random_state=0).fit(Xtr, ytr)
    kept = StructuredPerceptronTagger(max_iter=2, random_state=0, warm_start=True).fit(Xtr, ytr)
    assert plain._weights.sums_hold_average and not kept._weights.sums_hold_average
    np.testing.assert_array_equal(plain.coef_, kept.coef_)
    np.testing.assert_array_equal(plain.transition_coef_, kept.transition_coef_)
    coef = plain.coef_.copy()
    np.testing.assert_allclose(plain._weights.W_sum, kept._weights.W_sum, rtol=1e-12,
                               atol=1e-9)
    np.testing.assert_array_equal(plain.coef_, coef)         # the published average stays
    plain.partial_fit(Xtr, ytr)
    kept.partial_fit(Xtr, ytr)
    np.testing.assert_allclose(plain.coef_, kept.coef_, rtol=1e-12, atol=1e-9)
    again = StructuredPerceptronTagger(max_iter=2, random_state=0).fit(Xtr, ytr)
    state = pickle.loads(pickle.dumps(again._weights))      # the flag travels with the state
    assert state.sums_hold_average
    np.testing.assert_array_equal(state.averaged()[0], again.coef_.T)


@pytest.mark.parametrize("name", ["perceptron", "crf", "constrained"])
def test_astype_float32_predicts_from_float32_weights(corpus, name):
    """A float32 copy decodes from float32 emission weights (summed in
    float64): here the same labels, a smaller pickle, and no training
    state; the original is untouched."""
    from sklstruct import ConstrainedTagger
    Xtr, ytr, Xte = corpus
    cls = {**TAGGERS, **META_TAGGERS}[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = (ConstrainedTagger(StructuredPerceptronTagger(max_iter=2, random_state=0),
                                   constraints="bio") if cls is ConstrainedTagger
                 else make(cls, max_iter=2, random_state=0)).fit(Xtr, ytr)
    small = model.astype(np.float32)
    assert small.coef_.dtype == np.float32 and small.coef_.flags.f_contiguous
    assert model.coef_.dtype == np.float64
    W, _ = (small.estimator_ if name == "constrained" else small)._decoding_weights()
    assert W.dtype == np.float32 and W.base is not None       # a view: no copy
    for a, b in zip(model.predict(Xte), small.predict(Xte)):
        np.testing.assert_array_equal(a, b)
    again = round_trip(small)
    assert again.coef_.dtype == np.float32 and again.coef_.flags.f_contiguous
    assert len(pickle.dumps(small)) < len(pickle.dumps(model))
    np.testing.assert_array_equal(small.astype("float64").coef_, small.coef_)
    if name == "perceptron":
        with pytest.raises(ValueError, match="made by astype"):
            small.partial_fit(Xtr, ytr)


def test_astype_refusals(corpus):
    from sklearn.exceptions import NotFittedError
    Xtr, ytr, _ = corpus
    with pytest.raises(NotFittedError):
        StructuredPerceptronTagger().astype(np.float32)
    model = StructuredPerceptronTagger(max_iter=1, random_state=0).fit(Xtr, ytr)
    with pytest.raises(ValueError, match="float32 or float64"):
        model.astype(np.int32)
    kernel = M3NTagger(kernel="poly", max_iter=1, random_state=0).fit(Xtr[:40], ytr[:40])
    with pytest.raises(ValueError, match="no explicit"):
        kernel.astype(np.float32)


def test_astype_refuses_weights_beyond_the_dtype_range():
    """float32 turned weights above its range into inf, and the copy predicted
    other labels with no error."""
    import scipy.sparse as sp

    X = [sp.csr_matrix(np.array([[1e45, 0.0], [0.0, 1e45]]))] * 3
    y = [["a", "b"]] * 3
    model = StructuredPerceptronTagger(max_iter=1, random_state=0).fit(X, y)
    assert np.abs(model.coef_).max() > np.finfo(np.float32).max
    with pytest.raises(ValueError, match="beyond float32's range"):
        model.astype(np.float32)
    assert model.astype(np.float64).predict(X)[0].tolist() == ["a", "b"]


def test_astype_copies_are_independent(corpus):
    Xtr, ytr, _ = corpus
    model = StructuredPerceptronTagger(max_iter=1, random_state=0).fit(Xtr, ytr)
    same = model.astype(np.float64)
    assert not np.shares_memory(same.coef_, model.coef_)
    assert same.history_ is not model.history_
    # after an in-place average, averaged() gives copies: coef_ is not exposed
    assert not np.shares_memory(model._weights.averaged()[0], model.coef_)

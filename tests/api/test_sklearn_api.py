"""scikit-learn citizenship: clone, params, pipelines, model selection, persistence."""
import pickle

import joblib
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, cross_val_score, cross_validate
from sklearn.pipeline import make_pipeline

from sklstruct import (KBestMIRATagger, PassiveAggressiveTagger, SequenceVectorizer,
                       StructuredPerceptronTagger)
from sklstruct.datasets import make_chunking_corpus
from sklstruct.metrics import chunk_f1_scorer, get_scorer


@pytest.fixture(scope="module")
def corpus():
    return make_chunking_corpus(240, random_state=0)


def pipeline(**params):
    return make_pipeline(SequenceVectorizer(["bias", "word", "pos", "pos[-1]|pos"], window=1),
                         StructuredPerceptronTagger(max_iter=3, random_state=0, **params))


def test_clone_and_params():
    est = StructuredPerceptronTagger(k=3, max_iter=7, average=False, random_state=2)
    params = est.get_params()
    assert params == {"k": 3, "max_iter": 7, "average": False, "shuffle": True,
                      "random_state": 2, "verbose": 0, "warm_start": False, "order": 1,
                      "n_jobs": None}
    cloned = clone(est)
    assert cloned is not est and cloned.get_params() == params
    assert est.set_params(k=5) is est and est.k == 5


def test_clone_of_fitted_is_unfitted(corpus):
    X, y = corpus
    model = pipeline().fit(X, y)
    tagger = clone(model[-1])
    assert not hasattr(tagger, "coef_")


def test_pipeline_predicts_original_labels(corpus):
    X, y = corpus
    model = pipeline().fit(X, y)
    pred = model.predict(X[:10])
    assert isinstance(pred, list) and len(pred) == 10
    assert all(p.shape == (len(s),) for p, s in zip(pred, X[:10]))
    assert set(np.concatenate(pred)) <= set(np.concatenate(y))
    assert model.score(X, y) > 0.9


def test_grid_search_over_k_and_max_iter(corpus):
    X, y = corpus
    grid = GridSearchCV(pipeline(), {"structuredperceptrontagger__k": [1, 2],
                                     "structuredperceptrontagger__max_iter": [1, 3]},
                        cv=3, scoring=chunk_f1_scorer)
    grid.fit(X, y)
    assert set(grid.best_params_) == {"structuredperceptrontagger__k",
                                      "structuredperceptrontagger__max_iter"}
    scores = grid.cv_results_["mean_test_score"]
    assert scores.shape == (4,) and np.all((scores > 0.5) & (scores <= 1.0))
    assert grid.best_score_ == scores.max()
    assert len(grid.predict(X[:3])) == 3  # refit on everything


def test_cross_val_score_with_scorers(corpus):
    X, y = corpus
    f1 = cross_val_score(pipeline(), X, y, cv=3, scoring=chunk_f1_scorer)
    acc = cross_val_score(pipeline(), X, y, cv=3)  # default: the estimator's token accuracy
    assert f1.shape == acc.shape == (3,)
    assert np.all(f1 > 0.7) and np.all(acc > 0.8)
    res = cross_validate(pipeline(), X, y, cv=3,
                         scoring={"f1": get_scorer("chunk_f1"), "acc": get_scorer("token_accuracy")})
    np.testing.assert_allclose(res["test_acc"], acc)


@pytest.mark.parametrize("dump, load", [
    (pickle.dumps, pickle.loads),
    (lambda m: m, lambda m: m),
])
def test_pickle_round_trip(corpus, dump, load):
    X, y = corpus
    model = pipeline(k=2).fit(X, y)
    again = load(dump(model))
    for a, b in zip(model.predict(X), again.predict(X)):
        np.testing.assert_array_equal(a, b)


def test_joblib_round_trip(corpus, tmp_path):
    X, y = corpus
    model = pipeline().fit(X, y)
    joblib.dump(model, tmp_path / "model.joblib")
    again = joblib.load(tmp_path / "model.joblib")
    for a, b in zip(model.predict(X), again.predict(X)):
        np.testing.assert_array_equal(a, b)
    # saved after fit, it predicts but cannot continue: the pickle dropped the
    # training state (small models); with warm_start=True it keeps training
    with pytest.raises(ValueError, match="warm_start=True"):
        again[-1].partial_fit(again[0].transform(X), y)
    model[-1].set_params(warm_start=True)
    joblib.dump(model, tmp_path / "model.joblib")
    again = joblib.load(tmp_path / "model.joblib")
    again[-1].partial_fit(again[0].transform(X), y)
    assert again[-1].n_iter_ == model[-1].n_iter_ + 1


def test_chain_model_beats_unigram_tagger(corpus):
    """The generated corpus needs context: the chain tagger with window features
    does clearly better than a tagger that sees only the current token."""
    from sklstruct.metrics import chunk_f1_score
    X, y = make_chunking_corpus(1500, random_state=1)
    train, test = slice(0, 1200), slice(1200, None)
    # unigram: current word and POS, no transitions (logistic regression per token)
    from sklearn.linear_model import LogisticRegression
    vec = SequenceVectorizer(["word", "pos"]).fit(X[train])
    import scipy.sparse as sp
    clf = LogisticRegression(max_iter=300).fit(sp.vstack(vec.transform(X[train])),
                                               np.concatenate(y[train]))
    flat = clf.predict(sp.vstack(vec.transform(X[test])))
    unigram = chunk_f1_score(y[test], np.split(flat, np.cumsum([len(s) for s in X[test]])[:-1]))
    chain = pipeline().set_params(structuredperceptrontagger__max_iter=10).fit(X[train], y[train])
    f1 = chunk_f1_score(y[test], chain.predict(X[test]))
    assert f1 > 0.95
    assert f1 - unigram > 0.05, (f1, unigram)


@pytest.mark.parametrize("tagger", [PassiveAggressiveTagger(k=2, restricted=True),
                                    KBestMIRATagger(k=3, cost="zero_one")])
def test_other_learners_are_sklearn_citizens(corpus, tagger):
    X, y = corpus
    model = make_pipeline(SequenceVectorizer(["word", "pos"], window=1),
                          clone(tagger).set_params(max_iter=2, random_state=0,
                                                   warm_start=True))
    scores = cross_val_score(model, X, y, cv=3, scoring=chunk_f1_scorer)
    assert np.all(scores > 0.5)
    model.fit(X, y)
    again = pickle.loads(pickle.dumps(model))
    for a, b in zip(model.predict(X), again.predict(X)):
        np.testing.assert_array_equal(a, b)
    again[-1].partial_fit(again[0].transform(X[:10]), y[:10])
    assert again[-1].n_iter_ == 3


@pytest.mark.parametrize("name", sorted(__import__("sklstruct._registry").
                                        _registry.ESTIMATORS))
def test_every_registered_estimator_is_public_clonable_and_cites_its_papers(name):
    import sklstruct
    from sklstruct._registry import ESTIMATORS
    cls = ESTIMATORS[name]
    assert getattr(sklstruct, cls.__name__) is cls and cls.__name__ in sklstruct.__all__
    doc = cls.__doc__
    assert "\n    References\n    ----------\n" in doc, f"{cls.__name__} has no References"
    assert "paper 00" not in doc
    from _oracles import make
    est = make(cls)
    # (by repr: a meta-estimator's clone holds a clone of its estimator)
    assert ({k: repr(v) for k, v in clone(est).get_params().items()}
            == {k: repr(v) for k, v in est.get_params().items()})

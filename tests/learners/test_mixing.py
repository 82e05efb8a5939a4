"""ParameterMixingTagger: iterative parameter mixing (McDonald, Hall & Mann,
Distributed Training Strategies for the Structured Perceptron, Figure 3) on
any joblib backend."""
import numpy as np
import pytest
from joblib import parallel_config

from sklstruct import (KBestMIRATagger, ParameterMixingTagger, PassiveAggressiveTagger,
                       SequenceVectorizer, StructuredPerceptronTagger)
from sklstruct.datasets import make_chunking_corpus
from sklstruct.metrics import chunk_report

from _oracles import random_problem


@pytest.fixture(scope="module")
def corpus():
    X, y = make_chunking_corpus(700, random_state=5)
    vec = SequenceVectorizer(templates=("word", "pos"), window=1)
    return vec.fit_transform(X[:500]), y[:500], vec.transform(X[500:]), y[500:]


@pytest.mark.parametrize("learner", [StructuredPerceptronTagger(random_state=0),
                                     PassiveAggressiveTagger(random_state=1, average=False),
                                     KBestMIRATagger(k=2, random_state=2, order=2)],
                         ids=["perceptron", "pa", "mira2"])
def test_one_shard_is_serial_training_exactly(corpus, learner):
    X, y, _, _ = corpus
    serial = learner.set_params(max_iter=4).fit(X, y)
    mixed = ParameterMixingTagger(learner, n_shards=1, max_iter=4).fit(X, y)
    np.testing.assert_array_equal(mixed.coef_, serial.coef_)
    np.testing.assert_array_equal(mixed.transition_coef_, serial.transition_coef_)
    assert [h["mistakes"] for h in mixed.history_] == [h["mistakes"] for h in serial.history_]


@pytest.mark.parametrize("mixing", ["uniform", "weighted"])
def test_four_shards_reach_the_serial_f1(corpus, mixing):
    X, y, X_test, y_test = corpus
    learner = StructuredPerceptronTagger(random_state=0)
    serial = chunk_report(y_test, learner.set_params(max_iter=8).fit(X, y).predict(X_test)).f1
    model = ParameterMixingTagger(learner, n_shards=4, mixing=mixing, max_iter=8, n_jobs=2)
    f1 = chunk_report(y_test, model.fit(X, y).predict(X_test)).f1
    assert f1 >= serial - 0.01, (f1, serial)
    assert len(model.estimators_) == 4 and model.n_iter_ == 8
    mu = model.history_[-1]["mixing"]
    assert np.isclose(sum(mu), 1.0) and (mixing == "weighted" or len(set(mu)) == 1)


def test_a_mixing_step_keeps_the_shard_average_exact(corpus):
    """Moving a shard to the mixed weights is recorded as one update at its
    clock: its averaged weights are then the mean of the weights it held over
    both epochs, (mean of epoch 1 + mean of epoch 2 from the mixed start) / 2."""
    import copy

    from sklstruct.learners.mixing import _shard_epoch

    X, y, _, _ = corpus
    X, y = X[:30], y[:30]
    learner = StructuredPerceptronTagger(random_state=0).partial_fit(X, y)
    avg1 = learner._weights.averaged()
    rng = np.random.default_rng(0)
    mixed = (learner._weights.W + rng.normal(size=learner._weights.W.shape),
             learner._weights.P + rng.normal(size=learner._weights.P.shape))
    fresh = copy.deepcopy(learner)                    # epoch 2 alone, from the mixed start
    w = fresh._weights
    w.W[...], w.P[...] = mixed
    w.W_sum[...], w.P_sum[...] = 0.0, 0.0
    w.n_seen = 0
    avg2 = fresh.partial_fit(X, y)._weights.averaged()
    codes = learner._encode(y, X, learner.classes_)
    both = _shard_epoch(learner, X, codes, learner.classes_, mixed)._weights.averaged()
    for got, a1, a2 in zip(both, avg1, avg2):
        np.testing.assert_allclose(got, (a1 + a2) / 2, rtol=1e-10, atol=1e-10)


def test_threads_processes_and_a_dask_cluster_give_one_model(corpus):
    import distributed
    X, y, _, _ = corpus
    make = lambda: ParameterMixingTagger(PassiveAggressiveTagger(random_state=0), n_shards=3,
                                         max_iter=3, n_jobs=2)
    threads = make().fit(X, y)
    with parallel_config(backend="loky"):
        processes = make().fit(X, y)
    np.testing.assert_array_equal(processes.coef_, threads.coef_)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        with parallel_config(backend="dask"):
            on_dask = make().fit(X, y)
    np.testing.assert_array_equal(on_dask.coef_, threads.coef_)


def test_refuses_what_it_cannot_mix(corpus):
    X, y, _, _ = corpus
    with pytest.raises(ValueError, match="n_shards"):
        ParameterMixingTagger(StructuredPerceptronTagger(), n_shards=10).fit(X[:5], y[:5])
    from sklstruct import SDMTagger
    with pytest.raises((ValueError, TypeError), match="partial_fit"):
        ParameterMixingTagger(SDMTagger()).fit(X, y)


def test_a_foreign_estimator_is_refused_clearly():
    """An sklearn classifier has partial_fit and predict (the constraint) but no
    chain weights: it failed with "'SGDClassifier' object has no attribute
    '_train_encoded'"."""
    from sklearn.linear_model import SGDClassifier

    X, y = random_problem(n=8)
    mixer = ParameterMixingTagger(SGDClassifier(), n_shards=2, max_iter=1)
    with pytest.raises(TypeError, match="expected an sklstruct tagger"):
        mixer.fit(X, y)
    assert not hasattr(mixer, "coef_")

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
    assert model.n_iter_ == 8 and len(model.history_) == 8
    mu = model.history_[-1]["mixing"]
    assert np.isclose(sum(mu), 1.0) and (mixing == "weighted" or len(set(mu)) == 1)


def dense_mixing(learner, X, y, n_shards, max_iter, mixing):
    """Iterative parameter mixing as McDonald, Hall & Mann's Figure 3 reads,
    in plain NumPy over whole weight matrices: every shard moves all of its
    weights to the mixture (one update at its averaging clock), trains an
    epoch, and the mixture is the mu-weighted sum of the shards' weights;
    the model mixes their averages."""
    from sklearn.base import clone

    data = X
    classes, codes = learner._labels(y, data)
    cuts = np.linspace(0, len(data), n_shards + 1).round().astype(int)
    rows = data.offsets[cuts]
    shards = [(clone(learner), data[a:b], codes[r:s])
              for a, b, r, s in zip(cuts[:-1], cuts[1:], rows[:-1], rows[1:])]
    mixed = None
    for _ in range(max_iter):
        for lr, Xs, ys in shards:
            if mixed is not None:
                lr._weights.move_to(*mixed)
            lr._train_encoded(Xs, ys, classes, 1, hasattr(lr, "_weights"), publish=False)
        k = np.array([lr.history_[-1]["updates"] for lr, _, _ in shards], dtype=float)
        mu = (k / k.sum() if mixing == "weighted" and k.sum() > 0
              else np.full(n_shards, 1.0 / n_shards))
        mixed = tuple(sum(m * getattr(lr._weights, name) for m, (lr, _, _) in zip(mu, shards))
                      for name in ("W", "P"))
    final = [lr._weights.averaged() for lr, _, _ in shards]
    return tuple(sum(m * f[i] for m, f in zip(mu, final)) for i in (0, 1))


@pytest.mark.parametrize("learner", [StructuredPerceptronTagger(random_state=0),
                                     PassiveAggressiveTagger(random_state=1, average=False),
                                     KBestMIRATagger(k=2, random_state=2, order=2)],
                         ids=["perceptron", "pa", "mira2"])
@pytest.mark.parametrize("mixing", ["uniform", "weighted"])
def test_sparse_mixing_is_dense_mixing(corpus, learner, mixing):
    """Only changed rows travel, each shard holds its own columns, and the
    averages of untouched rows are kept lazily: the model is still the one
    of mixing whole weight matrices, to rounding."""
    from sklstruct.chain import pack_chain

    X, y, _, _ = corpus
    X, y = X[:150], y[:150]
    W, P = dense_mixing(learner, X, y, 3, 3, mixing)
    model = ParameterMixingTagger(learner, n_shards=3, mixing=mixing, max_iter=3,
                                  n_jobs=2).fit(X, y)
    # (exact arithmetic agrees; MIRA's QP solver, iterating to a tolerance, turns
    # the rounding of the two orders of summation into differences ~1e-8)
    tol = (dict(rtol=1e-6, atol=1e-7) if isinstance(learner, KBestMIRATagger)
           else dict(rtol=1e-10, atol=1e-12))
    np.testing.assert_allclose(model.coef_.T, W, **tol)
    got = pack_chain(model.transition_coef_, model.start_coef_, model.end_coef_,
                     model.trigram_coef_)
    np.testing.assert_allclose(got, P, **tol)
    history = model.history_
    # rows move both ways from the second epoch, and far fewer than the dense matrices
    assert history[0]["rows_sent"] == 0 and history[1]["rows_sent"] > 0
    assert all(h["rows_received"] < 3 * X.n_features for h in history)


def test_threads_and_a_dask_cluster_give_one_model(corpus):
    """Inside ``parallel_config(backend="dask")`` the shards are actors on the
    workers (each keeps its sentences and learner for the whole fit); the
    model is the threads' one, bit for bit."""
    import distributed
    X, y, _, _ = corpus
    make = lambda: ParameterMixingTagger(PassiveAggressiveTagger(random_state=0), n_shards=3,
                                         max_iter=3, n_jobs=2)
    threads = make().fit(X, y)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        with parallel_config(backend="dask"):
            on_dask = make().fit(X, y)
    np.testing.assert_array_equal(on_dask.coef_, threads.coef_)
    np.testing.assert_array_equal(on_dask.transition_coef_, threads.transition_coef_)


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


def test_a_worker_lost_mid_fit_fails_the_fit_clearly(corpus, monkeypatch):
    """A worker holding a shard dies between two epochs (killed): fit raises
    at once, saying the worker was lost, and publishes no model."""
    import os
    import time

    import distributed

    from sklstruct import _actors

    X, y, _, _ = corpus
    call, calls = _actors.DaskActors.call, []

    def call_killing_a_worker(self, method, args=None):
        calls.append(method)
        if calls.count("epoch") == 2:
            worker = sorted(self.client.scheduler_info()["workers"])[0]
            with pytest.raises(Exception):          # (the worker dies answering)
                self.client.run(os._exit, 1, workers=[worker])
            for _ in range(300):                    # until the scheduler has seen it
                if any(f.status != "finished" for f in self.futures):
                    break
                time.sleep(0.1)
        return call(self, method, args)

    monkeypatch.setattr(_actors.DaskActors, "call", call_killing_a_worker)
    model = ParameterMixingTagger(PassiveAggressiveTagger(random_state=0), n_shards=2,
                                  max_iter=4)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        with parallel_config(backend="dask"), pytest.raises(RuntimeError, match="lost"):
            model.fit(X, y)
    assert calls.count("epoch") == 2 and not hasattr(model, "coef_")


def test_one_shard_per_worker_or_thread(corpus):
    import distributed

    X, y, _, _ = corpus
    model = ParameterMixingTagger(StructuredPerceptronTagger(random_state=0), n_shards=None,
                                  max_iter=2, n_jobs=2)
    assert len(model.fit(X, y).history_[0]["mixing"]) == min(2, __import__("os").cpu_count())
    with distributed.LocalCluster(n_workers=3, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster), parallel_config(backend="dask"):
        assert len(model.fit(X, y).history_[0]["mixing"]) == 3


def test_bags_train_where_the_partitions_are(corpus):
    """On Dask bags each shard is made on a worker from its partitions:
    one shard is serial training exactly, and shards cut where the list
    path cuts give its model bit for bit."""
    import dask.bag as db
    import distributed

    X, y, X_test, _ = corpus
    X, y = list(X[:100]), [np.asarray(t) for t in y[:100]]
    learner = StructuredPerceptronTagger(random_state=0)
    serial = learner.set_params(max_iter=3).fit(X, y)
    two = ParameterMixingTagger(learner, n_shards=2, max_iter=3).fit(X, y)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        bags = db.from_sequence(X, npartitions=2), db.from_sequence(y, npartitions=2)
        one = ParameterMixingTagger(learner, n_shards=1, max_iter=3).fit(*bags)
        per_worker = ParameterMixingTagger(learner, n_shards=None, max_iter=3).fit(*bags)
        with pytest.raises(ValueError, match="n_shards=3 is more than the 2 partitions"):
            ParameterMixingTagger(learner, n_shards=3).fit(*bags)
    np.testing.assert_array_equal(one.coef_, serial.coef_)
    np.testing.assert_array_equal(per_worker.coef_, two.coef_)
    np.testing.assert_array_equal(per_worker.transition_coef_, two.transition_coef_)
    assert len(per_worker.history_[0]["mixing"]) == 2
    for a, b in zip(per_worker.predict(X_test), two.predict(X_test)):
        np.testing.assert_array_equal(a, b)

"""CRFTagger.fit on Dask bags, on a real LocalCluster of two worker
processes: the serial model to rounding, every loss and both orders; a
worker killed mid-fit fails the fit clearly (or it recovers), never a hang
or a half-trained model."""
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from sklstruct import CRFTagger
from sklstruct.learners import _crf_dask
from _oracles import random_problem
from _workers import kill_holder

pytest.importorskip("distributed")
import dask.bag as db  # noqa: E402
from distributed import Client, LocalCluster  # noqa: E402

LOSSES = ["log", "exp", "pointwise_log", "pointwise_exp"]


@pytest.fixture(scope="module")
def client():
    # worker processes are spawned: they get this process's sys.path
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as c:
        yield c


def problem():
    X, y = random_problem(n=40, n_features=6, seed=3)
    # feature 5 never fires with label 0: an unobserved (feature, label) pair
    X = [sp.csr_matrix(x.toarray() * np.where((np.asarray(t) == 0)[:, None], [1] * 5 + [0], 1))
         for x, t in zip(X, y)]
    return X, [np.asarray(t) for t in y]


def fit(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(X, y)


def test_without_a_client_bags_are_refused():
    X, y = problem()
    from distributed import default_client
    try:
        default_client()
        pytest.skip("a client is active in this process")
    except ValueError:
        pass
    with pytest.raises(ValueError, match="active dask.distributed client"):
        CRFTagger().fit(db.from_sequence(X, npartitions=2), db.from_sequence(y, npartitions=2))


@pytest.mark.parametrize("loss, order", [(loss, order) for order in (1, 2) for loss in LOSSES])
def test_bags_give_the_serial_model(client, loss, order):
    """Partitions of unequal sizes (three of them on two workers): the same
    objective as the serial fit to 1e-8 relative, the same weights."""
    X, y = problem()
    params = dict(loss=loss, order=order, max_iter=4, C=0.8)
    serial = fit(CRFTagger(**params), X, y)
    bags = db.from_sequence(X, npartitions=3), db.from_sequence(y, npartitions=3)
    dist = fit(CRFTagger(**params), *bags)
    assert dist.objective_ == pytest.approx(serial.objective_, rel=1e-8)
    assert dist.n_iter_ == serial.n_iter_
    for name in ("coef_", "transition_coef_", "start_coef_", "end_coef_"):
        np.testing.assert_allclose(getattr(dist, name), getattr(serial, name), atol=1e-8)
    assert (dist.coef_[0, 5] == 0) and np.array_equal(dist.classes_, serial.classes_)


def _one_pass(partition):
    return (pair for pair in partition)      # a partition that can be iterated once


def test_bags_sharing_partitions_that_iterate_once(client):
    """X and y taken from one bag whose partitions are generators (each
    can be read once): each gets its own, as with X.compute() and
    y.compute(); the model is the serial one."""
    X, y = problem()
    serial = fit(CRFTagger(max_iter=3), X, y)
    base = db.from_sequence(list(zip(X, y)), npartitions=2).map_partitions(_one_pass)
    dist = fit(CRFTagger(max_iter=3), base.pluck(0), base.pluck(1))
    assert dist.objective_ == pytest.approx(serial.objective_, rel=1e-8)


def test_all_states_warm_start_and_a_plain_local_model(client):
    """all_possible_states and warm_start on bags; the fitted tagger is an
    ordinary local estimator (pickles, predicts on lists)."""
    X, y = problem()
    bags = db.from_sequence(X, npartitions=2), db.from_sequence(y, npartitions=2)
    serial = fit(CRFTagger(all_possible_states=True, max_iter=3, warm_start=True), X, y)
    dist = fit(CRFTagger(all_possible_states=True, max_iter=3, warm_start=True), *bags)
    assert dist.objective_ == pytest.approx(serial.objective_, rel=1e-8)
    assert dist.coef_[0, 5] != 0
    assert fit(dist, *bags).objective_ == pytest.approx(fit(serial, X, y).objective_, rel=1e-8)
    again = pickle.loads(pickle.dumps(dist))
    assert [list(p) for p in again.predict(X)] == [list(p) for p in serial.predict(X)]


def test_bad_bags_are_refused(client):
    X, y = problem()
    with pytest.raises(ValueError, match="partitions"):
        CRFTagger().fit(db.from_sequence(X, npartitions=2), db.from_sequence(y, npartitions=3))
    with pytest.raises(TypeError, match="both be dask bags"):
        CRFTagger().fit(db.from_sequence(X, npartitions=2), y)
    y_bad = [t[:-1] if i == 7 else t for i, t in enumerate(y)]
    with pytest.raises(ValueError):
        CRFTagger().fit(db.from_sequence(X, npartitions=2), db.from_sequence(y_bad, npartitions=2))


def test_a_worker_killed_mid_fit_fails_clearly_or_recovers(client, monkeypatch):
    """The worker holding the first shard is killed at the third objective
    evaluation: fit raises a RuntimeError saying so, leaving the estimator
    unfitted, or finishes with the serial model; it never hangs."""
    X, y = problem()
    serial = fit(CRFTagger(max_iter=6), X, y)
    values, calls = _crf_dask.BagShards.values, []

    def killing(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            kill_holder(client, self.shards[0])
        return values(self, *args, **kwargs)

    monkeypatch.setattr(_crf_dask.BagShards, "values", killing)
    model = CRFTagger(max_iter=6)
    bags = db.from_sequence(X, npartitions=4), db.from_sequence(y, npartitions=4)
    try:
        fit(model, *bags)
    except RuntimeError as exc:
        assert "worker died" in str(exc)
        assert not hasattr(model, "coef_")
    else:
        assert model.objective_ == pytest.approx(serial.objective_, rel=1e-8)
    client.wait_for_workers(2, timeout=60)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 9])
def test_the_gradient_tree_is_the_same_whoever_adds(n):
    """tree_reduce: each of k workers adds what it can of its leaves, the
    client the rest; the sum is the one-process sum to the bit, for any
    split of the leaves."""
    from sklstruct._dask import tree_reduce

    rng = np.random.default_rng(n)
    leaves = {(0, i): rng.standard_normal(50) * 10.0 ** rng.integers(-8, 8, 50)
              for i in range(n)}
    (whole,) = tree_reduce(n, leaves).values()
    level = [leaves[(0, i)] for i in range(n)]      # the pairwise tree, written out
    while len(level) > 1:
        level = [a + b for a, b in zip(level[0::2], level[1::2])] + level[len(level) // 2 * 2:]
    assert np.array_equal(whole, level[0])
    for k in (2, 3):
        owner = rng.integers(0, k, n)
        nodes = {}
        for w in range(k):
            mine = {key: v.copy() for key, v in leaves.items() if owner[key[1]] == w}
            nodes.update(tree_reduce(n, mine))
        (total,) = tree_reduce(n, nodes).values()
        assert np.array_equal(total, whole)


def test_each_worker_holds_a_run_and_runs_one_task(client):
    """The partitions are made on the workers in runs of consecutive ones
    (placement), and an evaluation is one task per worker."""
    from sklstruct._dask import holders, placement
    from sklstruct.learners._bag_data import bag_partitions

    X, y = problem()
    bags = db.from_sequence(X, npartitions=4), db.from_sequence(y, npartitions=4)
    workers = sorted(client.scheduler_info()["workers"])
    assert placement(client, 5) == [workers[0]] * 3 + [workers[1]] * 2
    parts, *_ = bag_partitions(client, *bags, None, "test")
    try:
        assert [w[0] for w in holders(client, parts)] == [workers[0]] * 2 + [workers[1]] * 2
    finally:
        _crf_dask.release(parts)
    shards, *_ = _crf_dask.bag_problem(CRFTagger(), *bags, False)
    try:
        assert [run for _, run in shards._runs] == [[0, 1], [2, 3]]
    finally:
        shards.close()

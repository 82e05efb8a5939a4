"""Fitting where Dask bags live: the machinery the estimators share.

An estimator given ``dask.bag`` collections (sentences and labels with the
same partitions, e.g. from :func:`sklstruct.datasets.read_conll_bag`) works
with the active ``dask.distributed`` client the way a distributed L-BFGS
or parameter mixing does (Spark's treeAggregate, dask-glm, xgboost.dask):

* :func:`partition_futures` computes one object per partition on the
  workers (a learner's view of its sentences) and keeps it there, as a
  future, each worker given a run of consecutive partitions
  (:func:`placement`): the client never holds the corpus, and the data is
  not shipped again at each step;
* :func:`share` sends a state (the weight vector) to the cluster once per
  step;
* :func:`tree_reduce` adds per-partition results in a binary tree fixed by
  the partition order, each worker the nodes of its own partitions and the
  client the rest, so that the sum, to the bit, does not depend on how many
  workers there are or which one holds what;
* :func:`gather` brings results back and turns a lost worker into one clear
  error (the scheduler first recomputes what a dead worker held, from the
  bags' graph, a few times; see ``distributed.scheduler.allowed-failures``).

Dask is optional: nothing here imports it before a bag is given.
"""
import operator
import sys
from collections.abc import Sequence


def is_bag(obj):
    """Whether ``obj`` is a ``dask.bag.Bag`` (False when dask.bag was never imported)."""
    core = sys.modules.get("dask.bag.core")
    return core is not None and isinstance(obj, core.Bag)


def active_client(what):
    """The active ``dask.distributed`` client, or a clear error."""
    try:
        from distributed import default_client
    except ImportError:                          # pragma: no cover - dask is in the extras
        raise ImportError(f"{what} on dask bags needs dask.distributed: "
                          "pip install 'dask[distributed]'") from None
    try:
        return default_client()
    except ValueError:
        raise ValueError(f"{what} on dask bags needs an active dask.distributed client, e.g. "
                         "client = Client(LocalCluster()) (or Client('scheduler:8786')) before "
                         "fit; none is running") from None


def check_bags(X, y, what):
    """Raise unless X and y are both bags with the same number of partitions."""
    if not (is_bag(X) and is_bag(y)):
        raise TypeError(f"{what}: X and y must both be dask bags or both lists; got "
                        f"{type(X).__name__} and {type(y).__name__}")
    if X.npartitions != y.npartitions:
        raise ValueError(f"{what}: X has {X.npartitions} partitions and y {y.npartitions}; "
                         "they must be partitioned alike (read_conll_bag gives such bags)")


def placement(client, n):
    """The worker address for each of ``n`` partitions: runs of consecutive
    partitions, one run per worker (sorted), cut as ``np.array_split``
    cuts; None for all when the cluster has no worker."""
    import numpy as np

    workers = sorted(client.scheduler_info()["workers"])
    where = [None] * n
    for worker, run in zip(workers, np.array_split(np.arange(n), len(workers) or 1)):
        for i in run:
            where[i] = worker if workers else None
    return where


def partition_futures(client, fn, X, y, *args):
    """Futures of ``fn(X_part, y_part, *args)`` for every partition, in
    partition order, computed on the workers from the bags' graph (which
    also lets the scheduler recompute one a dead worker held).  Each worker
    computes a run of consecutive partitions (:func:`placement`; elsewhere
    if it is busy or gone), so that what is added in partition order
    (:func:`tree_reduce`) is mostly added where it lies."""
    import dask

    task = dask.delayed(fn, pure=True)
    # each bag's graph optimised on its own: a task X and y share (read_conll_bag's
    # reading of a file range) is fused into each and runs twice, but taking the
    # unoptimised graphs to run it once broke bags whose shared partitions can be
    # iterated once only (a generator: X's pass emptied y's) and put raw keys in
    # the scheduler that a later compute of the same bag gives other tasks
    parts = [task(dx, dy, *args) for dx, dy in zip(X.to_delayed(), y.to_delayed())]
    where = placement(client, len(parts))
    futures = [None] * len(parts)
    for worker in dict.fromkeys(where):
        run = [i for i, w in enumerate(where) if w == worker]
        computed = client.compute([parts[i] for i in run], allow_other_workers=True,
                                  workers=None if worker is None else [worker])
        for i, future in zip(run, computed):
            futures[i] = future
    return futures


def holders(client, futures):
    """For each future, the workers holding its data (where its tasks should run)."""
    who = client.who_has(futures)
    return [list(who.get(f.key, ())) or None for f in futures]


def submit_each(client, fn, futures, *args, where=None):
    """``[fn(f, *args)]`` for each future: on the workers ``where`` gives
    (:func:`holders`), so that the scheduler never moves resident data to
    balance the load, yet elsewhere if those workers are gone."""
    where = where or [None] * len(futures)
    return [client.submit(fn, f, *args, **pinned(w)) for f, w in zip(futures, where)]


def pinned(workers):
    """``client.submit``'s keywords for a task preferring ``workers``."""
    if not workers:
        return {"pure": False}
    return {"pure": False, "workers": workers, "allow_other_workers": True}


def share(client, value):
    """A future of ``value`` for the tasks of every worker: sent once, to one
    worker, from which the others fetch it when a task needs it.  (Scattering
    with ``broadcast=True`` waits for every worker the scheduler lists, and a
    worker that has just died can make it wait for ever.)"""
    return client.scatter(value, hash=False)


def tree_reduce(n, known, add=operator.add):
    """Add what can be added of the binary tree over ``n`` leaves, fixed by
    their order, from its nodes ``known`` (a dict ``{(level, index): value}``,
    leaves at level 0): node ``(l + 1, i)`` is ``(l, 2i) + (l, 2i + 1)``, and
    the last node of a level of odd size is carried up as it is.  Returns
    the nodes left (whose parents could not be made): the root alone,
    ``{(top, 0): sum}``, when every leaf, or what covers them, was known.

    A worker reduces the leaves it holds, the client the nodes the workers
    return: every sum is made of the same two terms wherever it is made, so
    the total does not depend on which worker held which leaf.  ``add`` may
    add into its first argument (each value is used once)."""
    known = dict(known)
    size, level = n, 0
    while size > 1:
        for i in range(size // 2):
            a, b = (level, 2 * i), (level, 2 * i + 1)
            if a in known and b in known:
                known[(level + 1, i)] = add(known.pop(a), known.pop(b))
        if size % 2 and (level, size - 1) in known:
            known[(level + 1, size // 2)] = known.pop((level, size - 1))
        size, level = (size + 1) // 2, level + 1
    return known


class lost_workers:
    """Context manager: a worker lost for good (or a task that killed its
    workers too often) inside raises RuntimeError naming ``what``; errors of
    the tasks themselves (a bad sentence) pass as they were raised."""

    def __init__(self, what):
        self.what = what

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        from distributed import CancelledError, KilledWorker
        from distributed.comm import CommClosedError

        if exc is not None and isinstance(exc, (KilledWorker, CommClosedError, CancelledError)):
            raise RuntimeError(
                f"{self.what}: a Dask worker died or its results were lost and could not be "
                f"recomputed ({type(exc).__name__}: {exc}); fit was abandoned and the estimator "
                "is unchanged") from exc
        return False


def gather(client, futures, what):
    """``client.gather(futures)``, a lost worker raising as :class:`lost_workers`."""
    with lost_workers(what):
        return client.gather(futures)


def release(futures):
    """Let the cluster forget ``futures`` (those given; nested lists too)."""
    for f in futures:
        if isinstance(f, (list, tuple)):
            release(f)
        elif f is not None and hasattr(f, "release"):
            f.release()


def _call_on_partition(part, model, method):
    if not isinstance(part, Sequence):
        part = list(part)
    if not len(part):
        return []
    out = getattr(model, method)(part)
    # a vectorizer's StackedSentences stays one stacked matrix (a sequence of
    # sentences, as a bag's partition may be): cutting it into a matrix per
    # sentence cost twice its transform, and the learner stacks it again
    return out if isinstance(out, Sequence) else list(out)


def map_bag(model, X, method):
    """The bag of ``model.<method>`` of each sentence of the bag ``X``,
    computed partition by partition on the workers (lazy), the fitted model
    sent to each worker once."""
    client = active_client(f"{type(model).__name__}.{method}")
    return X.map_partitions(_call_on_partition, share(client, model), method)

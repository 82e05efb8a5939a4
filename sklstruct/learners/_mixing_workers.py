"""Where the shards of :class:`sklstruct.ParameterMixingTagger` live: threads
of the fitting process, or Dask actors on the workers of a cluster.

Both keep every :class:`~sklstruct.learners._mixing_shard.Shard` resident
for the whole fit, so that only rows of weights travel between epochs;
each answers the same three calls (``columns``, ``epoch``, ``averaged``) with
the same results, so a fit gives one model wherever it runs.
"""
from contextlib import contextmanager

from joblib.parallel import get_active_backend

from .._parallel import run
from ._mixing_shard import Shard


class ThreadShards:
    """The shards in this process, ``n_jobs`` of them training at once
    (the online kernels release the GIL)."""

    def __init__(self, shards, n_jobs):
        self.n_jobs = n_jobs
        self.shards = self._map(lambda args: Shard(*args), shards)

    def _map(self, fn, items):
        return run(self.n_jobs, lambda a, b: fn(items[a]), [(i, i + 1) for i in range(len(items))])

    def columns(self):
        return [shard.used_columns() for shard in self.shards]

    def epoch(self, moves):
        return self._map(lambda i: self.shards[i].epoch(*moves[i]), range(len(self.shards)))

    def averaged(self):
        return [shard.averaged() for shard in self.shards]

    def close(self):
        self.shards = None


class DaskShards:
    """The shards as Dask actors, dealt round-robin to the workers of
    ``client``: each shard's sentences are scattered once to its worker,
    which keeps them and the learner until :meth:`close`."""

    def __init__(self, client, shards):
        self.client = client
        workers = sorted(client.scheduler_info()["workers"])
        if not workers:
            raise RuntimeError("the Dask cluster has no workers")
        self.futures = []
        for i, args in enumerate(shards):
            where = [workers[i % len(workers)]]
            args = client.scatter(list(args), workers=where, hash=False)
            self.futures.append(client.submit(Shard, *args, actor=True, workers=where,
                                              pure=False))
        self.actors = [future.result() for future in self.futures]

    def _check_alive(self, cause=None):
        # an actor's future turns to "error" once the scheduler sees its worker gone
        lost = [i for i, f in enumerate(self.futures) if f.status != "finished"]
        if lost:
            raise RuntimeError(f"the Dask worker holding shard(s) {lost} was lost during the "
                               "fit; the fit is abandoned") from cause

    def _gather(self, calls):
        # every call is sent before the first is waited for: the shards train at once
        try:
            return [call.result() for call in calls]
        except Exception as exc:
            self._check_alive(exc)
            raise

    def columns(self):
        return self._gather([a.used_columns() for a in self.actors])

    def epoch(self, moves):
        self._check_alive()
        return self._gather([a.epoch(*m) for a, m in zip(self.actors, moves)])

    def averaged(self):
        return self._gather([a.averaged() for a in self.actors])

    def close(self):
        self.actors = self.futures = None


def dask_client():
    """The Dask client of joblib's active backend (inside
    ``joblib.parallel_config(backend="dask")``), or None."""
    backend, _ = get_active_backend()
    return getattr(backend, "client", None) if type(backend).__name__ == \
        "DaskDistributedBackend" else None


def n_workers(client):
    """The number of workers of ``client``'s cluster."""
    return len(client.scheduler_info()["workers"])


@contextmanager
def shard_runner(shards, n_jobs, client=None):
    """The shards built from ``shards`` (learner, data, codes, classes), run
    as actors of the Dask ``client``, or in ``n_jobs`` threads without one."""
    runner = ThreadShards(shards, n_jobs) if client is None else DaskShards(client, shards)
    try:
        yield runner
    finally:
        runner.close()

"""Objects that stay where they were made for a whole fit, called in
lockstep: in threads of this process, or as Dask actors on the workers of a
cluster.

A distributed fit that keeps state between its steps (a shard of parameter
mixing with its learner, a part of the parser's training trees with their
features) makes one object per part with :func:`resident`, then calls a
method of every object at once with :meth:`Local.call` /
:meth:`DaskActors.call`, which return the results in part order.  Only the
calls' arguments and results travel; each part's data is sent to its worker
once.  Dask is used inside ``joblib.parallel_config(backend="dask")``
(:func:`joblib_dask_client`), and imported by nothing here otherwise.
"""
from contextlib import contextmanager

from joblib.parallel import get_active_backend

from ._parallel import run


class Local:
    """The objects ``cls(*args)`` of ``parts`` in this process, called in
    ``n_jobs`` threads (the kernels they run release the GIL)."""

    def __init__(self, cls, parts, n_jobs):
        self.n_jobs = n_jobs
        self.objects = self._map(lambda args: cls(*args), parts)

    def _map(self, fn, items):
        return run(self.n_jobs, lambda a, b: fn(items[a]), [(i, i + 1) for i in range(len(items))])

    def call(self, method, args=None):
        """``[getattr(obj, method)(*args[i])]`` for every object (``args``:
        one tuple per object, None for no arguments)."""
        args = args or [()] * len(self.objects)
        return self._map(lambda i: getattr(self.objects[i], method)(*args[i]),
                         range(len(self.objects)))

    def close(self):
        self.objects = None


class DaskActors:
    """The objects ``cls(*args)`` of ``parts`` as Dask actors, dealt
    round-robin to the workers of ``client``; each part's arguments are
    scattered once to its worker, which keeps the object until
    :meth:`close`.  ``where``: instead, the workers of each part, whose
    arguments are futures of data already there (partitions of a bag).
    ``what`` names the fit in errors."""

    def __init__(self, client, cls, parts, what, where=None):
        self.client, self.what = client, what
        workers = sorted(client.scheduler_info()["workers"])
        if not workers:
            raise RuntimeError(f"{what}: the Dask cluster has no workers")
        self.futures = []
        for i, args in enumerate(parts):
            if where is None:
                at = [workers[i % len(workers)]]
                # (hash=False: equal arguments of two parts are two objects, each on its worker)
                args = client.scatter(list(args), workers=at, hash=False)
            else:
                at = where[i]            # (its arguments are futures held there)
            self.futures.append(client.submit(cls, *args, actor=True, workers=at, pure=False))
        self.actors = [future.result() for future in self.futures]

    def _check_alive(self, cause=None):
        # an actor's future turns to "error" once the scheduler sees its worker gone
        lost = [i for i, f in enumerate(self.futures) if f.status != "finished"]
        if lost:
            raise RuntimeError(f"{self.what}: the Dask worker holding part(s) {lost} was lost "
                               "during the fit; the fit is abandoned") from cause

    def call(self, method, args=None):
        """As :meth:`Local.call`, every call sent before the first is waited
        for, so that the parts work at once."""
        self._check_alive()
        args = args or [()] * len(self.actors)
        calls = [getattr(actor, method)(*a) for actor, a in zip(self.actors, args)]
        try:
            return [call.result() for call in calls]
        except Exception as exc:
            self._check_alive(exc)
            raise

    def close(self):
        self.actors = self.futures = None


def joblib_dask_client():
    """The Dask client of joblib's active backend (inside
    ``joblib.parallel_config(backend="dask")``), or None."""
    backend, _ = get_active_backend()
    return getattr(backend, "client", None) if type(backend).__name__ == \
        "DaskDistributedBackend" else None


def n_workers(client):
    """The number of workers of ``client``'s cluster."""
    return len(client.scheduler_info()["workers"])


@contextmanager
def resident(cls, parts, n_jobs, client=None, what="fit", where=None):
    """The objects ``cls(*args)`` of ``parts`` (a list of argument tuples):
    Dask actors of ``client`` (``where``: see :class:`DaskActors`), or in
    this process with ``n_jobs`` threads without one; released on exit."""
    objects = Local(cls, parts, n_jobs) if client is None else \
        DaskActors(client, cls, parts, what, where)
    try:
        yield objects
    finally:
        objects.close()

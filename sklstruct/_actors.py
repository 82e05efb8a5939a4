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


def _placed(client, parts, what, where):
    """``(workers, arguments)`` of each part: dealt round-robin to the
    workers of ``client``, each part's arguments scattered once to its
    worker; ``where``: the workers of each part, whose arguments are
    futures of data already there (partitions of a bag)."""
    workers = sorted(client.scheduler_info()["workers"])
    if not workers:
        raise RuntimeError(f"{what}: the Dask cluster has no workers")
    for i, args in enumerate(parts):
        if where is None:
            at = [workers[i % len(workers)]]
            # (hash=False: equal arguments of two parts are two objects, each on its worker)
            yield at, client.scatter(list(args), workers=at, hash=False)
        else:
            yield where[i], args         # (its arguments are futures held there)


def _call(obj, method, *args):
    return getattr(obj, method)(*args)


class DaskTasks:
    """The objects ``cls(*args)`` of ``parts``, placed as :class:`DaskActors`
    places them, for objects that their calls do not change: each object is
    a future its worker holds, each call a task there.

    Why not actors for these: an actor's calls grew the client's memory with
    every call (glibc's arenas kept the frames of their arguments; a parser
    fit on a LocalCluster grew by about 4 MB an iteration, its weights being
    10 MB), where tasks do not.  An argument given to several parts (the
    weights) is sent once per call.  An object whose worker died is made
    again from its arguments if they survive; otherwise the call raises."""

    def __init__(self, client, cls, parts, what, where=None):
        from distributed import wait

        self.client, self.what = client, what
        self._where, self._args, self.futures = [], [], []
        for at, args in _placed(client, parts, what, where):
            self._where.append(at)
            self._args.append(args)      # (kept: what an object is made again from)
            self.futures.append(client.submit(cls, *args, workers=at,
                                              allow_other_workers=True, pure=False))
        wait(self.futures)
        for future in self.futures:      # an object that failed to build raises here
            if future.status == "error":
                future.result()
        self.actors = self.futures       # (one per part, as DaskActors's)

    def call(self, method, args=None):
        """As :meth:`Local.call`, every call a task where its object lies."""
        from ._dask import gather, release, share

        args = args or [()] * len(self.futures)
        sent = {}                        # id -> future of an array (sent once per call)

        def future_of(a):
            if type(a).__module__ == "numpy" and getattr(a, "nbytes", 0) > 1 << 16:
                if id(a) not in sent:
                    sent[id(a)] = share(self.client, a)
                return sent[id(a)]
            return a

        tasks = [self.client.submit(_call, obj, method, *map(future_of, a), workers=at,
                                    allow_other_workers=True, pure=False)
                 for obj, at, a in zip(self.futures, self._where, args)]
        try:
            return gather(self.client, tasks, self.what)
        finally:
            release(tasks + list(sent.values()))

    def close(self):
        from ._dask import release

        release([self.futures, self._args])
        self.actors = self.futures = self._args = None


class DaskActors:
    """The objects ``cls(*args)`` of ``parts`` as Dask actors, dealt
    round-robin to the workers of ``client``; each part's arguments are
    scattered once to its worker, which keeps the object until
    :meth:`close`.  ``where``: instead, the workers of each part, whose
    arguments are futures of data already there (partitions of a bag).
    ``what`` names the fit in errors."""

    def __init__(self, client, cls, parts, what, where=None):
        self.client, self.what = client, what
        self.futures = [client.submit(cls, *args, actor=True, workers=at, pure=False)
                        for at, args in _placed(client, parts, what, where)]
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
def resident(cls, parts, n_jobs, client=None, what="fit", where=None, stateless=False):
    """The objects ``cls(*args)`` of ``parts`` (a list of argument tuples):
    Dask actors of ``client`` (``where``: see :class:`DaskActors`; with
    ``stateless``, objects their calls do not change, :class:`DaskTasks`),
    or in this process with ``n_jobs`` threads without one; released on
    exit."""
    if client is None:
        objects = Local(cls, parts, n_jobs)
    else:
        objects = (DaskTasks if stateless else DaskActors)(client, cls, parts, what, where)
    try:
        yield objects
    finally:
        objects.close()

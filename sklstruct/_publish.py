"""Copy-on-publish: the thread-safety contract of every estimator.

A fitted estimator may be shared by threads calling its predict*, score
and transform methods.  Fitting it (``fit``, ``partial_fit``,
``calibrate``) or calling ``set_params`` in one thread while others predict
never crashes and never mixes two models: each prediction uses the model
of before the fit or the model after it, whole.

Two decorators make it so, for every estimator at once:

* :func:`publishes` runs a fitting method on a shallow working copy of the
  estimator and, when it succeeds, copies what the method changed back onto
  the estimator in one step (under :data:`_LOCK`).  A failed fit publishes
  nothing: the estimator is as it was (objects that continued training
  updates in place, the raw weights of ``partial_fit``, are training state
  that prediction never reads).
* :func:`reads_model` runs a prediction method on a snapshot: a shallow copy
  of the estimator's attributes taken in one step (under the same lock), so
  that the attributes it reads one after the other all belong to one model.

Published arrays are never written in place afterwards (a fit publishes new
ones), so a snapshot stays valid for as long as a prediction runs.  Two fits
of one estimator at the same time are not supported (as in scikit-learn):
the last to finish publishes its model over the other's.
"""
import functools
import threading

# One lock for every estimator: it is held only to copy an estimator's
# attribute dict (microseconds), never while fitting or predicting.
_LOCK = threading.Lock()


def _shallow_copy(estimator, attributes):
    new = type(estimator).__new__(type(estimator))
    new.__dict__.update(attributes)
    return new


def snapshot(estimator):
    """A shallow copy of ``estimator`` with the attributes of one moment."""
    if not hasattr(estimator, "__dict__"):
        return estimator        # not an estimator: let the caller's checks say so
    with _LOCK:
        attributes = dict(estimator.__dict__)
    return _shallow_copy(estimator, attributes)


def publishes(method):
    """Decorate a fitting method: run it on a working copy, then publish.

    Lists and dicts among the attributes are copied too (a fit appends to
    ``history_`` in place).  Only attributes the method set or removed are
    published, so a ``set_params`` made meanwhile in another thread stays.
    """
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with _LOCK:
            before = dict(self.__dict__)
        work = _shallow_copy(self, {
            name: (type(value)(value) if type(value) in (list, dict) else value)
            for name, value in before.items()})
        result = method(work, *args, **kwargs)
        after = work.__dict__
        changed = {name: value for name, value in after.items()
                   if name not in before or not _same(value, before[name])}
        removed = [name for name in before if name not in after]
        with _LOCK:
            self.__dict__.update(changed)
            for name in removed:
                self.__dict__.pop(name, None)
        return self if result is work else result
    return wrapper


def _same(value, old):
    """Whether ``value`` (work's attribute) is still ``old`` (self's): the
    same object, or a list or dict copy holding the same objects."""
    if value is old:
        return True
    if type(value) is list and type(old) is list:
        return len(value) == len(old) and all(a is b for a, b in zip(value, old))
    if type(value) is dict and type(old) is dict:
        return value.keys() == old.keys() and all(value[k] is old[k] for k in value)
    return False


def reads_model(method):
    """Decorate a prediction method: run it on a :func:`snapshot`."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        return method(snapshot(self), *args, **kwargs)
    return wrapper


class Cache:
    """A slot for what prediction derives from a published model and keeps
    (an index of support vectors).  The model publishes a new, empty Cache
    with itself; snapshots of the model share it, so what one prediction
    builds the next ones reuse, and a refit never sees the old model's."""

    __slots__ = ("value",)

    def __init__(self):
        self.value = None

    def get(self, build):
        """The cached value, built by ``build()`` on first use (two threads
        may both build it; either result is the same)."""
        value = self.value
        if value is None:
            value = self.value = build()
        return value

    def __reduce__(self):
        # a cache is rebuilt, never saved or copied
        return (Cache, ())

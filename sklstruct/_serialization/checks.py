"""What the rules of :mod:`.classes` and :mod:`.sklearn_parts` share: a
class's :class:`Rule` (how it is stored and checked) and the checks of
loaded values, each failure a ``ValueError`` naming where."""
import numpy as np


def _fail(path, message):
    raise ValueError(f"{path}: {message}")


def _array(obj, name, path, kinds, ndim=None, shape=None):
    """``obj.name`` as an ndarray of a dtype kind in ``kinds`` (and of
    ``ndim`` dimensions or exactly ``shape``), else ValueError."""
    a = getattr(obj, name)
    if not isinstance(a, np.ndarray) or a.dtype.kind not in kinds:
        _fail(path, f"{name} must be an array of kind {kinds!r}; got "
                    f"{getattr(a, 'dtype', type(a).__name__)}")
    if ndim is not None and a.ndim != ndim:
        _fail(path, f"{name} must have {ndim} dimensions; got shape {a.shape}")
    if shape is not None and a.shape != tuple(shape):
        _fail(path, f"{name} must have shape {tuple(shape)}; got {a.shape}")
    return a


def _int(obj, name, path, low=0, high=None):
    v = getattr(obj, name)
    if type(v) is not int or v < low or (high is not None and v > high):
        _fail(path, f"{name} must be an int >= {low}; got {v!r}")
    return v


def _in_range(a, low, high, what, path):
    if a.size and (a.min() < low or a.max() >= high):
        _fail(path, f"{what} holds values outside [{low}, {high})")


def _str_dict(d, what, path, values=None):
    if not isinstance(d, dict) or not all(type(k) is str for k in d):
        _fail(path, f"{what} must be a dict with string keys")
    if values is not None and not all(type(v) is values for v in d.values()):
        _fail(path, f"{what} must map strings to {values.__name__}s")
    return d


class Rule:
    """How one class is stored and checked.

    Parameters
    ----------
    private : tuple of str
        Other attributes stored (private ones, ``_name``, and the constructor
        arguments of a class that is not an estimator).
    drop : tuple of str
        Attributes left out of the file (caches, views rebuilt on loading).
    check : callable, optional
        ``check(obj, path)``: verify a loaded object, rebuild what was dropped.
    state, build : callable, optional
        For a class stored by its constructor's arguments: ``state(obj)``
        gives them as a dict, ``build(state, path)`` makes the object.
    keys : tuple of str
        The names of those arguments (a file must give exactly these).
    refuse : callable, optional
        ``refuse(obj)``: why ``obj`` cannot be saved (a str), or None.
    """

    def __init__(self, private=(), drop=(), check=None, state=None, build=None, keys=(),
                 refuse=None):
        self.refuse = refuse
        self.private = frozenset(private)
        self.keys = frozenset(keys)
        self.drop = frozenset(drop)
        self.check = check
        self.state = state
        self.build = build

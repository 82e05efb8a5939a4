"""Plain data <-> a JSON tree and ``.npy`` entries, strictly.

:class:`Writer` turns a value made of ``None``, bools, ints, floats,
strings, lists, tuples, dicts, sets, NumPy scalars and arrays of numbers,
bools or strings, SciPy CSR/CSC matrices, ``RandomState`` instances, NumPy
dtypes, and objects that a caller-given ``describe`` accepts into a tree of
JSON values; every array goes to an entry of its own (``a<n>.npy``).
:class:`Reader` is its inverse: it accepts only the tags below with exactly
their fields, reads each array through a caller-given ``open_array`` that
checks the entry's header against the dtype and shape the tree announces,
and builds objects only through a caller-given ``build``.  Nothing is
imported, looked up by name or executed on the way.

A JSON object in the tree is always a tagged value ``{"t": TAG, ...}``:

========== ============================================================
tag        fields
========== ============================================================
tuple      ``v``: list of values
dict       ``v``: object of string keys -> values
vectors    ``keys``: list of strings, ``matrix``: an array node: a dict of
           string keys -> 1-D arrays of one dtype and length (word vectors),
           stored as one matrix (one entry, not one per word)
items      ``v``: list of ``[key, value]`` (dicts with non-string keys)
set        ``v``: list of values (``frozenset`` likewise)
float      ``v``: ``"nan"``, ``"inf"`` or ``"-inf"``
scalar     ``dtype``, ``v``: a NumPy scalar
array      ``entry``, ``dtype``, ``shape``, ``order`` (``"C"`` or ``"F"``)
strings    ``dtype`` (``object`` or ``<U<n>``), ``shape``, ``v``: an array of
           strings, flattened
sparse     ``format`` (csr/csc), ``kind`` (matrix/array), ``shape``,
           ``data``, ``indices``, ``indptr``
rng        ``v``: the state of a ``numpy.random.RandomState``
nptype     ``v``: a NumPy scalar type (``float64``...)
dtype      ``v``: a NumPy dtype
object     ``class``, ``id``, ``state``: an object of an allowed class
ref        ``v``: the ``id`` of an object built earlier in the tree
========== ============================================================
"""
import math
import re

import numpy as np
import scipy.sparse as sp

#: Array dtypes a ``.npy`` entry may hold: bools, integers and floats (arrays
#: of strings, such as label classes, are JSON lists).
_DTYPE = re.compile(r"^[<|]?(b1|[iu][1248]|f[48])$")
_STRING_DTYPE = re.compile(r"^(object|<U[1-9][0-9]{0,5})$")
_SCALAR_TYPES = {np.dtype(t).name: np.dtype(t).type
                 for t in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                           "uint32", "uint64", "float32", "float64")}
_SPECIAL_FLOATS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
#: Values that are JSON as they are (floats are not: NaN and infinities are tagged).
_PLAIN = (str, int, bool, type(None))
MAX_DEPTH = 100
MAX_NDIM = 8


def _float_node(x):
    return x if math.isfinite(x) else {"t": "float", "v": repr(x)}


def check_dtype(text, where):
    """The NumPy dtype named ``text`` if it is one a model file may hold."""
    if not isinstance(text, str) or not _DTYPE.match(text):
        raise ValueError(f"{where}: dtype {text!r} is not one a model file may hold "
                         "(bools, integers, floats)")
    return np.dtype(text)


def check_shape(shape, where):
    if (not isinstance(shape, list) or len(shape) > MAX_NDIM
            or not all(type(n) is int and 0 <= n < 2 ** 62 for n in shape)):
        raise ValueError(f"{where}: shape {shape!r} is not a list of at most {MAX_NDIM} "
                         "sizes")
    return tuple(shape)


class Writer:
    """Encode values into JSON nodes, collecting arrays in ``arrays``.

    Parameters
    ----------
    describe : callable
        ``describe(obj, path)`` returns ``(class_name, state)`` for an object
        that may be stored (``state``: a dict of attribute name -> value),
        or raises ``TypeError`` naming what cannot be stored.
    """

    def __init__(self, describe):
        self.describe = describe
        self.arrays = {}
        self._objects = {}
        self._alive = []      # keep ids valid while encoding

    def encode(self, value, path="model", depth=0):
        if depth > MAX_DEPTH:
            raise TypeError(f"{path}: nested more than {MAX_DEPTH} levels deep")
        d = depth + 1
        if isinstance(value, np.str_):
            return str(value)
        if isinstance(value, np.generic):
            return self._scalar(value, path)
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, int):
            return int(value)
        if isinstance(value, float):
            return _float_node(float(value))
        if isinstance(value, list):
            return [self.encode(v, f"{path}[{i}]", d) for i, v in enumerate(value)]
        if isinstance(value, tuple):
            return {"t": "tuple", "v": [self.encode(v, f"{path}[{i}]", d)
                                        for i, v in enumerate(value)]}
        if isinstance(value, dict):
            if all(type(k) is str for k in value):
                if _is_vectors(value):
                    return {"t": "vectors", "keys": list(value),
                            "matrix": self._array(np.stack(list(value.values())), path)}
                if all(type(v) in _PLAIN for v in value.values()):
                    return {"t": "dict", "v": dict(value)}      # a vocabulary: at once
                return {"t": "dict", "v": {k: self.encode(v, f"{path}[{k!r}]", d)
                                           for k, v in value.items()}}
            return {"t": "items", "v": [[self.encode(k, f"{path}.keys", d),
                                         self.encode(v, f"{path}[{k!r}]", d)]
                                        for k, v in value.items()]}
        if isinstance(value, (set, frozenset)):
            items = sorted(value, key=repr)
            return {"t": "frozenset" if isinstance(value, frozenset) else "set",
                    "v": [self.encode(v, f"{path}{{}}", d) for v in items]}
        if isinstance(value, np.ndarray):
            return self._array(value, path)
        if sp.issparse(value):
            return self._sparse(value, path, d)
        if isinstance(value, np.random.RandomState):
            name, keys, pos, has_gauss, gauss = value.get_state()
            return {"t": "rng", "v": [name, self._array(keys, path), int(pos), int(has_gauss),
                                      _float_node(float(gauss))]}
        if isinstance(value, type) and value in _SCALAR_TYPES.values():
            return {"t": "nptype", "v": np.dtype(value).name}
        if isinstance(value, np.dtype):
            check_dtype(value.str, path)
            return {"t": "dtype", "v": value.str}
        return self._object(value, path, d)

    def _scalar(self, value, path):
        dtype = value.dtype
        if dtype.name not in _SCALAR_TYPES:
            raise TypeError(f"{path}: cannot store a NumPy scalar of dtype {dtype}")
        item = value.item()
        return {"t": "scalar", "dtype": dtype.name,
                "v": _float_node(item) if isinstance(item, float) else item}

    def _array(self, value, path):
        if value.dtype == object or value.dtype.kind == "U":
            flat = value.ravel().tolist()
            if not all(type(v) is str for v in flat):
                raise TypeError(f"{path}: an object array other than of strings cannot be "
                                "stored without pickle")
            return {"t": "strings", "dtype": "object" if value.dtype == object else
                    value.dtype.newbyteorder("<").str, "shape": list(value.shape), "v": flat}
        dtype = value.dtype.newbyteorder("<") if value.dtype.byteorder == ">" else value.dtype
        check_dtype(dtype.str, path)
        order = "F" if value.ndim > 1 and value.flags.f_contiguous and not \
            value.flags.c_contiguous else "C"
        entry = f"a{len(self.arrays)}.npy"
        self.arrays[entry] = np.asarray(value, dtype=dtype, order=order)
        return {"t": "array", "entry": entry, "dtype": dtype.str, "shape": list(value.shape),
                "order": order}

    def _sparse(self, value, path, depth):
        fmt = value.format
        if fmt not in ("csr", "csc"):
            value, fmt = value.tocsr(), "csr"
        return {"t": "sparse", "format": fmt,
                "kind": "matrix" if isinstance(value, sp.spmatrix) else "array",
                "shape": list(value.shape),
                "data": self._array(value.data, f"{path}.data"),
                "indices": self._array(value.indices, f"{path}.indices"),
                "indptr": self._array(value.indptr, f"{path}.indptr")}

    def _object(self, value, path, depth):
        key = id(value)
        if key in self._objects:
            return {"t": "ref", "v": self._objects[key]}
        name, state = self.describe(value, path)
        encoded = {k: self.encode(v, f"{path}.{k}", depth) for k, v in state.items()}
        number = len(self._objects)
        self._objects[key] = number
        self._alive.append(value)
        return {"t": "object", "class": name, "id": number, "state": encoded}


def _is_vectors(d):
    """Whether ``d`` (string keys) maps to 1-D numeric arrays of one dtype and length."""
    if not d:
        return False
    first = next(iter(d.values()))
    return isinstance(first, np.ndarray) and first.ndim == 1 and \
        first.dtype.kind in "biuf" and all(
            type(v) is np.ndarray and v.shape == first.shape and v.dtype == first.dtype
            for v in d.values())


_FIELDS = {
    "vectors": {"keys", "matrix"},
    "tuple": {"v"}, "dict": {"v"}, "items": {"v"}, "set": {"v"}, "frozenset": {"v"},
    "float": {"v"}, "scalar": {"dtype", "v"}, "array": {"entry", "dtype", "shape", "order"},
    "strings": {"dtype", "shape", "v"}, "sparse": {"format", "kind", "shape", "data", "indices",
                                          "indptr"},
    "rng": {"v"}, "nptype": {"v"}, "dtype": {"v"}, "object": {"class", "id", "state"},
    "ref": {"v"},
}


class Reader:
    """Decode JSON nodes written by :class:`Writer`.

    Parameters
    ----------
    open_array : callable
        ``open_array(entry, dtype, shape, fortran)`` returns the array of
        that entry, refusing one whose header differs.
    build : callable
        ``build(class_name, state, path)`` returns an object of an allowed
        class from its decoded state (a dict), or raises ``ValueError``.
    """

    def __init__(self, open_array, build):
        self.open_array = open_array
        self.build = build
        self.objects = {}

    def decode(self, node, path="model", depth=0):
        if depth > MAX_DEPTH:
            raise ValueError(f"{path}: nested more than {MAX_DEPTH} levels deep")
        d = depth + 1
        if node is None or type(node) in (bool, int, str):
            return node
        if type(node) is float:
            if not math.isfinite(node):
                raise ValueError(f"{path}: a bare non-finite number")
            return node
        if type(node) is list:
            return [self.decode(v, f"{path}[{i}]", d) for i, v in enumerate(node)]
        if type(node) is not dict:
            raise ValueError(f"{path}: unexpected JSON value of type {type(node).__name__}")
        tag = node.get("t")
        if tag not in _FIELDS or set(node) != _FIELDS[tag] | {"t"}:
            raise ValueError(f"{path}: not a value a model file holds (tag {tag!r}, fields "
                             f"{sorted(node)[:8]})")
        v = node.get("v")
        if tag == "tuple":
            return tuple(self.decode(self._list(v, path), path, depth))
        if tag in ("set", "frozenset"):
            items = self.decode(self._list(v, path), path, depth)
            try:
                return (frozenset if tag == "frozenset" else set)(items)
            except TypeError:
                raise ValueError(f"{path}: a set of unhashable values") from None
        if tag == "dict":
            if type(v) is not dict:
                raise ValueError(f"{path}: a dict's items are not a JSON object")
            if all(type(x) in _PLAIN for x in v.values()):
                return v                                       # a vocabulary: as it is
            return {k: self.decode(x, f"{path}[{k!r}]", d) for k, x in v.items()}
        if tag == "vectors":
            keys = self._list(node["keys"], path)
            matrix = self.decode(node["matrix"], f"{path}.matrix", d)
            if not (isinstance(matrix, np.ndarray) and matrix.ndim == 2
                    and matrix.dtype.kind in "biuf"
                    and matrix.shape[0] == len(keys) and all(type(k) is str for k in keys)
                    and len(set(keys)) == len(keys)):
                raise ValueError(f"{path}: word vectors need one matrix row per distinct "
                                 "string key")
            return dict(zip(keys, matrix))
        if tag == "items":
            out = {}
            for i, pair in enumerate(self._list(v, path)):
                if type(pair) is not list or len(pair) != 2:
                    raise ValueError(f"{path}[{i}]: not a [key, value] pair")
                key = self.decode(pair[0], f"{path}.keys", d)
                try:
                    out[key] = self.decode(pair[1], f"{path}[{key!r}]", d)
                except TypeError:
                    raise ValueError(f"{path}: an unhashable dict key") from None
            return out
        if tag == "float":
            if v not in _SPECIAL_FLOATS:
                raise ValueError(f"{path}: {v!r} is not nan, inf or -inf")
            return _SPECIAL_FLOATS[v]
        if tag == "scalar":
            return self._scalar(node, path)
        if tag == "array":
            return self._array(node, path)
        if tag == "strings":
            shape = check_shape(node["shape"], path)
            items = self._list(v, path)
            if not all(type(s) is str for s in items) or len(items) != math.prod(shape):
                raise ValueError(f"{path}: a string array of shape {shape} needs "
                                 f"{math.prod(shape)} strings")
            dtype = node["dtype"]
            if type(dtype) is not str or not _STRING_DTYPE.match(dtype):
                raise ValueError(f"{path}: {dtype!r} is not a string dtype")
            if dtype == "object":
                out = np.empty(len(items), dtype=object)
                out[:] = items
            else:
                out = np.array(items, dtype=dtype)
                if out.tolist() != items:        # a string longer than the dtype's
                    raise ValueError(f"{path}: strings do not fit dtype {dtype}")
            return out.reshape(shape)
        if tag == "sparse":
            return self._sparse(node, path)
        if tag == "rng":
            return self._rng(v, path)
        if tag == "nptype":
            if v not in _SCALAR_TYPES:
                raise ValueError(f"{path}: {v!r} is not a NumPy scalar type")
            return _SCALAR_TYPES[v]
        if tag == "dtype":
            return check_dtype(v, path)
        if tag == "ref":
            if type(v) is not int or v not in self.objects:
                raise ValueError(f"{path}: refers to object {v!r}, not built before it")
            return self.objects[v]
        # an object
        number, name, state = node["id"], node["class"], node["state"]
        if type(number) is not int or number in self.objects:
            raise ValueError(f"{path}: object id {number!r} is not a new number")
        if type(name) is not str or type(state) is not dict:
            raise ValueError(f"{path}: an object needs a class name and a state")
        decoded = {k: self.decode(x, f"{path}.{k}", d) for k, x in state.items()}
        obj = self.build(name, decoded, path)
        self.objects[number] = obj
        return obj

    @staticmethod
    def _list(v, path):
        if type(v) is not list:
            raise ValueError(f"{path}: expected a JSON list")
        return v

    def _scalar(self, node, path):
        name, v = node["dtype"], node["v"]
        if name not in _SCALAR_TYPES:
            raise ValueError(f"{path}: {name!r} is not a NumPy scalar type")
        if type(v) is dict and v.get("t") == "float":
            v = self.decode(v, path)
        if type(v) not in (bool, int, float):
            raise ValueError(f"{path}: a NumPy scalar's value is not a number")
        try:
            with np.errstate(all="raise"):
                out = _SCALAR_TYPES[name](v)
        except (OverflowError, FloatingPointError, ValueError, TypeError):
            raise ValueError(f"{path}: {v!r} does not fit a {name}") from None
        if not (out == v or (isinstance(v, float) and math.isnan(v))):
            raise ValueError(f"{path}: {v!r} does not fit a {name}")
        return out

    def _array(self, node, path):
        entry, order = node["entry"], node["order"]
        dtype = check_dtype(node["dtype"], path)
        shape = check_shape(node["shape"], path)
        if type(entry) is not str or order not in ("C", "F"):
            raise ValueError(f"{path}: an array needs an entry name and an order C or F")
        return self.open_array(entry, dtype, shape, order == "F", path)

    def _sparse(self, node, path):
        fmt, kind = node["format"], node["kind"]
        shape = check_shape(node["shape"], path)
        if fmt not in ("csr", "csc") or kind not in ("matrix", "array") or len(shape) != 2:
            raise ValueError(f"{path}: not a 2-d CSR or CSC matrix")
        parts = [self.decode(node[k], f"{path}.{k}") for k in ("data", "indices", "indptr")]
        if not all(isinstance(p, np.ndarray) and p.ndim == 1 for p in parts):
            raise ValueError(f"{path}: a sparse matrix's parts must be 1-d arrays")
        data, indices, indptr = parts
        if (data.dtype.kind not in "biuf" or indices.dtype.kind not in "iu"
                or indptr.dtype.kind not in "iu"):
            raise ValueError(f"{path}: a sparse matrix's indices must be integers and its "
                             "values numbers")
        major = shape[0] if fmt == "csr" else shape[1]
        if len(indptr) != major + 1 or len(indices) != len(data):
            raise ValueError(f"{path}: indptr of length {len(indptr)} and {len(indices)} "
                             f"indices for {len(data)} values do not fit shape {shape}")
        cls = {("csr", "matrix"): sp.csr_matrix, ("csc", "matrix"): sp.csc_matrix,
               ("csr", "array"): sp.csr_array, ("csc", "array"): sp.csc_array}[fmt, kind]
        out = cls((data, indices, indptr), shape=shape, copy=False)
        out.check_format(full_check=True)       # every index in range, indptr sorted
        return out

    def _rng(self, v, path):
        v = self._list(v, path)
        if len(v) != 5 or v[0] != "MT19937":
            raise ValueError(f"{path}: not the state of a MT19937 RandomState")
        keys = self.decode(v[1], path)
        gauss = self.decode(v[4], path)
        if (not isinstance(keys, np.ndarray) or keys.shape != (624,) or keys.dtype != np.uint32
                or type(v[2]) is not int or not 0 <= v[2] <= 624 or v[3] not in (0, 1)
                or type(gauss) is not float):
            raise ValueError(f"{path}: not the state of a MT19937 RandomState")
        rng = np.random.RandomState()
        rng.set_state(("MT19937", keys, v[2], v[3], gauss))
        return rng

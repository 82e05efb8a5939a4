"""The scikit-learn objects a model file may hold besides ``Pipeline``: the
k-means clusterings of :class:`EmbeddingFeatures` and the transformers that
:class:`TokenTransformer` applies to each token.

They are stored as sklstruct's own estimators are: their parameters and
fitted arrays (``vars``), never a pickle, without the training state that
prediction does not read.  Loading makes each by ``cls.__new__``, sets those
attributes, validates the parameters by the class's own constraints, then
checks here that every array its ``predict`` or ``transform`` reads (some
through scikit-learn's Cython) has a dtype and a shape that fit
``n_features_in_`` and one another, and rebuilds the private attributes fit
would have set.  A loaded one gives bit for bit the output of the saved one.

What cannot be stored is refused by :func:`save_model`, saying so: any other
scikit-learn transformer (each needs its state described here), a
``FunctionTransformer`` (a Python function: a model file holds no code), a
parameter that is a Python function (a callable ``kernel`` or ``init``).
"""
import numpy as np
import scipy.sparse as sp
from sklearn.cluster import MiniBatchKMeans
from sklearn.decomposition import TruncatedSVD
from sklearn.kernel_approximation import Nystroem, PolynomialCountSketch, RBFSampler
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer, MaxAbsScaler, Normalizer, StandardScaler
from sklearn.utils._openmp_helpers import _openmp_effective_n_threads

from ..features import TokenTransformer
from .checks import Rule, _array, _fail, _in_range, _int


def _floats(obj, name, path, shape=None, ndim=None):
    """``obj.name``: a float32 or float64 array (of ``shape``, or ``ndim``)."""
    a = _array(obj, name, path, "f", ndim=ndim, shape=shape)
    if a.dtype not in (np.float32, np.float64):
        _fail(path, f"{name} must be float32 or float64; got {a.dtype}")
    return a


def _fitted(obj, name):
    return name in obj.__dict__


def _no_functions(obj):
    """Why ``obj`` cannot be stored: a parameter that is a Python function."""
    for name, value in obj.get_params(deep=False).items():
        if callable(value) and not isinstance(value, type):
            return (f"{type(obj).__name__}'s parameter {name} is a Python function "
                    f"({getattr(value, '__qualname__', type(value).__name__)}), which a "
                    "model file cannot store: it holds no code")
    return None


# -- the checks of a loaded object ----------------------------------------------------------

def _check_kmeans(obj, path):
    if not _fitted(obj, "cluster_centers_"):
        return
    n, k = _int(obj, "n_features_in_", path, low=1), obj.n_clusters
    obj.cluster_centers_ = np.ascontiguousarray(
        _floats(obj, "cluster_centers_", path, shape=(k, n)))
    if _fitted(obj, "labels_"):
        _in_range(_array(obj, "labels_", path, "iu", ndim=1), 0, k, "labels_", path)
    obj._n_threads = _openmp_effective_n_threads()      # (as fit sets them)
    obj._n_features_out = k


def _check_nystroem(obj, path):
    if not _fitted(obj, "components_"):
        return
    n, basis = _int(obj, "n_features_in_", path, low=1), obj.components_
    if sp.issparse(basis):                  # (the rows of a sparse X)
        if basis.format != "csr" or basis.dtype.kind != "f" or basis.ndim != 2:
            _fail(path, "components_ must be a CSR matrix of floats")
    else:
        _floats(obj, "components_", path, ndim=2)
    if basis.shape[1] != n:
        _fail(path, f"components_ must have n_features_in_={n} columns; got {basis.shape}")
    m = basis.shape[0]
    _floats(obj, "normalization_", path, shape=(m, m))
    _array(obj, "component_indices_", path, "iu", shape=(m,))
    obj._n_features_out = m


def _check_rbf(obj, path):
    if not _fitted(obj, "random_weights_"):
        return
    n, k = _int(obj, "n_features_in_", path, low=1), obj.n_components
    _floats(obj, "random_weights_", path, shape=(n, k))
    _floats(obj, "random_offset_", path, shape=(k,))
    if not isinstance(obj._gamma, (float, np.floating)):
        _fail(path, "_gamma must be a float")
    obj._n_features_out = k


def _check_count_sketch(obj, path):
    if not _fitted(obj, "indexHash_"):
        return
    n, k, d = _int(obj, "n_features_in_", path, low=1), obj.n_components, obj.degree
    _in_range(_array(obj, "indexHash_", path, "iu", shape=(d, n)), 0, k, "indexHash_", path)
    if not np.isin(_array(obj, "bitHash_", path, "i", shape=(d, n)), (-1, 1)).all():
        _fail(path, "bitHash_ must hold -1 and 1 only")
    obj._n_features_out = k


def _check_max_abs(obj, path):
    if _fitted(obj, "scale_"):
        n = _int(obj, "n_features_in_", path, low=1)
        for name in ("max_abs_", "scale_"):
            _floats(obj, name, path, shape=(n,))


def _check_standard(obj, path):
    if not _fitted(obj, "scale_"):
        return
    n = _int(obj, "n_features_in_", path, low=1)
    for name, needed in (("mean_", obj.with_mean), ("var_", False), ("scale_", obj.with_std)):
        if getattr(obj, name) is not None or needed:
            _floats(obj, name, path, shape=(n,))


def _check_normalizer(obj, path):
    if _fitted(obj, "n_features_in_"):
        _int(obj, "n_features_in_", path, low=1)


def _check_svd(obj, path):
    if not _fitted(obj, "components_"):
        return
    n, k = _int(obj, "n_features_in_", path, low=1), obj.n_components
    _floats(obj, "components_", path, shape=(k, n))
    for name in ("explained_variance_", "explained_variance_ratio_", "singular_values_"):
        _floats(obj, name, path, shape=(k,))


#: The transformers a TokenTransformer may apply in a model file, by the name
#: the file gives them, with their rules.
TRANSFORMERS = {
    "sklearn.kernel_approximation.Nystroem": (Nystroem, Rule(
        drop=("_n_features_out",), check=_check_nystroem, refuse=_no_functions)),
    "sklearn.kernel_approximation.RBFSampler": (RBFSampler, Rule(
        private=("_gamma",), drop=("_n_features_out",), check=_check_rbf)),
    "sklearn.kernel_approximation.PolynomialCountSketch": (PolynomialCountSketch, Rule(
        private=("indexHash_", "bitHash_"), drop=("_n_features_out",),
        check=_check_count_sketch)),
    "sklearn.preprocessing.MaxAbsScaler": (MaxAbsScaler, Rule(check=_check_max_abs)),
    "sklearn.preprocessing.StandardScaler": (StandardScaler, Rule(check=_check_standard)),
    "sklearn.preprocessing.Normalizer": (Normalizer, Rule(check=_check_normalizer)),
    "sklearn.decomposition.TruncatedSVD": (TruncatedSVD, Rule(check=_check_svd)),
}
_TRANSFORMER_CLASSES = tuple(cls for cls, _ in TRANSFORMERS.values())
_TRANSFORMER_NAMES = ", ".join(cls.__name__ for cls in _TRANSFORMER_CLASSES)


# -- TokenTransformer ------------------------------------------------------------------------

def _parts(transformer):
    """The transformer, or the steps of a Pipeline of them (nested)."""
    if isinstance(transformer, Pipeline):       # (scikit-learn's or sklstruct's)
        for _, step in transformer.steps:
            if step is not None and not (isinstance(step, str) and step == "passthrough"):
                yield from _parts(step)
    else:
        yield transformer


def _refuse_token_transformer(obj):
    """Why a TokenTransformer cannot be stored: a transformer of no rule here."""
    held = [("transformer", obj.transformer)]
    if _fitted(obj, "transformer_"):
        held.append(("transformer_", obj.transformer_))
    for where, transformer in held:
        for part in _parts(transformer):
            if type(part) in _TRANSFORMER_CLASSES:
                continue
            name = type(part).__name__
            why = ("it applies a Python function, and a model file holds no code"
                   if isinstance(part, FunctionTransformer) else
                   f"a model file stores TokenTransformer only around scikit-learn's "
                   f"{_TRANSFORMER_NAMES} (or Pipelines of them), as their parameters "
                   "and arrays")
            return (f"TokenTransformer's {where} is or holds a {name}, which cannot be "
                    f"stored in a model file: {why}; keep such a model with joblib (a "
                    "pickle, which runs code when loaded: load only files you trust)")
    return None


def _check_token_transformer(obj, path):
    if not _fitted(obj, "transformer_"):
        return
    n = _int(obj, "n_features_in_", path, low=1)
    parts = list(_parts(obj.transformer_))
    if not parts or not all(type(p) in _TRANSFORMER_CLASSES for p in parts):
        _fail(path, f"transformer_ must be a fitted transformer of {_TRANSFORMER_NAMES}")
    if getattr(parts[0], "n_features_in_", None) != n:
        _fail(path, f"transformer_ was fitted on other than n_features_in_={n} features")


#: The classes of this module, by the name a model file gives them, with their rules.
CLASSES = {
    "TokenTransformer": (TokenTransformer, Rule(check=_check_token_transformer,
                                                refuse=_refuse_token_transformer)),
    "sklearn.cluster.MiniBatchKMeans": (MiniBatchKMeans, Rule(
        drop=("_tol", "_n_init", "_batch_size", "_init_size", "_n_threads", "_counts",
              "_ewa_inertia", "_ewa_inertia_min", "_no_improvement", "_n_since_last_reassign",
              "_n_features_out"),
        check=_check_kmeans, refuse=_no_functions)),
    **TRANSFORMERS,
}

"""The classes a model file may name, what it stores of each, and how a
loaded object is checked.

An object is stored as its attributes (its parameters and its fitted
state, ``vars(obj)``) minus what it can rebuild (caches) or does not need to
predict (the training state of the online and dual learners, as a lean
pickle drops it).  It is loaded by ``cls.__new__`` and setting exactly those
attributes: no constructor, ``__setstate__`` or other code named by the file
runs.  Which attributes a class may have is fixed here: its constructor
parameters, public fitted names (``lower_case_``) and the private names
listed in :data:`RULES`; a file with any other is refused.  Each rule's
``check`` then verifies what the Cython kernels will read (shapes, dtypes,
index ranges) and rebuilds the caches, so that a crafted file can make a
model wrong but never make a kernel read out of bounds.
"""
import importlib
import re

import numpy as np
import scipy.sparse as sp
from sklearn.cluster import MiniBatchKMeans
from sklearn.feature_extraction import DictVectorizer
from sklearn.pipeline import Pipeline

from .._publish import Cache
from .._registry import ESTIMATORS
from .._validation import MAX_K
from ..features import (BrownClusters, DictSequenceVectorizer, EmbeddingFeatures,
                        GazetteerFeatures, LabelDictionaryFeatures, SentenceFeatureUnion,
                        SequenceVectorizer)
from ..features._crossfit import MAX_WINDOW
from ..features._templates import _parse_templates, template_names
from ..learners._base import ChainTagger
from ..learners.constrained import ConstrainedTagger
from ..learners.m3n import M3NSGDTagger, M3NTagger
from ..parsing.base import MAX_UNARY_CHAIN, BaseParser
from ..parsing.grammar import Grammar
from ..parsing.model import CompiledGrammar
from ..parsing.parser import F1MaxMarginParser
from ..parsing.pcfg import PCFGParser
from ..parsing.spans import SpanFeatures
from ..pipeline import Pipeline as OurPipeline

from . import sklearn_parts
from .checks import Rule, _array, _fail, _in_range, _int, _str_dict

_FITTED = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*_$")


# -- the checks, by class (every rule along the class's MRO runs) ---------------------

def _check_chain(obj, path):
    if not hasattr(obj, "classes_"):
        return
    classes = obj.classes_
    if (not isinstance(classes, np.ndarray) or classes.ndim != 1 or not len(classes)
            or classes.dtype.kind not in "iuUO"
            or classes.dtype == object and not all(type(c) is str for c in classes)):
        _fail(path, "classes_ must be a non-empty 1-d array of labels (ints or strings)")
    if len(classes) > 1 and not np.all(classes[1:] > classes[:-1]):
        _fail(path, "classes_ must be sorted and distinct")
    L = len(classes)
    F = _int(obj, "n_features_in_", path)
    _check_calibration(getattr(obj, "calibration_", None), path)
    if isinstance(obj, ConstrainedTagger):
        return                                  # its weights are its estimator_'s
    coef = getattr(obj, "coef_", None)
    if sp.issparse(coef):                       # stored sparse when mostly zeros
        if coef.dtype.kind != "f":
            _fail(path, "coef_ must hold floats")
        # Fortran order, as fit leaves it: coef_.T is the C-contiguous W decoding reads
        obj.coef_ = coef = coef.toarray(order="F")
    # (an M3N with a kernel has support vectors instead: see _check_m3n)
    if not isinstance(obj, M3NTagger) or obj._kernel[0] == "linear":
        _array(obj, "coef_", path, "f", shape=(L, F))
        if coef.dtype not in (np.float32, np.float64):
            _fail(path, "coef_ must be float32 or float64")
    for name, shape in (("transition_coef_", (L, L)), ("start_coef_", (L,)),
                        ("end_coef_", (L,))):
        if _array(obj, name, path, "f", shape=shape).dtype != np.float64:
            _fail(path, f"{name} must be float64")
    if obj.trigram_coef_ is not None and \
            _array(obj, "trigram_coef_", path, "f", shape=(L, L, L)).dtype != np.float64:
        _fail(path, "trigram_coef_ must be float64")
    obj.__dict__["_resumable"] = False


def _check_calibration(cal, path):
    """``calibration_`` as :meth:`calibrate` sets it, or None."""
    if cal is None:
        return
    t = cal.get("temperature") if isinstance(cal, dict) else None
    if (not isinstance(cal, dict) or cal.get("method") not in ("forward_backward", "kbest")
            or type(cal.get("k")) is not int or not 1 <= cal["k"] <= MAX_K
            or type(t) is not float or not 0 < t < np.inf):
        _fail(path, "calibration_ must be calibrate's dict of a method, a k in "
                    f"1..{MAX_K} and a positive temperature")


def _check_m3n(obj, path):
    obj._index = Cache()
    if not hasattr(obj, "_kernel"):
        return
    k = obj._kernel
    if (not isinstance(k, tuple) or len(k) != 4 or k[0] not in ("linear", "poly", "rbf")
            or type(k[1]) is not float or type(k[2]) is not float or type(k[3]) is not int):
        _fail(path, "_kernel must be (kernel name, gamma, coef0, degree)")
    if k[0] == "linear":
        return
    sv = obj.support_vectors_
    if not (sp.issparse(sv) and sv.format == "csr" and sv.shape[1] == obj.n_features_in_):
        _fail(path, f"support_vectors_ must be CSR with {obj.n_features_in_} columns")
    n, L = sv.shape[0], len(obj.classes_)
    _array(obj, "dual_coef_", path, "f", shape=(n, L))
    obj.dual_coef_ = np.ascontiguousarray(obj.dual_coef_, dtype=np.float64)
    _array(obj, "support_", path, "iu", shape=(n,))
    if obj.n_support_ != n:
        _fail(path, f"n_support_ is {obj.n_support_!r}; support_vectors_ has {n} rows")


def _check_constrained(obj, path):
    if not hasattr(obj, "estimator_"):
        return
    if not isinstance(obj.estimator_, ChainTagger) or \
            not np.array_equal(obj.estimator_.classes_, obj.classes_) or \
            obj.estimator_.n_features_in_ != obj.n_features_in_:
        _fail(path, "estimator_ must be a fitted tagger of the same classes and features")
    L = len(obj.classes_)
    if obj.allowed_transitions_ is not None:
        _array(obj, "allowed_transitions_", path, "b", shape=(L + 2, L))
    d = obj._word_labels
    if d is None:
        return
    if not (isinstance(d, tuple) and len(d) == 3
            and all(isinstance(a, np.ndarray) and a.ndim == 1 for a in d)):
        _fail(path, "_word_labels must be (words, indptr, labels), three 1-d arrays")
    words, indptr, labels = d
    if (indptr.dtype != np.int64 or labels.dtype != np.int32 or len(indptr) != len(words) + 1
            or indptr[0] != 0 or indptr[-1] != len(labels) or np.any(np.diff(indptr) < 0)):
        _fail(path, "_word_labels: indptr does not index the labels")
    _in_range(labels, 0, L, "_word_labels' labels", path)
    if len(words) > 1 and not np.all(words[1:] > words[:-1]):
        _fail(path, "_word_labels' words must be sorted")


def _check_sequence_vectorizer(obj, path):
    obj.__dict__.pop("_compiled", None)
    if not hasattr(obj, "templates_"):
        return
    names = obj.templates_
    if not isinstance(names, list) or not names or not all(type(n) is str for n in names):
        _fail(path, "templates_ must be a non-empty list of template names")
    # the parsed instances are rebuilt from their names, never read from the file
    instances = _parse_templates(names, 0)
    if template_names(instances) != names:
        _fail(path, "templates_ are not the canonical names of template instances")
    if obj._boundary not in ("symbol", "skip") or type(obj._hashing) is not bool:
        _fail(path, "_boundary or _hashing is not a boundary mode and a bool")
    n = _int(obj, "n_features_out_", path, low=1 if obj._hashing else 0,
             high=np.iinfo(np.int32).max)
    obj._instances = instances
    if obj.clusters_ is not None:
        _str_dict(obj.clusters_, "clusters_", path, str)
    if obj._hashing:
        obj.__dict__.pop("vocabulary_", None)
        obj._compiled = {"vocabulary": None, "table": None}
        return
    vocabulary = _str_dict(obj.vocabulary_, "vocabulary_", path, int)
    columns = np.fromiter(vocabulary.values(), dtype=np.int64, count=len(vocabulary))
    if len(vocabulary) != n or not np.array_equal(np.sort(columns), np.arange(n)):
        _fail(path, f"vocabulary_ must number its {len(vocabulary)} features 0..{n - 1}")
    obj._compiled = {"vocabulary": vocabulary, "table": None}


def _check_dict_sequence_vectorizer(obj, path):
    if not hasattr(obj, "vocabulary_"):
        obj.__dict__.pop("vectorizer_", None)
        return
    vocabulary = _str_dict(obj.vocabulary_, "vocabulary_", path, int)
    n = _int(obj, "n_features_out_", path)
    columns = np.fromiter(vocabulary.values(), dtype=np.int64, count=len(vocabulary))
    if "n_columns_" in obj.__dict__:
        # a CRFsuite model's vocabulary (sklstruct.compat): several names per column
        if obj.n_columns_ != n:
            _fail(path, "n_columns_ differs from n_features_out_")
        _in_range(columns, 0, n, "vocabulary_", path)
    elif len(vocabulary) != n or not np.array_equal(np.sort(columns), np.arange(n)):
        _fail(path, f"vocabulary_ must number its {n} features 0..{n - 1}")
    # the DictVectorizer fitted to the same names that fit keeps beside them
    # (rebuilt here: a model file holds no scikit-learn object but Pipeline)
    vectorizer = DictVectorizer(sort=obj.sort)
    vectorizer.feature_names_ = list(vocabulary)
    vectorizer.vocabulary_ = vocabulary
    obj.vectorizer_ = vectorizer


def _check_embeddings(obj, path):
    if not hasattr(obj, "vectors_"):
        return
    vectors = _array(obj, "vectors_", path, "f", ndim=2)
    n, dim = vectors.shape
    vocabulary = _str_dict(obj.vocabulary_, "vocabulary_", path, int)
    rows = np.fromiter(vocabulary.values(), dtype=np.int64, count=len(vocabulary))
    if len(vocabulary) != n or not np.array_equal(np.sort(rows), np.arange(n)):
        _fail(path, f"vocabulary_ must number the {n} rows of vectors_")
    ks = obj._n_kmeans
    if not isinstance(ks, tuple) or not all(type(k) is int and k >= 1 for k in ks):
        _fail(path, "_n_kmeans must be a tuple of numbers of clusters")
    clusters = _array(obj, "clusters_", path, "iu", shape=(n, len(ks)))
    # transform turns a word's cluster into a column: each in its clustering's range
    if clusters.size and (clusters.min() < -1 or np.any(clusters.max(axis=0) >= ks)):
        _fail(path, "clusters_ holds a cluster beyond its clustering's number")
    obj.clusters_ = clusters.astype(np.intp)
    _array(obj, "unknown_vector_", path, "f", shape=(dim,))
    _int(obj, "_window", path, high=MAX_WINDOW)
    if type(obj._lowercase) is not bool or type(obj.scale_factor_) is not float:
        _fail(path, "_lowercase must be a bool and scale_factor_ a float")
    # (each built and checked before: its centers fit its own n_features_in_)
    kmeans = obj.kmeans_
    if not isinstance(kmeans, list) or len(kmeans) != len(ks) or not all(
            isinstance(km, MiniBatchKMeans) and km.n_clusters == k
            and getattr(km, "n_features_in_", None) == dim for km, k in zip(kmeans, ks)):
        _fail(path, f"kmeans_ must hold a fitted MiniBatchKMeans of the {dim}-dimensional "
                    "vectors for each number of clusters of _n_kmeans")
    vectors.flags.writeable = False         # as fit leaves it


def _check_from_labels(obj, path):
    """The label dictionary and the gazetteer: the window transform loops over."""
    if hasattr(obj, "_window"):
        _int(obj, "_window", path, high=MAX_WINDOW)


def _check_grammar_parser(obj, path):
    if not hasattr(obj, "grammar_"):
        return
    g, c = obj.grammar_, obj.compiled_
    if not isinstance(g, Grammar) or not isinstance(c, CompiledGrammar):
        _fail(path, "grammar_ and compiled_ must be a Grammar and a CompiledGrammar")
    for name in ("binary", "unary", "roots", "preterminals"):
        if not np.array_equal(getattr(g, name), getattr(c, name)):
            _fail(path, f"grammar_ and compiled_ have different {name} rules")
    if c.n_symbols != len(g.symbols) or obj.max_unary_chain_ != c.max_chain:
        _fail(path, "grammar_ and compiled_ have different symbols or unary chains")
    if type(obj.tagged_) is not bool or type(obj.fallback_root_) is not str:
        _fail(path, "tagged_ must be a bool and fallback_root_ a symbol")
    if obj.fallback_root_ not in g.index:
        _fail(path, "fallback_root_ is not a symbol of the grammar")


def _check_pcfg(obj, path):
    if not hasattr(obj, "grammar_"):
        return
    c = obj.compiled_
    for name, n in (("w_binary_", len(c.binary)), ("w_unary_", len(c.unary)),
                    ("w_root_", len(c.roots))):
        _array(obj, name, path, "f", shape=(n,))
    if hasattr(obj, "log_emission_"):
        lexicon = _str_dict(obj.lexicon_, "lexicon_", path, int)
        rows = np.fromiter(lexicon.values(), dtype=np.int64, count=len(lexicon))
        emission = _array(obj, "log_emission_", path, "f", ndim=2)
        if emission.shape[1] != len(c.preterminals):
            _fail(path, "log_emission_ needs one column per POS tag")
        _in_range(rows, 0, emission.shape[0], "lexicon_", path)
        _str_dict(obj.tag_index_, "tag_index_", path, int)
        _in_range(np.array(list(obj.tag_index_.values()), dtype=np.int64), 0,
                  len(c.preterminals), "tag_index_", path)


def _check_f1_parser(obj, path):
    if not hasattr(obj, "coef_"):
        return
    c = obj.compiled_
    if not isinstance(obj.features_, frozenset) or not obj.features_ <= {"rules", "pcfg",
                                                                         "spans"}:
        _fail(path, "features_ must be a set of feature set names")
    if "pcfg" in obj.features_ and not isinstance(obj.pcfg_, PCFGParser):
        _fail(path, "pcfg_ must be a fitted PCFGParser")
    if "spans" in obj.features_ and not isinstance(obj.span_features_, SpanFeatures):
        _fail(path, "span_features_ must be a fitted SpanFeatures")
    if not isinstance(obj.vectorizer_, SequenceVectorizer) or \
            obj.n_word_features_ != obj.vectorizer_.n_features_out_:
        _fail(path, "vectorizer_ must be the fitted word features")
    S = c.n_symbols
    spans = _array(obj, "span_symbols_", path, "iu", ndim=1)
    _in_range(spans, 0, S, "span_symbols_", path)
    if not np.array_equal(spans, np.flatnonzero(~c.is_preterminal)):
        _fail(path, "span_symbols_ are not the grammar's phrasal symbols")
    column = np.full(S, -1, dtype=np.int64)
    column[spans] = np.arange(len(spans))
    obj.span_column_ = column
    _str_dict(obj.tag_column_, "tag_column_", path, int)
    n = sum(size for _, size in obj._layout())
    _array(obj, "coef_", path, "f", shape=(n,))
    obj.coef_ = np.ascontiguousarray(obj.coef_, dtype=np.float64)
    obj.n_weights_ = n
    obj._set_views()          # the w_*_ blocks are views of coef_, as fit leaves them


def _check_span_features(obj, path):
    if not hasattr(obj, "values_"):
        return
    if type(obj.tagged_) is not bool or type(obj.min_count) is not int:
        _fail(path, "tagged_ must be a bool and min_count an int")
    for name in ("counts_", "word_ids_", "shape_ids_", "tag_ids_", "offsets_"):
        _str_dict(getattr(obj, name), name, path, int)
    values = _str_dict(obj.values_, "values_", path)
    if set(values) != set(obj.offsets_) or not all(
            isinstance(v, np.ndarray) and v.ndim == 1 and v.dtype.kind in "iu"
            for v in values.values()):
        _fail(path, "values_ must hold a 1-d int array per template of offsets_")
    _int(obj, "n_features_", path)
    _int(obj, "n_split_features_", path)


_PIPELINE_ARGS = ("steps", "memory", "verbose")


def _pipeline_state(pipeline):
    if pipeline.memory is not None and not isinstance(pipeline.memory, str):
        raise TypeError("a Pipeline's memory other than None or a folder name cannot be "
                        "stored in a model file")
    return {name: getattr(pipeline, name) for name in _PIPELINE_ARGS}


def _pipeline_build(state, path, cls=Pipeline):
    """A Pipeline (``cls``: scikit-learn's or sklstruct's) made by its
    constructor (which only stores its arguments), so that a file of another
    scikit-learn version, with other parameters of its own, loads."""
    steps, memory, verbose = (state[n] for n in _PIPELINE_ARGS)
    if not isinstance(steps, list) or not steps or not all(
            isinstance(s, tuple) and len(s) == 2 and type(s[0]) is str for s in steps):
        _fail(path, "steps must be a non-empty list of (name, estimator) pairs")
    if not (memory is None or type(memory) is str) or type(verbose) is not bool:
        _fail(path, "memory must be None or a folder name, and verbose a bool")
    pipeline = cls(steps, memory=memory, verbose=verbose)
    try:
        pipeline._validate_params()
        pipeline._validate_steps()
    except (ValueError, TypeError) as exc:
        _fail(path, f"not a valid Pipeline ({exc})")
    return pipeline


def _check_union(obj, path):
    for name in ("transformer_list", "transformers_"):
        parts = getattr(obj, name, [])
        if not isinstance(parts, list) or not all(
                isinstance(s, tuple) and len(s) == 2 and type(s[0]) is str for s in parts):
            _fail(path, f"{name} must be a list of (name, transformer) pairs")


# -- classes that are not estimators: stored by their constructor's arguments -------

_GRAMMAR_ARGS = ("symbols", "preterminals", "binary", "unary", "roots", "max_unary_chain")


def _grammar_state(g):
    return dict(zip(_GRAMMAR_ARGS, g.__reduce__()[1]))


def _grammar_build(state, path):
    symbols = state["symbols"]
    if not isinstance(symbols, list) or not symbols or not all(type(s) is str for s in symbols):
        _fail(path, "symbols must be a non-empty list of strings")
    if len(set(symbols)) != len(symbols):
        _fail(path, "symbols must be distinct")
    S = len(symbols)
    for name, cols in (("preterminals", None), ("binary", 3), ("unary", 2), ("roots", None)):
        a = state[name]
        if not isinstance(a, np.ndarray) or a.dtype != np.int32 or (
                a.ndim != 1 if cols is None else a.ndim != 2 or a.shape[1] != cols):
            _fail(path, f"{name} must be an int32 array of rules")
        _in_range(a, 0, S, name, path)
    if type(state["max_unary_chain"]) is not int or state["max_unary_chain"] < 0:
        _fail(path, "max_unary_chain must be an int >= 0")
    return Grammar(symbols, state["preterminals"], state["binary"], state["unary"],
                   state["roots"], state["max_unary_chain"])


_COMPILED_ARGS = ("n_symbols", "binary", "unary", "roots", "preterminals", "base",
                  "max_chain", "counted")


def _compiled_build(state, path):
    for name in _COMPILED_ARGS[1:]:
        if name not in ("max_chain",) and not isinstance(state[name], np.ndarray):
            _fail(path, f"{name} must be an array")
    if type(state["n_symbols"]) is not int or type(state["max_chain"]) is not int:
        _fail(path, "n_symbols and max_chain must be ints")
    if not 0 <= state["max_chain"] <= MAX_UNARY_CHAIN:
        _fail(path, f"max_chain must be in 0..{MAX_UNARY_CHAIN}, as the parser supports")
    # the constructor checks every rule against the symbols
    return CompiledGrammar(*(state[n] for n in _COMPILED_ARGS))


#: Rules by class; a class's rules are those of every class of its MRO here.
RULES = {
    ChainTagger: Rule(private=("_resumable",), drop=("_coef_pickled_sparse",),
                      check=_check_chain),
    M3NTagger: Rule(private=("_kernel",), drop=("_index",), check=_check_m3n),
    ConstrainedTagger: Rule(private=("_word_labels",), check=_check_constrained),
    BaseParser: Rule(check=_check_grammar_parser),
    PCFGParser: Rule(check=_check_pcfg),
    F1MaxMarginParser: Rule(drop=("_offsets", "w_binary_", "w_unary_", "w_root_", "w_lex_",
                                  "w_pcfg_", "w_span_", "w_split_"),
                            check=_check_f1_parser),
    SequenceVectorizer: Rule(private=("_boundary", "_hashing"),
                             drop=("_compiled", "_instances"),
                             check=_check_sequence_vectorizer),
    DictSequenceVectorizer: Rule(drop=("vectorizer_",), check=_check_dict_sequence_vectorizer),
    SentenceFeatureUnion: Rule(private=("_weights",), check=_check_union),
    LabelDictionaryFeatures: Rule(private=("_key_of_value", "_layout_", "_n_first",
                                           "_window"), check=_check_from_labels),
    GazetteerFeatures: Rule(private=("_counts", "_entries", "_lowercase", "_vocabulary",
                                     "_window"), check=_check_from_labels),
    EmbeddingFeatures: Rule(private=("_lowercase", "_n_kmeans", "_unknown", "_window"),
                            check=_check_embeddings),
    BrownClusters: Rule(),
    SpanFeatures: Rule(private=("_growing", "min_count"), check=_check_span_features),
    Pipeline: Rule(state=_pipeline_state, build=_pipeline_build, keys=_PIPELINE_ARGS),
    OurPipeline: Rule(state=_pipeline_state, keys=_PIPELINE_ARGS,
                      build=lambda state, path: _pipeline_build(state, path, OurPipeline)),
    Grammar: Rule(state=_grammar_state, build=_grammar_build, keys=_GRAMMAR_ARGS),
    CompiledGrammar: Rule(state=lambda c: {n: getattr(c, n) for n in _COMPILED_ARGS},
                          build=_compiled_build, keys=_COMPILED_ARGS),
}

#: The names a model file uses for classes, and the classes they stand for.
CLASSES = {cls.__name__: cls for cls in ESTIMATORS.values()}
CLASSES.update({cls.__name__: cls for cls in (
    M3NSGDTagger, SequenceVectorizer, DictSequenceVectorizer, SentenceFeatureUnion,
    BrownClusters, LabelDictionaryFeatures, GazetteerFeatures, EmbeddingFeatures)})
CLASSES.update({
    "sklearn.pipeline.Pipeline": Pipeline,
    "sklstruct.Pipeline": OurPipeline,
    "sklstruct.parsing.Grammar": Grammar,
    "sklstruct.parsing.CompiledGrammar": CompiledGrammar,
    "sklstruct.parsing.SpanFeatures": SpanFeatures,
})
for _name, (_cls, _rule) in sklearn_parts.CLASSES.items():
    CLASSES[_name], RULES[_cls] = _cls, _rule
_NAMES = {cls: name for name, cls in CLASSES.items()}


#: Packages that register their classes with the format when imported, by
#: :func:`register` (they import the format: :mod:`sklstruct.compat` reads and
#: writes model files, so the format cannot import it), and the prefix of the
#: names of those classes: a file naming one imports the package first, as a
#: plugin registry imports its plugins by name.
EXTENSIONS = {"sklstruct.compat.": "sklstruct.compat"}


def class_named(name):
    """The class a model file calls ``name``, or None."""
    if name not in CLASSES:
        for prefix, package in EXTENSIONS.items():
            if name.startswith(prefix):
                importlib.import_module(package)
    return CLASSES.get(name)


def register(name, cls, rule=None):
    """Let model files hold ``cls`` under ``name``, stored by ``rule``: for a
    package that the format must not import (it imports the format:
    :mod:`sklstruct.compat` registers its classes this way when imported,
    which ``import sklstruct`` does)."""
    CLASSES[name] = cls
    _NAMES[cls] = name
    if rule is not None:
        RULES[cls] = rule


def _rules(cls):
    return [RULES[c] for c in reversed(cls.__mro__) if c in RULES]


def _allowed(cls, rules):
    params = set(cls._get_param_names()) if hasattr(cls, "_get_param_names") else set()
    private = set().union(*(r.private for r in rules))
    return lambda name: name in params or name in private or bool(_FITTED.match(name))


def describe(obj, path):
    """``(class name, state)`` of an object a model file may hold."""
    cls = type(obj)
    if cls not in _NAMES:
        raise TypeError(
            f"{path}: a {cls.__module__}.{cls.__qualname__} cannot be stored in a model "
            "file, which holds only sklstruct's estimators and vectorizers, scikit-learn "
            "Pipelines of them, and plain data")
    rules = _rules(cls)
    for rule in rules:
        reason = rule.refuse(obj) if rule.refuse is not None else None
        if reason:
            raise TypeError(f"{path}: {reason}")
    # (the most derived class's rule: sklstruct's Pipeline before scikit-learn's)
    custom = next((r for r in reversed(rules) if r.state is not None), None)
    if custom is not None:
        return _NAMES[cls], custom.state(obj)
    drop = set().union(*(r.drop for r in rules), getattr(cls, "_TRAINING_STATE", ()),
                       {"_sklearn_version"})
    state = {k: v for k, v in vars(obj).items() if k not in drop}
    allowed = _allowed(cls, rules)
    for name in state:
        if not allowed(name):
            raise TypeError(f"{path}: {cls.__name__}'s attribute {name!r} is not one the "
                            "model file format describes (sklstruct.serialization's "
                            "rules need a line for it)")
    if "_resumable" in state:
        state["_resumable"] = False
    return _NAMES[cls], state


def build(name, state, path):
    """The object of class ``name`` (a name of :data:`CLASSES`) with ``state``."""
    cls = class_named(name)
    if cls is None:
        _fail(path, f"the file names class {name!r}, which is not one of sklstruct's "
                    "estimators, vectorizers or their parts; refused")
    rules = _rules(cls)
    custom = next((r for r in reversed(rules) if r.build is not None), None)
    if custom is not None:
        if set(state) != set(custom.keys):
            _fail(path, f"a {name} is stored as {sorted(custom.keys)}; got {sorted(state)}")
        return custom.build(state, path)
    allowed = _allowed(cls, rules)
    bad = sorted(k for k in state if not allowed(k))
    if bad:
        _fail(path, f"{name} has no attribute {bad[0]!r} that a model file may set")
    missing = sorted(set(cls._get_param_names()) - set(state)) if hasattr(
        cls, "_get_param_names") else []
    if missing:
        _fail(path, f"{name} lacks its parameter {missing[0]!r}")
    obj = cls.__new__(cls)
    obj.__dict__.update(state)
    checks = [r.check for r in rules if r.check is not None]
    if hasattr(cls, "_parameter_constraints"):
        # the parameters as fit checks them (prediction reads some, n_jobs...)
        checks.insert(0, lambda obj, path: obj._validate_params())
    for check in checks:
        try:
            check(obj, path)
        except (ValueError, TypeError, KeyError, IndexError, AttributeError,
                OverflowError) as exc:
            message = str(exc)
            if not message.startswith(path):    # raised by the code a check calls
                message = f"{path}: a {name} that does not fit together ({message})"
            raise ValueError(message) from None
    return obj

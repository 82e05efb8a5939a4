"""sklearn-crfsuite's ``CRF``, on sklstruct's vectorizer and learners."""
import os
import pickle
import time
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.utils._param_validation import Interval, Options, StrOptions

from .._validation import MAX_C
from ._crfsuite_file import fitted_from_crfsuite
from ._model import CRFsuiteDicts, CRFsuiteLBFGS, CRFsuiteOnline, Fitted, crfsuite_name

#: The training algorithms, with the CRF parameters each takes (CRFsuite's
#: own lists: another parameter is an error, as in python-crfsuite).
ALGORITHMS = {
    "lbfgs": {"c1", "c2", "max_iterations", "num_memories", "epsilon", "period", "delta",
              "linesearch", "max_linesearch"},
    "l2sgd": {"c2", "max_iterations", "period", "delta", "calibration_eta", "calibration_rate",
              "calibration_samples", "calibration_candidates", "calibration_max_trials"},
    "ap": {"max_iterations", "epsilon"},
    "pa": {"pa_type", "c", "error_sensitive", "averaging", "max_iterations", "epsilon"},
    "arow": {"variance", "gamma", "max_iterations", "epsilon"},
}
#: Parameters every algorithm takes (CRFsuite's ``feature.*``).
_FEATURE_PARAMS = {"min_freq", "all_possible_states", "all_possible_transitions"}
_TRAINING_PARAMS = set().union(*ALGORITHMS.values())
#: CRFsuite's defaults (``None`` in the signature means these).
_DEFAULTS = {"min_freq": 0.0, "all_possible_states": False, "all_possible_transitions": False,
             "c1": 0.0, "c2": 1.0, "num_memories": 6, "epsilon": 1e-5, "period": 10,
             "delta": 1e-5, "linesearch": "MoreThuente", "max_linesearch": 20, "pa_type": 1,
             "c": 1.0, "error_sensitive": True, "averaging": True, "variance": 1.0,
             "gamma": 1.0}
_MAX_ITERATIONS = {"lbfgs": 2 ** 31 - 1, "l2sgd": 1000, "ap": 100, "pa": 100, "arow": 100}
#: The first bytes of a CRFsuite model file.
CRFSUITE_MAGIC = b"lCRF"


def _positive(kind):
    return [Interval(kind, 0, None, closed="neither"), None]


def _nonnegative(kind):
    return [Interval(kind, 0, None, closed="left"), None]


class TrainingLog:
    """Stands in for python-crfsuite's ``LogParser`` (``CRF.training_log_``):
    ``iterations`` (one dict per iteration or epoch: ``num``, ``loss``,
    ``time``, and ``active_features`` for L-BFGS), ``last_iteration``
    (with the holdout scores of ``X_dev``: ``item_accuracy_float``,
    ``instance_accuracy_float``, ``avg_precision``, ``avg_recall``,
    ``avg_f1``), ``training_seconds`` and ``featgen_num_features``."""

    def __init__(self, iterations, training_seconds, featgen_num_features):
        self.iterations = iterations
        self.training_seconds = training_seconds
        self.featgen_num_features = featgen_num_features

    @property
    def last_iteration(self):
        return self.iterations[-1] if self.iterations else {}


class ModelInfo:
    """Stands in for python-crfsuite's ``ParsedDump`` (``Tagger.info()``):
    ``header``, ``labels``, ``attributes``, ``state_features``,
    ``transitions``."""

    def __init__(self, crf):
        self.labels = {label: i for i, label in enumerate(crf.classes_)}
        self.attributes = {name: i for i, name in enumerate(crf.attributes_)}
        self.state_features = crf.state_features_
        self.transitions = crf.transition_features_
        self.header = {"size": str(crf.size_), "num_attrs": str(crf.num_attributes_),
                       "num_labels": str(len(self.labels))}


class Tagger:
    """Stands in for ``pycrfsuite.Tagger`` (``CRF.tagger_``): ``labels``,
    ``tag``, ``set``, ``marginal``, ``probability``, ``info``, ``close``."""

    def __init__(self, crf):
        self._crf = crf
        self._xseq = None
        self._marginals = None

    def labels(self):
        return list(self._crf._fitted().labels)

    def set(self, xseq):
        """Set the sequence that :meth:`marginal`, :meth:`probability` and
        ``tag()`` read."""
        self._xseq = xseq
        self._marginals = None

    def _current(self, xseq):
        if xseq is None:
            if self._xseq is None:
                raise ValueError("no sequence: pass one or call set(xseq) first")
            return self._xseq
        return xseq

    def tag(self, xseq=None):
        return self._crf.predict_single(self._current(xseq))

    def marginal(self, y, t):
        if self._marginals is None:
            self._marginals = self._crf.predict_marginals_single(self._current(None))
        return self._marginals[t][y]

    def probability(self, yseq):
        """P(yseq | x) of the sequence set by :meth:`set`."""
        from scipy.special import logsumexp

        fitted = self._crf._fitted()
        xseq = self._current(None)
        if len(yseq) != len(xseq):
            raise ValueError(f"yseq has {len(yseq)} labels but the sequence {len(xseq)} items")
        tagger = fitted.tagger
        classes = list(tagger.classes_)
        codes = np.array([classes.index(label) for label in yseq])
        E = np.asarray(fitted.vectorizer.transform([xseq]).matrix @ tagger.coef_.T)
        A, start, end = tagger.transition_coef_, tagger.start_coef_, tagger.end_coef_
        score = (E[np.arange(len(codes)), codes].sum() + A[codes[:-1], codes[1:]].sum()
                 + start[codes[0]] + end[codes[-1]])
        alpha = E[0] + start
        for t in range(1, len(codes)):          # forward, for this one sentence
            alpha = logsumexp(alpha[:, None] + A, axis=0) + E[t]
        return float(np.exp(score - logsumexp(alpha + end)))

    def info(self):
        return ModelInfo(self._crf)

    def close(self):
        self._xseq = self._marginals = None


class CRF(BaseEstimator):
    """sklearn-crfsuite's ``CRF``, on sklstruct: the same constructor,
    defaults, methods, attributes and output types, so that switching is

    ``from sklearn_crfsuite import CRF`` -> ``from sklstruct.compat import CRF``.

    Token features are the dicts of python-crfsuite (:class:`CRFsuiteDicts`,
    a :class:`~sklstruct.DictSequenceVectorizer` that also takes bytes), and
    the model is CRFsuite's: state features are the (attribute, label) pairs
    seen in training (``all_possible_states`` gives all), transition
    features the label bigrams seen (``all_possible_transitions``), no start
    or end weights, features occurring ``min_freq`` times or fewer dropped.

    ``algorithm``:

    * ``"lbfgs"``: maximum likelihood with ``c1 ||w||_1 + c2 ||w||_2^2``, by
      L-BFGS or, with ``c1 > 0``, OWL-QN (Andrew & Gao 2007), as CRFsuite:
      :class:`~sklstruct.CRFTagger` with ``C = 1 / (c1 + 2 c2)`` and
      ``l1_ratio = c1 / (c1 + 2 c2)``, stopping by CRFsuite's tests
      (``epsilon``: gradient norm over ``max(1, ||w||)``; ``period`` and
      ``delta``: relative decrease over ``period`` iterations) or after
      ``max_iterations``; ``num_memories`` and ``max_linesearch`` as in
      CRFsuite.  ``linesearch`` is accepted but the line search is sklstruct's:
      Wolfe (scipy) without L1, backtracking with it (as CRFsuite with L1).
    * ``"l2sgd"``: the same objective with ``c1 = 0``.  CRFsuite minimises it
      by SGD; here by L-BFGS (the same minimiser, reached in fewer passes),
      ``max_iterations`` iterations at most, with ``period``/``delta``; the
      ``calibration_*`` settings are accepted and have no effect.
    * ``"ap"``, ``"pa"`` (``pa_type``, ``c``, ``error_sensitive``,
      ``averaging``), ``"arow"`` (``variance``, ``gamma``): CRFsuite's
      averaged perceptron, passive-aggressive and AROW updates
      (:class:`sklstruct.compat._model.CRFsuiteOnline`), ``epsilon`` their
      stopping test.

    A parameter that the algorithm does not take raises ValueError, as
    python-crfsuite does.  ``trainer_cls`` (a ``pycrfsuite.Trainer``
    subclass) and ``keep_tempfiles`` have nothing to act on and must keep
    their defaults.  ``model_filename``: after ``fit`` the model is written
    there (:func:`sklstruct.save_model`'s format: reading it runs no code),
    and a CRF constructed with the name of an existing file uses that model,
    a sklstruct one or a CRFsuite ``.crfsuite`` file (:func:`from_crfsuite`).

    Differences from sklearn-crfsuite: attribute names are CRFsuite's
    (``key:value``) except for numeric features whose key holds ``=``;
    ``size_`` is the size of the pickled model; ``training_log_`` is a
    :class:`TrainingLog`, ``tagger_`` a :class:`Tagger`; the holdout
    (``X_dev``) is scored once, after training, not at every iteration.

    Parameters
    ----------
    algorithm : {"lbfgs", "l2sgd", "ap", "pa", "arow"}, default="lbfgs"
    min_freq : float, default=0
    all_possible_states, all_possible_transitions : bool, default=False
    c1 : float, default=0
    c2 : float, default=1
    max_iterations : int, optional
        Default: unlimited for lbfgs, 1000 for l2sgd, 100 for the others.
    num_memories : int, default=6
    epsilon : float, default=1e-5 (lbfgs), 0 (ap, pa, arow)
    period : int, default=10
    delta : float, default=1e-5
    linesearch : {"MoreThuente", "Backtracking", "StrongBacktracking"}
    max_linesearch : int, default=20
    calibration_eta, calibration_rate, calibration_samples,
    calibration_candidates, calibration_max_trials : l2sgd's, no effect
    pa_type : {0, 1, 2}, default=1
    c : float, default=1
    error_sensitive, averaging : bool, default=True
    variance, gamma : float, default=1
    verbose : bool, default=False
    model_filename : str, optional
    keep_tempfiles : bool, default=False
    trainer_cls : None

    Attributes
    ----------
    classes_ : list of str
        Labels, in order of first appearance in training (None before fit).
    tagger_ : Tagger
    training_log_ : TrainingLog
    size_ : int
    num_attributes_ : int
        Attributes with a nonzero state weight.
    attributes_ : list of str
    state_features_ : dict of (str, str) to float
        ``{(attribute, label): weight}``, nonzero weights.
    transition_features_ : dict of (str, str) to float
        ``{(label_from, label_to): weight}``, nonzero weights.

    References
    ----------
    .. [1] N. Okazaki, "CRFsuite: a fast implementation of Conditional Random
       Fields (CRFs)", 2007.
    .. [2] J. Lafferty, A. McCallum and F. Pereira, "Conditional Random
       Fields: Probabilistic Models for Segmenting and Labeling Sequence
       Data", ICML 2001.
    .. [3] G. Andrew and J. Gao, "Scalable Training of L1-Regularized
       Log-Linear Models", ICML 2007.
    .. [4] K. Crammer, A. Kulesza and M. Dredze, "Adaptive Regularization of
       Weight Vectors", NIPS 2009.
    """

    _parameter_constraints = {
        "algorithm": [StrOptions(set(ALGORITHMS)), None],
        "min_freq": _nonnegative(Real),
        "all_possible_states": ["boolean", None],
        "all_possible_transitions": ["boolean", None],
        "c1": _nonnegative(Real),
        "c2": _nonnegative(Real),
        "max_iterations": _nonnegative(Integral),
        "num_memories": _positive(Integral),
        "epsilon": _nonnegative(Real),
        "period": _nonnegative(Integral),
        "delta": _nonnegative(Real),
        "linesearch": [StrOptions({"MoreThuente", "Backtracking", "StrongBacktracking"}), None],
        "max_linesearch": _positive(Integral),
        "calibration_eta": _positive(Real),
        "calibration_rate": _positive(Real),
        "calibration_samples": _positive(Integral),
        "calibration_candidates": _positive(Integral),
        "calibration_max_trials": _positive(Integral),
        "pa_type": [Options(Integral, {0, 1, 2}), None],
        "c": _positive(Real),
        "error_sensitive": ["boolean", None],
        "averaging": ["boolean", None],
        "variance": _positive(Real),
        "gamma": _positive(Real),
        "verbose": ["verbose"],
        "model_filename": [str, os.PathLike, None],
        "keep_tempfiles": ["boolean"],
        "trainer_cls": [None],
    }

    def __init__(
        self,
        algorithm=None,
        min_freq=None,
        all_possible_states=None,
        all_possible_transitions=None,
        c1=None,
        c2=None,
        max_iterations=None,
        num_memories=None,
        epsilon=None,
        period=None,
        delta=None,
        linesearch=None,
        max_linesearch=None,
        calibration_eta=None,
        calibration_rate=None,
        calibration_samples=None,
        calibration_candidates=None,
        calibration_max_trials=None,
        pa_type=None,
        c=None,
        error_sensitive=None,
        averaging=None,
        variance=None,
        gamma=None,
        verbose=False,
        model_filename=None,
        keep_tempfiles=False,
        trainer_cls=None,
    ):
        self.algorithm = algorithm
        self.min_freq = min_freq
        self.all_possible_states = all_possible_states
        self.all_possible_transitions = all_possible_transitions
        self.c1 = c1
        self.c2 = c2
        self.max_iterations = max_iterations
        self.num_memories = num_memories
        self.epsilon = epsilon
        self.period = period
        self.delta = delta
        self.linesearch = linesearch
        self.max_linesearch = max_linesearch
        self.calibration_eta = calibration_eta
        self.calibration_rate = calibration_rate
        self.calibration_samples = calibration_samples
        self.calibration_candidates = calibration_candidates
        self.calibration_max_trials = calibration_max_trials
        self.pa_type = pa_type
        self.c = c
        self.error_sensitive = error_sensitive
        self.averaging = averaging
        self.variance = variance
        self.gamma = gamma
        self.verbose = verbose
        self.model_filename = model_filename
        self.keep_tempfiles = keep_tempfiles
        self.trainer_cls = trainer_cls

    # -- settings ------------------------------------------------------------------------------
    def _setting(self, name):
        value = getattr(self, name)
        if value is not None:
            return value
        if name == "max_iterations":
            return _MAX_ITERATIONS[self.algorithm or "lbfgs"]
        if name == "epsilon" and self.algorithm in ("ap", "pa", "arow"):
            return 0.0
        if name == "delta" and self.algorithm == "l2sgd":
            return 1e-6
        return _DEFAULTS[name]

    def _check_settings(self):
        algorithm = self.algorithm or "lbfgs"
        wrong = sorted(name for name in _TRAINING_PARAMS - ALGORITHMS[algorithm]
                       if getattr(self, name) is not None)
        if wrong:
            raise ValueError(f"{', '.join(wrong)}: not a parameter of algorithm="
                             f"{algorithm!r} (it takes {', '.join(sorted(ALGORITHMS[algorithm]))})")
        if self.trainer_cls is not None:
            raise ValueError("trainer_cls: sklstruct trains without python-crfsuite; leave it "
                             "None")

    def _learner(self):
        algorithm = self.algorithm or "lbfgs"
        s = self._setting
        verbose = int(bool(self.verbose))
        if algorithm in ("lbfgs", "l2sgd"):
            c1 = float(s("c1")) if algorithm == "lbfgs" else 0.0
            c2 = float(s("c2"))
            scale = c1 + 2.0 * c2
            learner = CRFsuiteLBFGS(C=1.0 / scale if scale > 0 else MAX_C,
                                    l1_ratio=c1 / scale if scale > 0 else 0.0,
                                    all_possible_states=bool(s("all_possible_states")),
                                    max_iter=max(int(s("max_iterations")), 1), tol=0.0,
                                    verbose=verbose)
            learner.options_ = {"gtol": 0.0, "ftol": 64 * np.finfo(float).eps,
                                "rtol": float(s("epsilon")) if algorithm == "lbfgs" else None,
                                "past": int(s("period")), "delta": float(s("delta")),
                                "m": int(s("num_memories")),
                                "max_linesearch": int(s("max_linesearch"))}
        else:
            learner = CRFsuiteOnline(
                algorithm=algorithm, max_iter=int(s("max_iterations")),
                epsilon=float(s("epsilon")), pa_type=int(s("pa_type")), c=float(s("c")),
                error_sensitive=bool(s("error_sensitive")), averaging=bool(s("averaging")),
                variance=float(s("variance")), gamma=float(s("gamma")),
                min_freq=float(s("min_freq")),
                all_possible_states=bool(s("all_possible_states")),
                all_possible_transitions=bool(s("all_possible_transitions")),
                verbose=verbose)
        learner.min_freq_ = float(s("min_freq"))
        learner.possible_transitions_ = bool(s("all_possible_transitions"))
        return learner

    # -- fitting ---------------------------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, X_dev=None, y_dev=None):
        """Train a model.

        Parameters
        ----------
        X : list of lists of dicts
            Feature dicts of the tokens of each sentence (python-crfsuite's
            format: ``{"key": "value"}``, ``{"key": 1.5}``, nested dicts,
            lists of names; str or bytes).
        y : list of lists of str
            Labels of each sentence.
        X_dev, y_dev : optional
            Holdout data, scored after training (``training_log_``).

        Returns
        -------
        self
        """
        if (X_dev is None) != (y_dev is None):
            raise ValueError("Pass both X_dev and y_dev to use the holdout data")
        self._check_settings()
        for name in ("_state", "_cache", "_tagger"):
            self.__dict__.pop(name, None)
        X = X if hasattr(X, "__len__") else list(X)      # sklearn-crfsuite takes iterables
        y = _text_labels(y, "y")
        tic = time.perf_counter()
        vectorizer = CRFsuiteDicts()
        Xt = vectorizer.fit_transform(X)
        learner = self._learner()
        with warnings.catch_warnings():
            # CRFsuite stops at max_iterations silently
            warnings.filterwarnings("ignore", message=".*increase max_iter",
                                    category=ConvergenceWarning)
            learner.fit(Xt, y)
        seconds = time.perf_counter() - tic
        flat = np.concatenate([np.asarray(seq, dtype=object) for seq in y])
        _, first = np.unique(flat.astype(str), return_index=True)
        labels = [str(v) for v in flat[np.sort(first)]]
        names = [crfsuite_name(n) for n in vectorizer.get_feature_names_out()]
        self._state = Fitted(vectorizer, learner, labels, names)
        self.training_log_ = self._log(learner, seconds)
        if X_dev is not None:
            self._holdout(X_dev, _text_labels(y_dev, "y_dev"))
        if self.model_filename is not None:
            from ..serialization import save_model     # (it imports this module)

            save_model(self, self.model_filename)
        return self

    def _log(self, learner, seconds):
        iterations, previous = [], 0.0
        for record in learner.history_:
            entry = {"num": record["iteration"], "time": record["seconds"] - previous,
                     "loss": record.get("objective", record.get("loss"))}
            if "errors" in record:
                entry["errors"] = record["errors"]
            previous = record["seconds"]
            iterations.append(entry)
        n_active = int(np.count_nonzero(learner.coef_)
                       + np.count_nonzero(learner.transition_coef_))
        if iterations:
            iterations[-1]["active_features"] = n_active
        return TrainingLog(iterations, seconds, n_active)

    def _holdout(self, X_dev, y_dev):
        from sklearn.metrics import precision_recall_fscore_support

        pred = self.predict(X_dev)
        true_flat = np.concatenate([np.asarray(s, dtype=object) for s in y_dev])
        pred_flat = np.concatenate([np.asarray(s, dtype=object) for s in pred])
        p, r, f, _ = precision_recall_fscore_support(true_flat.astype(str),
                                                     pred_flat.astype(str),
                                                     average="macro", zero_division=0)
        scores = {"item_accuracy_float": float(np.mean(true_flat == pred_flat)),
                  "instance_accuracy_float": float(np.mean(
                      [list(a) == list(b) for a, b in zip(y_dev, pred)])),
                  "avg_precision": float(p), "avg_recall": float(r), "avg_f1": float(f)}
        if self.training_log_.iterations:
            self.training_log_.iterations[-1].update(scores)
        if self.verbose:
            print("Holdout: " + ", ".join(f"{k}={v:.3f}" for k, v in scores.items()),
                  flush=True)

    # -- the fitted model ------------------------------------------------------------------------
    def _fitted(self, required=True):
        state = self.__dict__.get("_state")
        if state is None and self.model_filename is not None \
                and os.path.isfile(self.model_filename):
            state = self._state = _read_model(self.model_filename)
        if state is None and required:
            raise NotFittedError("This CRF instance is not fitted yet: call fit, or construct "
                                 "it with the model_filename of a trained model")
        return state

    def _cached(self, name, compute):
        cache = self.__dict__.setdefault("_cache", {})
        if name not in cache:
            cache[name] = compute(self._fitted())
        return cache[name]

    def __getstate__(self):
        state = dict(super().__getstate__())
        state.pop("_cache", None)
        state.pop("_tagger", None)
        return state

    # -- prediction ------------------------------------------------------------------------------
    def predict(self, X):
        """Labels of each sentence: an object array of lists of str (as
        sklearn-crfsuite returns them)."""
        return np.array(self._predict_lists(X), dtype=object)

    def _predict_lists(self, X):
        return [p.tolist() for p in self._fitted().predict_codes(X)]

    def predict_single(self, xseq):
        """Labels of one sentence (a list of feature dicts): a list of str."""
        return self._predict_lists([xseq])[0]

    def predict_marginals(self, X):
        """Per token, ``{label: P(y_t = label | x)}``: an object array of
        lists of dicts (as sklearn-crfsuite returns them)."""
        return np.array(self._marginal_lists(X), dtype=object)

    def _marginal_lists(self, X):
        fitted = self._fitted()
        classes = [str(c) for c in fitted.tagger.classes_]
        marginals = fitted.tagger.predict_marginals(fitted.vectorizer.transform(X))
        return [[dict(zip(classes, row)) for row in m.tolist()] for m in marginals]

    def predict_marginals_single(self, xseq):
        """Marginals of one sentence: a list of dicts."""
        return self._marginal_lists([xseq])[0]

    def score(self, X, y):
        """Accuracy over all tokens (sklearn-crfsuite's
        ``flat_accuracy_score``)."""
        pred = self._predict_lists(X)
        y = [list(seq) for seq in y]
        if [len(s) for s in y] != [len(s) for s in pred]:
            raise ValueError("y: the label sequences do not have the lengths of X's sentences")
        true = np.concatenate([np.asarray(s, dtype=object) for s in y]) if y else []
        flat = np.concatenate([np.asarray(s, dtype=object) for s in pred]) if pred else []
        return float(np.mean(np.asarray(true) == np.asarray(flat))) if len(true) else 0.0

    # -- sklearn-crfsuite's attributes -----------------------------------------------------------
    @property
    def tagger_(self):
        if self._fitted(required=False) is None:
            return None
        tagger = self.__dict__.get("_tagger")
        if tagger is None:
            tagger = self._tagger = Tagger(self)
        return tagger

    @property
    def classes_(self):
        state = self._fitted(required=False)
        return None if state is None else list(state.labels)

    @property
    def size_(self):
        if self._fitted(required=False) is None:
            return None
        return self._cached("size", lambda s: len(pickle.dumps(
            s, protocol=pickle.HIGHEST_PROTOCOL)))

    def _active_columns(self, state):
        return np.flatnonzero(np.any(state.tagger.coef_ != 0, axis=0))

    @property
    def num_attributes_(self):
        if self._fitted(required=False) is None:
            return None
        return len(self.attributes_)

    @property
    def attributes_(self):
        if self._fitted(required=False) is None:
            return None
        return self._cached("attributes", lambda s: s.attributes[
            self._active_columns(s)].tolist())

    @property
    def state_features_(self):
        if self._fitted(required=False) is None:
            return None

        def compute(s):
            coef = s.tagger.coef_
            labels, cols = np.nonzero(coef)
            classes = np.asarray([str(c) for c in s.tagger.classes_], dtype=object)
            keys = zip(s.attributes[cols].tolist(), classes[labels].tolist())
            return dict(zip(keys, coef[labels, cols].tolist()))
        return self._cached("state_features", compute)

    @property
    def transition_features_(self):
        if self._fitted(required=False) is None:
            return None

        def compute(s):
            A = s.tagger.transition_coef_
            a, b = np.nonzero(A)
            classes = np.asarray([str(c) for c in s.tagger.classes_], dtype=object)
            return dict(zip(zip(classes[a].tolist(), classes[b].tolist()), A[a, b].tolist()))
        return self._cached("transition_features", compute)

    @property
    def training_log_(self):
        return self.__dict__.get("_training_log")

    @training_log_.setter
    def training_log_(self, value):
        self.__dict__["_training_log"] = value


def _text_labels(y, name):
    """``y`` with bytes labels decoded (python-crfsuite takes both)."""
    y = list(y)
    if any(len(seq) and isinstance(next(iter(seq)), bytes) for seq in y):
        try:
            return [[v.decode("utf-8") if isinstance(v, bytes) else v for v in seq]
                    for seq in y]
        except UnicodeDecodeError:
            raise ValueError(f"{name}: a label is bytes that are not UTF-8 text") from None
    return y


def _read_model(path):
    """A :class:`Fitted` from ``path``: a CRFsuite model file or one that
    :meth:`CRF.fit` wrote."""
    with open(path, "rb") as f:
        head = f.read(4)
    if head == CRFSUITE_MAGIC:
        return fitted_from_crfsuite(path)
    from ..serialization import load_model     # (it imports this module)

    try:
        model = load_model(path)
    except ValueError as exc:
        raise ValueError(f"model_filename: {path!r} holds neither a CRFsuite model nor one "
                         f"written by sklstruct.compat.CRF ({exc})") from None
    state = model.__dict__.get("_state") if isinstance(model, CRF) else None
    if state is None:
        raise ValueError(f"model_filename: {path!r} holds a {type(model).__name__}, not a "
                         "model written by sklstruct.compat.CRF")
    return state


def from_crfsuite(path):
    """A :class:`~sklstruct.compat.CRF` with the model of a CRFsuite file.

    Reads a ``.crfsuite`` model (written by CRFsuite, python-crfsuite or
    sklearn-crfsuite) through python-crfsuite's ``Tagger.info()``: its
    labels, attributes, state and transition weights become a fitted
    :class:`~sklstruct.compat.CRF` that takes the same feature dicts and
    predicts the labels CRFsuite predicts (same scores: CRFsuite's chain
    has no start or end weights, so those are 0), without retraining.  Its
    tagger (``CRF.tagger_`` stand-in; the sklstruct model is
    ``crf._fitted().tagger``, a :class:`~sklstruct.CRFTagger`) also gives
    marginals, k-best sequences and calibration.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    CRF
        Fitted; its parameters are the defaults (``fit`` would retrain).
    """
    crf = CRF()
    crf._state = fitted_from_crfsuite(path)
    return crf

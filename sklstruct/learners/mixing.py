"""Distributed training by iterative parameter mixing (McDonald, Hall & Mann 2010)."""
import time
from numbers import Integral

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import _fit_context, clone
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions

from .._publish import publishes
from .._progress import report
from .._validation import N_JOBS_CONSTRAINT
from ..chain import as_stacked
from ._base import ChainLearner, ChainTagger


def _shard_epoch(learner, X, codes, classes, mixed):
    """One epoch of ``learner`` on its shard (validated sentences and label
    codes), from the mixed weights.

    ``mixed`` is None on the first epoch (the learner starts from zero, all
    classes known) and with one shard.  Otherwise the learner's raw weights
    move to ``mixed`` as one step taken at its current averaging clock
    (:meth:`sklstruct._chain.ChainWeights.move_to`), so that its averaged
    weights stay the average of the weights it actually held after each
    example.  The public
    weights are published once, after the last epoch.
    """
    if mixed is not None:
        learner._weights.move_to(*mixed)
    learner._train_encoded(X, codes, classes, 1, hasattr(learner, "_weights"), publish=False)
    learner._resumable = True      # it continues: a process backend pickles its state back
    return learner


class ParameterMixingTagger(ChainTagger):
    """Train an online tagger on shards of the data in parallel, mixing the
    weights after every epoch (iterative parameter mixing).

    The sentences are cut into ``n_shards`` contiguous shards.  In each epoch
    every shard runs one epoch of its own copy of ``estimator`` (its
    ``partial_fit``) starting from the mixed weights of the previous epoch;
    the shards' weights are then mixed: averaged (``mixing="uniform"``) or
    weighted by the number of updates each shard made (``"weighted"``, the
    mu_{i,n} = k_{i,n} / k_n of McDonald, Hall & Mann, Figure 3).  With
    averaging (``estimator.average``) each shard keeps its lazy average over
    the weights it held, mixing steps included, and the final model mixes the
    shards' averages.

    The shards run through joblib, so any backend works: threads or
    processes locally (``n_jobs``), Dask or Ray on a cluster
    (``with joblib.parallel_config(backend="dask"): model.fit(X, y)``).  One
    Parallel context serves all epochs, so a backend that keeps its workers
    (loky, Dask) keeps them for the whole fit.  With one shard the result is
    the estimator's own serial training, exactly.

    Parameters
    ----------
    estimator : online tagger
        An unfitted tagger with ``partial_fit`` (perceptron, PA, MIRA, SWVP,
        SWVM); its ``max_iter`` is ignored.
    n_shards : int, default=4
    mixing : {"uniform", "weighted"}, default="uniform"
    max_iter : int, default=10
        Epochs (mixing rounds).
    n_jobs : int or None, default=None
        Workers of the joblib backend in use (None: 1, or the backend's
        default inside ``joblib.parallel_config``).
    verbose : int, default=0
        Print mistakes, updates and time after each epoch.

    Attributes
    ----------
    estimators_ : list of fitted taggers, one per shard
    classes_, coef_, transition_coef_, start_coef_, end_coef_, trigram_coef_,
    n_features_in_
        The mixed model, as for the wrapped tagger.
    n_iter_ : int
    history_ : list of dict
        Per epoch: mistakes and updates over all shards, the mixing weights,
        seconds.

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklstruct import (ParameterMixingTagger, SequenceVectorizer,
    ...                        StructuredPerceptronTagger)
    >>> from sklstruct.datasets import make_chunking_corpus
    >>> X, y = make_chunking_corpus(400, random_state=0)
    >>> model = make_pipeline(
    ...     SequenceVectorizer(templates=("word", "pos"), window=1),
    ...     ParameterMixingTagger(StructuredPerceptronTagger(random_state=0),
    ...                           n_shards=4, max_iter=5))
    >>> model.fit(X, y).score(X, y) > 0.9
    True

    References
    ----------
    .. [1] R. McDonald, K. Hall and G. Mann, "Distributed Training Strategies
       for the Structured Perceptron", NAACL-HLT 2010 (Figure 3).
    """

    _parameter_constraints = {
        "estimator": [HasMethods(["partial_fit", "predict"])],
        "n_shards": [Interval(Integral, 1, None, closed="left")],
        "mixing": [StrOptions({"uniform", "weighted"})],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "n_jobs": N_JOBS_CONSTRAINT,
        "verbose": ["verbose"],
    }

    def __init__(self, estimator, n_shards=4, mixing="uniform", max_iter=10, n_jobs=None,
                 verbose=0):
        self.estimator = estimator
        self.n_shards = n_shards
        self.mixing = mixing
        self.max_iter = max_iter
        self.n_jobs = n_jobs
        self.verbose = verbose

    @publishes
    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y):
        """Train on shards of (X, y) for ``max_iter`` epochs, mixing after each.

        Returns
        -------
        self : object
        """
        if not isinstance(self.estimator, ChainLearner):
            # an sklearn classifier has partial_fit too, but no chain weights to mix
            raise TypeError("estimator: expected an sklstruct tagger trained by epochs (with "
                            f"partial_fit); got {type(self.estimator).__name__}")
        data = as_stacked(X)
        classes, codes = self._labels(y, data)
        n = len(data)
        if self.n_shards > n:
            raise ValueError(f"n_shards={self.n_shards} is more than the {n} sentences")
        cuts = np.linspace(0, n, self.n_shards + 1).round().astype(int)
        rows = data.offsets[cuts]
        shards = [(data[a:b], codes[r:s]) for a, b, r, s in zip(cuts[:-1], cuts[1:], rows[:-1],
                                                                 rows[1:])]
        learners = [clone(self.estimator) for _ in shards]
        learners[0]._validate_params()
        mixed, history = None, []
        with Parallel(n_jobs=self.n_jobs) as parallel:
            for epoch in range(self.max_iter):
                tic = time.perf_counter()
                learners = parallel(delayed(_shard_epoch)(learner, Xs, ys, classes, mixed)
                                    for learner, (Xs, ys) in zip(learners, shards))
                records = [learner.history_[-1] for learner in learners]
                mu = self._mixing_weights(records)
                if len(learners) > 1:          # (one shard: the mixture is itself)
                    mixed = (sum(m * lr._weights.W for m, lr in zip(mu, learners)),
                             sum(m * lr._weights.P for m, lr in zip(mu, learners)))
                history.append({"epoch": epoch + 1,
                                "mistakes": sum(r["mistakes"] for r in records),
                                "updates": sum(r["updates"] for r in records),
                                "mixing": mu.tolist(), "sentences": n,
                                "seconds": time.perf_counter() - tic})
                h = history[-1]
                report(self.verbose, "Epoch", h["epoch"], [
                    ("mistakes", f"{h['mistakes']}/{n}"), ("updates", h["updates"]),
                    ("shards", self.n_shards)], h["seconds"])
        # the model: the last mixture of the shards' (averaged) weights
        for learner in learners:
            learner._publish()
            learner._resumable = False     # the mixture never continues a shard
        final = [lr._weights.averaged() for lr in learners]
        W = sum(m * f[0] for m, f in zip(mu, final))
        P = sum(m * f[1] for m, f in zip(mu, final))
        self._set_weights(W, P)
        self.estimators_ = learners
        self.classes_ = classes
        self.n_features_in_ = data.n_features
        self.n_iter_ = self.max_iter
        self.history_ = history
        return self

    def _mixing_weights(self, records):
        k = np.array([r["updates"] for r in records], dtype=float)
        if self.mixing == "weighted" and k.sum() > 0:
            return k / k.sum()
        return np.full(len(records), 1.0 / len(records))

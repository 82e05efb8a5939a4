"""Distributed training by iterative parameter mixing (McDonald, Hall & Mann 2010)."""
import time
from numbers import Integral

import numpy as np
import scipy.sparse as sp
from sklearn.base import _fit_context, clone
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions

from .._publish import publishes
from .._progress import report
from .._actors import joblib_dask_client, n_workers, resident
from .._dask import active_client, check_bags, holders, is_bag, release
from .._parallel import n_threads
from .._validation import N_JOBS_CONSTRAINT
from ..chain import as_stacked
from ._base import ChainLearner, ChainTagger
from ._bag_data import bag_partitions
from ._mixing_shard import BagShard, Shard


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

    Every shard keeps its sentences and its learner for the whole fit, and
    its learner holds weights for the feature columns its sentences use
    only: between epochs only rows of weights travel, the rows each shard
    changed (and by how much) to the mixer, and the mixed values of the rows
    that changed anywhere back to the shards that use them
    (``history_`` counts them).  The shards run in threads of this process
    (``n_jobs``; the epoch kernels release the GIL), or, inside
    ``joblib.parallel_config(backend="dask")``, as Dask actors dealt to the
    workers of the client's cluster, each shard's sentences sent to its
    worker once.  ``fit`` also takes Dask bags of feature matrices and label
    sequences (:func:`sklstruct.datasets.read_conll_bag` and a fitted
    vectorizer's ``transform``, with a ``dask.distributed`` client): each
    shard is then made on a worker from a run of consecutive partitions held
    there, and the client never holds the sentences.  A worker lost during
    the fit makes ``fit`` raise; nothing is published.  With one shard the result is the estimator's own serial
    training, exactly; with several, the model of mixing whole weight
    matrices, to rounding.

    Parameters
    ----------
    estimator : online tagger
        An unfitted tagger with ``partial_fit`` (perceptron, PA, MIRA, SWVP,
        SWVM); its ``max_iter`` is ignored.
    n_shards : int or None, default=4
        None: one shard per Dask worker on Dask, else one per thread of
        ``n_jobs``.  Not tuned for F1: more shards cost F1 (CoNLL-2000
        perceptron: 93.73 serial, 93.64 / 93.42 / 92.70 with 2 / 4 / 16
        shards; ``benchmarks/results/mixing.md``).
    mixing : {"uniform", "weighted"}, default="uniform"
        Uniform mixing, the paper's simpler scheme; not compared with
        "weighted" here.
    max_iter : int, default=10
        Epochs (mixing rounds).  Not tuned here (10, as the serial
        learners).
    n_jobs : int or None, default=None
        Shards trained at once in threads (None: 1; -1: all CPUs).  Ignored
        on Dask, where every shard trains at once on its worker.
    verbose : int, default=0
        Print mistakes, updates and time after each epoch.

    Attributes
    ----------
    classes_, coef_, transition_coef_, start_coef_, end_coef_, trigram_coef_,
    n_features_in_
        The mixed model, as for the wrapped tagger.
    n_iter_ : int
    history_ : list of dict
        Per epoch: mistakes and updates over all shards, the mixing weights,
        the weight rows sent to the shards and received from them, seconds.

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

    On a Dask cluster, one shard per worker (a script that starts worker
    processes needs the ``__main__`` guard)::

        from dask.distributed import Client, LocalCluster
        from joblib import parallel_config

        if __name__ == "__main__":
            with LocalCluster(n_workers=4, threads_per_worker=1) as cluster, \\
                    Client(cluster), parallel_config(backend="dask"):
                model.set_params(parametermixingtagger__n_shards=None).fit(X, y)

    References
    ----------
    .. [1] R. McDonald, K. Hall and G. Mann, "Distributed Training Strategies
       for the Structured Perceptron", NAACL-HLT 2010 (Figure 3).
    """

    _parameter_constraints = {
        "estimator": [HasMethods(["partial_fit", "predict"])],
        "n_shards": [Interval(Integral, 1, None, closed="left"), None],
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
        if is_bag(X) or is_bag(y):
            return self._fit_bags(X, y)
        data = as_stacked(X)
        classes, codes = self._labels(y, data)
        n = len(data)
        client = joblib_dask_client()
        n_shards = self.n_shards or (n_workers(client) if client else n_threads(self.n_jobs, n))
        if n_shards > n:
            raise ValueError(f"n_shards={n_shards} is more than the {n} sentences")
        self.estimator._validate_params()
        cuts = np.linspace(0, n, n_shards + 1).round().astype(int)
        rows = data.offsets[cuts]
        shards = [(clone(self.estimator), data[a:b], codes[r:s], classes)
                  for a, b, r, s in zip(cuts[:-1], cuts[1:], rows[:-1], rows[1:])]
        with resident(Shard, shards, self.n_jobs, client, type(self).__name__) as runner:
            return self._mix(runner, data.n_features, classes, n)

    def _fit_bags(self, X, y):
        """fit on Dask bags: each shard made on a worker from a run of
        consecutive partitions held there (one run per worker with
        ``n_shards=None``), the client never given the sentences."""
        what = f"{type(self).__name__}.fit"
        check_bags(X, y, what)
        client = active_client(what)
        parts, n_features, labels, lengths = bag_partitions(client, X, y, None, what)
        try:
            classes = np.unique(np.concatenate(labels))
            filled = [i for i, n in enumerate(lengths) if len(n)]
            n_shards = self.n_shards or n_workers(client)
            if n_shards > len(filled):
                raise ValueError(f"n_shards={n_shards} is more than the {len(filled)} "
                                 "partitions that hold sentences; repartition the bags")
            self.estimator._validate_params()
            groups = np.array_split(np.asarray(filled), n_shards)
            held = holders(client, parts)
            shards = [(clone(self.estimator), classes, *[parts[i] for i in group])
                      for group in groups]
            where = [held[group[0]] for group in groups]
            n = sum(len(n) for n in lengths)
            with resident(BagShard, shards, None, client, type(self).__name__,
                          where) as runner:
                return self._mix(runner, n_features, classes, n)
        finally:
            release(parts)

    def _mix(self, runner, n_features, classes, n_sentences):
        """The epochs of iterative parameter mixing over the shards (resident
        :class:`~sklstruct.learners._mixing_shard.Shard` objects of ``runner``),
        sparse; sets the model and returns self.

        Every shard starts an epoch from the mixture ``M`` on its rows and
        reports the rows it changed and by how much, ``d_s``; the new
        mixture is ``M + sum_s mu_s d_s`` (the shards' weights agree with
        ``M`` everywhere else), and each shard is sent the mixed values of
        its rows that changed anywhere.  The model mixes the shards' final
        (averaged) weights, ``sum_s mu_s avg_s``; a shard's average on a row
        it never touches is the mean of the mixtures it held there, one per
        epoch, kept by the lazy trick of the averaged perceptron:
        ``mean_e M_{e-1} = M_{E-1} - U / E`` with ``U = sum_e e (M_e - M_{e-1})``.
        """
        columns = runner.call("used_columns")
        single = len(columns) == 1
        averaging = bool(getattr(self.estimator, "average", False))
        M = np.zeros((n_features, len(classes)))
        U = np.zeros_like(M) if averaging and not single else None
        P_mixed, changed, history = None, None, []
        for epoch in range(1, self.max_iter + 1):
            tic = time.perf_counter()
            if changed is None:            # the first epoch, or one shard: nothing to move
                moves = [(None, None, None, not single)] * len(columns)
            else:
                moves = []
                for cols in columns:
                    local = np.flatnonzero(changed[cols])
                    moves.append((local, M[cols[local]], P_mixed, True))
            results = runner.call("epoch", moves)
            records = [r[0] for r in results]
            mu = self._mixing_weights(records)
            if not single and epoch < self.max_iter:
                touched, step = self._mixed_step(mu, results)
                M[touched] += step
                if U is not None:
                    U[touched] += epoch * step
                changed = np.zeros(n_features, dtype=bool)
                changed[touched] = True
                P_mixed = sum(m * r[3] for m, r in zip(mu, results))
            history.append({"epoch": epoch,
                            "mistakes": sum(r["mistakes"] for r in records),
                            "updates": sum(r["updates"] for r in records),
                            "mixing": mu.tolist(), "sentences": n_sentences,
                            "rows_sent": sum(0 if m[0] is None else m[0].size for m in moves),
                            "rows_received": sum(r[1].size for r in results),
                            "seconds": time.perf_counter() - tic})
            h = history[-1]
            report(self.verbose, "Epoch", h["epoch"], [
                ("mistakes", f"{h['mistakes']}/{n_sentences}"), ("updates", h["updates"]),
                ("shards", len(columns))], h["seconds"])
        # the model: the last mixture of the shards' (averaged) weights
        A = M if U is None else M - U / self.max_iter
        W = A.copy()
        P = 0.0
        for m, (cols, W_s, P_s) in zip(mu, runner.call("averaged")):
            W[cols] += m * (W_s - A[cols])
            P = P + m * P_s
        self._set_weights(W, P)
        self.classes_ = classes
        self.n_features_in_ = n_features
        self.n_iter_ = self.max_iter
        self.history_ = history
        return self

    @staticmethod
    def _mixed_step(mu, results):
        """The rows any shard changed and ``sum_s mu_s d_s`` on them: one
        sparse product (summing the rows in C) rather than a gather and a
        scatter of the mixture per shard in the calling thread."""
        rows = np.concatenate([r[1] for r in results])
        touched, where = np.unique(rows, return_inverse=True)
        weights = np.repeat(mu, [r[1].size for r in results])
        summing = sp.csr_matrix((weights, (where.ravel(), np.arange(rows.size))),
                                shape=(touched.size, rows.size))
        return touched, summing @ np.concatenate([r[2] for r in results])

    def _mixing_weights(self, records):
        k = np.array([r["updates"] for r in records], dtype=float)
        if self.mixing == "weighted" and k.sum() > 0:
            return k / k.sum()
        return np.full(len(records), 1.0 / len(records))

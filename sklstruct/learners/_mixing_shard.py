"""One shard of iterative parameter mixing: an online learner that stays
with its sentences for the whole fit and trains on the feature columns they
use only.

A shard never holds the whole model.  Its sentences' feature columns are
renumbered ``0 .. n_local - 1`` (:meth:`sklstruct.chain.StackedSentences.compact`:
in increasing order, so that one shard reproduces serial training
exactly), and its learner's weights have one row per used column.  Between epochs only rows travel: the mixer sends the mixed
values of the shard's rows that changed anywhere, the shard answers with the
rows its epoch changed and by how much.  The same object runs in a thread of
the fitting process or as a Dask actor on the worker that holds its data
(:class:`sklstruct.ParameterMixingTagger`).
"""
import numpy as np
import scipy.sparse as sp

from ..chain import StackedSentences
from ._bag_data import partition_codes


class Shard:
    """An online learner resident with its shard of the corpus.

    Parameters
    ----------
    learner : ChainLearner
        Unfitted; trained one epoch per :meth:`epoch` call.
    data : StackedSentences
        The shard's sentences (global feature columns).
    codes : ndarray of int32
        Their label codes into ``classes``.
    classes : ndarray
        The labels of the whole corpus.

    Attributes
    ----------
    columns : ndarray of int64
        The global feature column of each local weight row.
    """

    def __init__(self, learner, data, codes, classes):
        # (one column at least: a shard with no features still has a weight row)
        self.columns, self.data = data.compact(min_width=1)
        self.codes = codes
        self.classes = classes
        self.learner = learner

    def used_columns(self):
        """The global feature column of each local weight row."""
        return self.columns

    def epoch(self, rows, values, P, report=True):
        """Move to the mixture, train one epoch, report what changed.

        Parameters
        ----------
        rows : ndarray of int64 or None
            Local rows whose mixed values differ from the shard's; None on
            the first epoch (start from zero) and when there is nothing to
            move (one shard).
        values : ndarray of shape (len(rows), n_labels)
            Their mixed values.
        P : ndarray
            The mixed chain weights (all rows: every shard moves them).
        report : bool, default=True
            Find the rows that changed (False: one shard, nothing to mix;
            ``changed`` and ``delta`` come back empty).

        Returns
        -------
        record : dict
            The learner's history entry of this epoch.
        changed : ndarray of int64
            Global columns whose weights this epoch changed.
        delta : ndarray of shape (len(changed), n_labels)
            By how much.
        P : ndarray
            The chain weights after the epoch.
        """
        learner = self.learner
        started = hasattr(learner, "_weights")
        if started and rows is not None:
            learner._weights.move_to(values, P, rows=rows)
        before = learner._weights.W.copy() if started and report else None
        learner._train_encoded(self.data, self.codes, self.classes, 1, started, publish=False)
        W = learner._weights.W
        if not report:
            return (learner.history_[-1], self.columns[:0], W[:0], learner._weights.P.copy())
        delta = np.subtract(W, before, out=before) if started else W.copy()
        moved = np.flatnonzero(delta.any(axis=1))
        moved = moved[moved < self.columns.size]      # (the filler row of an empty shard)
        return (learner.history_[-1], self.columns[moved], delta[moved],
                learner._weights.P.copy())

    def averaged(self):
        """(columns, W, P): the learner's weights to predict with on its rows
        (averaged when it averages), with their global columns."""
        W, P = self.learner._weights.averaged()
        return self.columns, W[:self.columns.size], P


class BagShard(Shard):
    """A shard made on a worker from partitions of Dask bags held there
    (stacked by :func:`._bag_data.stack_partition`): their sentences, in
    order, and their labels coded into ``classes``."""

    def __init__(self, learner, classes, *parts):
        datas = [data for data, _ in parts]
        offsets = [np.zeros(1, dtype=np.int64)]
        for d, start in zip(datas, np.cumsum([0] + [d.matrix.shape[0] for d in datas[:-1]])):
            offsets.append(d.offsets[1:] + start)
        matrix = sp.vstack([d.matrix for d in datas], format="csr")
        data = StackedSentences._trusted(matrix, np.concatenate(offsets))
        codes = np.concatenate([partition_codes(part, classes) for part in parts])
        super().__init__(learner, data, codes, classes)

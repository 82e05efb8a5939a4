"""CRFTagger.fit on Dask bags: the objective summed over partitions on the workers.

L-BFGS runs on the client, as in a serial fit
(:meth:`sklstruct.CRFTagger._objective` is the same code); what it calls
the shards is :class:`BagShards`, whose shards are
:class:`._crf_shard.CRFShard` objects built on the workers, one per
partition, from the partitions themselves, and kept there (futures), each
worker holding a run of consecutive partitions.  Per evaluation, theta is
sent to the cluster once and one task runs on each worker: it evaluates the
worker's shards and adds their gradients in the tree fixed by the partition
order (:func:`sklstruct._dask.tree_reduce`), as far as its partitions go; the
client gets each shard's values (one float per sentence, or per token for
the pointwise losses) and one partial gradient per worker (or a few, when a
worker holds partitions that are not consecutive), and completes the tree.
The values are concatenated in sentence order, so the loss is computed from
the very array of a serial fit; only the order of the gradient's sums
differs (partial sums per partition), the same for any number of workers.

Set-up, before the first evaluation: the workers stack and check their
partitions and send back their sentence lengths and labels; the client
makes the label set, then (without ``all_possible_states``) the union of
the (feature, label) pairs each partition has seen.  Each shard keeps only
the columns its sentences use (``compact``).
"""
import numpy as np

from .._dask import (active_client, check_bags, gather, holders, lost_workers, pinned,
                     release, share, submit_each, tree_reduce)
from ._bag_data import bag_partitions, partition_codes
from ._crf_shard import CRFShard, seen_states

_WHAT = "CRFTagger.fit"


# -- on the workers: plain module functions (pickled by reference) --------------------
def _seen(part, classes):
    return seen_states(part[0], partition_codes(part, classes), len(classes))


def _shard(part, classes, n_chain, states):
    return CRFShard(part[0], partition_codes(part, classes), len(classes), n_chain, states,
                    n_jobs=1, compact=True)


def _n_theta(shard):
    return shard.n_theta


def _add_into(a, b):
    a += b
    return a


def _evaluate_run(theta, pointwise, n_parts, indices, weights, *shards):
    """The values of ``shards`` (partitions ``indices`` of ``n_parts``) at
    theta and, with ``weights`` (one loss weight triple per shard, not
    None), the nodes of the partitions' gradient tree they make:
    ``(values, nodes)``."""
    values, nodes = [], {}
    for i, shard, w in zip(indices, shards, weights):
        out = shard.values(theta, pointwise, w)
        if w is None:
            values.append(out)
        else:
            values.append(out[0])
            nodes[(0, i)] = out[1]
            nodes = tree_reduce(n_parts, nodes, _add_into)  # (at most log2(n) vectors held)
    return values, nodes


# -- on the client --------------------------------------------------------------------
class _Meta:
    """What a loss reads of the training set (:meth:`CRFLoss.weights`):
    its length, ``lengths`` and ``offsets``; the client holds these, not the
    sentences."""

    def __init__(self, lengths):
        self.lengths = lengths
        self.offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)

    def __len__(self):
        return len(self.lengths)


class BagShards:
    """The shards of a fit on bags, seen from the client as one shard:
    :meth:`values` as :meth:`._crf_shard.CRFShard.values`."""

    def __init__(self, client, shards, sent_counts, tok_counts, keep=()):
        self.client, self.shards, self._keep = client, shards, list(keep)
        # the shards of each worker (one task per worker and evaluation)
        runs = {}
        for i, where in enumerate(holders(client, shards)):
            runs.setdefault(None if where is None else where[0], []).append(i)
        self._runs = list(runs.items())
        self._sent = np.concatenate([[0], np.cumsum(sent_counts)])
        self._tok = np.concatenate([[0], np.cumsum(tok_counts)])
        self._weights = (None, None)       # (the last weights, their futures)

    def _split(self, grad_weights):
        """One future per shard of its part of the loss's weights; kept while
        they do not change (the log losses' weights never do)."""
        last, futures = self._weights
        if last is not None and all(
                (a is None and b is None) or (a is not None and b is not None
                                              and np.array_equal(a, b))
                for a, b in zip(last, grad_weights)):
            return futures
        node_w, gold_w, cond_c = grad_weights
        parts = [(node_w[a:b], gold_w[a:b], None if cond_c is None else cond_c[c:d])
                 for a, b, c, d in zip(self._sent[:-1], self._sent[1:], self._tok[:-1],
                                       self._tok[1:])]
        futures = self.client.scatter(parts, hash=False)
        release([self._weights[1] or []])
        self._weights = (grad_weights, futures)
        return futures

    def values(self, theta, pointwise, grad_weights=None):
        with lost_workers(_WHAT):
            return self._values(theta, pointwise, grad_weights)

    def _values(self, theta, pointwise, grad_weights):
        client, n = self.client, len(self.shards)
        theta_f = share(client, theta)
        weights = [None] * n if grad_weights is None else self._split(grad_weights)
        tasks = [client.submit(_evaluate_run, theta_f, pointwise, n, run,
                               [weights[i] for i in run], *[self.shards[i] for i in run],
                               **pinned(None if where is None else [where]))
                 for where, run in self._runs]
        try:
            results = gather(client, tasks, _WHAT)
        finally:
            release(tasks + [theta_f])
        values, nodes = [None] * n, {}
        for (_, run), (run_values, run_nodes) in zip(self._runs, results):
            for i, v in zip(run, run_values):
                values[i] = v
            nodes.update(run_nodes)
        values = np.concatenate(values)
        if grad_weights is None:
            return values
        (grad,) = tree_reduce(n, nodes).values()
        return values, grad

    def close(self):
        release([self.shards, self._weights[1] or [], self._keep])
        self.shards, self._weights, self._keep = [], (None, None), []


def bag_problem(estimator, X, y, warm):
    """(shards, meta, classes, n_features, states) of ``estimator``'s fit
    on the bags X, y (see :meth:`sklstruct.CRFTagger._local_problem`)."""
    check_bags(X, y, _WHAT)
    client = active_client(_WHAT)
    n_features = estimator.n_features_in_ if warm else None
    parts, F, labels, lengths = bag_partitions(client, X, y, n_features, _WHAT)
    try:
        where = holders(client, parts)   # (each task runs where its partition lies)
        classes = estimator.classes_ if warm else np.unique(np.concatenate(labels))
        L = len(classes)
        classes_f = share(client, classes)
        states = None
        if not estimator.all_possible_states:
            seen = gather(client, submit_each(client, _seen, parts, classes_f, where=where),
                          _WHAT)
            states = estimator._states(np.unique(np.concatenate(seen)),
                                       estimator.coef_.T if warm else None)
        states_f = None if states is None else share(client, states)
        shards = submit_each(client, _shard, parts, classes_f, estimator._n_chain(L),
                             states_f, where=where)
        # the shards are built (and their errors raised) before L-BFGS starts
        gather(client, submit_each(client, _n_theta, shards, where=where), _WHAT)
    finally:
        release(parts)
    meta = _Meta(np.concatenate(lengths))
    # the shards' inputs stay referenced: a shard a dead worker held is
    # recomputed from them
    shards_obj = BagShards(client, shards, [len(n) for n in lengths],
                           [int(n.sum()) for n in lengths], keep=[classes_f, states_f])
    return shards_obj, meta, classes, F, states

"""The CRF objective's data side: the training sentences one process holds.

:class:`CRFShard` turns a weight vector ``theta`` into the per-sentence (or
per-token) values and the gradient of the losses of
:mod:`sklstruct.learners._crf_losses` over its sentences, with the loss's
weights; the prior, and the loss's value from the values, are the caller's
(:meth:`sklstruct.CRFTagger._objective`).  A serial fit has one shard of
every sentence; a fit on Dask bags (:mod:`sklstruct.learners._crf_dask`) one
per partition, resident on the worker that holds the partition, and adds
their gradients up in partition order.

Both halves of the gradient run in ``n_jobs`` threads with results that do
not depend on them: forward-backward over fixed blocks of sentences
(:func:`sklstruct.learners._crf.crf_pass`), and the emission block X^T node
over ranges of features of equal nonzero counts
(:func:`sklstruct.learners._crf.emission_gradient`), each feature's sums
computed by one thread in row order.  That product was the serial third of
an objective evaluation on CoNLL-2000 (0.095 s of 0.285 s with one thread).
"""
import numpy as np
import scipy.sparse as sp

from .._parallel import block_ranges, n_threads, run
from ._crf import BLOCK, CRFGradient, StateLayout, crf_pass, emission_gradient, row_starts


def seen_states(data, codes, n_labels):
    """Sorted flat indices ``f * n_labels + l`` of the (feature, label) pairs
    of the tokens of ``data`` (StackedSentences) whose labels are ``codes``:
    the emission weights a CRF without ``all_possible_states`` learns."""
    n_tok = codes.shape[0]
    labels = sp.csr_matrix((np.ones(n_tok), codes, np.arange(n_tok + 1)),
                           shape=(n_tok, n_labels))
    seen = sp.csr_matrix(abs(data.matrix).T @ labels)   # > 0 exactly where seen
    seen.eliminate_zeros()
    seen.sum_duplicates()          # canonical: sorted columns in each row, no repeats
    rows = np.repeat(np.arange(seen.shape[0], dtype=np.int64), np.diff(seen.indptr))
    return rows * n_labels + seen.indices    # sorted and distinct, as np.unique gives


class CRFShard:
    """Sentences of a CRF's training set, ready for the objective's passes.

    Parameters
    ----------
    data : StackedSentences
        The sentences, with the training set's column count.
    codes : ndarray of int32, shape (n_tokens,)
        Their label codes.
    n_labels : int
    n_chain : int
        Rows of the chain parameters P (``L + 2``, or ``L + 2 + L * L`` for
        a second-order chain).
    states : ndarray of int64 or None
        ``theta[:len(states)]`` are the emission weights at these sorted
        flat indices ``f * L + l`` of W (F, L), the others being 0; None:
        ``theta`` begins with all of W raveled.
    n_jobs : int or None
        Threads of the passes (results do not depend on them).
    compact : bool, default=False
        Keep only the columns the sentences use: a partition of a large
        corpus uses a fraction of the features, and its weights and
        buffers shrink with them.  The gradient is then 0 elsewhere.

    Attributes
    ----------
    data : StackedSentences
        The sentences (with compact, their used columns only).
    n_theta : int
        Length of theta and of the gradient.
    """

    def __init__(self, data, codes, n_labels, n_chain, states, n_jobs=None, compact=False):
        F, L = data.n_features, n_labels
        n_w = F * L if states is None else len(states)
        self.L, self.n_chain, self.n_w, self.n_jobs = L, n_chain, n_w, n_jobs
        self.n_theta = n_w + n_chain * L
        self.codes = codes
        m = data.matrix
        self.compact = bool(compact)
        if self.compact:
            # the global feature of each local column
            features, data = data.compact()
            m = data.matrix
        else:
            features = np.arange(F, dtype=np.int64)
        self.data = data
        n_local = m.shape[1]
        # which entries of W (F_local, L) raveled hold which of theta: the
        # weights go there; None: W is theta's first n_w entries as they are.
        # The gradient G (dense (F_local, L) raveled, or with learned states
        # compact: those of each local feature in turn, in label order, see
        # StateLayout, of _index[0]) goes to theta's entries _grad_dest; None:
        # G is written into the gradient's first n_w entries in place
        self._learned_only = states is not None
        if states is None:
            if self.compact:
                self._index = (np.arange(n_local * L),
                               (features[:, None] * L + np.arange(L)).ravel())
            else:
                self._index = None
            self._grad_dest = None if self._index is None else self._index[1]
        elif self.compact:
            feature_of = states // L
            start = np.searchsorted(feature_of, features, "left")
            counts = np.searchsorted(feature_of, features, "right") - start
            local = np.repeat(np.arange(n_local, dtype=np.int64), counts)
            src = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
            src += np.repeat(start, counts)
            self._index = (local * L + states[src] % L, src)    # (sorted, as states)
            self._grad_dest = src
        else:
            self._index = (states, slice(0, n_w))
            self._grad_dest = None
        self._buffers = None

    # the buffers are rebuilt where the shard is used: a shard that a Dask
    # worker sends elsewhere travels as its sentences
    def __getstate__(self):
        state = dict(self.__dict__)
        state["_buffers"] = None
        return state

    def __sizeof__(self):
        # what the Dask scheduler weighs before moving a shard: its data and buffers
        m = self.data.matrix
        n_w_local = m.shape[1] * self.L if self._index is not None else 0
        n_g = 0 if self._grad_dest is None else len(self._grad_dest)
        return (m.data.nbytes + m.indices.nbytes + m.indptr.nbytes + self.codes.nbytes
                + 8 * (self.codes.shape[0] * self.L + n_w_local + n_g))

    def _prepared(self):
        """(chain data, node, W and G buffers, sentence ranges, feature ranges,
        their row starts, the StateLayout of the gradient or None)."""
        if self._buffers is None:
            m = self.data.matrix
            F, L = m.shape[1], self.L
            k = n_threads(self.n_jobs, F)
            k = 4 * k if k > 1 else k      # (several per thread, as block_ranges)
            # k ranges of features with equal nonzero counts: each reads all
            # rows of X, and the nonzeros of its features
            cum = np.cumsum(np.bincount(m.indices, minlength=F))
            cuts = np.r_[0, np.searchsorted(cum, np.linspace(0, m.nnz, k + 1)[1:-1]), F]
            features = [(int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:]) if a < b]
            # where each range begins in each row, found once (an int32 per
            # token and range) rather than by bisection at every evaluation
            starts = ({} if len(features) < 2
                      else {a: row_starts(self.data.chain_data(), a) for a, _ in features})
            W = None if self._index is None else np.zeros(F * L)
            G = None if self._grad_dest is None else np.empty(len(self._grad_dest))
            # the learned states, as sorted flat indices into W (F_local, L)
            layout = StateLayout.of_states(self._index[0], F, L) if self._learned_only else None
            self._buffers = (self.data.chain_data(), np.empty((m.shape[0], L)), W, G,
                             block_ranges(self.n_jobs, BLOCK, len(self.data), per_thread=4),
                             features, starts, layout)
        return self._buffers

    def _weights(self, theta, W_buffer):
        """(W raveled, P) that the kernels read, from theta."""
        if self._index is None:
            W = theta[:self.n_w]
        else:
            local, where = self._index
            W = W_buffer                             # the other entries stay 0
            W[local] = theta[where]
        return W, theta[self.n_w:].reshape(-1, self.L)

    def values(self, theta, pointwise, grad_weights=None):
        """The values at theta: ``log Z - s(gold)`` per sentence, or with
        ``pointwise`` ``log Z - log Z_t`` per token; with ``grad_weights``
        (``(node_w, gold_w, cond_c)`` of a loss) also the gradient of their
        weighted sum, of length ``n_theta``: ``(values, gradient)``."""
        c, node, W_buffer, G, sentences, features, starts, layout = self._prepared()
        W, P = self._weights(theta, W_buffer)
        codes, n_sent = self.codes, len(self.data)
        sent_val = np.empty(n_sent)
        tok_val = np.empty(codes.shape[0]) if pointwise else None
        grad = chain = None
        if grad_weights is not None:
            chain = np.zeros((-(-n_sent // BLOCK),) + P.shape)
            grad = CRFGradient(*grad_weights, node, chain)
        run(self.n_jobs, lambda a, b: crf_pass(c, codes, W, P, a, b, sent_val, tok_val, grad),
            sentences)
        v = tok_val if pointwise else sent_val
        if grad is None:
            return v
        # a compact shard has a gradient only at its features' entries
        out = np.zeros(self.n_theta) if self.compact else np.empty(self.n_theta)
        if self._grad_dest is None:
            G = out[:self.n_w]                      # written in place
        run(self.n_jobs,
            lambda a, b: emission_gradient(c, node, a, b, G, starts.get(a), layout), features)
        if self._grad_dest is not None:
            out[self._grad_dest] = G
        out[self.n_w:] = chain.sum(axis=0).ravel()
        return v, out

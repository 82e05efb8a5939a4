"""The first-order linear-chain model: scores, joint feature map, costs and decoding.

For a sentence with token features ``x`` (T x F) and a label sequence ``y``, the
joint feature map F(x, y) of paper 000 (section 3) has three blocks:

* emission features: ``sum_t x_t (outer) e_{y_t}``, an F x L block;
* transition features: one count per label bigram ``(y_{t-1}, y_t)``, L x L;
* start and end features: ``e_{y_0}`` and ``e_{y_{T-1}}``.

The weights ``w`` are laid out the same way: ``W`` (F x L, the transpose of the
estimators' ``coef_``) and the chain parameters ``P`` ((L + 2) x L: transitions,
start row, end row; see :func:`pack_chain`).  Then ``w.F(x, y)`` is
:func:`sequence_score` of the emission scores ``E = x @ W``.

The functions here are the readable reference of the model; learners run the
same computations inside their Cython loops (``_viterbi.pyx``, ``_online.pyx``).
"""
import numpy as np
import scipy.sparse as sp

from ._viterbi import kbest_decode, pack_chain, sequence_score, viterbi_decode

__all__ = [
    "emission_scores",
    "joint_feature",
    "hamming_loss",
    "pack_chain",
    "sequence_score",
    "viterbi_decode",
    "kbest_decode",
]


def emission_scores(x, W):
    """Emission scores ``E = x @ W`` of one sentence, as a dense (T, L) array."""
    E = x @ W
    return np.ascontiguousarray(E.toarray() if sp.issparse(E) else E, dtype=np.float64)


def joint_feature(x, y, n_labels):
    """The joint feature vector F(x, y) as a pair ``(F_W, F_P)``.

    Parameters
    ----------
    x : sparse or dense matrix of shape (T, F)
        Token features of one sentence.
    y : array-like of shape (T,)
        Encoded labels in ``[0, n_labels)``.
    n_labels : int

    Returns
    -------
    F_W : ndarray of shape (F, n_labels)
        Emission block: column ``l`` is the sum of the feature rows of the
        tokens labelled ``l`` (repeated features are counted with their
        multiplicity).
    F_P : ndarray of shape (n_labels + 2, n_labels)
        Transition counts, then the start and end indicators.
    """
    y = np.asarray(y, dtype=np.intp)
    T = y.shape[0]
    onehot = sp.csr_matrix((np.ones(T), (np.arange(T), y)), shape=(T, n_labels))
    F_W = np.asarray((sp.csr_matrix(x).T @ onehot).toarray())
    F_P = np.zeros((n_labels + 2, n_labels))
    np.add.at(F_P, (y[:-1], y[1:]), 1.0)
    F_P[n_labels, y[0]] += 1.0
    F_P[n_labels + 1, y[-1]] += 1.0
    return F_W, F_P


def hamming_loss(y_true, y_pred):
    """Number of tokens whose labels differ: the cost L(y^n, y) of paper 000."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if y_true.shape != y_pred.shape:
        raise ValueError(f"label sequences differ in length: {y_true.shape[0]} != {y_pred.shape[0]}")
    return int(np.count_nonzero(y_true != y_pred))

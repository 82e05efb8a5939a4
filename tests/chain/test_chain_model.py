"""The chain model's C side: weights layout, lazy averaging, pickling, allocation bounds."""
import pickle

import numpy as np
import pytest
import scipy.sparse as sp

from sklstruct._chain import ChainWeights
from sklstruct._validation import MAX_ALLOC_BYTES, check_alloc
from sklstruct.chain import as_stacked, pack_chain, unpack_chain
from sklstruct.learners._online import online_epoch


def test_layout_and_averaging_by_hand():
    """Two perceptron updates on a 1-token sentence, checked against the
    average of the weights after each example, computed by hand."""
    X = as_stacked([sp.csr_matrix([[1.0, 0.0]]), sp.csr_matrix([[0.0, 2.0]])])
    w = ChainWeights(2, 2, True)
    assert w.W.shape == (2, 2) and w.P.shape == (4, 2) and w.n_seen == 0
    gold = np.array([1, 0], dtype=np.int32)
    mistakes, updates = online_epoch(X.chain_data(), gold, np.array([0, 1], dtype=np.int64),
                                     w, "perceptron", 1)
    assert (mistakes, updates, w.n_seen) == (2, 2, 2)
    # example 0 (feature 0, gold 1): all-zero weights pick label 0, so
    # W[0] += (-1, 1) and the start and end rows += (-1, 1);
    after_0_W = np.array([[-1.0, 1.0], [0.0, 0.0]])
    after_0_start = np.array([-1.0, 1.0])
    # example 1 (feature 1 = 2, gold 0): label 1 wins on start + end (2 > -2),
    # so W[1] += (2, -2) and the start and end rows += (1, -1)
    after_1_W = np.array([[-1.0, 1.0], [2.0, -2.0]])
    after_1_start = np.array([0.0, 0.0])
    np.testing.assert_array_equal(w.W, after_1_W)
    np.testing.assert_array_equal(w.P[2], after_1_start)
    # the averaged weights are the mean of the weights after each example
    W_avg, P_avg = w.averaged()
    np.testing.assert_allclose(W_avg, (after_0_W + after_1_W) / 2)
    np.testing.assert_allclose(P_avg[2], (after_0_start + after_1_start) / 2)
    np.testing.assert_allclose(P_avg[3], P_avg[2])        # end row: same updates
    np.testing.assert_allclose(P_avg[:2], 0.0)            # no transitions in 1-token sentences


def test_pickle_keeps_weights_accumulators_and_clock():
    w = ChainWeights(3, 2, True)
    w.W[...] = np.arange(6).reshape(3, 2)
    w.W_sum[...] = 1.5
    w.n_seen = 7
    v = pickle.loads(pickle.dumps(w))
    np.testing.assert_array_equal(v.W, w.W)
    np.testing.assert_array_equal(v.W_sum, w.W_sum)
    assert v.n_seen == 7 and v.average
    np.testing.assert_array_equal(v.averaged()[0], w.averaged()[0])
    assert not ChainWeights(3, 2, False).average


def test_pack_and_unpack_are_inverse():
    rng = np.random.default_rng(0)
    T, s, e = rng.normal(size=(3, 3)), rng.normal(size=3), rng.normal(size=3)
    for a, b in zip(unpack_chain(pack_chain(T, s, e)), (T, s, e)):
        np.testing.assert_array_equal(a, b)


def test_allocation_bounds():
    with pytest.raises(ValueError):
        ChainWeights(0, 2)
    with pytest.raises(MemoryError, match="GiB"):
        check_alloc("the k-best scratch", MAX_ALLOC_BYTES, 2)
    with pytest.raises(MemoryError, match="the weights"):
        ChainWeights(2**40, 2**20)
    X = as_stacked([sp.csr_matrix(np.ones((2000, 2)))])
    with pytest.raises(MemoryError, match="k-best scratch"):
        # k x (T x L + 1) ranks of 16 bytes: 1e5 x 2e6 x 16: refused, not attempted
        online_epoch(X.chain_data(), np.zeros(2000, dtype=np.int32),
                     np.array([0], dtype=np.int64), ChainWeights(2, 1000, False),
                     "perceptron", 10**5)


def test_predict_kbest_allocation_is_bounded_with_a_clear_error():
    from sklstruct import StructuredPerceptronTagger

    rng = np.random.default_rng(0)
    X = [sp.csr_matrix(rng.random((3, 4))) for _ in range(4)]
    model = StructuredPerceptronTagger(max_iter=1).fit(X, [["a", "b", "c"]] * 4)
    with pytest.raises(MemoryError, match="k-best scratch would need"):
        model.predict_kbest([sp.csr_matrix(rng.random((20000, 4)))], k=100000)
    assert len(model.predict_kbest(X[:1], k=2)[0][0]) == 2

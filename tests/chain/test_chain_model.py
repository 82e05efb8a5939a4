"""The chain model's C side: weights layout, lazy averaging, pickling, allocation bounds."""
import pickle

import numpy as np
import pytest
import scipy.sparse as sp

from sklstruct._chain import ChainWeights
from sklstruct._validation import MAX_ALLOC_BYTES, check_alloc
from sklstruct.chain import (allowed_transitions, as_stacked, emission_scores, joint_feature,
                             pack_chain, restrict_scores, unpack_chain)
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


_T, _s = np.zeros((2, 2)), np.zeros(2)


@pytest.mark.parametrize("call, error, message", [
    # found by a hostile-input probe: each gave garbage or a foreign message
    (lambda: pack_chain(np.zeros(2), _s, _s), ValueError, r"transitions must be a 2-D array"),
    (lambda: pack_chain(_T, None, _s), TypeError, "start must be a 1-D array of real"),
    (lambda: pack_chain(_T, _s, np.zeros(3)), ValueError, r"end must have shape \(2,\)"),
    (lambda: pack_chain(_T + 1j, _s, _s), TypeError, "transitions must be a 2-D array of real numbers; got dtype complex"),
    (lambda: unpack_chain(None), TypeError, "P must be a 2-D array of real numbers; got None"),
    (lambda: unpack_chain(np.zeros((3, 2))), ValueError, "chain parameters must have shape"),
    (lambda: unpack_chain(np.zeros((4, 0))), ValueError, "one column per label"),
    (lambda: restrict_scores(np.zeros((3, 2)), np.zeros((4, 2)), allowed_labels="abc"),
     TypeError, "allowed_labels must be a boolean array"),
    (lambda: restrict_scores(np.zeros((3, 2)), np.zeros((4, 2)),
                             allowed_labels=np.full((3, 2), 0.5)), TypeError, "boolean"),
    (lambda: restrict_scores(np.zeros((3, 2)), np.zeros((4, 2)),
                             allowed_labels=np.ones(2, bool)), ValueError, r"shape \(3, 2\)"),
    (lambda: restrict_scores(None, np.zeros((4, 2)), allowed_labels=np.ones((3, 2), bool)),
     TypeError, "E must be a 2-D array of real numbers; got None"),
    (lambda: restrict_scores(np.zeros((3, 2)), np.zeros((4, 2)), allowed=np.ones((3, 2), bool)),
     ValueError, r"allowed must have shape \(4, 2\)"),
    (lambda: joint_feature(np.eye(3), [0.5, 1.7, 0.0], 2), TypeError, "integer labels"),
    (lambda: joint_feature(np.eye(3), [True, False, True], 2), TypeError, "integer labels"),
    (lambda: joint_feature(np.eye(3), [0, 1, 0], 2, order=3), ValueError, "order must be"),
    (lambda: joint_feature(np.eye(3), [0, 5, 0], 2), ValueError, "must lie in"),
    (lambda: emission_scores(np.eye(3), np.zeros(3)), ValueError, "W must be a 2-D array"),
    (lambda: emission_scores(np.eye(3), "abc"), TypeError, "W must be a 2-D array of real"),
    (lambda: allowed_transitions("iob2", "O"), ValueError, "labels: expected a non-empty"),
    (lambda: allowed_transitions("iob2", []), ValueError, "non-empty"),
    (lambda: allowed_transitions("iob2", None), ValueError, "non-empty"),
])
def test_chain_helpers_check_their_arguments(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize("kwargs, message", [
    (dict(x0=np.full(3, np.nan)), r"x0\[0\] = nan is not finite"),
    (dict(x0=np.ones((2, 2))), "x0 must be a 1-D array"),
    (dict(max_iter=-1), r"max_iter must be an integer in \[0, 2147483647\]"),
    (dict(m=None), r"m must be an integer in \[1, 2147483647\]; got None"),
    (dict(gtol=np.nan), "gtol must be a finite number"),
    (dict(fun=lambda x: (float("nan"), x)), "fun\\(x0\\) is not finite"),  # was "success"
])
def test_lbfgs_checks_its_arguments(kwargs, message):
    from sklstruct.optimize import lbfgs
    args = dict(fun=lambda x: (float(x @ x), 2 * x), x0=np.ones(3))
    args.update(kwargs)
    fun, x0 = args.pop("fun"), args.pop("x0")
    with pytest.raises(ValueError, match=message):
        lbfgs(fun, x0, **args)

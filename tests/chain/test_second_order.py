"""Second-order chains: every decoding kernel against brute-force enumeration,
the model's layout, and every chain learner with ``order=2``.

The learners' exact updates with ``order=2`` (dF with the trigrams around each
changed position) are checked against their plain references in
test_perceptron, test_pa_mira, test_swvm and test_dual."""
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from sklstruct import _registry
from sklstruct._viterbi import decode_corpus
from sklstruct.chain import (as_stacked, joint_feature, kbest_decode, pack_chain,
                             sequence_score, unpack_chain, viterbi_decode)
from _oracles import brute_force, chain_problems, check_kbest, make, random_problem, separable_problem

TAGGERS = [cls for cls in _registry.TAGGERS.values() if "order" in cls().get_params()]


@settings(max_examples=200, deadline=None)
@given(chain_problems(order=2), st.booleans())
def test_viterbi2_matches_brute_force(problem, augmented):
    E, P, gold = problem
    cost = 1.0 if augmented else 0.0
    _, scores = brute_force(E, P, gold, cost)
    path, score = viterbi_decode(E, P, gold=gold, cost=cost)
    assert score == pytest.approx(scores.max())
    assert sequence_score(E, P, path) + cost * np.sum(path != gold) == pytest.approx(scores.max())


@settings(max_examples=200, deadline=None)
@given(chain_problems(order=2), st.integers(1, 12))
def test_kbest2_matches_brute_force(problem, k):
    E, P, _ = problem
    check_kbest(E, P, k)


@settings(max_examples=200, deadline=None)
@given(chain_problems(integer_scores=True, order=2), st.integers(1, 30))
def test_kbest2_with_ties(problem, k):
    E, P, _ = problem
    check_kbest(E, P, k)


@settings(max_examples=200, deadline=None)
@given(chain_problems(order=2), st.integers(1, 12), st.sampled_from([1.0, 0.5, 3.0]))
def test_loss_augmented_kbest2_matches_brute_force(problem, k, cost):
    E, P, gold = problem
    check_kbest(E, P, k, gold=gold, cost=cost)


@settings(max_examples=40, deadline=None)
@given(chain_problems(max_T=8, max_L=3, order=2), st.integers(1, 300))
def test_kbest2_deep_lattices_many_ranks(problem, k):
    E, P, gold = problem
    check_kbest(E, P, k, gold=gold, cost=1.0)


def test_zero_trigrams_decode_like_first_order():
    rng = np.random.default_rng(3)
    for _ in range(30):
        T, L = rng.integers(1, 12), rng.integers(1, 6)
        E, P1 = rng.normal(size=(T, L)), rng.normal(size=(L + 2, L))
        P2 = np.vstack([P1, np.zeros((L * L, L))])
        for k in (1, 4):
            p1, s1 = kbest_decode(E, P1, k)
            p2, s2 = kbest_decode(E, P2, k)
            np.testing.assert_allclose(s1, s2, atol=1e-12)
        assert viterbi_decode(E, P2)[1] == pytest.approx(viterbi_decode(E, P1)[1])


def test_decode_corpus_second_order_equals_viterbi_per_sentence():
    rng = np.random.default_rng(4)
    X = [sp.csr_matrix(rng.normal(size=(rng.integers(1, 9), 5))) for _ in range(20)]
    L = 4
    W = rng.normal(size=(5, L))
    P = pack_chain(*(rng.normal(size=s) for s in [(L, L), (L,), (L,), (L, L, L)]))
    data = as_stacked(X)
    c = data.chain_data()
    codes = decode_corpus(c.indptr, c.indices, c.data, c.offsets, W, P, 2)
    for x, got in zip(X, data.split(codes)):
        np.testing.assert_array_equal(got, viterbi_decode(x.toarray() @ W, P)[0])
    with pytest.raises(ValueError, match="do not fit a chain of order 1"):
        decode_corpus(c.indptr, c.indices, c.data, c.offsets, W, P, 1)


def test_layout_pack_unpack_and_joint_feature():
    L = 3
    rng = np.random.default_rng(5)
    parts = [rng.normal(size=s) for s in [(L, L), (L,), (L,), (L, L, L)]]
    P = pack_chain(*parts)
    assert P.shape == (L + 2 + L * L, L)
    assert P[L + 2 + 1 * L + 2, 0] == parts[3][1, 2, 0]
    for a, b in zip(unpack_chain(P), parts):
        np.testing.assert_array_equal(a, b)
    assert unpack_chain(P[:L + 2])[3] is None
    # w . F(x, y) of the joint feature map is the decoders' sequence score
    x = sp.csr_matrix(rng.normal(size=(6, 4)))
    W = rng.normal(size=(4, L))
    y = rng.integers(0, L, size=6)
    F_W, F_P = joint_feature(x, y, L, order=2)
    assert F_P[L + 2:].sum() == 4               # T - 2 trigrams
    assert (W * F_W).sum() + (P * F_P).sum() == pytest.approx(
        sequence_score(x.toarray() @ W, P, y))
    with pytest.raises(ValueError, match=r"\(L \+ 2 \+ L \* L, L\)"):
        viterbi_decode(np.zeros((2, L)), np.zeros((L + 3, L)))


def learner(cls, order):
    """The settings the first-order separable-problem tests use."""
    model = make(cls, order=order, random_state=0, max_iter=30)
    if "C" in model.get_params():
        model.set_params(C=100.0 if "loss" in model.get_params() else 10.0)
    if "n_reprocess" in model.get_params():
        model.set_params(k=2, n_reprocess=5, max_iter=3)
    return model


@pytest.mark.parametrize("cls", TAGGERS, ids=lambda c: c.__name__)
def test_every_chain_tagger_learns_a_separable_problem_with_order_2(cls):
    X, y = separable_problem()
    model = learner(cls, 2).fit(X, y)
    assert model.trigram_coef_.shape == (3, 3, 3)
    assert model.score(X, y) == 1.0
    first = make(cls, max_iter=1, random_state=0).fit(X, y)
    assert first.trigram_coef_ is None


def trigram_problem(n=120, seed=0):
    """Labels that only a second-order chain can get right: y_t = y_{t-1} XOR
    y_{t-2}.  The first two tokens show their labels as features; the others
    all look alike, and every label bigram occurs, so a first-order chain
    cannot tell what comes next while a trigram table can."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n):
        T = int(rng.integers(3, 10))
        labels = list(rng.integers(0, 2, size=2))
        while len(labels) < T:
            labels.append(labels[-1] ^ labels[-2])
        x = np.zeros((T, 3))
        x[[0, 1], labels[:2]] = 1.0
        x[2:, 2] = 1.0
        X.append(sp.csr_matrix(x))
        y.append(np.array(labels))
    return X, y


@pytest.mark.parametrize("cls", TAGGERS, ids=lambda c: c.__name__)
def test_order_2_learns_what_order_1_cannot(cls):
    X, y = trigram_problem()
    second = learner(cls, 2).fit(X, y)
    first = learner(cls, 1).fit(X, y)
    assert second.score(X, y) == 1.0
    assert first.score(X, y) < 0.95


def test_predict_kbest_pickle_and_warm_start_with_order_2():
    X, y = random_problem(seed=2)
    cls = _registry.TAGGERS["mira"]
    model = cls(order=2, k=3, max_iter=2, random_state=0, warm_start=True).fit(X, y)
    clone = pickle.loads(pickle.dumps(model))
    for a, b in zip(model.predict(X), clone.predict(X)):
        np.testing.assert_array_equal(a, b)
    (seqs, scores), = model.predict_kbest(X[:1], k=4)
    np.testing.assert_array_equal(seqs[0], model.predict(X[:1])[0])
    W, P = model._decoding_weights()
    for s, v in zip(seqs, scores):
        codes = np.searchsorted(model.classes_, s)
        assert sequence_score(X[0].toarray() @ W, P, codes) == pytest.approx(v)
    clone.fit(X, y)                               # warm start continues
    assert clone.n_iter_ == 4
    with pytest.raises(ValueError, match="cannot change order"):
        model.set_params(order=1).fit(X, y)
    assert model.n_iter_ == 2 and model.trigram_coef_.shape == (3, 3, 3)


@pytest.mark.parametrize("order", [0, 3, 1.5, "2"])
def test_order_is_validated(order):
    X, y = random_problem()
    with pytest.raises((ValueError, TypeError), match="order"):
        _registry.TAGGERS["perceptron"](order=order).fit(X, y)

"""Sequence boosting (Altun, Johnson & Hofmann, Algorithm 2): the bounds
u^max / u^min by enumeration, the loss falling by at least the bound each
round, the restricted forward-backward equal to a full one, and learning."""
import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import logsumexp

from sklstruct import SequenceBoostingTagger
from sklstruct.chain import as_stacked, joint_feature
from _oracles import brute_force, random_problem, separable_problem


def exp_loss(model, X, y):
    """sum_i 1 / P(y^i | x^i) - 1, by enumeration (eq. 2)."""
    W, P = model._decoding_weights()
    total = 0.0
    for x, gold in zip(X, y):
        seqs, scores = brute_force(x.toarray() @ W, P)
        g = np.searchsorted(model.classes_, gold)
        s_gold = scores[np.flatnonzero((seqs == g).all(axis=1))[0]]
        total += np.exp(logsumexp(scores) - s_gold) - 1.0
    return total


def test_bounds_match_enumeration():
    rng = np.random.default_rng(3)
    X = [sp.csr_matrix(rng.normal(size=(rng.integers(1, 5), 3))) for _ in range(6)]
    y = [rng.integers(0, 3, size=x.shape[0]) for x in X]
    data = as_stacked(X)
    codes = np.concatenate(y).astype(np.int32)
    umax, umin = SequenceBoostingTagger._bounds(data, codes, 3)
    hi, lo = np.full_like(umax, -np.inf), np.full_like(umin, np.inf)
    for x, gold in zip(X, y):
        FW, FP = joint_feature(x, gold, 3)
        for seq in itertools.product(range(3), repeat=len(gold)):
            GW, GP = joint_feature(x, np.array(seq), 3)
            diff = np.concatenate([(GW - FW).ravel(), (GP - FP).ravel()])
            hi, lo = np.maximum(hi, diff), np.minimum(lo, diff)
    # emission bounds are exact; a transition's count bound may exceed what
    # the sentence lengths allow with 3 labels, never fall below it
    F = 3 * 3
    np.testing.assert_allclose(umax[:F], hi[:F], atol=1e-12)
    np.testing.assert_allclose(umin[:F], lo[:F], atol=1e-12)
    assert np.all(umax[F:] >= hi[F:] - 1e-12) and np.all(umin[F:] <= lo[F:] + 1e-12)
    np.testing.assert_allclose(umin[F:], lo[F:])
    np.testing.assert_allclose(umax[F + 9:], hi[F + 9:])        # start and end: exact


@pytest.mark.parametrize("seed", [1, 2])
def test_each_round_lowers_the_loss_by_at_least_its_bound(seed):
    X, y = random_problem(n=10, seed=seed)
    previous = None
    for n in range(1, 9):
        model = SequenceBoostingTagger(n_rounds=n).fit(X, y)
        loss = exp_loss(model, X, y)
        record = model.history_[-1]
        assert 0 < record["bound"] < 1
        if previous is not None:
            # the tracked loss before the round is the true one ...
            assert np.exp(record["log_loss_before"]) == pytest.approx(previous, rel=1e-9)
            # ... and the round multiplies it by at most the bound
            assert loss <= previous * record["bound"] * (1 + 1e-12)
        previous = loss


def test_restricted_forward_backward_equals_a_full_one(monkeypatch):
    """Forward-backward only on the sentences holding the last feature (the
    paper's suggestion) gives the model that redoing every sentence gives."""
    rng = np.random.default_rng(0)
    X = [sp.csr_matrix((rng.random((rng.integers(1, 6), 12)) < 0.15).astype(float))
         for _ in range(40)]
    y = [rng.integers(0, 3, size=x.shape[0]) for x in X]
    fast = SequenceBoostingTagger(n_rounds=40).fit(X, y)
    assert min(h["sentences"] for h in fast.history_) < len(X)
    original = SequenceBoostingTagger._refresh
    monkeypatch.setattr(SequenceBoostingTagger, "_refresh",
                        lambda self, state, S: original(self, state, np.arange(len(X))))
    full = SequenceBoostingTagger(n_rounds=40).fit(X, y)
    assert [c[:3] for c in fast.chosen_features_] == [c[:3] for c in full.chosen_features_]
    np.testing.assert_allclose(fast.coef_, full.coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fast.transition_coef_, full.transition_coef_, rtol=1e-9,
                               atol=1e-12)


def test_separable_problem_reaches_zero_training_error(capsys):
    X, y = separable_problem()
    model = SequenceBoostingTagger(n_rounds=300, verbose=1).fit(X, y)
    assert model.score(X, y) == 1.0
    assert len(model.chosen_features_) == len(model.history_) == model.n_iter_ == 300
    kinds = {c[0] for c in model.chosen_features_}
    assert {"emission", "transition"} <= kinds
    assert "Round 1:" in capsys.readouterr().out


def test_long_sentences_do_not_overflow():
    """At w = 0, 1 / P(y | x) = 3 ** 700 for a 700-token sentence."""
    rng = np.random.default_rng(1)
    X = [sp.csr_matrix(rng.random((700, 4))), sp.csr_matrix(rng.random((5, 4)))]
    y = [rng.integers(0, 3, size=700), rng.integers(0, 3, size=5)]
    model = SequenceBoostingTagger(n_rounds=5).fit(X, y)
    assert np.isfinite(model.coef_).all()
    assert model.history_[0]["log_loss_before"] == pytest.approx(700 * np.log(3), rel=1e-6)


def test_tracked_loss_stays_exact_when_the_dominant_sentence_improves():
    """One long sentence dominates the exp-loss at first; as it improves by
    many orders of magnitude the stored expectations are rescaled and G is
    summed afresh: the tracked loss stays the one forward-backward gives."""
    from sklstruct._forward_backward import chain_marginals
    from sklstruct._viterbi import sequence_score

    rng = np.random.default_rng(4)
    X = [sp.csr_matrix(np.eye(3)[rng.integers(0, 3, size=60)])]
    X += [sp.csr_matrix(np.eye(3)[rng.integers(0, 3, size=4)]) for _ in range(5)]
    y = [np.argmax(x.toarray(), axis=1) for x in X]        # the attribute is the label
    model = SequenceBoostingTagger(n_rounds=60).fit(X, y)
    logs = [h["log_loss_before"] for h in model.history_]
    assert logs[0] - logs[-1] > 30                          # the scale moved by > e^20
    W, P = model._decoding_weights()
    d = [chain_marginals(x.toarray() @ W, P)[0] - sequence_score(x.toarray() @ W, P, g)
         for x, g in zip(X, y)]
    exact = np.log(np.sum(np.expm1(d)))
    refit = SequenceBoostingTagger(n_rounds=61).fit(X, y)
    assert refit.history_[-1]["log_loss_before"] == pytest.approx(exact, abs=1e-8)


def test_subnormal_feature_values_give_finite_weights():
    """A feature whose bound u is subnormal (values of 5e-324) would need an
    infinite step; it is not chosen, and the weights stay finite (the hostile-
    input fuzzer found coef_ = NaN here)."""
    X = [sp.csr_matrix(np.array([[5e-324], [5e-324]]))]
    model = SequenceBoostingTagger(n_rounds=1).fit(X, [["a", "b"]])
    assert np.isfinite(model.coef_).all() and np.isfinite(model.transition_coef_).all()
    assert set(model.predict(X)[0]) <= {"a", "b"}

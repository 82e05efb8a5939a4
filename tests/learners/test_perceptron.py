"""The k-best structured perceptron: what it must learn, and its exact updates."""
import numpy as np
import pytest
import scipy.sparse as sp

from sklstruct.chain import emission_scores, joint_feature, kbest_decode
from sklstruct import StructuredPerceptronTagger
from _oracles import chain_zeros, random_problem, separable_problem


def reference_perceptron(X, y, n_labels, k, epochs, order=1):
    """Algorithm 4 of Mancev & Todorovic (perceptron lines), written plainly:
    returns the final weights and the average of the weights after every
    example."""
    F = X[0].shape[1]
    W, P = np.zeros((F, n_labels)), chain_zeros(n_labels, order)
    W_avg, P_avg, seen = np.zeros_like(W), np.zeros_like(P), 0
    for _ in range(epochs):
        for x, gold in zip(X, y):
            paths, _ = kbest_decode(emission_scores(x, W), P, k)
            Fg_W, Fg_P = joint_feature(x, gold, n_labels, order)
            for path in paths:
                if np.array_equal(path, gold):
                    continue
                Fp_W, Fp_P = joint_feature(x, path, n_labels, order)
                dW, dP = Fg_W - Fp_W, Fg_P - Fp_P
                if (W * dW).sum() + (P * dP).sum() <= 0:  # eq. 36: y in Err_w
                    W, P = W + dW, P + dP
            W_avg, P_avg, seen = W_avg + W, P_avg + P, seen + 1
    return (W, P), (W_avg / seen, P_avg / seen)


@pytest.mark.parametrize("k", [1, 2, 4])
@pytest.mark.parametrize("average", [False, True])
@pytest.mark.parametrize("order", [1, 2])
def test_matches_reference_implementation(k, average, order):
    X, y = random_problem()
    model = StructuredPerceptronTagger(k=k, max_iter=3, shuffle=False, average=average,
                                       order=order).fit(X, y)
    final, averaged = reference_perceptron(X, y, 3, k, 3, order)
    W, P = averaged if average else final
    np.testing.assert_allclose(model.coef_, W.T, atol=1e-9)
    np.testing.assert_allclose(model._decoding_weights()[1], P, atol=1e-9)


def test_hand_computed_first_update():
    # one sentence, two tokens, features [1, 0] and [1, 2]; gold labels (1, 0).
    # With w = 0 every sequence ties and Viterbi returns (0, 0) (lowest labels).
    # w . dF = 0 <= 0, so w <- dF = F(x, (1, 0)) - F(x, (0, 0)):
    #   emission: token 0 moves its features [1, 0] from label 0 to label 1
    #   transitions: +1 for 1->0, -1 for 0->0; start: +1 for 1, -1 for 0; end unchanged.
    x = sp.csr_matrix(np.array([[1.0, 0.0], [1.0, 2.0]]))
    model = StructuredPerceptronTagger(max_iter=1, average=False, shuffle=False).fit([x], [[1, 0]])
    np.testing.assert_allclose(model.coef_, [[-1.0, 0.0], [1.0, 0.0]])
    np.testing.assert_allclose(model.transition_coef_, [[-1.0, 0.0], [1.0, 0.0]])
    np.testing.assert_allclose(model.start_coef_, [-1.0, 1.0])
    np.testing.assert_allclose(model.end_coef_, [0.0, 0.0])
    assert model.history_[0]["mistakes"] == 1 and model.history_[0]["updates"] == 1


def test_repeated_features_counted_exactly():
    # the same feature twice in a token (duplicate CSR entries) counts twice
    x = sp.csr_matrix((np.array([1.0, 1.0]), np.array([0, 0]), np.array([0, 2])), shape=(1, 1))
    model = StructuredPerceptronTagger(average=False).partial_fit([x], [["b"]], classes=["a", "b"])
    # labels a < b; prediction a; update moves 2 units of feature 0 from a to b
    np.testing.assert_allclose(model.coef_, [[-2.0], [2.0]])


@pytest.mark.parametrize("k", [1, 3])
def test_separable_toy_problem_reaches_zero_training_error(k):
    X, y = separable_problem()
    model = StructuredPerceptronTagger(k=k, max_iter=50, random_state=0).fit(X, y)
    assert model.history_[-1]["mistakes"] == 0
    assert model.score(X, y) == 1.0
    assert all(np.array_equal(p, t) for p, t in zip(model.predict(X), y))


def test_kbest_perceptron_updates_several_sequences():
    X, y = random_problem(seed=3)
    one = StructuredPerceptronTagger(k=1, max_iter=1, shuffle=False).fit(X, y)
    five = StructuredPerceptronTagger(k=5, max_iter=1, shuffle=False).fit(X, y)
    assert five.history_[0]["updates"] > one.history_[0]["updates"]


def test_random_state_reproducible_and_shuffle_matters():
    X, y = random_problem(n=40, seed=5)
    a = StructuredPerceptronTagger(max_iter=3, random_state=7).fit(X, y)
    b = StructuredPerceptronTagger(max_iter=3, random_state=7).fit(X, y)
    c = StructuredPerceptronTagger(max_iter=3, random_state=8).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert not np.array_equal(a.coef_, c.coef_)


def test_warm_start_continues_training():
    X, y = random_problem(seed=4)
    full = StructuredPerceptronTagger(max_iter=4, shuffle=False).fit(X, y)
    warm = StructuredPerceptronTagger(max_iter=2, shuffle=False, warm_start=True).fit(X, y)
    warm.fit(X, y)
    assert warm.n_iter_ == 4
    np.testing.assert_allclose(warm.coef_, full.coef_)
    cold = StructuredPerceptronTagger(max_iter=2, shuffle=False).fit(X, y).fit(X, y)
    assert cold.n_iter_ == 2


def test_partial_fit_equals_epochs():
    X, y = random_problem(seed=6)
    full = StructuredPerceptronTagger(max_iter=3, shuffle=False).fit(X, y)
    part = StructuredPerceptronTagger(shuffle=False)
    for _ in range(3):
        part.partial_fit(X, y)
    np.testing.assert_allclose(part.coef_, full.coef_)
    np.testing.assert_allclose(part.transition_coef_, full.transition_coef_)


def test_partial_fit_classes_and_unseen_labels():
    X, y = random_problem(seed=6)
    y_str = [np.array(["a", "b", "c"])[t] for t in y]
    only_a = [np.array(["a"] * len(t)) for t in y_str]
    model = StructuredPerceptronTagger().partial_fit(X, only_a, classes=["a", "b", "c"])
    model.partial_fit(X, y_str)
    assert list(model.classes_) == ["a", "b", "c"]
    fresh = StructuredPerceptronTagger().partial_fit(X, only_a)
    with pytest.raises(ValueError, match="not seen"):
        fresh.partial_fit(X, y_str)


def test_predict_kbest():
    X, y = random_problem(seed=7)
    model = StructuredPerceptronTagger(max_iter=2, random_state=0).fit(X, y)
    result = model.predict_kbest(X[:5], k=3)
    preds = model.predict(X[:5])
    for (seqs, scores), pred in zip(result, preds):
        np.testing.assert_array_equal(seqs[0], pred)
        assert np.all(np.diff(scores) <= 1e-12)
        assert len(seqs) == min(3, 3 ** len(pred))


def test_dense_input_and_integer_labels():
    X, y = random_problem(seed=8)
    dense = [x.toarray() for x in X]
    a = StructuredPerceptronTagger(max_iter=2, random_state=0).fit(dense, y)
    b = StructuredPerceptronTagger(max_iter=2, random_state=0).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.predict(dense)[0].dtype.kind == "i"


def test_verbose_prints_one_progress_line_per_epoch(capsys):
    X, y = random_problem(seed=4)
    model = StructuredPerceptronTagger(max_iter=2, verbose=1, random_state=0).fit(X, y)
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2
    for line, record in zip(out, model.history_):
        assert line.startswith(f"-- Epoch {record['epoch']}: mistakes {record['mistakes']}/")
        assert f"updates {record['updates']}, " in line and line.endswith(" s")


def test_update_rules_take_their_own_parameters_only():
    """A rule's row names its parameters: an unknown one is refused, one left
    out takes the row's default."""
    from sklstruct._chain import ChainWeights
    from sklstruct.chain import as_stacked
    from sklstruct.learners._online import RULES, online_epoch
    X, y = random_problem(seed=5)
    data, gold = as_stacked(X).chain_data(), np.concatenate(y).astype(np.int32)
    order = np.arange(len(X), dtype=np.int64)
    assert [name for name, *_ in RULES["pa"].params] == ["C"]
    with pytest.raises(ValueError, match="unknown parameters \\['gamma'\\]"):
        online_epoch(data, gold, order, ChainWeights(data.n_features, 3), "pa", 1,
                     gamma="wm")
    with pytest.raises(ValueError, match="unknown update rule"):
        online_epoch(data, gold, order, ChainWeights(data.n_features, 3), "adagrad", 1)
    a, b = ChainWeights(data.n_features, 3), ChainWeights(data.n_features, 3)
    online_epoch(data, gold, order, a, "mira", 2)
    online_epoch(data, gold, order, b, "mira", 2, C=1.0, tol=1e-6, max_smo_steps=1000)
    np.testing.assert_array_equal(a.W, b.W)
    np.testing.assert_array_equal(a.P, b.P)

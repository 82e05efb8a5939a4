"""k-best passive-aggressive, restricted PA and k-best MIRA: exact updates and learning."""
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize
from sklearn.base import clone

from sklstruct import KBestMIRATagger, PassiveAggressiveTagger, SequenceVectorizer
from sklstruct._qp import solve_simplex_qp
from sklstruct.chain import emission_scores, joint_feature, kbest_decode, viterbi_decode
from sklstruct.datasets import make_chunking_corpus
from _oracles import chain_zeros, random_problem, separable_problem


def zero_one_kbest(E, P, gold, k):
    """The k best of w.F + [y != gold], from the k + 1 best by score."""
    paths, scores = kbest_decode(E, P, k + 1)
    wrong = np.array([not np.array_equal(p, gold) for p in paths])
    order = np.argsort(-(scores + wrong), kind="stable")[:k]
    return paths[order]


def reference_pa(X, y, n_labels, k, C, epochs, restricted=False, cost="hamming",
                 loss_augmented=True, order=1):
    """Algorithm 4 of Mancev & Todorovic (PA / RPA lines), plainly, with averaging."""
    F = X[0].shape[1]
    W, P = np.zeros((F, n_labels)), chain_zeros(n_labels, order)
    W_avg, P_avg, seen = np.zeros_like(W), np.zeros_like(P), 0

    def loss(gold, path):
        h = np.sum(gold != path)
        return float(h > 0) if cost == "zero_one" else float(h)

    for _ in range(epochs):
        for x, gold in zip(X, y):
            E = emission_scores(x, W)
            if not loss_augmented:
                paths, _ = kbest_decode(E, P, k)
            elif cost == "zero_one":
                paths = zero_one_kbest(E, P, gold, k)
            else:
                paths, _ = kbest_decode(E, P, k, gold=gold, cost=1.0)
            Fg = joint_feature(x, gold, n_labels, order)
            for path in paths:
                if np.array_equal(path, gold):
                    continue
                Fp = joint_feature(x, path, n_labels, order)
                dW, dP = Fg[0] - Fp[0], Fg[1] - Fp[1]
                ell = loss(gold, path) - (W * dW).sum() - (P * dP).sum()
                if ell <= 0:
                    continue
                if restricted:  # eq. 27: y in A_w
                    y_hat, _ = viterbi_decode(emission_scores(x, W), P)
                    Fh = joint_feature(x, y_hat, n_labels, order)
                    ell_hat = loss(gold, y_hat) - (W * (Fg[0] - Fh[0])).sum() - (P * (Fg[1] - Fh[1])).sum()
                    if ell < ell_hat:
                        continue
                step = min(ell / ((dW ** 2).sum() + (dP ** 2).sum()), C)
                W, P = W + step * dW, P + step * dP
            W_avg, P_avg, seen = W_avg + W, P_avg + P, seen + 1
    return W_avg / seen, P_avg / seen


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("restricted", [False, True])
@pytest.mark.parametrize("cost", ["hamming", "zero_one"])
@pytest.mark.parametrize("order", [1, 2])
def test_pa_matches_reference_implementation(k, restricted, cost, order):
    X, y = random_problem(seed=11)
    model = PassiveAggressiveTagger(k=k, C=0.7, restricted=restricted, cost=cost, max_iter=3,
                                    shuffle=False, order=order).fit(X, y)
    W, P = reference_pa(X, y, 3, k, 0.7, 3, restricted, cost, order=order)
    np.testing.assert_allclose(model.coef_, W.T, atol=1e-9)
    np.testing.assert_allclose(model._decoding_weights()[1], P, atol=1e-9)


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("restricted", [False, True])
def test_prediction_based_pa_matches_reference(k, restricted):
    X, y = random_problem(seed=11)
    model = PassiveAggressiveTagger(k=k, C=0.7, restricted=restricted, loss_augmented=False,
                                    max_iter=3, shuffle=False).fit(X, y)
    W, P = reference_pa(X, y, 3, k, 0.7, 3, restricted, loss_augmented=False)
    np.testing.assert_allclose(model.coef_, W.T, atol=1e-9)
    np.testing.assert_allclose(model._decoding_weights()[1], P, atol=1e-9)
    augmented = PassiveAggressiveTagger(k=k, C=0.7, restricted=restricted, max_iter=3,
                                        shuffle=False).fit(X, y)
    assert not np.allclose(model.coef_, augmented.coef_)


def test_pa_hand_computed_step_with_repeated_features():
    # One token with feature 0 present twice (value 2 after summing) and feature 1
    # once; labels {a, b}; gold b.  With w = 0 the loss-augmented best is (a)
    # (score 0 + Hamming 1 beats gold's 0).  dF: emission +(2, 1) on b, -(2, 1) on
    # a -> squared norm 2 * (4 + 1) = 10; start +1/-1 and end +1/-1 -> 4 more.
    # ||dF||^2 = 14, loss l = 1 - 0 = 1, step = min(1 / 14, C).
    x = sp.csr_matrix((np.array([1.0, 1.0, 1.0]), np.array([0, 0, 1]), np.array([0, 3])), shape=(1, 2))
    model = PassiveAggressiveTagger(C=10.0, average=False).partial_fit([x], [["b"]], classes=["a", "b"])
    step = 1 / 14
    np.testing.assert_allclose(model.coef_, [[-2 * step, -step], [2 * step, step]])
    np.testing.assert_allclose(model.start_coef_, [-step, step])
    capped = PassiveAggressiveTagger(C=0.01, average=False).partial_fit([x], [["b"]], classes=["a", "b"])
    np.testing.assert_allclose(capped.start_coef_, [-0.01, 0.01])


def test_pa_norm_counts_label_differences_at_several_positions():
    # The same feature on two tokens that are both wrong with the same label pair:
    # their emission differences add before squaring: (+2 on b, -2 on a) -> 8.
    x = sp.csr_matrix(np.array([[1.0], [1.0]]))
    model = PassiveAggressiveTagger(C=10.0, average=False).partial_fit([x], [["b", "b"]], classes=["a", "b"])
    # w = 0: loss-augmented best is (a, a) with Hamming 2.  Chain: transitions
    # b->b +1, a->a -1; start and end +1/-1 each -> 6.  ||dF||^2 = 8 + 6 = 14.
    step = 2 / 14
    np.testing.assert_allclose(model.coef_, [[-2 * step], [2 * step]])


def test_mira_k1_is_the_pa_step():
    X, y = random_problem(seed=12)
    pa = PassiveAggressiveTagger(k=1, C=0.5, max_iter=3, shuffle=False).fit(X, y)
    mira = KBestMIRATagger(k=1, C=0.5, tol=1e-12, max_iter=3, shuffle=False).fit(X, y)
    np.testing.assert_allclose(mira.coef_, pa.coef_, atol=1e-10)
    np.testing.assert_allclose(mira.transition_coef_, pa.transition_coef_, atol=1e-10)


def dual_objective(alpha, G, ell):
    return 0.5 * alpha @ G @ alpha - ell @ alpha


@pytest.mark.parametrize("seed", range(30))
def test_mira_solver_matches_scipy(seed):
    rng = np.random.default_rng(seed)
    k, dim = rng.integers(1, 8), rng.integers(1, 6)
    D = rng.normal(size=(k, dim))  # joint-feature differences (possibly dependent)
    G = np.zeros((k + 1, k + 1))
    G[1:, 1:] = D @ D.T
    ell = np.concatenate([[0.0], rng.normal(size=k) * 2])
    C = float(rng.choice([0.1, 1.0, 10.0]))
    alpha = solve_simplex_qp(G, ell, np.r_[C, np.zeros(len(ell) - 1)], tol=1e-12)[0]
    assert np.all(alpha >= -1e-12) and alpha.sum() == pytest.approx(C)
    # independent solver on the primal-side form: a >= 0, sum(a) <= C
    res = minimize(lambda a: dual_objective(np.r_[0, a], G, ell), np.zeros(k),
                   jac=lambda a: (G[1:, 1:] @ a - ell[1:]), method="SLSQP",
                   bounds=[(0, None)] * k,
                   constraints=[{"type": "ineq", "fun": lambda a: C - a.sum(), "jac": lambda a: -np.ones(k)}],
                   options={"ftol": 1e-14, "maxiter": 1000})
    assert dual_objective(alpha, G, ell) <= res.fun + 1e-7
    assert dual_objective(alpha, G, ell) == pytest.approx(res.fun, abs=1e-6)
    # the primal is strictly convex in w, so the weight change is unique: ours
    # must be the independent solver's
    np.testing.assert_allclose(alpha[1:] @ D, res.x @ D, atol=1e-4)


@pytest.mark.parametrize("estimator", [
    PassiveAggressiveTagger(k=1), PassiveAggressiveTagger(k=3, restricted=True),
    PassiveAggressiveTagger(k=2, cost="zero_one"), KBestMIRATagger(k=1), KBestMIRATagger(k=5),
])
def test_separable_toy_problem_reaches_zero_training_error(estimator):
    X, y = separable_problem()
    estimator.set_params(max_iter=30, random_state=0, C=10.0).fit(X, y)
    assert estimator.score(X, y) == 1.0


def test_grid_search_over_C_k_and_max_iter():
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklstruct.metrics import chunk_f1_scorer
    X, y = make_chunking_corpus(240, random_state=4)
    pipe = make_pipeline(SequenceVectorizer(["bias", "word", "pos", "pos[-1]|pos"], window=1),
                         KBestMIRATagger(random_state=0))
    grid = {"kbestmiratagger__C": [0.001, 1.0], "kbestmiratagger__k": [1, 3],
            "kbestmiratagger__max_iter": [1, 4]}
    search = GridSearchCV(pipe, grid, cv=3, scoring=chunk_f1_scorer).fit(X, y)
    assert len(search.cv_results_["params"]) == 8
    assert set(search.best_params_) == set(grid)
    scores = search.cv_results_["mean_test_score"]
    assert search.best_score_ == scores.max() and np.all(scores > 0.3)
    # the settings matter: the grid's scores are not all equal
    assert scores.max() - scores.min() > 0.01
    refit = search.best_estimator_[-1]
    best = {name.split("__")[1]: v for name, v in search.best_params_.items()}
    assert {p: refit.get_params()[p] for p in best} == best
    assert refit.n_iter_ == best["max_iter"]
    # refit: the best setting trained on all the data, exactly as a fresh fit
    fresh = clone(pipe).set_params(**search.best_params_).fit(X, y)
    for a, b in zip(search.predict(X[:20]), fresh.predict(X[:20])):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(refit.coef_, fresh[-1].coef_)


@pytest.mark.parametrize("cls, params, message", [
    (PassiveAggressiveTagger, dict(C=0), "'C' parameter"),
    (PassiveAggressiveTagger, dict(C=-1.0), "'C' parameter"),
    (PassiveAggressiveTagger, dict(cost="hinge"), "'cost' parameter"),
    (PassiveAggressiveTagger, dict(restricted="no"), "'restricted' parameter"),
    (KBestMIRATagger, dict(tol=-1.0), "'tol' parameter"),
    (KBestMIRATagger, dict(k=0), "'k' parameter"),
    (KBestMIRATagger, dict(max_smo_iter=0), "'max_smo_iter' parameter"),
])
def test_bad_parameters(cls, params, message):
    X, y = random_problem(n=5)
    with pytest.raises(ValueError, match=message):
        cls(**params).fit(X, y)

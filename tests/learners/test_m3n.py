"""M3NTagger: SGD with stochastic meta-descent on the M3N objective, its
structured SMO baseline on the factored dual, and the working-set dual solver
(Yu & Lam, Accelerated Training of Maximum Margin Markov Models for Sequence
Labeling, eqs. 4-5, 9-11, 15-18 and Figure 1; Taskar, Guestrin & Koller,
Max-Margin Markov Networks)."""
import itertools
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize
from sklearn.base import clone

from sklstruct import M3NSGDTagger, M3NTagger, PassiveAggressiveTagger
from sklstruct.chain import joint_feature
from _oracles import dF, full_dual_optimum, random_problem, separable_problem, tiny_problem


def enumerate_constraints(X, y, n_labels):
    """Every (example, sequence): dF rows, Hamming costs and their example."""
    rows, costs, owner, paths = [], [], [], []
    for i, (x, gold) in enumerate(zip(X, y)):
        for s in itertools.product(range(n_labels), repeat=len(gold)):
            s = np.array(s)
            rows.append(dF(x, gold, s, n_labels))
            costs.append(float(np.sum(s != gold)))
            owner.append(i)
            paths.append(s)
    return np.array(rows), np.array(costs), np.array(owner), paths


def primal_objective(w, D, costs, owner, n, C):
    """J(w) = 1/2 ||w||^2 + C sum_i max_y [H(y) - w . dF_i(y)] by enumeration."""
    margins = costs - D @ w
    return 0.5 * w @ w + C * sum(max(0.0, margins[owner == i].max()) for i in range(n))


def primal_optimum(X, y, n_labels, C):
    """min over (w, xi) of 1/2 ||w||^2 + C sum xi  s.t.  dF_i(y) . w >= H(y) - xi_i
    for every sequence y (eq. 4), solved by scipy's SLSQP."""
    D, costs, owner, _ = enumerate_constraints(X, y, n_labels)
    d, n = D.shape[1], len(X)

    def f(z):
        return 0.5 * z[:d] @ z[:d] + C * z[d:].sum(), np.r_[z[:d], np.full(n, C)]

    cons = {"type": "ineq", "fun": lambda z: D @ z[:d] - costs + z[d:][owner],
            "jac": lambda z: np.c_[D, np.eye(n)[owner]]}
    res = minimize(f, np.zeros(d + n), jac=True, constraints=[cons],
                   bounds=[(None, None)] * d + [(0, None)] * n, method="SLSQP",
                   options={"ftol": 1e-14, "maxiter": 1000})
    assert res.success, res.message
    return res.fun, res.x[:d]


def weights_of(model):
    return np.concatenate([model.coef_.T.ravel(),
                           np.r_[model.transition_coef_, model.start_coef_[None],
                                 model.end_coef_[None]].ravel()])


# -- the objective -----------------------------------------------------------------------

def test_objective_equals_eq_4_by_enumeration():
    X, y = tiny_problem(3)
    model = M3NTagger(C=0.7, max_iter=3, random_state=0).fit(X, y)
    D, costs, owner, _ = enumerate_constraints(X, y, 2)
    expected = primal_objective(weights_of(model), D, costs, owner, len(X), 0.7)
    assert model.objective(X, y) == pytest.approx(expected, rel=1e-12)
    assert model.objective_curve_[-1] == pytest.approx(expected, rel=1e-12)
    assert len(model.objective_curve_) == model.n_iter_ == 3


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_both_solvers_approach_the_exact_optimum(seed):
    """The optimum of eq. 4 by SLSQP on the primal (and the same value from the
    dual, eq. 5): SMO reaches it; SGD with SMD steps and averaging, and with
    the "optimal" schedule, come within 2% and get closer with more passes."""
    X, y = tiny_problem(seed)
    C = 0.8
    optimum, w_opt = primal_optimum(X, y, 2, C)
    assert full_dual_optimum(X, y, 2, C)[0] == pytest.approx(optimum, rel=1e-6)
    for solver in ["smo", "working_set"]:
        smo = M3NTagger(C=C, solver=solver, tol=1e-10, max_iter=300,
                        random_state=0).fit(X, y)
        assert smo.objective_curve_[-1] == pytest.approx(optimum, rel=1e-7), solver
        np.testing.assert_allclose(weights_of(smo), w_opt, atol=1e-4)
        assert smo.dual_objective_ == pytest.approx(optimum, rel=1e-7)
    for params in [dict(average=True), dict(learning_rate="optimal")]:
        sgd = M3NTagger(C=C, max_iter=300, random_state=0, **params).fit(X, y)
        curve = sgd.objective_curve_
        assert curve.min() >= optimum * (1 - 1e-9)
        assert curve[-1] <= optimum * 1.02, params
        assert curve[-1] < curve[9]


# -- stochastic meta-descent: the held representation against a dense reference --------

def dense_sgd(X, y, n_labels, C, epochs, eta0, mu, smd_lambda, schedule, average):
    """Figure 1 written densely: for each example in order, the loss-augmented
    best y* by enumeration, g = lam w - dF(y*) (or lam w if the hinge is 0),
    eta <- eta max(1/2, 1 - mu g . v), w <- w - eta g,
    v <- smd_lambda v - eta (g + smd_lambda lam v)."""
    D, costs, owner, _ = enumerate_constraints(X, y, n_labels)
    n = len(X)
    lam = 1.0 / (n * C)
    w = np.zeros(D.shape[1])
    v = np.zeros_like(w)
    eta, total, steps = eta0, np.zeros_like(w), 0
    for _ in range(epochs):
        for i in range(n):
            rows = np.flatnonzero(owner == i)
            hinge = costs[rows] - D[rows] @ w
            j = rows[np.argmax(hinge)]
            g = lam * w - (D[j] if hinge.max() > 0 else 0.0)
            if schedule == "smd":
                eta *= max(0.5, 1.0 - mu * g @ v)
            eta = min(eta, 0.5 / lam)
            w_new = w - eta * g
            v = smd_lambda * v - eta * (g + smd_lambda * lam * v)
            w = w_new
            total += w
            steps += 1
    return total / steps if average else w


@pytest.mark.parametrize("schedule, average, mu", [("smd", False, 0.05), ("smd", True, 0.5),
                                                    ("constant", False, 0.0),
                                                    ("constant", True, 0.0)])
def test_sgd_matches_a_dense_implementation_of_figure_1(schedule, average, mu):
    """The scaled sparse representation (w = a W~, v = b V~ + c w, folds,
    lazy averaging) gives the weights of the dense algorithm, step for step."""
    X, y = tiny_problem(5, n=5, max_T=3)
    params = dict(C=0.5, eta0=0.3, mu=mu, smd_lambda=0.9, learning_rate=schedule,
                  average=average)
    model = M3NTagger(max_iter=40, shuffle=False, **params).fit(X, y)
    expected = dense_sgd(X, y, 2, 0.5, 40, 0.3, mu, 0.9, schedule, average)
    np.testing.assert_allclose(weights_of(model), expected, rtol=1e-8, atol=1e-10)
    if schedule == "smd":
        assert model.eta_ != pytest.approx(0.3)      # the step size did adapt


def test_scales_are_folded_without_changing_the_weights():
    """With lam eta close to 1/2 the scale a halves each step and is folded
    into the arrays every ~20 steps; averaging restarts its clock there."""
    X, y = tiny_problem(6, n=3, max_T=3)
    params = dict(C=0.01, eta0=16.0, learning_rate="constant", smd_lambda=0.5)
    for average in (False, True):
        model = M3NTagger(max_iter=30, shuffle=False, average=average, **params).fit(X, y)
        expected = dense_sgd(X, y, 2, 0.01, 30, 16.0, 0.0, 0.5, "constant", average)
        np.testing.assert_allclose(weights_of(model), expected, rtol=1e-8, atol=1e-10)
        # the support-token model folds its coefficients the same way
        ker = M3NTagger(max_iter=30, shuffle=False, average=average, kernel="poly",
                        degree=1, gamma=1.0, coef0=0.0, **params).fit(X, y)
        W = np.asarray(ker.support_vectors_.T @ ker.dual_coef_)
        np.testing.assert_allclose(W, model.coef_.T, rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(ker.transition_coef_, model.transition_coef_,
                                   rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("mu, eta0", [(0.01, 0.1), (10.0, 5.0), (1e4, 1e3)])
def test_smd_step_sizes_stay_positive_and_bounded(mu, eta0):
    X, y = random_problem(n=40, seed=1)
    C = 0.1
    model = M3NTagger(C=C, mu=mu, eta0=eta0, max_iter=10, random_state=0).fit(X, y)
    lam = 1.0 / (len(X) * C)
    for h in model.history_:
        assert 0.0 < h["eta_min"] <= h["eta_max"] <= 0.5 / lam
    assert np.isfinite(model.coef_).all() and np.isfinite(model.objective_curve_).all()


# -- SGD against SMO ---------------------------------------------------------------------

@pytest.mark.parametrize("kernel, C, passes", [
    (dict(), 0.3, 60), (dict(kernel="poly", degree=2, gamma=0.3, coef0=1.0), 0.1, 300)])
def test_sgd_and_smo_reach_the_same_objective_within_one_percent(kernel, C, passes):
    X, y = random_problem(n=60, n_features=8, seed=4)
    smo = M3NTagger(C=C, solver="smo", tol=1e-8, max_iter=passes, random_state=0,
                    **kernel).fit(X, y)
    assert smo.objective_curve_[-1] == pytest.approx(smo.dual_objective_, rel=1e-3)
    sgd = M3NTagger(C=C, average=True, eta0=0.1, mu=0.01, max_iter=150,
                    random_state=0, **kernel).fit(X, y)
    assert sgd.objective_curve_[-1] == pytest.approx(smo.objective_curve_[-1], rel=0.01)
    if not kernel:
        ws = M3NTagger(C=C, solver="working_set", tol=1e-8, max_iter=60,
                       random_state=0).fit(X, y)
        assert ws.objective_curve_[-1] == pytest.approx(smo.objective_curve_[-1], rel=1e-4)


# -- structured SMO on the factored dual -------------------------------------------------

def marginals_of(model, X, y):
    """The node and edge marginals held by an SMO model, per sentence."""
    beta, edge = model._solver.coefs(model), model._edge
    C, out, r = float(model.C), [], 0
    for x, gold in zip(X, y):
        T = len(gold)
        node = C * np.eye(len(model.classes_))[gold] - beta[r:r + T]
        out.append((node, edge[r:r + T]))
        r += T
    return out


def dense_factored_smo(X, y, n_labels, C, epochs, tol, max_steps):
    """Structured SMO written densely over enumerated sequences, sentences in
    order: g(y) = H(y) + w . F(y); y' = argmax g; y = argmin g over the paths
    whose node and edge marginals are all positive; delta = gap / ||F(y) -
    F(y')||^2 clipped at the smallest marginal the move decreases; marginals
    and w updated.  Returns (w, dual objective after each pass)."""
    L, duals = n_labels, []
    D, costs, owner, paths = enumerate_constraints(X, y, L)
    node = [C * np.eye(L)[g] for g in y]
    edge = [np.zeros((len(g), L, L)) for g in y]
    for e, g in zip(edge, y):
        e[np.arange(1, len(g)), g[:-1], g[1:]] = C
    w = np.zeros(D.shape[1])
    for _ in range(epochs):
        for i in range(len(X)):
            rows = np.flatnonzero(owner == i)
            for _ in range(max_steps):
                g = costs[rows] - D[rows] @ w      # H(y) + w . F(y) - w . F(gold)
                hi = rows[np.argmax(g)]
                ok = [j for j in rows
                      if all(node[i][t, paths[j][t]] > 1e-10 * C for t in range(len(y[i])))
                      and all(edge[i][t, paths[j][t - 1], paths[j][t]] > 1e-10 * C
                              for t in range(1, len(y[i])))]
                lo = min(ok, key=lambda j: costs[j] - D[j] @ w)
                gap = (costs[hi] - D[hi] @ w) - (costs[lo] - D[lo] @ w)
                if not gap > tol:
                    break
                a, b = paths[lo], paths[hi]
                bound = min([node[i][t, a[t]] for t in range(len(a)) if a[t] != b[t]]
                            + [edge[i][t, a[t - 1], a[t]] for t in range(1, len(a))
                               if (a[t - 1], a[t]) != (b[t - 1], b[t])])
                diff = D[hi] - D[lo]                  # F(y) - F(y')
                delta = min(gap / (diff @ diff), bound)
                w += delta * diff
                for t in range(len(a)):
                    node[i][t, a[t]] -= delta
                    node[i][t, b[t]] += delta
                    if t:
                        edge[i][t, a[t - 1], a[t]] -= delta
                        edge[i][t, b[t - 1], b[t]] += delta
        gain = sum(np.sum(m * (np.arange(L)[None] != g[:, None])) for m, g in zip(node, y))
        duals.append(gain - 0.5 * w @ w)
    return w, np.array(duals)


@pytest.mark.parametrize("max_steps, tol", [(1, 1e-3), (2000, 1e-11)])
@pytest.mark.parametrize("seed", [11, 12, 13])
def test_structured_smo_takes_the_steps_of_a_dense_implementation(max_steps, tol, seed):
    """One step per visit: step for step.  Steps repeated until the example's
    gap is below tol: the same weights after each visit.  (An exact step
    leaves the pair it moved mass between at equal scores, so a second step
    in the same visit meets ties that Viterbi and enumeration may break
    differently; run to the example's optimum, the weights agree again.)"""
    X, y = tiny_problem(seed, n=5, max_T=4)
    rng = np.random.default_rng(2)
    X = [x.multiply(rng.uniform(0.5, 1.5, x.shape)).tocsr() for x in X]
    C = 0.7
    w, duals = dense_factored_smo(X, y, 2, C, 3, tol, max_steps)
    model = M3NTagger(C=C, solver="smo", max_iter=3, shuffle=False, tol=tol,
                      max_smo_iter=max_steps).fit(X, y)
    np.testing.assert_allclose(weights_of(model), w, atol=1e-10)
    np.testing.assert_allclose([h["dual_objective"] for h in model.history_], duals,
                               rtol=1e-10)
    assert np.all(np.diff(duals) >= -1e-12)


@pytest.mark.parametrize("passes, max_steps", [(1, 2), (3, 2), (3, 1000)])
def test_factored_dual_holds_feasible_marginals_that_give_the_weights(passes, max_steps):
    """After any number of passes (not only at the optimum): the marginals are
    non-negative and consistent (edge rows and columns sum to the node
    marginals, each position to C); w = C F(gold) - sum marginals . features
    is the published model; eq. 5 computed from them is dual_objective_, at
    most J; and the dual never decreases from pass to pass."""
    X, y = tiny_problem(5, n=6, max_T=4)
    C = 0.9
    model = M3NTagger(C=C, solver="smo", max_iter=1, random_state=0, warm_start=True,
                      max_smo_iter=max_steps)
    duals = []
    for _ in range(passes):
        model.fit(X, y)
        duals.append(model.dual_objective_)
    assert np.all(np.diff(duals) >= -1e-12)
    L = len(model.classes_)
    w, gain = 0.0, 0.0
    for x, gold, (node, edge) in zip(X, y, marginals_of(model, X, y)):
        assert node.min() >= -1e-12 and edge.min() >= -1e-12
        np.testing.assert_allclose(node.sum(axis=1), C, atol=1e-12)
        np.testing.assert_allclose(edge[1:].sum(axis=2), node[:-1], atol=1e-12)
        np.testing.assert_allclose(edge[1:].sum(axis=1), node[1:], atol=1e-12)
        # w = sum_y alpha(y) dF(y), written through the marginals
        xd = np.asarray(x.todense())
        Fg = joint_feature(x, gold, L)
        W = Fg[0] * C - xd.T @ node
        trans = C * Fg[1][:L] - edge[1:].sum(axis=0)
        start = C * Fg[1][L] - node[0]
        end = C * Fg[1][L + 1] - node[-1]
        w = w + np.concatenate([W.ravel(), trans.ravel(), start, end])
        gain += np.sum(node * (np.arange(L)[None] != np.asarray(gold)[:, None]))
    np.testing.assert_allclose(weights_of(model), w, atol=1e-10)
    assert model.dual_objective_ == pytest.approx(gain - 0.5 * w @ w, rel=1e-10)
    assert model.dual_objective_ <= model.objective(X, y) + 1e-10


def test_smo_kernel_with_the_linear_product_is_the_explicit_model():
    """kernel='poly' with degree 1, gamma 1, coef0 0 is <a, b>: with one step
    per visit the kernel SMO takes the explicit model's steps; run to the
    optimum, both reach the same (unique) weights."""
    X, y = random_problem(n=40, seed=5)
    rng = np.random.default_rng(0)
    X = [x.multiply(rng.uniform(0.5, 1.5, x.shape)).tocsr() for x in X]
    linear = dict(kernel="poly", degree=1, gamma=1.0, coef0=0.0)
    common = dict(solver="smo", max_iter=6, random_state=0, C=0.5, max_smo_iter=1)
    lin = M3NTagger(**common).fit(X, y)
    ker = M3NTagger(**linear, **common).fit(X, y)
    np.testing.assert_allclose(ker.objective_curve_, lin.objective_curve_, rtol=1e-9)
    assert ker.dual_objective_ == pytest.approx(lin.dual_objective_, rel=1e-9)
    assert [h["smo_steps"] for h in ker.history_] == [h["smo_steps"] for h in lin.history_]
    common.update(max_iter=150, max_smo_iter=1000, tol=1e-9)
    lin = M3NTagger(**common).fit(X, y)
    ker = M3NTagger(**linear, **common).fit(X, y)
    assert ker.objective_curve_[-1] == pytest.approx(lin.objective_curve_[-1], rel=1e-6)
    assert lin.dual_objective_ == pytest.approx(lin.objective_curve_[-1], rel=1e-6)
    W = np.asarray(ker.support_vectors_.T @ ker.dual_coef_)
    np.testing.assert_allclose(W, lin.coef_.T, atol=1e-3)


def test_smo_quadratic_kernel_reaches_the_optimum_of_its_explicit_feature_map():
    X, y = tiny_problem(3, n=5, max_T=3)
    common = dict(solver="smo", tol=1e-10, max_iter=200, random_state=0, C=0.6)
    ker = M3NTagger(kernel="poly", degree=2, gamma=0.5, coef0=1.5, **common).fit(X, y)
    Phi = poly2_map(X, 0.5, 1.5)
    optimum, _ = primal_optimum(Phi, y, 2, 0.6)
    assert ker.objective_curve_[-1] == pytest.approx(optimum, rel=1e-7)
    assert ker.dual_objective_ == pytest.approx(optimum, rel=1e-7)


@pytest.mark.parametrize("C", [1e6, 1e13, 1e20])
def test_smo_steps_stay_exact_when_the_exact_step_is_huge(C):
    """Tiny features and a huge C make gap / ||dF||^2 far larger than 1e12:
    the step is still the exact one, clipped at the bound, and the dual
    rises to J (a found review case: the dual fell to -1e24 at C = 1e20)."""
    X = [sp.csr_matrix([[2e-8, 1e-8], [2e-8, 2e-8], [1e-8, 2e-8], [2e-8, 2e-8],
                        [1e-8, 2e-8]])]
    y = [np.array([0, 2, 1, 2, 2])]
    model = M3NTagger(C=C, solver="smo", max_iter=1, shuffle=False, tol=0.0,
                      max_smo_iter=20, warm_start=True)
    duals = []
    for _ in range(3):
        duals.append(model.fit(X, y).dual_objective_)
    assert duals[0] >= 0.0 and np.all(np.diff(duals) >= -1e-9 * abs(duals[-1]))
    assert duals[-1] <= model.objective_curve_[-1] * (1 + 1e-9)


def test_smo_state_is_dropped_unless_training_continues():
    X, y = random_problem(n=20, seed=3)
    model = M3NTagger(solver="smo", max_iter=2, random_state=0).fit(X, y)
    assert model.kkt_gap_ >= 0 and hasattr(model, "_edge")
    for copy in (pickle.loads(pickle.dumps(model)), model.astype(np.float32)):
        assert not any(hasattr(copy, name) for name in ("_edge", "_beta", "_C",
                                                        "_train_labels"))
        np.testing.assert_array_equal(np.concatenate(copy.predict(X)),
                                      np.concatenate(model.predict(X)))
    resumable = M3NTagger(solver="smo", max_iter=1, warm_start=True).fit(X, y)
    assert hasattr(pickle.loads(pickle.dumps(resumable)), "_edge")
    model.set_params(solver="sgd").fit(X, y)
    assert not any(hasattr(model, name) for name in ("kkt_gap_", "dual_objective_", "_edge"))
    with pytest.raises(ValueError, match="average=True"):
        M3NTagger(solver="smo", average=True).fit(X, y)
    with pytest.raises(ValueError, match="max_smo_iter"):
        M3NTagger(solver="smo", max_smo_iter=2 ** 70).fit(X, y)
    before = model.coef_.copy()
    with pytest.raises(ValueError, match="non-finite"):
        M3NTagger(solver="smo", kernel="poly", degree=10, gamma=1e5).fit(
            [x * 1e40 for x in X], y)
    np.testing.assert_array_equal(model.coef_, before)


def test_smo_refuses_a_second_order_chain_and_working_set_a_kernel():
    X, y = random_problem(n=10)
    with pytest.raises(ValueError, match="first-order"):
        M3NTagger(solver="smo", order=2).fit(X, y)
    with pytest.raises(ValueError, match="linear kernel only"):
        M3NTagger(solver="working_set", kernel="poly").fit(X, y)
    long = sp.csr_matrix((10_001, X[0].shape[1]))
    with pytest.raises(ValueError, match="longest sentence has 10001 tokens"):
        M3NTagger(solver="smo").fit(X + [long], y + [np.zeros(10_001, dtype=int)])


# -- learning ----------------------------------------------------------------------------

@pytest.mark.parametrize("params", [dict(), dict(learning_rate="optimal"),
                                    dict(solver="smo"), dict(solver="working_set"),
                                    dict(solver="smo", kernel="poly"), dict(order=2)])
def test_separable_problem_reaches_zero_training_error(params):
    X, y = separable_problem()
    model = M3NTagger(C=10.0, max_iter=30, random_state=0, **params).fit(X, y)
    assert model.score(X, y) == 1.0


@pytest.mark.parametrize("solver", ["sgd", "smo", "working_set"])
def test_warm_start_continues_exactly(solver):
    X, y = random_problem(n=30, seed=2)
    once = M3NTagger(solver=solver, max_iter=5, random_state=0).fit(X, y)
    twice = M3NTagger(solver=solver, max_iter=2, random_state=0, warm_start=True).fit(X, y)
    twice = pickle.loads(pickle.dumps(twice))
    twice.set_params(max_iter=3).fit(X, y)
    np.testing.assert_allclose(twice.coef_, once.coef_, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(twice.objective_curve_, once.objective_curve_, rtol=1e-12)
    with pytest.raises(ValueError, match="solver"):
        twice.set_params(solver={"sgd": "smo", "smo": "sgd", "working_set": "smo"}[solver]
                         ).fit(X, y)


@pytest.mark.parametrize("params", [dict(solver="smo"), dict(solver="working_set"),
                                    dict(solver="smo", kernel="tanh", gamma=0.1)])
def test_dual_solvers_refuse_another_training_set_or_C_when_continuing(params):
    X, y = random_problem(n=30, seed=2)
    model = M3NTagger(max_iter=1, warm_start=True, **params).fit(X, y)
    before = model.objective_curve_.copy()
    model = pickle.loads(pickle.dumps(model))
    model.fit(X, y)
    np.testing.assert_array_equal(model.objective_curve_[:1], before)
    with pytest.raises(ValueError, match="same training set"):
        model.fit(X[:-1], y[:-1])
    with pytest.raises(ValueError, match="C"):
        model.set_params(C=2.0).fit(X, y)


def test_verbose_reports_objective_step_sizes_and_time(capsys):
    X, y = random_problem(n=20)
    M3NTagger(max_iter=2, verbose=1, random_state=0).fit(X, y)
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 and all("objective" in line and "eta" in line and " s" in line
                                 for line in out)
    M3NTagger(solver="smo", max_iter=1, verbose=1).fit(X, y)
    out = capsys.readouterr().out
    assert "SMO steps" in out and "KKT gap" in out


def test_same_random_state_same_model_and_sgd_close_to_pa():
    X, y = random_problem(n=80, seed=3)
    a = M3NTagger(max_iter=5, random_state=7).fit(X, y)
    b = M3NTagger(max_iter=5, random_state=7).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    pa = PassiveAggressiveTagger(max_iter=5, random_state=7).fit(X, y)
    assert a.score(X, y) >= pa.score(X, y) - 0.1


# -- kernels (eqs. 6-8) on support tokens ------------------------------------------------

def poly2_map(X, gamma, coef0):
    """The explicit feature map of (gamma <a, b> + coef0)^2 per token:
    phi(a) = (gamma a (x) a, sqrt(2 gamma coef0) a, coef0)."""
    out = []
    for x in X:
        x = np.asarray(x.todense())
        outer = gamma * np.einsum("ti,tj->tij", x, x).reshape(len(x), -1)
        out.append(sp.csr_matrix(np.c_[outer, np.sqrt(2 * gamma * coef0) * x,
                                       np.full(len(x), coef0)]))
    return out


def kernel_matrix(A, B, kernel, gamma, coef0, degree):
    Z = np.asarray((A @ B.T).todense()) if sp.issparse(A) else A @ B.T
    return (gamma * Z + coef0) ** degree if kernel == "poly" else np.tanh(gamma * Z + coef0)


@pytest.mark.parametrize("params", [dict(), dict(average=True), dict(learning_rate="optimal"),
                                    dict(learning_rate="constant", average=True),
                                    dict(order=2), dict(smd_lambda=0.5)])
def test_linear_kernel_on_support_tokens_is_the_explicit_linear_model(params):
    """kernel='poly' with degree 1, gamma 1, coef0 0 is <a, b>: the support-token
    model takes exactly the steps of the explicit one (SMD included), and
    sum_j x_j dual_coef_j is its weight matrix."""
    X, y = random_problem(n=40, seed=5)
    rng = np.random.default_rng(0)      # real values: no exact ties between scores
    X = [x.multiply(rng.uniform(0.5, 1.5, x.shape)).tocsr() for x in X]
    common = dict(max_iter=8, random_state=0, eta0=0.1, mu=0.01, **params)
    lin = M3NTagger(**common).fit(X, y)
    ker = M3NTagger(kernel="poly", degree=1, gamma=1.0, coef0=0.0, **common).fit(X, y)
    np.testing.assert_allclose(ker.objective_curve_, lin.objective_curve_, rtol=1e-9)
    W = np.asarray(ker.support_vectors_.T @ ker.dual_coef_)
    np.testing.assert_allclose(W, lin.coef_.T, atol=1e-10)
    np.testing.assert_allclose(ker.transition_coef_, lin.transition_coef_, atol=1e-10)
    for a, b in zip(ker.predict(X), lin.predict(X)):
        np.testing.assert_array_equal(a, b)
    assert ker.n_support_ == len(ker.support_) == ker.support_vectors_.shape[0] > 0
    assert not hasattr(ker, "coef_")


@pytest.mark.parametrize("params", [dict(), dict(average=True), dict(learning_rate="invscaling")])
def test_quadratic_kernel_equals_linear_model_on_its_explicit_feature_map(params):
    """(gamma <a, b> + coef0)^2 = <phi(a), phi(b)>: the kernel model on X and the
    explicit linear model on phi(X) follow the same objective curve and predict
    alike (SMD's ||dF||^2, dF . V~ and W~ . V~ through the kernel included)."""
    X, y = random_problem(n=30, n_features=4, seed=6)
    common = dict(max_iter=6, random_state=0, eta0=0.01, mu=0.01, **params)
    ker = M3NTagger(kernel="poly", degree=2, gamma=0.5, coef0=1.5, **common).fit(X, y)
    Phi = poly2_map(X, 0.5, 1.5)
    lin = M3NTagger(**common).fit(Phi, y)
    np.testing.assert_allclose(ker.objective_curve_, lin.objective_curve_, rtol=1e-8)
    for a, b in zip(ker.predict(X), lin.predict(Phi)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kernel, gamma, coef0, degree", [("poly", 0.7, 1.0, 3),
                                                          ("tanh", 0.1, -0.2, 2)])
def test_kernel_scores_and_objective_against_brute_force(kernel, gamma, coef0, degree):
    """Emission scores sum_j dual_coef_j k(x_t, x_j), Viterbi over them by
    enumeration, and J = 1/2 (sum_y b_y' K b_y + ||chain||^2) + C sum hinge."""
    X, y = tiny_problem(7, n=6, max_T=3)
    model = M3NTagger(kernel=kernel, gamma=gamma, coef0=coef0, degree=degree, C=0.5,
                      max_iter=4, random_state=0, eta0=0.05).fit(X, y)
    S, B = model.support_vectors_, model.dual_coef_
    P = np.r_[model.transition_coef_, model.start_coef_[None], model.end_coef_[None]]
    hinge = 0.0
    for x, gold in zip(X, y):
        E = kernel_matrix(x, S, kernel, gamma, coef0, degree) @ B
        paths = [np.array(p) for p in itertools.product(range(2), repeat=len(gold))]

        def score(p):
            return (E[np.arange(len(p)), p].sum() + P[p[:-1], p[1:]].sum()
                    + P[2, p[0]] + P[3, p[-1]])
        best = max(paths, key=score)
        np.testing.assert_array_equal(model.predict([x])[0], best)
        hinge += max(max(score(p) + np.sum(p != gold) for p in paths) - score(gold), 0.0)
    K = kernel_matrix(S, S, kernel, gamma, coef0, degree)
    expected = 0.5 * (np.sum(B * (K @ B)) + np.sum(P ** 2)) + 0.5 * hinge
    assert model.objective(X, y) == pytest.approx(expected, rel=1e-10)
    assert model.objective_curve_[-1] == pytest.approx(expected, rel=1e-10)


def test_kernel_model_pickles_warm_starts_and_refuses_what_it_cannot_do():
    X, y = random_problem(n=30, seed=8)
    once = M3NTagger(kernel="poly", max_iter=4, random_state=0, eta0=0.01).fit(X, y)
    twice = M3NTagger(kernel="poly", max_iter=2, random_state=0, eta0=0.01,
                      warm_start=True).fit(X, y)
    twice = pickle.loads(pickle.dumps(twice))
    twice.fit(X, y)
    np.testing.assert_allclose(twice.objective_curve_, once.objective_curve_, rtol=1e-12)
    np.testing.assert_allclose(twice.dual_coef_, once.dual_coef_, rtol=1e-12)
    for a, b in zip(pickle.loads(pickle.dumps(once)).predict(X), once.predict(X)):
        np.testing.assert_array_equal(a, b)
    # after a prediction too (its cached support index is not pickled)
    for a, b in zip(pickle.loads(pickle.dumps(once)).predict(X), once.predict(X)):
        np.testing.assert_array_equal(a, b)
    # prediction and the objective use the fitted kernel, whatever the parameters say now
    expected, J = once.predict(X), once.objective(X, y)
    once.set_params(gamma=7.0, degree=3, kernel="linear")
    for a, b in zip(once.predict(X), expected):
        np.testing.assert_array_equal(a, b)
    assert once.objective(X, y) == J
    once.set_params(gamma=1.0, degree=2, kernel="poly")
    with pytest.raises(ValueError, match="kernel"):
        twice.set_params(degree=3).fit(X, y)
    with pytest.raises(ValueError, match="same training set"):
        twice.set_params(degree=2).fit(X[:-1], y[:-1])
    with pytest.raises(ValueError, match="linear kernel only"):
        M3NTagger(kernel="tanh", solver="working_set").fit(X, y)
    # a kernel that overflows: a clear error, the model as it was
    before = once.dual_coef_.copy()
    with pytest.raises(ValueError, match="non-finite"):
        once.set_params(gamma=1e5, degree=10, warm_start=False).fit(
            [x * 1e30 for x in X], y)
    np.testing.assert_array_equal(once.dual_coef_, before)


def test_nystroem_per_token_in_a_pipeline_is_the_kernel_model_on_training_tokens():
    """TokenTransformer(Nystroem) with one component per training token is an
    exact feature map of the kernel on those tokens (K K^+ K = K), so the
    linear model behind it follows the kernel model's objective curve."""
    from sklearn.kernel_approximation import Nystroem, PolynomialCountSketch
    from sklearn.pipeline import make_pipeline

    from sklstruct import TokenTransformer

    X, y = random_problem(n=25, n_features=5, seed=9)
    rng = np.random.default_rng(1)
    X = [x.multiply(rng.uniform(0.5, 1.5, x.shape)).tocsr() for x in X]
    n_tokens = sum(x.shape[0] for x in X)
    kernel = dict(degree=2, gamma=0.5, coef0=1.0)
    common = dict(max_iter=5, random_state=0, eta0=0.01, mu=0.01)
    ker = M3NTagger(kernel="poly", **kernel, **common).fit(X, y)
    pipe = make_pipeline(
        TokenTransformer(Nystroem(kernel="poly", n_components=n_tokens, random_state=0,
                                  **kernel)),
        M3NTagger(**common)).fit(X, y)
    np.testing.assert_allclose(pipe[-1].objective_curve_, ker.objective_curve_, rtol=1e-6)
    for a, b in zip(pipe.predict(X), ker.predict(X)):
        np.testing.assert_array_equal(a, b)
    # the sketch is an approximation: it trains and predicts like any pipeline
    sketch = make_pipeline(TokenTransformer(PolynomialCountSketch(degree=2, n_components=64,
                                                                  random_state=0)),
                           M3NTagger(**common)).fit(X, y)
    assert len(sketch.predict(X)) == len(X)
    with pytest.raises(TypeError, match="fit and transform"):
        TokenTransformer("nystroem").fit(X)


def test_inspection_of_a_kernel_model_says_what_applies():
    from sklstruct.inspection import state_features, transition_features

    X, y = random_problem(n=20, seed=10)
    model = M3NTagger(kernel="poly", max_iter=2, random_state=0, eta0=0.01).fit(X, y)
    assert len(transition_features(model)) == len(model.classes_) ** 2
    with pytest.raises(ValueError, match="kernel expansion"):
        state_features(model)


# -- the deprecated name -----------------------------------------------------------------

def test_m3nsgdtagger_is_a_deprecated_alias_of_m3ntagger():
    X, y = random_problem(n=20, seed=1)
    params = dict(C=0.5, solver="smo", max_iter=2, random_state=0)
    with pytest.warns(FutureWarning, match="deprecated in favour of M3NTagger"):
        old = M3NSGDTagger(**params)
    assert isinstance(old, M3NTagger)
    assert old.get_params() == M3NTagger(**params).get_params()
    with pytest.warns(FutureWarning):
        copy = clone(old)
    assert type(copy) is M3NSGDTagger and copy.get_params() == old.get_params()
    new = M3NTagger(**params).fit(X, y)
    np.testing.assert_array_equal(old.fit(X, y).coef_, new.coef_)
    assert pickle.loads(pickle.dumps(old)).score(X, y) == new.score(X, y)


def test_smd_lambda_zero_is_refused_and_tiny_lambda_keeps_learning():
    """smd_lambda=0 divided by zero in the scaled SMD vector: the step size
    halved at every step and nothing was learned, silently."""
    X, y = random_problem(n=30, seed=2)
    with pytest.raises(ValueError, match="smd_lambda"):
        M3NTagger(smd_lambda=0).fit(X, y)
    model = M3NTagger(smd_lambda=1e-300, max_iter=5, random_state=0).fit(X, y)
    assert np.isfinite(model.coef_).all()
    assert min(h["eta_min"] for h in model.history_) > 0.03 / 2      # eta0 = 0.03


def test_a_kernel_model_that_has_predicted_deep_copies():
    """The support index cached by the first prediction holds kernel objects
    that cannot be copied: deepcopy raised a raw Cython pickling error, also
    for a Pipeline or a ConstrainedTagger holding the model."""
    import copy

    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    from sklstruct import ConstrainedTagger

    X, y = random_problem(n=20, seed=3)
    model = M3NTagger(kernel="poly", max_iter=2, random_state=0).fit(X, y)
    expected = model.predict(X)
    for holder in (model, make_pipeline(FunctionTransformer(), model),
                   ConstrainedTagger(model).fit(X, y)):
        holder.predict(X)
        twin = copy.deepcopy(holder)
        for a, b in zip(twin.predict(X), holder.predict(X)):
            np.testing.assert_array_equal(a, b)
    for a, b in zip(copy.deepcopy(model).predict(X), expected):
        np.testing.assert_array_equal(a, b)


def test_a_kernel_model_predicts_from_several_threads_at_once():
    """One-range predictions used the cached support index's scratch, shared
    by callers' threads with the GIL released: wrong labels, and later serial
    predictions changed."""
    from concurrent.futures import ThreadPoolExecutor

    X, y = random_problem(n=60, seed=4)
    model = M3NTagger(kernel="poly", max_iter=2, random_state=0).fit(X, y)
    expected = [p.tolist() for p in model.predict(X)]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: [p.tolist() for p in model.predict(X)], range(64)))
    assert all(r == expected for r in results)
    assert [p.tolist() for p in model.predict(X)] == expected

"""L1 regularisation: OWL-QN (sklstruct.optimize.owlqn) on its own, against
finite differences and an independent solver, and CRFTagger(l1_ratio=)
built on it.  The comparison with CRFsuite's weights is in
tests/api/test_compat.py (it needs CRFsuite's model: no start or end weights)."""
import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import expit

from sklstruct import CRFTagger
from sklstruct.optimize import lbfgs, owlqn, pseudo_gradient
from _oracles import random_problem


def logistic(A, b, C):
    """``C * sum(log(1 + exp(-b_i a_i . w)))`` and its gradient."""
    def fun(w):
        z = b * (A @ w)
        value = C * float(np.sum(np.logaddexp(0.0, -z)))
        grad = -C * (A.T @ (b * expit(-z)))
        return value, grad
    return fun


def logistic_problem(seed=0, n=60, d=12):
    rng = np.random.RandomState(seed)
    A = rng.randn(n, d)
    w_true = np.where(rng.rand(d) < 0.4, rng.randn(d) * 2, 0.0)
    b = np.where(A @ w_true + 0.5 * rng.randn(n) > 0, 1.0, -1.0)
    return A, b


def split_reference(fun, d, c):
    """min f(w) + c ||w||_1 as a smooth bound-constrained problem in
    (u, v) >= 0 with w = u - v, solved by scipy's L-BFGS-B."""
    def split(z):
        value, grad = fun(z[:d] - z[d:])
        return value + c * z.sum(), np.concatenate([grad + c, -grad + c])
    res = minimize(split, np.zeros(2 * d), jac=True, method="L-BFGS-B",
                   bounds=[(0, None)] * (2 * d),
                   options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 10000})
    return res.x[:d] - res.x[d:], res.fun


def test_pseudo_gradient_against_finite_differences():
    """Where x_i != 0 the pseudo-gradient is F's derivative; where x_i = 0
    it is the one-sided derivative that descends, or 0 when neither does
    (F = f + c ||x||_1, finite differences of the smooth f plus the exact
    L1 term)."""
    A, b = logistic_problem(1)
    fun = logistic(A, b, 1.0)
    rng = np.random.RandomState(0)
    x = rng.randn(A.shape[1])
    x[::3] = 0.0
    _, g = fun(x)
    # c chosen so that the zero coordinates take each of the three cases
    c = float(np.median(np.abs(g[::3])))
    pg = pseudo_gradient(x, g, c)
    h = 1e-6

    def F(z):
        return fun(z)[0] + c * np.abs(z).sum()

    for i in range(len(x)):
        e = np.zeros_like(x)
        e[i] = h
        right = (F(x + e) - F(x)) / h
        left = (F(x) - F(x - e)) / h
        if x[i] != 0:
            assert pg[i] == pytest.approx((F(x + e) - F(x - e)) / (2 * h), abs=1e-4)
        elif right < 0:
            assert pg[i] == pytest.approx(right, abs=1e-4)
        elif left > 0:
            assert pg[i] == pytest.approx(left, abs=1e-4)
        else:
            assert pg[i] == 0.0
    zero = x == 0
    assert (pg[zero] == 0).any() and (pg[zero] != 0).any()


@pytest.mark.parametrize("seed, c", [(0, 0.5), (1, 2.0), (2, 8.0)])
def test_owlqn_reaches_the_optimum_of_an_independent_solver(seed, c):
    """L1-regularised logistic regression: OWL-QN's minimiser and minimum
    equal those of the split-variable problem solved by scipy's L-BFGS-B,
    and its zeros are where the reference is (numerically) zero."""
    A, b = logistic_problem(seed)
    fun = logistic(A, b, 1.0)
    res = owlqn(fun, np.zeros(A.shape[1]), c, max_iter=1000, gtol=1e-9, ftol=0)
    w_ref, f_ref = split_reference(fun, A.shape[1], c)
    assert res.success, res.message
    assert res.fun == pytest.approx(f_ref, rel=1e-9, abs=1e-9)
    np.testing.assert_allclose(res.x, w_ref, atol=1e-5)
    assert (res.x == 0).any()
    np.testing.assert_array_equal(res.x == 0, np.abs(w_ref) < 1e-6)


def test_owlqn_without_l1_is_lbfgs_optimum():
    A, b = logistic_problem(3)
    fun = logistic(A, b, 1.0)

    def ridge(w):
        value, grad = fun(w)
        return value + 0.5 * w @ w, grad + w

    a = owlqn(ridge, np.zeros(A.shape[1]), 0.0, max_iter=500, gtol=1e-9, ftol=0)
    ref = lbfgs(ridge, np.zeros(A.shape[1]), max_iter=500, gtol=1e-9, ftol=0)
    np.testing.assert_allclose(a.x, ref.x, atol=1e-6)


def test_owlqn_validates_and_stops():
    A, b = logistic_problem(0)
    fun = logistic(A, b, 1.0)
    with pytest.raises(ValueError, match="c"):
        owlqn(fun, np.zeros(A.shape[1]), -1.0)
    with pytest.raises(TypeError, match="callable"):
        owlqn(None, np.zeros(3), 1.0)
    res = owlqn(fun, np.zeros(A.shape[1]), 1.0, max_iter=2)
    assert res.nit == 2 and not res.success
    # CRFsuite's tests: relative (pseudo-)gradient norm and progress over `past` iterations
    loose = owlqn(fun, np.zeros(A.shape[1]), 1.0, max_iter=1000, gtol=0, ftol=0, rtol=1e-2)
    tight = owlqn(fun, np.zeros(A.shape[1]), 1.0, max_iter=1000, gtol=0, ftol=0, rtol=1e-8)
    assert loose.success and "rtol" in loose.message and loose.nit < tight.nit
    res = owlqn(fun, np.zeros(A.shape[1]), 1.0, max_iter=1000, gtol=0, ftol=0, past=3,
                delta=1e-3)
    assert res.success and "delta" in res.message

    def ridge(w):
        value, grad = fun(w)
        return value + 0.5 * w @ w, grad + w

    res = lbfgs(ridge, np.zeros(A.shape[1]), max_iter=1000, gtol=0, ftol=0, past=3, delta=1e-3)
    assert res.success and "delta" in res.message


# -- CRFTagger(l1_ratio=) -------------------------------------------------------------------

def crf_problem():
    X, y = random_problem(n=30, n_features=15, seed=5)
    return X, [np.asarray(t) for t in y]


def test_crf_l1_objective_is_the_elastic_net():
    """objective_ = C * sum(-log P) + (1 - r)/2 ||w||^2 + r ||w||_1 at the
    fitted weights, and the pseudo-gradient vanishes there."""
    X, y = crf_problem()
    C, r = 2.0, 0.6
    model = CRFTagger(C=C, l1_ratio=r, all_possible_states=True, max_iter=500, tol=1e-7,
                      delta=0)   # (to the optimum: no stop on a slow decrease)
    model.fit(X, y)
    theta = np.concatenate([model.coef_.T.ravel(), model.transition_coef_.ravel(),
                            model.start_coef_, model.end_coef_])
    shard, meta, _, _, _ = model._local_problem(X, y, False)
    smooth, grad = model._objective(theta, shard, meta)
    assert model.objective_ == pytest.approx(smooth + r * np.abs(theta).sum(), rel=1e-12)
    assert np.max(np.abs(pseudo_gradient(theta, grad, r))) < 1e-4
    # the smooth part is C * loss + (1 - r)/2 ||w||^2
    plain, _ = CRFTagger(C=C)._objective(theta, shard, meta)
    assert smooth == pytest.approx(plain - 0.5 * r * theta @ theta, rel=1e-12)
    assert model.history_[-1]["objective"] == pytest.approx(model.objective_, rel=1e-9)


def test_crf_l1_sparsity_grows_with_l1_ratio():
    X, y = crf_problem()
    zeros = []
    for r in (0.0, 0.3, 0.9):
        model = CRFTagger(C=0.5, l1_ratio=r, all_possible_states=True, max_iter=300).fit(X, y)
        zeros.append(int(np.sum(model.coef_ == 0)))
    assert zeros[0] == 0
    assert zeros[0] < zeros[1] < zeros[2]


def test_crf_l1_ratio_zero_is_the_gaussian_prior():
    X, y = crf_problem()
    a = CRFTagger(C=0.5, max_iter=50).fit(X, y)
    b = CRFTagger(C=0.5, l1_ratio=0.0, max_iter=50).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)


def test_crf_l1_refuses_exp_losses_and_bad_ratio():
    X, y = crf_problem()
    with pytest.raises(ValueError, match="l1_ratio"):
        CRFTagger(loss="exp", l1_ratio=0.5).fit(X, y)
    with pytest.raises(ValueError, match="l1_ratio"):
        CRFTagger(l1_ratio=1.5).fit(X, y)
    # the pointwise log loss takes it
    CRFTagger(loss="pointwise_log", l1_ratio=0.5, max_iter=20).fit(X, y)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_crf_l1_on_dask_bags_is_the_serial_model():
    """OWL-QN runs where L-BFGS ran, on the objective summed over the
    partitions: with bags the model is the serial one (to rounding)."""
    pytest.importorskip("distributed")
    import dask.bag as db
    from distributed import Client, LocalCluster

    X, y = crf_problem()
    params = dict(C=0.5, l1_ratio=0.5, max_iter=6)
    serial = CRFTagger(**params).fit(X, y)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster):
        dist = CRFTagger(**params).fit(db.from_sequence(X, npartitions=3),
                                       db.from_sequence(y, npartitions=3))
    assert dist.objective_ == pytest.approx(serial.objective_, rel=1e-8)
    np.testing.assert_allclose(dist.coef_, serial.coef_, atol=1e-8)
    np.testing.assert_array_equal(dist.coef_ == 0, serial.coef_ == 0)

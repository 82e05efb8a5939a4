"""The shared QP solvers of sklstruct._qp against scipy and the KKT conditions:
solve_simplex_qp (one simplex, with kappa and support_only) and block_smo (the
n-slack working-set dual, one simplex per block)."""
import numpy as np
import pytest
from scipy.optimize import minimize

from sklstruct._qp import block_smo
from sklstruct.qp import solve_simplex_qp


def objective(G, ell, a):
    return 0.5 * a @ G @ a - ell @ a


def random_problem(rng, m, rank):
    A = rng.normal(size=(m, rank))
    G = A @ A.T
    ell = rng.normal(size=m)
    C = float(rng.uniform(0.1, 3.0))
    alpha = rng.dirichlet(np.ones(m)) * C
    return G, ell, C, alpha


def scipy_simplex(G, ell, C, free):
    """min 1/2 a'Ga - ell'a s.t. a >= 0, sum(a) = C, a_i = 0 outside ``free``."""
    m = len(ell)
    bounds = [(0, None) if f else (0, 0) for f in free]
    start = np.where(free, C / free.sum(), 0.0)
    res = minimize(lambda a: objective(G, ell, a), start, jac=lambda a: G @ a - ell,
                   bounds=bounds, constraints=[{"type": "eq", "fun": lambda a: a.sum() - C,
                                                "jac": lambda a: np.ones(m)}],
                   method="SLSQP", options={"ftol": 1e-14, "maxiter": 1000})
    assert res.success
    return res


def check_common(G, ell, alpha0, alpha, grad, gain):
    assert (alpha >= 0).all()
    assert alpha.sum() == pytest.approx(alpha0.sum(), rel=1e-12)
    np.testing.assert_allclose(grad, G @ alpha - ell, atol=1e-9)
    assert gain >= 0
    assert objective(G, ell, alpha0) - objective(G, ell, alpha) == pytest.approx(gain, abs=1e-9)


@pytest.mark.parametrize("seed", range(20))
def test_simplex_qp_matches_scipy(seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 9))
    G, ell, C, alpha0 = random_problem(rng, m, rank=int(rng.integers(1, m + 3)))
    alpha, grad, steps, gain = solve_simplex_qp(G, ell, alpha0, tol=1e-12)
    check_common(G, ell, alpha0, alpha, grad, gain)
    res = scipy_simplex(G, ell, C, np.ones(m, dtype=bool))
    assert objective(G, ell, alpha) <= res.fun + 1e-9
    assert objective(G, ell, alpha) == pytest.approx(res.fun, abs=1e-7)
    # KKT: every variable with mass has the smallest gradient
    assert grad[alpha > 0].max() - grad.min() <= 1e-10


@pytest.mark.parametrize("seed", range(20))
def test_simplex_qp_support_only_never_gives_mass_to_zeros(seed):
    rng = np.random.default_rng(100 + seed)
    m = int(rng.integers(2, 9))
    G, ell, C, alpha0 = random_problem(rng, m, rank=m)
    zero = rng.random(m) < 0.5
    zero[rng.integers(m)] = False          # keep some support
    alpha0[zero] = 0.0
    alpha, grad, steps, gain = solve_simplex_qp(G, ell, alpha0, tol=1e-12, support_only=True)
    check_common(G, ell, alpha0, alpha, grad, gain)
    assert (alpha[zero] == 0).all()
    # the optimum of the problem restricted to the starting support
    res = scipy_simplex(G, ell, alpha0.sum(), ~zero)
    assert objective(G, ell, alpha) == pytest.approx(res.fun, abs=1e-7)


@pytest.mark.parametrize("seed", range(20))
def test_simplex_qp_kappa_conditions(seed):
    """With kappa > 0 only variables above kappa give up mass: the solver stops
    at a point where no such variable has a larger gradient (by > tol) than
    any other; it never ends worse than it started."""
    rng = np.random.default_rng(200 + seed)
    m = int(rng.integers(2, 9))
    G, ell, C, alpha0 = random_problem(rng, m, rank=m)
    kappa = float(rng.uniform(0.05, 0.5)) * C
    tol = 1e-10
    alpha, grad, steps, gain = solve_simplex_qp(G, ell, alpha0, tol=tol, kappa=kappa)
    check_common(G, ell, alpha0, alpha, grad, gain)
    big = alpha > kappa
    if big.any():
        assert grad[big].max() - grad.min() <= tol
    # the unrestricted optimum is never beaten
    res = scipy_simplex(G, ell, C, np.ones(m, dtype=bool))
    assert objective(G, ell, alpha) >= res.fun - 1e-9
    # kappa = 0 from the same start reaches at least as low
    full = solve_simplex_qp(G, ell, alpha0, tol=tol)[0]
    assert objective(G, ell, full) <= objective(G, ell, alpha) + 1e-9


def test_simplex_qp_rejects_bad_input():
    with pytest.raises(ValueError, match="m >= 1"):
        solve_simplex_qp(np.eye(2), np.zeros(3), np.zeros(2))
    with pytest.raises(ValueError, match="finite"):
        solve_simplex_qp(np.eye(2), np.array([0.0, np.nan]), np.ones(2))
    with pytest.raises(ValueError, match="feasible"):
        solve_simplex_qp(np.eye(2), np.zeros(2), np.array([1.0, -1.0]))


def block_dual_by_scipy(K, b, blocks, cap):
    m = len(b)
    cons = [{"type": "ineq", "fun": (lambda a, e=e: cap - a[blocks == e].sum())}
            for e in np.unique(blocks)]
    res = minimize(lambda a: 0.5 * a @ K @ a - b @ a, np.zeros(m), jac=lambda a: K @ a - b,
                   bounds=[(0, None)] * m, constraints=cons, method="SLSQP",
                   options={"ftol": 1e-14, "maxiter": 1000})
    assert res.success
    return -res.fun


@pytest.mark.parametrize("seed", range(10))
def test_block_smo_matches_scipy_and_kkt(seed):
    rng = np.random.default_rng(300 + seed)
    m, d = int(rng.integers(2, 16)), int(rng.integers(1, 8))
    A = rng.normal(size=(m, d))
    K = np.ascontiguousarray(A @ A.T)
    b = rng.uniform(-0.5, 2, size=m)
    blocks = rng.integers(0, max(1, m // 3), size=m)
    cap = float(rng.uniform(0.1, 2))
    order = np.argsort(blocks, kind="stable").astype(np.int64)
    ptr = np.concatenate([[0], np.flatnonzero(np.diff(blocks[order])) + 1, [m]]).astype(np.int64)
    alpha, grad = np.zeros(m), b.copy()
    sweeps, worst = block_smo(K, b, alpha, grad, ptr, order, cap, 1e-11, 10000)
    assert worst <= 1e-11 and sweeps >= 1
    np.testing.assert_allclose(grad, b - K @ alpha, atol=1e-9)
    assert (alpha >= 0).all()
    dual = b @ alpha - 0.5 * alpha @ K @ alpha
    assert dual == pytest.approx(block_dual_by_scipy(K, b, blocks, cap), abs=1e-7)
    for e in np.unique(blocks):
        idx = blocks == e
        total = alpha[idx].sum()
        assert total <= cap * (1 + 1e-12)
        g = grad[idx]
        if alpha[idx].any():
            # active constraints share the largest gradient (>= 0 when the block is full)
            assert g.max() - g[alpha[idx] > 0].min() <= 1e-9
        if total < cap * (1 - 1e-9):
            assert g.max() <= 1e-9


def test_block_smo_one_sweep_never_lowers_the_dual():
    rng = np.random.default_rng(5)
    m = 25
    A = rng.normal(size=(m, 6))
    K = np.ascontiguousarray(A @ A.T)
    b = rng.uniform(0, 1, m)
    blocks = np.sort(rng.integers(0, 6, m))
    ptr = np.concatenate([[0], np.flatnonzero(np.diff(blocks)) + 1, [m]]).astype(np.int64)
    order = np.arange(m, dtype=np.int64)
    alpha, grad = np.zeros(m), b.copy()
    duals = [0.0]
    for _ in range(8):
        block_smo(K, b, alpha, grad, ptr, order, 0.7, 1e-12, 1)
        duals.append(b @ alpha - 0.5 * alpha @ K @ alpha)
    assert np.all(np.diff(duals) >= -1e-12) and duals[-1] > 0


def test_block_smo_validates():
    K = np.eye(2)
    z = np.zeros(2)
    ptr = np.array([0, 2], dtype=np.int64)
    with pytest.raises(ValueError, match="cap"):
        block_smo(K, z.copy(), z.copy(), z.copy(), ptr, np.array([0, 1], dtype=np.int64),
                  0.0, 1e-6, 10)
    with pytest.raises(ValueError, match="out of range"):
        block_smo(K, z.copy(), z.copy(), z.copy(), ptr, np.array([0, 2], dtype=np.int64),
                  1.0, 1e-6, 10)
    with pytest.raises(ValueError, match="offset"):
        block_smo(K, z.copy(), z.copy(), z.copy(), np.array([0, 1], dtype=np.int64),
                  np.array([0, 1], dtype=np.int64), 1.0, 1e-6, 10)

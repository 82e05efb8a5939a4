"""The shared QP solvers of sklstruct._qp against scipy and the KKT conditions:
solve_simplex_qp (one simplex, with kappa and support_only) and block_smo (the
n-slack working-set dual, one simplex per block)."""
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize

from sklstruct._qp import block_smo
from sklstruct.qp import WorkingSetQP, solve_simplex_qp


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


# -- hostile arguments: refused before any work, naming the argument ------------------

G0 = np.array([[2.0, 0.5, 0.1], [0.5, 1.0, 0.2], [0.1, 0.2, 1.5]])   # symmetric PD
L0 = np.array([1.0, 0.5, 0.2])
A0 = np.array([1.0, 0.0, 0.0])
NAN, INF = float("nan"), float("inf")
TOL_RULE = r"tol must be a finite number >= 0; got "
STEPS_RULE = r"max_steps must be an integer in \[0, 2147483647\]; got "


@pytest.mark.parametrize("change, error, match", [
    ({"G": G0 + np.triu(np.ones((3, 3)), 1)}, ValueError, r"G must be symmetric; G\[\d, \d\]"),
    ({"G": np.array([[1.0, 2, 0], [2, 1, 0], [0, 0, 1]])}, ValueError,
     r"G must be positive semi-definite; its smallest eigenvalue is -1"),
    ({"G": G0.astype(str)}, TypeError, r"G must be a 2-D array of real numbers; got dtype <U"),
    ({"G": G0 + 1j}, TypeError, r"G must be a 2-D array of real numbers; got dtype complex"),
    ({"G": None}, TypeError, r"G must be a 2-D array of real numbers; got None"),
    ({"G": G0[None]}, ValueError, r"G must be a 2-D array .*shape \(1, 3, 3\)"),
    ({"G": G0 * 1e300}, ValueError, r"G\[0, 0\] = 2e\+300 exceeds 1e\+100"),
    ({"ell": [1.0, INF, 0.0]}, ValueError, r"ell\[1\] = inf is not finite"),
    ({"alpha": [1e308, 0.0, 0.0]}, ValueError, r"alpha sums to 1e\+308; at most 1e\+100"),
    ({"alpha": [1.0, NAN, 0.0]}, ValueError, r"alpha\[1\] = nan is not finite"),
    ({"tol": NAN}, ValueError, TOL_RULE + "nan"),
    ({"tol": -1e-3}, ValueError, TOL_RULE + "-0.001"),
    ({"tol": 10**400}, ValueError, TOL_RULE + "1000"),
    ({"tol": None}, TypeError, TOL_RULE + "None"),
    ({"tol": "1e-6"}, TypeError, TOL_RULE + "'1e-6'"),
    ({"kappa": NAN}, ValueError, r"kappa must be a finite number >= 0; got nan"),
    ({"kappa": INF}, ValueError, r"kappa must be a finite number >= 0; got inf"),
    ({"kappa": -1.0}, ValueError, r"kappa must be a finite number >= 0; got -1.0"),
    ({"kappa": None}, TypeError, r"kappa must be a finite number >= 0; got None"),
    ({"max_steps": 2**63}, ValueError, STEPS_RULE + "9223372036854775808"),
    ({"max_steps": -1}, ValueError, STEPS_RULE + "-1"),
    ({"max_steps": 1.5}, TypeError, STEPS_RULE + "1.5"),
    ({"max_steps": None}, TypeError, STEPS_RULE + "None"),
    ({"support_only": "no"}, TypeError, r"support_only must be a bool; got 'no'"),
    ({"support_only": 1}, TypeError, r"support_only must be a bool; got 1"),
])
def test_simplex_qp_refuses_hostile_arguments(change, error, match):
    args = {"G": G0, "ell": L0, "alpha": A0} | change
    with pytest.raises(error, match=match):
        solve_simplex_qp(**args)


def small_qp(**kwargs):
    """Q(): a working set of two constraints over 3 features."""
    qp = WorkingSetQP(3, 1.0, **kwargs)
    qp.add(np.eye(2, 3), [1.0, 1.0], [0, 1])
    return qp


CAP_RULE = r"cap \(C / n\) must be a finite number in \(0, 1e\+100\]; got "
NF_RULE = r"n_features must be an integer >= 1; got "


@pytest.mark.parametrize("args, kwargs, error, match", [
    ((3.7, 1.0), {}, TypeError, NF_RULE + "3.7"),
    (("3", 1.0), {}, TypeError, NF_RULE + "'3'"),
    ((None, 1.0), {}, TypeError, NF_RULE + "None"),
    ((NAN, 1.0), {}, TypeError, NF_RULE + "nan"),
    ((-1, 1.0), {}, ValueError, NF_RULE + "-1"),
    ((0, 1.0), {}, ValueError, NF_RULE + "0"),
    ((3, None), {}, TypeError, CAP_RULE + "None"),
    ((3, "1"), {}, TypeError, CAP_RULE + "'1'"),
    ((3, np.ones(2)), {}, TypeError, CAP_RULE + "array"),
    ((3, INF), {}, ValueError, CAP_RULE + "inf"),
    ((3, NAN), {"gram": "blocks"}, ValueError, CAP_RULE + "nan"),
    ((3, 0.0), {}, ValueError, CAP_RULE + "0.0"),
    ((3, 1.0), {"max_dense": -1}, ValueError, r"max_dense must be an integer >= 0; got -1"),
    ((3, 1.0), {"n_examples": 0}, ValueError, r"n_examples must be an integer in \[1, "),
])
def test_working_set_constructor_refuses_hostile_arguments(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        WorkingSetQP(*args, **kwargs)


IDS_RULE = r"example ids must be in \[0, 2147483647\] \(2\*\*31 - 1: the slacks"


@pytest.mark.parametrize("rows, b, example, error, match", [
    ([[NAN, 0, 0]], [1.0], [0], ValueError, r"rows\[0, 0\] = nan is not finite"),
    (sp.csr_matrix([[INF, 0, 0]]), [1.0], [0], ValueError, r"rows.data\[0\] = inf is not finite"),
    ([[1j, 0, 0]], [1.0], [0], TypeError, r"rows must be a 2-D array of real numbers; got dtype"),
    (np.ones((1, 1, 3)), [1.0], [0], ValueError, r"rows must be a 2-D array .*\(1, 1, 3\)"),
    ("abc", [1.0], [0], TypeError, r"rows must be a 2-D array of real numbers; got 'abc'"),
    ([[1.0, 0, 0, 0]], [1.0], [0], ValueError, r"rows has 4 columns; expected n_features = 3"),
    ([[1.0, 0, 0]], [INF], [0], ValueError, r"b\[0\] = inf is not finite"),
    ([[1.0, 0, 0]], [NAN], [0], ValueError, r"b\[0\] = nan is not finite"),
    ([[1.0, 0, 0]], [1.0, 2.0], [0], ValueError, r"one entry per constraint; got 1 rows, 2"),
    ([[1.0, 0, 0]], [1.0], [0.5], TypeError, r"example ids must be integers; got dtype float"),
    ([[1.0, 0, 0]], [1.0], [NAN], ValueError, r"example\[0\] = nan is not finite"),
    ([[1.0, 0, 0]], [1.0], [1e9], TypeError, r"example ids must be integers; got dtype float"),
    ([[1.0, 0, 0]], [1.0], [-1], ValueError, IDS_RULE),
    ([[1.0, 0, 0]], [1.0], [2**62], ValueError, IDS_RULE),
    ([[1.0, 0, 0]], [1.0], [2**64], TypeError, r"example must be a 1-D array of real numbers"),
    ([[1.0, 0, 0]], [1.0], None, TypeError,
     r"example must be a 1-D array of real numbers; got None"),
])
def test_working_set_add_refuses_hostile_arguments(rows, b, example, error, match):
    qp = small_qp()
    with pytest.raises(error, match=match):
        qp.add(rows, b, example)
    assert qp.n_constraints == 2 and qp.K.shape == (2, 2)


def test_working_set_add_bounds_ids_by_n_examples():
    qp = small_qp(n_examples=2)
    with pytest.raises(ValueError, match=r"example ids must be in \[0, 1\] \(n_examples - 1\)"):
        qp.add(np.eye(1, 3), [1.0], [2])
    qp.add(np.eye(1, 3), [1.0], [1])
    assert qp.n_constraints == 3


SWEEPS_RULE = r"max_sweeps must be an integer in \[1, 2147483647\]; got "


@pytest.mark.parametrize("gram", ["dense", "blocks"])
@pytest.mark.parametrize("kwargs, error, match", [
    ({"max_sweeps": 2**31}, ValueError, SWEEPS_RULE + "2147483648"),
    ({"max_sweeps": 0}, ValueError, SWEEPS_RULE + "0"),
    ({"max_sweeps": -1}, ValueError, SWEEPS_RULE + "-1"),
    ({"max_sweeps": 1.5}, TypeError, SWEEPS_RULE + "1.5"),
    ({"max_sweeps": "3"}, TypeError, SWEEPS_RULE + "'3'"),
    ({"tol": NAN}, ValueError, TOL_RULE + "nan"),
    ({"tol": -1.0}, ValueError, TOL_RULE + "-1.0"),
    ({"tol": None}, TypeError, TOL_RULE + "None"),
])
def test_working_set_solve_refuses_hostile_arguments(gram, kwargs, error, match):
    qp = small_qp(gram=gram)
    with pytest.raises(error, match=match):
        qp.solve(**kwargs)
    assert not qp.alpha.any()


@pytest.mark.parametrize("patience, error, match", [
    (0, ValueError, "0"), (-1, ValueError, "-1"), (NAN, TypeError, "nan"),
    (None, TypeError, "None"), ("a", TypeError, "'a'"), (1.5, TypeError, "1.5"),
])
def test_working_set_remove_idle_refuses_hostile_arguments(patience, error, match):
    qp = small_qp()
    qp.solve()
    with pytest.raises(error, match=r"patience must be an integer in \[1, 2147483647\]; got "
                       + match):
        qp.remove_idle(patience)
    assert qp.n_constraints == 2

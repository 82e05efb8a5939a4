"""sklstruct.qp.CuttingPlane on a structured problem that is not parsing: a
multiclass SVM with an ordinal loss as a slack-rescaled structural SVM
(Tsochantaridis et al. 2005), both solvers against the primal QP over every
constraint solved by scipy."""
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize

from sklstruct.qp import CuttingPlane


class OrdinalMulticlass:
    """``Psi(x, y)``: ``x`` in the block of class ``y``; ``Delta(y, y') =
    |y - y'|``.  The oracle of CuttingPlane by enumeration of the classes."""

    def __init__(self, X, y, n_classes):
        self.X, self.y, self.K = X, y, n_classes
        self.d = X.shape[1]

    def psi(self, i, label):
        row = np.zeros(self.d * self.K)
        row[label * self.d:(label + 1) * self.d] = self.X[i]
        return row

    def dpsi(self, i, label):
        return self.psi(i, self.y[i]) - self.psi(i, label)

    def values(self, w):
        """Delta (1 - w.dPsi) of every (example, class), -inf at the gold class."""
        S = self.X @ w.reshape(self.K, self.d).T
        gold = S[np.arange(len(self.y)), self.y][:, None]
        delta = np.abs(self.y[:, None] - np.arange(self.K)[None, :]).astype(float)
        v = delta * (1.0 - (gold - S))
        v[np.arange(len(self.y)), self.y] = -np.inf
        return v

    def most_violated(self, w):
        out = []
        for row in self.values(w):
            k = int(np.argmax(row))
            out.append((k, row[k]) if row[k] > 0 else (None, 0.0))
        return out

    def loss(self, i, label):
        return float(abs(self.y[i] - label))

    def feature_difference(self, i, label):
        return sp.csr_matrix(self.dpsi(i, label))

    def primal(self, w, w0, C):
        hinge = np.maximum(self.values(w).max(axis=1), 0.0)
        return 0.5 * float((w - w0) @ (w - w0)) + C / len(self.y) * float(hinge.sum())


def problem(seed, n=15, d=3, K=3):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=2.0, size=(K, d - 1))
    y = rng.integers(0, K, size=n)
    X = np.hstack([centres[y] + rng.normal(size=(n, d - 1)), np.ones((n, 1))])
    return OrdinalMulticlass(X, y, K)


def scipy_optimum(oracle, w0, C):
    """min 1/2 ||w - w0||^2 + C/n sum xi  s.t.  Delta w.dPsi >= Delta - xi_i,
    xi >= 0, over every (example, wrong class)."""
    n, p = len(oracle.y), len(w0)
    rows, deltas, ex = [], [], []
    for i in range(n):
        for k in range(oracle.K):
            if k != oracle.y[i]:
                delta = oracle.loss(i, k)
                rows.append(delta * oracle.dpsi(i, k))
                deltas.append(delta)
                ex.append(i)
    A, b, ex = np.array(rows), np.array(deltas), np.array(ex)
    E = np.zeros((len(ex), n))
    E[np.arange(len(ex)), ex] = 1.0

    def f(z):
        u = z[:p] - w0
        return 0.5 * u @ u + C / n * z[p:].sum()

    def grad(z):
        return np.concatenate([z[:p] - w0, np.full(n, C / n)])

    cons = {"type": "ineq", "fun": lambda z: A @ z[:p] - b + E @ z[p:],
            "jac": lambda z: np.hstack([A, E])}
    z0 = np.concatenate([w0, np.full(n, b.max() * 10)])
    res = minimize(f, z0, jac=grad, constraints=[cons], method="SLSQP",
                   bounds=[(None, None)] * p + [(0, None)] * n,
                   options={"ftol": 1e-14, "maxiter": 2000})
    assert res.success, res.message
    return res.x[:p], res.fun


@pytest.mark.parametrize("solver", ["n-slack", "1-slack"])
@pytest.mark.parametrize("seed,C,shift", [(0, 1.0, 0.0), (1, 10.0, 0.0), (2, 3.0, 0.5)])
def test_cutting_plane_reaches_the_qp_optimum(solver, seed, C, shift):
    oracle = problem(seed)
    w0 = np.full(oracle.d * oracle.K, shift)
    w_star, f_star = scipy_optimum(oracle, w0, C)
    cp = CuttingPlane(C, solver=solver, max_iter=500, tol=1e-7, qp_tol=1e-10)
    cp.fit(oracle, len(oracle.y), w0)
    assert cp.converged_
    f = oracle.primal(cp.w_, w0, C)
    # within tol of the optimum, and every dual bounds it from below
    assert f_star - 1e-7 <= f <= f_star + 1e-7
    assert cp.history_[-1]["dual"] <= f_star + 1e-7
    duals = [h["dual"] for h in cp.history_]
    assert np.all(np.diff(duals) >= -1e-9)
    # the objective is 1-strongly convex in w: the weights are close too
    np.testing.assert_allclose(cp.w_, w_star, atol=1e-5)
    assert cp.n_iter_ == sum(not h["cached"] for h in cp.history_)


def test_cutting_plane_max_iter_and_history():
    oracle = problem(3)
    w0 = np.zeros(oracle.d * oracle.K)
    cp = CuttingPlane(10.0, solver="n-slack", max_iter=2, tol=1e-9).fit(oracle, len(oracle.y), w0)
    assert cp.n_iter_ == 2 and not cp.converged_ and len(cp.history_) == 2
    first = cp.history_[0]
    # the primal bound of the first pass is at w0 = 0: C/n sum of the largest loss
    assert first["primal"] == pytest.approx(oracle.primal(w0, w0, 10.0))
    assert set(first) == {"iteration", "violated", "constraints", "dual", "primal", "cached",
                          "seconds"}
    with pytest.raises(ValueError, match="solver"):
        CuttingPlane(1.0, solver="2-slack")


def test_cutting_plane_verbose(capsys):
    oracle = problem(4)
    CuttingPlane(1.0, max_iter=1, verbose=1, name="Toy").fit(oracle, len(oracle.y),
                                                             np.zeros(oracle.d * oracle.K))
    out = capsys.readouterr().out
    assert out.startswith("-- [Toy] Iteration 1: violated")
    assert out.splitlines()[-1].startswith("-- [Toy] stopped at max_iter without converging")


@pytest.mark.parametrize("solver", ["n-slack", "1-slack"])
def test_cutting_plane_verbose_says_it_converged_and_prints_no_nan(solver, capsys):
    oracle = problem(0)
    cp = CuttingPlane(1.0, solver=solver, max_iter=500, tol=1e-7, verbose=1, name="Toy")
    cp.fit(oracle, len(oracle.y), np.zeros(oracle.d * oracle.K))
    out = capsys.readouterr().out
    assert cp.converged_ and "nan" not in out
    assert out.splitlines()[-1].startswith(f"-- [Toy] converged: no constraint violated by "
                                           f"more than tol after {cp.n_iter_} oracle passes")
    if any(h["cached"] for h in cp.history_):      # a cache pass names its source
        assert "from the cache" in out


# -- hostile arguments and oracle outputs: refused naming the argument or example -----

NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize("kwargs, error, match", [
    ({"C": INF}, ValueError, r"C must be a finite number in \(0, 1e\+100\]; got inf"),
    ({"C": NAN}, ValueError, r"C must be a finite number in \(0, 1e\+100\]; got nan"),
    ({"C": 0.0}, ValueError, r"C must be a finite number in \(0, 1e\+100\]; got 0.0"),
    ({"C": None}, TypeError, r"C must be a finite number in \(0, 1e\+100\]; got None"),
    ({"C": "1"}, TypeError, r"C must be a finite number in \(0, 1e\+100\]; got '1'"),
    ({"max_iter": 0}, ValueError, r"max_iter must be an integer in \[1, 2147483647\]; got 0"),
    ({"max_iter": -1}, ValueError, r"max_iter must be an integer in \[1, 2147483647\]; got -1"),
    ({"max_iter": None}, TypeError, r"max_iter must be an integer in \[1, 2147483647\]; got None"),
    ({"max_iter": 2.5}, TypeError, r"max_iter must be an integer in \[1, 2147483647\]; got 2.5"),
    ({"tol": NAN}, ValueError, r"tol must be a finite number >= 0; got nan"),
    ({"tol": -0.1}, ValueError, r"tol must be a finite number >= 0; got -0.1"),
    ({"qp_tol": NAN}, ValueError, r"qp_tol must be a finite number >= 0; got nan"),
    ({"cache_size": -1}, ValueError, r"cache_size must be an integer in \[1, 2147483647\]"),
    ({"cache_size": 0}, ValueError, r"cache_size must be an integer in \[1, 2147483647\]"),
    ({"max_cached": -1}, ValueError, r"max_cached must be an integer in \[0, 2147483647\]"),
    ({"gram": "bad"}, ValueError, r"gram must be 'dense', 'blocks' or 'auto'; got 'bad'"),
])
def test_cutting_plane_refuses_hostile_parameters(kwargs, error, match):
    kwargs = {"C": 1.0} | kwargs
    with pytest.raises(error, match=match):
        CuttingPlane(kwargs.pop("C"), **kwargs)


class Corrupted:
    """An oracle whose output for example 2 is corrupted: its value
    (``part="value"``), its loss or its feature difference (``"dpsi"``).  It
    reads the weights it knows only, so that a ``w0`` of the wrong length
    reaches the check of the feature differences."""

    def __init__(self, oracle, part=None, bad=NAN):
        self.oracle, self.part, self.bad = oracle, part, bad

    def most_violated(self, w):
        out = self.oracle.most_violated(np.resize(w, self.oracle.d * self.oracle.K))
        if self.part == "value":
            out[2] = (out[2][0], self.bad)
        return out

    def loss(self, i, y):
        return self.bad if self.part == "loss" and i == 2 else self.oracle.loss(i, y)

    def feature_difference(self, i, y):
        row = self.oracle.feature_difference(i, y)
        if self.part == "dpsi" and i == 2:
            row.data[0] = self.bad
        return row


N_RULE = r"n_samples must be an integer in \[1, 2147483647\]; got "


@pytest.mark.parametrize("solver", ["n-slack", "1-slack"])
@pytest.mark.parametrize("change, error, match", [
    ({"oracle": None}, TypeError, r"oracle must have the methods most_violated, loss and "
                                  r"feature_difference; None lacks most_violated, loss"),
    ({"n_samples": 0}, ValueError, N_RULE + "0"),
    ({"n_samples": -1}, ValueError, N_RULE + "-1"),
    ({"n_samples": 2**63}, ValueError, N_RULE + "9223372036854775808"),
    ({"n_samples": "2"}, TypeError, N_RULE + "'2'"),
    ({"n_samples": 2.5}, TypeError, N_RULE + "2.5"),
    ({"n_samples": None}, TypeError, N_RULE + "None"),
    ({"n_samples": 16}, ValueError, r"oracle.most_violated returned 15 outputs; expected one "
                                    r"per example \(n_samples = 16\)"),
    ({"n_samples": 14}, ValueError, r"returned 15 outputs; .*\(n_samples = 14\)"),
    ({"w0": None}, TypeError, r"w0 must be a 1-D array of real numbers; got None"),
    ({"w0": np.full(9, NAN)}, ValueError, r"w0\[0\] = nan is not finite"),
    ({"oracle": "nothing", "w0": np.zeros(10)}, ValueError,
     r"oracle.feature_difference of example \d+ has shape \(1, 9\); expected \(1, 10\)"),
    ({"w0": np.zeros(0)}, ValueError, r"w0 must have at least one feature"),
    ({"start": NAN}, ValueError, r"start must be a finite number; got nan"),
    ({"oracle": "value"}, ValueError, r"oracle.most_violated: the value of example 2 must be "
                                      r"a finite number; got nan"),
    ({"oracle": ("value", INF)}, ValueError, r"the value of example 2 must be a finite number"),
    ({"oracle": ("loss", INF)}, ValueError, r"oracle.loss of example 2 must be a finite number "
                                            r">= 0; got inf"),
    ({"oracle": ("loss", -1.0)}, ValueError, r"oracle.loss of example 2 must be a finite"),
    ({"oracle": "dpsi"}, ValueError, r"oracle.feature_difference of example 2: data\[0\] = nan "
                                     r"is not finite"),
])
def test_cutting_plane_fit_refuses_hostile_arguments(solver, change, error, match):
    oracle = problem(0)
    args = {"oracle": oracle, "n_samples": len(oracle.y), "w0": np.zeros(9)} | change
    if isinstance(args["oracle"], (str, tuple)):      # part, or (part, bad value)
        part = args["oracle"]
        args["oracle"] = Corrupted(oracle, *(part if isinstance(part, tuple) else (part,)))
    with pytest.raises(error, match=match):
        CuttingPlane(1.0, solver=solver).fit(**args)

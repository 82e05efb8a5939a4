"""SWVP and SWVM (Dror & Reichart 2016; Ringel, Dror & Reichart): weighted
single-position violations, checked against a plain reference."""
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

from sklstruct import KBestMIRATagger, SWVMTagger, SWVPTagger
from sklstruct._chain import ChainWeights
from sklstruct.chain import as_stacked, emission_scores, joint_feature, kbest_decode
from sklstruct.learners._online import online_epoch
from _oracles import random_problem, separable_problem

GAMMAS = ["uniform", "wm", "softmin", "optimization"]


def dF(x, gold, path, L, order=1):
    Fg, Fp = joint_feature(x, gold, L, order), joint_feature(x, path, L, order)
    return Fg[0] - Fp[0], Fg[1] - Fp[1]


def set_gamma(v, gamma):
    """SETGAMMA of section 3 on the template margins v (the kept ones)."""
    if gamma == "uniform":
        return np.full(len(v), 1.0 / len(v))
    if gamma == "wm":
        a = np.abs(np.minimum(v, 0.0))
        return a / a.sum()
    if gamma == "softmin":
        e = np.exp(-(v - v.min()))
        return e / e.sum()
    g = np.zeros(len(v))          # optimization: the LP's vertex at argmin v
    g[np.argmin(v)] = 1.0
    return g


def weighted_difference(x, gold, ystar, W, P, L, gamma, aggressive, gammas_out=None, order=1):
    """sum_J gamma(m^J) dF(m^J), J = {i} over the differing positions, with the
    fallback to dF(y*) when no template can be weighted."""
    diffs, v = [], []
    for i in np.flatnonzero(gold != ystar):
        m = gold.copy()
        m[i] = ystar[i]
        dW, dP = dF(x, gold, m, L, order)
        diffs.append((dW, dP))
        v.append((W * dW).sum() + (P * dP).sum())
    v = np.array(v)
    keep = v <= 0 if aggressive else np.ones(len(v), dtype=bool)
    if not keep.any() or (gamma in ("wm", "optimization") and v[keep].min() >= 0
                          and not (gamma == "optimization" and v[keep].min() == 0)):
        return dF(x, gold, ystar, L, order)
    g = np.zeros(len(v))
    g[keep] = set_gamma(v[keep], gamma)
    if gammas_out is not None:
        gammas_out.append((g, v))
    return (sum(gi * d[0] for gi, d in zip(g, diffs)), sum(gi * d[1] for gi, d in zip(g, diffs)))


def reference_swvp(X, y, L, k, epochs, gamma, aggressive, order=1):
    F = X[0].shape[1]
    W, P = np.zeros((F, L)), np.zeros((L + 2 + (L * L if order == 2 else 0), L))
    W_avg, P_avg, seen = np.zeros_like(W), np.zeros_like(P), 0
    for _ in range(epochs):
        for x, gold in zip(X, y):
            paths, _ = kbest_decode(emission_scores(x, W), P, k)
            for path in paths:
                if np.array_equal(path, gold):
                    continue
                dW, dP = dF(x, gold, path, L, order)
                if (W * dW).sum() + (P * dP).sum() <= 0:
                    dW, dP = weighted_difference(x, gold, path, W, P, L, gamma, aggressive,
                                                 order=order)
                    W, P = W + dW, P + dP
            W_avg, P_avg, seen = W_avg + W, P_avg + P, seen + 1
    return W_avg / seen, P_avg / seen


def continuous_problem(n=30, n_features=6, n_labels=3, seed=4):
    """Real-valued features: template margins tie (v = 0) only when they are
    exactly 0 for both implementations, so a comparison of the two cannot
    flip on rounding (integer features with uniform thirds can: v = -4e-16)."""
    X, y = random_problem(n, n_features, n_labels, seed)
    rng = np.random.default_rng(seed)
    return [sp.csr_matrix(rng.random(x.shape)) for x in X], y


@pytest.mark.parametrize("gamma", GAMMAS)
@pytest.mark.parametrize("aggressive", [True, False])
@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("order", [1, 2])
def test_swvp_matches_reference(gamma, aggressive, k, order):
    """Order 2: the mixed assignments' differences include the (up to three)
    trigrams around the changed position."""
    X, y = continuous_problem()
    model = SWVPTagger(k=k, gamma=gamma, aggressive=aggressive, max_iter=3,
                       shuffle=False, order=order).fit(X, y)
    W, P = reference_swvp(X, y, 3, k, 3, gamma, aggressive, order)
    np.testing.assert_allclose(model.coef_, W.T, atol=1e-9)
    np.testing.assert_allclose(model._decoding_weights()[1], P, atol=1e-9)


def test_dr16_conditions_and_the_linear_program():
    """Whenever the model violates, the aggressive gammas lie on the simplex and
    the weighted violation is <= 0; 'optimization' is the LP of section 3
    (scipy's linprog finds the same optimum, and reports infeasibility exactly
    when no template violates)."""
    X, y = random_problem(seed=7)
    rng = np.random.default_rng(0)
    checked = 0
    for trial in range(200):
        x, gold = X[trial % len(X)], y[trial % len(X)]
        W, P = rng.normal(size=(x.shape[1], 3)), rng.normal(size=(5, 3))
        paths, _ = kbest_decode(emission_scores(x, W), P, 1)
        ystar = paths[0]
        if np.array_equal(ystar, gold):
            continue
        for gamma in GAMMAS:
            out = []
            weighted_difference(x, gold, ystar, W, P, 3, gamma, True, out)
            if not out:
                continue
            g, v = out[0]
            assert g.sum() == pytest.approx(1.0) and (g >= 0).all()
            assert g @ v <= 1e-12
            checked += 1
        # the LP: min sum g v  s.t.  simplex,  sum g v <= 0
        v = []
        for i in np.flatnonzero(gold != ystar):
            m = gold.copy()
            m[i] = ystar[i]
            dW, dP = dF(x, gold, m, 3)
            v.append((W * dW).sum() + (P * dP).sum())
        v = np.array(v)
        res = linprog(v, A_ub=[v], b_ub=[0.0], A_eq=[np.ones(len(v))], b_eq=[1.0],
                      bounds=(0, None), method="highs")
        if v.min() > 0:
            assert res.status == 2          # infeasible: SWVP falls back to dF(y*)
        else:
            assert res.status == 0 and res.fun == pytest.approx(set_gamma(v, "x") @ v)
    assert checked > 100


@pytest.mark.parametrize("gamma", ["wm", "optimization", "uniform"])
def test_no_violating_template_falls_back_to_the_full_update(gamma):
    """gold (0, 0), y* (1, 1) wins on emissions, but each single change pays a
    -10 transition: no template violates, the LP is infeasible (linprog says
    so), and SWVP updates with dF(y*), the perceptron's step."""
    x = sp.csr_matrix(np.ones((2, 1)))
    gold = np.array([0, 0], dtype=np.int32)
    W = np.array([[0.0, 0.5]])
    P = np.array([[0.0, -10.0], [-10.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    assert list(kbest_decode(emission_scores(x, W), P, 1)[0][0]) == [1, 1]
    v = []
    for i in range(2):
        m = gold.copy()
        m[i] = 1
        dW, dP = dF(x, gold, m, 2)
        v.append((W * dW).sum() + (P * dP).sum())
    assert min(v) > 0
    res = linprog(v, A_ub=[v], b_ub=[0.0], A_eq=[np.ones(2)], b_eq=[1.0], bounds=(0, None),
                  method="highs")
    assert res.status == 2
    data, order = as_stacked([x]).chain_data(), np.array([0], dtype=np.int64)
    a, b = ChainWeights(1, 2, False), ChainWeights(1, 2, False)
    for w in (a, b):
        w.W[...], w.P[...] = W, P
    online_epoch(data, gold, order, a, "swvp", 1, gamma=gamma)
    online_epoch(data, gold, order, b, "perceptron", 1)
    np.testing.assert_array_equal(a.W, b.W)
    np.testing.assert_array_equal(a.P, b.P)


def one_position_case(seed):
    """A sentence and weights whose best sequence differs from gold in one position."""
    rng = np.random.default_rng(seed)
    while True:
        T = int(rng.integers(2, 6))
        x = sp.csr_matrix(rng.integers(0, 3, size=(T, 4)).astype(float))
        gold = rng.integers(0, 3, size=T).astype(np.int32)
        W, P = rng.normal(size=(4, 3)), rng.normal(size=(5, 3))
        paths, _ = kbest_decode(emission_scores(x, W), P, 1)
        if np.count_nonzero(paths[0] != gold) == 1:
            return x, gold, W, P


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("gamma", GAMMAS)
def test_single_template_updates_equal_perceptron_and_mira(seed, gamma):
    x, gold, W, P = one_position_case(seed)
    data = as_stacked([x]).chain_data()
    order = np.array([0], dtype=np.int64)

    def step(rule, **kw):
        w = ChainWeights(4, 3, False)
        w.W[...], w.P[...] = W, P
        online_epoch(data, gold, order, w, rule, 1, **kw)
        return w.W.copy(), w.P.copy()

    for a, b in zip(step("swvp", gamma=gamma), step("perceptron")):
        np.testing.assert_allclose(a, b, atol=1e-12)
    for a, b in zip(step("swvm", gamma=gamma, C=0.7), step("mira", C=0.7, augment=False)):
        np.testing.assert_allclose(a, b, atol=1e-12)


@pytest.mark.parametrize("gamma", GAMMAS)
def test_swvm_constraint_holds_after_the_update(gamma):
    """With a large C the k = 1 SWVM step satisfies its constraint exactly:
    w' . D = L(y, y*), D the weighted template difference at the old w."""
    X, y = random_problem(seed=9)
    rng = np.random.default_rng(1)
    done = 0
    for x, gold in zip(X, y):
        W, P = rng.normal(size=(x.shape[1], 3)), rng.normal(size=(5, 3))
        ystar = kbest_decode(emission_scores(x, W), P, 1)[0][0]
        if np.array_equal(ystar, gold):
            continue
        dW, dP = weighted_difference(x, gold, ystar, W, P, 3, gamma, True)
        w = ChainWeights(x.shape[1], 3, False)
        w.W[...], w.P[...] = W, P
        online_epoch(as_stacked([x]).chain_data(), gold.astype(np.int32),
                     np.array([0], dtype=np.int64), w, "swvm", 1, C=1e6, gamma=gamma,
                     tol=1e-12)
        if (dW ** 2).sum() + (dP ** 2).sum() > 0:
            loss = np.count_nonzero(gold != ystar)
            assert (w.W * dW).sum() + (w.P * dP).sum() == pytest.approx(loss, abs=1e-8)
            done += 1
    assert done > 10


@pytest.mark.parametrize("model", [SWVPTagger(max_iter=20, random_state=0),
                                   SWVPTagger(gamma="softmin", k=3, max_iter=20,
                                              random_state=0),
                                   SWVMTagger(max_iter=20, random_state=0),
                                   SWVMTagger(gamma="uniform", k=1, max_iter=20,
                                              random_state=0)])
def test_separable_problem_reaches_zero_training_error(model):
    X, y = separable_problem()
    model.set_params(average=False).fit(X, y)
    assert model.score(X, y) == 1.0


def test_swvm_learns_like_mira_on_chunking():
    from sklstruct import SequenceVectorizer
    from sklstruct.datasets import make_chunking_corpus
    from sklstruct.metrics import chunk_f1_score
    X, y = make_chunking_corpus(400, random_state=0)
    vec = SequenceVectorizer(templates=("word", "pos"), window=1)
    Xt, Xs = vec.fit_transform(X[:300]), vec.transform(X[300:])
    f1 = {name: chunk_f1_score(y[300:], m.fit(Xt, y[:300]).predict(Xs)) for name, m in
          [("swvm", SWVMTagger(random_state=0)), ("mira", KBestMIRATagger(k=3, random_state=0)),
           ("swvp", SWVPTagger(random_state=0))]}
    assert f1["swvm"] > 0.95 and f1["swvp"] > 0.95 and f1["mira"] > 0.95

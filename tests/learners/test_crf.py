"""The CRF: the four losses' gradients against finite differences, and what
the tagger must learn (its kernels' own tests are in
tests/chain/test_forward_backward.py)."""
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import logsumexp
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from sklstruct import CRFTagger
from sklstruct.chain import as_stacked
from _oracles import brute_force, random_problem, separable_problem

# ConvergenceWarning is expected here: fits stopped early on purpose
# (the tests compare runs, not optima)
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

LOSSES = ["log", "exp", "pointwise_log", "pointwise_exp"]


def objective_parts(model, X, y):
    """((shard, meta), length of theta) of the objective of a fit on X, y:
    ``model._objective(theta, *ctx)``."""
    shard, meta, _, _, _ = model._local_problem(X, y, False)
    return (shard, meta), shard.n_theta


def reference_loss(theta, X, y, loss, C, F, L):
    """The loss of section 3.3 plus the prior, by enumeration."""
    W, P = theta[:F * L].reshape(F, L), theta[F * L:].reshape(-1, L)
    total = 0.0
    for x, gold in zip(X, y):
        E = x.toarray() @ W
        seqs, scores = brute_force(E, P)
        log_z = logsumexp(scores)
        s_gold = scores[np.flatnonzero((seqs == gold).all(axis=1))[0]]
        log_zt = np.array([logsumexp(scores[seqs[:, t] == gold[t]]) for t in range(len(gold))])
        total += {"log": log_z - s_gold, "exp": np.exp(log_z - s_gold) - 1,
                  "pointwise_log": np.sum(log_z - log_zt),
                  "pointwise_exp": np.sum(np.exp(log_z - log_zt))}[loss]
    value = C * total + 0.5 * theta @ theta
    return np.log1p(value) if loss in ("exp", "pointwise_exp") else value


@pytest.mark.parametrize("loss, all_possible_states, order",
                         [(loss, states, 1) for loss in LOSSES for states in (True, False)]
                         + [(loss, loss == "exp", 2) for loss in LOSSES])
def test_objective_and_gradient(loss, all_possible_states, order):
    """The objective equals the enumeration of eqs. 1-2 and the pointwise
    losses (the exp ones through log(1 + .)), and its gradient equals
    central finite differences, over all (feature, label) pairs or over
    the observed ones (the others held at 0), first and second order."""
    X, y = random_problem(n=8, n_features=4, seed=3)
    y = [np.asarray(t) for t in y]
    # feature 3 never fires on label 0: the pair (3, 0) is unobserved
    X = [sp.csr_matrix(x.toarray() * np.where((t == 0)[:, None], [1, 1, 1, 0], 1))
         for x, t in zip(X, y)]
    model = CRFTagger(loss=loss, C=0.7, all_possible_states=all_possible_states, order=order)
    ctx, n = objective_parts(model, X, y)
    _, _, classes, F, states = model._local_problem(X, y, False)
    L = len(classes)
    assert (ctx[0].n_w < F * L) != all_possible_states
    theta = np.random.default_rng(1).normal(scale=0.5, size=n)
    value, grad = model._objective(theta, *ctx)
    full = model._full_theta(theta, F, L, states)
    assert value == pytest.approx(reference_loss(full, X, y, loss, 0.7, F, L), rel=1e-10)
    h = 1e-5
    numeric = np.array([(model._objective(theta + h * e, *ctx)[0]
                         - model._objective(theta - h * e, *ctx)[0]) / (2 * h)
                        for e in np.eye(n)])
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-7)


def test_losses_are_the_registry_and_a_new_loss_is_one_class(monkeypatch):
    """CRFTagger reads its losses from _crf_losses.LOSSES: the names it
    accepts are the registry's, and a loss class added there (here the log
    loss halved, whose objective at C equals the log loss's at C / 2) is
    used with nothing else changed."""
    from sklstruct.learners import _crf_losses

    assert set(_crf_losses.LOSSES) == set(LOSSES)
    assert CRFTagger._parameter_constraints["loss"][0].options == set(LOSSES)

    class HalfLog(_crf_losses.LogLoss):
        def weights(self, C, data, v=None, reg=None):
            return super().weights(C / 2, data)

        def value(self, v, C, reg):
            return super().value(v, C / 2, reg)

    monkeypatch.setitem(_crf_losses.LOSSES, "half_log", HalfLog())
    X, y = random_problem(n=8, n_features=4, seed=3)
    y = [np.asarray(t) for t in y]
    new, log = CRFTagger(loss="half_log", C=1.4), CRFTagger(loss="log", C=0.7)
    ctx, n = objective_parts(log, X, y)
    theta = np.random.default_rng(2).normal(scale=0.5, size=n)
    value, grad = new._objective(theta, *ctx)
    expected_value, expected_grad = log._objective(theta, *ctx)
    assert value == expected_value
    np.testing.assert_array_equal(grad, expected_grad)


@pytest.mark.parametrize("loss", LOSSES)
def test_exp_losses_stay_finite_where_the_loss_itself_overflows(loss):
    """A sentence of 600 tokens and 3 labels: at w = 0, 1 / P(y | x) = 3 ** 600."""
    rng = np.random.default_rng(0)
    X = [sp.csr_matrix(rng.random((600, 3)))]
    y = [rng.integers(0, 3, size=600)]
    model = CRFTagger(loss=loss)
    ctx, n = objective_parts(model, X, y)
    value, grad = model._objective(np.zeros(n), *ctx)
    assert np.isfinite(value) and np.isfinite(grad).all()
    if loss == "exp":
        assert value == pytest.approx(600 * np.log(3), rel=1e-9)


@pytest.mark.parametrize("loss, order", [(loss, 1) for loss in LOSSES]
                         + [(loss, 2) for loss in LOSSES])
def test_separable_problem_reaches_zero_training_error(loss, order):
    X, y = separable_problem()
    model = CRFTagger(loss=loss, C=100.0, max_iter=300, order=order).fit(X, y)
    assert model.score(X, y) == 1.0
    assert model.history_ and model.n_iter_ == len(model.history_)


@pytest.mark.parametrize("order", [1, 2])
def test_marginals_match_brute_force_and_predict_is_their_viterbi(order):
    X, y = random_problem(n=20, seed=4)
    model = CRFTagger(C=1.0, order=order).fit(X, y)
    assert (model.trigram_coef_ is not None) == (order == 2)
    marginals = model.predict_marginals(X)
    W, P = model._decoding_weights()
    for x, m in zip(X, marginals):
        E = x.toarray() @ W
        seqs, scores = brute_force(E, P)
        p = np.exp(scores - logsumexp(scores))
        expected = np.zeros_like(m)
        for q, pq in zip(seqs, p):
            expected[np.arange(len(q)), q] += pq
        np.testing.assert_allclose(m, expected, atol=1e-10)
        np.testing.assert_allclose(m.sum(axis=1), 1.0)
    assert marginals[0].shape == (X[0].shape[0], len(model.classes_))


def test_n_jobs_gives_identical_results():
    """Blocks of sentences, not threads, fix the order of every sum."""
    rng = np.random.default_rng(5)
    X = [sp.csr_matrix(rng.random((rng.integers(1, 6), 5))) for _ in range(700)]
    y = [rng.integers(0, 3, size=x.shape[0]) for x in X]
    for loss in ("log", "pointwise_exp"):
        serial = CRFTagger(loss=loss, max_iter=5, n_jobs=1).fit(X, y)
        threads = CRFTagger(loss=loss, max_iter=5, n_jobs=2).fit(X, y)
        np.testing.assert_array_equal(serial.coef_, threads.coef_)
        np.testing.assert_array_equal(serial.transition_coef_, threads.transition_coef_)
        for a, b in zip(serial.predict_marginals(X), threads.predict_marginals(X)):
            np.testing.assert_array_equal(a, b)


def test_observed_states_are_the_only_emission_weights():
    """all_possible_states=False (CRFsuite's default model): coef_ is 0
    exactly at the (feature, label) pairs never seen in training; a warm
    start keeps the weights it had."""
    X, y = random_problem(n=30, seed=9)
    X = [sp.csr_matrix(x.toarray() * np.where((t == 0)[:, None], [1, 1, 1, 1, 1, 0], 1))
         for x, t in zip(X, y)]
    seen = np.zeros((3, 6), dtype=bool)
    for x, t in zip(X, y):
        for i, j in zip(*x.nonzero()):
            seen[t[i], j] = True
    assert not seen.all()
    observed = CRFTagger(C=1.0).fit(X, y)
    np.testing.assert_array_equal(observed.coef_ != 0, seen)
    possible = CRFTagger(C=1.0, all_possible_states=True).fit(X, y)
    assert (possible.coef_[~seen] != 0).all()
    assert observed.score(X, y) > 0.5
    # warm start on sentences without feature 5: its weights are kept and trained on
    warm = clone(possible).set_params(all_possible_states=False, warm_start=True, max_iter=3)
    warm.coef_ = possible.coef_.copy()
    for name in ("classes_", "n_features_in_", "transition_coef_", "start_coef_",
                 "end_coef_", "trigram_coef_"):
        setattr(warm, name, getattr(possible, name))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warm.fit([sp.csr_matrix(x.toarray() * [1, 1, 1, 1, 1, 0]) for x in X], y)
    assert (warm.coef_[:, 5] != 0).all()


def test_warm_start_keeps_the_order():
    X, y = random_problem(n=10, seed=2)
    model = CRFTagger(max_iter=3).fit(X, y)
    before = model.coef_.copy()
    with pytest.raises(ValueError, match="cannot change order from 1 to 2"):
        model.set_params(order=2, warm_start=True).fit(X, y)
    np.testing.assert_array_equal(model.coef_, before)
    assert model.trigram_coef_ is None


def test_verbose_warm_start_pickle_clone_and_convergence_warning(capsys):
    X, y = random_problem(n=30, seed=6)
    with pytest.warns(ConvergenceWarning, match="increase max_iter"):
        model = CRFTagger(max_iter=3, verbose=1, warm_start=True).fit(X, y)
    out = capsys.readouterr().out
    assert "Iteration 1: objective" in out and "gradient norm" in out
    first = model.objective_
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, y)                       # continues from the weights
    assert model.objective_ < first
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.coef_, model.coef_)
    assert not hasattr(clone(model), "coef_")
    converged = CRFTagger(max_iter=500, tol=1e-6, delta=0).fit(X, y)
    assert converged.n_iter_ < 500


def test_lbfgs_reaches_scipys_optimum():
    """sklstruct.optimize.lbfgs against scipy's L-BFGS-B on the same strictly
    convex objectives (a CRF's and an ill-conditioned quadratic)."""
    from scipy.optimize import minimize

    from sklstruct.optimize import lbfgs

    X, y = random_problem(n=15, n_features=4, seed=8)
    model = CRFTagger(C=3.0)
    ctx, n = objective_parts(model, X, y)
    fun = lambda theta: model._objective(theta, *ctx)   # noqa: E731
    ours = lbfgs(fun, np.zeros(n), max_iter=500, gtol=1e-6, ftol=0.0)
    ref = minimize(fun, np.zeros(n), jac=True, method="L-BFGS-B",
                   options={"maxiter": 2000, "gtol": 1e-8, "ftol": 0.0})
    assert ours.success and np.abs(ours.jac).max() <= 1e-6
    assert ours.fun == pytest.approx(ref.fun, rel=1e-12)
    np.testing.assert_allclose(ours.x, ref.x, atol=1e-5)
    d = np.logspace(0, 4, 200)
    b = np.random.default_rng(0).normal(size=200)
    quad = lambda x: (0.5 * x @ (d * x) - b @ x, d * x - b)   # noqa: E731
    got = lbfgs(quad, np.zeros(200), max_iter=2000, gtol=1e-5, ftol=0.0)
    assert got.success and got.message == "the gradient is below gtol"
    assert np.abs(d * got.x - b).max() <= 1e-5         # so |x - x*| <= 1e-5 / d
    np.testing.assert_allclose(got.x, b / d, atol=1e-5)


def test_emission_gradient_over_any_feature_ranges_is_the_same_product():
    """X^T node by ranges of features (the threads' split) gives the same
    bits whatever the ranges, and scipy's product to rounding."""
    from sklstruct.learners._crf import emission_gradient

    rng = np.random.default_rng(0)
    X = sp.random(300, 40, density=0.2, format="csr", random_state=1)
    data = as_stacked([X[i:i + 3] for i in range(0, 300, 3)])
    node = rng.normal(size=(300, 4))
    whole, parts = np.empty((40, 4)), np.full((40, 4), np.nan)
    emission_gradient(data.chain_data(), node, 0, 40, whole.reshape(-1))
    for a, b in [(0, 7), (7, 8), (8, 8), (8, 33), (33, 40)]:
        emission_gradient(data.chain_data(), node, a, b, parts.reshape(-1))
    np.testing.assert_array_equal(parts, whole)
    np.testing.assert_allclose(whole, X.T @ node, rtol=1e-12)
    with pytest.raises(ValueError, match="within the features"):
        emission_gradient(data.chain_data(), node, 0, 41, whole.reshape(-1))
    with pytest.raises(ValueError, match="row per feature"):
        emission_gradient(data.chain_data(), node, 0, 40, whole.reshape(-1)[:-1])


@pytest.mark.parametrize("seed", range(4))
def test_the_compact_emission_gradient_is_the_full_products_learned_entries(seed):
    """With a StateLayout (the learned (feature, label) pairs), the gradient
    holds exactly those entries of X^T node, to the bit, for any split of
    the features, with or without the rows' starts."""
    from sklstruct.learners._crf import StateLayout, emission_gradient, row_starts

    rng = np.random.default_rng(seed)
    F, L = 25, 5
    X = sp.random(120, F, density=0.3, format="csr", random_state=seed)
    data = as_stacked([X[i:i + 4] for i in range(0, 120, 4)])
    c, node = data.chain_data(), rng.normal(size=(120, L))
    states = np.flatnonzero(rng.random(F * L) < 0.3)     # (a feature may have none)
    full = np.empty(F * L)
    emission_gradient(c, node, 0, F, full)
    layout = StateLayout.of_states(states, F, L)
    np.testing.assert_array_equal(layout.label, states % L)
    layout.ptr[:] = 10 ** 9                  # (copies: the layout the kernel reads is its own)
    layout.label[:] = -1
    for cuts in ([0, F], [0, 3, 3, 11, 24, F]):
        compact = np.full(len(states), np.nan)
        for a, b in zip(cuts[:-1], cuts[1:]):
            emission_gradient(c, node, a, b, compact, row_starts(c, a) if seed % 2 else None,
                              layout)
        np.testing.assert_array_equal(compact, full[states])


def test_the_gradient_kernels_refuse_what_could_reach_out_of_bounds():
    """A layout is made once (no re-initialisation under a running kernel,
    no unpickled state that skipped the checks), no ChainData is None, and
    a dense G is checked without the product F x L that could wrap around."""
    import pickle

    from sklstruct._chain import ChainData
    from sklstruct.learners._crf import StateLayout, crf_pass, emission_gradient, row_starts

    layout = StateLayout([0, 1], [0], 1)
    with pytest.raises(RuntimeError, match="already made"):
        layout.__init__([0], [], 1)
    assert not hasattr(layout, "__setstate_cython__")
    with pytest.raises(TypeError):
        pickle.dumps(layout)
    c = ChainData(np.array([0]), np.zeros(0, np.int32), np.zeros(0), np.array([0, 0]), 32)
    with pytest.raises(ValueError, match="row per feature"):
        emission_gradient(c, np.empty((0, 1 << 59)), 0, 31, np.zeros(0))
    with pytest.raises(TypeError):
        row_starts(None, 0)
    with pytest.raises(TypeError):
        emission_gradient(None, np.ones((1, 1)), 0, 1, np.zeros(1))
    with pytest.raises(TypeError):
        crf_pass(None, np.zeros(1, np.int32), np.zeros(1), np.zeros((3, 1)), 0, 1, np.zeros(1))


def test_a_bad_state_layout_is_refused_and_a_mismatched_one_not_used():
    from sklstruct.learners._crf import StateLayout, emission_gradient

    for ptr, label, match in [([1, 2], [0, 1], "start at 0"), ([0, 2, 1], [0], "never decrease"),
                              ([0, 3], [0, 1], "end at"), ([0, 2], [0, 5], r"in \[0, 5\)"),
                              ([0, 1], [-1], r"in \[0, 5\)"), ([], [], "not empty")]:
        with pytest.raises(ValueError, match=match):
            StateLayout(ptr, label, 5)
    X = sp.random(10, 4, density=0.5, format="csr", random_state=0)
    c, node = as_stacked([X]).chain_data(), np.ones((10, 5))
    layout = StateLayout.of_states([0, 6, 19], 4, 5)
    for bad_layout, G in [(StateLayout.of_states([0, 6], 3, 5), np.empty(2)),
                          (StateLayout.of_states([0, 6, 19], 4, 6), np.empty(3)),
                          (layout, np.empty(4))]:
        with pytest.raises(ValueError, match="layout must have"):
            emission_gradient(c, node, 0, 4, G, None, bad_layout)


def test_row_starts_are_where_each_row_reaches_a_feature_and_any_starts_are_safe():
    """row_starts gives each row's first entry at or past f0 (a brute-force
    scan); emission_gradient with them gives the bits of the bisection,
    and with wrong starts (out of range, too early, too late) never adds
    an entry outside its features nor reads outside the row."""
    from sklstruct.learners._crf import emission_gradient, row_starts

    rng = np.random.default_rng(2)
    X = sp.random(200, 30, density=0.25, format="csr", random_state=3)
    data = as_stacked([X[i:i + 4] for i in range(0, 200, 4)])
    c, node = data.chain_data(), rng.normal(size=(200, 3))
    for f0 in (0, 1, 13, 29, 30):
        expected = [next((j for j in range(X.indptr[r], X.indptr[r + 1])
                          if X.indices[j] >= f0), X.indptr[r + 1]) - X.indptr[r]
                    for r in range(200)]
        np.testing.assert_array_equal(row_starts(c, f0), expected)
    whole = np.empty((30, 3))
    emission_gradient(c, node, 0, 30, whole.reshape(-1))
    parts = np.full((30, 3), np.nan)
    for a, b in [(0, 9), (9, 21), (21, 30)]:
        emission_gradient(c, node, a, b, parts.reshape(-1), row_starts(c, a))
    np.testing.assert_array_equal(parts, whole)
    lengths = np.diff(X.indptr).astype(np.int32)
    for bad in (np.zeros(200, np.int32), lengths, lengths + 5, np.full(200, -3, np.int32),
                np.full(200, 2**31 - 1, np.int32)):
        G = np.full((30, 3), np.nan)
        emission_gradient(c, node, 9, 21, G.reshape(-1), bad)
        assert np.isnan(G[:9]).all() and np.isnan(G[21:]).all()
        if bad is lengths:
            assert not G[9:21].any()       # (every row's run skipped)
        else:
            np.testing.assert_array_equal(G[9:21], whole[9:21])
    with pytest.raises(ValueError, match="row per token"):
        emission_gradient(c, node, 0, 30, whole.reshape(-1), np.zeros(5, np.int32))


@pytest.mark.parametrize("all_possible_states", [True, False])
def test_a_compact_shard_computes_the_same_objective(all_possible_states):
    """A shard keeping only its sentences' columns (a Dask partition's)
    gives the values and gradient of the full one."""
    from sklstruct.learners._crf_shard import CRFShard

    X, y = random_problem(n=12, n_features=6, seed=4)
    X = [sp.csr_matrix(x.toarray() * [1, 1, 0, 1, 1, 0]) for x in X]   # columns 2, 5 unused
    model = CRFTagger(all_possible_states=all_possible_states)
    shard, meta, classes, _, states = model._local_problem(X, y, False)
    compact = CRFShard(shard.data, shard.codes, len(classes), shard.n_chain, states,
                       compact=True)
    assert compact.data.n_features == 4 and compact.n_theta == shard.n_theta
    theta = np.random.default_rng(1).normal(size=shard.n_theta)
    weights = (np.full(len(meta), 0.5), np.ones(len(meta)), None)
    for a, b in zip(shard.values(theta, False, weights), compact.values(theta, False, weights)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_seen_states_are_the_nonzero_feature_label_pairs(seed):
    """The emission weights a CRF learns without all_possible_states: every
    (feature, label) pair with a nonzero value on a token of that label,
    sorted and distinct (brute force over the tokens; explicit zeros and
    negative values included)."""
    from sklstruct.learners._crf_shard import seen_states

    rng = np.random.default_rng(seed)
    n_tok, F, L = int(rng.integers(1, 40)), int(rng.integers(1, 12)), int(rng.integers(1, 5))
    dense = rng.choice([0.0, 0.0, 1.0, -2.0, 0.5], size=(n_tok, F))
    matrix = sp.csr_matrix(dense)
    matrix.data[rng.random(matrix.data.size) < 0.2] = 0.0      # explicit zeros stay stored
    data = as_stacked([matrix])
    codes = rng.integers(0, L, size=n_tok).astype(np.int32)
    want = sorted({f * L + int(codes[t]) for t in range(n_tok) for f in range(F)
                   if matrix[t, f] != 0})
    got = seen_states(data, codes, L)
    assert got.dtype == np.int64 and got.tolist() == want

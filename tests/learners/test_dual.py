"""k-best SDM and LaRank: the dual machinery and the theory of Mancev & Todorovic (k-Best Max-margin Approaches for Sequence Labeling), sections 3, 4.2, 4.3."""
import itertools
import pickle

import numpy as np
import pytest

from sklstruct import KBestMIRATagger, LaRankTagger, PassiveAggressiveTagger, SDMTagger
from sklstruct._chain import COSTS, ChainWeights
from sklstruct.chain import as_stacked
from sklstruct.learners._dual import DualState, dual_epoch
from sklstruct.chain import joint_feature
from _oracles import dF, full_dual_optimum, random_problem, separable_problem, tiny_problem


def working_sets(state):
    """[(sequences (m, T) int32, lambda (m,), cost (m,))] of every example,
    row 0 the gold sequence, from the state's exported arrays."""
    e = state.export()
    out, seq_pos, pos = [], 0, 0
    for m, T in zip(e["sizes"], e["T"]):
        seqs = e["sequences"][seq_pos:seq_pos + m * T].reshape(m, T)
        out.append((seqs, e["lam"][pos:pos + m], e["cost"][pos:pos + m]))
        seq_pos, pos = seq_pos + m * T, pos + m
    return out


def weights_from_duals(state, X, n_labels, order=1):
    """Eq. 6: w = sum_n sum_y lambda_{n,y} dF_n(y), computed densely."""
    w = 0.0
    for x, (seqs, lam, _) in zip(X, working_sets(state)):
        for path, l in zip(seqs, lam):
            w = w + l * dF(x, seqs[0], path, n_labels, order)
    return w


def raw_weights(model):
    return np.concatenate([model._weights.W.ravel(), model._weights.P.ravel()])


def dual_objective(state, X, n_labels, order=1):
    """sum lambda L - 1/2 ||w||^2 (minus eq. 4), independently of the solver."""
    w = weights_from_duals(state, X, n_labels, order)
    lin = sum(np.dot(lam, cost) for _, lam, cost in working_sets(state))
    return lin - 0.5 * np.dot(w, w)


# -- the dual objective and eq. 6 ------------------------------------------------------

@pytest.mark.parametrize("k, n_reprocess, prune, cost",
                         [(1, 0, False, "hamming"), (3, 0, False, "hamming"),
                          (2, 3, True, "hamming"), (2, 2, True, "zero_one")])
def test_dual_objective_never_decreases_and_matches_the_duals(k, n_reprocess, prune, cost):
    X, y = random_problem(seed=3)
    corpus = as_stacked(X)
    codes = np.concatenate(y).astype(np.int32)
    L = 3
    state = DualState(corpus.offsets, codes, 0.5)
    state.seed(7)
    weights = ChainWeights(corpus.n_features, L, False)
    W, P = weights.W, weights.P
    trace = []
    for epoch in range(3):
        buf = np.full(200000, np.nan)
        order = np.random.default_rng(epoch).permutation(len(corpus)).astype(np.int64)
        _, steps, n_trace = dual_epoch(
            state, corpus.chain_data(), order, weights, k, cost=COSTS[cost], tol=1e-9,
            n_reprocess=n_reprocess, prune=prune, trace=buf)
        assert n_trace == steps > 0
        trace.extend(buf[:n_trace])
        # after every pass: w is the dual combination of eq. 6, the objective the
        # one the solver tracked, every example's lambdas sum to C and are >= 0
        w = np.concatenate([W.ravel(), P.ravel()])
        np.testing.assert_allclose(w, weights_from_duals(state, X, L), atol=1e-9)
        assert state.objective == pytest.approx(dual_objective(state, X, L), abs=1e-9)
        for n, (seqs, lam, costs) in enumerate(working_sets(state)):
            assert lam.sum() == pytest.approx(0.5) and (lam >= 0).all()
            np.testing.assert_array_equal(seqs[0], y[n])
            expected = [float(np.sum(s != y[n])) for s in seqs]
            if cost == "zero_one":
                expected = [float(e > 0) for e in expected]
            np.testing.assert_array_equal(costs, expected)
            assert len({tuple(s) for s in seqs}) == len(seqs)  # no duplicates
    trace = np.asarray(trace)
    assert np.all(np.diff(trace) >= -1e-12), np.diff(trace).min()
    assert trace[0] > 0


@pytest.mark.parametrize("model", [
    SDMTagger(k=2, C=0.3, max_iter=3, random_state=0),
    SDMTagger(k=3, C=0.3, max_iter=3, max_working_set=3, random_state=0, cost="zero_one"),
    LaRankTagger(k=2, n_reprocess=2, C=0.3, max_iter=2, random_state=0),
], ids=["sdm", "sdm-capped", "larank"])
@pytest.mark.parametrize("order", [1, 2])
def test_weights_equal_sum_of_lambda_dF_after_training(model, order):
    X, y = random_problem(seed=5)
    model.set_params(order=order).fit(X, y)
    np.testing.assert_allclose(raw_weights(model), weights_from_duals(model._dual, X, 3, order),
                               atol=1e-9)
    assert model.dual_objective_ == pytest.approx(dual_objective(model._dual, X, 3, order),
                                                  abs=1e-9)
    sizes = model._dual.export()["sizes"]
    if getattr(model, "max_working_set", None):
        assert sizes.max() <= model.max_working_set
    lam = model._dual.export()["lam"]
    assert model.n_support_ == np.sum(lam > 0)
    assert [h["epoch"] for h in model.history_] == list(range(1, model.max_iter + 1))
    objectives = [h["dual_objective"] for h in model.history_]
    assert objectives == sorted(objectives)


# -- convergence to the optimum of the full dual ---------------------------------------


@pytest.mark.parametrize("seed, k", [(0, 1), (1, 2), (2, 3)])
def test_sdm_reaches_the_optimum_of_the_full_dual(seed, k):
    X, y = tiny_problem(seed)
    C = 0.8
    optimum, w_opt = full_dual_optimum(X, y, 2, C)
    model = SDMTagger(k=k, C=C, tol=1e-12, max_iter=300, max_smo_iter=100000,
                      random_state=0, average=False).fit(X, y)
    assert model.dual_objective_ == pytest.approx(optimum, rel=1e-7, abs=1e-8)
    np.testing.assert_allclose(raw_weights(model), w_opt, atol=1e-4)
    # a few passes is not yet the optimum: the test can tell
    early = SDMTagger(k=1, C=C, tol=1e-10, max_iter=1, random_state=0).fit(X, y)
    assert early.dual_objective_ < optimum - 1e-6


def test_every_single_smo_step_raises_the_independently_computed_dual():
    """One SMO step per call (max_smo_steps=1), the dual objective recomputed
    from the working sets (eq. 4 via eq. 6) after each: it never decreases."""
    X, y = tiny_problem(seed=2, n=5, n_labels=3, max_T=3)
    corpus = as_stacked(X)
    codes = np.concatenate(y).astype(np.int32)
    L = 3
    state = DualState(corpus.offsets, codes, 0.7)
    weights = ChainWeights(corpus.n_features, L, False)
    rng = np.random.default_rng(0)
    before, steps = dual_objective(state, X, L), 0
    for _ in range(150):
        order = np.array([rng.integers(len(X))], dtype=np.int64)
        _, n, _ = dual_epoch(state, corpus.chain_data(), order, weights, 2, tol=1e-9,
                             max_smo_steps=1)
        after = dual_objective(state, X, L)
        assert after >= before - 1e-12
        assert state.objective == pytest.approx(after, abs=1e-9)
        before, steps = after, steps + n
    assert steps > 20 and before > 0


def test_capped_working_set_keeps_the_most_violating_candidate():
    """With room for one new sequence, the best of the k loss-augmented
    candidates (eq. 12) enters; later candidates of the same call do not evict it."""
    X, y = tiny_problem(seed=6, n=3, n_labels=3, max_T=3)
    X, y = [x for x in X if x.shape[0] >= 2], [t for t, x in zip(y, X) if x.shape[0] >= 2]
    corpus = as_stacked(X)
    L = 3
    rng = np.random.default_rng(1)
    W, P = rng.normal(size=(corpus.n_features, L)), rng.normal(size=(L + 2, L))
    for n, (x, gold) in enumerate(zip(X, y)):
        state = DualState(corpus.offsets, np.concatenate(y).astype(np.int32), 1.0)
        weights = ChainWeights(corpus.n_features, L, False)
        weights.W[...], weights.P[...] = W, P
        dual_epoch(state, corpus.chain_data(), np.array([n], dtype=np.int64), weights, 3,
                   max_smo_steps=0, max_size=2)

        def augmented(path):
            Fw, Fp = joint_feature(x, np.array(path), L)
            return np.sum(W * Fw) + np.sum(P * Fp) + np.sum(np.array(path) != gold)

        paths = [p for p in itertools.product(range(L), repeat=len(gold)) if list(p) != list(gold)]
        best = max(paths, key=augmented)
        seqs = working_sets(state)[n][0]
        assert len(seqs) == 2
        np.testing.assert_array_equal(seqs[1], best)


def test_warm_start_refuses_a_new_cost_and_kappa_must_be_below_C():
    X, y = random_problem(seed=4)
    model = SDMTagger(k=2, C=0.5, max_iter=1, warm_start=True).fit(X, y)
    with pytest.raises(ValueError, match="cannot change cost"):
        model.set_params(cost="zero_one").fit(X, y)
    for cls in (SDMTagger, LaRankTagger):
        with pytest.raises(ValueError, match="kappa=0.5 must be smaller than C=0.5"):
            cls(C=0.5, kappa=0.5).fit(X, y)


# -- equivalences of the first epoch (Mancev & Todorovic, Fig. 1 and end of section 4.2) ----------

def test_larank_with_k1_and_no_reprocess_equals_sdm_first_epoch():
    X, y = random_problem(seed=8)
    sdm = SDMTagger(k=1, C=0.4, max_iter=1, random_state=3).fit(X, y)
    lar = LaRankTagger(k=1, n_reprocess=0, C=0.4, max_iter=1, random_state=3).fit(X, y)
    np.testing.assert_allclose(sdm.coef_, lar.coef_, atol=1e-12)
    np.testing.assert_allclose(sdm._decoding_weights()[1], lar._decoding_weights()[1], atol=1e-12)
    assert sdm.dual_objective_ == pytest.approx(lar.dual_objective_, abs=1e-12)
    assert sdm.n_support_ == lar.n_support_


def test_sdm_first_epoch_equals_pa_and_kbest_mira():
    X, y = random_problem(seed=9)
    common = dict(C=0.4, max_iter=1, random_state=2)
    sdm1 = SDMTagger(k=1, tol=0.0, **common).fit(X, y)
    pa = PassiveAggressiveTagger(k=1, **common).fit(X, y)
    np.testing.assert_allclose(sdm1.coef_, pa.coef_, atol=1e-10)
    np.testing.assert_allclose(sdm1._decoding_weights()[1], pa._decoding_weights()[1], atol=1e-10)
    sdm3 = SDMTagger(k=3, tol=1e-12, max_smo_iter=100000, **common).fit(X, y)
    mira = KBestMIRATagger(k=3, tol=1e-12, max_smo_iter=100000, **common).fit(X, y)
    np.testing.assert_allclose(sdm3.coef_, mira.coef_, atol=1e-8)
    # ...but only the first epoch: MIRA forgets its constraints, SDM keeps them
    sdm3b = SDMTagger(k=3, tol=1e-12, C=0.4, max_iter=3, random_state=2).fit(X, y)
    mirab = KBestMIRATagger(k=3, tol=1e-12, C=0.4, max_iter=3, random_state=2).fit(X, y)
    assert not np.allclose(sdm3b.coef_, mirab.coef_, atol=1e-6)


# -- Proposition 1 ---------------------------------------------------------------------

def max_dF_norm(X, y, n_labels):
    return max(np.sum(dF(x, g, np.array(s), n_labels) ** 2)
               for x, g in zip(X, y)
               for s in itertools.product(range(n_labels), repeat=len(g)))


@pytest.mark.parametrize("k, n_reprocess, C, tol, kappa",
                         [(1, 0, 1.0, 1e-6, 0.0), (2, 1, 1.0, 1e-6, 0.0),
                          (3, 5, 0.5, 1e-6, 1e-3), (2, 10, 1.0, 1e-6, 0.0),
                          (5, 3, 1.0, 1.0, 0.5)])
def test_larank_support_vectors_respect_proposition_1(k, n_reprocess, C, tol, kappa):
    X, y = random_problem(n=25, seed=12)
    X, y = [x[:4] for x in X], [t[:4] for t in y]   # short sentences: rho by enumeration
    model = LaRankTagger(k=k, n_reprocess=n_reprocess, C=C, tol=tol, kappa=kappa,
                         random_state=0).fit(X, y)
    N = len(X)
    rho = max_dF_norm(X, y, 3)
    second = max(2 * rho * N * C / tol ** 2, 2 * N * C / (kappa * tol) if kappa else np.inf)
    bound = min(N * ((n_reprocess + 1) * k + 1), second)
    assert model.history_[0]["smo_steps"] > 0
    assert N < model.n_support_ <= bound   # the N golds, plus what the pass added
    # LaRank keeps support vectors only (plus each gold sequence)
    lam = model._dual.export()["lam"]
    assert np.sum(lam == 0) <= N


# -- learning ------------------------------------------------------------------------

@pytest.mark.parametrize("model", [
    SDMTagger(k=2, C=10.0, max_iter=30, random_state=0),
    LaRankTagger(k=2, n_reprocess=5, C=10.0, max_iter=3, random_state=0),
], ids=["sdm", "larank"])
def test_separable_problem_reaches_zero_training_error(model):
    X, y = separable_problem()
    model.fit(X, y)
    assert model.score(X, y) == 1.0


def test_warm_start_and_pickle_continue_the_same_optimisation():
    X, y = random_problem(seed=4)
    full = SDMTagger(k=2, C=0.5, max_iter=3, random_state=1).fit(X, y)
    part = SDMTagger(k=2, C=0.5, max_iter=1, random_state=1, warm_start=True).fit(X, y)
    part = pickle.loads(pickle.dumps(part))
    part.set_params(max_iter=2).fit(X, y)
    np.testing.assert_allclose(full.coef_, part.coef_, atol=1e-12)
    assert full.dual_objective_ == pytest.approx(part.dual_objective_, abs=1e-12)
    assert part.n_iter_ == 3
    with pytest.raises(ValueError, match="same training set"):
        part.fit(X[:-1], y[:-1])
    with pytest.raises(ValueError, match="cannot change C"):
        part.set_params(C=1.0).fit(X, y)


def test_larank_random_state_drives_the_picks():
    X, y = random_problem(seed=6)
    a = LaRankTagger(k=2, n_reprocess=3, random_state=0, shuffle=False).fit(X, y)
    b = LaRankTagger(k=2, n_reprocess=3, random_state=0, shuffle=False).fit(X, y)
    c = LaRankTagger(k=2, n_reprocess=3, random_state=1, shuffle=False).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert not np.array_equal(a.coef_, c.coef_)


def test_verbose_reports_objective_support_vectors_and_time(capsys):
    X, y = random_problem(seed=2)
    SDMTagger(k=2, max_iter=2, verbose=1, random_state=0).fit(X, y)
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2
    assert out[1].startswith("-- Pass 2: dual objective")
    assert "support vectors" in out[1] and out[1].endswith(" s")


# -- scikit-learn citizenship ------------------------------------------------------------

def test_grid_search_clone_and_pickle_over_a_pipeline():
    from sklearn.base import clone
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline

    from sklstruct import SequenceVectorizer
    from sklstruct.datasets import make_chunking_corpus
    from sklstruct.metrics import chunk_f1_scorer

    X, y = make_chunking_corpus(150, random_state=0)
    vec = SequenceVectorizer(["bias", "word", "pos", "pos[-1]|pos"], window=1)
    for tagger, grid in [(SDMTagger(max_iter=2, random_state=0), {"C": [0.01, 1.0], "k": [1, 2]}),
                         (LaRankTagger(n_reprocess=2, random_state=0), {"C": [0.01, 1.0]})]:
        name = type(tagger).__name__.lower()
        search = GridSearchCV(make_pipeline(clone(vec), tagger),
                              {f"{name}__{p}": v for p, v in grid.items()},
                              scoring=chunk_f1_scorer, cv=3).fit(X, y)
        assert len(search.cv_results_["params"]) == np.prod([len(v) for v in grid.values()])
        best = search.best_estimator_
        assert best[-1].get_params()["C"] == search.best_params_[f"{name}__C"]
        assert chunk_f1_scorer(best, X, y) > 0.8
        again = pickle.loads(pickle.dumps(best))
        assert all(np.array_equal(a, b) for a, b in zip(again.predict(X), best.predict(X)))
        assert again[-1].n_support_ == best[-1].n_support_
        fresh = clone(best[-1])
        assert not hasattr(fresh, "coef_") and not hasattr(fresh, "_dual")

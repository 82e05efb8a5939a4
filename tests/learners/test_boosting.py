"""Sequence boosting (Altun, Johnson & Hofmann, Algorithm 2, and the exact
line search beyond it): the kernels against enumeration of all label
sequences, the bounds u^max / u^min by enumeration, the line search against a
numeric minimiser, the loss falling every update, and learning (a separable
problem, Spanish NER)."""
import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar
from scipy.special import logsumexp

from sklstruct import SequenceBoostingTagger
from sklstruct.chain import as_stacked, joint_feature
from sklstruct.learners._boosting import boost_pass, tilted_moments
from sklstruct.optimize import convex_line_search as line_search
from _oracles import brute_force, random_problem, separable_problem


#: The sequential algorithm on the exp-loss alone, every weight set by the
#: updates that ``history_`` records (no Gaussian prior, no corrective step).
EXACT = {"C": None, "corrective_every": 0, "step": "line_search",
         "selection": "newton_per_cost", "features_per_round": 10}


def sequential(**params):
    """A tagger with :data:`EXACT` updated by ``params``."""
    return SequenceBoostingTagger(**{**EXACT, **params})


def exp_loss(model, X, y):
    """sum_i 1 / P(y^i | x^i) - 1, by enumeration (eq. 2)."""
    W, P = model._decoding_weights()
    total = 0.0
    for x, gold in zip(X, y):
        seqs, scores = brute_force(x.toarray() @ W, P)
        g = np.searchsorted(model.classes_, gold)
        s_gold = scores[np.flatnonzero((seqs == g).all(axis=1))[0]]
        total += np.exp(logsumexp(scores) - s_gold) - 1.0
    return total


def _problem(seed, n=5, F=3, L=3, max_T=4, binary=False):
    rng = np.random.default_rng(seed)
    X = []
    for _ in range(n):
        T = int(rng.integers(1, max_T + 1))
        x = rng.random((T, F)) < 0.5 if binary else rng.normal(size=(T, F))
        X.append(sp.csr_matrix(x.astype(float)))
    y = [rng.integers(0, L, size=x.shape[0]).astype(np.int32) for x in X]
    W = rng.normal(size=(F, L))
    P = rng.normal(size=(L + 2, L))
    return X, y, W, P


def _enumerate(x, gold, W, P, L):
    """Every sequence with its joint feature vector and score."""
    FW, FP = joint_feature(x, gold, L)
    rows = []
    for seq in itertools.product(range(L), repeat=len(gold)):
        GW, GP = joint_feature(x, np.array(seq), L)
        rows.append(np.concatenate([GW.ravel(), GP.ravel()]))
    feats = np.array(rows)
    theta = np.concatenate([W.ravel(), P.ravel()])
    return feats, feats @ theta, np.concatenate([FW.ravel(), FP.ravel()])


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10 ** 6))
def test_boost_pass_matches_enumeration(seed):
    X, y, W, P = _problem(seed)
    L = P.shape[1]
    data = as_stacked(X)
    codes = np.concatenate(y).astype(np.int32)
    n, n_tok = len(X), data.offsets[-1]
    d, mu = np.zeros(n), np.zeros((n_tok, L))
    chain, gp = np.zeros((n, L + 2, L)), np.zeros((n, L + 2, L))
    S = np.array([i for i in range(n) if i % 2 == 0] + [1] * (n > 1), dtype=np.int64)
    S = np.unique(S)
    boost_pass(data.chain_data(), codes, W.ravel(), P, S, d, mu, chain, gp)
    F = W.shape[0]
    for s in S:
        x, gold = X[s], y[s]
        feats, scores, fg = _enumerate(x, gold, W, P, L)
        p = np.exp(scores - logsumexp(scores))
        s_gold = fg @ np.concatenate([W.ravel(), P.ravel()])
        assert d[s] == pytest.approx(logsumexp(scores) - s_gold, abs=1e-10)
        expected = p @ feats
        np.testing.assert_allclose(chain[s].ravel(), expected[F * L:], atol=1e-10)
        seqs = np.array(list(itertools.product(range(L), repeat=len(gold))))
        rows = slice(data.offsets[s], data.offsets[s + 1])
        for t in range(len(gold)):
            np.testing.assert_allclose(mu[rows][t], [p[seqs[:, t] == b].sum() for b in range(L)],
                                       atol=1e-10)
        want = np.zeros((L + 2, L))
        for t in range(1, len(gold)):
            a, b = gold[t - 1], gold[t]
            want[a, b] += p[(seqs[:, t - 1] == a) & (seqs[:, t] == b)].sum()
        want[L, gold[0]] += p[seqs[:, 0] == gold[0]].sum()
        want[L + 1, gold[-1]] += p[seqs[:, -1] == gold[-1]].sum()
        np.testing.assert_allclose(gp[s], want, atol=1e-10)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10 ** 6), st.floats(-3, 3), st.sampled_from(["emission", "chain"]))
def test_tilted_moments_match_enumeration(seed, delta, kind):
    """l(delta) = log(1 / P(gold)) at theta + delta e_k, its first two
    derivatives (the tilted mean of F_k minus its gold count, and variance)."""
    X, y, W, P = _problem(seed)
    F, L = W.shape
    rng = np.random.default_rng(seed + 1)
    data = as_stacked(X)
    codes = np.concatenate(y).astype(np.int32)
    if kind == "emission":
        a, label = int(rng.integers(F)), int(rng.integers(L))
        k, spec = a * L + label, (label, -1, -1)
        coef = np.asarray(data.matrix[:, a].todense()).ravel()
    else:
        prow, pcol = int(rng.integers(L + 2)), int(rng.integers(L))
        k, spec, coef = F * L + prow * L + pcol, (-1, prow, pcol), np.zeros(0)
    S = np.arange(len(X), dtype=np.int64)
    out = np.empty((len(S), 3))
    tilted_moments(data.chain_data(), codes, W.ravel(), P, S, coef, *spec, delta, out)
    for s in S:
        feats, scores, fg = _enumerate(X[s], y[s], W, P, L)
        theta = np.concatenate([W.ravel(), P.ravel()])
        tilted = scores + delta * feats[:, k]
        s_gold = fg @ theta + delta * fg[k]
        p = np.exp(tilted - logsumexp(tilted))
        mean = p @ feats[:, k]
        assert out[s, 0] == pytest.approx(logsumexp(tilted) - s_gold, abs=1e-9)
        assert out[s, 1] == pytest.approx(mean - fg[k], abs=1e-9)
        assert out[s, 2] == pytest.approx(p @ (feats[:, k] - mean) ** 2, abs=1e-9)


def test_tilted_moments_survive_extreme_weights():
    """Scores of magnitude 1e3 (the scaled products underflow): the exact
    fallback gives the log-space values."""
    X, y, W, P = _problem(7, max_T=4)
    W, P = W * 400.0, P * 400.0
    data = as_stacked(X)
    codes = np.concatenate(y).astype(np.int32)
    S = np.arange(len(X), dtype=np.int64)
    out = np.empty((len(S), 3))
    tilted_moments(data.chain_data(), codes, W.ravel(), P, S, np.zeros(0), -1, 0, 1, 2.0, out)
    L = P.shape[1]
    for s in S:
        feats, scores, fg = _enumerate(X[s], y[s], W, P, L)
        k = W.size + 1
        tilted = scores + 2.0 * feats[:, k]
        s_gold = fg @ np.concatenate([W.ravel(), P.ravel()]) + 2.0 * fg[k]
        assert out[s, 0] == pytest.approx(logsumexp(tilted) - s_gold, rel=1e-9, abs=1e-6)
    assert np.isfinite(out).all()


@pytest.mark.parametrize("seed, C", [(0, None), (1, None), (2, None), (0, 0.01), (1, 0.01)])
def test_line_search_finds_the_minimum_of_the_true_exp_loss(seed, C):
    """The step taken minimises the exp-loss (with C: C times it plus the
    Gaussian prior ||theta||^2 / 2) along the chosen coordinate, as a numeric
    minimiser of the enumerated loss finds."""
    X, y = random_problem(n=8, seed=seed)
    model = sequential(n_rounds=1, features_per_round=1, smoothing=1e-6, C=C).fit(X, y)
    kind, a, label, step = model.chosen_features_[0]
    assert kind == "emission" or kind in ("transition", "start", "end")
    base = SequenceBoostingTagger(n_rounds=1, features_per_round=1)
    base.classes_ = model.classes_
    base.n_features_in_ = model.n_features_in_

    def loss(delta):
        base.coef_ = model.coef_.copy()
        base.transition_coef_ = model.transition_coef_.copy()
        base.start_coef_, base.end_coef_ = model.start_coef_.copy(), model.end_coef_.copy()
        base.trigram_coef_ = None
        j = int(np.searchsorted(model.classes_, label))
        if kind == "emission":
            base.coef_[j, a] += delta - step
        elif kind == "transition":
            base.transition_coef_[int(np.searchsorted(model.classes_, a)), j] += delta - step
        else:
            getattr(base, f"{kind}_coef_")[j] += delta - step
        if C is None:
            return exp_loss(base, X, y)
        W, P = base._decoding_weights()
        return C * exp_loss(base, X, y) + 0.5 * (np.sum(W ** 2) + np.sum(P ** 2))

    best = minimize_scalar(loss, bounds=(step - 2, step + 2), method="bounded",
                           options={"xatol": 1e-9})
    if abs(best.x - step) < 1.9:              # an interior minimum (not one at infinity)
        assert loss(step) <= best.fun * (1 + 1e-7)
        assert step == pytest.approx(best.x, abs=1e-3)
    else:                                     # one-sided: the loss falls for ever
        assert C is None and loss(step) < loss(0.0) and abs(step) > 5


def test_line_search_on_convex_functions():
    # a quadratic: Newton in one step; an exponential: the slope-smoothed end
    x, h, n = line_search(lambda d: ((d - 3) ** 2, 2 * (d - 3), 2.0), 1e-9)
    assert x == pytest.approx(3) and n <= 3
    f = lambda d: (np.log1p(np.exp(-d)), -1 / (1 + np.exp(d)),  # noqa: E731
                   np.exp(d) / (1 + np.exp(d)) ** 2)
    x, h, n = line_search(f, 0.01)
    # h'(x) = -1 / (1 + e^x) reaches 0.01 |h'(0)| = 0.005: x = log(199)
    assert abs(f(x)[1]) <= 0.005 and x == pytest.approx(np.log(199), rel=0.2)
    x, h, n = line_search(lambda d: (-d, -1.0, 0.0), 0.01)
    assert x == 30.0 and n <= 6                        # expands, capped at MAX_STEP


def test_bounds_match_enumeration():
    rng = np.random.default_rng(3)
    X = [sp.csr_matrix(rng.normal(size=(rng.integers(1, 5), 3))) for _ in range(6)]
    y = [rng.integers(0, 3, size=x.shape[0]) for x in X]
    data = as_stacked(X)
    codes = np.concatenate(y).astype(np.int32)
    umax, umin = SequenceBoostingTagger._bounds(data, codes, 3)
    hi, lo = np.full_like(umax, -np.inf), np.full_like(umin, np.inf)
    for x, gold in zip(X, y):
        FW, FP = joint_feature(x, gold, 3)
        for seq in itertools.product(range(3), repeat=len(gold)):
            GW, GP = joint_feature(x, np.array(seq), 3)
            diff = np.concatenate([(GW - FW).ravel(), (GP - FP).ravel()])
            hi, lo = np.maximum(hi, diff), np.minimum(lo, diff)
    # emission bounds are exact; a transition's count bound (T - 1 for (a, a),
    # T // 2 for (a, b): exact for every length) may exceed what the gold
    # counts of one sentence allow, never fall below it
    F = 3 * 3
    np.testing.assert_allclose(umax[:F], hi[:F], atol=1e-12)
    np.testing.assert_allclose(umin[:F], lo[:F], atol=1e-12)
    assert np.all(umax[F:] >= hi[F:] - 1e-12) and np.all(umin[F:] <= lo[F:] + 1e-12)
    np.testing.assert_allclose(umin[F:], lo[F:])
    np.testing.assert_allclose(umax[F + 9:], hi[F + 9:])        # start and end: exact


@pytest.mark.parametrize("seed", [1, 2])
def test_algorithm_2_lowers_the_loss_by_at_least_its_bound(seed):
    """The paper's algorithm (ranking and step by the bound): each round
    multiplies the exp-loss by at most the bound."""
    X, y = random_problem(n=10, seed=seed)
    previous = None
    for n in range(1, 9):
        model = sequential(n_rounds=n, features_per_round=1, selection="bound",
                                       step="bound").fit(X, y)
        loss = exp_loss(model, X, y)
        record = model.history_[-1]
        assert 0 < record["bound"] < 1
        if previous is not None:
            assert np.exp(record["log_loss_before"]) == pytest.approx(previous, rel=1e-9)
            assert loss <= previous * record["bound"] * (1 + 1e-12)
        previous = loss


@pytest.mark.parametrize("params", [{}, {"features_per_round": 1}, {"learning_rate": 0.5},
                                    {"selection": "bound"}, {"step": "bound"}])
def test_every_update_lowers_the_tracked_loss(params):
    X, y = random_problem(n=12, seed=4)
    model = sequential(n_rounds=15, **params).fit(X, y)
    for h in model.history_:
        assert h["log_loss_after"] <= h["log_loss_before"] + 1e-9
    assert exp_loss(model, X, y) == pytest.approx(np.exp(model.history_[-1]["log_loss_after"]),
                                                  rel=1e-8)


def test_line_search_beats_the_bound_step():
    X, y = random_problem(n=20, seed=5)
    exact = sequential(n_rounds=20, features_per_round=1).fit(X, y)
    paper = sequential(n_rounds=20, features_per_round=1, selection="bound",
                                   step="bound").fit(X, y)
    assert exp_loss(exact, X, y) < exp_loss(paper, X, y)


def test_separable_problem_reaches_zero_training_error(capsys):
    X, y = separable_problem()
    model = sequential(n_rounds=30, verbose=1).fit(X, y)
    assert model.score(X, y) == 1.0
    assert len(model.chosen_features_) == len(model.history_)
    kinds = {c[0] for c in model.chosen_features_}
    assert {"emission", "transition"} <= kinds
    assert "Round 1:" in capsys.readouterr().out
    default = SequenceBoostingTagger(verbose=1).fit(X, y)          # step="joint"
    assert default.score(X, y) == 1.0
    assert len(default.history_) == default.n_iter_
    assert "Round 1:" in capsys.readouterr().out
    paper = SequenceBoostingTagger(n_rounds=300, features_per_round=1, selection="bound",
                                   step="bound").fit(X, y)
    assert paper.score(X, y) == 1.0


def test_long_sentences_do_not_overflow():
    """At w = 0, 1 / P(y | x) = 3 ** 700 for a 700-token sentence."""
    rng = np.random.default_rng(1)
    X = [sp.csr_matrix(rng.random((700, 4))), sp.csr_matrix(rng.random((5, 4)))]
    y = [rng.integers(0, 3, size=700), rng.integers(0, 3, size=5)]
    for params in ({}, EXACT, {**EXACT, "selection": "bound", "step": "bound"}):
        model = SequenceBoostingTagger(n_rounds=5, **params).fit(X, y)
        assert np.isfinite(model.coef_).all()
        assert model.history_[0]["log_loss_before"] == pytest.approx(700 * np.log(3), rel=1e-6)


def test_tracked_loss_stays_exact_when_the_dominant_sentence_improves():
    """One long sentence dominates the exp-loss at first; as it improves by
    many orders of magnitude the scale moves, short sentences wait (stale)
    and are run again once they matter: the tracked loss stays the one
    forward-backward gives."""
    from sklstruct._forward_backward import chain_marginals
    from sklstruct._viterbi import sequence_score

    rng = np.random.default_rng(4)
    X = [sp.csr_matrix(np.eye(3)[rng.integers(0, 3, size=60)])]
    X += [sp.csr_matrix(np.eye(3)[rng.integers(0, 3, size=4)]) for _ in range(5)]
    y = [np.argmax(x.toarray(), axis=1) for x in X]        # the attribute is the label
    for rounds, params in ((5, {"features_per_round": 1}),
                           (40, {"selection": "bound", "step": "bound"})):
        model = sequential(n_rounds=rounds, **params).fit(X, y)
        logs = [h["log_loss_before"] for h in model.history_]
        assert logs[0] - logs[-1] > 30                      # the scale moved by > e^20
        assert model.history_[-1]["log_loss_after"] > -3    # d = log(1 / P) >> rounding
        W, P = model._decoding_weights()
        d = [chain_marginals(x.toarray() @ W, P)[0] - sequence_score(x.toarray() @ W, P, g)
             for x, g in zip(X, y)]
        exact = np.log(np.sum(np.expm1(d)))
        assert model.history_[-1]["log_loss_after"] == pytest.approx(exact, abs=1e-8)


def test_subnormal_feature_values_give_finite_weights():
    """A feature whose bound u is subnormal (values of 5e-324) would need an
    infinite step; the weights stay finite (the hostile-input fuzzer found
    coef_ = NaN here)."""
    X = [sp.csr_matrix(np.array([[5e-324], [5e-324]]))]
    for params in ({}, EXACT, {**EXACT, "selection": "bound", "step": "bound"}):
        model = SequenceBoostingTagger(n_rounds=1, **params).fit(X, [["a", "b"]])
        assert np.isfinite(model.coef_).all() and np.isfinite(model.transition_coef_).all()
        assert set(model.predict(X)[0]) <= {"a", "b"}


@pytest.mark.parametrize("bad, match", [({"selection": "greedy"}, "selection"),
                                        ({"learning_rate": 0.0}, "learning_rate"),
                                        ({"features_per_round": 0}, "features_per_round"),
                                        ({"corrective_every": 0}, "corrective_every"),
                                        ({"selection": "bound"}, "corrective_every"),
                                        ({"C": 0.0}, "C")])
def test_bad_parameters_raise(bad, match):
    X, y = random_problem(n=3)
    with pytest.raises(ValueError, match=match):
        SequenceBoostingTagger(**bad).fit(X, y)


def test_spanish_ner_subset_learns():
    """Real data, in seconds: 800 Spanish sentences of at most 30 tokens, S2
    features, the defaults for 5 rounds (the full corpus: bench_boosting.py)."""
    from _data import require_data

    from sklstruct import feature_set
    from sklstruct.datasets import read_conll
    from sklstruct.metrics import chunk_report

    X_train, y_train = read_conll(require_data("conll2002", "esp.train"))
    X_test, y_test = read_conll(require_data("conll2002", "esp.testa"))
    keep = [i for i, s in enumerate(y_train) if len(s) <= 30][:800]
    vec = feature_set("S2")
    Xtr = vec.fit_transform([X_train[i] for i in keep])
    model = SequenceBoostingTagger(n_rounds=5).fit(Xtr, [y_train[i] for i in keep])
    report = chunk_report(y_test[:500], model.predict(vec.transform(X_test[:500])))
    assert report.f1 >= 0.35, str(report)


def test_gradient_second_moments_and_r_match_enumeration(monkeypatch):
    """What the rounds read, kept incrementally over several updates: G (the
    exp-loss gradient, eq. 4), H (the diagonal second moments) and the
    paper's r_k (Algorithm 2, line 4) equal their values by enumeration."""
    X, y = random_problem(n=7, seed=11)
    states = []
    original = SequenceBoostingTagger._apply

    def spy(self, st, S):
        states.append(st)
        return original(self, st, S)

    monkeypatch.setattr(SequenceBoostingTagger, "_apply", spy)
    model = sequential(n_rounds=3, features_per_round=3).fit(X, y)
    st = states[-1]
    W, P = model._decoding_weights()
    L = len(model.classes_)
    theta = np.concatenate([W.ravel(), P.ravel()])
    G, H, Z = np.zeros_like(theta), np.zeros_like(theta), 0.0
    for x, gold in zip(X, y):
        g = np.searchsorted(model.classes_, gold)
        feats, scores, fg = _enumerate(x, g, W, P, L)
        weight = np.exp(scores - fg @ theta)               # exp(H(y) - H(gold))
        G += weight @ (feats - fg)
        Z += weight.sum() - 1.0
        # per position: (f_t(y) - f_t(gold))^2, summed over t
        seqs = np.array(list(itertools.product(range(L), repeat=len(g))))
        xd = x.toarray()
        for t in range(len(g)):
            ft = np.zeros((len(seqs), theta.size))
            gt = np.zeros(theta.size)
            for col in range(xd.shape[1]):
                ft[np.arange(len(seqs)), col * L + seqs[:, t]] += xd[t, col]
                gt[col * L + g[t]] += xd[t, col]
            base = W.size
            if t > 0:
                ft[np.arange(len(seqs)), base + seqs[:, t - 1] * L + seqs[:, t]] += 1
                gt[base + g[t - 1] * L + g[t]] += 1
            if t == 0:
                ft[np.arange(len(seqs)), base + L * L + seqs[:, 0]] += 1
                gt[base + L * L + g[0]] += 1
            if t == len(g) - 1:
                ft[np.arange(len(seqs)), base + (L + 1) * L + seqs[:, t]] += 1
                gt[base + (L + 1) * L + g[t]] += 1
            H += weight @ (ft - gt) ** 2
    scale = np.exp(st["M"])
    np.testing.assert_allclose(st["G"] * scale, G, rtol=1e-6, atol=1e-9 * np.abs(G).max())
    np.testing.assert_allclose(st["H"] * scale, H, rtol=1e-6, atol=1e-9 * np.abs(H).max())
    assert st["Z"] * scale == pytest.approx(Z, rel=1e-9)
    # r_k of Algorithm 2, line 4, from D(i) (eq. 5) and the expectations
    data = as_stacked(X)
    codes = np.concatenate([np.searchsorted(model.classes_, s) for s in y]).astype(np.int32)
    umax, umin = SequenceBoostingTagger._bounds(data, codes, L)
    usable = (umin < 0) | (umax > 0)
    ud = np.where(usable, umax - umin, 1.0)
    r, _, _ = SequenceBoostingTagger._bound_steps(st["G"] / st["Z"], umax, umin, ud, usable, 0.05)
    r_paper = np.zeros_like(theta)
    for x, gold in zip(X, y):
        g = np.searchsorted(model.classes_, gold)
        feats, scores, fg = _enumerate(x, g, W, P, L)
        p = np.exp(scores - logsumexp(scores))
        p_gold = np.exp(fg @ theta - logsumexp(scores))
        D = (1 / p_gold - 1) / Z
        r_paper += D / ud * (umax + (p @ feats - fg) / (p_gold - 1))
    np.testing.assert_allclose(r[usable], r_paper[usable], rtol=1e-6, atol=1e-9)


def _exp_objective(model, X, y, C):
    """The objective of ``CRFTagger(loss="exp", C=C)`` at the model's weights,
    by enumeration: log(1 + C * exp-loss + ||theta||^2 / 2)."""
    W, P = model._decoding_weights()
    return np.log1p(C * exp_loss(model, X, y) + 0.5 * (np.sum(W ** 2) + np.sum(P ** 2)))


def test_corrective_step_lowers_the_regularised_exp_loss():
    """The totally corrective step re-optimises the chosen emission weights
    and the chain weights jointly: the CRF exp objective (by enumeration)
    falls, and the emission weights never chosen stay 0."""
    X, y = random_problem(n=12, seed=4)
    plain = sequential(n_rounds=4, features_per_round=2).fit(X, y)
    data = as_stacked(X)
    _, codes = plain._labels(y, data)
    theta = np.concatenate([plain.coef_.T.ravel(), plain._decoding_weights()[1].ravel()])
    F, L = data.n_features, len(plain.classes_)
    picked = theta[:F * L] != 0
    assert 0 < picked.sum() < F * L
    before = _exp_objective(plain, X, y, 1.0)
    plain.set_params(C=1.0)                   # the corrective step's prior
    record = plain._corrective(theta, picked, data, codes, plain.classes_, None, 4, 0.0)
    plain._set_theta(theta, plain.classes_, F)
    after = _exp_objective(plain, X, y, 1.0)
    assert after < before
    assert record["objective"] == pytest.approx(after, rel=1e-8)
    assert np.all(theta[:F * L][~picked] == 0)
    # a fit with the step: its last one is that minimiser over its features
    model = SequenceBoostingTagger(n_rounds=4, features_per_round=2, corrective_every=2,
                                   corrective_iter=3).fit(X, y)
    assert len(model.corrective_history_) == 2          # after round 2, and the last
    assert model.corrective_history_[-1]["objective"] == pytest.approx(
        _exp_objective(model, X, y, 1.0), rel=1e-8)


def test_corrective_fit_does_not_depend_on_n_jobs():
    X, y = random_problem(n=30, seed=2)
    params = dict(n_rounds=6, features_per_round=3, corrective_every=2, corrective_iter=5)
    one = SequenceBoostingTagger(n_jobs=1, **params).fit(X, y)
    two = SequenceBoostingTagger(n_jobs=2, **params).fit(X, y)
    np.testing.assert_array_equal(one.coef_, two.coef_)
    np.testing.assert_array_equal(one.transition_coef_, two.transition_coef_)
    assert one.chosen_features_ == two.chosen_features_


def test_joint_rounds_go_on_when_no_new_feature_is_left():
    """Every feature is chosen in the first round; the later rounds have no
    candidate left but their corrective steps still lower the objective (a
    corpus whose loss the longest sentences dominate has candidates only
    there at first)."""
    X, y = random_problem(n=12, seed=4)
    model = SequenceBoostingTagger(n_rounds=3, features_per_round=10 ** 4,
                                   corrective_iter=2).fit(X, y)
    assert model.n_iter_ == 3 and len(model.history_) == 3
    objectives = [c["objective"] for c in model.corrective_history_]
    assert len(objectives) == 3 and objectives == sorted(objectives, reverse=True)
    assert len(model.chosen_features_) == len(set(c[:3] for c in model.chosen_features_))

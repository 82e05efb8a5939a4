"""F1MaxMarginParser and PCFGParser (Bauer et al. 2017): the QP, training on toy and
real treebanks, the unbinarized F1 counting (eqs. 8-9) through the real
binarization, bad input and the scikit-learn API."""
import os
import pickle
from collections import Counter

import numpy as np
import pytest
import scipy.sparse as sp
from joblib import Parallel, parallel_config
from scipy.optimize import minimize
from sklearn.base import BaseEstimator, clone
from sklearn.model_selection import GridSearchCV

from sklstruct import F1MaxMarginParser, PCFGParser
from sklstruct.parsing import Tree, binarize, parseval, unbinarize
from sklstruct.qp import WorkingSetQP
from sklstruct._qp import block_smo as smo
from sklstruct.parsing.base import _labelled_tree
from sklstruct.parsing.model import FEATURE_SETS, tree_loss
from sklstruct.parsing.spans import SPLIT_TEMPLATES, SpanFeatures, word_signature

from _data import require_data

TOY = [
    "(S (NP (DT the) (NN dog)) (VP (VBZ barks)))",
    "(S (NP (DT a) (NN cat)) (VP (VBZ sleeps)))",
    "(S (NP (DT the) (NN cat)) (VP (VBZ sees) (NP (DT a) (NN dog))))",
    "(S (NP (NNP John)) (VP (VBZ sees) (NP (DT the) (NN cat)) (PP (IN with) (NP (DT a) (NN telescope)))))",
    "(S (NP (DT a) (JJ big) (NN dog)) (VP (VBZ runs) (ADVP (RB fast))))",
    "(S (NP (NNP Mary)) (VP (VBZ sleeps)) (. .))",
]


def toy():
    trees = [Tree.fromstring(s) for s in TOY]
    return [t.leaves() for t in trees], trees


# -- the QP -----------------------------------------------------------------------

def scipy_primal(A, b, ex, cap, n_ex):
    d = A.shape[1]
    cons = [{"type": "ineq", "fun": (lambda z, k=k: A[k] @ z[:d] - b[k] + z[d + ex[k]])}
            for k in range(len(b))]
    res = minimize(lambda z: 0.5 * z[:d] @ z[:d] + cap * z[d:].sum(), np.zeros(d + n_ex),
                   constraints=cons, bounds=[(None, None)] * d + [(0, None)] * n_ex,
                   method="SLSQP", options={"ftol": 1e-13, "maxiter": 1000})
    assert res.success
    return res


@pytest.mark.parametrize("gram", ["dense", "blocks", "auto"])
@pytest.mark.parametrize("seed", range(6))
def test_qp_matches_scipy_and_dual_never_decreases(seed, gram):
    rng = np.random.default_rng(seed)
    m, d, n_ex, cap = 14, 5, 4, float(rng.uniform(0.1, 2))
    A = rng.normal(size=(m, d))
    b = rng.uniform(0, 2, size=m)
    ex = rng.integers(0, n_ex, size=m)
    # "auto": dense for the first 4 constraints, then blocks
    qp = WorkingSetQP(d, cap, gram=gram, max_dense=6)
    duals, gaps = [], []
    for lo, hi in ((0, 4), (4, 9), (9, m)):
        qp.add(sp.csr_matrix(A[lo:hi]), b[lo:hi], ex[lo:hi])
        qp.solve(tol=1e-10)
        duals.append(qp.dual())
        gaps.append(qp.primal() - qp.dual())
        assert (qp.alpha >= 0).all()
        np.testing.assert_array_less(np.bincount(ex[:hi], qp.alpha, minlength=n_ex), cap + 1e-9)
    assert np.all(np.diff(duals) >= -1e-12)
    assert max(gaps) < 1e-5 and min(gaps) > -1e-9   # solved to optimality every time
    res = scipy_primal(A, b, ex, cap, n_ex)
    assert qp.dual() == pytest.approx(res.fun, abs=1e-6)
    np.testing.assert_allclose(qp.w(), res.x[:d], atol=1e-4)
    # idle constraints go; the solution stays
    w = qp.w()
    qp.remove_idle(patience=1)
    np.testing.assert_allclose(qp.w(), w, atol=1e-9)
    if gram != "dense":   # no Gram matrix over all constraints
        assert qp.K.shape == (0, 0)


def test_qp_dense_gram_grows_without_copying_every_time():
    """Adding constraints one at a time reallocates the Gram buffer only when
    its capacity doubles; the solution equals a fresh solve of the constraints
    kept."""
    rng = np.random.default_rng(1)
    A, b, ex = rng.normal(size=(200, 6)), rng.uniform(0, 1, 200), rng.integers(0, 20, 200)
    qp, buffers = WorkingSetQP(6, 0.5), set()
    for k in range(200):
        qp.add(sp.csr_matrix(A[k:k + 1]), b[k:k + 1], ex[k:k + 1])
        buffers.add(id(qp._Kbuf))
        if k % 50 == 49:
            qp.solve(tol=1e-10)
            qp.remove_idle(patience=3)
    assert len(buffers) <= 3
    np.testing.assert_allclose(qp.K, qp.rows @ qp.rows.T.toarray(), atol=1e-12)
    qp.solve(tol=1e-10)
    fresh = WorkingSetQP(6, 0.5)
    fresh.add(qp.rows, qp.b, qp.example)
    fresh.solve(tol=1e-10)
    assert qp.dual() == pytest.approx(fresh.dual(), abs=1e-7)


def test_qp_gram_option_is_validated():
    with pytest.raises(ValueError, match="gram"):
        WorkingSetQP(3, 1.0, gram="sparse")


def test_smo_sweeps_increase_dual_and_shrink_gap():
    rng = np.random.default_rng(7)
    m, d = 30, 8
    A = rng.normal(size=(m, d))
    b = rng.uniform(0, 1, m)
    qp = WorkingSetQP(d, 0.5)
    qp.add(sp.csr_matrix(A), b, rng.integers(0, 5, m))
    duals, gaps = [], []
    for _ in range(6):
        qp.solve(tol=1e-12, max_sweeps=1)
        duals.append(qp.dual())
        gaps.append(qp.primal() - qp.dual())
    assert np.all(np.diff(duals) >= -1e-12)
    assert gaps[-1] < gaps[0] and gaps[-1] >= -1e-9


def test_smo_validates_blocks():
    K = np.eye(2)
    z = np.zeros(2)
    with pytest.raises(ValueError, match="exactly one block"):
        smo(K, z.copy(), z.copy(), z.copy(), np.array([0, 2], dtype=np.int64),
            np.array([0, 0], dtype=np.int64), 1.0, 1e-6, 10)
    with pytest.raises(ValueError, match="shapes"):
        smo(K, np.zeros(3), z.copy(), z.copy(), np.array([0, 2], dtype=np.int64),
            np.array([0, 1], dtype=np.int64), 1.0, 1e-6, 10)


# -- eqs. 8-9 through the real binarization ----------------------------------------

def check_f1_delta(parser, X, trees, seed, reps, uncounted=()):
    """Delta of the loss-augmented kernel for random weights against 1 - F1 of
    unbinarize(prediction) and the gold constituents (labels in ``uncounted``
    left out).  Returns the number of checks."""
    data = parser._prepare(X, trees)
    g = parser.compiled_
    rng = np.random.default_rng(seed)
    checked = 0
    for i, (words, gold) in enumerate(zip(data["words"], data["gold"])):
        for _ in range(reps):
            lex = rng.normal(size=(len(words), len(g.preterminals)))
            res = g.decode(lex, rng.normal(size=len(g.binary)), g.chain_weights(
                rng.normal(size=len(g.unary))), rng.normal(size=len(g.roots)), loss="f1",
                gold=gold, const=5.0)
            pred = unbinarize(_labelled_tree(res["tree"], parser.grammar_.symbols, words))
            gc = Counter(c for c in data["trees"][i].constituents() if c[0] not in uncounted)
            pc = Counter(c for c in pred.constituents() if c[0] not in uncounted)
            f1 = 2 * sum((gc & pc).values()) / (sum(gc.values()) + sum(pc.values()))
            assert res["delta"] == pytest.approx(1 - f1)
            checked += 1
    return checked


@pytest.mark.parametrize("options", [dict(horizontal=1, vertical=1), dict(horizontal=0, vertical=2),
                                     dict(factor="left", horizontal=None, vertical=1)])
def test_unbinarized_counts_match_unbinarize(options):
    """Delta of the loss-augmented kernel (keys: base labels of non-artificial
    nodes, eqs. 8-9) equals 1 - F1 of unbinarize(prediction) against the gold
    constituents, for random weights."""
    X, trees = toy()
    assert check_f1_delta(F1MaxMarginParser(max_iter=1, **options), X, trees, 0, 5) == 30


def test_top_root_bracket_is_not_counted():
    """With a TOP root (as PTB files have after reading), Delta is 1 - F1 over the
    constituents other than TOP: the root bracket is not counted (EVALB)."""
    X, trees = toy()
    trees = [Tree("TOP", [t]) for t in trees]
    parser = F1MaxMarginParser(max_iter=1)
    assert check_f1_delta(parser, X, trees, 1, 4, uncounted=("TOP",)) == 24
    assert parser.fit(X, trees).predict(X[:1])[0].label == "TOP"


PUNCT_TOY = [
    "(S (NP (NP (DT the) (NN dog)) (, ,) (NP (NNP Rex)) (, ,)) (VP (VBZ barks) (PRT (RP up))) (. .))",
    "(S (`` ``) (S (NP (PRP it)) (VP (VBZ rains))) (, ,) ('' '') (NP (PRP he)) (VP (VBD said)) (. .))",
    "(S (NP (DT a) (NN cat)) (VP (VBZ sleeps) (ADVP (RB up)) (: --) (NP (DT the) (NN mat))) (. .))",
    "(S (NP (NNP Mary)) (VP (VBD gave) (PRT (RP up)) (NP (DT the) (NN bone))) (. .))",
    # punctuation inside lower constituents, ADVP over a particle
    "(S (NP (PRP he)) (VP (VBD left) (ADVP (RP up)) (. .)))",
    "(S (NP (NP (PRP it)) (, ,)) (VP (VBZ rains) (, ,) (. .)))",
    "(S (S (NP (DT the) (NN dog) (. .))) (, ,) (VP (VBD said) (NP (PRP he) (. .))))",
]


def evalb_label_f1(gold, pred):
    """1 - F1 over brackets with spans over all tokens and EVALB's labels
    (ADVP = PRT; the root bracket labelled "", ROOT or TOP not counted)."""
    def brackets(t):
        out = Counter()
        for k, (label, i, j) in enumerate(t.constituents()):
            if not (k == 0 and label in ("", "ROOT", "TOP")):
                out[{"PRT": "ADVP"}.get(label, label), i, j] += 1
        return out

    g, p = brackets(gold), brackets(pred)
    return 1 - 2 * sum((g & p).values()) / (sum(g.values()) + sum(p.values()))


@pytest.mark.parametrize("options", [dict(horizontal=1, vertical=1), dict(horizontal=0, vertical=2)])
def test_f1_training_loss_counts_labels_as_evalb(options):
    """The "f1" loss of the loss-augmented kernel compares labels as EVALB
    (COLLINS.prm) does, ADVP = PRT and no root bracket: Delta = 1 - F1 of
    the unbinarized prediction against the (preprocessed) gold tree, for
    random weights with the gold tags fixed; it equals 1 - EVALB F1 except
    where punctuation is attached elsewhere (EVALB leaves it out of spans)."""
    from sklstruct.parsing.evalb import bracket_counts

    trees = [Tree.fromstring(s) for s in PUNCT_TOY + TOY]
    parser = F1MaxMarginParser(max_iter=1, **options)
    data = parser._prepare([t.pos() for t in trees], trees)
    g = parser.compiled_
    rng = np.random.default_rng(0)
    checked = as_evalb = 0
    for i, (words, gold) in enumerate(zip(data["words"], data["gold"])):
        own = g.pos_column[gold["pos"]]
        lex = np.where(np.arange(len(g.preterminals))[None, :] == own[:, None], 0.0, -np.inf)
        for _ in range(15):
            res = g.decode(lex, rng.normal(size=len(g.binary)),
                           g.chain_weights(rng.normal(size=len(g.unary))),
                           rng.normal(size=len(g.roots)), loss="f1", gold=gold,
                           const=float(rng.uniform(1, 6)), prune=False)
            pred = unbinarize(_labelled_tree(res["tree"], parser.grammar_.symbols, words))
            assert res["delta"] == pytest.approx(evalb_label_f1(data["trees"][i], pred))
            assert res["delta"] == pytest.approx(
                tree_loss(g, gold, {"nodes": res["nodes"]}, "f1"))
            m, n_gold, n_pred = bracket_counts(data["trees"][i], pred)
            as_evalb += res["delta"] == pytest.approx(1 - 2 * m / (n_gold + n_pred))
            checked += 1
    assert as_evalb >= checked // 2


def test_advp_and_prt_are_one_label_in_the_f1_loss():
    """A particle bracketed ADVP where the gold tree says PRT costs nothing
    in the "f1" loss, as in EVALB, while F1 (bin.) counts it."""
    gold_t = Tree.fromstring("(S (NP (NNP Mary)) (VP (VBD gave) (PRT (RP up))))")
    pred_t = Tree.fromstring("(S (NP (NNP Mary)) (VP (VBD gave) (ADVP (RP up))))")
    parser = F1MaxMarginParser(max_iter=1, horizontal=0)
    data = parser._prepare([t.pos() for t in (gold_t, pred_t)], [gold_t, pred_t])
    g = parser.compiled_
    gold, pred = data["gold"]
    assert tree_loss(g, gold, pred, "f1") == 0.0
    assert tree_loss(g, gold, pred, "f1_binarized") > 0.0
    assert parseval([gold_t], [pred_t])["f1"] == 1.0


# -- training ------------------------------------------------------------------------

@pytest.mark.parametrize("loss", ["f1", "f1_binarized", "zero_one", "fp"])
def test_fits_separable_toy_treebank(loss):
    X, trees = toy()
    parser = F1MaxMarginParser(C=100, loss=loss, max_iter=60).fit(X, trees)
    assert parser.converged_
    assert parser.score(X, trees) == 1.0
    pred = parser.predict(X)
    assert pred == trees
    duals = [h["dual"] for h in parser.history_]
    assert np.all(np.diff(duals) >= -1e-9)


def test_unseen_words_and_lengths_parse():
    X, trees = toy()
    parser = F1MaxMarginParser(C=10, max_iter=20).fit(X, trees)
    sentences = [["Zorglub"], ["the", "xylophone", "quibbles"],
                 ["a", "gigantic", "Blorp", "sees", "the", "cat", "with", "a", "dog",
                  "with", "the", "telescope", "."]]
    for words, tree in zip(sentences, parser.predict(sentences)):
        assert tree.leaves() == words
    # gold with a label never seen in training still scores (as a miss)
    gold = Tree.fromstring("(FRAG (NP (DT the) (NN xylophone)) (WHATEVER (VBZ quibbles)))")
    assert 0 <= parser.score([gold.leaves()], [gold]) < 1


def test_flat_tree_fallback_when_no_tree_of_that_length():
    trees = [Tree.fromstring("(S (NN dogs) (VB bark))"), Tree.fromstring("(S (NN cats) (VB sleep))")]
    X = [t.leaves() for t in trees]
    for est in (F1MaxMarginParser(max_iter=5), PCFGParser()):
        est.fit(X, trees)
        out = est.predict([["cats", "bark", "loudly"], ["dogs", "sleep"]])
        assert out[0].label == "S" and len(out[0].children) == 3
        assert all(k.is_preterminal() for k in out[0].children)
        assert out[0].leaves() == ["cats", "bark", "loudly"]
        assert out[1].label == "S"


def test_tagged_input_uses_the_tags():
    X, trees = toy()
    Xt = [t.pos() for t in trees]
    parser = F1MaxMarginParser(C=10, max_iter=20).fit(Xt, trees)
    assert parser.score(Xt, trees) == 1.0
    with pytest.raises(ValueError, match="pairs"):
        parser.predict(X)
    pcfg = PCFGParser().fit(Xt, trees)
    assert pcfg.score(Xt, trees) > 0.9


def test_fixed_tags_keep_the_given_tags():
    X, trees = toy()
    Xt = [t.pos() for t in trees]
    parser = F1MaxMarginParser(C=10, max_iter=30, fixed_tags=True).fit(Xt, trees)
    assert parser.converged_ and parser.score(Xt, trees) == 1.0
    # tags that contradict the words are kept as given where the grammar has
    # a tree over them; an unknown tag leaves all open
    words = [w for w, _ in Xt[0]]
    odd = list(zip(words, ["NNP", "VBZ", "."]))
    assert parser.predict([odd])[0].pos() == odd
    # no tree over VBZ NN DT: parsed again with the tags open (not the flat
    # fallback), other tags than the given ones penalised
    swapped = list(zip(words, ["VBZ", "NN", "DT"]))
    tree = parser.predict([swapped])[0]
    assert tree.leaves() == words and tree.height() > 2
    assert not parser.compiled_.decode(
        parser._lexical_scores([swapped])[0], *parser._current_scores())
    free = parser.predict([[(w, "NOSUCHTAG") for w in words]])[0]
    assert free.leaves() == words
    assert F1MaxMarginParser(fixed_tags=False).fit(Xt, trees)._tag_mask(Xt[0]) is None


FEATURE_CHOICES = [("rules",), ("pcfg",), ("spans",), ("rules", "pcfg"), ("rules", "spans"),
                   FEATURE_SETS]


@pytest.mark.parametrize("features", FEATURE_CHOICES)
@pytest.mark.parametrize("tagged,fixed", [(False, False), (True, False), (True, True)])
def test_psi_is_what_the_kernel_scores(features, tagged, fixed):
    """For every feature set, w . Psi(x, y) of the tree CKY returns equals the
    kernel's score at arbitrary weights (the joint feature map and the
    decoding agree), with and without the loss."""
    X, trees = toy()
    X = [t.pos() for t in trees] if tagged else X
    parser = F1MaxMarginParser(C=1, features=features, fixed_tags=fixed,
                               max_iter=1).fit(X, trees)
    rng = np.random.default_rng(0)
    parser.coef_ = rng.normal(size=parser.coef_.shape)
    parser._set_views()
    tokens = [[tuple(t) for t in x] if tagged else list(x) for x in X]
    prep = parser._prepare(X, trees)
    data = parser._training_data(tokens, prep["gold"])
    scores = parser._current_scores()
    for i in range(len(X)):
        sd = data["sd"]
        res = parser.compiled_.decode(parser._lex(sd, i), *scores, **parser._anchored(sd, i))
        dec = {"binary": res["binary_rules"], "unary": res["unary_rules"], "root": res["root"],
               "pos": res["pos"], "nodes": res["nodes"], "splits": res["splits"]}
        assert (parser._psi(dec, sd, i) @ parser.coef_)[0] == pytest.approx(res["score"])
        i_, value, psi, delta = parser._most_violated(i, data, scores)
        if psi is not None:
            expect = delta * (1 - ((data["psi"][i] - psi) @ parser.coef_)[0])
            assert value == pytest.approx(expect)


def test_features_parameter():
    X, trees = toy()
    for bad in ("bogus", (), ("rules", "rules"), ("rules", "nope")):
        with pytest.raises(ValueError, match="features"):
            F1MaxMarginParser(features=bad).fit(X, trees)
    p = F1MaxMarginParser(features="spans", max_iter=40, C=100).fit(X, trees)
    assert p.features_ == {"spans"} and p.w_binary_.size == 0 and p.w_pcfg_.size == 0
    # span features conjoined with labels separate the toy treebank on their own
    assert p.score(X, trees) == 1.0
    rules = F1MaxMarginParser(features=("rules",), max_iter=2).fit(X, trees)
    assert rules.w_span_.size == 0 and rules.w_pcfg_.size == 0
    assert rules.coef_.size == (len(rules.compiled_.binary) + len(rules.compiled_.unary)
                                + len(rules.compiled_.roots) + rules.w_lex_.size)


def test_pcfg_features_start_at_the_pcfg():
    """w = w0 (weight 1 on the PCFG's log-probabilities, 0 elsewhere) is the
    maximum-likelihood PCFG: with a tiny C the max-margin parser predicts what
    PCFGParser predicts."""
    X, trees = toy()
    Xt = [t.pos() for t in trees]
    test = [[("the", "DT"), ("cat", "NN"), ("sees", "VBZ"), ("John", "NNP")],
            [("a", "DT"), ("dog", "NN"), ("runs", "VBZ"), ("fast", "RB"), (".", ".")],
            [("Mary", "NNP"), ("sees", "VBZ"), ("a", "DT"), ("big", "JJ"), ("cat", "NN")]]
    pcfg = PCFGParser().fit(Xt, trees)
    for features in (("pcfg",), FEATURE_SETS):
        mm = F1MaxMarginParser(C=1e-8, features=features, max_iter=5).fit(Xt, trees)
        np.testing.assert_allclose(mm.w_pcfg_, 1.0, atol=1e-6)
        assert [str(t) for t in mm.predict(test + Xt)] == [str(t) for t in pcfg.predict(test + Xt)]


@pytest.mark.parametrize("loss", ["f1", "zero_one"])
def test_one_slack_and_n_slack_reach_the_same_objective(loss):
    """Both solvers stop within tol of the optimum of eq. 2 (Joachims et al.
    2009, Theorem 1: the 1-slack and n-slack problems share their optimum);
    the 1-slack dual never decreases."""
    X, trees = toy()
    X = [t.pos() for t in trees]
    C, tol = 5.0, 1e-3
    objective = {}
    for solver in ("n-slack", "1-slack"):
        p = F1MaxMarginParser(C=C, loss=loss, solver=solver, tol=tol, max_iter=200).fit(X, trees)
        assert p.converged_
        duals = [h["dual"] for h in p.history_]
        assert np.all(np.diff(duals) >= -1e-9)
        prep = p._prepare(X, trees)
        data = p._training_data([[tuple(t) for t in x] for x in X], prep["gold"])
        w0 = np.zeros_like(p.coef_)
        w0[p._offsets["pcfg"]:p._offsets["pcfg"] + 2] = 1
        u = p.coef_ - w0
        hinge = sum(v for _, v, _, _ in p._violators(data, Parallel(n_jobs=1)))
        objective[solver] = (0.5 * u @ u + C / len(X) * hinge, duals[-1])
    lo = max(d for _, d in objective.values())     # every dual bounds the optimum below
    for primal, _ in objective.values():
        assert lo - 1e-6 <= primal <= lo + 2 * tol * C
    assert F1MaxMarginParser().solver == "1-slack"


def test_span_features():
    words = [["The", "cat", "sat", "."], ["A", "cat", "ran"]]
    tags = [["DT", "NN", "VBD", "."], ["DT", "NN", "VBD"]]
    f = SpanFeatures(min_count=2).fit(words, tags)
    names = {}
    for name, vals in f.values_.items():
        if name in SPLIT_TEMPLATES:
            continue
        for k in range(len(vals)):
            names[f.offsets_[name] + k] = name
    X, splits = zip(*f.transform(words, tags))
    W = 5
    assert X[0].shape == (W * W, f.n_features_)
    assert splits[0].shape == (W, f.n_split_features_)
    # split points 1..n-1 (between tokens), each with every split template
    assert splits[0][0].nnz == 0 and splits[0][4].nnz == 0
    split_names = set(SPLIT_TEMPLATES)
    assert splits[0][2].nnz == len(split_names) == 6
    # span [1, 3) "cat sat": every template fires once
    row = X[0][1 * W + 3]
    span_names = set(f.values_) - split_names
    assert sorted(names[c] for c in row.indices) == sorted(span_names)
    assert row.data.tolist() == [1.0] * len(span_names)
    # empty spans have no features; a span and its word classes: "cat" is
    # frequent (2), "sat" rare -> its signature
    assert X[0][3 * W + 1].nnz == 0 and X[0][2 * W + 2].nnz == 0
    assert f._classes(["cat", "sat"]) == ["cat", word_signature("sat")]
    # unseen values fire nothing: an unknown tag leaves only the word templates
    Y = f.transform([["The", "dog"]], [["ZZ", "ZZ"]])[0][0]
    fired = {names[c] for c in Y[0 * 3 + 2].indices}
    assert "first_tag" not in fired and "bias" in fired and "length" in fired
    with pytest.raises(ValueError, match="tags"):
        f.transform(words)


class _ShortTagger(BaseEstimator):
    """A fitted tagger that returns one tag too few (hostile)."""

    fitted_ = True

    def fit(self, X, y):
        return self

    def predict(self, X):
        return [["NN"] * (len(x) - 1) for x in X]


@pytest.mark.parametrize("Parser", [F1MaxMarginParser, PCFGParser])
def test_tagger_parses_raw_text(Parser):
    from sklearn.pipeline import make_pipeline

    from sklstruct import SequenceVectorizer, StructuredPerceptronTagger

    X, trees = toy()
    tagger = make_pipeline(SequenceVectorizer(["word", "suffix2"]),
                           StructuredPerceptronTagger(max_iter=10, random_state=0))
    kw = {"fixed_tags": True, "C": 10, "max_iter": 50} if Parser is F1MaxMarginParser else {}
    p = Parser(tagger=tagger, **kw).fit(X, trees)
    assert p.tagger_ is not tagger and not hasattr(tagger, "classes_")   # a fitted clone
    assert p.predict(X) == [unbinarize(binarize(t)) for t in trees]
    assert p.score(X, trees) == 1.0
    tagged = [t.pos() for t in trees]
    with pytest.raises(ValueError, match="words"):
        p.predict(tagged)
    with pytest.raises(ValueError, match="words"):
        clone(p).fit(tagged, trees)
    # a fitted tagger is used as it is
    assert Parser(tagger=p.tagger_, **kw).fit(X, trees).tagger_ is p.tagger_
    # refitting without a tagger forgets it
    p.set_params(tagger=None).fit(tagged, trees)
    assert p.tagger_ is None and p.predict(tagged)[0].leaves() == X[0]
    bad = Parser(tagger=_ShortTagger(), **kw).fit(X, trees)
    with pytest.raises(ValueError, match="tagger returned"):
        bad.predict(X)
    with pytest.raises(ValueError, match="tagger"):
        Parser(tagger="perceptron").fit(X, trees)


def test_verbose_and_history(capsys):
    X, trees = toy()
    parser = F1MaxMarginParser(C=1, max_iter=3, verbose=1).fit(X, trees)
    out = capsys.readouterr().out
    assert "Iteration 1: violated" in out and "dual" in out
    # n_iter_ counts inference passes; the 1-slack solver also logs the
    # iterations it took from its cache
    assert len([h for h in parser.history_ if not h["cached"]]) == parser.n_iter_ <= 3
    assert {"iteration", "violated", "constraints", "dual", "primal", "seconds"} <= set(parser.history_[0])


def test_n_jobs_gives_the_same_model():
    X, trees = toy()
    a = F1MaxMarginParser(C=10, max_iter=5).fit(X, trees)
    b = F1MaxMarginParser(C=10, max_iter=5, n_jobs=2).fit(X, trees)
    np.testing.assert_allclose(a.coef_, b.coef_)


def test_n_jobs_is_bounded_by_the_cpus():
    X, trees = toy()
    a = F1MaxMarginParser(C=10, max_iter=5).fit(X, trees)
    b = F1MaxMarginParser(C=10, max_iter=5, n_jobs=10 ** 6).fit(X, trees)   # was a million workers
    np.testing.assert_allclose(a.coef_, b.coef_)
    F1MaxMarginParser(C=10, max_iter=2, n_jobs=-(10 ** 6)).fit(X, trees)
    with pytest.raises(ValueError, match="n_jobs"):
        F1MaxMarginParser(n_jobs=0).fit(X, trees)


class _PidRecordingParser(F1MaxMarginParser):
    pids = []

    def _most_violated(self, i, data, scores, gold_score=None):
        self.pids.append(os.getpid())
        return super()._most_violated(i, data, scores, gold_score)


def test_parallel_inference_uses_threads_under_a_process_backend():
    """A user's global ``parallel_config(backend="loky")`` must not send the
    inference to processes (pickling the model every call: 35x slower)."""
    X, trees = toy()
    ref = F1MaxMarginParser(C=10, max_iter=5).fit(X, trees)
    _PidRecordingParser.pids = []
    with parallel_config(backend="loky"):
        est = _PidRecordingParser(C=10, max_iter=5, n_jobs=2).fit(X, trees)
    assert set(_PidRecordingParser.pids) == {os.getpid()}
    np.testing.assert_allclose(est.coef_, ref.coef_)


# -- bad input ------------------------------------------------------------------------

def test_bad_input():
    X, trees = toy()
    parser = F1MaxMarginParser(max_iter=2)
    with pytest.raises(ValueError, match=r"X\[1\]: sentence is empty"):
        parser.fit([X[0], []], trees[:2])
    with pytest.raises(ValueError, match=r"y\[1\].*leaves"):
        parser.fit(X[:2], [trees[0], trees[0]])
    with pytest.raises(ValueError, match="list of 2 trees"):
        parser.fit(X[:2], trees[:1])
    with pytest.raises(ValueError, match="mixing"):
        parser.fit([["a", ("b", "NN")]], trees[:1])
    with pytest.raises(ValueError, match=r"y\[0\]: expected a Tree"):
        parser.fit(X[:1], ["(S (NN a))"])
    with pytest.raises(ValueError, match="max_length=3"):
        F1MaxMarginParser(max_length=3).fit(X, trees)
    parser = F1MaxMarginParser(max_iter=2, max_length=6).fit(X[:3], trees[:3])
    with pytest.raises(ValueError, match=r"X\[1\]: has 7 tokens, more than max_length=6"):
        parser.predict([["a"], ["a"] * 7])
    with pytest.raises(ValueError, match=r"X\[0\]: sentence is empty"):
        parser.predict([[]])
    with pytest.raises(ValueError, match="no sentences"):
        parser.predict([])
    with pytest.raises(ValueError, match="C"):
        F1MaxMarginParser(C=-1).fit(X, trees)
    with pytest.raises(ValueError, match="loss"):
        F1MaxMarginParser(loss="hamming").fit(X, trees)


def test_bad_input_at_score_time_and_in_trees():
    X, trees = toy()
    parser = F1MaxMarginParser(max_iter=2).fit(X, trees)
    with pytest.raises(ValueError, match=r"y\[1\].*leaves.*X\[1\]"):
        parser.score(X[:2], [trees[0], trees[0]])
    with pytest.raises(ValueError, match=r"X\[0\]\[1\]: must be a word"):
        parser.predict([["the", float("nan")]])
    with pytest.raises(ValueError, match=r"X\[0\]\[0\]: must be a word"):
        parser.predict([[("the", 3)]])
    only_null = Tree.fromstring("(S (-NONE- *T*-1))")
    with pytest.raises(ValueError, match=r"y\[1\]"):
        parser.fit([X[0], ["*T*-1"]], [trees[0], only_null])


def test_trees_with_labels_or_words_that_are_not_strings():
    X, trees = toy()
    bad_label = Tree("S", [Tree(5, [Tree("DT", ["the"]), Tree("NN", ["dog"])]),
                           Tree("VP", [Tree("VBZ", ["barks"])])])
    bad_word = Tree("S", [Tree("NP", [Tree("DT", ["the"]), Tree("NN", [b"dog"])]),
                          Tree("VP", [Tree("VBZ", ["barks"])])])
    none_label = Tree.fromstring(TOY[0])
    none_label.children[1].label = None
    parser = F1MaxMarginParser(max_iter=2)
    with pytest.raises(ValueError, match=r"y\[1\]: tree label 5 is not a string"):
        parser.fit(X[:2], [trees[0], bad_label])
    with pytest.raises(ValueError, match=r"y\[0\]: word b'dog' under node 'NN' is not a string"):
        parser.fit(X[:1], [bad_word])
    with pytest.raises(ValueError, match=r"y\[0\]: tree label None is not a string"):
        PCFGParser().fit(X[:1], [none_label])
    parser.fit(X, trees)
    with pytest.raises(ValueError, match=r"y\[0\]: tree label 5 is not a string"):
        parser.score(X[:1], [bad_label])
    with pytest.raises(ValueError, match=r"y\[1\]: word b'dog'"):
        parser.score(X[:2], [trees[0], bad_word])
    with pytest.raises(ValueError, match=r"y\[0\]: expected a Tree; got int"):
        parser.score(X[:1], [3])


def test_tree_that_contains_itself_is_refused():
    X, trees = toy()
    loop = Tree.fromstring(TOY[0])
    loop.children[0].children.append(loop)
    with pytest.raises(ValueError, match=r"y\[0\]: Tree .S. is cyclic"):
        F1MaxMarginParser(max_iter=2).fit(X[:1], [loop])


@pytest.mark.parametrize("X, message", [
    ("the dog barks", "X: expected a list of token sequences; got str"),
    (b"the dog", "X: expected a list of token sequences; got bytes"),
    ({"the": 1}, "X: expected a list of token sequences; got dict"),
    (None, "X: expected a list of token sequences; got None"),
    (7, "X: expected a list of token sequences; got int"),
    ((s for s in [["a"]]), "got generator"),
    ([], "X: contains no sentences"),
    (["the dog barks"], r"X\[0\]: expected a sequence of tokens; got str"),
    ([["a"], b"ab"], r"X\[1\]: expected a sequence of tokens; got bytes"),
    ([{"w": "a"}], r"X\[0\]: expected a sequence of tokens; got dict"),
    ([["a"], []], r"X\[1\]: sentence is empty"),
    ([["a", ""], [3]], r"X\[1\]\[0\]: must be a word"),
])
def test_hostile_X_gets_a_clear_error(X, message):
    Xt, trees = toy()
    parser = F1MaxMarginParser(max_iter=2)
    with pytest.raises(ValueError, match=message):
        parser.fit(X, trees[:2])
    parser.fit(Xt, trees)
    with pytest.raises(ValueError, match=message):
        parser.predict(X)


def _unary_chain_tree(depth):
    node = Tree("NN", ["dog"])
    for i in range(depth):
        node = Tree(f"A{i}", [node])
    return Tree("S", [Tree("DT", ["the"]), node])


def test_very_deep_unary_chain_is_refused_or_bounded():
    """A 1000-deep chain of distinct labels used to take cubic time and
    memory (every sub-chain enumerated); now it is refused unless the chains
    are bounded by max_unary_chain (<= 50)."""
    X = [["the", "dog"], ["a", "cat"]]
    y = [Tree.fromstring("(S (DT a) (NN cat))"), _unary_chain_tree(1000)]
    y = [y[1], y[0]]
    for est in (F1MaxMarginParser(max_iter=2), PCFGParser()):
        with pytest.raises(ValueError, match=r"y\[0\]: has a chain of 1000 unary rules.*at most 50"):
            est.fit(X, y)
    with pytest.raises(ValueError, match="max_unary_chain"):
        PCFGParser(max_unary_chain=1000).fit(X, y)
    with pytest.warns(UserWarning, match="max_unary_chain=3 is below"):
        parser = F1MaxMarginParser(max_iter=3, max_unary_chain=3).fit(X, y)
    assert parser.predict([["the", "dog"]])[0].leaves() == ["the", "dog"]
    # a chain within the bound still needs no parameter
    assert PCFGParser().fit(X, [_unary_chain_tree(40), y[1]]).max_unary_chain_ == 40


def test_too_short_unary_chain_limit_warns():
    trees = [Tree.fromstring("(S (VP (VB go)))"), Tree.fromstring("(S (NN a) (VB b))")]
    X = [t.leaves() for t in trees]
    with pytest.warns(UserWarning, match="max_unary_chain=0 is below"):
        F1MaxMarginParser(max_iter=1, max_unary_chain=0).fit(X, trees)


def test_very_long_flat_sentence_parses_without_recursion():
    words = [f"w{i}" for i in range(1100)]
    flat = Tree("S", [Tree("NN", [w]) for w in words])
    small = Tree("S", [Tree("NN", ["a"]), Tree("NN", ["b"])])
    parser = PCFGParser(max_length=2000).fit([words, ["a", "b"]], [flat, small])
    assert parser.predict([words[:1050]])[0].leaves() == words[:1050]


# -- scikit-learn API --------------------------------------------------------------------

def test_clone_pickle_grid_search():
    X, trees = toy()
    parser = F1MaxMarginParser(C=3, max_iter=10).fit(X, trees)
    again = pickle.loads(pickle.dumps(parser))
    assert again.predict(X) == parser.predict(X)
    c = clone(parser)
    assert c.get_params() == parser.get_params() and not hasattr(c, "coef_")
    search = GridSearchCV(F1MaxMarginParser(max_iter=5), {"C": [0.1, 10.0]}, cv=2).fit(X, trees)
    assert search.best_params_["C"] in (0.1, 10.0)
    pcfg = pickle.loads(pickle.dumps(PCFGParser().fit(X, trees)))
    assert pcfg.score(X, trees) > 0.8


# -- real data -----------------------------------------------------------------------------

def test_real_treebank_subset():
    """150 training sentences of <= 10 tokens from files 1-199 of the PTB sample, 100 test
    sentences after them; 10 cutting-plane iterations."""
    require_data("treebank", "combined", "wsj_0001.mrg")
    from sklstruct.datasets import load_treebank

    trees = [t for t in load_treebank() if len(t.leaves()) <= 10]
    X = [t.leaves() for t in trees]
    train, test = slice(0, 150), slice(150, 250)
    parser = F1MaxMarginParser(C=10, max_iter=10).fit(X[train], trees[train])
    pred = parser.predict(X[test])
    scores = parseval(trees[test], pred)
    # measured: 0.668 (PCFG baseline on the same split: 0.676; a flat tree under
    # the most frequent root with gold tags: 0.23)
    assert scores["f1"] > 0.62
    assert parser.score(X[train], trees[train]) > 0.8


def test_real_treebank_tagged_trains_to_convergence():
    """Gold-tagged sentences of <= 10 tokens: 150 to train, the next 150 to test;
    the cutting-plane training converges and the dual never decreases."""
    require_data("treebank", "combined", "wsj_0001.mrg")
    from sklstruct.datasets import load_treebank

    trees = [t for t in load_treebank() if len(t.leaves()) <= 10]
    train, test = trees[:150], trees[150:300]
    X, X_test = [t.pos() for t in train], [t.pos() for t in test]
    parser = F1MaxMarginParser(C=10, max_iter=100).fit(X, train)
    assert parser.converged_
    assert np.all(np.diff([h["dual"] for h in parser.history_]) >= -1e-9)
    # measured: 0.786 (PCFGParser on the same split: 0.781); training 0.949
    assert parseval(test, parser.predict(X_test))["f1"] > 0.74
    assert parser.score(X, train) > 0.92


def test_a_failed_fit_leaves_the_parser_as_it_was():
    """A bad lexical template failed after fit had replaced the grammar but
    not the weights: predict then failed inside numpy."""
    X, trees = toy()
    parser = F1MaxMarginParser(C=10, max_iter=3).fit(X, trees)
    before = {k: v for k, v in vars(parser).items() if k.endswith("_")}
    expected = parser.predict(X)
    with pytest.raises(ValueError, match="template"):
        parser.set_params(lexical_features=["nonsense("]).fit(X[:2], trees[:2])
    after = {k: v for k, v in vars(parser).items() if k.endswith("_")}
    assert after.keys() == before.keys()
    assert all(after[k] is before[k] for k in before)
    assert parser.predict(X) == expected


def test_trained_on_one_word_trees_it_parses_a_longer_sentence():
    """Span templates that never fired in fit (no spans of two words) made
    SpanFeatures index an empty vocabulary: IndexError instead of a tree."""
    trees = [Tree.fromstring(s) for s in ["(S (NN dog))", "(S (VB run))", "(S (NN cat))"]]
    parser = F1MaxMarginParser(C=10, max_iter=3).fit([t.leaves() for t in trees], trees)
    (tree,) = parser.predict([["dog", "run", "cat"]])
    assert tree.leaves() == ["dog", "run", "cat"] and tree.label == "S"


def test_a_dask_cluster_gives_the_same_model():
    """Inside parallel_config(backend="dask") the training trees are parts
    resident on the workers and the inference passes run there: the model
    of the threads, bit for bit."""
    import distributed
    from joblib import parallel_config

    X, trees = toy()
    a = F1MaxMarginParser(C=10, max_iter=5).fit(X, trees)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster), parallel_config(backend="dask"):
        b = F1MaxMarginParser(C=10, max_iter=5).fit(X, trees)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert [h["violated"] for h in a.history_] == [h["violated"] for h in b.history_]


def test_a_dask_worker_killed_mid_fit_fails_clearly_or_recovers(monkeypatch):
    """The worker holding the first part of the trees is killed at the
    second inference pass: fit raises a RuntimeError naming the lost
    worker, leaving the parser unfitted, or ends with the model of the
    threads; it never hangs."""
    import distributed
    from joblib import parallel_config

    from sklstruct.parsing import _tree_parts
    from _workers import kill_holder

    X, trees = toy()
    threads = F1MaxMarginParser(C=10, max_iter=4).fit(X, trees)
    calls, most_violated = [], _tree_parts.PartedTrees.most_violated

    def killing(self, w):
        calls.append(1)
        if len(calls) == 2:
            kill_holder(client, self.parts.futures[0])
        return most_violated(self, w)

    monkeypatch.setattr(_tree_parts.PartedTrees, "most_violated", killing)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client, parallel_config(backend="dask"):
        parser = F1MaxMarginParser(C=10, max_iter=4)
        try:
            parser.fit(X, trees)
        except RuntimeError as exc:
            assert "worker" in str(exc)
            assert not hasattr(parser, "coef_")
        else:
            np.testing.assert_array_equal(parser.coef_, threads.coef_)

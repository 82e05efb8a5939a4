"""Confidence of the chain taggers: tempered marginals (forward-backward and
k-best) against brute-force enumeration, sentence probabilities, the fitted
temperature, and the expected calibration error."""
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp, softmax
from sklearn.base import clone
from sklearn.calibration import calibration_curve
from sklearn.exceptions import NotFittedError
from _oracles import brute_force, chain_problems, make

from sklstruct import CRFTagger, SequenceVectorizer, StructuredPerceptronTagger
from sklstruct._registry import TAGGERS
from sklstruct.chain import sequence_score
from sklstruct.datasets import make_chunking_corpus
from sklstruct.learners._confidence import (KBestLists, sentence_probability,
                                            tempered_marginals)
from sklstruct.metrics import expected_calibration_error

# ConvergenceWarning is expected here: short CRF fits on purpose
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

RUNNER = StructuredPerceptronTagger(n_jobs=2)     # threads of the corpus functions


@st.composite
def corpora(draw, order=1):
    """A few sentences over one label set: stacked E, one P, offsets, and the
    brute-force (sequences, scores) of each sentence."""
    problems = draw(st.lists(chain_problems(max_T=4, max_L=3, order=order), min_size=1,
                             max_size=4))
    L = problems[0][0].shape[1]
    problems = [(E, P) for E, P, _ in problems if E.shape[1] == L] or [problems[0][:2]]
    P = problems[0][1]
    E = np.vstack([E for E, _ in problems])
    offsets = np.concatenate([[0], np.cumsum([len(E) for E, _ in problems])]).astype(np.int64)
    brute = [brute_force(E[a:b], P) for a, b in zip(offsets[:-1], offsets[1:])]
    return E, P, offsets, brute


def brute_marginals(seqs, scores, L, temperature, k=None):
    """Token marginals of softmax(scores / T) over all sequences or the k best."""
    if k is not None:
        keep = np.argsort(-scores, kind="stable")[:k]
        seqs, scores = seqs[keep], scores[keep]
    p = softmax(scores / temperature)
    T = seqs.shape[1]
    out = np.zeros((T, L))
    for s, w in zip(seqs, p):
        out[np.arange(T), s] += w
    return out


@settings(max_examples=100, deadline=None)
@given(corpora(order=1) | corpora(order=2), st.sampled_from([0.3, 1.0, 4.0]))
def test_tempered_forward_backward_matches_brute_force(corpus, temperature):
    E, P, offsets, brute = corpus
    L = P.shape[1]
    node, log_z = tempered_marginals(RUNNER, E, P, offsets, temperature)
    for (a, b), (seqs, scores), lz in zip(zip(offsets[:-1], offsets[1:]), brute, log_z):
        np.testing.assert_allclose(node[a:b], brute_marginals(seqs, scores, L, temperature),
                                   atol=1e-9)
        assert lz == pytest.approx(logsumexp(scores / temperature))


@settings(max_examples=100, deadline=None)
@given(corpora(order=1) | corpora(order=2), st.integers(1, 12), st.sampled_from([0.5, 2.0]))
def test_kbest_marginals_match_brute_force(corpus, k, temperature):
    """The softmax over the k best sequences: the brute-force top k (scores
    are continuous, so the top k is unique), and with k at least the number
    of sequences, exactly the forward-backward marginals."""
    E, P, offsets, brute = corpus
    L = P.shape[1]
    lists = KBestLists(RUNNER, E, P, offsets, k)
    got = lists.marginals(temperature).reshape(E.shape)
    best = lists.best_probability(temperature)
    for (a, b), (seqs, scores), p1 in zip(zip(offsets[:-1], offsets[1:]), brute, best):
        np.testing.assert_allclose(got[a:b], brute_marginals(seqs, scores, L, temperature, k),
                                   atol=1e-9)
        top = np.sort(scores)[::-1][:k]
        assert p1 == pytest.approx(softmax(top / temperature)[0])
    everything = KBestLists(RUNNER, E, P, offsets, 100)
    exact, _ = tempered_marginals(RUNNER, E, P, offsets, temperature)
    np.testing.assert_allclose(everything.marginals(temperature).reshape(E.shape), exact,
                               atol=1e-9)


@settings(max_examples=100, deadline=None)
@given(corpora(order=1) | corpora(order=2), st.sampled_from([0.3, 1.0, 4.0]))
def test_sentence_probability_matches_brute_force(corpus, temperature):
    """The probability of each sentence's best sequence, over all sequences
    and over the k best."""
    E, P, offsets, brute = corpus
    exact = sentence_probability(RUNNER, E, P, offsets, "forward_backward", 20, temperature)
    top3 = sentence_probability(RUNNER, E, P, offsets, "kbest", 3, temperature)
    for (_, scores), p, p3 in zip(brute, exact, top3):
        assert p == pytest.approx(softmax(scores / temperature).max())
        assert p3 == pytest.approx(softmax(np.sort(scores)[::-1][:3] / temperature)[0])


# -- the estimators ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def corpus():
    X, y = make_chunking_corpus(400, random_state=5)
    vec = SequenceVectorizer(templates=("word", "pos"), window=1)
    return (vec.fit_transform(X[:200]), y[:200], vec.transform(X[200:300]), y[200:300],
            vec.transform(X[300:]), y[300:])


@pytest.mark.parametrize("name", sorted(TAGGERS))
def test_every_tagger_gives_marginals_and_confidence(corpus, name):
    Xtr, ytr, Xc, yc, Xte, _ = corpus
    model = make(TAGGERS[name], max_iter=2, random_state=0).fit(Xtr, ytr)
    for method in (None, "forward_backward", "kbest"):
        if method is not None:
            model.calibrate(Xc, yc, method=method)
            assert model.calibration_["method"] == method
            cal = model.calibration_
            assert cal["temperature"] > 0
            assert cal["log_loss"] <= cal["log_loss_at_1"] + 1e-12
        marginals = model.predict_marginals(Xte)
        conf = model.predict_confidence(Xte)
        pred = model.predict(Xte)
        assert len(marginals) == len(Xte) and conf.shape == (len(Xte),)
        assert np.all((conf > 0) & (conf <= 1))
        for m, p, c, x in zip(marginals, pred, conf, Xte):
            assert m.shape == (x.shape[0], len(model.classes_))
            np.testing.assert_allclose(m.sum(axis=1), 1.0)
            # the whole sequence is no more likely than any one of its labels
            cols = np.searchsorted(model.classes_, p)
            assert np.all(c <= m[np.arange(len(p)), cols] + 1e-9)


@pytest.mark.parametrize("name", sorted(TAGGERS))
def test_marginals_do_not_depend_on_threads(corpus, name):
    Xtr, ytr, Xc, yc, _, _ = corpus
    X, _ = make_chunking_corpus(600, random_state=6)     # several ranges of 2,048 tokens
    Xte = SequenceVectorizer(templates=("word", "pos"), window=1).fit(
        make_chunking_corpus(400, random_state=5)[0][:200]).transform(X)
    model = make(TAGGERS[name], max_iter=2, random_state=0).fit(Xtr, ytr)
    model.set_params(n_jobs=1)
    model.calibrate(Xc, yc)
    serial = (model.calibration_, model.predict_marginals(Xte), model.predict_confidence(Xte))
    model.set_params(n_jobs=2)
    model.calibrate(Xc, yc)
    assert model.calibration_ == serial[0]
    for a, b in zip(model.predict_marginals(Xte), serial[1]):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(model.predict_confidence(Xte), serial[2])


def test_crf_marginals_are_its_probabilities(corpus):
    """Uncalibrated, the CRF's marginals are its own (forward-backward at
    T = 1), and its confidence is P(predicted sequence | x) = exp(s(y) - log Z)."""
    from sklstruct._forward_backward import chain_marginals

    Xtr, ytr, _, _, Xte, _ = corpus
    model = CRFTagger(max_iter=30).fit(Xtr, ytr)
    W, P = model._decoding_weights()
    conf = model.predict_confidence(Xte[:20])
    for x, m, p, c in zip(Xte, model.predict_marginals(Xte[:20]), model.predict(Xte[:20]),
                          conf):
        E = x.toarray() @ W
        log_z, node, _ = chain_marginals(E, P)
        np.testing.assert_allclose(m, node, atol=1e-12)
        codes = np.searchsorted(model.classes_, p)
        assert c == pytest.approx(np.exp(sequence_score(E, P, codes) - log_z))
    model.calibrate(*corpus[2:4])
    assert model.calibration_["method"] == "forward_backward"


def test_calibration_is_forgotten_when_the_weights_change(corpus):
    Xtr, ytr, Xc, yc, _, _ = corpus
    model = StructuredPerceptronTagger(max_iter=2, random_state=0).fit(Xtr, ytr)
    model.calibrate(Xc, yc)
    assert "calibration_" not in clone(model).__dict__
    model.partial_fit(Xtr[:10], ytr[:10])
    assert not hasattr(model, "calibration_")
    model.calibrate(Xc, yc)
    model.fit(Xtr, ytr)
    assert not hasattr(model, "calibration_")


def test_calibrate_refuses_bad_input_and_keeps_the_old_calibration(corpus):
    Xtr, ytr, Xc, yc, _, _ = corpus
    model = StructuredPerceptronTagger(max_iter=2, random_state=0)
    with pytest.raises(NotFittedError):
        model.calibrate(Xc, yc)
    with pytest.raises(NotFittedError):
        model.predict_marginals(Xc)
    model.fit(Xtr, ytr).calibrate(Xc, yc)
    before = dict(model.calibration_)
    with pytest.raises(ValueError, match="numbers"):
        model.calibrate(Xc, [np.zeros(x.shape[0], dtype=int) for x in Xc])
    with pytest.raises(ValueError, match="method"):
        model.calibrate(Xc, yc, method="platt")
    with pytest.raises(ValueError, match="k"):
        model.calibrate(Xc, yc, k=0)
    with pytest.raises(ValueError, match="length|tokens"):
        model.calibrate(Xc, yc[1:] + yc[:1])
    nan = Xc[0].copy()
    nan.data[0] = np.nan
    with pytest.raises(ValueError):
        model.calibrate([nan], yc[:1])
    assert model.calibration_ == before


def test_calibrate_accepts_labels_the_model_does_not_know(corpus):
    """A held-out label unseen in training has probability 0 at every
    temperature: it counts as 1e-12 in the log loss."""
    Xtr, ytr, Xc, yc, _, _ = corpus
    model = StructuredPerceptronTagger(max_iter=2, random_state=0).fit(Xtr, ytr)
    odd = [list(s) for s in yc]
    odd[3][0] = "B-NOSUCH"
    model.calibrate(Xc, odd)
    n_tokens = sum(len(s) for s in yc)
    assert model.calibration_["log_loss"] >= -np.log(1e-12) / n_tokens


def test_nothing_to_fit_leaves_the_temperature_at_one(corpus):
    """When the held-out loss is the same at every temperature (no held-out
    label is one the model knows), T stays 1."""
    Xtr, ytr, Xc, yc, _, _ = corpus
    model = StructuredPerceptronTagger(max_iter=2, random_state=0).fit(Xtr, ytr)
    for method in ("forward_backward", "kbest"):
        model.calibrate(Xc, [["B-NOSUCH"] * len(s) for s in yc], method=method)
        assert model.calibration_["temperature"] == 1.0
        assert isinstance(model.calibration_["log_loss"], float)


def test_calibration_fixes_overconfident_scores():
    """Scores multiplied by 50 are over-confident at T = 1; the fitted
    temperature undoes the factor, whatever the method."""
    X, y = make_chunking_corpus(600, random_state=2)
    vec = SequenceVectorizer(templates=("word", "pos"), window=1)
    Xtr, Xc = vec.fit_transform(X[:300]), vec.transform(X[300:])
    base = CRFTagger(max_iter=50).fit(Xtr, y[:300])
    sharp = clone(base).fit(Xtr, y[:300])
    for name in ("coef_", "transition_coef_", "start_coef_", "end_coef_"):
        setattr(sharp, name, 50 * getattr(base, name))
    for method in ("forward_backward", "kbest"):
        base.calibrate(Xc, y[300:], method=method)
        sharp.calibrate(Xc, y[300:], method=method)
        assert sharp.calibration_["temperature"] == pytest.approx(
            50 * base.calibration_["temperature"], rel=0.01)
        assert sharp.calibration_["log_loss"] < sharp.calibration_["log_loss_at_1"]


# -- expected calibration error --------------------------------------------------------------

def test_ece_by_hand():
    # bins of width 0.5: [0.2, 0.4] (1 right of 2) and [0.9, 1.0] (both right)
    correct = [1, 0, 1, 1]
    conf = [0.2, 0.4, 0.9, 1.0]
    # |0.5 - 0.3| * 2/4 + |1 - 0.95| * 2/4
    assert expected_calibration_error(correct, conf, n_bins=2) == pytest.approx(0.125)
    assert expected_calibration_error([1, 1], [1.0, 1.0]) == 0.0
    assert expected_calibration_error([0, 1], [0.5, 0.5], n_bins=1) == 0.0


def test_ece_matches_sklearn_calibration_curve():
    rng = np.random.default_rng(0)
    # continuous values and values on the bin edges (which bin they join)
    conf = np.concatenate([rng.uniform(size=2000), np.round(rng.uniform(size=500), 1),
                           [0.0, 1.0]])
    correct = rng.uniform(size=len(conf)) < conf ** 2
    acc, mean_conf = calibration_curve(correct, conf, n_bins=10)
    counts = np.bincount(np.searchsorted(np.linspace(0, 1, 11)[1:-1], conf), minlength=10)
    want = np.sum(counts[counts > 0] / len(conf) * np.abs(acc - mean_conf))
    assert expected_calibration_error(correct, conf, n_bins=10) == pytest.approx(want)


@pytest.mark.parametrize("correct, conf, n_bins, message", [
    ([1, 0], [0.5], 15, "length"),
    ([], [], 15, "no predictions"),
    ([2, 0], [0.5, 0.5], 15, "booleans"),
    ([1, 0], [0.5, 1.5], 15, r"\[0, 1\]"),
    ([1, 0], [0.5, np.nan], 15, r"\[0, 1\]"),
    ([1, 0], [0.5, 0.5], 0, "n_bins"),
    ([1, 0], [0.5, 0.5], True, "n_bins"),
    ([1, 0], [0.5, 0.5], 10**7, "n_bins"),
    ([[1, 0], [1, 0]], [[0.5, 0.5], [0.5, 0.5]], 15, "1-D"),
    (["yes", "no"], [0.5, 0.5], 15, "correct: must be an array of numbers"),
])
def test_ece_refuses_bad_input(correct, conf, n_bins, message):
    with pytest.raises(ValueError, match=message):
        expected_calibration_error(correct, conf, n_bins=n_bins)


def test_sparse_and_dense_input_give_the_same_marginals(corpus):
    Xtr, ytr, _, _, Xte, _ = corpus
    model = StructuredPerceptronTagger(max_iter=2, random_state=0).fit(Xtr, ytr)
    dense = [x.toarray() for x in Xte[:10]]
    for a, b in zip(model.predict_marginals(Xte[:10]), model.predict_marginals(dense)):
        np.testing.assert_array_equal(a, b)
    assert sp.issparse(Xte[0])


def test_marginals_of_huge_scores_are_refused_not_garbage():
    # issue 28, item 5: at scores near 1e14, alpha + beta - log Z keeps no
    # digit of the differences; rows summed to anything and were clipped
    rng = np.random.default_rng(0)
    X = [rng.normal(size=(6, 4)) for _ in range(10)]
    y = [np.where(x[:, 0] > 0, "a", "b") for x in X]
    model = StructuredPerceptronTagger(max_iter=2, random_state=0).fit(X, y)
    fine = model.predict_marginals([x * 1e6 for x in X])
    for rows in fine:
        np.testing.assert_allclose(rows.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    huge = [x * 1e14 for x in X]
    with pytest.raises(ValueError, match=r"X\[\d+\]: the label marginals lost their "
                                         "precision.*scale the features down"):
        model.predict_marginals(huge)
    with pytest.raises(ValueError, match="lost their precision"):
        model.predict_confidence(huge)


def test_marginals_of_a_sentence_no_sequence_satisfies_are_refused():
    # issue 28, item 6: every sequence scored the finite forbidden score, and
    # the rows summed to 2-11; calibrate fitted a degenerate temperature
    from sklstruct import ConstrainedTagger
    allowed = np.ones((4, 2), dtype=bool)
    allowed[2] = [True, False]              # only B may start a sentence
    allowed[3] = [False, True]              # only I may end one
    model = ConstrainedTagger(StructuredPerceptronTagger(max_iter=2, random_state=0),
                              constraints=allowed)
    model.fit([np.eye(2)[[0, 1]]] * 3, [np.array(["B", "I"])] * 3)
    one_word = [np.eye(2)[[0]]]             # B starts but cannot end, I the reverse
    assert len(model.predict(one_word)[0]) == 1     # predict: the documented fallback
    for call in (model.predict_marginals, model.predict_confidence,
                 lambda X: model.calibrate(X, [np.array(["B"])])):
        with pytest.raises(ValueError, match=r"X\[0\]: no label sequence keeps to the "
                                             "tagger's restrictions"):
            call(one_word)
    ok = model.predict_marginals([np.eye(2)[[0, 1]]])[0]
    np.testing.assert_allclose(ok.sum(axis=1), 1.0)
    assert "calibration_" not in vars(model)

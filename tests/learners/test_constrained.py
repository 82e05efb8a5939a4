"""Restricted decoding (transition constraints, a tag dictionary): every
decoder against brute-force enumeration of the sequences the restrictions
allow, the chunk schemes against the strict chunk reader, and
ConstrainedTagger over every kind of model."""
import itertools
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from _oracles import brute_force

from sklstruct import (ConstrainedTagger, DictSequenceVectorizer, M3NTagger,
                       SequenceVectorizer, StructuredPerceptronTagger)
from sklstruct._forward_backward import chain_marginals
from sklstruct._viterbi import decode_corpus
from sklstruct.chain import (FORBIDDEN_TRANSITION, allowed_transitions, as_stacked, kbest_decode,
                             restrict_scores, viterbi_decode)
from sklstruct.datasets import make_chunking_corpus
from sklstruct.metrics import _strict_chunks


@st.composite
def restricted_problems(draw, order=1, max_T=5, max_L=4):
    """E, P, gold, a label mask and allowed transitions under which at least
    one sequence (``feasible``) keeps to both."""
    T = draw(st.integers(1, max_T))
    L = draw(st.integers(1, max_L))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    E = rng.normal(size=(T, L))
    P = rng.normal(size=(L + 2 + (L * L if order == 2 else 0), L))
    feasible = rng.integers(0, L, size=T)
    labels = rng.random((T, L)) < 0.6
    labels[np.arange(T), feasible] = True
    allowed = rng.random((L + 2, L)) < 0.6
    allowed[feasible[:-1], feasible[1:]] = True
    allowed[L, feasible[0]] = allowed[L + 1, feasible[-1]] = True
    return E, P, rng.integers(0, L, size=T), labels, allowed


def keeps(seq, labels, allowed):
    L = labels.shape[1]
    return (labels[np.arange(len(seq)), seq].all() and allowed[seq[:-1], seq[1:]].all()
            and allowed[L, seq[0]] and allowed[L + 1, seq[-1]])


def brute_restricted(E, P, labels, allowed, gold=None, cost=0.0):
    seqs, scores = brute_force(E, P, gold, cost)
    ok = np.array([keeps(s, labels, allowed) for s in seqs])
    return seqs[ok], scores[ok]


@settings(max_examples=150, deadline=None)
@given(restricted_problems(), st.sampled_from([0.0, 1.0]))
def test_viterbi_and_loss_augmented_viterbi_keep_to_the_restrictions(problem, cost):
    E, P, gold, labels, allowed = problem
    seqs, scores = brute_restricted(E, P, labels, allowed, gold, cost)
    Er, Pr = restrict_scores(E, P, labels, allowed)
    path, _ = viterbi_decode(Er, Pr, gold=gold, cost=cost)
    np.testing.assert_array_equal(path, seqs[np.argmax(scores)])


@settings(max_examples=100, deadline=None)
@given(restricted_problems(order=2, max_T=4, max_L=3), st.sampled_from([0.0, 1.0]))
def test_second_order_viterbi_keeps_to_the_restrictions(problem, cost):
    E, P, gold, labels, allowed = problem
    seqs, scores = brute_restricted(E, P, labels, allowed, gold, cost)
    path, _ = viterbi_decode(*restrict_scores(E, P, labels, allowed), gold=gold, cost=cost)
    np.testing.assert_array_equal(path, seqs[np.argmax(scores)])


@settings(max_examples=100, deadline=None)
@given(restricted_problems(), st.integers(1, 12), st.sampled_from([0.0, 1.0]))
def test_kbest_and_loss_augmented_kbest_keep_to_the_restrictions(problem, k, cost):
    """The first sequences of k-best on the restricted scores are the k best
    allowed ones; any after them break a restriction (ConstrainedTagger
    drops them)."""
    E, P, gold, labels, allowed = problem
    seqs, scores = brute_restricted(E, P, labels, allowed, gold, cost)
    k = min(k, E.shape[1] ** E.shape[0])
    paths, got = kbest_decode(*restrict_scores(E, P, labels, allowed), k, gold=gold, cost=cost)
    inside = got > FORBIDDEN_TRANSITION / 2
    n = min(k, len(seqs))
    assert inside.sum() == n and inside[:n].all()
    np.testing.assert_allclose(got[:n], np.sort(scores)[::-1][:n], atol=1e-9)
    assert all(keeps(p, labels, allowed) for p in paths[:n])


@settings(max_examples=100, deadline=None)
@given(restricted_problems(max_T=4, max_L=3))
def test_marginals_are_those_of_the_allowed_sequences(problem):
    E, P, _, labels, allowed = problem
    seqs, scores = brute_restricted(E, P, labels, allowed)
    p = np.exp(scores - scores.max())
    p /= p.sum()
    expected = np.zeros(E.shape)
    for s, q in zip(seqs, p):
        expected[np.arange(len(s)), s] += q
    _, node, _ = chain_marginals(*restrict_scores(E, P, labels, allowed))
    np.testing.assert_allclose(node, expected, atol=1e-9)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.integers(1, 5), st.sampled_from([1, 3, 6, 7]),
       st.booleans())
def test_viterbi_over_allowed_labels_equals_masked_viterbi_and_brute_force(seed, n_sent, L,
                                                                          with_constraints):
    """decode_corpus with per-token label lists (the tag dictionary's fast
    path, vectorised between tokens allowing every label) against
    enumeration of the allowed sequences; ties (integer scores) go the same
    way as Viterbi on the masked scores."""
    rng = np.random.default_rng(seed)
    X = [sp.csr_matrix(np.eye(T)) for T in rng.integers(1, 6, size=n_sent)]
    data = as_stacked([sp.csr_matrix(np.eye(x.shape[0], 8)) for x in X])
    n = data.matrix.shape[0]
    E = rng.integers(-2, 3, size=(n, L)).astype(float)
    P = rng.integers(-2, 3, size=(L + 2, L)).astype(float)
    mask = rng.random((n, L)) < 0.5
    mask[rng.random(n) < 0.3] = True                # some tokens keep every label
    mask[np.arange(n), rng.integers(0, L, size=n)] = True
    allowed = None
    if with_constraints:
        allowed = rng.random((L + 2, L)) < 0.7
        allowed[:, 0] = True                         # label 0 everywhere: feasible
        _, P = restrict_scores(E, P, None, allowed)
    rows, labs = np.nonzero(mask)
    aptr = np.searchsorted(rows, np.arange(n + 1)).astype(np.int64)
    ident = (np.arange(n + 1, dtype=np.int64), np.arange(n, dtype=np.int32), np.ones(n))
    got = decode_corpus(*ident, data.offsets, E, P, 1, None, (aptr, labs.astype(np.int32)))
    masked = decode_corpus(*ident, data.offsets, np.where(mask, E, -np.inf), P, 1)
    np.testing.assert_array_equal(got, masked)
    for a, b in zip(data.offsets[:-1], data.offsets[1:]):
        seqs, scores = brute_force(E[a:b], P)
        ok = np.array([mask[np.arange(a, b), s].all() for s in seqs])
        assert sum(E[a + t, c] for t, c in enumerate(got[a:b])) + P[L, got[a]] \
            + P[got[a:b - 1], got[a + 1:b]].sum() + P[L + 1, got[b - 1]] \
            == pytest.approx(scores[ok].max())


def test_allowed_label_lists_are_validated():
    data = as_stacked([sp.csr_matrix(np.eye(2))])
    E, P = np.zeros((2, 3)), np.zeros((5, 3))
    ident = (np.arange(3, dtype=np.int64), np.arange(2, dtype=np.int32), np.ones(2))
    for aptr, alab, message in [([0, 1, 1], [0], "allows no label"),
                                ([0, 2, 3], [1, 0, 2], "strictly ascending"),
                                ([0, 1, 2], [0, 3], r"lie in \[0, 3\)"),
                                ([0, 1], [0], "an entry per row")]:
        with pytest.raises(ValueError, match=message):
            decode_corpus(*ident, data.offsets, E, P, 1, None, (aptr, alab))


# -- chunk schemes -----------------------------------------------------------------------

def encode(chunks, T, scheme):
    """Labels of the chunks (type, start, end) of a sentence under ``scheme``."""
    out = ["O"] * T
    single, last = {"IOB2": ("B", "I"), "IOBES": ("S", "E"), "BILOU": ("U", "L")}[scheme]
    for kind, i, j in chunks:
        out[i:j] = [f"B-{kind}"] + [f"I-{kind}"] * (j - i - 1)
        if j - i == 1:
            out[i] = f"{single}-{kind}"
        elif scheme != "IOB2":
            out[j - 1] = f"{last}-{kind}"
    return out


@pytest.mark.parametrize("scheme", ["IOB2", "IOBES", "BILOU"])
def test_scheme_constraints_allow_exactly_the_well_formed_sequences(scheme):
    """A sequence keeps to allowed_transitions(scheme) iff it is the
    encoding of its own strict chunks: every sequence of up to 4 tokens."""
    letters = {"IOB2": "BI", "IOBES": "BIES", "BILOU": "BILU"}[scheme]
    labels = np.array(sorted(["O"] + [f"{p}-{k}" for p in letters for k in ("A", "B")]))
    allowed = allowed_transitions(scheme, labels)
    L = len(labels)
    for T in range(1, 5):
        for seq in itertools.product(range(L), repeat=T):
            seq = np.array(seq)
            words = labels[seq].tolist()
            chunks = sorted((k, i, j) for k, _, i, j in _strict_chunks([words], scheme, "y"))
            well_formed = encode(chunks, T, scheme) == words
            assert keeps(seq, np.ones((T, L), bool), allowed) == well_formed, words


def test_scheme_names_and_bad_labels():
    labels = ["B-NP", "I-NP", "O"]
    np.testing.assert_array_equal(allowed_transitions("bio", labels),
                                  allowed_transitions("IOB2", labels))
    with pytest.raises(ValueError, match="unknown scheme"):
        allowed_transitions("IOB3", labels)
    with pytest.raises(ValueError, match="label 'E-NP' is neither"):
        allowed_transitions("IOB2", ["E-NP", "O"])
    with pytest.raises(ValueError, match="label 'NP' is neither"):
        allowed_transitions("BILOU", ["NP", "O"])


# -- ConstrainedTagger -------------------------------------------------------------------

@pytest.fixture(scope="module")
def corpus():
    X, y = make_chunking_corpus(300, random_state=3)
    vec = SequenceVectorizer(templates=("word", "pos"), window=1)
    return vec.fit_transform(X[:200]), y[:200], vec.transform(X[200:]), y[200:]


def weak():
    # a weak model breaks constraints that a trained one would keep by itself
    return StructuredPerceptronTagger(max_iter=1, random_state=0)


def broken(seqs, allowed, classes):
    codes = [np.searchsorted(classes, s) for s in seqs]
    return sum(not keeps(c, np.ones((len(c), len(classes)), bool), allowed) for c in codes)


def test_without_restrictions_it_predicts_as_the_tagger(corpus):
    Xtr, ytr, Xte, _ = corpus
    inner = weak().fit(Xtr, ytr)
    model = ConstrainedTagger(weak()).fit(Xtr, ytr)
    for a, b in zip(inner.predict(Xte), model.predict(Xte)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(model.coef_, inner.coef_)


def test_constraints_hold_in_every_prediction(corpus):
    Xtr, ytr, Xte, _ = corpus
    inner = weak().fit(Xtr, ytr)
    model = ConstrainedTagger(weak(), constraints="bio", n_jobs=2).fit(Xtr, ytr)
    allowed = model.allowed_transitions_
    assert broken(inner.predict(Xte), allowed, model.classes_) > 0
    assert broken(model.predict(Xte), allowed, model.classes_) == 0
    for paths, scores in model.predict_kbest(Xte[:30], k=4):
        assert broken(paths, allowed, model.classes_) == 0
    # each prediction is the best allowed sequence under the tagger's scores
    E, P = inner._emissions(Xte[:10])
    for (a, b), got in zip(zip(Xte[:10].offsets[:-1], Xte[:10].offsets[1:]),
                           model.predict(Xte[:10])):
        path, _ = viterbi_decode(*restrict_scores(E[a:b], P, None, allowed))
        np.testing.assert_array_equal(got, model.classes_[path])
    marg = model.predict_marginals(Xte[:10])
    first = np.array([m[0] for m in marg])
    inside = np.char.startswith(model.classes_.astype(str), "I-")
    assert np.all(first[:, inside] < 1e-12)         # no sentence starts inside a chunk


def test_tag_dictionary_restricts_frequent_words_only():
    words = [["a", "b", "c"], ["a", "c"], ["a", "b"], ["c"]]
    tags = [["X", "Y", "Z"], ["X", "Z"], ["X", "Z"], ["Y"]]
    vec = SequenceVectorizer(templates=("word",), window=0)
    X = vec.fit_transform(words)
    model = ConstrainedTagger(weak(), label_dictionary=3).fit(X, tags)
    assert model.n_dictionary_words_ == 2            # a (3 times) and c (3 times)
    test = vec.transform([["a", "b", "c", "d"]])
    mask = model._label_mask(test)
    np.testing.assert_array_equal(mask, [[1, 0, 0], [1, 1, 1], [0, 1, 1], [1, 1, 1]])
    assert model.predict(test)[0][0] == "X"
    assert ConstrainedTagger(weak(), label_dictionary=4).fit(X, tags).n_dictionary_words_ == 0


def test_tag_dictionary_predictions_use_seen_labels(corpus):
    Xtr, ytr, Xte, _ = corpus
    model = ConstrainedTagger(weak(), label_dictionary=1).fit(Xtr, ytr)
    mask = model._label_mask(Xte)
    pred = np.searchsorted(model.classes_, np.concatenate(model.predict(Xte)))
    assert mask[np.arange(len(pred)), pred].all()
    assert 0 < model.n_dictionary_words_
    assert (~mask).any()


@pytest.mark.parametrize("kind", ["order2", "kernel"])
def test_masked_emissions_decode_second_order_and_kernel_models(corpus, kind):
    Xtr, ytr, Xte, _ = corpus
    inner = (StructuredPerceptronTagger(max_iter=1, order=2, random_state=0) if kind == "order2"
             else M3NTagger(kernel="poly", degree=2, max_iter=1, random_state=0))
    model = ConstrainedTagger(inner, constraints="bio", label_dictionary=2).fit(Xtr[:80],
                                                                                 ytr[:80])
    data = Xte[:15]
    E, P = model.estimator_._emissions(data)
    labels = model._label_mask(data)
    for (a, b), got in zip(zip(data.offsets[:-1], data.offsets[1:]), model.predict(data)):
        path, _ = viterbi_decode(*restrict_scores(E[a:b], P, labels[a:b],
                                                  model.allowed_transitions_))
        np.testing.assert_array_equal(got, model.classes_[path])


def test_no_allowed_sequence_keeps_the_dictionary_and_breaks_fewest_constraints():
    """"cat", seen only as I-NP, starting a sentence: no sequence keeps to
    both restrictions; the prediction keeps to the dictionary and breaks the
    one constraint it must."""
    words = [["the", "cat"]] * 3 + [["cat"]]
    tags = [["B-NP", "I-NP"]] * 3 + [["I-NP"]]          # the last breaks IOB2
    vec = SequenceVectorizer(templates=("word",), window=0)
    model = ConstrainedTagger(weak(), constraints="bio", label_dictionary=3)
    with pytest.warns(UserWarning, match="1 label transitions"):
        model.fit(vec.fit_transform(words), tags)
    assert list(model.predict(vec.transform([["cat", "the", "cat"]]))[0]) == [
        "I-NP", "B-NP", "I-NP"]
    paths, scores = model.predict_kbest(vec.transform([["cat", "the"]]), k=5)[0]
    assert len(paths) == 1 and scores[0] < FORBIDDEN_TRANSITION / 2


def test_refusals(corpus):
    Xtr, ytr, _, _ = corpus
    plain = [Xtr[i] for i in range(len(Xtr))]            # CSR matrices: no word keys
    with pytest.raises(ValueError, match="no word keys"):
        ConstrainedTagger(weak(), label_dictionary=1).fit(plain, ytr)
    model = ConstrainedTagger(weak(), label_dictionary=1).fit(Xtr, ytr)
    with pytest.raises(ValueError, match="no word keys"):
        model.predict(plain)
    with pytest.raises(ValueError, match="boolean matrix of shape"):
        ConstrainedTagger(weak(), constraints=np.ones((3, 3), bool)).fit(Xtr, ytr)
    with pytest.raises(TypeError, match="an sklstruct tagger"):
        from sklearn.linear_model import LogisticRegression
        ConstrainedTagger(LogisticRegression()).fit(Xtr, ytr)
    with pytest.raises(ValueError, match="label_dictionary"):
        ConstrainedTagger(weak(), label_dictionary=0).fit(Xtr, ytr)
    with pytest.raises(ValueError, match="neither 'O'"):
        ConstrainedTagger(weak(), constraints="bio").fit(Xtr, [np.zeros(len(s), int) + 1
                                                                for s in ytr])


def test_matrix_constraints_and_pickle(corpus):
    Xtr, ytr, Xte, _ = corpus
    L = len(np.unique(np.concatenate(ytr)))
    allowed = np.ones((L, L), bool)
    np.fill_diagonal(allowed, False)                     # never the same label twice
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = ConstrainedTagger(weak(), constraints=allowed).fit(Xtr, ytr)
        for p in model.predict(Xte):
            assert np.all(p[1:] != p[:-1])
        model.set_params(label_dictionary=2).fit(Xtr, ytr)
    again = pickle.loads(pickle.dumps(model))
    for a, b in zip(model.predict(Xte), again.predict(Xte)):
        np.testing.assert_array_equal(a, b)


# -- word keys ---------------------------------------------------------------------------

def test_word_keys_are_stable_and_follow_indexing():
    X, _ = make_chunking_corpus(20, random_state=1)
    vec = SequenceVectorizer(templates=("word",), window=0)
    Z = vec.fit_transform(X)
    again = SequenceVectorizer(templates=("word",), window=0).fit(X[5:]).transform(X)
    np.testing.assert_array_equal(Z.keys, again.keys)   # the same word, the same key
    words = [t[0] for s in X for t in s]
    assert len(set(Z.keys.tolist())) == len(set(words))
    sub = Z[[3, 1]]
    np.testing.assert_array_equal(sub.keys, np.concatenate([Z[3:4].keys, Z[1:2].keys]))
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(Z)).keys, Z.keys)
    assert DictSequenceVectorizer().fit_transform([[{"w": "a"}]]).keys is None
    with pytest.raises(ValueError, match="one integer per token"):
        type(Z)(Z.matrix, Z.offsets, keys=np.zeros(3))


# -- training under the tag dictionary -----------------------------------------------------

def one_label_words():
    """Sentences whose every word always has the same label (its dictionary
    entry is the gold label): training under the dictionary never errs."""
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(12)]
    label_of = {w: "ABC"[i % 3] for i, w in enumerate(words)}
    X = [[words[j] for j in rng.integers(0, 12, size=rng.integers(2, 7))] for _ in range(30)]
    vec = SequenceVectorizer(templates=("word",), window=0)
    return vec.fit_transform(X), [[label_of[w] for w in s] for s in X]


@pytest.mark.parametrize("inner", [
    StructuredPerceptronTagger(max_iter=2, average=False, shuffle=False),
    StructuredPerceptronTagger(k=3, max_iter=2, average=False, shuffle=False),
    "pa", "sdm"])
def test_training_searches_the_dictionary_labels(inner):
    from sklstruct._registry import TAGGERS
    from _oracles import make
    if isinstance(inner, str):
        inner = make(TAGGERS[inner], max_iter=2, random_state=0)
    X, y = one_label_words()
    plain = clone_fit(inner, X, y)
    assert sum(h.get("mistakes", 1) for h in plain.history_) > 0
    model = ConstrainedTagger(inner, label_dictionary=1).fit(X, y)
    # every word is restricted to its gold label: no sequence to learn from
    assert all(h.get("mistakes", 0) == 0 for h in model.estimator_.history_)
    assert not np.any(model.estimator_.coef_)


@pytest.mark.parametrize("k", [1, 3])
def test_a_dictionary_that_restricts_nothing_trains_as_the_tagger(corpus, k):
    """Every token allowed every label: the restricted decoders (Viterbi over
    the allowed labels, k-best with the forbidden ones scored away) train
    the very same model."""
    Xtr, ytr, Xte, _ = corpus
    inner = StructuredPerceptronTagger(k=k, max_iter=2, random_state=0)
    model = ConstrainedTagger(inner, label_dictionary=10 ** 9).fit(Xtr, ytr)
    assert model.n_dictionary_words_ == 0
    np.testing.assert_array_equal(model.estimator_.coef_, clone_fit(inner, Xtr, ytr).coef_)


def clone_fit(estimator, X, y):
    from sklearn.base import clone
    return clone(estimator).fit(X, y)


def test_restricted_pa_finds_its_prediction_under_the_dictionary_too(corpus):
    """RPA compares each candidate with the prediction of the current
    weights: under the dictionary that prediction is the best allowed
    sequence, so the restricted learner still learns."""
    from sklstruct import PassiveAggressiveTagger
    Xtr, ytr, Xte, yte = corpus
    inner = PassiveAggressiveTagger(k=3, restricted=True, max_iter=3, random_state=0)
    model = ConstrainedTagger(inner, label_dictionary=1).fit(Xtr, ytr)
    assert all(h["updates"] > 0 for h in model.estimator_.history_)
    assert model.score(Xte, yte) > 0.8


def test_nested_restrictions_are_refused_and_checks_do_not_cast(corpus):
    Xtr, ytr, _, _ = corpus
    inner = ConstrainedTagger(weak(), constraints="bio")
    with pytest.raises(TypeError, match="inside another"):
        ConstrainedTagger(inner, label_dictionary=1).fit(Xtr, ytr)
    data = as_stacked([sp.csr_matrix(np.eye(2))])
    ident = (np.arange(3, dtype=np.int64), np.arange(2, dtype=np.int32), np.ones(2))
    E, P = np.zeros((2, 3)), np.zeros((5, 3))
    with pytest.raises(ValueError, match="integer arrays"):
        decode_corpus(*ident, data.offsets, E, P, 1, None, ([0, 1, 2], [0.5, 1.9]))
    with pytest.raises(ValueError, match=r"lie in \[0, 3\)"):
        decode_corpus(*ident, data.offsets, E, P, 1, None,
                      (np.array([0, 1, 2]), np.array([0, 2 ** 32 + 1])))


def test_bytes_labels_and_lower_case_scheme_names():
    labels = np.array([b"B-NP", b"I-NP", b"O"])
    np.testing.assert_array_equal(allowed_transitions("iob2", labels),
                                  allowed_transitions("IOB2", labels.astype(str)))
    words = [["the", "cat", "sat"], ["a", "dog"]]
    tags = [[b"B-NP", b"I-NP", b"O"], [b"B-NP", b"I-NP"]]
    vec = SequenceVectorizer(templates=("word",), window=0)
    model = ConstrainedTagger(weak(), constraints="iob2").fit(vec.fit_transform(words), tags)
    assert model.predict(vec.transform([["cat"]]))[0][0] != b"I-NP"

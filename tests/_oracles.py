"""The brute-force oracles and problem generators that the tests share.

Each oracle computes what a kernel computes by enumerating every structure
(all label sequences) on problems small enough for that; the generators make
small random or separable chain problems.  Test modules import from here,
never from each other.
"""
import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import strategies as st
from scipy.optimize import minimize

from sklstruct.chain import joint_feature, kbest_decode, sequence_score


def brute_force(E, P, gold=None, cost=0.0):
    """All label sequences and their (loss-augmented) scores, computed directly;
    a P with L * L trigram rows after the start and end rows is second order."""
    T, L = E.shape
    Q = P[L + 2:].reshape(L, L, L) if P.shape[0] > L + 2 else None
    seqs = np.array(list(itertools.product(range(L), repeat=T)), dtype=np.int32)
    scores = np.array([
        P[L, s[0]] + E[np.arange(T), s].sum() + P[s[:-1], s[1:]].sum() + P[L + 1, s[-1]]
        + (Q[s[:-2], s[1:-1], s[2:]].sum() if Q is not None else 0.0)
        for s in seqs
    ])
    if cost:
        scores = scores + cost * (seqs != gold).sum(axis=1)
    return seqs, scores


@st.composite
def chain_problems(draw, integer_scores=False, max_T=5, max_L=4, order=1):
    T = draw(st.integers(1, max_T))
    L = draw(st.integers(1, max_L))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    rows = L + 2 + (L * L if order == 2 else 0)
    if integer_scores:  # many ties
        E = rng.integers(-2, 3, size=(T, L)).astype(float)
        P = rng.integers(-2, 3, size=(rows, L)).astype(float)
    else:
        E = rng.normal(size=(T, L))
        P = rng.normal(size=(rows, L))
    gold = rng.integers(0, L, size=T)
    return E, P, gold


def check_kbest(E, P, k, gold=None, cost=0.0):
    seqs, scores = brute_force(E, P, gold, cost)
    paths, got = kbest_decode(E, P, k, gold=gold, cost=cost)
    expected = np.sort(scores)[::-1][:k]
    assert len(paths) == min(k, len(seqs))
    np.testing.assert_allclose(got, expected, atol=1e-9)
    assert len({tuple(p) for p in paths}) == len(paths), "k-best sequences must be distinct"
    for p, s in zip(paths, got):  # each reported score is the score of its sequence
        direct = sequence_score(E, P, p) + (cost * np.sum(p != gold) if cost else 0.0)
        assert direct == pytest.approx(s)
    assert np.all(np.diff(got) <= 1e-12), "k-best scores must be non-increasing"


def random_problem(n=30, n_features=6, n_labels=3, seed=0):
    rng = np.random.default_rng(seed)
    X = [sp.csr_matrix(rng.integers(0, 3, size=(rng.integers(1, 7), n_features)).astype(float))
         for _ in range(n)]
    y = [rng.integers(0, n_labels, size=x.shape[0]) for x in X]
    for i in range(n_labels):  # every label occurs
        y[0][0] = i if i < len(y[0]) else y[0][0]
    y[0] = np.arange(len(y[0])) % n_labels
    y[1] = (np.arange(len(y[1])) + 1) % n_labels
    y[2] = (np.arange(len(y[2])) + 2) % n_labels
    return X, y


def chain_zeros(n_labels, order=1):
    """Zero chain parameters P of a chain of ``order`` (trigram rows for 2)."""
    return np.zeros((n_labels + 2 + (n_labels ** 2 if order == 2 else 0), n_labels))


def separable_problem():
    """A linearly separable toy problem: a token's label is given by which of
    three indicator features it has, plus noise features; a separate set of
    sentences needs the transitions: identical tokens whose labels alternate
    a, b, a, b ... from the start."""
    rng = np.random.default_rng(0)
    X, y = [], []
    for _ in range(60):
        T = rng.integers(2, 9)
        labels = rng.integers(0, 3, size=T)
        x = np.zeros((T, 8))
        x[np.arange(T), labels] = 1.0
        x[:, 3:7] = rng.integers(0, 2, size=(T, 4))
        X.append(sp.csr_matrix(x)), y.append(np.array(["a", "b", "c"])[labels])
    for T in range(2, 12):
        x = np.zeros((T, 8))
        x[:, 7] = 1.0
        X.append(sp.csr_matrix(x)), y.append(np.array(["a", "b"])[np.arange(T) % 2])
    return X, y


def tiny_problem(seed=0, n=4, n_labels=2, max_T=3, n_features=3):
    rng = np.random.default_rng(seed)
    X = [sp.csr_matrix(rng.integers(0, 3, size=(rng.integers(1, max_T + 1), n_features))
                       .astype(float)) for _ in range(n)]
    y = [rng.integers(0, n_labels, size=x.shape[0]) for x in X]
    y[0] = np.arange(X[0].shape[0]) % n_labels
    y[1] = (np.arange(X[1].shape[0]) + 1) % n_labels
    return X, y


def dF(x, gold, path, n_labels, order=1):
    """Dense dF(path) = F(x, gold) - F(x, path), flattened as [W block, P block]."""
    Fg, Fp = joint_feature(x, gold, n_labels, order), joint_feature(x, path, n_labels, order)
    return np.concatenate([(Fg[0] - Fp[0]).ravel(), (Fg[1] - Fp[1]).ravel()])


def full_dual_optimum(X, y, n_labels, C):
    """The dual (4)-(5) over ALL label sequences, solved by scipy (SLSQP)."""
    blocks, losses = [], []
    for x, gold in zip(X, y):
        seqs = [np.array(s) for s in itertools.product(range(n_labels), repeat=len(gold))]
        blocks.append(np.array([dF(x, gold, s, n_labels) for s in seqs]))
        losses.append(np.array([np.sum(s != gold) for s in seqs], dtype=float))
    D = np.vstack(blocks)
    Lv = np.concatenate(losses)
    sizes = [len(b) for b in blocks]
    bounds = np.cumsum([0] + sizes)

    def f(lam):
        w = D.T @ lam
        return 0.5 * w @ w - Lv @ lam, D @ w - Lv

    cons = [{"type": "eq", "fun": (lambda lam, a=a, b=b: lam[a:b].sum() - C),
             "jac": (lambda lam, a=a, b=b: np.r_[np.zeros(a), np.ones(b - a),
                                                 np.zeros(len(lam) - b)])}
            for a, b in zip(bounds[:-1], bounds[1:])]
    lam0 = np.concatenate([np.full(s, C / s) for s in sizes])
    res = minimize(f, lam0, jac=True, bounds=[(0, None)] * len(lam0), constraints=cons,
                   method="SLSQP", options={"ftol": 1e-14, "maxiter": 2000})
    assert res.success, res.message
    return -res.fun, D.T @ res.x


def make(cls, **params):
    """``cls`` with those of ``params`` it takes (the CRF has no k, average,
    shuffle or random_state; boosting counts ``n_rounds``, not ``max_iter``;
    a meta-estimator wraps a perceptron made so)."""
    from sklstruct._registry import META_TAGGERS
    if cls in META_TAGGERS.values():       # a meta-estimator: around a perceptron
        from sklstruct import StructuredPerceptronTagger
        inner = make(StructuredPerceptronTagger, **params)
        return cls(inner, **{k: v for k, v in params.items()
                             if k in cls(inner).get_params() and k != "estimator"})
    own = cls().get_params()
    if "max_iter" in params and "n_rounds" in own:
        params["n_rounds"] = params.pop("max_iter")
    return cls(**{k: v for k, v in params.items() if k in own})


def outcome(call, *args):
    """What ``call(*args)`` gave, comparable exactly: its result as plain
    values and bytes, or the type of the ValueError/TypeError it raised."""
    try:
        result = call(*args)
    except (ValueError, TypeError) as exc:
        assert str(exc)
        return type(exc).__name__
    return repr(_plain(result))


def _plain(value):
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "toarray"):
        value = value.toarray()
    if isinstance(value, np.ndarray):
        return (value.dtype.str, value.shape, value.tobytes())
    return str(value)


def public_state(estimator, skip=()):
    """An estimator's parameters and learned attributes, comparable exactly."""
    return {k: outcome(lambda v=v: v) for k, v in vars(estimator).items()
            if not k.startswith("_") and k not in skip}


def call_twins(pair, call, state=public_state):
    """Run ``call(estimator)`` -> (estimator to go on with, result) on both
    estimators of ``pair`` (in place) and check the random-sequence contract:
    a failure is a clear ValueError, TypeError or NotFittedError that leaves
    the estimator's ``state`` unchanged, and both give the same outcome."""
    from sklearn.exceptions import NotFittedError
    results = []
    for i, est in enumerate(pair):
        before = state(est)
        try:
            pair[i], result = call(est)
            results.append(outcome(lambda: result))
        except (ValueError, TypeError, NotFittedError) as exc:
            assert str(exc)
            assert state(est) == before, "a failed call changed the estimator"
            results.append(type(exc).__name__)
    assert results[0] == results[1], "n_jobs=2 differs from n_jobs=1"


# -- DictSequenceVectorizer ------------------------------------------------------------

class OracleDictSequenceVectorizer:
    """DictSequenceVectorizer as it was before its kernel (per-token dicts of
    names handed to scikit-learn's DictVectorizer): the reference the kernel
    must match exactly (vocabulary, column order, CSR arrays, messages).
    The per-token and per-sentence functions are the estimator's own, which
    its kernel hands every token it does not read itself: what is checked
    is the kernel's walk against them."""

    def __init__(self, sort=True):
        self.sort = sort

    def _items(self, X):
        from sklstruct._validation import check_sentence_list
        from sklstruct.features._dict import _check_sentence, _token_features

        sentences = check_sentence_list(X, "X", "sentences of feature dicts", item_ndim=1)
        items, offsets = [], [0]
        for i, sentence in enumerate(sentences):
            _check_sentence(sentence, i)
            items.extend(_token_features(token, f"X[{i}][{t}]")
                         for t, token in enumerate(sentence))
            offsets.append(len(items))
        return items, np.array(offsets, dtype=np.int64)

    def fit(self, X, y=None):
        self._fit_items(self._items(X)[0])
        return self

    def _fit_items(self, items):
        from sklearn.feature_extraction import DictVectorizer

        if not any(items):
            raise ValueError("X: no token has a feature (every dict is empty); nothing to "
                             "learn a vocabulary from")
        vectorizer = DictVectorizer(sort=self.sort).fit(items)
        self.vectorizer_ = vectorizer
        self.vocabulary_ = vectorizer.vocabulary_
        self.n_features_out_ = len(vectorizer.vocabulary_)

    def fit_transform(self, X, y=None):
        items, offsets = self._items(X)
        self._fit_items(items)
        return self._stack(items, offsets)

    def transform(self, X):
        return self._stack(*self._items(X))

    def _stack(self, items, offsets):
        from sklstruct.chain import StackedSentences

        matrix = sp.csr_matrix(self.vectorizer_.transform(items), dtype=np.float64)
        matrix.eliminate_zeros()
        matrix.sort_indices()
        return StackedSentences(matrix, offsets)

    def get_feature_names_out(self, input_features=None):
        return self.vectorizer_.get_feature_names_out().astype(object)

"""The compiled featurizer of SequenceVectorizer against the Python
implementation it replaced (tests/_oracle_featurizer.py): the same
vocabulary, the same CSR arrays byte for byte, the same keys and the same
errors, on every atom kind and on random templates and sentences."""
import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.utils import murmurhash3_32

import _oracle_featurizer as oracle
from sklstruct.features import SequenceVectorizer
from sklstruct.features._featurize import NameTable, murmurhash3_bytes
from sklstruct.features._templates import template_names
from sklstruct.features._tokens import _FLAGS

COLUMNS = ["word", "pos", "col2", "col:lemma"]
DERIVED = ["lower", "shape", "long_shape", "prefix1", "prefix3", "suffix2", "suffix4", "cluster1",
           "cluster2", "cluster5"]
FLAGS = sorted(_FLAGS)


def _atom_text(draw):
    kind = draw(st.sampled_from(["column", "derived", "flag", "position"]))
    column = draw(st.sampled_from(COLUMNS))
    if kind == "column":
        name = column
    elif kind == "derived":
        name = draw(st.sampled_from(DERIVED))
        name = name if column == "word" else f"{name}({column})"
    elif kind == "flag":
        name = draw(st.sampled_from(FLAGS))
        name = name if column == "word" else f"{name}({column})"
    else:
        name = draw(st.sampled_from(["is_first", "is_last"]))
    if draw(st.booleans()):
        first = draw(st.integers(-3, 3))
        if draw(st.integers(0, 3)) == 0:       # a disjunctive range
            name += f"[{first:+d}..{draw(st.integers(first, 3)):+d}]"
        else:
            name += f"[{first:+d}]"
    return name


@st.composite
def templates(draw):
    out = []
    for _ in range(draw(st.integers(1, 5))):
        if draw(st.integers(0, 9)) == 0:
            out.append("bias")
        else:
            out.append("|".join(_atom_text(draw) for _ in range(draw(st.integers(1, 3)))))
    return out


VALUES = st.one_of(
    st.sampled_from(["a", "A", "the", "U.S.", "1,000", "well-known", "", "|", "a|b",
                     "\\", "x\\|y", "=", "a=b", "__BOS__", "__EOS__", "Ünïcödé",
                     "ΣΑΣ", "日本", "x" * 300, "\ud800", "1"]),
    st.text(max_size=6),
)


@st.composite
def corpora(draw, kind=None):
    """(sentences, kind): tokens are 4-tuples, dicts with the same keys, or
    words (str)."""
    kind = kind or draw(st.sampled_from(["tuple", "dict", "str"]))
    X = []
    for _ in range(draw(st.integers(1, 4))):
        sentence = []
        for _ in range(draw(st.integers(1, 6))):
            w, p, c, lemma = (draw(VALUES) for _ in range(4))
            if kind == "tuple":
                sentence.append((w, p, c, lemma) if draw(st.booleans()) else [w, p, c, lemma])
            elif kind == "dict":
                sentence.append({"word": w, "pos": p, "col2": c, "lemma": lemma})
            else:
                sentence.append(w)
        X.append(sentence)
    return X, kind


def _usable(templates_, kind):
    """Templates whose columns the tokens have (str tokens: the word only;
    dicts: no colN)."""
    def ok(t):
        if kind == "str":
            return not any(c in t for c in ("pos", "col"))
        if kind == "dict":
            return "col2" not in t
        return "col:" not in t
    return [t for t in templates_ if ok(t)] or ["word"]


def _same_matrix(Z, expected):
    matrix, offsets, keys = expected
    for attr in ("indptr", "indices", "data"):
        a, b = getattr(Z.matrix, attr), getattr(matrix, attr)
        assert a.dtype == b.dtype, attr
        assert np.array_equal(a, b), attr
    assert Z.matrix.shape == matrix.shape
    assert np.array_equal(Z.offsets, offsets)
    if keys is None:
        assert Z.keys is None
    else:
        assert np.array_equal(Z.keys, keys)


#: Cluster paths of some of the VALUES (others have none: no feature).
CLUSTERS = {"a": "0110", "A": "01", "the": "1", "": "001", "|": "10101", "a|b": "0",
            "__BOS__": "11", "__EOS__": "1101", "Ünïcödé": "0111", "1": "",
            "The": "1001", "U.S.": "011", "x\\y": "10", "Ünï": "00"}


def _check(X_fit, X, tpl, window, boundary, hashing, min_freq, n_jobs=None,
           clusters=CLUSTERS):
    params = dict(window=window, boundary=boundary, hashing=hashing,
                  n_features=64 if hashing else 2**20, min_freq=1 if hashing else min_freq,
                  clusters=clusters)
    try:
        inst, vocab, n_out = oracle.fit(X_fit, tpl, **params)
    except ValueError as e:
        if "empty vocabulary" not in str(e):
            raise
        with pytest.raises(ValueError, match="No feature"):
            SequenceVectorizer(tpl, **params).fit(X_fit)
        return
    vec = SequenceVectorizer(tpl, n_jobs=n_jobs, **params).fit(X_fit)
    assert vec.templates_ == template_names(inst)
    assert vec.n_features_out_ == n_out
    if hashing:
        assert not hasattr(vec, "vocabulary_")
    else:
        assert list(vec.vocabulary_.items()) == list(vocab.items())
    expected = oracle.transform(X, inst, vocab, n_out, hashing, boundary, clusters)
    _same_matrix(vec.transform(X), expected)
    if X is X_fit:
        _same_matrix(SequenceVectorizer(tpl, **params).fit_transform(X), expected)
    # a vectorizer restored from a pickle rebuilds its compiled vocabulary
    _same_matrix(pickle.loads(pickle.dumps(vec)).transform(X), expected)
    assert vec.token_features(X) == oracle.token_features(X, inst, boundary, clusters)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), tpl=templates(), window=st.integers(0, 2),
       boundary=st.sampled_from(["symbol", "skip"]), hashing=st.booleans(),
       min_freq=st.integers(1, 3))
def test_same_as_python(data, tpl, window, boundary, hashing, min_freq):
    X, kind = data.draw(corpora())
    tpl = _usable(tpl, kind)
    X_test, _ = data.draw(corpora(kind))
    _check(X, X, tpl, window, boundary, hashing, min_freq)
    _check(X, X_test, tpl, window, boundary, hashing, min_freq)


@pytest.mark.parametrize("template", [
    "word", "lower", "prefix2", "suffix3", "shape", "long_shape", "long_shape(pos)", "pos", "col2", "col:lemma",
    *FLAGS, "is_first", "is_last", "bias", "word[-1]", "pos[+2]", "is_title[-1]",
    "word[-1]|word", "pos[-1]|pos|pos[+1]", "is_upper|pos", "is_first|is_title",
    "suffix2(pos)|shape(col2)[+1]", "word|is_last[+1]", "cluster2", "cluster3(pos)[-1]|word",
    "cluster1[+1]|cluster4(col2)", "lower[-2..-1]", "word[-1..+1]|pos", "is_title[-2..+2]",
    "cluster2[+1..+2]", "suffix2[-1..+1]|shape(col2)[-1..0]",
])
@pytest.mark.parametrize("boundary", ["symbol", "skip"])
@pytest.mark.parametrize("hashing", [False, True])
def test_every_atom_kind(template, boundary, hashing):
    kind = "dict" if "col:" in template else "tuple"
    rng = np.random.default_rng(0)
    words = ["The", "U.S.", "a|b", "x\\y", "1,000", "well-known", "__BOS__", "Ünï", "", "="]
    X = [[tuple(rng.choice(words, 4)) for _ in range(rng.integers(1, 7))]
         for _ in range(20)]
    if kind == "dict":
        X = [[dict(zip(["word", "pos", "col2", "lemma"], t)) for t in s] for s in X]
    _check(X, X, [template, "word"], 1, boundary, hashing, 1)
    _check(X[:10], X[10:], [template], 2, boundary, hashing, 2)


def test_threads_give_the_same_matrix():
    rng = np.random.default_rng(1)
    words = [f"w{i}" for i in range(300)] + ["a|b"]
    X = [[(str(rng.choice(words)), str(rng.choice(["NN", "VB", "DT|x"])))
          for _ in range(rng.integers(1, 30))] for _ in range(800)]
    tpl = ["bias", "word", "pos", "word[-1]|word", "pos[-1]|pos|pos[+1]", "suffix2",
           "lower[-3..-1]", "word[+1..+2]|pos"]
    for hashing in (False, True):
        one = SequenceVectorizer(tpl, window=1, hashing=hashing).fit(X)
        Z1 = one.transform(X)
        Z4 = one.set_params(n_jobs=4).transform(X)
        for attr in ("indptr", "indices", "data"):
            assert np.array_equal(getattr(Z1.matrix, attr), getattr(Z4.matrix, attr))
        _check(X, X, tpl, 1, "symbol", hashing, 1, n_jobs=3)


def test_long_conjunction_keys():
    """A conjunction whose key space passes 2**62 interns its prefix."""
    rng = np.random.default_rng(2)
    X = [[(f"w{rng.integers(5000)}", f"p{rng.integers(5000)}", f"c{rng.integers(5000)}")
          for _ in range(rng.integers(1, 9))] for _ in range(300)]
    tpl = ["word|pos|col2|word[-1]|pos[-1]|col2[-1]|word[+1]"]
    for hashing in (False, True):
        _check(X, X, tpl, 0, "symbol", hashing, 1)
        _check(X[:150], X[150:], tpl, 0, "skip", hashing, 1)


def test_murmurhash_matches_sklearn():
    for b in [b"", b"a", b"ab", b"abc", b"abcd", b"word=The", "Ünï|\\".encode(),
              bytes(range(256))]:
        assert murmurhash3_bytes(b) == murmurhash3_32(b, seed=0, positive=False)


def test_name_table_exact():
    names = ["a", "b", "ab", "", "\ud800", "x" * 1000] + [f"n{i}" for i in range(5000)]
    table = NameTable.from_names(names, range(len(names)))
    assert len(table) == len(names)
    assert [table.lookup(n) for n in names] == list(range(len(names)))
    assert table.lookup("missing") == -1 and table.lookup("n5000") == -1
    assert table.names() == names


@pytest.mark.parametrize("X, error, message", [
    ([[("a", "B"), ("b", None)]], TypeError, r"X\[0\], token 1: the value of column 'pos'"),
    ([[("a", "B")], [("a",)]], ValueError, r"X\[1\], token 0: no column 'pos'"),
    ([[1, 2]], TypeError, r"X\[0\], token 0: unsupported token type int"),
    ([["a", None]], TypeError, r"X\[0\], token 1: unsupported token type NoneType"),
    ([[("a", "B")], []], ValueError, r"X\[1\]"),
    ([[{"word": "a"}, {"word": 3}]], TypeError, r"X\[0\], token 1"),
])
def test_errors_as_before(X, error, message):
    tpl = ["word", "pos"]
    with pytest.raises(error, match=message):
        oracle.fit(X, tpl)
    with pytest.raises(error, match=message):
        SequenceVectorizer(tpl).fit(X)
    fitted = SequenceVectorizer(tpl).fit([[("a", "B")]])
    with pytest.raises(error, match=message):
        fitted.transform(X)


def test_huge_token():
    X = [[("x" * 1_000_000 + "|", "NN"), ("y", "NN")]]
    tpl = ["word[-1]|word", "suffix3", "shape"]
    _check(X, X, tpl, 0, "symbol", False, 1)
    _check(X, X, tpl, 0, "symbol", True, 1)


@pytest.mark.parametrize("boundary", ["symbol", "skip"])
def test_fitted_chunks(boundary):
    """The fitted loop goes in chunks of whole sentences: a sentence longer
    than a chunk, and many short ones across chunk ends, give the oracle's
    rows (values unseen at fit, flags and offsets beyond the sentence too)."""
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(400)] + ["The", "U.S.", "a|b"]

    def sentence(n):
        return [(str(rng.choice(words)), str(rng.choice(["NN", "VB", "DT|x", "NNP"])))
                for _ in range(n)]
    X_fit = [sentence(int(rng.integers(1, 40))) for _ in range(300)]
    X = [sentence(int(rng.integers(1, 12))) for _ in range(400)]
    X.insert(150, sentence(3000))
    X.append(sentence(1))
    tpl = ["bias", "word", "pos[-1]|pos|pos[+1]", "word[-1]|word", "is_title[+1]|pos",
           "is_first", "suffix2[-2]"]
    _check(X_fit, X, tpl, 2, boundary, False, 1)
    _check(X_fit, X, tpl, 2, boundary, False, 1, n_jobs=2)
    # (every instance has its lookup: the fitted loop is the one checked)
    vec = SequenceVectorizer(tpl, window=2, boundary=boundary).fit(X_fit)
    assert vec._compiled_vocabulary()[1].order is not None


@pytest.mark.parametrize("tpl", [["word", "pos"], ["pos"]])
def test_word_keys_when_read(tpl):
    """transform defers the word keys until they are read (only a tag
    dictionary reads them): the same keys whenever read, read-only, through
    pickling and the tag dictionary's restriction, with or without templates
    that read the word column."""
    from sklstruct.features._tokens import _Corpus
    X = [[("The", "DT"), ("U.S.", "NNP")], [("a|b", "NN")], [("The", "DT")]]
    vec = SequenceVectorizer(tpl).fit(X)
    expected = _Corpus(X).word_keys()
    Z = vec.transform(X)
    pickled = pickle.loads(pickle.dumps(vec.transform(X)))  # (before any read)
    restricted = vec.transform(X)._restricted(None)
    for keys in (Z.keys, Z.keys, pickled.keys, restricted.keys, Z[[2, 0]].keys):
        assert keys.dtype == np.int64 and not keys.flags.writeable
    np.testing.assert_array_equal(Z.keys, expected)
    np.testing.assert_array_equal(pickled.keys, expected)
    np.testing.assert_array_equal(restricted.keys, expected)
    np.testing.assert_array_equal(Z[[2, 0]].keys, expected[[3, 0, 1]])
    assert expected[0] == expected[3]

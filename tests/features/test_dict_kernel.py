"""DictSequenceVectorizer's walk in C against the implementation before it
(``tests/_oracles.OracleDictSequenceVectorizer``, which indexed per-token
dicts of names with scikit-learn's DictVectorizer): the same vocabulary in
the same order, byte-identical CSR arrays, the same errors."""
from collections import OrderedDict

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sklstruct import DictSequenceVectorizer
from _oracles import OracleDictSequenceVectorizer

#: Few enough characters that names collide ("a=" + "=b" and "a" + "==b"),
#: keys repeat across tokens and nested prefixes meet flat keys ("a:b").
_SMALL = st.text(alphabet="ab=:é\u00e9\u4e2d", max_size=4)
_KEYS = st.one_of(_SMALL, st.sampled_from(["bias", "word.lower()", "-1:postag", "a:b", "a=b"]),
                  st.text(max_size=6))
_STRS = st.one_of(_SMALL, st.text(max_size=6))


def _mostly(common, rare):
    """``rare`` (what makes an error) one time in ten, so that most examples
    get through to the comparison of outputs."""
    return st.integers(0, 9).flatmap(lambda k: rare if k == 0 else common)


_NUMBERS = _mostly(
    st.one_of(
        st.booleans(),
        st.integers(-3, 3),
        st.integers(-2**70, 2**70),
        st.floats(-1e100, 1e100),
        st.sampled_from([0.0, -0.0, 1.0, -1.0, 1e100, -1e100, 6e99, 5e-324]),
        st.builds(np.float64, st.floats(-1e3, 1e3)),
        st.builds(np.float32, st.floats(-1e3, 1e3, width=32)),
        st.builds(np.int64, st.integers(-5, 5)),
        st.builds(np.bool_, st.booleans()),
    ),
    st.one_of(st.integers(-10**400, 10**400), st.floats(),
              st.sampled_from([float("nan"), float("inf"), 1e101, -1e300, None, b"x"])),
)
_LEAVES = st.one_of(_STRS, _STRS, _NUMBERS)


def _values(depth):
    if depth == 0:
        return _LEAVES
    return st.one_of(
        _LEAVES, _LEAVES, _LEAVES,
        st.dictionaries(_KEYS, _values(depth - 1), max_size=3),
        st.lists(_STRS, max_size=3),
        st.lists(_STRS, max_size=3).map(tuple),
        st.frozensets(_STRS, max_size=3),
    )


_TOKENS = _mostly(
    st.one_of(
        st.dictionaries(_KEYS, _LEAVES, max_size=6),             # the fast path
        st.dictionaries(_KEYS, _LEAVES, max_size=6),
        st.dictionaries(_KEYS, _LEAVES, min_size=33, max_size=70),  # rows sorted by merging
        st.dictionaries(_KEYS, _values(2), max_size=4),          # nested: the general path
        st.dictionaries(_KEYS, _LEAVES, max_size=4).map(OrderedDict),
        st.dictionaries(st.one_of(_KEYS, st.integers(0, 3)), _LEAVES, max_size=3),
        st.lists(_STRS, max_size=4),
    ),
    st.one_of(st.lists(st.one_of(_STRS, st.integers(0, 2)), max_size=2),
              st.sampled_from([None, 5, "a", {}, ()])),
)
_SENTENCES = _mostly(st.one_of(st.lists(_TOKENS, min_size=1, max_size=4),
                               st.lists(_TOKENS, min_size=1, max_size=3).map(tuple)),
                     st.sampled_from([[], (), "ab", {"a": 1}, 3]))
_CORPORA = st.lists(_SENTENCES, min_size=1, max_size=4)


def _outcome(call):
    try:
        return call(), None
    except (TypeError, ValueError) as exc:
        return None, (type(exc), str(exc))


def _assert_same_stacked(expected, got):
    assert got.matrix.shape == expected.matrix.shape
    assert type(got.matrix) is type(expected.matrix)
    for name in ("indptr", "indices", "data"):
        a, b = getattr(expected.matrix, name), getattr(got.matrix, name)
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), name
    assert expected.offsets.dtype == got.offsets.dtype
    assert np.array_equal(expected.offsets, got.offsets)


def _assert_same_vocabulary(oracle, vec):
    assert list(vec.vocabulary_.items()) == list(oracle.vocabulary_.items())
    assert vec.n_features_out_ == oracle.n_features_out_
    a, b = oracle.get_feature_names_out(), vec.get_feature_names_out()
    assert a.dtype == b.dtype and list(a) == list(b)


def _check_same(X_fit, X_new, sort):
    oracle, vec = OracleDictSequenceVectorizer(sort=sort), DictSequenceVectorizer(sort=sort)
    expected, error = _outcome(lambda: oracle.fit_transform(X_fit))
    got, got_error = _outcome(lambda: vec.fit_transform(X_fit))
    assert got_error == error
    fitted, fit_error = _outcome(lambda: DictSequenceVectorizer(sort=sort).fit(X_fit))
    if error is not None:
        # fit alone reads the same tokens; it fails with the same message
        # unless only the stacking refused (a sum of values too large)
        assert fit_error == error or "matrix" in error[1]
        return
    _assert_same_stacked(expected, got)
    _assert_same_vocabulary(oracle, vec)
    assert fit_error is None
    _assert_same_vocabulary(oracle, fitted)
    expected, error = _outcome(lambda: oracle.transform(X_new))
    for model in (vec, fitted):
        got, got_error = _outcome(lambda: model.transform(X_new))
        assert got_error == error
        if error is None:
            _assert_same_stacked(expected, got)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(X_fit=_CORPORA, X_new=_CORPORA, sort=st.booleans())
def test_random_feature_dicts_match_the_oracle(X_fit, X_new, sort):
    _check_same(X_fit, X_new, sort)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(X=st.lists(st.lists(st.dictionaries(_KEYS, _STRS | st.booleans() | st.integers(-2, 2)
                                           | st.floats(-1e3, 1e3), max_size=8),
                           min_size=1, max_size=5), min_size=1, max_size=6),
       sort=st.booleans())
def test_random_flat_dicts_match_the_oracle(X, sort):
    """The fast path's inputs alone (no error on the way), fit and transform
    on halves of the corpus, so that unseen names are skipped."""
    _check_same(X, X[::-1] + X, sort)


@pytest.mark.parametrize("sort", [True, False])
def test_colliding_names_repeated_columns_and_zeros(sort):
    """Two spellings of one name share a column and add up in their order;
    zero values (False, 0, -0.0, sums to zero) keep their names in the
    vocabulary but give no entry; a long row is sorted stably."""
    wide = {f"k{j}": ("v" if j % 3 else float(j % 5 - 2)) for j in range(80)}
    wide.update({"a=b": "c", "a": "b=c", "a=b=c": 2.5, "z": -0.0, "y": False})
    X = [[{"a=b": "c", "a": "b=c", "a=b=c": -2.0, "q": 0, "r": 0.1},
          {"x": {"y": 1}, "x:y": -1, "t": ["u", "u"]},
          wide],
         ({"w": "1", "n": 1e-300}, {"w": 1e100, "w=1": 1e100})]
    _check_same(X, X[::-1], sort)
    vec = DictSequenceVectorizer(sort=sort).fit(X)
    assert {"q", "z", "y", "x:y", "a=b=c"} <= set(vec.vocabulary_)


def test_sentences_that_change_while_read():
    """A Mapping token whose items() changes its sentence: the walk reads the
    list's length each time (as enumerate does), so it neither reads past the
    end nor differs from the oracle."""

    class Shrinking(dict):
        def __init__(self, sentence, features):
            super().__init__(features)
            self.sentence = sentence

        def items(self):
            if len(self.sentence) > 1:
                self.sentence.pop()
            return super().items()

    def corpus():
        sentence = [{"a": "b"}]
        sentence.append(Shrinking(sentence, {"c": 1}))
        sentence += [{"d": "e"}, {"f": 2.0}]
        return [sentence, [{"a": "c"}]]

    expected = OracleDictSequenceVectorizer().fit_transform(corpus())
    got = DictSequenceVectorizer().fit_transform(corpus())
    _assert_same_stacked(expected, got)

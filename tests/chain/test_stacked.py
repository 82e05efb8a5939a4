"""StackedSentences: a list of sentence matrices to scikit-learn, one CSR matrix to the kernels."""
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score, train_test_split
from sklearn.utils import _safe_indexing

from sklstruct import StructuredPerceptronTagger
from sklstruct.chain import StackedSentences, as_stacked


def sentences(n=7, F=4, seed=0):
    rng = np.random.default_rng(seed)
    X = [sp.csr_matrix(rng.integers(0, 2, size=(rng.integers(1, 5), F)).astype(float))
         for _ in range(n)]
    y = [rng.integers(0, 3, size=x.shape[0]) for x in X]
    return X, y


def same(a, b):
    assert len(a) == len(b)
    for x, z in zip(a, b):
        assert x.shape == z.shape and (x != z).nnz == 0


def test_list_face():
    X, _ = sentences()
    S = as_stacked(X)
    assert isinstance(S, StackedSentences) and len(S) == 7 and S.shape == (7,)
    same(S, X)
    same(list(S), X)
    same([S[-1]], [X[-1]])
    same(S[2:5], X[2:5])
    same(S[::-2], X[::-2])
    same(S[[4, 0, 0]], [X[4], X[0], X[0]])
    same(S[np.arange(7) % 2 == 0], X[::2])
    same(S[(np.array([1, 3]), Ellipsis)], [X[1], X[3]])
    assert isinstance(S[1:3], StackedSentences)
    for bad in (7, -8):
        with pytest.raises(IndexError):
            S[bad]
    with pytest.raises(IndexError):
        S[np.array([0.5])]
    with pytest.raises(IndexError):
        S[np.ones(3, dtype=bool)]
    with pytest.raises(IndexError):
        S[3:3]


def test_sklearn_indexing_keeps_the_stack():
    X, y = sentences(10)
    S = as_stacked(X)
    part = _safe_indexing(S, np.array([9, 2, 4]))
    assert isinstance(part, StackedSentences)
    same(part, [X[9], X[2], X[4]])
    a, b, ya, yb = train_test_split(S, y, test_size=0.3, random_state=0)
    assert isinstance(a, StackedSentences) and isinstance(b, StackedSentences)
    assert len(a) == len(ya) and len(b) == len(yb)
    for train, test in KFold(3).split(S):
        same(S[train], [X[i] for i in train])


def test_pickle_and_immutability():
    X, _ = sentences()
    S = as_stacked(X)
    T = pickle.loads(pickle.dumps(S))
    same(T, X)
    np.testing.assert_array_equal(T.offsets, S.offsets)
    with pytest.raises(ValueError):
        S.matrix.data[0] = 5.0       # read-only: the kernels' view cannot change under them


def test_constructor_validates():
    M = sp.csr_matrix(np.ones((3, 2)))
    StackedSentences(M, [0, 1, 3])
    for offsets in ([0, 1], [0, 2, 2, 3], [1, 3], [0, 3, 1, 3], [[0, 3]]):
        with pytest.raises(ValueError, match="offsets"):
            StackedSentences(M, offsets)
    with pytest.raises(ValueError, match="finite"):
        StackedSentences(sp.csr_matrix(np.full((2, 2), np.nan)), [0, 2])
    with pytest.raises(TypeError):
        StackedSentences(np.ones((2, 2)), [0, 2])


def test_fit_and_predict_on_stacked_equal_lists():
    X, y = sentences(40, seed=1)
    S = as_stacked(X)
    a = StructuredPerceptronTagger(max_iter=3, random_state=0).fit(X, y)
    b = StructuredPerceptronTagger(max_iter=3, random_state=0).fit(S, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    for p, q in zip(a.predict(X), b.predict(S)):
        np.testing.assert_array_equal(p, q)
    assert as_stacked(S) is S                     # no second stacking
    with pytest.raises(ValueError, match="features"):
        a.predict(as_stacked([sp.csr_matrix(np.ones((2, 9)))]))


def test_cross_validation_on_stacked():
    X, y = sentences(30, seed=2)
    S = as_stacked(X)
    model = StructuredPerceptronTagger(max_iter=2, random_state=0)
    np.testing.assert_allclose(cross_val_score(model, S, y, cv=3),
                               cross_val_score(model, X, y, cv=3))
    search = GridSearchCV(model, {"k": [1, 2]}, cv=3).fit(S, y)
    assert search.best_params_["k"] in (1, 2)


# -- split_rows: per-sentence views made in C ------------------------------------------

def _sliced(arr, bounds):
    base = bounds[0]
    return [arr[a - base:b - base] for a, b in zip(bounds[:-1], bounds[1:])]


@pytest.mark.parametrize("seed", range(6))
def test_split_rows_gives_the_views_slicing_gives(seed):
    """Any dtype (strings, objects, floats), 1-D and 2-D, strided and
    read-only arrays; bounds starting anywhere, with empty pieces."""
    from sklstruct._chain import split_rows
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 6, rng.integers(1, 30))
    start = int(rng.integers(0, 50))
    bounds = np.r_[start, start + np.cumsum(lengths)].astype(np.int64)
    n = int(lengths.sum())
    arrays = [np.array(["B-NP", "I-NP", "O"])[rng.integers(0, 3, n)],
              np.array([object(), "x", 3], dtype=object)[rng.integers(0, 3, n)],
              rng.random((n, 3)), rng.random((n, 4))[:, ::2], rng.random(2 * n)[::2],
              np.asfortranarray(rng.random((n, 2)))]
    frozen = rng.random(n)
    frozen.flags.writeable = False
    arrays.append(frozen)
    for arr in arrays:
        got, want = split_rows(arr, bounds), _sliced(arr, bounds.tolist())
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert type(g) is np.ndarray and g.dtype == w.dtype and g.shape == w.shape
            assert g.strides == w.strides and g.flags.writeable == w.flags.writeable
            assert g.flags.c_contiguous == w.flags.c_contiguous
            np.testing.assert_array_equal(g, w)
            if g.size:
                assert np.shares_memory(g, arr)


def test_split_rows_keeps_its_array_alive_and_refuses_bad_bounds():
    import gc
    import sys

    from sklstruct._chain import split_rows
    arr = np.arange(10.0)
    before = sys.getrefcount(arr)
    views = split_rows(arr, np.array([0, 4, 10], dtype=np.int64))
    del views
    gc.collect()
    assert sys.getrefcount(arr) == before
    views = split_rows(np.arange(10.0) * 2, np.array([3, 5, 13], dtype=np.int64))
    np.testing.assert_array_equal(views[1], np.arange(2.0, 10.0) * 2)   # its array is gone
    views[0][0] = -1.0                                                  # and still writable
    for bad in ([0, 11], [2, 1], [0, 5, 4], [5, 16]):
        with pytest.raises(ValueError, match="split_rows"):
            split_rows(np.arange(10.0), np.array(bad, dtype=np.int64))
    with pytest.raises(ValueError, match="at least one"):
        split_rows(np.arange(3.0), np.array([], dtype=np.int64))
    with pytest.raises(ValueError, match="dimension"):
        split_rows(np.array(1.0), np.array([0], dtype=np.int64))
    assert split_rows(np.arange(3.0), np.array([7], dtype=np.int64)) == []


@pytest.mark.parametrize("args, error, message", [
    ((None,), ValueError, "per_token must have one row per token of sentences 0:2 \\(5\\)"),
    ((np.arange(4),), ValueError, r"got shape \(4,\)"),
    ((np.arange(100),), ValueError, "one row per token"),         # was cut silently
    ((np.arange(5), -1), ValueError, r"start must be an integer in \[0, 2\]"),  # gave []
    ((np.arange(5), 1, 0), ValueError, r"stop must be an integer in \[1, 2\]; got 0"),
    ((np.arange(5), 1.5), TypeError, "start must be an integer"),
    ((np.arange(5), 0, "2"), TypeError, "stop must be an integer"),
])
def test_split_checks_its_arguments(args, error, message):
    S = as_stacked([np.eye(3)[:2], np.eye(3)])
    with pytest.raises(error, match=message):
        S.split(*args)
    assert [len(a) for a in S.split(np.arange(5))] == [2, 3]
    assert [len(a) for a in S.split(np.arange(3), 1, 2)] == [3]


@pytest.mark.parametrize("n_features", ["2", -1, 2.0, True])
def test_as_stacked_checks_n_features(n_features):
    with pytest.raises(ValueError, match="n_features must be an integer >= 0"):
        as_stacked([np.eye(2)], n_features=n_features)


@st.composite
def sentence_lists(draw):
    """Lists of per-sentence matrices, mostly canonical int32/float64 CSR
    (the fast path), with a mutation now and then that it must leave to the
    general path: another format or dtype, unsorted or duplicate or
    out-of-range indices, a bad indptr, non-finite or huge values, an empty
    sentence, another width."""
    F = draw(st.integers(1, 5))
    out = []
    for _ in range(draw(st.integers(1, 5))):
        T = draw(st.integers(1, 4))
        dense = np.array(draw(st.lists(st.sampled_from([0.0, 0.0, 1.0, -2.5, 3.0]),
                                       min_size=T * F, max_size=T * F))).reshape(T, F)
        x = sp.csr_matrix(dense)
        mutation = draw(st.sampled_from(["none"] * 6 + [
            "dense", "coo", "float32", "int64", "csr_array", "unsorted", "duplicate",
            "out_of_range", "negative", "indptr", "nan", "huge", "empty", "width"]))
        if mutation == "dense":
            x = dense
        elif mutation == "coo":
            x = x.tocoo()
        elif mutation == "float32":
            x = x.astype(np.float32)
        elif mutation == "int64":
            x = sp.csr_matrix((x.data, x.indices.astype(np.int64), x.indptr.astype(np.int64)),
                              shape=x.shape)
        elif mutation == "csr_array":
            x = sp.csr_array(x)
        elif mutation in ("unsorted", "duplicate", "out_of_range", "negative", "indptr",
                          "nan", "huge") and x.nnz >= 2:
            x = sp.csr_matrix((x.data.copy(), x.indices.copy(), x.indptr.copy()), shape=x.shape)
            if mutation == "unsorted":
                x.indices[:2] = x.indices[:2][::-1]
            elif mutation == "duplicate":
                x.indices[1] = x.indices[0]
            elif mutation == "out_of_range":
                x.indices[0] = F + 3
            elif mutation == "negative":
                x.indices[0] = -1
            elif mutation == "indptr":
                x.indptr[1] = x.nnz + 5
            else:
                x.data[0] = np.nan if mutation == "nan" else 1e300
        elif mutation == "empty":
            x = sp.csr_matrix((0, F))
        elif mutation == "width":
            x = sp.csr_matrix(np.ones((T, F + 1)))
        out.append(x)
    return out


def _stacked_or_error(stack, X):
    try:
        S = stack(X)
    except (ValueError, TypeError) as exc:
        return type(exc).__name__, str(exc)
    M = S.matrix
    assert M.dtype == np.float64 and M.indices.dtype == np.int32
    # the arrays themselves: canonical (sorted, no duplicates) on both paths
    return (M.shape, M.indptr.tolist(), M.indices.tolist(), M.data.tolist(),
            S.offsets.tolist())


@settings(max_examples=300, deadline=None)
@given(X=sentence_lists())
def test_the_compiled_stacking_agrees_with_the_checked_path(X):
    """as_stacked's C path (sklstruct._stacking) gives the matrix, offsets or
    error message of the sentence-by-sentence path on any list."""
    from sklstruct.chain import _stack_checked
    fast = _stacked_or_error(as_stacked, X)
    slow = _stacked_or_error(lambda X: _stack_checked(list(X), None, "X"), X)
    assert fast == slow


def test_the_compiled_stacking_takes_canonical_csr_lists():
    from sklstruct._stacking import stack_csr
    X = [sp.csr_matrix(np.eye(3)[:2]), sp.csr_array(np.eye(3))]
    matrix, offsets = stack_csr(X, -1, 1e100)
    np.testing.assert_array_equal(matrix.toarray(), np.vstack([np.eye(3)[:2], np.eye(3)]))
    assert offsets.tolist() == [0, 2, 5]
    # the general path's cases: the index of the first sentence it leaves
    assert stack_csr(X + [np.eye(3)], -1, 1e100) == 2
    assert stack_csr(X, 4, 1e100) == 0


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 8), st.integers(1, 12), st.integers(0, 10 ** 6))
def test_compact_renumbers_the_used_columns_in_order(n, F, seed):
    X, _ = sentences(n, F, seed)
    lengths = [x.shape[0] for x in X]
    data = StackedSentences(sp.vstack(X, format="csr"), np.r_[0, np.cumsum(lengths)],
                            keys=np.arange(sum(lengths)))
    columns, small = data.compact(min_width=1)
    dense = data.matrix.toarray()
    np.testing.assert_array_equal(columns, np.flatnonzero(np.abs(dense).sum(axis=0)))
    assert small.n_features == max(columns.size, 1)
    np.testing.assert_array_equal(small.matrix.toarray()[:, :columns.size], dense[:, columns])
    np.testing.assert_array_equal(small.offsets, data.offsets)
    np.testing.assert_array_equal(small.keys, data.keys)
    assert small.matrix.has_sorted_indices or small.matrix.nnz == 0


_TAGGERS = {}


def _tagger(F, order):
    """A perceptron fitted on random sentences of F features (cached)."""
    if (F, order) not in _TAGGERS:
        rng = np.random.default_rng(F)
        X = [sp.csr_matrix(rng.integers(0, 2, size=(6, F)).astype(float)) for _ in range(20)]
        y = [rng.integers(0, 3, size=6) for _ in range(20)]
        _TAGGERS[F, order] = StructuredPerceptronTagger(max_iter=3, order=order,
                                                        random_state=0).fit(X, y)
    return _TAGGERS[F, order]


def _predicted_or_error(predict, X):
    try:
        return [p.tolist() for p in predict(X)]
    except (ValueError, TypeError) as exc:
        return type(exc).__name__, str(exc)


@settings(max_examples=200, deadline=None)
@given(X=sentence_lists(), order=st.sampled_from([1, 2]), f32=st.booleans())
def test_predict_decodes_lists_in_place_as_it_decodes_them_stacked(X, order, f32):
    """predict of a list of sentences (decoded where they lie by
    sklstruct._stacking.decode_parts when they are canonical CSR) gives the
    labels, or the error, of predict of the list stacked first."""
    F = next((x.shape[1] for x in X if x.ndim == 2 and x.shape[1] > 0), 1)
    tagger = _tagger(F, order)
    if f32:
        tagger = tagger.astype(np.float32)
    fast = _predicted_or_error(tagger.predict, X)
    slow = _predicted_or_error(lambda X: tagger.predict(as_stacked(X, tagger.n_features_in_)), X)
    assert fast == slow


def test_decode_parts_stops_at_the_first_sentence_it_does_not_take():
    from sklstruct._stacking import CsrParts, csr_parts, decode_parts
    tagger = _tagger(3, 1)
    X = [sp.csr_matrix(np.eye(3)), sp.csr_matrix(np.eye(3)), sp.csr_matrix(np.eye(3))]
    X[1].data[0] = np.inf                  # a value the checks refuse
    parts = csr_parts(X, 3)
    assert isinstance(parts, CsrParts) and parts.offsets.tolist() == [0, 3, 6, 9]
    W, P = tagger._decoding_weights()
    out = np.full(9, -1, dtype=np.int32)
    assert decode_parts(parts, 0, 3, W, P, 1, out, 1e100) == 1
    assert decode_parts(parts, 2, 3, W, P, 1, out, 1e100) == -1
    assert (out[6:] >= 0).all()
    with pytest.raises(ValueError, match="do not fit"):
        decode_parts(parts, 0, 4, W, P, 1, out, 1e100)
    with pytest.raises(ValueError, match="do not fit"):
        decode_parts(parts, 0, 3, W[:2], P, 1, out, 1e100)
    assert csr_parts(X + [np.eye(3)], 3) == 3

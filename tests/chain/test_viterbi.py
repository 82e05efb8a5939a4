"""Every decoding kernel against brute-force enumeration of all label sequences."""
import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from sklstruct.chain import kbest_decode, pack_chain, sequence_score, viterbi_decode
from _oracles import brute_force, chain_problems, check_kbest


@settings(max_examples=200, deadline=None)
@given(chain_problems(), st.booleans())
def test_viterbi_matches_brute_force(problem, augmented):
    E, P, gold = problem
    cost = 1.0 if augmented else 0.0
    seqs, scores = brute_force(E, P, gold, cost)
    path, score = viterbi_decode(E, P, gold=gold, cost=cost)
    assert score == pytest.approx(scores.max())
    direct = sequence_score(E, P, path) + cost * np.sum(path != gold)
    assert direct == pytest.approx(scores.max())


@settings(max_examples=200, deadline=None)
@given(chain_problems(), st.integers(1, 12))
def test_kbest_matches_brute_force(problem, k):
    E, P, _ = problem
    check_kbest(E, P, k)


@settings(max_examples=200, deadline=None)
@given(chain_problems(integer_scores=True), st.integers(1, 12))
def test_kbest_with_ties(problem, k):
    E, P, _ = problem
    check_kbest(E, P, k)


@settings(max_examples=200, deadline=None)
@given(chain_problems(), st.integers(1, 12), st.sampled_from([1.0, 0.5, 3.0]))
def test_loss_augmented_kbest_matches_brute_force(problem, k, cost):
    """Mancev & Todorovic, eq. 12: the k sequences with the largest w.F(x, y) + L(y^n, y)."""
    E, P, gold = problem
    check_kbest(E, P, k, gold=gold, cost=cost)


def documented_order(seqs, scores, k):
    """The k best in the decoder's documented order: by score, ties in increasing
    lexicographic order of the reversed sequences (exact with integer scores)."""
    order = sorted(range(len(seqs)), key=lambda i: (-scores[i], tuple(seqs[i][::-1])))[:k]
    return seqs[order], scores[order]


@settings(max_examples=200, deadline=None)
@given(chain_problems(integer_scores=True, max_T=7, max_L=3), st.integers(1, 40),
       st.sampled_from([0.0, 1.0, 2.0]))
def test_kbest_tie_order(problem, k, cost):
    """With integer scores every sum is exact, so the order among equal scores is
    fully defined: the sequences themselves must match, not just the scores."""
    E, P, gold = problem
    seqs, scores = brute_force(E, P, gold, cost)
    paths, got = kbest_decode(E, P, k, gold=gold, cost=cost)
    want_paths, want_scores = documented_order(seqs, scores, k)
    np.testing.assert_array_equal(got, want_scores)
    np.testing.assert_array_equal(paths, want_paths)
    path, score = viterbi_decode(E, P, gold=gold, cost=cost)
    np.testing.assert_array_equal(path, want_paths[0])
    assert score == want_scores[0]


@settings(max_examples=60, deadline=None)
@given(chain_problems(max_T=9, max_L=3), st.integers(1, 200))
def test_kbest_long_sentences_many_sequences(problem, k):
    """Deeper lattices and k up to 200: many ranks per node, heaps at every position."""
    E, P, gold = problem
    check_kbest(E, P, k, gold=gold, cost=1.0)


def test_k_larger_than_number_of_sequences():
    rng = np.random.default_rng(1)
    E, P = rng.normal(size=(3, 2)), rng.normal(size=(4, 2))
    paths, scores = kbest_decode(E, P, 100)
    assert paths.shape == (8, 3) and scores.shape == (8,)
    assert {tuple(p) for p in paths} == set(itertools.product(range(2), repeat=3))


def test_one_best_of_kbest_is_viterbi():
    rng = np.random.default_rng(2)
    for _ in range(50):
        T, L = rng.integers(1, 30), rng.integers(1, 10)
        E, P = rng.normal(size=(T, L)), rng.normal(size=(L + 2, L))
        path, score = viterbi_decode(E, P)
        paths, scores = kbest_decode(E, P, 3)
        assert scores[0] == pytest.approx(score)
        np.testing.assert_array_equal(paths[0], path)


def test_pack_chain_layout():
    trans, start, end = np.arange(4.0).reshape(2, 2), np.array([10.0, 11]), np.array([20.0, 21])
    P = pack_chain(trans, start, end)
    E = np.zeros((2, 2))
    # start[1] + trans[1, 0] + end[0]
    assert sequence_score(E, P, np.array([1, 0])) == 11 + 2 + 20


@pytest.mark.parametrize("bad, message", [
    (dict(E=np.zeros((0, 2))), "non-empty"),
    (dict(P=np.zeros((3, 2))), "shape"),
    (dict(E=np.array([[np.nan, 0.0]])), "finite"),
    (dict(gold=np.array([5])), "gold labels"),
    (dict(k=0), "k must be"),
])
def test_wrappers_validate(bad, message):
    args = dict(E=np.zeros((1, 2)), P=np.zeros((4, 2)), gold=np.array([0]), k=2)
    args.update(bad)
    with pytest.raises(ValueError, match=message):
        kbest_decode(args["E"], args["P"], args["k"], gold=args["gold"], cost=1.0)


@pytest.mark.parametrize("cost", [np.nan, np.inf, -np.inf])
def test_non_finite_cost_is_refused(cost):
    # the decoders returned NaN scores
    E, P, gold = np.zeros((2, 2)), np.zeros((4, 2)), np.array([0, 1])
    with pytest.raises(ValueError, match="cost must be finite"):
        viterbi_decode(E, P, gold=gold, cost=cost)
    with pytest.raises(ValueError, match="cost must be finite"):
        kbest_decode(E, P, 2, gold=gold, cost=cost)


@pytest.mark.parametrize("k, error", [(100_001, ValueError), (2**62, ValueError),
                                      (2**63, ValueError), (1.5, TypeError), (True, TypeError)])
def test_k_beyond_max_k_is_refused_before_any_allocation(k, error):
    # numpy's "array is too big" and an OverflowError at 2**63 before
    with pytest.raises(error, match="k must be an integer"):
        kbest_decode(np.zeros((1, 2)), np.zeros((4, 2)), k)


@pytest.mark.parametrize("path, error, message", [
    (None, TypeError, "path must be an array"),                    # was a segfault
    (np.array([0.0, 1.0]), TypeError, "integer labels"),           # was read as labels
    (np.array([True, False]), TypeError, "integer labels"),
    (np.array([0]), ValueError, "shape"),
    (np.array([0, 2]), ValueError, "lie in"),
])
def test_sequence_score_checks_its_path(path, error, message):
    with pytest.raises(error, match=message):
        sequence_score(np.zeros((2, 2)), np.zeros((4, 2)), path)


_E = np.arange(6.0).reshape(3, 2)


@pytest.mark.parametrize("E, error, message", [
    (None, TypeError, "got None"),                                   # None became [nan]
    (_E.astype(str), TypeError, "got dtype <U"),                      # parsed
    (_E + 1j, TypeError, "got dtype complex"),                        # imaginary dropped
    (_E > 2, TypeError, "got dtype bool"),
    (np.ma.masked_array(_E, mask=_E > 2), TypeError, "got masked_array"),   # mask ignored
    (sp.csr_matrix(_E), TypeError, "got <Compressed Sparse Row"),   # "setting an array..."
    ("abc", TypeError, "got 'abc'"),
])
def test_decoders_refuse_what_numpy_would_cast(E, error, message):
    for call in (lambda: viterbi_decode(E, np.zeros((4, 2))),
                 lambda: kbest_decode(E, np.zeros((4, 2)), 2),
                 lambda: sequence_score(E, np.zeros((4, 2)), [0, 1, 0]),
                 lambda: viterbi_decode(_E, E if E is not None else None)):
        with pytest.raises(error, match="must be a 2-D array of real numbers; " + message):
            call()


@pytest.mark.parametrize("E, cost", [(np.full((3, 2), 1e308), 0.0),
                                     (np.full((3, 2), -1e308), 0.0),
                                     (np.zeros((3, 2)), 1e308)])
def test_scores_that_overflow_are_refused(E, cost):
    # finite inputs summed to +-inf scores, and k-best ranked infinities
    P, gold = np.zeros((4, 2)), np.array([0, 1, 0])
    for call in (lambda: viterbi_decode(E, P, gold=gold, cost=cost),
                 lambda: kbest_decode(E, P, 8, gold=gold, cost=cost)):
        with pytest.raises(ValueError, match="scores overflow float64"):
            call()
    if cost == 0.0:
        with pytest.raises(ValueError, match="scores overflow float64"):
            sequence_score(E, P, gold)


@pytest.mark.parametrize("cost, error, message", [
    (None, TypeError, "cost must be a real number"), ("1", TypeError, "cost must be a real"),
    (np.array([1.0]), TypeError, "cost must be a real"), (True, TypeError, "real number"),
    (10**400, ValueError, "cost must be finite"),        # was an OverflowError
])
def test_cost_is_checked_by_name(cost, error, message):
    with pytest.raises(error, match=message):
        viterbi_decode(np.zeros((2, 2)), np.zeros((4, 2)), gold=[0, 1], cost=cost)


def test_float_gold_labels_are_refused():
    with pytest.raises(TypeError, match="integer labels"):
        viterbi_decode(np.zeros((2, 2)), np.zeros((4, 2)), gold=np.array([0.0, 1.5]), cost=1.0)


def test_loss_augmented_needs_gold():
    with pytest.raises(ValueError, match="gold"):
        viterbi_decode(np.zeros((2, 2)), np.zeros((4, 2)), cost=1.0)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.integers(1, 30), st.sampled_from([1, 3, 8, 22]))
def test_corpus_emissions_equal_the_sparse_product(seed, density, L):
    """decode_corpus computes E = X @ W row by row (prefetching rows of W
    ahead of the one it adds, across token and sentence ends): its labels
    are Viterbi's on scipy's product, with empty and long rows."""
    import scipy.sparse as sp

    from sklstruct._viterbi import decode_corpus
    from sklstruct.chain import as_stacked
    rng = np.random.default_rng(seed)
    F = 40
    X = []
    for _ in range(rng.integers(1, 6)):
        T = int(rng.integers(1, 7))
        nnz = rng.integers(0, density + 1, size=T)
        cols = rng.integers(0, F, size=nnz.sum())
        indptr = np.concatenate([[0], np.cumsum(nnz)])
        X.append(sp.csr_matrix((rng.normal(size=cols.size), cols, indptr), shape=(T, F)))
    W = rng.normal(size=(F, L))
    P = rng.normal(size=(L + 2, L))
    data = as_stacked(X)
    c = data.chain_data()
    got = data.split(decode_corpus(c.indptr, c.indices, c.data, c.offsets, W, P, 1))
    for x, codes in zip(X, got):
        np.testing.assert_array_equal(codes, viterbi_decode((x @ W), P)[0])
    # float32 weights (a model stored by astype), added up in float64
    W32 = W.astype(np.float32)
    got = data.split(decode_corpus(c.indptr, c.indices, c.data, c.offsets, W32, P, 1))
    for x, codes in zip(X, got):
        np.testing.assert_array_equal(codes, viterbi_decode(x @ W32.astype(np.float64), P)[0])

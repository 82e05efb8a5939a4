"""Forward-backward (both orders, scaled and log-space paths) and the
conditioned expectations of the pointwise losses against brute-force
enumeration of the label sequences."""
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

from sklstruct._conditioned import _conditioned, conditioned_expectations
from sklstruct._forward_backward import _chain_marginals, chain_marginals
from sklstruct.chain import joint_feature
from _oracles import brute_force


def counts(seq, T, L):
    node = np.zeros((T, L))
    node[np.arange(T), seq] = 1.0
    _, chain = joint_feature(sp.csr_matrix((T, 1)), seq, L)
    return node, chain


@st.composite
def problems(draw, max_T=5, max_L=4, scale=1.0):
    T, L = draw(st.integers(1, max_T)), draw(st.integers(1, max_L))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return (scale * rng.normal(size=(T, L)), scale * rng.normal(size=(L + 2, L)),
            rng.integers(0, L, size=T), rng.random(T))


@settings(max_examples=200, deadline=None)
@given(problems(), st.sampled_from([1.0, 50.0, 1000.0]))
def test_forward_backward_matches_brute_force(problem, scale):
    """On either path: scaled (ordinary scores) or log space (where a scaled
    sum underflows, which scores of 1000 provoke)."""
    E, P, _, _ = problem
    E, P = scale * E, scale * P
    T, L = E.shape
    seqs, scores = brute_force(E, P)
    log_z = logsumexp(scores)
    node, chain = np.zeros((T, L)), np.zeros((L + 2, L))
    for q, p in zip(seqs, np.exp(scores - log_z)):
        n, c = counts(q, T, L)
        node += p * n
        chain += p * c
    got_z, got_node, got_chain = chain_marginals(E, P)
    assert got_z == pytest.approx(log_z, abs=1e-10)
    np.testing.assert_allclose(got_node, node, atol=1e-10)
    np.testing.assert_allclose(got_chain, chain, atol=1e-10)


@settings(max_examples=150, deadline=None)
@given(problems(), st.sampled_from([1.0, 1000.0]), st.booleans())
def test_conditioned_expectations_match_brute_force(problem, scale, factored):
    """sum_t c_t E[F | x, y_t = gold_t] (what the pointwise losses need) and
    log Z_t, by enumeration of the sequences with y_t = gold_t; with the
    factored derivatives (where the transitions' spread allows) or without."""
    E, P, gold, c = problem
    E, P = scale * E, scale * P
    T, L = E.shape
    seqs, scores = brute_force(E, P)
    node, chain, log_zt = np.zeros((T, L)), np.zeros((L + 2, L)), np.zeros(T)
    for t in range(T):
        keep = seqs[:, t] == gold[t]
        log_zt[t] = logsumexp(scores[keep])
        for q, p in zip(seqs[keep], np.exp(scores[keep] - log_zt[t])):
            n, ch = counts(q, T, L)
            node += c[t] * p * n
            chain += c[t] * p * ch
    got_node, got_chain, got_zt = _conditioned(E, P, gold, c, factored)
    np.testing.assert_allclose(got_node, node, atol=1e-10)
    np.testing.assert_allclose(got_chain, chain, atol=1e-10)
    np.testing.assert_allclose(got_zt, log_zt, atol=1e-10 * max(1.0, np.abs(log_zt).max()))


@settings(max_examples=150, deadline=None)
@given(problems(max_T=5, max_L=3), st.sampled_from([1.0, 1000.0]))
def test_second_order_forward_backward_matches_brute_force(problem, scale):
    """Over label pairs: log Z, the node marginals and the expected
    transition, start, end and trigram counts, by enumeration."""
    E, P, _, _ = problem
    T, L = E.shape
    Q = np.random.default_rng(T * 7 + L).normal(size=(L * L, L))
    E, P = scale * E, scale * np.vstack([P, Q])
    seqs, scores = brute_force(E, P)
    log_z = logsumexp(scores)
    node, chain = np.zeros((T, L)), np.zeros(P.shape)
    for q, p in zip(seqs, np.exp(scores - log_z)):
        node[np.arange(T), q] += p
        chain += p * joint_feature(sp.csr_matrix((T, 1)), q, L, order=2)[1]
    got_z, got_node, got_chain = chain_marginals(E, P)
    assert got_z == pytest.approx(log_z, abs=1e-10 * max(1.0, abs(log_z)))
    np.testing.assert_allclose(got_node, node, atol=1e-10)
    np.testing.assert_allclose(got_chain, chain, atol=1e-10)


@settings(max_examples=100, deadline=None)
@given(problems(max_T=5, max_L=3))
def test_second_order_conditioned_expectations_match_brute_force(problem):
    E, P, gold, c = problem
    T, L = E.shape
    P = np.vstack([P, np.random.default_rng(T * 5 + L).normal(size=(L * L, L))])
    seqs, scores = brute_force(E, P)
    node, chain, log_zt = np.zeros((T, L)), np.zeros(P.shape), np.zeros(T)
    for t in range(T):
        keep = seqs[:, t] == gold[t]
        log_zt[t] = logsumexp(scores[keep])
        for q, p in zip(seqs[keep], np.exp(scores[keep] - log_zt[t])):
            node[np.arange(T), q] += c[t] * p
            chain += c[t] * p * joint_feature(sp.csr_matrix((T, 1)), q, L, order=2)[1]
    got_node, got_chain, got_zt = conditioned_expectations(E, P, gold, c)
    np.testing.assert_allclose(got_node, node, atol=1e-10)
    np.testing.assert_allclose(got_chain, chain, atol=1e-10)
    np.testing.assert_allclose(got_zt, log_zt, atol=1e-10)


def test_scaled_path_and_its_fallback():
    """The scaled recursion serves ordinary chains; where the scores spread
    so far that its factors could underflow (transitions 2000 apart) the
    log-space path takes over, exactly."""
    rng = np.random.default_rng(3)
    E, P = rng.normal(size=(6, 4)), rng.normal(size=(6, 4))
    assert _chain_marginals(E, P)[3]
    E = np.array([[0.0, 0.0], [0.0, 1500.0], [0.0, 0.0]])
    P = np.array([[0.0, -2000.0], [-2000.0, 0.0], [0.0, -1e3], [0.0, 0.0]])
    log_z, node, chain, scaled = _chain_marginals(E, P)
    assert not scaled
    seqs, scores = brute_force(E, P)
    assert log_z == pytest.approx(logsumexp(scores), abs=1e-9)
    p = np.exp(scores - logsumexp(scores))
    expected = sum(pq * counts(q, 3, 2)[0] for q, pq in zip(seqs, p))
    np.testing.assert_allclose(node, expected, atol=1e-10)


def test_long_sentences_and_huge_scores_do_not_overflow():
    """Where naive exponentiation overflows (scores of 1e3 over 2,000 tokens):
    log Z is exact and the marginals are probabilities."""
    rng = np.random.default_rng(0)
    T, L = 2000, 5
    E, P = 1e3 * rng.normal(size=(T, L)), 1e3 * rng.normal(size=(L + 2, L))
    log_z, node, chain = chain_marginals(E, P)
    assert np.isfinite(log_z) and log_z > 1e5
    # log-space values of magnitude 1e6 carry ~1e-10 absolute rounding per
    # step; over 2,000 steps the marginals keep 7 digits
    np.testing.assert_allclose(node.sum(axis=1), 1.0, atol=1e-6)
    assert np.all((node >= 0) & (node <= 1 + 1e-12))
    assert chain[:L].sum() == pytest.approx(T - 1, rel=1e-6)
    # the dominant sequence is the Viterbi one
    from sklstruct.chain import viterbi_decode
    path, score = viterbi_decode(E, P)
    np.testing.assert_array_equal(node.argmax(axis=1), path)
    assert score <= log_z < score + 10          # a few near-best sequences add a little
    # and a short problem scaled so that exp() overflows, against brute force
    E, P = 400 * rng.normal(size=(4, 3)), 400 * rng.normal(size=(5, 3))
    assert chain_marginals(E, P)[0] == pytest.approx(logsumexp(brute_force(E, P)[1]))

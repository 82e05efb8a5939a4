"""sklstruct.stats: against scipy.stats where they overlap, against exact
enumeration, and on cases worked by hand."""
import itertools

import numpy as np
import pytest
from scipy import stats as st

from sklstruct.metrics import chunk_counts_per_sentence, chunk_report
from sklstruct.parsing import Tree
from sklstruct.stats import (chunk_f1_test, fold_replicability_test, mcnemar_test,
                             paired_bootstrap_test, paired_randomization_test, parseval_f1_test,
                             replicability_analysis, sentence_bracket_counts, wilcoxon_f1_test)


def f1(counts):
    c, p, t = np.asarray(counts, dtype=float).sum(0)
    return 2 * c / (p + t) if p + t else 0.0


def random_counts(rng, n):
    true = rng.integers(0, 5, size=n)
    pred = rng.integers(0, 5, size=n)
    correct = np.minimum(rng.integers(0, 5, size=n), np.minimum(true, pred))
    return np.stack([correct, pred, true], axis=1)


def test_randomization_matches_the_exact_permutation_test():
    """With 8 sentences all 256 swap patterns can be enumerated: the Monte
    Carlo p-value converges to the exact one."""
    rng = np.random.default_rng(0)
    a, b = random_counts(rng, 8), random_counts(rng, 8)
    d = f1(a) - f1(b)
    extreme = 0
    for swap in itertools.product([False, True], repeat=8):
        s = np.array(swap)[:, None]
        extreme += abs(f1(np.where(s, b, a)) - f1(np.where(s, a, b))) >= abs(d) - 1e-12
    exact = extreme / 256
    result = paired_randomization_test(a, b, n_resamples=200_000, random_state=0)
    assert result.statistic == pytest.approx(d)
    assert result.pvalue == pytest.approx(exact, abs=0.005)


def test_resampling_tests_by_hand():
    perfect = np.array([[2, 2, 2]] * 30)
    useless = np.array([[0, 2, 2]] * 30)
    r = paired_randomization_test(perfect, useless, n_resamples=999, random_state=1)
    assert r.statistic == 1.0 and r.pvalue == pytest.approx(1 / 1000, abs=2e-3)
    assert paired_randomization_test(perfect, perfect, n_resamples=99).pvalue == 1.0
    b = paired_bootstrap_test(perfect, useless, n_resamples=999, random_state=1)
    assert b.statistic == 1.0 and b.pvalue == 0.0      # never d* > 2 d = 2
    assert paired_bootstrap_test(useless, perfect, n_resamples=9).pvalue == 1.0
    # reproducible, and the bootstrap's p-value near 1/2 for a tie-breaking toss-up
    rng = np.random.default_rng(3)
    a, c = random_counts(rng, 200), random_counts(rng, 200)
    assert paired_bootstrap_test(a, c, random_state=4) == paired_bootstrap_test(
        a, c, random_state=4)


def test_chunk_and_parseval_tests_use_the_reports_counts():
    y_true = [["B-NP", "I-NP", "O", "B-VP"], ["B-NP", "O"], ["O", "B-PP"]]
    y_a = [["B-NP", "I-NP", "O", "B-VP"], ["B-NP", "O"], ["O", "O"]]
    y_b = [["B-NP", "O", "O", "B-VP"], ["O", "O"], ["O", "B-PP"]]
    counts = chunk_counts_per_sentence(y_true, y_a)
    report = chunk_report(y_true, y_a)
    assert counts.tolist() == [[2, 2, 2], [1, 1, 1], [0, 0, 1]]
    assert f1(counts) == pytest.approx(report.f1)
    r = chunk_f1_test(y_true, y_a, y_b, n_resamples=999, random_state=0)
    assert r.statistic == pytest.approx(report.f1 - chunk_report(y_true, y_b).f1)
    assert 0 < r.pvalue <= 1
    gold = [Tree.fromstring("(S (NP (DT the) (NN cat)) (VP (VBZ sits)))")] * 3
    flat = [Tree.fromstring("(S (DT the) (NN cat) (VBZ sits))")] * 3
    assert sentence_bracket_counts(gold, flat).tolist() == [[1, 1, 3]] * 3
    assert parseval_f1_test(gold, gold, flat, n_resamples=99, random_state=0).statistic == \
        pytest.approx(1 - 0.5)
    with pytest.raises(ValueError, match="method must be"):
        chunk_f1_test(y_true, y_a, y_b, method="jackknife")


def test_parseval_test_counts_what_parseval_counts():
    """A prediction that re-tags a word as punctuation (or punctuation as a
    word) makes an EVALB error sentence: it counts nothing for that system,
    as in parseval's totals, instead of stopping the test."""
    from sklstruct.parsing import parseval

    gold = [Tree.fromstring("(S (NP (NNP John)) (VP (VBZ runs)) (. .))"),
            Tree.fromstring("(S (NP (DT the) (NN cat)) (VP (VBZ sits)))")]
    retagged = [Tree.fromstring("(S (NP (NNP John)) (VP (VBZ runs) (NN .)))"),
                Tree.fromstring("(S (NP (DT the) (NN cat)) (VP (VBZ sits)))")]
    counts = sentence_bracket_counts(gold, retagged)
    assert counts.tolist() == [[0, 0, 0], [3, 3, 3]]
    assert f1(counts) == pytest.approx(parseval(gold, retagged)["f1"])
    r = parseval_f1_test(gold, gold, retagged, n_resamples=99, random_state=0)
    assert r.statistic == pytest.approx(1.0 - parseval(gold, retagged)["f1"])
    with pytest.raises(ValueError, match="sentence 1"):
        sentence_bracket_counts(gold, [retagged[0], Tree.fromstring("(S (NN dog))")])


def test_wilcoxon_leaves_out_the_sentences_evalb_does_not_score():
    """A parser that re-tags the full stop on every sentence scores nothing
    (parseval F1 0); its rows of zeros must not count as perfect sentences."""
    gold = [Tree.fromstring("(S (NP (NNP John)) (VP (VBZ runs) (ADVP (RB fast))) (. .))")] * 8
    a = [Tree.fromstring("(S (NNP John) (VBZ runs) (RB fast) (NN .))")] * 8
    b = [Tree.fromstring("(S (NP (NNP John)) (VP (VBZ runs) (RB fast)) (. .))")] * 8
    ca, sa = sentence_bracket_counts(gold, a, return_scored=True)
    cb, sb = sentence_bracket_counts(gold, b, return_scored=True)
    assert not sa.any() and sb.all()
    with pytest.raises(ValueError, match="no sentence left"):
        wilcoxon_f1_test(ca, cb, scored=sa & sb)
    mixed = a[:4] + b[4:]
    cm, sm = sentence_bracket_counts(gold, mixed, return_scored=True)
    r = wilcoxon_f1_test(cm, cb, scored=sm & sb)
    assert r == (0.0, 1.0)               # the four scored sentences are equal
    with pytest.raises(ValueError, match="boolean"):
        wilcoxon_f1_test(cm, cb, scored=[1] * 8)


def test_mcnemar_against_scipy_and_by_hand():
    y = [["a"] * 40]
    y_a = [["a"] * 30 + ["b"] * 10]      # A misses the last 10
    y_b = [["b"] * 12 + ["a"] * 28]      # B misses the first 12
    # only A right: tokens 0-11 (12); only B right: tokens 30-39 (10)
    exact = mcnemar_test(y, y_a, y_b)
    assert exact.statistic == 2
    assert exact.pvalue == pytest.approx(st.binomtest(12, 22, 0.5).pvalue)
    chi = mcnemar_test(y, y_a, y_b, exact=False)
    assert chi.statistic == pytest.approx((2 - 1) ** 2 / 22)
    assert chi.pvalue == pytest.approx(st.chi2.sf(1 / 22, 1))
    assert mcnemar_test(y, y_a, y_a) == (0.0, 1.0)


def test_wilcoxon_is_scipys_on_per_sentence_f1():
    rng = np.random.default_rng(5)
    a, b = random_counts(rng, 60), random_counts(rng, 60)
    per = [np.where(c[:, 1] + c[:, 2] > 0, 2 * c[:, 0] / np.maximum(c[:, 1] + c[:, 2], 1), 1.0)
           for c in (a, b)]
    expected = st.wilcoxon(per[0], per[1])
    got = wilcoxon_f1_test(a, b)
    assert (got.statistic, got.pvalue) == pytest.approx((expected.statistic, expected.pvalue))
    assert wilcoxon_f1_test(a, a) == (0.0, 1.0)


def test_replicability_analysis_worked_by_hand():
    """Dror et al.'s example p-values: sorted 0.001, 0.019, 0.168, ...;
    Bonferroni: u = 1: 6 * 0.001 = 0.006 <= 0.05, u = 2: 5 * 0.019 = 0.095:
    one dataset.  Fisher's partial conjunctions are scipy's combinations of
    the N - u + 1 largest p-values, made monotone."""
    p = [0.168, 0.297, 0.357, 0.019, 0.218, 0.001]
    k, partial = replicability_analysis(p)
    assert k == 1
    np.testing.assert_allclose(partial[:2], [0.006, 0.095])
    k_f, partial_f = replicability_analysis(p, method="fisher")
    asc = np.sort(p)
    raw = [st.combine_pvalues(asc[u:], method="fisher").pvalue for u in range(6)]
    np.testing.assert_allclose(partial_f, np.maximum.accumulate(raw))
    assert k_f == int(np.sum(partial_f <= 0.05))
    assert replicability_analysis([0.01] * 5)[0] == 5       # 5 * 0.01 = 0.05 <= alpha
    for bad in ([], [0.0, 0.5], [1.5], [[0.1]]):
        with pytest.raises(ValueError, match="pvalues"):
            replicability_analysis(bad)


def test_fold_replicability_test():
    rng = np.random.default_rng(7)
    better = [rng.normal(0.8, 0.05, 50) for _ in range(5)]
    worse = [x - 0.05 + rng.normal(0, 0.01, 50) for x in better]
    k, pvalues = fold_replicability_test(better, worse)
    assert k == 5 and pvalues.shape == (5,)
    np.testing.assert_allclose(pvalues[0], st.ttest_rel(better[0], worse[0],
                                                        alternative="greater").pvalue)
    k, _ = fold_replicability_test(worse, better)
    assert k == 0
    with pytest.raises(ValueError, match="fold 1"):
        fold_replicability_test(better[:2], [worse[0], worse[1][:3]])


@pytest.mark.parametrize("bad", [np.zeros((3, 2)), np.full((3, 3), -1.0),
                                 np.full((3, 3), np.nan), np.zeros((0, 3))])
def test_bad_counts_are_refused(bad):
    with pytest.raises(ValueError, match="counts"):
        paired_randomization_test(bad, bad)
    with pytest.raises(ValueError, match="n_resamples"):
        paired_bootstrap_test(np.ones((2, 3)), np.ones((2, 3)), n_resamples=0)


@pytest.mark.parametrize("rows, message", [
    ([[3, 2, 5], [1, 1, 1]], r"counts_a\[0\]: 3 correct is more than the 2"),    # F1 diff > 1
    ([[1, 2, 0], [1, 1, 1]], r"counts_a\[0\]: 1 correct is more than the 0"),
    ([[0.5, 1, 1], [1, 1, 1]], "integers"),
    ([[1e300, 1e300, 1e300], [1, 1, 1]], "2\\*\\*53"),                           # overflowing sums
])
def test_counts_that_cannot_be_chunk_counts_are_refused(rows, message):
    good = np.array([[1, 1, 1], [1, 1, 1]])
    with pytest.raises(ValueError, match=message):
        paired_randomization_test(rows, good, n_resamples=10, random_state=0)


def test_alpha_of_the_wrong_type_and_nan_fold_scores_are_refused():
    with pytest.raises(TypeError, match="alpha must be a real number"):
        replicability_analysis([0.01, 0.2], alpha="0.05")
    with pytest.raises(ValueError, match="fold 0: scores must be finite"):
        fold_replicability_test([[0.5, np.nan, 0.2]], [[0.1, 0.2, 0.3]])
    # identical scores: no difference at all, p = 1 (the t statistic is 0/0)
    k, p = fold_replicability_test([[0.5, 0.4, 0.2]], [[0.5, 0.4, 0.2]])
    assert k == 0 and p.tolist() == [1.0]

"""Significance tests for two taggers or parsers scored on the same sentences.

Chunk F1 and PARSEVAL F1 are corpus-level ratios, not averages, so their
tests resample whole sentences and recompute F1 from the summed counts
(correct, predicted, true) of :func:`sklstruct.metrics.chunk_counts_per_sentence`
or :func:`sentence_bracket_counts`:

* :func:`paired_randomization_test`: approximate randomization (Noreen 1989;
  Yeh 2000): each sentence's two outputs are swapped with probability 1/2;
* :func:`paired_bootstrap_test`: sentences drawn with replacement (Koehn 2004;
  Berg-Kirkpatrick, Burkett & Klein 2012);

and with :func:`chunk_f1_test` / :func:`parseval_f1_test` on labels or trees
directly.  Beside them: :func:`mcnemar_test` for token accuracy,
:func:`wilcoxon_f1_test` over per-sentence F1 (the test of Bauer et al.,
*Optimizing for Measure of Performance in Max-Margin Parsing*), and
:func:`replicability_analysis` with :func:`fold_replicability_test`, the
paired t-test per fold with the replicability analysis of Dror et al. (2017)
that Ringel, Dror & Reichart (*The Structured Weighted Violation MIRA*,
Appendix D) use.  Where scipy has the test (binomial, chi-square, Wilcoxon,
t, Fisher's combination) scipy computes it.
"""
from numbers import Real
from typing import NamedTuple

import numpy as np
from scipy import stats as _st
from sklearn.utils import check_random_state

from .metrics import _check_sentences, chunk_counts_per_sentence

__all__ = ["TestResult", "sentence_bracket_counts", "paired_randomization_test",
           "paired_bootstrap_test", "chunk_f1_test", "parseval_f1_test", "mcnemar_test",
           "wilcoxon_f1_test", "replicability_analysis", "fold_replicability_test"]


class TestResult(NamedTuple):
    """A test's statistic (for the resampling tests: F1 of A minus F1 of B)
    and p-value."""

    statistic: float
    pvalue: float


def sentence_bracket_counts(gold_trees, pred_trees, *, return_scored=False):
    """Matched, predicted and gold brackets per sentence (EVALB's rules, see
    :func:`sklstruct.parsing.bracket_counts`), as an array (n_sentences, 3)
    in the column order of :func:`sklstruct.metrics.chunk_counts_per_sentence`.

    A sentence EVALB does not score (the trees disagree on which words are
    punctuation, or no word is left in the prediction) counts nothing, as in
    :func:`sklstruct.parsing.parseval`'s totals: the F1 of the summed rows is
    ``parseval``'s F1.  Trees over different words raise ``ValueError``.
    ``return_scored=True`` also returns which sentences EVALB scored (a
    boolean array): pass it to :func:`wilcoxon_f1_test`, which must not read
    such a row of zeros as a sentence with nothing to find."""
    from .parsing.evalb import _check_pair, _counts, _status

    if len(gold_trees) != len(pred_trees) or not len(gold_trees):
        raise ValueError(f"pred_trees: {len(pred_trees)} trees for {len(gold_trees)} gold "
                         "trees; they must be as many, and at least one")
    rows = np.zeros((len(gold_trees), 3), dtype=np.int64)
    scored = np.zeros(len(gold_trees), dtype=bool)
    for i, (gold, pred) in enumerate(zip(gold_trees, pred_trees)):
        g, p = _check_pair(gold, pred, f"sentence {i}")
        if _status(g, p) == 0:
            scored[i] = True
            m, n_gold, n_pred = _counts(g, p)
            rows[i] = m, n_pred, n_gold
    return (rows, scored) if return_scored else rows


def _f1(totals):
    """F1 from summed (correct, predicted, true) counts, on the last axis."""
    correct, pred, true = totals[..., 0], totals[..., 1], totals[..., 2]
    denom = pred + true
    return np.divide(2.0 * correct, denom, out=np.zeros(np.shape(correct)), where=denom > 0)


def _check_counts(counts_a, counts_b):
    a = np.asarray(counts_a, dtype=np.float64)
    b = np.asarray(counts_b, dtype=np.float64)
    if a.ndim != 2 or a.shape[1] != 3 or a.shape != b.shape or a.shape[0] == 0:
        raise ValueError(f"counts_a and counts_b must be arrays of shape (n_sentences, 3), "
                         f"the same for both; got {a.shape} and {b.shape}")
    for name, c in (("counts_a", a), ("counts_b", b)):
        if not np.isfinite(c).all() or (c < 0).any() or (c != np.floor(c)).any():
            raise ValueError(f"{name}: counts must be finite non-negative integers")
        bad = np.flatnonzero((c[:, 0] > c[:, 1]) | (c[:, 0] > c[:, 2]))
        if bad.size:
            i = int(bad[0])
            raise ValueError(f"{name}[{i}]: {c[i, 0]:g} correct is more than the "
                             f"{min(c[i, 1], c[i, 2]):g} predicted or true items: not chunk counts "
                             "(each row is correct, predicted, true)")
        # sums of resampled rows are exact in float64 only below 2**53
        if c.sum() >= 2.0 ** 53:
            raise ValueError(f"{name}: the counts sum to {c.sum():.3g}, beyond 2**53, where "
                             "their sums are no longer exact")
    return a, b


def _prepare(counts_a, counts_b, n_resamples, random_state):
    """The resampling tests' checked inputs, generator and observed F1(A) - F1(B)."""
    a, b = _check_counts(counts_a, counts_b)
    if not isinstance(n_resamples, (int, np.integer)) or isinstance(n_resamples, bool) \
            or not 1 <= n_resamples <= 10**7:
        raise ValueError(f"n_resamples must be an integer in [1, 1e7]; got {n_resamples!r}")
    d = float(_f1(a.sum(0)) - _f1(b.sum(0)))
    return a, b, int(n_resamples), check_random_state(random_state), d


def _batches(n_resamples, n, size=2**22):
    """Resamples per batch so that a batch's (resamples, sentences) array
    stays near ``size`` elements."""
    step = max(1, size // max(n, 1))
    for start in range(0, n_resamples, step):
        yield min(step, n_resamples - start)


def paired_randomization_test(counts_a, counts_b, *, n_resamples=9999, random_state=None):
    """Two-sided approximate randomization test of F1(A) = F1(B).

    Each resample swaps the two systems' counts of every sentence with
    probability 1/2; the p-value is ``(1 + #{|d*| >= |d|}) / (1 + R)`` with d
    the observed F1 difference, d* the resampled ones and R ``n_resamples``
    (valid for any R; with all 2^n swaps it would be the exact permutation
    test).

    Parameters
    ----------
    counts_a, counts_b : array-like of shape (n_sentences, 3)
        Per-sentence (correct, predicted, true) counts of systems A and B.
    n_resamples : int, default=9999
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    TestResult
        ``statistic`` = F1(A) - F1(B), ``pvalue``.
    """
    a, b, n_resamples, rng, d = _prepare(counts_a, counts_b, n_resamples, random_state)
    diff = b - a
    base_a, base_b = a.sum(0), b.sum(0)
    hits = 0
    for m in _batches(n_resamples, len(a)):
        swap = rng.random_sample((m, len(a))) < 0.5
        moved = swap @ diff                       # what A gains (and B loses) by the swaps
        d_star = _f1(base_a + moved) - _f1(base_b - moved)
        hits += int(np.sum(np.abs(d_star) >= abs(d) - 1e-12))
    return TestResult(d, (1 + hits) / (1 + n_resamples))


def paired_bootstrap_test(counts_a, counts_b, *, n_resamples=9999, random_state=None):
    """One-sided paired bootstrap test that A's F1 is higher than B's.

    Sentences are drawn with replacement; as Berg-Kirkpatrick, Burkett &
    Klein (2012), the p-value is the fraction of resamples whose difference
    ``d*`` exceeds twice the observed one ``d`` (the bootstrap distribution of
    d* is centred on d, so d* > 2 d estimates how often a zero-mean
    difference would exceed d).  A ``d <= 0`` gives p = 1.  Parameters and
    result as for :func:`paired_randomization_test`.
    """
    a, b, n_resamples, rng, d = _prepare(counts_a, counts_b, n_resamples, random_state)
    if d <= 0:
        return TestResult(d, 1.0)
    n, exceed = len(a), 0
    for m in _batches(n_resamples, n):
        draws = np.stack([np.bincount(row, minlength=n)
                          for row in rng.randint(0, n, size=(m, n))])
        d_star = _f1(draws @ a) - _f1(draws @ b)
        exceed += int(np.sum(d_star > 2 * d))
    return TestResult(d, exceed / n_resamples)


def _resampling_test(counts_a, counts_b, method, n_resamples, random_state):
    if method == "randomization":
        return paired_randomization_test(counts_a, counts_b, n_resamples=n_resamples,
                                         random_state=random_state)
    if method == "bootstrap":
        return paired_bootstrap_test(counts_a, counts_b, n_resamples=n_resamples,
                                     random_state=random_state)
    raise ValueError(f"method must be 'randomization' or 'bootstrap'; got {method!r}")


def chunk_f1_test(y_true, y_pred_a, y_pred_b, *, method="randomization", n_resamples=9999,
                  scheme=None, random_state=None):
    """Is tagger A's chunk F1 different from (randomization, two-sided) or
    higher than (bootstrap, one-sided) tagger B's on the same sentences?

    Parameters
    ----------
    y_true, y_pred_a, y_pred_b : sequence of sequences of str
    method : {"randomization", "bootstrap"}, default="randomization"
    n_resamples : int, default=9999
    scheme : {None, "IOB1", "IOB2", "IOBES", "BILOU"}, default=None
        How chunks are counted (see :func:`sklstruct.metrics.chunk_report`).
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    TestResult
    """
    return _resampling_test(chunk_counts_per_sentence(y_true, y_pred_a, scheme=scheme),
                            chunk_counts_per_sentence(y_true, y_pred_b, scheme=scheme),
                            method, n_resamples, random_state)


def parseval_f1_test(gold_trees, pred_a, pred_b, *, method="randomization", n_resamples=9999,
                     random_state=None):
    """:func:`chunk_f1_test` for parsers: PARSEVAL (labelled bracket) F1 of
    two sets of predicted trees against the same gold trees."""
    return _resampling_test(sentence_bracket_counts(gold_trees, pred_a),
                            sentence_bracket_counts(gold_trees, pred_b),
                            method, n_resamples, random_state)


def mcnemar_test(y_true, y_pred_a, y_pred_b, *, exact=None):
    """McNemar's test of equal token accuracy.

    With b the tokens only A gets right and c those only B gets right: the
    exact two-sided binomial test of b against Binomial(b + c, 1/2)
    (scipy.stats.binomtest), or the chi-square statistic with continuity
    correction ``(|b - c| - 1)^2 / (b + c)`` on one degree of freedom.

    Parameters
    ----------
    y_true, y_pred_a, y_pred_b : sequence of sequences
    exact : bool or None, default=None
        None: exact when b + c < 25.

    Returns
    -------
    TestResult
        ``statistic``: b - c (exact) or the chi-square statistic.
    """
    y_true, y_pred_a = _check_sentences(y_true, y_pred_a)
    _, y_pred_b = _check_sentences(y_true, y_pred_b)
    flat = [np.concatenate([np.asarray(s, dtype=object) for s in y])
            for y in (y_true, y_pred_a, y_pred_b)]
    right_a, right_b = flat[1] == flat[0], flat[2] == flat[0]
    b, c = int(np.sum(right_a & ~right_b)), int(np.sum(~right_a & right_b))
    if b + c == 0:
        return TestResult(0.0, 1.0)
    if exact is None:
        exact = b + c < 25
    if exact:
        return TestResult(float(b - c), float(_st.binomtest(b, b + c, 0.5).pvalue))
    chi2 = (abs(b - c) - 1) ** 2 / (b + c)
    return TestResult(float(chi2), float(_st.chi2.sf(chi2, 1)))


def wilcoxon_f1_test(counts_a, counts_b, *, alternative="two-sided", scored=None):
    """Wilcoxon signed-rank test over per-sentence F1 (scipy.stats.wilcoxon).

    A sentence with no chunks or brackets in its gold and predicted output has
    F1 1 (nothing to find, nothing found).

    Parameters
    ----------
    counts_a, counts_b : array-like of shape (n_sentences, 3)
        From :func:`sklstruct.metrics.chunk_counts_per_sentence` or
        :func:`sentence_bracket_counts`.
    alternative : {"two-sided", "greater", "less"}, default="two-sided"
    scored : array-like of bool of shape (n_sentences,), default=None
        The sentences to compare (None: all).  For parses, the sentences
        EVALB scored for both systems: ``scored_a & scored_b`` from
        ``sentence_bracket_counts(..., return_scored=True)``, as the paper's
        test leaves out what EVALB leaves out.

    Returns
    -------
    TestResult
    """
    a, b = _check_counts(counts_a, counts_b)
    if scored is not None:
        scored = np.asarray(scored)
        if scored.dtype != bool or scored.shape != (len(a),):
            raise ValueError(f"scored: must be a boolean array of shape ({len(a)},); got "
                             f"{scored.dtype} of shape {scored.shape}")
        if not scored.any():
            raise ValueError("scored: no sentence left to compare")
        a, b = a[scored], b[scored]
    f_a = np.where(a[:, 1] + a[:, 2] > 0, _f1(a), 1.0)
    f_b = np.where(b[:, 1] + b[:, 2] > 0, _f1(b), 1.0)
    if np.all(f_a == f_b):
        return TestResult(0.0, 1.0)
    result = _st.wilcoxon(f_a, f_b, alternative=alternative)
    return TestResult(float(result.statistic), float(result.pvalue))


def replicability_analysis(pvalues, *, alpha=0.05, method="bonferroni"):
    """How many of N datasets show the effect (Dror, Baumer, Bogomolov &
    Reichart 2017, "Replicability Analysis for Natural Language Processing").

    The partial-conjunction p-value for "the effect holds on at least u of
    the N datasets" combines the N - u + 1 largest p-values, by Bonferroni
    (``(N - u + 1)`` times their smallest, valid for dependent datasets such
    as cross-validation folds) or by Fisher (scipy's chi-square combination,
    for independent ones); made non-decreasing in u, the estimate is the
    number of u whose p-value is at most ``alpha``.

    Parameters
    ----------
    pvalues : array-like of shape (N,)
        One p-value per dataset, in (0, 1].
    alpha : float, default=0.05
    method : {"bonferroni", "fisher"}, default="bonferroni"

    Returns
    -------
    k : int
        Estimated number of datasets with an effect.
    partial_pvalues : ndarray of shape (N,)
        The (monotone) partial-conjunction p-values, for u = 1..N.
    """
    p = np.asarray(pvalues, dtype=np.float64)
    if p.ndim != 1 or p.size == 0 or not np.all((p > 0) & (p <= 1)):
        raise ValueError("pvalues must be a non-empty 1-D array of values in (0, 1]")
    if isinstance(alpha, (bool, np.bool_)) or not isinstance(alpha, Real):
        raise TypeError(f"alpha must be a real number in (0, 1); got {alpha!r}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1); got {alpha!r}")
    if method not in ("bonferroni", "fisher"):
        raise ValueError(f"method must be 'bonferroni' or 'fisher'; got {method!r}")
    ascending = np.sort(p)
    n = p.size
    partial = np.empty(n)
    for u in range(1, n + 1):
        largest = ascending[u - 1:]                  # the N - u + 1 largest
        if method == "bonferroni":
            partial[u - 1] = min(1.0, (n - u + 1) * largest[0])
        else:
            partial[u - 1] = _st.combine_pvalues(largest, method="fisher").pvalue
    partial = np.maximum.accumulate(partial)
    return int(np.sum(partial <= alpha)), partial


def fold_replicability_test(scores_a, scores_b, *, alpha=0.05, method="bonferroni"):
    """Paired t-test per fold with replicability analysis (Ringel, Dror &
    Reichart, Appendix D): for each fold, a one-sided paired t-test
    (scipy.stats.ttest_rel) that A's per-item scores (e.g. per-sentence F1)
    are higher than B's; then :func:`replicability_analysis` of the fold
    p-values with K-Bonferroni (folds are dependent).  The difference is
    significant when ``k`` equals the number of folds.

    Parameters
    ----------
    scores_a, scores_b : sequence of array-like
        One array per fold, paired item by item.
    alpha : float, default=0.05
    method : {"bonferroni", "fisher"}, default="bonferroni"

    Returns
    -------
    k : int
    pvalues : ndarray of shape (n_folds,)
    """
    if len(scores_a) != len(scores_b) or not len(scores_a):
        raise ValueError("scores_a and scores_b must hold the same number (>= 1) of folds")
    pvalues = []
    for i, (a, b) in enumerate(zip(scores_a, scores_b)):
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        if a.shape != b.shape or a.ndim != 1 or a.size < 2:
            raise ValueError(f"fold {i}: scores_a and scores_b must be 1-D, paired, of at "
                             "least 2 items")
        if not (np.isfinite(a).all() and np.isfinite(b).all()):
            raise ValueError(f"fold {i}: scores must be finite")
        if np.all(a == b):
            pvalues.append(1.0)     # no difference at all (the t statistic is 0/0)
            continue
        p = _st.ttest_rel(a, b, alternative="greater").pvalue
        pvalues.append(max(float(p), np.finfo(float).tiny))
    pvalues = np.array(pvalues)
    return replicability_analysis(pvalues, alpha=alpha, method=method)[0], pvalues

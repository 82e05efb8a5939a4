"""Tests for sklstruct.metrics, the conlleval reproduction.

Notation in the comments: conlleval reads one line per token; before the data
and at each sentence boundary the previous tag is "O" with type "". Chunk
starts/ends follow conlleval's startOfChunk/endOfChunk:
  end   (prev -> cur): B->B, B->O, I->B, I->O, E->E, E->I, E->O, a type change
                       when prev is not O or '.', and always after '[' or ']'
  start (prev -> cur): B->B, I->B, O->B, O->I, E->E, E->I, O->E, a type change
                       when cur is not O or '.', and always at '[' or ']'
A chunk is correct when both columns start it at the same token with the same
type and end it at the same token (inCorrect state machine).
"""

import pickle
import random
import shutil
import subprocess
import time

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.base import BaseEstimator
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score, cross_validate

from sklstruct.metrics import (
    ChunkReport,
    TypeScores,
    chunk_f1_score,
    chunk_f1_scorer,
    chunk_precision_recall_fscore,
    chunk_precision_score,
    chunk_precision_scorer,
    chunk_recall_score,
    chunk_recall_scorer,
    chunk_report,
    format_conlleval,
    get_scorer,
    token_accuracy_score,
    token_accuracy_scorer,
)


def counts(report):
    """(true chunks, predicted chunks, correct chunks)."""
    return report.n_true_chunks, report.n_pred_chunks, report.n_correct_chunks


# ---------------------------------------------------------------------------
# Hand-worked cases
# ---------------------------------------------------------------------------

def test_perfect_prediction():
    # NP = tokens 0-1, VP = token 3: two chunks, both found, both correct.
    y = [["B-NP", "I-NP", "O", "B-VP"]]
    r = chunk_report(y, y)
    assert isinstance(r, ChunkReport)
    assert counts(r) == (2, 2, 2)
    assert (r.precision, r.recall, r.f1, r.accuracy) == (1.0, 1.0, 1.0, 1.0)
    assert r.n_tokens == 4 and r.n_correct_tokens == 4
    assert r.per_type == {"NP": (1.0, 1.0, 1.0, 1, 1, 1), "VP": (1.0, 1.0, 1.0, 1, 1, 1)}


def test_iob1_i_after_o_starts_a_chunk():
    # true: O->I-NP starts a chunk (O->I rule), I->I continues, I->O ends it.
    # pred: O->B-NP starts at the same token, ends at the same token, same type
    # -> correct. The tags differ at token 1 (I vs B): accuracy 3/4.
    r = chunk_report([["O", "I-NP", "I-NP", "O"]], [["O", "B-NP", "I-NP", "O"]])
    assert counts(r) == (1, 1, 1)
    assert r.f1 == 1.0
    assert r.accuracy == 0.75


def test_iob1_i_after_other_type_starts_a_chunk():
    # I-VP after I-NP: type change ends NP and starts VP (IOB1 style).
    y = [["I-NP", "I-NP", "I-VP", "O"]]
    r = chunk_report(y, y)
    assert counts(r) == (2, 2, 2)
    assert set(r.per_type) == {"NP", "VP"}


def test_type_change_inside_chunk():
    # true B-NP I-VP: I-VP changes the type -> end NP, start VP: 2 chunks.
    # pred B-NP I-NP: one NP chunk over tokens 0-1.
    # token 0: both start NP -> inCorrect. token 1: true ends, pred does not
    # -> inCorrect reset; nothing is correct.
    r = chunk_report([["B-NP", "I-VP"]], [["B-NP", "I-NP"]])
    assert counts(r) == (2, 1, 0)
    assert (r.precision, r.recall, r.f1) == (0.0, 0.0, 0.0)
    assert r.per_type == {
        "NP": TypeScores(0.0, 0.0, 0.0, n_pred_chunks=1, n_true_chunks=1, n_correct_chunks=0),
        "VP": TypeScores(0.0, 0.0, 0.0, n_pred_chunks=0, n_true_chunks=1, n_correct_chunks=0),
    }
    # and predicted the same way, both chunks are right
    assert counts(chunk_report([["B-NP", "I-VP"]], [["B-NP", "I-VP"]])) == (2, 2, 2)


def test_chunk_at_sentence_end():
    # sentence 0: NP at its last token, closed by the boundary line (B->O ends
    # in both columns, same type -> correct). sentence 1: NP over tokens 0-1,
    # still open at the end of data -> closed by the final `if ($inCorrect)`.
    y = [["O", "B-NP"], ["B-NP", "I-NP"]]
    assert counts(chunk_report(y, y)) == (2, 2, 2)
    # the very end of the data alone
    assert counts(chunk_report([["B-NP"]], [["B-NP"]])) == (1, 1, 1)
    # at the end of data, a prediction that is one token short is not correct:
    # token 1: true I->I no end, pred B->O ends -> reset.
    assert counts(chunk_report([["B-NP", "I-NP"]], [["B-NP", "O"]])) == (1, 1, 0)


def test_adjacent_b_chunks_of_same_type():
    # true: B-NP | B-NP I-NP -> two NP chunks (B->B ends and starts).
    y_true = [["B-NP", "B-NP", "I-NP"]]
    assert counts(chunk_report(y_true, y_true)) == (2, 2, 2)
    # pred: one NP chunk over 0-2. token 1: true ends (B->B), pred does not
    # (B->I) -> reset; the pred chunk does not start at token 1 -> 0 correct.
    r = chunk_report(y_true, [["B-NP", "I-NP", "I-NP"]])
    assert counts(r) == (2, 1, 0)
    assert r.accuracy == pytest.approx(2 / 3)


def test_right_boundaries_wrong_type():
    # both start at token 0 and end at token 2, but NP != VP: never inCorrect.
    r = chunk_report([["B-NP", "I-NP", "O"]], [["B-VP", "I-VP", "O"]])
    assert counts(r) == (1, 1, 0)
    assert r.per_type["NP"] == (0.0, 0.0, 0.0, 0, 1, 0)
    assert r.per_type["VP"] == (0.0, 0.0, 0.0, 1, 0, 0)
    assert r.accuracy == pytest.approx(1 / 3)  # only the O is right


def test_predicted_chunk_too_long_or_too_short():
    y_true = [["B-NP", "I-NP", "O"]]
    # too long: token 2, true ends (I->O) but pred does not (I->I) -> reset
    assert counts(chunk_report(y_true, [["B-NP", "I-NP", "I-NP"]])) == (1, 1, 0)
    # too short: token 1, pred ends (B->O) but true does not (B->I) -> reset
    assert counts(chunk_report(y_true, [["B-NP", "O", "O"]])) == (1, 1, 0)


def test_sentence_boundary_splits_chunk():
    # In one sentence B-NP I-NP I-NP is one chunk ...
    one_sentence = [["B-NP", "I-NP", "I-NP", "O"]]
    assert counts(chunk_report(one_sentence, one_sentence)) == (1, 1, 1)
    # ... but split by a boundary, the I-NP after the boundary ("O") starts a
    # new chunk (O->I): true chunks NP(s0: 0-1) and NP(s1: 0).
    y_true = [["B-NP", "I-NP"], ["I-NP", "O"]]
    y_pred = [["B-NP", "I-NP"], ["B-NP", "O"]]
    # boundary line: I->O ends in both -> first chunk correct; s1 token 0:
    # both start NP, token 1 both end -> second correct. Tags differ at s1[0].
    r = chunk_report(y_true, y_pred)
    assert counts(r) == (2, 2, 2)
    assert r.n_tokens == 4  # the boundary is not a token
    assert r.accuracy == 0.75
    # a prediction that keeps it one chunk is not possible across sentences:
    # pred I-NP also starts a chunk after the boundary
    assert counts(chunk_report(y_true, y_true)) == (2, 2, 2)


def test_ioe_tags():
    # IOE1: I-NP E-NP | I-NP O. O->I starts, I->E neither ends nor starts,
    # E->I ends and starts, I->O ends: NP(0-1), NP(2).
    y = [["I-NP", "E-NP", "I-NP", "O"]]
    assert counts(chunk_report(y, y)) == (2, 2, 2)
    # conlleval has no E->B rule: B-NP after E-NP (same type) neither ends
    # nor starts a chunk, so this is a single chunk.
    assert chunk_report([["E-NP", "B-NP"]], [["E-NP", "B-NP"]]).n_true_chunks == 1


def test_bracket_and_dot_tags():
    # '[' and ']' chunks have length 1: each starts a chunk and the next
    # token always ends it: [-NP | ]-NP | O -> 2 chunks.
    y = [["[-NP", "]-NP", "O"]]
    assert counts(chunk_report(y, y)) == (2, 2, 2)
    # '.' (type '') ends the NP (type change after B) but starts nothing,
    # and the I-NP after it starts a new NP (type change): NP(0), NP(2).
    r = chunk_report([["B-NP", ".", "I-NP"]], [["B-NP", ".", "I-NP"]])
    assert counts(r) == (2, 2, 2)
    assert set(r.per_type) == {"NP"}
    # whereas an unknown prefix 'X' (type '') starts a chunk of type ''
    r = chunk_report([["B-NP", "X", "I-NP"]], [["B-NP", "X", "I-NP"]])
    assert counts(r) == (3, 3, 3)
    assert set(r.per_type) == {"", "NP"}


def test_tag_splitting():
    # split on the first hyphen: type "A-B"; "B" alone has type "".
    r = chunk_report([["B-A-B", "I-A-B", "B"]], [["B-A-B", "I-A-B", "B"]])
    assert set(r.per_type) == {"A-B", ""}
    assert counts(r) == (2, 2, 2)
    # Perl's `$type ? $type : ""` turns the type "0" into ""
    assert set(chunk_report([["B-0"]], [["B-0"]]).per_type) == {""}


def test_per_type_numbers_and_format():
    # tokens:  0     1     2  3     4     5    | 0       1
    # true:  B-NP  I-NP  O  B-VP  B-PP  B-NP  | B-ADJP  O
    # pred:  B-NP  I-NP  O  B-VP  B-NP  I-NP  | O       O
    # true chunks: NP(0-1) VP(3) PP(4) NP(5) ADJP(s1:0) -> 5
    # pred chunks: NP(0-1) VP(3) NP(4-5)                -> 3
    # correct: NP(0-1) (both end at token 2), VP(3) (both end at token 4);
    # at token 4 both start but PP != NP. -> 2 (NP 1, VP 1)
    # tags right: 0,1,2,3 and s1:1 -> 5 of 8 tokens = 62.50%
    # overall P = 2/3 = 66.67%, R = 2/5 = 40.00%, FB1 = 2*66.67*40/106.67 = 50.00
    # NP: P 1/2, R 1/2; VP: 1/1, 1/1; PP: 0 of 1 true, none found;
    # ADJP: 0 of 1 true, none found. Last column: number of predicted chunks.
    y_true = [["B-NP", "I-NP", "O", "B-VP", "B-PP", "B-NP"], ["B-ADJP", "O"]]
    y_pred = [["B-NP", "I-NP", "O", "B-VP", "B-NP", "I-NP"], ["O", "O"]]
    r = chunk_report(y_true, y_pred)
    assert counts(r) == (5, 3, 2)
    assert r.accuracy == 0.625
    assert r.precision == pytest.approx(2 / 3)
    assert r.recall == pytest.approx(0.4)
    assert r.f1 == pytest.approx(0.5)
    assert list(r.per_type) == ["ADJP", "NP", "PP", "VP"]
    assert r.per_type["NP"] == (0.5, 0.5, 0.5, 2, 2, 1)
    assert r.per_type["VP"] == (1.0, 1.0, 1.0, 1, 1, 1)
    assert r.per_type["PP"] == (0.0, 0.0, 0.0, 0, 1, 0)
    assert r.per_type["ADJP"] == (0.0, 0.0, 0.0, 0, 1, 0)
    assert r.per_type["NP"].n_pred_chunks == 2
    expected = (
        "processed 8 tokens with 5 phrases; found: 3 phrases; correct: 2.\n"
        "accuracy:  62.50%; precision:  66.67%; recall:  40.00%; FB1:  50.00\n"
        "             ADJP: precision:   0.00%; recall:   0.00%; FB1:   0.00  0\n"
        "               NP: precision:  50.00%; recall:  50.00%; FB1:  50.00  2\n"
        "               PP: precision:   0.00%; recall:   0.00%; FB1:   0.00  0\n"
        "               VP: precision: 100.00%; recall: 100.00%; FB1: 100.00  1\n"
    )
    assert format_conlleval(r) == expected
    assert str(r) == expected
    assert chunk_precision_recall_fscore(y_true, y_pred) == (r.precision, r.recall, r.f1)
    assert chunk_precision_score(y_true, y_pred) == r.precision
    assert chunk_recall_score(y_true, y_pred) == r.recall
    assert chunk_f1_score(y_true, y_pred) == r.f1


def test_format_lists_empty_type_twice_like_conlleval():
    # "B" has type ""; conlleval's de-duplication of the sorted type names
    # skips a repeat only if the previous name is true in Perl, and "" is
    # false, so a type "" seen in both columns gets two identical lines.
    r = chunk_report([["B", "O"]], [["B", "O"]])
    line = " " * 17 + ": precision: 100.00%; recall: 100.00%; FB1: 100.00  1\n"
    assert format_conlleval(r) == (
        "processed 2 tokens with 1 phrases; found: 1 phrases; correct: 1.\n"
        "accuracy: 100.00%; precision: 100.00%; recall: 100.00%; FB1: 100.00\n"
        + line + line
    )


def test_no_chunks_gives_zero_scores():
    r = chunk_report([["O", "O"]], [["O", "O"]])
    assert counts(r) == (0, 0, 0)
    assert (r.precision, r.recall, r.f1, r.accuracy) == (0.0, 0.0, 0.0, 1.0)
    assert r.per_type == {}
    assert str(r) == (
        "processed 2 tokens with 0 phrases; found: 0 phrases; correct: 0.\n"
        "accuracy: 100.00%; precision:   0.00%; recall:   0.00%; FB1:   0.00\n"
    )


def test_input_containers():
    y_true = [["B-NP", "I-NP", "O"], ["B-VP"]]
    y_pred = [["B-NP", "O", "O"], ["B-VP"]]
    expected = chunk_report(y_true, y_pred)
    as_arrays = [np.array(s) for s in y_pred]
    as_tuples = tuple(tuple(s) for s in y_true)
    assert chunk_report(as_tuples, as_arrays) == expected
    assert chunk_report(iter(y_true), (s for s in as_arrays)) == expected
    # a 2-D array is a list of equal-length sentences
    y2d = np.array([["B-NP", "I-NP"], ["O", "B-VP"]])
    assert chunk_report(y2d, y2d.tolist()).n_correct_chunks == 2


def test_token_accuracy_score():
    assert token_accuracy_score([["B-NP", "I-NP"], ["O"]], [["B-NP", "O"], ["O"]]) == 2 / 3
    # any hashable labels
    assert token_accuracy_score([[1, 2, 3], [4]], [np.array([1, 0, 3]), [4]]) == 0.75
    assert token_accuracy_score([[(1, 2), (3, 4)]], [[(1, 2), (0, 0)]]) == 0.5


# ---------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------

ALL_METRICS = [
    chunk_report,
    chunk_precision_recall_fscore,
    chunk_precision_score,
    chunk_recall_score,
    chunk_f1_score,
    token_accuracy_score,
]


@pytest.mark.parametrize("metric", ALL_METRICS)
def test_different_sentence_lengths(metric):
    y_true = [["O"], ["B-NP", "I-NP", "O"]]
    y_pred = [["O"], ["B-NP", "O"]]
    with pytest.raises(ValueError, match=r"y_pred\[1\]: has 2 labels but y_true\[1\] has 3"):
        metric(y_true, y_pred)


@pytest.mark.parametrize("metric", ALL_METRICS)
def test_different_number_of_sentences(metric):
    with pytest.raises(ValueError, match="y_pred: has 1 sentences but y_true has 2"):
        metric([["O"], ["O"]], [["O"]])


@pytest.mark.parametrize("metric", ALL_METRICS)
@pytest.mark.parametrize("empty", [[], [[]], [[], []], np.empty((0, 3), dtype=str)])
def test_empty_input(metric, empty):
    with pytest.raises(ValueError, match="empty"):
        metric(empty, empty)


@pytest.mark.parametrize("metric", ALL_METRICS)
@pytest.mark.parametrize(
    "bad, message",
    [
        ("B-NP I-NP", "expected a list of label sequences; got str"),
        (["B-NP", "I-NP"], r"y_true\[0\]: expected a sequence of labels; got str"),
        (np.array(["B-NP", "I-NP"]), r"got ndarray of shape \(2,\); wrap a single sentence"),
        (5, "got int"),
        ([["B-NP"], 5], r"y_true\[1\]: expected a sequence of labels; got int"),
    ],
)
def test_not_a_list_of_sentences(metric, bad, message):
    with pytest.raises(ValueError, match=message):
        metric(bad, [["B-NP"], ["I-NP"]])


def test_get_scorer():
    assert get_scorer("chunk_f1") is chunk_f1_scorer
    assert get_scorer("chunk_precision") is chunk_precision_scorer
    assert get_scorer("chunk_recall") is chunk_recall_scorer
    assert get_scorer("token_accuracy") is token_accuracy_scorer
    with pytest.raises(ValueError, match="chunk_f1, chunk_precision, chunk_recall, token_accuracy"):
        get_scorer("f1")


def test_scorers_pickle():
    # needed by GridSearchCV(n_jobs=...)
    for name in ["chunk_f1", "chunk_precision", "chunk_recall", "token_accuracy"]:
        scorer = pickle.loads(pickle.dumps(get_scorer(name)))
        assert scorer._score_func is get_scorer(name)._score_func


# ---------------------------------------------------------------------------
# scikit-learn integration
# ---------------------------------------------------------------------------

class WordTagger(BaseEstimator):
    """Tags each word with the label it had most recently in training, else default."""

    def __init__(self, default="O"):
        self.default = default

    def fit(self, X, y):
        self.lexicon_ = {w: t for sent, tags in zip(X, y) for w, t in zip(sent, tags)}
        return self

    def predict(self, X):
        return [np.array([self.lexicon_.get(w, self.default) for w in sent]) for sent in X]


class TruncatingTagger(WordTagger):
    """Broken: predicts one label too few for every sentence."""

    def predict(self, X):
        return [tags[:-1] for tags in super().predict(X)]


# sentences whose words determine their tags, except 'flies' (VP or NP)
X = [
    ["the", "dog", "barks"],
    ["a", "cat", "flies"],
    ["time", "flies", "fast"],
    ["the", "cat", "sleeps"],
]
Y = [
    ["B-NP", "I-NP", "B-VP"],
    ["B-NP", "I-NP", "B-VP"],
    ["B-NP", "B-VP", "O"],
    ["B-NP", "I-NP", "B-VP"],
]


@pytest.mark.parametrize(
    "name, metric",
    [
        ("chunk_f1", chunk_f1_score),
        ("chunk_precision", chunk_precision_score),
        ("chunk_recall", chunk_recall_score),
        ("token_accuracy", token_accuracy_score),
    ],
)
def test_scorers_in_cross_val_score(name, metric):
    cv = KFold(2)
    scores = cross_val_score(
        WordTagger(), X, Y, cv=cv, scoring=get_scorer(name), error_score="raise"
    )
    expected = []
    for train, test in cv.split(X):
        tagger = WordTagger().fit([X[i] for i in train], [Y[i] for i in train])
        expected.append(metric([Y[i] for i in test], tagger.predict([X[i] for i in test])))
    np.testing.assert_allclose(scores, expected)
    assert len(set(scores)) == 2  # the folds really differ


def test_scorers_in_cross_validate_and_grid_search():
    scoring = {
        "f1": chunk_f1_scorer,
        "p": chunk_precision_scorer,
        "r": chunk_recall_scorer,
        "acc": token_accuracy_scorer,
    }
    res = cross_validate(WordTagger(), X, Y, cv=KFold(2), scoring=scoring, error_score="raise")
    for key in scoring:
        assert np.all((0 <= res[f"test_{key}"]) & (res[f"test_{key}"] <= 1))
    # predicting only B-NP for unknown words is better than O here
    search = GridSearchCV(
        WordTagger(), {"default": ["O", "B-NP"]}, cv=KFold(2), scoring=chunk_f1_scorer,
        error_score="raise",
    ).fit(X, Y)
    assert search.best_params_ == {"default": "B-NP"}


def test_scorer_reports_bad_predictions():
    with pytest.raises(ValueError, match=r"y_pred\[0\]: has 2 labels but y_true\[0\] has 3"):
        cross_val_score(
            TruncatingTagger(), X, Y, cv=KFold(2), scoring=chunk_f1_scorer, error_score="raise"
        )


# ---------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------

IOBE_TAGS = ["O", "B-NP", "I-NP", "E-NP", "B-VP", "I-VP", "E-VP", "I-PP"]
ANY_TAGS = IOBE_TAGS + ["[-NP", "]-VP", ".", "X", "B", "I", "B-0", "-NP", "O-NP", "B-A-B"]


@st.composite
def corpora(draw, tags):
    """Two corpora of the same shape, with at least one token."""
    lengths = draw(st.lists(st.integers(0, 6), min_size=1, max_size=5).filter(sum))
    tag = st.sampled_from(tags)
    y_true = [draw(st.lists(tag, min_size=n, max_size=n)) for n in lengths]
    y_pred = [draw(st.lists(tag, min_size=n, max_size=n)) for n in lengths]
    return y_true, y_pred


@given(corpora(IOBE_TAGS))
def test_perfect_prediction_has_f1_one(pair):
    # (for B/I/E/O tags, every chunk start coincides with the end of any open
    # chunk; with '[' tags a chunk can start inside another and never count)
    y_true, _ = pair
    r = chunk_report(y_true, y_true)
    assert r.accuracy == 1.0
    assert r.n_correct_chunks == r.n_true_chunks == r.n_pred_chunks
    if r.n_true_chunks:
        assert r.f1 == 1.0


@given(corpora(ANY_TAGS))
def test_swapping_true_and_pred(pair):
    y_true, y_pred = pair
    p, r, f = chunk_precision_recall_fscore(y_true, y_pred)
    p_swap, r_swap, f_swap = chunk_precision_recall_fscore(y_pred, y_true)
    assert f == f_swap
    assert p == r_swap and r == p_swap
    assert 0 <= f <= 1


@given(corpora(IOBE_TAGS))
def test_report_accuracy_matches_token_accuracy(pair):
    y_true, y_pred = pair
    assert chunk_report(y_true, y_pred).accuracy == token_accuracy_score(y_true, y_pred)


# ---------------------------------------------------------------------------
# Cross-check against a Perl re-implementation of conlleval's core
# ---------------------------------------------------------------------------

# A compact reconstruction of conlleval (2004-01-26, default mode): same tag
# splitting (including `$type ? $type : ""`), endOfChunk/startOfChunk pair
# rules, inCorrect state machine, boundary handling, final `if ($inCorrect)`,
# type de-duplication and printf formats. After conlleval's output it prints
# "#RAW type foundCorrect foundGuessed correctChunk" lines for exact counts.
CONLLEVAL_CORE = r"""
use strict;
use warnings;

my %END_PAIRS = map { $_ => 1 } ("B B", "B O", "I B", "I O", "E E", "E I", "E O");
my %START_PAIRS = map { $_ => 1 } ("B B", "I B", "O B", "O I", "E E", "E I", "O E");

sub split_tag {
    my ($label) = @_;
    my ($tag, $type) = ($label, "");
    ($tag, $type) = ($1, $2) if $label =~ /^([^-]*)-(.*)$/;
    return ($tag, $type ? $type : "");
}

sub end_of_chunk {
    my ($prev_tag, $tag, $prev_type, $type) = @_;
    return 1 if $END_PAIRS{"$prev_tag $tag"};
    return 1 if $prev_tag ne "O" and $prev_tag ne "." and $prev_type ne $type;
    return 1 if $prev_tag eq "[" or $prev_tag eq "]";
    return 0;
}

sub start_of_chunk {
    my ($prev_tag, $tag, $prev_type, $type) = @_;
    return 1 if $START_PAIRS{"$prev_tag $tag"};
    return 1 if $tag ne "O" and $tag ne "." and $prev_type ne $type;
    return 1 if $tag eq "[" or $tag eq "]";
    return 0;
}

my ($in_correct, $n_correct, $n_true, $n_pred, $n_tags, $n_tokens) = (0, 0, 0, 0, 0, 0);
my ($last_c, $last_ct, $last_g, $last_gt) = ("O", "", "O", "");
my (%correct, %true, %pred);

while (my $line = <STDIN>) {
    chomp $line;
    my @fields = split / /, $line;
    my $is_boundary = @fields == 0;
    @fields = ("-X-", "O", "O") if $is_boundary;
    my ($c, $ct) = split_tag($fields[-2]);
    my ($g, $gt) = split_tag($fields[-1]);
    my $end_c = end_of_chunk($last_c, $c, $last_ct, $ct);
    my $end_g = end_of_chunk($last_g, $g, $last_gt, $gt);
    my $start_c = start_of_chunk($last_c, $c, $last_ct, $ct);
    my $start_g = start_of_chunk($last_g, $g, $last_gt, $gt);
    if ($in_correct) {
        if ($end_c and $end_g and $last_gt eq $last_ct) {
            $in_correct = 0;
            $n_correct++;
            $correct{$last_ct}++;
        } elsif ($end_c != $end_g or $gt ne $ct) {
            $in_correct = 0;
        }
    }
    $in_correct = 1 if $start_c and $start_g and $gt eq $ct;
    if ($start_c) { $n_true++; $true{$ct}++; }
    if ($start_g) { $n_pred++; $pred{$gt}++; }
    if (not $is_boundary) {
        $n_tags++ if $c eq $g and $ct eq $gt;
        $n_tokens++;
    }
    ($last_c, $last_ct, $last_g, $last_gt) = ($c, $ct, $g, $gt);
}
if ($in_correct) { $n_correct++; $correct{$last_ct}++; }

my ($p, $r, $f) = (0.0, 0.0, 0.0);
$p = 100 * $n_correct / $n_pred if $n_pred > 0;
$r = 100 * $n_correct / $n_true if $n_true > 0;
$f = 2 * $p * $r / ($p + $r) if $p + $r > 0;
print "processed $n_tokens tokens with $n_true phrases; found: $n_pred phrases; correct: $n_correct.\n";
if ($n_tokens > 0) {
    printf "accuracy: %6.2f%%; precision: %6.2f%%; recall: %6.2f%%; FB1: %6.2f\n",
        100 * $n_tags / $n_tokens, $p, $r, $f;
}
my ($last, @types);
foreach my $type (sort(keys %true, keys %pred)) {
    push @types, $type if not($last) or $last ne $type;
    $last = $type;
}
foreach my $type (@types) {
    my $cc = $correct{$type} || 0;
    my $fg = $pred{$type} || 0;
    my $fc = $true{$type} || 0;
    my $tp = $fg ? 100 * $cc / $fg : 0.0;
    my $tr = $fc ? 100 * $cc / $fc : 0.0;
    my $tf = $tp + $tr == 0.0 ? 0.0 : 2 * $tp * $tr / ($tp + $tr);
    printf "%17s: precision: %6.2f%%; recall: %6.2f%%; FB1: %6.2f  %d\n", $type, $tp, $tr, $tf, $fg;
}
foreach my $type (sort(keys %true, keys %pred)) {
    printf "#RAW [%s] %d %d %d\n", $type, $true{$type} || 0, $pred{$type} || 0, $correct{$type} || 0;
}
"""

PERL = shutil.which("perl")
STANDARD_TAGS = ["O", "O", "B-NP", "I-NP", "B-VP", "I-VP", "B-PP", "I-PP", "I-ADJP"]
ODD_TAGS = [
    "E-NP", "E-VP", "[-NP", "]-VP", "[-VP", ".", "X", "B", "I", "B-0", "-NP",
    "O-NP", "B-A-B", "I-A-B", "B-", "B-\u00c9T\u00c9", "I-\u00c9T\u00c9", "S-NP",
]


def random_corpus(rng):
    tags = STANDARD_TAGS + (rng.sample(ODD_TAGS, rng.randint(1, 6)) if rng.random() < 0.7 else [])
    y_true, y_pred = [], []
    for _ in range(rng.randint(1, 6)):
        n = rng.randint(0, 10)
        true = [rng.choice(tags) for _ in range(n)]
        noise = rng.choice([0.1, 0.3, 1.0])
        y_true.append(true)
        y_pred.append([rng.choice(tags) if rng.random() < noise else t for t in true])
    if not any(y_true):
        y_true[0], y_pred[0] = ["B-NP"], ["B-NP"]
    return y_true, y_pred


def run_perl(script, y_true, y_pred):
    # one "word correct guessed" line per token, an empty line between sentences
    text = "\n".join(
        "".join(f"w {t} {p}\n" for t, p in zip(true, pred))
        for true, pred in zip(y_true, y_pred)
    )
    out = subprocess.run(
        [PERL, str(script)], input=text.encode("utf-8"), capture_output=True, check=True
    ).stdout.decode("utf-8")
    report = "".join(line for line in out.splitlines(True) if not line.startswith("#RAW"))
    raw = [line for line in out.splitlines() if line.startswith("#RAW")]
    return report, raw


def python_raw(report):
    # the same raw lines from our report, listing "" twice when Perl would
    names = sorted(
        [t for t, s in report.per_type.items() if s.n_true_chunks]
        + [t for t, s in report.per_type.items() if s.n_pred_chunks]
    )
    return [
        "#RAW [%s] %d %d %d" % (t, report.per_type[t].n_true_chunks,
                                report.per_type[t].n_pred_chunks,
                                report.per_type[t].n_correct_chunks)
        for t in names
    ]


@pytest.mark.skipif(PERL is None, reason="perl is not available")
def test_matches_perl_conlleval_core(tmp_path):
    script = tmp_path / "conlleval_core.pl"
    script.write_text(CONLLEVAL_CORE)
    # the hand-worked example first, as a check of the Perl script itself
    y_true = [["B-NP", "I-NP", "O", "B-VP", "B-PP", "B-NP"], ["B-ADJP", "O"]]
    y_pred = [["B-NP", "I-NP", "O", "B-VP", "B-NP", "I-NP"], ["O", "O"]]
    assert run_perl(script, y_true, y_pred)[0] == str(chunk_report(y_true, y_pred))

    rng = random.Random(12345)
    for case in range(150):
        y_true, y_pred = random_corpus(rng)
        expected_text, expected_raw = run_perl(script, y_true, y_pred)
        report = chunk_report(y_true, y_pred)
        assert (str(report), python_raw(report)) == (expected_text, expected_raw), (
            f"case {case}: y_true={y_true!r} y_pred={y_pred!r}"
        )


# ---------------------------------------------------------------------------
# Speed
# ---------------------------------------------------------------------------

def test_speed_50k_tokens():
    rng = np.random.RandomState(0)
    labels = np.array(STANDARD_TAGS)
    y_true = [labels[rng.randint(len(labels), size=25)] for _ in range(2000)]
    y_pred = [labels[rng.randint(len(labels), size=25)] for _ in range(2000)]
    start = time.perf_counter()
    report = chunk_report(y_true, y_pred)
    elapsed = time.perf_counter() - start
    assert report.n_tokens == 50_000
    # typically well under 0.2 s; generous bound against slow CI machines
    assert elapsed < 1.0


# ---------------------------------------------------------------------------
# Strict schemes (seqeval's mode="strict")
# ---------------------------------------------------------------------------

def test_iobes_single_chunks_are_not_conllevals_one_chunk():
    """The issue's case: gold S-PER S-PER is two chunks; B-PER E-PER is one,
    spanning both, so none is correct (conlleval, which has no S rule, sees
    one PER chunk in each and calls it correct)."""
    gold, pred = [["S-PER", "S-PER"]], [["B-PER", "E-PER"]]
    strict = chunk_report(gold, pred, scheme="IOBES")
    assert (strict.n_true_chunks, strict.n_pred_chunks, strict.n_correct_chunks) == (2, 1, 0)
    assert strict.f1 == 0.0 and strict.accuracy == 0.0
    assert chunk_report(gold, pred).n_correct_chunks == 1
    assert chunk_f1_score(gold, gold, scheme="iobes") == 1.0


@pytest.mark.parametrize("scheme, labels, chunks", [
    # worked by hand from the rules in sklstruct.metrics.SCHEMES
    ("IOB2", ["B-PER", "I-PER", "O", "B-LOC"], [("PER", 0, 2), ("LOC", 3, 4)]),
    ("IOB2", ["I-PER", "I-PER", "B-PER"], [("PER", 2, 3)]),          # no B: no chunk
    ("IOB2", ["B-PER", "I-LOC", "I-LOC"], [("PER", 0, 1)]),
    ("IOB2", ["B-PER", "B-PER"], [("PER", 0, 1), ("PER", 1, 2)]),
    ("IOB1", ["I-PER", "I-PER", "B-PER"], [("PER", 0, 2), ("PER", 2, 3)]),
    ("IOB1", ["I-PER", "B-LOC"], [("PER", 0, 1)]),                   # B only after its type
    ("IOB1", ["O", "I-LOC", "I-PER"], [("LOC", 1, 2), ("PER", 2, 3)]),
    ("IOBES", ["B-PER", "I-PER"], []),                               # never closed by E
    ("IOBES", ["B-PER", "E-LOC"], []),
    ("IOBES", ["S-PER", "B-LOC", "I-LOC", "E-LOC", "E-LOC"], [("PER", 0, 1), ("LOC", 1, 4)]),
    ("IOBES", ["I-PER", "E-PER", "S-X"], [("X", 2, 3)]),
    ("BILOU", ["U-A", "B-B", "I-B", "L-B", "B-C"], [("A", 0, 1), ("B", 1, 4)]),
    ("BILOU", ["B-A", "L-A", "U-A"], [("A", 0, 2), ("A", 2, 3)]),
])
def test_strict_chunks_worked_by_hand(scheme, labels, chunks):
    from sklstruct.metrics import _strict_chunks

    assert _strict_chunks([labels], scheme, "y") == {(t, 0, a, b) for t, a, b in chunks}
    report = chunk_report([labels], [labels], scheme=scheme)
    assert report.n_true_chunks == report.n_correct_chunks == len(chunks)


def encode(spans, T, scheme):
    """Labels of the chunks ``spans`` [(type, start, end)] in ``scheme``."""
    labels = ["O"] * T
    ended = {}                      # token index just after a chunk -> its type
    for kind, a, b in spans:
        if scheme == "IOB2":
            labels[a:b] = [f"B-{kind}"] + [f"I-{kind}"] * (b - a - 1)
        elif scheme == "IOB1":
            first = "B" if ended.get(a) == kind else "I"
            labels[a:b] = [f"{first}-{kind}"] + [f"I-{kind}"] * (b - a - 1)
        else:
            single, last = ("S", "E") if scheme == "IOBES" else ("U", "L")
            labels[a:b] = ([f"{single}-{kind}"] if b - a == 1 else
                           [f"B-{kind}"] + [f"I-{kind}"] * (b - a - 2) + [f"{last}-{kind}"])
        ended[b] = kind
    return labels


@st.composite
def segmentations(draw):
    """A sentence of chunks (types A and B, adjacent ones allowed) and O."""
    T = draw(st.integers(1, 12))
    spans, t = [], 0
    while t < T:
        length = draw(st.integers(1, T - t))
        if draw(st.booleans()):
            spans.append((draw(st.sampled_from("AB")), t, t + length))
        t += length
    return T, spans


@given(st.lists(st.tuples(segmentations(), segmentations()), min_size=1, max_size=4),
       st.sampled_from(["IOB1", "IOB2", "IOBES", "BILOU"]))
def test_strict_schemes_recover_what_they_encode(pairs, scheme):
    """Chunks encoded in a scheme come back exactly; scored against other
    chunks, precision and recall are the set overlaps; and for IOB1 and IOB2,
    which conlleval reads correctly, conlleval gives the same report."""
    from sklstruct.metrics import _strict_chunks

    y_true, y_pred, true, pred = [], [], set(), set()
    for s, ((T, spans), (_, other)) in enumerate(pairs):
        other = [(k, a, b) for k, a, b in other if b <= T]
        y_true.append(encode(spans, T, scheme))
        y_pred.append(encode(other, T, scheme))
        true |= {(k, s, a, b) for k, a, b in spans}
        pred |= {(k, s, a, b) for k, a, b in other}
    assert _strict_chunks(y_true, scheme, "y") == true
    report = chunk_report(y_true, y_pred, scheme=scheme)
    assert (report.n_true_chunks, report.n_pred_chunks, report.n_correct_chunks) == (
        len(true), len(pred), len(true & pred))
    if scheme in ("IOB1", "IOB2"):
        conll = chunk_report(y_true, y_pred)
        assert (conll.precision, conll.recall, conll.f1, conll.per_type) == (
            report.precision, report.recall, report.f1, report.per_type)


def test_strict_schemes_reject_what_they_cannot_read():
    with pytest.raises(ValueError, match=r"y_pred\[0\]\[1\]: label 'S-PER' has no IOB2 prefix"):
        chunk_report([["B-PER", "O"]], [["B-PER", "S-PER"]], scheme="IOB2")
    with pytest.raises(ValueError, match="scheme must be None"):
        chunk_f1_score([["O"]], [["O"]], scheme="IOE3")
    with pytest.raises(ValueError, match="scheme must be None"):
        get_scorer("chunk_f1", scheme=2)


def test_strict_scorer_in_cross_val_score():
    scores = cross_val_score(WordTagger(), X, Y, cv=KFold(2), error_score="raise",
                             scoring=get_scorer("chunk_f1", scheme="IOB2"))
    assert len(scores) == 2 and np.all((scores >= 0) & (scores <= 1))
    assert get_scorer("token_accuracy", scheme="IOB2") is get_scorer("token_accuracy")

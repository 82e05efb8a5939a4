"""PARSEVAL scores as EVALB computes them with COLLINS.prm."""
import re

import pytest
from _data import data_dir, require_data
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import BaseEstimator
from sklearn.model_selection import cross_val_score

from sklstruct.datasets import load_treebank
from sklstruct.parsing import (
    Tree,
    bracket_counts,
    parseval,
    parseval_f1,
    parseval_scorer,
    read_ptb,
)

T = Tree.fromstring

GOLD = T("(S (NP (DT The) (NN dog)) (VP (VBD saw) (NP (DT a) (NN cat))) (. .))")


# ---------------------------------------------------------------------------
# Hand-worked sentences
# ---------------------------------------------------------------------------


def test_identical_trees():
    # brackets: S[0,5) NP[0,2) VP[2,5) NP[3,5); the period is not a word
    assert bracket_counts(GOLD, GOLD.copy()) == (4, 4, 4)
    s = parseval([GOLD], [GOLD])
    assert s["precision"] == s["recall"] == s["f1"] == s["exact_match"] == 1.0
    assert s["tagging_accuracy"] == 1.0
    assert (s["matched"], s["n_gold"], s["n_pred"]) == (4, 4, 4)


def test_one_wrong_label():
    pred = T("(S (NP (DT The) (NN dog)) (VP (VBD saw) (ADJP (DT a) (NN cat))) (. .))")
    assert bracket_counts(GOLD, pred) == (3, 4, 4)
    s = parseval([GOLD], [pred])
    assert s["precision"] == s["recall"] == s["f1"] == 0.75
    assert s["exact_match"] == 0.0


def test_one_wrong_span_and_fewer_brackets():
    # gold S[0,5) NP[0,2) VP[2,5) NP[3,5); predicted NP[0,3) and VP[3,5) are wrong
    pred = T("(S (NP (DT The) (NN dog) (VBD saw)) (VP (NP (DT a) (NN cat))) (. .))")
    assert bracket_counts(GOLD, pred) == (2, 4, 4)
    pred = T("(S (NP (DT The) (NN dog)) (VBD saw) (NP (DT a) (NN cat)) (. .))")
    assert bracket_counts(GOLD, pred) == (3, 4, 3)
    s = parseval([GOLD], [pred])
    assert s["precision"] == 1.0 and s["recall"] == 0.75
    assert s["f1"] == pytest.approx(2 * 0.75 / 1.75)


def test_punctuation_at_constituent_edge_does_not_move_span():
    gold = T("(S (NP (NNP John) (, ,) (NNP Mary)) (, ,) (VP (VBD left) (. .)))")
    # commas and the period attached elsewhere: the spans over the remaining
    # words John Mary left are the same, so everything matches
    pred = T("(S (NP (NNP John) (, ,) (NNP Mary) (, ,)) (VP (VBD left)) (. .))")
    assert bracket_counts(gold, pred) == (3, 3, 3)
    # without deletion the NP spans would be [0,3) and [0,4) and the VPs differ
    wrong = T("(S (NP (NNP John)) (, ,) (NP (NNP Mary)) (, ,) (VP (VBD left)) (. .))")
    assert bracket_counts(gold, wrong) == (2, 3, 4)


def test_advp_equals_prt_but_not_other_labels():
    gold = T("(S (NP (PRP He)) (VP (VBD gave) (PRT (RP up))))")
    assert bracket_counts(gold, T("(S (NP (PRP He)) (VP (VBD gave) (ADVP (RP up))))")) == (4, 4, 4)
    assert bracket_counts(gold, T("(S (NP (PRP He)) (VP (VBD gave) (PP (RP up))))")) == (3, 4, 4)
    # "ADVP|PRT" of the treebank is its own label for EVALB
    assert bracket_counts(gold, T("(S (NP (PRP He)) (VP (VBD gave) (ADVP|PRT (RP up))))")) == (
        3, 4, 4
    )


def test_function_tags_and_indices_ignored():
    gold = T("(S-TPC-1 (NP-SBJ=2 (PRP He)) (VP (VBD left)))")
    assert bracket_counts(gold, T("(S (NP (PRP He)) (VP (VBD left)))")) == (3, 3, 3)


def test_duplicate_brackets_are_a_multiset():
    gold = T("(S (NP (NP (NN a))) (VP (VB b)))")  # NP[0,1) twice
    one = T("(S (NP (NN a)) (VP (VB b)))")
    three = T("(S (NP (NP (NP (NN a)))) (VP (VB b)))")
    assert bracket_counts(gold, one) == (3, 4, 3)
    assert bracket_counts(gold, three) == (4, 4, 5)
    assert bracket_counts(gold, gold) == (4, 4, 4)


@pytest.mark.parametrize("root", ["TOP", "ROOT", ""])
def test_root_bracket_not_counted(root):
    inner = "(S (NP (PRP He)) (VP (VBD left)))"
    wrapped = Tree(root, [T(inner)])
    assert bracket_counts(wrapped, T(inner)) == (3, 3, 3)
    assert bracket_counts(T(inner), wrapped) == (3, 3, 3)
    # a TOP bracket is deleted anywhere (DELETE_LABEL TOP); ROOT only at the root
    assert bracket_counts(T(inner), T("(S (TOP (NP (PRP He))) (VP (VBD left)))")) == (3, 3, 3)
    assert bracket_counts(T(inner), T("(S (ROOT (NP (PRP He))) (VP (VBD left)))")) == (3, 3, 4)


def test_preterminals_and_zero_elements_not_counted():
    gold = T("(S (NP-SBJ (-NONE- *)) (VP (VBD left) (PRN (, ,))) (. .))")
    pred = T("(S (NP (-NONE- *)) (VP (NN left) (, ,)) (. .))")
    # only S[0,1) and VP[0,1): the empty NP and the comma-only PRN are zero
    # elements; a wrong part-of-speech tag changes no bracket
    assert bracket_counts(gold, pred) == (2, 2, 2)
    s = parseval([gold], [pred])
    assert s["tagging_accuracy"] == 0.0 and s["f1"] == 1.0


def test_one_word_sentence():
    assert bracket_counts(T("(NN Hello)"), T("(NN Hello)")) == (0, 0, 0)
    assert bracket_counts(T("(NP (NN Hello))"), T("(NN Hello)")) == (0, 1, 0)
    s = parseval([T("(NN Hello)")], [T("(NN Hello)")])
    assert s["f1"] == 0.0 and s["exact_match"] == 1.0 and s["n_valid"] == 1


def test_corpus_totals_by_hand():
    gold = [GOLD, T("(S (NP (PRP He)) (VP (VBD left)))")]
    pred = [
        T("(S (NP (DT The) (NN dog)) (VBD saw) (NP (DT a) (NN cat)) (. .))"),  # 3 of 4, 3
        T("(S (NP (PRP He)) (VP (VBD left)))"),  # 3 of 3, 3
    ]
    s = parseval(gold, pred)
    assert (s["matched"], s["n_gold"], s["n_pred"]) == (6, 7, 6)
    assert s["precision"] == 1.0 and s["recall"] == pytest.approx(6 / 7)
    assert s["f1"] == pytest.approx(2 * (6 / 7) / (1 + 6 / 7))
    assert s["exact_match"] == 0.5
    assert s["n_sentences"] == 2 and s["n_valid"] == 2
    assert parseval_f1(gold, pred) == pytest.approx(s["f1"])
    # EVALB's len<=40 section: sentence length without -NONE- elements
    short = parseval(gold, pred, max_length=3)
    assert short["n_sentences"] == 1 and short["f1"] == 1.0
    assert parseval([], [])["f1"] == 0.0


def test_error_and_skipped_sentences_as_evalb():
    gold = T("(S (NP (PRP He)) (VP (VBD left)) (. .))")
    mistagged = T("(S (NP (PRP He)) (VP (VBD left) (NN .)))")  # "." kept as a word
    with pytest.raises(ValueError, match="as an error"):
        bracket_counts(gold, mistagged)
    only_punct = T("(S (. !))")
    with pytest.raises(ValueError, match="skip"):
        bracket_counts(T("(S (NN !))"), only_punct)
    s = parseval([gold, gold, T("(S (NN !))")], [gold, mistagged, only_punct])
    assert (s["n_sentences"], s["n_valid"], s["n_errors"], s["n_skipped"]) == (3, 1, 1, 1)
    assert (s["matched"], s["n_gold"], s["n_pred"]) == (3, 3, 3)


def test_null_elements_are_not_words():
    gold = T("(S (NP-SBJ (-NONE- *)) (VP (VBD left)))")
    assert bracket_counts(gold, T("(S (VP (VBD left)))")) == (2, 2, 2)
    assert bracket_counts(T("(S (VP (VBD left)))"), gold) == (2, 2, 2)


def test_bad_input_names_the_sentence():
    other = T("(S (NP (PRP She)) (VP (VBD left)))")
    he = T("(S (NP (PRP He)) (VP (VBD left)))")
    longer = T("(S (NP (PRP He)) (VP (VBD left) (RB early)))")
    with pytest.raises(ValueError, match="sentence 1: the gold tree has 2 words but the predicted tree has 3"):
        parseval([he, he], [he, longer])
    with pytest.raises(ValueError, match="sentence 0: word 0 is 'He' in the gold tree but 'She'"):
        parseval([he], [other])
    with pytest.raises(ValueError, match="2 gold trees but 1 predicted"):
        parseval([he, he], [he])
    with pytest.raises(ValueError, match="has 2 words but the predicted tree has 3"):
        bracket_counts(he, longer)
    with pytest.raises(TypeError, match="predicted tree is a str"):
        parseval([he], ["(S ...)"])
    with pytest.raises(ValueError, match="max_length"):
        parseval([he], [he], max_length=-1)


class _Oracle(BaseEstimator):
    """Predicts the tree it is given as X (or, flat=True, a flat S over it)."""

    def __init__(self, flat=False):
        self.flat = flat

    def fit(self, X, y):
        return self

    def predict(self, X):
        if self.flat:
            return [Tree("S", [Tree(tag, [w]) for w, tag in t.pos()]) for t in X]
        return [t.copy() for t in X]


def test_scorer_in_sklearn():
    trees = [GOLD, T("(S (NP (PRP He)) (VP (VBD left)))")] * 2
    assert parseval_scorer(_Oracle(), trees, trees) == 1.0
    scores = cross_val_score(_Oracle(flat=True), trees, trees, scoring=parseval_scorer, cv=2)
    # one S bracket predicted per sentence, matched; 4 + 3 gold brackets
    assert scores == pytest.approx([2 * (2 / 7) / (1 + 2 / 7)] * 2)


# ---------------------------------------------------------------------------
# Against a transliteration of evalb.c on random trees
# ---------------------------------------------------------------------------


def _evalb_reference(gold_line, test_line):
    """evalb.c's read_line / massage_data / calc_result on two bracket strings
    (COLLINS.prm), kept as close to the C as Python allows.  Returns
    (status, match, r_bn1, r_bn2)."""
    delete = {"TOP", "-NONE-", ",", ":", "``", "''", "."}

    def read_line(buff):
        terminals, brackets, stack = [], [], []
        tokens = re.findall(r"\(|\)|[^\s()]+", buff)
        i = 0
        while i < len(tokens):
            tok = tokens[i]
            if tok == "(":
                label = tokens[i + 1] if tokens[i + 1] not in "()" else ""
                j = i + 1 + (label != "")
                if tokens[j] not in "()" and tokens[j + 1] == ")":  # (label word)
                    if label not in delete:
                        terminals.append((tokens[j], label))
                    i = j + 2
                    continue
                brackets.append([len(terminals), None, label])
                stack.append(len(brackets) - 1)
                i = j
            else:  # ")"
                brackets[stack.pop()][1] = len(terminals)
                i += 1
        return terminals, brackets

    t1, b1 = read_line(gold_line)
    t2, b2 = read_line(test_line)
    if not t2:
        return 2, 0, 0, 0
    if len(t1) != len(t2):
        return 1, 0, 0, 0

    def massage(brackets):
        result = []
        for k, (start, end, label) in enumerate(brackets):
            if start == end:
                result.append(5)
                continue
            if k == 0 and label in ("", "ROOT"):  # sklstruct's root rule
                result.append(5)
                continue
            label = re.split(r"[-=]", label, maxsplit=1)[0]
            brackets[k][2] = label
            result.append(5 if label in delete else 0)
        return result

    def label_comp(a, b):
        return a == b or {a, b} == {"ADVP", "PRT"}

    r1, r2 = massage(b1), massage(b2)
    match = 0
    for i in range(len(b1)):
        for j in range(len(b2)):
            if (r1[i] != 5 and r2[j] == 0 and b1[i][0] == b2[j][0] and b1[i][1] == b2[j][1]
                    and label_comp(b1[i][2], b2[j][2])):
                r1[i] = r2[j] = 1
                match += 1
                break
    return 0, match, sum(r != 5 for r in r1), sum(r != 5 for r in r2)


_TAGS = ["NN", "DT", "VB", ",", ".", "-NONE-", "``", "RP"]
_LABELS = ["S", "NP", "VP", "ADVP", "PRT", "NP-SBJ", "PP=2", "TOP", "ROOT", "X"]


@st.composite
def _tree_over(draw, tagged):
    """A random tree over the given (word, tag) sequence."""

    def build(lo, hi, depth):
        if hi - lo == 1 and (depth > 3 or draw(st.booleans())):
            return Tree(tagged[lo][1], [tagged[lo][0]])
        if hi - lo == 1:
            cuts = []
        elif depth > 5:  # bound the unary chains
            cuts = list(range(lo + 1, hi))
        else:
            cuts = sorted(draw(st.sets(st.integers(lo + 1, hi - 1), max_size=3)))
        bounds = [lo] + cuts + [hi]
        kids = [build(a, b, depth + 1) for a, b in zip(bounds, bounds[1:])]
        return Tree(draw(st.sampled_from(_LABELS)), kids)

    return build(0, len(tagged), 0)


@st.composite
def _tree_pairs(draw):
    n = draw(st.integers(1, 7))
    words = [f"w{i}" for i in range(n)]
    gold_tags = draw(st.lists(st.sampled_from(_TAGS), min_size=n, max_size=n))
    pred_tags = list(gold_tags)
    if draw(st.booleans()):  # let the prediction mistag some words
        for i in draw(st.sets(st.integers(0, n - 1), max_size=2)):
            if gold_tags[i] != "-NONE-":  # null elements are not words of the sentence
                pred_tags[i] = draw(st.sampled_from([t for t in _TAGS if t != "-NONE-"]))
    gold = draw(_tree_over(list(zip(words, gold_tags))))
    pred = draw(_tree_over(list(zip(words, pred_tags))))
    return gold, pred


@settings(max_examples=250, deadline=None)
@given(_tree_pairs())
def test_agrees_with_evalb_transliteration(pair):
    gold, pred = pair
    status, match, n_gold, n_pred = _evalb_reference(str(gold), str(pred))
    s = parseval([gold], [pred])
    assert (s["n_valid"], s["n_errors"], s["n_skipped"]) == (
        status == 0, status == 1, status == 2
    )
    if status == 0:
        assert bracket_counts(gold, pred) == (match, n_gold, n_pred)
        assert (s["matched"], s["n_gold"], s["n_pred"]) == (match, n_gold, n_pred)
        assert s["exact_match"] == (match == n_gold == n_pred)
    else:
        with pytest.raises(ValueError, match="EVALB would"):
            bracket_counts(gold, pred)


# ---------------------------------------------------------------------------
# The Penn Treebank sample
# ---------------------------------------------------------------------------


def test_sample_raw_against_preprocessed():
    """Raw treebank trees (function tags, null elements, the sample's own
    brackets) score perfectly against their preprocessed versions: EVALB's
    label cutting and deletions do the same preprocessing."""
    path = require_data("treebank", "combined", "wsj_0001.mrg")
    raw = []
    for n in range(1, 21):
        raw.extend(read_ptb(path.with_name(f"wsj_{n:04d}.mrg")))
    pre = load_treebank(data_dir(), files=range(1, 21))
    assert sum(tag == "-NONE-" for t in raw for _, tag in t.pos()) > 100
    s = parseval(raw, pre)
    assert s["f1"] == 1.0 and s["exact_match"] == 1.0 and s["n_valid"] == len(pre)
    s = parseval(pre, pre)
    assert s["f1"] == 1.0 and s["exact_match"] == 1.0 and s["n_valid"] == len(pre)
    assert s["n_gold"] > 5 * len(pre)
    # flat predictions: one S bracket over the whole sentence
    flat = [Tree("S", [Tree(tag, [w]) for w, tag in t.pos()]) for t in pre]
    s = parseval(pre, flat)
    roots_s = sum(t.label == "S" for t in pre)
    assert s["n_pred"] == len(pre) and s["matched"] == roots_s
    assert s["precision"] == pytest.approx(roots_s / len(pre))
    assert s["tagging_accuracy"] == 1.0

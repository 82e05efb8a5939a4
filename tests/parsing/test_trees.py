"""Tree type, Penn Treebank reading/writing and preprocessing."""
import io
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sklstruct.parsing import (
    Tree,
    expand_unary,
    preprocess,
    read_ptb,
    read_trees,
    strip_function_tags,
    write_ptb,
)

PIERRE = """
( (S
    (NP-SBJ
      (NP (NNP Pierre) (NNP Vinken) )
      (, ,)
      (ADJP
        (NP (CD 61) (NNS years) )
        (JJ old) )
      (, ,) )
    (VP (MD will)
      (VP (VB join)
        (NP (DT the) (NN board) )
        (PP-CLR (IN as)
          (NP (DT a) (JJ nonexecutive) (NN director) ))
        (NP-TMP (NNP Nov.) (CD 29) )))
    (. .) ))
( (S
    (NP-SBJ (NNP Mr.) (NNP Vinken) )
    (VP (VBZ is)
      (NP-PRD
        (NP (NN chairman) )
        (PP (IN of)
          (NP
            (NP (NNP Elsevier) (NNP N.V.) )
            (, ,)
            (NP (DT the) (NNP Dutch) (VBG publishing) (NN group) )))))
    (. .) ))
"""


@pytest.fixture
def sample(ptb_sample_raw):
    """The whole Penn Treebank sample, raw (as read; see conftest)."""
    return ptb_sample_raw


# ---------------------------------------------------------------------------
# The Tree type
# ---------------------------------------------------------------------------


def test_tree_accessors():
    t = Tree.fromstring("(S (NP (DT the) (NN dog)) (VP (VBZ barks) (ADVP (RB loudly))))")
    assert t.label == "S"
    assert t.leaves() == ["the", "dog", "barks", "loudly"]
    assert t.pos() == [("the", "DT"), ("dog", "NN"), ("barks", "VBZ"), ("loudly", "RB")]
    assert t.constituents() == [("S", 0, 4), ("NP", 0, 2), ("VP", 2, 4), ("ADVP", 3, 4)]
    assert t.children[0].children[0].is_preterminal()
    assert not t.is_preterminal()
    assert t.height() == 4
    assert [n.label for n in t.subtrees()] == ["S", "NP", "DT", "NN", "VP", "VBZ", "ADVP", "RB"]
    assert str(t) == "(S (NP (DT the) (NN dog)) (VP (VBZ barks) (ADVP (RB loudly))))"
    assert t.to_string() == str(t)
    assert repr(t) == f"Tree.fromstring({str(t)!r})"


def test_constituents_of_unary_chain_and_one_word():
    t = Tree.fromstring("(S (VP (VB go)))")
    assert t.constituents() == [("S", 0, 1), ("VP", 0, 1)]
    assert Tree.fromstring("(NN go)").constituents() == []


def test_equality_hash_copy():
    a = Tree.fromstring("(S (NP (DT the) (NN dog)) (VP (VBZ barks)))")
    b = Tree.fromstring("(S  (NP (DT the)(NN dog))\n (VP (VBZ barks)) )")
    assert a == b and hash(a) == hash(b) and not (a != b)
    assert len({a, b}) == 1
    c = a.copy()
    assert c == a and c is not a and c.children[0] is not a.children[0]
    c.children[0].label = "NX"
    assert c != a and a.children[0].label == "NP"
    # same words and labels, different shape
    assert Tree.fromstring("(S (A (B x) (C y)) (D z))") != Tree.fromstring("(S (A (B x)) (C y) (D z))")
    assert a != "(S ...)"
    empty = Tree("X")
    assert empty and len(empty) == 0 and empty.children == []


def test_pickle_roundtrip():
    t = Tree.fromstring("(S (NP (DT the) (NN dog)) (VP (VBZ barks)))")
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        assert pickle.loads(pickle.dumps(t, protocol)) == t


def test_very_deep_tree_is_safe():
    depth = 5000  # far beyond Python's recursion limit
    text = "(X " * depth + "(NN w)" + ")" * depth
    t = Tree.fromstring(text)
    assert t.height() == depth + 1
    assert t.leaves() == ["w"]
    assert len(t.constituents()) == depth
    assert t.to_string() == text.replace(") )", "))")
    assert pickle.loads(pickle.dumps(t)) == t
    assert t.copy() == t
    assert preprocess(t, collapse_unary=True).label == "+".join(["X"] * depth)
    assert expand_unary(preprocess(t, collapse_unary=True)) == t


def _cyclic_trees():
    """Hand-built trees that contain themselves: directly, through a
    grandchild, and below the root."""
    direct = Tree("S", [Tree("NN", ["a"])])
    direct.children.append(direct)
    indirect = Tree.fromstring("(S (NP (DT the) (NN dog)) (VP (VBZ barks)))")
    indirect.children[1].children.append(indirect)
    below = Tree.fromstring("(S (NP (DT the) (NN dog)) (VP (VBZ barks)))")
    vp = below.children[1]
    vp.children.append(Tree("NP", [vp]))
    return [direct, indirect, below]


@pytest.mark.parametrize("walk", [
    Tree.leaves, Tree.pos, Tree.subtrees, Tree.constituents, Tree.height, Tree.copy,
    Tree.to_string, str, hash, pickle.dumps,
    lambda t: t == Tree("S", []),
    lambda t: write_ptb([t], io.StringIO()),
    preprocess,
    lambda t: preprocess(t, collapse_unary=True),
    expand_unary,
])
@pytest.mark.parametrize("index", range(3))
def test_cyclic_tree_is_refused_by_every_walk(walk, index):
    tree = _cyclic_trees()[index]
    with pytest.raises(ValueError, match=r"Tree 'S' is cyclic: node '\w+' has its ancestor"):
        walk(tree)
    assert "..." in repr(tree)


def test_shared_subtree_is_not_a_cycle():
    np_ = Tree.fromstring("(NP (DT the) (NN dog))")
    tree = Tree("S", [np_, Tree("VP", [Tree("VBZ", ["sees"]), np_])])
    assert tree.leaves() == ["the", "dog", "sees", "the", "dog"]
    assert tree == Tree.fromstring(str(tree)) == tree.copy()
    assert preprocess(tree) == tree


def test_parser_refuses_cyclic_training_tree():
    from sklstruct import F1MaxMarginParser

    good = Tree.fromstring("(S (NP (NN dogs)) (VP (VBP bark)))")
    bad = _cyclic_trees()[1]
    with pytest.raises(ValueError, match=r"y\[1\]: .*(cyclic|contains itself)"):
        F1MaxMarginParser(max_iter=1).fit([["dogs", "bark"], ["the", "dog"]], [good, bad])


def test_to_string_rejects_unwritable_tokens():
    with pytest.raises(ValueError, match="whitespace or a parenthesis"):
        Tree("NP", [Tree("NN", ["a b"])]).to_string()
    with pytest.raises(ValueError, match="Label"):
        Tree("N P", [Tree("NN", ["a"])]).to_string()
    assert "..." in repr(Tree("N P", [Tree("NN", ["a"])]))


@pytest.mark.parametrize("tree", [Tree("S", [Tree("", ["a"]), Tree("NP", ["b"])]),
                                  Tree("", [Tree("NP", ["b"])])])
def test_an_empty_label_is_refused_by_the_writer(tree, tmp_path):
    """write_ptb wrote '(S ( a) (NP b))', which does not read back (and an
    unlabelled root reads back as its child)."""
    with pytest.raises(ValueError, match="empty label"):
        tree.to_string()
    with pytest.raises(ValueError, match="empty label"):
        write_ptb([tree], tmp_path / "out.mrg")


# ---------------------------------------------------------------------------
# Reading and writing
# ---------------------------------------------------------------------------


def test_read_several_trees_with_outer_empty_bracket():
    trees = read_trees(PIERRE)
    assert len(trees) == 2
    assert trees[0].label == "S" and trees[1].label == "S"
    assert trees[0].leaves()[:3] == ["Pierre", "Vinken", ","]
    assert trees[1].children[0].label == "NP-SBJ"
    # no outer bracket, one-word trees, trees directly after each other
    trees = read_trees("(S (NN a))(NN b)( (NP (NN c)) )")
    assert [str(t) for t in trees] == ["(S (NN a))", "(NN b)", "(NP (NN c))"]
    assert read_trees("") == [] and read_trees(" \n\t") == []


def test_bracket_like_words_and_labels():
    t = Tree.fromstring("(NP (-LRB- -LRB-) (NN x) (-RRB- -RRB-) (PRP$ its) (SYM @))")
    assert t.leaves() == ["-LRB-", "x", "-RRB-", "its", "@"]
    assert Tree.fromstring(str(t)) == t


@pytest.mark.parametrize(
    "text, message, where",
    [
        ("(S (NP (NN x))", "never closed", "line 1, column 1"),
        ("(S (NN x)))", "without a matching", "line 1, column 11"),
        ("(S\n  ( (NN x)))", "without a label", "line 2, column 3"),
        ("(S (NN x))\n junk (S (NN y))", "outside any bracket", "line 2, column 2"),
        ("(S (NN x)) ()", "empty bracket", "line 1, column 12"),
        ("(S (NP) (NN x))", "has no children", "line 1, column 4"),
        ("(S (NP (DT the) dog))", "own part-of-speech bracket", "line 1, column 4"),
        ("( (S (NN a)) (S (NN b)) )", "exactly one tree", "line 1, column 1"),
        ("( word )", "has no children", "line 1, column 1"),
        ("( (NN a) )x", "outside any bracket", "line 1, column 11"),
        ("(", "never closed", "line 1, column 1"),
        (")", "without a matching", "line 1, column 1"),
    ],
)
def test_malformed_input_names_position(text, message, where):
    with pytest.raises(ValueError, match=message) as info:
        read_trees(text)
    assert where in str(info.value)


def test_fromstring_needs_exactly_one_tree():
    with pytest.raises(ValueError, match="exactly one tree, found 0"):
        Tree.fromstring("")
    with pytest.raises(ValueError, match="exactly one tree, found 2"):
        Tree.fromstring("(NN a) (NN b)")
    with pytest.raises(TypeError):
        read_trees(b"(NN a)")


def test_read_ptb_error_names_file(tmp_path):
    path = tmp_path / "bad.mrg"
    path.write_text("( (S (NN a)) )\n( (S (NN b) )\n")
    with pytest.raises(ValueError, match=r"bad\.mrg.*line 2, column 1"):
        read_ptb(path)


def test_read_ptb_decode_error_names_file_and_line(tmp_path):
    path = tmp_path / "latin.mrg"
    path.write_bytes("( (S (NN a)) )\n\n( (S (NN caf\xe9)) )\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin\.mrg'?, line 3: cannot decode with "
                                         r"encoding='utf-8'.*encoding='latin-1'"):
        read_ptb(path)
    assert read_ptb(path, encoding="latin-1")[1].leaves() == ["caf\xe9"]


def test_write_read_roundtrip(tmp_path):
    trees = read_trees(PIERRE)
    path = tmp_path / "out.mrg"
    write_ptb(trees, path)
    assert read_ptb(path) == trees
    assert path.read_text().count("\n") == 2
    buf = io.StringIO()
    write_ptb(trees, buf)
    assert read_trees(buf.getvalue()) == trees
    with pytest.raises(TypeError, match="item 1"):
        write_ptb([trees[0], "(S x)"], io.StringIO())


# ---------------------------------------------------------------------------
# Preprocessing
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "label, expected",
    [
        ("NP-SBJ-1", "NP"),
        ("NP=2", "NP"),
        ("PP-LOC-CLR", "PP"),
        ("S-TPC-1", "S"),
        ("ADVP|PRT", "ADVP|PRT"),
        ("-NONE-", "-NONE-"),
        ("-LRB-", "-LRB-"),
        ("PRP$", "PRP$"),
        ("NP", "NP"),
        ("-", "-"),
    ],
)
def test_strip_function_tags(label, expected):
    assert strip_function_tags(label) == expected


def test_preprocess_standard():
    t = Tree.fromstring(
        "(S (NP-SBJ-1 (-NONE- *T*-1)) (VP (VBD said) (SBAR (-NONE- 0) (S (-NONE- *T*-2))))"
        " (NP=2 (-LRB- -LRB-) (NN x) (-RRB- -RRB-)) (. .))"
    )
    p = preprocess(t)
    assert str(p) == "(S (VP (VBD said)) (NP (-LRB- -LRB-) (NN x) (-RRB- -RRB-)) (. .))"
    assert str(t).startswith("(S (NP-SBJ-1 (-NONE- *T*-1))")  # input untouched
    keep = preprocess(t, strip_functions=False, remove_empty=False)
    assert keep == t and keep is not t
    assert str(preprocess(t, remove_empty=False)).startswith("(S (NP (-NONE- *T*-1))")
    with pytest.raises(ValueError, match="no words left"):
        preprocess(Tree.fromstring("(S (NP (-NONE- *)))"))
    with pytest.raises(TypeError):
        preprocess("(S (NN x))")


def test_preprocess_collapse_unary_and_expand():
    t = Tree.fromstring("(S (VP (VP (VB go) (ADVP (RB now)))) (NP (NN it)))")
    c = preprocess(t, collapse_unary=True)
    # the chain VP > VP is joined; NP over a preterminal and ADVP over RB stay
    assert str(c) == "(S (VP+VP (VB go) (ADVP (RB now))) (NP (NN it)))"
    assert expand_unary(c) == t
    r = preprocess(t, remove_self_unary=True)
    assert str(r) == "(S (VP (VB go) (ADVP (RB now))) (NP (NN it)))"
    assert preprocess(t, collapse_unary=True, remove_self_unary=True) == r
    # a chain at the root, over a preterminal
    root = Tree.fromstring("(S (VP (NP (NN go))))")
    assert str(preprocess(root, collapse_unary=True)) == "(S+VP+NP (NN go))"
    assert str(preprocess(Tree.fromstring("(NP (NP (NP (NN a))))"), remove_self_unary=True)) == (
        "(NP (NN a))"
    )


def test_collapse_unary_escapes_plus_in_labels():
    t = Tree.fromstring("(A+B (C\\+ (D (NN x))) (E+F (NN y) (NN z)))")
    c = preprocess(t, collapse_unary=True, strip_functions=False)
    assert [n.label for n in c.subtrees() if not n.is_preterminal()] == [
        "A\\+B", "C\\\\\\++D", "E\\+F"
    ]
    assert expand_unary(c) == t


# ---------------------------------------------------------------------------
# Random trees
# ---------------------------------------------------------------------------

_LABELS = st.sampled_from(["S", "NP", "VP", "A+B", "X\\", "C^D", "@E", "F|G", "-LRB-", "NP-SBJ"])
_WORDS = st.sampled_from(["a", "b", "-LRB-", "@", "+", "^", "|", "\\"])


def _random_tree(draw_labels=_LABELS):
    leaf = st.builds(lambda tag, w: Tree(tag, [w]), st.sampled_from(["DT", "NN", ","]), _WORDS)
    return st.recursive(
        leaf,
        lambda kids: st.builds(Tree, draw_labels, st.lists(kids, min_size=1, max_size=4)),
        max_leaves=12,
    )


random_trees = _random_tree()


@settings(max_examples=150, deadline=None)
@given(random_trees)
def test_random_trees_string_roundtrip(t):
    s = t.to_string()
    assert Tree.fromstring(s) == t
    assert Tree.fromstring("( " + s + " )") == t
    assert len(t.leaves()) == len(t.pos())
    assert pickle.loads(pickle.dumps(t)) == t


@settings(max_examples=150, deadline=None)
@given(random_trees)
def test_random_trees_collapse_expand_roundtrip(t):
    c = preprocess(t, strip_functions=False, remove_empty=False, collapse_unary=True)
    assert expand_unary(c) == t
    assert c.leaves() == t.leaves() and c.pos() == t.pos()
    # no phrasal unary chain is left
    for node in c.subtrees():
        if len(node.children) == 1 and not node.is_preterminal():
            assert node.children[0].is_preterminal()


# ---------------------------------------------------------------------------
# The Penn Treebank sample
# ---------------------------------------------------------------------------


def test_sample_reads_and_roundtrips(sample):
    assert len(sample) > 3000
    for t in sample:
        assert Tree.fromstring(t.to_string()) == t
    labels = {n.label for t in sample for n in t.subtrees()}
    assert {"ADVP|PRT", "PRP$", "-LRB-", "-NONE-", "NP-SBJ-1"} <= labels


def test_sample_preprocessed(sample):
    for t in sample:
        p = preprocess(t)
        labels = [n.label for n in p.subtrees()]
        assert "-NONE-" not in labels
        for label in labels:
            assert label in ("-LRB-", "-RRB-") or ("-" not in label and "=" not in label)
        assert all(n.children for n in p.subtrees())
        words = [w for w, tag in t.pos() if tag != "-NONE-"]
        assert p.leaves() == words
        c = preprocess(t, collapse_unary=True)
        assert expand_unary(c) == p


def test_binarize_and_parseval_refuse_a_tree_that_contains_itself():
    from sklstruct.parsing import binarize, parseval
    tree = Tree.fromstring("(S (NP (DT the) (NN dog)) (VP (VBD barked)))")
    tree.children[1].children.append(tree)
    with pytest.raises(ValueError, match="cyclic"):
        binarize(tree)
    with pytest.raises(ValueError, match="cyclic"):
        parseval([tree], [tree])


@pytest.mark.parametrize("tree, message", [
    (Tree("S", [Tree(5, ["x"])]), "tree label 5 is not a string"),
    (Tree("S", [Tree("NN", [3])]), "word 3 under node 'NN' is not a string"),
    (Tree("S", [Tree("NN", [None])]), "word None under node 'NN' is not a string"),
    (Tree("S", ("not", "a", "list")), None),   # the constructor makes a list: fine
])
def test_helpers_refuse_non_string_labels_and_words(tree, message):
    from sklstruct.parsing import binarize, parseval

    good = Tree.fromstring("(S (NN x))")
    if message is None:
        assert str(tree) == "(S not a list)"
        return
    for call in (lambda: str(tree), tree.leaves, lambda: binarize(tree),
                 lambda: parseval([good], [tree]), lambda: parseval([tree], [good])):
        with pytest.raises(ValueError, match=message):
            call()
    tree.children = "xyz"
    with pytest.raises(ValueError, match="are a str, not a list"):
        str(tree)


def test_nltk_round_trip():
    import nltk  # a test extra (pip install .[test])
    text = "(S (NP (DT the) (NN dog)) (VP (VBZ barks) (ADVP (RB loudly))) (. .))"
    ours = Tree.fromstring(text)
    theirs = ours.to_nltk()
    assert isinstance(theirs, nltk.Tree) and theirs == nltk.Tree.fromstring(text)
    assert theirs.leaves() == ours.leaves() and theirs.pos() == ours.pos()
    assert Tree.from_nltk(theirs) == ours
    deep = nltk.Tree("X", ["w"])
    for _ in range(5000):                       # deeper than Python's recursion limit
        deep = nltk.Tree("X", [deep])
    assert len(Tree.from_nltk(deep).leaves()) == 1
    with pytest.raises(TypeError, match="child 0 of the tree is a int"):
        Tree.from_nltk(nltk.Tree("S", [3]))
    with pytest.raises(TypeError, match="not a tree"):
        Tree.from_nltk("(S (NN x))")

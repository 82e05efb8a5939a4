"""Binarization, its exact inverse, and grammar extraction."""
import itertools
import pickle
from collections import Counter

import numpy as np
import pytest
from _data import data_dir
from hypothesis import given, settings
from hypothesis import strategies as st

from sklstruct.datasets import load_treebank
from sklstruct.parsing import (
    Grammar,
    Tree,
    base_label,
    binarize,
    is_artificial,
    preprocess,
    unbinarize,
)

FACTORS = ["right", "left"]
HORIZONTAL = [0, 1, 2, None]
VERTICAL = [1, 2]

FLAT = Tree.fromstring("(S (NP (DT a) (JJ b) (NN c) (NNS d) (NN e)) (VP (VBZ f)) (. .))")


# ---------------------------------------------------------------------------
# Hand-worked examples
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "factor, h, expected",
    [
        ("right", None,
         "(S (NP (DT a) (@NP|<JJ-NN-NNS-NN> (JJ b) (@NP|<NN-NNS-NN> (NN c) "
         "(@NP|<NNS-NN> (NNS d) (NN e))))) (@S|<VP-.> (VP (VBZ f)) (. .)))"),
        ("right", 1,
         "(S (NP (DT a) (@NP|<JJ> (JJ b) (@NP|<NN> (NN c) (@NP|<NNS> (NNS d) (NN e))))) "
         "(@S|<VP> (VP (VBZ f)) (. .)))"),
        ("right", 0,
         "(S (NP (DT a) (@NP|<> (JJ b) (@NP|<> (NN c) (@NP|<> (NNS d) (NN e))))) "
         "(@S|<> (VP (VBZ f)) (. .)))"),
        ("left", None,
         "(S (@S|<NP-VP> (NP (@NP|<DT-JJ-NN-NNS> (@NP|<DT-JJ-NN> (@NP|<DT-JJ> (DT a) (JJ b)) "
         "(NN c)) (NNS d)) (NN e)) (VP (VBZ f))) (. .))"),
        ("left", 2,
         "(S (@S|<NP-VP> (NP (@NP|<NN-NNS> (@NP|<JJ-NN> (@NP|<DT-JJ> (DT a) (JJ b)) "
         "(NN c)) (NNS d)) (NN e)) (VP (VBZ f))) (. .))"),
    ],
)
def test_factorization_by_hand(factor, h, expected):
    b = binarize(FLAT, factor=factor, horizontal=h)
    assert str(b) == expected
    assert unbinarize(b) == FLAT


def test_parent_annotation_by_hand():
    t = Tree.fromstring("(S (NP (DT a) (NN b)) (VP (VBZ c) (NP (NN d) (NN e) (NN f))))")
    assert str(binarize(t, vertical=2)) == (
        "(S (NP^S (DT a) (NN b)) (VP^S (VBZ c) (NP^VP (NN d) (@NP^VP|<NN-NN> (NN e) (NN f)))))"
    )
    # vertical=3: parent and grandparent; the root and the POS tags unannotated
    assert str(binarize(t, horizontal=1, vertical=3)) == (
        "(S (NP^S (DT a) (NN b)) (VP^S (VBZ c) (NP^VP^S (NN d) (@NP^VP^S|<NN> (NN e) (NN f)))))"
    )
    assert unbinarize(binarize(t, vertical=3)) == t


def test_unary_nodes_one_word_sentences_and_preterminal_root():
    t = Tree.fromstring("(S (VP (VB go)))")
    assert str(binarize(t, vertical=2)) == "(S (VP^S (VB go)))"
    lone = Tree.fromstring("(NN hello)")
    assert binarize(lone, vertical=2) == lone and unbinarize(lone) == lone
    for f, h, v in itertools.product(FACTORS, HORIZONTAL, [1, 2, 3]):
        assert unbinarize(binarize(t, f, h, v)) == t
        assert unbinarize(binarize(lone, f, h, v)) == lone


def test_bracket_like_and_special_labels_roundtrip():
    t = Tree.fromstring(
        "(S (ADVP|PRT (RB up)) (NP (-LRB- -LRB-) (PRP$ its) (NN x) (-RRB- -RRB-)) "
        "(A^B (@C (NN @)) (X\\Y (NN \\)) (D+E (NN ^))) (. .))"
    )
    for f, h, v in itertools.product(FACTORS, HORIZONTAL, [1, 2, 3]):
        b = binarize(t, f, h, v)
        assert unbinarize(b) == t
        real = [n.label for n in b.subtrees() if not is_artificial(n.label)]
        # no original label can be mistaken for an artificial one
        assert {base_label(x) for x in real} == {n.label for n in t.subtrees()}
    b = binarize(t, vertical=2)
    labels = {n.label for n in b.subtrees()}
    assert {"A\\^B^S", "\\@C^A\\^B", "X\\\\Y^A\\^B", "ADVP|PRT^S", "PRP$", "-LRB-"} <= labels
    assert "@NP^S|<PRP$-NN-\\-RRB\\->" in labels


def test_artificial_labels_are_injective():
    # children "A-B" versus "A", "B": a naive join would give both "<A-B-C>"
    one = binarize(Tree.fromstring("(X (A-B (NN a)) (C (NN b)) (D (NN c)))"), horizontal=2)
    two = binarize(Tree.fromstring("(X (A (NN a)) (B-C (NN b)) (D (NN c)))"), horizontal=2)
    assert one.children[1].label != two.children[1].label


def test_base_label_and_is_artificial():
    assert base_label("NP^S") == "NP"
    assert base_label("NP^VP^S") == "NP"
    assert base_label("NP") == "NP"
    assert base_label("A\\^B^S") == "A^B"
    assert base_label("\\@C") == "@C"
    assert base_label("X\\\\^S") == "X\\"
    assert base_label("@NP^S|<DT>") == "@NP^S|<DT>"
    assert is_artificial("@NP|<>") and not is_artificial("NP") and not is_artificial("\\@C")
    assert not is_artificial("")


def test_bad_parameters():
    t = Tree.fromstring("(S (NN a) (NN b) (NN c))")
    for kwargs, name in [
        (dict(factor="middle"), "factor"),
        (dict(horizontal=-1), "horizontal"),
        (dict(horizontal=1.5), "horizontal"),
        (dict(horizontal=True), "horizontal"),
        (dict(vertical=0), "vertical"),
        (dict(vertical=None), "vertical"),
    ]:
        with pytest.raises(ValueError, match=name):
            binarize(t, **kwargs)
    with pytest.raises(TypeError):
        binarize("(S (NN a))")
    with pytest.raises(TypeError):
        unbinarize("(S (NN a))")
    with pytest.raises(ValueError, match="root .* artificial"):
        unbinarize(Tree.fromstring("(@S|<> (NN a) (NN b))"))


# ---------------------------------------------------------------------------
# Random trees
# ---------------------------------------------------------------------------

_LABELS = st.sampled_from(
    ["S", "NP", "VP", "A+B", "X\\", "C^D", "@E", "F|G", "-LRB-", "H-I", "<J>", "^", "@"]
)
_WORDS = st.sampled_from(["a", "b", "-LRB-", "@", "^", "|", "\\"])
_TAGS = st.sampled_from(["DT", "NN", ",", "-RRB-", "PRP$"])

random_trees = st.recursive(
    st.builds(lambda tag, w: Tree(tag, [w]), _TAGS, _WORDS),
    lambda kids: st.builds(Tree, _LABELS, st.lists(kids, min_size=1, max_size=6)),
    max_leaves=14,
)


def _real_constituents(btree):
    """Constituents of a binarized tree with artificial nodes ignored and the
    annotation stripped: the counting rule of Bauer et al. 2017, eqs. 8-9."""
    return Counter(
        (base_label(label), i, j) for label, i, j in btree.constituents()
        if not is_artificial(label)
    )


@settings(max_examples=120, deadline=None)
@given(
    random_trees,
    st.sampled_from(FACTORS),
    st.sampled_from(HORIZONTAL + [3]),
    st.integers(1, 3),
)
def test_random_trees_roundtrip(t, factor, h, v):
    b = binarize(t, factor, h, v)
    assert unbinarize(b) == t
    assert b.leaves() == t.leaves()
    assert [w for w, _ in b.pos()] == t.leaves()
    for node in b.subtrees():
        assert 1 <= len(node.children) <= 2
        if is_artificial(node.label):
            assert len(node.children) == 2
    # eqs. 8-9: the unbinarized brackets are the non-artificial ones, unannotated
    assert _real_constituents(b) == Counter(t.constituents())
    # the same holds after collapsing unary chains
    c = preprocess(t, strip_functions=False, remove_empty=False, collapse_unary=True)
    assert unbinarize(binarize(c, factor, h, v)) == c


# ---------------------------------------------------------------------------
# The whole Penn Treebank sample
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sample(ptb_sample_raw):
    """The preprocessed sample, plain and with unary chains collapsed, with the
    identity (flat encoding) of every tree computed once."""
    raw = ptb_sample_raw
    plain = [preprocess(t) for t in raw]
    collapsed = [preprocess(t, collapse_unary=True) for t in raw]
    return {
        False: (plain, [t._flat() for t in plain]),
        True: (collapsed, [t._flat() for t in collapsed]),
    }


@pytest.mark.parametrize("collapse", [False, True])
@pytest.mark.parametrize("vertical", VERTICAL)
@pytest.mark.parametrize("horizontal", HORIZONTAL)
@pytest.mark.parametrize("factor", FACTORS)
def test_sample_roundtrip(sample, factor, horizontal, vertical, collapse):
    trees, flats = sample[collapse]
    for t, flat in zip(trees, flats):
        assert unbinarize(binarize(t, factor, horizontal, vertical))._flat() == flat


def test_sample_grammar(sample):
    trees, _ = sample[False]
    # NP over NP (left by null-element removal) would be a unary self-loop
    with pytest.raises(ValueError, match="self-loop NP -> NP"):
        Grammar.from_trees(binarize(t) for t in trees[:500])
    trees = load_treebank(data_dir(), files=range(1, 30), remove_self_unary=True)
    btrees = [binarize(t, horizontal=1, vertical=2) for t in trees]
    g = Grammar.from_trees(btrees)
    assert g.symbols == sorted(g.symbols) and len(set(g.symbols)) == g.n_symbols
    tags = {tag for t in trees for _, tag in t.pos()}
    assert {g.symbols[i] for i in g.preterminals} == tags
    assert "S" in {g.symbols[i] for i in g.roots}
    assert g.max_unary_chain >= 2
    assert set(g.base_labels) == {label for t in trees for label, _, _ in t.constituents()}
    for t, b in zip(trees, btrees):
        bids, uids = g.rule_counts(b)
        n_nodes = len(b.subtrees()) - len(b.leaves())
        assert len(bids) + len(uids) == n_nodes  # one rule per phrasal node
        # the base labels of the binary/unary heads give back the constituents
        heads = np.concatenate([g.binary[bids, 0], g.unary[uids, 0]])
        real = heads[~g.artificial[heads]]
        assert Counter(g.base_labels[g.base[i]] for i in real) == Counter(
            label for label, _, _ in t.constituents()
        )


# ---------------------------------------------------------------------------
# Grammar on small trees
# ---------------------------------------------------------------------------


def test_grammar_by_hand():
    trees = [
        Tree.fromstring("(S (NP (DT the) (NN dog)) (VP (VBZ barks)))"),
        Tree.fromstring("(S (NP (NN it)) (VP (VBZ is) (ADJP (JJ big)) (. .)))"),
        Tree.fromstring("(NP (NN hello))"),
    ]
    b = [binarize(t, vertical=2) for t in trees]
    g = Grammar.from_trees(b)
    assert g.symbols == [
        ".", "@VP^S|<ADJP-.>", "ADJP^VP", "DT", "JJ", "NN", "NP", "NP^S", "S", "VBZ", "VP^S",
    ]
    idx = g.index
    assert [g.symbols[i] for i in g.preterminals] == [".", "DT", "JJ", "NN", "VBZ"]
    assert sorted(g.symbols[i] for i in g.roots) == ["NP", "S"]
    rows = {tuple(g.symbols[i] for i in r) for r in g.binary}
    assert rows == {
        ("S", "NP^S", "VP^S"), ("NP^S", "DT", "NN"), ("VP^S", "VBZ", "@VP^S|<ADJP-.>"),
        ("@VP^S|<ADJP-.>", "ADJP^VP", "."),
    }
    assert {tuple(g.symbols[i] for i in r) for r in g.unary} == {
        ("NP^S", "NN"), ("VP^S", "VBZ"), ("ADJP^VP", "JJ"), ("NP", "NN"),
    }
    assert g.binary.dtype == np.int32 and g.unary.dtype == np.int32
    assert g.binary.tolist() == sorted(g.binary.tolist())
    assert g.artificial.tolist() == [s.startswith("@") for s in g.symbols]
    assert g.base_labels == ["ADJP", "NP", "S", "VP"]
    assert g.base[idx["NP^S"]] == g.base[idx["NP"]] == 1
    assert g.base[idx["DT"]] == -1 and g.base[idx["@VP^S|<ADJP-.>"]] == -1
    assert g.max_unary_chain == 1
    bids, uids = g.rule_counts(b[1])
    assert sorted(tuple(g.symbols[i] for i in g.binary[k]) for k in bids) == sorted([
        ("S", "NP^S", "VP^S"), ("VP^S", "VBZ", "@VP^S|<ADJP-.>"), ("@VP^S|<ADJP-.>", "ADJP^VP", "."),
    ])
    assert sorted(tuple(g.symbols[i] for i in g.unary[k]) for k in uids) == [
        ("ADJP^VP", "JJ"), ("NP^S", "NN"),
    ]
    assert g.rule_counts(b[2])[0].size == 0 and g.rule_counts(b[2])[1].tolist() == [
        g._unary_ids[idx["NP"], idx["NN"]]
    ]
    h = pickle.loads(pickle.dumps(g))
    assert h.symbols == g.symbols and np.array_equal(h.binary, g.binary)
    assert np.array_equal(h.base, g.base) and h.max_unary_chain == 1
    assert "11 symbols" in repr(g)


def test_grammar_repeated_rules_and_unary_chain():
    t = Tree.fromstring("(S (S+VP (VP (VB go))) (NP (NP (DT a) (NN b)) (NP (DT c) (NN d))))")
    g = Grammar.from_trees([t])
    assert g.max_unary_chain == 2
    bids, uids = g.rule_counts(t)
    assert len(bids) == 4 and len(uids) == 2
    assert Counter(bids.tolist()).most_common(1)[0][1] == 2  # NP -> DT NN twice


def test_grammar_errors():
    with pytest.raises(ValueError, match="Tree 1 is not binarized: node 'S' has 3"):
        Grammar.from_trees([Tree.fromstring("(S (NN a))"),
                            Tree.fromstring("(S (NN a) (NN b) (NN c))")])
    with pytest.raises(ValueError, match="self-loop NP -> NP"):
        Grammar.from_trees([Tree.fromstring("(NP (NP (NN a)))")])
    with pytest.raises(ValueError, match="word 'b'"):
        Grammar.from_trees([Tree("S", [Tree("NN", ["a"]), "b"])])
    with pytest.raises(ValueError, match="both as part-of-speech tags and as phrases"):
        Grammar.from_trees([Tree.fromstring("(S (NP (NN a)) (NN (DT b)))")])
    with pytest.raises(ValueError, match="at least one tree"):
        Grammar.from_trees([])
    with pytest.raises(TypeError, match="Tree 0"):
        Grammar.from_trees(["(S (NN a))"])
    g = Grammar.from_trees([Tree.fromstring("(S (NP (NN a)) (VP (VB b)))")])
    with pytest.raises(ValueError, match="Unknown symbol 'JJ' in rule NP -> JJ"):
        g.rule_counts(Tree.fromstring("(S (NP (JJ a)) (VP (VB b)))"))
    with pytest.raises(ValueError, match="Unknown rule S -> VP NP"):
        g.rule_counts(Tree.fromstring("(S (VP (VB b)) (NP (NN a)))"))
    with pytest.raises(ValueError, match="not binarized"):
        g.rule_counts(Tree.fromstring("(S (NP (NN a)) (VP (VB b)) (NP (NN a)))"))

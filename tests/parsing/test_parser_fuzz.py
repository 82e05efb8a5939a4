"""Random call sequences on the parsers with random (often hostile) treebanks
and sentences: every failure is a clear ValueError or TypeError (or
NotFittedError) that leaves the parser as it was, pickles and copies parse as
the original, and n_jobs=2 parses as n_jobs=1."""
import copy
import os
import pickle

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.base import clone

from sklstruct._registry import PARSERS
from sklstruct.parsing import Tree
from _oracles import call_twins, make, outcome, public_state

TOY = [
    "(S (NP (DT the) (NN dog)) (VP (VBZ barks)))",
    "(S (NP (DT a) (NN cat)) (VP (VBZ sleeps)))",
    "(S (NP (DT the) (NN cat)) (VP (VBZ sees) (NP (DT a) (NN dog))))",
    "(S (NP (NNP Mary)) (VP (VBZ sleeps)) (. .))",
    "(FRAG (NP (NN dog)))",
    "(S (NP (DT a) (JJ big) (NN dog)) (VP (VBZ runs) (ADVP (RB fast))))",
]
# (built on draw: hypothesis hashes what it samples, and a bad Tree refuses a hash)
HOSTILE_TREES = [lambda: None, lambda: "(S (NN dog))", lambda: Tree("S", []),
                 lambda: Tree("", ["x"]), lambda: 3, lambda: Tree("S", [Tree("NN", [""])]),
                 lambda: Tree("S", [Tree("NN", [None])])]
WORDS = ["the", "dog", "a", "cat", "sees", "Mary", ".", "zebra", "runs"]
HOSTILE_WORDS = ["", None, 7, ("dog", "NN"), ["x"], "a b"]

toy_tree = st.sampled_from(TOY).map(Tree.fromstring)
hostile_tree = st.sampled_from(HOSTILE_TREES).map(lambda make_tree: make_tree())
word = st.sampled_from(WORDS)
hostile_word = st.sampled_from(HOSTILE_WORDS)


@st.composite
def trees(draw):
    """Mostly a valid treebank; one time in four, hostile items in it."""
    if draw(st.integers(0, 3)):
        return draw(st.lists(toy_tree, min_size=1, max_size=5))
    return draw(st.lists(st.one_of(toy_tree, hostile_tree), max_size=5))


@st.composite
def sentences(draw):
    if draw(st.integers(0, 3)):
        return draw(st.lists(st.lists(word, min_size=1, max_size=6), min_size=1, max_size=3))
    return draw(st.lists(st.lists(st.one_of(word, hostile_word), max_size=6), max_size=3))


params = st.fixed_dictionaries({}, optional={
    "C": st.sampled_from([0.0, 1.0, -1.0, float("nan"), 1e300]),
    "max_iter": st.sampled_from([0, 1, 2, None]),
    "factor": st.sampled_from(["left", "right", "middle"]),
    "horizontal": st.sampled_from([0, 1, 2, -1]),
})
OPS = ["fit", "predict", "score", "set_params", "pickle", "deepcopy", "clone"]


def state(parser):
    return public_state(parser, skip=("history_",))


def apply(parser, op, trees_, words, p):
    if op == "fit":
        return parser, parser.fit([t.leaves() if isinstance(t, Tree) else t for t in trees_],
                                  trees_) and None
    if op == "predict":
        return parser, [str(t) for t in parser.predict(words)]
    if op == "score":
        return parser, parser.score([t.leaves() if isinstance(t, Tree) else t
                                     for t in trees_], trees_)
    if op in ("pickle", "deepcopy"):
        again = (pickle.loads(pickle.dumps(parser)) if op == "pickle"
                 else copy.deepcopy(parser))
        probe = [WORDS[:4], ["zebra"]]
        assert outcome(parser.predict, probe) == outcome(again.predict, probe)
        return again, None
    if op == "clone":
        assert repr(clone(parser).get_params()) == repr(parser.get_params())
        return parser, None
    names = parser.get_params()
    parser.set_params(**{k: v for k, v in p.items() if k in names})
    return parser, None


@pytest.mark.parametrize("name", sorted(PARSERS))
@settings(max_examples=int(os.environ.get("SKLSTRUCT_FUZZ_EXAMPLES", 25)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(prefit=st.booleans(),
       calls=st.lists(st.tuples(st.sampled_from(OPS), trees(), sentences(), params),
                      min_size=1, max_size=5))
def test_fuzz_parsers(name, prefit, calls):
    parser = make(PARSERS[name], max_iter=2)
    twin = clone(parser)
    twin.set_params(**{k: 2 for k in twin.get_params() if k == "n_jobs"})
    pair = [parser, twin]
    if prefit:
        toy = [Tree.fromstring(s) for s in TOY]
        for m in pair:
            m.fit([t.leaves() for t in toy], toy)
    for op, trees_, words, p in calls:
        call_twins(pair, lambda m: apply(m, op, trees_, words, p), state)

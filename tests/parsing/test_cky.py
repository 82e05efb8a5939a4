"""CKY and loss-augmented CKY (Bauer et al. 2017, eqs. 1, 3, 5-9) against brute-force
enumeration of every tree of tiny random grammars."""
import itertools
import pickle
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sklstruct._cky import LOSS_F1, LOSS_NONE, CKYGrammar, LossTables, cky
from sklstruct.parsing.model import LOSSES, CompiledGrammar, tree_loss


# -- random tiny grammars ------------------------------------------------------

def random_grammar(rng, max_chain=None):
    """POS tags 0..P-1, nonterminals after them; some artificial (base -1),
    some sharing a base label (parent annotation)."""
    P = int(rng.integers(1, 3))
    N = int(rng.integers(2, 5))
    S = P + N
    base = np.full(S, -1)
    labels = rng.integers(0, max(1, N - 1), size=N)
    artificial = rng.random(N) < 0.25
    base[P:] = np.where(artificial, -1, labels)
    nts = np.arange(P, S)
    binary = {(int(rng.choice(nts)), int(rng.integers(S)), int(rng.integers(S)))
              for _ in range(int(rng.integers(4, 13)))}
    unary = set()
    for _ in range(int(rng.integers(0, 7))):
        a, b = int(rng.choice(nts)), int(rng.integers(S))
        if a != b:
            unary.add((a, b))
    roots = rng.choice(nts, size=int(rng.integers(1, N + 1)), replace=False)
    K = int(rng.integers(0, 3)) if max_chain is None else max_chain
    # rules in no particular order: the grammar sorts them for the kernel and
    # must map every rule id (the gold tree's too) through that order
    binary = sorted(binary)
    binary = [binary[i] for i in rng.permutation(len(binary))]
    return CompiledGrammar(S, binary, sorted(unary) or np.zeros((0, 2), int), roots,
                           np.arange(P), base, K)


def random_weights(rng, g, n):
    return (rng.normal(size=(n, len(g.preterminals))), rng.normal(size=len(g.binary)),
            rng.normal(size=len(g.unary)), rng.normal(size=len(g.roots)))


# -- brute force: every tree of the hypothesis space ---------------------------

def all_trees(g, n):
    """Every integer tree over n tokens rooted at a root symbol, built from the
    definition (binary rules, unary chains of <= K rules with no repeated
    symbol or base label over one span), independently of the chain tables."""
    final = {}
    for length in range(1, n + 1):
        for i in range(n - length + 1):
            j = i + length
            bases = []
            if length == 1:
                bases = [(int(t), i) for t in g.preterminals]
            else:
                for a, b, c in g.binary:
                    for s in range(i + 1, j):
                        for lt in final[i, s]:
                            if lt[0] != b:
                                continue
                            for rt in final[s, j]:
                                if rt[0] == c:
                                    bases.append((int(a), [lt, rt]))
            out = []
            for t in bases:
                frontier = [(t, [t[0]])]
                out.append(t)
                for _ in range(g.max_chain):
                    nxt = []
                    for tree, syms in frontier:
                        for a, b in g.unary:
                            if b != tree[0] or a in syms:
                                continue
                            if g.base[a] >= 0 and g.base[a] in {g.base[s] for s in syms}:
                                continue
                            nxt.append(((int(a), [tree]), syms + [int(a)]))
                    out.extend(t2 for t2, _ in nxt)
                    frontier = nxt
            final[i, j] = out
    return [t for t in final[0, n] if t[0] in set(g.roots.tolist())]


def random_span(rng, g, n, anchored):
    """Anchored scores per (span, symbol) and per (split point, parent), or
    None."""
    if not anchored:
        return None
    return {"span": rng.normal(size=((n + 1) ** 2, g.n_symbols)),
            "split": rng.normal(size=(n + 1, g.n_symbols))}


def tree_score(g, tree, lex, wb, wu, wr, anchored=None):
    """w . Psi(x, y) from the tree's nodes; ``span[i * (n + 1) + j, A]`` added
    for every node A over [i, j), ``split[s, A]`` for every binary node A
    whose left child ends at s."""
    score = wr[list(g.roots).index(tree[0])]
    if anchored is not None:
        span, split = anchored["span"], anchored["split"]
        W = split.shape[0]
        order = brackets(tree, g.key_bin)[1]   # (symbol, i, j) of every node, preorder
        score += sum(span[i * W + j, sym] for sym, i, j in order)
        stack = [(tree, 0)]
        while stack:
            (sym, kids), i = stack.pop()
            if isinstance(kids, int):
                continue
            if len(kids) == 2:
                left_end = _end(kids[0], i)
                score += split[left_end, sym]
                stack.extend([(kids[0], i), (kids[1], left_end)])
            else:
                stack.append((kids[0], i))
    stack = [tree]
    while stack:
        sym, kids = stack.pop()
        if isinstance(kids, int):
            score += lex[kids, list(g.preterminals).index(sym)]
        elif len(kids) == 1:
            score += wu[g.unary_index[(sym, kids[0][0])]]
            stack.extend(kids)
        else:
            score += wb[g.binary_index[(sym, kids[0][0], kids[1][0])]]
            stack.extend(kids)
    return score


def _end(tree, i):
    """End of the span of ``tree`` starting at token i."""
    return i + len(leaves(tree))


def leaves(tree):
    sym, kids = tree
    if isinstance(kids, int):
        return [kids]
    return [x for k in kids for x in leaves(k)]


def brackets(tree, key):
    """Multiset of (key, start, end) of the counted nodes; and the preorder."""
    out, order = Counter(), []

    def walk(t, i):
        sym, kids = t
        if isinstance(kids, int):
            order.append((sym, kids, kids + 1))
            return kids + 1
        pos = len(order)
        order.append(None)
        j = i
        for k in kids:
            j = walk(k, j)
        order[pos] = (sym, i, j)
        if key[sym] >= 0:
            out[key[sym], i, j] += 1
        return j

    walk(tree, 0)
    return out, order


def brute_loss(g, gold, pred, loss):
    if loss == "zero_one":
        return 0.0 if brackets(gold, g.key_bin)[1] == brackets(pred, g.key_bin)[1] else 1.0
    key = g.key_f1 if loss == "f1" else g.key_bin
    gb, pb = brackets(gold, key)[0], brackets(pred, key)[0]
    tp = sum((gb & pb).values())
    fp = sum(pb.values()) - tp
    if loss == "fp":
        return float(fp)
    denom = sum(gb.values()) + sum(pb.values())
    return 0.0 if denom == 0 else 1.0 - 2.0 * tp / denom


# -- tests ----------------------------------------------------------------------

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(seed=st.integers(0, 2 ** 32 - 1), n=st.integers(1, 4), anchored=st.booleans())
def test_cky_matches_brute_force(seed, n, anchored):
    rng = np.random.default_rng(seed)
    g = random_grammar(rng)
    lex, wb, wu, wr = random_weights(rng, g, n)
    span = random_span(rng, g, n, anchored)
    trees = all_trees(g, n)
    res = g.decode(lex, wb, g.chain_weights(wu), wr, **(span or {}))
    if not trees:
        assert res is None
        return
    best = max(tree_score(g, t, lex, wb, wu, wr, span) for t in trees)
    assert res is not None
    assert res["value"] == pytest.approx(best)
    # the returned tree is a tree of the space with that score
    assert tree_score(g, res["tree"], lex, wb, wu, wr, span) == pytest.approx(best)
    assert res["tree"] in trees
    # its decisions are the ones the joint feature map counts
    dec = g.decompose(res["tree"], n)
    assert sorted(dec["binary"]) == sorted(res["binary_rules"].tolist())
    assert sorted(dec["unary"]) == sorted(res["unary_rules"].tolist())
    assert np.array_equal(dec["pos"], res["pos"])
    assert sorted(map(tuple, res["nodes"].tolist())) == sorted(dec["nodes"])
    assert sorted(map(tuple, res["splits"].tolist())) == sorted(dec["splits"])


@SETTINGS
@given(seed=st.integers(0, 2 ** 32 - 1), n=st.integers(1, 4),
       loss=st.sampled_from(LOSSES), shift=st.floats(-2, 3), anchored=st.booleans())
def test_loss_augmented_cky_matches_brute_force(seed, n, loss, shift, anchored):
    """max_y Delta(y*, y) (const + w.Psi(x, y)) (eqs. 3, 7) over all trees."""
    rng = np.random.default_rng(seed)
    g = random_grammar(rng)
    lex, wb, wu, wr = random_weights(rng, g, n)
    span = random_span(rng, g, n, anchored)
    trees = all_trees(g, n)
    if not trees:
        return
    gold = trees[int(rng.integers(len(trees)))]
    const = shift - tree_score(g, gold, lex, wb, wu, wr, span)
    values = [brute_loss(g, gold, t, loss) * (const + tree_score(g, t, lex, wb, wu, wr, span))
              for t in trees]
    best = max(values)
    dgold = g.decompose(gold, n)
    res = g.decode(lex, wb, g.chain_weights(wu), wr, loss=loss, gold=dgold, const=const,
                   **(span or {}))
    assert res is not None
    pred = res["tree"]
    # the value reported is the value of the tree returned
    d = brute_loss(g, gold, pred, loss)
    assert res["delta"] == pytest.approx(d)
    assert tree_loss(g, dgold, g.decompose(pred, n), loss) == pytest.approx(d)
    assert res["value"] == pytest.approx(d * (const + tree_score(g, pred, lex, wb, wu, wr,
                                                                 span)))
    if best > 1e-9:
        # exact whenever a constraint is violated (dominance pruning is exact then)
        assert res["value"] == pytest.approx(best)
    else:
        assert res["value"] <= 1e-9


@pytest.mark.parametrize("loss", LOSSES)
def test_loss_augmented_without_pruning_ties(loss):
    """All weights zero: every tree scores 0 and const = 1, so eq. 7 is the
    maximal loss over the space; compare with enumeration."""
    rng = np.random.default_rng(3)
    checked = 0
    for _ in range(40):
        g = random_grammar(rng, max_chain=2)
        n = 4
        trees = all_trees(g, n)
        if len(trees) < 2:
            continue
        gold = trees[0]
        z = np.zeros
        res = g.decode(z((n, len(g.preterminals))), z(len(g.binary)), z(g.n_chains), z(len(g.roots)),
                       loss=loss, gold=g.decompose(gold, n), const=1.0)
        assert res["value"] == pytest.approx(max(brute_loss(g, gold, t, loss) for t in trees))
        checked += 1
    assert checked > 5


def test_gold_outside_space_and_unary_self_loops():
    # S=2 is the root; NP (3) and NP^S (4) share base label 0.
    g = CompiledGrammar(5, [(2, 3, 1), (2, 4, 1), (3, 0, 0)], [(4, 3), (2, 4)], [2], [0, 1],
                        [-1, -1, 1, 0, 0], max_chain=2)
    # the chain 4 -> 3 repeats base label 0: not a chain of the space
    assert (4, (0,)) not in g.chain_index
    gold = (2, [(4, [(3, [(0, 0), (0, 1)])]), (1, 2)])
    dec = g.decompose(gold, 3)
    assert dec["chain"][0 * 4 + 2] == -1  # the gold chain is outside the space
    trees = all_trees(g, 3)
    assert gold not in trees
    res = g.decode(np.zeros((3, 2)), np.zeros(3), g.chain_weights(np.zeros(2)), np.zeros(1),
                   loss="f1", gold=dec, const=1.0)
    assert res["value"] == pytest.approx(max(brute_loss(g, gold, t, "f1") for t in trees))
    # the F1 counts stay below |y*|: gold has NP(0,2) twice, predictions once
    assert res["tp"] <= 2


def test_no_parse_returns_none():
    # only rule S -> A A: sentences of odd length > 1 have no tree
    g = CompiledGrammar(3, [(2, 1, 1)], np.zeros((0, 2), int), [2], [0, 1], [-1, -1, 0], 0)
    assert g.decode(np.zeros((3, 2)), np.zeros(1), np.zeros(g.n_chains), np.zeros(1)) is None
    assert g.decode(np.zeros((2, 2)), np.zeros(1), np.zeros(g.n_chains), np.zeros(1)) is not None


def test_kernel_validates_inputs():
    g = CompiledGrammar(3, [(2, 1, 1)], np.zeros((0, 2), int), [2], [0, 1], [-1, -1, 0], 0)
    args = [np.zeros((2, 3)), g.kernel, np.zeros(1), np.zeros(g.n_chains), np.zeros(1)]
    cky(*args)
    with pytest.raises(ValueError, match="empty"):
        cky(np.zeros((0, 3)), *args[1:])
    with pytest.raises(ValueError, match="columns"):
        cky(np.zeros((2, 4)), *args[1:])
    with pytest.raises(ValueError, match="does not match"):
        cky(args[0], g.kernel, np.zeros(2), *args[3:])
    grammar = [3, g.binary_sorted, g.bin_start, g.chain_top, g.chain_bottom, g.chain_start,
               g.chain_nodes, g.chain_node_start, g.roots]
    bad = list(grammar)
    bad[1] = np.array([[2, 1, 7]], dtype=np.int32)
    with pytest.raises(ValueError, match="out of range"):
        CKYGrammar(*bad)
    with pytest.raises(ValueError, match="required"):
        LossTables(LOSS_F1)
    with pytest.raises(ValueError, match="loss_kind"):
        LossTables(9)
    keyed = LossTables(LOSS_F1, key=np.zeros(3, dtype=np.int32),
                       gold=np.zeros((4, 1), dtype=np.uint8))
    with pytest.raises(ValueError, match="wrong shape"):
        cky(*args, loss=keyed)
    assert LOSS_NONE == 0
    # the grammar pickles (fitted parsers hold one)
    again = pickle.loads(pickle.dumps(g.kernel))
    assert again.n_symbols == 3 and np.array_equal(again.binary, g.kernel.binary)
    assert cky(*args)["value"] == cky(args[0], again, *args[2:])["value"]


def test_grammar_validation():
    with pytest.raises(ValueError, match="self-loop"):
        CompiledGrammar(3, [(2, 0, 0)], [(2, 2)], [2], [0, 1], [-1, -1, 0], 1)
    with pytest.raises(ValueError, match="preterminal as its parent"):
        CompiledGrammar(3, [(2, 0, 0)], [(0, 2)], [2], [0, 1], [-1, -1, 0], 1)
    with pytest.raises(ValueError, match="outside"):
        CompiledGrammar(3, [(2, 0, 5)], np.zeros((0, 2), int), [2], [0, 1], [-1, -1, 0], 1)
    g = CompiledGrammar(3, [(2, 0, 0)], np.zeros((0, 2), int), [2], [0, 1], [-1, -1, 0], 0)
    with pytest.raises(ValueError, match="not in the grammar"):
        g.decompose((2, [(0, 0), (1, 1)]), 2)
    with pytest.raises(ValueError, match="leaves"):
        g.decompose((2, [(0, 0), (0, 1)]), 3)


def test_chain_enumeration_counts():
    # A chain over a base of symbol 0: 2 -> 0, 3 -> 2, 3 -> 0; K = 2
    g = CompiledGrammar(4, [(2, 0, 0)], [(2, 0), (3, 2), (3, 0)], [2, 3], [0, 1],
                        [-1, -1, 0, 1], 2)
    chains = {(int(t), tuple(r)) for t, r in zip(g.chain_top, g.chain_rules)}
    expected = {(s, ()) for s in range(4)} | {(2, (0,)), (3, (1,)), (3, (2,)), (3, (1, 0))}
    assert chains == expected
    assert list(itertools.chain(g.chain_top)) == sorted(g.chain_top)


@SETTINGS
@given(seed=st.integers(0, 2 ** 32 - 1), n=st.integers(2, 7),
       loss=st.sampled_from(LOSSES), shift=st.floats(-2, 3),
       scale=st.sampled_from([0.3, 1.0, 5.0]))
def test_outside_bound_pruning_is_exact(seed, n, loss, shift, scale):
    """Dropping the entries whose outside score bounds every completion to a
    value <= 0 (prune=True) returns the same optimum of eq. 3 as the full
    tables, on sentences too long for enumeration, and never keeps more
    entries."""
    rng = np.random.default_rng(seed)
    g = random_grammar(rng, max_chain=2)
    lex, wb, wu, wr = (scale * a for a in random_weights(rng, g, n))
    anchored = random_span(rng, g, n, rng.random() < 0.5)
    plain = g.decode(lex, wb, g.chain_weights(wu), wr, **(anchored or {}))
    if plain is None:
        return
    gold = g.decompose(plain["tree"], n)
    const = shift - plain["score"]
    kw = dict(loss=loss, gold=gold, const=const, **(anchored or {}))
    full = g.decode(lex, wb, g.chain_weights(wu), wr, prune=False, **kw)
    pruned = g.decode(lex, wb, g.chain_weights(wu), wr, prune=True, **kw)
    assert pruned["n_entries"] <= full["n_entries"]
    if full["value"] > 1e-9:
        assert pruned["value"] == pytest.approx(full["value"])
    else:
        assert pruned["value"] <= 1e-9


def test_outside_bound_pruning_drops_entries():
    """With sharp weights the outside bound removes many (tp, fp) entries."""
    rng = np.random.default_rng(7)
    dropped = 0
    for _ in range(30):
        g = random_grammar(rng, max_chain=1)
        n = 6
        lex, wb, wu, wr = (8.0 * a for a in random_weights(rng, g, n))
        plain = g.decode(lex, wb, g.chain_weights(wu), wr)
        if plain is None:
            continue
        kw = dict(loss="f1", gold=g.decompose(plain["tree"], n), const=1.0 - plain["score"])
        full = g.decode(lex, wb, g.chain_weights(wu), wr, prune=False, **kw)
        pruned = g.decode(lex, wb, g.chain_weights(wu), wr, **kw)
        dropped += full["n_entries"] - pruned["n_entries"]
        assert pruned["value"] == pytest.approx(full["value"]) or full["value"] <= 1e-9
    assert dropped > 100

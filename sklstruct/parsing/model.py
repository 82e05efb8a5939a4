"""The parsing model: a compiled binarized grammar, its joint feature map and
(loss-augmented) CKY decoding (Bauer et al. 2017, sections 2.1 and 2.3).

This module works on integer symbols only, so that the kernels can be tested
on hand-built grammars; :mod:`sklstruct.parsing.parser` maps labels and words
to it.

Trees here are *integer trees*: a preterminal is ``(tag, i)`` with ``i`` the
token position, any other node is ``(symbol, [children])``.

The hypothesis space ``Y(x)`` of a sentence of ``n`` tokens (shared by CKY,
loss-augmented CKY and the brute-force references of the tests):

* every token carries one preterminal (any POS tag);
* every node with two children uses a binary rule of the grammar;
* above the base node of each span (its preterminal or binary node) sits a
  chain of at most ``max_chain`` unary rules of the grammar in which no symbol
  and no base label (``base[A] >= 0``) occurs twice, counting the base node.
  Such a repetition (``NP -> NP`` over one span, possibly through parent
  annotation, ``NP^S -> NP^NP``) would make one bracket count twice as a true
  positive of eqs. 8-9; forbidding it keeps ``tp <= |y*|`` and makes the
  per-node indicators of eqs. 8-9 equal to EVALB's multiset matching.  Gold
  trees that contain such a chain stay valid training targets (they are
  simply not in ``Y(x)``);
* the root is one of ``roots``.
"""
from collections import Counter

import numpy as np
import scipy.sparse as sp

from .._cky import LOSS_F1, LOSS_FP, LOSS_ZERO_ONE, CKYGrammar, LossTables, cky

#: Loss names and the kernel's counting scheme for each of them.
LOSSES = ("f1", "f1_binarized", "fp", "zero_one")


def _int_array(a, name, ndim, width=None):
    arr = np.asarray(a)
    if arr.size == 0:
        arr = arr.reshape((0,) * (ndim - 1) + ((width or 0),) if ndim == 2 else (0,))
    if arr.ndim != ndim or (width is not None and arr.shape[1] != width):
        raise ValueError(f"{name} must be a {ndim}-D integer array"
                         + (f" with {width} columns" if width else "") + f"; got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{name} must hold integers; got {arr.dtype}")
    return np.ascontiguousarray(arr, dtype=np.int32)


class CompiledGrammar:
    """A binarized grammar ready for the CKY kernels.

    Parameters
    ----------
    n_symbols : int
        Symbols are ``0 .. n_symbols - 1``.
    binary : (R2, 3) int array
        Binary rules ``A -> B C`` (rule id = row).
    unary : (R1, 2) int array
        Unary rules ``A -> B`` (rule id = row), ``A`` not a preterminal.
    roots : int array
        Symbols allowed at the root (root feature id = position).
    preterminals : int array
        POS-tag symbols (lexical feature column = position).
    base : (n_symbols,) int array
        Base label id of every symbol (annotation stripped), ``-1`` for
        artificial symbols and POS tags.
    max_chain : int
        Longest unary chain above one span (``K``).
    counted : (n_symbols,) bool array, optional
        Symbols whose brackets count in the unbinarized F1 (eqs. 8-9).
        Default: ``base >= 0``.
    max_chains : int, default=10**6
        Refuse grammars with more unary chains than this.
    """

    def __init__(self, n_symbols, binary, unary, roots, preterminals, base, max_chain,
                 counted=None, max_chains=10 ** 6):
        S = int(n_symbols)
        if S < 1:
            raise ValueError("a grammar needs at least one symbol")
        binary = _int_array(binary, "binary", 2, 3)
        unary = _int_array(unary, "unary", 2, 2)
        roots = _int_array(roots, "roots", 1)
        pre = _int_array(preterminals, "preterminals", 1)
        base = _int_array(base, "base", 1)
        for name, arr in (("binary", binary), ("unary", unary), ("roots", roots),
                          ("preterminals", pre)):
            if arr.size and (arr.min() < 0 or arr.max() >= S):
                raise ValueError(f"{name} refers to a symbol outside 0..{S - 1}")
        if base.shape[0] != S:
            raise ValueError(f"base has {base.shape[0]} entries; expected {S}")
        if len(pre) == 0:
            raise ValueError("the grammar has no preterminal (POS tag)")
        is_pre = np.zeros(S, dtype=bool)
        is_pre[pre] = True
        if unary.size and is_pre[unary[:, 0]].any():
            raise ValueError("a unary rule has a preterminal as its parent")
        if binary.size and is_pre[binary[:, 0]].any():
            raise ValueError("a binary rule has a preterminal as its parent")
        if unary.size and np.any(unary[:, 0] == unary[:, 1]):
            raise ValueError("unary self-loops A -> A are not allowed")
        if int(max_chain) < 0:
            raise ValueError("max_chain must be >= 0")
        self.n_symbols = S
        self.binary = binary
        self.unary = unary
        self.roots = roots
        self.preterminals = pre
        self.is_preterminal = is_pre
        self.base = base
        self.max_chain = int(max_chain)
        self.counted = (base >= 0) if counted is None else np.asarray(counted, dtype=bool)
        if self.counted.shape != (S,):
            raise ValueError("counted must have one entry per symbol")
        self.counted = self.counted & ~is_pre
        self.pos_column = np.full(S, -1, dtype=np.int64)
        self.pos_column[pre] = np.arange(len(pre))
        self.root_column = np.full(S, -1, dtype=np.int64)
        self.root_column[roots] = np.arange(len(roots))
        # binary rules sorted by parent for the kernel
        self.bin_order = np.argsort(binary[:, 0], kind="stable")
        self.bin_rank = np.empty(len(binary), dtype=np.int32)   # rule id -> kernel's id
        self.bin_rank[self.bin_order] = np.arange(len(binary), dtype=np.int32)
        self.binary_sorted = np.ascontiguousarray(binary[self.bin_order])
        self.bin_start = np.searchsorted(self.binary_sorted[:, 0],
                                         np.arange(S + 1)).astype(np.int32)
        self.unary_index = {(int(a), int(b)): r for r, (a, b) in enumerate(unary)}
        self.binary_index = {(int(a), int(b), int(c)): r for r, (a, b, c) in enumerate(binary)}
        self._enumerate_chains(max_chains)
        # keys of the loss counting: base labels (unbinarized, eqs. 8-9) or
        # symbols (binarized trees)
        self.key_f1 = np.where(self.counted, base, -1).astype(np.int32)
        self.n_keys_f1 = int(base.max(initial=-1)) + 1
        self.key_bin = np.where(is_pre, -1, np.arange(S)).astype(np.int32)
        self.kernel = CKYGrammar(S, self.binary_sorted, self.bin_start, self.chain_top,
                                 self.chain_bottom, self.chain_start, self.chain_nodes,
                                 self.chain_node_start, self.roots)

    # -- unary chains ---------------------------------------------------------

    def _enumerate_chains(self, max_chains):
        """All chains of <= max_chain unary rules without a repeated symbol or
        base label, identity chains included; sorted by top symbol."""
        S, base = self.n_symbols, self.base
        parents = [[] for _ in range(S)]
        for r, (a, b) in enumerate(self.unary):
            parents[b].append((r, int(a)))
        chains = []  # (top, bottom, rules top-down, nodes above bottom top-first)
        frontier = [(s, s, (), ()) for s in range(S)]
        chains.extend(frontier)
        for _ in range(self.max_chain):
            nxt = []
            for top, bottom, rules, nodes in frontier:
                syms = set(nodes) | {bottom}
                bases = {int(base[s]) for s in syms if base[s] >= 0}
                for r, a in parents[top]:
                    if a in syms or (base[a] >= 0 and int(base[a]) in bases):
                        continue
                    nxt.append((a, bottom, (r,) + rules, (a,) + nodes))
            chains.extend(nxt)
            frontier = nxt
            if len(chains) > max_chains:
                raise ValueError(
                    f"the grammar has more than {max_chains} unary chains of length <= "
                    f"{self.max_chain}; lower max_unary_chain or the annotation")
        chains.sort(key=lambda c: c[0])
        Q = len(chains)
        self.n_chains = Q
        self.chain_top = np.array([c[0] for c in chains], dtype=np.int32)
        self.chain_bottom = np.array([c[1] for c in chains], dtype=np.int32)
        self.chain_rules = [c[2] for c in chains]
        lengths = np.array([len(c[3]) for c in chains], dtype=np.int32)
        self.chain_node_start = np.zeros(Q + 1, dtype=np.int32)
        np.cumsum(lengths, out=self.chain_node_start[1:])
        self.chain_nodes = np.array([s for c in chains for s in c[3]], dtype=np.int32)
        self.chain_start = np.searchsorted(self.chain_top, np.arange(S + 1)).astype(np.int32)
        rows = np.repeat(np.arange(Q), [len(r) for r in self.chain_rules])
        cols = np.array([r for rules in self.chain_rules for r in rules], dtype=np.int64)
        self.chain_unary = sp.csr_matrix((np.ones(len(cols)), (rows, cols)),
                                         shape=(Q, len(self.unary)))
        self.chain_index = {(int(c[0]), c[2]): q for q, c in enumerate(chains)}

    # -- trees ------------------------------------------------------------------

    def decompose(self, tree, n):
        """Decisions of an integer tree over ``n`` tokens.

        Returns a dict with ``binary`` / ``unary`` rule ids (with repetition),
        ``root``, ``pos`` (n,), ``nodes`` (symbol, start, end) of every node,
        ``splits`` (parent, split point) of every binary node,
        and the per-span gold decisions of the 0/1 loss (``rule``, ``split``,
        ``chain``, -1 where absent or outside the hypothesis space).
        Raises ValueError for a rule outside the grammar or a tree whose
        leaves are not ``0 .. n - 1`` in order.
        """
        W = n + 1
        out = {"binary": [], "unary": [], "nodes": [], "splits": [],
               "pos": np.full(n, -1, dtype=np.int32),
               "rule": np.full(W * W, -1, dtype=np.int32),
               "split": np.full(W * W, -1, dtype=np.int32),
               "chain": np.full(W * W, -1, dtype=np.int32), "root": None}
        next_leaf = 0
        # iterative post-order: compute spans, then decisions
        stack = [(tree, False)]
        spans = {}
        while stack:
            node, done = stack.pop()
            sym, kids = node
            if isinstance(kids, (int, np.integer)):
                if kids != next_leaf:
                    raise ValueError(f"tree leaves are not the positions 0..{n - 1} in order")
                if not self.is_preterminal[sym]:
                    raise ValueError(f"symbol {sym} over a token is not a preterminal")
                spans[id(node)] = (next_leaf, next_leaf + 1)
                next_leaf += 1
                continue
            if not done:
                if len(kids) not in (1, 2):
                    raise ValueError(f"node {sym} has {len(kids)} children; a binarized tree "
                                     "has 1 or 2")
                stack.append((node, True))
                for k in reversed(kids):
                    stack.append((k, False))
            else:
                spans[id(node)] = (spans[id(kids[0])][0], spans[id(kids[-1])][1])
        if next_leaf != n:
            raise ValueError(f"tree has {next_leaf} leaves; the sentence has {n} tokens")
        out["root"] = int(tree[0])
        todo = [tree]
        while todo:
            top = todo.pop()
            i, j = spans[id(top)]
            sid = i * W + j
            node, rules = top, []
            while True:
                sym, kids = node
                out["nodes"].append((int(sym), i, j))
                if isinstance(kids, (int, np.integer)) or len(kids) == 2:
                    break
                child = kids[0]
                r = self.unary_index.get((int(sym), int(child[0])))
                if r is None:
                    raise ValueError(f"unary rule {sym} -> {child[0]} is not in the grammar")
                rules.append(r)
                node = child
            out["unary"].extend(rules)
            out["chain"][sid] = self.chain_index.get((int(top[0]), tuple(rules)), -1)
            sym, kids = node
            if isinstance(kids, (int, np.integer)):
                out["pos"][i] = sym
                continue
            key = (int(sym), int(kids[0][0]), int(kids[1][0]))
            r = self.binary_index.get(key)
            if r is None:
                raise ValueError(f"binary rule {key[0]} -> {key[1]} {key[2]} is not in the grammar")
            out["binary"].append(r)
            out["rule"][sid] = r
            out["split"][sid] = spans[id(kids[0])][1]
            out["splits"].append((int(sym), spans[id(kids[0])][1]))
            todo.append(kids[1])
            todo.append(kids[0])
        return out

    def build_tree(self, result, n):
        """The integer tree of a kernel result (see :func:`~._cky.cky`)."""
        attach = {}  # decision row -> the bottom node (a list) whose children it fills
        root = None
        for row, (kind, ident, i, j, parent) in enumerate(result["decisions"]):
            if kind == 0:
                attach[row] = attach[parent]
                continue
            lo, hi = self.chain_node_start[ident], self.chain_node_start[ident + 1]
            syms = list(self.chain_nodes[lo:hi])
            bottom = int(self.chain_bottom[ident])
            if j - i == 1:
                node = (bottom, i)
            else:
                node = (bottom, [])
                attach[row] = node[1]
            for s in reversed(syms):
                node = (int(s), [node])
            if parent < 0:
                root = node
            else:
                attach[parent].append(node)
        return root

    # -- scoring ----------------------------------------------------------------

    def chain_weights(self, w_unary):
        return np.ascontiguousarray(self.chain_unary @ np.asarray(w_unary, dtype=np.float64))

    def gold_tables(self, gold, n, loss):
        """The gold tree as the kernel counts ``loss`` against it
        (:class:`~sklstruct._cky.LossTables`)."""
        W = n + 1
        if loss == "zero_one":
            # the kernel numbers binary rules in parent-sorted order
            rule = np.asarray(gold["rule"], dtype=np.int32)
            rule = np.where(rule >= 0, self.bin_rank[np.maximum(rule, 0)], -1).astype(np.int32)
            return LossTables(LOSS_ZERO_ONE, gold_rule=rule, gold_split=gold["split"],
                              gold_chain=gold["chain"], gold_pos=gold["pos"])
        key = self.key_f1 if loss == "f1" else self.key_bin
        n_keys = self.n_keys_f1 if loss == "f1" else self.n_symbols
        nodes = np.asarray(gold["nodes"], dtype=np.int64).reshape(-1, 3)
        k = key[nodes[:, 0]]
        keep = k >= 0
        table = np.zeros((W * W, max(n_keys, 1)), dtype=np.uint8)
        table[nodes[keep, 1] * W + nodes[keep, 2], k[keep]] = 1
        return LossTables(LOSS_F1 if loss in ("f1", "f1_binarized") else LOSS_FP,
                          key=key, gold=table, n_gold=int(keep.sum()))

    def decode(self, lex_pos, w_binary, w_chain, w_root, loss=None, gold=None, const=0.0,
               span=None, split=None, prune=True):
        """Best tree (``loss=None``, eq. 1) or the maximiser of eq. 3.

        Parameters
        ----------
        lex_pos : (n, P) float array
            Score of every POS tag (columns ordered as ``preterminals``) at
            every token.
        w_binary, w_chain, w_root : float arrays
            Rule, chain and root scores (``w_chain`` from :meth:`chain_weights`).
        loss : None or one of :data:`LOSSES`
        gold : dict from :meth:`decompose`, required with ``loss``
        const : float
            ``1 - w . Psi(x, y*)``.
        span : ((n + 1) ** 2, n_symbols) float array or None
            Anchored scores: ``span[i * (n + 1) + j, A]`` is added for every
            node with symbol ``A`` over tokens ``[i, j)``.
        split : (n + 1, n_symbols) float array or None
            ``split[s, A]`` is added for every binary node with parent ``A``
            split at ``s``.
        prune : bool, default=True
            With a loss: let the kernel drop the table entries that cannot
            complete to a violating tree (outside scores from a plain CKY
            pass; exact whenever the optimum of eq. 3 is positive).

        Returns
        -------
        The kernel's result dict plus ``tree`` (integer tree), ``nodes``
        ((M, 3) int array: symbol, start, end of every node) and ``splits``
        ((M2, 2): parent and split point of every binary node), or None when
        no tree of this length is derived from a root symbol.
        """
        lex_pos = np.asarray(lex_pos, dtype=np.float64)
        n = lex_pos.shape[0]
        if lex_pos.ndim != 2 or lex_pos.shape[1] != len(self.preterminals):
            raise ValueError(f"lexical scores must be (n_tokens, {len(self.preterminals)}); "
                             f"got {lex_pos.shape}")
        if n == 0:
            raise ValueError("cannot parse an empty sentence")
        lex = np.full((n, self.n_symbols), -np.inf)
        lex[:, self.preterminals] = lex_pos
        kwargs = {}
        if loss is not None:
            if loss not in LOSSES:
                raise ValueError(f"unknown loss {loss!r}; expected one of {LOSSES}")
            kwargs["loss"] = self.gold_tables(gold, n, loss)
            kwargs["const"] = float(const)
        if span is not None:
            kwargs["span"] = np.ascontiguousarray(span, dtype=np.float64)
        if split is not None:
            kwargs["split"] = np.ascontiguousarray(split, dtype=np.float64)
        wb = np.ascontiguousarray(np.asarray(w_binary, dtype=np.float64)[self.bin_order])
        args = (lex, self.kernel, wb, np.ascontiguousarray(w_chain, dtype=np.float64),
                np.ascontiguousarray(w_root, dtype=np.float64))
        if loss is not None:
            kwargs["prune"] = bool(prune)
        res = cky(*args, **kwargs)
        if res is None:
            return None
        res["binary_rules"] = self.bin_order[res["binary_rules"]]
        res["unary_rules"] = np.array([r for c in res["chains"] for r in self.chain_rules[c]],
                                      dtype=np.int64)
        res["nodes"], res["splits"] = self._nodes(res["decisions"])
        res["tree"] = self.build_tree(res, n)
        return res

    def _nodes(self, decisions):
        """(symbol, start, end) of every node of a kernel result (each span's
        chain holds its nodes above the base, then the base: binary node or
        preterminal), and (parent, split) of every binary node (its left
        child's decision is the next row, in preorder)."""
        rows, splits = [], []
        for k, (kind, ident, i, j, _) in enumerate(decisions):
            if kind == 1:
                lo, hi = self.chain_node_start[ident], self.chain_node_start[ident + 1]
                for sym in self.chain_nodes[lo:hi]:
                    rows.append((int(sym), i, j))
                rows.append((int(self.chain_bottom[ident]), i, j))
            else:
                splits.append((int(self.binary_sorted[ident, 0]), int(decisions[k + 1][3])))
        return (np.array(rows, dtype=np.int64).reshape(-1, 3),
                np.array(splits, dtype=np.int64).reshape(-1, 2))


def tree_loss(grammar, gold, pred, loss):
    """``Delta(y*, y)`` computed directly from two decompositions (reference
    for the kernel's counts; brackets matched as multisets)."""
    if loss == "zero_one":
        # the preorder list of (symbol, start, end) determines the tree
        return 0.0 if list(gold["nodes"]) == list(pred["nodes"]) else 1.0
    key = grammar.key_f1 if loss == "f1" else grammar.key_bin
    g = Counter((int(key[s]), i, j) for s, i, j in gold["nodes"] if key[s] >= 0)
    p = Counter((int(key[s]), i, j) for s, i, j in pred["nodes"] if key[s] >= 0)
    tp = sum((g & p).values())
    fp = sum(p.values()) - tp
    if loss == "fp":
        return float(fp)
    denom = sum(g.values()) + sum(p.values())
    return 0.0 if denom == 0 else 1.0 - 2.0 * tp / denom

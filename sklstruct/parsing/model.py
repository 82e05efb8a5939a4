"""The parsing model: a compiled binarized grammar, (loss-augmented) CKY
decoding, and the joint feature map of the max-margin parser with the layout
of its weights (Bauer et al. 2017, sections 2.1 and 2.3).

:class:`CompiledGrammar` works on integer symbols only, so that the kernels
can be tested on hand-built grammars; :class:`JointFeatureMap` maps words,
tags and the fitted featurizers to its scores and decompositions.

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
from ..features import SequenceVectorizer
from .spans import SpanFeatures

#: Loss names and the kernel's counting scheme for each of them.
LOSSES = ("f1", "f1_binarized", "fp", "zero_one")

#: Weight of a POS tag other than the given one, relative to the given one,
#: where a given tag is not imposed (PCFGParser's default ``tag_penalty``,
#: and F1MaxMarginParser(fixed_tags=True) for a sentence that has no tree
#: under its given tags).
TAG_PENALTY = 1e-4

#: Feature sets of :class:`F1MaxMarginParser` (its ``features`` parameter).
FEATURE_SETS = ("rules", "pcfg", "spans")

#: Default word features of the lexical scores (see
#: :class:`~sklstruct.SequenceVectorizer` for the template language).
LEXICAL_FEATURES = ("bias", "word", "lower", "suffix1", "suffix2", "suffix3", "prefix1",
                    "shape", "is_title", "is_upper", "has_digit", "has_hyphen")


def _gather_rows(m, rows):
    """(column indices as int64, values, row lengths) of the rows ``rows`` of
    the CSR matrix ``m``, in order: ``m[rows]`` without building a matrix."""
    start = m.indptr[rows]
    length = m.indptr[rows + 1] - start
    ends = np.cumsum(length)
    pos = np.repeat(start - ends + length, length) + np.arange(ends[-1] if len(ends) else 0)
    return m.indices[pos].astype(np.int64), m.data[pos], length


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


class JointFeatureMap:
    """The joint feature map ``Psi(x, y)`` of
    :class:`~sklstruct.parsing.F1MaxMarginParser` and the layout of its
    weights ``coef_`` (a mixin of the parser, whose parameters and fitted
    attributes it reads; section 2.1 of Bauer et al. 2017 plus the PCFG and
    span features described there).

    ``coef_`` holds, in order, the blocks of :meth:`_layout`: binary rules,
    unary rules, roots, lexical weights (``n_word_features x n_tags``, row
    major), the two PCFG weights, the span weights (``n_span_features x
    n_nonterminals``) and the split-point weights; a block is empty when its
    feature set is not used.  ``w_binary_`` ... ``w_split_`` are views of
    these blocks (:meth:`_set_views`).
    """

    def _fit_feature_map(self, prepared):
        """Fit the word and span featurizers on the prepared training data
        (the output of ``_prepare``), lay the weights out and set them to
        ``w0`` (1 on the PCFG features, 0 elsewhere).  Needs ``features_``
        and, with the PCFG features, ``pcfg_``.  Returns the word features
        and span features of the training sentences (None where unused)."""
        g = self.compiled_
        tokens = prepared["tokens"]
        self.tag_column_ = {self.grammar_.symbols[s]: k for k, s in enumerate(g.preterminals)}
        templates = list(self.lexical_features or LEXICAL_FEATURES)
        if self.tagged_ and self.lexical_features is None:
            templates.append("pos")
        self.vectorizer_ = SequenceVectorizer(templates)
        feats = self.vectorizer_.fit_transform(tokens)
        self.n_word_features_ = len(self.vectorizer_.vocabulary_)
        self.span_symbols_ = np.flatnonzero(~g.is_preterminal)
        self.span_column_ = np.full(g.n_symbols, -1, dtype=np.int64)
        self.span_column_[self.span_symbols_] = np.arange(len(self.span_symbols_))
        spans = None
        if "spans" in self.features_:
            words = prepared["words"]
            tags = [[t[1] for t in toks] for toks in tokens] if self.tagged_ else None
            self.span_features_ = SpanFeatures()
            spans = self.span_features_.fit_transform(words, tags)
        self.n_weights_ = sum(size for _, size in self._layout())
        self.coef_ = np.zeros(self.n_weights_)
        self._set_views()
        # the PCFG's log-probabilities enter with weight 1 plus a learned
        # deviation: w = w0 + u, with only u regularized
        self.w_pcfg_[:] = 1.0
        return (feats if "rules" in self.features_ else None), spans

    def _feature_sets(self):
        sets = ((self.features,) if isinstance(self.features, str)
                else tuple(self.features))
        bad = [f for f in sets if f not in FEATURE_SETS]
        if not sets or bad or len(set(sets)) != len(sets):
            raise ValueError(f"features must be a non-empty selection of {FEATURE_SETS} "
                             f"without repetition; got {self.features!r}")
        return frozenset(sets)

    def _layout(self):
        """Blocks of ``coef_`` in order, as (name, size)."""
        g, use = self.compiled_, self.features_
        rules = "rules" in use
        return [("binary", len(g.binary) if rules else 0),
                ("unary", len(g.unary) if rules else 0),
                ("root", len(g.roots) if rules else 0),
                ("lexical", self.n_word_features_ * len(g.preterminals) if rules else 0),
                ("pcfg", 2 if "pcfg" in use else 0),
                ("span", self.span_features_.n_features_ * len(self.span_symbols_)
                 if "spans" in use else 0),
                ("split", self.span_features_.n_split_features_ * len(self.span_symbols_)
                 if "spans" in use else 0)]

    def _set_views(self):
        off, self._offsets = 0, {}
        for name, size in self._layout():
            self._offsets[name] = off
            off += size
        o, w, g = self._offsets, self.coef_, self.compiled_
        self.w_binary_ = w[o["binary"]:o["unary"]]
        self.w_unary_ = w[o["unary"]:o["root"]]
        self.w_root_ = w[o["root"]:o["lexical"]]
        self.w_lex_ = w[o["lexical"]:o["pcfg"]].reshape(-1, len(g.preterminals))
        self.w_pcfg_ = w[o["pcfg"]:o["span"]]
        self.w_span_ = w[o["span"]:o["split"]].reshape(-1, len(self.span_symbols_))
        self.w_split_ = w[o["split"]:].reshape(-1, len(self.span_symbols_))

    def _rule_scores(self):
        g = self.compiled_
        parts = [np.zeros(len(g.binary)), np.zeros(len(g.unary)), np.zeros(len(g.roots))]
        if "rules" in self.features_:
            parts = [self.w_binary_.copy(), self.w_unary_.copy(), self.w_root_.copy()]
        if "pcfg" in self.features_:
            theta = self.w_pcfg_[0]
            parts[0] += theta * self.pcfg_.w_binary_
            parts[1] += theta * self.pcfg_.w_unary_
            parts[2] += theta * self.pcfg_.w_root_
        return tuple(parts)

    def _sentence_data(self, tokens_list, feats=None, spans=None):
        """What the scores of the given sentences need: lexical features,
        the PCFG's lexical log-probabilities, span features, tag masks
        (``feats``, ``spans``: already computed by ``fit``)."""
        words = [[t[0] for t in toks] if self.tagged_ else list(toks) for toks in tokens_list]
        tags = [[t[1] for t in toks] for toks in tokens_list] if self.tagged_ else None
        use = self.features_
        none = [None] * len(tokens_list)
        if feats is None:
            feats = self.vectorizer_.transform(tokens_list) if "rules" in use else none
        if spans is None:
            spans = self.span_features_.transform(words, tags) if "spans" in use else none
        return {
            "feats": feats,
            "pcfg_lex": self.pcfg_._lexical_scores(tokens_list) if "pcfg" in use else none,
            "spans": spans,
            "masks": [self._tag_mask(t) for t in tokens_list],
            "n": [len(w) for w in words],
        }

    def _lex(self, sd, i, open_tags=False):
        """Lexical scores (n, n_tags) of sentence i of ``_sentence_data``.
        With ``fixed_tags`` the tags other than the given ones are excluded,
        or with ``open_tags`` penalised by ``log(TAG_PENALTY)``."""
        n, P = sd["n"][i], len(self.compiled_.preterminals)
        lex = np.zeros((n, P))
        if sd["feats"][i] is not None:
            lex += np.asarray(sd["feats"][i] @ self.w_lex_)
        if sd["pcfg_lex"][i] is not None:
            lex += self.w_pcfg_[1] * sd["pcfg_lex"][i]
        if sd["masks"][i] is not None:
            if open_tags:
                lex[sd["masks"][i]] += np.log(TAG_PENALTY)
            else:
                lex[sd["masks"][i]] = -np.inf
        return lex

    def _anchored(self, sd, i):
        """Anchored scores of sentence i as arguments of ``decode``: per span
        and symbol ((n + 1) ** 2, n_symbols), per split point and parent
        (n + 1, n_symbols); empty without span features."""
        if sd["spans"][i] is None:
            return {}
        out = {}
        for name, F, w in (("span", sd["spans"][i][0], self.w_span_),
                           ("split", sd["spans"][i][1], self.w_split_)):
            out[name] = np.zeros((F.shape[0], self.compiled_.n_symbols))
            out[name][:, self.span_symbols_] = F @ w
        return out

    def _lexical_scores(self, tokens_list):
        sd = self._sentence_data(tokens_list)
        return [self._lex(sd, i) for i in range(len(tokens_list))]

    def _token_scores(self, tokens_list):
        sd = self._sentence_data(tokens_list)
        out = []
        for i in range(len(tokens_list)):
            mask = sd["masks"][i]
            if mask is None:
                lex, retry = self._lex(sd, i), None
            else:
                # the second attempt's scores penalise the other tags where
                # the first exclude them: one product for both
                retry = self._lex(sd, i, open_tags=True)
                lex = np.where(mask, -np.inf, retry)
            out.append((lex, self._anchored(sd, i), retry))
        return out

    def _tag_mask(self, tokens):
        """With ``fixed_tags`` and tagged input, the (n_tokens, n_tags) mask of
        the tags other than each token's given one (None otherwise)."""
        if not (self.fixed_tags and self.tagged_):
            return None
        cols = np.array([self.tag_column_.get(t[1], -1) for t in tokens])
        P = len(self.compiled_.preterminals)
        return (cols[:, None] >= 0) & (np.arange(P)[None, :] != cols[:, None])

    def _psi(self, dec, sd, i):
        """Psi(x, y) of a decomposed tree of sentence i of ``_sentence_data``
        as a (1, d) CSR row."""
        g, o, use = self.compiled_, self._offsets, self.features_
        P = len(g.preterminals)
        cols = g.pos_column[dec["pos"]]
        idx, data = [], []
        if "rules" in use:
            feats = sd["feats"][i]
            idx += [o["binary"] + np.asarray(dec["binary"], dtype=np.int64),
                    o["unary"] + np.asarray(dec["unary"], dtype=np.int64),
                    [o["root"] + g.root_column[dec["root"]]],
                    o["lexical"] + feats.indices.astype(np.int64) * P
                    + np.repeat(cols, np.diff(feats.indptr))]
            data += [np.ones(len(dec["binary"]) + len(dec["unary"]) + 1), feats.data]
        if "pcfg" in use:
            pc = self.pcfg_
            grammar = (pc.w_binary_[np.asarray(dec["binary"], dtype=np.int64)].sum()
                       + pc.w_unary_[np.asarray(dec["unary"], dtype=np.int64)].sum()
                       + pc.w_root_[g.root_column[dec["root"]]])
            lexical = sd["pcfg_lex"][i][np.arange(len(cols)), cols].sum()
            idx.append([o["pcfg"], o["pcfg"] + 1])
            data.append([grammar, lexical])
        if "spans" in use:
            nodes = np.asarray(dec["nodes"], dtype=np.int64).reshape(-1, 3)
            col = self.span_column_[nodes[:, 0]]
            nodes, col = nodes[col >= 0], col[col >= 0]
            W = sd["n"][i] + 1
            N = len(self.span_symbols_)
            spans, splits = sd["spans"][i]
            ind, val, length = _gather_rows(spans, nodes[:, 1] * W + nodes[:, 2])
            idx.append(o["span"] + ind * N + np.repeat(col, length))
            data.append(val)
            at = np.asarray(dec["splits"], dtype=np.int64).reshape(-1, 2)
            ind, val, length = _gather_rows(splits, at[:, 1])
            idx.append(o["split"] + ind * N + np.repeat(self.span_column_[at[:, 0]], length))
            data.append(val)
        idx = np.concatenate([np.asarray(a, dtype=np.int64) for a in idx])
        data = np.concatenate([np.asarray(a, dtype=np.float64) for a in data])
        # one CSR row, duplicate columns summed (what scipy's COO -> CSR does,
        # without its conversions: this runs once per sentence and pass)
        cols, where = np.unique(idx, return_inverse=True)
        return sp.csr_matrix((np.bincount(where, weights=data, minlength=len(cols)), cols,
                              np.array([0, len(cols)])), shape=(1, self.n_weights_))

    def _current_scores(self):
        wb, wu, wr = self._rule_scores()
        return wb, self.compiled_.chain_weights(wu), wr


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

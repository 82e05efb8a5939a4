"""The grammar read off binarized trees, as integer arrays for the CKY kernels.

A binarized tree (:func:`~sklstruct.parsing.binarize`) uses three kinds of
productions: binary ``A -> B C`` and unary ``A -> B`` between symbols, and
lexical ``T -> word`` at the preterminals.  :class:`Grammar` indexes the
symbols and the binary and unary rules seen in training trees so that the
parser's dynamic programs (Bauer et al. 2017, eq. 6, the maximization over
"all possible grammar productions A -> B C with fixed A") run over plain
``int32`` arrays; lexical rules are left to the parser's features.
"""
import numpy as np

from .binarize import base_label, is_artificial
from .tree import Tree

__all__ = ["Grammar"]


class Grammar:
    """Symbols and rules of a set of binarized trees.

    Build it with :meth:`from_trees`; the constructor is for unpickling.

    Attributes
    ----------
    symbols : list of str
        Every label (phrasal, artificial and part-of-speech), sorted; a
        symbol's id is its position.
    index : dict of str to int
        ``symbols[index[s]] == s``.
    preterminals : ndarray of int32
        Ids of the part-of-speech tags (labels of preterminal nodes), sorted.
    binary : ndarray of int32, shape (R2, 3)
        Binary rules ``A -> B C`` as rows ``(A, B, C)``, sorted; a rule's id
        is its row.
    unary : ndarray of int32, shape (R1, 2)
        Unary rules ``A -> B`` as rows ``(A, B)``, sorted, where ``A`` is a
        phrasal (non-preterminal) symbol and ``B`` any symbol.  There are no
        self-loops ``A -> A`` (see :meth:`from_trees`).
    roots : ndarray of int32
        Ids of the symbols seen at the root of a training tree, sorted.
    artificial : ndarray of bool, shape (n_symbols,)
        Whether a symbol was introduced by binarization (``"@..."``); such
        nodes do not count as constituents (Bauer et al. 2017, eqs. 8-9).
    base : ndarray of int32, shape (n_symbols,)
        For a phrasal, non-artificial symbol the id into :attr:`base_labels`
        of its label without annotation (``NP^S`` -> ``NP``); ``-1`` for
        artificial symbols and part-of-speech tags.  Two symbols with the
        same base id denote the same constituent label of the unbinarized
        tree, which is what the F1 loss of Bauer et al. 2017 (eqs. 8-9) compares.
    base_labels : list of str
        The distinct base labels, sorted.
    max_unary_chain : int
        The largest number of unary rules stacked over one span in a training
        tree, counting the rule whose child is a part-of-speech tag: ``(S
        (VP (VB go)))`` has a chain of 2 (``S -> VP``, ``VP -> VB``).  A CKY
        parser needs at most this many unary steps per cell to reproduce
        every training tree.
    """

    def __init__(self, symbols, preterminals, binary, unary, roots, max_unary_chain):
        self.symbols = list(symbols)
        self.index = {s: i for i, s in enumerate(self.symbols)}
        self.preterminals = np.asarray(preterminals, dtype=np.int32).reshape(-1)
        self.binary = np.asarray(binary, dtype=np.int32).reshape(-1, 3)
        self.unary = np.asarray(unary, dtype=np.int32).reshape(-1, 2)
        self.roots = np.asarray(roots, dtype=np.int32).reshape(-1)
        self.max_unary_chain = int(max_unary_chain)
        n = len(self.symbols)
        self.artificial = np.array([is_artificial(s) for s in self.symbols], dtype=bool)
        is_pos = np.zeros(n, dtype=bool)
        is_pos[self.preterminals] = True
        phrasal = [
            i for i in range(n) if not self.artificial[i] and not is_pos[i]
        ]
        self.base_labels = sorted({base_label(self.symbols[i]) for i in phrasal})
        base_index = {b: j for j, b in enumerate(self.base_labels)}
        self.base = np.full(n, -1, dtype=np.int32)
        for i in phrasal:
            self.base[i] = base_index[base_label(self.symbols[i])]
        self._binary_ids = {tuple(r): k for k, r in enumerate(self.binary.tolist())}
        self._unary_ids = {tuple(r): k for k, r in enumerate(self.unary.tolist())}

    def __reduce__(self):
        return (
            Grammar,
            (self.symbols, self.preterminals, self.binary, self.unary, self.roots,
             self.max_unary_chain),
        )

    @property
    def n_symbols(self):
        """Number of symbols."""
        return len(self.symbols)

    def __repr__(self):
        return (
            f"Grammar({self.n_symbols} symbols, {len(self.preterminals)} tags, "
            f"{len(self.binary)} binary and {len(self.unary)} unary rules, "
            f"{len(self.roots)} root symbols, max_unary_chain={self.max_unary_chain})"
        )

    @classmethod
    def from_trees(cls, trees):
        """Index the symbols and rules of binarized trees.

        Parameters
        ----------
        trees : iterable of Tree
            Binarized trees (at most two children per node, every word under
            a preterminal).

        Returns
        -------
        grammar : Grammar

        Raises
        ------
        ValueError
            Naming the tree: a node with more than two children (not
            binarized) or none, a word outside a preterminal, a unary
            self-loop ``A -> A`` (preprocess with ``remove_self_unary=True``
            or ``collapse_unary=True``, or binarize with ``vertical >= 2``),
            or a label used both as a part-of-speech tag and as a phrase.
        """
        tags, phrasal, roots = set(), set(), set()
        binary, unary = set(), set()
        longest = 0
        n_trees = 0
        for t_index, tree in enumerate(trees):
            n_trees += 1
            if not isinstance(tree, Tree):
                raise TypeError(f"Tree {t_index} is a {type(tree).__name__}, not a Tree.")
            roots.add(tree.label)
            for node, chain in _walk(tree, t_index):
                kids = node.children
                if len(kids) == 1 and type(kids[0]) is str:
                    tags.add(node.label)
                    continue
                phrasal.add(node.label)
                if len(kids) == 2:
                    binary.add((node.label, kids[0].label, kids[1].label))
                else:
                    unary.add((node.label, kids[0].label))
                    longest = max(longest, chain)
        if n_trees == 0:
            raise ValueError("Grammar.from_trees needs at least one tree.")
        both = tags & phrasal
        if both:
            raise ValueError(
                f"Labels used both as part-of-speech tags and as phrases: {sorted(both)[:5]}."
            )
        symbols = sorted(tags | phrasal)
        index = {s: i for i, s in enumerate(symbols)}
        b = sorted((index[a], index[l], index[r]) for a, l, r in binary)
        u = sorted((index[a], index[c]) for a, c in unary)
        return cls(
            symbols,
            sorted(index[t] for t in tags),
            np.array(b, dtype=np.int32).reshape(-1, 3),
            np.array(u, dtype=np.int32).reshape(-1, 2),
            sorted(index[r] for r in roots),
            longest,
        )

    def rule_counts(self, tree):
        """Ids of the rules used by a binarized tree, with repetition.

        Parameters
        ----------
        tree : Tree
            A binarized tree.

        Returns
        -------
        binary_ids : ndarray of int32
            Row of :attr:`binary` of every binary node, in preorder.
        unary_ids : ndarray of int32
            Row of :attr:`unary` of every unary (non-preterminal) node.

        Raises
        ------
        ValueError
            If the tree uses a symbol or rule the grammar does not have, or is
            not binarized.
        """
        index = self.index
        bids, uids = [], []
        for node, _ in _walk(tree, None):
            kids = node.children
            if len(kids) == 1 and type(kids[0]) is str:
                continue
            labels = (node.label,) + tuple(k.label for k in kids)
            try:
                key = tuple(index[x] for x in labels)
            except KeyError as exc:
                raise ValueError(
                    f"Unknown symbol {exc.args[0]!r} in rule {_rule_text(labels)}."
                ) from None
            table, out = (self._binary_ids, bids) if len(kids) == 2 else (self._unary_ids, uids)
            rule = table.get(key)
            if rule is None:
                raise ValueError(f"Unknown rule {_rule_text(labels)}.")
            out.append(rule)
        return np.array(bids, dtype=np.int32), np.array(uids, dtype=np.int32)


def _rule_text(labels):
    return f"{labels[0]} -> {' '.join(labels[1:])}"


def _walk(tree, t_index):
    """Yield (node, unary chain length ending at node) for every node, after
    checking that it is a node of a binarized tree."""
    where = f"tree {t_index}" if t_index is not None else "the tree"
    stack = [(tree, 0)]
    while stack:
        node, above = stack.pop()
        kids = node.children
        if len(kids) == 1 and type(kids[0]) is str:
            yield node, 0
            continue
        if not 1 <= len(kids) <= 2:
            raise ValueError(
                f"{where.capitalize()} is not binarized: node {node.label!r} has "
                f"{len(kids)} children (binarize it first)."
            )
        for k in kids:
            if not isinstance(k, Tree):
                raise ValueError(
                    f"In {where}, word {k!r} is a child of the phrasal node "
                    f"{node.label!r}; every word needs a preterminal."
                )
        if len(kids) == 1:
            if kids[0].label == node.label:
                raise ValueError(
                    f"In {where}, unary self-loop {node.label} -> {node.label}: preprocess "
                    "with remove_self_unary=True (or collapse_unary=True), or binarize "
                    "with vertical >= 2."
                )
            chain = above + 1
            yield node, chain
            stack.append((kids[0], chain))
        else:
            yield node, 0
            stack.extend([(kids[1], 0), (kids[0], 0)])

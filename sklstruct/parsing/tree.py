"""A light constituency tree, Penn Treebank reading/writing and preprocessing.

The parser of :mod:`sklstruct.parsing` takes ``y`` as a list of :class:`Tree`
objects.  This module reads them from Penn Treebank bracket files (``.mrg``,
several trees per file, each usually wrapped in an outer bracket without a
label, ``( (S ...) )``), writes them back one per line, and applies the
standard preprocessing of the parsing literature (e.g. the experiments of
Bauer, Nakajima, Goernitz and Mueller, *Optimizing for Measure of
Performance in Max-Margin Parsing*, section 3: "removing functional tags and
null elements"):

* :func:`preprocess` strips function tags and co-indices (``NP-SBJ-1`` ->
  ``NP``, ``NP=2`` -> ``NP``), removes ``-NONE-`` elements and the
  constituents left empty, and optionally collapses unary chains of phrasal
  nodes into one node (``S+VP``); :func:`expand_unary` undoes the collapse.

Reading is a single regular-expression tokenization followed by an iterative
stack parse, so deep trees cannot hit Python's recursion limit; every other
traversal in this package is iterative as well.  A tree built by hand that
contains itself is refused with a ValueError by every method that walks it.
(The Penn Treebank sample is read by
:func:`sklstruct.datasets.load_treebank`.)
"""
import os
import re

from .._files import decode_error, locate_decode_error

__all__ = [
    "Tree",
    "read_trees",
    "read_ptb",
    "write_ptb",
    "preprocess",
    "expand_unary",
    "strip_function_tags",
]

# One token per alternative: a whole preterminal "(TAG word)" (label, word), an
# opening bracket with its possibly empty label, a closing bracket, a bare word.
_TOKEN = re.compile(
    r"\(\s*([^\s()]+)\s+([^\s()]+)\s*\)|\(\s*([^\s()]*)|(\))|([^\s()]+)"
)
_BAD_TOKEN = re.compile(r"[\s()]")


class Tree:
    """A constituency tree node.

    Parameters
    ----------
    label : str
        Constituent label (``"NP"``) or part-of-speech tag (``"DT"``).
    children : iterable of (Tree or str), default=None
        The children, left to right.  A ``str`` child is a word.  A
        *preterminal* is a node with exactly one ``str`` child; the readers of
        this module guarantee that every word sits under a preterminal.

    Notes
    -----
    Equality is structural (labels, shape and words); ``hash`` is consistent
    with it.  Trees are mutable: do not change a tree used as a dict key.
    All methods are iterative, so arbitrarily deep trees are safe.  A node
    that contains itself (directly or through its descendants) makes every
    method that walks the tree raise ValueError.

    Examples
    --------
    >>> t = Tree.fromstring("(S (NP (DT the) (NN dog)) (VP (VBZ barks)))")
    >>> t.leaves()
    ['the', 'dog', 'barks']
    >>> t.constituents()
    [('S', 0, 3), ('NP', 0, 2), ('VP', 2, 3)]
    >>> str(t)
    '(S (NP (DT the) (NN dog)) (VP (VBZ barks)))'
    """

    __slots__ = ("label", "children")

    def __init__(self, label, children=None):
        self.label = label
        self.children = [] if children is None else list(children)

    # -- construction -----------------------------------------------------
    @classmethod
    def fromstring(cls, s):
        """Parse exactly one tree from a bracket string.

        Raises
        ------
        ValueError
            If the string is malformed or holds zero or several trees.
        """
        trees = read_trees(s)
        if len(trees) != 1:
            raise ValueError(f"Tree.fromstring expects exactly one tree, found {len(trees)}.")
        return trees[0]

    def copy(self):
        """Deep copy (words are shared, being immutable strings; a subtree that
        appears twice is copied twice)."""
        return _fold(self, lambda node, kids: Tree(node.label, kids))

    def to_nltk(self):
        """The same tree as an ``nltk.Tree`` (needs NLTK)."""
        from nltk import Tree as NLTKTree

        return _fold(self, lambda node, kids: NLTKTree(node.label, kids))

    @classmethod
    def from_nltk(cls, tree):
        """A :class:`Tree` from an ``nltk.Tree`` (or any tree whose nodes are
        lists of children with a ``label()``; leaves must be strings).

        Raises
        ------
        TypeError
            If a node is neither such a tree nor a string, or a label is not
            a string.
        """
        def convert_node(node, where):
            if not (isinstance(node, list) and callable(getattr(node, "label", None))):
                raise TypeError(f"from_nltk: {where} is a {type(node).__name__}, not a tree "
                                "or a word (str)")
            if not isinstance(node.label(), str):
                raise TypeError(f"from_nltk: the label of {where} is a "
                                f"{type(node.label()).__name__}, not a str")
            return cls(node.label())

        root = convert_node(tree, "the tree")
        stack = [(tree, root, "the tree")]
        seen = set()
        while stack:
            source, target, where = stack.pop()
            if id(source) in seen:
                raise ValueError("from_nltk: the tree contains itself")
            seen.add(id(source))
            for i, child in enumerate(source):
                if isinstance(child, str):
                    target.children.append(child)
                else:
                    node = convert_node(child, f"child {i} of {where}")
                    target.children.append(node)
                    stack.append((child, node, f"child {i} of {where}"))
        return root

    # -- inspection -------------------------------------------------------
    def is_preterminal(self):
        """True if the node has exactly one child and that child is a word."""
        return len(self.children) == 1 and isinstance(self.children[0], str)

    def subtrees(self):
        """All nodes (Tree objects) in preorder."""
        _check_tree(self)
        out = []
        stack = [self]
        while stack:
            node = stack.pop()
            out.append(node)
            stack.extend(c for c in reversed(node.children) if isinstance(c, Tree))
        return out

    def leaves(self):
        """The words, left to right."""
        return [item for item in self._flat() if isinstance(item, str)]

    def pos(self):
        """``[(word, tag), ...]`` for the preterminals, left to right."""
        return [(n.children[0], n.label) for n in self.subtrees() if n.is_preterminal()]

    def constituents(self):
        """``[(label, start, end), ...]`` for every non-preterminal node.

        Spans are word offsets, ``end`` exclusive; the list is in preorder
        (a parent before its children, siblings left to right).
        """
        _check_tree(self)
        out = []
        position = 0
        # (node, index into out or -1): the end of a constituent is known when
        # its marker is popped, after all of its descendants.
        stack = [(self, None)]
        while stack:
            node, slot = stack.pop()
            if slot is not None:
                label, start, _ = out[slot]
                out[slot] = (label, start, position)
                continue
            if isinstance(node, str):
                position += 1
                continue
            if node.is_preterminal():
                position += 1
                continue
            out.append((node.label, position, -1))
            stack.append((None, len(out) - 1))
            stack.extend((c, None) for c in reversed(node.children))
        return out

    def __len__(self):
        """Number of children."""
        return len(self.children)

    def __bool__(self):
        # a tree is always true, even without children (len 0)
        return True

    def height(self):
        """Number of nodes on the longest path from this node to a word."""
        _check_tree(self)
        best = 0
        stack = [(self, 1)]
        while stack:
            node, depth = stack.pop()
            best = max(best, depth)
            stack.extend((c, depth + 1) for c in node.children if isinstance(c, Tree))
        return best

    # -- output -------------------------------------------------------------
    def to_string(self):
        """One-line Penn Treebank bracket string, e.g. ``(NP (DT the) (NN dog))``.

        Raises
        ------
        ValueError
            If a label or word contains whitespace or a parenthesis, or a word
            or a label is empty, so that the string could not be read back as
            the same tree, or if the tree contains itself.
        """
        _check_tree(self)
        parts = []
        stack = [self]
        while stack:
            node = stack.pop()
            if node is None:
                parts.append(")")
            elif isinstance(node, str):
                if not node or _BAD_TOKEN.search(node):
                    raise ValueError(
                        f"Word {node!r} is empty or contains whitespace or a parenthesis; "
                        "it cannot be written in bracket format (Penn Treebank writes "
                        "-LRB- and -RRB- for parentheses)."
                    )
                parts.append(" " + node)
            else:
                if _BAD_TOKEN.search(node.label):
                    raise ValueError(
                        f"Label {node.label!r} contains whitespace or a parenthesis; it "
                        "cannot be written in bracket format."
                    )
                if not node.label:
                    # '( a)' reads back as a word, not a constituent, and an unlabelled
                    # root as the treebank's outer bracket, which the reader removes
                    raise ValueError("An empty label cannot be written in bracket format "
                                     "(it would not read back as the same tree).")
                parts.append((" (" if parts else "(") + node.label)
                stack.append(None)
                stack.extend(reversed(node.children))
        return "".join(parts)

    def __str__(self):
        return self.to_string()

    def __repr__(self):
        text = self.to_string() if _writable(self) else f"<{self.label!r} ...>"
        if len(text) > 200:
            text = text[:197] + "..."
        return f"Tree.fromstring({text!r})"

    # -- equality, hashing, pickling ------------------------------------------
    def _flat(self):
        """Preorder tuple of (label, n_children) pairs and words: the identity
        of the tree, used for equality, hashing and pickling."""
        _check_tree(self)
        out = []
        stack = [self]
        while stack:
            node = stack.pop()
            if isinstance(node, str):
                out.append(node)
            else:
                out.append((node.label, len(node.children)))
                stack.extend(reversed(node.children))
        return tuple(out)

    def __eq__(self, other):
        if not isinstance(other, Tree):
            return NotImplemented
        return self is other or self._flat() == other._flat()

    def __ne__(self, other):
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self):
        return hash(self._flat())

    def __reduce__(self):
        # A flat encoding: pickling stays iterative however deep the tree is.
        return (_from_flat, (self._flat(),))


def _check_tree(tree):
    """Raise ValueError unless ``tree`` is well formed: every label a ``str``,
    every node's children a list of Trees and words (``str``), and no node
    containing itself, directly or through its descendants (possible only for
    a tree built or changed by hand), so that the walks over it end.  One
    iterative walk with an id set (a subtree that appears twice, which is
    legal, is walked once); only if a node is reached twice does
    :func:`_find_cycle` tell a cycle from a shared subtree."""
    seen = set()
    stack = [tree]
    revisited = False
    while stack:
        node = stack.pop()
        key = id(node)
        if key in seen:
            revisited = True
            continue
        seen.add(key)
        if not isinstance(node.label, str):
            raise ValueError(f"tree label {node.label!r} is not a string")
        if not isinstance(node.children, list):
            raise ValueError(f"the children of node {node.label!r} are a "
                             f"{type(node.children).__name__}, not a list")
        for child in node.children:
            if isinstance(child, Tree):
                stack.append(child)
            elif not isinstance(child, str):
                raise ValueError(f"word {child!r} under node {node.label!r} is not a string")
    if revisited:
        _find_cycle(tree)


def _find_cycle(tree):
    """Raise ValueError naming a node that has an ancestor as a child: a walk
    that keeps the ids of the nodes on the path from the root, and walks a
    subtree that appears twice only once."""
    on_path, done = set(), set()
    stack = [(tree, None)]  # (node, its parent), or (node, True) to leave it
    while stack:
        node, parent = stack.pop()
        key = id(node)
        if parent is True:
            on_path.discard(key)
            done.add(key)
        elif key in on_path:
            raise ValueError(
                f"Tree {tree.label!r} is cyclic: node {parent.label!r} has its ancestor "
                f"{node.label!r} as a child; a tree must not contain itself."
            )
        elif key not in done:
            on_path.add(key)
            stack.append((node, True))
            stack.extend((c, node) for c in node.children if isinstance(c, Tree))


def _writable(tree):
    try:
        tree.to_string()
    except ValueError:
        return False
    return True


def _from_flat(items):
    """Inverse of :meth:`Tree._flat`."""
    root = None
    stack = []  # [node, remaining children]
    for item in items:
        if isinstance(item, str):
            child = item
        else:
            label, n = item
            child = Tree(label)
            if root is None:
                root = child
        if stack:
            parent = stack[-1]
            parent[0].children.append(child)
            parent[1] -= 1
            if parent[1] == 0:
                stack.pop()
                while stack and stack[-1][1] == 0:
                    stack.pop()
        if not isinstance(item, str) and item[1] > 0:
            stack.append([child, item[1]])
    return root


def _fold(tree, build, splice=None):
    """Iterative post-order rebuild: ``build(node, new_children)`` is called
    for every node after its children were rebuilt (``new_children`` is a
    fresh list the callee may keep); words pass through unchanged.  ``build``
    may return any object (e.g. ``None`` to drop a node; callers filter).
    Raises ValueError if ``tree`` contains itself.

    With ``splice`` (a label prefix), a phrasal node whose label starts with
    it is not built: its rebuilt children go straight into its parent's list
    (how :func:`~sklstruct.parsing.unbinarize` removes artificial nodes)."""
    _check_tree(tree)
    stack = [(tree, iter(tree.children), [])]
    while True:
        node, children, built = stack[-1]
        for child in children:
            if type(child) is str:
                built.append(child)
                continue
            grand = child.children
            if len(grand) == 1 and type(grand[0]) is str:
                built.append(build(child, [grand[0]]))
                continue
            shared = splice is not None and child.label.startswith(splice)
            stack.append((child, iter(grand), built if shared else []))
            break
        else:
            stack.pop()
            if stack and splice is not None and node.label.startswith(splice):
                continue
            value = build(node, built)
            if not stack:
                return value
            stack[-1][2].append(value)


# ---------------------------------------------------------------------------
# Reading and writing bracket strings
# ---------------------------------------------------------------------------


def _where(text, token_index, name):
    """Human-readable location of the token_index-th token of text."""
    for i, m in enumerate(_TOKEN.finditer(text)):
        if i == token_index:
            offset = m.start()
            break
    else:
        offset = len(text)
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    src = f"{name}, " if name else ""
    return f"{src}line {line}, column {column} (character offset {offset})"


def read_trees(text, *, name=None):
    """Read every tree of a Penn Treebank bracket string.

    Parameters
    ----------
    text : str
        Zero or more bracketed trees, e.g. ``"( (S (NP (NNP John)) (VP (VBZ runs))) )"``.
        Whitespace (including newlines) between tokens is free.  An outer
        bracket without a label around a single tree (the Penn Treebank file
        convention) is removed: the returned tree is its child.
    name : str, default=None
        Name of the source (e.g. a file name), used in error messages.

    Returns
    -------
    trees : list of Tree

    Raises
    ------
    ValueError
        On malformed input, naming the line and column: unbalanced brackets,
        an empty bracket ``()``, a constituent without label or without
        children, a word next to other children (every word must have its own
        part-of-speech bracket), text outside brackets, an unlabelled outer
        bracket around anything but exactly one tree.
    """
    if not isinstance(text, str):
        raise TypeError(f"read_trees expects a str, got {type(text).__name__}.")
    trees = []
    stack = []  # open nodes
    opened = []  # token index of each open node's "("

    def fail(message, index):
        raise ValueError(f"Malformed bracketed tree at {_where(text, index, name)}: {message}")

    for i, (pre_label, pre_word, label, close, word) in enumerate(_TOKEN.findall(text)):
        if pre_label:
            # "(TAG word)": a preterminal in one token, the common case
            node = Tree(pre_label, (pre_word,))
            if stack:
                stack[-1].children.append(node)
            else:
                trees.append(node)
        elif close:
            if not stack:
                fail("unbalanced brackets: ')' without a matching '('", i)
            node = stack.pop()
            start = opened.pop()
            children = node.children
            if not children:
                fail("empty bracket '()'" if not node.label
                     else f"constituent {node.label!r} has no children", start)
            if len(children) > 1:
                for c in children:
                    if isinstance(c, str):
                        fail(
                            f"word {c!r} in constituent {node.label!r} next to other "
                            "children; every word needs its own part-of-speech bracket",
                            start,
                        )
            if stack:
                if not node.label:
                    fail("constituent without a label", start)
                stack[-1].children.append(node)
            else:
                if not node.label:
                    if len(children) != 1 or isinstance(children[0], str):
                        fail(
                            "an unlabelled outer bracket must hold exactly one tree",
                            start,
                        )
                    node = children[0]
                trees.append(node)
        elif word:
            if not stack:
                fail(f"text {word!r} outside any bracket", i)
            stack[-1].children.append(word)
        else:
            stack.append(Tree(label))
            opened.append(i)
    if stack:
        fail("unbalanced brackets: '(' is never closed", opened[-1])
    return trees


def read_ptb(path, encoding="utf-8"):
    """Read all trees of a Penn Treebank ``.mrg`` file.

    Parameters
    ----------
    path : str or path-like
    encoding : str, default="utf-8"

    Returns
    -------
    trees : list of Tree

    Raises
    ------
    ValueError
        If the file is not valid ``encoding`` (the message names the file and
        line) or holds a malformed tree (see :func:`read_trees`).
    """
    name = repr(os.fsdecode(os.fspath(path)))
    try:
        with open(path, encoding=encoding) as f:
            text = f.read()
    except UnicodeDecodeError:
        lineno, exc = locate_decode_error(path, encoding)
        raise decode_error(
            name, encoding, lineno, exc,
            hint="Pass the file's encoding, e.g. read_ptb(..., encoding='latin-1').",
        ) from None
    return read_trees(text, name=name)


def write_ptb(trees, path_or_file, encoding="utf-8"):
    """Write trees one per line in bracket format (readable by :func:`read_ptb`
    and by EVALB).

    Parameters
    ----------
    trees : iterable of Tree
    path_or_file : str, path-like or writable text file object
    encoding : str, default="utf-8"
        Used only when a path is given.
    """
    lines = []
    for i, t in enumerate(trees):
        if not isinstance(t, Tree):
            raise TypeError(f"write_ptb: item {i} is a {type(t).__name__}, not a Tree.")
        lines.append(t.to_string() + "\n")
    if hasattr(path_or_file, "write"):
        path_or_file.writelines(lines)
    else:
        with open(path_or_file, "w", encoding=encoding) as f:
            f.writelines(lines)


# ---------------------------------------------------------------------------
# Preprocessing
# ---------------------------------------------------------------------------

_FUNCTION_TAG = re.compile(r"[-=]")


def strip_function_tags(label):
    """``NP-SBJ-1`` -> ``NP``, ``NP=2`` -> ``NP``, ``PP-LOC-CLR`` -> ``PP``.

    The label is cut at its first ``-`` or ``=`` after the first character.
    Labels that begin and end with ``-`` (``-NONE-``, ``-LRB-``, ``-RRB-``)
    are returned unchanged.
    """
    if len(label) > 1 and label[0] == "-" and label[-1] == "-":
        return label
    m = _FUNCTION_TAG.search(label, 1)
    return label[: m.start()] if m else label


def _escape_unary(label):
    return label.replace("\\", "\\\\").replace("+", "\\+")


_UNARY_SPLIT = re.compile(r"(?<!\\)((?:\\\\)*)\+")
_UNESCAPE = re.compile(r"\\(.)", re.S)


def _unescape(label):
    return _UNESCAPE.sub(r"\1", label) if "\\" in label else label


def preprocess(tree, *, strip_functions=True, remove_empty=True, collapse_unary=False,
               remove_self_unary=False):
    """The standard treebank preprocessing; returns a new tree.

    Parameters
    ----------
    tree : Tree
    strip_functions : bool, default=True
        Remove function tags and indices from every label
        (:func:`strip_function_tags`).
    remove_empty : bool, default=True
        Remove ``-NONE-`` preterminals (null elements, traces) and every
        constituent left without children.
    collapse_unary : bool, default=False
        Join each chain of phrasal nodes with a single phrasal child into one
        node whose label joins the chain's labels with ``"+"`` (``S`` over
        ``VP`` becomes ``S+VP``).  A phrasal node over a single preterminal is
        kept (the part-of-speech tag is never joined).  When set, ``+`` and
        ``\\`` inside phrasal labels are escaped with a backslash so that
        :func:`expand_unary` restores the chains exactly; for Penn Treebank
        labels this changes nothing.
    remove_self_unary : bool, default=False
        Merge a phrasal node whose only child is a phrasal node with the same
        label (``NP`` over ``NP``, left by removing a null element) into one
        node.  A parser whose grammar has no unary self-loops (see
        :class:`~sklstruct.parsing.Grammar`) cannot produce such chains, so
        training trees for ``vertical=1`` without ``collapse_unary`` need it.
        Applied after function-tag stripping and before ``collapse_unary``.

    Returns
    -------
    tree : Tree

    Raises
    ------
    ValueError
        If nothing but empty elements is left.
    """
    if not isinstance(tree, Tree):
        raise TypeError(f"preprocess expects a Tree, got {type(tree).__name__}.")

    def build(node, kids):
        label = node.label
        if remove_empty:
            if label == "-NONE-" and len(kids) == 1 and isinstance(kids[0], str):
                return None
            kids = [k for k in kids if k is not None]
            if not kids:
                return None
        is_pre = len(kids) == 1 and isinstance(kids[0], str)
        if strip_functions:
            label = strip_function_tags(label)
        if is_pre:
            return Tree(label, kids)
        if collapse_unary:
            label = _escape_unary(label)
        if len(kids) == 1 and not kids[0].is_preterminal():
            child = kids[0]
            if remove_self_unary and (
                _split_unary(child.label)[0] if collapse_unary else child.label
            ) == label:
                return child
            if collapse_unary:
                return Tree(label + "+" + child.label, child.children)
        return Tree(label, kids)

    out = _fold(tree, build)
    if out is None:
        raise ValueError(
            "The tree has no words left after removing empty (-NONE-) elements: "
            f"{tree.to_string()[:200]}"
        )
    return out


def expand_unary(tree):
    """Undo ``preprocess(..., collapse_unary=True)``: split ``S+VP`` into
    ``S`` over ``VP`` and unescape the labels.  Returns a new tree."""

    def build(node, kids):
        if len(kids) == 1 and isinstance(kids[0], str):
            return Tree(node.label, kids)
        parts = [_unescape(p) for p in _split_unary(node.label)]
        out = Tree(parts[-1], kids)
        for label in reversed(parts[:-1]):
            out = Tree(label, [out])
        return out

    return _fold(tree, build)


def _split_unary(label):
    if "+" not in label:
        return [label]
    if "\\" not in label:
        return label.split("+")
    parts, last = [], 0
    for m in _UNARY_SPLIT.finditer(label):
        cut = m.end() - 1
        parts.append(label[last:cut])
        last = cut + 1
    parts.append(label[last:])
    return parts

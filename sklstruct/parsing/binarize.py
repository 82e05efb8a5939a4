"""Tree binarization (left/right factorization, horizontal and vertical
Markovization) and its exact inverse.

CKY parsing runs in time cubic in the sentence length only for a grammar whose
rules have at most two children, so trees are binarized before a grammar is
read off them (Bauer et al. 2017, section 2.2 and Figure 1; Klein and
Manning 2003 for the Markovization terminology):

* **factorization**: a node ``A -> B1 ... Bn`` with ``n > 2`` children is
  replaced by a chain of *artificial* nodes, to the right
  (``A -> B1 @A|<B2-...-Bn>``, ``@A|<B2-...-Bn> -> B2 @A|<B3-...-Bn>``, ...)
  or to the left (``A -> @A|<B1-...-Bn-1> Bn``, ...).  Following Bauer et al. 2017
  (Figure 1: "A|C-D, A before | denotes the parent in the original tree and
  C-D the children nodes of A which are spanned by the current artificial
  constituent"), an artificial label names the original parent and the
  children it spans.
* **horizontal Markovization** of order ``h`` keeps only ``h`` of those
  children in the label: the first ``h`` for right factorization, the last
  ``h`` for left factorization (the ones next to the sibling already split
  off); ``h=None`` keeps all of them (no information lost, the binarized
  grammar is equivalent to the original one), ``h=0`` keeps none.
* **vertical Markovization** of order ``v`` (parent annotation for ``v=2``)
  appends the labels of the ``v - 1`` nearest original ancestors to every
  phrasal label: ``NP`` under ``S`` becomes ``NP^S``.  The root has no
  ancestor and stays unannotated; part-of-speech tags are never annotated.

Artificial labels start with ``"@"`` (:func:`is_artificial`); annotation is
introduced by ``"^"`` (:func:`base_label` removes it).  So that
:func:`unbinarize` restores **every** tree exactly, labels that already
contain these characters are escaped with a backslash: ``\\`` and ``^`` inside
a label and ``@`` at its start (``A^B`` is written ``A\\^B``); inside
artificial labels the characters ``\\ ^ | < > -`` of the component labels are
escaped, so that different contexts never share a label.  No Penn Treebank
label needs escaping outside artificial labels; inside them only those with
``-`` or ``|`` show escapes (``-LRB-`` appears as ``\\-LRB\\-``).

The loss-augmented inference of Bauer et al. 2017 (eqs. 8-9) counts true and false
positives on the unbinarized tree by ignoring artificial nodes and comparing
:func:`base_label` of the others, exactly what :func:`unbinarize` does to a
binarized tree.
"""
import numbers
import re

from .tree import Tree, _check_tree, _fold, _unescape

__all__ = ["binarize", "unbinarize", "is_artificial", "base_label"]

_ART_SPECIAL = re.compile(r"([\\^|<>\-])")
_ART_SPECIAL_CHARS = frozenset("\\^|<>-")
_BASE = re.compile(r"(?:[^\\^]|\\.)*", re.S)


def _escape(label):
    """Escape a real (non-artificial) label: ``\\`` and ``^`` anywhere, ``@``
    at the start."""
    if "\\" in label or "^" in label:
        label = label.replace("\\", "\\\\").replace("^", "\\^")
    if label[:1] == "@":
        label = "\\" + label
    return label


class _Memo(dict):
    """dict computing missing values with a function (a cache of label
    strings; cleared by its users when it grows past _MEMO_LIMIT)."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def __missing__(self, key):
        value = self[key] = self.fn(key)
        return value


_MEMO_LIMIT = 100_000
_ESCAPED = _Memo(_escape)
_BASE_LABELS = _Memo(lambda label: base_label(label))
_ANNOTATED = _Memo(
    lambda key: _escape(key[0]) + "".join(["^" + _escape(a) for a in key[1]])
)


def _escape_part(label):
    """Escape a component of an artificial label."""
    if _ART_SPECIAL_CHARS.isdisjoint(label):
        return label
    return _ART_SPECIAL.sub(r"\\\1", label)


def is_artificial(label):
    """True for the label of a node introduced by :func:`binarize`."""
    return label[:1] == "@"


def base_label(label):
    """The original label of a node of a binarized tree.

    Removes the parent annotation (``"NP^S"`` -> ``"NP"``) and undoes the
    escaping of :func:`binarize` (``"A\\^B^S"`` -> ``"A^B"``).  An artificial
    label is returned unchanged: callers check :func:`is_artificial` first.
    """
    if label[:1] == "@":
        return label
    if "\\" not in label:
        cut = label.find("^")
        return label if cut < 0 else label[:cut]
    return _unescape(_BASE.match(label).group())


def _check_params(factor, horizontal, vertical):
    if factor not in ("right", "left"):
        raise ValueError(f"factor must be 'right' or 'left', got {factor!r}.")
    if horizontal is not None and (
        not isinstance(horizontal, numbers.Integral) or isinstance(horizontal, bool)
        or horizontal < 0
    ):
        raise ValueError(
            f"horizontal must be None (infinite order) or an int >= 0, got {horizontal!r}."
        )
    if not isinstance(vertical, numbers.Integral) or isinstance(vertical, bool) or vertical < 1:
        raise ValueError(
            f"vertical must be an int >= 1 (1: no parent annotation), got {vertical!r}."
        )


def binarize(tree, factor="right", horizontal=None, vertical=1):
    """Binarize a tree; :func:`unbinarize` is its exact inverse.

    Parameters
    ----------
    tree : Tree
    factor : {"right", "left"}, default="right"
        Direction of the chain of artificial nodes.
    horizontal : int >= 0 or None, default=None
        Order of horizontal Markovization: how many of the spanned children an
        artificial label names (``None``: all of them).
    vertical : int >= 1, default=1
        Order of vertical Markovization: phrasal labels are annotated with the
        labels of their ``vertical - 1`` nearest ancestors (``2``: parent
        annotation, ``NP^S``).

    Returns
    -------
    tree : Tree
        A new tree in which every node has at most two children.  Unary nodes
        are kept (``S -> VP``, ``NP -> NN``).

    Examples
    --------
    >>> t = Tree.fromstring("(S (NP (DT a) (JJ b) (NN c)) (VP (VBZ d)))")
    >>> print(binarize(t))
    (S (NP (DT a) (@NP|<JJ-NN> (JJ b) (NN c))) (VP (VBZ d)))
    >>> print(binarize(t, factor="left", horizontal=1, vertical=2))
    (S (NP^S (@NP^S|<JJ> (DT a) (JJ b)) (NN c)) (VP^S (VBZ d)))
    """
    if not isinstance(tree, Tree):
        raise TypeError(f"binarize expects a Tree, got {type(tree).__name__}.")
    _check_tree(tree)
    _check_params(factor, horizontal, vertical)
    right = factor == "right"
    keep = vertical - 1
    esc = _ESCAPED
    annotated = _ANNOTATED
    kids = tree.children
    if len(kids) == 1 and type(kids[0]) is str:  # a lone preterminal
        return Tree(esc[tree.label], kids)
    # Top down: every output node is created with its final label when its
    # parent is visited (the label depends only on the original node and its
    # ancestors), and its children are filled in when it is popped.
    root = Tree(esc[tree.label])
    stack = [(tree, root, ())]
    while stack:
        node, out, ancestors = stack.pop()
        below = ((node.label,) + ancestors)[:keep] if keep else ()
        built = []
        for kid in node.children:
            if type(kid) is str:
                built.append(kid)
                continue
            grand = kid.children
            if len(grand) == 1 and type(grand[0]) is str:
                new = Tree(esc[kid.label])
                new.children = [grand[0]]
            else:
                new = Tree(annotated[kid.label, below] if below else esc[kid.label])
                stack.append((kid, new, below))
            built.append(new)
        if len(built) <= 2:
            out.children = built
        else:
            _factor(out, node, built, ancestors, right, horizontal)
    if len(esc) > _MEMO_LIMIT or len(annotated) > _MEMO_LIMIT:
        esc.clear()
        annotated.clear()
    return root


def _factor(out, node, kids, ancestors, right, horizontal):
    """Attach ``kids``, the ``n > 2`` binarized children of the original
    ``node``, under ``out`` through a chain of ``n - 2`` artificial nodes."""
    n = len(kids)
    names = [k if type(k) is str else k.label for k in node.children]
    prefix = "@" + _escape_part(node.label) + "".join(
        ["^" + _escape_part(a) for a in ancestors]
    ) + "|<"
    current = out
    for step in range(1, n - 1):
        if right:
            lo = step
            hi = n if horizontal is None else min(n, step + horizontal)
        else:
            hi = n - step
            lo = 0 if horizontal is None else max(0, hi - horizontal)
        art = Tree(prefix + "-".join([_escape_part(x) for x in names[lo:hi]]) + ">")
        if right:
            current.children = [kids[step - 1], art]
        else:
            current.children = [art, kids[n - step]]
        current = art
    current.children = kids[n - 2:] if right else kids[:2]


def unbinarize(tree):
    """Undo :func:`binarize`: splice out artificial nodes, strip annotation.

    Works for every option of :func:`binarize` without being told which was
    used: ``unbinarize(binarize(t, ...)) == t`` exactly.  Also usable on the
    output of a parser whose grammar was read off binarized trees.

    Raises
    ------
    ValueError
        If the root itself is artificial.
    """
    if not isinstance(tree, Tree):
        raise TypeError(f"unbinarize expects a Tree, got {type(tree).__name__}.")
    if tree.label[:1] == "@":
        raise ValueError(f"The root of the tree is an artificial node {tree.label!r}.")
    base = _BASE_LABELS

    def build(node, kids):
        out = Tree(base[node.label])
        out.children = kids
        return out

    out = _fold(tree, build, splice="@")
    if len(base) > _MEMO_LIMIT:
        base.clear()
    return out

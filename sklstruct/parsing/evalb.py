"""PARSEVAL labelled bracket scores, computed as EVALB does with COLLINS.prm.

EVALB (Sekine and Collins, 1997; ``evalb.c``) with its standard parameter
file ``COLLINS.prm`` is the reference scorer of English constituency parsing.
This module reproduces its bracket counts exactly; the rules, with the lines
of ``evalb.c`` / ``COLLINS.prm`` they come from:

1. **Deleted words.**  ``DELETE_LABEL TOP``, ``-NONE-``, ``,``, ``:``,
   ``````, ``''`` and ``.``: "If it is a pre-terminal label, delete the word
   along with the brackets" (COLLINS.prm).  ``read_line`` skips such a
   terminal before numbering words, so the punctuation and null elements are
   not words for the span computation: a bracket's span is the range of the
   *remaining* words it covers, and punctuation at the edge of a constituent
   does not change its span.  The deletion is decided by each tree's own tag
   (``is_deletelabel`` compares the raw tag, ``strcmp``).
2. **Preterminals are not brackets.**  ``read_line`` stores ``(TAG word)`` as
   a terminal, never as a bracket.
3. **Labels.**  ``modify_label`` cuts a bracket label at its first ``-`` or
   ``=`` (``NP-SBJ-1`` -> ``NP``); then ``EQ_LABEL ADVP PRT`` makes ADVP and
   PRT equal (``label_comp``).
4. **Deleted brackets.**  In ``massage_data``, a bracket whose span is empty
   after the deletions ("Zero element", e.g. a constituent of punctuation or
   null elements only) or whose modified label is a ``DELETE_LABEL``
   (``TOP`` anywhere in the tree) is not counted.  In addition, and as agreed
   for :mod:`sklstruct.parsing`, a root bracket labelled ``ROOT`` or with an
   empty label (the outer bracket of treebank files, which EVALB would count
   and trivially match) is not counted either.
5. **Matching.**  ``calc_result`` matches each gold bracket with the first
   unmatched test bracket with the same span and an equal label; because
   label equality is an equivalence, this counts, for every (span, label),
   the minimum of the gold and test multiplicities: duplicate brackets (a
   unary chain ``NP -> NP``) are matched as a multiset.
6. **Sentence status.**  A test sentence without (remaining) words is
   *skipped* (``wn2 == 0``); a sentence whose numbers of remaining words
   differ (the trees disagree on which words are punctuation) or whose words
   differ is an *error*; EVALB leaves both out of every total.  Here, trees
   whose words (other than ``-NONE-`` null elements, which EVALB deletes)
   differ in number or in spelling are a caller's mistake and raise
   ``ValueError`` naming the sentence; disagreeing punctuation tags are
   counted as error sentences as EVALB does.  So gold trees can be given raw,
   with null elements and function tags, exactly as to EVALB.
7. **Totals** (``print_total``): recall = matched / gold brackets,
   precision = matched / test brackets, F1 = 2PR / (P + R) (0 here when
   P + R = 0, where EVALB prints ``nan``), complete match = fraction of valid
   sentences with ``matched == gold == test``, tagging accuracy over the
   remaining words.  The ``len<=40`` section of EVALB's report (sentence
   length = words other than ``-NONE-``, ``DELETE_LABEL_FOR_LENGTH``) is
   ``parseval(..., max_length=40)``.

Bauer, Nakajima, Goernitz and Mueller ("Optimizing for Measure of Performance
in Max-Margin Parsing", 2017) report precision, recall, F1 and 0/1 accuracy
(complete match) of this kind on the unbinarized trees (section 3, Table 1).
"""
from collections import Counter

from .tree import Tree, _check_tree

__all__ = ["bracket_counts", "parseval", "parseval_f1", "parseval_scorer"]

#: COLLINS.prm ``DELETE_LABEL`` lines.
DELETE_LABELS = frozenset(["TOP", "-NONE-", ",", ":", "``", "''", "."])
#: COLLINS.prm ``DELETE_LABEL_FOR_LENGTH`` lines.
DELETE_LABELS_FOR_LENGTH = frozenset(["-NONE-"])
#: COLLINS.prm ``EQ_LABEL ADVP PRT``, as a map to one representative.
EQ_LABELS = {"PRT": "ADVP"}
#: Root labels whose bracket is not counted (beyond ``TOP``, deleted by EVALB).
ROOT_LABELS = frozenset(["", "ROOT"])


def _modify_label(label):
    """evalb.c ``modify_label``: cut at the first ``-`` or ``=``."""
    for i, ch in enumerate(label):
        if ch == "-" or ch == "=":
            return label[:i]
    return label


def _tagged_words(tree):
    """``[(word, tag or None), ...]`` left to right (``None`` for a word that
    is not under a preterminal)."""
    out = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if type(node) is tuple:
            out.append(node)
        elif len(node.children) == 1 and type(node.children[0]) is str:
            out.append((node.children[0], node.label))
        else:
            stack.extend(
                (c, None) if type(c) is str else c for c in reversed(node.children)
            )
    return out


class _Sentence:
    """What EVALB reads from one tree: remaining words and tags, the length
    for the cut-off, and the multiset of counted brackets."""

    __slots__ = ("words", "tags", "length", "brackets", "all_words")

    def __init__(self, tree):
        _check_tree(tree)
        tagged = _tagged_words(tree)
        self.all_words = [w for w, tag in tagged if tag != "-NONE-"]
        keep = [tag not in DELETE_LABELS for _, tag in tagged]
        self.words = [w for (w, _), k in zip(tagged, keep) if k]
        self.tags = [t for (_, t), k in zip(tagged, keep) if k]
        self.length = sum(tag not in DELETE_LABELS_FOR_LENGTH for _, tag in tagged)
        prefix = [0]
        for k in keep:
            prefix.append(prefix[-1] + k)
        brackets = Counter()
        for i, (label, start, end) in enumerate(tree.constituents()):
            a, b = prefix[start], prefix[end]
            if a == b:
                continue
            if i == 0 and label in ROOT_LABELS:
                continue
            label = _modify_label(label)
            if label in DELETE_LABELS:
                continue
            brackets[a, b, EQ_LABELS.get(label, label)] += 1
        self.brackets = brackets


def _check_pair(gold, pred, where):
    for name, t in (("gold", gold), ("predicted", pred)):
        if not isinstance(t, Tree):
            raise TypeError(f"{where}: the {name} tree is a {type(t).__name__}, not a Tree.")
    g, p = _Sentence(gold), _Sentence(pred)
    if len(g.all_words) != len(p.all_words):
        raise ValueError(
            f"{where}: the gold tree has {len(g.all_words)} words but the predicted tree "
            f"has {len(p.all_words)}; both trees must be over the same sentence."
        )
    if g.all_words != p.all_words:
        i = next(i for i, (a, b) in enumerate(zip(g.all_words, p.all_words)) if a != b)
        raise ValueError(
            f"{where}: word {i} is {g.all_words[i]!r} in the gold tree but "
            f"{p.all_words[i]!r} in the predicted tree; both trees must be over the same "
            "sentence."
        )
    return g, p


def _status(g, p):
    """EVALB's sentence status: 0 valid, 1 error, 2 skip."""
    if not p.words:
        return 2
    if len(g.words) != len(p.words):
        return 1
    return 0


def _matched(g, p):
    gb, pb = g.brackets, p.brackets
    return sum(min(n, pb[key]) for key, n in gb.items() if key in pb)


def _counts(g, p):
    """(matched, gold, predicted) brackets of a sentence EVALB scores."""
    return _matched(g, p), sum(g.brackets.values()), sum(p.brackets.values())


def bracket_counts(gold, pred):
    """Matched, gold and predicted bracket counts of one sentence (EVALB).

    Parameters
    ----------
    gold, pred : Tree
        Trees over the same words (``-NONE-`` elements aside).

    Returns
    -------
    matched, n_gold, n_pred : int

    Raises
    ------
    ValueError
        If the trees' words differ (in number or spelling), or if EVALB would
        not score the sentence because the trees disagree on which words are
        punctuation (an "error" sentence) or the prediction has no words left
        after deleting punctuation (a "skip").

    Examples
    --------
    >>> gold = Tree.fromstring("(S (NP (NNP John)) (VP (VBZ runs) (ADVP (RB fast))) (. .))")
    >>> pred = Tree.fromstring("(S (NP (NNP John)) (VP (VBZ runs) (PRT (RB fast)) (. .)))")
    >>> bracket_counts(gold, pred)
    (4, 4, 4)
    """
    g, p = _check_pair(gold, pred, "bracket_counts")
    status = _status(g, p)
    if status == 1:
        raise ValueError(
            f"EVALB would count this sentence as an error: {len(g.words)} words remain in "
            f"the gold tree and {len(p.words)} in the predicted tree after deleting "
            "punctuation (the trees disagree on punctuation tags)."
        )
    if status == 2:
        raise ValueError(
            "EVALB would skip this sentence: no words remain in the predicted tree after "
            "deleting punctuation."
        )
    return _counts(g, p)


def parseval(gold_trees, pred_trees, *, max_length=None):
    """Corpus-level PARSEVAL scores, as EVALB's summary with COLLINS.prm.

    Parameters
    ----------
    gold_trees, pred_trees : sequence of Tree
        Gold and predicted trees, sentence by sentence, over the same words.
    max_length : int, default=None
        Only score sentences of at most this many words (not counting
        ``-NONE-`` elements), as EVALB's ``len<=40`` section for 40.

    Returns
    -------
    scores : dict
        ``precision``, ``recall``, ``f1``, ``exact_match`` (complete match)
        and ``tagging_accuracy``, fractions in [0, 1]; ``matched``,
        ``n_gold`` and ``n_pred`` brackets; ``n_sentences`` scored, of which
        ``n_valid``, ``n_errors`` (disagreeing punctuation) and ``n_skipped``
        (no words left in the prediction), as EVALB reports them.

    Raises
    ------
    ValueError
        If the two sequences differ in length, or a pair of trees is not over
        the same words (naming the sentence index).
    """
    gold_trees = list(gold_trees)
    pred_trees = list(pred_trees)
    if len(gold_trees) != len(pred_trees):
        raise ValueError(
            f"parseval: {len(gold_trees)} gold trees but {len(pred_trees)} predicted trees."
        )
    if max_length is not None and (not isinstance(max_length, int) or max_length < 0):
        raise ValueError(f"max_length must be None or an int >= 0, got {max_length!r}.")
    matched = n_gold = n_pred = 0
    n_sent = n_valid = n_err = n_skip = complete = words = tags_ok = 0
    for i, (gold, pred) in enumerate(zip(gold_trees, pred_trees)):
        g, p = _check_pair(gold, pred, f"sentence {i}")
        if max_length is not None and g.length > max_length:
            continue
        n_sent += 1
        status = _status(g, p)
        if status:
            n_err += status == 1
            n_skip += status == 2
            continue
        n_valid += 1
        m, ng, npred = _counts(g, p)
        matched += m
        n_gold += ng
        n_pred += npred
        complete += m == ng == npred
        words += len(g.words)
        tags_ok += sum(
            EQ_LABELS.get(a, a) == EQ_LABELS.get(b, b) for a, b in zip(g.tags, p.tags)
        )
    precision = matched / n_pred if n_pred else 0.0
    recall = matched / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "exact_match": complete / n_valid if n_valid else 0.0,
        "tagging_accuracy": tags_ok / words if words else 0.0,
        "matched": matched,
        "n_gold": n_gold,
        "n_pred": n_pred,
        "n_sentences": n_sent,
        "n_valid": n_valid,
        "n_errors": n_err,
        "n_skipped": n_skip,
    }


def parseval_f1(gold_trees, pred_trees):
    """Labelled bracket F1 (EVALB, COLLINS.prm) of predicted trees, in [0, 1].

    A ``score_func`` for :func:`sklearn.metrics.make_scorer`; see
    :data:`parseval_scorer`.
    """
    return parseval(gold_trees, pred_trees)["f1"]


def _make_scorer():
    from sklearn.metrics import make_scorer

    return make_scorer(parseval_f1)


#: ``make_scorer(parseval_f1)``: pass as ``scoring=`` to ``GridSearchCV`` or
#: ``cross_val_score`` with a parser whose ``predict`` returns trees.
parseval_scorer = _make_scorer()

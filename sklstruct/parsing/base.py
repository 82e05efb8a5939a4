"""What the parsers share (:class:`BaseParser`): input validation,
preprocessing, binarization, grammar extraction, CKY prediction and PARSEVAL
scoring; the max-margin :class:`~sklstruct.parsing.F1MaxMarginParser` and the
maximum-likelihood :class:`~sklstruct.parsing.PCFGParser` build on it."""
import warnings
from collections.abc import Mapping
from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.exceptions import NotFittedError
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._publish import reads_model
from .._validation import (InputTypeError, check_sentence, check_sentence_list, describe,
                           sentence_tags)
from .binarize import binarize, unbinarize
from .evalb import EQ_LABELS, parseval_f1
from .model import CompiledGrammar
from .grammar import Grammar
from .tree import Tree, _check_tree, preprocess

#: Labels of a root bracket that is not counted (EVALB's COLLINS.prm).
_ROOT_LABELS = ("TOP", "ROOT", "")

#: Largest ``max_unary_chain``: the unary chains of a grammar are enumerated
#: up to this length, and their number and size grow with it (a training tree
#: with a chain of 1000 distinct labels would take cubic time and memory).
#: Penn Treebank trees need at most a few.
MAX_UNARY_CHAIN = 50


def check_sentences(X, name="X"):
    """Validate parser input: a list of non-empty token sequences, tokens all
    ``str`` or all ``(word, tag)`` pairs.  Returns (list of word lists,
    list of token lists, tagged flag)."""
    if isinstance(X, Tree):
        raise InputTypeError(f"{name}: expected a list of token sequences; got a Tree")
    X = check_sentence_list(X, name, "token sequences", item_ndim=1)
    words, tokens, tagged = [], [], None
    for i, sent in enumerate(X):
        if isinstance(sent, Tree):
            raise InputTypeError(f"{name}[{i}]: expected a sequence of tokens; got a Tree")
        toks = check_sentence(sent, f"{name}[{i}]", "tokens")
        for t, tok in enumerate(toks):
            is_pair = (isinstance(tok, (tuple, list)) and len(tok) == 2
                       and all(isinstance(s, str) for s in tok))
            if not (isinstance(tok, str) or is_pair):
                raise InputTypeError(f"{name}[{i}][{t}]: must be a word (str) or a (word, tag) "
                                     f"pair; got {describe(tok)}")
            if tagged is None:
                tagged = is_pair
            elif tagged != is_pair:
                raise ValueError(f"{name}[{i}][{t}]: mixing words and (word, tag) pairs")
        tokens.append([tuple(t) if tagged else t for t in toks])
        words.append([t[0] if tagged else t for t in toks])
    return words, tokens, tagged


def check_tree(tree, where):
    """Raise ValueError (InputTypeError for a non-Tree) naming ``where`` unless
    ``tree`` is a well-formed ``Tree`` (:func:`.tree._check_tree`: str labels
    and words, no node containing itself; any depth)."""
    if not isinstance(tree, Tree):
        raise InputTypeError(f"{where}: expected a Tree; got {type(tree).__name__}")
    try:
        _check_tree(tree)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


def _is_fitted(estimator):
    """scikit-learn's fitted check; an object it cannot inspect (not a
    scikit-learn estimator) counts as unfitted."""
    try:
        check_is_fitted(estimator)
    except (NotFittedError, AttributeError, TypeError):
        return False
    return True


def _int_tree(tree, index):
    """A binarized ``Tree`` as an integer tree of :mod:`.features`.  Iterative
    (a binarized tree over n tokens can be n levels deep): nodes are visited
    depth first, left to right, so preterminals get positions 0, 1, ..."""
    top, pos = [], 0
    stack = [(tree, top)]
    while stack:
        node, siblings = stack.pop()
        if node.is_preterminal():
            siblings.append((index[node.label], pos))
            pos += 1
        else:
            kids = []
            siblings.append((index[node.label], kids))
            stack.extend((k, kids) for k in reversed(node.children))
    return top[0]


def _labelled_tree(int_tree, symbols, words):
    """An integer tree back to a (binarized) ``Tree`` over ``words`` (iterative)."""
    top = Tree("", [])
    stack = [(int_tree, top)]
    while stack:
        (sym, kids), parent = stack.pop()
        if isinstance(kids, (int, np.integer)):
            parent.children.append(Tree(symbols[sym], [words[kids]]))
        else:
            node = Tree(symbols[sym], [])
            parent.children.append(node)
            stack.extend((k, node) for k in reversed(kids))
    return top.children[0]


def _evalb_labels(grammar):
    """How the ``"f1"`` loss counts the brackets of the grammar's symbols, as
    EVALB (``COLLINS.prm``) does: the base label of every symbol, with the
    labels EVALB takes as equal merged (``EQ_LABEL ADVP PRT``), and which
    symbols count (not a root labelled TOP / ROOT / "").  EVALB also leaves
    punctuation out of spans; the loss does not (see
    :class:`~sklstruct.parsing.F1MaxMarginParser`, Notes)."""
    base = np.asarray(grammar.base, dtype=np.int64).copy()
    labels = grammar.base_labels
    where = {b: k for k, b in enumerate(labels)}
    merged = {k: where[EQ_LABELS[b]] for k, b in enumerate(labels)
              if b in EQ_LABELS and EQ_LABELS[b] in where}
    for s, b in enumerate(base):
        if b in merged:
            base[s] = merged[b]
    counted = base >= 0
    for s, b in enumerate(grammar.base):
        if b >= 0 and labels[b] in _ROOT_LABELS:
            counted[s] = False
    return base, counted


def _max_chain(int_trees):
    """Longest run of unary rules over one span in the training trees."""
    best = 0
    stack = [(t, 0) for t in int_trees]
    while stack:
        (sym, kids), run = stack.pop()
        if isinstance(kids, (int, np.integer)):
            continue
        if len(kids) == 1:
            best = max(best, run + 1)
            stack.append((kids[0], run + 1))
        else:
            stack.extend((k, 0) for k in kids)
    return best


class BaseParser(BaseEstimator):
    """Shared machinery of the parsers (not an estimator on its own).

    Subclasses implement ``fit`` (``_prepare`` builds the grammar and the
    per-sentence data) and ``_lexical_scores(tokens_list)`` (an ``(n_tokens,
    n_tags)`` array per sentence); they may override ``_rule_scores`` (the
    rule and root scores, default ``w_binary_``, ``w_unary_``, ``w_root_``)
    and ``_token_scores`` (lexical and anchored scores per sentence, default
    ``_lexical_scores`` and no anchored scores).
    """

    _parameter_constraints = {
        "factor": [StrOptions({"right", "left"})],
        "horizontal": [Interval(Integral, 0, None, closed="left"), None],
        "vertical": [Interval(Integral, 1, None, closed="left")],
        "max_unary_chain": [Interval(Integral, 0, MAX_UNARY_CHAIN, closed="both"), None],
        "max_length": [Interval(Integral, 1, 32000, closed="both")],
        "tagger": [HasMethods(["fit", "predict"]), None],
    }

    def __sklearn_tags__(self):
        # X is a list of sentences (words, or (word, tag) pairs), y a list of
        # trees: no 2-D array in, strings, a target required
        return sentence_tags(super().__sklearn_tags__(), string=True)

    # -- preprocessing ------------------------------------------------------

    @staticmethod
    def _preprocess(tree, i, name="y", remove_self_unary=True):
        check_tree(tree, f"{name}[{i}]")
        try:
            return preprocess(tree, strip_functions=True, remove_empty=True,
                              remove_self_unary=remove_self_unary)
        except ValueError as exc:
            raise ValueError(f"{name}[{i}]: {exc}") from None

    def _check_length(self, words, name="X"):
        for i, w in enumerate(words):
            if len(w) > self.max_length:
                raise ValueError(f"{name}[{i}]: has {len(w)} tokens, more than max_length="
                                 f"{self.max_length}; raise max_length to parse it")

    def _prepare(self, X, y):
        """Validate, preprocess, binarize; build the grammar.  Returns a dict
        of per-sentence data."""
        words, tokens, tagged = check_sentences(X)
        if (isinstance(y, (str, Tree, Mapping)) or not hasattr(y, "__len__")
                or len(y) != len(words)):
            raise ValueError(f"y must be a list of {len(words)} trees, one per sentence of X")
        self._check_length(words)
        trees = [self._preprocess(t, i) for i, t in enumerate(y)]
        for i, (t, w) in enumerate(zip(trees, words)):
            if t.leaves() != w:
                raise ValueError(f"y[{i}]: the tree's leaves {t.leaves()[:8]}... do not match "
                                 f"the words of X[{i}] {w[:8]}...")
        if self.tagger is not None:
            if tagged:
                raise ValueError("with a tagger, X must hold words, not (word, tag) pairs")
            # train on the treebank's tags; parse with the tagger's
            tags = [[tag for _, tag in t.pos()] for t in trees]
            self.tagger_ = self.tagger
            if not _is_fitted(self.tagger):
                self.tagger_ = clone(self.tagger, safe=False).fit(words, tags)
            tokens = [list(zip(w, tg)) for w, tg in zip(words, tags)]
            tagged = True
        else:
            self.tagger_ = None
        btrees = [binarize(t, factor=self.factor, horizontal=self.horizontal,
                           vertical=self.vertical) for t in trees]
        grammar = Grammar.from_trees(btrees)
        itrees = [_int_tree(b, grammar.index) for b in btrees]
        chains = [_max_chain([t]) for t in itrees]
        needed = max(chains)
        if self.max_unary_chain is None and needed > MAX_UNARY_CHAIN:
            i = int(np.argmax(chains))
            raise ValueError(f"y[{i}]: has a chain of {needed} unary rules over one span; "
                             f"the parser supports at most {MAX_UNARY_CHAIN} (set "
                             f"max_unary_chain <= {MAX_UNARY_CHAIN} to train on it with "
                             "shorter chains, or fix the tree)")
        K = needed if self.max_unary_chain is None else self.max_unary_chain
        if K < needed:
            warnings.warn(f"max_unary_chain={K} is below the longest unary chain of the "
                          f"training trees ({needed}): trees with longer chains cannot be "
                          "predicted, and sentences whose every tree needs one get the flat "
                          "fallback tree", UserWarning, stacklevel=3)
        base, counted = _evalb_labels(grammar)
        self.grammar_ = grammar
        self.compiled_ = CompiledGrammar(len(grammar.symbols), grammar.binary, grammar.unary,
                                         grammar.roots, grammar.preterminals, base, K,
                                         counted=counted)
        self.max_unary_chain_ = K
        self.tagged_ = tagged
        gold = [self.compiled_.decompose(t, len(w)) for t, w in zip(itrees, words)]
        # the most frequent root label, for the documented fallback
        roots, counts = np.unique([g["root"] for g in gold], return_counts=True)
        self.fallback_root_ = grammar.symbols[roots[np.argmax(counts)]]
        return {"words": words, "tokens": tokens, "trees": trees, "gold": gold}

    # -- prediction -----------------------------------------------------------

    def _to_tree(self, res, lex, words):
        """Kernel result -> unbinarized Tree; the fallback when no parse."""
        if res is None:
            tags = [self.grammar_.symbols[t]
                    for t in self.compiled_.preterminals[np.argmax(lex, axis=1)]]
            return Tree(self.fallback_root_, [Tree(t, [w]) for t, w in zip(tags, words)])
        return unbinarize(_labelled_tree(res["tree"], self.grammar_.symbols, words))

    @reads_model
    def predict(self, X):
        """Parse sentences.

        Parameters
        ----------
        X : list of token sequences
            Words, or ``(word, tag)`` pairs if the parser was trained on them.

        Returns
        -------
        trees : list of Tree
            The best trees (eq. 1), unbinarized, with the words as leaves.
            If the grammar derives no tree of a sentence's length from a
            root symbol (a length never seen in training, or a
            ``max_unary_chain`` below what the training trees need), the
            sentence gets a flat tree: the most frequent root label over the
            best-scoring POS tag of every word.
        """
        check_is_fitted(self, "w_binary_")
        words, tokens, tagged = check_sentences(X)
        tokens, tagged = self._tag(words, tokens, tagged)
        if tagged != self.tagged_:
            raise ValueError("X must hold " + ("(word, tag) pairs" if self.tagged_ else "words")
                             + " as in fit")
        self._check_length(words)
        w_binary, w_unary, w_root = self._rule_scores()
        w_chain = self.compiled_.chain_weights(w_unary)
        out = []
        for (lex, anchored, retry), w in zip(self._token_scores(tokens), words):
            res = self.compiled_.decode(lex, w_binary, w_chain, w_root, **anchored)
            if res is None and retry is not None:
                lex = retry
                res = self.compiled_.decode(lex, w_binary, w_chain, w_root, **anchored)
            out.append(self._to_tree(res, lex, w))
        return out

    def _tag(self, words, tokens, tagged):
        """With a tagger, (word, predicted tag) pairs for words-only input."""
        if getattr(self, "tagger_", None) is None:
            return tokens, tagged
        if tagged:
            raise ValueError("this parser tags its input with its tagger: X must hold words, "
                             "not (word, tag) pairs")
        if not words:
            return tokens, True
        tags = self.tagger_.predict(words)
        if len(tags) != len(words) or any(len(t) != len(w) for t, w in zip(tags, words)):
            raise ValueError("the tagger returned tag sequences that do not match the sentences")
        return [list(zip(w, map(str, t))) for w, t in zip(words, tags)], True

    def _rule_scores(self):
        """Scores of the binary rules, unary rules and root symbols."""
        return self.w_binary_, self.w_unary_, self.w_root_

    def _token_scores(self, tokens_list):
        """Per sentence: the lexical scores, the anchored scores (a dict of
        ``span`` and ``split`` arguments of :meth:`CompiledGrammar.decode`;
        empty: the model has none), and the lexical scores to parse with if
        no tree exists under the first ones (None: no second attempt)."""
        return [(lex, {}, None) for lex in self._lexical_scores(tokens_list)]

    @reads_model
    def score(self, X, y):
        """Labelled-bracket F1 (PARSEVAL with EVALB's ``COLLINS.prm`` rules,
        :func:`~sklstruct.parsing.parseval_f1`) of the predictions against the
        gold trees ``y``, which are preprocessed for evaluation: function tags
        and empty elements removed (X-over-X unaries are kept: EVALB counts
        both brackets)."""
        words = check_sentences(X)[0]
        if (isinstance(y, (str, Tree, Mapping)) or not hasattr(y, "__len__")
                or len(y) != len(words)):
            raise ValueError(f"y must be a list of {len(words)} trees")
        gold = [self._preprocess(t, i, remove_self_unary=False) for i, t in enumerate(y)]
        for i, (t, w) in enumerate(zip(gold, words)):
            if t.leaves() != w:
                raise ValueError(f"y[{i}]: the tree's leaves {t.leaves()[:8]}... do not match "
                                 f"the words of X[{i}] {w[:8]}...")
        return parseval_f1(gold, self.predict(X))

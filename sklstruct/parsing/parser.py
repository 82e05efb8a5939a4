"""Max-margin constituency parsing optimising F1 on the unbinarized trees
(Bauer, Nakajima, Goernitz and Mueller 2017, "Optimizing for Measure of
Performance in Max-Margin Parsing"; equation numbers below are theirs).

:class:`F1MaxMarginParser` is a structural SVM with slack rescaling (eq. 2)
over a binarized weighted CFG, trained by the n-slack cutting-plane method
with exact loss-augmented CKY (eqs. 3, 5-9) for the loss ``1 - F1`` counted on
the unbinarized trees, or for the baselines of Table 1.  ``BaseParser`` holds
what it shares with the maximum-likelihood :class:`~sklstruct.parsing.PCFGParser`:
input validation, preprocessing, binarization, grammar extraction, CKY
prediction and PARSEVAL scoring.
"""
import time
import warnings
from collections.abc import Mapping
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._validation import (N_JOBS_CONSTRAINT, InputTypeError, check_sentence,
                           check_sentence_list, describe, n_threads, sentence_tags)
from ..features import SequenceVectorizer
from ..qp import WorkingSetQP
from .binarize import binarize, unbinarize
from .evalb import parseval_f1
from .model import LOSSES, CompiledGrammar
from .grammar import Grammar
from .tree import Tree, _check_tree, preprocess

#: Labels of a root bracket that is not counted (EVALB's COLLINS.prm).
_ROOT_LABELS = ("TOP", "ROOT", "")

#: Largest ``max_unary_chain``: the unary chains of a grammar are enumerated
#: up to this length, and their number and size grow with it (a training tree
#: with a chain of 1000 distinct labels would take cubic time and memory).
#: Penn Treebank trees need at most a few.
MAX_UNARY_CHAIN = 50

#: Default word features of the lexical scores (see
#: :class:`~sklstruct.SequenceVectorizer` for the template language).
LEXICAL_FEATURES = ("bias", "word", "lower", "suffix1", "suffix2", "suffix3", "prefix1",
                    "shape", "is_title", "is_upper", "has_digit", "has_hyphen")


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

    Subclasses implement ``_fit_weights(data)`` (set ``w_binary_``,
    ``w_unary_``, ``w_root_``) and ``_lexical_scores(tokens)`` (an
    ``(n_tokens, n_tags)`` array).
    """

    _parameter_constraints = {
        "factor": [StrOptions({"right", "left"})],
        "horizontal": [Interval(Integral, 0, None, closed="left"), None],
        "vertical": [Interval(Integral, 1, None, closed="left")],
        "max_unary_chain": [Interval(Integral, 0, MAX_UNARY_CHAIN, closed="both"), None],
        "max_length": [Interval(Integral, 1, 32000, closed="both")],
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
        base = np.asarray(grammar.base, dtype=np.int64)
        counted = base >= 0
        for s, b in enumerate(base):
            if b >= 0 and grammar.base_labels[b] in _ROOT_LABELS:
                counted[s] = False
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
        if tagged != self.tagged_:
            raise ValueError("X must hold " + ("(word, tag) pairs" if self.tagged_ else "words")
                             + " as in fit")
        self._check_length(words)
        w_chain = self.compiled_.chain_weights(self.w_unary_)
        out = []
        for lex, w in zip(self._lexical_scores(tokens), words):
            res = self.compiled_.decode(lex, self.w_binary_, w_chain, self.w_root_)
            out.append(self._to_tree(res, lex, w))
        return out

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


class F1MaxMarginParser(BaseParser):
    """Structural SVM parser trained for F1 on unbinarized trees (Bauer et al.
    2017 [1]_; equation and section numbers are theirs).

    Model (section 2.1): a tree ``y`` of the binarized grammar read off the
    training trees scores ``w . Psi(x, y)``, the sum of the weights of its
    binary rules, unary rules and root symbol plus lexical scores
    ``v_t . phi(x_i)`` for the POS tag ``t`` of every token ``i`` (``phi``:
    word identity, lower case, prefix/suffixes, shape, flags, the given tag
    with ``(word, tag)`` input; unknown words are scored through their
    spelling, so every tag is possible at every position).  Unary chains of
    at most ``max_unary_chain`` rules sit above each span (see
    :mod:`sklstruct.parsing.model` for the exact hypothesis space).

    Learning (eq. 2, slack rescaling)::

        min_{w, xi >= 0} 1/2 ||w||^2 + C/n sum_i xi_i
        s.t. w.(Psi(x_i, y_i*) - Psi(x_i, y)) >= 1 - xi_i / Delta(y_i*, y)

    by the n-slack cutting-plane method [2]_: every iteration finds for every
    sentence the most violating tree ``argmax_y Delta(y*, y)(1 - w.dPsi)``
    (eq. 3) with exact loss-augmented CKY over (tp, fp) tables (eqs. 5-7),
    adds it to the working set if it violates by more than ``tol``, and
    re-solves the dual QP of the working set
    (:class:`sklstruct.qp.WorkingSetQP`).

    Parameters
    ----------
    C : float, default=1.0
        Regularization constant of eq. 2.
    loss : {"f1", "f1_binarized", "fp", "zero_one"}, default="f1"
        ``Delta`` of eq. 2 (rows of Table 1):

        * ``"f1"``: ``1 - F1`` with true/false positives counted on the
          unbinarized tree (eqs. 4, 8-9): artificial nodes ignored, labels
          compared without annotation; preterminals are not counted, nor a
          root labelled TOP/ROOT/""; ``|y*|`` is the number of counted gold
          brackets (a multiset);
        * ``"f1_binarized"``: ``1 - F1`` over all non-preterminal nodes of the
          binarized trees ("F1 (bin.)");
        * ``"fp"``: the number of false positives among those binarized
          nodes ("#FP (bin.)");
        * ``"zero_one"``: 0 if the binarized tree equals the gold one, else 1
          ("0/1 (bin.)").
    factor : {"right", "left"}, default="right"
    horizontal : int >= 0 or None, default=1
    vertical : int >= 1, default=1
        Binarization (:func:`~sklstruct.parsing.binarize`).
    max_unary_chain : int or None, default=None
        ``K``, the longest chain of unary rules above one span; None: the
        longest seen in the training trees.
    lexical_features : tuple of str or None, default=None
        Templates of the word features (None: :data:`LEXICAL_FEATURES`, plus
        ``"pos"`` with (word, tag) input).
    fixed_tags : bool, default=False
        With ``(word, tag)`` input: True keeps every token's preterminal at
        its given tag (when the grammar has that tag; otherwise every tag
        stays open) in training, loss-augmented inference and prediction,
        which also makes inference cheaper; False uses the given tag only as
        a lexical feature, so the parser may re-tag a token.  No effect on
        words-only input.
    max_iter : int, default=30
        Maximum number of cutting-plane iterations.
    tol : float, default=0.01
        A constraint is added when ``Delta (1 - w.dPsi) > xi_i + tol``; the
        training stops when none is.
    qp_tol : float, default=1e-6
        KKT tolerance of the working-set QP.
    max_length : int, default=100
        Longest sentence accepted by fit and predict (ValueError beyond).
    n_jobs : int or None, default=None
        Threads for the per-sentence loss-augmented inference (the kernel
        releases the GIL); joblib semantics (None: 1 unless in a
        ``joblib.parallel_config(n_jobs=...)`` context; -1: all CPUs), at
        most the number of CPUs and of sentences.  Always threads: a
        process-based joblib backend set by ``joblib.parallel_config`` is
        not used (the work shares the model's memory).
    verbose : int, default=0
        Print one line per iteration: violated constraints, working-set
        size, dual objective, primal upper bound, elapsed time.

    Attributes
    ----------
    grammar_ : Grammar
    compiled_ : CompiledGrammar
    vectorizer_ : SequenceVectorizer
    coef_ : ndarray
        ``w``: binary rules, unary rules, roots, then lexical weights
        (``n_word_features x n_tags``, row major).
    w_binary_, w_unary_, w_root_, w_lex_ : views of ``coef_``
    tag_column_ : dict
        POS tag -> column of ``w_lex_``.
    max_unary_chain_ : int
    n_iter_ : int
    history_ : list of dict
        Per iteration: ``iteration``, ``violated``, ``constraints``, ``dual``,
        ``primal`` (upper bound at the previous ``w``), ``seconds``.
    converged_ : bool

    Notes
    -----
    Loss-augmented inference keeps, per span and symbol, every (tp, fp, score)
    entry not dominated by another (see :mod:`sklstruct._cky`), so its
    cost grows with how many count combinations compete: on the Penn Treebank
    sample (200 training sentences with gold tags, h=1, v=1, trained to
    convergence) one inference with ``loss="f1"`` took about 0.006 / 0.04 /
    0.2 s at 10 / 15 / 20 tokens (``"fp"``: 0.1 s at 20), against at most
    0.003 s for plain CKY (``benchmarks/bench_parser.py``).  ``"zero_one"``
    keeps at most two entries per cell and is nearly as fast as CKY.

    The ``"f1"`` training loss counts brackets as eqs. 8-9 do: every counted
    node of the unbinarized tree, with its span over all tokens and its label
    as it is; ``score`` and :func:`~sklstruct.parsing.parseval` follow EVALB's
    ``COLLINS.prm`` (punctuation left out of spans, ADVP and PRT alike), so
    the two can differ slightly on the same pair of trees.

    References
    ----------
    .. [1] A. Bauer, S. Nakajima, N. Goernitz and K.-R. Mueller, "Optimizing
       for Measure of Performance in Max-Margin Parsing", arXiv:1709.01562,
       2017.
    .. [2] I. Tsochantaridis, T. Joachims, T. Hofmann and Y. Altun, "Large
       Margin Methods for Structured and Interdependent Output Variables",
       Journal of Machine Learning Research 6, 1453-1484, 2005.
    """

    _parameter_constraints = {
        **BaseParser._parameter_constraints,
        "C": [Interval(Real, 0, None, closed="neither")],
        "loss": [StrOptions(set(LOSSES))],
        "lexical_features": [tuple, list, None],
        "fixed_tags": ["boolean"],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "qp_tol": [Interval(Real, 0, None, closed="neither")],
        "n_jobs": N_JOBS_CONSTRAINT,
        "verbose": ["verbose"],
    }

    def __init__(self, C=1.0, loss="f1", *, factor="right", horizontal=1, vertical=1,
                 max_unary_chain=None, lexical_features=None, fixed_tags=False, max_iter=30,
                 tol=0.01,
                 qp_tol=1e-6, max_length=100, n_jobs=None, verbose=0):
        self.C = C
        self.loss = loss
        self.factor = factor
        self.horizontal = horizontal
        self.vertical = vertical
        self.max_unary_chain = max_unary_chain
        self.lexical_features = lexical_features
        self.fixed_tags = fixed_tags
        self.max_iter = max_iter
        self.tol = tol
        self.qp_tol = qp_tol
        self.max_length = max_length
        self.n_jobs = n_jobs
        self.verbose = verbose

    # -- joint feature map ------------------------------------------------------

    def _lexical_scores(self, tokens_list):
        feats = self.vectorizer_.transform(tokens_list)
        out = []
        for f, tokens in zip(feats, tokens_list):
            lex = np.asarray(f @ self.w_lex_)
            mask = self._tag_mask(tokens)
            if mask is not None:
                lex[mask] = -np.inf
            out.append(lex)
        return out

    def _tag_mask(self, tokens):
        """With ``fixed_tags`` and tagged input, the (n_tokens, n_tags) mask of
        the tags other than each token's given one (None otherwise)."""
        if not (self.fixed_tags and self.tagged_):
            return None
        cols = np.array([self.tag_column_.get(t[1], -1) for t in tokens])
        P = len(self.compiled_.preterminals)
        return (cols[:, None] >= 0) & (np.arange(P)[None, :] != cols[:, None])

    def _psi(self, dec, feats):
        """Psi(x, y) of a decomposed tree as a (1, d) CSR row."""
        g = self.compiled_
        R2, R1, R0, P = len(g.binary), len(g.unary), len(g.roots), len(g.preterminals)
        lex0 = R2 + R1 + R0
        cols = g.pos_column[dec["pos"]]
        nnz = np.diff(feats.indptr)
        idx = np.concatenate([
            np.asarray(dec["binary"], dtype=np.int64),
            R2 + np.asarray(dec["unary"], dtype=np.int64),
            [R2 + R1 + g.root_column[dec["root"]]],
            lex0 + feats.indices.astype(np.int64) * P + np.repeat(cols, nnz),
        ])
        data = np.concatenate([np.ones(len(idx) - feats.nnz), feats.data])
        return sp.csr_matrix((data, (np.zeros(len(idx), dtype=np.int64), idx)),
                             shape=(1, self.n_weights_))

    def _set_views(self):
        g = self.compiled_
        R2, R1, R0 = len(g.binary), len(g.unary), len(g.roots)
        w = self.coef_
        self.w_binary_ = w[:R2]
        self.w_unary_ = w[R2:R2 + R1]
        self.w_root_ = w[R2 + R1:R2 + R1 + R0]
        self.w_lex_ = w[R2 + R1 + R0:].reshape(-1, len(g.preterminals))

    # -- training ------------------------------------------------------------------

    def _most_violated(self, i, data, feats, w_chain):
        """Loss-augmented inference for sentence i (eq. 3)."""
        gold = data["gold"][i]
        lex = np.asarray(feats[i] @ self.w_lex_)
        masks = data.get("masks")
        if masks is not None and masks[i] is not None:
            lex[masks[i]] = -np.inf
        const = 1.0 - float((data["psi"][i] @ self.coef_)[0])
        res = self.compiled_.decode(lex, self.w_binary_, w_chain, self.w_root_, loss=self.loss,
                                    gold=gold, const=const)
        if res is None or res["value"] <= 0:
            return i, 0.0, None, 0.0
        dec = {"binary": res["binary_rules"], "unary": res["unary_rules"],
               "root": res["root"], "pos": res["pos"]}
        return i, res["value"], self._psi(dec, feats[i]), res["delta"]

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Train on sentences ``X`` and their trees ``y``.

        Parameters
        ----------
        X : list of token sequences (words or (word, tag) pairs)
        y : list of Tree
            Gold trees; preprocessed (function tags, empty elements and X
            over X unaries removed), binarized, and read into a grammar.

        Returns
        -------
        self
        """
        tic = time.perf_counter()
        data = self._prepare(X, y)
        templates = list(self.lexical_features or LEXICAL_FEATURES)
        if self.tagged_ and self.lexical_features is None:
            templates.append("pos")
        self.vectorizer_ = SequenceVectorizer(templates)
        feats = self.vectorizer_.fit_transform(data["tokens"])
        g = self.compiled_
        n = len(feats)
        self.n_word_features_ = feats[0].shape[1]
        self.n_weights_ = (len(g.binary) + len(g.unary) + len(g.roots)
                           + self.n_word_features_ * len(g.preterminals))
        self.coef_ = np.zeros(self.n_weights_)
        self._set_views()
        data["psi"] = [self._psi(dec, f) for dec, f in zip(data["gold"], feats)]
        self.tag_column_ = {self.grammar_.symbols[s]: k for k, s in enumerate(g.preterminals)}
        data["masks"] = [self._tag_mask(t) for t in data["tokens"]]
        qp = WorkingSetQP(self.n_weights_, self.C / n)
        self.history_ = []
        self.converged_ = False
        n_jobs = n_threads(self.n_jobs, n)
        parallel = Parallel(n_jobs=n_jobs, require="sharedmem")
        for it in range(1, self.max_iter + 1):
            w_chain = g.chain_weights(self.w_unary_)
            found = parallel(delayed(self._most_violated)(i, data, feats, w_chain)
                             for i in range(n))
            xi = np.zeros(n)
            ws = qp.slacks()
            xi[:len(ws)] = ws
            values = np.array([v for _, v, _, _ in found])
            primal = 0.5 * float(self.coef_ @ self.coef_) + self.C / n * values.sum()
            new = [(i, psi, d) for (i, v, psi, d) in found if psi is not None and v > xi[i] + self.tol]
            if new:
                rows = sp.vstack([d * (data["psi"][i] - psi) for i, psi, d in new], format="csr")
                qp.add(rows, [d for _, _, d in new], [i for i, _, _ in new])
                qp.solve(tol=self.qp_tol)
                qp.remove_idle(patience=20)
                self.coef_ = qp.w()
                self._set_views()
            entry = {"iteration": it, "violated": len(new), "constraints": qp.n_constraints,
                     "dual": qp.dual(), "primal": primal, "seconds": time.perf_counter() - tic}
            self.history_.append(entry)
            if self.verbose:
                print(f"[F1MaxMarginParser] iter {it:3d}  violated {len(new):5d}  "
                      f"working set {qp.n_constraints:6d}  dual {entry['dual']:.5g}  "
                      f"primal<= {primal:.5g}  {entry['seconds']:.1f}s", flush=True)
            if not new:
                self.converged_ = True
                break
        self.n_iter_ = it
        return self

"""Max-margin constituency parsing optimising F1 on the unbinarized trees
(Bauer, Nakajima, Goernitz and Mueller 2017, "Optimizing for Measure of
Performance in Max-Margin Parsing"; equation numbers below are theirs).

:class:`F1MaxMarginParser` is a structural SVM with slack rescaling (eq. 2)
over a binarized weighted CFG, trained by the 1-slack or n-slack
cutting-plane method with exact loss-augmented CKY (eqs. 3, 5-9) for the loss
``1 - F1`` counted on the unbinarized trees, or for the baselines of Table 1;
its features add the PCFG's log-probabilities and span features to the
paper's rule counts.  What it shares with the maximum-likelihood
:class:`~sklstruct.parsing.PCFGParser` is in :mod:`sklstruct.parsing.base`.
"""
import time
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from joblib import Parallel, delayed
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from .._validation import N_JOBS_CONSTRAINT, n_threads
from ..features import SequenceVectorizer
from ..qp import WorkingSetQP
from .base import TAG_PENALTY, BaseParser
from .model import LOSSES
from .pcfg import PCFGParser
from .spans import SpanFeatures

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


class F1MaxMarginParser(BaseParser):
    """Structural SVM parser trained for F1 on unbinarized trees.

    Bauer, Nakajima, Görnitz and Müller (2017) [1]_; equation and section
    numbers are theirs.

    Model (section 2.1): a tree ``y`` of the binarized grammar read off the
    training trees scores ``w . Psi(x, y)``, a sum over the tree's nodes, so
    that CKY and loss-augmented CKY stay exact.  ``features`` chooses the
    parts of ``Psi``:

    * ``"rules"`` (the paper's model): counts of the tree's binary rules,
      unary rules and root symbol, plus lexical scores ``v_t . phi(x_i)``
      for the POS tag ``t`` of every token ``i`` (``phi``: word identity,
      lower case, prefix/suffixes, shape, flags, the given tag with
      ``(word, tag)`` input; unknown words are scored through their
      spelling, so every tag is possible at every position);
    * ``"pcfg"``: two real-valued features, the log-probability of the
      tree's rules and root and of its words given their tags under the
      maximum-likelihood :class:`~sklstruct.parsing.PCFGParser` read off the
      same training trees.  Their weights are ``1 + u`` with only ``u``
      regularized, so ``w = 0`` elsewhere is the PCFG itself and small ``C``
      keeps the model near it;
    * ``"spans"``: surface features of the span of every node (first and
      last word, the words just outside, their tags, length bucket, edge
      shapes; rare words replaced by their signature), conjoined with the
      node's label, and of the split point of every binary node (the words
      and tags on either side), conjoined with its parent's label, in the
      style of Hall, Durrett and Klein [3]_
      (:class:`~sklstruct.parsing.spans.SpanFeatures`).

    Unary chains of at most ``max_unary_chain`` rules sit above each span
    (see :mod:`sklstruct.parsing.model` for the exact hypothesis space).

    Learning (eq. 2, slack rescaling)::

        min_{w, xi >= 0} 1/2 ||w - w0||^2 + C/n sum_i xi_i
        s.t. w.(Psi(x_i, y_i*) - Psi(x_i, y)) >= 1 - xi_i / Delta(y_i*, y)

    (``w0``: 1 on the two PCFG features, 0 elsewhere) by cutting planes
    (``solver``): every iteration finds for every sentence the most
    violating tree ``argmax_y Delta(y*, y)(1 - w.dPsi)`` (eq. 3) with exact
    loss-augmented CKY over (tp, fp) tables (eqs. 5-7), adds constraints
    that violate by more than ``tol``, and re-solves the dual QP of the
    working set (:class:`sklstruct.qp.WorkingSetQP`).

    Parameters
    ----------
    C : float, default=10.0
        Regularization constant of eq. 2.  Larger C fits the training trees
        more closely: on the Penn Treebank sample (1,401 training sentences,
        default features, gold tags) dev F1 was 81.1 / 85.3 / 86.5 / 88.5 /
        88.7 at C = 1 / 3 / 10 / 30 / 100, and training took 68 / 85 / 131 /
        160 / 237 s.
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
    features : str or tuple of str, default=("rules", "pcfg", "spans")
        Parts of the joint feature map (see above); ``("rules",)`` is the
        model of the paper's Table 1.
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
        which also makes inference cheaper; a sentence over whose given tags
        the grammar derives no tree is parsed again with every tag allowed,
        tags other than the given ones penalised by ``log(1e-4)``.  False
        uses the given tag only as a lexical feature, so the parser may
        re-tag a token.  No effect on words-only input.
    max_iter : int, default=30
        Maximum number of cutting-plane iterations (inference passes over
        the training set; the 1-slack solver's cached iterations are not
        counted).
    tol : float, default=0.01
        A constraint is added when ``Delta (1 - w.dPsi) > xi_i + tol``; the
        training stops when none is.
    qp_tol : float, default=1e-6
        KKT tolerance of the working-set QP.
    solver : {"1-slack", "n-slack"}, default="1-slack"
        Cutting-plane method.  ``"n-slack"`` [2]_ adds one constraint per
        violating sentence and re-solves the QP over all of them;
        ``"1-slack"`` [4]_ adds one constraint per iteration, the average of
        every sentence's most violating tree, so the working set and its
        Gram matrix stay small, and takes further constraints from a cache
        of the last ten trees found per sentence while they violate by more
        than ``tol`` (no inference; at most 20 such iterations in a row).
        Both stop within ``tol`` of the same optimum of eq. 2.
    tagger : estimator or None, default=None
        Parse raw text: a tagger (any estimator whose ``fit(words, tags)`` and
        ``predict(words)`` take lists of word lists and tag lists, such as
        ``make_pipeline(SequenceVectorizer(...), StructuredPerceptronTagger())``).
        ``fit`` then takes words, trains a clone of the tagger on the
        treebank's POS tags (a fitted tagger is used as it is) and trains the
        parser on ``(word, gold tag)`` pairs; ``predict`` tags the words with
        it and parses the ``(word, predicted tag)`` pairs (with
        ``fixed_tags``, a sentence with no tree under its predicted tags is
        parsed with all tags open).  None: X holds words (the parser tags
        them through its lexical features) or ``(word, tag)`` pairs.
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
    features_ : frozenset of str
        The feature sets used.
    coef_ : ndarray
        ``w``: binary rules, unary rules, roots, lexical weights
        (``n_word_features x n_tags``, row major), the two PCFG weights, then
        the span weights (``n_span_features x n_nonterminals``, row major)
        and the split-point weights (``n_split_features x n_nonterminals``);
        a block is empty when its feature set is not used.
    w_binary_, w_unary_, w_root_, w_lex_, w_pcfg_, w_span_, w_split_ : views of ``coef_``
    pcfg_ : PCFGParser
        The maximum-likelihood PCFG of the ``"pcfg"`` features.
    span_features_ : SpanFeatures
        The span featurizer of the ``"spans"`` features.
    span_symbols_ : ndarray
        Symbols (nonterminals) of the columns of ``w_span_``.
    tag_column_ : dict
        POS tag -> column of ``w_lex_``.
    max_unary_chain_ : int
    n_iter_ : int
    tagger_ : estimator or None
        The fitted tagger (``tagger``), or None.
    history_ : list of dict
        Per iteration: ``iteration``, ``violated``, ``constraints``, ``dual``,
        ``primal`` (upper bound at the previous ``w``; NaN for a cached
        1-slack iteration), ``cached``, ``seconds``.
    converged_ : bool

    Notes
    -----
    Loss-augmented inference keeps, per span and symbol, every (tp, fp, score)
    entry not dominated by another (see :mod:`sklstruct._cky`), so its
    cost grows with how many count combinations compete.  A plain CKY pass
    and a Viterbi outside pass first bound every entry's best completion,
    and entries that can only complete to a tree that violates nothing are
    dropped (exact).  On the Penn Treebank sample (1,401 training sentences
    with gold tags, default features, C=10, trained to convergence) one
    inference with ``loss="f1"`` takes about 0.005 / 0.012 / 0.021 s at 10 /
    15 / 20 tokens, plain CKY 0.003 / 0.007 / 0.012 s
    (``benchmarks/bench_parser.py``).

    With the paper's features alone (``features=("rules",)``) the model
    generalises worse than the PCFG read off the same trees (on the sample,
    67.3 to 79.9 F1 against the PCFG's 79.5 for the four losses): its rule
    weights are shrunk towards 0, where the PCFG charges a rule seen once
    ``log(1 / count(parent))``, so rare rules become cheap (on 400 training
    sentences and C=10 the predictions use rules seen at most three times
    in 14% of their binary nodes, gold trees in 7%).  The ``"pcfg"``
    features start the model at the PCFG instead, and the span features add
    what a treebank grammar cannot see.

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
    .. [3] D. Hall, G. Durrett and D. Klein, "Less Grammar, More Features",
       Proceedings of the 52nd Annual Meeting of the Association for
       Computational Linguistics (ACL), 228-237, 2014.
    .. [4] T. Joachims, T. Finley and C.-N. J. Yu, "Cutting-Plane Training of
       Structural SVMs", Machine Learning 77(1), 27-59, 2009.
    """

    _parameter_constraints = {
        **BaseParser._parameter_constraints,
        "C": [Interval(Real, 0, None, closed="neither")],
        "loss": [StrOptions(set(LOSSES))],
        "features": [StrOptions(set(FEATURE_SETS)), tuple, list],
        "lexical_features": [tuple, list, None],
        "fixed_tags": ["boolean"],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "qp_tol": [Interval(Real, 0, None, closed="neither")],
        "solver": [StrOptions({"n-slack", "1-slack"})],
        "n_jobs": N_JOBS_CONSTRAINT,
        "verbose": ["verbose"],
    }

    def __init__(self, C=10.0, loss="f1", *, features=FEATURE_SETS, factor="right",
                 horizontal=1, vertical=1,
                 max_unary_chain=None, lexical_features=None, fixed_tags=False, max_iter=30,
                 tol=0.01,
                 qp_tol=1e-6, solver="1-slack", tagger=None, max_length=100, n_jobs=None,
                 verbose=0):
        self.C = C
        self.loss = loss
        self.features = features
        self.factor = factor
        self.horizontal = horizontal
        self.vertical = vertical
        self.max_unary_chain = max_unary_chain
        self.lexical_features = lexical_features
        self.fixed_tags = fixed_tags
        self.max_iter = max_iter
        self.tol = tol
        self.qp_tol = qp_tol
        self.solver = solver
        self.tagger = tagger
        self.max_length = max_length
        self.n_jobs = n_jobs
        self.verbose = verbose

    # -- joint feature map ------------------------------------------------------

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

    # -- training ------------------------------------------------------------------

    def _most_violated(self, i, data, scores, gold_score=None):
        """Loss-augmented inference for sentence i (eq. 3); ``scores`` are the
        current (w_binary, w_chain, w_root), ``gold_score`` w . Psi(x_i, y_i*)
        (computed here if None)."""
        gold = data["gold"][i]
        sd = data["sd"]
        if gold_score is None:
            gold_score = float((data["psi"][i] @ self.coef_)[0])
        const = 1.0 - gold_score
        wb, w_chain, wr = scores
        res = self.compiled_.decode(self._lex(sd, i), wb, w_chain, wr, loss=self.loss,
                                    gold=gold, const=const, **self._anchored(sd, i))
        if res is None or res["value"] <= 0:
            return i, 0.0, None, 0.0
        dec = {"binary": res["binary_rules"], "unary": res["unary_rules"],
               "root": res["root"], "pos": res["pos"], "nodes": res["nodes"],
               "splits": res["splits"]}
        return i, res["value"], self._psi(dec, sd, i), res["delta"]

    def _current_scores(self):
        wb, wu, wr = self._rule_scores()
        return wb, self.compiled_.chain_weights(wu), wr

    def _training_data(self, tokens_list, gold, feats=None, spans=None):
        """Per-sentence data of loss-augmented inference: features, gold
        decompositions and their Psi (``feats``, ``spans``: see
        ``_sentence_data``)."""
        sd = self._sentence_data(tokens_list, feats, spans)
        psi = [self._psi(dec, sd, i) for i, dec in enumerate(gold)]
        return {"sd": sd, "gold": gold, "psi": psi,
                "psi_stack": sp.vstack(psi, format="csr")}

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
        self.features_ = self._feature_sets()
        prepared = self._prepare(X, y)
        g = self.compiled_
        tokens = prepared["tokens"]
        n = len(tokens)
        self.tag_column_ = {self.grammar_.symbols[s]: k for k, s in enumerate(g.preterminals)}
        templates = list(self.lexical_features or LEXICAL_FEATURES)
        if self.tagged_ and self.lexical_features is None:
            templates.append("pos")
        self.vectorizer_ = SequenceVectorizer(templates)
        feats = self.vectorizer_.fit_transform(tokens)
        self.n_word_features_ = len(self.vectorizer_.vocabulary_)
        if "pcfg" in self.features_:
            self.pcfg_ = PCFGParser(factor=self.factor, horizontal=self.horizontal,
                                    vertical=self.vertical)
            for name in ("grammar_", "compiled_", "tagged_", "max_unary_chain_",
                         "fallback_root_"):
                setattr(self.pcfg_, name, getattr(self, name))
            self.pcfg_._estimate(prepared)
        self.span_symbols_ = np.flatnonzero(~g.is_preterminal)
        self.span_column_ = np.full(g.n_symbols, -1, dtype=np.int64)
        self.span_column_[self.span_symbols_] = np.arange(len(self.span_symbols_))
        if "spans" in self.features_:
            words = prepared["words"]
            tags = [[t[1] for t in toks] for toks in tokens] if self.tagged_ else None
            self.span_features_ = SpanFeatures()
            spans = self.span_features_.fit_transform(words, tags)
        else:
            spans = None
        self.n_weights_ = sum(size for _, size in self._layout())
        self.coef_ = np.zeros(self.n_weights_)
        self._set_views()
        # the PCFG's log-probabilities enter with weight 1 plus a learned
        # deviation: w = w0 + u, with only u regularized (see Notes)
        self.w_pcfg_[:] = 1.0
        w0 = self.coef_.copy()
        data = self._training_data(tokens, prepared["gold"],
                                   feats if "rules" in self.features_ else None, spans)
        self.history_ = []
        self.converged_ = False
        parallel = Parallel(n_jobs=n_threads(self.n_jobs, n), require="sharedmem")
        solve = self._one_slack if self.solver == "1-slack" else self._n_slack
        it = solve(data, w0, parallel, tic)
        self.n_iter_ = it
        return self

    def _violators(self, data, parallel):
        """Loss-augmented inference on every training sentence at the
        current weights: (i, value, Psi of the tree, Delta) per sentence."""
        scores = self._current_scores()
        gold_scores = data["psi_stack"] @ self.coef_      # one product for all sentences
        return parallel(delayed(self._most_violated)(i, data, scores, float(gold_scores[i]))
                        for i in range(len(data["gold"])))

    def _primal(self, values, w0):
        """Eq. 2 at the current weights, from every sentence's most violating
        value ``Delta (1 - w.dPsi)`` (an upper bound on the optimum)."""
        u = self.coef_ - w0
        return 0.5 * float(u @ u) + self.C / len(values) * float(values.sum())

    def _log(self, it, violated, qp, primal, tic, cached=False):
        entry = {"iteration": it, "violated": violated, "constraints": qp.n_constraints,
                 "dual": qp.dual(), "primal": primal, "cached": cached,
                 "seconds": time.perf_counter() - tic}
        self.history_.append(entry)
        if self.verbose:
            print(f"[F1MaxMarginParser] iter {it:3d}{' (cache)' if cached else '        '}  "
                  f"violated {violated:5d}  working set {qp.n_constraints:6d}  "
                  f"dual {entry['dual']:.5g}  primal<= {primal:.5g}  "
                  f"{entry['seconds']:.1f}s", flush=True)

    def _n_slack(self, data, w0, parallel, tic):
        """n-slack cutting planes: one constraint per violating sentence."""
        n = len(data["gold"])
        qp = WorkingSetQP(self.n_weights_, self.C / n, gram=self._N_SLACK_GRAM)
        for it in range(1, self.max_iter + 1):
            found = self._violators(data, parallel)
            xi = np.zeros(n)
            ws = qp.slacks()
            xi[:len(ws)] = ws
            values = np.array([v for _, v, _, _ in found])
            primal = self._primal(values, w0)
            new = [(i, psi, d) for (i, v, psi, d) in found
                   if psi is not None and v > xi[i] + self.tol]
            if new:
                rows = sp.vstack([d * (data["psi"][i] - psi) for i, psi, d in new], format="csr")
                deltas = np.array([d for _, _, d in new])
                # Delta (w0 + u) . dPsi >= Delta - xi  <=>  u . a >= Delta - a . w0
                qp.add(rows, deltas - rows @ w0, [i for i, _, _ in new])
                qp.solve(tol=self.qp_tol)
                qp.remove_idle(patience=20)
                self.coef_ = w0 + qp.w()
                self._set_views()
            self._log(it, len(new), qp, primal, tic)
            if not new:
                self.converged_ = True
                break
        return it

    def _one_slack(self, data, w0, parallel, tic):
        """1-slack cutting planes with slack rescaling and a cache of the
        trees inference returned (Joachims, Finley and Yu 2009, Algorithm 4
        and its caching variant).  Returns the number of inference passes."""
        n = len(data["gold"])
        qp = WorkingSetQP(self.n_weights_, self.C)
        cache = {}        # sentence -> list of (Delta * dPsi row, Delta), newest last
        stacked = None
        passes = it = cached_run = 0
        while passes < self.max_iter:
            it += 1
            xi = float(qp.slacks().max(initial=0.0))
            if stacked is not None and cached_run < self._MAX_CACHED:
                # the most violated constraint over the cached trees: per
                # sentence the cached tree of largest Delta (1 - w.dPsi) > 0
                rows, deltas, ex = stacked
                margin = deltas - rows @ self.coef_
                order = np.lexsort((-margin, ex))
                first = order[np.r_[True, np.diff(ex[order]) != 0]]
                sel = first[margin[first] > 0]
                if margin[sel].sum() / n > xi + self.tol:
                    self._add_one_slack(qp, rows, sel, deltas, n, w0)
                    self._log(it, len(sel), qp, float("nan"), tic, cached=True)
                    cached_run += 1
                    continue
            cached_run = 0
            passes += 1
            found = self._violators(data, parallel)
            values = np.array([v for _, v, _, _ in found])
            primal = self._primal(values, w0)
            viol = [(i, d * (data["psi"][i] - psi), d) for (i, v, psi, d) in found
                    if psi is not None]
            for i, row, d in viol:
                cache.setdefault(i, []).append((row, d))
                del cache[i][:-self._CACHE_SIZE]
            if viol:
                items = [(i, row, d) for i, lst in cache.items() for row, d in lst]
                stacked = (sp.vstack([row for _, row, _ in items], format="csr"),
                           np.array([d for _, _, d in items]),
                           np.array([i for i, _, _ in items]))
            violated = values.sum() / n > xi + self.tol
            if violated:
                self._add_one_slack(qp, sp.vstack([row for _, row, _ in viol], format="csr"),
                                    np.arange(len(viol)), np.array([d for _, _, d in viol]),
                                    n, w0)
            self._log(it, len(viol), qp, primal, tic)
            if not violated:
                self.converged_ = True
                break
        return passes

    #: How the n-slack QP keeps its Gram matrix (:class:`~sklstruct.qp.WorkingSetQP`):
    #: dense (fast sweeps) up to 8192 constraints (512 MB), then only w and
    #: per-sentence blocks (memory linear in the constraints).
    _N_SLACK_GRAM = "auto"

    #: Trees kept per sentence in the 1-slack cache.
    _CACHE_SIZE = 10

    #: Cached iterations between two inference passes, at most.  The cache
    #: holds the trees found at earlier weights; a long run of cached
    #: constraints fits those trees while fresh inference would find others
    #: (#FP loss, 400 sentences: 2,531 cached iterations over 30 passes, 91 s,
    #: against 416 over 26 passes, 42 s, with at most 20; the F1 losses never
    #: reach 20 and 10 costs more passes).
    _MAX_CACHED = 20

    def _add_one_slack(self, qp, rows, sel, deltas, n, w0):
        """Add the 1-slack constraint ``(1/n) sum_i Delta_i (w0 + u).dPsi_i >=
        (1/n) sum_i Delta_i - xi`` of the trees ``sel`` (rows of ``rows``,
        ``Delta * dPsi``) and re-solve.  The sum is a sparse product, so its
        cost is that of the selected rows, not of the weight vector."""
        pick = sp.csr_matrix((np.full(len(sel), 1.0 / n), (np.zeros(len(sel), dtype=np.int64),
                                                           sel)), shape=(1, rows.shape[0]))
        a = (pick @ rows).tocsr()
        b = float(deltas[sel].sum()) / n
        qp.add(a, [b - float((a @ w0)[0])], [0])
        qp.solve(tol=self.qp_tol)
        qp.remove_idle(patience=50)
        self.coef_ = w0 + qp.w()
        self._set_views()

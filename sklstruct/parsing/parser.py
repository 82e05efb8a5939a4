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

import scipy.sparse as sp
from joblib import Parallel, delayed
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from .._actors import joblib_dask_client, n_workers, resident
from .._publish import publishes
from .._parallel import n_threads
from .._validation import N_JOBS_CONSTRAINT
from ..qp import CuttingPlane
from .base import BaseParser
from .model import FEATURE_SETS, LOSSES, JointFeatureMap
from ._tree_parts import PartedTrees, TrainingTrees, TreePart, tree_parts
from .pcfg import PCFGParser


class F1MaxMarginParser(JointFeatureMap, BaseParser):
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
    working set (:class:`sklstruct.qp.CuttingPlane` over
    :class:`sklstruct.qp.WorkingSetQP`; the joint feature map and the layout
    of ``coef_`` are in :class:`sklstruct.parsing.model.JointFeatureMap`).

    Parameters
    ----------
    C : float, default=10.0
        Regularization constant of eq. 2.  Larger C fits the training trees
        more closely: on the Penn Treebank sample (1,401 training sentences,
        default features, gold tags) dev F1 was 81.1 / 85.3 / 86.5 / 88.5 /
        88.7 at C = 1 / 3 / 10 / 30 / 100, and training took 68 / 85 / 131 /
        160 / 237 s.  So the default is below the dev choice; it is the C of
        README's measured rows (``benchmarks/results/parser_features.md``).
        Slack rescaling multiplies each sentence's hinge by ``Delta``, about
        0.05-0.3 for the F1 losses and 1 for ``"zero_one"``, so the best C
        depends on the loss: choose it per loss (on the sample's sentences
        of <= 15 tokens a dev split chose C = 100 for ``"f1"``, 1 to 100 for
        ``"zero_one"``; ``benchmarks/results/parser_losses.md``).
    loss : {"f1", "f1_binarized", "fp", "zero_one"}, default="f1"
        ``Delta`` of eq. 2 (rows of Table 1):

        * ``"f1"``: ``1 - F1`` with true/false positives counted on the
          unbinarized tree (eqs. 4, 8-9): artificial nodes ignored, labels
          compared without annotation and as EVALB compares them (ADVP =
          PRT); preterminals are not counted, nor a root labelled
          TOP/ROOT/""; ``|y*|`` is the number of counted gold brackets (a
          multiset); spans are over all tokens (see Notes);
        * ``"f1_binarized"``: ``1 - F1`` over all non-preterminal nodes of the
          binarized trees ("F1 (bin.)");
        * ``"fp"``: the number of false positives among those binarized
          nodes ("#FP (bin.)");
        * ``"zero_one"``: 0 if the binarized tree equals the gold one, else 1
          ("0/1 (bin.)").

        The default is the paper's recommendation (Table 1); with the
        default features and C = 10 the benchmarks do not bear it out (F1
        87.09, F1 (bin.) 87.01, 0/1 87.22, #FP 88.31 on 88 test sentences;
        ``parser_features.md``).
    features : str or tuple of str, default=("rules", "pcfg", "spans")
        Parts of the joint feature map (see above); ``("rules",)`` is the
        model of the paper's Table 1.  The default scores 87.09 EVALB F1
        against 77.99 for ``("rules",)`` (F1 loss, C = 10, gold tags;
        ``parser_features.md``).
    factor : {"right", "left"}, default="right"
    horizontal : int >= 0 or None, default=1
    vertical : int >= 1, default=1
        Binarization (:func:`~sklstruct.parsing.binarize`).
    max_unary_chain : int or None, default=None
        ``K``, the longest chain of unary rules above one span; None: the
        longest seen in the training trees.
    lexical_features : tuple of str or None, default=None
        Templates of the word features (None:
        :data:`~sklstruct.parsing.model.LEXICAL_FEATURES`, plus
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
        counted).  Not tuned here; the benchmark's fits converge in 11-29
        (``parser_features.md``).
    tol : float, default=0.01
        A constraint is added when ``Delta (1 - w.dPsi) > xi_i + tol``; the
        training stops when none is.  Not tuned here.
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
        most the number of CPUs and of sentences.  Threads, except inside
        ``joblib.parallel_config(backend="dask")``: there the training
        trees are cut into one part per Dask worker, each part's features
        built on its worker and kept there for the whole fit, and every
        inference pass runs on the workers (the weights go out, each
        sentence's Psi difference, loss and violation come back; the same
        model as in threads).  Another process-based backend is not used.
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

    The ``"f1"`` training loss counts brackets as eqs. 8-9 do, node by node,
    with EVALB's labels (ADVP = PRT, no root bracket) but with spans over all
    tokens, where ``score`` and :func:`~sklstruct.parsing.parseval` follow
    EVALB's ``COLLINS.prm`` and leave punctuation out of spans: a prediction
    that attaches a comma or the final period elsewhere is charged in
    training and not in the score (on the sample, 48 of 392 trees met in
    training had a loss other than ``1 -`` EVALB F1).  Counting EVALB's
    spans node by node is not exact: two nested brackets of one label that
    differ only by punctuation (``(S `` (S ...) . '')``) would both be true
    positives against one gold bracket, ``F1 > 1`` and a negative
    ``Delta`` (found by the brute-force test); doing it exactly needs a
    kernel state for such chains.  With EVALB's spans counted node by node
    the test F1 on the sample did not improve (issue 31,
    ``benchmarks/results/parser_losses.md``).

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

    def _training_data(self, tokens_list, gold, feats=None, spans=None):
        """Per-sentence data of loss-augmented inference: features, gold
        decompositions and their Psi (``feats``, ``spans``: see
        ``_sentence_data``)."""
        sd = self._sentence_data(tokens_list, feats, spans)
        psi = [self._psi(dec, sd, i) for i, dec in enumerate(gold)]
        return {"sd": sd, "gold": gold, "psi": psi,
                "psi_stack": sp.vstack(psi, format="csr")}

    @publishes
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
        # fit replaces the grammar, the feature maps and the weights one after
        # the other, on a working copy (@publishes): a failure part way (a bad
        # lexical template, an interrupt) leaves the parser as it was
        tic = time.perf_counter()
        self.features_ = self._feature_sets()
        prepared = self._prepare(X, y)
        n = len(prepared["tokens"])
        if "pcfg" in self.features_:
            self.pcfg_ = PCFGParser._from_grammar(self, prepared)
        feats, spans = self._fit_feature_map(prepared)
        w0 = self.coef_.copy()
        solver = CuttingPlane(self.C, solver=self.solver, max_iter=self.max_iter, tol=self.tol,
                              qp_tol=self.qp_tol, verbose=self.verbose, name="F1MaxMarginParser")
        client = joblib_dask_client()
        if client is None:
            data = self._training_data(prepared["tokens"], prepared["gold"], feats, spans)
            parallel = Parallel(n_jobs=n_threads(self.n_jobs, n), require="sharedmem")
            solver.fit(TrainingTrees(self, data, parallel), n, w0, start=tic)
        else:
            # the inference passes on the workers, one part of the trees on each
            parts = tree_parts(n, n_workers(client), self, prepared["tokens"],
                               prepared["gold"], feats, spans)
            with resident(TreePart, parts, None, client, type(self).__name__,
                          stateless=True) as actors:
                solver.fit(PartedTrees(actors), n, w0, start=tic)
        self.coef_ = solver.w_
        self._set_views()
        self.history_ = solver.history_
        self.converged_ = solver.converged_
        self.n_iter_ = solver.n_iter_
        return self

    def _violators(self, data, parallel):
        """Loss-augmented inference on every training sentence at the
        current weights: (i, value, Psi of the tree, Delta) per sentence."""
        scores = self._current_scores()
        gold_scores = data["psi_stack"] @ self.coef_      # one product for all sentences
        return parallel(delayed(self._most_violated)(i, data, scores, float(gold_scores[i]))
                        for i in range(len(data["gold"])))

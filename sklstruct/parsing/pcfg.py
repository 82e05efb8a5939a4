"""Maximum-likelihood PCFG over the same binarized grammar: the baseline of
the max-margin parser (a treebank grammar, Charniak 1996, with the tree
transforms of Johnson 1998 and Klein and Manning 2003)."""
from collections import Counter
from numbers import Real

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval

from .._publish import publishes
from .base import BaseParser
from .model import TAG_PENALTY
from .spans import word_signature


class PCFGParser(BaseParser):
    """Probabilistic CFG read off the binarized training trees, decoded with
    the same CKY kernel as :class:`~sklstruct.parsing.F1MaxMarginParser`.

    Rule scores are log relative frequencies ``log P(A -> B C | A)``,
    ``log P(A -> B | A)`` (binary and unary expansions of ``A`` share one
    distribution), ``log P(root)``; preterminals score ``log P(c | t)`` of the
    word class ``c``: the word itself if it occurs more than
    ``unk_threshold`` times in training, else its :func:`word_signature`,
    smoothed by adding ``alpha`` to every (class, tag) count, so every tag is
    possible for every word.  With ``(word, tag)`` input, tags other than the
    given one are penalized by ``log(tag_penalty)``.

    Parameters
    ----------
    factor, horizontal, vertical, max_unary_chain, max_length, tagger
        As for :class:`~sklstruct.parsing.F1MaxMarginParser`.
    unk_threshold : int, default=1
        Not tuned here.
    alpha : float, default=0.01
        Not tuned here.
    tag_penalty : float, default=1e-4
        Not tuned here.

    Attributes
    ----------
    grammar_, compiled_, w_binary_, w_unary_, w_root_, max_unary_chain_
    lexicon_ : dict word class -> row of ``log_emission_``
    log_emission_ : ndarray (n_classes + 1, n_tags); the last row is for
        classes never seen.

    Notes
    -----
    A treebank grammar [1]_: rule probabilities are relative frequencies of
    the rules in the (transformed) training trees.  Parent annotation
    (``vertical=2``) is the transform of [2]_; horizontal and vertical
    Markovization (:func:`~sklstruct.parsing.binarize`) follow [3]_.

    References
    ----------
    .. [1] E. Charniak, "Tree-bank Grammars", Proceedings of the Thirteenth
       National Conference on Artificial Intelligence (AAAI-96), 1031-1036,
       1996.
    .. [2] M. Johnson, "PCFG Models of Linguistic Tree Representations",
       Computational Linguistics 24(4), 613-632, 1998.
    .. [3] D. Klein and C. D. Manning, "Accurate Unlexicalized Parsing",
       Proceedings of the 41st Annual Meeting of the Association for
       Computational Linguistics (ACL), 423-430, 2003.
    """

    _parameter_constraints = {
        **BaseParser._parameter_constraints,
        "unk_threshold": [Interval(Real, 0, None, closed="left")],
        "alpha": [Interval(Real, 0, None, closed="neither")],
        "tag_penalty": [Interval(Real, 0, 1, closed="neither")],
    }

    def __init__(self, *, factor="right", horizontal=1, vertical=1, max_unary_chain=None,
                 max_length=100, unk_threshold=1, alpha=0.01, tag_penalty=TAG_PENALTY,
                 tagger=None):
        self.factor = factor
        self.horizontal = horizontal
        self.vertical = vertical
        self.max_unary_chain = max_unary_chain
        self.max_length = max_length
        self.unk_threshold = unk_threshold
        self.alpha = alpha
        self.tag_penalty = tag_penalty
        self.tagger = tagger

    def _word_class(self, word):
        return word if self.word_counts_.get(word, 0) > self.unk_threshold else word_signature(word)

    @publishes
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Estimate the PCFG from sentences ``X`` and trees ``y``."""
        return self._estimate(self._prepare(X, y))

    @classmethod
    def _from_grammar(cls, parser, data):
        """The PCFG of another parser's grammar: ``parser`` ran ``_prepare``
        and ``data`` is what it returned.  The PCFG shares that parser's
        binarization, grammar, input kind and fallback root, and estimates
        its probabilities from the same trees (the ``"pcfg"`` features of
        :class:`~sklstruct.parsing.F1MaxMarginParser`)."""
        pcfg = cls(factor=parser.factor, horizontal=parser.horizontal, vertical=parser.vertical)
        pcfg.grammar_ = parser.grammar_
        pcfg.compiled_ = parser.compiled_
        pcfg.tagged_ = parser.tagged_
        pcfg.max_unary_chain_ = parser.max_unary_chain_
        pcfg.fallback_root_ = parser.fallback_root_
        return pcfg._estimate(data)

    def _estimate(self, data):
        """Relative frequencies from the prepared training data (the output
        of ``_prepare``, run by this parser or by one sharing its grammar)."""
        g = self.compiled_
        bin_ids = np.concatenate([d["binary"] for d in data["gold"]]).astype(np.int64)
        un_ids = np.concatenate([d["unary"] for d in data["gold"]]).astype(np.int64)
        nb = np.bincount(bin_ids, minlength=len(g.binary)).astype(float)
        nu = np.bincount(un_ids, minlength=len(g.unary)).astype(float)
        total = np.zeros(g.n_symbols)
        np.add.at(total, g.binary[:, 0], nb)
        np.add.at(total, g.unary[:, 0], nu)
        with np.errstate(divide="ignore"):
            self.w_binary_ = np.log(nb / total[g.binary[:, 0]])
            self.w_unary_ = (np.log(nu / total[g.unary[:, 0]]) if len(g.unary)
                             else np.zeros(0))
        roots = np.bincount(g.root_column[[d["root"] for d in data["gold"]]],
                            minlength=len(g.roots)).astype(float)
        self.w_root_ = np.log(roots / roots.sum())
        self.word_counts_ = Counter(w for sent in data["words"] for w in sent)
        pairs = Counter()
        for sent, d in zip(data["words"], data["gold"]):
            for w, t in zip(sent, g.pos_column[d["pos"]]):
                pairs[self._word_class(w), int(t)] += 1
        classes = sorted({c for c, _ in pairs})
        self.lexicon_ = {c: k for k, c in enumerate(classes)}
        counts = np.zeros((len(classes) + 1, len(g.preterminals)))
        for (c, t), v in pairs.items():
            counts[self.lexicon_[c], t] = v
        tag_totals = counts.sum(axis=0)
        self.log_emission_ = np.log((counts + self.alpha)
                                    / (tag_totals + self.alpha * (len(classes) + 1)))
        self.tag_index_ = {self.grammar_.symbols[s]: k for k, s in enumerate(g.preterminals)}
        return self

    def _lexical_scores(self, tokens_list):
        unseen = len(self.lexicon_)
        log_pen = np.log(self.tag_penalty)
        out = []
        for tokens in tokens_list:
            words = [t[0] for t in tokens] if self.tagged_ else tokens
            rows = [self.lexicon_.get(self._word_class(w), unseen) for w in words]
            lex = self.log_emission_[rows]
            if self.tagged_:
                given = np.array([self.tag_index_.get(t[1], -1) for t in tokens])
                other = np.arange(lex.shape[1])[None, :] != given[:, None]
                lex = lex + log_pen * (other & (given[:, None] >= 0))
            out.append(lex)
        return out
